"""Page views per region per minute: a stream-table join feeding a tumbling-window count.

    streams run examples/pageviews_app.py            # on the bundled broker
    streams describe examples/pageviews_app.py

Input: `users` (key user id, JSON {"name", "region"}; a compacted table) and `page-views` (key
user id, JSON {"page", "ms"}). Output: `region-views`, keyed by the windowed region, valued by
the count of views in that minute.
"""

from __future__ import annotations

from streams import Materialized, Serdes, StreamsBuilder, TimeWindows, Topology

WINDOW_MS = 60_000
# The regrouping repartition topic interleaves the input partitions, so records reach the
# window aggregation out of event-time order: the grace period keeps windows open for them.
GRACE_MS = 10 * 60_000
config = {"application.id": "pageviews-demo", "processing.guarantee": "exactly_once_v2"}


def build_topology() -> Topology:
    builder = StreamsBuilder()
    users = builder.table("users", key_serde=Serdes.string(), value_serde=Serdes.json())
    views = builder.stream("page-views", key_serde=Serdes.string(), value_serde=Serdes.json())
    enriched = views.join(users, lambda view, user: {"page": view["page"],
                                                     "region": user["region"]})
    per_region = (enriched
                  .group_by(lambda user_id, view: view["region"],
                            key_serde=Serdes.string(), value_serde=Serdes.json())
                  .windowed_by(TimeWindows.of_size_and_grace(WINDOW_MS, GRACE_MS))
                  .count(Materialized("views-per-region")))
    per_region.to_stream().to("region-views",
                              key_serde=Serdes.windowed(Serdes.string(), WINDOW_MS),
                              value_serde=Serdes.long())
    return builder.build()
