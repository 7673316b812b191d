"""`streams console` with many topics and groups: time to render /topics, /groups (with the lag
per group scraped from the broker's metrics), /apps and /brokers, and the console's cost on the
broker (Kafka requests per page view, counted at the console's clients).

    python benchmarks/console_perf.py [--topics 1000] [--groups 1000] [--views 5]

Starts a bundled broker (`streams broker start`) in a temporary directory, creates the topics
(one partition each, one record each) and the groups (an offset committed by a member-less
client, as Kafka's tools commit), then serves the console in this process and times page views
over HTTP. Target (issue [21]): under 1 s per page, and no request per topic or group.
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import aiohttp
from aiohttp import web
from aiokafka import AIOKafkaProducer, TopicPartition
from aiokafka.admin import AIOKafkaAdminClient, NewTopic
from aiokafka.client import AIOKafkaClient

from streams.console.cluster import Cluster
from streams.console.server import build_app
from streams.kafka.admin import commit_offsets

SENT: collections.Counter[str] = collections.Counter()


def _count_requests() -> None:
    """Wrap aiokafka's one send path so every request the console makes is counted by type."""
    original = AIOKafkaClient.send

    async def send(self, node_id, request, *args, **kwargs):  # type: ignore[no-untyped-def]
        SENT[type(request).__name__] += 1
        return await original(self, node_id, request, *args, **kwargs)
    AIOKafkaClient.send = send  # type: ignore[method-assign]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


async def _wait_for_broker(bootstrap: str, deadline: float) -> None:
    while True:
        admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            await admin.start()
            await admin.close()
            return
        except Exception:
            await admin.close()
            if time.monotonic() > deadline:
                raise
            await asyncio.sleep(0.2)


async def _prepare(bootstrap: str, topics: int, groups: int) -> None:
    admin = AIOKafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=120_000)
    await admin.start()
    try:
        names = [f"topic-{i:04d}" for i in range(topics)]
        for start in range(0, topics, 200):
            await admin.create_topics([NewTopic(n, 1, 1) for n in names[start:start + 200]])
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
        await producer.start()
        try:
            await asyncio.gather(*(producer.send(n, b"x") for n in names))
            await producer.flush()
        finally:
            await producer.stop()
        for i in range(groups):
            await commit_offsets(admin, f"group-{i:04d}",
                                 {TopicPartition(names[i % topics], 0): 0})
    finally:
        await admin.close()


async def _measure(bootstrap: str, views: int, metrics_url: str
                   ) -> dict[str, tuple[float, float, float]]:
    args = argparse.Namespace(bootstrap_servers=bootstrap, command_config=None)
    app = build_app(Cluster(args), metrics_urls={None: metrics_url})
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    port = free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    results = {}
    try:
        async with aiohttp.ClientSession() as http:
            for path in ("/topics", "/groups", "/apps", "/brokers", "/brokers/0"):
                async with http.get(f"http://127.0.0.1:{port}{path}") as r:  # warm up
                    assert r.status == 200, await r.text()
                times = []
                SENT.clear()
                for _ in range(views):
                    began = time.perf_counter()
                    async with http.get(f"http://127.0.0.1:{port}{path}") as r:
                        body = await r.text()
                        assert r.status == 200, body
                    times.append(time.perf_counter() - began)
                results[path] = (statistics.median(times), max(times),
                                 sum(SENT.values()) / views)
                print(f"{path}: requests per view by type: "
                      f"{ {k: v / views for k, v in sorted(SENT.items())} }")
    finally:
        await runner.cleanup()
    return results


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--topics", type=int, default=1000)
    parser.add_argument("--groups", type=int, default=1000)
    parser.add_argument("--views", type=int, default=5)
    opts = parser.parse_args()
    _count_requests()
    with tempfile.TemporaryDirectory() as tmp:
        port, metrics_port = free_port(), free_port()
        bootstrap = f"127.0.0.1:{port}"
        log = open(Path(tmp) / "broker.log", "wb")  # noqa: SIM115 - closed below
        broker = subprocess.Popen([sys.executable, "-m", "streams.cli.main", "broker", "start",
                                   "--data-dir", str(Path(tmp) / "data"), "--port", str(port),
                                   "--metrics-listener", f"http://127.0.0.1:{metrics_port}"],
                                  stdout=log, stderr=subprocess.STDOUT)
        try:
            asyncio.run(_wait_for_broker(bootstrap, time.monotonic() + 60))
            began = time.monotonic()
            asyncio.run(_prepare(bootstrap, opts.topics, opts.groups))
            print(f"prepared {opts.topics} topics and {opts.groups} groups "
                  f"in {time.monotonic() - began:.1f} s")
            results = asyncio.run(_measure(bootstrap, opts.views,
                                           f"http://127.0.0.1:{metrics_port}/metrics"))
        finally:
            broker.terminate()
            broker.wait(60)
            log.close()
    print(f"{'page':<11} {'median s':>9} {'max s':>7} {'Kafka requests/view':>20}")
    for path, (median, worst, requests) in results.items():
        print(f"{path:<11} {median:9.3f} {worst:7.3f} {requests:20.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
