"""``mm2.properties`` as Kafka's MirrorMakerConfig reads it: ``clusters``, per-cluster settings
(``A.bootstrap.servers``, ``A.security.protocol``, ``A.consumer.*``, worker keys for the worker
that writes to A), per-flow settings (``A->B.enabled``, ``A->B.topics``, any connector key), and
top-level defaults for every flow. From it come one Connect worker config per flow (on the
target cluster) and the three connector configs of each flow.

Checked before anything runs, each in one line: a flow naming an unknown cluster, a cluster
without ``bootstrap.servers``, an unknown key, and flows that would loop records under
IdentityReplicationPolicy.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping
from dataclasses import dataclass

from connect.config_def import ConfigException
from connect.mirror import checkpoint, heartbeat, source
from connect.mirror.config import client_keys
from connect.mirror.policy import is_identity
from streams.kafka.client_config import JVM_ONLY_KEYS, SECURITY_KEYS

BYTE_ARRAY = "org.apache.kafka.connect.converters.ByteArrayConverter"
CONNECTORS = {
    "MirrorSourceConnector": "org.apache.kafka.connect.mirror.MirrorSourceConnector",
    "MirrorCheckpointConnector": "org.apache.kafka.connect.mirror.MirrorCheckpointConnector",
    "MirrorHeartbeatConnector": "org.apache.kafka.connect.mirror.MirrorHeartbeatConnector",
}
CLIENT_PREFIXES = ("producer.", "consumer.", "admin.")
# Worker keys a flow's embedded worker takes from the top level (Kafka's workerConfig).
WORKER_PREFIXES = ("offset.storage", "config.storage", "status.storage", "key.converter",
                   "value.converter", "header.converter", "task.", "worker", "offset.flush",
                   "session.timeout.ms", "heartbeat.interval.ms", "rebalance.timeout.ms",
                   "exactly.once.source.support", "metrics.listener", "scheduled.rebalance")
_FLOW = re.compile(r"^(?P<source>[^.>]+?)->(?P<target>[^.]+)\.(?P<key>.+)$")


_DEFINITIONS = {"MirrorSourceConnector": lambda: source.CONFIG_DEF,
                "MirrorCheckpointConnector": lambda: checkpoint.CONFIG_DEF,
                "MirrorHeartbeatConnector": lambda: heartbeat.CONFIG_DEF}
_CONNECT_KEYS = {"name", "connector.class", "tasks.max", "key.converter", "value.converter",
                 "header.converter", "exactly.once.support", "transaction.boundary",
                 "transaction.boundary.interval.ms"}


class MirrorConfigError(ConfigException):
    """mm2.properties cannot be run; the message is the one line the user sees."""


def connector_keys() -> set[str]:
    names = set()
    for definition in (source.CONFIG_DEF, checkpoint.CONFIG_DEF, heartbeat.CONFIG_DEF):
        names.update(definition.names())
    return names | {"tasks.max", "errors.log.enable", "errors.tolerance",
                    "exactly.once.support", "transaction.boundary",
                    "transaction.boundary.interval.ms"}


@dataclass(frozen=True, order=True)
class Flow:
    source: str
    target: str
    replicate: bool  # False: only heartbeats (Kafka runs those in every direction)

    def __str__(self) -> str:
        return f"{self.source}->{self.target}"


class MirrorMakerConfig:
    def __init__(self, props: Mapping[str, str], where: str = "mm2.properties") -> None:
        self.raw = {k.strip(): str(v).strip() for k, v in props.items()}
        self.where = where
        clusters = [c.strip() for c in self.raw.get("clusters", "").split(",") if c.strip()]
        if not clusters:
            raise MirrorConfigError(f"{where}: 'clusters' is required (e.g. clusters = A, B)")
        self.clusters = clusters
        self._check_keys()
        for cluster in clusters:
            if not self.cluster_props(cluster).get("bootstrap.servers"):
                raise MirrorConfigError(f"{where}: cluster {cluster} has no "
                                        f"'{cluster}.bootstrap.servers'")
        self.flows = self._flows()
        self._check_identity_cycles()

    # -- checks --------------------------------------------------------------------------------
    def _check_keys(self) -> None:
        known = connector_keys()
        for key in self.raw:
            flow = _FLOW.match(key)
            if flow:
                for alias in (flow["source"], flow["target"]):
                    if alias not in self.clusters:
                        raise MirrorConfigError(
                            f"{self.where}: {key} names cluster '{alias}', which is not in "
                            f"clusters = {', '.join(self.clusters)}")
                if flow["source"] == flow["target"]:
                    raise MirrorConfigError(f"{self.where}: {key}: a flow needs two different "
                                            "clusters")
                self._check_flow_key(key, flow["key"], known)
                continue
            if "->" in key:
                raise MirrorConfigError(f"{self.where}: {key}: expected SOURCE->TARGET.KEY")
            head = key.split(".", 1)[0]
            if head in self.clusters and "." in key:
                continue  # per-cluster keys: client keys, or worker keys checked by the worker
            if self._top_level_ok(key, known):
                continue
            guess = difflib.get_close_matches(key, sorted(known), n=1)
            hint = f"; did you mean '{guess[0]}'?" if guess else ""
            raise MirrorConfigError(f"{self.where}: unknown key '{key}'{hint}")

    @staticmethod
    def _top_level_ok(key: str, known: set[str]) -> bool:
        return (key in known or key in ("clusters", "dedicated.mode.enable.internal.rest")
                or key in SECURITY_KEYS or key in JVM_ONLY_KEYS
                or key.startswith(("replication.policy.", "config.providers", "source.",
                                   "target.", *CLIENT_PREFIXES, *WORKER_PREFIXES)))

    def _check_flow_key(self, key: str, name: str, known: set[str]) -> None:
        if name in known or name == "enabled" or name.startswith(
                ("replication.policy.", "source.", "target.", *CLIENT_PREFIXES)):
            return
        guess = difflib.get_close_matches(name, sorted(known), n=1)
        hint = f"; did you mean '{guess[0]}'?" if guess else ""
        raise MirrorConfigError(f"{self.where}: unknown key '{key}'{hint}")

    def _flows(self) -> list[Flow]:
        global_heartbeats = self.raw.get("emit.heartbeats.enabled", "true").lower() == "true"
        flows = []
        for s in self.clusters:
            for t in self.clusters:
                if s == t:
                    continue
                prefix = f"{s}->{t}."
                enabled = self.raw.get(prefix + "enabled", "false").lower() == "true"
                heartbeats = self.raw.get(prefix + "emit.heartbeats.enabled",
                                          "true" if global_heartbeats else "false"
                                          ).lower() == "true"
                if enabled or heartbeats:
                    flows.append(Flow(s, t, enabled))
        if not any(f.replicate for f in flows):
            raise MirrorConfigError(f"{self.where}: no flow is enabled (set e.g. "
                                    f"{self.clusters[0]}->"
                                    f"{self.clusters[-1] if len(self.clusters) > 1 else 'B'}"
                                    ".enabled = true)")
        return flows

    def _check_identity_cycles(self) -> None:
        """IdentityReplicationPolicy keeps topic names, so replicas cannot be told from
        sources: flows that form a cycle would copy records round forever."""
        edges: dict[str, list[str]] = {}
        for flow in self.flows:
            if flow.replicate and is_identity(self.flow_props(flow)):
                edges.setdefault(flow.source, []).append(flow.target)

        def cycle_from(start: str) -> list[str] | None:
            stack = [(start, [start])]
            while stack:
                node, path = stack.pop()
                for nxt in edges.get(node, []):
                    if nxt == start:
                        return [*path, start]
                    if nxt not in path:
                        stack.append((nxt, [*path, nxt]))
            return None

        for start in sorted(edges):
            found = cycle_from(start)
            if found:
                raise MirrorConfigError(
                    f"{self.where}: flows {' -> '.join(found)} form a cycle under "
                    "IdentityReplicationPolicy, which keeps topic names and so cannot tell a "
                    "replica from its source: records would be copied round forever; enable "
                    "one direction only or use DefaultReplicationPolicy")

    # -- derived configs -----------------------------------------------------------------------
    def cluster_props(self, cluster: str) -> dict[str, str]:
        """``<cluster>.*`` with the prefix removed, over top-level security and client keys."""
        out = {k: v for k, v in self.raw.items()
               if k in SECURITY_KEYS or k in JVM_ONLY_KEYS or k.startswith(CLIENT_PREFIXES)}
        prefix = f"{cluster}."
        out.update({k[len(prefix):]: v for k, v in self.raw.items()
                    if k.startswith(prefix) and not _FLOW.match(k)})
        return out

    def flow_props(self, flow: Flow) -> dict[str, str]:
        """Top-level connector keys, then ``S->T.*`` overrides."""
        known = connector_keys()
        out = {k: v for k, v in self.raw.items()
               if k in known or k.startswith("replication.policy.")}
        prefix = f"{flow.source}->{flow.target}."
        out.update({k[len(prefix):]: v for k, v in self.raw.items() if k.startswith(prefix)})
        return out

    def worker_config(self, flow: Flow) -> dict[str, str]:
        """The embedded distributed worker of a flow: on the target, group ``<source>-mm2``,
        internal topics ``mm2-{configs,offsets,status}.<source>.internal``, bytes converters."""
        props = {k: v for k, v in self.raw.items()
                 if k.startswith(WORKER_PREFIXES) and not _FLOW.match(k)
                 and k.split(".", 1)[0] not in self.clusters}
        target = self.cluster_props(flow.target)
        props.update(target)
        props.setdefault("group.id", f"{flow.source}-mm2")
        props.setdefault("offset.storage.topic", f"mm2-offsets.{flow.source}.internal")
        props.setdefault("status.storage.topic", f"mm2-status.{flow.source}.internal")
        props.setdefault("config.storage.topic", f"mm2-configs.{flow.source}.internal")
        for key in ("key.converter", "value.converter", "header.converter"):
            props.setdefault(key, BYTE_ARRAY)
        props.setdefault("client.id", str(flow))
        props["listeners"] = "http://127.0.0.1:0"
        return props

    def exactly_once(self, flow: Flow) -> bool:
        """``exactly.once.source.support = enabled`` for the worker writing to the target
        (top level or ``<target>.exactly.once.source.support``)."""
        value = self.worker_config(flow).get("exactly.once.source.support", "disabled")
        return value.strip().lower() == "enabled"

    def connector_config(self, flow: Flow, name: str) -> dict[str, str]:
        props = self.flow_props(flow)
        usable = client_keys()
        for side, alias in (("source", flow.source), ("target", flow.target)):
            for key, value in self.cluster_props(alias).items():
                # Only what the connectors' clients use; the rest is for the flow's worker.
                full = f"{side}.{key}" if key.startswith(CLIENT_PREFIXES) \
                    else f"{side}.cluster.{key}"
                if full in usable or key == "bootstrap.servers":
                    props.setdefault(full, value)
                elif key.startswith(CLIENT_PREFIXES):
                    raise MirrorConfigError(f"{self.where}: {alias}.{key}: not a setting our "
                                            f"{key.split('.', 1)[0]} clients support")
        props.update({"name": name, "connector.class": CONNECTORS[name],
                      "source.cluster.alias": flow.source, "target.cluster.alias": flow.target})
        props.setdefault("enabled", "true" if flow.replicate else "false")
        if name == "MirrorSourceConnector" and self.exactly_once(flow):
            # Exactly-once mirroring (KIP-618): only committed source records are copied, and
            # each transaction on the target holds records with their source offsets.
            props.setdefault("source.consumer.isolation.level", "read_committed")
            props.setdefault("exactly.once.support", "required")
        props.setdefault("tasks.max", "1")
        for key in ("key.converter", "value.converter", "header.converter"):
            props.setdefault(key, BYTE_ARRAY)
        # Each connector gets the keys it defines (the top level holds all three's).
        own = _DEFINITIONS[name]().names()
        return {k: v for k, v in props.items()
                if k in own or k in _CONNECT_KEYS or k.startswith("errors.")}

    def connectors(self, flow: Flow) -> dict[str, dict[str, str]]:
        names = ["MirrorHeartbeatConnector"]
        if flow.replicate:
            names = ["MirrorSourceConnector", "MirrorCheckpointConnector", *names]
        return {name: self.connector_config(flow, name) for name in names}

    def validate_connectors(self) -> None:
        """Parse every connector config now, so a bad value stops the start with one line."""
        parsers = {"MirrorSourceConnector": source.SourceSettings,
                   "MirrorCheckpointConnector": checkpoint.CheckpointSettings,
                   "MirrorHeartbeatConnector": lambda p: heartbeat._parse(p)}
        for flow in self.flows:
            for name, props in self.connectors(flow).items():
                try:
                    parsers[name](props)
                except ConfigException as exc:
                    raise MirrorConfigError(f"{self.where}: flow {flow}: {exc}") from None


__all__ = ["Flow", "MirrorConfigError", "MirrorMakerConfig"]
