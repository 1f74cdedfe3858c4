"""Plain-text tables and number formatting for the CLI (and the report's text parts)."""

from __future__ import annotations

import math
import json
from typing import Any, Sequence


def num(x: Any, digits: int = 3) -> str:
    """A number with about ``digits`` significant figures and thousands separators; '—' for none."""
    if x is None:
        return "—"
    if isinstance(x, bool):
        return "yes" if x else "no"
    if isinstance(x, int):
        return f"{x:,}"
    try:
        v = float(x)
    except (TypeError, ValueError):
        return str(x)
    if not math.isfinite(v):
        return "∞" if v > 0 else "—"
    if v == 0:
        return "0"
    mag = math.floor(math.log10(abs(v)))
    decimals = max(0, digits - 1 - mag)
    return f"{v:,.{decimals}f}"


def duration_ms(ms: float) -> str:
    """A duration given in ms, in the unit a reader takes in: ms, s, then h from two hours on and days
    from two days (a batch job of a million requests runs for days)."""
    if ms is None or not math.isfinite(ms):
        return "—"
    if ms >= 2 * 86_400_000:
        return f"{num(ms / 86_400_000)} days"
    if ms >= 2 * 3_600_000:
        return f"{num(ms / 3_600_000)} h"
    if ms >= 1000:
        return f"{num(ms / 1000)} s"
    return f"{num(ms)} ms"


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]], right: Sequence[bool] | None = None) -> str:
    """An aligned text table; numeric columns right-aligned unless ``right`` says otherwise."""
    cells = [[c if isinstance(c, str) else num(c) for c in row] for row in rows]
    if right is None:
        right = [all(isinstance(r[i], (int, float)) or r[i] is None for r in rows) if rows else False
                 for i in range(len(headers))]
    widths = [len(h) for h in headers]
    for row in cells:
        for i, c in enumerate(row):
            widths[i] = max(widths[i], len(c))

    def fmt(row: Sequence[str]) -> str:
        parts = [c.rjust(widths[i]) if right[i] else c.ljust(widths[i]) for i, c in enumerate(row)]
        return "  ".join(parts).rstrip()

    lines = [fmt(headers), fmt(["-" * w for w in widths])]
    lines += [fmt(r) for r in cells]
    return "\n".join(lines)


def markdown_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """The same rows as a Markdown table (the benchmarks' --markdown, pasted into the README)."""
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def json_text(obj: Any) -> str:
    """Indented JSON with non-finite floats as null (JSON has no NaN or infinity)."""
    def clean(v: Any) -> Any:
        if isinstance(v, float) and not math.isfinite(v):
            return None
        if isinstance(v, dict):
            return {k: clean(x) for k, x in v.items()}
        if isinstance(v, (list, tuple)):
            return [clean(x) for x in v]
        return v
    return json.dumps(clean(obj), indent=2, ensure_ascii=False)
