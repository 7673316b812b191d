"""The registry's state: what replaying the ``_schemas`` topic from the start produces.

Keys and values are the JSON documents Confluent's registry writes (SR ``storage/*Key.java``,
``*Value.java``): ``{"keytype":"SCHEMA","subject":s,"version":v,"magic":1}`` ->
``{"subject","version","id","schema","deleted","schemaType"?,"references"?}``; ``CONFIG`` ->
``{"compatibilityLevel"}``; ``MODE`` -> ``{"mode"}``; a null value is a hard delete (a
tombstone, so compaction drops it).
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from . import errors
from .schemas import ParsedSchema, parse

DEFAULT_COMPATIBILITY = "BACKWARD"


@dataclass
class Version:
    subject: str
    version: int
    id: int
    schema: str
    schema_type: str = "AVRO"
    references: list[dict[str, Any]] = field(default_factory=list)
    deleted: bool = False

    def value(self) -> dict[str, Any]:
        out: dict[str, Any] = {"subject": self.subject, "version": self.version, "id": self.id,
                               "schema": self.schema, "deleted": self.deleted}
        if self.schema_type != "AVRO":
            out["schemaType"] = self.schema_type
        if self.references:
            out["references"] = self.references
        return out


def schema_key(subject: str, version: int) -> dict[str, Any]:
    return {"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1}


def config_key(subject: str | None) -> dict[str, Any]:
    return _setting_key("CONFIG", subject)


def mode_key(subject: str | None) -> dict[str, Any]:
    return _setting_key("MODE", subject)


def _setting_key(keytype: str, subject: str | None) -> dict[str, Any]:
    """A CONFIG or MODE key: the subject's, or the global one (no ``subject``), in SR's order."""
    key: dict[str, Any] = {"keytype": keytype}
    if subject is not None:
        key["subject"] = subject
    key["magic"] = 0
    return key


def id_watermark(max_id: int) -> tuple[dict[str, Any], dict[str, Any]]:
    """A NOOP record (a key type Confluent's readers skip) remembering the highest id handed
    out: written with every hard delete, so that once compaction has removed the deleted
    schema's records a restarted registry does not hand its id out again."""
    return {"keytype": "NOOP", "magic": 0}, {"maxId": max_id}


def encode(doc: dict[str, Any] | None) -> bytes | None:
    return None if doc is None else json.dumps(doc, separators=(",", ":")).encode()


class State:
    """Subjects, versions, ids and configs, updated one ``_schemas`` record at a time."""

    def __init__(self) -> None:
        self.subjects: dict[str, dict[int, Version]] = {}
        self.ids: dict[int, Version] = {}  # the first version registered with each id
        self.max_id = 0
        self.configs: dict[str | None, str] = {}
        self.modes: dict[str | None, str] = {}
        self._parsed: dict[int, ParsedSchema] = {}

    # -- replay -----------------------------------------------------------------------------
    def apply(self, key_bytes: bytes | None, value_bytes: bytes | None) -> None:
        if not key_bytes:
            return
        try:
            key = json.loads(key_bytes)
            value = json.loads(value_bytes) if value_bytes else None
        except ValueError:
            return  # not ours (another tool's record): skipped, as Confluent skips bad keys
        kind = key.get("keytype")
        subject = key.get("subject")
        if kind == "SCHEMA":
            version = int(key["version"])
            if value is None:
                self.subjects.get(subject, {}).pop(version, None)
                if not self.subjects.get(subject, True):
                    del self.subjects[subject]
                return
            v = Version(value["subject"], int(value["version"]), int(value["id"]),
                        value["schema"], value.get("schemaType") or "AVRO",
                        list(value.get("references") or []), bool(value.get("deleted")))
            self.subjects.setdefault(subject, {})[version] = v
            self.ids.setdefault(v.id, v)
            self.max_id = max(self.max_id, v.id)
        elif kind in ("CONFIG", "MODE"):
            table = self.configs if kind == "CONFIG" else self.modes
            if value is None:
                table.pop(subject, None)
            else:
                table[subject] = value["compatibilityLevel" if kind == "CONFIG" else "mode"]
        elif kind == "NOOP" and isinstance(value, dict) and "maxId" in value:
            self.max_id = max(self.max_id, int(value["maxId"]))  # see id_watermark
        elif kind == "DELETE_SUBJECT" and value is not None:
            for v in self.subjects.get(subject, {}).values():
                if v.version <= int(value.get("version", 2**31)):
                    v.deleted = True

    # -- queries ----------------------------------------------------------------------------
    def parsed(self, v: Version) -> ParsedSchema:
        cached = self._parsed.get(v.id)
        if cached is None:
            cached = parse(v.schema, v.schema_type, v.references, self.resolve_reference)
            self._parsed[v.id] = cached
        return cached

    def resolve_reference(self, ref: dict[str, Any]) -> ParsedSchema:
        try:
            v = self.version(ref["subject"], ref["version"], deleted=False)
        except errors.RegistryError:
            raise errors.invalid_schema(
                f"reference {ref.get('name')!r} points to subject {ref.get('subject')!r} "
                f"version {ref.get('version')}, which is not registered") from None
        return self.parsed(v)

    def live_versions(self, subject: str, deleted: bool = False) -> list[Version]:
        versions = self.subjects.get(subject, {})
        return [versions[n] for n in sorted(versions) if deleted or not versions[n].deleted]

    def subject_names(self, deleted: bool = False, deleted_only: bool = False) -> list[str]:
        out = []
        for name, versions in self.subjects.items():
            live = any(not v.deleted for v in versions.values())
            if (deleted_only and not live and versions) or (not deleted_only and
                                                            (live or deleted)):
                out.append(name)
        return sorted(out)

    def version(self, subject: str, version: Any, deleted: bool = False) -> Version:
        """``version`` is a number, "latest" or -1; 40401/40402/42202 as Confluent answers."""
        versions = self.live_versions(subject, deleted=True)
        if not versions:
            raise errors.subject_not_found(subject)
        if str(version) in ("latest", "-1"):
            live = [v for v in versions if deleted or not v.deleted]
            if not live:
                raise errors.subject_not_found(subject)
            return live[-1]
        try:
            number = int(version)
        except (TypeError, ValueError):
            raise errors.invalid_version(version) from None
        if not 1 <= number <= 2**31 - 1:
            raise errors.invalid_version(version)
        for v in versions:
            if v.version == number and (deleted or not v.deleted):
                return v
        if not any(not v.deleted for v in versions) and not deleted:
            raise errors.subject_not_found(subject)
        raise errors.version_not_found(subject, number)

    def find(self, subject: str, parsed: ParsedSchema, deleted: bool = False) -> Version | None:
        """The version of ``subject`` whose schema is ``parsed`` (same canonical form)."""
        for v in self.live_versions(subject, deleted=deleted):
            if v.schema_type == parsed.schema_type and self.parsed(v).canonical == \
                    parsed.canonical:
                return v
        return None

    def id_for(self, parsed: ParsedSchema) -> int | None:
        """The id an identical schema already has under any subject (Confluent reuses it)."""
        for v in self.ids.values():
            if v.schema_type == parsed.schema_type and self.parsed(v).canonical == \
                    parsed.canonical:
                return v.id
        return None

    def compatibility(self, subject: str | None) -> str:
        if subject is not None and subject in self.configs:
            return self.configs[subject]
        return self.configs.get(None, DEFAULT_COMPATIBILITY)

    def referenced_by(self, subject: str, version: int) -> list[int]:
        out = []
        for versions in self.subjects.values():
            for v in versions.values():
                if not v.deleted and any(r.get("subject") == subject and
                                         int(r.get("version", 0)) == version
                                         for r in v.references):
                    out.append(v.id)
        return sorted(set(out))
