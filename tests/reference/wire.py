"""A raw, synchronous Kafka client on kio, so both brokers get byte-identical requests.

Client libraries retry, negotiate and hide error codes; a differential test needs the answer
itself. Requests are built from plain dicts (the broker's own dict -> kio entity builder, which
fills Kafka's zero values) and answers come back as plain nested dicts with error codes as
names, ready to normalise and compare.
"""

from __future__ import annotations

import dataclasses
import datetime
import enum
import io
import socket
import struct
import uuid
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader, entity_writer

from streams.broker.protocol import build_entity

API_VERSIONS = 18
_CLIENT_ID = b"reference-diff"


def kio_max_version(api_key: int) -> int:
    """The highest version kio has both schemas for (-1: none); old versions may be missing."""
    best = -1
    for version in range(32):
        try:
            load_request_schema(api_key, version)
            load_response_schema(api_key, version)
        except Exception:
            continue
        best = version
    return best


def to_plain(value: Any) -> Any:
    """A kio entity as nested dicts/lists: error codes by name, durations and times in ms."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [to_plain(v) for v in value]
    if isinstance(value, enum.Enum):
        return value.name
    if isinstance(value, datetime.timedelta):
        return int(value.total_seconds() * 1000)
    if isinstance(value, datetime.datetime):
        return int(value.timestamp() * 1000)
    if isinstance(value, uuid.UUID):
        return str(value)
    return value


class Connection:
    """One TCP connection answering requests in order (no pipelining: scripts are sequential)."""

    def __init__(self, bootstrap: str, timeout: float = 30.0) -> None:
        host, port = bootstrap.rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self.correlation_id = 0

    def close(self) -> None:
        self.sock.close()

    def __enter__(self) -> Connection:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def send(self, api_key: int, version: int, body: dict[str, Any],
             expect_response: bool = True) -> dict[str, Any] | None:
        """Send one request built from ``body``; return the decoded answer as plain dicts."""
        request_type = load_request_schema(api_key, version)
        entity = build_entity(request_type, body)
        self.correlation_id += 1
        out = io.BytesIO()
        out.write(struct.pack(">hhih", api_key, version, self.correlation_id, len(_CLIENT_ID)))
        out.write(_CLIENT_ID)
        if request_type.__flexible__:
            out.write(b"\0")  # header v2: empty tag buffer
        entity_writer(request_type)(out, entity)
        payload = out.getvalue()
        self.sock.sendall(struct.pack(">i", len(payload)) + payload)
        if not expect_response:
            return None
        (size,) = struct.unpack(">i", self._recv(4))
        frame = self._recv(size)
        (correlation_id,) = struct.unpack_from(">i", frame, 0)
        assert correlation_id == self.correlation_id, "answer out of order"
        response_type = load_response_schema(api_key, version)
        pos = 4
        if response_type.__flexible__ and api_key != API_VERSIONS:
            pos += 1  # header v1 tag buffer (KIP-511: ApiVersions answers with header v0)
        decoded, _ = entity_reader(response_type)(frame, pos)
        return to_plain(decoded)

    def _recv(self, size: int) -> bytes:
        data = bytearray()
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise ConnectionError("the broker closed the connection")
            data += chunk
        return bytes(data)


def api_versions(bootstrap: str) -> dict[int, tuple[int, int]]:
    """The broker's advertised ranges (ApiVersions v3)."""
    with Connection(bootstrap) as conn:
        answer = conn.send(API_VERSIONS, 3, {"client_software_name": "reference-diff",
                                             "client_software_version": "1"})
    assert answer is not None and answer["error_code"] == "none", answer
    return {a["api_key"]: (a["min_version"], a["max_version"]) for a in answer["api_keys"]}
