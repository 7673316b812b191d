"""The fuzz loop: send cases, check each one cheaply, run the full oracle after every batch."""

from __future__ import annotations

import contextlib
import re
import shutil
import socket
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from . import corpus as corpus_mod
from . import group_seeds, oracle
from .broker import ADDRESS_SPACE_LIMIT, BrokerDied, BrokerProcess, free_port
from .mutate import Case, Corpus, generate
from .proxy import RecordingProxy
from .report import Finding, Report
from .wire import produce_error_codes, split_responses

# Mutations whose batch Kafka refuses; an answer of error code 0 is noted as "accepted".
REFUSED_BY_KAFKA = ("control bit flipped", "control marker", "codec bits -> 5",
                    "codec bits -> 6", "codec bits -> 7", "record count", "garbage records",
                    "magic ->", "batch length ->", "bomb codec", "lying size")


@dataclass
class Options:
    seed: int
    workdir: Path
    cases: int | None = None  # stop after this many cases...
    seconds: float | None = None  # ...or after this long, whichever comes first
    batch: int = 100  # cases between two round trips
    only: list[int] = field(default_factory=list)  # run just these case indices
    replay: list[bytes] = field(default_factory=list)  # send these wire bytes instead
    corpus: Path | None = None  # reuse a saved corpus instead of recording one
    rss_limit_kib: int = oracle.RSS_LIMIT_KIB
    address_space: int = ADDRESS_SPACE_LIMIT  # RLIMIT_AS of the broker (0: none)
    case_timeout: float = 2.0
    log: Callable[[str], None] = print


def send(address: tuple[str, int], wire: bytes, timeout: float) -> bytes:
    """Send on a fresh connection, half-close, read until the broker closes (or timeout)."""
    chunks: list[bytes] = []
    deadline = time.monotonic() + timeout
    with socket.create_connection(address, timeout=timeout) as sock:
        try:
            sock.sendall(wire)
            sock.shutdown(socket.SHUT_WR)
        except OSError:
            pass  # the broker gave up on us first: a closed connection is an answer too
        while (left := deadline - time.monotonic()) > 0:
            sock.settimeout(left)
            try:
                chunk = sock.recv(1 << 16)
            except OSError:
                break
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks)


