"""Kafka client properties -> aiokafka keyword arguments: security and per-client prefixes.

Users connect to a secured cluster with the properties they already use for Kafka's Java clients
(https://kafka.apache.org/documentation/#security_configclients):

    security.protocol=SASL_SSL
    sasl.mechanism=SCRAM-SHA-512
    sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\
        username="alice" password="alice-secret";
    ssl.truststore.type=PEM
    ssl.truststore.location=/etc/kafka/ca.pem

This module checks such a map (every key named in an error, never a secret value), turns it into
aiokafka's ``security_protocol``/``ssl_context``/``sasl_*`` arguments, and resolves Kafka's
client prefixes (``producer.``, ``consumer.``, ``main.consumer.`` ...): a prefixed key overrides
the unprefixed one for that client only. It is a leaf module: pydantic and the stdlib only.
"""

from __future__ import annotations

import contextlib
import difflib
import importlib.util
import logging
import os
import re
import ssl
import tempfile
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import SecretStr

log = logging.getLogger(__name__)


class ClientConfigError(ValueError):
    """A bad client property: the message names the key and the reason, never a secret."""


class Password(SecretStr):
    """A secret config value (Kafka's ``ConfigDef.Type.PASSWORD``): never shown by repr/str.

    ``value()`` is the only way to read it, as with Kafka's ``Password`` class.
    """

    def __repr__(self) -> str:
        return "Password('[hidden]')"

    def __str__(self) -> str:
        return "[hidden]"

    def value(self) -> str:
        return self.get_secret_value()


HIDDEN = "[hidden]"  # what Kafka prints for a password-type value

SECURITY_PROTOCOLS = ("PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL")
# aiokafka speaks these; OAUTHBEARER needs a token provider object, which a properties file
# cannot name for a Python client.
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512", "GSSAPI")

# Kafka's client security keys (SslConfigs, SaslConfigs, CommonClientConfigs).
SECURITY_KEYS = frozenset({
    "security.protocol",
    "ssl.protocol", "ssl.enabled.protocols", "ssl.cipher.suites",
    "ssl.endpoint.identification.algorithm",
    "ssl.keystore.type", "ssl.keystore.location", "ssl.keystore.password", "ssl.keystore.key",
    "ssl.keystore.certificate.chain", "ssl.key.password",
    "ssl.truststore.type", "ssl.truststore.location", "ssl.truststore.password",
    "ssl.truststore.certificates",
    "sasl.mechanism", "sasl.jaas.config", "sasl.kerberos.service.name",
})
# Tuning of the JVM's TLS stack: nothing to map in Python's ssl module. Accepted (a user's
# properties file must load) and logged once as ignored.
JVM_ONLY_KEYS = frozenset({"ssl.provider", "ssl.keymanager.algorithm",
                           "ssl.trustmanager.algorithm", "ssl.secure.random.implementation",
                           "ssl.engine.factory.class"})
# Kafka declares these as Type.PASSWORD (SslConfigs, SaslConfigs).
PASSWORD_KEYS = frozenset({"sasl.jaas.config", "ssl.key.password", "ssl.keystore.password",
                           "ssl.truststore.password", "ssl.keystore.key",
                           "ssl.keystore.certificate.chain", "ssl.truststore.certificates"})


def is_password_key(key: str) -> bool:
    """True for a password-type client key, prefixed or not (``producer.sasl.jaas.config``),
    and for any key whose last part names a password or secret (connector configs)."""
    last = key.rsplit(".", 1)[-1].lower()
    return (any(key == k or key.endswith("." + k) for k in PASSWORD_KEYS)
            or last in ("password", "secret") or key.lower().endswith(("jaas.config",
                                                                       "user.info")))


def mask(config: Mapping[str, Any], secret: Iterable[str] = ()) -> dict[str, Any]:
    """A copy safe to print or return: password-type values become ``[hidden]``.

    A value that is only a config-provider reference (``${file:/etc/kafka/s.properties:pw}``)
    names where the secret lives, not the secret, and is kept.
    """
    extra = set(secret)
    out: dict[str, Any] = {}
    for key, value in config.items():
        if isinstance(value, SecretStr) or ((key in extra or is_password_key(key))
                                            and value is not None
                                            and not _PROVIDER_REF.fullmatch(str(value))):
            out[key] = HIDDEN
        else:
            out[key] = value
    return out


