"""Page views per region in 10-second windows: the topology of the full demo pipeline.

    streams run examples/pipeline_app.py        # on the bundled broker
    streams describe examples/pipeline_app.py

Input (as DataGen's `users` and `pageviews` quickstarts write them): `users` (key user id, JSON
{"userid", "regionid", ...}; a compacted table) and `pageviews` (key user id, JSON {"url", ...}).
Each view is joined with its user's region and counted per region and 10-second window of event
time. Output: `region-views`, keyed by region, valued by JSON {"region", "window_start",
"window_end", "views"}: every update of a window's count, the latest one being the total.
"""

from __future__ import annotations

from typing import Any

from streams import Materialized, Serdes, StreamsBuilder, TimeWindows, Topology
from streams.windowing import Windowed

WINDOW_MS = 10_000
# Regrouping by region interleaves the input partitions, so a window's records may arrive out of
# event-time order: the grace period keeps windows open for them.
GRACE_MS = 60_000
config = {"application.id": "pipeline-demo", "processing.guarantee": "exactly_once_v2"}


def window_row(windowed: Windowed, views: int) -> tuple[str, dict[str, Any]]:
    window = windowed.window
    return windowed.key, {"region": windowed.key, "window_start": window.start,
                          "window_end": window.end, "views": views}


def build_topology() -> Topology:
    builder = StreamsBuilder()
    users = builder.table("users", key_serde=Serdes.string(), value_serde=Serdes.json(),
                          materialized=Materialized("users-by-id"))
    views = builder.stream("pageviews", key_serde=Serdes.string(), value_serde=Serdes.json())
    enriched = views.join(users, lambda view, user: {"url": view["url"],
                                                     "region": user["regionid"]})
    counts = (enriched
              .group_by(lambda user_id, view: view["region"],
                        key_serde=Serdes.string(), value_serde=Serdes.json())
              .windowed_by(TimeWindows.of_size_and_grace(WINDOW_MS, GRACE_MS))
              .count(Materialized("views-per-region-window")))
    counts.to_stream().map(window_row).to("region-views", key_serde=Serdes.string(),
                                          value_serde=Serdes.json())
    return builder.build()
