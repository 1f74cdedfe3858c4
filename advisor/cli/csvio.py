"""CSV in and out for the `--cases` commands: read a table, write one atomically."""

from __future__ import annotations

import csv
import io
import math
import sys
from pathlib import Path
from typing import Any, Callable, Sequence

from advisor.data.errors import AdvisorError
from advisor.data.userdata import write_atomic


def read_csv(path: str) -> tuple[list[str], list[dict[str, str]]]:
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise AdvisorError(f"cannot read {path}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise AdvisorError(f"{path} is not UTF-8 text") from None
    try:
        reader = csv.DictReader(io.StringIO(text))
        header = list(reader.fieldnames or [])
        rows = list(reader)
    except csv.Error as exc:
        raise AdvisorError(f"{path} is not valid CSV: {exc}") from None
    if not header:
        raise AdvisorError(f"{path} is empty (expected a header row)")
    return header, rows


def write_csv(path: str | None, header: list[str], rows: list[dict[str, Any]]) -> None:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=header, extrasaction="ignore", lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    if path and path != "-":
        write_atomic(Path(path), buf.getvalue())
    else:
        sys.stdout.write(buf.getvalue())


def csv_value(v: Any) -> Any:
    if isinstance(v, float):
        return "" if not math.isfinite(v) else f"{v:.6g}"
    if isinstance(v, bool):
        return "true" if v else "false"
    return v


def run_cases(path: str, out: str | None, inputs: Sequence[str], outputs: Callable[[set[str]], list[str]],
              fill: Callable[[dict[str, str], dict[str, Any]], str]) -> int:
    """Compute a --cases table row by row; returns how many rows failed.

    ``outputs(columns)`` names the columns added after the input's own (given the input's column
    names, lower-cased), ``error`` last; ``fill(cells, result)`` computes one row into ``result`` and
    returns its ``error`` text ("" when the row is fine). A row that raises `AdvisorError` gets the
    message in ``error`` and the others still run; the table is written atomically.
    """
    header, rows = read_csv(path)
    norm = {h: h.strip().lower() for h in header}
    columns = set(norm.values())
    missing = [c for c in ("hardware", "model") if c not in columns]
    if missing:
        raise AdvisorError(f"{path} lacks the column(s) {', '.join(missing)} (expected {','.join(inputs)})")
    out_header = header + [c for c in outputs(columns) if c not in columns]
    failed, out_rows = 0, []
    for row in rows:
        cells = {norm[k]: (v or "").strip() for k, v in row.items() if k in norm}
        result: dict[str, Any] = dict(row)
        try:
            result["error"] = fill(cells, result)
        except AdvisorError as exc:
            result["error"] = str(exc)
            failed += 1
        out_rows.append(result)
    write_csv(out, out_header, out_rows)
    if failed:
        print(f"advisor: {failed} of {len(rows)} row(s) could not be computed (see the error column)", file=sys.stderr)
    return failed


def refuse_flags_with_cases(args, names: tuple[str, ...]) -> None:
    """--cases reads every configuration from its file: a flag that would set one (or `--json`,
    `--sweep` …, which a table of cases does not print) is an error naming it, not silently dropped."""
    from advisor.data.errors import AdvisorError

    given = [n for n in names if getattr(args, n, None) not in (None, False, "")]
    if given:
        flags = ", ".join("--" + n.replace("_", "-") for n in given)
        raise AdvisorError(f"--cases takes every configuration from its file: drop {flags}")
