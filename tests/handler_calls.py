"""The bundled broker's request handlers called in-process, as its server calls them: requests
built as kio entities, responses encoded and decoded again as a client reads them (a field a
version lacks, or one that cannot be null, shows up). For the unit tests of the group APIs."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from kio.index import load_request_schema, load_response_schema
from kio.serial import entity_reader

from streams.broker import Broker, BrokerConfig
from streams.broker.handlers import REGISTRY
from streams.broker.protocol import (
    RequestContext,
    build_entity,
    encode_response,
    request_is_flexible,
)


async def call(broker: Broker, key: int, version: int, fields: dict[str, Any]) -> Any:
    """One request of API ``key`` at ``version`` with ``fields``: the decoded response."""
    request = build_entity(load_request_schema(key, version), fields)
    ctx = RequestContext(key, version, 7, "test-client", request_is_flexible(key, version))
    body = await REGISTRY[key].func(broker, ctx, request)
    assert body is not None
    frame = encode_response(ctx, body)
    pos = 8 + (1 if ctx.flexible else 0)  # size, correlation id, header tags
    response, _ = entity_reader(load_response_schema(key, version))(frame, pos)
    return response


def run_broker(tmp_path: Path, config: dict[str, Any], body: Callable[[Broker], Awaitable[Any]],
               topics: dict[str, int], prepare: Callable[[Broker], Any] | None = None) -> None:
    """A broker (no network) with ``config`` and ``topics``, its group coordinator started;
    ``prepare`` runs before the coordinator starts, ``body`` within 10 s after."""

    async def main() -> None:
        broker = Broker(BrokerConfig.from_mapping({"data_dir": tmp_path, **config}))
        if prepare is not None:
            prepare(broker)
        broker.topics.load()
        await broker.groups.start()
        try:
            for name, partitions in topics.items():
                broker.topics.create(name, partitions)
            await asyncio.wait_for(body(broker), 10)
        finally:
            await broker.groups.stop()
            await broker.stop()

    asyncio.run(main())
