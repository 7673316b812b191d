"""A streams topology drawn as an inline SVG: one band per sub-topology, topics above their
sources and below their sinks, stores beside the processors that use them, each node with its
live records/s. Server-side layout (rows by longest path from the topics), so the page needs no
graph library.
"""

from __future__ import annotations

from typing import Any

from .html import esc

BOX_W, BOX_H, GAP_X, ROW_H, BAND_PAD = 250, 42, 24, 72, 34
FILL = {"source": "#d6ecff", "processor": "#ffffff", "sink": "#ffe9d6", "topic": "#eeeeee",
        "repartition": "#ffd27f", "store": "#dff3df"}


def _short(name: str, limit: int = 34) -> str:
    return name if len(name) <= limit else name[:limit - 1] + "…"


def _band(sub: dict[str, Any], internal: dict[str, str]) -> list[tuple[str, str, str, list[str]]]:
    """(key, label, kind, children) for the sub-topology's nodes, topics and stores."""
    items: dict[str, tuple[str, str, str, list[str]]] = {}
    for node in sub["nodes"]:
        kind = node.get("type", "processor")
        children = [f"n:{s}" for s in node["successors"]]
        if kind == "sink" and node.get("topic"):
            children.append(f"t:{node['topic']}")
        for store in node.get("stores", []):
            children.append(f"s:{store}")
            items.setdefault(f"s:{store}", (f"s:{store}", store, "store", []))
        items[f"n:{node['name']}"] = (f"n:{node['name']}", node["name"], kind, children)
        if kind == "source":
            for topic in node.get("topics", []):
                key = f"t:{topic}"
                topic_kind = "repartition" if internal.get(topic) == "repartition" else "topic"
                items[key] = (key, topic, topic_kind, [f"n:{node['name']}"])
        if kind == "sink" and node.get("topic"):
            topic = node["topic"]
            topic_kind = "repartition" if internal.get(topic) == "repartition" else "topic"
            items.setdefault(f"t:{topic}", (f"t:{topic}", topic, topic_kind, []))
    return list(items.values())


def _depths(items: list[tuple[str, str, str, list[str]]]) -> dict[str, int]:
    """Longest path from a root (a topic, or a node nobody feeds), so edges point down."""
    known = {key for key, *_ in items}
    children = {key: [c for c in kids if c in known]
                for key, _, _, kids in items}
    parents: dict[str, int] = {key: 0 for key in children}
    for kids in children.values():
        for child in kids:
            parents[child] += 1
    depth = {key: 0 for key in children}
    ready = [key for key, n in parents.items() if n == 0]
    while ready:
        key = ready.pop(0)
        for child in children[key]:
            depth[child] = max(depth[child], depth[key] + 1)
            parents[child] -= 1
            if parents[child] == 0:
                ready.append(child)
    return depth


def render(topology: dict[str, Any], rates: dict[str, float]) -> str:
    """The SVG of ``topology`` (the instance report's) with ``rates`` (node -> records/s)."""
    internal = topology.get("internal_topics", {})
    bands = [(f"Sub-topology {sub['id']}", _band(sub, internal))
             for sub in topology.get("subtopologies", [])]
    bands += [(f"Global store {g['store']}", _band(g, internal))
              for g in topology.get("global_stores", [])]
    shapes: list[str] = []
    y0, width = 0, 0
    for title, items in bands:
        kinds = {key: kind for key, _, kind, _ in items}
        depth = _depths([item for item in items if item[2] != "store"])
        for key, _, _, kids in items:  # a store sits in the row of its first processor
            for child in kids:
                if kinds.get(child) == "store" and key in depth:
                    depth.setdefault(child, depth[key])
        rows: dict[int, list[str]] = {}
        for key, *_ in sorted(items, key=lambda item: item[2] == "store"):
            rows.setdefault(depth.get(key, 0), []).append(key)
        pos = {}
        for row, keys in rows.items():
            for i, key in enumerate(keys):
                pos[key] = (20 + i * (BOX_W + GAP_X), y0 + BAND_PAD + row * ROW_H)
        band_h = BAND_PAD + (max(rows) + 1) * ROW_H if rows else BAND_PAD
        band_w = 40 + max(len(k) for k in rows.values()) * (BOX_W + GAP_X) if rows else 200
        width = max(width, band_w)
        shapes.append(f'<rect x="4" y="{y0 + 4}" width="{band_w - 8}" height="{band_h - 8}" '
                      f'fill="none" stroke="#9ab" stroke-dasharray="4 3" rx="6"/>'
                      f'<text x="14" y="{y0 + 22}" font-weight="bold">{esc(title)}</text>')
        for key, _label, _kind, kids in items:
            x, y = pos[key]
            for child in kids:
                if child not in pos:
                    continue
                cx, cy = pos[child]
                if kinds[child] == "store" and cy == y:  # beside it: a dashed link
                    shapes.append(f'<line x1="{x + BOX_W}" y1="{y + BOX_H / 2}" x2="{cx}" '
                                  f'y2="{cy + BOX_H / 2}" stroke="#567" '
                                  'stroke-dasharray="5 4"/>')
                    continue
                shapes.append(f'<line x1="{x + BOX_W / 2}" y1="{y + BOX_H}" '
                              f'x2="{cx + BOX_W / 2}" y2="{cy}" stroke="#567" '
                              f'marker-end="url(#arrow)"/>')
        for key, label, kind, _ in items:
            x, y = pos[key]
            round_ = 20 if kind in ("topic", "repartition") else 4
            shapes.append(
                f'<g class="topo-{kind}" data-name="{esc(label)}"><title>{esc(label)}</title>'
                f'<rect x="{x}" y="{y}" width="{BOX_W}" height="{BOX_H}" rx="{round_}" '
                f'fill="{FILL[kind]}" stroke="#456"/>'
                f'<text x="{x + 8}" y="{y + 17}" font-size="12">{esc(_short(label))}</text>')
            if kind in ("source", "processor", "sink"):
                rate = rates.get(label)
                text = "– rec/s" if rate is None else f"{rate:.1f} rec/s"
                shapes.append(f'<text class="rate" x="{x + 8}" y="{y + 34}" font-size="11" '
                              f'fill="#1f3a5f">{text}</text>')
            else:
                what = {"topic": "topic", "repartition": "repartition topic",
                        "store": "state store"}[kind]
                shapes.append(f'<text x="{x + 8}" y="{y + 34}" font-size="11" '
                              f'fill="#666">{what}</text>')
            shapes.append("</g>")
        y0 += band_h + 10
    return (f'<svg id="topology" xmlns="http://www.w3.org/2000/svg" width="{width}" '
            f'height="{y0}" font-family="system-ui,sans-serif"><defs><marker id="arrow" '
            'viewBox="0 0 10 10" refX="10" refY="5" markerWidth="7" markerHeight="7" '
            'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="#567"/></marker>'
            f'</defs>{"".join(shapes)}</svg>')
