"""Well-framed requests with a body the schema forbids: one log line, no traceback.

Flexible versions encode a null array as a compact length of 0; kio decodes it as None even where
the schema says non-nullable, and handlers used to crash on it with a full traceback. Kafka's
parser refuses such a body ("non-nullable field ... was serialized as null") and closes the
connection, which is what the broker must do too, while it keeps serving everyone else.
"""

from __future__ import annotations

import logging
import struct

import pytest
from test_bad_input import api_versions_v0, exchange, framed, header, lines_for

from streams.broker import handlers
from streams.broker.handlers import HandlerSpec

NULL_ARRAY = b"\x00"  # compact array length 0 = null
TAGS = b"\x00"  # empty tag buffer

# api key, version, body: a null where each schema declares a non-nullable array.
NULL_ARRAYS = {
    "CreateTopics v5 topics": (19, 5, NULL_ARRAY + struct.pack(">ib", 1000, 0) + TAGS),
    "DeleteTopics v4 topic_names": (20, 4, NULL_ARRAY + struct.pack(">i", 1000) + TAGS),
    "DeleteRecords v2 topics": (21, 2, NULL_ARRAY + struct.pack(">i", 1000) + TAGS),
    "CreatePartitions v2 topics": (37, 2, NULL_ARRAY + struct.pack(">ib", 1000, 0) + TAGS),
    "DeleteGroups v2 groups_names": (42, 2, NULL_ARRAY + TAGS),
    "ListOffsets v6 topics": (2, 6, struct.pack(">ib", -1, 0) + NULL_ARRAY + TAGS),
    "OffsetFetch v8 groups": (9, 8, NULL_ARRAY + b"\x00" + TAGS),
    "CreateAcls v2 creations": (30, 2, NULL_ARRAY + TAGS),
}


def _tracebacks(records: list[logging.LogRecord]) -> list[str]:
    return [r.getMessage() for r in records
            if r.exc_info or r.exc_text or "Traceback" in r.getMessage()]


@pytest.mark.parametrize("name", sorted(NULL_ARRAYS))
def test_null_in_a_non_nullable_field_closes_with_one_line(broker, caplog, name) -> None:
    caplog.set_level(logging.INFO)
    key, version, body = NULL_ARRAYS[name]
    since = len(caplog.records)
    result = exchange(broker.port, framed(header(key, version, 77) + body))
    assert result.responses() == []  # refused while parsing, like Kafka: connection closed
    lines = lines_for(caplog, since, result)
    assert len(lines) == 1, [r.getMessage() for r in lines]
    assert "non-nullable" in lines[0].getMessage()
    assert _tracebacks(caplog.records[since:]) == []
    assert api_versions_v0(broker.port) == handlers.supported_versions()


def test_a_failing_handler_logs_one_line_and_closes(broker, caplog, monkeypatch) -> None:
    """The dispatcher's backstop: whatever a handler raises becomes one line, not a traceback."""

    async def broken(broker, ctx, request):
        raise TypeError("'NoneType' object is not iterable")

    spec = handlers.REGISTRY[60]
    monkeypatch.setitem(handlers.REGISTRY, 60, HandlerSpec(60, spec.min_version,
                                                           spec.max_version, broken))
    caplog.set_level(logging.INFO)
    since = len(caplog.records)
    # DescribeCluster v0, then ApiVersions v0 on the same connection: nothing after the
    # failed request is answered, as the connection is closed.
    body = b"\x00" + TAGS  # include_cluster_authorized_operations=false
    result = exchange(broker.port, framed(header(60, 0, 5) + body) + framed(header(18, 0, 6)))
    assert [corr for corr, _ in result.responses()] == []
    lines = lines_for(caplog, since, result)
    assert len(lines) == 1, [r.getMessage() for r in lines]
    assert "TypeError" in lines[0].getMessage()
    assert _tracebacks(caplog.records[since:]) == []
    monkeypatch.undo()
    assert api_versions_v0(broker.port) == handlers.supported_versions()
