"""The bundled broker's metrics, named as the Prometheus JMX exporter's Kafka rules name
Apache Kafka's MBeans (``kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec,topic=T``
-> ``kafka_server_brokertopicmetrics_messagesin_total{topic="T"}``), plus consumer lag as
Kafka Lag Exporter exports it, from the broker's own committed offsets.

The request path only bumps counters: one histogram observation per request at the dispatch
point, and per produced/fetched partition a few integer additions on a ``TopicStats``. Log
sizes, end offsets, lag and group sizes are computed when scraped.
"""

from __future__ import annotations

import logging
import struct
import time
from collections.abc import Iterator
from typing import Any

from .listener import ServedMetrics
from .registry import GAUGE, Histogram, MetricsRegistry, Sample

log = logging.getLogger(__name__)

# A record batch's baseTimestamp: int64 after baseOffset, batchLength, partitionLeaderEpoch,
# magic, crc, attributes and lastOffsetDelta (Kafka's message format v2, RecordBatch).
_BASE_TIMESTAMP = struct.Struct(">q")
_BASE_TIMESTAMP_AT = 27


class TopicStats:
    """BrokerTopicMetrics of one topic: plain counters, bumped per partition per request."""

    __slots__ = ("messages_in", "bytes_in", "bytes_out")

    def __init__(self) -> None:
        self.messages_in = 0
        self.bytes_in = 0
        self.bytes_out = 0


class RequestStats:
    """RequestMetrics of one API: a count and a latency histogram (handling time, seconds)."""

    __slots__ = ("count", "errors", "latency")

    def __init__(self) -> None:
        self.count = 0
        self.errors = 0
        self.latency = Histogram()


def api_name(api_key: int) -> str:
    """Kafka's request name (``Produce``, ``ApiVersions``), the ``request`` tag of
    RequestMetrics."""
    try:
        from kio.schema.index import api_key_map

        return "".join(w.capitalize() for w in api_key_map[api_key].split("_"))
    except (ImportError, KeyError):
        return f"Api{api_key}"


