"""KIP-848 online migration end to end with confluent-kafka consumers while records flow: a
classic consumer's group is upgraded when a ``group.protocol=consumer`` consumer joins, the
classic consumer leaves, another classic consumer joins the consumer group, and the group is
downgraded to classic when the consumer-protocol member leaves. Every record is consumed and the
final committed offsets reach the end of every partition."""

from __future__ import annotations

import threading
from pathlib import Path

from confluent_kafka import Consumer, ConsumerGroupType, KafkaException
from confluent_kafka.admin import AdminClient
from flowing_records import FlowingRecords
from helpers import EmbeddedBroker, create_topics, wait_until

TOPIC, PARTITIONS, GROUP = "migrating", 4, "gmig"
# What a commit racing a rebalance may meet: the member's epoch or generation moved on.
RACING = ("STALE_MEMBER_EPOCH", "UNKNOWN_MEMBER_ID", "ILLEGAL_GENERATION",
          "REBALANCE_IN_PROGRESS")


def group_type(admin: AdminClient) -> ConsumerGroupType | None:
    try:
        return admin.describe_consumer_groups([GROUP])[GROUP].result(10).type
    except KafkaException:
        return None


def test_upgrade_and_downgrade_while_records_flow(tmp_path: Path) -> None:
    broker = EmbeddedBroker(tmp_path, group_consumer_heartbeat_interval_ms=300,
                            group_initial_rebalance_delay_ms=0).start()
    try:
        bootstrap = broker.bootstrap
        create_topics(bootstrap, {TOPIC: PARTITIONS})
        admin = AdminClient({"bootstrap.servers": bootstrap})
        flow = FlowingRecords(bootstrap, TOPIC, PARTITIONS, flush_every=40)

        def consume(protocol: str, name: str, until: threading.Event) -> None:
            c = Consumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                          "group.protocol": protocol, "client.id": name,
                          "auto.offset.reset": "earliest", "enable.auto.commit": False,
                          **({"partition.assignment.strategy": "cooperative-sticky",
                              "session.timeout.ms": 10000} if protocol == "classic" else {})})
            c.subscribe([TOPIC])
            flow.consume(c, until)

        stops = {name: threading.Event() for name in ("a", "b", "c")}
        threads = {name: threading.Thread(target=consume, args=(protocol, name, stops[name]))
                   for name, protocol in (("a", "classic"), ("b", "consumer"),
                                          ("c", "classic"))}
        flow.writer.start()

        def consumed_more(than: int) -> bool:
            with flow.lock:
                return len(flow.seen) > than + 100

        def keeps_consuming(message: str) -> None:
            with flow.lock:
                mark = len(flow.seen)
            wait_until(lambda: consumed_more(mark), 30, message=message)

        try:
            threads["a"].start()
            wait_until(lambda: group_type(admin) is ConsumerGroupType.CLASSIC, 30,
                       message="a classic group")
            keeps_consuming("a consumes")
            threads["b"].start()  # upgrade
            wait_until(lambda: group_type(admin) is ConsumerGroupType.CONSUMER, 30,
                       message="the group upgraded")
            keeps_consuming("records flow after the upgrade")
            stops["a"].set()
            threads["a"].join(30)
            threads["c"].start()  # a classic member joins the consumer group
            keeps_consuming("records flow with c")
            stops["b"].set()  # downgrade
            threads["b"].join(30)
            wait_until(lambda: group_type(admin) is ConsumerGroupType.CLASSIC, 30,
                       message="the group downgraded")
            flow.stop_producing.set()
            flow.writer.join(30)
            wait_until(lambda: set(flow.produced) <= flow.seen, 60,
                       message="every record consumed")
        finally:
            flow.stop_producing.set()
            for stop in stops.values():
                stop.set()
            for thread in [flow.writer, *threads.values()]:
                if thread.is_alive() or thread.ident is not None:
                    thread.join(30)

        assert set(flow.produced) == flow.seen and len(flow.produced) > 400
        committed, ends = flow.committed_and_ends(GROUP)
        assert committed == ends
        assert all(any(code in e for code in RACING) for e in flow.commit_errors), \
            flow.commit_errors
    finally:
        broker.stop()
