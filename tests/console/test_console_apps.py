"""`streams console` /apps in a real browser, with a real two-instance streams application
(tests/console/console_app.py, two processes, one standby replica): the console finds the app
from its consumer group, shows both instances with their active and standby tasks, draws the
topology with a live records/s on the nodes while clicks flow, and its store lookup answers
the count the app computed, whichever instance owns the key."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import threading
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import EmbeddedBroker, create_topics, free_port, wait_until

from tests.console.browser_check import require_browser

require_browser()

ROOT = Path(__file__).resolve().parents[2]
SHOTS = os.environ.get("CONSOLE_SCREENSHOTS")
APP_ID, STORE = "page-views", "page-counts"
PAGES = {"home": 7, "cart": 4, "docs": 3, "about": 1, "blog": 5}  # page -> clicks


def http_json(url: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(url, timeout=15) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, None
    except OSError:
        return 0, None


def produce(bootstrap: str, records: list[tuple[str, str]]) -> None:
    """(user, page) clicks, keyed by user, acknowledged by the broker."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 5})
    for user, page in records:
        producer.produce("clicks", page.encode(), user.encode())
    assert producer.flush(30) == 0


class Process:
    """A child process as a user runs it; its output goes to a log file."""

    def __init__(self, args: list[str], log: Path) -> None:
        self.log = log
        env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT), *sys.path])}
        self.proc = subprocess.Popen(args, cwd=ROOT, env=env, stdout=open(log, "wb"),  # noqa: SIM115
                                     stderr=subprocess.STDOUT)

    def output(self) -> str:
        return self.log.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(40)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)


@pytest.fixture(scope="module")
def system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("console-apps")
    broker = EmbeddedBroker(tmp / "broker").start()
    processes: list[Process] = []
    try:
        create_topics(broker.bootstrap, {"clicks": 3})
        endpoints = [f"127.0.0.1:{free_port()}" for _ in range(2)]
        for i, endpoint in enumerate(endpoints):
            processes.append(Process([sys.executable, "-m", "tests.console.console_app",
                                      broker.bootstrap, str(tmp / f"state-{i}"), endpoint],
                                     tmp / f"app-{i}.log"))
        for _attempt in range(3):  # a free port can be taken by another process meanwhile
            port = free_port()
            console = Process([sys.executable, "-m", "streams.cli.main", "console",
                               "--bootstrap-servers", broker.bootstrap, "--port", str(port)],
                              tmp / "console.log")
            processes.append(console)

            def up(console: Process = console, port: int = port) -> str | None:
                if console.proc.poll() is not None:
                    if "address already in use" in console.output():
                        return "port taken"
                    raise AssertionError(f"the console exited: {console.output()}")
                return "up" if http_json(f"http://127.0.0.1:{port}/api/topics")[0] else None
            if wait_until(up, timeout=30, interval=0.2) == "up":
                break
        produce(broker.bootstrap, [(f"user-{n}", page) for page, count in PAGES.items()
                                   for n in range(count)])
        url = f"http://127.0.0.1:{port}"

        def settled() -> bool:
            """Both instances running with standbys, every page counted."""
            status, app = http_json(f"{url}/api/apps/{APP_ID}")
            if status != 200 or len(app["instances"]) != 2:
                return False
            if any(i["error"] or i["state"] != "RUNNING" or not i["standby"]
                   for i in app["instances"]):
                return False
            counts = http_json(f"http://{endpoints[0]}/stores/{STORE}/all")[1] or {}
            return {e["key"]: e["value"] for e in counts.get("entries", [])} == PAGES
        wait_until(settled, timeout=120, interval=0.5,
                   message="two running instances with standbys and every page counted; "
                           + " | ".join(p.output()[-1500:] for p in processes))
        yield {"url": url, "bootstrap": broker.bootstrap, "endpoints": endpoints}
    finally:
        for process in processes:
            process.stop()
        broker.stop()


def visit(page: Any, url: str, shot: str | None = None) -> None:
    response = page.goto(url)
    assert response is not None and response.status == 200, (url, response and response.status)
    assert page.console_errors == [], page.console_errors
    if SHOTS and shot:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{shot}.png"), full_page=True)


