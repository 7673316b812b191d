"""The assignor's host map without a broker: every member's assignment carries which end point
runs which tasks (Kafka's partitionsByHost), KafkaStreams' metadata reads keys from it, and a
member asking for the application's shutdown gets everyone an empty, stopping assignment."""

from __future__ import annotations

from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata

from streams.kafka.batching import default_partition
from streams.processor.api import TaskId
from streams.runtime.assignor import AssignmentInfo, MemberInfo, StreamsPartitionAssignor
from streams.runtime.queries import HostInfo, KeyQueryMetadata, StreamsMetadataState
from streams.runtime.topics import plan_layout
from streams.serde import Serdes

from .ops_app import COUNTS, INPUT, WINDOWS, topology


class Cluster:
    def __init__(self, counts: dict[str, int]) -> None:
        self.counts = counts

    def partitions_for_topic(self, topic: str) -> set[int] | None:
        return set(range(self.counts[topic])) if topic in self.counts else None


def subscription(info: MemberInfo) -> ConsumerProtocolMemberMetadata:
    return ConsumerProtocolMemberMetadata(0, [INPUT], info.encode())


def test_every_assignment_carries_the_host_map_and_keys_resolve_from_it() -> None:
    topo = topology()
    layout = plan_layout(topo, "ops-app", {INPUT: 4})
    assignor = StreamsPartitionAssignor(layout, MemberInfo)
    members = {"m1": subscription(MemberInfo("p1", endpoint="a:1")),
               "m2": subscription(MemberInfo("p2", endpoint="b:2")),
               "m3": subscription(MemberInfo("p3"))}  # no application.server: not in the map
    result = assignor.assign(Cluster({INPUT: 4}), members)
    infos = {m: AssignmentInfo.decode(a.user_data) for m, a in result.items()}
    hosts = infos["m1"].hosts
    assert all(info.hosts == hosts for info in infos.values())  # the same map for everyone
    assert set(hosts) == {"a:1", "b:2"}
    assert sorted(hosts["a:1"]) == sorted(infos["m1"].tasks)
    assert sorted(hosts["b:2"]) == sorted(infos["m2"].tasks)
    assert infos["m1"].partitions == {INPUT: 4}
    assert AssignmentInfo.decode(infos["m1"].encode()) == infos["m1"]

    state = StreamsMetadataState(infos["m1"], layout, topo, Serdes.bytes())
    owner = {task: host for host, tasks in state.hosts.items() for task in tasks}
    seen = set()
    for key in (f"user-{i}" for i in range(40)):
        meta = state.key_query_metadata(COUNTS, key, HostInfo("a", 1))
        partition = default_partition(key.encode(), 4)
        expected = owner.get(TaskId(0, partition))
        # a task on a member without application.server has no host to name
        assert meta == (KeyQueryMetadata(expected, [], partition) if expected
                        else KeyQueryMetadata.NOT_AVAILABLE), key
        seen.add(meta.active_host)
    assert {HostInfo("a", 1), HostInfo("b", 2)} <= seen
    stores = {m.host_info: m.state_store_names for m in state.all_metadata()}
    assert all(names == {COUNTS, WINDOWS} for h, names in stores.items() if state.hosts[h])


def test_a_shutdown_request_stops_every_member() -> None:
    layout = plan_layout(topology(), "ops-app", {INPUT: 2})
    assignor = StreamsPartitionAssignor(layout, MemberInfo)
    members = {"m1": subscription(MemberInfo("p1", endpoint="a:1")),
               "m2": subscription(MemberInfo("p2", endpoint="b:2", shutdown=True))}
    result = assignor.assign(Cluster({INPUT: 2}), members)
    for assignment in result.values():
        assert assignment.partitions() == []
        assert AssignmentInfo.decode(assignment.user_data).shutdown
    told = []
    StreamsPartitionAssignor(layout, MemberInfo, told.append).on_assignment(result["m1"])
    assert told and told[0].shutdown


def test_old_and_garbled_user_data_decode_safely() -> None:
    assert AssignmentInfo.decode(b'["0_1", "1_0"]').tasks == [TaskId(0, 1), TaskId(1, 0)]
    assert AssignmentInfo.decode(b"\x00garbage") == AssignmentInfo()
    assert MemberInfo.decode(b'{"process": "p", "endpoint": "h:1"}').endpoint == "h:1"


def test_a_custom_partitioner_decides_the_partition() -> None:
    topo = topology()
    layout = plan_layout(topo, "ops-app", {INPUT: 4})
    assignor = StreamsPartitionAssignor(layout, MemberInfo)
    result = assignor.assign(Cluster({INPUT: 4}),
                             {"m1": subscription(MemberInfo("p1", endpoint="a:1"))})
    state = StreamsMetadataState(AssignmentInfo.decode(result["m1"].user_data), layout, topo,
                                 Serdes.bytes())
    calls = []

    def by_length(topic, key, value, partitions):
        calls.append((topic, key, value, partitions))
        return len(key) % partitions

    meta = state.key_query_metadata(COUNTS, "abcde", None, partitioner=by_length)
    assert meta == KeyQueryMetadata(HostInfo("a", 1), [], 1)
    assert calls == [(INPUT, "abcde", None, 4)]
    fallback = state.key_query_metadata(COUNTS, "abcde", None, partitioner=lambda *a: None)
    assert fallback.partition == default_partition(b"abcde", 4)
