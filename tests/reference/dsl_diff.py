"""Random composed DSL cases on Kafka Streams' TopologyTestDriver and ours, every mismatch
shrunk to its smallest case (``make dsl-diff DSL_DIFF_CASES=N [SEED=S]``).

    python -m tests.reference.dsl_diff --cases 2000 [--seed S] [--cache off|on|random]

prints the seed first (a fresh one unless given), then each mismatch shrunk (its JSON, which
``DSL_DIFF_CASE=<file> pytest tests/reference/test_dsl_diff.py -k random`` replays, and what
differs), and last the totals. Shrunk cases are also written to ``--out`` (one JSON file each).
The comparison (``differences``) is the one tests/reference/test_dsl_diff.py asserts.
"""

from __future__ import annotations

import argparse
import copy
import json
import logging
import random
import sys
import tempfile
import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import dsl_random
from .dsl_runner import KafkaStreamsRunner
from .dsl_translate import CaseError, annotate, run_ours

Case = dict[str, Any]


def normalise(answer: dict[str, Any], annotated: dict[str, Any]) -> dict[str, Any]:
    """Deliberate differences (docs/kafka-differences.md, "Streams DSL") made equal here.

    Errors: whether a side refused the case, and at which input it failed (``failed_at``: -1
    building, else the input being fed, so a serde Kafka uses only later fails later), not
    the message (Java exception text against Python's). Window and session stores: ``all()`` order is not part of Kafka's
    API (its RocksDB window store runs key-then-start within a segment, ours start-then-key),
    so their entries are compared sorted; key-value stores keep their order (both by key bytes).
    With the record cache on, window and session stores are not compared: Kafka's caching
    window store still shows, in ``all()``, windows whose segments have expired (they linger
    in the cache); what the aggregations emit is compared as always.
    """
    if "error" in answer:
        return {"error": True, "failed_at": answer.get("failed_at")}
    cached = bool(annotated.get("cache_bytes"))
    stores = {name: sorted(entries, key=repr) if annotated["stores"][name] != "kv" else entries
              for name, entries in answer["stores"].items()
              if not (cached and annotated["stores"][name] != "kv")}
    return {"outputs": answer["outputs"], "stores": stores}


def compare(case: Case, runner: KafkaStreamsRunner) -> tuple[dict[str, Any], dict[str, Any]]:
    """(Kafka's answer, ours), normalised."""
    annotated = annotate(case)
    runner.submit(annotated)  # Kafka's JVM and ours run the case at the same time
    try:
        ours = run_ours(annotated)
    finally:
        kafka = runner.answer()  # read even when ours failed: the next case's answer is next
    return normalise(kafka, annotated), normalise(ours, annotated)


def describe(case: Case, kafka: dict[str, Any], ours: dict[str, Any]) -> str:
    lines = [f"case {case.get('name')}: {json.dumps(case)}"]
    for part in ("error", "failed_at", "outputs", "stores"):
        theirs, mine = kafka.get(part), ours.get(part)
        if part in ("error", "failed_at") or not isinstance(theirs, dict) or not isinstance(mine, dict):
            if theirs != mine:
                lines.append(f"  {part}: kafka={theirs!r}\n  {' ' * len(part)}  ours ={mine!r}")
            continue
        for name in sorted(set(theirs) | set(mine)):
            if theirs.get(name) != mine.get(name):
                lines.append(f"  {part}[{name}]:\n    kafka={theirs.get(name)}\n"
                             f"    ours ={mine.get(name)}")
    return "\n".join(lines)


def differences(case: Case, runner: KafkaStreamsRunner) -> str | None:
    kafka, ours = compare(case, runner)
    return None if kafka == ours else describe(case, kafka, ours)


# -- shrinking --------------------------------------------------------------------------------

def _kind(kafka: dict[str, Any], ours: dict[str, Any]) -> str | None:
    """What kind of mismatch: None (equal), "error" (one side refused) or "output"."""
    if kafka == ours:
        return None
    return "error" if "error" in kafka or "error" in ours else "output"


def prune(case: Case) -> Case:
    """Drop ops that feed no sink and inputs for topics nothing reads."""
    ops = case["ops"]
    by_id = {op["id"]: op for op in ops}
    needed: set[str] = set()
    stack = [op["id"] for op in ops if op["op"] == "to"]
    while stack:
        node = stack.pop()
        if node in needed or node not in by_id:
            continue
        needed.add(node)
        op = by_id[node]
        stack.extend(op[k] for k in ("from", "other") if k in op)
        stack.extend(i["from"] for i in op.get("inputs", []))
    case = dict(case, ops=[op for op in ops if op["id"] in needed])
    topics = {op["topic"] for op in case["ops"] if op["op"] in ("stream", "table", "global_table")}
    case["input"] = [r for r in case["input"] if "wall" in r or r["topic"] in topics]
    return case


def _bypass(case: Case, node: str, to: str) -> Case:
    """``node``'s consumers read ``to`` instead; ``node`` is pruned."""
    out = copy.deepcopy(case)
    for op in out["ops"]:
        for k in ("from", "other"):
            if op.get(k) == node:
                op[k] = to
        for i in op.get("inputs", []):
            if i["from"] == node:
                i["from"] = to
    return prune(out)


