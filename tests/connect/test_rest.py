"""The Connect REST API over HTTP, as users drive it: paths, status codes, JSON shapes (§5.1)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from helpers import wait_until
from worker_helpers import ThreadedWorker, http, standalone, status_state, wait_running

from streams import __version__


@pytest.fixture
def worker(tmp_path: Path, broker) -> Iterator[ThreadedWorker]:
    instance = standalone(tmp_path, broker.bootstrap)
    try:
        yield instance
    finally:
        instance.stop()


def source_config(tmp_path: Path, topic: str = "lines", **extra: str) -> dict[str, str]:
    path = tmp_path / "input.txt"
    if not path.exists():
        path.write_text("a\nb\nc\n")
    return {"connector.class": "FileStreamSource", "file": str(path), "topic": topic,
            "value.converter": "org.apache.kafka.connect.storage.StringConverter", **extra}


def sink_config(tmp_path: Path, **extra: str) -> dict[str, str]:
    return {"connector.class": "FileStreamSink", "file": str(tmp_path / "out.txt"),
            "topics": "lines", "value.converter": "StringConverter", **extra}


def test_root_health_and_unknown_paths(worker: ThreadedWorker) -> None:
    code, body = http("GET", worker.url + "/")
    assert code == 200 and set(body) == {"version", "commit", "kafka_cluster_id"}
    assert body["kafka_cluster_id"]
    code, body = http("GET", worker.url + "/health")
    assert code == 200 and body["status"] == "healthy"
    code, body = http("GET", worker.url + "/no/such/path")
    assert code == 404 and body["error_code"] == 404 and body["message"]


def test_create_get_list_and_conflict(worker: ThreadedWorker, tmp_path: Path) -> None:
    url = worker.url
    assert http("GET", url + "/connectors") == (200, [])
    code, info = http("POST", url + "/connectors",
                      {"name": "src", "config": source_config(tmp_path)})
    assert code == 201
    assert info["name"] == "src" and info["type"] == "source"
    assert info["config"]["name"] == "src" and info["config"]["topic"] == "lines"
    assert info["tasks"] == [{"connector": "src", "task": 0}]

    code, body = http("POST", url + "/connectors", {"name": "src",
                                                      "config": source_config(tmp_path)})
    assert code == 409 and body == {"error_code": 409,
                                    "message": "Connector src already exists"}

    assert http("GET", url + "/connectors") == (200, ["src"])
    code, got = http("GET", url + "/connectors/src")
    assert code == 200 and got == info
    assert http("GET", url + "/connectors/src/config") == (200, info["config"])

    wait_running(url, "src", 1)
    code, expanded = http("GET", url + "/connectors?expand=status&expand=info")
    assert code == 200 and set(expanded) == {"src"}
    assert expanded["src"]["info"] == info
    status = expanded["src"]["status"]
    assert status["name"] == "src" and status["type"] == "source"
    assert status["connector"]["state"] == "RUNNING" and status["connector"]["worker_id"]
    assert status["tasks"] == [{"id": 0, "state": "RUNNING",
                                "worker_id": status["connector"]["worker_id"],
                                "version": __version__}]
    code, only_status = http("GET", url + "/connectors?expand=status")
    assert code == 200 and set(only_status["src"]) == {"status"}

    code, tasks = http("GET", url + "/connectors/src/tasks")
    assert code == 200 and tasks[0]["id"] == {"connector": "src", "task": 0}
    assert tasks[0]["config"]["topic"] == "lines"
    code, tasks_config = http("GET", url + "/connectors/src/tasks-config")
    assert code == 200 and tasks_config["src-0"]["topic"] == "lines"
    code, task_status = http("GET", url + "/connectors/src/tasks/0/status")
    assert code == 200 and task_status["id"] == 0 and task_status["state"] == "RUNNING"
    code, body = http("GET", url + "/connectors/src/tasks/7/status")
    assert code == 404 and body["error_code"] == 404


def test_unknown_connector_is_404_everywhere(worker: ThreadedWorker) -> None:
    url = worker.url + "/connectors/nope"
    for method, path in [("GET", ""), ("GET", "/config"), ("GET", "/status"), ("GET", "/tasks"),
                         ("DELETE", ""), ("PUT", "/pause"), ("PUT", "/resume"), ("PUT", "/stop"),
                         ("POST", "/restart"), ("POST", "/tasks/0/restart"),
                         ("GET", "/offsets"), ("GET", "/topics"), ("PATCH", "/config")]:
        code, body = http(method, url + path, {} if method == "PATCH" else None)
        assert code == 404, (method, path, code, body)
        assert body == {"error_code": 404, "message": "Connector nope not found"}, (method, path)


def test_invalid_configs_are_400(worker: ThreadedWorker, tmp_path: Path) -> None:
    url = worker.url
    code, body = http("POST", url + "/connectors",
                      {"name": "bad", "config": {"connector.class": "NoSuchConnector"}})
    assert code == 400 and body["error_code"] == 400 and "NoSuchConnector" in body["message"]
    code, body = http("POST", url + "/connectors",
                      {"name": "bad", "config": {"connector.class": "FileStreamSource"}})
    assert code == 400 and "topic" in body["message"]
    code, body = http("POST", url + "/connectors", {"name": "bad", "config": {
        "connector.class": "FileStreamSink", "file": str(tmp_path / "x")}})
    assert code == 400 and "topics" in body["message"]
    code, body = http("POST", url + "/connectors", {"name": "bad", "config": {
        **sink_config(tmp_path), "tasks.max": "zero"}})
    assert code == 400 and "tasks.max" in body["message"]
    code, body = http("POST", url + "/connectors", {"config": sink_config(tmp_path)})
    assert code == 400
    assert http("GET", url + "/connectors") == (200, [])


def test_put_and_patch_config(worker: ThreadedWorker, tmp_path: Path) -> None:
    url = worker.url
    config = sink_config(tmp_path)
    code, info = http("PUT", url + "/connectors/snk/config", config)
    assert code == 201 and info["name"] == "snk" and info["type"] == "sink"
    wait_running(url, "snk", 1)
    code, info = http("PUT", url + "/connectors/snk/config", {**config, "tasks.max": "2"})
    assert code == 200 and info["config"]["tasks.max"] == "2"
    wait_until(lambda: len(http("GET", url + "/connectors/snk")[1]["tasks"]) == 2,
               message="two tasks")
    wait_running(url, "snk", 2)

    code, info = http("PATCH", url + "/connectors/snk/config",
                      {"tasks.max": "1", "errors.log.enable": "true"})
    assert code == 200
    assert info["config"]["tasks.max"] == "1" and info["config"]["errors.log.enable"] == "true"
    assert info["config"]["file"] == config["file"]
    code, info = http("PATCH", url + "/connectors/snk/config", {"errors.log.enable": None})
    assert code == 200 and "errors.log.enable" not in info["config"]

    code, body = http("PUT", url + "/connectors/snk/config", {**config, "name": "other"})
    assert code == 400 and "doesn't match" in body["message"]


def test_pause_resume_stop_delete(worker: ThreadedWorker, tmp_path: Path) -> None:
    url = worker.url
    assert http("POST", url + "/connectors",
                {"name": "src", "config": source_config(tmp_path)})[0] == 201
    wait_running(url, "src", 1)

    assert http("PUT", url + "/connectors/src/pause") == (202, None)
    assert http("PUT", url + "/connectors/src/pause") == (202, None)  # idempotent
    wait_until(lambda: status_state(url, "src") == ("PAUSED", ["PAUSED"]), message="paused")
    assert http("PUT", url + "/connectors/src/resume") == (202, None)
    wait_running(url, "src", 1)

    assert http("PUT", url + "/connectors/src/stop") == (204, None)
    assert http("PUT", url + "/connectors/src/stop") == (204, None)
    wait_until(lambda: status_state(url, "src") == ("STOPPED", []), message="stopped")
    assert http("GET", url + "/connectors/src")[1]["tasks"] == []
    assert http("PUT", url + "/connectors/src/resume") == (202, None)
    wait_running(url, "src", 1)

    assert http("DELETE", url + "/connectors/src") == (204, None)
    assert http("GET", url + "/connectors") == (200, [])
    assert http("GET", url + "/connectors/src")[0] == 404


def test_initial_state(worker: ThreadedWorker, tmp_path: Path) -> None:
    url = worker.url
    code, info = http("POST", url + "/connectors", {"name": "p", "initial_state": "PAUSED",
                                                    "config": source_config(tmp_path)})
    assert code == 201
    wait_until(lambda: status_state(url, "p") == ("PAUSED", ["PAUSED"]), message="paused")
    code, info = http("POST", url + "/connectors", {"name": "s", "initial_state": "STOPPED",
                                                    "config": source_config(tmp_path)})
    assert code == 201 and info["tasks"] == []
    wait_until(lambda: status_state(url, "s") == ("STOPPED", []), message="stopped")
    code, body = http("POST", url + "/connectors", {"name": "x", "initial_state": "SLEEPING",
                                                    "config": source_config(tmp_path)})
    assert code == 400


def test_restart_variants(worker: ThreadedWorker, tmp_path: Path) -> None:
    url = worker.url
    assert http("POST", url + "/connectors",
                {"name": "src", "config": source_config(tmp_path)})[0] == 201
    wait_running(url, "src", 1)
    assert http("POST", url + "/connectors/src/restart") == (204, None)
    assert http("POST", url + "/connectors/src/restart?includeTasks=false&onlyFailed=false") \
        == (204, None)
    wait_running(url, "src", 1)

    code, body = http("POST", url + "/connectors/src/restart?includeTasks=true")
    assert code == 202
    assert body["name"] == "src" and body["connector"]["state"] == "RESTARTING"
    assert body["tasks"][0]["state"] == "RESTARTING"
    wait_running(url, "src", 1)

    # Nothing failed: onlyFailed restarts nothing, and says so.
    code, body = http("POST", url + "/connectors/src/restart?includeTasks=true&onlyFailed=true")
    assert code == 202 and body["connector"]["state"] == "RUNNING"
    assert body["tasks"][0]["state"] == "RUNNING"

    assert http("POST", url + "/connectors/src/tasks/0/restart") == (204, None)
    wait_running(url, "src", 1)
    assert http("POST", url + "/connectors/src/tasks/3/restart")[0] == 404
    assert http("POST", url + "/connectors/src/restart?includeTasks=maybe")[0] == 400


def test_restart_only_failed_restarts_a_failed_task(worker: ThreadedWorker,
                                                    tmp_path: Path) -> None:
    url = worker.url
    # A task that cannot start (its file is a directory) fails; fixing the file and restarting
    # the failed task brings it back.
    bad = tmp_path / "later.txt"
    bad.mkdir()
    config = source_config(tmp_path, file=str(bad))
    assert http("POST", url + "/connectors", {"name": "f", "config": config})[0] == 201
    wait_until(lambda: status_state(url, "f")[1] == ["FAILED"], message="task failed")
    code, status = http("GET", url + "/connectors/f/status")
    assert status["tasks"][0]["trace"]
    bad.rmdir()
    bad.write_text("x\n")
    code, body = http("POST", url + "/connectors/f/restart?includeTasks=true&onlyFailed=true")
    assert code == 202
    assert body["connector"]["state"] == "RUNNING" and body["tasks"][0]["state"] == "RESTARTING"
    wait_running(url, "f", 1)


def test_topics_and_reset(worker: ThreadedWorker, tmp_path: Path) -> None:
    url = worker.url
    assert http("POST", url + "/connectors",
                {"name": "src", "config": source_config(tmp_path, topic="t1")})[0] == 201
    wait_until(lambda: http("GET", url + "/connectors/src/topics")[1] == {"src": {"topics":
                                                                                  ["t1"]}},
               message="active topic")
    assert http("PUT", url + "/connectors/src/topics/reset") == (202, None)
    assert http("GET", url + "/connectors/src/topics") == (200, {"src": {"topics": []}})


def test_source_offsets_get_alter_reset(worker: ThreadedWorker, tmp_path: Path) -> None:
    url = worker.url
    config = source_config(tmp_path)
    assert http("POST", url + "/connectors", {"name": "src", "config": config})[0] == 201
    partition = {"filename": config["file"]}
    expected = {"offsets": [{"partition": partition, "offset": {"position": 6}}]}
    wait_until(lambda: http("GET", url + "/connectors/src/offsets") == (200, expected),
               message="committed offsets")

    change = {"offsets": [{"partition": partition, "offset": {"position": 2}}]}
    code, body = http("PATCH", url + "/connectors/src/offsets", change)
    assert code == 400 and "STOPPED" in body["message"]
    assert http("DELETE", url + "/connectors/src/offsets")[0] == 400

    assert http("PUT", url + "/connectors/src/stop")[0] == 204
    code, body = http("PATCH", url + "/connectors/src/offsets", change)
    assert code == 200 and "altered successfully" in body["message"]
    assert http("GET", url + "/connectors/src/offsets")[1]["offsets"][0]["offset"] == \
        {"position": 2}
    code, body = http("PATCH", url + "/connectors/src/offsets", {"offsets": [
        {"partition": partition, "offset": {"position": -5}}]})
    assert code == 400 and "position" in body["message"]

    code, body = http("DELETE", url + "/connectors/src/offsets")
    assert code == 200 and "reset successfully" in body["message"]
    assert http("GET", url + "/connectors/src/offsets") == (200, {"offsets": []})


def test_sink_offsets(worker: ThreadedWorker, tmp_path: Path, broker) -> None:
    from worker_helpers import produce

    url = worker.url
    produce(broker.bootstrap, "lines", [b"1", b"2", b"3"])
    assert http("POST", url + "/connectors", {"name": "snk",
                                              "config": sink_config(tmp_path)})[0] == 201
    sink_partition = {"kafka_topic": "lines", "kafka_partition": 0}
    wait_until(lambda: http("GET", url + "/connectors/snk/offsets")[1] == {
        "offsets": [{"partition": sink_partition, "offset": {"kafka_offset": 3}}]},
        message="sink offsets committed")
    assert http("PUT", url + "/connectors/snk/stop")[0] == 204
    code, body = http("PATCH", url + "/connectors/snk/offsets", {"offsets": [
        {"partition": sink_partition, "offset": {"kafka_offset": 1}}]})
    assert code == 200, body
    assert http("GET", url + "/connectors/snk/offsets")[1]["offsets"][0]["offset"] == \
        {"kafka_offset": 1}
    code, body = http("PATCH", url + "/connectors/snk/offsets", {"offsets": [
        {"partition": {"kafka_topic": "lines"}, "offset": {"kafka_offset": 1}}]})
    assert code == 400
    assert http("DELETE", url + "/connectors/snk/offsets")[0] == 200
    assert http("GET", url + "/connectors/snk/offsets") == (200, {"offsets": []})
    # Resumed, it re-reads from the start: offset 0..2 again after the reset.
    assert http("PUT", url + "/connectors/snk/resume")[0] == 202
    out = tmp_path / "out.txt"
    wait_until(lambda: out.exists() and out.read_text().splitlines() == ["1", "2", "3"] * 2,
               message="records re-delivered after the offset reset")


def test_plugins_list_config_and_validate(worker: ThreadedWorker, tmp_path: Path) -> None:
    url = worker.url
    code, plugins = http("GET", url + "/connector-plugins")
    assert code == 200
    classes = {p["class"]: p for p in plugins}
    assert classes["org.apache.kafka.connect.file.FileStreamSourceConnector"]["type"] == "source"
    assert classes["org.apache.kafka.connect.file.FileStreamSinkConnector"]["type"] == "sink"
    assert any(p["class"].endswith("DataGenConnector") for p in plugins)
    assert all(set(p) == {"class", "type", "version"} for p in plugins)

    code, everything = http("GET", url + "/connector-plugins?connectorsOnly=false")
    assert code == 200
    types = {p["type"] for p in everything}
    assert {"source", "sink", "converter", "transformation", "predicate"} <= types
    assert any(p["class"] == "org.apache.kafka.connect.json.JsonConverter" for p in everything)

    code, keys = http("GET", url + "/connector-plugins/FileStreamSource/config")
    assert code == 200
    by_name = {k["name"]: k for k in keys}
    assert by_name["topic"]["required"] is True and by_name["topic"]["type"] == "STRING"
    assert by_name["batch.size"]["default_value"] == "2000"
    assert http("GET", url + "/connector-plugins/Nope/config")[0] == 404

    code, result = http("PUT", url + "/connector-plugins/FileStreamSink/config/validate",
                        {"connector.class": "FileStreamSink", "tasks.max": "-1"})
    assert code == 200
    assert result["name"] == "org.apache.kafka.connect.file.FileStreamSinkConnector"
    assert result["error_count"] >= 3  # name missing, tasks.max < 1, no topics
    assert "Common" in result["groups"]
    configs = {c["definition"]["name"]: c for c in result["configs"]}
    assert configs["tasks.max"]["value"]["errors"]
    assert configs["name"]["value"]["errors"]
    assert configs["file"]["value"]["errors"] == []
    entry = configs["tasks.max"]
    assert set(entry["value"]) == {"name", "value", "recommended_values", "errors", "visible"}
    assert {"name", "type", "required", "default_value", "importance", "documentation",
            "group", "order_in_group", "width", "display_name", "dependents"} <= \
        set(entry["definition"])

    code, result = http("PUT", url + "/connector-plugins/FileStreamSink/config/validate",
                        {"name": "ok", **sink_config(tmp_path)})
    assert code == 200 and result["error_count"] == 0
    code, body = http("PUT", url + "/connector-plugins/FileStreamSink/config/validate",
                      {"connector.class": "FileStreamSource"})
    assert code == 400


def test_admin_loggers(worker: ThreadedWorker) -> None:
    url = worker.url
    code, body = http("PUT", url + "/admin/loggers/connect.test", {"level": "DEBUG"})
    assert code == 200 and "connect.test" in body
    code, body = http("GET", url + "/admin/loggers")
    assert code == 200 and body["connect.test"]["level"] == "DEBUG"
    assert http("GET", url + "/admin/loggers/connect.test")[1]["level"] == "DEBUG"
    assert http("PUT", url + "/admin/loggers/connect.test", {})[0] == 400
