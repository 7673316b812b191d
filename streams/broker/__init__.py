"""The bundled single-node broker that speaks the Apache Kafka wire protocol."""

from .config import BrokerConfig
from .server import Broker

__all__ = ["Broker", "BrokerConfig"]
