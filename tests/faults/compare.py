"""Comparing a run's output with the oracle's, per processing guarantee.

exactly_once_v2: the final value per key equals the oracle's, no key is missing or extra, and
where the per-key order is deterministic and the cache is off, every key's whole sequence of
updates equals the oracle's (a duplicate or a lost update shows there).
at_least_once: nothing is lost (every key present; aggregates at least the oracle's value,
other outputs equal, and every expected update of a deterministic sequence appears), and the
over-count of aggregates is reported. Windowed aggregations (``Scenario.rebuilt_on_replay``)
may also show what Kafka Streams does when input is replayed after a crash while the restored
store has got further (its processors restart from a stream time of nothing; the store hides
what is older than its retention): a window's full value followed by a partial one rebuilt
from the replay (the best value emitted for the window counts), and a session rebuilt in
pieces: extra session keys, each inside one real session of its key, spanning input records
of that key and counting at least the records it spans; a real session missing from the
output is accepted only when such pieces cover every one of its input records.
"""

from __future__ import annotations

import bisect
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from .catalogue import Scenario

KV = tuple[Any, Any]
SHOW = 8  # items of each kind printed in a diff


def finals(records: list[KV], tombstone_is_absent: bool) -> dict[Any, Any]:
    result: dict[Any, Any] = {}
    for key, value in records:
        result[key] = value
    if tombstone_is_absent:
        result = {k: v for k, v in result.items() if v is not None}
    return result


def sequences(records: list[KV]) -> dict[Any, list[Any]]:
    result: dict[Any, list[Any]] = defaultdict(list)
    for key, value in records:
        result[key].append(value)
    return result


@dataclass
class Comparison:
    expected_keys: int
    records_checked: int
    missing: list[Any] = field(default_factory=list)
    extra: list[Any] = field(default_factory=list)
    wrong: list[tuple[Any, Any, Any]] = field(default_factory=list)  # key, expected, actual
    sequence_diffs: list[tuple[Any, int, int, str]] = field(default_factory=list)
    overcount: int = 0
    # at_least_once: keys over-counted by more than a replay of uncommitted records allows
    beyond_replay: list[tuple[Any, int, int]] = field(default_factory=list)  # key, excess, bound
    # at_least_once, sessions: extra session keys accepted as pieces rebuilt by a replay, and
    # real sessions missing from the output whose records such pieces cover
    pieces: int = 0
    covered: int = 0

    @property
    def differences(self) -> int:
        return (len(self.missing) + len(self.extra) + len(self.wrong)
                + len(self.sequence_diffs) + len(self.beyond_replay))

    @property
    def ok(self) -> bool:
        return self.differences == 0

    def summary(self) -> str:
        head = (f"{self.records_checked} output records for {self.expected_keys} expected keys: "
                f"{len(self.missing)} missing, {len(self.extra)} extra, {len(self.wrong)} wrong "
                f"values, {len(self.sequence_diffs)} keys with wrong update sequences, "
                f"over-count {self.overcount}"
                + (f", {len(self.beyond_replay)} keys over-counted beyond replayable records"
                   if self.beyond_replay else "")
                + (f", {self.pieces} sessions rebuilt in pieces by a replay (covering "
                   f"{self.covered} sessions missing as a whole)" if self.pieces else ""))
        lines = [head]
        if self.missing:
            lines.append(f"  missing keys: {self.missing[:SHOW]}")
        if self.extra:
            lines.append(f"  extra keys: {self.extra[:SHOW]}")
        for key, exp, act in self.wrong[:SHOW]:
            lines.append(f"  {key!r}: expected {exp!r}, got {act!r}")
        for key, n_exp, n_act, what in self.sequence_diffs[:SHOW]:
            lines.append(f"  {key!r}: {n_exp} updates expected, {n_act} seen: {what}")
        for key, excess, bound in self.beyond_replay[:SHOW]:
            lines.append(f"  {key!r}: over-counted by {excess}, but a replay of records not "
                         f"yet committed can repeat at most {bound}")
        return "\n".join(lines)


def _first_difference(expected: list[Any], actual: list[Any]) -> str:
    for i, (e, a) in enumerate(zip(expected, actual, strict=False)):
        if e != a:
            return f"first difference at #{i}: expected {e!r}, got {a!r}"
    shorter = "missing" if len(actual) < len(expected) else "extra"
    tail = (expected if len(actual) < len(expected) else actual)[min(len(expected),
                                                                      len(actual)):]
    return f"{shorter} at the end: {tail[:4]!r}"


