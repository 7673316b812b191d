"""DescribeAcls, CreateAcls, DeleteAcls on a broker without an authorizer.

Our broker authorizes nothing (like Kafka without ``authorizer.class.name``), so there is no ACL
store to read or write. Kafka then answers every ACL request with SECURITY_DISABLED; storing ACLs
that nothing enforces would tell operators they are protected when they are not.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import handles

if TYPE_CHECKING:
    from ..protocol import RequestContext
    from ..server import Broker

SECURITY_DISABLED = 54
NO_AUTHORIZER = ("No authorizer is configured on the broker: ACLs are neither stored nor "
                 "enforced (all access is allowed)")


def _disabled() -> dict[str, Any]:
    return {"error_code": SECURITY_DISABLED, "error_message": NO_AUTHORIZER}


@handles(29, 1, 3)
async def describe_acls(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    return {"throttle_time": 0, **_disabled(), "resources": []}


@handles(30, 1, 3)
async def create_acls(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    return {"throttle_time": 0, "results": [_disabled() for _ in request.creations]}


@handles(31, 1, 3)
async def delete_acls(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    return {"throttle_time": 0,
            "filter_results": [{**_disabled(), "matching_acls": []} for _ in request.filters]}
