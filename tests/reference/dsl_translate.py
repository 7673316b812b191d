"""A DSL case (JSON) -> a topology on our DSL, run on our TopologyTestDriver.

A case is ``{"name", "ops": [...], "input": [...]}``. Each op has an ``id`` and ``op`` (the
vocabulary below, Kafka Streams' operation names in snake_case), ``from`` (the op it applies
to), ``other`` for joins and merge, ``fn`` naming a catalogue function (dsl_catalogue.py),
``store`` to materialize under a name (``serdes: "inferred"``: a Materialized without
serdes), ``windows`` for windowed_by / stream-stream joins /
windowed cogroups, and ``topic`` for sources and ``to``. Inputs are ``{"topic", "key",
"value", "ts"}`` records or ``{"wall": ms}`` wall-clock advances. Optional ``cache_bytes`` (the record cache,
``statestore.cache.max.bytes``), ``emit_interval_ms`` (the stream-stream outer join's emit
throttle) and ``optimization`` (``topology.optimization``, "none" unless set) configure both
drivers alike.

``annotate`` infers every op's value type (``vt``: "s" String, "l" Long) and which tables are
windowed, and lists the output topics and stores with their types: TopologyRunner.java reads
that annotated JSON, so type inference lives in one place.
"""

from __future__ import annotations

import copy
import os
import shutil
import tempfile
from typing import Any

from streams import (
    EmitStrategy,
    Joined,
    JoinWindows,
    Materialized,
    Serdes,
    SessionWindows,
    SlidingWindows,
    Stores,
    StreamsBuilder,
    Suppressed,
    TimeWindows,
)
from streams.dsl.suppress import BufferConfig
from streams.serde import Serde
from streams.testing import TopologyTestDriver

from . import dsl_catalogue as cat

CONFIG = {"application.id": "dsl-diff", "default.key.serde": "string",
          "default.value.serde": "string"}


class CaseError(ValueError):
    """The case does not type-check against the vocabulary."""


def _windows_kind(windows: dict[str, Any]) -> str:
    return "session" if windows["type"] == "session" else "window"


def annotate(case: dict[str, Any]) -> dict[str, Any]:
    """A copy of ``case`` with ``vt``/``kind``/``windowed`` per op, ``outputs`` and ``stores``."""
    case = copy.deepcopy(case)
    info: dict[str, dict[str, Any]] = {}
    outputs: dict[str, str] = {}
    stores: dict[str, str] = {}
    for op in case["ops"]:
        kind, vt, windowed, store_kind = _infer(op, info)
        op["vt"] = vt
        if op["op"] == "to_stream" and windowed:
            op["windowed"] = True
        info[op["id"]] = {"kind": kind, "vt": vt, "windowed": windowed,
                          "windows": op.get("windows") or info.get(op.get("from", ""), {})
                          .get("windows")}
        if op["op"] == "to":
            outputs[op["topic"]] = vt
        if "store" in op and "versioned" not in op:  # versioned stores have no scan
            stores[op["store"]] = store_kind
    case["outputs"] = outputs
    case["stores"] = stores
    return case


