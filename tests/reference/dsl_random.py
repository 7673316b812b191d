"""Random DSL cases from a seed: a source, a few stateless steps, one stateful stage (an
aggregation, windowed or not, with optional suppress; a join of any kind; a cogroup), a few
more stateless steps and a sink, on small random inputs with out-of-order timestamps, null
keys and values, and wall-clock advances. Deterministic for a seed (``random.Random``:
hypothesis is not a dependency here).
"""

from __future__ import annotations

import random
from typing import Any

from . import dsl_catalogue as cat

KEYS = ["a", "b", "c", "d"]
VALUES = ["apple", "bean", "cab", "dab", "aa", "b", "cocoa", "d", "", "banana"]


class _Gen:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.ops: list[dict[str, Any]] = []
        self.count = 0
        self.stores = 0
        self.nodes_topic: dict[str, str] = {}

    def add(self, name: str, src: str | None = None, **params: Any) -> str:
        self.count += 1
        node = f"n{self.count}"
        op: dict[str, Any] = {"id": node, "op": name}
        if src is not None:
            op["from"] = src
        op.update(params)
        self.ops.append(op)
        self.nodes_topic[node] = params.get("topic", "")
        return node

    def store(self) -> dict[str, str]:
        self.stores += 1
        return {"store": f"store{self.stores}"} if self.rng.random() < 0.8 else {}

    def stateless(self, node: str, vt: str, steps: int) -> tuple[str, str]:
        rng = self.rng
        for _ in range(steps):
            kind = rng.choice(["filter", "filter_not", "map_values", "select_key",
                               "flat_map_values"])
            if kind in ("filter", "filter_not"):
                node = self.add(kind, node, fn=rng.choice(sorted(cat.PREDICATES)))
            elif kind == "map_values":
                fns = [n for n, (_, needs, _) in cat.VALUE_MAPPERS.items() if needs in (None, vt)]
                fn = rng.choice(sorted(fns))
                node = self.add(kind, node, fn=fn)
                vt = cat.VALUE_MAPPERS[fn][2] or vt
            elif kind == "select_key":
                node = self.add(kind, node, fn=rng.choice(sorted(cat.KEY_MAPPERS)))
            else:
                fn = rng.choice(sorted(cat.FLAT_MAPPERS))
                node = self.add(kind, node, fn=fn)
                vt = cat.FLAT_MAPPERS[fn][1] or vt
        return node, vt

    def windows(self, session_ok: bool = True) -> dict[str, Any]:
        rng = self.rng
        kinds = ["tumbling", "hopping", "sliding"] + (["session"] if session_ok else [])
        kind = rng.choice(kinds)
        spec: dict[str, Any] = {"type": kind}
        if kind in ("tumbling", "hopping"):
            spec["size"] = rng.choice([5, 10, 20])
            if kind == "hopping":
                spec["advance"] = rng.choice([d for d in (1, 2, 5, 10) if d < spec["size"]])
        elif kind == "sliding":
            spec["diff"] = rng.choice([3, 10, 15])
        else:
            spec["gap"] = rng.choice([3, 8, 15])
        if rng.random() < 0.7:
            spec["grace"] = rng.choice([0, 5, 20])
        return spec

    def fn_for(self, table: dict[str, Any], vt: str, table_grouped: bool = False) -> str:
        names = [n for n, spec in table.items()
                 if spec[-1] in (None, vt) and not (table_grouped and spec[1] is None)] \
            if table is cat.REDUCERS else \
            [n for n, (needs, _) in cat.AGGREGATORS.items() if needs in (None, vt)]
        return self.rng.choice(sorted(names))

    def aggregation(self, node: str, vt: str) -> tuple[str, str, bool]:
        """An aggregation of ``node``; returns (table node, its vt, windowed)."""
        rng = self.rng
        grouped = self.add("group_by_key", node) if rng.random() < 0.5 else \
            self.add("group_by", node, fn=rng.choice(sorted(cat.KEY_MAPPERS)))
        windowed = rng.random() < 0.6
        if windowed:
            # no emit_on_close here: it differs from Kafka (docs/kafka-differences.md, open)
            # and the hand-written *-emit-on-close cases show it
            grouped = self.add("windowed_by", grouped, windows=self.windows())
        kind = rng.choice(["count", "reduce", "aggregate"])
        if kind == "count":
            table, out = self.add("count", grouped, **self.store()), "l"
        elif kind == "reduce":
            table, out = self.add("reduce", grouped, fn=self.fn_for(cat.REDUCERS, vt),
                                  **self.store()), vt
        else:
            fn = self.fn_for(cat.AGGREGATORS, vt)
            table, out = self.add("aggregate", grouped, fn=fn, **self.store()), \
                cat.AGGREGATORS[fn][1]
        if windowed and rng.random() < 0.4:
            table = self.add("suppress", table)
        elif not windowed and rng.random() < 0.2:
            table = self.add("suppress", table, time_limit=rng.choice([0, 5, 30]))
        return table, out, windowed

    def table_stage(self) -> tuple[str, str]:
        """KTable sources: table ops, a table-table or FK join, or a KTable group_by."""
        rng = self.rng
        left = self.add("table", topic="tin", **self.store())
        choice = rng.choice(["ops", "join", "fk", "group_by"])
        if choice == "ops":
            node, vt = left, "s"
            for _ in range(rng.randint(1, 3)):
                if rng.random() < 0.5:
                    node = self.add(rng.choice(["filter", "filter_not"]), node,
                                    fn=rng.choice(sorted(cat.PREDICATES)), **self.store())
                else:
                    fns = [n for n, (_, needs, _) in cat.VALUE_MAPPERS.items()
                           if needs in (None, vt)]
                    fn = rng.choice(sorted(fns))
                    node = self.add("map_values", node, fn=fn, **self.store())
                    vt = cat.VALUE_MAPPERS[fn][2] or vt
            return self.add("to_stream", node), vt
        right = self.add("table", topic="tin2", **self.store())
        if choice == "join":
            kind = rng.choice(["join", "left_join", "outer_join"])
            node = self.add(kind, left, other=right, fn="concat", **self.store())
        elif choice == "fk":
            node = self.add(rng.choice(["join", "left_join"]), left, other=right, fn="concat",
                            fk=rng.choice(["first-char", "value-as-key"]), **self.store())
        else:
            fn = rng.choice(sorted(cat.REGROUPERS))
            grouped = self.add("group_by", left, fn=fn)
            kind = rng.choice(["count", "reduce", "aggregate"])
            if kind == "count":
                node = self.add("count", grouped, **self.store())
                return self.add("to_stream", node), "l"
            if kind == "reduce":
                node = self.add("reduce", grouped, fn="concat", **self.store())
                return self.add("to_stream", node), "s"
            fn = rng.choice(["count", "sum-len", "concat"])
            node = self.add("aggregate", grouped, fn=fn, **self.store())
            return self.add("to_stream", node), cat.AGGREGATORS[fn][1]
        return self.add("to_stream", node), "s"

    def stream_join(self, node: str, vt: str) -> str:
        rng = self.rng
        kind = rng.choice(["stream", "table", "global"])
        if kind == "stream":
            other = self.add("stream", topic="in2")
            other, _ = self.stateless(other, "s", rng.randint(0, 1))
            windows: dict[str, Any] = {"diff": rng.choice([0, 3, 10])}
            if rng.random() < 0.3:
                windows["before"] = rng.choice([0, 2, 5])
            if rng.random() < 0.3:
                windows["after"] = rng.choice([0, 2, 5])
            if rng.random() < 0.7:
                windows["grace"] = rng.choice([0, 5, 20])
            return self.add(rng.choice(["join", "left_join", "outer_join"]), node, other=other,
                            fn="concat", windows=windows)
        if kind == "table":
            other = self.add("table", topic="tin", **self.store())
            return self.add(rng.choice(["join", "left_join"]), node, other=other, fn="concat")
        other = self.add("global_table", topic="gin", store="global")
        return self.add(rng.choice(["join", "left_join"]), node, other=other, fn="concat",
                        key_selector=rng.choice(sorted(cat.KEY_MAPPERS)))

    def cogroup(self) -> tuple[str, str]:
        rng = self.rng
        g1 = self.add("group_by_key", self.add("stream", topic="in"))
        s2, _ = self.stateless(self.add("stream", topic="in2"), "s", rng.randint(0, 2))
        g2 = self.add("group_by_key", s2)
        out = rng.choice(["l", "s"])
        fns = ["count", "sum-len"] if out == "l" else ["concat"]
        params: dict[str, Any] = self.store()
        if rng.random() < 0.6:
            params["windows"] = self.windows()
        node = self.add("cogroup", inputs=[{"from": g1, "fn": rng.choice(fns)},
                                           {"from": g2, "fn": rng.choice(fns)}], **params)
        return self.add("to_stream", node), out


