"""Is a source topic partitioned as Kafka's default partitioner would do it?

Kafka Streams assumes that a keyed record sits in partition ``murmur2(key) % partitions`` (the
Java producer's default, and ours). Repartition topics are written that way, and
``query_metadata_for_key`` looks keys up that way. A topic written by another partitioner is
not co-partitioned with them: a join after a key change misses, and queries go to the wrong
instance. The most common one is librdkafka's default (``consistent_random``, CRC32), used by
confluent-kafka and kcat. Kafka Streams fails there silently; we say so once per topic.

The check costs nothing measurable: the first ``STARTUP_SAMPLE`` keyed records of each
partition as they are first fetched, then one record per fetched batch, and nothing more for a
topic once it has been found wrong (or ``CONFIRMED`` records in a row were right).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import Any

from ..kafka.batching import default_partition

log = logging.getLogger(__name__)

STARTUP_SAMPLE = 32  # keyed records of each partition's first batches
CONFIRMED = 10_000  # records found right after which a topic is no longer checked

FIX = ("if a librdkafka client (confluent-kafka, kcat) writes it, set partitioner=murmur2_random "
       "there, the Java producer's partitioner")


class PartitionerCheck:
    """Samples fetched records of user source topics (see the module docstring)."""

    def __init__(self, partition_counts: dict[str, int], topics: Sequence[str]) -> None:
        self.counts = {t: partition_counts[t] for t in topics
                       if partition_counts.get(t, 0) > 1}  # one partition: always right
        self.started: set[tuple[str, int]] = set()
        self.right: dict[str, int] = dict.fromkeys(self.counts, 0)
        self.warned: set[str] = set()

    def observe(self, topic: str, partition: int, records: Sequence[Any]) -> None:
        """Look at some of ``records`` (fetched from ``topic``-``partition``)."""
        count = self.counts.get(topic)
        if count is None or not records:
            return
        if (topic, partition) in self.started:
            sample: Sequence[Any] = records[-1:]
        else:
            self.started.add((topic, partition))
            sample = records[:STARTUP_SAMPLE]
        for record in sample:
            key = record.key
            if key is None:
                continue
            expected = default_partition(key, count)
            if expected != partition:
                self._warn(topic, partition, expected, key)
                return
            self.right[topic] += 1
        if self.right[topic] >= CONFIRMED:
            del self.counts[topic]

    def _warn(self, topic: str, partition: int, expected: int, key: bytes) -> None:
        del self.counts[topic]
        self.warned.add(topic)
        log.warning(
            "source topic %r is not partitioned by murmur2 of the record keys: a record with "
            "key %r is in partition %d, but Kafka's default partitioner puts it in partition "
            "%d. Joins after a key change and query_metadata_for_key() will miss such records; "
            "%s.", topic, key[:40], partition, expected, FIX)