def _infer(op: dict[str, Any], info: dict[str, dict[str, Any]]
           ) -> tuple[str, str, bool, str]:
    """(kind, value type, windowed, store kind) of the node ``op`` makes."""
    name = op["op"]
    src = info.get(op.get("from", ""), {"kind": None, "vt": "s", "windowed": False})
    kind, vt, windowed = src["kind"], src["vt"], src["windowed"]
    fn = op.get("fn")
    if name in ("stream", "table", "global_table"):
        return {"stream": "stream", "table": "table", "global_table": "global"}[name], \
            op.get("vt", "s"), False, "kv"
    if name in ("filter", "filter_not", "suppress", "emit_on_close", "repartition"):
        return kind, vt, windowed, "kv"
    if name == "map_values":
        _, needs, out = cat.VALUE_MAPPERS[fn]
        if op.get("keyed"):
            out = "s"  # key + "@" + mapped value
        if needs and needs != vt:
            raise CaseError(f"{op['id']}: {fn} needs {needs} values, got {vt}")
        return kind, out or vt, windowed, "kv"
    if name in ("select_key", "merge", "to"):
        return "stream", vt, False, "kv"
    if name == "flat_map_values":
        return "stream", cat.FLAT_MAPPERS[fn][1] or vt, False, "kv"
    if name == "to_table":
        return "table", vt, False, "kv"
    if name == "to_stream":
        return "stream", vt, windowed, "kv"
    if name in ("group_by_key", "group_by"):
        if kind == "table":
            return "gtable", cat.REGROUPERS[fn][1] or vt, False, "kv"
        return "gstream", vt, False, "kv"
    if name == "windowed_by":
        return ("sstream" if op["windows"]["type"] == "session" else "wstream"), vt, False, "kv"
    store_kind = "kv"
    if kind in ("wstream", "sstream"):
        store_kind = "session" if kind == "sstream" else "window"
    if name == "count":
        return "table", "l", kind in ("wstream", "sstream"), store_kind
    if name == "reduce":
        needs = cat.REDUCERS[fn][2]
        if needs and needs != vt:
            raise CaseError(f"{op['id']}: reducer {fn} needs {needs} values, got {vt}")
        return "table", vt, kind in ("wstream", "sstream"), store_kind
    if name == "aggregate":
        needs, out = cat.AGGREGATORS[fn]
        if needs and needs != vt:
            raise CaseError(f"{op['id']}: aggregator {fn} needs {needs} values, got {vt}")
        return "table", out, kind in ("wstream", "sstream"), store_kind
    if name == "cogroup":
        out = cat.AGGREGATORS[op["inputs"][0]["fn"]][1]
        windows = op.get("windows")
        return "table", out, windows is not None, \
            _windows_kind(windows) if windows else "kv"
    if name in ("join", "left_join", "outer_join"):
        return ("stream" if kind == "stream" else "table"), "s", False, "kv"
    raise CaseError(f"unknown operation {name!r}")


# -- building on our DSL -------------------------------------------------------------------------


def serde(vt: str) -> Serde[Any]:
    return Serdes.long() if vt == "l" else Serdes.string()


def _mat(op: dict[str, Any], vt: str) -> Materialized:
    """``retention`` (ms) sets a windowed store's retention (Kafka's withRetention);
    ``"serdes": "inferred"`` gives no serdes, so each side picks them by its own rules (the
    operator's input, Long for a count, else the defaults)."""
    if op.get("serdes") == "inferred":
        return Materialized(op.get("store"), retention=op.get("retention"))
    return Materialized(op.get("store"), key_serde=Serdes.string(), value_serde=serde(vt),
                        retention=op.get("retention"))


def windows_of(spec: dict[str, Any]) -> Any:
    grace = spec.get("grace")
    kind = spec["type"]
    if kind in ("tumbling", "hopping"):
        w = TimeWindows.of_size_with_no_grace(spec["size"]) if grace is None \
            else TimeWindows.of_size_and_grace(spec["size"], grace)
        return w.advance_by(spec["advance"]) if "advance" in spec else w
    if kind == "sliding":
        return SlidingWindows.of_time_difference_with_no_grace(spec["diff"]) if grace is None \
            else SlidingWindows.of_time_difference_and_grace(spec["diff"], grace)
    if kind == "session":
        return SessionWindows.of_inactivity_gap_with_no_grace(spec["gap"]) if grace is None \
            else SessionWindows.of_inactivity_gap_and_grace(spec["gap"], grace)
    raise CaseError(f"windows {spec}")


