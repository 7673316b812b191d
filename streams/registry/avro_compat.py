"""Avro schema resolution: can a reader schema read what a writer schema wrote?

Follows the Avro specification's "Schema Resolution" section (the rules Java's
``SchemaCompatibility.checkReaderWriterCompatibility`` implements, which Confluent's registry
uses): names must match (aliases allowed), a reader-only field needs a default, writer-only
fields are skipped, numeric promotions int->long->float->double, string<->bytes, every writer
union branch and enum symbol must be readable. fastavro validates the schema text first; this
module only walks parsed JSON.
"""

from __future__ import annotations

import json
from typing import Any

PRIMITIVES = frozenset({"null", "boolean", "int", "long", "float", "double", "bytes", "string"})
NAMED = frozenset({"record", "error", "enum", "fixed"})

# writer type -> reader types it promotes to (Avro spec, Schema Resolution)
PROMOTIONS = {
    "int": {"long", "float", "double"},
    "long": {"float", "double"},
    "float": {"double"},
    "string": {"bytes"},
    "bytes": {"string"},
}


def parse(text: str | Any, named: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
    """Validate with fastavro and return (normalized tree, named types by full name).

    ``named`` holds types from referenced schemas (Confluent schema references).
    """
    import fastavro

    raw = json.loads(text) if isinstance(text, str) else text
    names: dict[str, Any] = dict(named or {})
    fastavro.parse_schema(raw, named_schemas={k: v["raw"] for k, v in names.items()},
                          _write_hint=False)
    tree = _normalize(raw, "", names)
    return tree, names


def _fullname(name: str, namespace: str) -> str:
    return name if "." in name or not namespace else f"{namespace}.{name}"


def _normalize(schema: Any, ns: str, names: dict[str, Any]) -> Any:
    """Primitives become ``{"type": p}``, named types register in ``names`` and are referred to
    by full name (a str), unions become ``{"type": "union", "branches": [...]}``."""
    if isinstance(schema, str):
        if schema in PRIMITIVES:
            return {"type": schema}
        return _fullname(schema, ns)
    if isinstance(schema, list):
        return {"type": "union", "branches": [_normalize(b, ns, names) for b in schema]}
    kind = schema.get("type")
    if isinstance(kind, dict | list):
        return _normalize(kind, ns, names)
    if kind in NAMED:
        full = _fullname(schema["name"], schema.get("namespace", ns) or "")
        inner_ns = full.rpartition(".")[0]
        node: dict[str, Any] = {
            "type": "record" if kind == "error" else kind, "name": full, "raw": schema,
            "aliases": {_fullname(a, inner_ns).rpartition(".")[2]
                        for a in schema.get("aliases", [])},
        }
        names[full] = node
        if kind in ("record", "error"):
            if not isinstance(schema.get("fields"), list):
                raise ValueError(f"record {full} needs a 'fields' list")
            node["fields"] = [
                {"name": f["name"], "type": _normalize(f["type"], inner_ns, names),
                 "has_default": "default" in f, "aliases": set(f.get("aliases", []))}
                for f in schema.get("fields", [])
            ]
        elif kind == "enum":
            node["symbols"] = list(schema.get("symbols", []))
            node["default"] = schema.get("default")
        else:
            node["size"] = schema.get("size")
        return full
    if kind == "array":
        return {"type": "array", "items": _normalize(schema["items"], ns, names)}
    if kind == "map":
        return {"type": "map", "values": _normalize(schema["values"], ns, names)}
    if kind in PRIMITIVES:
        out = {"type": kind}
        if "logicalType" in schema:
            out["logicalType"] = schema["logicalType"]
        return out
    return _fullname(str(kind), ns)


class _Checker:
    def __init__(self, reader_names: dict[str, Any], writer_names: dict[str, Any]) -> None:
        self.rn = reader_names
        self.wn = writer_names
        self.seen: set[tuple[str, str]] = set()
        self.errors: list[str] = []

    def _r(self, s: Any) -> Any:
        return self.rn[s] if isinstance(s, str) else s

    def _w(self, s: Any) -> Any:
        return self.wn[s] if isinstance(s, str) else s

    def compatible(self, reader: Any, writer: Any, path: str) -> bool:
        """Check without recording errors (union branch matching)."""
        saved = self.errors
        self.errors = []
        self.check(reader, writer, path)
        ok = not self.errors
        self.errors = saved
        return ok

    def fail(self, kind: str, path: str, text: str) -> None:
        self.errors.append(f"{{errorType:'{kind}', path:'{path or '/'}', description:'{text}'}}")

    def check(self, reader: Any, writer: Any, path: str) -> None:
        r, w = self._r(reader), self._w(writer)
        rt, wt = r["type"], w["type"]
        if rt in ("record",) and wt == "record":
            key = (r["name"], w["name"])
            if key in self.seen:
                return
            self.seen.add(key)
        if wt == "union":
            for i, branch in enumerate(w["branches"]):
                self.check(r, branch, f"{path}/{i}")
            return
        if rt == "union":
            if not any(self.compatible(b, w, path) for b in r["branches"]):
                self.fail("MISSING_UNION_BRANCH", path,
                          f"The new schema's union at {path or '/'} has no branch that reads "
                          f"the old schema's {_describe(w)}")
            return
        if rt != wt:
            if rt in PROMOTIONS.get(wt, ()):
                return
            self.fail("TYPE_MISMATCH", path,
                      f"The type at path '{path or '/'}' is {_describe(r)} in the reader and "
                      f"{_describe(w)} in the writer, which cannot be promoted")
            return
        if rt in NAMED and not _names_match(r, w):
            self.fail("NAME_MISMATCH", path,
                      f"The name at path '{path or '/'}' is {_short(r['name'])} in the reader "
                      f"and {_short(w['name'])} in the writer")
            return
        if rt == "record":
            self._record(r, w, path)
        elif rt == "enum":
            missing = [s for s in w["symbols"] if s not in r["symbols"]]
            if missing and r.get("default") is None:
                self.fail("MISSING_ENUM_SYMBOLS", f"{path}/symbols",
                          f"The reader enum {_short(r['name'])} lacks the writer's symbols "
                          f"{missing}")
        elif rt == "fixed":
            if r.get("size") != w.get("size"):
                self.fail("FIXED_SIZE_MISMATCH", f"{path}/size",
                          f"The fixed {_short(r['name'])} has size {r.get('size')} in the "
                          f"reader and {w.get('size')} in the writer")
        elif rt == "array":
            self.check(r["items"], w["items"], f"{path}/items")
        elif rt == "map":
            self.check(r["values"], w["values"], f"{path}/values")

    def _record(self, r: dict[str, Any], w: dict[str, Any], path: str) -> None:
        writer_fields = {f["name"]: f for f in w["fields"]}
        for field in r["fields"]:
            match = writer_fields.get(field["name"])
            if match is None:
                match = next((writer_fields[a] for a in field["aliases"] if a in writer_fields),
                             None)
            fpath = f"{path}/fields/{field['name']}"
            if match is None:
                if not field["has_default"]:
                    self.fail("READER_FIELD_MISSING_DEFAULT_VALUE", fpath,
                              f"The field '{field['name']}' at path '{fpath}' in the reader "
                              "has no default value and is missing in the writer")
                continue
            self.check(field["type"], match["type"], fpath)


def _short(name: str) -> str:
    return name.rpartition(".")[2]


def _names_match(r: dict[str, Any], w: dict[str, Any]) -> bool:
    rs, ws = _short(r["name"]), _short(w["name"])
    return rs == ws or ws in r["aliases"]


def _describe(node: dict[str, Any]) -> str:
    if node["type"] in NAMED:
        return f"{node['type']} {_short(node['name'])}"
    if node["type"] == "union":
        return "union"
    return str(node["type"])


def check(reader: tuple[Any, dict[str, Any]], writer: tuple[Any, dict[str, Any]]) -> list[str]:
    """Messages saying why ``reader`` cannot read data written with ``writer`` (empty: it can)."""
    checker = _Checker(reader[1], writer[1])
    checker.check(reader[0], writer[0], "")
    return checker.errors