def _candidates(case: Case) -> list[Case]:
    """Smaller variants of ``case``, the biggest cuts first."""
    out: list[Case] = []
    sinks = [op for op in case["ops"] if op["op"] == "to"]
    if len(sinks) > 1:
        for sink in sinks:
            out.append(prune(dict(case, ops=[op for op in case["ops"] if op is not sink])))
    for op in case["ops"]:
        for target in (op.get("from"), op.get("other")):
            if target is not None and op["op"] not in ("to",):
                out.append(_bypass(case, op["id"], target))
    inputs = case["input"]
    size = len(inputs) // 2
    while size >= 1:
        for start in range(0, len(inputs), size):
            out.append(dict(case, input=inputs[:start] + inputs[start + size:]))
        size //= 2
    for i, op in enumerate(case["ops"]):
        if "store" in op and op["op"] not in ("global_table",):
            ops = copy.deepcopy(case["ops"])
            del ops[i]["store"]
            out.append(dict(case, ops=ops))
    for i, op in enumerate(case["ops"]):
        if "serdes" in op:
            ops = copy.deepcopy(case["ops"])
            del ops[i]["serdes"]
            out.append(dict(case, ops=ops))
    for key in ("cache_bytes", "emit_interval_ms", "optimization"):
        if key in case:
            out.append({k: v for k, v in case.items() if k != key})
    for i, record in enumerate(inputs):  # simpler records: in-order times, no wall clock
        if "wall" not in record and i and record["ts"] < inputs[i - 1].get("ts", 0):
            out.append(dict(case, input=inputs[:i] + [dict(record, ts=inputs[i - 1]["ts"])]
                            + inputs[i + 1:]))
    return out


def shrink(case: Case, differs: Callable[[Case], bool], budget: int = 400) -> Case:
    """Greedy: take the first smaller variant that still differs the same way, repeat."""
    progress = True
    while progress and budget > 0:
        progress = False
        for candidate in _candidates(case):
            budget -= 1
            if budget <= 0:
                break
            if candidate["ops"] and differs(candidate):
                case, progress = candidate, True
                break
    return case


def _differs_like(kind: str, runner: KafkaStreamsRunner) -> Callable[[Case], bool]:
    def differs(case: Case) -> bool:
        try:
            annotate(case)
        except (CaseError, KeyError, TypeError):  # a cut that breaks the case's typing
            return False
        return _kind(*compare(case, runner)) == kind
    return differs


def signature(case: Case) -> str:
    """The shrunk case's operations, a rough class name for the totals."""
    return " ".join(op["op"] + ("(fk)" if "fk" in op else "") for op in case["ops"]
                    if op["op"] not in ("stream", "table", "to"))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=None)
    parser.add_argument("--cache", choices=("off", "on", "random"), default="random")
    parser.add_argument("--out", type=Path, default=Path("dsl-diff-failures"))
    parser.add_argument("--no-shrink", action="store_true")
    parser.add_argument("--replay", type=Path, nargs="*", default=None,
                        help="case JSON files to run (and shrink) instead of random ones")
    args = parser.parse_args(argv)
    logging.disable(logging.WARNING)  # the records both sides skip, on every case
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(10**9)
    cache = {"off": False, "on": True, "random": None}[args.cache]
    print(f"dsl-diff: seed {seed}, {args.cases} composed cases, cache {args.cache}", flush=True)
    log = Path(tempfile.mkdtemp(prefix="dsl-diff-")) / "kafka-streams.log"
    runner = KafkaStreamsRunner(log)
    started = time.monotonic()
    failures: list[tuple[Case, str]] = []
    classes: Counter[str] = Counter()
    try:
        replay = [json.loads(p.read_text()) for p in args.replay] if args.replay else None
        total = len(replay) if replay is not None else args.cases
        for index in range(total):
            if index and index % 250 == 0:
                print(f"dsl-diff: {index} cases run, {len(failures)} differ", flush=True)
            case = replay[index] if replay is not None else \
                dsl_random.composed_case(seed, index, cache)
            kafka, ours = compare(case, runner)
            kind = _kind(kafka, ours)
            if kind is None:
                continue
            small = case if args.no_shrink else shrink(case, _differs_like(kind, runner))
            text = describe(small, *compare(small, runner))
            failures.append((small, text))
            classes[signature(small)] += 1
            args.out.mkdir(parents=True, exist_ok=True)
            (args.out / f"{small['name']}.json").write_text(json.dumps(small) + "\n")
            print(f"\nMISMATCH {index} ({kind}), shrunk from {len(case['ops'])} ops/"
                  f"{len(case['input'])} records to {len(small['ops'])}/{len(small['input'])}:"
                  f"\n{text}", flush=True)
    finally:
        runner.close()
    elapsed = time.monotonic() - started
    print(f"\ndsl-diff: seed {seed}: {len(failures)} of {total} cases differ "
          f"({100 * len(failures) / max(total, 1):.1f} %), {elapsed:.0f} s")
    for sig, count in classes.most_common():
        print(f"  {count:4d}  {sig}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
