"""Compare the model's predictions with measured rows: the project's stated accuracy.

For every mapped row: prediction with the catalog's calibrated profiles, its band, and the plain
100 %-of-roofline estimate for comparison. Summaries per metric and per source, runtime and
hardware family: rows, median absolute percentage error, 90th percentile, signed bias (median
of predicted/measured − 1) and band coverage.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np

from advisor.fit.calibration import ceilings, efficiency_of_case, fit_profiles, predictions
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


# ---- out of sample: whole sources or build eras left out of the fit --------------------------------

#: How a row is grouped when it is left out: the file it came from, or the runtime build (era) it
#: was measured with. Today's eras are the catalog's runtime builds: llama.cpp-2023 and llama.cpp
#: (with its Vulkan backend beside it); every other runtime is one era of its own.
HOLDOUT_UNITS = {
    "source": lambda c: c.source or "(no file)",
    "era": lambda c: c.runtime.key,
}

#: The profile levels whose held-out errors size one band: a profile fitted to the device or its
#: family, to the vendor, to the whole runtime, borrowed from a sibling build, or none (defaults).
LEVEL_CLASSES = ("device", "vendor", "runtime", "sibling", "none")
#: Where a level has too few held-out errors for its quantiles, the next coarser one's band is used.
MIN_ERRORS_FOR_BAND = 8
COARSER = {"device": "vendor", "vendor": "runtime", "runtime": "none", "sibling": "none", "none": None}


def level_class(level: str) -> str:
    if level.startswith("sibling"):
        return "sibling"
    return {"hardware": "device", "family": "device"}.get(level, level)


def band_kind(metric: str) -> str:
    """Which band a metric carries: end-to-end latency is mostly decode steps, TTFT is prefill."""
    return "decode" if metric in ("decode", "e2e") else "prefill"


@dataclass(frozen=True)
class HeldOut:
    """One row predicted by profiles fitted without its whole source (or era)."""

    case: Case
    unit: str                # the source or era that was left out
    predicted: float
    level: str               # the level of the profile that predicted it (efficiency.select_profile)
    basis: str               # that profile's key, or the runtime's defaults
    ceiling: float

    @property
    def error(self) -> float:
        return self.predicted / self.case.measured - 1.0

    @property
    def log_speed_ratio(self) -> float:
        """ln(measured / predicted) as a speed: > 0 when the run was faster than predicted."""
        r = math.log(self.case.measured / self.predicted)
        return -r if self.case.metric in ("ttft", "e2e") else r


def bands_from(held: Sequence[HeldOut], quantiles: tuple[float, float]) -> dict[tuple[str, str], tuple[float, float]]:
    """(band kind, level class) → (low, high) speed multipliers: the quantiles of held-out
    ln(measured/predicted), falling back to a coarser level where a level has few errors."""
    by: dict[tuple[str, str], list[float]] = defaultdict(list)
    for h in held:
        by[(band_kind(h.case.metric), level_class(h.level))].append(h.log_speed_ratio)
    out: dict[tuple[str, str], tuple[float, float]] = {}
    for kind in ("decode", "prefill"):
        for lc in LEVEL_CLASSES:
            src = lc
            while src is not None and len(by[(kind, src)]) < MIN_ERRORS_FOR_BAND:
                src = COARSER[src]
            pool = by[(kind, src)] if src is not None else [r for (k, _), v in by.items() if k == kind for r in v]
            if len(pool) < 2:
                continue
            lo, hi = np.quantile(pool, quantiles)
            out[(kind, lc)] = (math.exp(min(lo, 0.0)), math.exp(max(hi, 0.0)))
    return out


@dataclass(frozen=True)
class HoldoutReport:
    """Every mapped row predicted with its whole unit left out, and its band sized from the
    held-out errors of the *other* units (so the coverage claimed is itself out of sample)."""

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

    def per_level(self, metric: str) -> list[Summary]:
        groups: dict[str, list[Checked]] = defaultdict(list)
        for h, c in zip(self.held, self.checked):
            if c.case.metric == metric:
                groups[h.level].append(c)
        return [self.summary(rows, label) for label, rows in sorted(groups.items())]


def predict_held_out(cat: Catalog, cases: Sequence[Case], by: str) -> list[HeldOut]:
    """Refit with each unit (source or era) left out entirely and predict its rows with the
    profiles the rest of the data gives, chosen as a prediction chooses them (own profile, else a
    sibling build's, else the runtime's defaults)."""
    unit_of = HOLDOUT_UNITS[by]
    out: list[HeldOut] = []
    for unit in sorted({unit_of(c) for c in cases}):
        train = [c for c in cases if unit_of(c) != unit]
        test = [c for c in cases if unit_of(c) == unit]
        profiles = fit_profiles(cat, train) if train else {}
        effs = [efficiency_for(profiles, c.runtime, c.hardware) for c in test]
        for c, e, p, cl in zip(test, effs, predictions(test, effs), ceilings(test)):
            if math.isfinite(p) and p > 0:
                out.append(HeldOut(c, unit, float(p), e.level, e.basis, float(cl)))
    return out


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
            quantiles: tuple[float, float] = (0.10, 0.90)) -> HoldoutReport:
    """Leave-one-source-out (or era-out) validation; see `HoldoutReport`."""
    import time

    if by not in HOLDOUT_UNITS:
        raise AdvisorError(f"--holdout must be one of {', '.join(HOLDOUT_UNITS)}, not {by!r}")
    t0 = time.perf_counter()
    held = predict_held_out(cat, cases, by)
    checked = []
    bands_without: dict[str, dict] = {}
    for h in held:
        if h.unit not in bands_without:
            bands_without[h.unit] = bands_from([o for o in held if o.unit != h.unit], quantiles)
        key = (band_kind(h.case.metric), level_class(h.level))
        checked.append(_banded(h, bands_without[h.unit].get(key, (1.0, 1.0))))
    return HoldoutReport(by, held, checked, time.perf_counter() - t0)
