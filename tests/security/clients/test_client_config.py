"""Unit tests of the client property mapping (streams/kafka/client_config.py): JAAS parsing, security
keys onto aiokafka arguments, Kafka Streams' client prefixes, and secrets never shown."""

from __future__ import annotations

import logging
import ssl
from pathlib import Path

import pytest

from security.certs import make_pki
from streams.config import ConfigError
from streams.kafka.client_config import (
    PLAIN_MODULE,
    SCRAM_MODULE,
    ClientConfigError,
    Password,
    build_ssl_context,
    check_security,
    mask,
    parse_jaas_config,
    security_kwargs,
)
from streams.runtime import StreamsConfig

SECRET = "pa$$ word \"quoted\""


def jaas(module: str = SCRAM_MODULE, user: str = "alice", password: str = "alice-pw") -> str:
    escaped = password.replace("\\", "\\\\").replace('"', '\\"')
    return f'{module} required username="{user}" password="{escaped}";'


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory):
    return make_pki(tmp_path_factory.mktemp("pki"))


def test_jaas_parsing_follows_kafka() -> None:
    login = parse_jaas_config(jaas(PLAIN_MODULE, "bob", SECRET))
    assert login.module == PLAIN_MODULE and login.flag == "required"
    assert login.options == {"username": "bob", "password": SECRET}
    login = parse_jaas_config(f"{SCRAM_MODULE} optional\n  username=carol\n  tokenauth=true ;")
    assert login.options == {"username": "carol", "tokenauth": "true"}
    for bad, reason in [(f"{SCRAM_MODULE} required username=\"a\" password=\"b\"", "end with"),
                        (f"{SCRAM_MODULE} maybe username=\"a\";", "flag"),
                        (f"{SCRAM_MODULE} required username;", "key=\"value\""),
                        (jaas() + jaas(), "exactly one"),
                        ("", "expected")]:
        with pytest.raises(ClientConfigError, match=reason) as err:
            parse_jaas_config(bad)
        assert "alice-pw" not in str(err.value)


def test_security_keys_map_onto_aiokafka(pki) -> None:
    props = check_security({
        "security.protocol": "sasl_ssl", "sasl.mechanism": "scram-sha-256",
        "sasl.jaas.config": jaas(password=SECRET), "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(pki.truststore),
        "ssl.endpoint.identification.algorithm": ""})
    assert isinstance(props["sasl.jaas.config"], Password)
    kwargs = security_kwargs(props)
    assert kwargs["security_protocol"] == "SASL_SSL"
    assert kwargs["sasl_mechanism"] == "SCRAM-SHA-256"
    assert (kwargs["sasl_plain_username"], kwargs["sasl_plain_password"]) == ("alice", SECRET)
    context = kwargs["ssl_context"]
    assert isinstance(context, ssl.SSLContext) and not context.check_hostname
    assert context.verify_mode == ssl.CERT_REQUIRED
    assert security_kwargs(check_security({"security.protocol": "PLAINTEXT"})) == {}
    plain = security_kwargs(check_security({"security.protocol": "SASL_PLAINTEXT",
                                            "sasl.mechanism": "PLAIN",
                                            "sasl.jaas.config": jaas(PLAIN_MODULE)}))
    assert plain == {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
                     "sasl_plain_username": "alice", "sasl_plain_password": "alice-pw"}


def test_keystores_from_a_file_inline_and_encrypted(pki, tmp_path: Path) -> None:
    base = {"security.protocol": "SSL", "ssl.truststore.certificates": pki.ca_pem}
    ctx = build_ssl_context(check_security({**base,
                                            "ssl.keystore.location": str(pki.client.keystore)}))
    assert ctx.check_hostname  # Kafka's default: https
    build_ssl_context(check_security({**base, "ssl.keystore.key": pki.client.key_pem,
                                      "ssl.keystore.certificate.chain": pki.client.chain_pem}))
    locked = make_pki(tmp_path / "locked", key_password="key-pw")
    build_ssl_context(check_security({**base, "ssl.keystore.location": str(locked.client.keystore),
                                      "ssl.key.password": "key-pw"}))
    with pytest.raises(ClientConfigError, match="ssl.key.password right") as err:
        build_ssl_context(check_security({**base,
                                          "ssl.keystore.location": str(locked.client.keystore),
                                          "ssl.key.password": "not-key-pw"}))
    assert "not-key-pw" not in str(err.value)


