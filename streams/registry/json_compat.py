"""JSON Schema compatibility: does every document the writer schema accepts pass the reader?

The rules follow Confluent's JSON Schema checks (its ``Difference`` types): a type may only
widen (integer -> number), enums may only grow, string/number/array bounds may only loosen, a
property may be added only where the writer's content model is closed (``additionalProperties:
false``; in an open model old data may hold that name with any type), removed only where the
reader's model is open, and a newly required property breaks old data. ``$ref`` to a local
``#/definitions`` or ``#/$defs`` entry is followed. jsonschema validates the schema text first.
"""

from __future__ import annotations

import json
from typing import Any

_LOWER = ("minLength", "minItems", "minimum", "exclusiveMinimum", "minProperties")
_UPPER = ("maxLength", "maxItems", "maximum", "exclusiveMaximum", "maxProperties")


def parse(text: str) -> dict[str, Any] | bool:
    """Validate ``text`` as a JSON Schema (its own draft's meta-schema) and return it."""
    import jsonschema

    schema = json.loads(text)
    if not isinstance(schema, dict | bool):
        raise ValueError("a JSON Schema must be an object or a boolean")
    jsonschema.validators.validator_for(schema).check_schema(schema)
    return schema


def _types(schema: Any) -> set[str] | None:
    if schema is True or schema == {}:
        return None
    t = schema.get("type") if isinstance(schema, dict) else None
    if t is None:
        return None
    return {t} if isinstance(t, str) else set(t)


