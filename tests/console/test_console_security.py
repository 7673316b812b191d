"""`streams console` against a secured broker (SASL and TLS listeners, an authorizer): the console
reaches the broker over SASL_SSL through --command-config, serves its own port over HTTPS with
basic auth, lists / adds / deletes ACLs and SCRAM users after a confirmation (checked with
independent clients: a new SCRAM user can log in, a deleted one cannot), never renders a
password, hides every form when --read-only, and shows the broker's authorization error as it
comes for a principal without rights."""

from __future__ import annotations

import asyncio
import base64
import hashlib
import os
import ssl
import subprocess
import sys
import urllib.error
import urllib.request
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import pytest
from helpers import free_port, wait_until

from tests.console.browser_check import require_browser

require_browser()

from tests.security.broker.conftest import (  # noqa: E402
    ADMIN,
    ADMIN_PW,
    EVE,
    EVE_PW,
    SecuredBroker,
)
from tests.security.certs import make_pki  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
SHOTS = os.environ.get("CONSOLE_SCREENSHOTS")
AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"
WEB_USER, WEB_PW = "ops", "console-pass"
CAROL_PW = "carol-pass-1234"


def client_config(path: Path, protocol: str, user: str, password: str, ca: Path) -> Path:
    lines = [f"security.protocol={protocol}", "sasl.mechanism=PLAIN",
             "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule "
             f'required username="{user}" password="{password}";']
    if protocol.endswith("SSL"):
        lines += ["ssl.truststore.type=PEM", f"ssl.truststore.location={ca}"]
    path.write_text("\n".join(lines) + "\n")
    return path


class Console:
    def __init__(self, tmp: Path, name: str, bootstrap: str, config: Path, *extra: str,
                 scheme: str = "http", ca: Path | None = None) -> None:
        self.ca = ca
        self.log = tmp / f"{name}.log"
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}
        for _attempt in range(3):  # a free port can be taken by another process meanwhile
            self.port = free_port()
            self.url = f"{scheme}://127.0.0.1:{self.port}"
            with open(self.log, "wb") as log:
                self.proc = subprocess.Popen(
                    [sys.executable, "-m", "streams.cli.main", "console",
                     "--bootstrap-servers", bootstrap, "--command-config", str(config),
                     "--port", str(self.port), *extra],
                    cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)
            if wait_until(self._up, timeout=30, interval=0.2,
                          message=f"console {name} up") != "port taken":
                return
        raise AssertionError(f"no free port for console {name} after 3 attempts")

    def get(self, path: str, auth: tuple[str, str] | None = None) -> tuple[int, str]:
        request = urllib.request.Request(self.url + path)
        if auth:
            token = base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
            request.add_header("Authorization", f"Basic {token}")
        context = ssl.create_default_context(cafile=str(self.ca)) if self.ca else None
        try:
            with urllib.request.urlopen(request, timeout=30, context=context) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            return exc.code, exc.read().decode()

    def _up(self) -> bool | str:
        if self.proc.poll() is not None:
            output = self.log.read_text()
            if "address already in use" in output:
                return "port taken"
            raise AssertionError(f"the console exited: {output}")
        try:
            self.get("/", (WEB_USER, WEB_PW))
            return True
        except OSError:
            return False

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(30)


@pytest.fixture(scope="module")
def system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("console-security")
    pki = make_pki(tmp / "pki")
    broker = SecuredBroker(tmp / "broker", pki, **{"authorizer.class.name": AUTHORIZER,
                                                   "super.users": f"User:{ADMIN}"}).start()
    consoles: list[Console] = []
    try:
        key, cert = tmp / "web.key", tmp / "web.pem"
        key.write_text(pki.server.key_pem)
        cert.write_text(pki.server.chain_pem)
        users = tmp / "users"
        users.write_text(f"{WEB_USER}:{hashlib.sha256(WEB_PW.encode()).hexdigest()}\n")
        admin_ssl = client_config(tmp / "admin-ssl.properties", "SASL_SSL", ADMIN, ADMIN_PW,
                                  pki.truststore)
        admin_plain = client_config(tmp / "admin.properties", "SASL_PLAINTEXT", ADMIN,
                                    ADMIN_PW, pki.truststore)
        eve = client_config(tmp / "eve.properties", "SASL_PLAINTEXT", EVE, EVE_PW,
                            pki.truststore)
        consoles.append(Console(tmp, "admin", broker.address("SASL_SSL"), admin_ssl,
                                "--users-file", str(users), "--tls-cert", str(cert),
                                "--tls-key", str(key), scheme="https", ca=pki.truststore))
        consoles.append(Console(tmp, "read-only", broker.address("SASL_PLAINTEXT"),
                                admin_plain, "--read-only"))
        consoles.append(Console(tmp, "eve", broker.address("SASL_PLAINTEXT"), eve))
        yield {"broker": broker, "admin": consoles[0], "read_only": consoles[1],
               "eve": consoles[2], "admin_config": admin_plain}
    finally:
        for console in consoles:
            console.stop()
        broker.stop()


def _admin_call(broker: SecuredBroker, fn: Any, user: str = ADMIN, password: str = ADMIN_PW,
                mechanism: str = "PLAIN") -> Any:
    """``fn(admin)`` with an aiokafka admin client logged in over SASL_PLAINTEXT."""
    from aiokafka.admin import AIOKafkaAdminClient

    async def run() -> Any:
        admin = AIOKafkaAdminClient(bootstrap_servers=broker.address("SASL_PLAINTEXT"),
                                    security_protocol="SASL_PLAINTEXT",
                                    sasl_mechanism=mechanism, sasl_plain_username=user,
                                    sasl_plain_password=password, request_timeout_ms=10000)
        await admin.start()
        try:
            return await fn(admin)
        finally:
            await admin.close()
    with ThreadPoolExecutor(1) as pool:  # Playwright's sync API holds this thread's loop
        return pool.submit(asyncio.run, run()).result()