_PROVIDER_REF = re.compile(r"\$\{[^}:]*:[^}]*\}")


# -- JAAS ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class JaasLogin:
    """One login module entry of ``sasl.jaas.config``."""

    module: str
    flag: str
    options: dict[str, str]


PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
_FLAGS = ("required", "requisite", "sufficient", "optional")
_TOKEN = re.compile(r'\s*(?:"((?:[^"\\]|\\.)*)"|([^\s=;"]+)|(=)|(;))', re.S)


def parse_jaas_config(text: str, key: str = "sasl.jaas.config") -> JaasLogin:
    """Parse ``<LoginModule> <flag> k="v" ... ;`` as Kafka's JaasConfig does (one module for a
    client; values quoted or bare words). Errors name ``key`` and never echo the text."""
    tokens: list[tuple[str, str]] = []  # (kind, text): kind is w(ord), s(tring), = or ;
    pos, text = 0, text.strip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if match is None or match.end() == pos:
            raise ClientConfigError(f"'{key}': cannot parse the JAAS entry near character {pos}")
        quoted, word, equals, semi = match.groups()
        if quoted is not None:
            tokens.append(("s", re.sub(r"\\(.)", r"\1", quoted)))
        elif word is not None:
            tokens.append(("w", word))
        elif equals:
            tokens.append(("=", "="))
        elif semi:
            tokens.append((";", ";"))
        pos = match.end()
        while pos < len(text) and text[pos].isspace():
            pos += 1
    if len(tokens) < 3 or tokens[0][0] != "w" or tokens[1][0] != "w":
        raise ClientConfigError(f"'{key}': expected '<LoginModule> required key=\"value\" ...;'")
    module, flag = tokens[0][1], tokens[1][1].lower()
    if flag not in _FLAGS:
        raise ClientConfigError(f"'{key}': login module flag must be one of {', '.join(_FLAGS)}")
    options: dict[str, str] = {}
    rest = tokens[2:]
    i = 0
    while i < len(rest) and rest[i][0] != ";":
        if i + 2 >= len(rest) or rest[i][0] != "w" or rest[i + 1][0] != "=" or \
                rest[i + 2][0] not in "ws":
            raise ClientConfigError(f"'{key}': expected key=\"value\" options after '{module}'")
        options[rest[i][1]] = rest[i + 2][1]
        i += 3
    if i >= len(rest):
        raise ClientConfigError(f"'{key}': the JAAS entry must end with ';'")
    if rest[i + 1:]:
        raise ClientConfigError(f"'{key}': exactly one login module is allowed for a client")
    return JaasLogin(module, flag, options)


# -- validation and mapping ------------------------------------------------------------------

def _text(value: Any) -> str:
    if isinstance(value, SecretStr):
        return value.get_secret_value()
    return "" if value is None else str(value).strip()


def _suggest(key: str, known: Iterable[str]) -> str:
    guess = difflib.get_close_matches(key, sorted(known), n=1)
    return f"; did you mean '{guess[0]}'?" if guess else ""


