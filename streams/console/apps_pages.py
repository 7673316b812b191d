"""``/apps`` and ``/apps/{application.id}``: streams applications, their instances and tasks,
the topology with live records/s per node, and a store lookup (issue [21])."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from . import html as h
from . import topology_svg
from .apps import Apps
from .server import CLUSTER, _html, _json

APPS: web.AppKey[Apps] = web.AppKey("apps", Apps)


async def apps_page(request: web.Request) -> web.Response:
    rows = await request.app[APPS].list()
    if request.path.startswith("/api/"):
        return _json(rows)
    table = h.table(["Application", "State", "Instances", "Query end points"],
                    [[h.Raw(h.link("/apps/", a["application_id"])), a["state"], a["members"],
                      " ".join(a["endpoints"]) or "(none set application.server)"]
                     for a in rows], "apps")
    return _html(request, "Streams applications",
                 f"<p>{len(rows)} applications (consumer groups with the streams assignor)</p>"
                 + table, refresh=10)


def _tasks_cell(tasks: list[dict[str, Any]]) -> str:
    return " ".join(t["task"] + (" (restoring)" if t.get("restoring") else "") for t in tasks)


def _progress(rows: list[dict[str, Any]]) -> str:
    """``store topic-p: position / end`` for each changelog partition."""
    return "; ".join(f"{r['store']} {r['topic']}-{r['partition']}: "
                     f"{'-' if r['position'] is None else r['position']} / "
                     f"{'-' if r['end'] is None else r['end']}" for r in rows) or "-"


async def app_page(request: web.Request) -> web.Response:
    app_id = request.match_info["app"]
    apps = request.app[APPS]
    data = await apps.app(app_id)
    store, key = request.query.get("store", ""), request.query.get("key", "")
    lookup = await apps.lookup(app_id, store, key) if store and key else None
    if request.path.startswith("/api/"):
        return _json({**data, "lookup": lookup} if lookup else data)
    instances = h.table(
        ["Instance", "State", "Active tasks", "Standby tasks", "Lag", "Error"],
        [[i["endpoint"], i.get("state", "-"), _tasks_cell(i.get("active", [])),
          _tasks_cell(i.get("standby", [])), "-" if i.get("lag") is None else i["lag"],
          i["error"] or ""] for i in data["instances"]], "instances")
    task_rows = []
    for i in data["instances"]:
        for t in i.get("active", []):
            parts = " ".join(f"{p['topic']}-{p['partition']}" for p in t["partitions"])
            detail = _progress(t.get("restore", [])) if t.get("restoring") else \
                ("-" if t["lag"] is None else f"lag {t['lag']}")
            task_rows.append([t["task"], "restoring" if t.get("restoring") else "active",
                              i["endpoint"], parts, detail])
        for t in i.get("standby", []):
            task_rows.append([t["task"], "standby", i["endpoint"],
                              " ".join(f"{c['topic']}-{c['partition']}"
                                       for c in t["changelogs"]), _progress(t["changelogs"])])
    task_rows.sort(key=lambda r: (r[0], r[1]))
    tasks = h.table(["Task", "Kind", "Instance", "Partitions", "Lag / changelog position"],
                    task_rows, "tasks")
    topology = data["topology"]
    graph = topology_svg.render(topology, data["rates"]) if topology else \
        "<p>No instance answered: the topology is not known.</p>"
    stores = topology["stores"] if topology else []
    options = "".join(f'<option{" selected" if s == store else ""}>{h.esc(s)}</option>'
                      for s in stores)
    form = (f'<form id="lookup" method="get" action="/apps/{h.esc(h.quote(app_id, safe=""))}">'
            f'<select name="store">{options}</select> '
            f'<input name="key" placeholder="key" value="{h.esc(key)}" required> '
            '<button type="submit">Look up</button></form>')
    if lookup is not None:
        answer = (f'<p id="lookup-result">{h.esc(store)}[{h.esc(key)}] = '
                  f'<strong>{h.esc(lookup["value"])}</strong> (answered through '
                  f'{h.esc(lookup["via"])})</p>') if lookup["found"] else \
            f'<p id="lookup-result">{h.esc(store)} has no key {h.esc(key)}</p>'
        form += answer
    summary = (f'<p>Group state <strong id="state">{h.esc(data["state"])}</strong>, '
               f'{len(data["instances"])} instance(s), total lag '
               f'<strong id="total-lag">{data["lag"]}</strong>; '
               f'<a href="/groups/{h.esc(h.quote(app_id, safe=""))}">consumer group</a></p>')
    return _html(request, f"Application {app_id}",
                 summary + "<h2>Instances</h2>" + instances + "<h2>Tasks</h2>" + tasks
                 + "<h2>Store lookup</h2>" + form
                 + "<h2>Topology (records/s per node)</h2>" + graph, refresh=5)


def add_routes(app: web.Application) -> None:
    app[APPS] = Apps(app[CLUSTER])

    async def on_cleanup(app: web.Application) -> None:
        await app[APPS].stop()
    app.on_cleanup.append(on_cleanup)
    for prefix in ("", "/api"):
        app.router.add_get(prefix + "/apps", apps_page)
        app.router.add_get(prefix + "/apps/{app}", app_page)
