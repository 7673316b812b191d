"""Error handling for conversion and transformation: retries, tolerance, logging, the DLQ.

Kafka Connect's ``RetryWithToleranceOperator`` and ``DeadLetterQueueReporter``: a
``RetriableException`` is retried with exponential back-off until ``errors.retry.timeout``; then
(or at once for any other exception) the failure is logged and sent to the dead-letter topic, and
with ``errors.tolerance=none`` the task fails, with ``all`` the record is skipped.
"""

from __future__ import annotations

import asyncio
import logging
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from enum import Enum
from typing import Any

from connect.api import ConnectException, RetriableException

log = logging.getLogger("connect.errors")

HEADER_PREFIX = "__connect.errors."
H_TOPIC = HEADER_PREFIX + "topic"
H_PARTITION = HEADER_PREFIX + "partition"
H_OFFSET = HEADER_PREFIX + "offset"
H_CONNECTOR = HEADER_PREFIX + "connector.name"
H_TASK = HEADER_PREFIX + "task.id"
H_STAGE = HEADER_PREFIX + "stage"
H_CLASS = HEADER_PREFIX + "class.name"
H_EXC_CLASS = HEADER_PREFIX + "exception.class.name"
H_EXC_MESSAGE = HEADER_PREFIX + "exception.message"
H_EXC_TRACE = HEADER_PREFIX + "exception.stacktrace"


class Stage(str, Enum):
    KEY_CONVERTER = "KEY_CONVERTER"
    VALUE_CONVERTER = "VALUE_CONVERTER"
    HEADER_CONVERTER = "HEADER_CONVERTER"
    TRANSFORMATION = "TRANSFORMATION"
    TASK_PUT = "TASK_PUT"
    TASK_POLL = "TASK_POLL"
    KAFKA_PRODUCE = "KAFKA_PRODUCE"
    KAFKA_CONSUME = "KAFKA_CONSUME"


class ToleranceExceeded(ConnectException):
    """Raised (and fails the task) when an error happens under ``errors.tolerance=none``."""


@dataclass(frozen=True)
class ErrorConfig:
    tolerate_all: bool = False
    retry_timeout_ms: int = 0
    retry_delay_max_ms: int = 60000
    log_enable: bool = False
    log_include_messages: bool = False
    dlq_topic: str = ""
    dlq_context_headers: bool = False
    dlq_replication_factor: int = 3

    @classmethod
    def from_parsed(cls, cfg: dict[str, Any]) -> ErrorConfig:
        return cls(
            tolerate_all=str(cfg.get("errors.tolerance", "none")).lower() == "all",
            retry_timeout_ms=int(cfg.get("errors.retry.timeout", 0)),
            retry_delay_max_ms=int(cfg.get("errors.retry.delay.max.ms", 60000)),
            log_enable=bool(cfg.get("errors.log.enable", False)),
            log_include_messages=bool(cfg.get("errors.log.include.messages", False)),
            dlq_topic=str(cfg.get("errors.deadletterqueue.topic.name") or ""),
            dlq_context_headers=bool(cfg.get("errors.deadletterqueue.context.headers.enable",
                                             False)),
            dlq_replication_factor=int(
                cfg.get("errors.deadletterqueue.topic.replication.factor", 3)),
        )


def class_name_of(obj: Any) -> str:
    cls = obj if isinstance(obj, type) else type(obj)
    return f"{cls.__module__}.{cls.__qualname__}"


class DeadLetterQueueReporter:
    """Writes the *original* consumed bytes of a failed record to the DLQ topic."""

    def __init__(self, producer: Any, config: ErrorConfig, connector: str, task: int) -> None:
        self.producer = producer
        self.config = config
        self.connector = connector
        self.task = task
        self.produce_requests = 0  # metrics: deadletterqueue-produce-requests / -failures
        self.produce_failures = 0

    async def report(self, raw: Any, stage: Stage, executing: str, error: BaseException) -> None:
        self.produce_requests += 1
        headers = list(getattr(raw, "headers", None) or [])
        if self.config.dlq_context_headers:
            def enc(v: Any) -> bytes:
                return str(v).encode()

            headers += [
                (H_TOPIC, enc(raw.topic)), (H_PARTITION, enc(raw.partition)),
                (H_OFFSET, enc(raw.offset)), (H_CONNECTOR, enc(self.connector)),
                (H_TASK, enc(self.task)), (H_STAGE, enc(stage.value)),
                (H_CLASS, enc(executing)), (H_EXC_CLASS, enc(class_name_of(error))),
                (H_EXC_MESSAGE, enc(str(error))),
                (H_EXC_TRACE, enc("".join(traceback.format_exception(
                    type(error), error, error.__traceback__)))),
            ]
        try:
            await self.producer.send_and_wait(self.config.dlq_topic, value=raw.value,
                                              key=raw.key, headers=headers)
        except BaseException:
            self.produce_failures += 1
            raise


class ErrorHandler:
    """Runs one stage of one record with retries and tolerance (one per task)."""

    def __init__(self, config: ErrorConfig, connector: str, task: int,
                 dlq: DeadLetterQueueReporter | None = None) -> None:
        self.config = config
        self.connector = connector
        self.task = task
        self.dlq = dlq
        self.failures = 0
        self.skipped = 0  # metrics: total-records-skipped

    async def run(self, stage: Stage, executing: Any, fn: Callable[..., Any], *args: Any,
                  raw: Any = None) -> tuple[bool, Any]:
        """``(True, result)`` on success, ``(False, None)`` when the record is to be skipped."""
        deadline = None if self.config.retry_timeout_ms < 0 else (
            time.monotonic() + self.config.retry_timeout_ms / 1000)
        delay = 0.3
        while True:
            try:
                return True, fn(*args)
            except RetriableException as exc:
                error: BaseException = exc
                remaining = None if deadline is None else deadline - time.monotonic()
                if remaining is None or remaining > 0:
                    pause = min(delay, self.config.retry_delay_max_ms / 1000,
                                remaining if remaining is not None else delay)
                    await asyncio.sleep(pause)
                    delay *= 2
                    continue
            except Exception as exc:
                error = exc
            break
        await self.report(stage, executing, error, raw)
        if not self.config.tolerate_all:
            raise ToleranceExceeded("Tolerance exceeded in error handler") from error
        self.skipped += 1
        return False, None

    async def report(self, stage: Stage, executing: Any, error: BaseException,
                     raw: Any = None) -> None:
        self.failures += 1
        executing_name = getattr(error, "transform_class", None) or (
            executing if isinstance(executing, str) else class_name_of(executing))
        if self.config.log_enable:
            where = ""
            if raw is not None and hasattr(raw, "offset"):
                where = (f", where consumed record is {{topic='{raw.topic}', "
                         f"partition={raw.partition}, offset={raw.offset}}}")
            if self.config.log_include_messages and raw is not None:
                where += f", record={raw!r}"
            log.error("Error encountered in task %s-%s. Executing stage '%s' with class '%s'%s.",
                      self.connector, self.task, stage.value, executing_name, where,
                      exc_info=error)
        if self.dlq is not None and raw is not None and hasattr(raw, "offset"):
            await self.dlq.report(raw, stage, executing_name, error)
