"""The runtime: ``KafkaStreams`` runs a ``Topology`` on a Kafka cluster through aiokafka."""

from .app import IllegalStateError, KafkaStreams, State
from .config import StreamsConfig

__all__ = ["IllegalStateError", "KafkaStreams", "State", "StreamsConfig"]
