"""Random cases for versioned tables (KIP-889/914) and the join grace period (KIP-923):
a stream joined (inner or left, plain or key-aware joiner, with or without a grace up to the
history) with a versioned table, the table's changes, and sometimes a table-table join of the
versioned table with a plain one; inputs with out-of-order times, equal times and tombstones.

Kept apart from dsl_random.py (the general generator) so the two grow independently;
``make dsl-diff-versioned DSL_DIFF_VERSIONED_CASES=N`` runs many.
"""

from __future__ import annotations

import random
from typing import Any

from .dsl_cases import Case, op, rec, sink


def case(rng: random.Random, index: int) -> Case:
    history = rng.choice([0, 5, 10, 30, 100])
    grace = rng.choice([None, 0, 3, history // 2, history])
    params: dict[str, Any] = {} if grace is None else {"grace": grace}
    if rng.random() < 0.3:
        params["keyed"] = True
    ops = [op("l", "stream", topic="left"),
           op("r", "table", topic="right", store="v", versioned=history),
           op("j", rng.choice(["join", "left_join"]), "l", other="r", fn="concat", **params),
           *sink("j"), op("rs", "to_stream", "r"), *sink("rs", "changes")]
    topics = ["left", "right", "right"]
    if rng.random() < 0.4:
        ops += [op("r2", "table", topic="right2", store="p"),
                op("tj", rng.choice(["join", "left_join", "outer_join"]), "r", other="r2",
                   fn="concat", store="tj"),
                op("tjs", "to_stream", "tj"), *sink("tjs", "tt")]
        topics.append("right2")
    inputs = []
    clock = 0
    for n in range(rng.randint(5, 40)):
        clock += rng.randint(-8, 10)
        topic = rng.choice(topics)
        value = None if rng.random() < 0.15 else f"{topic[0]}{n}"
        inputs.append(rec(topic, rng.choice("abc"), value, max(0, clock + rng.randint(-15, 5))))
    return {"name": f"versioned-random-{index}", "ops": ops, "input": inputs}


def cases(seed: int, count: int) -> list[Case]:
    rng = random.Random(seed)
    return [case(rng, i) for i in range(count)]
