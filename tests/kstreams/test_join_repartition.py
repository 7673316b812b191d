"""Repartition topics before joins write the co-partner's key bytes (issue [7] item 1).

A join reads partition p of each of its source topics in one task, and every topic is
partitioned by murmur2 of its serialized key. A repartition topic written for a join must
therefore serialize keys exactly as the other side's topic does: the join's ``key_serde=``,
else the co-partner's key serde (Kafka's ``KStreamImpl#repartitionForJoin`` with the table's
serde), else ``default.key.serde``; with none of them the topology is rejected at build time.
"""

from __future__ import annotations

import pytest

from streams import Serdes, StreamsBuilder
from streams.kafka.batching import default_partition
from streams.testing import TestRecord, TopologyTestDriver
from streams.topology.topology import TopologyError

S = Serdes.string()
J = Serdes.json()
RAW = Serdes.bytes()


def repartition_topics(topology) -> list[str]:
    return [name for name, t in topology.internal_topics.items() if t.kind == "repartition"]


def raw_keys(driver: TopologyTestDriver, topic: str) -> list[bytes]:
    return [r.key for r in driver.create_output_topic(topic, RAW, RAW).read_records_to_list()]


def payments_topology(*, table_key_serde=S, rekey: str = "select_key", **join_options):
    builder = StreamsBuilder()
    payments = builder.stream("payments", key_serde=S, value_serde=J)
    if rekey == "select_key":
        by_user = payments.select_key(lambda pay_id, p: p["user"])
    else:
        by_user = payments.map(lambda pay_id, p: (p["user"], p))
    users = builder.table("users", key_serde=table_key_serde, value_serde=S)
    by_user.join(users, lambda p, region: f"{p['id']}@{region}", **join_options).to(
        "enriched", key_serde=S, value_serde=S)
    return builder.build()


@pytest.mark.parametrize("rekey", ["select_key", "map"])
def test_stream_table_repartition_key_bytes_are_the_tables(rekey: str) -> None:
    topo = payments_topology(rekey=rekey)
    [topic] = repartition_topics(topo)
    with TopologyTestDriver(topo, {"application.id": "app"}) as driver:
        driver.create_input_topic("users", S, S).pipe_input("user7", "eu", 1)
        driver.create_input_topic("payments", S, J).pipe_input("pay1", {"id": 1, "user": "user7"}, 2)
        table_key = S.serialize("users", "user7")
        [written] = raw_keys(driver, topic)
        assert written == table_key  # not the internal format's b"suser7"
        assert default_partition(written, 4) == default_partition(table_key, 4)
        assert driver.create_output_topic("enriched", S, S).read_records_to_list() == [
            TestRecord("user7", "1@eu", 2)]


def test_an_explicit_join_key_serde_wins() -> None:
    """``key_serde=`` on the join (Kafka's Joined.keySerde) is what the repartition writes."""
    topo = payments_topology(table_key_serde=None, key_serde=S)
    [topic] = repartition_topics(topo)
    with TopologyTestDriver(topo, {"application.id": "app"}) as driver:
        driver.create_input_topic("payments", S, J).pipe_input("p", {"id": 1, "user": "u"}, 1)
        assert raw_keys(driver, topic) == [b"u"]


def test_the_configured_default_key_serde_is_used_when_the_table_has_none() -> None:
    topo = payments_topology(table_key_serde=None)
    [topic] = repartition_topics(topo)
    with TopologyTestDriver(topo, {"application.id": "app", "default.key.serde": "string"}) \
            as driver:
        driver.create_input_topic("users", S, S).pipe_input("u", "eu", 1)
        driver.create_input_topic("payments", S, J).pipe_input("p", {"id": 1, "user": "u"}, 2)
        assert raw_keys(driver, topic) == [b"u"]
        assert driver.create_output_topic("enriched", S, S).read_values_to_list() == ["1@eu"]


def test_no_key_serde_anywhere_fails_at_build_time_naming_the_join() -> None:
    topo = payments_topology(table_key_serde=None)
    with pytest.raises(TopologyError) as info:
        TopologyTestDriver(topo, {"application.id": "app"})
    message = str(info.value)
    assert "KSTREAM-JOIN-" in message and "users" in message
    assert "key_serde=" in message and "default.key.serde" in message
    builder_config_error = payments_topology_builder(table_key_serde=None)
    with pytest.raises(TopologyError, match="KSTREAM-JOIN-"):
        builder_config_error.build({"application.id": "app"})
    # with a default configured the same program builds
    payments_topology_builder(table_key_serde=None).build({"default.key.serde": "string"})


def payments_topology_builder(*, table_key_serde) -> StreamsBuilder:
    builder = StreamsBuilder()
    users = builder.table("users", key_serde=table_key_serde, value_serde=S)
    (builder.stream("payments", key_serde=S, value_serde=J)
        .select_key(lambda k, p: p["user"])
        .join(users, lambda p, region: region)
        .to("enriched", key_serde=S, value_serde=S))
    return builder


def test_stream_stream_join_repartition_takes_the_other_streams_key_serde() -> None:
    from streams import JoinWindows

    builder = StreamsBuilder()
    left = builder.stream("left", key_serde=S, value_serde=S).select_key(lambda k, v: v)
    right = builder.stream("right", key_serde=S, value_serde=S)
    left.join(right, lambda a, b: a + b, JoinWindows.of_time_difference_with_no_grace(10),
              name="j").to("out", key_serde=S, value_serde=S)
    topo = builder.build()
    with TopologyTestDriver(topo, {"application.id": "app"}) as driver:
        driver.create_input_topic("right", S, S).pipe_input("blue", "R", 1)
        driver.create_input_topic("left", S, S).pipe_input("x", "blue", 2)
        assert raw_keys(driver, "j-left-repartition") == [b"blue"]
        assert driver.create_output_topic("out", S, S).read_values_to_list() == ["blueR"]


