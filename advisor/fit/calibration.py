"""Fit runtime efficiency profiles to public measurements, and size their bands honestly.

The model has a few physical parameters per (runtime, hardware group):

- decode: ``1/η_bw`` (spec bandwidth over reached bandwidth), ``τ_layer`` (a fixed cost per
  layer per step: kernel launches and synchronisation, which is why small models reach a lower
  fraction of bandwidth) and, where multi-GPU rows exist, the all-reduce latency;
- prefill: ``1/η_c`` for the linear layers and ``1/η_att`` for the attention products (only
  identifiable where prompts are long or the cache is deep).

Step time is linear in these unknowns, so each fit is a small weighted least-squares problem in
relative error, solved in closed form. Groups are nested — runtime, then vendor, then family — and
each level is pulled towards its parent (ridge prior), so a family with few rows borrows strength
instead of memorising them. A family gets its own profile only with ≥ 2 measured devices.

Bands come from cross-validation, never from in-sample residuals: a family profile's band from
leaving one device out at a time, a vendor profile's from leaving one family out, a runtime
profile's from leaving one vendor (or family) out. The 10th–90th percentiles of ln(measured /
predicted) become the low/high multipliers.
"""

from __future__ import annotations

import hashlib
import math
from collections import defaultdict
from dataclasses import dataclass
from datetime import date
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import yaml

from advisor.data.catalog import Catalog
from advisor.fit.measurements import Case
from advisor.model.devices import tier
from advisor.model.efficiency import IDEAL, Efficiency, efficiency_for
from advisor.model.geometry import geometry
from advisor.model.inputs import inputs_for, stack_inputs
from advisor.model.roofline import evaluate
from advisor.data.specs import Profile, Runtime
from advisor.data.userdata import write_atomic

#: Prior sigmas: how far a group may move from its parent before the prior costs as much as one
#: row predicted 10 % off. Chosen so that the data decides wherever there are a few rows.
PRIOR_WEIGHT = 0.002
SIGMA = {"inv_bw": 0.3, "tau_layer_us": 25.0, "allreduce_us": 150.0, "inv_c": 1.0, "inv_att": 3.0,
         "tau_step_us": 2000.0}
BAND_QUANTILES = (0.10, 0.90)
MIN_BAND = (0.95, 1.05)
MIN_DEVICES_FOR_FAMILY = 2
#: A single device gets its own profile only when its rows span this many models (and rows):
#: then the parameters are pinned by variation across models, not by repeating one number.
MIN_MODELS_FOR_DEVICE = 3
MIN_ROWS_FOR_DEVICE = 12


# ---- evaluating cases with given efficiencies ----------------------------------------------------

def _ideal_terms(r, x) -> dict[str, np.ndarray]:
    """What multiplies each fitted parameter, from the kernel's physical quantities: ideal (100 %)
    times, per-layer and per-pass counts, GPU-to-GPU message counts and transfer times."""
    bw = np.asarray(x.bandwidth_gb_s, float) * 1e9
    peak = np.asarray(x.peak_tflops, float) * 1e12
    return {
        "dec_mem_ideal_s": r.decode_bytes / bw, "dec_comp_ideal_s": r.decode_flops / peak,
        "dec_comm_lat_coeff": r.decode_exchanges, "dec_comm_bw_s": r.decode_transfer_s,
        "pf_lin_ideal_s": r.prefill_linear_flops / peak, "pf_att_ideal_s": r.prefill_attention_flops / peak,
        "pf_mem_ideal_s": r.prefill_bytes / bw, "ubatches": r.micro_batches,
        "pf_comm_lat_coeff": r.prefill_exchanges, "pf_comm_bw_s": r.prefill_transfer_s,
    }


def evaluate_cases(cases: Sequence[Case], effs: Sequence[Efficiency]) -> dict[str, np.ndarray]:
    """Run the performance model on every case with its own efficiencies; arrays in case order:
    the kernel's results plus the terms the fit solves with (`_ideal_terms`)."""
    n = len(cases)
    out: dict[str, np.ndarray] = {}
    by_model: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(cases):
        by_model[c.model.key].append(i)
    for idx in by_model.values():
        x = stack_inputs([inputs_for(cases[i].hardware, cases[i].runtime, cases[i].quant, cases[i].kv, effs[i],
                                     cases[i].gpus, cases[i].runtime.parallelism, cases[i].workload) for i in idx])
        r = evaluate(geometry(cases[idx[0]].model), x)
        values = {name: getattr(r, name) for name in r.names()} | _ideal_terms(r, x)
        for key, v in values.items():
            dest = out.setdefault(key, np.full(n, np.nan))
            dest[idx] = np.broadcast_to(v, (len(idx),))
    return out


