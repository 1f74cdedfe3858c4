"""The maximum throughput hardware vendors publish for a model on their own systems
(`catalog/measured/vendor_max.csv`, each row with its source and the sentence it comes from).

A prediction never exceeds them: `advisor.model.ceilings` turns a row into a throughput ceiling for
configurations of that model on that hardware, in that format or a wider one, at lengths near the
vendor's.
"""

from __future__ import annotations

import csv
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

from advisor.data.errors import AdvisorError

VENDOR_MAX_CSV = Path(__file__).resolve().parents[2] / "catalog" / "measured" / "vendor_max.csv"
COLUMNS = ("model", "hardware", "gpus", "quant", "runtime", "prompt_tokens", "output_tokens", "max_output_tok_s",
           "date", "source", "quote")


@dataclass(frozen=True)
class VendorMax:
    """One published maximum: ``max_output_tok_s`` output tokens per second on ``gpus`` × ``hardware``."""

    model: str
    hardware: str
    gpus: int
    quant: str
    runtime: str
    prompt_tokens: int
    output_tokens: int
    max_output_tok_s: float
    date: str
    source: str
    quote: str

    @property
    def per_gpu_tok_s(self) -> float:
        return self.max_output_tok_s / self.gpus


def read_vendor_max(path: Path | str) -> tuple[VendorMax, ...]:
    """The rows of a vendor-maximum CSV; `AdvisorError` naming the file and line for a bad one."""
    path = Path(path)
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            reader = csv.DictReader(fh)
            missing = [c for c in COLUMNS if c not in (reader.fieldnames or ())]
            if missing:
                raise AdvisorError(f"{path.name}: missing column(s) {', '.join(missing)}")
            rows = []
            for n, r in enumerate(reader, start=2):
                try:
                    row = VendorMax(model=r["model"].strip(), hardware=r["hardware"].strip(), gpus=int(r["gpus"]),
                                    quant=r["quant"].strip(), runtime=r["runtime"].strip(),
                                    prompt_tokens=int(r["prompt_tokens"]), output_tokens=int(r["output_tokens"]),
                                    max_output_tok_s=float(r["max_output_tok_s"]), date=r["date"].strip(),
                                    source=r["source"].strip(), quote=r["quote"].strip())
                except (TypeError, ValueError) as exc:
                    raise AdvisorError(f"{path.name} line {n}: {exc}") from None
                if row.gpus < 1 or row.max_output_tok_s <= 0 or row.prompt_tokens < 0 or row.output_tokens < 1:
                    raise AdvisorError(f"{path.name} line {n}: gpus, lengths and throughput must be positive")
                if not row.source:
                    raise AdvisorError(f"{path.name} line {n}: a published maximum needs its source")
                rows.append(row)
    except OSError as exc:
        raise AdvisorError(f"cannot read {path}: {exc.strerror or exc}") from None
    return tuple(rows)


@lru_cache(maxsize=1)
def shipped_vendor_max() -> tuple[VendorMax, ...]:
    """catalog/measured/vendor_max.csv as shipped (none if the file is absent)."""
    return read_vendor_max(VENDOR_MAX_CSV) if VENDOR_MAX_CSV.exists() else ()
