"""Views per page category, from the windowed page counts Spark writes: the streams side of
examples/spark_roundtrip.py.

    streams run examples/spark_roundtrip_app.py        # on the bundled broker
    streams describe examples/spark_roundtrip_app.py

Input: `page-counts` (written by Spark, exactly once: key page, JSON {"page", "window_start",
"views"}, one record per closed window) joined with `pages` (key page, JSON {"category"}; a
table). Output: the table `views-per-category` (category -> total views), also in the topic
`category-views`.
"""

from __future__ import annotations

from streams import Materialized, Serdes, StreamsBuilder, Topology

config = {"application.id": "spark-roundtrip", "processing.guarantee": "exactly_once_v2"}


def build_topology() -> Topology:
    builder = StreamsBuilder()
    pages = builder.table("pages", key_serde=Serdes.string(), value_serde=Serdes.json(),
                          materialized=Materialized("pages-by-id"))
    counts = builder.stream("page-counts", key_serde=Serdes.string(), value_serde=Serdes.json())
    per_category = (counts
                    .join(pages, lambda count, page: {"category": page["category"],
                                                      "views": count["views"]})
                    .group_by(lambda page, row: row["category"], key_serde=Serdes.string(),
                              value_serde=Serdes.json())
                    .aggregate(lambda: 0, lambda category, row, total: total + row["views"],
                               Materialized("views-per-category", value_serde=Serdes.long())))
    per_category.to_stream().to("category-views", key_serde=Serdes.string(),
                                value_serde=Serdes.long())
    return builder.build()
