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
            # no emit_on_close here (the composed generator has it, with the retention that
            # time windows need to agree with Kafka: docs/kafka-differences.md)
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


# -- composed cases: several stateful stages chained ------------------------------------------

STREAM_TOPICS = ["in", "in2", "in3"]
TABLE_TOPICS = ["tin", "tin2", "tin3"]
LONG_VALUES = [0, 1, 2, 3, 5, 8, 13, 21]


class _Composer(_Gen):
    """Streams and tables built from each other up to a budget of stateful stages: aggregations
    of aggregations, joins of derived and joined tables, self-joins and shared re-keyed
    streams, suppress after filters, windowed stages, merges (issue [14])."""

    def __init__(self, rng: random.Random, budget: int) -> None:
        super().__init__(rng)
        self.budget = budget
        self.topic_vt: dict[str, str] = {}
        self.sources: dict[str, tuple[str, str]] = {}  # topic -> (node, vt)
        self.fk_right: list[str] = []  # nodes on the right of an FK join

    def _spend(self) -> bool:
        if self.budget <= 0:
            return False
        self.budget -= 1
        return True

    def source(self, kind: str) -> tuple[str, str]:
        rng = self.rng
        topics = STREAM_TOPICS if kind == "stream" else TABLE_TOPICS
        free = [t for t in topics if t not in self.sources]
        if not free or (self.sources and rng.random() < 0.15):
            used = [t for t in topics if t in self.sources]
            if used:  # the same source read again: a self-join, a shared table
                return self.sources[rng.choice(used)]
        topic = rng.choice(free)
        vt = "l" if rng.random() < 0.3 else "s"
        params: dict[str, Any] = {"topic": topic, "vt": vt}
        if kind == "table":
            params.update(self.store())
        node = self.add(kind, **params)
        self.topic_vt[topic] = vt
        self.sources[topic] = (node, vt)
        return node, vt

    # -- streams --------------------------------------------------------------------------

    def stream(self, depth: int) -> tuple[str, str]:
        rng = self.rng
        kinds = ["source", "source"]
        if depth > 0 and self.budget > 0:
            kinds += ["to_stream", "table_join", "stream_join", "self_join", "merge",
                      "windowed", "to_stream", "table_join"]
        kind = rng.choice(kinds)
        if kind != "source" and not self._spend():
            kind = "source"
        if kind == "source":
            node, vt = self.source("stream")
        elif kind == "to_stream":
            table, vt = self.table(depth - 1)
            node = self.add("to_stream", table)
        elif kind == "table_join":
            left, lvt = self.stream(depth - 1)
            left, lvt = self.stateless(left, lvt, rng.randint(0, 2))
            right, _ = self.table(depth - 1)
            node, vt = self.add(rng.choice(["join", "left_join"]), left, other=right,
                                fn="concat"), "s"
        elif kind in ("stream_join", "self_join"):
            left, lvt = self.stream(depth - 1)
            left, lvt = self.stateless(left, lvt, rng.randint(0, 2))
            if kind == "self_join":
                right = left
            else:
                right, _ = self.stream(depth - 1)
                right, _ = self.stateless(right, "s", rng.randint(0, 1))
            node, vt = self.add(rng.choice(["join", "left_join", "outer_join"]), left,
                                other=right, fn="concat", windows=self.join_windows()), "s"
            if kind == "self_join" and rng.random() < 0.5:  # the re-keyed stream, joined twice
                other, _ = self.source("stream")
                second = self.add(rng.choice(["join", "left_join"]), left, other=other,
                                  fn="concat", windows=self.join_windows())
                node = self.add("merge", node, other=second)
        elif kind == "merge":
            a, avt = self.stream(depth - 1)
            b, bvt = self.stream(depth - 1)
            a, avt = self.stateless(a, avt, rng.randint(0, 2))
            b, bvt = self.stateless(b, bvt, rng.randint(0, 2))
            if avt != bvt:  # one value type per stream
                a = self.add("map_values", a, fn="append-x")
                b = self.add("map_values", b, fn="append-x")
                avt = "s"
            node, vt = self.add("merge", a, other=b), avt
        else:
            source, vt = self.stream(depth - 1)
            source, vt = self.stateless(source, vt, rng.randint(0, 2))
            table, vt = self.windowed_aggregation(source, vt)
            node = self.add("to_stream", table)
        return node, vt

    def join_windows(self) -> dict[str, Any]:
        rng = self.rng
        windows: dict[str, Any] = {"diff": rng.choice([0, 3, 10])}
        if rng.random() < 0.3:
            windows["before"] = rng.choice([0, 2, 5])
        if rng.random() < 0.3:
            windows["after"] = rng.choice([0, 2, 5])
        if rng.random() < 0.7:
            windows["grace"] = rng.choice([0, 5, 20])
        return windows

    def windowed_aggregation(self, node: str, vt: str) -> tuple[str, str]:
        rng = self.rng
        grouped = self.add("group_by_key", node) if rng.random() < 0.5 else \
            self.add("group_by", node, fn=rng.choice(sorted(cat.KEY_MAPPERS)))
        spec = self.windows()
        grouped = self.add("windowed_by", grouped, windows=spec)
        params: dict[str, Any] = self.store()
        if rng.random() < 0.3:
            grouped = self.add("emit_on_close", grouped)
            if spec["type"] != "session":
                # with the default retention (size + grace) Kafka's store no longer shows the
                # windows that just closed and it emits none of them (docs/kafka-differences.md)
                params["retention"] = 1000
        kind = rng.choice(["count", "reduce", "aggregate"])
        if kind == "count":
            table, out = self.add("count", grouped, **params), "l"
        elif kind == "reduce":
            table, out = self.add("reduce", grouped, fn=self.fn_for(cat.REDUCERS, vt),
                                  **params), vt
        else:
            fn = self.fn_for(cat.AGGREGATORS, vt)
            table, out = self.add("aggregate", grouped, fn=fn, **params), \
                cat.AGGREGATORS[fn][1]
        if rng.random() < 0.3:
            table = self.add("suppress", table)
        return table, out

    # -- tables ---------------------------------------------------------------------------

    def table(self, depth: int) -> tuple[str, str]:
        rng = self.rng
        kinds = ["source"]
        if depth > 0 and self.budget > 0:
            kinds += ["aggregate", "aggregate", "to_table", "ops", "ops", "join", "fk",
                      "regroup", "regroup"]
        kind = rng.choice(kinds)
        if kind not in ("source", "ops") and not self._spend():
            kind = "source"
        if kind == "source":
            return self.source("table")
        if kind == "aggregate":
            stream, vt = self.stream(depth - 1)
            stream, vt = self.stateless(stream, vt, rng.randint(0, 2))
            return self.aggregate(stream, vt)
        if kind == "to_table":
            stream, vt = self.stream(depth - 1)
            stream, vt = self.stateless(stream, vt, rng.randint(0, 2))
            return self.add("to_table", stream, **self.store()), vt
        if kind == "ops":
            node, vt = self.table(depth - 1)
            for _ in range(rng.randint(1, 2)):
                if rng.random() < 0.5:
                    node = self.add(rng.choice(["filter", "filter_not"]), node,
                                    fn=rng.choice(sorted(cat.PREDICATES)),
                                    **self.optional_store())
                else:
                    fns = [n for n, (_, needs, _) in cat.VALUE_MAPPERS.items()
                           if needs in (None, vt)]
                    fn = rng.choice(sorted(fns))
                    node = self.add("map_values", node, fn=fn, **self.optional_store())
                    vt = cat.VALUE_MAPPERS[fn][2] or vt
            if rng.random() < 0.2:
                node = self.add("suppress", node, time_limit=rng.choice([0, 5, 30]))
            return node, vt
        if kind in ("join", "fk"):
            left, _ = self.table(depth - 1)
            right, _ = self.table(depth - 1)
            if kind == "join":
                return self.add(rng.choice(["join", "left_join", "outer_join"]), left,
                                other=right, fn="concat", **self.optional_store()), "s"
            self.fk_right.append(right)
            return self.add(rng.choice(["join", "left_join"]), left, other=right, fn="concat",
                            fk=rng.choice(["first-char", "value-as-key"]),
                            **self.optional_store()), "s"
        table, vt = self.table(depth - 1)
        fn = rng.choice(sorted(cat.REGROUPERS))
        grouped = self.add("group_by", table, fn=fn)
        vt = cat.REGROUPERS[fn][1] or vt
        agg = rng.choice(["count", "reduce", "aggregate"])
        if agg == "count":
            return self.add("count", grouped, **self.store()), "l"
        if agg == "reduce":
            fn = "concat" if vt == "s" else "sum"
            return self.add("reduce", grouped, fn=fn, **self.store()), vt
        fn = rng.choice(["count", "sum-len", "concat"] + (["sum"] if vt == "l" else []))
        return self.add("aggregate", grouped, fn=fn, **self.store()), cat.AGGREGATORS[fn][1]

    def optional_store(self) -> dict[str, str]:
        return self.store() if self.rng.random() < 0.4 else {}

    def aggregate(self, stream: str, vt: str) -> tuple[str, str]:
        rng = self.rng
        grouped = self.add("group_by_key", stream) if rng.random() < 0.5 else \
            self.add("group_by", stream, fn=rng.choice(sorted(cat.KEY_MAPPERS)))
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
        if rng.random() < 0.15:
            table = self.add("suppress", table, time_limit=rng.choice([0, 5, 30]))
        return table, out


