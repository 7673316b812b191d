"""Exception handlers for bad records, and the dead-letter queue (KIP-1033, KIP-1034).

Three places can fail on one record, each with its own Kafka Streams config:

* ``deserialization.exception.handler`` (older name ``default.deserialization.exception.handler``):
  the source serde cannot read the consumed bytes;
* ``processing.exception.handler`` (KIP-1033): a processor (or a punctuator) raised;
* ``production.exception.handler`` (older ``default.production.exception.handler``): a sink
  cannot serialize its record, or the producer refuses it (e.g. larger than max.request.size).

Every handler defaults to fail. A handler is a built-in name (``log_and_fail``,
``log_and_continue``, ``fail``, ``continue``, or Kafka's class names such as
``org.apache.kafka.streams.errors.LogAndContinueExceptionHandler``), a callable
``(context, record, exception) -> HandlerResponse``, an object with such a ``handle`` method,
or a dotted path (``pkg.module:attr`` / ``pkg.module.attr``) to one of those.

``errors.dead.letter.queue.topic.name`` (KIP-1034's name) makes the *built-in* handlers write
the source record that triggered the failure (its original key and value bytes) to that topic
with ``__streams.errors.*`` headers saying why; a custom handler opts in per record by returning
``HandlerResponse.DEAD_LETTER`` (our extension: dead-letter, then continue). Like Kafka, the DLQ
topic is not created automatically. DLQ records go through the task's collector, so under
exactly_once_v2 they are part of the transaction. Every skipped record is logged with where
it came from and why: nothing is dropped silently.
"""

from __future__ import annotations

import contextlib
import enum
import importlib
import logging
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from .api import Headers, TaskId

log = logging.getLogger(__name__)

DLQ_CONFIG = "errors.dead.letter.queue.topic.name"
HEADER_EXCEPTION = "__streams.errors.exception"
HEADER_MESSAGE = "__streams.errors.message"
HEADER_STACKTRACE = "__streams.errors.stacktrace"
HEADER_TOPIC = "__streams.errors.topic"
HEADER_PARTITION = "__streams.errors.partition"
HEADER_OFFSET = "__streams.errors.offset"


class StreamsError(RuntimeError):
    """Processing cannot go on (a handler said fail); the message says which record and why."""


class HandlerFailedError(StreamsError):
    """A handler decided FAIL: passes through every enclosing processor untouched."""


class HandlerResponse(enum.Enum):
    """What an exception handler decides for one bad record."""

    CONTINUE = "continue"
    FAIL = "fail"
    DEAD_LETTER = "dead_letter"  # our extension: write it to the DLQ topic, then continue
    RESUME = "continue"  # Kafka 4.x's name for CONTINUE (an alias)


@dataclass(frozen=True, slots=True)
class ErrorHandlerContext:
    """Where the failure happened (Kafka's ``ErrorHandlerContext``); ``topic`` etc. are None
    when a punctuator failed."""

    topic: str | None
    partition: int | None
    offset: int | None
    headers: Headers
    timestamp: int
    processor_node_id: str | None
    task_id: TaskId
    source_raw_key: bytes | None
    source_raw_value: bytes | None

    def where(self) -> str:
        if self.topic is None:
            return f"(punctuation in task {self.task_id}, node {self.processor_node_id})"
        return f"{self.topic}-{self.partition}@{self.offset}"


@dataclass(frozen=True, slots=True)
class ProducerRecord:
    """The record a sink tried to produce (serialized bytes, or the objects if serializing
    failed)."""

    topic: str
    key: Any
    value: Any
    timestamp: int
    headers: Headers
    partition: int | None = None


ErrorHandler = Callable[[ErrorHandlerContext, Any, BaseException], Any]
Send = Callable[[str, "bytes | None", "bytes | None", int, Headers, "int | None"], None]


def log_and_fail(context: ErrorHandlerContext, record: Any, exc: BaseException) -> HandlerResponse:
    """Kafka's LogAndFail*ExceptionHandler / DefaultProductionExceptionHandler."""
    return HandlerResponse.FAIL


