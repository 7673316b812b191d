"""The generated part of docs/api.md: every public name with its parameters, from the code.

    python -m tests.ops.api_docs          # rewrite the generated section of docs/api.md

tests/ops/test_api_docs.py fails when the file differs from what this produces, so a public
name that is added, renamed or given new parameters cannot go undocumented.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "api.md"
BEGIN = "<!-- BEGIN GENERATED REFERENCE (python -m tests.ops.api_docs) -->"
END = "<!-- END GENERATED REFERENCE -->"

# Classes users meet without importing them by name (returned by the DSL, the runtime, the
# driver), on top of everything in ``streams.__all__``.
EXTRA = [
    "streams.StreamsConfig",
    "streams.dsl.kstream.KStream", "streams.dsl.kstream.BranchedKStream",
    "streams.dsl.ktable.KTable", "streams.dsl.ktable.GlobalKTable",
    "streams.dsl.grouped.KGroupedStream", "streams.dsl.grouped_table.KGroupedTable",
    "streams.dsl.windowed.TimeWindowedKStream", "streams.dsl.windowed.SessionWindowedKStream",
    "streams.dsl.cogroup.CogroupedKStream",
    "streams.dsl.cogroup.TimeWindowedCogroupedKStream",
    "streams.dsl.cogroup.SessionWindowedCogroupedKStream",
    "streams.runtime.app.State", "streams.runtime.app.StreamThreadExceptionResponse",
    "streams.runtime.queries.HostInfo", "streams.runtime.queries.KeyQueryMetadata",
    "streams.runtime.queries.StreamsMetadata", "streams.runtime.queries.ThreadMetadata",
    "streams.runtime.queries.TaskMetadata",
    "streams.runtime.queries.ReadOnlyStoreView",
    "streams.state.stores.StoreBuilder", "streams.state.stores.StoreSupplier",
    "streams.testing.TopologyTestDriver", "streams.testing.TestRecord",
    "streams.testing.driver.TestInputTopic", "streams.testing.driver.TestOutputTopic",
]


def _load(path: str) -> Any:
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


def public_objects() -> dict[str, Any]:
    import streams

    objects = {name: getattr(streams, name) for name in streams.__all__}
    for path in EXTRA:
        obj = _load(path)
        objects[obj.__name__] = obj
    return dict(sorted(objects.items()))


def _first_line(obj: Any) -> str:
    """The first paragraph of the object's own docstring (never an inherited one)."""
    doc = inspect.cleandoc(getattr(obj, "__doc__", None) or "")
    return doc.strip().split("\n\n")[0].replace("\n", " ").strip()


def _signature(obj: Any) -> str:
    try:
        text = str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"
    return text.replace("'", "").replace("self, ", "").replace("(self)", "()")


def _members(cls: type) -> list[tuple[str, Any]]:
    """Public members defined by our classes (not pydantic's, NamedTuple's or object's)."""
    result = []
    for name in sorted(dir(cls)):
        if name.startswith("_") and name != "__init__":
            continue
        owner = next((k for k in cls.__mro__ if name in vars(k)), None)
        if owner is None or not owner.__module__.startswith("streams"):
            continue
        result.append((name, vars(owner)[name]))
    return result


def _describe_class(name: str, cls: type) -> list[str]:
    lines = [f"### `{name}`", "", f"`{cls.__module__}.{cls.__qualname__}`"]
    summary = _first_line(cls) if vars(cls).get("__doc__") else ""
    if summary:
        lines += ["", summary]
    lines.append("")
    if issubclass(cls, Exception):
        return lines
    import enum
    if issubclass(cls, enum.Enum):
        lines.append("Members: " + ", ".join(f"`{m.name}`" for m in cls) + ".")
        lines.append("")
        return lines
    fields = getattr(cls, "model_fields", None)
    if fields:  # a pydantic config model: its keys
        keys = ", ".join(f"`{k.replace('_', '.')}`" for k in fields)
        lines += [f"Keys (dotted or snake_case): {keys}.", ""]
    for member, raw in _members(cls):
        if isinstance(raw, property):
            lines.append(f"- `{member}` (property) {_first_line(raw)}".rstrip())
            continue
        func = raw.__func__ if isinstance(raw, staticmethod | classmethod) else raw
        if not callable(func):
            continue
        label = name if member == "__init__" else member
        kind = " (static)" if isinstance(raw, staticmethod) else \
            " (class method)" if isinstance(raw, classmethod) else ""
        summary = _first_line(func)
        lines.append(f"- `{label}{_signature(func)}`{kind}" + (f" — {summary}" if summary else ""))
    lines.append("")
    return lines


def _describe_function(name: str, func: Any) -> list[str]:
    return [f"### `{name}`", "", f"`{name}{_signature(func)}` — {_first_line(func)}", ""]


def _cli_lines() -> list[str]:
    from streams.cli.main import build_parser

    lines = ["## Command line (generated from the parser)", ""]

    def walk(parser: argparse.ArgumentParser, path: list[str]) -> None:
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]  # noqa: SLF001
        if subs:
            for name, child in sorted(subs[0].choices.items()):
                walk(child, [*path, name])
            return
        options = []
        for action in parser._actions:  # noqa: SLF001
            if isinstance(action, argparse._HelpAction):  # noqa: SLF001
                continue
            flag = ", ".join(action.option_strings) or action.dest.upper()
            help_text = (action.help or "").replace("%(default)s", str(action.default))
            options.append(f"  - `{flag}`" + (f" — {help_text}" if help_text else ""))
        lines.append(f"- `{' '.join(path)}`")
        lines.extend(options)

    walk(build_parser(), ["streams"])
    lines.append("")
    return lines


def generate() -> str:
    lines = [BEGIN, "", "## Reference (generated from the code)", ""]
    for name, obj in public_objects().items():
        if inspect.isclass(obj):
            lines += _describe_class(name, obj)
        else:
            lines += _describe_function(name, obj)
    lines += _cli_lines()
    lines.append(END)
    return "\n".join(lines) + "\n"


def current() -> str:
    text = DOC.read_text()
    start = text.index(BEGIN)
    return text[start:]


def write() -> None:
    text = DOC.read_text()
    head = text[: text.index(BEGIN)] if BEGIN in text else text.rstrip() + "\n\n"
    DOC.write_text(head + generate())


if __name__ == "__main__":
    write()
    sys.exit(0)
