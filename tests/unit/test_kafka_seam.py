"""The Kafka-client seam holds: outside ``streams/kafka/`` no module of the product builds an
aiokafka client itself, imports aiokafka's private modules, reaches into an aiokafka object's
private attributes, or writes a Kafka request format (aiokafka's protocol struct types). Clients
come from ``streams.kafka.clients`` (one way to configure them), what aiokafka has no public API
for lives in ``streams.kafka.internals`` (contract-tested), request formats in
``streams.kafka.requests`` and ``group_requests``. The Spark source and sink go further: they
send no raw request and decode no record batch themselves (``streams.kafka.fetch`` reads ranges,
``streams.kafka.internals`` sends the sink's Metadata and EndTxn)."""

from __future__ import annotations

import ast
import functools
import inspect
from pathlib import Path

from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.client import AIOKafkaClient

ROOT = Path(__file__).resolve().parents[2]
SEAM = ROOT / "streams" / "kafka"
CLIENT_CLASSES = {"AIOKafkaConsumer", "AIOKafkaProducer", "AIOKafkaAdminClient", "AIOKafkaClient"}
# aiokafka modules with no public API: the network client, connections, the producer's sender
# and transaction manager, the consumer's fetcher and group coordinator.
PRIVATE_MODULES = ("aiokafka.client", "aiokafka.conn", "aiokafka.producer", "aiokafka.consumer")
# The struct types a request format is written in (Request, RequestStruct, Response, Schema ...).
FORMAT_MODULES = ("aiokafka.protocol.api", "aiokafka.protocol.types", "aiokafka.protocol.struct")
# Folders that use streams/kafka for every request and record batch: no aiokafka request class
# (aiokafka.protocol.*) and no record batch code (aiokafka.record.*) imported at all.
RAW_FREE = (ROOT / "streams" / "spark",)
RAW_MODULES = ("aiokafka.protocol", "aiokafka.record")


def product_modules() -> list[Path]:
    files = [p for folder in ("streams", "connect") for p in (ROOT / folder).rglob("*.py")]
    return sorted(p for p in files if SEAM not in p.parents)


def _private_names(source: str) -> set[str]:
    names: set[str] = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Attribute):
            names.add(node.attr)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            names.add(node.name)
    return {n for n in names if n.startswith("_") and not n.startswith("__")}


@functools.cache
def private_attributes() -> frozenset[str]:
    """``_names`` the aiokafka client classes' modules use and our own code never defines:
    reaching for one of them on an object depends on aiokafka's internals (``_loop`` or
    ``_metadata`` are ours too, so they cannot tell)."""
    theirs: set[str] = set()
    for cls in (AIOKafkaConsumer, AIOKafkaProducer, AIOKafkaAdminClient, AIOKafkaClient):
        theirs |= _private_names(inspect.getsource(inspect.getmodule(cls)))  # type: ignore[arg-type]
    ours: set[str] = set()
    for path in product_modules():
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and \
                    node.value.id in ("self", "cls") and isinstance(node.ctx, ast.Store):
                ours.add(node.attr)
            elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                ours.add(node.name)
            elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name):
                ours.add(node.target.id)  # dataclass fields
    return frozenset(theirs - ours)


def violations(text: str, where: str, private: frozenset[str], raw_free: bool = False
               ) -> list[str]:
    """Each forbidden use in one module's source, as ``where:line what``, in line order;
    ``raw_free``: the module may not import aiokafka's request classes or record code either."""
    found: list[tuple[int, str]] = []
    for node in ast.walk(ast.parse(text, where)):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith(FORMAT_MODULES):
                found.append((node.lineno, f"writes request formats with {node.module} "
                                           "(streams.kafka.requests)"))
            elif raw_free and node.module.startswith(RAW_MODULES):
                found.append((node.lineno, f"builds requests or record batches with "
                                           f"{node.module} (streams.kafka)"))
        if isinstance(node, ast.Call):
            func = node.func
            name = func.id if isinstance(func, ast.Name) else \
                func.attr if isinstance(func, ast.Attribute) else None
            if name in CLIENT_CLASSES:
                found.append((node.lineno, f"builds {name} (use streams.kafka.clients)"))
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0 and \
                node.module.startswith(PRIVATE_MODULES):
            found.append((node.lineno, f"imports {node.module}"))
        elif isinstance(node, ast.Attribute) and node.attr in private and not (
                isinstance(node.value, ast.Name) and node.value.id in ("self", "cls")):
            found.append((node.lineno, f"uses the private .{node.attr}"))
    return [f"{where}:{line} {what}" for line, what in sorted(found)]


def test_only_streams_kafka_builds_clients_or_touches_aiokafka_privates() -> None:
    private = private_attributes()
    assert {"_send_request", "_coordinator", "_get_cluster_metadata"} <= private  # sees aiokafka
    found = [line for path in product_modules()
             for line in violations(path.read_text(), str(path.relative_to(ROOT)), private,
                                    raw_free=any(folder in path.parents for folder in RAW_FREE))]
    assert found == []


def test_the_spark_source_and_sink_are_held_to_the_raw_rule() -> None:
    spark = [p for p in product_modules() if RAW_FREE[0] in p.parents]
    assert {"kafka_read.py", "kafka_write.py", "source.py", "sink.py"} <= {p.name for p in spark}


def test_the_scan_reports_each_forbidden_use() -> None:
    text = ("from aiokafka.client import AIOKafkaClient\n"
            "import aiokafka\n"
            "def f(admin, settings):\n"
            "    admin._send_request(None, 1)\n"
            "    consumer = aiokafka.AIOKafkaConsumer(**settings)\n"
            "    self._client = AIOKafkaClient(**settings)\n"
            "    return consumer\n")
    assert violations(text, "sample.py", private_attributes()) == [
        "sample.py:1 imports aiokafka.client",
        "sample.py:4 uses the private ._send_request",
        "sample.py:5 builds AIOKafkaConsumer (use streams.kafka.clients)",
        "sample.py:6 builds AIOKafkaClient (use streams.kafka.clients)"]


def test_the_scan_reports_request_formats_and_raw_requests() -> None:
    text = ("from aiokafka.protocol.api import Request\n"
            "from aiokafka.protocol.fetch import FetchRequest\n"
            "from aiokafka.record.memory_records import MemoryRecords\n")
    assert violations(text, "cli.py", private_attributes()) == [
        "cli.py:1 writes request formats with aiokafka.protocol.api (streams.kafka.requests)"]
    assert violations(text, "spark.py", private_attributes(), raw_free=True) == [
        "spark.py:1 writes request formats with aiokafka.protocol.api (streams.kafka.requests)",
        "spark.py:2 builds requests or record batches with aiokafka.protocol.fetch "
        "(streams.kafka)",
        "spark.py:3 builds requests or record batches with aiokafka.record.memory_records "
        "(streams.kafka)"]
