"""Hand-written DSL cases: every operator family, windows with grace and late records, suppress,
every join kind on the input sequence of Kafka's join integration tests, cogroup, FK joins and
out-of-order timestamps. Each is a JSON-able dict (see dsl_translate.py for the vocabulary).
"""

from __future__ import annotations

from typing import Any

Case = dict[str, Any]


def rec(topic: str, key: str | None, value: Any, ts: int) -> dict[str, Any]:
    return {"topic": topic, "key": key, "value": value, "ts": ts}


def op(id_: str, name: str, src: str | None = None, **params: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"id": id_, "op": name}
    if src is not None:
        out["from"] = src
    out.update(params)
    return out


def sink(src: str, topic: str = "out") -> list[dict[str, Any]]:
    """to_stream (for tables) is the caller's; this is the ``to``."""
    return [op(f"to-{topic}", "to", src, topic=topic)]


# Kafka's AbstractJoinIntegrationTest input: (left?, value, timestamp), every key 0, one null
# key late in the second list. Facts reproduced from the test, not its code.
_JOIN_INPUT = [("L", None, 1), ("R", None, 2), ("L", "A", 3), ("R", "a", 4), ("L", "B", 5),
               ("R", "b", 6), ("L", None, 7), ("R", None, 8), ("L", "C", 9), ("R", "c", 10),
               ("R", None, 11), ("L", None, 12), ("R", None, 13), ("R", "d", 7), ("L", "D", 6),
               ("L", None, 2), ("R", None, 3), ("R", "e", 14), ("L", "E", 15), ("L", None, 10),
               ("R", None, 9), ("L", "F", 4), ("R", "f", 3)]
_JOIN_INPUT_IN_ORDER = [("L", None, 1), ("R", None, 2), ("L", "A", 3), ("R", "a", 4),
                        ("L", "B", 5), ("R", "b", 6), ("L", None, 7), ("R", None, 8),
                        ("L", "C", 9), ("R", "c", 10), ("R", None, 11), ("L", None, 12),
                        ("R", None, 13), ("R", "d", 14), ("L", "D", 15)]
_JOIN_INPUT_NULL_KEYS = [("L", "E", 16, None), ("R", "e", 17, None)]


def join_input(ordered: bool) -> list[dict[str, Any]]:
    rows = _JOIN_INPUT_IN_ORDER if ordered else _JOIN_INPUT
    out = [rec("left" if side == "L" else "right", "0", value, ts) for side, value, ts in rows]
    if ordered:
        out += [rec("left" if side == "L" else "right", key, value, ts)
                for side, value, ts, key in _JOIN_INPUT_NULL_KEYS]
    return out


WORDS = ["apple", "banana", "cherry", "avocado", "blueberry", "apricot", "cranberry"]


def word_input(topic: str = "in", times: list[int] | None = None) -> list[dict[str, Any]]:
    """Keys a..c, values from WORDS, timestamps out of order unless given."""
    times = times or [5, 1, 12, 7, 30, 3, 25, 41, 18, 60, 2, 44]
    return [rec(topic, "abc"[i % 3], WORDS[i % len(WORDS)], ts) for i, ts in enumerate(times)]


def table_input(topic: str = "tin") -> list[dict[str, Any]]:
    """Inserts, updates, tombstones and an out-of-order update."""
    rows = [("k1", "apple", 1), ("k2", "avocado", 2), ("k3", "banana", 3), ("k1", "blue", 4),
            ("k2", None, 5), ("k4", "cherry", 6), ("k3", "apricot", 2), ("k1", None, 8),
            ("k2", "berry", 9), ("k5", "ant", 10), ("k4", "avocado", 11)]
    return [rec(topic, k, v, ts) for k, v, ts in rows]


def stateless() -> list[Case]:
    ops = [op("s", "stream", topic="in"), op("f", "filter", "s", fn="value-has-a"),
           op("m", "map_values", "f", fn="upper"), op("k", "select_key", "m", fn="first-char"),
           op("fl", "flat_map_values", "k", fn="dup"),
           op("n", "filter_not", "s", fn="key-lt-c"), op("l", "map_values", "n", fn="len"),
           op("d", "map_values", "l", fn="double"), op("ax", "map_values", "d", fn="append-x"),
           op("mg", "merge", "fl", other="ax"), *sink("mg"),
           op("sp", "flat_map_values", "s", fn="split-chars"), *sink("sp", "chars")]
    nulls = word_input() + [rec("in", None, "anchor", 8), rec("in", "b", None, 9),
                            rec("in", "c", "", 10)]
    return [{"name": "stateless-chain", "ops": ops, "input": nulls}]


def aggregations() -> list[Case]:
    cases = []
    ops = [op("s", "stream", topic="in"), op("g", "group_by_key", "s"),
           op("c", "count", "g", store="counts"), op("cs", "to_stream", "c"), *sink("cs"),
           op("r", "reduce", "g", fn="concat", store="reduced"), op("rs", "to_stream", "r"),
           *sink("rs", "reduced"),
           op("a", "aggregate", "g", fn="sum-len", store="lens"), op("as", "to_stream", "a"),
           *sink("as", "lens")]
    cases.append({"name": "group-by-key-count-reduce-aggregate", "ops": ops,
                  "input": word_input() + [rec("in", None, "dropped", 3),
                                           rec("in", "a", None, 4)]})
    ops = [op("s", "stream", topic="in"), op("g", "group_by", "s", fn="first-char"),
           op("c", "count", "g", store="by-letter"), op("cs", "to_stream", "c"), *sink("cs"),
           op("l", "map_values", "s", fn="len"), op("g2", "group_by", "l", fn="key-upper"),
           op("r", "reduce", "g2", fn="sum", store="len-sum"), op("rs", "to_stream", "r"),
           *sink("rs", "sums")]
    cases.append({"name": "group-by-repartition", "ops": ops, "input": word_input()})
    ops = [op("t", "table", topic="tin", store="source"),
           op("g", "group_by", "t", fn="by-first-char"),
           op("c", "count", "g", store="tcount"), op("cs", "to_stream", "c"), *sink("cs"),
           op("r", "reduce", "g", fn="concat", store="treduce"), op("rs", "to_stream", "r"),
           *sink("rs", "reduced"),
           op("g2", "group_by", "t", fn="swap"),
           op("a", "aggregate", "g2", fn="sum-len", store="tagg"), op("as", "to_stream", "a"),
           *sink("as", "aggregated")]
    cases.append({"name": "table-group-by", "ops": ops, "input": table_input()})
    ops = [op("t", "table", topic="tin"), op("f", "filter", "t", fn="value-has-a", store="flt"),
           op("m", "map_values", "f", fn="upper"), op("ms", "to_stream", "m"), *sink("ms"),
           op("n", "filter_not", "t", fn="value-len-odd"), op("l", "map_values", "n", fn="len",
                                                                store="lens"),
           op("ls", "to_stream", "l"), *sink("ls", "lens"),
           op("s", "stream", topic="in"), op("tt", "to_table", "s", store="latest"),
           op("tf", "filter", "tt", fn="key-lt-c"), op("tfs", "to_stream", "tf"),
           *sink("tfs", "from-stream")]
    cases.append({"name": "ktable-ops", "ops": ops,
                  "input": table_input() + word_input() + [rec("in", "a", None, 50)]})
    return cases


