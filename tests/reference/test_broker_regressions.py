"""Our broker alone, for differences the reference tests found: these run without Java.

Each test pins the answer Apache Kafka gave in test_protocol_diff.py.
"""

from __future__ import annotations

from helpers import EmbeddedBroker

from .compare import Side
from .steps import create_topics, topic_spec
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
