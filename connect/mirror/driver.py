"""``streams mirror mm2.properties``: MirrorMaker 2 as a dedicated process (Kafka's
connect-mirror-maker.sh). Each flow runs on an embedded distributed Connect worker on its target
cluster (group ``<source>-mm2``); whichever worker leads a flow's group writes the flow's
connector configs, so several processes started with the same file share the connectors and
tasks, and one that dies leaves its share to the others.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from typing import Any

from connect.mirror.maker import Flow, MirrorConfigError, MirrorMakerConfig
from connect.runtime.config import WorkerConfig
from connect.runtime.distributed import DistributedWorker
from connect.runtime.status import State

log = logging.getLogger("connect.mirror")


def _last_line(trace: str | None) -> str:
    lines = [line.strip() for line in (trace or "").splitlines() if line.strip()]
    return lines[-1] if lines else "(no reason given)"


async def check_reachable(config: MirrorMakerConfig, clusters: set[str],
                          timeout: float = 15.0) -> None:
    """Each cluster answers an admin request, or one line says which one does not."""
    quiet = logging.getLogger("aiokafka")
    level = quiet.level
    quiet.setLevel(logging.CRITICAL)  # the one line below says it; no aiokafka ERROR lines
    try:
        for alias in sorted(clusters):
            await _probe(config, alias, timeout)
    finally:
        quiet.setLevel(level)


async def _probe(config: MirrorMakerConfig, alias: str, timeout: float) -> None:
    from connect.mirror import admin as mm_admin
    from connect.mirror.config import cluster_clients

    props = {f"source.cluster.{k}": v for k, v in config.cluster_props(alias).items()}
    cluster = cluster_clients(props, "source", alias)
    try:
        async def probe(c: Any = cluster) -> None:
            async with mm_admin.admin_client(c) as admin:
                await admin.describe_cluster()

        await asyncio.wait_for(probe(), timeout)
    except Exception as exc:  # noqa: BLE001 - reported as one line
        reason = _reason(exc) if not isinstance(exc, TimeoutError) \
            else f"no answer within {timeout:.0f} s"
        raise MirrorConfigError(f"cluster {alias} ({alias}.bootstrap.servers="
                                f"{cluster.bootstrap}) is unreachable: {reason}") from None


def _reason(exc: BaseException) -> str:
    text = str(exc).strip()
    name = type(exc).__name__
    while text.startswith(f"{name}: "):
        text = text[len(name) + 2:]
    return f"{name}: {text}" if text else name


class MirrorMaker:
    def __init__(self, config: MirrorMakerConfig, only_targets: list[str] | None = None) -> None:
        self.config = config
        unknown = [c for c in only_targets or [] if c not in config.clusters]
        if unknown:
            raise MirrorConfigError(f"--clusters {','.join(unknown)}: not in clusters = "
                                    f"{', '.join(config.clusters)}")
        self.flows = [f for f in config.flows
                      if not only_targets or f.target in only_targets]
        self.workers: dict[Flow, DistributedWorker] = {}
        self._reported: set[tuple[str, str]] = set()
        self.failures: list[str] = []

    async def start(self) -> None:
        self.config.validate_connectors()
        involved = {f.source for f in self.flows} | {f.target for f in self.flows}
        await check_reachable(self.config, involved)
        worker_configs = {}
        for flow in self.flows:
            try:
                worker_configs[flow] = WorkerConfig.parse(self.config.worker_config(flow))
            except ValueError as exc:
                raise MirrorConfigError(f"{self.config.where}: worker of flow {flow}: "
                                        f"{exc}") from None
        try:
            for flow in self.flows:
                worker = DistributedWorker(worker_configs[flow])
                self.workers[flow] = worker
                await worker.start()
                log.info("flow %s: worker %s on cluster %s", flow, worker.url, flow.target)
        except BaseException:
            await self.stop()
            raise

    async def stop(self) -> None:
        for worker in reversed(list(self.workers.values())):
            try:
                await worker.stop()
            except Exception as exc:  # noqa: BLE001 - stop the others anyway
                log.warning("stopping a worker failed: %s", exc)
        self.workers.clear()

    async def tick(self) -> None:
        """Write the flows' connector configs where this process leads; report failures."""
        for flow, worker in self.workers.items():
            herder = worker.herder
            if herder is None or not herder.ready:
                continue
            if getattr(herder, "is_leader", False):
                for name, props in self.config.connectors(flow).items():
                    stored = herder.configs.get(name)
                    if stored != props:
                        try:
                            await herder.put_connector_config(name, props)
                        except Exception as exc:  # noqa: BLE001 - reported, retried next tick
                            self._report(flow, name, str(exc).splitlines()[0])
            for name, status in list(herder.statuses.connectors.items()):
                if status.state is State.FAILED:
                    self._report(flow, name, _last_line(status.trace))
            for task, status in list(herder.statuses.tasks.items()):
                if status.state is State.FAILED:
                    self._report(flow, f"{task.connector} task {task.task}",
                                 _last_line(status.trace))

    def metrics_url(self) -> str:
        """Prometheus /metrics of this process (every flow's MirrorMaker metrics)."""
        first = next(iter(self.workers.values()))
        return f"{first.url}/metrics"

    def _report(self, flow: Flow, what: str, reason: str) -> None:
        key = (f"{flow} {what}", reason)
        if key in self._reported:
            return
        self._reported.add(key)
        line = f"streams mirror: flow {flow}: {what} failed: {reason}"
        self.failures.append(line)
        print(line, file=sys.stderr, flush=True)

    async def run(self, stop: asyncio.Event) -> None:
        await self.start()
        print("streams mirror: running flows " + ", ".join(
            f"{f}" + ("" if f.replicate else " (heartbeats)") for f in self.flows)
            + f"; metrics on {self.metrics_url()}", flush=True)
        try:
            while not stop.is_set():
                await self.tick()
                with contextlib.suppress(TimeoutError):
                    await asyncio.wait_for(stop.wait(), 1.0)
        finally:
            await self.stop()


__all__ = ["MirrorMaker", "check_reachable"]
