"""The oracle: the TopologyTestDriver's output for the same input, in-process.

The driver runs the same task and store code with one partition, no cache and no faults, so
its output is what every correct run must converge to.
"""

from __future__ import annotations

from typing import Any

from streams.testing import TopologyTestDriver

from .catalogue import InputPlan, Scenario

KV = tuple[Any, Any]


def expected_output(scenario: Scenario, plan: InputPlan) -> list[KV]:
    """Every (key, value) the driver emits on the scenario's output topic, in order."""
    with TopologyTestDriver(scenario.build(0), {"application.id": "oracle"}) as driver:
        topics = {name: driver.create_input_topic(name, ks, vs)
                  for name, (ks, vs) in scenario.inputs.items()}
        out = driver.create_output_topic(scenario.output, scenario.key_serde,
                                         scenario.value_serde)
        result: list[KV] = []
        for topic, key, value, ts in plan.all_records():
            topics[topic].pipe_input(key, value, timestamp=ts)
            result.extend(out.read_key_values_to_list())
        return result