def predicted_value(case: Case, r: dict[str, np.ndarray], i: int) -> float:
    """The model's figure for the case's metric, in the case's unit."""
    if case.metric == "decode":
        return float(r["decode_tok_s"][i])
    if case.metric == "prefill":
        return float(r["prefill_tok_s"][i])
    if case.metric == "ttft":
        return float(r["ttft_s"][i] * 1e3)
    # e2e: first token, then output − 1 decode steps
    return float(r["ttft_s"][i] * 1e3 + (case.workload.output_tokens - 1) / r["decode_tok_s"][i] * 1e3)


def predictions(cases: Sequence[Case], effs: Sequence[Efficiency]) -> np.ndarray:
    r = evaluate_cases(cases, effs)
    return np.array([predicted_value(c, r, i) for i, c in enumerate(cases)])


def ceilings(cases: Sequence[Case]) -> np.ndarray:
    """The plain 100 %-of-roofline estimate of every case (what most calculators print)."""
    r = evaluate_cases(cases, [IDEAL] * len(cases))
    out = []
    for i, c in enumerate(cases):
        if c.metric == "decode":
            out.append(r["decode_ceiling_tok_s"][i])
        elif c.metric == "prefill":
            out.append(r["prefill_ceiling_tok_s"][i])
        else:
            out.append(predicted_value(c, r, i))
    return np.array(out, dtype=float)


# ---- the fit -------------------------------------------------------------------------------------

def _solve(A: np.ndarray, rhs: np.ndarray, prior: np.ndarray, sigma: np.ndarray, lower: np.ndarray,
           free: np.ndarray) -> np.ndarray:
    """min ‖A x − rhs‖² + PRIOR_WEIGHT ‖(x − prior)/σ‖² with x ≥ lower; only ``free`` entries move."""
    x = prior.copy()
    active = free.copy()
    for _ in range(len(x) + 1):
        idx = np.flatnonzero(active)
        if idx.size == 0:
            break
        fixed_part = A[:, ~active] @ x[~active]
        w = math.sqrt(PRIOR_WEIGHT)
        M = np.vstack([A[:, idx], np.diag(w / sigma[idx])])
        b = np.concatenate([rhs - fixed_part, w * prior[idx] / sigma[idx]])
        sol, *_ = np.linalg.lstsq(M, b, rcond=None)
        x[idx] = sol
        low = x < lower
        if not (low & active).any():
            break
        x = np.where(low & active, lower, x)
        active = active & ~low
    return x


def _fit_decode(cases: Sequence[Case], parts: dict[str, np.ndarray], rows: np.ndarray, prior: Efficiency) -> Efficiency:
    """Fit 1/η_bw, τ_layer and the all-reduce latency to the decode rows ``rows``.

    End-to-end latency rows count as decode rows: (latency − predicted TTFT) / (output − 1) is
    their time per step, and for short prompts and long outputs it dominates the latency.
    """
    if rows.size == 0:
        return prior

    def step_time(i: int) -> float:
        c = cases[i]
        if c.metric == "decode":
            return 1.0 / c.measured
        steps = max(c.workload.output_tokens - 1, 1)
        return max(c.measured / 1e3 - parts["ttft_s"][i], 0.05 * c.measured / 1e3) / steps

    t = np.array([step_time(i) for i in rows])
    layers = np.array([cases[i].model.layers for i in rows], dtype=float)
    mem = parts["dec_mem_ideal_s"][rows]
    lat_c = parts["dec_comm_lat_coeff"][rows]
    known = parts["dec_comm_bw_s"][rows] + prior.step_overhead_us * 1e-6
    A = np.column_stack([mem, layers * 1e-6, lat_c * 1e-6]) / t[:, None]
    rhs = 1.0 - known / t
    free = np.array([True, True, bool((lat_c > 0).any())])
    # linear in 1/η_bw, τ_layer and the latency: solve for those
    x = _solve(A, rhs, np.array([1 / prior.decode_bw_fraction, prior.layer_overhead_us, prior.allreduce_latency_us]),
               np.array([SIGMA["inv_bw"], SIGMA["tau_layer_us"], SIGMA["allreduce_us"]]),
               np.array([1.0, 0.0, 0.0]), free)
    return prior.replace(decode_bw_fraction=1 / float(x[0]), layer_overhead_us=float(x[1]),
                         allreduce_latency_us=float(x[2]))


