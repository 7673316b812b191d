"""Testing topologies without a broker."""

from .driver import (
           NoSuchElementError,
           TestInputTopic,
           TestOutputTopic,
           TestRecord,
           TopologyTestDriver,
)

__all__ = ["NoSuchElementError", "TestInputTopic", "TestOutputTopic", "TestRecord",
           "TopologyTestDriver"]
