"""`streams users scram-set | describe | delete`: SCRAM credentials through Kafka's
AlterUserScramCredentials / DescribeUserScramCredentials (KIP-554), as kafka-configs.sh
--entity-type users --alter --add-config 'SCRAM-SHA-256=[password=...]' does.

The client salts and hashes (PBKDF2, RFC 5802's Hi) and sends only the salted password; the
broker derives and stores StoredKey/ServerKey. aiokafka has no classes for these two APIs:
their v0 (flexible) schemas are in ``streams.kafka.requests``.
"""

from __future__ import annotations

import argparse
import getpass
import hashlib
import os
import secrets
import sys
from pathlib import Path
from typing import Any

from ..broker.security.scram import (
    MAX_ITERATIONS,
    MIN_ITERATIONS,
    ScramCredential,
    ScramStore,
)
from ..kafka.admin import send
from ..kafka.requests import AlterUserScramCredentials, DescribeUserScramCredentials
from .client import CliError, add_bootstrap_argument, admin_client, error_message, run_command

PROG = "streams users"
MECHANISMS = {"SCRAM-SHA-256": (1, "sha256"), "SCRAM-SHA-512": (2, "sha512")}
NAMES = {code: name for name, (code, _) in MECHANISMS.items()}
PASSWORD_ENV = "STREAMS_SCRAM_PASSWORD"


def _mechanism(value: str) -> str:
    name = value.strip().upper()
    if name not in MECHANISMS:
        raise argparse.ArgumentTypeError(f"unknown mechanism {value!r}; use SCRAM-SHA-256 or "
                                         "SCRAM-SHA-512")
    return name


def add_parser(sub: argparse._SubParsersAction) -> None:
    users = sub.add_parser("users", help="manage SCRAM users (SCRAM-SHA-256/512)")
    users_sub = users.add_subparsers(dest="users_command", required=True)

    set_cmd = users_sub.add_parser("scram-set", help="create a SCRAM user or change its "
                                   "password")
    add_bootstrap_argument(set_cmd)
    set_cmd.add_argument("name")
    set_cmd.add_argument("--mechanism", type=_mechanism, action="append",
                         help="SCRAM-SHA-256 or SCRAM-SHA-512 (repeatable; default both)")
    set_cmd.add_argument("--iterations", type=int, default=4096,
                         help="PBKDF2 iterations, 4096..16384 (default 4096, as Kafka)")
    source = set_cmd.add_mutually_exclusive_group()
    source.add_argument("--password-file", type=Path,
                        help="file whose first line is the password")
    source.add_argument("--password-stdin", action="store_true",
                        help="read the password from standard input")
    set_cmd.add_argument("--data-dir", type=Path,
                         help="write into a STOPPED broker's data directory instead of using the "
                              "admin API: the first user of a SCRAM-only cluster (as "
                              "kafka-storage format --add-scram)")
    set_cmd.set_defaults(func=lambda a: run_command(PROG, lambda: scram_set(a)))

    describe = users_sub.add_parser("describe", help="SCRAM mechanisms and iterations per user")
    add_bootstrap_argument(describe)
    describe.add_argument("names", nargs="*", help="users (default: all)")
    describe.set_defaults(func=lambda a: run_command(PROG, lambda: scram_describe(a)))

    delete = users_sub.add_parser("delete", help="delete a user's SCRAM credentials")
    add_bootstrap_argument(delete)
    delete.add_argument("name")
    delete.add_argument("--mechanism", type=_mechanism, action="append",
                        help="SCRAM-SHA-256 or SCRAM-SHA-512 (repeatable; default both)")
    delete.set_defaults(func=lambda a: run_command(PROG, lambda: scram_delete(a)))


