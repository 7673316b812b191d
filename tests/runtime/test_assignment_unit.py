"""Assignment and topic-layout rules, without a broker."""

from __future__ import annotations

import pytest

from streams.processor.api import TaskId
from streams.runtime.assignor import AssignmentInfo, MemberInfo, balance, place_standbys
from streams.runtime.config import StreamsConfig
from streams.runtime.topics import CopartitionError, plan_layout

from .test_topologies_runtime import join_topology
from .test_wordcount_runtime import word_count_topology

T = TaskId


def test_balance_is_sticky_state_aware_and_even() -> None:
    tasks = [T(0, p) for p in range(4)] + [T(1, p) for p in range(4)]
    infos = {"a": MemberInfo("pa", active={T(1, 0), T(1, 1), T(1, 2)}),
             "b": MemberInfo("pb", state={T(1, 3), T(1, 2)})}
    plan = balance(tasks, infos, stateful={1})
    assert sorted(plan["a"]) == [T(0, 0), T(0, 2), T(1, 0), T(1, 1)]
    assert sorted(plan["b"]) == [T(0, 1), T(0, 3), T(1, 2), T(1, 3)]  # cap 2: 1_2 moves to b


def test_standbys_go_to_other_processes_warm_ones_first() -> None:
    tasks = [T(1, p) for p in range(4)]
    infos = {"a": MemberInfo("pa"), "b": MemberInfo("pb", state={T(1, 0)}),
             "c": MemberInfo("pc"), "a2": MemberInfo("pa")}  # a2: a second thread of pa
    plan = {"a": [T(1, 0), T(1, 1)], "b": [T(1, 2)], "c": [T(1, 3)], "a2": []}
    standbys = place_standbys(tasks, plan, infos, replicas=1)
    owner = {t: m for m, ts in plan.items() for t in ts}
    for member, ts in standbys.items():
        for task in ts:
            assert infos[member].process_id != infos[owner[task]].process_id
    assert sorted(t for ts in standbys.values() for t in ts) == tasks  # one standby each
    assert T(1, 0) in standbys["b"]  # b has 1_0's state on disk
    two = place_standbys(tasks, plan, infos, replicas=2)
    for task in tasks:  # two standbys, in two processes, neither the active's
        holders = [m for m, ts in two.items() if task in ts]
        processes = {infos[m].process_id for m in holders}
        assert len(holders) == 2 and len(processes) == 2
        assert infos[owner[task]].process_id not in processes
    assert place_standbys(tasks, {"a": tasks}, {"a": MemberInfo("pa")}, 1) == {"a": []}


def test_assignment_info_carries_the_standbys() -> None:
    info = AssignmentInfo([T(0, 1)], {"h:1": [T(0, 1)]}, {"h:2": [T(0, 0)]}, {"t": 2},
                          standby=[T(0, 0)])
    assert AssignmentInfo.decode(info.encode()) == info


def test_member_info_round_trip() -> None:
    info = MemberInfo("p1", {T(0, 1)}, {T(1, 0), T(0, 1)})
    assert MemberInfo.decode(info.encode()) == info
    assert MemberInfo.decode(b"garbage") == MemberInfo()


def test_layout_partitions_repartition_and_changelog_topics() -> None:
    layout = plan_layout(word_count_topology(), "wc", {"text-input": 3})
    assert layout.partitions["wc-word-counts-repartition"] == 3
    assert layout.partitions["wc-word-counts-changelog"] == 3
    assert layout.tasks == {0: 3, 1: 3}
    kind, configs = layout.internal["wc-word-counts-repartition"]
    assert configs["cleanup.policy"] == "delete" and configs["retention.ms"] == "-1"
    assert layout.internal["wc-word-counts-changelog"][1]["cleanup.policy"] == "compact"


def test_layout_rejects_copartition_mismatch() -> None:
    with pytest.raises(CopartitionError, match="co-partitioned"):
        plan_layout(join_topology(), "j", {"users": 2, "page-views": 4})


def test_config_defaults_and_validation() -> None:
    alos = StreamsConfig.from_mapping({"application.id": "a"})
    eos = StreamsConfig.from_mapping({"application.id": "a",
                                      "processing.guarantee": "exactly_once_v2"})
    assert alos.effective_commit_interval_ms == 30_000
    assert eos.effective_commit_interval_ms == 100
    set_eos = StreamsConfig.from_mapping({"application_id": "a", "commit.interval.ms": "500",
                                          "processing.guarantee": "exactly_once_v2"})
    assert set_eos.effective_commit_interval_ms == 500
    assert StreamsConfig.from_mapping({"application.id": "a",
                                       "num.standby.replicas": 2}).num_standby_replicas == 2
    with pytest.raises(ValueError, match="num.standby.replicas"):
        StreamsConfig.from_mapping({"application.id": "a", "num.standby.replicas": -1})
    with pytest.raises(ValueError, match="exactly_once_v2"):
        StreamsConfig.from_mapping({"application.id": "a", "processing.guarantee": "exactly_once"})
    with pytest.raises(ValueError, match="did you mean 'commit.interval.ms'"):
        StreamsConfig.from_mapping({"application.id": "a", "commit.interval": 5})
