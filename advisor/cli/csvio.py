"""CSV in and out for the `--cases` commands: read a table, write one atomically."""

from __future__ import annotations

import contextlib
import csv
import math
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from advisor.data.errors import AdvisorError
from advisor.data.userdata import atomic_writer


def csv_value(v: Any) -> Any:
    if isinstance(v, float):
        return "" if not math.isfinite(v) else f"{v:.6g}"
    if isinstance(v, bool):
        return "true" if v else "false"
    return v


#: rows between progress lines on a terminal
PROGRESS_EVERY = 1000


def run_cases(path: str, out: str | None, inputs: Sequence[str], outputs: Callable[[set[str]], list[str]],
              fill: Callable[[dict[str, str], dict[str, Any]], str]) -> int:
    """Compute a --cases table row by row; returns how many rows failed.

    ``outputs(columns)`` names the columns added after the input's own (given the input's column
    names, lower-cased), ``error`` last; ``fill(cells, result)`` computes one row into ``result`` and
    returns its ``error`` text ("" when the row is fine). A row that raises `AdvisorError` gets the
    message in ``error`` and the others still run. Rows stream through: read one, computed, written
    (to standard output at once, or to a temporary file renamed over ``out`` at the end), so a table
    of a million rows needs no more memory than one; on a terminal a progress line counts them.
    """
    try:
        fh = sys.stdin if path == "-" else open(path, encoding="utf-8-sig", newline="")
    except OSError as exc:
        raise AdvisorError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        reader = csv.DictReader(fh)
        try:
            header = list(reader.fieldnames or [])
        except (csv.Error, UnicodeDecodeError) as exc:
            raise AdvisorError(f"{path} is not valid CSV: {exc}") from None
        if not header:
            raise AdvisorError(f"{path} is empty (expected a header row)")
        norm = {h: h.strip().lower() for h in header}
        columns = set(norm.values())
        missing = [c for c in ("hardware", "model") if c not in columns]
        if missing:
            raise AdvisorError(f"{path} lacks the column(s) {', '.join(missing)} (expected {','.join(inputs)})")
        out_header = header + [c for c in outputs(columns) if c not in columns]
        to_file = bool(out and out != "-")
        with (atomic_writer(Path(out), newline="") if to_file else contextlib.nullcontext(sys.stdout)) as dest:
            failed, n = _stream_rows(reader, path, norm, out_header, fill, dest)
    finally:
        if fh is not sys.stdin:
            fh.close()
    if failed:
        print(f"advisor: {failed} of {n} row(s) could not be computed (see the error column)", file=sys.stderr)
    return failed


def _stream_rows(reader, path, norm, out_header, fill, dest) -> tuple[int, int]:
    writer = csv.DictWriter(dest, fieldnames=out_header, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    tty = sys.stderr.isatty()
    failed = n = 0
    try:
        for n, row in enumerate(reader, 1):
            cells = {norm[k]: (v or "").strip() for k, v in row.items() if k in norm}
            result: dict[str, Any] = dict(row)
            try:
                result["error"] = fill(cells, result)
            except AdvisorError as exc:
                result["error"] = str(exc)
                failed += 1
            writer.writerow(result)
            if tty and n % PROGRESS_EVERY == 0:
                sys.stderr.write(f"\r{n:,} rows computed …")
                sys.stderr.flush()
    except (csv.Error, UnicodeDecodeError) as exc:
        raise AdvisorError(f"{path}: line {reader.line_num} is not valid CSV: {exc}") from None
    finally:
        if tty and n >= PROGRESS_EVERY:
            sys.stderr.write("\r" + " " * 40 + "\r")
    return failed, n


def refuse_flags_with_cases(args, names: tuple[str, ...]) -> None:
    """--cases reads every configuration from its file: a flag that would set one (or `--json`,
    `--sweep` …, which a table of cases does not print) is an error naming it, not silently dropped."""
    from advisor.data.errors import AdvisorError

    given = [n for n in names if getattr(args, n, None) not in (None, False, "")]
    if given:
        flags = ", ".join("--" + n.replace("_", "-") for n in given)
        raise AdvisorError(f"--cases takes every configuration from its file: drop {flags}")