def _windowed(name: str, windows: dict[str, Any], agg: str, fn: str | None = None,
              suppress: bool = False, times: list[int] | None = None,
              on_close: bool = False) -> Case:
    params: dict[str, Any] = {"fn": fn} if fn else {}
    ops = [op("s", "stream", topic="in"), op("g", "group_by_key", "s"),
           op("w", "windowed_by", "g", windows=windows)]
    if on_close:
        ops.append(op("e", "emit_on_close", "w"))
    if on_close and windows["type"] != "session":
        # Kafka's emit-on-close reads the closed windows back from the store, which with the
        # default retention (size + grace) no longer shows them: Kafka emits none of them and
        # ours emits each (docs/kafka-differences.md); a longer retention makes both agree
        params["retention"] = 1000
    ops.append(op("a", agg, ops[-1]["id"], store="win", **params))
    last = "a"
    if suppress:
        ops.append(op("sup", "suppress", "a"))
        last = "sup"
    ops += [op("ts", "to_stream", last), *sink("ts")]
    return {"name": name, "ops": ops, "input": word_input(times=times)}


LATE = [5, 1, 12, 7, 30, 3, 25, 41, 18, 60, 2, 44, 59, 100, 58, 61, 130, 99]


def windows() -> list[Case]:
    tumbling = {"type": "tumbling", "size": 10, "grace": 5}
    hopping = {"type": "hopping", "size": 20, "advance": 5, "grace": 10}
    sliding = {"type": "sliding", "diff": 10, "grace": 5}
    session = {"type": "session", "gap": 8, "grace": 4}
    cases = [
        _windowed("tumbling-count", tumbling, "count", times=LATE),
        _windowed("tumbling-no-grace-reduce", {"type": "tumbling", "size": 10}, "reduce",
                  "concat", times=LATE),
        _windowed("hopping-aggregate", hopping, "aggregate", "concat", times=LATE),
        _windowed("sliding-count", sliding, "count", times=LATE),
        _windowed("sliding-aggregate", sliding, "aggregate", "sum-len", times=LATE),
        _windowed("session-count", session, "count", times=LATE),
        _windowed("session-aggregate", session, "aggregate", "concat", times=LATE),
        _windowed("session-reduce", {"type": "session", "gap": 20}, "reduce", "concat",
                  times=LATE),
        _windowed("tumbling-suppress", tumbling, "count", suppress=True, times=LATE),
        _windowed("hopping-suppress", hopping, "aggregate", "sum-len", suppress=True,
                  times=LATE),
        _windowed("sliding-suppress", sliding, "count", suppress=True, times=LATE),
        _windowed("session-suppress", session, "aggregate", "concat", suppress=True,
                  times=LATE),
        # Emit-on-close for tumbling, hopping and sliding windows is an OPEN difference (see
        # docs/kafka-differences.md, "Streams DSL", Open): Kafka 4.4's driver emits fewer
        # windows than ours and the cause is not understood yet, so those three cases are
        # kept out of the comparison until it is; session windows agree and stay in.
        _windowed("session-emit-on-close", session, "count", times=LATE, on_close=True),
        # time windows: with a retention that keeps the closed windows (see _windowed)
        _windowed("tumbling-emit-on-close", tumbling, "count", times=LATE, on_close=True),
        _windowed("hopping-emit-on-close", hopping, "aggregate", "concat", times=LATE,
                  on_close=True),
        _windowed("sliding-emit-on-close", sliding, "reduce", "concat", times=LATE,
                  on_close=True),
    ]
    ops = [op("s", "stream", topic="in"), op("g", "group_by_key", "s"),
           op("c", "count", "g", store="counts"),
           op("sup", "suppress", "c", time_limit=15), op("ts", "to_stream", "sup"), *sink("ts")]
    inputs = word_input(times=LATE)
    inputs.insert(6, {"wall": 1000})
    cases.append({"name": "suppress-time-limit", "ops": ops, "input": inputs})
    return cases


def _two_sided(kind: str, left: str, right: str, name: str, ordered: bool,
               **params: Any) -> Case:
    ops = [op("l", left, topic="left"), op("r", right, topic="right"),
           op("j", kind, "l", other="r", fn="concat", **params)]
    if left == "table":
        ops.append(op("js", "to_stream", "j"))
        ops += sink("js")
    else:
        ops += sink("j")
    return {"name": name, "ops": ops, "input": join_input(ordered)}


def joins() -> list[Case]:
    cases = []
    for kind in ("join", "left_join", "outer_join"):
        for ordered in (True, False):
            suffix = "in-order" if ordered else "out-of-order"
            cases.append(_two_sided(kind, "stream", "stream", f"stream-stream-{kind}-{suffix}",
                                    ordered, windows={"diff": 10000, "grace": 86400000}))
            cases.append(_two_sided(kind, "stream", "stream",
                                    f"stream-stream-{kind}-small-window-{suffix}", ordered,
                                    windows={"diff": 2, "grace": 3}))
            cases.append(_two_sided(kind, "table", "table", f"table-table-{kind}-{suffix}",
                                    ordered, store="joined"))
        if kind != "outer_join":
            for ordered in (True, False):
                suffix = "in-order" if ordered else "out-of-order"
                cases.append(_two_sided(kind, "stream", "table",
                                        f"stream-table-{kind}-{suffix}", ordered))
    cases.append(_two_sided("left_join", "stream", "stream", "stream-stream-asymmetric", True,
                            windows={"diff": 0, "before": 3, "after": 1, "grace": 2}))
    # foreign-key joins: left values name the right key by their first character
    fk_input = [rec("right", "a", "Apple", 1), rec("right", "b", "Berry", 2),
                rec("left", "x1", "apple", 3), rec("left", "x2", "bean", 4),
                rec("left", "x3", "cake", 5), rec("right", "c", "Cocoa", 6),
                rec("right", "a", "Avocado", 7), rec("left", "x1", "bread", 8),
                rec("right", "b", None, 9), rec("left", "x2", None, 10),
                rec("left", "x4", "alpha", 4), rec("right", "a", None, 11)]
    for kind in ("join", "left_join"):
        ops = [op("l", "table", topic="left"), op("r", "table", topic="right"),
               op("j", kind, "l", other="r", fn="concat", fk="first-char", store="fk"),
               op("js", "to_stream", "j"), *sink("js")]
        cases.append({"name": f"fk-{kind}", "ops": ops, "input": fk_input})
    g_input = [rec("global", "a", "Apple", 1), rec("left", "k1", "apple", 2),
               rec("left", "k2", "berry", 3), rec("global", "b", "Berry", 4),
               rec("left", "k3", "bean", 2), rec("global", "a", None, 5),
               rec("left", "k4", "apricot", 6), rec("left", "k5", None, 7)]
    for kind in ("join", "left_join"):
        ops = [op("l", "stream", topic="left"),
               op("g", "global_table", topic="global", store="global-store"),
               op("j", kind, "l", other="g", fn="concat", key_selector="first-char"),
               *sink("j")]
        cases.append({"name": f"global-{kind}", "ops": ops, "input": g_input})
    return cases


def cogroups() -> list[Case]:
    inputs = word_input("in1") + word_input("in2", [4, 9, 2, 33, 15, 8, 70, 1, 64, 28, 3, 90])
    cases = []
    for name, extra in (("cogroup", {}),
                        ("cogroup-tumbling", {"windows": {"type": "tumbling", "size": 10,
                                                          "grace": 5}}),
                        ("cogroup-sliding", {"windows": {"type": "sliding", "diff": 10,
                                                         "grace": 5}}),
                        ("cogroup-session", {"windows": {"type": "session", "gap": 6,
                                                         "grace": 2}})):
        ops = [op("s1", "stream", topic="in1"), op("s2", "stream", topic="in2"),
               op("g1", "group_by_key", "s1"), op("k2", "select_key", "s2", fn="first-char"),
               op("g2", "group_by_key", "k2"),
               op("c", "cogroup", inputs=[{"from": "g1", "fn": "sum-len"},
                                          {"from": "g2", "fn": "count"}],
                  store="cogrouped", **extra),
               op("cs", "to_stream", "c"), *sink("cs")]
        cases.append({"name": name, "ops": ops, "input": inputs})
    return cases


