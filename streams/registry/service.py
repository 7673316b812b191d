"""The registry's operations, independent of HTTP: register, look up, delete, configure.

Each write runs through :meth:`SchemaStore.write`, whose ``build`` function decides on a fresh
state (so ids and versions are computed from everything any registry committed before).
"""

from __future__ import annotations

from typing import Any

from . import errors
from .schemas import LEVELS, ParsedSchema, check_compatibility, parse
from .state import State, Version, config_key, id_watermark, mode_key, schema_key
from .store import SchemaStore

MODES = ("READWRITE", "READONLY", "READONLY_OVERRIDE", "IMPORT")


def describe(v: Version, fmt: str | None = None, state: State | None = None) -> dict[str, Any]:
    """The JSON Confluent returns for a version (``schemaType`` omitted for Avro)."""
    out: dict[str, Any] = {"subject": v.subject, "version": v.version, "id": v.id}
    if v.schema_type != "AVRO":
        out["schemaType"] = v.schema_type
    if v.references:
        out["references"] = v.references
    out["schema"] = schema_text(v, fmt, state)
    return out


def schema_text(v: Version, fmt: str | None, state: State | None) -> str:
    """The schema as Confluent answers it: Protobuf as ``.proto`` text (also when it was
    registered as a base64 descriptor, as Confluent's Python client does), or as the base64
    ``FileDescriptorProto`` with ``format=serialized``."""
    if v.schema_type == "PROTOBUF" and state is not None:
        if fmt == "serialized":
            return state.parsed(v).serialized()
        if not any(token in v.schema for token in ("{", ";", "syntax")):  # base64
            from .proto_text import to_proto_text

            return to_proto_text(state.parsed(v).parsed)
    return v.schema


