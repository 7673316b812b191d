"""Logging for operators: ``--log-level`` / ``--log-format text|json`` for every command, and a
filter that keeps a broker outage from flooding the log.

During an outage aiokafka logs "Unable connect to node ...", "Failed fetch messages ...",
"Group Coordinator Request failed ..." at ERROR on every retry of every client (about 20
lines a second while a generation waits for its coordinator, and thousands a second once
the stream thread rejoined in a tight loop, before it backed off). The filter lets the first of each through, drops repeats for
``REPEAT_WINDOW_S`` and then says how many it dropped; our runtime logs one line per
reconnect attempt itself.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

LEVELS = ("CRITICAL", "ERROR", "WARNING", "INFO", "DEBUG")
FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"
REPEAT_WINDOW_S = 30.0

# aiokafka's connection-failure messages, by the logger that emits them (aiokafka 0.14:
# client.py, consumer/fetcher.py, consumer/group_coordinator.py). Each repeats on every retry
# (every 100 ms per client) for as long as the broker is away.
CONNECTION_TEMPLATES_BY_LOGGER = {
    "aiokafka": (
        "Unable connect to node with id %s: %s",
        'Unable connect to "%s:%s": %s',
        "Unable to update metadata from %s",
    ),
    "aiokafka.consumer.fetcher": (
        "Failed fetch messages from %s: %s",
        "Failed fetch offsets from %s: %s",
    ),
    "aiokafka.consumer.group_coordinator": (
        "Group Coordinator Request failed: %s",
        "Heartbeat send request failed: %s. Will retry.",
    ),
}
CONNECTION_TEMPLATES = frozenset(t for ts in CONNECTION_TEMPLATES_BY_LOGGER.values() for t in ts)


class RepeatFilter(logging.Filter):
    """Passes the first record of each connection-failure template, then one per window,
    noting how many were dropped in between."""

    def __init__(self, templates: frozenset[str] = CONNECTION_TEMPLATES,
                 window_s: float = REPEAT_WINDOW_S) -> None:
        super().__init__()
        self.templates = templates
        self.window_s = window_s
        self._last: dict[str, float] = {}
        self._dropped: dict[str, int] = {}

    def filter(self, record: logging.LogRecord) -> bool:
        template = record.msg if isinstance(record.msg, str) else None
        if template not in self.templates:
            return True
        now = time.monotonic()
        last = self._last.get(template)
        if last is not None and now - last < self.window_s:
            self._dropped[template] = self._dropped.get(template, 0) + 1
            return False
        self._last[template] = now
        dropped = self._dropped.pop(template, 0)
        if dropped:
            record.msg = f"{template} ({dropped} more like this in the last " \
                         f"{self.window_s:g} s not logged)"
        return True


_FILTER = RepeatFilter()


def install_client_log_filter() -> None:
    """Attach the repeat filter to aiokafka's loggers (idempotent)."""
    for name in CONNECTION_TEMPLATES_BY_LOGGER:
        logger = logging.getLogger(name)
        if _FILTER not in logger.filters:
            logger.addFilter(_FILTER)


class JsonFormatter(logging.Formatter):
    """One JSON object per line: ts (ISO 8601, UTC), level, logger, message, and exc when
    there is a traceback; what log shippers (Loki, Elasticsearch) parse without rules."""

    def format(self, record: logging.LogRecord) -> str:
        entry: dict[str, Any] = {
            "ts": time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
                  + f".{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.threadName and record.threadName != "MainThread":
            entry["thread"] = record.threadName
        if record.exc_info:
            entry["exc"] = self.formatException(record.exc_info)
        return json.dumps(entry, ensure_ascii=False)


def configure_logging(level: str | None = None, fmt: str | None = None) -> None:
    """Set up the root logger for a command (replacing any earlier setup)."""
    level_name = (level or "INFO").upper()
    if level_name not in LEVELS:
        raise ValueError(f"--log-level {level!r}: expected one of {', '.join(LEVELS)}")
    if (fmt or "text") not in FORMATS:
        raise ValueError(f"--log-format {fmt!r}: expected text or json")
    handler = logging.StreamHandler()
    handler.setFormatter(JsonFormatter() if fmt == "json" else logging.Formatter(TEXT_FORMAT))
    logging.basicConfig(level=getattr(logging, level_name), handlers=[handler], force=True)
    install_client_log_filter()


def take_logging_options(argv: list[str]) -> tuple[list[str], str | None, str | None]:
    """Remove ``--log-level X`` / ``--log-format Y`` (or ``=``) from anywhere in ``argv``, so
    every command takes them before or after its own arguments."""
    rest: list[str] = []
    found: dict[str, str | None] = {"--log-level": None, "--log-format": None}
    i = 0
    while i < len(argv):
        arg = argv[i]
        name, eq, value = arg.partition("=")
        if name in found and arg != "--":
            if eq:
                found[name] = value
            elif i + 1 < len(argv):
                found[name] = argv[i + 1]
                i += 1
            else:
                raise ValueError(f"{name} needs a value")
            i += 1
            continue
        if arg == "--":
            rest.extend(argv[i:])
            break
        rest.append(arg)
        i += 1
    return rest, found["--log-level"], found["--log-format"]
