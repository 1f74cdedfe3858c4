"""Compare the model's predictions with measured rows: the project's stated accuracy.

For every mapped row: prediction with the catalog's calibrated profiles, its band, and the plain
100 %-of-roofline estimate for comparison. Summaries per metric and per source, runtime and
hardware family: rows, median absolute percentage error, 90th percentile, signed bias (median
of predicted/measured − 1) and band coverage.

`holdout` is the out-of-sample counterpart: every row predicted with its whole source file (or
build era) left out of the fit, its band sized without any error on that unit's rows.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from advisor.fit.calibration import (BAND_QUANTILES, HOLDOUT_UNITS, Bands, HeldOut, band_kind, bands_from, ceilings,
                                     efficiency_of_case, predict_held_out, predictions)
from advisor.data.errors import AdvisorError
from advisor.data.catalog import Catalog
from advisor.model.efficiency import efficiency_for
from advisor.fit.measurements import Case, Unmapped, load_cases


@dataclass(frozen=True)
class Checked:
    case: Case
    predicted: float
    low: float
    high: float
    ceiling: float

    @property
    def error(self) -> float:
        """predicted / measured − 1 (signed)."""
        return self.predicted / self.case.measured - 1.0

    @property
    def covered(self) -> bool:
        return self.low <= self.case.measured <= self.high


@dataclass(frozen=True)
class Summary:
    label: str
    rows: int
    mdape: float
    p90: float
    bias: float
    coverage: float
    ceiling_mdape: float

    def as_dict(self) -> dict:
        return {"group": self.label, "rows": self.rows, "mdape_pct": round(100 * self.mdape, 1),
                "p90_pct": round(100 * self.p90, 1), "bias_pct": round(100 * self.bias, 1),
                "coverage_pct": round(100 * self.coverage, 1), "roofline_mdape_pct": round(100 * self.ceiling_mdape, 1)}


@dataclass(frozen=True)
class Report:
    checked: list[Checked]
    unmapped: list[Unmapped]
    data: str

    def summary(self, rows: Sequence[Checked], label: str) -> Summary:
        err = np.array([abs(c.error) for c in rows])
        signed = np.array([c.error for c in rows])
        ceil = np.array([abs(c.ceiling / c.case.measured - 1) for c in rows if math.isfinite(c.ceiling)])
        return Summary(label, len(rows), float(np.median(err)), float(np.quantile(err, 0.9)), float(np.median(signed)),
                       float(np.mean([c.covered for c in rows])), float(np.median(ceil)) if ceil.size else math.nan)

    def by(self, metric: str, key) -> list[Summary]:
        groups: dict[str, list[Checked]] = defaultdict(list)
        for c in self.checked:
            if c.case.metric == metric:
                groups[key(c.case)].append(c)
        return [self.summary(rows, label) for label, rows in sorted(groups.items())]

    def metrics(self) -> list[Summary]:
        out = []
        for metric in ("decode", "prefill", "ttft", "e2e"):
            rows = [c for c in self.checked if c.case.metric == metric]
            if rows:
                out.append(self.summary(rows, metric))
        return out

    def worst(self, n: int = 15) -> list[Checked]:
        return sorted(self.checked, key=lambda c: -abs(c.error))[:n]


def check(cat: Catalog, cases: Sequence[Case]) -> list[Checked]:
    """Predict every case with the catalog's profiles and attach its band and ceiling."""
    if not cases:
        return []
    pred = predictions(cases, [efficiency_of_case(cat, c) for c in cases])
    ceil = ceilings(cases)
    out = []
    for c, p, cl in zip(cases, pred, ceil):
        e = efficiency_for(cat.profiles, c.runtime, c.hardware)
        # an end-to-end latency is mostly decode steps: it carries the decode band
        lo, hi = (e.decode_low, e.decode_high) if c.metric in ("decode", "e2e") else (e.prefill_low, e.prefill_high)
        if c.metric in ("ttft", "e2e"):  # times: a faster run is a smaller number
            low, high = p / hi, p / lo
        else:
            low, high = p * lo, min(p * hi, cl) if math.isfinite(cl) else p * hi
        out.append(Checked(c, float(p), float(low), float(high), float(cl)))
    return out


