"""docs/api.md documents every public name: each class of the public API with each of its
public members, and every CLI command with each of its options (names come from the code, so
a new method or flag without documentation fails here; `python -m tests.ops.api_docs`
regenerates the reference section)."""

from __future__ import annotations

import inspect
import re

from .api_docs import BEGIN, DOC, END, _cli_lines, _members, public_objects


def _sections(text: str) -> dict[str, str]:
    parts = re.split(r"^### `([^`]+)`$", text, flags=re.MULTILINE)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts) - 1, 2)}


def test_every_public_name_and_member_is_documented() -> None:
    text = DOC.read_text()
    assert BEGIN in text and END in text
    sections = _sections(text[text.index(BEGIN):])
    missing = []
    for name, obj in public_objects().items():
        if name not in sections:
            missing.append(name)
            continue
        if not inspect.isclass(obj):
            continue
        for member, raw in _members(obj):
            func = raw.__func__ if isinstance(raw, staticmethod | classmethod) else raw
            if not (isinstance(raw, property) or callable(func)):
                continue  # a field: documented by the constructor's signature
            label = name if member == "__init__" else member
            if f"`{label}(" not in sections[name] and f"`{label}`" not in sections[name]:
                missing.append(f"{name}.{member}")
    assert not missing, ("undocumented in docs/api.md (run python -m tests.ops.api_docs): "
                         + ", ".join(missing))


def test_every_cli_command_and_option_is_documented() -> None:
    text = DOC.read_text()
    expected = [line.split(" — ")[0].strip() for line in _cli_lines() if line.startswith(("-", "  -"))]
    missing = [item for item in expected if item not in text]
    assert not missing, ("CLI commands/options undocumented in docs/api.md "
                         "(run python -m tests.ops.api_docs): " + ", ".join(missing))


def test_docs_link_no_file_outside_the_repository() -> None:
    readme = (DOC.parents[1] / "README.md").read_text()
    for doc in (DOC, DOC.parent / "deploying.md"):
        content = doc.read_text()
        assert "/work/" not in content and "shared/API.md" not in content, doc
    assert "/work/shared" not in readme and "shared/API.md" not in readme
    assert "docs/api.md" in readme and "docs/deploying.md" in readme
