"""Which failures make the stream thread rejoin with fresh clients instead of failing: a
lost or timed-out broker, also when aiokafka's producer sender died of one (a cluster node
SIGKILLed while the sender looked up a coordinator: make test-cluster, broker_kill)."""

from __future__ import annotations

from aiokafka.errors import (
    KafkaConnectionError,
    KafkaError,
    NotLeaderForPartitionError,
    TopicAuthorizationFailedError,
)

from streams.runtime.thread import lost_broker


def batch_delivery_failure(cause: BaseException) -> KafkaError:
    """What aiokafka's sender routine raises, and fails every batch with, when it dies."""
    try:
        try:
            raise cause
        except Exception as exc:
            raise KafkaError("Unexpected error during batch delivery") from exc
    except KafkaError as failure:
        return failure


def test_a_sender_that_died_of_a_lost_connection_means_a_lost_broker() -> None:
    assert lost_broker(batch_delivery_failure(KafkaConnectionError("closed")))
    assert lost_broker(batch_delivery_failure(ConnectionResetError(104, "reset by peer")))


def test_retriable_and_connection_errors_mean_a_lost_broker() -> None:
    assert lost_broker(KafkaConnectionError("closed"))
    assert lost_broker(NotLeaderForPartitionError())


def test_other_failures_stay_failures() -> None:
    assert not lost_broker(TopicAuthorizationFailedError())
    assert not lost_broker(batch_delivery_failure(ValueError("a bug")))
    assert not lost_broker(KafkaError("Unexpected error during batch delivery"))
