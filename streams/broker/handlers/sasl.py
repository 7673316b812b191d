"""SaslHandshake, SaslAuthenticate, DescribeUserScramCredentials, AlterUserScramCredentials.

Before authentication the server hands SASL requests to broker.security directly (they must be
handled in order, before the next request is admitted). What reaches these handlers comes on an
authenticated connection or a listener without SASL, which Kafka answers ILLEGAL_SASL_STATE.
SCRAM credential management follows KIP-554 (ScramControlManager's checks and messages).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..security.authorizer import ALTER, CLUSTER, CLUSTER_NAME, DESCRIBE
from ..security.scram import BY_CODE, MAX_ITERATIONS, MIN_ITERATIONS, ScramCredential
from . import handles

if TYPE_CHECKING:
    from ..protocol import RequestContext
    from ..server import Broker

ILLEGAL_SASL_STATE = 34
CLUSTER_AUTHORIZATION_FAILED = 31
UNSUPPORTED_SASL_MECHANISM = 33
RESOURCE_NOT_FOUND = 91
DUPLICATE_RESOURCE = 92
UNACCEPTABLE_CREDENTIAL = 93


@handles(17, 1, 1)
async def sasl_handshake(broker: Broker, ctx: RequestContext, request: Any) -> dict[str, Any]:
    return {"error_code": ILLEGAL_SASL_STATE, "mechanisms": []}


@handles(36, 0, 2)
async def sasl_authenticate(broker: Broker, ctx: RequestContext, request: Any
                            ) -> dict[str, Any]:
    return {"error_code": ILLEGAL_SASL_STATE, "auth_bytes": b"",
            "error_message": "SaslAuthenticate request received after successful "
                             "authentication"}


@handles(50, 0, 0)
async def describe_user_scram_credentials(broker: Broker, ctx: RequestContext, request: Any
                                          ) -> dict[str, Any]:
    if not broker.security.allowed(ctx, DESCRIBE, CLUSTER, CLUSTER_NAME):
        return {"throttle_time": 0, "error_code": CLUSTER_AUTHORIZATION_FAILED,
                "error_message": "Cluster authorization failed.", "results": []}
    store = broker.security.scram.users()
    wanted = [u.name for u in request.users] if request.users else None
    results = []
    if wanted is None:
        for user, infos in store.items():
            results.append(_described(user, infos))
    else:
        for user in dict.fromkeys(wanted):
            if wanted.count(user) > 1:
                results.append({"user": user, "error_code": DUPLICATE_RESOURCE,
                                "error_message": f"Cannot describe SCRAM credentials for the "
                                                 f"same user twice in a single request: {user}",
                                "credential_infos": []})
            elif user not in store:
                results.append({"user": user, "error_code": RESOURCE_NOT_FOUND,
                                "error_message": "Attempt to describe a user credential that "
                                                 f"does not exist: {user}",
                                "credential_infos": []})
            else:
                results.append(_described(user, store[user]))
    # Kafka answers an empty (not null) top-level message on success.
    return {"throttle_time": 0, "error_code": 0, "error_message": "", "results": results}


def _described(user: str, infos: list[tuple[str, int]]) -> dict[str, Any]:
    codes = {name: code for code, name in BY_CODE.items()}
    return {"user": user, "error_code": 0, "error_message": None,
            "credential_infos": [{"mechanism": codes[m], "iterations": i} for m, i in infos]}


@handles(51, 0, 0)
async def alter_user_scram_credentials(broker: Broker, ctx: RequestContext, request: Any
                                       ) -> dict[str, Any]:
    names = [d.name for d in request.deletions] + [u.name for u in request.upsertions]
    if not broker.security.allowed(ctx, ALTER, CLUSTER, CLUSTER_NAME):
        return {"throttle_time": 0, "results": [
            {"user": n, "error_code": CLUSTER_AUTHORIZATION_FAILED,
             "error_message": "Cluster authorization failed."} for n in dict.fromkeys(names)]}
    store = broker.security.scram
    errors: dict[str, tuple[int, str]] = {}
    seen: dict[tuple[str, int], int] = {}
    for name in names:
        if not name:
            errors.setdefault(name, (UNACCEPTABLE_CREDENTIAL, "Username must not be empty"))
    for item in (*request.deletions, *request.upsertions):
        key = (item.name, int(item.mechanism))
        seen[key] = seen.get(key, 0) + 1
        if seen[key] > 1:
            errors.setdefault(item.name, (DUPLICATE_RESOURCE, "A user credential cannot be "
                                          "altered twice in the same request"))
        if int(item.mechanism) not in BY_CODE:
            errors.setdefault(item.name, (UNSUPPORTED_SASL_MECHANISM,
                                          "Unknown SCRAM mechanism"))
    for item in request.upsertions:
        if int(item.iterations) < MIN_ITERATIONS:
            errors.setdefault(item.name, (UNACCEPTABLE_CREDENTIAL, "Too few iterations"))
        elif int(item.iterations) > MAX_ITERATIONS:
            errors.setdefault(item.name, (UNACCEPTABLE_CREDENTIAL, "Too many iterations"))
    for item in request.deletions:
        if item.name not in errors and int(item.mechanism) in BY_CODE and \
                store.get(item.name, BY_CODE[int(item.mechanism)]) is None:
            errors[item.name] = (RESOURCE_NOT_FOUND, "Attempt to delete a user credential "
                                 "that does not exist")
    changed = False
    for item in request.deletions:
        if item.name not in errors:
            store.credentials.pop((item.name, BY_CODE[int(item.mechanism)]), None)
            changed = True
    for item in request.upsertions:
        if item.name not in errors:
            mechanism = BY_CODE[int(item.mechanism)]
            store.credentials[(item.name, mechanism)] = ScramCredential.from_salted_password(
                mechanism, bytes(item.salted_password), bytes(item.salt), int(item.iterations))
            changed = True
    if changed:
        store.save()
    return {"throttle_time": 0, "results": [
        {"user": n, "error_code": errors.get(n, (0, None))[0],
         "error_message": errors.get(n, (0, None))[1]} for n in dict.fromkeys(names)]}