# A versioned table (KIP-889) with out-of-order updates, a tombstone and an update older than
# the history retention; stream records in and out of order, some late past the grace.
_VERSIONED_INPUT = [rec("right", "a", "A1", 1), rec("right", "b", "B1", 2),
                    rec("right", "a", "A10", 10), rec("left", "a", "s5", 5),
                    rec("right", "a", "A4", 4), rec("left", "b", "s6", 6),
                    rec("left", "a", "s12", 12), rec("right", "b", None, 11),
                    rec("left", "b", "s13", 13), rec("left", "a", "s3", 3),
                    rec("right", "a", "A30", 30), rec("left", "a", "s31", 31),
                    rec("right", "b", "B8", 8), rec("left", "b", "s9", 9),
                    rec("left", "a", "s60", 60), rec("right", "a", "A20", 20),
                    rec("left", "a", "s21", 21), rec("left", "c", "s61", 61),
                    rec("right", "a", "A90", 90), rec("left", "a", "s89", 89)]


def versioned() -> list[Case]:
    """Versioned tables (KIP-889/914), the join grace period (KIP-923) and key-aware
    functions (ValueMapperWithKey, ValueJoinerWithKey, the (key, value) FK extractor)."""
    cases = []
    # (history retention, grace): a grace above the history is refused on both sides
    for kind in ("join", "left_join"):
        for history, grace in ((25, None), (25, 0), (25, 7), (25, 25), (25, 40), (100, 40)):
            params: dict[str, Any] = {} if grace is None else {"grace": grace}
            ops = [op("l", "stream", topic="left"),
                   op("r", "table", topic="right", store="versioned", versioned=history),
                   op("j", kind, "l", other="r", fn="concat", **params), *sink("j"),
                   op("rs", "to_stream", "r"), *sink("rs", "table-changes")]
            name = f"versioned-{history}-stream-table-{kind}" + (
                "" if grace is None else f"-grace-{grace}")
            cases.append({"name": name, "ops": ops, "input": _VERSIONED_INPUT})
    ops = [op("l", "stream", topic="left", vt="l"),
           op("r", "table", topic="right", store="versioned", versioned=100),
           op("j", "left_join", "l", other="r", fn="concat", grace=10), *sink("j")]
    longs = [dict(r, value=None if r["value"] is None else len(r["value"]))
             if r["topic"] == "left" else r for r in _VERSIONED_INPUT]
    cases.append({"name": "versioned-grace-buffer-long-values", "ops": ops, "input": longs})
    ops = [op("l", "table", topic="left", store="vl", versioned=25),
           op("r", "table", topic="right", store="plain"),
           op("j", "left_join", "l", other="r", fn="concat", store="tj"),
           op("js", "to_stream", "j"), *sink("js"),
           op("g", "group_by", "l", fn="by-first-char"),
           op("c", "count", "g", store="counts"), op("cs", "to_stream", "c"),
           *sink("cs", "counts")]
    swapped = [dict(r, topic="right" if r["topic"] == "left" else "left")
               for r in _VERSIONED_INPUT]
    cases.append({"name": "versioned-table-ignores-out-of-order-downstream", "ops": ops,
                  "input": swapped})
    # a store-less filter of a versioned table keeps its versioned semantics downstream
    for predicate in ("value-has-a", "value-len-odd"):
        for kind in ("join", "left_join"):
            ops = [op("l", "table", topic="left", store="vl", versioned=25),
                   op("f", "filter", "l", fn=predicate),
                   op("r", "table", topic="right", store="plain"),
                   op("j", kind, "f", other="r", fn="concat", store="tj"),
                   op("js", "to_stream", "j"), *sink("js"),
                   op("fs", "to_stream", "f"), *sink("fs", "filtered")]
            cases.append({"name": f"versioned-filter-{predicate}-then-table-{kind}",
                          "ops": ops, "input": swapped})
    # Found by a random run against Kafka (seeds 2 and 3 of a versioned-join generator): a
    # tombstone with the time of a key's only version leaves nothing, so a later out-of-order
    # put of that key (even at an earlier time) becomes its latest version.
    same_time = [rec("right", "b", "r2", 2), rec("right", "b", None, 2),
                 rec("right2", "b", "q5", 15), rec("right", "b", None, 0),
                 rec("right", "b", "r11", 0), rec("right", "b", "r12", 0),
                 rec("right", "a", "r1", 5), rec("right", "a", None, 9),
                 rec("right", "a", "r0", 3), rec("right", "c", "r4", 4),
                 rec("right", "c", None, 4), rec("right", "c", None, 4),
                 rec("right", "c", "r3", 3), rec("right2", "a", "q1", 1),
                 rec("right2", "c", "q2", 2), rec("left", "b", "l8", 8),
                 rec("left", "a", "l10", 10), rec("left", "a", "l6", 6),
                 rec("left", "c", "l7", 7), rec("left", "c", "l3", 3)]
    for kind in ("join", "outer_join"):
        ops = [op("l", "stream", topic="left"),
               op("r", "table", topic="right", store="v", versioned=30),
               op("j", "left_join", "l", other="r", fn="concat"), *sink("j"),
               op("r2", "table", topic="right2", store="p"),
               op("tj", kind, "r", other="r2", fn="concat", store="tj"),
               op("tjs", "to_stream", "tj"), *sink("tjs", "tt")]
        cases.append({"name": f"versioned-tombstone-at-only-version-then-table-{kind}",
                      "ops": ops, "input": same_time})
    fk_versioned = [rec("right", "a", "Apple", 1), rec("right", "b", "Berry", 2),
                    rec("left", "x1", "apple", 3), rec("left", "x2", "bean", 6),
                    rec("right", "a", "Avocado", 9), rec("right", "a", "Acorn", 5),
                    rec("left", "x1", "bread", 8), rec("left", "x1", "almond", 4),
                    rec("left", "x2", "avocado", 10), rec("right", "b", None, 7),
                    rec("right", "b", "Bean", 12), rec("left", "x3", "bun", 11)]
    for kind in ("join", "left_join"):
        ops = [op("l", "table", topic="left", store="vl", versioned=50),
               op("r", "table", topic="right", store="vr", versioned=50),
               op("j", kind, "l", other="r", fn="concat", fk="first-char", store="fk"),
               op("js", "to_stream", "j"), *sink("js")]
        cases.append({"name": f"versioned-fk-{kind}", "ops": ops, "input": fk_versioned})
    ops = [op("s", "stream", topic="in"), op("k", "select_key", "s", fn="first-char"),
           op("t", "to_table", "k", store="latest", versioned=20),
           op("ts", "to_stream", "t"), *sink("ts"),
           op("o", "stream", topic="orders"),
           op("j", "join", "o", other="t", fn="concat", grace=5), *sink("j", "joined")]
    orders = [rec("orders", k, f"o{ts}", ts) for k, ts in
              (("a", 6), ("b", 13), ("a", 26), ("c", 3), ("a", 50), ("b", 44))]
    cases.append({"name": "versioned-to-table-after-repartition", "ops": ops,
                  "input": word_input() + orders})
    ops = [op("s", "stream", topic="in"), op("m", "map_values", "s", fn="upper", keyed=True),
           *sink("m"), op("t", "table", topic="tin"),
           op("tm", "map_values", "t", fn="len", keyed=True), op("ts", "to_stream", "tm"),
           *sink("ts", "table-mapped")]
    cases.append({"name": "key-aware-map-values", "ops": ops,
                  "input": word_input() + table_input()})
    for kind in ("join", "left_join"):
        ops = [op("l", "stream", topic="left"), op("r", "table", topic="right"),
               op("j", kind, "l", other="r", fn="concat", keyed=True), *sink("j")]
        cases.append({"name": f"key-aware-stream-table-{kind}", "ops": ops,
                      "input": join_input(True)[:-2]})
        ops = [op("l", "stream", topic="left"), op("r", "stream", topic="right"),
               op("j", kind, "l", other="r", fn="concat", keyed=True,
                  windows={"diff": 3, "grace": 2}), *sink("j")]
        cases.append({"name": f"key-aware-stream-stream-{kind}", "ops": ops,
                      "input": join_input(True)[:-2]})
    fk_input = [rec("right", "X1", "Apple", 1), rec("right", "X2", "Berry", 2),
                rec("left", "x1", "apple", 3), rec("left", "x2", "bean", 4),
                rec("left", "x3", "cake", 5), rec("right", "X3", "Cocoa", 6),
                rec("right", "X1", "Avocado", 7), rec("left", "x1", "bread", 8),
                rec("right", "X2", None, 9), rec("left", "x2", None, 10)]
    for kind in ("join", "left_join"):
        ops = [op("l", "table", topic="left"), op("r", "table", topic="right"),
               op("j", kind, "l", other="r", fn="concat", fk="key-upper", fk_keyed=True,
                  store="fk"),
               op("js", "to_stream", "j"), *sink("js")]
        cases.append({"name": f"fk-keyed-extractor-{kind}", "ops": ops, "input": fk_input})
    return cases


