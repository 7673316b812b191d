"""The broker's security state: listeners, TLS contexts, SASL, credentials, the authorizer.

The server asks it for each listener's SSL context, a Session per connection, and whether a
request may pass before authentication; handlers ask it `allowed(ctx, operation, resource_type,
name)`. Per-listener values follow Kafka's precedence: `listener.name.<listener>.<key>`, then the
broker-wide `<key>` (for JAAS: `listener.name.<listener>.<mechanism>.sasl.jaas.config` only; an
unprefixed broker `sasl.jaas.config` is ignored, as Kafka ignores it).
"""

from __future__ import annotations

import logging
import ssl
from typing import TYPE_CHECKING, Any

from pydantic import SecretStr

from ..protocol import ProtocolError, RequestContext, decode_body, encode_response
from .authorizer import AUTHORIZER_CLASSES, OPERATIONS, RESOURCE_TYPES, AclStore, Authorizer
from .jaas import JaasError, plain_users
from .listeners import Listener, ListenerError, parse_listeners
from .sasl import (
    ILLEGAL_SASL_STATE,
    SASL_AUTHENTICATION_FAILED,
    SUPPORTED_MECHANISMS,
    UNSUPPORTED_SASL_MECHANISM,
    AuthenticationFailed,
    Session,
    new_mechanism,
)
from .scram import ScramStore
from .tls import PrincipalMapper, server_context, subject_dn

if TYPE_CHECKING:
    from ..config import BrokerConfig

log = logging.getLogger("streams.broker.security")
audit_log = logging.getLogger("streams.broker.authorizer")
OPERATION_NAMES = {code: name.title().replace("_", "") for name, code in OPERATIONS.items()}
RESOURCE_NAMES = {code: name.title().replace("_", "") for name, code in RESOURCE_TYPES.items()}

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36