class Fuzzer:
    def __init__(self, options: Options) -> None:
        self.options = options
        self.workdir = options.workdir
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.port = free_port()
        self.broker = BrokerProcess(self.workdir, self.port, options.address_space)
        self.proxy = RecordingProxy(("127.0.0.1", self.port), self.broker.address)
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.report = Report(options.seed, self.workdir)
        self.recent: list[Case] = []
        self.round_trips = 0
        self.fresh_data_dirs = 0
        self.crash_replays: dict[str, int] = {}
        self.last_log = ""  # the log chunk of the case before, for a crash seen one case late
        self.accepted: list[Case] = []  # every case noted as "accepted", suspects for restarts
        self.sequences: dict[str, list[bytes]] = {}  # the group seeds, replayed as an oracle
        self.group_answers: dict[str, list] = {}  # their answers before any mutation

    def run(self) -> Report:
        started = time.monotonic()
        try:
            self.broker.start()
            self.proxy.start()
            corpus = self._corpus()
            self._baseline()
            for case in self._cases(corpus, started):
                self._one(case)
                if len(self.recent) >= self.options.batch:
                    self._batch_check()
            self._batch_check()
            self._restart_check()
        except _Abort as exc:
            self.options.log(f"[fuzz] run stopped: {exc}")
        finally:
            self.report.elapsed = time.monotonic() - started
            self.proxy.stop()
            self.broker.stop()
        return self.report

    # -- setup --------------------------------------------------------------------------------

    def _corpus(self) -> Corpus:
        if self.options.corpus is not None:
            frames = corpus_mod.on_this_broker(corpus_mod.load(self.options.corpus),
                                               self.bootstrap)
        else:
            frames = corpus_mod.record(self.proxy, self.bootstrap)
        corpus_mod.save(frames, self.workdir / "corpus.json")
        self.sequences = corpus_mod.sequences(frames)
        self.report.corpus_size = len(frames)
        self.options.log(f"[fuzz] seed {self.options.seed}; corpus of {len(frames)} frames in "
                         f"{self.workdir / 'corpus.json'}")
        return Corpus(frames)

    def _baseline(self) -> None:
        """Before any mutation: clean log and a working round trip, or the setup is broken."""
        self._check_log(None, "traceback")
        problem = oracle.round_trip(self.bootstrap, b"baseline")
        if problem:
            raise AssertionError(f"broker fails before fuzzing: {problem}\n"
                                 f"{self.broker.log_tail()}")
        for kind, frames in self.sequences.items():
            if kind not in self.group_answers:
                self.group_answers[kind] = group_seeds.replay(self.broker.address, kind, frames,
                                                              "base")
        oracle.reset_peak(self.broker)

    def _cases(self, corpus: Corpus, started: float):
        if self.options.replay:
            for i, wire in enumerate(self.options.replay):
                yield Case(i, "replay", "replay", wire, *_key_version(wire))
            return
        indices = self.options.only or range(self.options.cases or 2**62)
        for index in indices:
            if self.options.seconds and time.monotonic() - started > self.options.seconds:
                return
            yield generate(self.options.seed, index, corpus)

    # -- checks -------------------------------------------------------------------------------

    def _one(self, case: Case) -> None:
        previous = self.recent[-1] if self.recent else None
        self.recent.append(case)
        answer = self._send(case)
        self.report.cases_sent += 1
        earlier, text = self.last_log, self._check_log(case, "traceback")
        self.last_log = text
        # Raw stderr output (an abort's message, a panic) means the broker may be dying: give
        # it a moment, so the death is seen after this case and not the next one.
        if _RAW_LINE.search(text):
            self.broker.exited_within(2.0)
        if not self.broker.alive():
            self._crashed(case, previous, earlier + text)
            return
        rss, peak = self.broker.memory_kib()
        if peak > self.options.rss_limit_kib:
            strategy = case.label.split(":")[0]
            kind = re.sub(r"[0-9]+", "N", " ".join(case.label.split(":", 1)[1].split()[:3]))
            self._add("rss", f"VmHWM over {self.options.rss_limit_kib // 1024} MiB after "
                      f"{strategy}: {kind}", f"VmHWM {peak // 1024} MiB, VmRSS {rss // 1024} "
                      "MiB after this case", case)
            oracle.reset_peak(self.broker)
            if rss > self.options.rss_limit_kib:
                self._recover("restart after the RSS bound", None)
                return
        if case.api_key == 0 and (_internal_target(case) or
                                  any(m in case.label for m in REFUSED_BY_KAFKA)):
            self._check_accepted(case, answer)

    def _send(self, case: Case) -> bytes:
        try:
            return send(self.broker.address, case.wire, self.options.case_timeout)
        except OSError:
            return b""

    def _check_accepted(self, case: Case, answer: bytes) -> None:
        """Note a produce answered with error code 0 for a batch Kafka refuses; the first of
        each kind is followed by a restart, since a stored bad batch may break the next start."""
        responses = split_responses(answer)
        codes = produce_error_codes(responses[0], case.api_version) if responses else []
        if not codes or any(codes):
            return
        self.accepted.append(case)
        what = case.label.split(":", 1)[1].split(" into ")[0].split(" + ")[0].strip()
        what = f"a batch with {what.split(' -> ')[0]}"
        if internal := _internal_target(case):
            what = f"a client's batch into {internal}"
        known = len(self.report.findings)
        self._add("accepted", f"produce accepted {what}",
                  "error code 0 where Kafka refuses (invalid batch, or INVALID_TOPIC_EXCEPTION "
                  "for a client write to an internal topic)", case)
        if len(self.report.findings) > known:
            self._recover(f"restart probe after case {case.index}", case)

    def _crashed(self, case: Case, previous: Case | None, text: str) -> None:
        """The broker died: restart it and, the first times a kind of crash is seen, replay
        this case and the one before on their own to learn which one kills it (a dying broker
        may close the connection one case late)."""
        code = self.broker.proc.returncode if self.broker.proc else None
        text += self.broker.new_log()
        self._recover("restart after a crash", None)
        signature = _crash_signature(code, text)
        known = self.report.findings.get(("alive", signature))
        self.crash_replays[signature] = tries = self.crash_replays.get(signature, 0) + 1
        culprit = None
        if (known is None or known.case is None) and tries <= 2:
            for candidate in (case, previous):
                if candidate is None:
                    continue
                self._send(candidate)
                if self.broker.exited_within(2.0):
                    culprit, text = candidate, self.broker.new_log()
                    signature = _crash_signature(code, text)
                    self._recover("restart after a replayed crash", None)
                    break
                self._check_log(candidate, "traceback")
        self._add("alive", signature, _interesting(text), culprit,
                  [] if culprit else [c for c in (previous, case) if c])

    def _batch_check(self) -> None:
        if not self.recent:
            return
        if not self.broker.alive():
            previous = self.recent[-2] if len(self.recent) > 1 else None
            self._crashed(self.recent[-1], previous, self.last_log)
        self.round_trips += 1
        problem = oracle.round_trip(self.bootstrap, f"oracle-{self.round_trips}".encode())
        self._check_log(self.recent[-1], "traceback")
        if problem:
            self._add("round-trip", problem.split(":")[0], problem, None, list(self.recent))
            self._recover("restart after a failed round trip", None)
        self._group_check()
        rss, _ = self.broker.memory_kib()
        self.options.log(f"[fuzz] {self.report.cases_sent} cases, "
                         f"{len(self.report.failures)} failing finding(s), "
                         f"{len(self.report.notes)} note(s), broker VmRSS {rss // 1024} MiB")
        self.recent = []

    def _group_check(self) -> None:
        """The group seeds, unmutated, on a fresh group: the same answers as before any
        mutation (error codes, epochs, assignments, acquired ranges), or group state broke."""
        for kind, frames in self.sequences.items():
            expected = self.group_answers.get(kind)
            try:
                got = group_seeds.replay(self.broker.address, kind, frames,
                                         f"o{self.round_trips}")
            except (OSError, ValueError, struct.error) as exc:
                got = [f"replay failed: {type(exc).__name__}: {exc}"]
            self._check_log(self.recent[-1] if self.recent else None, "traceback")
            if got == expected:
                continue
            at = next((i for i, (a, b) in enumerate(zip(got, expected or [], strict=False))
                       if a != b), min(len(got), len(expected or [])))
            api = struct.unpack_from(">h", frames[at])[0] if at < len(frames) else -1
            self._add("group-state", f"{kind} seed answered differently at frame {at} "
                      f"(api {api})", f"expected {expected[at] if expected and at < len(expected) else None}\n"
                      f"got      {got[at] if at < len(got) else None}", None, list(self.recent))
            self._recover("restart after a group-state difference", None)

    def _check_log(self, case: Case | None, check: str) -> str:
        text = self.broker.new_log()
        for tb in oracle.tracebacks(text):
            self._add(check, tb.signature, tb.text, case)
        for failure in oracle.handler_failures(text):
            self._add("handler-error", failure, "logged as one ERROR line (no traceback)", case)
        return text

    def _add(self, check: str, signature: str, detail: str, case: Case | None = None,
             recent: list[Case] | None = None) -> None:
        known = len(self.report.findings)
        finding = self.report.add(Finding(check, signature, detail, case, recent or []))
        if len(self.report.findings) > known:
            where = f" (case {case.index}: {case.label})" if case else ""
            self.options.log(f"[fuzz] new finding {check}: {finding.signature}{where}")

    # -- restarts -----------------------------------------------------------------------------

    def _recover(self, why: str, culprit: Case | None) -> None:
        """Stop and start on the same data dir. If it will not start but starts on a fresh
        directory, that is a "restart" finding (the data broke it) and the run goes on fresh;
        if it does not start even fresh, the broker itself is broken: the run stops."""
        code = self.broker.stop()
        if code not in (0, None) and self.broker.exited_cleanly_expected:
            self._add("restart", f"broker exited with {code} on SIGTERM", self.broker.log_tail())
        self._check_log(None, "traceback")
        try:
            self.broker.start()
        except BrokerDied as exc:
            failure = (exc, self.broker.new_log())
        else:
            self._check_log(None, "restart")
            return
        self.fresh_data_dirs += 1
        shutil.move(self.broker.data_dir, self.workdir / f"data-broken-{self.fresh_data_dirs}")
        try:
            self.broker.start()
        except BrokerDied as exc:
            self._add("alive", "broker does not start even on a fresh data dir", str(exc))
            raise _Abort("the broker cannot start at all") from exc
        self._restart_failed(why, culprit, *failure)
        with contextlib.suppress(AssertionError):
            self._baseline()

    def _restart_failed(self, why: str, culprit: Case | None, exc: BrokerDied, text: str
                        ) -> None:
        found = oracle.tracebacks(text)
        cause = found[0].signature if found else (_interesting(text).splitlines() or ["?"])[0]
        suspects = [] if culprit else sorted(
            self.accepted, key=lambda c: ("control" not in c.label, len(c.wire)))[:5]
        detail = f"{why}\n{found[0].text if found else exc}" + "".join(
            f"\nsuspect (accepted earlier): case {c.index}: {c.label}" for c in suspects)
        self._add("restart", f"broker does not start on its data dir: {cause}", detail,
                  culprit or (suspects[0] if suspects else None))

    def _restart_check(self) -> None:
        """The end of the run: a clean stop, a start on the same data, a working round trip."""
        self._recover("end-of-run restart", None)
        problem = oracle.round_trip(self.bootstrap, b"after-restart")
        if problem:
            self._add("restart", "no round trip after the restart", problem)