def validate(cat: Catalog, data: str | Path | None = None) -> Report:
    cases, unmapped = load_cases(cat, data)
    checked, bad = [], list(unmapped)
    for c in check(cat, cases):
        if math.isfinite(c.predicted) and c.predicted > 0:
            checked.append(c)
        else:
            bad.append(Unmapped(c.case.row, f"{c.case.hardware.name} · {c.case.model.name}",
                                "the catalog lacks a figure this prediction needs (e.g. a compute peak)"))
    return Report(checked, bad, str(data or "catalog/measured/calibration.csv"))


def family_label(case: Case) -> str:
    return f"{case.hardware.vendor} {case.hardware.family}"


def batch_label(case: Case) -> str:
    """Single-sequence rows apart from batched ones (llama-batched-bench, batch-8 CI runs): the
    issue's goals are stated for each."""
    return "batch 1" if case.workload.batch == 1 else "batch > 1"


@dataclass(frozen=True)
class HoldoutReport:
    """Every mapped row predicted with its whole unit left out, and its band sized as calibrate
    sizes bands but from the held-out errors of the *other* units' rows (so the coverage claimed
    is itself out of sample)."""

    by: str                              # source | era
    held: list[HeldOut]
    checked: list[Checked]               # the same rows as `Checked` (band from the other units)
    seconds: float

    def summary(self, rows: Sequence[Checked], label: str) -> Summary:
        return Report(list(rows), [], "").summary(rows, label)

    def metrics(self) -> list[Summary]:
        return Report(self.checked, [], "").metrics()

    def per_unit(self, metric: str) -> list[Summary]:
        groups: dict[str, list[Checked]] = defaultdict(list)
        for h, c in zip(self.held, self.checked):
            if c.case.metric == metric:
                groups[h.unit].append(c)
        return [self.summary(rows, label) for label, rows in sorted(groups.items())]

    def per_batch(self, metric: str) -> list[Summary]:
        return Report(self.checked, [], "").by(metric, batch_label)

    def per_level(self, metric: str) -> list[Summary]:
        groups: dict[str, list[Checked]] = defaultdict(list)
        for h, c in zip(self.held, self.checked):
            if c.case.metric == metric:
                groups[h.level].append(c)
        return [self.summary(rows, label) for label, rows in sorted(groups.items())]


def _banded(h: HeldOut, band: tuple[float, float]) -> Checked:
    """The held-out prediction with a speed band (low, high), as `check` applies one."""
    lo, hi = band
    p, cl = h.predicted, h.ceiling
    if h.case.metric in ("ttft", "e2e"):
        low, high = p / hi, p / lo
    else:
        low, high = p * lo, min(p * hi, cl) if math.isfinite(cl) else p * hi
    return Checked(h.case, p, float(low), float(high), cl)


def holdout(cat: Catalog, cases: Sequence[Case], by: str = "source",
            quantiles: tuple[float, float] = BAND_QUANTILES) -> HoldoutReport:
    """Leave-one-source-out (or era-out) validation; see `HoldoutReport`."""
    import time

    if by not in HOLDOUT_UNITS:
        raise AdvisorError(f"--holdout must be one of {', '.join(HOLDOUT_UNITS)}, not {by!r}")
    t0 = time.perf_counter()
    # calibrate sizes bands from both schemes' held-out errors; so does this check, leaving out of
    # each unit's bands every error on that unit's rows
    both = {scheme: predict_held_out(cat, cases, scheme) for scheme in HOLDOUT_UNITS}
    held = both[by]
    unit_of = HOLDOUT_UNITS[by]
    checked = []
    bands_without: dict[str, Bands] = {}
    for h in held:
        if h.unit not in bands_without:  # the bands as calibrate would size them without this unit
            others = [o for scheme in both.values() for o in scheme if unit_of(o.case) != h.unit]
            bands_without[h.unit] = bands_from(others, quantiles)
        checked.append(_banded(h, bands_without[h.unit].band_for(band_kind(h.case.metric), h.level)))
    return HoldoutReport(by, held, checked, time.perf_counter() - t0)
