"""CSV in and out for the `--cases` commands: read a table, write one atomically."""

from __future__ import annotations

import csv
import io
import math
import sys
from pathlib import Path
from typing import Any

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
