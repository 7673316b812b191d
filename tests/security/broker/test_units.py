"""Small pure parts of broker security: principal mapping, certificate DNs, JAAS, ACL filters
and decisions, SCRAM message handling."""

from __future__ import annotations

import base64
import hashlib
import hmac
from pathlib import Path

import pytest

from streams.broker.config import BrokerConfig
from streams.broker.security import BrokerSecurity
from streams.broker.security.authorizer import (
    ALL,
    ALLOW,
    ALTER_CONFIGS,
    DENY,
    DESCRIBE,
    DESCRIBE_CONFIGS,
    LITERAL,
    MATCH,
    P_ANY,
    PREFIXED,
    READ,
    TOPIC,
    WRITE,
    AclBinding,
    AclFilter,
    AclStore,
    Authorizer,
)
from streams.broker.security.jaas import JaasError, plain_users
from streams.broker.security.listeners import ListenerError
from streams.broker.security.scram import ScramCredential, ScramError, ScramServer, ScramStore
from streams.broker.security.tls import PrincipalMapper, subject_dn


def test_principal_mapping_rules() -> None:
    mapper = PrincipalMapper("RULE:^CN=([^,]+),OU=apps,.*$/$1/L, RULE:^CN=(.*?),.*$/svc-$1/,"
                             " DEFAULT")
    assert mapper.name("CN=Orders-App,OU=apps,O=example") == "orders-app"
    assert mapper.name("CN=Batch,OU=jobs,O=example") == "svc-Batch"
    assert mapper.name("O=example") == "O=example"
    with pytest.raises(PermissionError):
        PrincipalMapper("RULE:^CN=x$/y/").name("CN=z")
    with pytest.raises(ListenerError):
        PrincipalMapper("NOT-A-RULE")


def test_subject_in_rfc2253_order() -> None:
    cert = {"subject": ((("countryName", "DE"),), (("organizationName", "Ex, Inc"),),
                        (("commonName", "app"),))}
    assert subject_dn(cert) == "CN=app,O=Ex\\, Inc,C=DE"


def test_plain_users_from_jaas() -> None:
    users = plain_users('org.apache.kafka.common.security.plain.PlainLoginModule required '
                        'username="admin" password="a" user_admin="a" user_bob="b\\"q";', "k")
    assert users == {"admin": "a", "bob": 'b"q'}
    with pytest.raises(JaasError) as info:
        plain_users('PlainLoginModule required user_x="secret-value"', "k")
    assert "secret-value" not in str(info.value)


def _acl(name: str, principal: str, operation: int, permission: int = ALLOW,
         pattern: int = LITERAL) -> AclBinding:
    return AclBinding(TOPIC, name, pattern, principal, "*", operation, permission)


def test_decisions(tmp_path: Path) -> None:
    store = AclStore(tmp_path)
    store.add([_acl("orders", "User:a", READ), _acl("pay", "User:a", ALL, pattern=PREFIXED),
               _acl("pay-secret", "User:a", DESCRIBE, DENY),
               _acl("cfg", "User:a", ALTER_CONFIGS)])
    auth = Authorizer(store, "User:root", allow_if_no_acl=False)
    assert auth.authorize("User:a", "1.2.3.4", DESCRIBE, TOPIC, "orders")  # READ implies it
    assert not auth.authorize("User:a", "1.2.3.4", WRITE, TOPIC, "orders")
    assert auth.authorize("User:a", "1.2.3.4", WRITE, TOPIC, "payments")
    assert not auth.authorize("User:a", "1.2.3.4", DESCRIBE, TOPIC, "pay-secret")
    assert auth.authorize("User:a", "1.2.3.4", READ, TOPIC, "pay-secret")  # DENY DESCRIBE only
    assert auth.authorize("User:a", "1.2.3.4", DESCRIBE_CONFIGS, TOPIC, "cfg")
    assert not auth.authorize("User:a", "1.2.3.4", READ, TOPIC, "nothing-here")
    assert auth.authorize("User:root", "1.2.3.4", READ, TOPIC, "nothing-here")
    assert Authorizer(store, "", True).authorize("User:b", "h", READ, TOPIC, "nothing-here")
    assert not Authorizer(store, "", True).authorize("User:b", "h", READ, TOPIC, "orders")
    reloaded = AclStore(tmp_path)
    reloaded.load()
    assert reloaded.acls == store.acls


