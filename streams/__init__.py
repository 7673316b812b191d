"""streams: Kafka Streams-style stream processing for Python."""

from .dsl.builder import StreamsBuilder
from .dsl.materialized import Materialized
from .dsl.suppress import BufferConfig, Suppressed
from .dsl.windows import (
    EmitStrategy,
    JoinWindows,
    SessionWindows,
    SlidingWindows,
    TimeWindows,
)
from .processor.api import (
    Processor,
    ProcessorContext,
    PunctuationType,
    Record,
)
from .processor.errors import ErrorHandlerContext, HandlerResponse, StreamsError
from .processor.timestamps import (
    ConsumerRecord,
    FailOnInvalidTimestamp,
    LogAndSkipOnInvalidTimestamp,
    UsePartitionTimeOnInvalidTimestamp,
    WallclockTimestampExtractor,
)
from .serde import Serde, Serdes
from .state.stores import Stores
from .topology.topology import Topology
from .windowing import Window, Windowed

__version__ = "0.1.0"


def __getattr__(name: str) -> object:
    """``streams.KafkaStreams`` is loaded on first use: it pulls in aiokafka."""
    if name in ("KafkaStreams", "StreamsConfig"):
        from . import runtime

        return getattr(runtime, name)
    raise AttributeError(f"module 'streams' has no attribute {name!r}")


__all__ = [
    "BufferConfig",
    "ConsumerRecord",
    "EmitStrategy",
    "ErrorHandlerContext",
    "FailOnInvalidTimestamp",
    "HandlerResponse",
    "JoinWindows",
    "KafkaStreams",
    "LogAndSkipOnInvalidTimestamp",
    "Materialized",
    "Processor",
    "ProcessorContext",
    "PunctuationType",
    "Record",
    "Serde",
    "Serdes",
    "SessionWindows",
    "SlidingWindows",
    "Stores",
    "StreamsError",
    "Suppressed",
    "StreamsBuilder",
    "TimeWindows",
    "Topology",
    "UsePartitionTimeOnInvalidTimestamp",
    "WallclockTimestampExtractor",
    "Window",
    "Windowed",
]
