"""Request-length traces: the prompt and output lengths of real requests, read from a file so that a
load can be the mix a service sees rather than one prompt and one output length.

Accepted (recognised by content): CSV with a header naming a prompt column (prompt, prompt_tokens,
input, input_tokens, input_len, isl) and optionally an output column (output, output_tokens,
output_len, osl); JSON Lines with the same keys; or plain text with one prompt length per line.
"""

from __future__ import annotations

import csv
import io
import json
import math
from dataclasses import dataclass
from pathlib import Path

from advisor.data.safe_load import load_json
from advisor.data.errors import AdvisorError

PROMPT_KEYS = ("prompt_tokens", "prompt", "input_tokens", "input", "input_len", "prompt_len", "isl")
OUTPUT_KEYS = ("output_tokens", "output", "output_len", "completion_tokens", "osl")
#: A trace larger than this is refused (a desktop tool reads it whole).
MAX_BYTES = 64 * 2**20
MAX_ROWS = 1_000_000


@dataclass(frozen=True)
class Lengths:
    prompts: tuple[int, ...]
    outputs: tuple[int, ...]     # empty when the trace names no output lengths
    source: str

    @property
    def mean_prompt(self) -> float:
        return sum(self.prompts) / len(self.prompts)

    @property
    def mean_output(self) -> float | None:
        return sum(self.outputs) / len(self.outputs) if self.outputs else None


def _length(v, what: str, where: str) -> int:
    try:
        x = float(str(v).strip())
    except ValueError:
        raise AdvisorError(f"{where}: {what} length {v!r} is not a number") from None
    if not math.isfinite(x) or x < 1 or x > 100_000_000:
        raise AdvisorError(f"{where}: {what} length {v!r} is not a positive token count")
    return int(round(x))


def _pick(keys, row: dict) -> str | None:
    lower = {k.strip().lower(): k for k in row}
    return next((lower[k] for k in keys if k in lower), None)


def read_lengths(path: str | Path) -> Lengths:
    """The prompt (and output) lengths of ``path``; `AdvisorError` with one line for anything else."""
    p = Path(path)
    try:
        if p.stat().st_size > MAX_BYTES:
            raise AdvisorError(f"{p}: a length trace larger than {MAX_BYTES // 2**20} MB is not read")
        text = p.read_text(encoding="utf-8", errors="strict")
    except FileNotFoundError:
        raise AdvisorError(f"no length trace at {p}") from None
    except (OSError, UnicodeDecodeError) as e:
        raise AdvisorError(f"cannot read the length trace {p}: {getattr(e, 'strerror', None) or e}") from None
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        raise AdvisorError(f"{p}: the length trace is empty")
    if len(lines) > MAX_ROWS + 1:
        raise AdvisorError(f"{p}: more than {MAX_ROWS:,} requests in the length trace")
    prompts: list[int] = []
    outputs: list[int] = []
    first = lines[0].lstrip()
    if first.startswith("{"):
        for n, ln in enumerate(lines, 1):
            try:
                row = load_json(ln, f"{p}:{n}")
            except json.JSONDecodeError:
                raise AdvisorError(f"{p}:{n}: not a JSON object") from None
            if not isinstance(row, dict):
                raise AdvisorError(f"{p}:{n}: not a JSON object")
            pk, ok = _pick(PROMPT_KEYS, row), _pick(OUTPUT_KEYS, row)
            if pk is None:
                raise AdvisorError(f"{p}:{n}: no prompt length ({', '.join(PROMPT_KEYS)})")
            prompts.append(_length(row[pk], "prompt", f"{p}:{n}"))
            if ok is not None:
                outputs.append(_length(row[ok], "output", f"{p}:{n}"))
    elif any(c.isalpha() for c in first):
        reader = csv.DictReader(io.StringIO("\n".join(lines)))
        header = reader.fieldnames or []
        pk = _pick(PROMPT_KEYS, {h: h for h in header})
        ok = _pick(OUTPUT_KEYS, {h: h for h in header})
        if pk is None:
            raise AdvisorError(f"{p}: no prompt-length column ({', '.join(PROMPT_KEYS)}) in {', '.join(header)}")
        for n, row in enumerate(reader, 2):
            prompts.append(_length(row.get(pk), "prompt", f"{p}:{n}"))
            if ok is not None and (row.get(ok) or "").strip():
                outputs.append(_length(row[ok], "output", f"{p}:{n}"))
    else:
        for n, ln in enumerate(lines, 1):
            prompts.append(_length(ln.split(",")[0], "prompt", f"{p}:{n}"))
    if not prompts:
        raise AdvisorError(f"{p}: no requests in the length trace")
    if outputs and len(outputs) != len(prompts):
        raise AdvisorError(f"{p}: {len(prompts) - len(outputs)} requests have no output length")
    return Lengths(tuple(prompts), tuple(outputs), str(p))
