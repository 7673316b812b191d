"""Record a corpus: ordinary sessions of three real clients, captured by the proxy.

Each session covers metadata, produce with every codec, idempotent and transactional produce,
fetch under both isolation levels, a consumer group (join, sync, heartbeat, commit), admin
create/delete topics and describe configs. The recorded frames are reduced to a stable, sorted
selection so that a seed picks the same kind of frame in every run.
"""

from __future__ import annotations

import json
import struct
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from . import sessions
from .proxy import RecordingProxy

PER_GROUP = 2  # frames kept per (client, api key)
HEARTBEAT = 12


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
    return select(frames)


def _count(proxy: RecordingProxy, session: str, api_key: int) -> int:
    return sum(1 for f in list(proxy.frames)
               if f.session == session and f.payload[:2] == api_key.to_bytes(2, "big"))


def select(frames: list[CorpusFrame]) -> list[CorpusFrame]:
    """Up to PER_GROUP frames per (client, key): the smallest and the largest.

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