def _upstream_topics(ops: list[dict[str, Any]], node: str) -> set[str]:
    by_id = {op["id"]: op for op in ops}
    topics: set[str] = set()
    stack = [node]
    while stack:
        op = by_id[stack.pop()]
        if op["op"] in ("stream", "table", "global_table"):
            topics.add(op["topic"])
        stack.extend(op[k] for k in ("from", "other") if k in op)
        stack.extend(i["from"] for i in op.get("inputs", []))
    return topics


def composed_inputs(rng: random.Random, topic_vt: dict[str, str], no_empty: set[str]
                    ) -> list[dict[str, Any]]:
    """Records on every source topic (Long topics get Long values), out-of-order times,
    null keys and tombstones, and wall-clock advances."""
    out: list[dict[str, Any]] = []
    now = 0
    topics = sorted(topic_vt)
    for _ in range(rng.randint(10, 40)):
        if rng.random() < 0.06:
            out.append({"wall": rng.choice([10, 1000, 5000])})
            continue
        now += rng.choice([0, 1, 2, 3, 5, 8])
        ts = now - rng.choice([0, 0, 2, 7, 15, 30]) if rng.random() < 0.3 else now
        topic = rng.choice(topics)
        key = None if rng.random() < 0.05 else rng.choice(KEYS)
        if rng.random() < 0.12:
            value: Any = None
        elif topic_vt[topic] == "l":
            value = rng.choice(LONG_VALUES)
        else:
            value = rng.choice(VALUES)
            if value == "" and topic in no_empty:
                value = "b"
        out.append({"topic": topic, "key": key, "value": value, "ts": max(ts, 0)})
    return out


