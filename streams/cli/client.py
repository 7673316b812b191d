"""Shared plumbing for the client commands: the bootstrap argument, starting aiokafka clients
with a short deadline, and turning every failure into one line on stderr plus an exit code.

The commands talk to the broker only through aiokafka, so they work against any Kafka cluster.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import os
import signal
import sys
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from contextlib import asynccontextmanager, contextmanager
from typing import Any, Protocol

from aiokafka import TopicPartition
from aiokafka.admin import AIOKafkaAdminClient
from aiokafka.errors import KafkaConnectionError, KafkaError, for_code

from ..config import ConfigError, read_properties
from ..kafka import clients
from ..kafka.admin import AdminRequestError
from ..kafka.client_config import CLI_ROLES, ClientConfigError, ClientConfigs, client_settings
from ..kafka.internals import security_protocol

DEFAULT_BOOTSTRAP = "127.0.0.1:9092"
CONNECT_TIMEOUT_S = 5.0
REQUEST_TIMEOUT_MS = 15_000


class CliError(Exception):
    """A failure to report as one line; ``code`` is the process exit status."""

    def __init__(self, message: str, code: int = 1) -> None:
        super().__init__(message)
        self.code = code


class Startable(Protocol):
    async def start(self) -> Any: ...


def bootstrap_servers(value: str) -> str:
    """argparse type: a comma-separated list of HOST:PORT with a numeric port."""
    for server in value.split(","):
        host, sep, port = server.strip().rpartition(":")
        if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise argparse.ArgumentTypeError(f"expected HOST:PORT, got {server.strip()!r}")
    return value


def _int_at_least(value: str, minimum: int, what: str) -> int:
    try:
        number = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected {what}, got {value!r}") from None
    if number < minimum:
        raise argparse.ArgumentTypeError(f"must be at least {minimum}, got {number}")
    return number


def positive_int(value: str) -> int:
    """argparse type: an integer >= 1 (partition counts, message counts)."""
    return _int_at_least(value, 1, "a positive integer")


def non_negative_int(value: str) -> int:
    """argparse type: an integer >= 0 (partition numbers)."""
    return _int_at_least(value, 0, "an integer")


def command_config(path: str) -> ClientConfigs:
    """argparse type: a Kafka client .properties file (security.protocol, ssl.*, sasl.*), as
    Kafka's tools take with --command-config. Checked now, so a bad key fails before any I/O."""
    try:
        configs = ClientConfigs(read_properties(path), CLI_ROLES)
        for role in CLI_ROLES:
            configs.kwargs(role)  # loads the TLS stores: a wrong path or password fails here
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot read {path}: {exc.strerror}") from None
    except (ClientConfigError, ConfigError) as exc:
        raise argparse.ArgumentTypeError(f"{path}: {exc}") from None
    return configs


def add_bootstrap_argument(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--bootstrap-servers", type=bootstrap_servers, default=DEFAULT_BOOTSTRAP,
        metavar="HOST:PORT", help=f"broker to connect to (default {DEFAULT_BOOTSTRAP})",
    )
    parser.add_argument(
        "--command-config", type=command_config, metavar="FILE",
        help="client properties file for a secured cluster (security.protocol, ssl.*, "
             "sasl.mechanism, sasl.jaas.config), as Kafka's tools take it")


def connection_kwargs(target: argparse.Namespace | str, role: str = "admin") -> dict[str, Any]:
    """aiokafka arguments to reach the cluster: the bootstrap servers and, from the command's
    --command-config, the security settings of the ``admin``/``consumer``/``producer`` client."""
    if isinstance(target, str):
        return client_settings(target)
    configs = getattr(target, "command_config", None)
    return client_settings(target.bootstrap_servers,
                           options=configs.kwargs(role) if configs else None)


def _bootstrap(target: argparse.Namespace | str) -> str:
    return target if isinstance(target, str) else target.bootstrap_servers


def error_message(code: int, detail: str | None = None) -> str:
    """Kafka error code -> readable text; prefers the broker's own message."""
    if detail:
        return detail
    error = for_code(code)
    return f"{error.__name__}: {error.description}" if error.description else error.__name__


class _ConnectFailure(logging.Handler):
    """aiokafka tells why a bootstrap connection failed (a refused SASL login, an untrusted
    certificate) only in a log line, then raises a generic error: keep the last reason."""

    def __init__(self) -> None:
        super().__init__(logging.ERROR)
        self.reason: str | None = None

    def emit(self, record: logging.LogRecord) -> None:
        text = record.getMessage()
        if text.startswith("Unable connect to"):
            self.reason = text.split(": ", 1)[-1]


@contextmanager
def _connect_failures() -> Iterator[_ConnectFailure]:
    logger = logging.getLogger("aiokafka")  # aiokafka/client.py logs under this name
    handler, saved = _ConnectFailure(), (logger.level, logger.propagate)
    logger.addHandler(handler)
    if logger.getEffectiveLevel() > logging.ERROR:  # silenced: listen, still print nothing
        logger.setLevel(logging.ERROR)
        logger.propagate = False  # the command prints one line itself
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        logger.setLevel(saved[0])
        logger.propagate = saved[1]