def check_security(props: Mapping[str, Any], where: str = "") -> dict[str, Any]:
    """Validate security keys (all of ``props`` must be security keys); password-type values
    come back as ``Password``. ``where`` is a key prefix used in messages (``producer.``)."""
    out: dict[str, Any] = {}
    for key, value in props.items():
        name = where + key
        if key in JVM_ONLY_KEYS:
            out[key] = _text(value)
            continue
        if key not in SECURITY_KEYS:
            raise ClientConfigError(f"unknown client config '{name}'"
                                    f"{_suggest(key, SECURITY_KEYS)}")
        if key in PASSWORD_KEYS:
            out[key] = value if isinstance(value, Password) else Password(_text(value))
        else:
            out[key] = _text(value)
    protocol = out.get("security.protocol")
    if protocol is not None:
        out["security.protocol"] = protocol = protocol.upper()
        if protocol not in SECURITY_PROTOCOLS:
            raise ClientConfigError(f"'{where}security.protocol' must be one of "
                                    f"{', '.join(SECURITY_PROTOCOLS)}, not {protocol!r}")
    mechanism = out.get("sasl.mechanism")
    if mechanism is not None:
        out["sasl.mechanism"] = mechanism = mechanism.upper()
        if mechanism not in SASL_MECHANISMS:
            raise ClientConfigError(
                f"'{where}sasl.mechanism' {mechanism!r} is not supported by the Python clients; "
                f"use one of {', '.join(SASL_MECHANISMS)}")
    if "sasl.jaas.config" in out:
        login = parse_jaas_config(out["sasl.jaas.config"].value(), where + "sasl.jaas.config")
        if login.module not in (PLAIN_MODULE, SCRAM_MODULE):
            raise ClientConfigError(
                f"'{where}sasl.jaas.config': login module {login.module} is not supported; "
                f"use {PLAIN_MODULE} or {SCRAM_MODULE}")
        for option in ("username", "password"):
            if not login.options.get(option):
                raise ClientConfigError(f"'{where}sasl.jaas.config': the {login.module} entry "
                                        f"needs a non-empty {option}=\"...\"")
    for kind in ("keystore", "truststore"):
        store_type = out.get(f"ssl.{kind}.type")
        if store_type is not None and store_type.upper() not in ("PEM", "JKS", "PKCS12"):
            raise ClientConfigError(f"'{where}ssl.{kind}.type' must be PEM (or JKS/PKCS12 in "
                                    f"Kafka), not {store_type!r}")
        if store_type is not None and store_type.upper() != "PEM":
            raise ClientConfigError(
                f"'{where}ssl.{kind}.type' {store_type.upper()} cannot be read by Python's ssl; "
                f"convert the store to PEM (KIP-651) and set ssl.{kind}.type=PEM")
        location = out.get(f"ssl.{kind}.location")
        if location and not Path(location).is_file():
            raise ClientConfigError(f"'{where}ssl.{kind}.location': no such file: {location}")
        if out.get(f"ssl.{kind}.password") is not None:
            raise ClientConfigError(
                f"'{where}ssl.{kind}.password' is not used with PEM stores (Kafka rejects it "
                f"too); an encrypted PEM key takes its password from ssl.key.password")
    if ("ssl.keystore.key" in out) != ("ssl.keystore.certificate.chain" in out):
        raise ClientConfigError(f"'{where}ssl.keystore.key' and "
                                f"'{where}ssl.keystore.certificate.chain' go together")
    if "ssl.keystore.key" in out and out.get("ssl.keystore.location"):
        raise ClientConfigError(f"set either '{where}ssl.keystore.location' or "
                                f"'{where}ssl.keystore.key', not both")
    if out.get("ssl.truststore.location") and "ssl.truststore.certificates" in out:
        raise ClientConfigError(f"set either '{where}ssl.truststore.location' or "
                                f"'{where}ssl.truststore.certificates', not both")
    return out


_TLS_VERSIONS = {"TLSV1.2": ssl.TLSVersion.TLSv1_2, "TLSV1.3": ssl.TLSVersion.TLSv1_3,
                 "TLSV1.1": ssl.TLSVersion.TLSv1_1, "TLSV1": ssl.TLSVersion.TLSv1}


