"""How right the techniques' what-ifs are: every row of catalog/measured/techniques.csv (public
measurements of speculative decoding and of llama.cpp partial offload) predicted with
advisor.model.techniques, next to the measured value, with the median absolute error.

Run: python benchmarks/techniques.py [--data FILE.csv]

A row's ``draft`` is a catalog model, or ``head:PARAMS_B:LAYERS`` for an EAGLE/Medusa-style head;
``unit`` is ``tok/s`` (decode speed per sequence, with ``baseline_value`` the same run without the
technique where the source gives one) or ``x`` (a speed-up ratio). Empty ``accept``/``draft_k``
use the model's documented defaults; empty lengths use the CLI's defaults (prompt 512, output 128).
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from advisor.data.catalog import load_catalog  # noqa: E402
from advisor.data.errors import AdvisorError  # noqa: E402
from advisor.model.config import Config, configure  # noqa: E402
from advisor.model.techniques import Techniques, offload, speculative  # noqa: E402
from advisor.text.format import table  # noqa: E402

DATA = Path(__file__).resolve().parents[1] / "catalog" / "measured" / "techniques.csv"
COLUMNS = ("hardware", "model", "quant", "runtime", "technique", "draft", "draft_k", "accept", "gpu_layers", "batch",
           "input_len", "output_len", "value", "unit", "baseline_value", "source_url", "note")
TECHNIQUES = ("speculative", "offload")
UNITS = ("tok/s", "x")


def load_rows(path: Path = DATA) -> list[dict]:
    """The measurement rows; `AdvisorError` if a column is missing or a value is not a number."""
    with open(path, newline="") as f:
        reader = csv.DictReader(f)
        missing = [c for c in COLUMNS if c not in (reader.fieldnames or ())]
        if missing:
            raise AdvisorError(f"{path}: missing columns {', '.join(missing)}")
        rows = list(reader)
    for i, r in enumerate(rows, start=2):
        if r["technique"] not in TECHNIQUES or r["unit"] not in UNITS:
            raise AdvisorError(f"{path}:{i}: technique must be one of {TECHNIQUES} and unit one of {UNITS}")
        if not r["source_url"].startswith("http"):
            raise AdvisorError(f"{path}:{i}: every row needs its source URL")
        float(r["value"])
    return rows


def _number(text: str, kind=float):
    return kind(text) if text and text.strip() else None


@dataclass(frozen=True)
class Case:
    """One row resolved against the catalog: the configuration and the technique asked for."""

    row: dict
    config: Config
    techniques: Techniques


def resolve(cat, row: dict) -> Case:
    """The row's names resolved (hardware, model, format, runtime, draft); `AdvisorError` if one is unknown."""
    cfg = configure(cat, hardware=row["hardware"], model=row["model"], quant=row["quant"], runtime=row["runtime"],
                    batch=row["batch"] or None, prompt=row["input_len"] or None, output=row["output_len"] or None)
    if row["technique"] == "speculative":
        draft = row["draft"].strip()
        if draft.startswith("head:"):
            _, params_b, layers = draft.split(":")
            tech = Techniques(head_params_b=float(params_b), head_layers=int(layers),
                              draft_k=_number(row["draft_k"], int), accept=_number(row["accept"]))
        else:
            tech = Techniques(draft=cat.model_named(draft), draft_k=_number(row["draft_k"], int),
                              accept=_number(row["accept"]))
    else:
        tech = Techniques(gpu_layers=_number(row["gpu_layers"], int))
    tech.check()
    return Case(row, cfg, tech)


def predict_row(cat, case: Case) -> dict:
    """Predicted value in the row's unit, and the predicted speed-up where one is measured."""
    row, cfg, tech = case.row, case.config, case.techniques
    effect = speculative(cat, cfg, tech) if row["technique"] == "speculative" else offload(cat, cfg, tech)
    speedup = effect.speedup
    predicted = speedup if row["unit"] == "x" else effect.after.decode_tok_s
    out = {"predicted": predicted, "predicted_speedup": speedup, "measured_speedup": None}
    base = _number(row["baseline_value"])
    if row["unit"] == "x":
        out["measured_speedup"] = float(row["value"])
    elif base:
        out["measured_speedup"] = float(row["value"]) / base
    return out


def error(predicted: float, measured: float) -> float:
    return predicted / measured - 1.0


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(DATA))
    args = ap.parse_args()
    cat = load_catalog(user=None)
    rows = load_rows(Path(args.data))
    lines, value_errors, speedup_errors, failed = [], [], [], []
    for i, row in enumerate(rows, start=1):
        try:
            case = resolve(cat, row)
            p = predict_row(cat, case)
        except AdvisorError as e:
            failed.append(f"row {i}: {e}")
            continue
        measured = float(row["value"])
        err = error(p["predicted"], measured)
        value_errors.append(abs(err))
        sp_err = None
        if p["measured_speedup"]:
            sp_err = error(p["predicted_speedup"], p["measured_speedup"])
            speedup_errors.append(abs(sp_err))
        what = row["draft"] if row["technique"] == "speculative" else f"-ngl {row['gpu_layers']}"
        lines.append([i, row["technique"], row["hardware"], row["model"], what, row["unit"], measured,
                      round(p["predicted"], 3), f"{err:+.0%}",
                      "" if p["measured_speedup"] is None else f"{p['measured_speedup']:.2f}x",
                      f"{p['predicted_speedup']:.2f}x", "" if sp_err is None else f"{sp_err:+.0%}"])
    print(table(["#", "technique", "hardware", "model", "draft / layers", "unit", "measured", "predicted", "error",
                 "speed-up meas.", "pred.", "error"], lines))
    print()
    if value_errors:
        print(f"median absolute error, value: {statistics.median(value_errors):.0%} over {len(value_errors)} rows")
    if speedup_errors:
        print(f"median absolute error, speed-up: {statistics.median(speedup_errors):.0%} over "
              f"{len(speedup_errors)} rows with a measured baseline or ratio")
    for f in failed:
        print("not computed:", f)
    if not math.isfinite(sum(value_errors)) or failed:
        sys.exit(1)


if __name__ == "__main__":
    main()
