"""Scraping helpers for the metrics tests: GET an endpoint, parse the Prometheus text."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from typing import Any

from prometheus_client.parser import text_string_to_metric_families


def get(url: str, timeout: float = 10.0) -> tuple[int, bytes]:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as response:
            return response.status, response.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def health(url: str) -> tuple[int, Any]:
    status, body = get(url + "/health")
    return status, json.loads(body)


def scrape(url: str) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    """``{sample name: {sorted labels: value}}`` from ``url/metrics``."""
    status, body = get(url + "/metrics")
    assert status == 200, body
    out: dict[str, dict[tuple[tuple[str, str], ...], float]] = {}
    for family in text_string_to_metric_families(body.decode()):
        for sample in family.samples:
            out.setdefault(sample.name, {})[tuple(sorted(sample.labels.items()))] = sample.value
    return out


def value(metrics: dict[str, dict[tuple[tuple[str, str], ...], float]], name: str,
          **labels: Any) -> float | None:
    """The one sample of ``name`` whose labels include ``labels`` (None if there is none)."""
    wanted = {(k, str(v)) for k, v in labels.items()}
    found = [v for key, v in metrics.get(name, {}).items() if wanted <= set(key)]
    assert len(found) <= 1, (name, labels, metrics.get(name))
    return found[0] if found else None