@pytest.mark.parametrize(("props", "message"), [
    ({"security.protocol": "TLS"}, "must be one of PLAINTEXT"),
    ({"sasl.mechanism": "OAUTHBEARER"}, "not supported by the Python clients"),
    ({"ssl.truststore.type": "JKS"}, "convert the store to PEM"),
    ({"ssl.truststore.location": "/no/such/ca.pem"}, "no such file"),
    ({"ssl.keystore.password": SECRET}, "not used with PEM stores"),
    ({"ssl.keystore.key": SECRET}, "go together"),
    ({"ssl.trustore.location": "/x"}, "did you mean 'ssl.truststore.location'"),
    ({"sasl.jaas.config": "org.example.Krb5LoginModule required password=\"x\";"},
     "is not supported"),
    ({"sasl.jaas.config": f'{PLAIN_MODULE} required username="a";'}, "non-empty password"),
])
def test_bad_security_config_names_the_key(props: dict, message: str) -> None:
    with pytest.raises(ClientConfigError, match=message) as err:
        check_security(props)
    assert SECRET not in str(err.value)


def test_sasl_needs_a_login_and_gssapi_needs_kerberos() -> None:
    with pytest.raises(ClientConfigError, match="sasl.jaas.config' is required"):
        security_kwargs(check_security({"security.protocol": "SASL_PLAINTEXT",
                                        "sasl.mechanism": "PLAIN"}))
    try:
        import gssapi  # noqa: F401
    except ImportError:
        with pytest.raises(ClientConfigError, match="GSSAPI"):
            security_kwargs(check_security({"security.protocol": "SASL_PLAINTEXT"}))


def test_streams_prefixes_reach_each_client(pki) -> None:
    config = StreamsConfig.from_mapping({
        "application.id": "app", "bootstrap.servers": "b:9093",
        "security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
        "sasl.jaas.config": jaas(PLAIN_MODULE, "all"),
        "ssl.truststore.location": str(pki.truststore),
        "consumer.sasl.jaas.config": jaas(PLAIN_MODULE, "consumers"),
        "restore.consumer.sasl.jaas.config": jaas(PLAIN_MODULE, "restore"),
        "producer.linger.ms": "7", "producer.compression.type": "lz4",
        "main.consumer.fetch.min.bytes": "10", "admin.retry.backoff.ms": "50"})
    users = {role: config.client_kwargs(role)["sasl_plain_username"] for role in
             ("main.consumer", "restore.consumer", "global.consumer", "producer", "admin")}
    assert users == {"main.consumer": "consumers", "restore.consumer": "restore",
                     "global.consumer": "consumers", "producer": "all", "admin": "all"}
    producer = config.client_kwargs("producer")
    assert (producer["linger_ms"], producer["compression_type"]) == (7, "lz4")
    assert config.client_kwargs("main.consumer")["fetch_min_bytes"] == 10
    assert "fetch_min_bytes" not in config.client_kwargs("restore.consumer")
    assert config.client_kwargs("admin")["retry_backoff_ms"] == 50
    assert all(config.client_kwargs(r)["bootstrap_servers"] == "b:9093" for r in users)
    # Unprefixed tuning reaches the clients that know it, as in Kafka Streams.
    tuned = StreamsConfig.from_mapping({"application.id": "app", "linger.ms": "3",
                                        "fetch.min.bytes": "4", "consumer.fetch.min.bytes": "5"})
    assert tuned.client_kwargs("producer")["linger_ms"] == 3
    assert "linger_ms" not in tuned.client_kwargs("main.consumer")
    assert tuned.client_kwargs("global.consumer")["fetch_min_bytes"] == 5
    assert "fetch_min_bytes" not in tuned.client_kwargs("admin")
    # snake_case keys work as for every other StreamsConfig key
    snake = StreamsConfig.from_mapping({"application_id": "app", "security_protocol": "SSL",
                                        "ssl_truststore_location": str(pki.truststore)})
    assert snake.client_kwargs("admin")["security_protocol"] == "SSL"


