"""Streams applications as the console sees them: found from their consumer groups, read
through each instance's query endpoint.

A Kafka Streams application is a consumer group whose assignor is ``stream``; each member puts
its ``application.server`` in the subscription's user data (Kafka's SubscriptionInfo user end
point, KIP-67). The console lists such groups, then asks every end point for ``GET /instance``
(state, tasks, topology, records per node) and turns the per-node counters into records/s by
comparing them with the samples it took on earlier views, as a metrics scraper would.
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import quote

import aiohttp
from aiokafka.coordinator.protocol import ConsumerProtocolMemberMetadata

from .cluster import Cluster, ConsoleError
from .rates import RateSampler

STREAMS_PROTOCOL = "stream"  # the assignor name Kafka Streams (and ours) joins with
INSTANCE_TIMEOUT_S = 5.0


def member_endpoint(metadata: bytes | None) -> str | None:
    """The ``application.server`` a streams member reported (None: not a streams member, or
    none set). The user data is JSON with an ``endpoint`` (streams/runtime/assignor.py)."""
    if not metadata:
        return None
    try:
        user_data = ConsumerProtocolMemberMetadata.decode(metadata).user_data
        endpoint = json.loads(user_data).get("endpoint") if user_data else None
    except Exception:  # another assignor's user data: not ours to read
        return None
    return str(endpoint) if endpoint else None


@dataclass
class Apps:
    """Discovery, the instances' reports, and the per-node rate samples between views."""

    cluster: Cluster
    session: aiohttp.ClientSession | None = None
    sampler: RateSampler = field(default_factory=RateSampler)

    async def stop(self) -> None:
        if self.session is not None:
            await self.session.close()

    def _http(self) -> aiohttp.ClientSession:
        if self.session is None:
            self.session = aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=INSTANCE_TIMEOUT_S))
        return self.session

    async def list(self) -> list[dict[str, Any]]:
        """Every streams application: groups with the ``stream`` protocol or members that
        report an end point (one DescribeGroups per coordinator, as /groups)."""
        apps = []
        for g in await self.cluster.describe_all_groups():
            endpoints = sorted({e for m in g["members"]
                                if (e := member_endpoint(m.get("member_metadata")))})
            if g.get("protocol") != STREAMS_PROTOCOL and not endpoints:
                continue
            apps.append({"application_id": g["group"], "state": g["state"],
                         "members": len(g["members"]), "endpoints": endpoints})
        return sorted(apps, key=lambda a: a["application_id"])

    async def endpoints(self, app_id: str) -> list[str]:
        for app in await self.list():
            if app["application_id"] == app_id:
                return app["endpoints"]
        raise ConsoleError(f"no streams application {app_id!r} (no consumer group with the "
                           f"'{STREAMS_PROTOCOL}' assignor by that id)")

    async def _get(self, url: str) -> tuple[int, Any]:
        try:
            async with self._http().get(url) as response:
                return response.status, await response.json(content_type=None)
        except (aiohttp.ClientError, TimeoutError, ValueError) as exc:
            reason = type(exc).__name__ if not str(exc) else str(exc)
            return 0, {"error": f"cannot reach http://{url.split('/')[2]}: {reason}"}

    async def app(self, app_id: str) -> dict[str, Any]:
        """The application: each instance's report (or why it could not be read), the
        topology, records/s per node summed over instances, and lag per instance from the
        group's committed offsets (what the broker says, as /groups shows it)."""
        endpoints = await self.endpoints(app_id)
        answers = await asyncio.gather(*(self._get(f"http://{e}/instance") for e in endpoints))
        group = await self.cluster.group(app_id)
        lag_of = {(p["topic"], p["partition"]): p["lag"] for p in group["partitions"]}
        instances, topology = [], None
        rates: dict[str, float] = {}
        for endpoint, (status, body) in zip(endpoints, answers, strict=True):
            if status != 200 or not isinstance(body, dict) or "state" not in body:
                error = body.get("error") if isinstance(body, dict) else None
                instances.append({"endpoint": endpoint, "error": error or f"HTTP {status}"})
                continue
            topology = topology or body.get("topology")
            for task in body["active"]:
                lags = [lag_of.get((p["topic"], p["partition"])) for p in task["partitions"]]
                task["lag"] = sum(x for x in lags if x is not None) \
                    if any(x is not None for x in lags) else None
            lags = [t["lag"] for t in body["active"] if t["lag"] is not None]
            for name, rate in self.sampler.rates((app_id, endpoint), body["nodes"]).items():
                rates[name] = rates.get(name, 0.0) + rate
            instances.append({"endpoint": endpoint, "state": body["state"],
                              "process_id": body.get("process_id"),
                              "active": body["active"], "standby": body["standby"],
                              "lag": sum(lags) if lags else None,
                              "processed": body.get("processed", 0), "error": None})
        return {"application_id": app_id, "state": group["state"], "instances": instances,
                "topology": topology, "rates": rates, "lag": group["lag"]}

    async def lookup(self, app_id: str, store: str, key: str) -> dict[str, Any]:
        """``key`` in ``store`` through an instance's query endpoint (any instance: it
        forwards to the key's owner). A missing key is ``{"found": False}``."""
        endpoints = await self.endpoints(app_id)
        if not endpoints:
            raise ConsoleError(f"no instance of {app_id!r} reports an application.server")
        last = ""
        for endpoint in endpoints:
            status, body = await self._get(f"http://{endpoint}/stores/"
                                           f"{quote(store, safe='')}/keys/{quote(key, safe='')}")
            if status == 200:
                return {"found": True, "key": body.get("key"), "value": body.get("value"),
                        "via": endpoint}
            if status == 404 and "no state store" not in str(body.get("error", "")):
                return {"found": False, "key": key, "via": endpoint}
            last = str(body.get("error") or f"HTTP {status}")
            if status in (400, 404):
                break  # the store or key is wrong: another instance would say the same
        raise ConsoleError(f"lookup of {key!r} in {store!r} failed: {last}")
