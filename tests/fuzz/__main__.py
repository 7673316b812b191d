"""``python -m tests.fuzz``: fuzz the broker for a while; prints the seed and every finding."""

from __future__ import annotations

import argparse
import random
import sys
import tempfile
from pathlib import Path

from .runner import Options, run


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m tests.fuzz", description=__doc__)
    parser.add_argument("--seed", type=int, help="random seed (default: a fresh one, printed)")
    parser.add_argument("--seconds", type=float, default=180.0, help="time budget")
    parser.add_argument("--cases", type=int, help="stop after this many cases")
    parser.add_argument("--only", type=lambda s: [int(x) for x in s.split(",")], default=[],
                        help="run only these case indices (comma-separated)")
    parser.add_argument("--batch", type=int, default=100, help="cases per oracle round trip")
    parser.add_argument("--corpus", type=Path, help="a corpus.json from an earlier run")
    parser.add_argument("--replay", action="append", default=[],
                        help="send these bytes (hex, or a file of hex) instead of mutations")
    parser.add_argument("--rss-limit-mib", type=int, default=1024,
                        help="the broker's VmRSS/VmHWM bound")
    parser.add_argument("--address-space-gib", type=float, default=8.0,
                        help="RLIMIT_AS of the broker, a safety net for the machine (0: none)")
    parser.add_argument("--workdir", type=Path, help="where data, log and findings go")
    return parser.parse_args(argv)


def _hex(arg: str) -> bytes:
    """Bytes from hex on the command line, or from a file holding hex (findings/N.hex)."""
    try:
        return bytes.fromhex(arg)
    except ValueError:
        return bytes.fromhex(Path(arg).read_text().strip())


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    seed = args.seed if args.seed is not None else random.SystemRandom().randrange(2**31)
    workdir = args.workdir or Path(tempfile.mkdtemp(prefix=f"fuzz-{seed}-"))
    print(f"[fuzz] seed {seed}, up to {args.seconds:.0f}s, work dir {workdir}", flush=True)
    options = Options(seed=seed, workdir=workdir, cases=args.cases, seconds=args.seconds,
                      batch=args.batch, only=args.only, corpus=args.corpus,
                      replay=[_hex(h) for h in args.replay],
                      rss_limit_kib=args.rss_limit_mib * 1024,
                      address_space=int(args.address_space_gib * (1 << 30)),
                      log=lambda line: print(line, flush=True))
    report = run(options)
    print(report.render(), flush=True)
    return 1 if report.failures else 0


if __name__ == "__main__":
    sys.exit(main())