def join_windows_of(spec: dict[str, Any]) -> JoinWindows:
    grace = spec.get("grace")
    w = JoinWindows.of_time_difference_with_no_grace(spec["diff"]) if grace is None \
        else JoinWindows.of_time_difference_and_grace(spec["diff"], grace)
    if "before" in spec:
        w = w.before(spec["before"])
    if "after" in spec:
        w = w.after(spec["after"])
    return w


def _null_safe(fn: Any) -> Any:
    return lambda v: None if v is None else fn(v)


class _Builder:
    """Walks the annotated ops, keeping each op's node and value type."""

    def __init__(self, case: dict[str, Any]) -> None:
        self.builder = StreamsBuilder()
        self.nodes: dict[str, Any] = {}
        self.types: dict[str, str] = {}
        self.kinds: dict[str, str] = {}
        for op in case["ops"]:
            self.nodes[op["id"]] = self.build(op)
            self.types[op["id"]] = op["vt"]

    def build(self, op: dict[str, Any]) -> Any:
        name, vt, fn = op["op"], op["vt"], op.get("fn")
        src = self.nodes.get(op.get("from", ""))
        in_vt = self.types.get(op.get("from", ""), "s")
        b = self.builder
        if name == "stream":
            return b.stream(op["topic"], key_serde=Serdes.string(), value_serde=serde(vt))
        if name == "table" and "versioned" in op:  # KIP-889
            supplier = Stores.persistent_versioned_key_value_store(op["store"], op["versioned"])
            mat = Materialized.as_(supplier).with_key_serde(Serdes.string()) \
                .with_value_serde(serde(vt))
            return b.table(op["topic"], key_serde=Serdes.string(), value_serde=serde(vt),
                           materialized=mat)
        if name == "table":
            return b.table(op["topic"], key_serde=Serdes.string(), value_serde=serde(vt),
                           materialized=_mat(op, vt) if "store" in op else None)
        if name == "global_table":
            return b.global_table(op["topic"], key_serde=Serdes.string(), value_serde=serde(vt),
                                  materialized=_mat(op, vt))
        if name in ("filter", "filter_not"):
            pred = cat.PREDICATES[fn]
            method = getattr(src, name)
            if _is_table(src):
                return method(pred, _mat(op, vt) if "store" in op else None)
            return method(pred)
        if name == "map_values":
            mapper = _null_safe(cat.VALUE_MAPPERS[fn][0])
            if op.get("keyed"):  # ValueMapperWithKey, chosen by arity
                plain = mapper
                mapper = lambda k, v: cat.s(k) + "@" + cat.s(plain(v))  # noqa: E731
            if _is_table(src):
                return src.map_values(mapper, _mat(op, vt) if "store" in op else None)
            return src.map_values(mapper)
        if name == "select_key":
            return src.select_key(cat.KEY_MAPPERS[fn])
        if name == "flat_map_values":
            return src.flat_map_values(cat.FLAT_MAPPERS[fn][0])
        if name == "merge":
            return src.merge(self.nodes[op["other"]])
        if name == "repartition":
            return src.repartition(key_serde=Serdes.string(), value_serde=serde(vt))
        if name == "to":
            src.to(op["topic"], key_serde=Serdes.string(), value_serde=serde(in_vt))
            return None
        if name == "to_table" and "versioned" in op:  # KIP-889
            supplier = Stores.persistent_versioned_key_value_store(op["store"], op["versioned"])
            return src.to_table(Materialized.as_(supplier).with_key_serde(Serdes.string())
                                .with_value_serde(serde(vt)))
        if name == "to_table":
            return src.to_table(_mat(op, vt))
        if name == "to_stream":
            if op.get("windowed"):
                return src.to_stream(lambda k, v: cat.windowed_key(k))
            return src.to_stream()
        if name == "group_by_key":
            return src.group_by_key(key_serde=Serdes.string(), value_serde=serde(in_vt))
        if name == "group_by":
            if _is_table(src):
                return src.group_by(cat.REGROUPERS[fn][0], key_serde=Serdes.string(),
                                    value_serde=serde(vt))
            return src.group_by(cat.KEY_MAPPERS[fn], key_serde=Serdes.string(),
                                value_serde=serde(in_vt))
        if name == "windowed_by":
            return src.windowed_by(windows_of(op["windows"]))
        if name == "emit_on_close":
            return src.emit_strategy(EmitStrategy.on_window_close())
        if name in ("count", "reduce", "aggregate"):
            return self._aggregation(name, src, fn, op, vt)
        if name == "cogroup":
            return self._cogroup(op, vt)
        if name == "suppress":
            buffer = BufferConfig.unbounded()
            if "time_limit" in op:
                return src.suppress(Suppressed.until_time_limit(op["time_limit"], buffer))
            return src.suppress(Suppressed.until_window_closes(buffer))
        if name in ("join", "left_join", "outer_join"):
            return self._join(name, op, src, in_vt)
        raise CaseError(f"unknown operation {name!r}")

    def _aggregation(self, name: str, src: Any, fn: str | None, op: dict[str, Any],
                     vt: str) -> Any:
        mat = _mat(op, vt)
        table_grouped = type(src).__name__ == "KGroupedTable"
        session = type(src).__name__ == "SessionWindowedKStream"
        if name == "count":
            return src.count(mat)
        if name == "reduce":
            adder, subtractor, _ = cat.REDUCERS[fn]
            return src.reduce(adder, subtractor, mat) if table_grouped else src.reduce(adder, mat)

        def add(k: Any, v: Any, a: Any) -> Any:
            return cat.aggregate(fn, v, a, 1)

        init = (lambda: cat.initial(fn))  # noqa: E731
        if table_grouped:
            return src.aggregate(init, add, lambda k, v, a: cat.aggregate(fn, v, a, -1), mat)
        if session:
            return src.aggregate(init, add, lambda k, a1, a2: cat.merge(fn, a1, a2), mat)
        return src.aggregate(init, add, mat)

    def _cogroup(self, op: dict[str, Any], vt: str) -> Any:
        cogrouped = None
        first = op["inputs"][0]["fn"]
        for spec in op["inputs"]:
            name = spec["fn"]

            def agg(k: Any, v: Any, a: Any, name: str = name) -> Any:
                return cat.aggregate(name, v, a, 1)

            grouped = self.nodes[spec["from"]]
            cogrouped = grouped.cogroup(agg) if cogrouped is None \
                else cogrouped.cogroup(grouped, agg)
        assert cogrouped is not None
        init = (lambda: cat.initial(first))  # noqa: E731
        if "windows" not in op:
            return cogrouped.aggregate(init, _mat(op, vt))
        windowed = cogrouped.windowed_by(windows_of(op["windows"]))
        if op["windows"]["type"] == "session":
            return windowed.aggregate(init, lambda k, a1, a2: cat.merge(first, a1, a2),
                                      _mat(op, vt))
        return windowed.aggregate(init, _mat(op, vt))

    def _join(self, name: str, op: dict[str, Any], left: Any, lvt: str) -> Any:
        right = self.nodes[op["other"]]
        rvt = self.types[op["other"]]
        joiner = cat.JOINERS[op["fn"]]
        if op.get("keyed"):  # ValueJoinerWithKey, chosen by arity
            plain = joiner
            joiner = lambda k, lv, rv: cat.s(k) + "@" + plain(lv, rv)  # noqa: E731
        method = getattr(left, name)
        if _is_table(left):
            mat = _mat(op, "s") if "store" in op else None
            if "fk" in op:
                if op.get("fk_keyed"):  # Kafka 4.0's (key, value) -> fk
                    return method(right, joiner, mat, foreign_key_extractor=cat.KEY_MAPPERS[op["fk"]])
                return method(right, joiner, mat,
                              foreign_key_extractor=lambda v: cat.KEY_MAPPERS[op["fk"]](None, v))
            return method(right, joiner, mat)
        serdes = {"key_serde": Serdes.string(), "value_serde": serde(lvt),
                  "other_value_serde": serde(rvt)}
        if type(right).__name__ == "GlobalKTable":
            return method(right, joiner, key_selector=cat.KEY_MAPPERS[op["key_selector"]])
        if type(right).__name__ == "KStream":
            return method(right, joiner, join_windows_of(op["windows"]), **serdes)
        if "grace" in op:  # KIP-923
            return method(right, joiner, Joined.with_(**serdes).with_grace_period(op["grace"]))
        return method(right, joiner, **serdes)


