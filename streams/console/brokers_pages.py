"""``/brokers`` and ``/brokers/{id}``: addresses, listeners, configs, log sizes, and request
rates from the broker's metrics (issue [21])."""

from __future__ import annotations

from typing import Any

from aiohttp import web

from . import html as h
from .brokers import Brokers
from .cluster import ConsoleError
from .server import CLUSTER, _html, _json

BROKERS: web.AppKey[Brokers] = web.AppKey("brokers", Brokers)


def size(n: float | None) -> str:
    """Bytes in the unit people read (1.5 MiB)."""
    if n is None:
        return "-"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(n) < 1024 or unit == "TiB":
            return f"{n:.0f} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


def per_second(rate: float | None) -> str:
    return "-" if rate is None else f"{rate:.1f}/s"


async def brokers_page(request: web.Request) -> web.Response:
    rows = await request.app[BROKERS].list()
    if request.path.startswith("/api/"):
        return _json(rows)
    table = h.table(["Broker", "Host", "Port", "Rack", "Controller", "Partitions", "Log size"],
                    [[h.Raw(h.link("/brokers/", str(b["id"]))), b["host"], b["port"],
                      b["rack"] or "-", "yes" if b["controller"] else "", b["partitions"],
                      size(b["log_bytes"])] for b in rows], "brokers")
    return _html(request, "Brokers", f"<p>{len(rows)} brokers</p>{table}", refresh=10)


def _metrics_section(b: dict[str, Any]) -> str:
    metrics = b["metrics"]
    if metrics is None:
        return ("<p>Request rates need the broker's metrics: start the console with "
                "<code>--metrics-url http://HOST:PORT/metrics</code> (the broker's "
                "<code>metrics.listener</code>).</p>")
    if metrics["error"]:
        return f'<p class="error">{h.esc(metrics["error"])}</p>'
    gauges = " ".join(f"{h.esc(k)} <strong>{v:g}</strong>;"
                      for k, v in sorted(metrics["gauges"].items()))
    requests = h.table(["Request", "Total", "Rate", "Errors"],
                       [[name, int(r["total"] or 0), per_second(r["rate"]),
                         int(r.get("errors") or 0)] for name, r in metrics["requests"].items()],
                       "requests")
    topics = h.table(["Topic", "Messages in", "Bytes in", "Bytes out"],
                     [[t, per_second(r.get("messages_in_rate")),
                       "-" if r.get("bytes_in_rate") is None else size(r["bytes_in_rate"]) + "/s",
                       "-" if r.get("bytes_out_rate") is None
                       else size(r["bytes_out_rate"]) + "/s"]
                      for t, r in metrics["topics"].items()], "topic-rates")
    return (f"<p>From {h.esc(b['metrics_url'])}: {gauges} rates over the views of the last "
            f"30 s (they fill in as the page refreshes).</p><h3>Requests</h3>{requests}"
            f"<h3>Topics</h3>{topics}")


async def broker_page(request: web.Request) -> web.Response:
    raw = request.match_info["id"]
    if not raw.lstrip("-").isdigit():
        raise ConsoleError(f"a broker id is a number, got {raw!r}")
    b = await request.app[BROKERS].broker(int(raw))
    if request.path.startswith("/api/"):
        return _json(b)
    listeners = h.table(["Setting", "Value"], [[x["name"], x["value"]] for x in b["listeners"]],
                        "listeners")
    dirs = "".join(
        f"<h3>{h.esc(d['log_dir'])}: {size(d['bytes'])}</h3>"
        + (f'<p class="error">{h.esc(d["error"])}</p>' if d["error"] else "")
        + h.table(["Topic", "Partitions", "Size"],
                  [[t["topic"], t["partitions"], size(t["bytes"])] for t in d["topics"]],
                  "log-sizes")
        for d in b["log_dirs"])
    configs = h.table(["Config", "Value", "Source"],
                      [[c["name"], "(hidden)" if c["sensitive"] else c["value"], c["source"]]
                       for c in b["configs"]], "configs")
    summary = (f"<p>{h.esc(b['host'])}:{b['port']}, rack {h.esc(b['rack'] or '-')}"
               f"{', controller' if b['controller'] else ''}; {b['partitions']} partitions, "
               f"<strong id=\"log-bytes\">{size(b['log_bytes'])}</strong> on disk</p>")
    return _html(request, f"Broker {b['id']}",
                 summary + "<h2>Listeners</h2>" + listeners + "<h2>Metrics</h2>"
                 + _metrics_section(b) + "<h2>Log sizes</h2>" + dirs + "<h2>Configs</h2>"
                 + configs, refresh=5)


def add_routes(app: web.Application, metrics_urls: dict[int | None, str]) -> None:
    app[BROKERS] = Brokers(app[CLUSTER], metrics_urls)

    async def on_cleanup(app: web.Application) -> None:
        await app[BROKERS].stop()
    app.on_cleanup.append(on_cleanup)
    for prefix in ("", "/api"):
        app.router.add_get(prefix + "/brokers", brokers_page)
        app.router.add_get(prefix + "/brokers/{id}", broker_page)
