"""The fault harness's verdict on windowed output after an at_least_once replay: it accepts
what Kafka Streams does (a window rebuilt from the replay alone, a session rebuilt in pieces)
and still reports every lost record (compare.py)."""

from __future__ import annotations

from streams.windowing import Window, Windowed

from .catalogue import SCENARIOS
from .compare import compare

SESSION = SCENARIOS["session"]
SUPPRESS = SCENARIOS["suppress"]
INPUTS = {"a": [0, 2, 4, 1000, 1001]}  # sessions [0,4] (3 records) and [1000,1001] (2)


def w(start: int, end: int, key: str = "a") -> Windowed:
    return Windowed(key, Window(start, end))


EXPECTED = [(w(0, 0), 1), (w(0, 0), None), (w(0, 2), 2), (w(0, 2), None), (w(0, 4), 3),
            (w(1000, 1000), 1), (w(1000, 1000), None), (w(1000, 1001), 2)]


def _check(actual, guarantee="at_least_once", inputs=INPUTS):
    return compare(SESSION, EXPECTED, actual, guarantee, True, None, inputs)


def test_a_session_rebuilt_in_pieces_by_a_replay_passes_under_at_least_once() -> None:
    # [0,4] went out whole before the crash; the replay of 2 and 4 could not see it
    result = _check([(w(0, 4), 3), (w(1000, 1001), 2), (w(2, 2), 1), (w(2, 4), 2)])
    assert result.ok, result.summary()
    assert result.pieces == 2


def test_a_missing_session_is_accepted_only_when_pieces_cover_all_its_records() -> None:
    # [0,2] went out before the crash, the replay rebuilt [2,4]: records 0, 2, 4 all counted
    covered = _check([(w(0, 2), 2), (w(2, 4), 2), (w(1000, 1001), 2)])
    assert covered.ok, covered.summary()
    assert covered.covered == 1
    # record 0 is in no piece: lost
    lost = _check([(w(2, 4), 2), (w(1000, 1001), 2)])
    assert lost.missing == [w(0, 4)]


def test_pieces_must_lie_inside_one_session_at_its_records_and_count_them() -> None:
    outside = _check([(w(0, 4), 3), (w(1000, 1001), 2), (w(4, 1000), 2)])
    assert outside.extra == [w(4, 1000)]
    between_records = _check([(w(0, 4), 3), (w(1000, 1001), 2), (w(1, 4), 2)])
    assert between_records.extra == [w(1, 4)]
    undercounted = _check([(w(0, 4), 3), (w(1000, 1001), 2), (w(2, 4), 1)])
    assert undercounted.extra == [w(2, 4)]


def test_exactly_once_accepts_no_pieces() -> None:
    result = compare(SESSION, EXPECTED, [(w(0, 4), 3), (w(1000, 1001), 2), (w(2, 4), 2)],
                     "exactly_once_v2", True, None, INPUTS)
    assert result.extra == [w(2, 4)]


def test_a_window_rebuilt_after_its_full_value_passes_under_at_least_once_only() -> None:
    window = Windowed("s", Window(0, 2000))
    expected = [(window, 8)]
    rebuilt = [(window, 8), (window, 1)]  # the full count, then a replay's partial window
    assert compare(SUPPRESS, expected, rebuilt, "at_least_once", True).ok
    assert not compare(SUPPRESS, expected, [(window, 7), (window, 1)], "at_least_once",
                       True).ok
    assert not compare(SUPPRESS, expected, rebuilt, "exactly_once_v2", True).ok
