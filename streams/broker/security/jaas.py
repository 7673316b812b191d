"""Kafka's one-module JAAS syntax: `<LoginModule class> <flag> key="value" ... ;`.

Only the options matter to the broker: PlainLoginModule's `user_<name>="<password>"` entries are
the PLAIN users (docs/security.html, "Configuring Kafka Brokers" for SASL/PLAIN).
"""

from __future__ import annotations

import re

_HEAD = re.compile(r"\s*([A-Za-z_$][\w.$]*)\s+(required|requisite|sufficient|optional)\s*",
                   re.IGNORECASE)
_OPTION = re.compile(r'\s*([^\s=;"]+)\s*=\s*("((?:[^"\\]|\\.)*)"|[^\s;"]+)\s*')


class JaasError(ValueError):
    """A JAAS value that cannot be parsed; the message never includes option values."""


def parse_jaas(text: str, key: str) -> tuple[str, dict[str, str]]:
    """The login module class and its options."""
    match = _HEAD.match(text)
    if not match:
        raise JaasError(f"{key}: expected '<LoginModule> required key=\"value\" ...;'")
    module, pos = match.group(1), match.end()
    options: dict[str, str] = {}
    while pos < len(text) and text[pos] != ";":
        option = _OPTION.match(text, pos)
        if not option:
            raise JaasError(f"{key}: cannot parse the options of {module} at character {pos}")
        value = option.group(3) if option.group(3) is not None else option.group(2)
        options[option.group(1)] = re.sub(r"\\(.)", r"\1", value)
        pos = option.end()
    if pos >= len(text) or text[pos:].strip() != ";":
        raise JaasError(f"{key}: the JAAS entry must end with one ';' (one login module only)")
    return module, options


def plain_users(text: str, key: str) -> dict[str, str]:
    module, options = parse_jaas(text, key)
    if not module.endswith("PlainLoginModule"):
        raise JaasError(f"{key}: PLAIN needs org.apache.kafka.common.security.plain."
                        f"PlainLoginModule, not {module}")
    return {name[5:]: value for name, value in options.items() if name.startswith("user_")}