def build_ssl_context(props: Mapping[str, Any], where: str = "") -> ssl.SSLContext:
    """A client TLS context from checked ``ssl.*`` keys (PEM stores, KIP-651)."""
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    enabled = [p.strip().upper() for p in
               _text(props.get("ssl.enabled.protocols") or "TLSv1.2,TLSv1.3").split(",")
               if p.strip()]
    unknown = [p for p in enabled if p not in _TLS_VERSIONS]
    if unknown or not enabled:
        raise ClientConfigError(f"'{where}ssl.enabled.protocols': unknown protocol(s) "
                                f"{', '.join(unknown) or '(none)'}; use TLSv1.2, TLSv1.3")
    versions = sorted(_TLS_VERSIONS[p] for p in enabled)
    with contextlib.suppress(ValueError):  # an OpenSSL policy may forbid old versions
        ctx.minimum_version, ctx.maximum_version = versions[0], versions[-1]
    ciphers = _text(props.get("ssl.cipher.suites"))
    if ciphers:
        try:
            ctx.set_ciphers(":".join(c.strip() for c in ciphers.split(",") if c.strip()))
        except ssl.SSLError:
            raise ClientConfigError(f"'{where}ssl.cipher.suites': no cipher OpenSSL knows; "
                                    f"Python takes OpenSSL cipher names") from None
    # Kafka's default is https (verify the broker's host name); an empty value turns it off.
    ctx.check_hostname = _text(props.get("ssl.endpoint.identification.algorithm",
                                         "https")).lower() == "https"
    try:
        if props.get("ssl.truststore.location"):
            ctx.load_verify_locations(cafile=_text(props["ssl.truststore.location"]))
        elif props.get("ssl.truststore.certificates") is not None:
            ctx.load_verify_locations(cadata=_text(props["ssl.truststore.certificates"]))
        else:
            ctx.load_default_certs()
    except (ssl.SSLError, OSError) as exc:
        raise ClientConfigError(f"'{where}ssl.truststore.*': cannot load the CA certificates "
                                f"({type(exc).__name__}: {getattr(exc, 'reason', None) or exc}); "
                                f"a PEM file is expected (convert a JKS or PKCS12 store to PEM)"
                                ) from None
    password = props.get("ssl.key.password")
    key_password = password.value() if isinstance(password, SecretStr) else None
    try:
        if props.get("ssl.keystore.location"):
            ctx.load_cert_chain(_text(props["ssl.keystore.location"]), password=key_password)
        elif props.get("ssl.keystore.key") is not None:
            _load_inline_keystore(ctx, _text(props["ssl.keystore.key"]),
                                  _text(props["ssl.keystore.certificate.chain"]), key_password)
    except (ssl.SSLError, OSError):
        raise ClientConfigError(
            f"'{where}ssl.keystore.*': cannot load the private key and certificate chain "
            f"(a PKCS#8 PEM key with its chain; is ssl.key.password right?)") from None
    ctx.verify_mode = ssl.CERT_REQUIRED
    return ctx


def _load_inline_keystore(ctx: ssl.SSLContext, key: str, chain: str,
                          password: str | None) -> None:
    """Python's ssl loads keys from files only: write them to a private temporary file that
    lives just for the call."""
    fd, path = tempfile.mkstemp(prefix="streams-keystore-", suffix=".pem")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(key.strip() + "\n" + chain.strip() + "\n")
        ctx.load_cert_chain(path, password=password)
    finally:
        os.unlink(path)


_warned: set[str] = set()


def security_kwargs(props: Mapping[str, Any], where: str = "") -> dict[str, Any]:
    """aiokafka's security arguments for checked ``props`` (empty for PLAINTEXT)."""
    for key in sorted(JVM_ONLY_KEYS & set(props)):
        if key not in _warned:
            _warned.add(key)
            log.warning("client config '%s%s' tunes the JVM's TLS stack and is ignored by the "
                        "Python clients", where, key)
    protocol = _text(props.get("security.protocol") or "PLAINTEXT").upper()
    if protocol == "PLAINTEXT":
        return {}
    out: dict[str, Any] = {"security_protocol": protocol}
    if protocol in ("SSL", "SASL_SSL"):
        out["ssl_context"] = build_ssl_context(props, where)
    if protocol.startswith("SASL_"):
        mechanism = _text(props.get("sasl.mechanism") or "GSSAPI").upper()  # Kafka's default
        out["sasl_mechanism"] = mechanism
        if mechanism == "GSSAPI":
            if importlib.util.find_spec("gssapi") is None:
                raise ClientConfigError(
                    f"'{where}sasl.mechanism' is GSSAPI (Kafka's default when unset), which "
                    f"needs the 'gssapi' package; set sasl.mechanism to PLAIN, SCRAM-SHA-256 "
                    f"or SCRAM-SHA-512, or install gssapi")
            out["sasl_kerberos_service_name"] = _text(
                props.get("sasl.kerberos.service.name") or "kafka")
        else:
            jaas = props.get("sasl.jaas.config")
            if jaas is None:
                raise ClientConfigError(f"'{where}sasl.jaas.config' is required for "
                                        f"{protocol} with {mechanism}")
            login = parse_jaas_config(_text(jaas), where + "sasl.jaas.config")
            out["sasl_plain_username"] = login.options["username"]
            out["sasl_plain_password"] = login.options["password"]
    return out