def _fit_prefill(cases: Sequence[Case], parts: dict[str, np.ndarray], rows: np.ndarray, p: Efficiency,
                 fit_step: bool = False) -> Efficiency:
    """Fit 1/η_c and 1/η_att to prefill and TTFT rows, decode-side parameters held; with
    ``fit_step`` (a group without decode rows, e.g. TTFT-only data) also the per-step cost."""
    if rows.size == 0:
        return p
    t = np.array([cases[i].workload.prompt_tokens * cases[i].workload.batch / cases[i].measured
                  if cases[i].metric == "prefill" else cases[i].measured / 1e3 for i in rows])
    ub = parts["ubatches"][rows]
    layers = np.array([cases[i].model.layers for i in rows], dtype=float)
    known = (parts["pf_mem_ideal_s"][rows] / p.decode_bw_fraction + ub * layers * p.layer_overhead_us * 1e-6
             + parts["pf_comm_bw_s"][rows] + parts["pf_comm_lat_coeff"][rows] * p.allreduce_latency_us * 1e-6)
    A = np.column_stack([parts["pf_lin_ideal_s"][rows], parts["pf_att_ideal_s"][rows], ub * 1e-6]) / t[:, None]
    rhs = 1.0 - known / t
    ok = np.isfinite(A).all(axis=1) & np.isfinite(rhs)
    if not ok.any():
        return p
    x = _solve(A[ok], rhs[ok], np.array([1 / p.prefill_compute_fraction, 1 / p.attention_compute_fraction,
                                         p.step_overhead_us]),
               np.array([SIGMA["inv_c"], SIGMA["inv_att"], SIGMA["tau_step_us"]]),
               np.array([1.0, 1.0, 0.0]), np.array([True, True, fit_step]))
    return p.replace(prefill_compute_fraction=1 / float(x[0]), attention_compute_fraction=1 / float(x[1]),
                     step_overhead_us=float(x[2]))


def fit_group(cases: Sequence[Case], rows: np.ndarray, prior: Efficiency) -> Efficiency:
    """Fit one group's parameters (decode first, then prefill/TTFT) on the cases ``rows``."""
    if rows.size == 0:
        return prior
    sub = [cases[i] for i in rows]
    parts = evaluate_cases(sub, [prior] * len(sub))
    local = np.arange(len(sub))
    dec = local[[c.metric in ("decode", "e2e") for c in sub]]
    pre = local[[c.metric in ("prefill", "ttft") for c in sub]]
    p = _fit_decode(sub, parts, dec, prior)
    return _fit_prefill(sub, parts, pre, p, fit_step=dec.size == 0)


# ---- the hierarchy ---------------------------------------------------------------------------------

@dataclass
class Group:
    level: str               # runtime | vendor | family | hardware
    runtime: str
    vendor: str
    family: str
    rows: np.ndarray         # indices into the case list
    params: Efficiency | None = None
    band_decode: tuple[float, float] = (0.7, 1.3)
    band_prefill: tuple[float, float] = (0.5, 1.6)
    cv_residuals: dict | None = None

    hardware: str = ""
    tier: str = ""

    @property
    def key(self) -> str:
        """A catalog key: the group's parts joined by '+', e.g. llama.cpp+nvidia+nvidia-ada+consumer."""
        parts = (self.runtime, self.vendor.lower(), self.family, self.tier if self.family else "", self.hardware)
        return "+".join(x for x in parts if x)


