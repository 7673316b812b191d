"""A Connect worker moving a file through a topic into another file, scraped on its REST
listener and on metrics.listener: the counts match the lines that went through."""

from __future__ import annotations

import sys
from pathlib import Path

from helpers import free_port, wait_until

from .scrape import health, scrape, value

sys.path.insert(0, str(Path(__file__).parent.parent / "connect"))
from worker_helpers import standalone, wait_running  # noqa: E402

LINES = 120
SOURCE = "kafka_connect_source_task_metrics_"
SINK = "kafka_connect_sink_task_metrics_"


def test_connect_worker_metrics_match_the_lines_moved(broker, tmp_path) -> None:
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    source_file.write_text("".join(f"line-{i}\n" for i in range(LINES)))
    metrics_url = f"http://127.0.0.1:{free_port()}"
    worker = standalone(tmp_path, broker.bootstrap, **{
        "metrics.listener": metrics_url,
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter"})
    try:
        worker.put_connector({"name": "src", "connector.class": "FileStreamSource",
                              "file": str(source_file), "topic": "lines", "batch.size": "50"})
        worker.put_connector({"name": "snk", "connector.class": "FileStreamSink",
                              "file": str(sink_file), "topics": "lines"})
        wait_running(worker.url, "src", 1)
        wait_running(worker.url, "snk", 1)
        wait_until(lambda: sink_file.exists() and
                   len(sink_file.read_text().splitlines()) >= LINES, 60,
                   message=f"{LINES} lines through the sink")

        def committed() -> bool:
            m = scrape(worker.url)  # /metrics on the REST listener
            ok = "kafka_connect_connector_task_metrics_offset_commit_success_total"
            # the source task counts a record written when its loop sees the ack, which
            # can be a poll round after the sink already wrote the line
            written = value(m, SOURCE + "source_record_write_total", connector="src", task=0)
            return (value(m, ok, connector="src", task=0) or 0) >= 1 and \
                (value(m, ok, connector="snk", task=0) or 0) >= 1 and written == LINES
        wait_until(committed, 30, message="offset commits of both tasks, every line acked")
        for url in (worker.url, metrics_url):
            m = scrape(url)
            task = {"connector": "src", "task": 0}
            assert value(m, SOURCE + "source_record_poll_total", **task) == LINES
            assert value(m, SOURCE + "source_record_write_total", **task) == LINES
            assert value(m, SINK + "sink_record_read_total", connector="snk", task=0) == LINES
            assert value(m, SINK + "sink_record_send_total", connector="snk", task=0) == LINES
            assert value(m, "kafka_connect_connect_worker_metrics_connector_count") == 2
            assert value(m, "kafka_connect_connect_worker_metrics_task_count") == 2
            assert value(m, "kafka_connect_connector_metrics_status", connector="src",
                         status="running") == 1
            assert value(m, "kafka_connect_connector_task_metrics_status", connector="snk",
                         task=0, status="running") == 1
            assert value(m, "kafka_connect_task_error_metrics_total_record_errors_total",
                         **task) == 0
            assert value(m, "kafka_connect_task_error_metrics_deadletterqueue_produce_requests_total",
                         connector="snk", task=0) == 0
        status, body = health(metrics_url)
        assert status == 200 and body["tasks"] == 2
    finally:
        worker.stop()


def test_connect_error_metrics_count_dead_letters(broker, tmp_path) -> None:
    from worker_helpers import produce

    values = [b'{"n": 1}', b"not json", b'{"n": 2}', b'"a string"', b'{"n": 3}']
    produce(broker.bootstrap, "input", values)
    out = tmp_path / "out.txt"
    worker = standalone(tmp_path, broker.bootstrap, **{
        "value.converter": "org.apache.kafka.connect.json.JsonConverter",
        "value.converter.schemas.enable": "false"})
    try:
        worker.put_connector({
            "name": "snk", "connector.class": "FileStreamSink", "file": str(out),
            "topics": "input", "transforms": "extract",
            "transforms.extract.type": "ExtractField$Value", "transforms.extract.field": "n",
            "errors.tolerance": "all", "errors.deadletterqueue.topic.name": "dlq",
            "errors.deadletterqueue.topic.replication.factor": "1"})
        wait_until(lambda: out.exists() and len(out.read_text().splitlines()) == 3, 60,
                   message="the good records in the file")
        m = scrape(worker.url)
        task = {"connector": "snk", "task": 0}
        errors = "kafka_connect_task_error_metrics_"
        assert value(m, SINK + "sink_record_read_total", **task) == 5
        assert value(m, SINK + "sink_record_send_total", **task) == 3
        assert value(m, errors + "total_record_errors_total", **task) == 2
        assert value(m, errors + "total_records_skipped_total", **task) == 2
        assert value(m, errors + "deadletterqueue_produce_requests_total", **task) == 2
        assert value(m, errors + "deadletterqueue_produce_failures_total", **task) == 0
    finally:
        worker.stop()