def _inputs(rng: random.Random, topics: list[str], no_empty: frozenset[str] = frozenset()
            ) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    now = 0
    for _ in range(rng.randint(8, 30)):
        if rng.random() < 0.05:
            out.append({"wall": rng.choice([10, 1000])})
            continue
        now += rng.choice([0, 1, 2, 3, 5, 8])
        ts = now - rng.choice([0, 0, 0, 2, 7, 15, 30]) if rng.random() < 0.3 else now
        topic = rng.choice(topics)
        key = None if rng.random() < 0.05 else rng.choice(KEYS)
        value = None if rng.random() < 0.1 else rng.choice(VALUES)
        if value == "" and topic in no_empty:
            value = "b"
        out.append({"topic": topic, "key": key, "value": value, "ts": max(ts, 0)})
    return out


def case(seed: int, index: int) -> dict[str, Any]:
    rng = random.Random(f"{seed}-{index}")
    gen = _Gen(rng)
    stage = rng.choice(["stateless", "aggregation", "aggregation", "join", "table", "cogroup"])
    if stage == "table":
        node, vt = gen.table_stage()
    elif stage == "cogroup":
        node, vt = gen.cogroup()
    else:
        node, vt = gen.stateless(gen.add("stream", topic="in"), "s", rng.randint(0, 3))
        if stage == "aggregation":
            table, vt, _ = gen.aggregation(node, vt)
            node = gen.add("to_stream", table)
        elif stage == "join":
            node, vt = gen.stream_join(node, vt), "s"
    node, vt = gen.stateless(node, vt, rng.randint(0, 2))
    gen.add("to", node, topic="out")
    topics = sorted({op["topic"] for op in gen.ops if op["op"] != "to" and "topic" in op})
    # Deliberate difference (docs/kafka-differences.md, "Streams DSL"): Kafka's FK join reads a
    # right value that serializes to no bytes as null; ours keeps it. No "" on the right side.
    fk_right = frozenset(gen.nodes_topic[op["other"]] for op in gen.ops if "fk" in op)
    return {"name": f"random-{seed}-{index}", "ops": gen.ops,
            "input": _inputs(rng, topics, fk_right)}


def cases(seed: int, count: int) -> list[dict[str, Any]]:
    return [case(seed, i) for i in range(count)]