def _internal_target(case: Case) -> str | None:
    """The internal topic a produce case writes to, if its mutation sent it there (a batch
    strategy's " into <topic>", or a topic name field mutated to it; not, say, a transactional
    id that happens to be named so)."""
    match = re.search(r"(?: into |\.name '[^']*' -> ')(__consumer_offsets|__transaction_state)",
                      case.label)
    return match[1] if match else None


_RAW_LINE = re.compile(r"^(?!\d{4}-\d\d-\d\d |\s|broker listening|==== fuzz)\S", re.M)


def _crash_signature(code: int | None, text: str) -> str:
    first = _interesting(text).splitlines()[:1]
    cause = re.sub(r"[0-9]+", "N", first[0])[:100] if first else "no cause in the log"
    return f"broker exited with {code}: {cause}"


def _interesting(log_text: str) -> str:
    """The log lines a crash left, from the first one that is not routine INFO/WARNING."""
    lines = log_text.splitlines()
    start = next((i for i, line in enumerate(lines)
                  if " INFO " not in line and " WARNING " not in line), 0)
    return "\n".join(lines[start : start + 12])


class _Abort(Exception):
    """The run cannot go on (the broker does not start at all)."""


def _key_version(wire: bytes) -> tuple[int, int]:
    if len(wire) < 8:
        return -1, -1
    return int.from_bytes(wire[4:6], "big", signed=True), int.from_bytes(wire[6:8], "big",
                                                                          signed=True)


def run(options: Options) -> Report:
    return Fuzzer(options).run()
