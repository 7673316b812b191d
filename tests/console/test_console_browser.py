"""`streams console` in a real browser (Playwright driving Debian's chromium): with a broker, a
Connect worker and data the test made, every page loads without a console error, shows the
names and numbers the test expects, each write works, and a --read-only console refuses it."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import EmbeddedBroker, create_topics, free_port, wait_until

from tests.console.browser_check import require_browser

require_browser()

SHOTS = os.environ.get("CONSOLE_SCREENSHOTS")  # a folder: save a screenshot of each page
PRODUCED, CONSUMED = 10, 6
AGES_MIN = (60, 30, 1)  # the events' ages in minutes
USER = {"type": "record", "name": "User", "fields": [
    {"name": "name", "type": "string"}, {"name": "age", "type": "int"}]}


def _produce_avro(bootstrap: str, registry_url: str) -> None:
    """people: one Avro record written as Confluent's serializer writes it."""
    from confluent_kafka import Producer
    from confluent_kafka.schema_registry import SchemaRegistryClient
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    avro = AvroSerializer(SchemaRegistryClient({"url": registry_url}), json.dumps(USER))
    producer = Producer({"bootstrap.servers": bootstrap})
    producer.produce("people", avro({"name": "ada", "age": 36},
                                    SerializationContext("people", MessageField.VALUE)))
    assert producer.flush(30) == 0
    # A second version (a field with a default: backward compatible) for the diff.
    v2 = {**USER, "fields": [*USER["fields"],
                             {"name": "email", "type": "string", "default": ""}]}
    SchemaRegistryClient({"url": registry_url}).register_schema(
        "people-value", __import__("confluent_kafka.schema_registry",
                                   fromlist=["Schema"]).Schema(json.dumps(v2), "AVRO"))


def _prepare_data(bootstrap: str) -> None:
    """orders (1 partition, 10 records) with group billing committed at 6: lag 4."""
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition
    from aiokafka.structs import OffsetAndMetadata

    async def run() -> None:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
        await producer.start()
        try:
            for i in range(PRODUCED):
                await producer.send_and_wait("orders", f"order-{i}".encode(), key=b"k%d" % i)
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id="billing",
                                    enable_auto_commit=False)
        await consumer.start()
        try:
            tp = TopicPartition("orders", 0)
            consumer.assign([tp])
            await consumer.commit({tp: OffsetAndMetadata(CONSUMED, "")})
        finally:
            await consumer.stop()
        # events: records 60 min, 30 min and 1 min old; group audit has consumed the first,
        # so its oldest unconsumed record is 30 minutes old
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap)
        await producer.start()
        try:
            now = int(time.time() * 1000)
            for age_min in AGES_MIN:
                await producer.send_and_wait("events", b"e", timestamp_ms=now - age_min * 60_000)
        finally:
            await producer.stop()
        audit = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id="audit",
                                 enable_auto_commit=False)
        await audit.start()
        try:
            audit.assign([TopicPartition("events", 0)])
            await audit.commit({TopicPartition("events", 0): OffsetAndMetadata(1, "")})
        finally:
            await audit.stop()
        rewind = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id="rewind",
                                  enable_auto_commit=False)
        await rewind.start()
        try:
            rewind.assign([tp])
            await rewind.commit({tp: OffsetAndMetadata(PRODUCED - 1, "")})
        finally:
            await rewind.stop()

    asyncio.run(run())