class BrokerSecurity:
    def __init__(self, config: BrokerConfig) -> None:
        self.config = config
        if config.listeners:
            controllers = {n.strip().upper() for n in
                           (config.controller_listener_names or "").split(",") if n.strip()}
            self.listeners = [
                listener for listener in parse_listeners(
                    config.listeners, config.advertised_listeners,
                    config.listener_security_protocol_map, controllers)
                if listener.name not in controllers]
            if not self.listeners:
                raise ListenerError("listeners: every listener is a controller listener "
                                    "(controller.listener.names); add one for clients")
        else:
            advertised = config.advertised_host or config.host
            self.listeners = [Listener("PLAINTEXT", "PLAINTEXT", config.host, config.port,
                                       advertised, config.port)]
        self.contexts: dict[str, ssl.SSLContext] = {}
        self.mappers: dict[str, PrincipalMapper] = {}
        self.mechanisms: dict[str, tuple[str, ...]] = {}
        self.plain: dict[str, dict[str, str]] = {}
        if config.sasl_jaas_config is not None:
            log.warning("sasl.jaas.config without a listener.name.<listener>.<mechanism>. "
                        "prefix is ignored on a broker (as in Kafka)")
        for listener in self.listeners:
            self._configure(listener)
        self.scram = ScramStore(config.data_dir)
        self.authorizer: Authorizer | None = None
        if config.authorizer_class_name:
            if config.authorizer_class_name not in AUTHORIZER_CLASSES:
                raise ListenerError(
                    f"authorizer.class.name={config.authorizer_class_name}: supported are "
                    + " and ".join(AUTHORIZER_CLASSES))
            self.authorizer = Authorizer(AclStore(config.data_dir), config.super_users,
                                         config.allow_everyone_if_no_acl_found)

    def get(self, listener: str, key: str) -> str | None:
        """The listener's value of a Kafka key (override first), secrets unwrapped."""
        override = self.config.listener_name.get(f"{listener.lower()}.{key}")
        value: Any = override
        if value is None:
            value = getattr(self.config, key.replace(".", "_"), None)
        if isinstance(value, SecretStr):
            value = value.get_secret_value()
        return None if value is None else str(value)

    def _configure(self, listener: Listener) -> None:
        name = listener.name

        # On SASL_SSL only listener.name.<l>.ssl.client.auth counts (Kafka ignores the
        # broker-wide value there, with a warning).
        sasl_ssl_default_auth = listener.uses_tls and listener.uses_sasl and \
            self.config.listener_name.get(f"{name.lower()}.ssl.client.auth") is None

        def get(key: str) -> str | None:
            if key == "ssl.client.auth" and sasl_ssl_default_auth:
                return "none"
            return self.get(name, key)

        if listener.uses_tls:
            if sasl_ssl_default_auth and self.config.ssl_client_auth != "none":
                log.warning("ssl.client.auth is ignored on SASL_SSL listener %s; set "
                            "listener.name.%s.ssl.client.auth (as in Kafka)", name, name.lower())
            self.contexts[name] = server_context(get, name)
            self.mappers[name] = PrincipalMapper(get("ssl.principal.mapping.rules"))
        if listener.uses_sasl:
            enabled = tuple(m.strip().upper() for m in
                            (get("sasl.enabled.mechanisms") or "").split(",") if m.strip())
            unsupported = [m for m in enabled if m not in SUPPORTED_MECHANISMS]
            if unsupported or not enabled:
                raise ListenerError(
                    f"sasl.enabled.mechanisms for listener {name}: "
                    f"{','.join(unsupported) or '(none)'} not supported; use "
                    + ", ".join(SUPPORTED_MECHANISMS))
            self.mechanisms[name] = enabled
            if "PLAIN" in enabled:
                key = f"listener.name.{name.lower()}.plain.sasl.jaas.config"
                jaas = self.config.listener_name.get(f"{name.lower()}.plain.sasl.jaas.config")
                if jaas is None:
                    raise ListenerError(f"PLAIN is enabled on listener {name} but {key} is not "
                                        "set (user_<name>=\"<password>\" entries)")
                try:
                    self.plain[name] = plain_users(jaas.get_secret_value(), key)
                except JaasError as exc:
                    raise ListenerError(str(exc)) from None

    def load(self) -> None:
        self.scram.load()
        if self.authorizer is not None:
            self.authorizer.store.load()

    # -- connections ------------------------------------------------------------------------

    def new_session(self, listener: Listener, writer: Any) -> Session:
        peer = writer.get_extra_info("peername")
        host = peer[0] if isinstance(peer, tuple) else ""
        session = Session(listener.name, listener.protocol, host,
                          authenticated=not listener.uses_sasl)
        if listener.protocol == "SSL":
            ssl_object = writer.get_extra_info("ssl_object")
            cert = ssl_object.getpeercert() if ssl_object is not None else None
            if cert:
                session.principal = "User:" + self.mappers[listener.name].name(subject_dn(cert))
        return session

    def before_authentication(self, session: Session, ctx: RequestContext, frame: bytes,
                              pos: int) -> bytes | None:
        """The answer to a request on a connection not yet authenticated, or None to let it
        through (ApiVersions). Raises ProtocolError to close the connection unanswered."""
        if ctx.api_key == API_VERSIONS and not session.handshaken:
            return None
        if ctx.api_key == SASL_HANDSHAKE and not session.handshaken:
            return self._handshake(session, ctx, decode_body(ctx, frame, pos))
        if ctx.api_key == SASL_AUTHENTICATE and session.mechanism is not None:
            return self._authenticate(session, ctx, decode_body(ctx, frame, pos))
        if session.handshaken:
            # Kafka (SaslServerAuthenticator, AUTHENTICATE state) answers the request with its
            # error response (ILLEGAL_SASL_STATE where the schema has an error code), then closes.
            log.warning("closing connection from %s: unexpected request api_key=%d while "
                        "authenticating (client %r)", session.host, ctx.api_key, ctx.client_id)
            session.close_after_response = True
            # Fields the body leaves out get the schema's defaults; InitProducerId's error
            # response also says "no epoch" (-1), as Kafka's getErrorResponse does.
            return encode_response(ctx, {
                "error_code": ILLEGAL_SASL_STATE, "producer_epoch": -1,
                "error_message": f"Unexpected Kafka request of type {ctx.api_key} during SASL "
                                 "authentication."})
        raise ProtocolError(f"Unexpected Kafka request of type {ctx.api_key} during SASL "
                            f"handshake (client {ctx.client_id!r}, listener {session.listener})")

    def _handshake(self, session: Session, ctx: RequestContext, request: Any) -> bytes:
        enabled = self.mechanisms[session.listener]
        mechanism = str(request.mechanism)
        session.handshaken = True
        if mechanism not in enabled:
            log.warning("closing connection from %s: SASL mechanism %r is not enabled on "
                        "listener %s", session.host, mechanism[:40], session.listener)
            session.close_after_response = True
            return encode_response(ctx, {"error_code": UNSUPPORTED_SASL_MECHANISM,
                                         "mechanisms": list(enabled)})
        session.mechanism = new_mechanism(mechanism, self.plain.get(session.listener, {}),
                                          self.scram)
        return encode_response(ctx, {"error_code": 0, "mechanisms": list(enabled)})

    def _authenticate(self, session: Session, ctx: RequestContext, request: Any) -> bytes:
        assert session.mechanism is not None
        try:
            answer = session.mechanism.evaluate(bytes(request.auth_bytes))
        except AuthenticationFailed as exc:
            log.info("Failed authentication with /%s (%s)", session.host, exc)
            session.close_after_response = True
            return encode_response(ctx, {"error_code": SASL_AUTHENTICATION_FAILED,
                                         "error_message": str(exc), "auth_bytes": b""})
        if session.mechanism.complete:
            session.authenticated = True
            session.principal = "User:" + session.mechanism.user
        return encode_response(ctx, {"error_code": 0, "error_message": None,
                                     "auth_bytes": answer})

    # -- authorization ----------------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        return self.authorizer is not None

    def allowed(self, ctx: RequestContext, operation: int, resource_type: int,
                name: str, audit: bool = True) -> bool:
        """Whether ctx's principal may do it. A refusal is logged at INFO on
        streams.broker.authorizer, as Kafka's kafka.authorizer.logger does; `audit=False` for
        checks that only filter (an all-topics Metadata), which Kafka does not log either."""
        if self.authorizer is None:
            return True
        session: Session | None = ctx.session
        if session is None:  # the broker's own requests
            return True
        verdict = self.authorizer.authorize(session.principal, session.host, operation,
                                            resource_type, name)
        if not verdict and audit and audit_log.isEnabledFor(logging.INFO):
            audit_log.info("Principal = %s is Denied operation = %s from host = %s on resource "
                           "= %s:%s (api_key %d, client %r)", session.principal,
                           OPERATION_NAMES.get(operation, operation), session.host,
                           RESOURCE_NAMES.get(resource_type, resource_type), name, ctx.api_key,
                           ctx.client_id)
        return verdict

    def authorized_operations(self, ctx: RequestContext, resource_type: int, name: str,
                              supported: tuple[int, ...]) -> int:
        session: Session | None = ctx.session
        if self.authorizer is None or session is None:
            return sum(1 << op for op in supported)
        return sum(1 << op for op in supported if self.authorizer.authorize(
            session.principal, session.host, op, resource_type, name))

    def any_allowed(self, ctx: RequestContext, operation: int, resource_type: int) -> bool:
        session: Session | None = ctx.session
        if self.authorizer is None or session is None:
            return True
        return self.authorizer.any_allowed(session.principal, session.host, operation,
                                           resource_type)
