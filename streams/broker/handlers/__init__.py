"""The API handler registry.

Each handler module registers coroutines with ``@handles(api_key, min_version, max_version)``.
ApiVersions advertises exactly what is registered here, so a version range is written once.
A handler receives the broker, the request context and the kio request entity, and returns a
plain dict shaped like the response schema (or ``None`` when no response is sent: acks=0).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ..protocol import RequestContext
    from ..server import Broker

Handler = Callable[["Broker", "RequestContext", Any], Awaitable[dict[str, Any] | None]]


@dataclass(frozen=True, slots=True)
class HandlerSpec:
    api_key: int
    min_version: int
    max_version: int
    func: Handler


REGISTRY: dict[int, HandlerSpec] = {}


def handles(api_key: int, min_version: int, max_version: int) -> Callable[[Handler], Handler]:
    def register(func: Handler) -> Handler:
        if api_key in REGISTRY:
            raise RuntimeError(f"api key {api_key} registered twice")
        REGISTRY[api_key] = HandlerSpec(api_key, min_version, max_version, func)
        return func

    return register


def supported_versions() -> dict[int, tuple[int, int]]:
    return {k: (s.min_version, s.max_version) for k, s in REGISTRY.items()}


def load_all() -> None:
    """Import every handler module so that it registers itself."""
    from . import (  # noqa: F401
        acls,
        admin,
        cluster,
        cluster_admin,
        consumer_groups,
        fetch,
        groups,
        produce,
        sasl,
        share_groups,
        share_offsets,
        transactions,
    )