def _security_hint(reason: str | None, protocol: str) -> str:
    """What probably happened when a broker drops a connection without saying why: it speaks
    another security protocol than the client (Kafka's brokers close such connections)."""
    if reason is not None and "closed" not in reason:
        if "Connect call failed" in reason or "refused" in reason.lower():
            return " (is the broker running, and is that its address?)"
        return ""  # aiokafka said why (a refused login, an untrusted certificate)
    expected = {"PLAINTEXT": "SSL, SASL_SSL or SASL_PLAINTEXT",
                "SSL": "SASL_SSL, or PLAINTEXT",
                "SASL_PLAINTEXT": "SASL_SSL, SSL or PLAINTEXT",
                "SASL_SSL": "SSL, SASL_PLAINTEXT or PLAINTEXT"}.get(protocol, "another one")
    return (f" (the broker closed the connection during the handshake: does it expect "
            f"security.protocol={expected}? This client used {protocol}; give the settings "
            "with --command-config FILE)")


async def start_client(client: Startable, bootstrap: str) -> None:
    """Start an aiokafka client, failing within CONNECT_TIMEOUT_S if the broker is unreachable
    (saying why when aiokafka knows: authentication failed, certificate not trusted, and what
    probably happened when it does not)."""
    with _connect_failures() as failure:
        try:
            await asyncio.wait_for(client.start(), CONNECT_TIMEOUT_S)
        except (TimeoutError, KafkaConnectionError, OSError):
            why = f": {failure.reason}" if failure.reason else ""
            hint = _security_hint(failure.reason, security_protocol(client))
            raise CliError(f"cannot connect to a broker at {bootstrap}{why}{hint}") from None


@asynccontextmanager
async def admin_client(target: argparse.Namespace | str) -> AsyncIterator[AIOKafkaAdminClient]:
    """An admin client for the command's parsed arguments (or a bare bootstrap string)."""
    admin = clients.admin(connection_kwargs(target, "admin"), request_timeout_ms=REQUEST_TIMEOUT_MS)
    try:
        await start_client(admin, _bootstrap(target))
        yield admin
    finally:
        await admin.close()


async def partition_offsets(target: argparse.Namespace | str, partitions: list[TopicPartition]
                            ) -> tuple[dict[TopicPartition, int], dict[TopicPartition, int]]:
    """(log start offsets, high watermarks) via ListOffsets, without joining any group."""
    consumer = clients.consumer(connection_kwargs(target, "consumer"), enable_auto_commit=False,
                                request_timeout_ms=REQUEST_TIMEOUT_MS)
    try:
        await start_client(consumer, _bootstrap(target))
        return (await consumer.beginning_offsets(partitions),
                await consumer.end_offsets(partitions))
    finally:
        await consumer.stop()


class _Stop:
    """The signal that asked the running command to stop (None: none yet)."""

    signum: int | None = None


def stop_requested() -> bool:
    """Whether SIGINT or SIGTERM arrived. Loops check it as well as being cancelled:
    Python 3.11's ``asyncio.wait_for`` (inside aiokafka's fetch) can swallow a cancellation
    that lands as its inner wait completes, and the command would then run on."""
    return _Stop.signum is not None


async def _stoppable(main: Callable[[], Awaitable[int | None]]) -> int | None:
    """Run ``main`` so that SIGINT and SIGTERM cancel it: clients close cleanly (a consumer
    leaves its group) instead of the process dying mid-request."""
    task = asyncio.current_task()
    assert task is not None
    loop = asyncio.get_running_loop()

    def stop(signum: int) -> None:
        _Stop.signum = _Stop.signum or signum
        task.cancel()

    for signum in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(signum, stop, signum)
    return await main()


def run_command(prog: str, main: Callable[[], Awaitable[int | None]]) -> int:
    """Run one command's coroutine; map every failure to one stderr line and an exit code."""
    # aiokafka logs connection errors at ERROR level; the command reports them itself
    # (--log-level DEBUG shows them).
    if logging.getLogger().getEffectiveLevel() > logging.DEBUG:
        logging.getLogger("aiokafka").setLevel(logging.CRITICAL)
    try:
        return int(asyncio.run(_stoppable(main)) or 0)
    except asyncio.CancelledError:  # SIGINT or SIGTERM: 130 or 143, as a shell reports them
        return 128 + (_Stop.signum or signal.SIGTERM)
    except CliError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return exc.code
    except AdminRequestError as exc:  # the broker lacks the API, or a group-level error
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    except KafkaConnectionError as exc:
        print(f"{prog}: lost the connection to the broker: {exc}", file=sys.stderr)
        return 1
    except KafkaError as exc:
        print(f"{prog}: {exc}", file=sys.stderr)
        return 1
    except TimeoutError:
        print(f"{prog}: the broker did not answer in time", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 130
    except BrokenPipeError:  # e.g. `streams consume ... | head`: the reader has gone
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no flush error at exit
        return 0
