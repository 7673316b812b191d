"""Findings and the end-of-run report: each finding carries the smallest case that caused it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from .mutate import Case

# Checks that fail a run. Notes: "accepted" (the broker took a batch Kafka refuses) and
# "handler-error" (a request handler raised; logged as one line, the connection closed).
FATAL = ("alive", "round-trip", "traceback", "rss", "restart", "group-state")
HEX_SHOWN = 2000


@dataclass
class Finding:
    check: str
    signature: str
    detail: str
    case: Case | None = None
    recent: list[Case] = field(default_factory=list)  # the batch before a batch-level failure
    hits: int = 1

    @property
    def fatal(self) -> bool:
        return self.check in FATAL


@dataclass
class Report:
    seed: int
    workdir: Path
    corpus_size: int = 0
    cases_sent: int = 0
    elapsed: float = 0.0
    findings: dict[tuple[str, str], Finding] = field(default_factory=dict)

    def add(self, finding: Finding) -> Finding:
        """Record a finding; a repeat keeps the smaller case."""
        key = (finding.check, finding.signature)
        known = self.findings.get(key)
        if known is None:
            self.findings[key] = finding
            return finding
        known.hits += 1
        if finding.case and (known.case is None or len(finding.case.wire) < len(known.case.wire)):
            known.case, known.detail = finding.case, finding.detail
        return known

    @property
    def failures(self) -> list[Finding]:
        return [f for f in self.findings.values() if f.fatal]

    @property
    def notes(self) -> list[Finding]:
        return [f for f in self.findings.values() if not f.fatal]

    def render(self) -> str:
        lines = [f"fuzz seed {self.seed}: {self.cases_sent} cases from a corpus of "
                 f"{self.corpus_size} frames in {self.elapsed:.1f}s; "
                 f"{len(self.failures)} failing finding(s), {len(self.notes)} note(s)",
                 f"reproduce: python -m tests.fuzz --seed {self.seed} --cases "
                 f"{self.cases_sent} --corpus {self.workdir / 'corpus.json'}"]
        for n, finding in enumerate([*self.failures, *self.notes], 1):
            lines += ["", f"[{n}] {finding.check.upper()}: {finding.signature} "
                      f"({finding.hits} hit(s))", _indent(finding.detail)]
            if finding.case is not None:
                lines += _case_lines(finding.case, self.workdir / "findings" / f"{n}.hex")
            for case in finding.recent[-5:]:
                lines.append(f"    recent case {case.index}: {case.label} ({len(case.wire)}B)")
        return "\n".join(lines)


def _case_lines(case: Case, path: Path) -> list[str]:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(case.wire.hex() + "\n")
    shown = case.wire.hex()
    if len(shown) > HEX_SHOWN:
        shown = shown[:HEX_SHOWN] + f"... ({len(case.wire)} bytes, full hex in {path})"
    return [f"    case {case.index} from {case.source} (api_key={case.api_key} "
            f"v{case.api_version}): {case.label}",
            f"    wire ({len(case.wire)}B, size prefix included): {shown}",
            f"    replay: python -m tests.fuzz --replay {path}"]


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines()[:30])