def _is_table(node: Any) -> bool:
    return type(node).__name__ == "KTable"


def state_root() -> str | None:
    """Where the cases' RocksDB stores live: a RAM disk when there is one (opening and closing
    RocksDB on a disk is most of a case's time; the stores' code is the same), else /tmp."""
    shm = "/dev/shm"
    return shm if os.path.isdir(shm) and os.access(shm, os.W_OK) else None


def run_ours(annotated: dict[str, Any]) -> dict[str, Any]:
    """Outputs and final store contents, in TopologyRunner.java's answer shape; on an error,
    its message and ``failed_at``, the index of the input being fed (-1 while building, the
    input count once all were fed)."""
    state_dir = tempfile.mkdtemp(prefix="dsl-diff-", dir=state_root())
    feeding = [-1]
    try:
        config = dict(config_of(annotated), **{"state.dir": state_dir})
        topology = _Builder(annotated).builder.build(config)
        with TopologyTestDriver(topology, config, initial_wall_clock_time=0) as driver:
            return _drive(driver, annotated, feeding)
    except Exception as exc:  # noqa: BLE001 - a refused topology is an answer to compare
        return {"error": f"{type(exc).__name__}: {exc}", "failed_at": feeding[0]}
    finally:
        shutil.rmtree(state_dir, ignore_errors=True)