def _groups(cases: Sequence[Case]) -> list[Group]:
    """Runtime, vendor and family groups that have rows; families need ≥ 2 measured devices."""
    fit_rows = [i for i, c in enumerate(cases) if c.metric in ("decode", "prefill", "ttft", "e2e")]
    by: dict[tuple, list[int]] = defaultdict(list)
    for i in fit_rows:
        c = cases[i]
        by[(c.runtime.key, "", "", "")].append(i)
        by[(c.runtime.key, c.hardware.vendor, "", "")].append(i)
        by[(c.runtime.key, c.hardware.vendor, c.hardware.family, tier(c.hardware))].append(i)
    groups = []
    for (rt, vendor, family, tr), rows in sorted(by.items()):
        devices = {cases[i].device for i in rows}
        if family and len(devices) < MIN_DEVICES_FOR_FAMILY:
            continue
        level = "family" if family else ("vendor" if vendor else "runtime")
        groups.append(Group(level, rt, vendor, family, np.array(rows), tier=tr))
    per_device: dict[tuple, list[int]] = defaultdict(list)
    for i in fit_rows:
        c = cases[i]
        per_device[(c.runtime.key, c.hardware.vendor, c.hardware.family, tier(c.hardware), c.device)].append(i)
    for (rt, vendor, family, tr, dev), rows in sorted(per_device.items()):
        if len(rows) >= MIN_ROWS_FOR_DEVICE and len({cases[i].model.key for i in rows}) >= MIN_MODELS_FOR_DEVICE:
            groups.append(Group("hardware", rt, vendor, family, np.array(rows), hardware=dev, tier=tr))
    return groups


def _parent(groups: list[Group], g: Group) -> Group | None:
    if g.level == "hardware":
        fam = [o for o in groups if o.level == "family"
               and (o.runtime, o.vendor, o.family, o.tier) == (g.runtime, g.vendor, g.family, g.tier)]
        if fam:
            return fam[0]
        return next((o for o in groups if o.level == "vendor" and (o.runtime, o.vendor) == (g.runtime, g.vendor)), None)
    for other in groups:
        if g.level == "family" and other.level == "vendor" and (other.runtime, other.vendor) == (g.runtime, g.vendor):
            return other
        if g.level == "vendor" and other.level == "runtime" and other.runtime == g.runtime:
            return other
    return None


def _fit_all(cases: Sequence[Case], groups: list[Group], runtimes: dict[str, Runtime],
             exclude: set[int] | None = None) -> dict[str, Efficiency]:
    """Fit every group top-down, optionally without some rows; returns params by group key."""
    exclude = exclude or set()
    fitted: dict[str, Efficiency] = {}
    for level in ("runtime", "vendor", "family", "hardware"):
        for g in groups:
            if g.level != level:
                continue
            parent = _parent(groups, g)
            prior = fitted.get(parent.key) if parent else Efficiency.of_runtime(runtimes[g.runtime])
            rows = np.array([i for i in g.rows if i not in exclude], dtype=int)
            fitted[g.key] = fit_group(cases, rows, prior) if rows.size else prior
    return fitted


def _applicable(groups: list[Group], case: Case) -> Group | None:
    """The most specific group whose profile a prediction for ``case`` would use."""
    best = None
    rank = {"hardware": -1, "family": 0, "vendor": 1, "runtime": 2}
    for g in groups:
        if g.runtime != case.runtime.key:
            continue
        if g.level == "hardware" and g.hardware != case.device:
            continue
        if g.level == "family" and (g.family, g.tier) != (case.hardware.family, tier(case.hardware)):
            continue
        if g.level == "vendor" and g.vendor != case.hardware.vendor:
            continue
        if best is None or rank[g.level] < rank[best.level]:
            best = g
    return best


def _band(residuals: list[float], fallback: tuple[float, float], widen: float = 1.0) -> tuple[float, float]:
    """Multipliers from the 10th/90th percentile of ln(measured/predicted); wider with few rows."""
    if len(residuals) < 4:
        lo, hi = fallback
        return (lo ** widen, hi ** widen)
    lo, hi = np.quantile(residuals, BAND_QUANTILES)
    small = max(1.0, math.sqrt(8 / len(residuals)))  # fewer than 8 residuals: widen
    lo, hi = lo * small * widen, hi * small * widen
    return (min(math.exp(lo), MIN_BAND[0]), max(math.exp(hi), MIN_BAND[1]))