def composed_case(seed: int, index: int, cache: bool | None = None) -> dict[str, Any]:
    """A case of 2 to 4 chained stateful stages and one or two sinks."""
    rng = random.Random(f"composed-{seed}-{index}")
    gen = _Composer(rng, budget=rng.randint(2, 4))
    sinks = 2 if rng.random() < 0.25 else 1
    for i in range(sinks):
        node, vt = gen.stream(depth=3)
        node, vt = gen.stateless(node, vt, rng.randint(0, 2))
        gen.add("to", node, topic="out" if i == 0 else f"out{i + 1}")
    no_empty: set[str] = set()
    for right in gen.fk_right:
        no_empty |= _upstream_topics(gen.ops, right)
    case: dict[str, Any] = {"name": f"composed-{seed}-{index}", "ops": gen.ops,
                            "input": composed_inputs(rng, gen.topic_vt, no_empty)}
    if cache if cache is not None else rng.random() < 0.5:
        case["cache_bytes"] = 10 * 1024 * 1024
    if rng.random() < 0.3:
        case["emit_interval_ms"] = 1000  # the outer-join throttle at Kafka's default
    if rng.random() < 0.25:
        case["optimization"] = "all"  # merged repartitions, source topics as changelogs
    _infer_some_serdes(case, random.Random(f"composed-serdes-{seed}-{index}"))
    return case


# operators whose Materialized may come without serdes (a source table's store takes its
# Consumed serdes; the rest infer theirs from their input, Long for counts, else the defaults)
_MATERIALIZED = {"table", "filter", "filter_not", "map_values", "to_table", "count", "reduce",
                 "aggregate", "cogroup", "join", "left_join", "outer_join"}


def _infer_some_serdes(case: dict[str, Any], rng: random.Random) -> None:
    """Leave the serdes of one Materialized in five to each side's inference (a separate
    random stream, so a seed's topologies and inputs stay what they were)."""
    for op in case["ops"]:
        if op["op"] in _MATERIALIZED and "versioned" not in op and rng.random() < 0.2:
            op["serdes"] = "inferred"


def composed_cases(seed: int, count: int, cache: bool | None = None) -> list[dict[str, Any]]:
    return [composed_case(seed, i, cache) for i in range(count)]