def _password(args: argparse.Namespace) -> str:
    """From a file, stdin, $STREAMS_SCRAM_PASSWORD or a prompt: never from the command line,
    where other users of the machine can read it (ps)."""
    if args.password_file is not None:
        try:
            lines = args.password_file.read_text().splitlines()
        except OSError as exc:
            raise CliError(f"cannot read --password-file: {exc.strerror}", 2) from None
        password = lines[0] if lines else ""
    elif args.password_stdin:
        password = sys.stdin.readline().rstrip("\n")
    elif os.environ.get(PASSWORD_ENV):
        password = os.environ[PASSWORD_ENV]
    else:
        if not sys.stdin.isatty():
            raise CliError("no terminal to ask for the password on: pipe it in with "
                           f"--password-stdin (or use --password-file, or ${PASSWORD_ENV})", 2)
        try:
            password = getpass.getpass(f"password for {args.name}: ")
        except EOFError:
            raise CliError("no password given (end of input); use --password-stdin, "
                           f"--password-file or ${PASSWORD_ENV}", 2) from None
    if not password:
        raise CliError("the password is empty", 2)
    return password


def _results(response: Any, action: str) -> int:
    failed = 0
    for user, code, message, *_tags in response.results:
        if code:
            failed = 1
            print(f"{PROG}: cannot {action} {user}: {error_message(code, message)}",
                  file=sys.stderr)
    return failed


async def scram_set(args: argparse.Namespace) -> int:
    password = _password(args).encode()
    if not MIN_ITERATIONS <= args.iterations <= MAX_ITERATIONS:
        raise CliError(f"--iterations must be between {MIN_ITERATIONS} and {MAX_ITERATIONS} "
                       f"(Kafka's limits), got {args.iterations}", 2)
    if args.data_dir is not None:
        return _scram_set_offline(args, password)
    upsertions = []
    for mechanism in args.mechanism or list(MECHANISMS):
        code, digest = MECHANISMS[mechanism]
        salt = secrets.token_bytes(32)
        salted = hashlib.pbkdf2_hmac(digest, password, salt, args.iterations)
        upsertions.append((args.name, code, args.iterations, salt, salted))
    async with admin_client(args) as admin:
        response = await send(admin, AlterUserScramCredentials([], upsertions))
    if _results(response, "set the credentials of"):
        return 1
    names = ", ".join(args.mechanism or list(MECHANISMS))
    print(f"set {names} credentials of user {args.name} ({args.iterations} iterations)")
    return 0


def _scram_set_offline(args: argparse.Namespace, password: bytes) -> int:
    """The credential file of a stopped broker (a running one would overwrite it)."""
    if not args.data_dir.is_dir():
        raise CliError(f"--data-dir {args.data_dir} is not a directory", 2)
    store = ScramStore(args.data_dir)
    try:
        store.load()
        for mechanism in args.mechanism or list(MECHANISMS):
            store.credentials[(args.name, mechanism)] = ScramCredential.from_password(
                mechanism, password.decode(), args.iterations)
        store.save()
    except (OSError, RuntimeError) as exc:
        raise CliError(f"cannot write {store.path}: {exc}") from None
    names = ", ".join(args.mechanism or list(MECHANISMS))
    print(f"set {names} credentials of user {args.name} in {store.path} "
          "(read when the broker starts)")
    return 0


async def scram_describe(args: argparse.Namespace) -> int:
    async with admin_client(args) as admin:
        response = await send(admin, DescribeUserScramCredentials(args.names or None))
    if response.error_code:
        raise CliError(error_message(response.error_code, response.error_message))
    failed = 0
    for user, code, message, infos, *_tags in response.results:
        if code:
            failed = 1
            print(f"{PROG}: {user}: {error_message(code, message)}", file=sys.stderr)
            continue
        described = ", ".join(f"{NAMES.get(m, m)} iterations={i}" for m, i, *_ in infos)
        print(f"{user}: {described}")
    return failed


async def scram_delete(args: argparse.Namespace) -> int:
    deletions = [(args.name, MECHANISMS[m][0]) for m in args.mechanism or list(MECHANISMS)]
    async with admin_client(args) as admin:
        described = await send(admin, DescribeUserScramCredentials([args.name]))
        if not args.mechanism and described.results and not described.results[0][1]:
            # Delete only what exists when no mechanism is named (a missing one is an error).
            present = {m for m, *_ in described.results[0][3]}
            deletions = [d for d in deletions if d[1] in present]
        response = await send(admin, AlterUserScramCredentials(deletions, []))
    if _results(response, "delete the credentials of"):
        return 1
    print(f"deleted the SCRAM credentials of user {args.name}")
    return 0
