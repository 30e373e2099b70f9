"""The Prometheus text format, parsed without a client library."""

from __future__ import annotations

import re


_LABEL_RE = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_prometheus(text: str) -> dict[str, list[tuple[dict[str, str], float]]]:
    """Prometheus text format -> {metric name: [(labels, value), ...]} (histogram series keep
    their _bucket/_sum/_count names)."""
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if "{" in line:
            name, rest = line.split("{", 1)
            label_text, _, value_text = rest.rpartition("}")
            labels = {
                k: v.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
                for k, v in _LABEL_RE.findall(label_text)
            }
        else:
            parts = line.split()
            name, value_text, labels = parts[0], " ".join(parts[1:]), {}
        fields = value_text.split()
        if not fields:
            continue
        try:
            value = float(fields[0])
        except ValueError:
            continue
        out.setdefault(name.strip(), []).append((labels, value))
    return out


def metric_sum(metrics: dict, name: str, **labels: str) -> float:
    """Sum of the series of `name` whose labels include `labels`."""
    total = 0.0
    for series_labels, value in metrics.get(name, []):
        if all(series_labels.get(k) == v for k, v in labels.items()):
            total += value
    return total
