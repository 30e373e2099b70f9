"""Prometheus text exposition: parsing, counter sums and deltas, histogram quantiles.

A metrics snapshot is the shape tools/stack/mmi_stack/'s Stack.metrics() returns:
``{metric_name: [(labels_dict, value), ...]}``; histogram series keep Prometheus' suffixes
(``<name>_bucket`` with ``le``, ``<name>_sum``, ``<name>_count``).
"""

import math
import re

_LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})?\s+(\S+)(\s+\d+)?$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse(text):
    """Parses Prometheus text format into {name: [(labels, value)]}."""
    out = {}
    for line in text.splitlines():
        if not line or line.startswith('#'):
            continue
        m = _LINE.match(line.strip())
        if not m:
            continue
        name, labels_text, value_text = m.group(1), m.group(3), m.group(4)
        labels = {}
        if labels_text:
            for k, v in _LABEL.findall(labels_text):
                labels[k] = v.replace('\\"', '"').replace('\\n', '\n').replace('\\\\', '\\')
        try:
            value = float(value_text)
        except ValueError:
            continue
        out.setdefault(name, []).append((labels, value))
    return out


def _matches(labels, where):
    return all(labels.get(k) == v for k, v in (where or {}).items())


def total(snapshot, name, where=None):
    """Sum of every series of `name` whose labels include `where`."""
    return sum(v for labels, v in snapshot.get(name, []) if _matches(labels, where))


def by_label(snapshot, name, keys, where=None):
    """{tuple(label values for keys): summed value} for the series of `name`."""
    out = {}
    for labels, v in snapshot.get(name, []):
        if _matches(labels, where):
            k = tuple(labels.get(key, '') for key in keys)
            out[k] = out.get(k, 0.0) + v
    return out


def counter_delta(before, after, name, where=None, restarted=False):
    """Increase of a counter between two snapshots of one process.

    With restarted=True the process was started again between them, so its counters began at
    zero: the increase is the later value itself.
    """
    a = total(after, name, where)
    if restarted:
        return a
    b = total(before, name, where)
    return a - b if a >= b else a


def delta_by_label(before, after, name, keys, where=None):
    b = by_label(before, name, keys, where)
    a = by_label(after, name, keys, where)
    out = {}
    for k, v in a.items():
        d = v - b.get(k, 0.0)
        if d < 0:  # counter reset (process restarted)
            d = v
        if d:
            out[k] = d
    return out


def buckets(snapshot, name, where=None):
    """Cumulative histogram buckets [(upper bound, count)], summed over matching series."""
    acc = {}
    for labels, v in snapshot.get(name + '_bucket', []):
        if not _matches(labels, where) or 'le' not in labels:
            continue
        le = math.inf if labels['le'] in ('+Inf', 'Inf') else float(labels['le'])
        acc[le] = acc.get(le, 0.0) + v
    return sorted(acc.items())


def bucket_delta(before, after, name, where=None, restarted=False):
    a = buckets(after, name, where)
    if restarted:
        return a
    b = dict(buckets(before, name, where))
    out = [(le, c - b.get(le, 0.0)) for le, c in a]
    if any(c < 0 for _, c in out):  # counter reset
        return a
    return out


def quantile(q, cumulative):
    """histogram_quantile() as Prometheus computes it (linear within the bucket).

    Returns None when the histogram is empty; the highest finite bound when the quantile falls in
    the +Inf bucket (reported as ">= bound" by the caller through quantile_text).
    """
    if not cumulative:
        return None
    count = cumulative[-1][1]
    if count <= 0:
        return None
    rank = q * count
    prev_le, prev_c = 0.0, 0.0
    for le, c in cumulative:
        if c >= rank:
            if math.isinf(le):
                return prev_le
            if c == prev_c:
                return le
            return prev_le + (le - prev_le) * (rank - prev_c) / (c - prev_c)
        prev_le, prev_c = le, c
    return prev_le


def summary(cumulative):
    """{count, p50, p99, p99_overflow} of a (delta) histogram; seconds."""
    count = cumulative[-1][1] if cumulative else 0.0
    finite = [le for le, _ in cumulative if not math.isinf(le)]
    top = finite[-1] if finite else None
    out = {'count': int(count), 'p50_s': None, 'p99_s': None}
    if count > 0:
        out['p50_s'] = round(quantile(0.5, cumulative), 4)
        p99 = quantile(0.99, cumulative)
        out['p99_s'] = round(p99, 4)
        # When more than 1% of observations exceed the last finite bucket, p99 is only a floor.
        over = count - dict(cumulative).get(top, count) if top is not None else 0
        if over > 0.01 * count:
            out['p99_at_least'] = True
    return out
