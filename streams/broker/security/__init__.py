"""Broker security: listeners, TLS, SASL (PLAIN, SCRAM), credentials, ACLs and the authorizer.

Handlers ask it (``broker.security.allowed(ctx, ...)``); it knows no handler.
"""

from .listeners import Listener, ListenerError
from .manager import BrokerSecurity
from .sasl import ANONYMOUS, Session

__all__ = ["ANONYMOUS", "BrokerSecurity", "Listener", "ListenerError", "Session"]
