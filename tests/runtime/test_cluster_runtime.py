"""On a 3-node Apache Kafka cluster (--kafka=cluster, `make test-cluster`): the application's
internal topics take the cluster's default.replication.factor (Kafka Streams' replication.factor
-1), so a node that dies loses none of its changelogs or repartition topics."""

from __future__ import annotations

import asyncio

import pytest
from aiokafka.admin import AIOKafkaAdminClient
from helpers import list_topics

from streams import KafkaStreams

from .kafka_io import create_topics, latest_by_key, produce, read_all
from .test_wordcount_runtime import config, word_count_topology


def replication_of(bootstrap: str, topics: list[str]) -> dict[str, int]:
    async def run() -> dict[str, int]:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        await admin.start()
        try:
            return {t["topic"]: len(t["partitions"][0]["replicas"])
                    for t in await admin.describe_topics(topics)}
        finally:
            await admin.close()

    return asyncio.run(run())


def test_internal_topics_take_the_clusters_replication_factor(broker, tmp_path,
                                                              kafka_kind) -> None:
    if kafka_kind != "cluster":
        pytest.skip("needs a cluster whose default.replication.factor is 3 (--kafka=cluster)")
    create_topics(broker.bootstrap, {"text-input": 2}, replication=3)
    produce(broker.bootstrap, "text-input", [(b"k", b"a b a", 1_000)])
    streams = KafkaStreams(word_count_topology(), config(broker, tmp_path, "exactly_once_v2",
                                                         app_id="rf"))
    streams.start()
    try:
        read_all(broker.bootstrap, "word-counts",
                 until=lambda rs: latest_by_key(rs) == {"a": 2, "b": 1}, timeout=120)
    finally:
        assert streams.close(timeout=30)
    internal = [t for t in list_topics(broker.bootstrap) if t.startswith("rf-")]
    assert "rf-word-counts-changelog" in internal and any("repartition" in t for t in internal)
    assert replication_of(broker.bootstrap, internal) == dict.fromkeys(internal, 3)