class BrokerMetrics(ServedMetrics):
    """Every metric of one broker. ``broker`` is read duck-typed (metrics sits below it)."""

    def __init__(self, broker: Any, listener: str | None = None) -> None:
        self.broker = broker
        self.listener = listener
        self.registry = MetricsRegistry("kafka.server")
        self.topics: dict[str, TopicStats] = {}
        self.requests: dict[int, RequestStats] = {}
        self.started_at = time.time()
        self._register()

    # -- the request path ---------------------------------------------------------------------

    def topic(self, name: str) -> TopicStats:
        stats = self.topics.get(name)
        if stats is None:
            stats = self.topics[name] = TopicStats()
            tags = {"topic": name}
            reg = self.registry
            group = "brokertopicmetrics"
            reg.counter(group, "messagesin_total", lambda: stats.messages_in, tags=tags,
                        description="Records appended to the topic (MessagesInPerSec)")
            reg.counter(group, "bytesin_total", lambda: stats.bytes_in, tags=tags,
                        description="Bytes of record batches produced (BytesInPerSec)")
            reg.counter(group, "bytesout_total", lambda: stats.bytes_out, tags=tags,
                        description="Bytes of record batches fetched (BytesOutPerSec)")
        return stats

    def request_done(self, api_key: int, seconds: float, failed: bool = False) -> None:
        stats = self.requests.get(api_key)
        if stats is None:
            stats = self.requests[api_key] = RequestStats()
            tags = {"request": api_name(api_key)}
            reg = self.registry
            reg.counter("requestmetrics", "requests_total", lambda: stats.count, tags=tags,
                        domain="kafka.network", description="Requests handled (RequestsPerSec)")
            reg.counter("requestmetrics", "errors_total", lambda: stats.errors, tags=tags,
                        domain="kafka.network",
                        description="Requests that failed and closed their connection")
            reg.histogram("requestmetrics", "totaltime_seconds", stats.latency, tags=tags,
                          domain="kafka.network",
                          description="Time from a request's arrival to its answer being "
                                      "ready (TotalTimeMs, in seconds)")
        stats.count += 1
        if failed:
            stats.errors += 1
        stats.latency.observe(seconds)

    # -- scrape-time values -------------------------------------------------------------------

    def _register(self) -> None:
        reg = self.registry
        reg.gauge("kafkaserver", "brokerstate", lambda: 3, domain="kafka.server",
                  description="3 = RUNNING (Kafka's BrokerState)")
        reg.gauge("socketservermetrics", "connection_count", self._connections,
                  domain="kafka.server", description="Open client connections")
        reg.gauge("replicamanager", "partitioncount", self._partition_count,
                  description="Partitions hosted by this broker (internal topics included)")
        reg.gauge("kafkacontroller", "globaltopiccount", self._topic_count,
                  domain="kafka.controller", description="Topics in the cluster")
        # Constant on a single node, exported so alert rules written for Kafka clusters work.
        reg.gauge("replicamanager", "underreplicatedpartitions", lambda: 0,
                  description="Always 0: one node, replication factor 1")
        reg.gauge("kafkacontroller", "activecontrollercount", lambda: 1,
                  domain="kafka.controller", description="Always 1: this node is the controller")
        reg.gauge("kafkacontroller", "offlinepartitionscount", lambda: 0,
                  domain="kafka.controller", description="Always 0 while the broker serves")
        reg.add_collector(self._log_samples)
        reg.add_collector(self._group_samples)
        reg.add_collector(self._share_group_samples)

    def _connections(self) -> int:
        return len(getattr(self.broker, "_connections", ()))

    def _partition_count(self) -> int:
        return sum(len(t.partitions) for t in list(self.broker.topics.topics.values()))

    def _topic_count(self) -> int:
        return len(self.broker.topics.topics)

    def _log_samples(self) -> Iterator[Sample]:
        """kafka.log:type=Log,name=Size / LogEndOffset / LogStartOffset per partition."""
        for name, topic in list(self.broker.topics.topics.items()):
            for index, plog in enumerate(list(topic.partitions)):
                tags = {"topic": name, "partition": index}
                try:
                    size, end, start = plog.size_bytes, plog.next_offset, plog.log_start_offset
                except Exception:  # closed or being deleted
                    continue
                yield Sample("kafka.log", "log", "size", GAUGE, tags, size,
                             "Bytes of the partition's segments")
                yield Sample("kafka.log", "log", "logendoffset", GAUGE, tags, end,
                             "Next offset to be written (high watermark on one node)")
                yield Sample("kafka.log", "log", "logstartoffset", GAUGE, tags, start,
                             "First offset still readable")

    def _group_samples(self) -> Iterator[Sample]:
        """Kafka Lag Exporter's ``kafka_consumergroup_lag`` (records) and ``..._lag_seconds``,
        from the committed offsets this broker holds; ``kafka_consumergroup_members``.

        lag_seconds is estimated from record timestamps: now minus the timestamp of the first
        batch holding an unconsumed record (0 when caught up), a slight over-estimate when the
        committed offset sits inside a batch."""
        coordinator = self.broker.groups
        now_ms = time.time() * 1000
        committed = coordinator.offsets.committed
        for group_id, group in list(coordinator.groups.items()):
            yield Sample("kafka", "consumergroup", "members", GAUGE, {"group": group_id},
                         len(group.members), "Members of the consumer group")
        for group_id, offsets in list(committed.items()):
            for (topic, partition), entry in list(offsets.items()):
                plog = self._partition(topic, partition)
                if plog is None:
                    continue
                offset = entry.value.offset
                end = plog.next_offset
                lag = max(end - max(offset, plog.log_start_offset), 0) if offset >= 0 else end
                tags = {"group": group_id, "topic": topic, "partition": partition}
                yield Sample("kafka", "consumergroup", "lag", GAUGE, tags, lag,
                             "Records between the group's committed offset and the log end")
                yield Sample("kafka", "consumergroup", "lag_seconds", GAUGE, tags,
                             self._lag_seconds(plog, offset, lag, now_ms),
                             "Estimated age of the oldest unconsumed record, seconds")
                yield Sample("kafka", "consumergroup", "committed_offset", GAUGE, tags, offset,
                             "The group's committed offset")

    def _share_group_samples(self) -> Iterator[Sample]:
        """KIP-932 share groups: members, and per share-partition the lag (records not yet
        acknowledged or archived, Kafka's share-partition lag), the records locked to a member
        right now, and the start offset."""
        protocols = getattr(self.broker.groups, "protocols", {})
        share = next((p for p in protocols.values() if p.group_type.value == "share"), None)
        if share is None:
            return
        for group_id, group in list(share.groups.items()):
            yield Sample("kafka", "sharegroup", "members", GAUGE, {"group": group_id},
                         len(group.members), "Members of the share group")
        for key, part in list(share.partitions.items()):
            plog = self._partition(key.topic, key.partition)
            if plog is None:
                continue
            tags = {"group": key.group_id, "topic": key.topic, "partition": key.partition}
            yield Sample("kafka", "sharegroup", "lag", GAUGE, tags, part.lag(plog.next_offset),
                         "Records of the share-partition not yet acknowledged or archived")
            yield Sample("kafka", "sharegroup", "in_flight_records", GAUGE, tags,
                         part.in_flight(), "Records acquired by a member, lock not expired")
            yield Sample("kafka", "sharegroup", "start_offset", GAUGE, tags, part.start_offset,
                         "The share-partition start offset (SPSO)")

    def _partition(self, topic: str, partition: int) -> Any:
        found = self.broker.topics.topics.get(topic)
        if found is None or not 0 <= partition < len(found.partitions):
            return None
        return found.partitions[partition]

    @staticmethod
    def _lag_seconds(plog: Any, offset: int, lag: int, now_ms: float) -> float:
        if lag <= 0:
            return 0.0
        try:
            # Only the batch header's bytes, not the batch: one small pread per partition.
            found = plog.locate(max(offset, plog.log_start_offset), 1)
            if found is None:
                return 0.0
            segment, start, stop = found
            end = start + _BASE_TIMESTAMP_AT + _BASE_TIMESTAMP.size
            if stop < end:
                return 0.0
            data = segment.read_range(start + _BASE_TIMESTAMP_AT, end)
            (timestamp,) = _BASE_TIMESTAMP.unpack(data)
        except Exception as exc:  # a segment deleted under us: no estimate this time
            log.debug("lag_seconds: reading the log failed: %r", exc)
            return 0.0
        return max(now_ms - timestamp, 0.0) / 1000 if timestamp > 0 else 0.0

    # -- the HTTP endpoint --------------------------------------------------------------------

    def health(self) -> tuple[bool, dict[str, Any]]:
        broker = self.broker
        serving = bool(getattr(broker, "_servers", None) or getattr(broker, "_server", None))
        return serving, {"status": "UP" if serving else "DOWN",
                         "node.id": broker.node_id, "port": broker.port,
                         "topics": self._topic_count(),
                         "uptime_s": round(time.time() - self.started_at, 1)}

    async def start(self) -> None:
        await self.serve(self.listener, self.registry, self.health)