def log_and_continue(context: ErrorHandlerContext, record: Any,
                     exc: BaseException) -> HandlerResponse:
    """Kafka's LogAndContinue*ExceptionHandler."""
    return HandlerResponse.CONTINUE


_SHORT = {"log_and_fail": log_and_fail, "fail": log_and_fail,
          "log_and_continue": log_and_continue, "continue": log_and_continue}
_KAFKA_CLASSES = {
    "deserialization": {"LogAndFailExceptionHandler": log_and_fail,
                        "LogAndContinueExceptionHandler": log_and_continue},
    "processing": {"LogAndFailProcessingExceptionHandler": log_and_fail,
                   "LogAndContinueProcessingExceptionHandler": log_and_continue},
    "production": {"DefaultProductionExceptionHandler": log_and_fail},
}
_CONFIG_KEYS = {
    "deserialization": ("deserialization.exception.handler",
                        "default.deserialization.exception.handler"),
    "processing": ("processing.exception.handler",),
    "production": ("production.exception.handler", "default.production.exception.handler"),
}


@dataclass(frozen=True, slots=True)
class ResolvedHandler:
    kind: str
    handle: ErrorHandler
    builtin: bool  # built-ins honour errors.dead.letter.queue.topic.name (KIP-1034)


def import_object(path: str) -> Any:
    """``pkg.module:attr`` or ``pkg.module.attr`` -> the object; ImportError/AttributeError
    if it does not exist."""
    module_name, sep, attr = path.partition(":")
    if not sep:
        module_name, _, attr = path.rpartition(".")
    if not module_name or not attr:
        raise ImportError(f"{path!r} is not a dotted path")
    obj: Any = importlib.import_module(module_name)
    for part in attr.split("."):
        obj = getattr(obj, part)
    return obj


def instantiate(value: Any, method: str, configs: Mapping[str, Any] | None) -> Any:
    """A class is instantiated (and ``configure(configs)``-ed if it has that Kafka hook); an
    object with ``method`` gives that bound method; a plain callable is used as is."""
    if isinstance(value, type):
        value = value()
        if configs is not None and callable(getattr(value, "configure", None)):
            value.configure(dict(configs))
    bound = getattr(value, method, None)
    if callable(bound):
        return bound
    if callable(value):
        return value
    raise TypeError(f"{value!r} is neither callable nor has a {method}() method")


def resolve_handler(kind: str, value: Any,
                    configs: Mapping[str, Any] | None = None) -> ResolvedHandler:
    """A handler config value -> the handler; ConfigError (a ValueError) naming the options."""
    from ..config import ConfigError

    if value is None or value == "":
        return ResolvedHandler(kind, log_and_fail, True)
    if isinstance(value, str):
        text = value.strip()
        if text.lower() in _SHORT:
            return ResolvedHandler(kind, _SHORT[text.lower()], True)
        kafka = _KAFKA_CLASSES[kind]
        simple = text.rsplit(".", 1)[-1]
        if simple in kafka and ("." not in text or text.startswith("org.apache.kafka.")):
            return ResolvedHandler(kind, kafka[simple], True)
        try:
            value = import_object(text)
        except (ImportError, AttributeError) as exc:
            options = ", ".join([*_SHORT, *kafka])
            raise ConfigError(
                f"unknown {kind} exception handler {value!r}: use one of {options}, "
                f"or a dotted path to a handler callable ({exc})") from None
    try:
        handle = instantiate(value, "handle", configs)
    except TypeError as exc:
        raise ConfigError(f"invalid {kind} exception handler: {exc}") from None
    return ResolvedHandler(kind, handle, handle in (log_and_fail, log_and_continue))


def config_value(config: Mapping[str, Any], *keys: str) -> Any:
    """The first of ``keys`` set in ``config`` (dotted or snake_case)."""
    for key in keys:
        for form in (key, key.replace(".", "_")):
            value = config.get(form)
            if value is not None:
                return value
    return None


