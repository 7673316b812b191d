"""Server-rendered pages: small functions from data to HTML, every value escaped.

No template engine: the pages are tables and forms, and f-strings with ``esc`` keep them in
one readable place without another dependency.
"""

from __future__ import annotations

import html
import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import quote

NAV = [("/brokers", "Brokers"), ("/topics", "Topics"), ("/groups", "Groups"), ("/connectors", "Connectors"),
       ("/schemas", "Schemas"), ("/apps", "Apps"), ("/acls", "ACLs")]

STYLE = """
body{font-family:system-ui,sans-serif;margin:0;color:#222}
header{background:#1f3a5f;color:#fff;padding:.5em 1em;display:flex;gap:1.5em;align-items:center}
header a{color:#fff;text-decoration:none}header .ro{margin-left:auto;background:#b33;padding:.1em .5em}
main{padding:1em}table{border-collapse:collapse;margin:.5em 0}
td,th{border:1px solid #ccc;padding:.2em .6em;text-align:left;font-size:.9em}
th{background:#eef}.num{text-align:right}.error{color:#b00;font-weight:bold}
.ok{color:#070}form.inline{display:inline}pre{background:#f6f6f6;padding:.5em;overflow:auto}
"""


def esc(value: Any) -> str:
    return html.escape("" if value is None else str(value), quote=True)


def link(path: str, name: str) -> str:
    return f'<a href="{esc(path + quote(name, safe=""))}">{esc(name)}</a>'


def table(headers: Iterable[str], rows: Iterable[Iterable[Any]], id_: str = "") -> str:
    """Cells are escaped unless given as ``Raw``."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join(
        "<tr>" + "".join(
            f'<td class="num">{cell}</td>' if isinstance(cell, int) and not isinstance(cell, bool)
            else f"<td>{cell if isinstance(cell, Raw) else esc(cell)}</td>" for cell in row
        ) + "</tr>" for row in rows)
    ident = f' id="{esc(id_)}"' if id_ else ""
    return f"<table{ident}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


class Raw(str):
    """Already-built HTML (a link, a form) placed into a table cell as is."""


def page(title: str, body: str, read_only: bool, refresh: int = 0) -> str:
    nav = "".join(f'<a href="{href}">{esc(label)}</a>' for href, label in NAV)
    ro = '<span class="ro">read-only</span>' if read_only else ""
    live = f' data-refresh="{refresh}"' if refresh else ""
    return (f"<!doctype html><html><head><meta charset=utf-8><link rel=icon href='data:,'><title>{esc(title)} · streams "
            f"console</title><style>{STYLE}</style><script src=\"/static/console.js\" defer>"
            f"</script></head><body><header><strong>streams console</strong>{nav}{ro}"
            f"</header><main{live}><h1>{esc(title)}</h1>{body}</main></body></html>")


def post_form(action: str, token: str, label: str, fields: str = "",
              confirmed: bool = False) -> str:
    """A write form; without ``confirmed`` the server answers with a confirmation page first."""
    extra = '<input type="hidden" name="confirmed" value="yes">' if confirmed else ""
    return (f'<form class="inline" method="post" action="{esc(action)}">'
            f'<input type="hidden" name="csrf" value="{esc(token)}">{extra}{fields}'
            f'<button type="submit">{esc(label)}</button></form>')


def confirm_page(what: str, action: str, token: str, fields: dict[str, str],
                 read_only: bool) -> str:
    hidden = "".join(f'<input type="hidden" name="{esc(k)}" value="{esc(v)}">'
                     for k, v in fields.items() if k not in ("csrf", "confirmed"))
    body = (f"<p>{esc(what)}?</p>" + post_form(action, token, "Confirm", hidden, confirmed=True)
            + ' <a href="javascript:history.back()">Cancel</a>')
    return page("Confirm", body, read_only)


def message(title: str, text: str, ok: bool, read_only: bool, back: str) -> str:
    cls = "ok" if ok else "error"
    return page(title, f'<p class="{cls}" id="outcome">{esc(text)}</p>'
                       f'<p><a href="{esc(back)}">Back</a></p>', read_only)


def lag_chart(history: list[dict[str, Any]]) -> str:
    """The group's total lag over the samples taken (one per view, the page refreshes every
    few seconds), as an inline SVG polyline."""
    if len(history) < 2:
        return '<p id="lag-chart">The lag chart fills in as this page refreshes.</p>'
    width, height = 600, 120
    t0, t1 = history[0]["time"], history[-1]["time"]
    top = max(h["lag"] for h in history) or 1
    points = " ".join(
        f"{(h['time'] - t0) / ((t1 - t0) or 1) * width:.1f},"
        f"{height - h['lag'] / top * (height - 10):.1f}" for h in history)
    return (f'<svg id="lag-chart" width="{width}" height="{height}" '
            f'style="border:1px solid #ccc"><polyline fill="none" stroke="#1f3a5f" '
            f'stroke-width="2" points="{points}"/><text x="4" y="12" font-size="11">max '
            f'{top}</text></svg>')


def pretty(value: Any) -> str:
    return f"<pre>{esc(json.dumps(value, indent=2, sort_keys=True))}</pre>"


def pretty_schema(text: str) -> str:
    """A schema indented when it is JSON (Avro, JSON Schema), as is otherwise (Protobuf)."""
    def indented(text: str) -> str:
        try:
            return json.dumps(json.loads(text), indent=2)
        except ValueError:
            return text
    return f"<pre>{esc(indented(text))}</pre>"


def diff(old: str, new: str) -> str:
    """A unified diff of two schemas, each indented first so fields line up."""
    import difflib

    def lines(text: str) -> list[str]:
        try:
            return json.dumps(json.loads(text), indent=2).splitlines()
        except ValueError:
            return text.splitlines()
    out = "\n".join(difflib.unified_diff(lines(old), lines(new), "old", "new", lineterm=""))
    return f'<pre id="diff">{esc(out or "(no difference)")}</pre>'
