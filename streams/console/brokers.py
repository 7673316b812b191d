"""The brokers as the console shows them: who they are and where they listen (DescribeCluster,
DescribeConfigs), how much they store (DescribeLogDirs: any Kafka answers it) and, when the
console is given a broker's Prometheus endpoint (``--metrics-url``, our ``metrics.listener`` or
a JMX exporter's), its request rates, connections and bytes in/out per topic, computed from the
counters as a scraper does."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass, field
from typing import Any

import aiohttp

from ..cli.client import error_message
from ..kafka import admin as kadmin
from .cluster import Cluster, ConsoleError
from .rates import RateSampler

LISTENER_KEYS = ("listeners", "advertised.listeners", "listener.security.protocol.map",
                 "inter.broker.listener.name", "sasl.enabled.mechanisms", "authorizer.class.name")
REQUESTS = "kafka_network_requestmetrics_requests_total"
ERRORS = "kafka_network_requestmetrics_errors_total"
BYTES_IN = "kafka_server_brokertopicmetrics_bytesin_total"
BYTES_OUT = "kafka_server_brokertopicmetrics_bytesout_total"
MESSAGES_IN = "kafka_server_brokertopicmetrics_messagesin_total"
GROUP_LAG = "kafka_consumergroup_lag"
GROUP_LAG_SECONDS = "kafka_consumergroup_lag_seconds"
GAUGES = {"kafka_server_socketservermetrics_connection_count": "connections",
          "kafka_server_replicamanager_partitioncount": "partitions",
          "kafka_server_kafkaserver_brokerstate": "broker state"}
_SAMPLE = re.compile(r"^([A-Za-z_:][\w:]*)(?:\{(.*)\})?\s+(\S+)")
_LABEL = re.compile(r'(\w+)="((?:[^"\\]|\\.)*)"')


def parse_prometheus(text: str) -> list[tuple[str, dict[str, str], float]]:
    """The samples of a Prometheus text exposition: (name, labels, value)."""
    samples = []
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if match is None:
            continue
        try:
            value = float(match.group(3))
        except ValueError:
            continue
        labels = {k: v.replace('\\"', '"').replace("\\\\", "\\")
                  for k, v in _LABEL.findall(match.group(2) or "")}
        samples.append((match.group(1), labels, value))
    return samples


def parse_metrics_urls(values: list[str] | None) -> dict[int | None, str]:
    """``--metrics-url`` values: ``URL`` (the cluster's one broker) or ``ID=URL``."""
    urls: dict[int | None, str] = {}
    for value in values or []:
        head, sep, tail = value.partition("=")
        if sep and head.strip().isdigit():
            urls[int(head)] = tail.strip()
        elif value.startswith(("http://", "https://")):
            urls[None] = value
        else:
            raise ValueError(f"--metrics-url {value!r}: expected URL or BROKER_ID=URL "
                             "(http://host:port/metrics)")
    return urls


@dataclass
class Brokers:
    cluster: Cluster
    metrics_urls: dict[int | None, str] = field(default_factory=dict)
    sampler: RateSampler = field(default_factory=RateSampler)
    session: aiohttp.ClientSession | None = None

    async def stop(self) -> None:
        if self.session is not None:
            await self.session.close()

    async def list(self) -> list[dict[str, Any]]:
        """Every broker: address, rack, whether it is the controller, bytes on disk."""
        admin = self.cluster.admin
        assert admin is not None
        described = await admin.describe_cluster()
        brokers = sorted(described["brokers"], key=lambda b: b["node_id"])
        dirs = await asyncio.gather(*(self._log_dirs(b["node_id"]) for b in brokers))
        return [{"id": b["node_id"], "host": b["host"], "port": b["port"], "rack": b["rack"],
                 "controller": b["node_id"] == described["controller_id"],
                 "log_bytes": sum(p["size"] for d in found for p in d["partitions"]),
                 "partitions": sum(len(d["partitions"]) for d in found),
                 "log_dirs": len(found)}
                for b, found in zip(brokers, dirs, strict=True)]

    async def partition_sizes(self) -> dict[tuple[str, int], int]:
        """Bytes on disk of every partition replica, summed over brokers and log dirs (one
        DescribeLogDirs per broker): what /topics shows as sizes."""
        admin = self.cluster.admin
        assert admin is not None
        brokers = (await admin.describe_cluster())["brokers"]
        sizes: dict[tuple[str, int], int] = {}
        for found in await asyncio.gather(*(self._log_dirs(b["node_id"]) for b in brokers)):
            for d in found:
                for p in d["partitions"]:
                    if not p["future"]:
                        key = (p["topic"], p["partition"])
                        sizes[key] = sizes.get(key, 0) + p["size"]
        return sizes

    async def _log_dirs(self, node_id: int) -> list[dict[str, Any]]:
        assert self.cluster.admin is not None
        return await kadmin.describe_log_dirs(self.cluster.admin, node_id)

    def _metrics_url(self, node_id: int, broker_count: int) -> str | None:
        if node_id in self.metrics_urls:
            return self.metrics_urls[node_id]
        return self.metrics_urls.get(None) if broker_count == 1 else None

    async def broker(self, node_id: int) -> dict[str, Any]:
        """One broker: listeners, every config (secrets hidden), log dirs with the size of
        each topic, and the metrics when its endpoint is known."""
        brokers = {b["id"]: b for b in await self.list()}
        if node_id not in brokers:
            raise ConsoleError(f"no broker with id {node_id} (brokers: "
                               f"{', '.join(map(str, sorted(brokers))) or 'none'})")
        configs = await self.cluster.broker_configs(node_id)
        by_name = {c["name"]: c for c in configs}
        listeners = [{"name": k, "value": by_name[k]["value"]} for k in LISTENER_KEYS
                     if k in by_name and by_name[k]["value"] not in (None, "")]
        dirs = []
        for d in await self._log_dirs(node_id):
            topics: dict[str, dict[str, int]] = {}
            for p in d["partitions"]:
                row = topics.setdefault(p["topic"], {"partitions": 0, "bytes": 0})
                row["partitions"] += 1
                row["bytes"] += p["size"]
            dirs.append({"log_dir": d["log_dir"],
                         "error": error_message(d["error_code"]) if d["error_code"] else None,
                         "bytes": sum(t["bytes"] for t in topics.values()),
                         "topics": [{"topic": t, **v} for t, v in sorted(topics.items())]})
        url = self._metrics_url(node_id, len(brokers))
        metrics = await self._metrics(node_id, url) if url else None
        return {**brokers[node_id], "listeners": listeners, "configs": configs,
                "log_dirs": dirs, "metrics_url": url, "metrics": metrics}

    async def _scrape(self, url: str) -> list[tuple[str, dict[str, str], float]] | str:
        """The samples at ``url``, or why they could not be read."""
        if self.session is None:
            self.session = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=10))
        try:
            async with self.session.get(url) as response:
                if response.status != 200:
                    return f"{url} answered HTTP {response.status}"
                return parse_prometheus(await response.text())
        except (aiohttp.ClientError, TimeoutError) as exc:
            return f"cannot read {url}: {str(exc) or type(exc).__name__}"

    async def group_lags(self) -> dict[str, dict[str, float]] | None:
        """Per group, the lag summed over its partitions and the largest lag in seconds, from
        every metrics endpoint given (each broker exports the groups it coordinates, as Kafka
        Lag Exporter names them: ``kafka_consumergroup_lag``, ``..._lag_seconds``); None
        without ``--metrics-url``. One scrape per broker, whatever the number of groups."""
        if not self.metrics_urls:
            return None
        lags: dict[str, dict[str, float]] = {}
        for scraped in await asyncio.gather(*(self._scrape(u)
                                              for u in self.metrics_urls.values())):
            if isinstance(scraped, str):
                continue
            for name, labels, value in scraped:
                group = labels.get("group")
                if group is None or name not in (GROUP_LAG, GROUP_LAG_SECONDS):
                    continue
                row = lags.setdefault(group, {"lag": 0.0, "lag_seconds": 0.0})
                if name == GROUP_LAG:
                    row["lag"] += value
                else:
                    row["lag_seconds"] = max(row["lag_seconds"], value)
        return lags

    async def _metrics(self, node_id: int, url: str) -> dict[str, Any]:
        """Request rates per API, bytes and records in/out per topic (per second over the
        views of the last 30 s), and the broker's gauges."""
        scraped = await self._scrape(url)
        if isinstance(scraped, str):
            return {"error": scraped}
        counters: dict[str, float] = {}
        gauges: dict[str, float] = {}
        for name, labels, value in scraped:
            if name in (REQUESTS, ERRORS) and "request" in labels:
                counters[f"{name}|{labels['request']}"] = value
            elif name in (BYTES_IN, BYTES_OUT, MESSAGES_IN) and "topic" in labels:
                counters[f"{name}|{labels['topic']}"] = value
            elif name in GAUGES:
                gauges[GAUGES[name]] = value
        rates = self.sampler.rates(node_id, counters)

        def table(metric: str) -> dict[str, dict[str, float | None]]:
            return {key.split("|", 1)[1]: {"total": value, "rate": rates.get(key)}
                    for key, value in counters.items() if key.startswith(metric + "|")}
        requests = table(REQUESTS)
        for request, row in table(ERRORS).items():
            requests.setdefault(request, {"total": 0, "rate": None})["errors"] = row["total"]
        topics: dict[str, dict[str, float | None]] = {}
        for metric, label in ((MESSAGES_IN, "messages_in"), (BYTES_IN, "bytes_in"),
                              (BYTES_OUT, "bytes_out")):
            for topic, row in table(metric).items():
                topics.setdefault(topic, {})[label + "_rate"] = row["rate"]
        return {"error": None, "requests": dict(sorted(requests.items())),
                "topics": dict(sorted(topics.items())), "gauges": gauges}