def all_cases() -> list[Case]:
    return (stateless() + aggregations() + windows() + joins() + cogroups() + versioned()
            + composed() + cached() + serdes())


# -- composed topologies (issue [14]): each a class the composed generator found, shrunk ------


def _throttled(name: str, records: list[dict[str, Any]]) -> Case:
    ops = [op("l", "stream", topic="left"), op("r", "stream", topic="right"),
           op("j", "left_join", "l", other="r", fn="concat", windows={"diff": 3}), *sink("j")]
    return {"name": name, "ops": ops, "input": records, "emit_interval_ms": 1000}


def composed() -> list[Case]:
    cases = []
    # a re-keyed stream joined with itself and with a second stream: one repartition topic
    ops = [op("s", "stream", topic="in"), op("k", "select_key", "s", fn="first-char"),
           op("o", "stream", topic="in2"),
           op("self", "join", "k", other="k", fn="concat", windows={"diff": 5}),
           op("two", "left_join", "k", other="o", fn="concat", windows={"diff": 5}),
           op("m", "merge", "self", other="two"), *sink("m")]
    cases.append({"name": "rekeyed-self-join-and-second-join", "ops": ops,
                  "input": word_input() + word_input("in2", [3, 9, 14, 22, 40, 2])})
    # ... and a stream-table join of the same re-keyed stream reads that topic too
    ops = [op("s", "stream", topic="in"), op("k", "select_key", "s", fn="first-char"),
           op("t", "table", topic="tin"), op("o", "stream", topic="in2"),
           op("j1", "left_join", "k", other="t", fn="concat"),
           op("j2", "outer_join", "k", other="o", fn="concat", windows={"diff": 5}),
           *sink("j1"), *sink("j2", "out2")]
    cases.append({"name": "rekeyed-stream-table-and-stream-stream-join", "ops": ops,
                  "input": table_input() + word_input() + word_input("in2", [3, 9, 14])})
    # to_table on a re-keyed stream writes its repartition topic with the Materialized serdes
    ops = [op("s", "stream", topic="in"), op("l", "map_values", "s", fn="len"),
           op("k", "select_key", "l", fn="key-upper"), op("t", "to_table", "k", store="lens"),
           op("ts", "to_stream", "t"), *sink("ts")]
    cases.append({"name": "to-table-repartition-materialized-serdes", "ops": ops,
                  "input": word_input()})
    # KIP-962: a null key re-keyed for a left stream-table or outer stream-stream join is kept
    ops = [op("s", "stream", topic="in"), op("k", "select_key", "s", fn="key-upper"),
           op("t", "table", topic="tin"), op("o", "stream", topic="in2"),
           op("j1", "left_join", "k", other="t", fn="concat"),
           op("k2", "select_key", "s", fn="key-upper"),
           op("j2", "outer_join", "k2", other="o", fn="concat", windows={"diff": 5}),
           *sink("j1"), *sink("j2", "out2")]
    cases.append({"name": "null-keys-through-join-repartitions", "ops": ops,
                  "input": [rec("tin", "A", "T", 1), rec("in2", "A", "R", 1),
                            rec("in", "a", "apple", 2), rec("in", None, "nk", 3),
                            rec("in", "b", "bean", 4), rec("in", None, "nk2", 30)]})
    # ... also through the repartition topology.optimization merges (one topic for the join
    # and the aggregation of a re-keyed stream; the aggregation drops them itself)
    for optimization in ("none", "all"):
        ops = [op("s", "stream", topic="in"), op("k", "select_key", "s", fn="key-upper"),
               op("t", "table", topic="tin"), op("o", "stream", topic="in2"),
               op("j1", "left_join", "k", other="t", fn="concat"),
               op("j2", "outer_join", "k", other="o", fn="concat", windows={"diff": 5}),
               op("g", "group_by_key", "k"), op("c", "count", "g"), op("cs", "to_stream", "c"),
               *sink("j1"), *sink("j2", "out2"), *sink("cs", "out3")]
        cases.append({"name": f"null-keys-through-merged-repartition-{optimization}",
                      "ops": ops, "optimization": optimization,
                      "input": [rec("tin", "A", "T", 1), rec("in2", "A", "R", 1),
                                rec("in", "a", "apple", 2), rec("in", None, "nk", 3),
                                rec("in", "b", "bean", 4), rec("in", None, "nk2", 30)]})
    # ... but a join of a stream with itself under topology.optimization=all drops them: Kafka
    # runs it with its self-join processor (KIP-862), an inner join whatever the kind (a late
    # record is not emitted unjoined either), also when re-keyed
    for optimization in ("none", "all"):
        ops = [op("s", "stream", topic="in"),
               op("j1", "left_join", "s", other="s", fn="concat", windows={"diff": 10}),
               op("j2", "outer_join", "s", other="s", fn="concat",
                  windows={"diff": 10, "before": 5, "grace": 0}),
               op("k", "select_key", "s", fn="key-upper"),
               op("j3", "left_join", "k", other="k", fn="concat", windows={"diff": 3}),
               op("o", "stream", topic="in2"),
               op("j4", "left_join", "s", other="o", fn="concat", windows={"diff": 3}),
               *sink("j1"), *sink("j2", "out2"), *sink("j3", "out3"), *sink("j4", "out4")]
        cases.append({"name": f"self-join-null-keys-optimization-{optimization}", "ops": ops,
                      "optimization": optimization,
                      "input": [rec("in", None, "x", 59), rec("in", "a", "y", 60),
                                rec("in2", None, "z", 61), rec("in", "a", "w", 61),
                                rec("in", None, "v", 90), rec("in", "a", "u", 70)]})
    # ... and Kafka's self-join reads the store before the record is added to it: a partner
    # that the record's own time would expire from the store (retention = window) still joins
    for optimization in ("none", "all"):
        ops = [op("t", "table", topic="tin2"), op("ts", "to_stream", "t"),
               op("j", "left_join", "ts", other="ts", fn="concat",
                  windows={"diff": 3, "before": 0, "after": 2, "grace": 0}), *sink("j")]
        cases.append({"name": f"self-join-reads-store-before-the-record-{optimization}",
                      "ops": ops, "optimization": optimization,
                      "input": [rec("tin2", "b", "banana", 52), rec("tin2", "b", "apple", 54),
                                rec("tin2", "b", "cherry", 53), rec("tin2", "c", "x", 60)]})
    # ... and an explicit repartition() drops them
    ops = [op("s", "stream", topic="in"), op("r", "repartition", "s"), *sink("r")]
    cases.append({"name": "explicit-repartition-drops-null-keys", "ops": ops,
                  "input": [rec("in", "k", "x", 42), rec("in", None, "y", 43)]})
    # a stream merged with itself forwards each record once
    ops = [op("s", "stream", topic="in"), op("g", "group_by_key", "s"),
           op("r", "reduce", "g", fn="latest"), op("rs", "to_stream", "r"),
           op("m", "merge", "rs", other="rs"), *sink("m")]
    cases.append({"name": "merge-with-itself", "ops": ops, "input": word_input()})
    # the outer-join emit throttle (Kafka's default interval) starts at the join's first record
    left, wall = (lambda k, v, ts: rec("left", k, v, ts)), (lambda ms: {"wall": ms})
    cases += [
        _throttled("outer-join-throttle-no-wall-clock", [left("a", "x", 10), left("b", "y", 110)]),
        _throttled("outer-join-throttle-one-interval", [left("a", "x", 10), wall(1000),
                                                        left("b", "y", 110)]),
        _throttled("outer-join-throttle-clock-before-first", [
            wall(1000), left("a", "x", 10), wall(999), left("b", "y", 110), wall(1),
            left("c", "z", 120), left("d", "w", 220), wall(1000), left("e", "v", 330)]),
    ]
    # ... unless neither the window reaches past the record nor a grace is set: Kafka's check
    # adds min time (Long.MAX_VALUE while nothing is pending) in Java longs, and only a
    # positive addend wraps it negative; without one the first check waits for a pending record
    words = [rec("in", k, v, ts) for k, v, ts in (("c", "dab", 83), ("c", "dab", 85),
                                                   ("d", "cab", 99), ("c", "apple", 140))]
    ops = [op("s", "stream", topic="in"),
           op("j", "outer_join", "s", other="s", fn="concat", windows={"diff": 0}), *sink("j")]
    cases.append({"name": "outer-self-join-zero-window-throttle", "ops": ops, "input": words,
                  "emit_interval_ms": 1000})
    ops = [op("t", "table", topic="tin"), op("ts", "to_stream", "t"),
           op("j", "left_join", "ts", other="ts", fn="concat", windows={"diff": 0, "grace": 0}),
           *sink("j")]
    cases.append({"name": "left-self-join-zero-grace-throttle", "ops": ops,
                  "input": table_input(), "emit_interval_ms": 1000})
    # joins read tables without a store of their own through value getters (computed from the
    # stored ancestors), not through a store filled by what the table forwards
    longs = [dict(r, value=None if r["value"] is None else len(r["value"]))
             for r in table_input("tin2")]
    ops = [op("s", "stream", topic="in"), op("t", "table", topic="tin2", vt="l"),
           op("m", "map_values", "t", fn="double"), op("f", "filter", "m", fn="value-len-odd"),
           op("j", "left_join", "s", other="f", fn="concat"), *sink("j")]
    stream = [rec("in", k, v, ts) for k, v, ts in (("k1", "x", 2), ("k2", "y", 3),
                                                   ("k3", "z", 4), ("k1", "x", 9),
                                                   ("k4", "w", 12), ("k2", "v", 13))]
    cases.append({"name": "storeless-long-map-values-filter-joined", "ops": ops,
                  "input": sorted(longs + stream, key=lambda r: r["ts"])})
    ops = [op("a", "table", topic="tin"), op("b", "table", topic="tin2"),
           op("m", "map_values", "b", fn="len"),
           op("j", "left_join", "a", other="m", fn="concat"),
           op("js", "to_stream", "j"), *sink("js")]
    cases.append({"name": "storeless-map-values-table-table-joined", "ops": ops,
                  "input": table_input() + table_input("tin2")[::-1]})
    ops = [op("a", "table", topic="tin"), op("b", "table", topic="tin2"),
           op("sup", "suppress", "a", time_limit=0),
           op("ab", "join", "a", other="b", fn="concat"),
           op("j", "outer_join", "sup", other="ab", fn="concat"),
           op("js", "to_stream", "j"), *sink("js"),
           op("f", "filter", "ab", fn="value-has-a"),
           op("j2", "left_join", "b", other="f", fn="concat"), op("j2s", "to_stream", "j2"),
           *sink("j2s", "out2")]
    cases.append({"name": "storeless-table-join-joined-again", "ops": ops,
                  "input": table_input() + [dict(r, ts=r["ts"] + 1)
                                            for r in table_input("tin2")]})
    cases += old_values()
    # a join reads a suppressed table through its buffer: for a buffered key the value
    # downstream last saw (here the initial count, the first update's old value)
    ops = [op("t", "table", topic="tin2", vt="l"), op("s", "stream", topic="in"),
           op("g", "group_by_key", "s"), op("c", "count", "g"),
           op("sup", "suppress", "c", time_limit=30),
           op("j", "join", "t", other="sup", fn="concat"), op("js", "to_stream", "j"),
           *sink("js"), op("s2", "stream", topic="in2"),
           op("j2", "left_join", "s2", other="sup", fn="concat"), *sink("j2", "out2")]
    cases.append({"name": "join-reads-suppressed-table", "ops": ops,
                  "input": [rec("in", "b", "cocoa", 96), rec("tin2", "b", 5, 101),
                            rec("in2", "b", "x", 102), rec("in", "b", "d", 110),
                            rec("in2", "b", "y", 111), rec("in", "a", "e", 140),
                            rec("in2", "b", "z", 141), rec("tin2", "b", 6, 142)]})
    # with the record cache, a queryable source table (named, or read by a join) forwards
    # nothing for a delete of a key it never held; an unnamed one forwards it
    for cache in (0, 10 * 1024 * 1024):
        ops = [op("n", "table", topic="tin", store="named"), op("u", "table", topic="tin2"),
               op("ns", "to_stream", "n"), *sink("ns"), op("us", "to_stream", "u"),
               *sink("us", "out2"), op("s", "stream", topic="in"),
               op("t", "to_table", "s"), op("j", "left_join", "s", other="t", fn="concat"),
               *sink("j", "out3"), op("ts", "to_stream", "t"), *sink("ts", "out4")]
        deletes = [rec(topic, k, v, ts) for topic in ("tin", "tin2", "in")
                   for k, v, ts in (("a", None, 1), ("b", "x", 2), ("b", None, 3),
                                    ("b", None, 4))]
        cases.append({"name": f"source-table-absent-delete-cache-{cache}", "ops": ops,
                      "cache_bytes": cache, "input": deletes})
    # the outer join's store keeps a list per (time, side, key) and Kafka's scan visits each
    # value: with both sides' windows open it stops at a slot's second value, so the minimum
    # time stays there (at d@51 a@21 and a@25 are emitted; they were not)
    ops = [op("l", "stream", topic="left"), op("r", "stream", topic="right"),
           op("j", "outer_join", "l", other="r", fn="concat", windows={"diff": 3, "grace": 20}),
           *sink("j")]
    dup = [rec("left", k, v, ts) for k, ts, x in (("b", 18, "3"), ("a", 25, "8"),
                                                  ("a", 28, "8"), ("d", 43, "2"),
                                                  ("d", 51, "3")) for v in (x, "|", x)]
    cases.append({"name": "outer-join-emit-scan-visits-each-value", "ops": ops,
                  "input": dup[:3] + [rec("right", "a", "13", 21)] + dup[3:]})
    # the driver takes the next record from the topic with the lowest head timestamp, ties
    # as Kafka's one task breaks them (java.util.PriorityQueue): here a table update's FK
    # response comes between the two halves of its group_by repartition (subtract, add), so
    # the join also answers with the aggregate from before the add
    ops = [op("t", "table", topic="tin2"), op("g", "group_by", "t", fn="by-first-char"),
           op("r", "reduce", "g", fn="concat"),
           op("j", "join", "r", other="t", fn="concat", fk="first-char"),
           op("js", "to_stream", "j"), *sink("js")]
    cases.append({"name": "driver-order-ties-fk-response-between-repartition-halves",
                  "ops": ops,
                  "input": [rec("tin2", "c", "cocoa", 24), rec("tin2", "c", "d", 24),
                            rec("tin2", "c", "cocoa", 35), rec("tin2", "d", "dab", 35)]})
    # with the record cache, a windowed reduce of a null value (a tombstone per window without
    # the cache) forwards nothing: a caching store skips a delete of what it never held
    for cache in (0, 10 * 1024 * 1024):
        for windows in ({"type": "tumbling", "size": 5, "grace": 5},
                        {"type": "hopping", "size": 5, "advance": 2, "grace": 0}):
            ops = [op("s", "stream", topic="in"), op("g", "group_by", "s", fn="key-upper"),
                   op("w", "windowed_by", "g", windows=windows),
                   op("r", "reduce", "w", fn="latest"), op("rs", "to_stream", "r"),
                   *sink("rs")]
            cases.append({"name": f"windowed-reduce-null-{windows['type']}-cache-{cache}",
                          "ops": ops, "cache_bytes": cache,
                          "input": [rec("in", "c", None, 50), rec("in", "c", "x", 51),
                                    rec("in", "d", None, 56), rec("in", "c", None, 52)]})
    return cases