def compare(scenario: Scenario, expected: list[KV], actual: list[KV], guarantee: str,
            cache_on: bool, replay_bound: dict[Any, int] | None = None,
            inputs: dict[Any, list[int]] | None = None) -> Comparison:
    """``replay_bound``: per key, the most records that replays after faults can repeat;
    ``inputs``: per input key, its records' timestamps in order (for sessions rebuilt in
    pieces)."""
    exactly_once = guarantee == "exactly_once_v2"
    rebuilt = None if exactly_once else scenario.rebuilt_on_replay
    want = finals(expected, scenario.tombstone_is_absent)
    got = finals(actual, scenario.tombstone_is_absent)
    history = sequences(actual) if rebuilt else {}
    result = Comparison(expected_keys=len(want), records_checked=len(actual))
    result.missing = sorted((k for k in want if k not in got), key=repr)
    result.extra = sorted((k for k in got if k not in want), key=repr)
    covered: set[Any] = set()
    if rebuilt == "sessions" and inputs is not None and (result.missing or result.extra):
        pieces, covered = _session_pieces(want, got, inputs)
        result.extra = [k for k in result.extra if k not in pieces]
        result.missing = [k for k in result.missing if k not in covered]
        result.pieces, result.covered = len(pieces), len(covered)
    for key in sorted(want.keys() & got.keys(), key=repr):
        exp, act = want[key], got[key]
        if exactly_once or scenario.excess is None:
            if exp != act:
                result.wrong.append((key, exp, act))
            continue
        if rebuilt:  # a rebuilt (partial) value may come after the full one
            act = _best(scenario.excess, exp, history.get(key, []), act)
        excess = scenario.excess(exp, act)
        if excess is None:
            result.wrong.append((key, exp, act))
        else:
            result.overcount += excess
            if replay_bound is not None and excess > replay_bound.get(key, 0):
                result.beyond_replay.append((key, excess, replay_bound.get(key, 0)))
    if scenario.sequences and not cache_on:
        want_seq, got_seq = sequences(expected), sequences(actual)
        for key in sorted(want_seq, key=repr):
            if key in covered:
                continue  # rebuilt in pieces: its updates went out under the pieces' keys
            exp_seq, act_seq = want_seq[key], got_seq.get(key, [])
            if exactly_once and exp_seq != act_seq:
                result.sequence_diffs.append(
                    (key, len(exp_seq), len(act_seq), _first_difference(exp_seq, act_seq)))
            elif not exactly_once and scenario.excess is None:
                lost = [v for v in exp_seq if v not in act_seq]
                if lost:
                    result.sequence_diffs.append(
                        (key, len(exp_seq), len(act_seq), f"lost updates {lost[:4]!r}"))
    return result


def _best(excess: Any, expected: Any, emitted: list[Any], last: Any) -> Any:
    """The emitted value closest above the expected one (the full window), else ``last``."""
    best, best_excess = last, None
    for value in emitted:
        if value is None:
            continue
        over = excess(expected, value)
        if over is not None and (best_excess is None or over < best_excess):
            best, best_excess = value, over
    return best


def _session_pieces(want: dict[Any, Any], got: dict[Any, Any],
                    inputs: dict[Any, list[int]]) -> tuple[set[Any], set[Any]]:
    """(extra session keys that are pieces a replay rebuilt, real sessions missing from the
    output whose input records the output's sessions inside them cover)."""
    real: dict[Any, list[tuple[int, int]]] = defaultdict(list)
    for windowed in want:
        real[windowed.key].append((windowed.window.start, windowed.window.end))
    pieces: set[Any] = set()
    for windowed, value in got.items():
        if windowed in want:
            continue
        key, start, end = windowed.key, windowed.window.start, windowed.window.end
        times = inputs.get(key, [])
        spanned = bisect.bisect_right(times, end) - bisect.bisect_left(times, start)
        inside = any(s <= start and end <= e for s, e in real.get(key, []))
        at_records = _has(times, start) and _has(times, end)
        if inside and at_records and isinstance(value, int) and value >= spanned:
            pieces.add(windowed)
    covered: set[Any] = set()
    for windowed in want:
        if windowed in got:
            continue
        key, start, end = windowed.key, windowed.window.start, windowed.window.end
        spans = [(w.window.start, w.window.end) for w in got
                 if w.key == key and (w in want or w in pieces)
                 and start <= w.window.start and w.window.end <= end]
        times = inputs.get(key, [])
        own = times[bisect.bisect_left(times, start):bisect.bisect_right(times, end)]
        if spans and all(any(a <= t <= b for a, b in spans) for t in own):
            covered.add(windowed)
    return pieces, covered


def _has(times: list[int], t: int) -> bool:
    i = bisect.bisect_left(times, t)
    return i < len(times) and times[i] == t
