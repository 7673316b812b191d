"""`streams registry start` on a SASL_SSL cluster with --command-config: the schemas topic,
its transactional writer and its reader all go through the secured listener."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from helpers import free_port, wait_until

from streams.registry.client import SchemaRegistryClient
from streams.registry.errors import RegistryError

from .conftest import PASSWORDS, SecureKafka

ROOT = Path(__file__).resolve().parents[3]


def test_registry_on_a_secured_cluster(secure_kafka: SecureKafka, tmp_path: Path) -> None:
    props = secure_kafka.properties_file(tmp_path / "client.properties", "admin")
    port = free_port()
    log = tmp_path / "registry.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "streams.cli.main", "registry", "start", "--port", str(port),
             "--bootstrap-servers", secure_kafka.sasl_ssl, "--command-config", str(props),
             "--topic", f"_schemas_secure_{port}"],
            stdout=out, stderr=subprocess.STDOUT, cwd=ROOT)
    try:
        client = SchemaRegistryClient(f"http://127.0.0.1:{port}", timeout=5)

        def up() -> bool:
            assert proc.poll() is None, log.read_text()[-2000:]
            try:
                client.get_subjects()
                return True
            except RegistryError:
                return False

        wait_until(up, 90, message="registry on the secured cluster")
        schema = json.dumps({"type": "record", "name": "S", "fields": [
            {"name": "f", "type": "string"}]})
        schema_id = client.register("secure-value", schema)
        assert client.get_schema(schema_id).schema == schema
    finally:
        proc.terminate()
        proc.wait(30)
    assert PASSWORDS["admin"] not in log.read_text()