def broker_acls(broker: SecuredBroker) -> list[tuple[str, str, int, int]]:
    from aiokafka.protocol.admin import DescribeAclsRequest

    from streams.kafka.admin import send

    async def describe(admin: Any) -> Any:
        return await send(admin, DescribeAclsRequest(1, None, 1, None, None, 1, 1))
    response = _admin_call(broker, describe)
    return sorted((name, principal, operation, permission)
                  for _t, name, _p, acls in response.resources
                  for principal, _h, operation, permission in acls)


def scram_login_works(broker: SecuredBroker, user: str, password: str) -> bool:
    async def cluster(admin: Any) -> Any:
        return await admin.describe_cluster()
    try:
        _admin_call(broker, cluster, user, password, "SCRAM-SHA-256")
        return True
    except Exception:
        return False


@pytest.fixture
def admin_page(browser: Any) -> Iterator[Any]:
    """A page that speaks HTTPS with basic auth to the admin console."""
    context = browser.new_context(ignore_https_errors=True, viewport={"width": 1200, "height": 800},
                                  http_credentials={"username": WEB_USER, "password": WEB_PW})
    tab = context.new_page()
    errors: list[str] = []
    tab.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
    tab.on("pageerror", lambda e: errors.append(str(e)))
    tab.console_errors = errors
    yield tab
    context.close()


def confirm(page: Any) -> None:
    assert page.locator("h1").inner_text() == "Confirm"
    page.get_by_role("button", name="Confirm").click()
    assert page.locator("#outcome").get_attribute("class") == "ok", \
        page.locator("#outcome").inner_text()


def test_console_port_needs_basic_auth_over_tls(system: dict[str, Any]) -> None:
    admin = system["admin"]
    status, _ = admin.get("/topics")  # the certificate verifies against the test CA
    assert status == 401
    assert admin.get("/topics", (WEB_USER, "wrong"))[0] == 401
    status, body = admin.get("/api/topics", (WEB_USER, WEB_PW))
    assert status == 200 and body.startswith("[")


def test_acls_add_and_delete_after_confirmation(system: dict[str, Any],
                                                admin_page: Any) -> None:
    broker, page = system["broker"], admin_page
    page.goto(system["admin"].url + "/acls")
    assert page.locator("#acls tbody tr").count() == 0
    form = page.locator("form", has=page.get_by_role("button", name="Add ACL"))
    form.locator("[name=principal]").fill("User:alice")
    form.locator("[name=operation]").select_option("WRITE")
    form.locator("[name=name]").fill("orders")
    form.get_by_role("button", name="Add ACL").click()
    assert broker_acls(broker) == []  # nothing before the confirmation
    confirm(page)
    assert broker_acls(broker) == [("orders", "User:alice", 4, 3)]  # WRITE, ALLOW
    page.goto(system["admin"].url + "/acls")
    row = page.locator("#acls tbody tr")
    assert row.locator("td").all_inner_texts()[:7] == \
        ["ALLOW", "User:alice", "WRITE", "TOPIC", "LITERAL", "orders", "*"]
    if SHOTS:
        page.screenshot(path=str(Path(SHOTS) / "acls.png"), full_page=True)
    row.get_by_role("button", name="Delete").click()
    assert broker_acls(broker) != []
    confirm(page)
    assert broker_acls(broker) == []
    assert page.console_errors == []


def test_scram_user_set_and_delete(system: dict[str, Any], admin_page: Any) -> None:
    broker, page = system["broker"], admin_page
    assert not scram_login_works(broker, "carol", CAROL_PW)
    page.goto(system["admin"].url + "/acls")
    form = page.locator("form", has=page.get_by_role("button", name="Set SCRAM user"))
    form.locator("[name=user]").fill("carol")
    form.locator("[name=password]").fill(CAROL_PW)
    form.get_by_role("button", name="Set SCRAM user").click()
    assert CAROL_PW not in page.content()  # the confirmation carries a token, not the password
    confirm(page)
    assert scram_login_works(broker, "carol", CAROL_PW)
    assert not scram_login_works(broker, "carol", "wrong-password")
    page.goto(system["admin"].url + "/acls")
    row = page.locator("#users tbody tr").filter(has_text="carol")
    assert row.locator("td").nth(1).inner_text() == "SCRAM-SHA-256 (4096 iterations)"
    assert CAROL_PW not in page.content()
    row.get_by_role("button", name="Delete").click()
    confirm(page)
    assert not scram_login_works(broker, "carol", CAROL_PW)
    page.goto(system["admin"].url + "/acls")
    assert page.locator("#users tbody tr").filter(has_text="carol").count() == 0


def test_read_only_console_hides_and_refuses_writes(system: dict[str, Any], page: Any) -> None:
    console = system["read_only"]
    page.goto(console.url + "/acls")
    assert page.locator("#acls").count() == 1 and page.locator("#users").count() == 1
    assert page.locator("form[method=post]").count() == 0
    assert page.console_errors == []
    request = urllib.request.Request(console.url + "/acls", data=b"principal=User:x",
                                     method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=30)
    assert refused.value.code == 403


def test_a_principal_without_rights_sees_the_brokers_refusal(system: dict[str, Any]) -> None:
    status, body = system["eve"].get("/api/acls")
    assert status == 502 and "Cluster authorization failed" in body, body