def test_apps_list_finds_the_application_from_its_group(system: dict[str, Any],
                                                       page: Any) -> None:
    visit(page, system["url"] + "/apps", "apps")
    row = page.locator("#apps tbody tr").filter(has_text=APP_ID)
    cells = row.locator("td").all_inner_texts()
    assert cells[0] == APP_ID and cells[1] == "Stable" and cells[2] == "2"
    assert set(cells[3].split()) == set(system["endpoints"])


def test_app_page_shows_instances_tasks_and_standbys(system: dict[str, Any], page: Any) -> None:
    visit(page, f"{system['url']}/apps/{APP_ID}")
    instances = page.locator("#instances tbody tr")
    assert instances.count() == 2
    for i in range(2):
        cells = instances.nth(i).locator("td").all_inner_texts()
        assert cells[0] in system["endpoints"] and cells[1] == "RUNNING", cells
    rows = [r.locator("td").all_inner_texts() for r in page.locator("#tasks tbody tr").all()]
    active = {r[0]: r[2] for r in rows if r[1] == "active"}
    standby = {r[0]: r[2] for r in rows if r[1] == "standby"}
    # 3 input partitions x 2 sub-topologies, each active exactly once, across both instances
    assert sorted(active) == ["0_0", "0_1", "0_2", "1_0", "1_1", "1_2"]
    assert set(active.values()) == set(system["endpoints"])
    # one standby per stateful task (sub-topology 1 counts), never beside its active
    assert sorted(standby) == ["1_0", "1_1", "1_2"]
    assert all(standby[t] != active[t] for t in standby)
    # the group's committed offsets: everything produced is processed
    wait_until(lambda: page.reload() and page.locator("#total-lag").inner_text() == "0",
               timeout=30, interval=0.5, message="lag 0 on the app page")


def test_topology_shows_live_rates_while_clicks_flow(system: dict[str, Any], page: Any) -> None:
    stop = threading.Event()

    def flow() -> None:
        n = 0
        while not stop.is_set():
            produce(system["bootstrap"], [(f"flow-{n}-{i}", "flow") for i in range(20)])
            n += 1
            stop.wait(0.2)
    producer = threading.Thread(target=flow, daemon=True)
    producer.start()
    try:
        def source_rates() -> dict[str, float] | None:
            status, app = http_json(f"{system['url']}/api/apps/{APP_ID}")
            rates = app["rates"] if status == 200 else {}
            topology = app["topology"]
            sources = [n["name"] for n in topology["subtopologies"][0]["nodes"]
                       if n["type"] == "source"]
            return rates if sources and all(rates.get(s, 0) > 0 for s in sources) else None
        wait_until(source_rates, timeout=60, interval=1.0,
                   message="a records/s above zero on the source while clicks flow")
        visit(page, f"{system['url']}/apps/{APP_ID}")
        svg = page.locator("#topology")
        assert svg.locator(".topo-topic[data-name='clicks']").count() == 1
        assert svg.locator(f".topo-repartition[data-name='{APP_ID}-{STORE}-repartition']"
                           ).count() == 2  # sunk by sub-topology 0, read by sub-topology 1
        assert svg.locator(f".topo-store[data-name='{STORE}']").count() == 1
        texts = svg.locator(".topo-source .rate").all_text_contents()  # SVG: no innerText
        rates = [float(m.group(1)) for t in texts if (m := re.match(r"([\d.]+) rec/s", t))]
        assert rates and max(rates) > 0, texts
        if SHOTS:
            visit(page, f"{system['url']}/apps/{APP_ID}", "app")
    finally:
        stop.set()
        producer.join(30)


def test_store_lookup_answers_the_apps_count(system: dict[str, Any], page: Any) -> None:
    visit(page, f"{system['url']}/apps/{APP_ID}")
    for key, count in PAGES.items():
        page.select_option("#lookup select[name=store]", STORE)
        page.fill("#lookup input[name=key]", key)
        page.locator("#lookup button").click()
        page.wait_for_load_state()
        assert page.locator("#lookup-result strong").inner_text() == str(count), key
        assert page.console_errors == []
    page.fill("#lookup input[name=key]", "nobody")
    page.locator("#lookup button").click()
    page.wait_for_load_state()
    assert page.locator("#lookup-result").inner_text() == f"{STORE} has no key nobody"
    status, _ = http_json(f"{system['url']}/api/apps/no-such-app")
    assert status == 502