def config_of(case: dict[str, Any]) -> dict[str, Any]:
    """The driver config: CONFIG plus the case's record cache size (``cache_bytes``, 0 when
    absent) and stream-stream outer-join emit interval (``emit_interval_ms``, 0 when absent),
    set the same way on TopologyRunner.java's side."""
    config = dict(CONFIG)
    config["statestore.cache.max.bytes"] = int(case.get("cache_bytes", 0))
    config["__emit.interval.ms.kstreams.outer.join.spurious.results.fix__"] = \
        int(case.get("emit_interval_ms", 0))
    config["topology.optimization"] = case.get("optimization", "none")
    return config


def _source_types(annotated: dict[str, Any]) -> dict[str, str]:
    return {op["topic"]: op["vt"] for op in annotated["ops"]
            if op["op"] in ("stream", "table", "global_table")}


def _drive(driver: TopologyTestDriver, annotated: dict[str, Any],
           feeding: list[int]) -> dict[str, Any]:
    inputs = {topic: driver.create_input_topic(topic, Serdes.string(), serde(vt))
              for topic, vt in _source_types(annotated).items()}
    for index, record in enumerate(annotated["input"]):
        feeding[0] = index
        if "wall" in record:
            driver.advance_wall_clock_time(record["wall"])
            continue
        inputs[record["topic"]].pipe_input(record.get("key"), record.get("value"),
                                           timestamp=record["ts"])
    feeding[0] = len(annotated["input"])
    outputs = {}
    for topic, vt in annotated["outputs"].items():
        out = driver.create_output_topic(topic, Serdes.string(), serde(vt))
        outputs[topic] = [[r.key, r.value, r.timestamp] for r in out.read_records_to_list()]
    stores = {}
    for name, kind in annotated["stores"].items():
        store = driver.get_state_store(name)
        entries = list(store.all())
        stores[name] = [[cat.windowed_key(k) if kind != "kv" else k, v] for k, v in entries]
    return {"outputs": outputs, "stores": stores}