def test_host_matters(tmp_path: Path) -> None:
    store = AclStore(tmp_path)
    store.add([AclBinding(TOPIC, "t", LITERAL, "User:a", "10.0.0.1", READ, ALLOW),
               AclBinding(TOPIC, "t", LITERAL, "User:*", "10.0.0.9", READ, DENY)])
    auth = Authorizer(store, "", allow_if_no_acl=False)
    assert auth.authorize("User:a", "10.0.0.1", READ, TOPIC, "t")
    assert not auth.authorize("User:a", "127.0.0.1", READ, TOPIC, "t")
    store.add([AclBinding(TOPIC, "t", LITERAL, "User:a", "*", READ, ALLOW)])
    assert auth.authorize("User:a", "127.0.0.1", READ, TOPIC, "t")
    assert not auth.authorize("User:a", "10.0.0.9", READ, TOPIC, "t")  # DENY from that host


def test_filters() -> None:
    literal, prefixed, wildcard = (_acl("orders", "User:a", READ),
                                   _acl("ord", "User:a", READ, pattern=PREFIXED),
                                   _acl("*", "User:a", READ))
    match = AclFilter(TOPIC, "orders", MATCH)
    assert all(match.matches(a) for a in (literal, prefixed, wildcard))
    assert not AclFilter(TOPIC, "other", MATCH).matches(prefixed)
    exact = AclFilter(TOPIC, "orders", P_ANY)
    assert exact.matches(literal) and not exact.matches(prefixed)
    assert AclFilter(principal="User:a", operation=READ).matches(prefixed)
    assert not AclFilter(principal="User:b").matches(prefixed)


def _client_final(password: str, first_bare: str, server_first: str, digest: str) -> str:
    attrs = dict(p.split("=", 1) for p in server_first.split(","))
    salted = hashlib.pbkdf2_hmac(digest, password.encode(), base64.b64decode(attrs["s"]),
                                 int(attrs["i"]))
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    stored = hashlib.new(digest, client_key).digest()
    without = f"c=biws,r={attrs['r']}"
    sig = hmac.new(stored, f"{first_bare},{server_first},{without}".encode(), digest).digest()
    proof = base64.b64encode(bytes(a ^ b for a, b in zip(client_key, sig, strict=True)))
    return f"{without},p={proof.decode()}"


@pytest.mark.parametrize("mechanism,digest", [("SCRAM-SHA-256", "sha256"),
                                              ("SCRAM-SHA-512", "sha512")])
def test_scram_exchange(tmp_path: Path, mechanism: str, digest: str) -> None:
    store = ScramStore(tmp_path)
    store.credentials[("u=1,x", mechanism)] = ScramCredential.from_password(mechanism, "pw")
    server = ScramServer(mechanism, store)
    first_bare = "n=u=3D1=2Cx,r=cnonce"
    server_first = server.evaluate(f"n,,{first_bare}".encode()).decode()
    assert server_first.startswith("r=cnonce")
    final = server.evaluate(_client_final("pw", first_bare, server_first, digest).encode())
    assert final.startswith(b"v=") and server.complete and server.user == "u=1,x"
    wrong = ScramServer(mechanism, store)
    server_first = wrong.evaluate(f"n,,{first_bare}".encode()).decode()
    with pytest.raises(ScramError):
        wrong.evaluate(_client_final("nope", first_bare, server_first, digest).encode())
    with pytest.raises(ScramError):  # channel binding requested
        ScramServer(mechanism, store).evaluate(b"p=tls-unique,,n=u,r=x")


def test_server_properties_with_continued_jaas_lines(tmp_path: Path) -> None:
    """A JAAS value over several lines (backslash continuations, as Kafka's docs write it)."""
    from streams.config import read_properties

    path = tmp_path / "server.properties"
    path.write_text(
        "listeners=SASL_PLAINTEXT://127.0.0.1:0\n"
        "sasl.enabled.mechanisms=PLAIN\n"
        "listener.name.sasl_plaintext.plain.sasl.jaas.config="
        "org.apache.kafka.common.security.plain.PlainLoginModule required \\\n"
        '    username="admin" \\\n'
        '    password="admin-secret" \\\n'
        '    user_admin="admin-secret" \\\n'
        '    user_bob="bob-secret";\n'
        "# a comment ending in a backslash does not continue \\\n"
        "ssl.principal.mapping.rules=RULE:^CN=(.*)$/$1/L,\\\n"
        "    DEFAULT\n"
        "literal.backslash=ends with \\\\\n")
    values = read_properties(path)
    assert values["ssl.principal.mapping.rules"] == "RULE:^CN=(.*)$/$1/L,DEFAULT"
    assert values["literal.backslash"] == "ends with \\\\"
    del values["literal.backslash"]
    security = BrokerSecurity(BrokerConfig.from_mapping({**values, "data_dir": tmp_path}))
    assert security.plain["SASL_PLAINTEXT"] == {"admin": "admin-secret", "bob": "bob-secret"}