def old_values() -> list[Case]:
    """Which operators forward old values, and when (a downstream group_by subtracts them)."""
    def t(key: str | None, value: Any, ts: int, topic: str = "tin") -> dict[str, Any]:
        return rec(topic, key, value, ts)

    cases = []
    # a key's first aggregate update carries the initial aggregate as its old value
    ops = [op("s", "stream", topic="in"), op("g", "group_by_key", "s"),
           op("a", "aggregate", "g", fn="concat"), op("c", "count", "g"),
           op("g2", "group_by", "a", fn="by-first-char"),
           op("a2", "aggregate", "g2", fn="concat", store="agg2"), op("a2s", "to_stream", "a2"),
           *sink("a2s"), op("f", "filter", "c", fn="value-len-odd"), op("fs", "to_stream", "f"),
           *sink("fs", "out2")]
    cases.append({"name": "aggregate-of-aggregate-initial-old-value", "ops": ops,
                  "input": word_input()})
    fk_input = [t("a", "Apple", 1, "tin2"), t("k1", "apple", 2), t("k2", "avocado", 3),
                t("a", "Avocad", 4, "tin2"), t("k1", "bean", 5), t("k2", None, 6),
                t("k3", "cc", 7)]
    # an FK join result sends old values to a group_by (it gets a store for them) ...
    ops = [op("l", "table", topic="tin"), op("r", "table", topic="tin2"),
           op("j", "left_join", "l", other="r", fn="concat", fk="first-char"),
           op("g", "group_by", "j", fn="by-first-char"),
           op("c", "aggregate", "g", fn="concat", store="agg"), op("cs", "to_stream", "c"),
           *sink("cs")]
    cases.append({"name": "fk-join-result-old-values-to-group-by", "ops": ops,
                  "input": fk_input})
    # ... but to a filter only when its Materialized is named
    for named in (True, False):
        ops = [op("l", "table", topic="tin"), op("r", "table", topic="tin2"),
               op("j", "left_join", "l", other="r", fn="concat", fk="first-char",
                  **({"store": "fk"} if named else {})),
               op("f", "filter", "j", fn="value-len-odd"), op("fs", "to_stream", "f"),
               *sink("fs")]
        cases.append({"name": f"fk-left-join-filter-{'named' if named else 'unnamed'}",
                      "ops": ops, "input": fk_input})
    # a stream-table join reads the table through its store, which then offers old values
    # to a filter defined after the join (no tombstone for a value filtered out at once)
    for join_first in (True, False):
        join = [op("j", "join", "s", other="t", fn="concat"), *sink("j", "out2")]
        filt = [op("f", "filter", "t", fn="value-has-a"), op("fs", "to_stream", "f"),
                *sink("fs")]
        ops = [op("s", "stream", topic="in"), op("t", "table", topic="tin"),
               *(join + filt if join_first else filt + join)]
        cases.append({"name": f"{'join-then' if join_first else 'filter-then-join'}-filter",
                      "ops": ops, "input": [t("k1", "bbb", 1), rec("in", "k1", "x", 2),
                                            t("k2", "abc", 3), t("k2", "bb", 4),
                                            t("k3", "dd", 5), t("k3", None, 6)]})
    # a primary-key inner join asks neither input for old values (Kafka's doJoin: the left of
    # a left or outer join, the right of an outer join), so a filter feeding it forwards a
    # delete it never let through and the join answers with a tombstone
    # (composed-252938504-845); a group_by after the join asks both (its merger does)
    for kind in ("join", "left_join", "outer_join"):
        ops = [op("l", "table", topic="tin"), op("r", "table", topic="tin2"),
               op("fr", "filter", "r", fn="value-has-a"), op("fl", "filter", "l", fn="value-has-a"),
               op("j", kind, "fl", other="fr", fn="concat"), op("js", "to_stream", "j"),
               *sink("js")]
        cases.append({"name": f"filtered-inputs-{kind}-old-values", "ops": ops,
                      "input": [t("b", "dab", 15), t("b", None, 29, "tin2"),
                                t("c", "cab", 30, "tin2"), t("c", "x", 31),
                                t("c", None, 32), t("d", "bean", 33, "tin2"),
                                t("d", "d", 34, "tin2")]})
    # table-table joins of derived tables feeding a group_by
    for kind in ("join", "left_join", "outer_join"):
        ops = [op("l", "table", topic="tin"), op("r", "table", topic="tin2"),
               op("fl", "filter", "l", fn="value-len-odd"),
               op("fr", "map_values", "r", fn="upper"),
               op("j", kind, "fl", other="fr", fn="concat"),
               op("g", "group_by", "j", fn="by-first-char"),
               op("c", "aggregate", "g", fn="concat", store="agg"), op("cs", "to_stream", "c"),
               *sink("cs"), op("js", "to_stream", "j"), *sink("js", "out2")]
        cases.append({"name": f"derived-table-{kind}-then-group-by", "ops": ops,
                      "input": [t("k1", "abc", 1), t("k1", "ab", 2, "tin2"), t("k2", "bb", 3),
                                t("k2", "c", 4, "tin2"), t("k1", "abcd", 5), t("k2", "ccc", 6),
                                t("k1", None, 7, "tin2"), t("k2", None, 8)]})
    # a late session ending exactly at the store's retention bound is kept (Kafka's segmented
    # store writes it) and emit-on-close forwards it when it closes
    ops = [op("s", "stream", topic="in"), op("g", "group_by_key", "s"),
           op("w", "windowed_by", "g", windows={"type": "session", "gap": 8, "grace": 20}),
           op("e", "emit_on_close", "w"), op("c", "count", "e"), op("cs", "to_stream", "c"),
           *sink("cs")]
    cases.append({"name": "late-session-at-the-retention-bound-emitted-on-close", "ops": ops,
                  "input": [rec("in", "banana", "x", 72), rec("in", "bean", "y", 44),
                            rec("in", "b", "z", 82), rec("in", "c", "w", 120)]})
    # sessions that close together come out ordered by (end, start, key): b@5/7, c@6/7, a@7/7
    sessions = [rec("in", k, "x", ts) for k, ts in (("b", 3), ("a", 1), ("c", 2), ("a", 4),
                                                    ("d", 1), ("b", 5), ("c", 6), ("b", 7),
                                                    ("a", 7), ("c", 7), ("d", 6),
                                                    ("z", 40))]
    for last in ("emit_on_close", "suppress"):
        ops = [op("s", "stream", topic="in"), op("g", "group_by_key", "s"),
               op("w", "windowed_by", "g", windows={"type": "session", "gap": 5, "grace": 0})]
        if last == "emit_on_close":
            ops += [op("e", "emit_on_close", "w"), op("c", "count", "e")]
        else:
            ops += [op("c0", "count", "w"), op("c", "suppress", "c0")]
        ops += [op("cs", "to_stream", "c"), *sink("cs")]
        cases.append({"name": f"sessions-closing-together-{last}", "ops": ops,
                      "input": sessions})
    return cases


