"""A distributed Connect worker over SASL_SSL as a restricted principal: secrets from config
providers, connector clients configured by producer.*/consumer.*, REST masking, override policy."""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers import free_port, wait_until
from runtime.kafka_io import create_topics
from worker_helpers import WorkerProcess, consume_all, http

from connect.rest.server import _masked_validation
from connect.runtime.config import WorkerConfig
from connect.runtime.config_providers import ConfigProviders, mask_connector_config
from streams.config import ConfigError

from .conftest import PASSWORDS, SCRAM, SecureKafka, create_acls

FILE_PROVIDER = "org.apache.kafka.common.config.provider.FileConfigProvider"
ENV_PROVIDER = "org.apache.kafka.common.config.provider.EnvVarConfigProvider"


def worker_properties(tmp_path: Path, kafka: SecureKafka, secrets: Path) -> tuple[Path, str]:
    """Kafka Connect's way: the worker's own clients, and again for producer./consumer.; the
    password itself comes from a secrets file through the file config provider."""
    port = free_port()
    security = {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-256",
        "sasl.jaas.config": f"${{file:{secrets}:worker.jaas}}",
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(kafka.pki.truststore),
    }
    lines = {
        "bootstrap.servers": kafka.sasl_ssl,
        "listeners": f"http://127.0.0.1:{port}",
        "group.id": "sec-connect-cluster",
        "config.storage.topic": "sec-connect-configs",
        "offset.storage.topic": "sec-connect-offsets",
        "status.storage.topic": "sec-connect-status",
        "config.storage.replication.factor": "1",
        "offset.storage.replication.factor": "1",
        "status.storage.replication.factor": "1",
        "offset.storage.partitions": "2",
        "status.storage.partitions": "1",
        "offset.flush.interval.ms": "200",
        "key.converter": "org.apache.kafka.connect.storage.StringConverter",
        "value.converter": "org.apache.kafka.connect.storage.StringConverter",
        "config.providers": "file,env",
        "config.providers.file.class": FILE_PROVIDER,
        "config.providers.env.class": ENV_PROVIDER,
        "connector.client.config.override.policy": "Principal",
        **security,
        **{f"producer.{k}": v for k, v in security.items()},
        **{f"consumer.{k}": v for k, v in security.items()},
    }
    path = tmp_path / "worker.properties"
    path.write_text("".join(f"{k}={v}\n" for k, v in lines.items()))
    return path, f"http://127.0.0.1:{port}"