def client_settings(bootstrap_servers: str, *, client_id: str | None = None,
                    request_timeout_ms: int | None = None,
                    security: Mapping[str, Any] | None = None, where: str = "",
                    options: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """The aiokafka arguments a component's clients share (``streams.kafka.clients`` builds
    clients from them): bootstrap servers, ``client.id``, ``request.timeout.ms``, security.

    ``security`` holds Kafka's security properties (``security.protocol``, ``ssl.*``,
    ``sasl.*``), checked here (a bad key or file fails now, naming ``where`` + the key);
    ``options`` holds aiokafka arguments already mapped from client properties
    (``ClientConfigs.kwargs(role)``), applied last.
    """
    out: dict[str, Any] = {"bootstrap_servers": bootstrap_servers}
    if client_id:
        out["client_id"] = client_id
    if request_timeout_ms is not None:
        out["request_timeout_ms"] = request_timeout_ms
    if security:
        out.update(security_kwargs(check_security(security, where), where))
    if options:
        out.update(options)
    return out


# -- other client keys and prefixes ----------------------------------------------------------

def _int(value: Any) -> int:
    return int(str(value).strip())


def _bool(value: Any) -> bool:
    text = str(value).strip().lower()
    if text not in ("true", "false"):
        raise ValueError("expected true or false")
    return text == "true"


def _compression(value: Any) -> str | None:
    text = str(value).strip().lower()
    return None if text == "none" else text


def _acks(value: Any) -> str | int:
    text = str(value).strip().lower()
    return "all" if text in ("all", "-1") else int(text)


# Every Kafka client key the Python clients honour: Kafka's name -> (aiokafka argument,
# converter), written once. A component takes all of a client's keys (Connect's producer.* and
# consumer.*) or picks the ones it lets users tune (Kafka Streams' tables below).
CONNECTION_KEYS: dict[str, tuple[str, Any]] = {
    "bootstrap.servers": ("bootstrap_servers", str),
    "client.id": ("client_id", str),
    "request.timeout.ms": ("request_timeout_ms", _int),
    "retry.backoff.ms": ("retry_backoff_ms", _int),
    "metadata.max.age.ms": ("metadata_max_age_ms", _int),
    "connections.max.idle.ms": ("connections_max_idle_ms", _int),
}
ALL_PRODUCER_KEYS: dict[str, tuple[str, Any]] = {
    **CONNECTION_KEYS,
    "acks": ("acks", _acks),
    "linger.ms": ("linger_ms", _int),
    "batch.size": ("max_batch_size", _int),
    "max.request.size": ("max_request_size", _int),
    "compression.type": ("compression_type", _compression),
    "enable.idempotence": ("enable_idempotence", _bool),
    # KIP-91; aiokafka has no such argument: streams.kafka.clients.producer applies it
    "delivery.timeout.ms": ("delivery_timeout_ms", _int),
}
ALL_CONSUMER_KEYS: dict[str, tuple[str, Any]] = {
    **CONNECTION_KEYS,
    "max.poll.records": ("max_poll_records", _int),
    "fetch.max.bytes": ("fetch_max_bytes", _int),
    "fetch.min.bytes": ("fetch_min_bytes", _int),
    "fetch.max.wait.ms": ("fetch_max_wait_ms", _int),
    "max.partition.fetch.bytes": ("max_partition_fetch_bytes", _int),
    "auto.offset.reset": ("auto_offset_reset", str),
    "isolation.level": ("isolation_level", str),
    "session.timeout.ms": ("session_timeout_ms", _int),
    "heartbeat.interval.ms": ("heartbeat_interval_ms", _int),
    "max.poll.interval.ms": ("max_poll_interval_ms", _int),
    "check.crcs": ("check_crcs", _bool),
    "client.rack": ("client_rack", str),
}


def _pick(table: Mapping[str, tuple[str, Any]], *keys: str) -> dict[str, tuple[str, Any]]:
    return {key: table[key] for key in keys}


# What Kafka Streams users tune; the runtime sets the rest itself (STREAMS_OWNED).
COMMON_KEYS = _pick(CONNECTION_KEYS, "connections.max.idle.ms", "retry.backoff.ms")
PRODUCER_KEYS = {**COMMON_KEYS, **_pick(ALL_PRODUCER_KEYS, "linger.ms", "compression.type",
                                        "max.request.size", "delivery.timeout.ms")}
CONSUMER_KEYS = {**COMMON_KEYS, **_pick(ALL_CONSUMER_KEYS, "fetch.max.bytes", "fetch.min.bytes",
                                        "check.crcs", "client.rack")}


def convert_keys(props: Mapping[str, Any], table: Mapping[str, tuple[str, Any]],
                 where: str = "") -> dict[str, Any]:
    """aiokafka arguments for the non-security keys of ``props`` found in ``table``."""
    out: dict[str, Any] = {}
    for key, value in props.items():
        if key in SECURITY_KEYS or key in JVM_ONLY_KEYS:
            continue
        name, convert = table[key]
        try:
            out[name] = convert(value)
        except ValueError:
            raise ClientConfigError(f"'{where}{key}' = {value!r}: invalid value") from None
    return out


@dataclass(frozen=True)
class ClientRole:
    """One client the runtime creates: which prefixes configure it (most specific last)."""

    name: str
    prefixes: tuple[str, ...]
    table: Mapping[str, tuple[str, Any]]


# Kafka Streams' client prefixes (StreamsConfig.CONSUMER_PREFIX, MAIN_CONSUMER_PREFIX, ...):
# `consumer.` reaches every consumer, `main.consumer.` etc. only theirs and win over it.
STREAMS_ROLES = {
    "main.consumer": ClientRole("main.consumer", ("consumer.", "main.consumer."), CONSUMER_KEYS),
    "restore.consumer": ClientRole("restore.consumer", ("consumer.", "restore.consumer."),
                                   CONSUMER_KEYS),
    "global.consumer": ClientRole("global.consumer", ("consumer.", "global.consumer."),
                                  CONSUMER_KEYS),
    "producer": ClientRole("producer", ("producer.",), PRODUCER_KEYS),
    "admin": ClientRole("admin", ("admin.",), COMMON_KEYS),
}
# Kafka's command-line tools: one --command-config file for whichever client a command uses.
CLI_ROLES = {
    "admin": ClientRole("admin", (), COMMON_KEYS),
    "consumer": ClientRole("consumer", (), CONSUMER_KEYS),
    "producer": ClientRole("producer", (), PRODUCER_KEYS),
}
STREAMS_PREFIXES = ("main.consumer.", "restore.consumer.", "global.consumer.", "consumer.",
                    "producer.", "admin.")
# Keys the Streams runtime sets from its own config (or must own for its guarantees).
STREAMS_OWNED = {
    "bootstrap.servers": "bootstrap.servers", "client.id": "client.id",
    "request.timeout.ms": "request.timeout.ms", "max.poll.records": "max.poll.records",
    "fetch.max.wait.ms": "fetch.max.wait.ms",
    "max.partition.fetch.bytes": "max.partition.fetch.bytes",
    "session.timeout.ms": "session.timeout.ms", "heartbeat.interval.ms": "heartbeat.interval.ms",
    "max.poll.interval.ms": "max.poll.interval.ms", "metadata.max.age.ms": "metadata.max.age.ms",
    "batch.size": "max.batch.size", "transaction.timeout.ms": "transaction.timeout.ms",
    "acks": "processing.guarantee", "enable.idempotence": "processing.guarantee",
    "transactional.id": "application.id", "isolation.level": "processing.guarantee",
    "group.id": "application.id", "enable.auto.commit": "commit.interval.ms",
    "auto.offset.reset": None, "partition.assignment.strategy": None,
}


# Unprefixed tuning keys reach the clients that know them, as in Kafka Streams (linger.ms:
# the producer; fetch.min.bytes: every consumer).
TUNING_KEYS = frozenset(PRODUCER_KEYS) | frozenset(CONSUMER_KEYS)


def is_client_key(key: str, prefixes: tuple[str, ...] = STREAMS_PREFIXES) -> bool:
    """Keys a model with client configs collects: security keys, tuning keys, or any key under
    a prefix."""
    return key in SECURITY_KEYS or key in JVM_ONLY_KEYS or key in TUNING_KEYS or \
        key.startswith(prefixes)


class ClientConfigs:
    """Checked client properties of one component (unprefixed and prefixed, Kafka's names).

    repr and ``masked()`` hide password-type values; ``kwargs(role)`` gives aiokafka arguments.
    """

    def __init__(self, props: Mapping[str, Any], roles: Mapping[str, ClientRole],
                 owned: Mapping[str, str | None] | None = None) -> None:
        self.roles = dict(roles)
        self._kwargs: dict[str, dict[str, Any]] = {}
        prefixes = tuple(sorted({p for r in roles.values() for p in r.prefixes},
                                key=len, reverse=True))
        plain: dict[str, Any] = {}
        by_prefix: dict[str, dict[str, Any]] = {}
        for key, value in props.items():
            prefix = next((p for p in prefixes if key.startswith(p)), "")
            (by_prefix.setdefault(prefix, {}) if prefix else plain)[key[len(prefix):]] = value
        # Unprefixed keys: security ones for every client, tuning ones for the clients that
        # know them (a tool's --command-config may carry linger.ms next to sasl.jaas.config).
        tables = [r.table for r in roles.values()]
        tuning = {k: str(v).strip() for k, v in plain.items() if any(k in t for t in tables)}
        self.plain = check_security({k: v for k, v in plain.items() if k not in tuning})
        for key, value in tuning.items():  # a bad number fails here, not at start
            convert_keys({key: value}, next(t for t in tables if key in t))
        self.plain.update(tuning)
        self.prefixed: dict[str, dict[str, Any]] = {}
        for prefix, sub in by_prefix.items():
            tables = [r.table for r in roles.values() if prefix in r.prefixes]
            known = set().union(*tables) | SECURITY_KEYS
            security: dict[str, Any] = {}
            for key, value in sub.items():
                if key in SECURITY_KEYS or key in JVM_ONLY_KEYS:
                    security[key] = value
                elif owned is not None and key in owned:
                    use = owned[key]
                    hint = f"; set '{use}' instead" if use else ""
                    raise ClientConfigError(f"'{prefix}{key}' is set by the Streams runtime "
                                            f"and cannot be overridden{hint}")
                elif not all(key in t for t in tables):
                    raise ClientConfigError(f"unknown or unsupported client config "
                                            f"'{prefix}{key}'{_suggest(key, known)}")
            checked = check_security(security, prefix)
            for key, value in sub.items():
                if key not in checked:
                    checked[key] = str(value).strip()
            convert_keys(checked, tables[0], prefix)  # a bad number fails here, not at start
            self.prefixed[prefix] = checked

    def role_props(self, role: str) -> dict[str, Any]:
        """The merged properties one client sees (unprefixed, then its prefixes in order)."""
        merged = dict(self.plain)
        for prefix in self.roles[role].prefixes:
            merged.update(self.prefixed.get(prefix, {}))
        return merged

    def kwargs(self, role: str) -> dict[str, Any]:
        """aiokafka arguments for ``role``; built once (the TLS context reads its files once)."""
        cached = self._kwargs.get(role)
        if cached is None:
            spec = self.roles[role]
            props = self.role_props(role)
            where = spec.prefixes[-1] if any(p in self.prefixed for p in spec.prefixes) else ""
            cached = security_kwargs(props, where)
            cached.update(convert_keys({k: v for k, v in props.items() if k in spec.table
                                        or k in SECURITY_KEYS or k in JVM_ONLY_KEYS},
                                       spec.table, where))
            self._kwargs[role] = cached
        return dict(cached)

    def items(self) -> dict[str, Any]:
        """Every property with its full key (prefix included)."""
        out = dict(self.plain)
        for prefix, sub in self.prefixed.items():
            out.update({prefix + k: v for k, v in sub.items()})
        return out

    def masked(self) -> dict[str, Any]:
        return mask(self.items())

    def __bool__(self) -> bool:
        return bool(self.plain or self.prefixed)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ClientConfigs) and self.items() == other.items()

    def __repr__(self) -> str:
        return f"ClientConfigs({self.masked()!r})"


def client_configs_field(value: Any, roles: Mapping[str, ClientRole],
                         owned: Mapping[str, str | None] | None = None) -> ClientConfigs | None:
    """The ``client_configs`` field of a config model (a pydantic ``before`` validator's body):
    None and an already checked ClientConfigs pass, client properties are checked now; a
    problem is a plain ValueError, so pydantic reports it with its message naming the key."""
    if value is None or isinstance(value, ClientConfigs):
        return value
    try:
        return ClientConfigs(value, roles, owned)
    except ClientConfigError as exc:
        raise ValueError(str(exc)) from None
