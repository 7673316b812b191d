"""Record a corpus: ordinary sessions of three real clients, captured by the proxy.

Each session covers metadata, produce with every codec, idempotent and transactional produce,
fetch under both isolation levels, a consumer group (join, sync, heartbeat, commit), admin
create/delete topics and describe configs; confluent-kafka's also a KIP-848 consumer and a
KIP-932 share consumer. The recorded frames are reduced to a stable, sorted selection so that a
seed picks the same kind of frame in every run. Beside them, whole: the scripted KIP-848 and
share-group sequences of group_seeds.py, with the topic ids they were recorded against.
"""

from __future__ import annotations

import json
import struct
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import group_seeds, sessions
from .proxy import RecordingProxy

PER_GROUP = 2  # frames kept per (client, api key)
HEARTBEAT = 12


def sequences(frames: list[CorpusFrame]) -> dict[str, list[bytes]]:
    """The group seeds' sequences of a corpus, by kind ("share", "consumer"), in order."""
    out: dict[str, list[bytes]] = {}
    for frame in frames:
        if frame.session == group_seeds.SEQUENCE_PREFIX + group_seeds.TOPIC_IDS:
            continue
        if frame.session.startswith(group_seeds.SEQUENCE_PREFIX):
            out.setdefault(frame.session[len(group_seeds.SEQUENCE_PREFIX):], []).append(
                frame.payload)
    return out


@dataclass(frozen=True, slots=True)
class CorpusFrame:
    """A recorded request frame without its size prefix."""

    session: str
    payload: bytes

    @property
    def api_key(self) -> int:
        return struct.unpack_from(">h", self.payload)[0]

    @property
    def api_version(self) -> int:
        return struct.unpack_from(">h", self.payload, 2)[0]


SESSIONS: dict[str, Callable[[str, sessions.Heartbeats], None]] = {
    "aiokafka": sessions.aiokafka_session,
    "kafka-python": sessions.kafka_python_session,
    "confluent-kafka": sessions.confluent_session,
    "confluent-groups": sessions.confluent_groups_session,
}


def record(proxy: RecordingProxy, bootstrap: str) -> list[CorpusFrame]:
    """Run every client session through ``proxy``; returns the selected corpus."""
    for name, session in SESSIONS.items():
        proxy.session = name
        try:
            session(bootstrap, lambda name=name: _count(proxy, name, HEARTBEAT))
        finally:
            proxy.session = None
    frames = [CorpusFrame(f.session, f.payload) for f in proxy.frames if len(f.payload) >= 8]
    group_seeds.prepare(bootstrap)
    host, port = bootstrap.rsplit(":", 1)
    address = (host, int(port))
    sequences = [CorpusFrame(group_seeds.SEQUENCE_PREFIX + kind, payload)
                 for kind, script in group_seeds.SESSIONS.items()
                 for payload in script(address)]
    ids = CorpusFrame(group_seeds.SEQUENCE_PREFIX + group_seeds.TOPIC_IDS,
                      group_seeds.topic_ids(address))
    return [*select(frames), *sequences, ids]


def on_this_broker(frames: list[CorpusFrame], bootstrap: str) -> list[CorpusFrame]:
    """A saved corpus made usable on this (fresh) broker: the group seeds' topics created and
    filled, and the topic ids in their frames replaced by this broker's."""
    kind = group_seeds.SEQUENCE_PREFIX + group_seeds.TOPIC_IDS
    recorded = next((f.payload for f in frames if f.session == kind), None)
    if recorded is None:
        return frames
    group_seeds.prepare(bootstrap)
    host, port = bootstrap.rsplit(":", 1)
    current = group_seeds.topic_ids((host, int(port)))
    out = []
    for frame in frames:
        if frame.session.startswith(group_seeds.SEQUENCE_PREFIX) and frame.session != kind:
            (payload,) = group_seeds.with_topic_ids([frame.payload], recorded, current)
            frame = CorpusFrame(frame.session, payload)
        out.append(frame)
    return out


def _count(proxy: RecordingProxy, session: str, api_key: int) -> int:
    return sum(1 for f in list(proxy.frames)
               if f.session == session and f.payload[:2] == api_key.to_bytes(2, "big"))


def select(frames: list[CorpusFrame]) -> list[CorpusFrame]:
    """Up to PER_GROUP frames per (client, key): the smallest and the largest. (The group
    seeds' sequences are kept whole, in order, beside these.)

    Only the version a client used most for a key is kept (kafka-python sometimes sends one
    early request at another version). Sorting by size keeps the choice stable across runs
    although timestamps, ids and the number of heartbeats and fetches differ between them.
    """
    groups: dict[tuple[str, int], dict[int, list[CorpusFrame]]] = defaultdict(
        lambda: defaultdict(list))
    for frame in frames:
        groups[(frame.session, frame.api_key)][frame.api_version].append(frame)
    out: list[CorpusFrame] = []
    for key in sorted(groups):
        versions = groups[key]
        version = max(versions, key=lambda v: (len(versions[v]), v))
        members = sorted(versions[version], key=lambda f: (len(f.payload), f.payload[8:]))
        if len(members) > PER_GROUP:
            members = [members[0], members[-1]]
        out.extend(members)
    return out


def save(frames: list[CorpusFrame], path: Path) -> None:
    path.write_text(json.dumps([[f.session, f.payload.hex()] for f in frames], indent=0))


def load(path: Path) -> list[CorpusFrame]:
    return [CorpusFrame(s, bytes.fromhex(h)) for s, h in json.loads(path.read_text())]