def _cv_residuals(cases: Sequence[Case], groups: list[Group], runtimes: dict[str, Runtime], g: Group) -> dict:
    """ln(measured/predicted) for held-out rows: devices (family), families (vendor), vendors (runtime)."""
    rows = g.rows
    if g.level == "hardware":
        unit = lambda c: c.model.key  # noqa: E731  - leave one model out
    elif g.level == "family":
        unit = lambda c: c.device  # noqa: E731
    elif g.level == "vendor":
        unit = lambda c: c.hardware.family  # noqa: E731
    else:
        vendors = {cases[i].hardware.vendor for i in rows}
        unit = (lambda c: c.hardware.vendor) if len(vendors) > 1 else (lambda c: c.hardware.family)  # noqa: E731
    units = sorted({unit(cases[i]) for i in rows})
    res: dict[str, list[float]] = {"decode": [], "prefill": []}
    if len(units) < 2:
        return res
    for u in units:
        held = [i for i in rows if unit(cases[i]) == u]
        fitted = _fit_all(cases, groups, runtimes, exclude=set(held))
        # the held-out unit is predicted by this group's profile refitted without it
        params = [fitted[g.key]] * len(held)
        pred = predictions([cases[i] for i in held], params)
        for i, p in zip(held, pred):
            c = cases[i]
            if not (math.isfinite(p) and p > 0):
                continue
            r = math.log(c.measured / p)
            if c.metric in ("ttft", "e2e"):  # a time: faster is smaller
                r = -r
            res["decode" if c.metric in ("decode", "e2e") else "prefill"].append(r)
    return res


@dataclass
class CalibrationResult:
    profiles: list[Profile]
    groups: list[Group]
    rows_used: int


def calibrate(cat: Catalog, cases: Sequence[Case]) -> CalibrationResult:
    """Fit profiles for every runtime/vendor/family group with data, with cross-validated bands."""
    runtimes = dict(cat.runtimes)
    groups = _groups(cases)
    fitted = _fit_all(cases, groups, runtimes)
    for g in groups:
        g.params = fitted[g.key]
    # bands, parents first so that children can fall back to them
    for level in ("runtime", "vendor", "family", "hardware"):
        for g in groups:
            if g.level != level:
                continue
            parent = _parent(groups, g)
            fb_d = parent.band_decode if parent else (0.7, 1.3)
            fb_p = parent.band_prefill if parent else (0.5, 1.6)
            res = _cv_residuals(cases, groups, runtimes, g)
            g.cv_residuals = res
            g.band_decode = _band(res["decode"], fb_d)
            g.band_prefill = _band(res["prefill"], fb_p)
    profiles = [_profile(cat, cases, g, g.params, g.band_decode, g.band_prefill) for g in groups]
    return CalibrationResult(profiles, groups, sum(len(g.rows) for g in groups if g.level == "runtime"))


def _profile(cat: Catalog, cases: Sequence[Case], g: Group, p: Efficiency, band_decode: tuple[float, float],
             band_prefill: tuple[float, float]) -> Profile:
    sub = [cases[i] for i in g.rows]
    devices = sorted({c.hardware.name for c in sub})
    sources = sorted({c.source for c in sub})
    return Profile(
        key=g.key, runtime=g.runtime, formats_of=cat.runtimes[g.runtime].format_family,
        vendor=g.vendor, family=g.family,
        tier=g.tier if g.level == "family" else "", hardware=g.hardware,
        decode_bw_fraction=round(p.decode_bw_fraction, 4), layer_overhead_us=round(p.layer_overhead_us, 2),
        step_overhead_us=round(p.step_overhead_us, 1), prefill_compute_fraction=round(p.prefill_compute_fraction, 4),
        attention_compute_fraction=round(p.attention_compute_fraction, 4),
        allreduce_latency_us=round(p.allreduce_latency_us, 1),
        decode_low=round(band_decode[0], 3), decode_high=round(band_decode[1], 3),
        prefill_low=round(band_prefill[0], 3), prefill_high=round(band_prefill[1], 3),
        decode_rows=sum(c.metric in ("decode", "e2e") for c in sub),
        prefill_rows=sum(c.metric in ("prefill", "ttft") for c in sub),
        source=f"fitted by advisor calibrate to {len(sub)} rows of catalog/measured/calibration.csv ({', '.join(sources)})",
        notes=f"devices: {', '.join(devices[:12])}{' …' if len(devices) > 12 else ''}",
    )