def test_distributed_worker_over_sasl_ssl(secure_kafka: SecureKafka, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    principal = "User:worker"
    create_acls(secure_kafka.plaintext, [
        ("TOPIC", "sec-", "PREFIXED", principal, "ALL"),
        ("GROUP", "sec-connect-cluster", "LITERAL", principal, "ALL"),
        ("GROUP", "connect-", "PREFIXED", principal, "ALL"),  # sink connectors' groups
    ])
    create_topics(secure_kafka.plaintext, {"sec-lines": 1})
    secrets = tmp_path / "secrets.properties"
    jaas = f'{SCRAM} required username="worker" password="{PASSWORDS["worker"]}";'
    secrets.write_text(f"worker.jaas={jaas}\n")
    source_file, sink_file = tmp_path / "in.txt", tmp_path / "out.txt"
    source_file.write_text("".join(f"line-{i}\n" for i in range(20)))
    monkeypatch.setenv("SEC_SINK_FILE", str(sink_file))
    monkeypatch.setenv("SEC_TASKS_MAX", "1")
    props, url = worker_properties(tmp_path, secure_kafka, secrets)
    worker = WorkerProcess(["distributed", str(props)], tmp_path / "worker.log", url).start()
    try:
        code, body = http("PUT", f"{url}/connectors/sec-source/config", {
            "connector.class": "FileStreamSource", "file": str(source_file),
            "topic": "sec-lines", "tasks.max": "${env:SEC_TASKS_MAX}"})  # checked resolved
        assert code == 201, body
        sink = {"connector.class": "FileStreamSink", "file": "${env:SEC_SINK_FILE}",
                "topics": "sec-lines", "tasks.max": "1",
                # Principal policy: the SASL login may be overridden per connector.
                "consumer.override.sasl.jaas.config": jaas}
        code, body = http("PUT", f"{url}/connectors/sec-sink/config", sink)
        assert code == 201, body
        assert body["config"]["consumer.override.sasl.jaas.config"] == "[hidden]"
        wait_until(lambda: sink_file.exists() and len(sink_file.read_text().splitlines()) == 20,
                   90, message=f"the sink wrote 20 lines; log: {tmp_path / 'worker.log'}")
        assert sink_file.read_text().splitlines() == [f"line-{i}" for i in range(20)]
        records = consume_all(secure_kafka.plaintext, "sec-lines", 20, timeout=30)
        assert [r.value for r in records] == [f"line-{i}".encode() for i in range(20)]

        code, config = http("GET", f"{url}/connectors/sec-sink/config")
        assert code == 200
        assert config["consumer.override.sasl.jaas.config"] == "[hidden]"
        assert config["file"] == "${env:SEC_SINK_FILE}"  # the reference, not the value
        code, tasks = http("GET", f"{url}/connectors/sec-sink/tasks")
        assert PASSWORDS["worker"] not in str(tasks)

        # The Principal policy refuses any other client override.
        code, body = http("PUT", f"{url}/connectors/sec-bad/config", {
            **sink, "consumer.override.max.poll.records": "5"})
        assert code == 400 and "'Principal' policy does not allow 'max.poll.records'" in \
            body["message"]
    finally:
        worker.stop()
    log = (tmp_path / "worker.log").read_text(errors="replace")
    assert PASSWORDS["worker"] not in log


def test_worker_config_errors_name_the_key_not_the_secret(tmp_path: Path) -> None:
    with pytest.raises(ConfigError) as err:
        WorkerConfig.parse({"security.protocol": "SASL_SSL",
                            "sasl.jaas.config": 'Nope required password="hunter22";'})
    assert "sasl.jaas.config" in str(err.value) and "hunter22" not in str(err.value)
    with pytest.raises(ValueError, match="producer.sasl.jaas.config"):
        WorkerConfig.parse({"producer.security.protocol": "SASL_SSL",
                            "producer.sasl.mechanism": "PLAIN",
                            "producer.sasl.jaas.config": "broken hunter22"})
    with pytest.raises(ConfigError, match="did you mean 'security.protocol'"):
        WorkerConfig.parse({"securty.protocol": "SSL"})
    with pytest.raises(ConfigError, match="override.policy"):
        WorkerConfig.parse({"connector.client.config.override.policy": "Some"})
    config = WorkerConfig.parse({"connector.client.config.override.policy":
                                 "org.apache.kafka.connect.connector.policy."
                                 "NoneConnectorClientConfigOverridePolicy"})
    assert config.connector_client_config_override_policy == "None"
    jaas = f'{SCRAM} required username="w" password="hunter22";'
    config = WorkerConfig.parse({"security.protocol": "SASL_PLAINTEXT",
                                 "sasl.mechanism": "SCRAM-SHA-256", "sasl.jaas.config": jaas,
                                 "producer.sasl.jaas.config": jaas})
    assert "hunter22" not in repr(config) and "hunter22" not in str(config)
    assert config.client_kwargs()["sasl_plain_password"] == "hunter22"
    validated = _masked_validation({"configs": [
        {"definition": {"name": "db.pw", "type": "PASSWORD"},
         "value": {"name": "db.pw", "value": "hunter22", "errors": []}},
        {"definition": {"name": "topic", "type": "STRING"},
         "value": {"name": "topic", "value": "t", "errors": []}}]})
    assert [c["value"]["value"] for c in validated["configs"]] == ["[hidden]", "t"]


def test_config_providers_resolve_file_env_and_dir(tmp_path: Path,
                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "db.properties").write_text("password=s3cret\n")
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir" / "token").write_text("tok-123")
    monkeypatch.setenv("DB_USER", "alice")
    providers = ConfigProviders.from_worker("file,env,dir", {
        "file.class": FILE_PROVIDER, "env.class": ENV_PROVIDER,
        "env.param.allowlist.pattern": "DB_.*",
        "dir.class": "org.apache.kafka.common.config.provider.DirectoryConfigProvider"})
    resolved = providers.resolve({
        "a": f"${{file:{tmp_path}/db.properties:password}}", "b": "${env:DB_USER}",
        "c": f"user=${{env:DB_USER}};token=${{dir:{tmp_path}/dir:token}}",
        "d": "${env:HOME}",  # not allowed by the allowlist: left as written
        "e": "${vault:secret/x:y}",  # unknown provider: left as written (Kafka)
        "f": f"${{file:{tmp_path}/db.properties:missing}}"})
    assert resolved == {"a": "s3cret", "b": "alice", "c": "user=alice;token=tok-123",
                        "d": "${env:HOME}", "e": "${vault:secret/x:y}",
                        "f": f"${{file:{tmp_path}/db.properties:missing}}"}
    with pytest.raises(ConfigError, match="config.providers.file.class"):
        ConfigProviders.from_worker("file", {})
    with pytest.raises(ConfigError, match="unknown provider"):
        ConfigProviders.from_worker("x", {"x.class": "com.example.Vault"})
    masked = mask_connector_config({"connection.password": "pw", "ssl.key.password": "pw",
                                    "producer.override.sasl.jaas.config": "jaas",
                                    "db.password": "${file:/s.properties:pw}", "topic": "t"})
    assert masked == {"connection.password": "[hidden]", "ssl.key.password": "[hidden]",
                      "producer.override.sasl.jaas.config": "[hidden]",
                      "db.password": "${file:/s.properties:pw}", "topic": "t"}


def test_a_worker_with_a_wrong_password_says_why(secure_kafka: SecureKafka,
                                                 tmp_path: Path) -> None:
    import subprocess
    import sys

    secrets = tmp_path / "secrets.properties"
    secrets.write_text(f'worker.jaas={SCRAM} required username="worker" password="nope-nope";\n')
    props, _url = worker_properties(tmp_path, secure_kafka, secrets)
    result = subprocess.run([sys.executable, "-m", "streams.cli.main", "connect", "distributed",
                             str(props)], capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "Authentication failed" in result.stderr, result.stderr[-2000:]
    assert "nope-nope" not in result.stdout + result.stderr
