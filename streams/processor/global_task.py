"""Global stores: fed from every partition of their topic, readable by every task.

A global store's processor only maintains the store (it has no children). Global stores are
bootstrapped before normal processing starts and are not synchronised with stream time.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..state.stores import StoreInitContext
from .api import ProcessorContext, Record, RecordMetadata, TaskId
from .task import InboundRecord, StreamsError, TaskConfig


class _GlobalContext(ProcessorContext):
    def __init__(self, feeder: GlobalStoreFeeder) -> None:
        self.feeder = feeder
        self.application_id = feeder.config.application_id
        self.task_id = TaskId(-1, -1)
        self.app_config = feeder.config.app_config
        self.metadata: RecordMetadata | None = None

    def forward(self, record: Record[Any, Any], child_name: str | None = None) -> None:
        # A global store processor has no children (Kafka forwards to none): the table source
        # behind ``global_table`` forwards its changes, and they go nowhere.
        if child_name is not None:
            raise StreamsError(f"a global store processor has no child named {child_name!r}")

    def schedule(self, interval_ms: int, punctuation_type: Any, callback: Any) -> Any:
        raise StreamsError("global store processors cannot schedule punctuators")

    def get_state_store(self, name: str) -> Any:
        return self.feeder.stores[name]

    def record_metadata(self) -> RecordMetadata | None:
        return self.metadata

    def current_stream_time_ms(self) -> int:
        return -1

    def current_system_time_ms(self) -> int:
        return self.feeder.clock()

    def commit(self) -> None:
        return None


class GlobalStoreFeeder:
    def __init__(self, topology: Any, ctx: StoreInitContext, config: TaskConfig,
                 clock: Callable[[], int]) -> None:
        self.config = config
        self.clock = clock
        self.stores: dict[str, Any] = {}
        self.context = _GlobalContext(self)
        self._by_topic: dict[str, tuple[Any, Any]] = {}
        for name, gdef in topology.global_stores.items():
            self.stores[name] = gdef.store.build(ctx)
            processor = gdef.processor.supplier()
            for topic in gdef.source.topics:
                self._by_topic[topic] = (gdef.source, processor)
        for _source, processor in self._by_topic.values():
            processor.init(self.context)

    def reads(self, topic: str) -> bool:
        return topic in self._by_topic

    def topics(self) -> list[str]:
        return list(self._by_topic)

    def process(self, inbound: InboundRecord) -> None:
        source, processor = self._by_topic[inbound.topic]
        key_serde = source.key_serde or self.config.default_key_serde
        value_serde = source.value_serde or self.config.default_value_serde
        key = key_serde.deserialize(inbound.topic, inbound.key)
        value = value_serde.deserialize(inbound.topic, inbound.value)
        self.context.metadata = RecordMetadata(inbound.topic, inbound.partition, inbound.offset)
        processor.process(Record(key, value, inbound.timestamp, inbound.headers))
        for store in self.stores.values():
            store.flush()
            commit = getattr(store, "commit", None)
            if commit is not None:
                commit()

    def close(self) -> None:
        for store in self.stores.values():
            store.close()