class Console:
    """`streams console` as a user starts it, in its own process."""

    def __init__(self, bootstrap: str, connect_url: str, registry_url: str,
                 *extra: str) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
        for _attempt in range(3):  # a free port can be taken by another process meanwhile
            self.port = free_port()
            self.url = f"http://127.0.0.1:{self.port}"
            self.process = subprocess.Popen(
                [sys.executable, "-m", "streams.cli.main", "console", "--bootstrap-servers",
                 bootstrap, "--connect-url", connect_url, "--registry-url", registry_url,
                 "--port", str(self.port), *extra],
                env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
            if wait_until(self._up, timeout=30) != "port taken":
                return
        raise AssertionError("no free port for the console after 3 attempts")

    def _up(self) -> bool | str:
        if self.process.poll() is not None:
            output = self.process.stdout.read()
            if "address already in use" in output:
                return "port taken"
            raise AssertionError(f"the console exited: {output}")
        try:
            with urllib.request.urlopen(self.url + "/api/topics", timeout=5) as response:
                return response.status == 200
        except OSError:
            return False

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(30)


@pytest.fixture(scope="module")
def system(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from connect.runtime.background import BackgroundWorker
    from streams.registry import SchemaRegistry

    tmp = tmp_path_factory.mktemp("console")
    metrics_url = f"http://127.0.0.1:{free_port()}"
    broker = EmbeddedBroker(tmp / "broker", metrics_listener=metrics_url).start()
    worker = registry = None
    consoles: list[Console] = []
    try:
        create_topics(broker.bootstrap, {"orders": 1, "wide": 3, "lines": 1, "people": 1,
                                         "events": 1})
        _prepare_data(broker.bootstrap)
        registry = SchemaRegistry(broker.bootstrap, port=0).__enter__()
        _produce_avro(broker.bootstrap, registry.url)
        worker = BackgroundWorker.standalone(broker.bootstrap, tmp / "connect.offsets", {
            "offset.flush.interval.ms": "200",
            "key.converter": "org.apache.kafka.connect.storage.StringConverter",
            "value.converter": "org.apache.kafka.connect.storage.StringConverter"})
        (tmp / "input.txt").write_text("one\ntwo\n")
        worker.put_connector({"name": "file-source", "connector.class": "FileStreamSource",
                              "file": str(tmp / "input.txt"), "topic": "lines"})
        consoles.append(Console(broker.bootstrap, worker.url, registry.url,
                                "--metrics-url", metrics_url + "/metrics"))
        consoles.append(Console(broker.bootstrap, worker.url, registry.url, "--read-only"))
        yield {"broker": broker, "worker": worker, "console": consoles[0],
               "read_only": consoles[1], "data_dir": tmp / "broker",
               "metrics_url": metrics_url + "/metrics"}
    finally:
        for console in consoles:
            console.stop()
        if worker is not None:
            worker.stop()
        if registry is not None:
            registry.__exit__(None, None, None)
        broker.stop()


def visit(page: Any, url: str, shot: str | None = None) -> None:
    response = page.goto(url)
    assert response is not None and response.status == 200, (url, response and response.status)
    assert page.console_errors == [], page.console_errors
    if SHOTS and shot:
        Path(SHOTS).mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(Path(SHOTS) / f"{shot}.png"), full_page=True)


def config_row(page: Any, key: str) -> Any:
    """The cells of one config's row on a topic page (exact name: not delete.retention.ms)."""
    return page.locator("#configs tbody tr").filter(
        has=page.locator("td:first-child", has_text=re.compile(f"^{re.escape(key)}$"))
    ).locator("td")


def confirm(page: Any) -> None:
    """Every write shows a confirmation page first."""
    assert page.locator("h1").inner_text() == "Confirm"
    page.get_by_role("button", name="Confirm").click()


def test_topics_pages_show_partitions_offsets_and_configs(system: dict[str, Any],
                                                          page: Any) -> None:
    console = system["console"]
    visit(page, console.url + "/topics", "topics")
    rows = page.locator("#topics tbody tr")
    names = [rows.nth(i).locator("td").first.inner_text() for i in range(rows.count())]
    assert {"orders", "wide", "lines"} <= set(names)
    orders = page.locator("#topics tbody tr", has_text="orders").locator("td")
    assert orders.nth(1).inner_text() == "1" and orders.nth(3).inner_text() == str(PRODUCED)

    page.get_by_role("link", name="wide").click()
    assert page.locator("h1").inner_text() == "Topic wide"
    assert page.locator("#partitions tbody tr").count() == 3
    assert page.console_errors == []
    visit(page, console.url + "/topics/orders", "topic")
    assert page.locator("#partitions tbody tr td").nth(5).inner_text() == str(PRODUCED)
    # sizes (DescribeLogDirs) are the bytes of the partition's segment files on disk
    on_disk = sum(f.stat().st_size for f in (system["data_dir"] / "orders-0").glob("*.log"))
    [orders] = [t for t in http_get_json(console.url + "/api/topics")[1]
                if t["name"] == "orders"]
    assert orders["bytes"] == on_disk > 0
    [partition] = http_get_json(console.url + "/api/topics/orders")[1]["partitions"]
    assert partition["bytes"] == on_disk
    assert page.locator("#configs", has_text="cleanup.policy").count() == 1


def test_broker_pages_show_listeners_configs_log_sizes_and_request_rates(
        system: dict[str, Any], page: Any) -> None:
    console, broker = system["console"], system["broker"]
    visit(page, console.url + "/brokers", "brokers")
    cells = page.locator("#brokers tbody tr").first.locator("td").all_inner_texts()
    assert cells[:5] == ["0", "127.0.0.1", str(broker.port), "-", "yes"], cells
    visit(page, console.url + "/brokers/0")
    listeners = dict(tuple(r.locator("td").all_inner_texts())
                     for r in page.locator("#listeners tbody tr").all())
    assert f":{broker.port}" in listeners["listeners"], listeners
    assert page.locator("#configs td", has_text=re.compile(r"^log\.retention\.ms$")).count() == 1
    # DescribeLogDirs' sizes are the bytes of the segment files on disk
    on_disk = sum(f.stat().st_size for f in (system["data_dir"] / "orders-0").glob("*.log"))
    assert on_disk > 0
    status, data = http_get_json(console.url + "/api/brokers/0")
    [orders] = [t for d in data["log_dirs"] for t in d["topics"] if t["topic"] == "orders"]
    assert orders == {"topic": "orders", "partitions": 1, "bytes": on_disk}
    rows = page.locator("#log-sizes tbody tr").filter(
        has=page.locator("td:first-child", has_text=re.compile("^orders$")))
    assert rows.locator("td").all_inner_texts()[1] == "1"
    # every view sends DescribeLogDirs: a second view a second later has its rate
    def rate() -> float | None:
        _, data = http_get_json(console.url + "/api/brokers/0")
        return data["metrics"]["requests"].get("DescribeLogDirs", {}).get("rate")
    wait_until(lambda: (rate() or 0) > 0, timeout=30, interval=0.5,
               message="a DescribeLogDirs rate from the broker's metrics")
    visit(page, console.url + "/brokers/0", "broker")
    row = page.locator("#requests tbody tr").filter(
        has=page.locator("td:first-child", has_text=re.compile("^DescribeLogDirs$")))
    assert re.fullmatch(r"\d+\.\d/s", row.locator("td").nth(2).inner_text())
    for name, value, _source in (r.locator("td").all_inner_texts()
                                 for r in page.locator("#configs tbody tr").all()):
        if re.search("password|jaas|secret", name):
            assert value in ("(hidden)", ""), (name, value)


def broker_requests(metrics_url: str) -> dict[str, float]:
    """Requests the broker has handled per API, from its Prometheus endpoint."""
    with urllib.request.urlopen(metrics_url, timeout=30) as response:
        text = response.read().decode()
    return {m.group(1): float(m.group(2)) for m in re.finditer(
        r'^kafka_network_requestmetrics_requests_total\{request="(\w+)"\} (\S+)$', text, re.M)}


def http_get_json(url: str) -> tuple[int, Any]:
    with urllib.request.urlopen(url, timeout=30) as response:
        return response.status, json.loads(response.read())


def test_topic_writes_create_alter_delete(system: dict[str, Any], page: Any) -> None:
    console = system["console"]
    visit(page, console.url + "/topics")
    page.fill("input[name=name]", "made-in-browser")
    page.fill("input[name=partitions]", "2")
    page.fill("input[name=configs]", "retention.ms=3600000, segment.ms=7200000")
    page.get_by_role("button", name="Create topic").click()
    assert page.locator("h1").inner_text() == "Topic made-in-browser"
    assert page.locator("#partitions tbody tr").count() == 2
    retention = config_row(page, "retention.ms")
    assert retention.nth(1).inner_text() == "3600000" and retention.nth(2).inner_text() == "yes"

    page.fill("input[name=key]", "retention.ms")
    page.fill("input[name=value]", "abc")  # the broker's validation answers
    page.get_by_role("button", name="Set config").click()
    confirm(page)
    assert "retention.ms" in page.locator(".error").inner_text()
    page.console_errors.clear()  # the refusal page's own 400, expected
    page.goto(console.url + "/topics/made-in-browser")
    page.fill("input[name=key]", "retention.ms")
    page.fill("input[name=value]", "60000")
    page.get_by_role("button", name="Set config").click()
    confirm(page)
    page.goto(console.url + "/topics/made-in-browser")
    retention = config_row(page, "retention.ms")
    assert retention.nth(1).inner_text() == "60000"
    # an empty value removes the override; the other override stays through both edits (one
    # IncrementalAlterConfigs each: the legacy AlterConfigs would rewrite every override,
    # losing the secret ones the console cannot read back)
    page.fill("input[name=key]", "retention.ms")
    page.fill("input[name=value]", "")
    page.get_by_role("button", name="Set config").click()
    confirm(page)
    page.goto(console.url + "/topics/made-in-browser")
    assert config_row(page, "retention.ms").nth(2).inner_text() == ""
    assert config_row(page, "segment.ms").all_inner_texts()[1:] == ["7200000", "yes"]
    counts = broker_requests(system["metrics_url"])
    assert counts.get("IncrementalAlterConfigs", 0) == 3 and "AlterConfigs" not in counts

    page.get_by_role("button", name="Delete topic").click()
    confirm(page)
    assert "Deleted topic made-in-browser" in page.locator("#outcome").inner_text()
    assert page.console_errors == []

    def gone() -> bool:
        page.goto(console.url + "/topics")
        return page.locator("#topics tbody tr", has_text="made-in-browser").count() == 0
    wait_until(gone, timeout=30)


def test_message_browser_decodes_filters_and_produces(system: dict[str, Any],
                                                       page: Any) -> None:
    console = system["console"]
    visit(page, console.url + "/topics/orders")
    page.click("#browse-link")
    assert page.locator("#messages tbody tr").count() == PRODUCED
    page.fill("input[name=key]", "k3")
    page.get_by_role("button", name="Browse").click()
    cells = page.locator("#messages tbody tr").first.locator("td")
    assert page.locator("#messages tbody tr").count() == 1
    assert [cells.nth(i).inner_text() for i in (1, 3, 4)] == ["3", "k3", "order-3"]
    visit(page, console.url + "/topics/orders/messages?offset=8", "messages")
    assert page.locator("#messages tbody tr").count() == 2

    visit(page, console.url + "/topics/people/messages")
    page.select_option("select[name=value_format]", "avro")
    page.get_by_role("button", name="Browse").click()
    value = page.locator("#messages tbody tr").first.locator("td").nth(4).inner_text()
    assert json.loads(value) == {"name": "ada", "age": 36}
    assert page.console_errors == []

    visit(page, console.url + "/topics/lines/messages")
    page.fill("input[name=value]", "typed in the browser")
    page.get_by_role("button", name="Produce").click()
    confirm(page)
    assert "Produced at partition 0" in page.locator("#outcome").inner_text()
    visit(page, console.url + "/topics/lines/messages?key=&value_format=string")
    assert page.locator("#messages tbody tr", has_text="typed in the browser").count() == 1


def test_schema_pages_versions_diff_and_compatibility(system: dict[str, Any],
                                                      page: Any) -> None:
    console = system["console"]
    visit(page, console.url + "/schemas", "schemas")
    row = page.locator("#subjects tbody tr", has_text="people-value").locator("td")
    assert row.nth(1).inner_text() == "1, 2"
    row.first.locator("a").click()
    assert page.locator("#level").inner_text() == "BACKWARD"
    assert page.locator("#versions tbody tr").count() == 2
    assert '+      "name": "email",' in page.locator("#diff").inner_text()
    assert page.console_errors == []
    visit(page, console.url + "/schemas/people-value", "schema")
    dropped = {**USER, "fields": [USER["fields"][0]]}  # dropping age: still BACKWARD-fine
    added = {**USER, "fields": [*USER["fields"], {"name": "city", "type": "string"}]}
    for schema, expected in ((added, "NOT compatible"), (dropped, "compatible")):
        page.fill("textarea[name=schema]", json.dumps(schema))
        page.get_by_role("button", name="Test compatibility").click()
        assert page.locator("#compat-result").inner_text().startswith(expected)
    assert page.console_errors == []


def test_group_page_shows_the_lag_the_test_left(system: dict[str, Any], page: Any) -> None:
    console = system["console"]
    visit(page, console.url + "/groups", "groups")
    billing = page.locator("#groups tbody tr", has_text="billing").locator("td")
    assert billing.nth(1).inner_text() == "Empty"
    # lag per group from the broker's metrics (--metrics-url): records and oldest record's age
    assert billing.nth(5).inner_text() == str(PRODUCED - CONSUMED)
    audit = page.locator("#groups tbody tr", has_text="audit").locator("td").all_inner_texts()
    assert audit[5] == "2" and re.fullmatch(r"3\d min \d+ s", audit[6]), audit
    # without --metrics-url (the read-only console): lag from OffsetFetch v8 for all groups
    # and the log ends, with any Kafka; no lag in seconds
    visit(page, system["read_only"].url + "/groups")
    rows = {r.locator("td").first.inner_text(): r.locator("td").all_inner_texts()
            for r in page.locator("#groups tbody tr").all()}
    assert rows["billing"][5:7] == [str(PRODUCED - CONSUMED), "-"], rows
    assert rows["audit"][5:7] == ["2", "-"] and rows["rewind"][5] == "1", rows
    page.goto(console.url + "/groups")
    billing.first.locator("a").click()
    assert page.locator("#total-lag").inner_text() == str(PRODUCED - CONSUMED)
    row = page.locator("#offsets tbody tr").first.locator("td")
    assert [row.nth(i).inner_text() for i in range(5)] == [
        "orders", "0", str(CONSUMED), str(PRODUCED), str(PRODUCED - CONSUMED)]
    visit(page, console.url + "/groups/billing", "group")
    page.locator("svg#lag-chart").wait_for()  # two samples: the chart is drawn
    assert page.console_errors == []


def test_group_lag_in_seconds_is_the_age_of_the_oldest_unconsumed_record(
        system: dict[str, Any], page: Any) -> None:
    console = system["console"]
    visit(page, console.url + "/groups/audit")
    assert page.locator("#total-lag").inner_text() == "2"
    # 30 minutes and the time since the fixture produced it
    assert re.fullmatch(r"3\d min \d+ s", page.locator("#lag-seconds").inner_text())
    status, group = http_get_json(console.url + "/api/groups/audit")
    [events] = group["partitions"]
    assert AGES_MIN[1] * 60 <= events["lag_seconds"] < AGES_MIN[0] * 60
    assert group["lag_seconds"] == events["lag_seconds"]
    cells = page.locator("#offsets tbody tr").first.locator("td").all_inner_texts()
    assert cells[:5] == ["events", "0", "1", "3", "2"] and cells[5].startswith("3")
    assert page.console_errors == []


def test_group_reset_shows_a_dry_run_then_commits(system: dict[str, Any], page: Any) -> None:
    """Group rewind (committed at 9 of 10 by the fixture): billing's offsets stay for the lag
    test."""
    console = system["console"]
    visit(page, console.url + "/groups/rewind")
    assert page.locator("#total-lag").inner_text() == "1"
    page.select_option("select[name=scenario]", "shift-by")
    page.fill("input[name=value]", "-4")
    page.get_by_role("button", name="Dry run").click()
    plan = page.locator("#plan tbody tr").first.locator("td")
    assert [plan.nth(i).inner_text() for i in range(4)] == ["orders", "0", "9", "5"]
    page.goto(console.url + "/groups/rewind")
    assert page.locator("#total-lag").inner_text() == "1"  # a dry run changes nothing
    page.select_option("select[name=scenario]", "shift-by")
    page.fill("input[name=value]", "-4")
    page.get_by_role("button", name="Dry run").click()
    page.get_by_role("button", name="Confirm").click()
    assert "Reset the offsets" in page.locator("#outcome").inner_text()
    visit(page, console.url + "/groups/rewind")
    assert page.locator("#total-lag").inner_text() == "5"
    page.get_by_role("button", name="Delete group").click()
    confirm(page)
    assert "Deleted group rewind" in page.locator("#outcome").inner_text()
    visit(page, console.url + "/groups")
    assert page.locator("#groups tbody tr", has_text="rewind").count() == 0
    assert page.locator("#groups tbody tr", has_text="billing").count() == 1


def test_connector_pages_and_actions(system: dict[str, Any], page: Any) -> None:
    console = system["console"]

    def running() -> bool:
        page.goto(console.url + "/connectors")
        return page.locator("#connectors tbody tr", has_text="RUNNING").count() == 1
    wait_until(running, timeout=30)
    assert page.console_errors == []
    if SHOTS:
        visit(page, console.url + "/connectors", "connectors")
    page.get_by_role("link", name="file-source").click()
    assert page.locator("#state").inner_text() == "RUNNING"
    assert page.locator("#tasks tbody tr").count() == 1
    visit(page, console.url + "/connectors/file-source", "connector")

    page.get_by_role("button", name="Pause").click()
    confirm(page)

    def state_is(expected: str) -> bool:
        page.goto(console.url + "/connectors/file-source")
        return page.locator("#state").inner_text() == expected
    wait_until(lambda: state_is("PAUSED"), timeout=30)
    page.get_by_role("button", name="Resume").click()
    confirm(page)
    wait_until(lambda: state_is("RUNNING"), timeout=30)

    assert page.console_errors == []

    config = json.loads(page.locator("textarea[name=config]").input_value())
    page.fill("textarea[name=config]", json.dumps({**config, "tasks.max": "x"}))
    page.get_by_role("button", name="Validate and save").click()
    assert "tasks.max" in page.locator(".error").inner_text()  # Connect's validation answers
    page.console_errors.clear()  # the refusal page's own 400, expected
    page.goto(console.url + "/connectors/file-source")
    page.fill("textarea[name=config]", json.dumps({**config, "batch.size": "77"}))
    page.get_by_role("button", name="Validate and save").click()
    confirm(page)
    assert "Saved the config" in page.locator("#outcome").inner_text()
    page.goto(console.url + "/connectors/file-source")
    assert json.loads(page.locator("textarea[name=config]").input_value())["batch.size"] == "77"

    # KIP-875 offsets: alter a stopped connector to re-read from byte 4 ("two"), then reset it
    # to re-read the whole file; the topic receives exactly the lines re-read
    def position() -> int | None:
        found = http_get_json(console.url + "/api/connectors/file-source")[1]["offsets"]
        entries = (found or {}).get("offsets") or []
        return entries[0]["offset"]["position"] if entries else None

    def lines() -> int:
        topics = http_get_json(console.url + "/api/topics")[1]
        return next(t["messages"] for t in topics if t["name"] == "lines")
    wait_until(lambda: position() == len("one\ntwo\n"), timeout=30)
    base = lines()  # 2, or more when the config change restarted the task before a flush
    assert base >= 2
    for op, expected_lines in (("alter", base + 1), ("reset", base + 3)):
        page.goto(console.url + "/connectors/file-source")
        page.get_by_role("button", name="Stop").click()
        confirm(page)
        wait_until(lambda: state_is("STOPPED"), timeout=30)
        if op == "alter":
            offsets = json.loads(page.locator("textarea[name=offsets]").input_value())
            offsets[0]["offset"]["position"] = 4
            page.fill("textarea[name=offsets]", json.dumps(offsets))
            page.get_by_role("button", name="Alter offsets").click()
            confirm(page)
            assert position() == 4
        else:
            page.get_by_role("button", name="Reset offsets").click()
            confirm(page)
            assert position() is None
        page.goto(console.url + "/connectors/file-source")
        page.get_by_role("button", name="Resume").click()
        confirm(page)
        wait_until(lambda n=expected_lines: lines() == n, timeout=30,
                   message=f"{expected_lines} records in lines after the {op}")
    wait_until(lambda: position() == len("one\ntwo\n"), timeout=30)
    assert lines() == base + 3
    assert page.console_errors == []


def test_read_only_console_refuses_every_write(system: dict[str, Any], page: Any) -> None:
    console = system["read_only"]
    visit(page, console.url + "/topics")
    assert page.locator(".ro").inner_text() == "read-only"
    page.fill("input[name=name]", "not-allowed")
    page.get_by_role("button", name="Create topic").click()
    assert "--read-only" in page.locator(".error").inner_text()
    for path, button in (("/topics/orders", "Delete topic"),
                         ("/connectors/file-source", "Pause"),
                         ("/connectors/file-source", "Reset offsets"),
                         ("/topics/lines/messages", "Produce"),
                         ("/groups/billing", "Dry run"),
                         ("/groups/billing", "Delete group")):
        page.goto(console.url + path)
        page.get_by_role("button", name=button).click()
        assert "--read-only" in page.locator(".error").inner_text()
    page.goto(console.url + "/topics")
    assert page.locator("#topics tbody tr", has_text="not-allowed").count() == 0
    assert page.locator("#topics tbody tr", has_text="orders").count() == 1
    page.goto(console.url + "/groups")
    assert page.locator("#groups tbody tr", has_text="billing").count() == 1


def test_writes_without_the_csrf_token_are_refused(system: dict[str, Any]) -> None:
    """A form posted from another site carries no token: refused, nothing changes."""
    request = urllib.request.Request(system["console"].url + "/topics/orders/delete",
                                     data=b"confirmed=yes", method="POST")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=10)
    assert refused.value.code == 403
    assert b"CSRF" in refused.value.read()
    with urllib.request.urlopen(system["console"].url + "/api/topics/orders", timeout=10) as r:
        assert r.status == 200
