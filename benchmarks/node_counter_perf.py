"""Records/s of a six-node stateless chain in the TopologyTestDriver: the cost of what the
runtime does per node per record (since the console's /apps, a ``processed`` counter per node).

    python benchmarks/node_counter_perf.py [--records 100000] [--rounds 7]

Compare two trees by running it with each on PYTHONPATH, alternating, on the same machine
(e.g. a copy of ``streams/`` with the two ``processed += 1`` lines of
streams/processor/task.py replaced by ``pass``); the median of the rounds is printed.
"""

from __future__ import annotations

import argparse
import statistics
import time

from streams import Serdes, StreamsBuilder
from streams.testing.driver import TopologyTestDriver


def one_round(records: int) -> float:
    s = Serdes.string()
    builder = StreamsBuilder()
    (builder.stream("in", key_serde=s, value_serde=s).filter(lambda k, v: True)
     .map_values(lambda v: v).peek(lambda k, v: None).filter(lambda k, v: True)
     .map_values(lambda v: v).to("out", key_serde=s, value_serde=s))
    with TopologyTestDriver(builder.build(), {"application.id": "node-counter-perf"}) as driver:
        topic = driver.create_input_topic("in", s, s)
        pairs = [(f"k{i % 100}", "v") for i in range(records)]
        began = time.perf_counter()
        topic.pipe_key_value_list(pairs)
        return records / (time.perf_counter() - began)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--rounds", type=int, default=7)
    opts = parser.parse_args()
    rates = [one_round(opts.records) for _ in range(opts.rounds)]
    print(f"records/s: median {statistics.median(rates):.0f} "
          f"(rounds: {', '.join(f'{r:.0f}' for r in rates)})")


if __name__ == "__main__":
    main()