# -- the record cache on (same size both sides): each a class the composed generator found ---

CACHE = 10 * 1024 * 1024


def cached() -> list[Case]:
    cases = []
    # a cache flush forwards a deleted window (a reduce to null) with the time of the record
    # that deleted it, not the window's latest (Kafka's TimestampedCacheFlushListener; the
    # value carries no timestamp): composed-830431252-3010, a late null at 20 into [20,30)
    # last updated at 24
    for cache in (0, CACHE):
        for windows in ({"type": "tumbling", "size": 10, "grace": 20},
                        {"type": "hopping", "size": 10, "advance": 5, "grace": 20}):
            ops = [op("s", "stream", topic="in"), op("g", "group_by", "s", fn="key-upper"),
                   op("w", "windowed_by", "g", windows=windows),
                   op("r", "reduce", "w", fn="latest"), op("rs", "to_stream", "r"),
                   *sink("rs")]
            cases.append({"name": f"windowed-reduce-to-null-late-{windows['type']}-cache-{cache}",
                          "ops": ops, "cache_bytes": cache,
                          "input": [rec("in", "b", "b", 24), rec("in", "b", None, 20),
                                    rec("in", "c", "x", 25), rec("in", "c", None, 21)]})
    # a late record merges with a session the store has expired but the cache still holds
    # (Kafka's CachingSessionStore reads its cache by the query's bounds, not retention):
    # a@9, a@27, then a@21 joins both, count 3 (2 with the cache off)
    for cache in (0, CACHE):
        ops = [op("s", "stream", topic="in"), op("g", "group_by_key", "s"),
               op("w", "windowed_by", "g", windows={"type": "session", "gap": 15, "grace": 0}),
               op("c", "count", "w"), op("cs", "to_stream", "c"), *sink("cs")]
        cases.append({"name": f"session-merges-expired-cached-session-cache-{cache}",
                      "ops": ops, "cache_bytes": cache,
                      "input": [rec("in", "a", "x", 9), rec("in", "a", "y", 27),
                                rec("in", "a", "z", 21), rec("in", "b", "w", 60),
                                rec("in", "a", "v", 44)]})
        # a session merged away after the store expired it leaves without a tombstone: the
        # cache's flush reads the replaced value through the store's retention
        ops = [op("s", "stream", topic="in"), op("g", "group_by_key", "s"),
               op("w", "windowed_by", "g", windows={"type": "session", "gap": 8, "grace": 0}),
               op("c", "count", "w"), op("cs", "to_stream", "c"), *sink("cs")]
        cases.append({"name": f"session-merges-expired-flushed-session-cache-{cache}",
                      "ops": ops, "cache_bytes": cache,
                      "input": [rec("in", "a", "x", 15), rec("in", "b", "y", 23),
                                rec("in", "a", "z", 23), rec("in", "a", "w", 30)]})
        # ... but the store's retention moves only when the cache flushes into it: a record
        # that merges a session and itself advances stream time past that session's
        # retention still forwards its tombstone
        cases.append({"name": f"session-merge-advancing-stream-time-cache-{cache}",
                      "ops": ops, "cache_bytes": cache,
                      "input": [rec("in", "b", "d", 59), rec("in", "b", "bean", 74),
                                rec("in", "b", "x", 100), rec("in", "c", "y", 108),
                                rec("in", "b", "z", 93)]})
    for cache in (0, CACHE):
        # a materialized to_table caches as Kafka's KTableSource: one input record's several
        # updates of a key (flat_map_values, a self-join) reach downstream as one
        ops = [op("s", "stream", topic="in", vt="l"),
               op("f", "flat_map_values", "s", fn="split-chars"),
               op("t", "to_table", "f", store="chars"), op("ts", "to_stream", "t"), *sink("ts"),
               op("s3", "stream", topic="in3", vt="l"),
               op("j", "join", "s3", other="s3", fn="concat", windows={"diff": 10}),
               op("t3", "to_table", "j", store="joined"), op("t3s", "to_stream", "t3"),
               *sink("t3s", "out2")]
        cases.append({"name": f"to-table-folds-one-records-updates-cache-{cache}", "ops": ops,
                      "cache_bytes": cache,
                      "input": [rec("in", "b", 21, 105), rec("in", "b", 345, 106),
                                rec("in3", "a", 1, 81), rec("in3", "a", 1, 91),
                                rec("in", "c", None, 107)]})
        # ... and one read by a join (Kafka materializes it): its group_by count sees one
        # change per input record
        ops = [op("s3", "stream", topic="in3"), op("s", "stream", topic="in", vt="l"),
               op("f", "flat_map_values", "s", fn="split-chars"), op("t", "to_table", "f"),
               op("g", "group_by", "t", fn="by-first-char"),
               op("c", "count", "g", store="counts"),
               op("j", "left_join", "s3", other="c", fn="concat"), *sink("j")]
        cases.append({"name": f"to-table-read-by-join-then-group-by-cache-{cache}",
                      "ops": ops, "cache_bytes": cache,
                      "input": [rec("in", "b", 13, 137), rec("in3", "1", "x", 138),
                                rec("in", "b", 42, 139), rec("in3", "3", "y", 140)]})
        # sliding windows cache as time windows do: the latest per window at each flush
        ops = [op("s", "stream", topic="in2"), op("g", "group_by_key", "s"),
               op("w", "windowed_by", "g", windows={"type": "sliding", "diff": 10, "grace": 5}),
               op("r", "reduce", "w", fn="concat"), op("rs", "to_stream", "r"), *sink("rs"),
               op("l", "stream", topic="in"),
               op("lj", "left_join", "l", other="l", fn="concat",
                  windows={"diff": 0, "after": 5, "grace": 5}),
               op("g2", "group_by_key", "lj"),
               op("w2", "windowed_by", "g2", windows={"type": "sliding", "diff": 15, "grace": 5}),
               op("a2", "aggregate", "w2", fn="sum-len"), op("a2s", "to_stream", "a2"),
               *sink("a2s", "out2")]
        cases.append({"name": f"sliding-windows-cache-{cache}", "ops": ops,
                      "cache_bytes": cache,
                      "input": [rec("in2", "a", "dab", 19), rec("in2", "a", "", 29),
                                rec("in2", "a", "aa", 40), rec("in", "c", "cocoa", 70),
                                rec("in", "c", "cab", 75), rec("in2", "a", "b", 38)]})
        # a materialized FK-join result caches as Kafka's KTableSource: the tombstone for a
        # key it never held (the left value moved to a foreign key with no match) is skipped
        ops = [op("l", "table", topic="tin3"), op("r", "table", topic="tin"),
               op("j", "join", "l", other="r", fn="concat", fk="first-char", store="fk"),
               op("js", "to_stream", "j"), *sink("js"),
               op("self", "join", "r", other="r", fn="concat", fk="value-as-key",
                  store="self"), op("ss", "to_stream", "self"), *sink("ss", "out2")]
        cases.append({"name": f"fk-join-result-cache-{cache}", "ops": ops,
                      "cache_bytes": cache,
                      "input": [rec("tin3", "b", "bean", 9), rec("tin3", "b", "dab", 12),
                                rec("tin", "c", "bean", 43), rec("tin", "c", "aa", 43),
                                rec("tin", "d", "x", 44), rec("tin3", "e", "dog", 45),
                                rec("tin", "aa", "c", 46)]})
    return cases


