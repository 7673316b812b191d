"""streams: Kafka Streams-style stream processing for Python."""

from .dsl.builder import StreamsBuilder
from .dsl.materialized import Materialized
from .processor.api import (
    Processor,
    ProcessorContext,
    PunctuationType,
    Record,
)
from .serde import Serde, Serdes
from .state.stores import Stores
from .topology.topology import Topology
from .windowing import Window, Windowed

__version__ = "0.1.0"

__all__ = [
    "Materialized",
    "Processor",
    "ProcessorContext",
    "PunctuationType",
    "Record",
    "Serde",
    "Serdes",
    "Stores",
    "StreamsBuilder",
    "Topology",
    "Window",
    "Windowed",
]
