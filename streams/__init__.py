"""streams: Kafka Streams-style stream processing for Python.

The public names are loaded on first use (PEP 562), so that importing a light part of the
package (``streams.config``, ``streams.serde``, ``streams.broker``, or ``connect``, which uses
them) does not pull in the DSL, the runtime, aiokafka or rocksdict.
``from streams import StreamsBuilder`` works exactly as an eager import would.
"""

from __future__ import annotations

import importlib
import importlib.util
from typing import TYPE_CHECKING

__version__ = "0.1.0"

# public name -> the module that defines it
_LAZY: dict[str, str] = {
    "StreamsBuilder": "streams.dsl.builder",
    "Materialized": "streams.dsl.materialized",
    "Branched": "streams.dsl.branched",
    "Joined": "streams.dsl.joined",
    "TableJoined": "streams.dsl.joined",
    "VersionedRecord": "streams.state.versioned",
    "BufferConfig": "streams.dsl.suppress",
    "Suppressed": "streams.dsl.suppress",
    "EmitStrategy": "streams.dsl.windows",
    "JoinWindows": "streams.dsl.windows",
    "SessionWindows": "streams.dsl.windows",
    "SlidingWindows": "streams.dsl.windows",
    "TimeWindows": "streams.dsl.windows",
    "Processor": "streams.processor.api",
    "ProcessorContext": "streams.processor.api",
    "PunctuationType": "streams.processor.api",
    "Record": "streams.processor.api",
    "ErrorHandlerContext": "streams.processor.errors",
    "HandlerResponse": "streams.processor.errors",
    "StreamsError": "streams.processor.errors",
    "ConsumerRecord": "streams.processor.timestamps",
    "FailOnInvalidTimestamp": "streams.processor.timestamps",
    "LogAndSkipOnInvalidTimestamp": "streams.processor.timestamps",
    "UsePartitionTimeOnInvalidTimestamp": "streams.processor.timestamps",
    "WallclockTimestampExtractor": "streams.processor.timestamps",
    "Serde": "streams.serde",
    "Serdes": "streams.serde",
    "Stores": "streams.state.stores",
    "Topology": "streams.topology.topology",
    "Window": "streams.windowing",
    "Windowed": "streams.windowing",
    "KafkaStreams": "streams.runtime",
    "StreamsConfig": "streams.runtime",
}

if TYPE_CHECKING:  # what type checkers and IDEs see; at run time __getattr__ loads these
    from .dsl.branched import Branched
    from .dsl.builder import StreamsBuilder
    from .dsl.joined import Joined, TableJoined
    from .dsl.materialized import Materialized
    from .dsl.suppress import BufferConfig, Suppressed
    from .dsl.windows import (
        EmitStrategy,
        JoinWindows,
        SessionWindows,
        SlidingWindows,
        TimeWindows,
    )
    from .processor.api import Processor, ProcessorContext, PunctuationType, Record
    from .processor.errors import ErrorHandlerContext, HandlerResponse, StreamsError
    from .processor.timestamps import (
        ConsumerRecord,
        FailOnInvalidTimestamp,
        LogAndSkipOnInvalidTimestamp,
        UsePartitionTimeOnInvalidTimestamp,
        WallclockTimestampExtractor,
    )
    from .runtime import KafkaStreams
    from .runtime import StreamsConfig as StreamsConfig  # public, though not in __all__
    from .serde import Serde, Serdes
    from .state.stores import Stores
    from .state.versioned import VersionedRecord
    from .topology.topology import Topology
    from .windowing import Window, Windowed


def __getattr__(name: str) -> object:
    """Load a public name (or a subpackage, as ``streams.dsl`` after ``import streams``)."""
    module_name = _LAZY.get(name)
    if module_name is not None:
        value = getattr(importlib.import_module(module_name), name)
    elif not name.startswith("_") and importlib.util.find_spec(f"{__name__}.{name}") is not None:
        value = importlib.import_module(f"{__name__}.{name}")
    else:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    globals()[name] = value  # later lookups skip __getattr__
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))


__all__ = [
    "Branched",
    "BufferConfig",
    "ConsumerRecord",
    "EmitStrategy",
    "ErrorHandlerContext",
    "FailOnInvalidTimestamp",
    "HandlerResponse",
    "JoinWindows",
    "Joined",
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
    "TableJoined",
    "TimeWindows",
    "Topology",
    "UsePartitionTimeOnInvalidTimestamp",
    "VersionedRecord",
    "WallclockTimestampExtractor",
    "Window",
    "Windowed",
]
