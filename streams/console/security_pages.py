"""``/acls``: the broker's ACLs and SCRAM users, each added or deleted after a confirmation
page; a ``--read-only`` console shows them without any form (issue [21])."""

from __future__ import annotations

import secrets
import time
from typing import Any

from aiohttp import web

from . import html as h
from .cluster import ConsoleError
from .security import NAMES_OF, Acl, Security
from .server import CLUSTER, SETTINGS, _confirm_or, _html, _json

SECURITY: web.AppKey[Security] = web.AppKey("security", Security)
PENDING: web.AppKey[dict[str, tuple[float, str, str, str]]] = web.AppKey("pending-users", dict)
PENDING_TTL_S = 300.0  # an unconfirmed password is forgotten after five minutes
ACL_FIELDS = ("resource", "name", "pattern", "principal", "host", "operation", "permission")


def _select(name: str, options: list[str], selected: str = "") -> str:
    return (f'<select name="{name}">' + "".join(
        f'<option{" selected" if o == selected else ""}>{h.esc(o)}</option>' for o in options)
        + "</select>")


def _acl_form(token: str) -> str:
    resources = [n for n in NAMES_OF["resource"].values() if n != "ANY"]
    operations = [n for n in NAMES_OF["operation"].values() if n != "ANY"]
    return h.post_form("/acls", token, "Add ACL", (
        _select("permission", ["ALLOW", "DENY"]) + " "
        '<input name="principal" placeholder="User:alice" required> '
        + _select("operation", operations, "READ") + " on "
        + _select("resource", resources, "TOPIC") + " "
        + _select("pattern", ["LITERAL", "PREFIXED"]) + " "
        '<input name="name" placeholder="resource name" required> from host '
        '<input name="host" value="*" size="8"> '))


async def acls_page(request: web.Request) -> web.Response:
    security = request.app[SECURITY]
    acls = await security.acls()
    users = await security.users() if acls is not None else []
    if request.path.startswith("/api/"):
        return _json({"authorizer": acls is not None, "acls": acls, "users": users})
    if acls is None:
        return _html(request, "ACLs and users",
                     '<p id="no-authorizer">The broker has no authorizer '
                     "(<code>authorizer.class.name</code> is not set): there are no ACLs.</p>")
    settings = request.app[SETTINGS]
    token, writable = settings["csrf"], not settings["read_only"]

    def delete_acl(acl: Acl) -> h.Raw:
        hidden = "".join(f'<input type="hidden" name="{k}" value="{h.esc(acl[k])}">'
                         for k in ACL_FIELDS)
        return h.Raw(h.post_form("/acls/delete", token, "Delete", hidden))
    acl_rows = [[a["permission"], a["principal"], a["operation"], a["resource"], a["pattern"],
                 a["name"], a["host"], *([delete_acl(a)] if writable else [])] for a in acls]
    headers = ["Permission", "Principal", "Operation", "Resource", "Pattern", "Name", "Host"]
    acl_table = h.table(headers + ([""] if writable else []), acl_rows, "acls")

    def delete_user(user: str) -> h.Raw:
        return h.Raw(h.post_form("/users/delete", token, "Delete",
                                 f'<input type="hidden" name="user" value="{h.esc(user)}">'))
    user_rows = [[u["user"], ", ".join(f"{m['mechanism']} ({m['iterations']} iterations)"
                                       for m in u["mechanisms"]) or (u["error"] or "-"),
                  *([delete_user(u["user"])] if writable else [])] for u in users]
    user_table = h.table(["User", "SCRAM credentials"] + ([""] if writable else []), user_rows,
                         "users")
    add_user = h.post_form("/users", token, "Set SCRAM user", (
        '<input name="user" placeholder="user" required> '
        + _select("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"]) + " "
        '<input name="password" type="password" placeholder="password" '
        'autocomplete="new-password" required> ')) if writable else ""
    return _html(request, "ACLs and users",
                 f"<h2>ACLs</h2><p>{len(acls)} ACLs</p>"
                 + (_acl_form(token) if writable else "") + acl_table
                 + f"<h2>SCRAM users</h2><p>{len(users)} users</p>" + add_user + user_table)


def _acl_from(form: Any) -> Acl:
    acl = Acl({k: str(form.get(k, "")) for k in ACL_FIELDS})
    acl.binding()  # refuse a bad field now, before the confirmation page
    return acl


def _describe(acl: Acl) -> str:
    return (f"{acl['permission'].upper()} {acl['principal']} {acl['operation'].upper()} "
            f"from host {acl['host'] or '*'} on {acl['resource'].upper()}:"
            f"{acl['pattern'].upper()}:{acl['name']}")


async def create_acl(request: web.Request) -> web.Response:
    acl = _acl_from(await request.post())
    return await _confirm_or(request, f"Add the ACL {_describe(acl)}",
                             lambda: request.app[SECURITY].create_acl(acl),
                             f"Added {_describe(acl)}.", "/acls")


async def delete_acl(request: web.Request) -> web.Response:
    acl = _acl_from(await request.post())

    async def act() -> None:
        if not await request.app[SECURITY].delete_acl(acl):
            raise ConsoleError(f"no ACL {_describe(acl)} (deleted meanwhile?)")
    return await _confirm_or(request, f"Delete the ACL {_describe(acl)}", act,
                             f"Deleted {_describe(acl)}.", "/acls")


async def set_user(request: web.Request) -> web.Response:
    """The password stays on the server between the two steps: the confirmation page carries
    only a one-time token (a secret is never rendered into a page)."""
    form = await request.post()
    settings, pending = request.app[SETTINGS], request.app[PENDING]
    now = time.monotonic()
    for key in [k for k, (t, *_) in pending.items() if now - t > PENDING_TTL_S]:
        del pending[key]
    if form.get("confirmed") == "yes":
        found = pending.pop(str(form.get("pending", "")), None)
        if found is None:
            raise ConsoleError("this confirmation expired; fill in the form again")
        _, user, mechanism, password = found
        await request.app[SECURITY].set_user(user, mechanism, password)
        return web.Response(text=h.message("Done", f"Set the {mechanism} credentials of user "
                                           f"{user}.", True, settings["read_only"], "/acls"),
                            content_type="text/html")
    user, mechanism = str(form.get("user", "")).strip(), str(form.get("mechanism", ""))
    password = str(form.get("password", ""))
    if not user or not password:
        raise ConsoleError("a SCRAM user needs a name and a password")
    key = secrets.token_urlsafe(16)
    pending[key] = (now, user, mechanism, password)
    return web.Response(text=h.confirm_page(
        f"Set the {mechanism} credentials of user {user} (created if new)", request.path,
        settings["csrf"], {"pending": key}, settings["read_only"]), content_type="text/html")


async def delete_user(request: web.Request) -> web.Response:
    user = str((await request.post()).get("user", "")).strip()
    return await _confirm_or(request, f"Delete every SCRAM credential of user {user}",
                             lambda: request.app[SECURITY].delete_user(user),
                             f"Deleted the SCRAM credentials of user {user}.", "/acls")


def add_routes(app: web.Application) -> None:
    app[SECURITY] = Security(app[CLUSTER])
    app[PENDING] = {}
    for prefix in ("", "/api"):
        app.router.add_get(prefix + "/acls", acls_page)
    app.router.add_post("/acls", create_acl)
    app.router.add_post("/acls/delete", delete_acl)
    app.router.add_post("/users", set_user)
    app.router.add_post("/users/delete", delete_user)
