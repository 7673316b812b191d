"""The oracle: the broker serves a real client, logged no traceback, and its memory is bounded."""

from __future__ import annotations

import asyncio
import re
from dataclasses import dataclass

from .broker import BrokerProcess

ORACLE_TOPIC = "fz-oracle"
RSS_LIMIT_KIB = 1 << 20  # 1 GiB
_FILE_LINE = re.compile(r'^\s*File "([^"]+)", line (\d+), in (\S+)', re.M)


@dataclass(frozen=True, slots=True)
class Traceback:
    signature: str  # exception type and the innermost frame in the broker
    text: str


def tracebacks(log_text: str) -> list[Traceback]:
    """Every Python traceback in a chunk of broker log."""
    out = []
    for block in log_text.split("Traceback (most recent call last):")[1:]:
        lines = block.splitlines()
        frames = _FILE_LINE.findall(block)
        last = next((ln.strip() for ln in lines[1:] if ln and not ln.startswith((" ", "\t"))),
                    "?")
        ours = [f for f in frames if "/streams/" in f[0]] or frames
        where = f"{ours[-1][0].rsplit('/streams/', 1)[-1]}:{ours[-1][2]}" if ours else "?"
        error = last.split(":", 1)[0]
        end = lines.index(last) if last in lines else len(lines) - 1
        shown = lines[max(0, end - 14) : end + 1]  # the innermost frames and the exception
        out.append(Traceback(f"{error} in {where}",
                             "Traceback (most recent call last): ...\n" + "\n".join(shown)))
    return out


_HANDLER_FAILED = re.compile(r" ERROR streams\.broker.*?(api_key=-?\d+ v-?\d+).*? failed: ([\w.]+): ?(.*)")


def handler_failures(log_text: str) -> list[str]:
    """Signatures of requests whose handler raised (logged as one ERROR line, no traceback)."""
    return [f"{m[0]} raised {m[1]}: {m[2][:60]}" for m in _HANDLER_FAILED.findall(log_text)]


def round_trip(bootstrap: str, value: bytes, timeout: float = 30.0) -> str | None:
    """Produce ``value`` with aiokafka and read it back; None on success, else why not."""
    try:
        return asyncio.run(asyncio.wait_for(_round_trip(bootstrap, value), timeout))
    except TimeoutError:
        return f"round trip did not finish within {timeout}s"
    except Exception as exc:  # noqa: BLE001 - any client failure is the finding
        return f"round trip failed: {type(exc).__name__}: {exc}"


async def _round_trip(bootstrap: str, value: bytes) -> str | None:
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer, TopicPartition

    producer = AIOKafkaProducer(bootstrap_servers=bootstrap, acks="all")
    try:
        await producer.start()
        meta = await producer.send_and_wait(ORACLE_TOPIC, value, partition=0)
    finally:
        await producer.stop()
    consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
    try:
        await consumer.start()
        tp = TopicPartition(ORACLE_TOPIC, 0)
        consumer.assign([tp])
        consumer.seek(tp, meta.offset)
        record = await consumer.getone()
    finally:
        await consumer.stop()
    if record.value != value or record.offset != meta.offset:
        return f"read back {record.value!r} at {record.offset}, wrote {value!r} at {meta.offset}"
    return None


def reset_peak(broker: BrokerProcess) -> None:
    """Start a new VmHWM window (clear_refs 5), so each peak is tied to what caused it."""
    try:
        with open(f"/proc/{broker.pid}/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass
