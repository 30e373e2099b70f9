"""What the stack reads out of the rendered Helm chart."""

from __future__ import annotations

import re


def configmap_data_blocks(rendered: str) -> dict[str, str]:
    """The `data:` entries written as literal blocks (`key: |`) of a rendered ConfigMap, without
    a YAML library: the chart's configmap.yaml indents data keys by 2 and their text by 4."""
    blocks: dict[str, str] = {}
    current: str | None = None
    lines: list[str] = []
    for line in rendered.splitlines():
        m = re.match(r"^  ([A-Za-z0-9_.\-]+): \|-?\s*$", line)
        if m:
            if current:
                blocks[current] = "\n".join(lines).rstrip() + "\n"
            current, lines = m.group(1), []
            continue
        if current is None:
            continue
        if line.startswith("    ") or not line.strip():
            lines.append(line[4:])
        else:
            blocks[current] = "\n".join(lines).rstrip() + "\n"
            current, lines = None, []
    if current:
        blocks[current] = "\n".join(lines).rstrip() + "\n"
    return blocks