class RegistryService:
    def __init__(self, store: SchemaStore) -> None:
        self.store = store

    @property
    def state(self) -> State:
        return self.store.state

    def _parse(self, body: dict[str, Any], state: State) -> ParsedSchema:
        if not isinstance(body, dict) or "schema" not in body:
            raise errors.invalid_schema("the request body needs a 'schema' field")
        return parse(body["schema"], body.get("schemaType"), body.get("references") or [],
                     state.resolve_reference)

    def _check_writable(self, state: State, subject: str | None) -> None:
        mode = state.modes.get(subject, state.modes.get(None, "READWRITE"))
        if mode in ("READONLY", "READONLY_OVERRIDE"):
            raise errors.operation_not_permitted(f"Subject {subject} is in read-only mode")

    async def register(self, subject: str, body: dict[str, Any]) -> dict[str, Any]:
        def build(state: State) -> tuple[list, dict[str, Any]]:
            parsed = self._parse(body, state)
            existing = state.find(subject, parsed)
            if existing is not None:
                return [], describe(existing, None, state)
            self._check_writable(state, subject)
            live = state.live_versions(subject)
            level = state.compatibility(subject)
            messages = check_compatibility(level, parsed,
                                           [(v.version, state.parsed(v)) for v in live])
            if messages:
                raise errors.incompatible(subject, messages)
            schema_id = state.id_for(parsed) or state.max_id + 1
            every = state.live_versions(subject, deleted=True)
            version = (every[-1].version if every else 0) + 1
            v = Version(subject, version, schema_id, parsed.text, parsed.schema_type,
                        parsed.references)
            return [(schema_key(subject, version), v.value())], describe(v)

        return await self.store.write(build)

    async def lookup(self, subject: str, body: dict[str, Any], deleted: bool,
                     fmt: str | None) -> dict[str, Any]:
        await self.store.sync()
        state = self.state
        if not state.live_versions(subject, deleted=deleted):
            raise errors.subject_not_found(subject)
        parsed = self._parse(body, state)
        found = state.find(subject, parsed, deleted=deleted)
        if found is None:
            raise errors.schema_not_found()
        return describe(found, fmt, state)

    async def delete_version(self, subject: str, version: str, permanent: bool) -> int:
        def build(state: State) -> tuple[list, int]:
            self._check_writable(state, subject)
            v = state.version(subject, version, deleted=True)
            if str(version) in ("latest", "-1"):
                v = state.version(subject, version, deleted=permanent)
            if state.referenced_by(subject, v.version):
                raise errors.reference_exists(
                    f"One or more references exist to the schema {{subject={subject}, "
                    f"version={v.version}}}")
            if permanent:
                if not v.deleted:
                    raise errors.version_not_soft_deleted(subject, v.version)
                return [(schema_key(subject, v.version), None), id_watermark(state.max_id)], \
                    v.version
            if v.deleted:
                raise errors.version_soft_deleted(subject, v.version)
            gone = Version(v.subject, v.version, v.id, v.schema, v.schema_type, v.references,
                           True)
            return [(schema_key(subject, v.version), gone.value())], v.version

        return await self.store.write(build)

    async def delete_subject(self, subject: str, permanent: bool) -> list[int]:
        def build(state: State) -> tuple[list, list[int]]:
            self._check_writable(state, subject)
            every = state.live_versions(subject, deleted=True)
            if not every:
                raise errors.subject_not_found(subject)
            live = [v for v in every if not v.deleted]
            for v in live if not permanent else every:
                if state.referenced_by(subject, v.version):
                    raise errors.reference_exists(
                        f"One or more references exist to the schema {{subject={subject}, "
                        f"version={v.version}}}")
            if permanent:
                if live:
                    raise errors.subject_not_soft_deleted(subject)
                records = [(schema_key(subject, v.version), None) for v in every]
                records += [(config_key(subject), None), id_watermark(state.max_id)]
                return records, [v.version for v in every]
            if not live:
                raise errors.subject_soft_deleted(subject)
            records = [(schema_key(subject, v.version),
                        Version(v.subject, v.version, v.id, v.schema, v.schema_type,
                                v.references, True).value()) for v in live]
            return records, [v.version for v in live]

        return await self.store.write(build)

    async def set_config(self, subject: str | None, body: dict[str, Any]) -> dict[str, str]:
        level = str((body or {}).get("compatibility", "")).upper()
        if level not in LEVELS:
            raise errors.invalid_compatibility((body or {}).get("compatibility"))

        def build(state: State) -> tuple[list, dict[str, str]]:
            return [(config_key(subject), {"compatibilityLevel": level})], \
                {"compatibility": level}

        return await self.store.write(build)

    async def delete_config(self, subject: str | None) -> dict[str, str]:
        def build(state: State) -> tuple[list, dict[str, str]]:
            if subject is not None and subject not in state.configs:
                raise errors.subject_not_found(subject)
            old = state.compatibility(subject)
            return [(config_key(subject), None)], {"compatibilityLevel": old}

        return await self.store.write(build)

    async def set_mode(self, subject: str | None, body: dict[str, Any]) -> dict[str, str]:
        mode = str((body or {}).get("mode", "")).upper()
        if mode not in MODES:
            raise errors.invalid_mode((body or {}).get("mode"))

        def build(state: State) -> tuple[list, dict[str, str]]:
            return [(mode_key(subject), {"mode": mode})], {"mode": mode}

        return await self.store.write(build)

    async def test_compatibility(self, subject: str, version: str | None,
                                 body: dict[str, Any]) -> list[str]:
        await self.store.sync()
        state = self.state
        parsed = self._parse(body, state)
        level = state.compatibility(subject)
        live = state.live_versions(subject)
        if version is None:  # /versions: against all versions, whatever the level says
            previous = [(v.version, state.parsed(v)) for v in live]
            transitive = level if level.endswith("_TRANSITIVE") or level == "NONE" \
                else f"{level}_TRANSITIVE"
            return check_compatibility(transitive, parsed, previous)
        if not live:
            if str(version) in ("latest", "-1"):
                return []
            raise errors.subject_not_found(subject)
        v = state.version(subject, version)
        return check_compatibility(level.removesuffix("_TRANSITIVE"), parsed,
                                   [(v.version, state.parsed(v))])
