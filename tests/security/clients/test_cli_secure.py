"""The `streams` client commands on a SASL_SSL cluster with --command-config, as Kafka's tools."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from .conftest import PASSWORDS, SecureKafka

ROOT = Path(__file__).resolve().parents[3]


def cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "streams.cli.main", *args], input=stdin,
                          capture_output=True, text=True, timeout=90, cwd=ROOT)


def ok(*args: str, stdin: str | None = None) -> str:
    result = cli(*args, stdin=stdin)
    assert result.returncode == 0, f"{args} failed: {result.stderr}"
    assert PASSWORDS["admin"] not in result.stdout + result.stderr
    return result.stdout


def test_client_commands_with_command_config(secure_kafka: SecureKafka, tmp_path) -> None:
    props = secure_kafka.properties_file(tmp_path / "client.properties", "admin", "SCRAM-SHA-256")
    conn = ("--bootstrap-servers", secure_kafka.sasl_ssl, "--command-config", str(props))
    ok("topics", "create", "cli-secure", "--partitions", "2", *conn)
    assert "cli-secure" in ok("topics", "list", *conn).split()
    assert "PartitionCount: 2" in ok("topics", "describe", "cli-secure", *conn)
    ok("produce", "cli-secure", "--key-separator", ":", *conn, stdin="k1:one\nk2:two\n")
    out = ok("consume", "cli-secure", "--from-beginning", "--group", "cli-readers",
             "--max-messages", "2", "--timeout-ms", "30000", *conn)
    assert sorted(out.split()) == ["one", "two"]
    assert "cli-readers" in ok("groups", "list", *conn).split()
    described = ok("groups", "describe", "cli-readers", *conn)
    assert "cli-secure" in described
    plan = ok("app", "reset", "--application-id", "cli-readers", "--input-topics", "cli-secure",
              "--dry-run", *conn)
    assert "cli-secure" in plan
    ok("health", "check", "--topic", "cli-secure-health", *conn)
    ok("topics", "delete", "cli-secure", *conn)


def test_without_command_config_the_secured_listener_is_not_reachable(
        secure_kafka: SecureKafka) -> None:
    result = cli("topics", "list", "--bootstrap-servers", secure_kafka.sasl_ssl)
    assert result.returncode != 0
    assert "Traceback" not in result.stderr


def test_bad_command_config_names_the_key_not_the_secret(secure_kafka: SecureKafka,
                                                         tmp_path) -> None:
    bad = tmp_path / "bad.properties"
    bad.write_text("security.protocol=SASL_SSL\nsasl.mechanism=PLAIN\n"
                   f'sasl.jaas.config=PlainLoginModule username="admin" password="{PASSWORDS["admin"]}"\n')
    result = cli("topics", "list", "--bootstrap-servers", secure_kafka.sasl_ssl,
                 "--command-config", str(bad))
    assert result.returncode == 2
    assert "sasl.jaas.config" in result.stderr and PASSWORDS["admin"] not in result.stderr
    typo = tmp_path / "typo.properties"
    typo.write_text("security.protocol=SASL_SSL\nsasl.mechansim=PLAIN\n")
    result = cli("topics", "list", "--bootstrap-servers", secure_kafka.sasl_ssl,
                 "--command-config", str(typo))
    assert result.returncode == 2 and "did you mean 'sasl.mechanism'" in result.stderr
    wrong = secure_kafka.properties_file(tmp_path / "wrong.properties", "admin", "PLAIN")
    wrong.write_text(wrong.read_text().replace(PASSWORDS["admin"], "not-the-password"))
    result = cli("topics", "list", "--bootstrap-servers", secure_kafka.sasl_ssl,
                 "--command-config", str(wrong))
    assert result.returncode == 1 and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert "Authentication failed" in result.stderr  # the broker's reason, in one line
    assert "not-the-password" not in result.stderr


@pytest.mark.parametrize("secure_kafka", ["ours"], indirect=True)  # the runtime is tested on both
def test_streams_run_with_a_secured_properties_file(secure_kafka: SecureKafka, tmp_path) -> None:
    """`streams run app.py --config app.properties`: the Streams properties file carries the
    security keys, as a Kafka Streams app's file does."""
    from runtime.kafka_io import create_topics, latest_by_key, produce, read_all

    create_topics(secure_kafka.plaintext, {"cli-text": 1})
    produce(secure_kafka.plaintext, "cli-text", [(None, b"a b a", 1000), (None, b"b a", 1001)])
    props = secure_kafka.properties_file(tmp_path / "app.properties", "admin", "SCRAM-SHA-256")
    with open(props, "a") as out:
        out.write("processing.guarantee=exactly_once_v2\n")
    log = tmp_path / "run.log"
    with open(log, "wb") as sink:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streams.cli.main", "run", "tests/runtime/wordcount_app.py",
             "--bootstrap-servers", secure_kafka.sasl_ssl, "--config", str(props),
             "--state-dir", str(tmp_path / "state")], stdout=sink, stderr=subprocess.STDOUT,
            cwd=ROOT)
    try:
        counts = read_all(secure_kafka.plaintext, "cli-word-counts",
                          until=lambda rs: latest_by_key(rs) == {"a": 3, "b": 2}, timeout=90)
        assert latest_by_key(counts) == {"a": 3, "b": 2}
    finally:
        proc.terminate()
        proc.wait(60)
    assert proc.returncode == 0, log.read_text(errors="replace")[-3000:]
    assert PASSWORDS["admin"] not in log.read_text(errors="replace")
