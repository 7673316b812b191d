"""A bounded protocol fuzzer for the bundled broker (issue [8]).

Request frames are recorded from real clients through a TCP proxy, mutated deterministically
from a seed, and sent to a broker subprocess; after each batch an oracle checks that the broker
is alive, serves a round trip, logged no traceback and kept its memory bounded, and at the end
that it restarts on the same data directory. ``python -m tests.fuzz --seed S --seconds N``.
"""
