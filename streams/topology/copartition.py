"""Co-partitioned topics must agree on key *bytes*, not only on partition counts.

A join (or a cogroup) reads partition p of each of its source topics in one task, and every
topic is partitioned by the default partitioner: murmur2 of the serialized key. So a
repartition topic written for a join has to serialize keys exactly as its co-partner topics
do, or equal keys land on different partitions and meet nothing (Kafka Streams gets this from
its serdes: ``KStreamImpl#repartitionForJoin`` writes with the stream's or ``Joined``'s key
serde, else ``default.key.serde``; with neither, ``StreamsConfig`` fails the task at init).

Here a repartition topic with no key serde would fall back to the internal tagged format,
whose bytes no user topic has. Before a topology runs, each such topic in a co-partition
group takes the key serde of a partner that has one; if none has, it needs
``default.key.serde``, and without that the topology is rejected up front. A group made only
of such repartition topics (e.g. a stream-stream join with both sides re-keyed) keeps the
internal format: every member writes the same bytes, so they still co-partition.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..serde import Serde
    from .topology import Topology


class CopartitionGroup(set[str]):
    """Topics one operator reads partition by partition (Kafka's copartition group).

    A set (so ``{"a", "b"} in topology.copartition_groups`` keeps working) that also
    remembers the operator that needs it and the order the topics were given in.
    """

    def __init__(self, topics: Iterable[str], operator: str | None = None) -> None:
        ordered = list(dict.fromkeys(topics))
        super().__init__(ordered)
        self.order = ordered
        self.operator = operator


@dataclass
class UnresolvedKeySerde:
    """Repartition topics of a group whose key format depends on ``default.key.serde``."""

    operator: str | None
    topics: list[str]
    partners: list[str]

    def message(self) -> str:
        who = self.operator or "a join"
        topics = ", ".join(repr(t) for t in self.topics)
        partners = ", ".join(repr(t) for t in self.partners)
        return (
            f"{who}: cannot work out the key serde of repartition topic {topics}. It is "
            f"co-partitioned with {partners}, so it must write the same key bytes (the default "
            f"partitioner hashes them), but neither the operator nor {partners} has a key "
            f"serde and default.key.serde is not set. Pass key_serde= to the operator (e.g. "
            f"join(table, joiner, key_serde=Serdes.string()) or group_by(fn, "
            f"key_serde=Serdes.string())) with the serde {partners} are written with, give "
            f"{partners} that key serde (builder.table/stream(..., key_serde=...)), or set "
            f"default.key.serde in the config"
        )


def _ordered(group: set[str]) -> list[str]:
    return list(getattr(group, "order", None) or sorted(group))


def _source(topology: Topology, topic: str) -> Any:
    name = topology.source_for_topic(topic)
    return None if name is None else topology.nodes.get(name)


def _kind(topology: Topology, topic: str) -> str:
    internal = topology.internal_topics.get(topic)
    return "user" if internal is None else internal.kind


def _pending(topology: Topology, topic: str) -> bool:
    """A repartition topic whose key format nobody chose (it would be the internal one)."""
    source = _source(topology, topic)
    return (_kind(topology, topic) == "repartition" and source is not None
            and source.key_serde is None)


def _set_key_serde(topology: Topology, topic: str, serde: Serde[Any]) -> None:
    from .topology import SinkDef

    _source(topology, topic).key_serde = serde
    for node in topology.nodes.values():
        if isinstance(node, SinkDef) and node.topic == topic and node.key_serde is None:
            node.key_serde = serde


def align_key_serdes(topology: Topology) -> list[UnresolvedKeySerde]:
    """Give each pending repartition topic its co-partner's key serde; return what is left.

    Subscription topics of foreign-key joins are partners whose key format is the foreign
    key's serde (resolved by their processors), so they lend none here.
    """
    changed = True
    while changed:  # a topic resolved in one group can lend its serde to another
        changed = False
        for group in topology.copartition_groups:
            topics = _ordered(group)
            pending = [t for t in topics if _pending(topology, t)]
            if not pending:
                continue
            serde = next((source.key_serde for t in topics if t not in pending
                          and _kind(topology, t) != "subscription"
                          and (source := _source(topology, t)) is not None
                          and source.key_serde is not None), None)
            if serde is not None:
                for topic in pending:
                    _set_key_serde(topology, topic, serde)
                changed = True
    unresolved = []
    for group in topology.copartition_groups:
        topics = _ordered(group)
        pending = [t for t in topics if _pending(topology, t)]
        partners = [t for t in topics if t not in pending]
        if pending and partners:
            unresolved.append(UnresolvedKeySerde(getattr(group, "operator", None), pending,
                                                 partners))
    return unresolved


def check_key_serdes(topology: Topology, default_key_serde: Serde[Any] | None) -> None:
    """Align key serdes, then reject the topology if one still needs a default it lacks.

    With a default, the pending topics keep ``key_serde=None``: tasks then write them with
    ``default.key.serde``, as they read the partner topics (``TaskConfig.serdes_for``).
    """
    from .topology import TopologyError

    unresolved = align_key_serdes(topology)
    if unresolved and default_key_serde is None:
        raise TopologyError(unresolved[0].message())
