"""Listener parsing: `listeners`, `advertised.listeners`, `listener.security.protocol.map`.

Kafka's rules (KafkaConfig / docs "listeners"): each entry is `NAME://host:port`; the name maps to
a security protocol through `listener.security.protocol.map`, whose default maps each protocol
name to itself, so `SASL_SSL://h:p` needs no map. Names are unique; an empty host means all
interfaces. `advertised.listeners` defaults to `listeners`, per listener name.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
_DEFAULT_MAP = {p: p for p in PROTOCOLS}
_ENTRY = re.compile(r"^([A-Za-z0-9_.-]+)://(\[[0-9A-Fa-f:.]*\]|[^:/\s]*):(\d+)$")


class ListenerError(ValueError):
    """A listener setting Kafka would refuse; the message names the key."""


@dataclass(frozen=True, slots=True)
class Listener:
    name: str  # upper case, as Kafka normalises it (ListenerName.normalised)
    protocol: str
    host: str
    port: int
    advertised_host: str
    advertised_port: int

    @property
    def uses_tls(self) -> bool:
        return self.protocol in ("SSL", "SASL_SSL")

    @property
    def uses_sasl(self) -> bool:
        return self.protocol in ("SASL_PLAINTEXT", "SASL_SSL")


def parse_protocol_map(text: str | None) -> dict[str, str]:
    if not text:
        return dict(_DEFAULT_MAP)
    result: dict[str, str] = {}
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        name, sep, protocol = item.partition(":")
        protocol = protocol.strip().upper()
        if not sep or protocol not in PROTOCOLS:
            raise ListenerError(
                f"listener.security.protocol.map: '{item}' is not NAME:PROTOCOL with PROTOCOL "
                f"one of {', '.join(PROTOCOLS)}")
        result[name.strip().upper()] = protocol
    return result


def _entries(key: str, text: str) -> list[tuple[str, str, int]]:
    entries = []
    for item in text.split(","):
        item = item.strip()
        if not item:
            continue
        match = _ENTRY.match(item)
        if not match:
            raise ListenerError(f"{key}: '{item}' is not NAME://host:port")
        host = match.group(2).strip("[]")
        port = int(match.group(3))
        if port > 65535:
            raise ListenerError(f"{key}: port {port} in '{item}' is above 65535")
        entries.append((match.group(1).upper(), host, port))
    names = [name for name, _, _ in entries]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ListenerError(f"{key}: listener name {duplicates[0]} appears more than once")
    return entries


def parse_listeners(listeners: str, advertised: str | None = None,
                    protocol_map: str | None = None,
                    controllers: set[str] | frozenset[str] = frozenset()) -> list[Listener]:
    """The broker's listeners in configuration order (controller listeners map to PLAINTEXT
    when the map does not name them)."""
    mapping = {name: "PLAINTEXT" for name in controllers}
    mapping.update(parse_protocol_map(protocol_map))
    entries = _entries("listeners", listeners)
    if not entries:
        raise ListenerError("listeners: no listener given")
    adv = {name: (host, port) for name, host, port in _entries("advertised.listeners",
                                                                advertised or "")}
    unknown = sorted(set(adv) - {name for name, _, _ in entries})
    if unknown:
        raise ListenerError(f"advertised.listeners: listener {unknown[0]} is not in listeners")
    result = []
    for name, host, port in entries:
        protocol = mapping.get(name)
        if protocol is None:
            raise ListenerError(
                f"listeners: no security protocol for listener {name}; add "
                f"'{name}:<PROTOCOL>' to listener.security.protocol.map")
        adv_host, adv_port = adv.get(name, (host, port))
        result.append(Listener(name, protocol, host, port, adv_host, adv_port))
    return result
