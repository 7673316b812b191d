"""``metrics.listener`` values: parsed without loading aiohttp, so configs can check them."""

from __future__ import annotations

from urllib.parse import urlsplit


def parse_listener(value: str, key: str = "metrics.listener") -> tuple[str, int]:
    """``http://HOST:PORT`` -> (host, port); a clear error naming ``key`` otherwise."""
    text = str(value).strip()
    parts = urlsplit(text if "://" in text else f"http://{text}")
    try:
        port = parts.port
    except ValueError:
        port = None
    if parts.scheme != "http" or not parts.hostname or port is None \
            or parts.path not in ("", "/"):
        raise ValueError(f"{key}={value!r}: expected http://HOST:PORT (e.g. "
                         f"http://0.0.0.0:9404; port 0 picks a free one)")
    return parts.hostname, port
