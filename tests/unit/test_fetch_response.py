"""The hand-written FetchResponse encoder writes exactly what kio writes, for every version the
broker serves; file slices take the place of the record bytes."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from streams.broker.handlers.fetch_response import encode_fetch
from streams.broker.protocol import RequestContext, encode_response
from streams.broker.storage.slices import FileSlice


def _body(records: list[bytes | None]) -> dict:
    partitions = [
        {"partition_index": i, "error_code": 1 if r is None else 0, "high_watermark": 1000 + i,
         "last_stable_offset": 900 + i, "log_start_offset": 7, "preferred_read_replica": -1,
         "aborted_transactions": None if i % 2 else [
             {"producer_id": 5, "first_offset": 11}, {"producer_id": 6, "first_offset": 12}],
         "records": r}
        for i, r in enumerate(records)
    ]
    return {"throttle_time": 0, "error_code": 0, "session_id": 0,
            "responses": [{"topic": "tópic-a", "partitions": partitions},
                          {"topic": "b", "partitions": []}]}


@pytest.mark.parametrize("version", range(4, 13))
def test_same_bytes_as_kio(version: int) -> None:
    body = _body([b"x" * 300, None, b"", os.urandom(70_000)])
    ctx = RequestContext(1, version, 12345, "c", version >= 12)
    frame = encode_fetch(version, 12345, body)
    assert b"".join(bytes(p) for p in frame.parts) == encode_response(ctx, body)  # type: ignore[arg-type]


@pytest.mark.parametrize("version", [4, 11, 12])
def test_file_slices_stand_for_their_bytes(version: int, tmp_path: Path) -> None:
    data = os.urandom(5000)
    path = tmp_path / "seg.log"
    path.write_bytes(data)
    fd = os.open(path, os.O_RDONLY)
    try:
        sliced = encode_fetch(version, 1, _body([FileSlice(fd, 100, 3000), None,
                                                 FileSlice(fd, 0, 10)]))
        sliced._pinned = False  # not pinned through the cache in this test
        inline = encode_fetch(version, 1, _body([data[100:3100], None, data[:10]]))
        written = b"".join(os.pread(p.fd, p.size, p.position) if isinstance(p, FileSlice)
                           else bytes(p) for p in sliced.parts)
        assert written == b"".join(bytes(p) for p in inline.parts)  # type: ignore[arg-type]
        assert len(sliced) == len(written)
        assert sum(isinstance(p, FileSlice) for p in sliced.parts) == 2
    finally:
        os.close(fd)