class ErrorHandling:
    """The three resolved handlers and the DLQ topic of one application; tasks call
    ``handle`` with the failure, and it logs, dead-letters, and raises on FAIL."""

    def __init__(self, deserialization: Any = None, processing: Any = None,
                 production: Any = None, dead_letter_topic: str | None = None,
                 configs: Mapping[str, Any] | None = None) -> None:
        self.deserialization = resolve_handler("deserialization", deserialization, configs)
        self.processing = resolve_handler("processing", processing, configs)
        self.production = resolve_handler("production", production, configs)
        self.dead_letter_topic = dead_letter_topic or None

    @classmethod
    def from_config(cls, config: Mapping[str, Any]) -> ErrorHandling:
        return cls(*(config_value(config, *_CONFIG_KEYS[kind])
                     for kind in ("deserialization", "processing", "production")),
                   dead_letter_topic=config_value(config, DLQ_CONFIG), configs=config)

    @staticmethod
    def respond(handler: ResolvedHandler, context: ErrorHandlerContext, record: Any,
                exc: BaseException, what: str,
                failed: type[StreamsError] = StreamsError) -> HandlerResponse:
        """``handler``'s answer to one failure (of ``what``, e.g. ``record in-0@1``), a string
        answer taken by name ("continue", "FAIL", ...). A handler that raises, or answers
        anything else, stops processing with ``failed`` naming ``what``."""
        try:
            response = handler.handle(context, record, exc)
        except Exception as handler_exc:
            raise failed(f"the {handler.kind} exception handler itself failed on {what} "
                         f"({handler_exc!r}); original error {type(exc).__name__}: {exc}"
                         ) from exc
        if isinstance(response, str):
            with contextlib.suppress(ValueError):  # not a name: refused below as returned
                response = HandlerResponse(response.lower())
        if not isinstance(response, HandlerResponse):
            raise failed(f"the {handler.kind} exception handler returned {response!r} for "
                         f"{what}; expected a HandlerResponse") from exc
        return response

    def handle(self, handler: ResolvedHandler, context: ErrorHandlerContext, record: Any,
               exc: BaseException, send: Send) -> None:
        """Apply ``handler`` to one failure: return to skip the record, raise to stop."""
        where = context.where()
        reason = f"{type(exc).__name__}: {exc}"
        response = self.respond(handler, context, record, exc, f"record {where}")
        dead_letter = response is HandlerResponse.DEAD_LETTER or (
            handler.builtin and self.dead_letter_topic is not None)
        if dead_letter:
            if self.dead_letter_topic is None:
                raise StreamsError(f"the {handler.kind} exception handler asked to dead-letter "
                                   f"record {where}, but {DLQ_CONFIG} is not set") from exc
            send(self.dead_letter_topic, context.source_raw_key, context.source_raw_value,
                 max(context.timestamp, 0), dead_letter_headers(context, exc), None)
        if response is HandlerResponse.FAIL:
            log.error("%s error on record %s in task %s, node %s: %s%s", handler.kind, where,
                      context.task_id, context.processor_node_id, reason,
                      f" (sent to dead-letter topic {self.dead_letter_topic})"
                      if dead_letter else "")
            raise HandlerFailedError(
                f"{handler.kind} exception on record {where} (task {context.task_id}, node "
                f"{context.processor_node_id}): {reason}; the {handler.kind} exception "
                "handler said FAIL") from exc
        log.warning("skipping record %s in task %s, node %s after a %s error: %s%s", where,
                    context.task_id, context.processor_node_id, handler.kind, reason,
                    f"; sent to dead-letter topic {self.dead_letter_topic}" if dead_letter
                    else "")


def _text(value: object) -> bytes | None:
    return None if value is None else str(value).encode()


def dead_letter_headers(context: ErrorHandlerContext, exc: BaseException) -> Headers:
    """The source record's headers plus KIP-1034's ``__streams.errors.*`` headers."""
    cls = type(exc)
    name = cls.__qualname__ if cls.__module__ == "builtins" else \
        f"{cls.__module__}.{cls.__qualname__}"
    stack = "".join(traceback.format_exception(cls, exc, exc.__traceback__))
    return (*context.headers,
            (HEADER_EXCEPTION, name.encode()),
            (HEADER_MESSAGE, str(exc).encode()),
            (HEADER_STACKTRACE, stack.encode()),
            (HEADER_TOPIC, _text(context.topic)),
            (HEADER_PARTITION, _text(context.partition)),
            (HEADER_OFFSET, _text(context.offset)))