# -- where Kafka serializes, with which serde (a table's value serde, else the default) -------


def serdes() -> list[Case]:
    """Each case has a table whose values the String default cannot write (an unmaterialized
    map_values to Long): Kafka fails only where it serializes them, so ours must serialize at
    the same points."""
    cases = []
    # composed-1127401-257: an FK join's right table is written (into the response topic)
    # only for a key some left row subscribes to; here none does
    ops = [op("l", "table", topic="tin2", vt="l"), op("r", "table", topic="tin3"),
           op("len", "map_values", "r", fn="len"),
           op("j", "join", "l", other="len", fn="concat", fk="value-as-key"),
           op("js", "to_stream", "j"), *sink("js"),
           op("lj", "left_join", "l", other="len", fn="concat", fk="value-as-key"),
           op("ljs", "to_stream", "lj"), *sink("ljs", "out2")]
    cases.append({"name": "fk-join-right-values-serialized-only-for-subscribers", "ops": ops,
                  "input": [rec("tin3", "a", "apple", 59), rec("tin2", "k", 5, 60),
                            rec("tin3", "c", "cocoa", 61), rec("tin2", "k", 7, 62),
                            rec("tin3", "a", None, 63), rec("tin2", "q", 3, 64)]})
    # ... so both fail at the same input: the first update of a subscribed key (the third)
    ops = [op("l", "table", topic="tin2", vt="l"), op("r", "table", topic="tin3"),
           op("len", "map_values", "r", fn="len"),
           op("j", "join", "l", other="len", fn="concat", fk="value-as-key"),
           op("js", "to_stream", "j"), *sink("js")]
    cases.append({"name": "fk-join-fails-at-the-first-subscribed-right-update", "ops": ops,
                  "input": [rec("tin2", "k", 5, 1), rec("tin3", "7", "bean", 2),
                            rec("tin3", "5", "bean", 3), rec("tin3", "a", "apple", 4)]})
    # a suppression buffer writes each update it takes (Kafka: at the put, with the table's
    # serdes, else the defaults), so the first Long value to reach it fails, with and without
    # the record cache (whose flush reaches it in the driver's commit after each input)
    for cache in (0, 10 * 1024 * 1024):
        ops = [op("t", "table", topic="tin", store="words"),
               op("f", "filter", "t", fn="value-has-a"), op("len", "map_values", "f", fn="len"),
               op("sup", "suppress", "len", time_limit=0), op("ss", "to_stream", "sup"),
               *sink("ss"), op("ts", "to_stream", "t"), *sink("ts", "out2")]
        cases.append({"name": f"suppress-buffer-fails-at-the-first-long-cache-{cache}",
                      "ops": ops, "cache_bytes": cache,
                      "input": [rec("tin", "b", "dd", 1), rec("tin", "c", None, 2),
                                rec("tin", "b", "apple", 3), rec("tin", "c", "x", 4)]})
    # a Materialized without serdes stores with the defaults, not with the table's serdes
    # (composed-20261127-610 and -571: Kafka failed at the first Long to reach such a
    # to_table or filter store, ours ran; map_values already did as Kafka); the same Long
    # values pass through a to_table, a filter and a map_values whose Materialized names its
    # serdes, and the first inputs reach no such store
    longs = [rec("in2", "a", 5, 1), rec("in2", "b", 7, 2), rec("in", "a", 3, 3),
             rec("in", "b", 4, 4)]
    ok = [op("s2", "stream", topic="in2", vt="l"), op("t2", "to_table", "s2", store="named"),
          op("f2", "filter", "t2", fn="value-len-odd", store="kept"),
          op("m2", "map_values", "f2", fn="double", store="doubled"),
          op("m2s", "to_stream", "m2"), *sink("m2s", "out2")]
    for name, bad in (
            ("to-table", [op("t", "to_table", "s", store="t", serdes="inferred"),
                          op("ts", "to_stream", "t"), *sink("ts")]),
            ("filter", [op("t", "to_table", "s", store="t"),
                        op("f", "filter", "t", fn="value-len-odd", store="f",
                           serdes="inferred"), op("fs", "to_stream", "f"), *sink("fs")]),
            ("map-values", [op("t", "to_table", "s", store="t"),
                            op("m", "map_values", "t", fn="double", store="m",
                               serdes="inferred"), op("ms", "to_stream", "m"), *sink("ms")])):
        cases.append({"name": f"{name}-materialized-without-serdes-stores-with-defaults",
                      "ops": [op("s", "stream", topic="in", vt="l"), *bad, *ok],
                      "input": longs})
    cases.append({"name": "materialized-with-serdes-stores-with-them", "ops": ok,
                  "input": longs[:2]})
    # ... but an unnamed to_table is stored only once a join or old values need it
    # (composed-902714126-2434): until then Kafka writes nothing with those serdes
    words = [rec("in", "a", "apple", 1), rec("in", "b", "cab", 2), rec("in", "a", "d", 3)]
    for name, more in (("unread", []),
                       ("joined", [op("s2", "stream", topic="in2"),
                                   op("j", "left_join", "s2", other="t", fn="concat"),
                                   *sink("j", "out2")])):
        for cache in (0, 10 * 1024 * 1024):
            ops = [op("s", "stream", topic="in"), op("len", "map_values", "s", fn="len"),
                   op("t", "to_table", "len", serdes="inferred"), op("ts", "to_stream", "t"),
                   *sink("ts"), *more]
            cases.append({"name": f"unnamed-to-table-without-serdes-{name}-cache-{cache}",
                          "ops": ops, "cache_bytes": cache, "input": words})
    return cases