def test_stream_stream_join_with_both_sides_repartitioned_needs_no_serde() -> None:
    """No user topic takes part: both repartition topics use the same (internal) format."""
    from streams import JoinWindows

    builder = StreamsBuilder()
    left = builder.stream("left", key_serde=S, value_serde=S).select_key(lambda k, v: v)
    right = builder.stream("right", key_serde=S, value_serde=S).select_key(lambda k, v: v)
    left.join(right, lambda a, b: a + b, JoinWindows.of_time_difference_with_no_grace(10),
              name="j").to("out", key_serde=S, value_serde=S)
    with TopologyTestDriver(builder.build(), {"application.id": "app"}) as driver:
        driver.create_input_topic("right", S, S).pipe_input("r", "blue", 1)
        driver.create_input_topic("left", S, S).pipe_input("l", "blue", 2)
        keys = raw_keys(driver, "j-left-repartition") + raw_keys(driver, "j-right-repartition")
        assert keys[0] == keys[1]
        assert driver.create_output_topic("out", S, S).read_values_to_list() == ["blueblue"]


def test_aggregation_repartition_joined_with_a_user_topic_takes_its_key_serde() -> None:
    """group_by(...).count() joined by a user-keyed stream: the count's repartition topic is
    co-partitioned with that stream's topic, so it must write the same key bytes."""
    builder = StreamsBuilder()
    counts = (builder.stream("clicks", key_serde=S, value_serde=S)
              .group_by(lambda k, user: user).count("clicks-per-user"))
    builder.stream("logins", key_serde=S, value_serde=S).join(
        counts, lambda login, n: f"{login}:{n}").to("out", key_serde=S, value_serde=S)
    topo = builder.build()
    [topic] = repartition_topics(topo)
    with TopologyTestDriver(topo, {"application.id": "app"}) as driver:
        driver.create_input_topic("clicks", S, S).pipe_input("c1", "user7", 1)
        driver.create_input_topic("logins", S, S).pipe_input("user7", "web", 2)
        assert raw_keys(driver, topic) == [b"user7"]
        assert driver.create_output_topic("out", S, S).read_values_to_list() == ["web:1"]


def test_table_group_by_repartition_joined_with_a_user_table_takes_its_key_serde() -> None:
    builder = StreamsBuilder()
    per_region = (builder.table("users", key_serde=S, value_serde=S)
                  .group_by(lambda user, region: (region, user)).count())
    regions = builder.table("regions", key_serde=S, value_serde=S)
    per_region.join(regions, lambda n, name: f"{name}:{n}").to_stream().to(
        "out", key_serde=S, value_serde=S)
    topo = builder.build()
    [topic] = repartition_topics(topo)
    with TopologyTestDriver(topo, {"application.id": "app"}) as driver:
        driver.create_input_topic("regions", S, S).pipe_input("eu", "Europe", 1)
        driver.create_input_topic("users", S, S).pipe_input("user7", "eu", 2)
        assert raw_keys(driver, topic) == [b"eu"]
        assert driver.create_output_topic("out", S, S).read_values_to_list()[-1] == "Europe:1"


def test_cogrouped_inputs_are_copartitioned_and_share_key_bytes() -> None:
    """Kafka's CogroupedStreamAggregateBuilder co-partitions every input of a cogroup."""
    builder = StreamsBuilder()
    direct = builder.stream("orders", key_serde=S, value_serde=S).group_by_key()
    rekeyed = (builder.stream("refunds", key_serde=S, value_serde=S)
               .group_by(lambda k, user: user))
    (direct.cogroup(lambda k, v, agg: agg + 1)
        .cogroup(rekeyed, lambda k, v, agg: agg - 1)
        .aggregate(lambda: 0, "balance"))
    topo = builder.build()
    [topic] = repartition_topics(topo)
    assert {"orders", topic} in topo.copartition_groups
    with TopologyTestDriver(topo, {"application.id": "app"}) as driver:
        driver.create_input_topic("refunds", S, S).pipe_input("r1", "user7", 1)
        assert raw_keys(driver, topic) == [b"user7"]


def test_mismatched_user_topics_of_a_join_are_rejected_with_kafkas_message() -> None:
    from streams.runtime.topics import CopartitionError, plan_layout

    builder = StreamsBuilder()
    users = builder.table("users", key_serde=S, value_serde=S)
    builder.stream("payments", key_serde=S, value_serde=S).join(users, lambda a, b: a).to("out")
    with pytest.raises(CopartitionError) as info:
        plan_layout(builder.build(), "app", {"payments": 4, "users": 2})
    message = str(info.value)
    assert "Following topics do not have the same number of partitions: " \
           "[{payments=4, users=2}]" in message
    assert "KSTREAM-JOIN-" in message


def test_repartition_topic_of_a_join_takes_the_user_topics_partition_count() -> None:
    """CopartitionedTopicsEnforcer: a repartition topic follows the user topics of its group."""
    from streams.runtime.topics import plan_layout

    layout = plan_layout(payments_topology(), "app", {"payments": 2, "users": 4})
    [topic] = repartition_topics(payments_topology())
    assert layout.partitions[f"app-{topic}"] == 4
