"""Comparing a run's output with the oracle's, per processing guarantee.

exactly_once_v2: the final value per key equals the oracle's, no key is missing or extra, and
where the per-key order is deterministic and the cache is off, every key's whole sequence of
updates equals the oracle's (a duplicate or a lost update shows there).
at_least_once: nothing is lost (every key present; aggregates at least the oracle's value,
other outputs equal, and every expected update of a deterministic sequence appears), and the
over-count of aggregates is reported.
"""

from __future__ import annotations

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
                   if self.beyond_replay else ""))
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
            cache_on: bool, replay_bound: dict[Any, int] | None = None) -> Comparison:
    """``replay_bound``: per key, the most records that replays after faults can repeat."""
    exactly_once = guarantee == "exactly_once_v2"
    want = finals(expected, scenario.tombstone_is_absent)
    got = finals(actual, scenario.tombstone_is_absent)
    result = Comparison(expected_keys=len(want), records_checked=len(actual))
    result.missing = sorted((k for k in want if k not in got), key=repr)
    result.extra = sorted((k for k in got if k not in want), key=repr)
    for key in sorted(want.keys() & got.keys(), key=repr):
        exp, act = want[key], got[key]
        if exactly_once or scenario.excess is None:
            if exp != act:
                result.wrong.append((key, exp, act))
            continue
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