@pytest.mark.parametrize(("key", "message"), [
    ("consumer.max.poll.records", "set by the Streams runtime.*set 'max.poll.records'"),
    ("producer.transactional.id", "set by the Streams runtime"),
    ("main.consumer.group.id", "set 'application.id'"),
    ("producer.lingr.ms", "did you mean 'linger.ms'"),
    ("admin.linger.ms", "unknown or unsupported client config 'admin.linger.ms'"),
    ("securty.protocol", "did you mean 'security.protocol'"),
])
def test_streams_rejects_unknown_and_owned_keys(key: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        StreamsConfig.from_mapping({"application.id": "app", key: "1"})


def test_no_secret_in_errors_repr_or_logs(caplog: pytest.LogCaptureFixture, pki) -> None:
    caplog.set_level(logging.DEBUG)
    good = {"application.id": "app", "security.protocol": "SASL_SSL",
            "sasl.mechanism": "SCRAM-SHA-512", "sasl.jaas.config": jaas(password=SECRET),
            "ssl.truststore.location": str(pki.truststore),
            "producer.sasl.jaas.config": jaas(password=SECRET + "2")}
    config = StreamsConfig.from_mapping(good)
    shown = [repr(config), str(config), repr(config.client_configs), str(config.as_properties()),
             str(config.model_dump())]
    for bad in ({**good, "sasl.mechanism": "NOPE"}, {**good, "num.stream.threads": "x"},
                {**good, "unknown.key": "1"}, {**good, "sasl.jaas.config": SECRET}):
        with pytest.raises(ConfigError) as err:
            StreamsConfig.from_mapping(bad)
        shown.append(str(err.value))
    with pytest.raises(ValueError) as raw:  # pydantic's own error, when built directly
        StreamsConfig(application_id="app", client_configs={"sasl.jaas.config": SECRET})
    shown.append(str(raw.value))
    shown.extend(r.getMessage() for r in caplog.records)
    for text in shown:
        assert SECRET not in text, text
    assert mask({"sasl.jaas.config": "x", "ssl.key.password": Password("y"), "a": "b",
                 "producer.ssl.truststore.password": "z"}) == {
        "sasl.jaas.config": "[hidden]", "ssl.key.password": "[hidden]", "a": "b",
        "producer.ssl.truststore.password": "[hidden]"}
    assert repr(Password("zz")) == "Password('[hidden]')" and Password("zz").value() == "zz"


def test_password_as_a_config_model_field() -> None:
    """Any component's model can declare a Password field: the value is hidden, validation
    errors name the key and the reason only."""
    from pydantic import field_validator

    from streams.config import KafkaConfigModel

    class Model(KafkaConfigModel):
        db_password: Password
        retries: int = 0

        @field_validator("db_password")
        @classmethod
        def _long(cls, value: Password) -> Password:
            if len(value.value()) < 8:
                raise ValueError("must be at least 8 characters")
            return value

    model = Model.from_mapping({"db.password": "long-enough-1"})
    assert isinstance(model.db_password, Password)
    assert model.db_password.value() == "long-enough-1"
    assert "long-enough-1" not in repr(model) + str(model.model_dump())
    with pytest.raises(ConfigError, match="'db.password': .*at least 8 characters") as err:
        Model.from_mapping({"db.password": "short-1"})
    assert "short-1" not in str(err.value)
    with pytest.raises(ValueError) as raw:
        Model(db_password="short-2")
    assert "short-2" not in str(raw.value)
