"""The console's web server: pages, /api JSON, and the guards around every write.

Safety (issue [21]): binds 127.0.0.1 unless told otherwise; ``--read-only`` refuses every POST;
each write is a POST carrying the console's CSRF token (a random value rendered into its own
forms, so another site cannot forge one) and, for destructive ones, a confirmation step; an
optional users file turns on HTTP basic auth.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import aiohttp
from aiohttp import web
from aiokafka.errors import KafkaError

from . import html as h
from . import messages
from .cluster import Cluster, ConsoleError
from .connect_rest import ConnectRest
from .registry_rest import RegistryRest

STATIC = Path(__file__).with_name("static")
Handler = Callable[[web.Request], Awaitable[web.StreamResponse]]

CLUSTER: web.AppKey[Cluster] = web.AppKey("cluster", Cluster)
SETTINGS: web.AppKey[dict[str, Any]] = web.AppKey("settings", dict)


def read_users(path: str) -> dict[str, str]:
    """``user:sha256-hex-of-password`` lines (# comments allowed): no plain passwords on disk."""
    users: dict[str, str] = {}
    for number, line in enumerate(Path(path).read_text().splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        user, sep, digest = line.partition(":")
        if not sep or len(digest) != 64:
            raise ValueError(f"{path}:{number}: expected user:SHA256-HEX-OF-PASSWORD")
        users[user] = digest.lower()
    return users


def _authorized(request: web.Request, users: dict[str, str]) -> bool:
    header = request.headers.get("Authorization", "")
    if not header.startswith("Basic "):
        return False
    try:
        user, _, password = base64.b64decode(header[6:]).decode().partition(":")
    except (ValueError, UnicodeDecodeError):
        return False
    digest = hashlib.sha256(password.encode()).hexdigest()
    return user in users and hmac.compare_digest(users[user], digest)


@web.middleware
async def guard(request: web.Request, handler: Handler) -> web.StreamResponse:
    settings = request.app[SETTINGS]
    users = settings["users"]
    if users and not _authorized(request, users):
        return web.Response(status=401, text="authentication required",
                            headers={"WWW-Authenticate": 'Basic realm="streams console"'})
    if request.method == "POST":
        if settings["read_only"]:
            return _refused(request, 403, "refused: this console runs with --read-only")
        form = await request.post()
        token = str(form.get("csrf", "")) or request.headers.get("X-CSRF-Token", "")
        if not hmac.compare_digest(token, settings["csrf"]):
            return _refused(request, 403, "refused: missing or wrong CSRF token "
                                          "(reload the page and try again)")
    try:
        return await handler(request)
    except ConsoleError as exc:
        return _refused(request, 400 if request.method == "POST" else 502, str(exc))
    except KafkaError as exc:  # an authorization error, a timeout: shown as the client got it
        return _refused(request, 502, f"{type(exc).__name__}: {exc}")


def _refused(request: web.Request, status: int, text: str) -> web.Response:
    if request.path.startswith("/api/"):
        return web.json_response({"error": text}, status=status)
    body = h.message("Error", text, False, request.app[SETTINGS]["read_only"],
                     request.headers.get("Referer") or "/")
    return web.Response(status=status, text=body, content_type="text/html")


def _html(request: web.Request, title: str, body: str, refresh: int = 0) -> web.Response:
    return web.Response(text=h.page(title, body, request.app[SETTINGS]["read_only"], refresh),
                        content_type="text/html")


def _json(data: Any) -> web.Response:
    return web.json_response(data, dumps=lambda v: json.dumps(v, default=str))


async def _confirm_or(request: web.Request, what: str,
                      act: Callable[[], Awaitable[object]], done: str, back: str) -> web.Response:
    """First POST shows what will happen; the confirmed POST does it."""
    form = dict(await request.post())
    settings = request.app[SETTINGS]
    if form.get("confirmed") != "yes":
        return web.Response(text=h.confirm_page(what, request.path, settings["csrf"],
                                                {k: str(v) for k, v in form.items()},
                                                settings["read_only"]),
                            content_type="text/html")
    await act()
    return web.Response(text=h.message("Done", done, True, settings["read_only"], back),
                        content_type="text/html")


# --- topics -----------------------------------------------------------------------------------

async def topics_page(request: web.Request) -> web.Response:
    from .brokers_pages import BROKERS, size

    rows = await request.app[CLUSTER].topics()
    per_topic: dict[str, int] = {}
    for (topic, _partition), found in (await request.app[BROKERS].partition_sizes()).items():
        per_topic[topic] = per_topic.get(topic, 0) + found
    for r in rows:
        r["bytes"] = per_topic.get(r["name"])
    if request.path.startswith("/api/"):
        return _json(rows)
    token = request.app[SETTINGS]["csrf"]
    create = h.post_form("/topics", token, "Create topic", (
        '<input name="name" placeholder="name" required> '
        '<input name="partitions" type="number" min="1" value="1"> partitions '
        '<input name="replication" type="number" min="1" value="1"> replicas '
        '<input name="configs" placeholder="key=value, key=value"> '))
    table = h.table(["Topic", "Partitions", "Replication", "Messages", "Size", "Error"],
                    [[h.Raw(h.link("/topics/", r["name"])), r["partitions"], r["replication"],
                      r["messages"], size(r["bytes"]), r["error"] or ""] for r in rows],
                    "topics")
    return _html(request, "Topics", f"<p>{len(rows)} topics</p>{create}{table}")


async def topic_page(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    from .brokers_pages import BROKERS, size

    topic = await request.app[CLUSTER].topic(name)
    sizes = await request.app[BROKERS].partition_sizes()
    for p in topic["partitions"]:
        p["bytes"] = sizes.get((name, p["partition"]))
    if request.path.startswith("/api/"):
        return _json(topic)
    token = request.app[SETTINGS]["csrf"]
    base = "/topics/" + h.quote(name, safe="")
    parts = h.table(["Partition", "Leader", "Replicas", "ISR", "Start offset", "End offset",
                     "Size"],
                    [[p["partition"], p["leader"], ",".join(map(str, p["replicas"])),
                      ",".join(map(str, p["isr"])), p["start"], p["end"], size(p["bytes"])]
                     for p in topic["partitions"]], "partitions")
    configs = h.table(["Config", "Value", "Set on topic"],
                      [[c["name"], "(hidden)" if c["sensitive"] else c["value"],
                        "yes" if c["override"] else ""] for c in topic["configs"]], "configs")
    edit = h.post_form(base + "/config", token, "Set config", (
        '<input name="key" placeholder="retention.ms" required> '
        '<input name="value" placeholder="value (empty: back to default)"> '))
    delete = h.post_form(base + "/delete", token, "Delete topic")
    body_link = f'<p><a id="browse-link" href="{h.esc(base)}/messages">Browse messages</a></p>'

    return _html(request, f"Topic {name}",
                 f"{body_link}<h2>Partitions</h2>{parts}<h2>Configs</h2>{edit}{configs}"
                 f"<h2>Danger</h2>{delete}", refresh=10)


def _parse_configs(text: str) -> dict[str, str]:
    configs = {}
    for item in filter(None, (part.strip() for part in text.split(","))):
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise ConsoleError(f"expected key=value, got {item!r}")
        configs[key.strip()] = value.strip()
    return configs


def _int_field(form: Any, key: str, default: int) -> int:
    raw = str(form.get(key) or default)
    try:
        value = int(raw)
    except ValueError:
        raise ConsoleError(f"{key}: expected a whole number, got {raw!r}") from None
    if value < 1:
        raise ConsoleError(f"{key}: must be at least 1, got {value}")
    return value


async def create_topic(request: web.Request) -> web.Response:
    form = await request.post()
    name = str(form.get("name", "")).strip()
    if not name:
        raise ConsoleError("a topic needs a name")
    partitions = _int_field(form, "partitions", 1)
    replication = _int_field(form, "replication", 1)
    configs = _parse_configs(str(form.get("configs", "")))
    await request.app[CLUSTER].create_topic(name, partitions, replication, configs)
    raise web.HTTPSeeOther("/topics/" + h.quote(name, safe=""))


async def delete_topic(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    return await _confirm_or(request, f"Delete topic {name} and all its data",
                             lambda: request.app[CLUSTER].delete_topic(name),
                             f"Deleted topic {name}.", "/topics")


async def alter_topic(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    form = await request.post()
    key = str(form.get("key", "")).strip()
    value = str(form.get("value", "")).strip()
    if not key:
        raise ConsoleError("give the config's name")
    what = f"Set {key}={value} on topic {name}" if value else \
        f"Return {key} to its default on topic {name}"
    return await _confirm_or(
        request, what,
        lambda: request.app[CLUSTER].alter_topic_config(name, key, value or None),
        what.replace("Set", "Set", 1) + ": done.", "/topics/" + h.quote(name, safe=""))


def _optional_int(query: Any, key: str) -> int | None:
    raw = (query.get(key) or "").strip()
    if not raw:
        return None
    try:
        return int(raw)
    except ValueError:
        raise ConsoleError(f"{key}: expected a whole number, got {raw!r}") from None


async def messages_page(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    q = request.query
    settings = request.app[SETTINGS]
    if name not in await request.app[CLUSTER].topic_names():
        raise ConsoleError(f"topic {name!r} does not exist")
    key_format = q.get("key_format") or "string"
    value_format = q.get("value_format") or "string"
    rows = await messages.browse(
        request.app[CLUSTER].args, name, partition=_optional_int(q, "partition"),
        offset=_optional_int(q, "offset"), timestamp_ms=_optional_int(q, "timestamp"),
        key_filter=q.get("key") or "", key_format=key_format, value_format=value_format,
        limit=_optional_int(q, "limit") or 50, registry_url=settings["registry_url"])
    if request.path.startswith("/api/"):
        return _json(rows)

    def choice(field: str, chosen: str) -> str:
        options = "".join(f'<option{" selected" if f == chosen else ""}>{h.esc(f)}</option>'
                          for f in messages.FORMATS)
        return f'<select name="{field}">{options}</select>'

    def box(field: str, hint: str) -> str:
        return (f'<input name="{field}" placeholder="{hint}" size="12" '
                f'value="{h.esc(q.get(field, ""))}">')
    search = (f'<form method="get" id="browse">{box("partition", "partition (all)")} '
              f'{box("offset", "offset (last)")} {box("timestamp", "timestamp ms")} '
              f'{box("key", "key contains")} {box("limit", "limit (50)")} '
              f'key {choice("key_format", key_format)} value '
              f'{choice("value_format", value_format)} <button>Browse</button></form>')
    produce_form = h.post_form(
        "/topics/" + h.quote(name, safe="") + "/produce", settings["csrf"], "Produce",
        '<input name="key" placeholder="key (optional)"> '
        '<input name="value" placeholder="value (string)" size="40"> ')
    table = h.table(["Partition", "Offset", "Timestamp", "Key", "Value", "Headers"],
                    [[r["partition"], r["offset"], r["timestamp"], r["key"] or "",
                      r["value"] if r["value"] is not None else "(null)",
                      ", ".join(f"{k}={v}" for k, v in r["headers"])] for r in rows],
                    "messages")
    return _html(request, f"Messages of {name}",
                 f"{search}<p>{len(rows)} records</p>{table}<h2>Produce</h2>{produce_form}")


async def produce_message(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    form = await request.post()
    key, value = str(form.get("key", "")), str(form.get("value", ""))

    async def send() -> None:
        partition, offset = await messages.produce(request.app[CLUSTER].args, name,
                                                   key or None, value)
        sent.append(f"partition {partition}, offset {offset}")
    sent: list[str] = []
    response = await _confirm_or(request, f"Produce {value!r} (key {key!r}) to {name}", send,
                                 "Produced.", "/topics/" + h.quote(name, safe="") + "/messages")
    if sent:
        response.text = response.text.replace("Produced.", f"Produced at {sent[0]}.")
    return response


# --- groups -----------------------------------------------------------------------------------

async def groups_page(request: web.Request) -> web.Response:
    from .brokers_pages import BROKERS

    rows = await request.app[CLUSTER].groups()
    lags = await request.app[BROKERS].group_lags()  # None without --metrics-url
    for r in rows:
        r["lag_seconds"] = (lags or {}).get(r["group"], {}).get("lag_seconds")
    if request.path.startswith("/api/"):
        return _json(rows)
    table = h.table(["Group", "State", "Members", "Type", "Coordinator", "Lag", "Lag (s)",
                     "Error"],
                    [[h.Raw(h.link("/groups/", r["group"])), r["state"], r["members"],
                      r["protocol_type"], r["coordinator"], "-" if r["lag"] is None
                      else r["lag"], _seconds(r["lag_seconds"]), r["error"] or ""]
                     for r in rows], "groups")
    note = "" if lags is not None else \
        " (lag in seconds needs the brokers' metrics: <code>--metrics-url</code>)"
    return _html(request, "Consumer groups", f"<p>{len(rows)} groups{note}</p>{table}",
                 refresh=10)


async def group_page(request: web.Request) -> web.Response:
    group_id = request.match_info["group"]
    g = await request.app[CLUSTER].group(group_id)
    if request.path.startswith("/api/"):
        return _json(g)
    members = h.table(["Member", "Client", "Host", "Assignment"],
                      [[m["member_id"], m["client_id"], m["host"], " ".join(m["assignment"])]
                       for m in g["members"]], "members")
    parts = h.table(["Topic", "Partition", "Committed", "End", "Lag", "Lag (s)", "Member"],
                    [[p["topic"], p["partition"], "-" if p["committed"] is None
                      else p["committed"], "-" if p["end"] is None else p["end"],
                      "-" if p["lag"] is None else p["lag"], _seconds(p["lag_seconds"]),
                      p["member"] or "-"]
                     for p in g["partitions"]], "offsets")
    summary = (f'<p>State <strong id="state">{h.esc(g["state"])}</strong>, '
               f'{len(g["members"])} member(s), assignor {h.esc(g["protocol"] or "-")}, '
               f'total lag <strong id="total-lag">{g["lag"]}</strong>, oldest unconsumed '
               f'record <strong id="lag-seconds">{_seconds(g["lag_seconds"])}</strong> old'
               '</p>')
    options = "".join(f"<option>{s}</option>" for s in RESETS)
    reset = h.post_form(f"/groups/{h.quote(group_id, safe='')}/reset",
                        request.app[SETTINGS]["csrf"], "Dry run",
                        f'<select name="scenario">{options}</select> '
                        '<input name="value" placeholder="offset, shift or epoch ms"> ')
    delete = h.post_form(f"/groups/{h.quote(group_id, safe='')}/delete",
                         request.app[SETTINGS]["csrf"], "Delete group")
    return _html(request, f"Group {group_id}",
                 summary + h.lag_chart(g["lag_history"]) + "<h2>Members</h2>" + members
                 + "<h2>Offsets</h2>" + parts + "<h2>Reset offsets (empty group only)</h2>"
                 + reset + "<h2>Danger</h2>" + delete
                 + " <small>(an empty group only: its committed offsets go with it)</small>",
                 refresh=5)


async def delete_group(request: web.Request) -> web.Response:
    group_id = request.match_info["group"]
    return await _confirm_or(request, f"Delete group {group_id} and its committed offsets",
                             lambda: request.app[CLUSTER].delete_group(group_id),
                             f"Deleted group {group_id}.", "/groups")


def _seconds(value: float | None) -> str:
    """A lag in seconds as people read it (0 s, 42.0 s, 30 min 5 s)."""
    if value is None:
        return "-"
    if value < 60:
        return f"{value:.1f} s"
    minutes, seconds = divmod(int(value), 60)
    hours, minutes = divmod(minutes, 60)
    return (f"{hours} h {minutes} min" if hours else f"{minutes} min {seconds} s")


RESETS = ("to-earliest", "to-latest", "to-offset", "shift-by", "to-datetime")


async def reset_group(request: web.Request) -> web.Response:
    """The dry run (current -> new per partition) first; the confirmed POST commits it."""
    group_id = request.match_info["group"]
    form = await request.post()
    scenario = str(form.get("scenario", ""))
    if scenario not in RESETS:
        raise ConsoleError(f"unknown reset {scenario!r}: one of {', '.join(RESETS)}")
    value = _optional_int(form, "value")
    if scenario in ("to-offset", "shift-by", "to-datetime") and value is None:
        raise ConsoleError(f"--{scenario} needs a value")
    cluster = request.app[CLUSTER]
    plan = await cluster.plan_reset(group_id, scenario, value)
    settings = request.app[SETTINGS]
    back = "/groups/" + h.quote(group_id, safe="")
    if form.get("confirmed") != "yes":
        table = h.table(["Topic", "Partition", "Current offset", "New offset"],
                        [[p["topic"], p["partition"], "-" if p["current"] is None
                          else p["current"], p["new"]] for p in plan], "plan")
        hidden = (f'<input type="hidden" name="scenario" value="{h.esc(scenario)}">'
                  f'<input type="hidden" name="value" value="{h.esc(form.get("value", ""))}">')
        body = (f"<p>Dry run of --{h.esc(scenario)} for group {h.esc(group_id)}: nothing "
                f"changed yet.</p>{table}"
                + h.post_form(request.path, settings["csrf"], "Confirm", hidden, confirmed=True)
                + f' <a href="{h.esc(back)}">Cancel</a>')
        return web.Response(text=h.page("Confirm", body, settings["read_only"]),
                            content_type="text/html")
    await cluster.reset_offsets(group_id, plan)
    return web.Response(text=h.message("Done", f"Reset the offsets of group {group_id}.", True,
                                       settings["read_only"], back), content_type="text/html")


# --- connectors -------------------------------------------------------------------------------

def _connect(request: web.Request) -> ConnectRest:
    rest = request.app[SETTINGS]["connect"]
    if rest is None:
        raise ConsoleError("no Connect cluster given: start the console with --connect-url URL")
    return rest


async def connectors_page(request: web.Request) -> web.Response:
    rows = await _connect(request).connectors()
    if request.path.startswith("/api/"):
        return _json(rows)
    table = h.table(["Connector", "Type", "Class", "State", "Worker", "Tasks", "Failed tasks"],
                    [[h.Raw(h.link("/connectors/", r["name"])), r["type"], r["class"],
                      r["state"], r["worker"], r["tasks"], r["failed_tasks"]] for r in rows],
                    "connectors")
    return _html(request, "Connectors", f"<p>{len(rows)} connectors</p>{table}", refresh=5)


async def connector_page(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    c = await _connect(request).connector(name)
    if request.path.startswith("/api/"):
        return _json(c)
    token = request.app[SETTINGS]["csrf"]
    base = "/connectors/" + h.quote(name, safe="")
    status = c["status"] or {}
    conn = status.get("connector", {})
    tasks = h.table(["Task", "State", "Worker", "Trace"],
                    [[t.get("id"), t.get("state"), t.get("worker_id"),
                      h.Raw(f"<pre>{h.esc(t['trace'])}</pre>") if t.get("trace") else ""]
                     for t in status.get("tasks", [])], "tasks")
    actions = " ".join(h.post_form(f"{base}/{a}", token, a.capitalize())
                       for a in ("restart", "pause", "resume", "stop", "delete"))
    edit = h.post_form(base + "/config", token, "Validate and save", (
        f'<br><textarea name="config" rows="8" cols="80">'
        f'{h.esc(json.dumps({k: v for k, v in c["config"].items() if v != "********"}, indent=2))}'
        f'</textarea><br>'))
    body = (f'<p>State <strong id="state">{h.esc(conn.get("state"))}</strong> on worker '
            f'{h.esc(conn.get("worker_id"))}</p>'
            + (f"<pre>{h.esc(conn['trace'])}</pre>" if conn.get("trace") else "")
            + f"<p>{actions}</p><h2>Tasks</h2>{tasks}<h2>Config</h2>{edit}"
            + f"<h2>Offsets</h2>{h.pretty(c['offsets'])}"
            + "<p>Alter or reset them while the connector is STOPPED (KIP-875).</p>"
            + h.post_form(base + "/offsets", token, "Alter offsets", (
                '<input type="hidden" name="op" value="alter">'
                '<textarea name="offsets" rows="4" cols="80" placeholder=\'[{"partition": '
                '{...}, "offset": {...}}]\'>'
                + h.esc(json.dumps((c["offsets"] or {}).get("offsets", [])))
                + "</textarea><br>"))
            + " " + h.post_form(base + "/offsets", token, "Reset offsets",
                                '<input type="hidden" name="op" value="reset">'))
    return _html(request, f"Connector {name}", body, refresh=5)


async def connector_offsets(request: web.Request) -> web.Response:
    """Alter (the JSON list of partition/offset pairs Connect shows) or reset a stopped
    connector's offsets, after a confirmation."""
    name = request.match_info["name"]
    form = await request.post()
    back = "/connectors/" + h.quote(name, safe="")
    rest = _connect(request)
    if form.get("op") == "reset":
        return await _confirm_or(request, f"Reset every offset of connector {name}",
                                 lambda: rest.reset_offsets(name),
                                 f"Reset the offsets of connector {name}.", back)
    try:
        offsets = json.loads(str(form.get("offsets", "")))
    except ValueError as exc:
        raise ConsoleError(f"the offsets are not JSON: {exc}") from None
    if not isinstance(offsets, list) or not all(
            isinstance(o, dict) and "partition" in o and "offset" in o for o in offsets):
        raise ConsoleError('the offsets must be a JSON list of {"partition": ..., '
                           '"offset": ...} objects, as Connect shows them')
    return await _confirm_or(request, f"Alter the offsets of connector {name} to "
                                      f"{json.dumps(offsets)}",
                             lambda: rest.alter_offsets(name, offsets),
                             f"Altered the offsets of connector {name}.", back)


async def connector_action(request: web.Request) -> web.Response:
    name, action = request.match_info["name"], request.match_info["action"]
    if action not in ("restart", "pause", "resume", "stop", "delete"):
        raise web.HTTPNotFound()
    back = "/connectors" if action == "delete" else "/connectors/" + h.quote(name, safe="")
    return await _confirm_or(request, f"{action.capitalize()} connector {name}",
                             lambda: _connect(request).action(name, action),
                             f"{action.capitalize()}: sent to connector {name}.", back)


async def connector_config(request: web.Request) -> web.Response:
    name = request.match_info["name"]
    form = await request.post()
    try:
        config = json.loads(str(form.get("config", "")))
    except ValueError as exc:
        raise ConsoleError(f"the config is not JSON: {exc}") from None
    if not isinstance(config, dict) or "connector.class" not in config:
        raise ConsoleError("the config must be a JSON object with connector.class")
    config = {str(k): str(v) for k, v in config.items()}
    rest = _connect(request)
    problems = await rest.validate(config["connector.class"], config)
    if problems:
        raise ConsoleError("invalid config: " + "; ".join(problems))

    async def save() -> None:
        await rest.put_config(name, config)
    return await _confirm_or(request, f"Save the validated config of connector {name}", save,
                             f"Saved the config of connector {name}.",
                             "/connectors/" + h.quote(name, safe=""))


# --- schemas ----------------------------------------------------------------------------------

def _registry(request: web.Request) -> RegistryRest:
    rest = request.app[SETTINGS]["registry"]
    if rest is None:
        raise ConsoleError("no schema registry given: start the console with --registry-url URL")
    return rest


async def schemas_page(request: web.Request) -> web.Response:
    rows = await _registry(request).subjects()
    if request.path.startswith("/api/"):
        return _json(rows)
    table = h.table(["Subject", "Versions"],
                    [[h.Raw(h.link("/schemas/", r["subject"])),
                      ", ".join(map(str, r["versions"]))] for r in rows], "subjects")
    return _html(request, "Schemas", f"<p>{len(rows)} subjects</p>{table}")


async def schema_page(request: web.Request) -> web.Response:
    """Versions, the diff between two (?diff=A,B), the level, and a compatibility test of a
    pasted schema (a GET form: it changes nothing, so --read-only allows it)."""
    subject = request.match_info["subject"]
    rest = _registry(request)
    s = await rest.subject(subject)
    pasted = request.query.get("schema", "")
    if pasted:
        s["compatible"] = await rest.test_compatibility(
            subject, pasted, request.query.get("schema_type") or "AVRO")
    if request.path.startswith("/api/"):
        return _json(s)
    versions = h.table(["Version", "Id", "Type", "Schema"],
                       [[v["version"], v["id"], v.get("schemaType", "AVRO"),
                         h.Raw(h.pretty_schema(v["schema"]))] for v in s["versions"]],
                       "versions")
    diff = ""
    numbers = [v["version"] for v in s["versions"]]
    if len(numbers) > 1:
        a, _, b = (request.query.get("diff") or f"{numbers[-2]},{numbers[-1]}").partition(",")
        by_number = {str(v["version"]): v["schema"] for v in s["versions"]}
        if a in by_number and b in by_number:
            diff = f"<h2>Diff {h.esc(a)} → {h.esc(b)}</h2>" + h.diff(by_number[a], by_number[b])
    result = ""
    if pasted:
        ok = s["compatible"]
        result = (f'<p id="compat-result" class="{"ok" if ok else "error"}">'
                  f'{"compatible" if ok else "NOT compatible"} with the latest version under '
                  f'{h.esc(s["compatibility"])}</p>')
    test = (f'<form method="get" id="compat"><textarea name="schema" rows="6" cols="80">'
            f'{h.esc(pasted)}</textarea><br><select name="schema_type"><option>AVRO</option>'
            f'<option>PROTOBUF</option><option>JSON</option></select> '
            f'<button>Test compatibility</button></form>')
    return _html(request, f"Subject {subject}",
                 f'<p>Compatibility level <strong id="level">{h.esc(s["compatibility"])}'
                 f'</strong></p>{versions}{diff}<h2>Compatibility test</h2>{result}{test}')


async def static_js(_request: web.Request) -> web.FileResponse:
    return web.FileResponse(STATIC / "console.js")


async def index(_request: web.Request) -> web.Response:
    raise web.HTTPFound("/topics")


def build_app(cluster: Cluster, *, read_only: bool = False, connect_url: str | None = None,
              users: dict[str, str] | None = None,
              registry_url: str | None = None,
              metrics_urls: dict[int | None, str] | None = None) -> web.Application:
    app = web.Application(middlewares=[guard])
    app[CLUSTER] = cluster
    settings: dict[str, Any] = {"read_only": read_only, "csrf": secrets.token_urlsafe(32),
                                "users": users or {}, "connect": None,
                                "registry_url": registry_url, "registry": None}
    app[SETTINGS] = settings

    async def on_startup(app: web.Application) -> None:
        await cluster.start()
        if connect_url:
            settings["session"] = aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=15))
            settings["connect"] = ConnectRest(settings["session"], connect_url)
        if registry_url:
            settings.setdefault("session", aiohttp.ClientSession(
                timeout=aiohttp.ClientTimeout(total=15)))
            settings["registry"] = RegistryRest(settings["session"], registry_url)

    async def on_cleanup(app: web.Application) -> None:
        if settings.get("session"):
            await settings["session"].close()
        await cluster.stop()

    app.on_startup.append(on_startup)
    app.on_cleanup.append(on_cleanup)
    from .apps_pages import add_routes as add_apps_routes
    from .brokers_pages import add_routes as add_brokers_routes
    from .security_pages import add_routes as add_security_routes

    add_apps_routes(app)
    add_brokers_routes(app, metrics_urls or {})
    add_security_routes(app)
    r = app.router
    r.add_get("/", index)
    r.add_get("/static/console.js", static_js)
    for prefix in ("", "/api"):
        r.add_get(prefix + "/topics", topics_page)
        r.add_get(prefix + "/topics/{name}", topic_page)
        r.add_get(prefix + "/topics/{name}/messages", messages_page)
        r.add_get(prefix + "/groups", groups_page)
        r.add_get(prefix + "/groups/{group}", group_page)
        r.add_get(prefix + "/schemas", schemas_page)
        r.add_get(prefix + "/schemas/{subject}", schema_page)
        r.add_get(prefix + "/connectors", connectors_page)
        r.add_get(prefix + "/connectors/{name}", connector_page)
    r.add_post("/topics", create_topic)
    r.add_post("/topics/{name}/delete", delete_topic)
    r.add_post("/topics/{name}/produce", produce_message)
    r.add_post("/topics/{name}/config", alter_topic)
    r.add_post("/groups/{group}/reset", reset_group)
    r.add_post("/groups/{group}/delete", delete_group)
    r.add_post("/connectors/{name}/config", connector_config)
    r.add_post("/connectors/{name}/offsets", connector_offsets)
    r.add_post("/connectors/{name}/{action}", connector_action)
    return app