class _Checker:
    def __init__(self, reader_root: Any, writer_root: Any) -> None:
        self.rroot, self.wroot = reader_root, writer_root
        self.errors: list[str] = []
        self.seen: set[tuple[int, int]] = set()

    def fail(self, kind: str, path: str, text: str) -> None:
        self.errors.append(f"{{errorType:'{kind}', path:'#{path}', description:'{text}'}}")

    def _deref(self, schema: Any, root: Any) -> Any:
        for _ in range(32):
            if not (isinstance(schema, dict) and isinstance(schema.get("$ref"), str)
                    and schema["$ref"].startswith("#")):
                return schema
            node = root
            for part in schema["$ref"][1:].split("/"):
                if part:
                    node = node[part.replace("~1", "/").replace("~0", "~")]
            schema = node
        return schema

    def check(self, r: Any, w: Any, path: str) -> None:
        r, w = self._deref(r, self.rroot), self._deref(w, self.wroot)
        if id(r) == id(w) or r is True or r == {}:
            return
        key = (id(r), id(w))
        if key in self.seen:
            return
        self.seen.add(key)
        if w is False:
            return
        if r is False:
            self.fail("SCHEMA_REMOVED", path, f"The reader at '#{path}' accepts nothing")
            return
        w_branches = w.get("oneOf") or w.get("anyOf")
        if w_branches:  # every document of every writer branch must pass the reader
            for i, branch in enumerate(w_branches):
                self.check(r, branch, f"{path}/oneOf/{i}")
            return
        r_branches = r.get("oneOf") or r.get("anyOf")
        if r_branches:
            if not any(self._accepts(b, w, path) for b in r_branches):
                self.fail("COMBINED_TYPE_SUBSCHEMAS_CHANGED", path,
                          f"No alternative of the reader at '#{path}' accepts the writer's "
                          f"{sorted(_types(w) or ['any'])}")
            return
        rt, wt = _types(r), _types(w)
        if rt is not None:
            widened = set(rt) | ({"integer"} if "number" in rt else set())
            if wt is None:
                self.fail("TYPE_NARROWED", path,
                          f"The type at '#{path}' is {sorted(rt)} in the reader and any in "
                          "the writer")
                return
            lost = wt - widened
            if lost:
                self.fail("TYPE_CHANGED" if not (wt & widened) else "TYPE_NARROWED", path,
                          f"The type at '#{path}' is {sorted(rt)} in the reader and "
                          f"{sorted(wt)} in the writer")
                return
        if "enum" in r:
            missing = [v for v in w.get("enum", [None]) if v not in r["enum"]] \
                if "enum" in w else ["(any value)"]
            if missing:
                self.fail("ENUM_ARRAY_NARROWED", path,
                          f"The enum at '#{path}' lacks the writer's values {missing}")
        if "const" in r and w.get("const", object()) != r["const"]:
            self.fail("CONST_CHANGED", path, f"The const at '#{path}' changed")
        for key_ in _LOWER:
            if key_ in r and (key_ not in w or w[key_] < r[key_]):
                self.fail(f"{key_.upper()}_INCREASED", path,
                          f"'{key_}' at '#{path}' is stricter in the reader "
                          f"({r[key_]}) than in the writer ({w.get(key_, 'none')})")
        for key_ in _UPPER:
            if key_ in r and (key_ not in w or w[key_] > r[key_]):
                self.fail(f"{key_.upper()}_DECREASED", path,
                          f"'{key_}' at '#{path}' is stricter in the reader "
                          f"({r[key_]}) than in the writer ({w.get(key_, 'none')})")
        if "pattern" in r and r["pattern"] != w.get("pattern"):
            self.fail("PATTERN_CHANGED", path, f"'pattern' at '#{path}' changed")
        if "items" in r or "items" in w:
            ri, wi = r.get("items", True), w.get("items", True)
            if isinstance(ri, dict | bool) and isinstance(wi, dict | bool):
                self.check(ri, wi, f"{path}/items")
        if rt is None or "object" in rt or "properties" in r or "properties" in w:
            self._object(r, w, path)

    def _accepts(self, r: Any, w: Any, path: str) -> bool:
        saved, seen = self.errors, set(self.seen)
        self.errors = []
        self.check(r, w, path)
        ok = not self.errors
        self.errors, self.seen = saved, seen
        return ok

    def _object(self, r: dict[str, Any], w: dict[str, Any], path: str) -> None:
        rprops, wprops = r.get("properties", {}), w.get("properties", {})
        r_add, w_add = r.get("additionalProperties", True), w.get("additionalProperties", True)
        for name, rschema in rprops.items():
            ppath = f"{path}/properties/{name}"
            if name in wprops:
                self.check(rschema, wprops[name], ppath)
            elif w_add is False:
                continue  # the writer could never write this name: adding it is safe
            elif w_add is True or w_add == {}:
                if not (rschema is True or rschema == {}):
                    self.fail("PROPERTY_ADDED_TO_OPEN_CONTENT_MODEL", ppath,
                              f"The property '{name}' at '#{ppath}' is new in the reader, and "
                              "the writer's open content model may have written it with any "
                              "type (close the writer with additionalProperties: false)")
            else:
                self.check(rschema, w_add, ppath)
        for name, wschema in wprops.items():
            if name in rprops:
                continue
            ppath = f"{path}/properties/{name}"
            if r_add is False:
                self.fail("PROPERTY_REMOVED_FROM_CLOSED_CONTENT_MODEL", ppath,
                          f"The property '{name}' at '#{ppath}' was removed from the reader's "
                          "closed content model (additionalProperties: false)")
            elif isinstance(r_add, dict) and r_add:
                self.check(r_add, wschema, ppath)
        new_required = set(r.get("required", [])) - set(w.get("required", []))
        for name in sorted(new_required):
            self.fail("REQUIRED_PROPERTY_ADDED_TO_UNOPEN_CONTENT_MODEL"
                      if w_add is not False else "REQUIRED_ATTRIBUTE_ADDED",
                      f"{path}/required",
                      f"The property '{name}' at '#{path}/properties/{name}' is required by "
                      "the reader and not by the writer")


def check(reader: Any, writer: Any) -> list[str]:
    """Messages saying why ``reader`` rejects documents ``writer`` accepts (empty: it can't)."""
    checker = _Checker(reader, writer)
    checker.check(reader, writer, "")
    return checker.errors
