"""streams: Kafka Streams-style stream processing for Python."""

__version__ = "0.1.0"
