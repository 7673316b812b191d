"""Our broker alone, for differences the reference tests found: these run without Java.

Each test pins the answer Apache Kafka gave in test_protocol_diff.py.
"""

from __future__ import annotations

from helpers import EmbeddedBroker

from streams.broker.records import ATTR_CONTROL, ATTR_TRANSACTIONAL, Record, build_batch

from .compare import Side
from .steps import (
    OFFSET_COMMIT,
    batch,
    create_topic,
    create_topics,
    fetch,
    init_producer_id,
    list_offsets,
    partition_answer,
    produce,
    topic_spec,
)
from .wire import api_versions


def side(broker: EmbeddedBroker) -> Side:
    versions = {key: high for key, (_low, high) in api_versions(broker.bootstrap).items()}
    return Side("ours", broker.bootstrap, versions)


def test_create_topics_refuses_a_name_given_twice(bundled: EmbeddedBroker) -> None:
    ours = side(bundled)
    try:
        answer = create_topics(ours, topic_spec("x"), topic_spec("y"), topic_spec("y"),
                               topic_spec("z"))
    finally:
        ours.close()
    assert [(t["name"], t["error_code"]) for t in answer["topics"]] == [
        ("x", "none"), ("z", "none"), ("y", "invalid_request")]
    assert "y" not in bundled.broker.topics.topics


def _produce_errors(broker: EmbeddedBroker, **kwargs: object) -> list[tuple[str, int]]:
    ours = side(broker)
    try:
        if "t" not in broker.broker.topics.topics:
            create_topic(ours, "t")
        answer = produce(ours, "t", **kwargs)  # type: ignore[arg-type]
    finally:
        ours.close()
    part = partition_answer(answer)
    return [(part["error_code"], part["log_start_offset"])]


def test_produce_refuses_invalid_acks(bundled: EmbeddedBroker) -> None:
    assert _produce_errors(bundled, data=batch(), acks=2) == [("invalid_required_acks", -1)]
    assert bundled.broker.topics.partition("t", 0).next_offset == 0


def test_produce_refuses_transactional_records_without_transactional_id(
        bundled: EmbeddedBroker) -> None:
    data = batch(producer_id=5, producer_epoch=0, base_sequence=0,
                 attributes=ATTR_TRANSACTIONAL)
    assert _produce_errors(bundled, data=data) == [("transactional_id_authorization_failed", -1)]


def test_produce_record_errors_name_the_log_start_offset(bundled: EmbeddedBroker) -> None:
    marker = build_batch([Record(b"\0\0\0\1", b"\0\0\0\0\0\0", 1)], attributes=ATTR_CONTROL)
    assert _produce_errors(bundled, data=marker) == [("invalid_record", 0)]
    out_of_order = batch(producer_id=1, producer_epoch=0, base_sequence=7)
    assert _produce_errors(bundled, data=out_of_order)[0][1] == 0


def test_error_partitions_answer_unknown_offsets(bundled: EmbeddedBroker) -> None:
    ours = side(bundled)
    try:
        create_topic(ours, "t")
        produce(ours, "t", batch(3))
        out_of_range = fetch(ours, "t", offset=99)["responses"][0]["partitions"][0]
        not_found = partition_answer(list_offsets(ours, "t", 5_000_000))
    finally:
        ours.close()
    assert out_of_range["error_code"] == "offset_out_of_range"
    assert (out_of_range["high_watermark"], out_of_range["last_stable_offset"],
            out_of_range["log_start_offset"]) == (-1, -1, -1)
    assert (not_found["offset"], not_found["leader_epoch"]) == (-1, -1)


def test_offset_commit_v9_to_an_unknown_group_is_group_id_not_found(
        bundled: EmbeddedBroker) -> None:
    ours = side(bundled)
    body = {"group_id": "nobody", "generation_id_or_member_epoch": 3, "member_id": "m",
            "group_instance_id": None, "topics": [{"name": "t", "partitions": [
                {"partition_index": 0, "committed_offset": 1, "committed_leader_epoch": -1,
                 "committed_metadata": None}]}]}
    try:
        create_topic(ours, "t")
        codes = [ours.call(OFFSET_COMMIT, body, version)["topics"][0]["partitions"][0][
            "error_code"] for version in (9, 8)]
    finally:
        ours.close()
    assert codes == ["group_id_not_found", "illegal_generation"]


def test_unverified_transactional_produce_answers_no_log_start_offset(
        bundled: EmbeddedBroker) -> None:
    ours = side(bundled)
    try:
        create_topic(ours, "t")
        init = init_producer_id(ours, "tx")
        data = batch(producer_id=init["producer_id"], producer_epoch=init["producer_epoch"],
                     base_sequence=0, attributes=ATTR_TRANSACTIONAL)
        part = partition_answer(produce(ours, "t", data, transactional_id="tx"))
    finally:
        ours.close()
    assert part["error_code"] != "none" and part["log_start_offset"] == -1