def fit_profiles(cat: Catalog, cases: Sequence[Case]) -> dict[str, Profile]:
    """Profiles fitted to ``cases`` without bands (all 1): what a held-out validation refits with
    part of the data left out. Group membership (≥ 2 devices for a family …) follows ``cases``."""
    groups = _groups(cases)
    fitted = _fit_all(cases, groups, dict(cat.runtimes))
    return {g.key: _profile(cat, cases, g, fitted[g.key], (1.0, 1.0), (1.0, 1.0)) for g in groups}


def profiles_yaml(result: CalibrationResult, data_path: Path) -> str:
    digest = hashlib.sha256(Path(data_path).read_bytes()).hexdigest()[:16]
    header = (
        "# Calibrated efficiency profiles: GENERATED by `advisor calibrate`, do not edit by hand.\n"
        f"# Data: {Path(data_path).name} (sha256 {digest}…), {result.rows_used} rows fitted, {date.today().isoformat()}.\n"
        "# decode_bw_fraction = fraction of spec bandwidth reached by decode; layer_overhead_us = fixed cost per layer\n"
        "# per forward pass; prefill_compute_fraction / attention_compute_fraction = fractions of the dense peak;\n"
        "# allreduce_latency_us = per all-reduce (multi-GPU); bands = 10th-90th percentile of cross-validated\n"
        "# ln(measured/predicted) (whole devices, families or vendors held out). See advisor/calibration.py.\n"
    )
    entries = []
    for p in result.profiles:
        d = {k: getattr(p, k) for k in ("key", "runtime", "formats_of", "vendor", "family", "tier", "hardware",
                                         "decode_bw_fraction", "layer_overhead_us",
                                         "step_overhead_us", "prefill_compute_fraction", "attention_compute_fraction",
                                         "allreduce_latency_us", "decode_low", "decode_high", "prefill_low",
                                         "prefill_high", "decode_rows", "prefill_rows", "source", "notes")}
        entries.append({k: v for k, v in d.items() if v not in ("", None)})
    return header + yaml.safe_dump({"profiles": entries}, sort_keys=False, allow_unicode=True, width=120)


def write_profiles(result: CalibrationResult, data_path: Path, out: Path) -> Path:
    write_atomic(out, profiles_yaml(result, data_path))
    return out


def efficiency_of_case(cat: Catalog, case: Case) -> Efficiency:
    """The efficiencies a prediction for ``case`` uses with the catalog's current profiles."""
    return efficiency_for(cat.profiles, case.runtime, case.hardware)


def iter_levels(groups: Iterable[Group]):
    order = {"runtime": 0, "vendor": 1, "family": 2, "hardware": 3}
    return sorted(groups, key=lambda g: (g.runtime, order[g.level], g.key))


def held_out_errors(cat: Catalog, cases: Sequence[Case]) -> dict[str, list[float]]:
    """predicted/measured − 1 for every row when its whole device was left out of the fit.

    This is the honest figure for hardware the calibration has not seen: each device is
    predicted by the profile its family (or vendor, or runtime) gets from the other devices.
    """
    runtimes = dict(cat.runtimes)
    groups = [g for g in _groups(cases) if g.level != "hardware"]
    errors: dict[str, list[float]] = defaultdict(list)
    devices = sorted({c.device for c in cases})
    for dev in devices:
        held = [i for i, c in enumerate(cases) if c.device == dev]
        fitted = _fit_all(cases, groups, runtimes, exclude=set(held))
        params = []
        for i in held:
            c = cases[i]
            usable = [g for g in groups if g.runtime == c.runtime.key
                      and (g.level != "family" or any(cases[j].device != dev for j in g.rows))]
            g = _applicable(usable, c)
            params.append(fitted[g.key] if g else Efficiency.of_runtime(c.runtime))
        for i, p in zip(held, predictions([cases[i] for i in held], params)):
            if math.isfinite(p) and p > 0:
                errors[cases[i].metric].append(p / cases[i].measured - 1)
    return errors
