"""Benchmark result files, recognised by their content (not their name) and read into `BenchRecord`s.

Each format lives in `advisor.fit.bench_formats.<module>` with three names:
- ``TOOL``: the client's name as users know it ("llama-bench");
- ``sniff(text, data) -> bool``: whether this content is that tool's (cheap, never raises);
- ``parse(text, data, source) -> list[BenchRecord]``: the records, or `AdvisorError` with one line
  naming the field that is missing or malformed.

``data`` is the parsed JSON when the whole text is JSON, a list of the parsed lines when it is JSON
Lines, else None (CSV, a markdown table, a log). Files are read bounded (`MAX_RESULT_BYTES`), JSON
with the depth bound of `data.safe_load`.
"""

from __future__ import annotations

import importlib
from pathlib import Path
from typing import Any

from advisor.data.errors import AdvisorError
from advisor.data.safe_load import load_json
from advisor.fit.bench_records import BenchRecord

MAX_RESULT_BYTES = 64 * 2**20
#: the format modules, most specific first (a module's sniff must not claim another's files)
FORMAT_MODULES = ("advisor_measure", "llama_bench", "batched_bench", "vllm_serve", "sglang_bench", "genai_perf",
                  "guidellm")


def _formats() -> list[Any]:
    out = []
    for name in FORMAT_MODULES:
        try:
            out.append(importlib.import_module(f"advisor.fit.bench_formats.{name}"))
        except ModuleNotFoundError as exc:
            if exc.name != f"advisor.fit.bench_formats.{name}":
                raise
    return out


def structured(text: str, where: str) -> Any:
    """The JSON value of ``text``, or the list of values of its lines (JSON Lines), or None."""
    stripped = text.strip()
    if not stripped or stripped[0] not in "[{":
        return None
    try:
        return load_json(stripped, where)
    except (AdvisorError, ValueError):   # not one JSON value: perhaps JSON Lines
        pass
    lines = [ln for ln in stripped.splitlines() if ln.strip()]
    if len(lines) > 1 and all(ln.lstrip().startswith("{") for ln in lines):
        try:
            return [load_json(ln, f"{where}, line {i + 1}") for i, ln in enumerate(lines)]
        except (AdvisorError, ValueError):   # not JSON Lines either: the sniffs see the text
            return None
    return None


def read_text(path: Path) -> str:
    try:
        if not path.is_file():
            raise AdvisorError(f"{path}: no such file" if not path.exists() else
                               f"{path}: not a regular file")
        size = path.stat().st_size
        if size > MAX_RESULT_BYTES:
            raise AdvisorError(f"{path.name} is {size / 2**20:.0f} MiB, too large for a benchmark result "
                               f"(at most {MAX_RESULT_BYTES // 2**20} MiB)")
        raw = path.read_bytes()
    except OSError as exc:
        raise AdvisorError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        return raw.decode("utf-8-sig")
    except UnicodeDecodeError:
        raise AdvisorError(f"{path.name}: not text (a benchmark result is JSON, CSV or a table)") from None


def parse_results(text: str, source: str) -> tuple[str, list[BenchRecord]]:
    """(tool, records) of a result file's content; `AdvisorError` when no format claims it."""
    data = structured(text, source)
    formats = _formats()
    for fmt in formats:
        try:
            claimed = fmt.sniff(text, data)
        except Exception:  # noqa: BLE001 - a sniff that trips on odd content does not claim it
            claimed = False
        if claimed:
            records = fmt.parse(text, data, source)
            if not records:
                raise AdvisorError(f"{source}: a {fmt.TOOL} result with no measurements in it")
            return fmt.TOOL, records
    known = ", ".join(f.TOOL for f in formats)
    raise AdvisorError(f"{source}: not a benchmark result this tool reads (it reads {known})")


def read_results(path: str | Path) -> tuple[str, list[BenchRecord]]:
    """(tool, records) of a benchmark result file."""
    p = Path(path).expanduser()
    return parse_results(read_text(p), p.name)
