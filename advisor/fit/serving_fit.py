"""The serving terms the calibration rows cannot see, fitted on servers' own measurements
(`catalog/measured/serving.csv`, read by `advisor.fit.serving_cases`).

A prompt pass costs more than a decode step of the same weights beyond its FLOPs: vLLM and SGLang
replay decode steps from CUDA graphs but run prompt passes eagerly, each layer's kernels launched
from the host. One request alone on a server shows it plainly: its TTFT is the request set-up, one
prompt pass and that pass's launches (so do a few clients, at most `LIGHT_LOAD`, whose short
prompts rarely meet: the solver's small wait for them is in the prediction the term is fitted
against). A dense layer with plain attention is a handful of fused kernels; an MoE layer a dozen more (routing, top-k, token permutation, the grouped products, the
un-permutation, some with host synchronisation), and MLA and linear-attention layers more again
(latent down- and up-projections, norms, RoPE on a split head, the state update). So the fit has
one cost per MoE layer and one per MLA / linear-attention layer (`Geometry.eager_layers`):

    TTFT(one user) = predicted TTFT without the term + chunks × (MoE layers × a + complex layers × c)

fitted by non-negative least squares on the relative error, per runtime, each source weighted
once (1/√rows). A runtime whose rows have no complex layers takes c in the ratio c/a of all
runtimes pooled; one with rows from fewer than `MIN_SOURCES` sources takes the pooled fit: its
engine also runs prompt passes outside the captured graphs, and one source is one machine and one
build. (vLLM's own terms, from GPUStack's 4-client runs, are a third of SGLang's per MoE layer and
three fifths per MLA layer: its fused MoE and MLA prefill paths launch fewer kernels.) Rows of models with neither kind of layer say nothing about the terms
and are left out. The values go into `catalog/runtimes.yaml` (`prefill_moe_layer_us`,
`prefill_complex_layer_us`) with the date of the data; `benchmarks/serving.py --fit` prints them
and the error with each source left out of the fit.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Sequence

import numpy as np

from advisor.fit.serving_cases import ServingCase
from advisor.model.geometry import geometry
from advisor.model.serving import serve

#: runtimes whose prompt passes run eagerly beside graph-captured decode steps
EAGER_PROMPT_RUNTIMES = ("vllm", "sglang")
#: the key of the fit over every runtime's rows together
POOLED = "all runtimes"
#: sources a runtime needs for terms of its own
MIN_SOURCES = 3
#: the most clients whose TTFT still shows the floor: a few short prompts rarely meet (GPUStack's
#: vLLM runs start at 4 clients; one client is the rest)
LIGHT_LOAD = 4


@dataclass(frozen=True)
class EagerTerms:
    """µs per MoE layer and per MLA / linear-attention layer of a prompt pass, per runtime."""

    moe_us: float
    complex_us: float
    rows: int
    sources: int


def layer_counts(model) -> tuple[int, int]:
    """(MoE layers with plain attention, MLA or linear-attention layers)."""
    return geometry(model).eager_layers


def floor_cases(cases: Sequence[ServingCase]) -> list[ServingCase]:
    """One user alone on the server, or at most `LIGHT_LOAD`: TTFT at its median where the source
    gives it, else its mean."""
    lone = [c for c in cases if c.metric == "ttft" and c.load.kind == "closed" and c.load.concurrency <= LIGHT_LOAD
            and c.stat in ("p50", "mean") and c.cfg.runtime.key in EAGER_PROMPT_RUNTIMES]
    with_median = {(c.source, c.cfg, c.load) for c in lone if c.stat == "p50"}
    return [c for c in lone if c.stat == "p50" or (c.source, c.cfg, c.load) not in with_median]


def without_terms(cfg):
    return cfg.replace(runtime=replace(cfg.runtime, prefill_moe_layer_us=0.0, prefill_complex_layer_us=0.0))


def _design(cat, cases: Sequence[ServingCase]):
    """Per case: (runtime, source, measured ms, predicted ms without the term, MoE layers, complex layers) with
    the layer counts multiplied by the prompt's chunks (each chunk is a pass)."""
    out = []
    for c in cases:
        rep = serve(cat, without_terms(c.cfg), c.load)
        if not rep.fits:
            continue
        pred = rep.ttft_p50_ms if c.stat == "p50" else rep.ttft_ms
        moe, cplx = layer_counts(c.cfg.model)
        if moe + cplx == 0:
            continue
        chunks = max(math.ceil(c.load.new_prompt_tokens / max(rep.chunk_tokens - 1, 1)), 1)
        out.append((c.cfg.runtime.key, c.source, c.value, pred, chunks * moe, chunks * cplx))
    return out


def _nnls2(A: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Non-negative least squares in two unknowns: the unconstrained solution, else the better of
    the two one-variable fits with the other at zero."""
    x, *_ = np.linalg.lstsq(A, b, rcond=None)
    if np.all(x >= 0):
        return x
    best, best_err = np.zeros(2), float(np.sum(b * b))
    for j in (0, 1):
        col = A[:, j]
        denom = float(col @ col)
        if denom <= 0:
            continue
        v = max(float(col @ b) / denom, 0.0)
        trial = np.zeros(2)
        trial[j] = v
        err = float(np.sum((A @ trial - b) ** 2))
        if err < best_err:
            best, best_err = trial, err
    return best


def fit_from_design(design) -> dict[str, EagerTerms]:
    """The terms per runtime from `_design` rows (see the module's docstring)."""
    def solve(rows, ratio=None):
        counts = defaultdict(int)
        for r in rows:
            counts[r[1]] += 1
        w = np.array([1.0 / math.sqrt(counts[r[1]]) for r in rows])
        meas = np.array([r[2] for r in rows])
        pred = np.array([r[3] for r in rows])
        moe = np.array([r[4] for r in rows], float) * 1e-3 / meas   # µs → ms, relative to the measurement
        cplx = np.array([r[5] for r in rows], float) * 1e-3 / meas
        b = (1.0 - pred / meas) * w
        if ratio is not None:  # one unknown: a, with c = ratio · a
            col = (moe + ratio * cplx) * w
            a = max(float(col @ b) / float(col @ col), 0.0) if float(col @ col) > 0 else 0.0
            return np.array([a, ratio * a]), len(counts)
        return _nnls2(np.column_stack([moe * w, cplx * w]), b), len(counts)

    pooled, n_pooled = solve(design) if design else (np.zeros(2), 0)
    ratio = float(pooled[1] / pooled[0]) if pooled[0] > 0 else 0.0
    out = {POOLED: EagerTerms(round(float(pooled[0]), 1), round(float(pooled[1]), 1), len(design), n_pooled)}
    by_rt = defaultdict(list)
    for r in design:
        by_rt[r[0]].append(r)
    for rt, rows in by_rt.items():
        has_complex = any(r[5] > 0 for r in rows) and any(r[4] > 0 for r in rows)
        x, n_src = solve(rows, None if has_complex else ratio)
        if n_src < MIN_SOURCES:
            continue
        out[rt] = EagerTerms(round(float(x[0]), 1), round(float(x[1]), 1), len(rows), n_src)
    return out


def fit_eager_terms(cat, cases: Sequence[ServingCase], leave_out: str | None = None) -> dict[str, EagerTerms]:
    """The per-runtime terms from the lone-user TTFT rows (without source ``leave_out``)."""
    return fit_from_design(_design(cat, [c for c in floor_cases(cases) if c.source != leave_out]))


def with_terms(cfg, terms: dict[str, EagerTerms]):
    """``cfg`` with its runtime's terms replaced by ``terms`` (a runtime not in them: none)."""
    t = terms.get(cfg.runtime.key, terms.get(POOLED) if cfg.runtime.key in EAGER_PROMPT_RUNTIMES else None)
    return cfg.replace(runtime=replace(cfg.runtime, prefill_moe_layer_us=t.moe_us if t else 0.0,
                                       prefill_complex_layer_us=t.complex_us if t else 0.0))


# --- how far past `serve`'s band edges servers are measured --------------------------------------

#: the share of held-out figures each widened edge leaves outside it: a tenth below the band and a
#: tenth above, so that it holds about 80 % of what servers measure (the bands aim at 70-90 %)
BAND_TAIL_SHARE = 0.10
#: the figures and sources a (load, metric) needs for a widening of its own
MIN_BAND_ROWS = 30
MIN_BAND_SOURCES = 3
#: a figure's metric → the band it is a figure of (a run's throughput, printed three ways, is one)
BAND_METRIC = {"ttft": "ttft", "itl": "itl", "throughput": "throughput", "total_throughput": "throughput",
               "request_rate": "throughput"}


@dataclass(frozen=True)
class BandFigure:
    """One measured figure against the band `serve` printed for it (the band before any widening)."""

    source: str
    mode: str            # advisor.data.specs.SERVING_MODES
    metric: str          # a ServingCase metric
    measured: float
    low: float
    high: float


@dataclass(frozen=True)
class Widening:
    below: float
    above: float
    rows: int
    sources: int


def _tail(ratios: list[float]) -> float:
    """The factor past which `BAND_TAIL_SHARE` of ``ratios`` (each ≥ 1 where the figure is outside)
    still lie: 1 where fewer than that are outside at all."""
    q = float(np.quantile(np.asarray(ratios, float), 1.0 - BAND_TAIL_SHARE))
    return max(1.0, math.ceil(q * 1000 - 1e-6) / 1000)   # three decimals, rounded outwards


def band_widening(figures: Sequence[BandFigure], leave_out: str | None = None) -> dict[tuple[str, str], Widening]:
    """{(mode, band metric): Widening} from ``figures`` (without source ``leave_out``): per load and
    metric, the factor that leaves `BAND_TAIL_SHARE` of the figures below the low edge divided by it,
    and the one that leaves as many above the high edge times it. A (load, metric) with fewer than
    `MIN_BAND_ROWS` figures or `MIN_BAND_SOURCES` sources gets none."""
    groups: dict[tuple[str, str], list[BandFigure]] = defaultdict(list)
    for f in figures:
        metric = BAND_METRIC.get(f.metric)
        lo, hi = min(f.low, f.high), max(f.low, f.high)
        if metric and f.source != leave_out and f.measured > 0 and lo > 0 and math.isfinite(hi):
            groups[(f.mode, metric)].append(replace(f, low=lo, high=hi))
    out = {}
    for key, fs in sorted(groups.items()):
        n_src = len({f.source for f in fs})
        if len(fs) < MIN_BAND_ROWS or n_src < MIN_BAND_SOURCES:
            continue
        out[key] = Widening(_tail([f.low / f.measured for f in fs]), _tail([f.measured / f.high for f in fs]),
                            len(fs), n_src)
    return out


def serving_bands(widening: dict[tuple[str, str], Widening], basis: str) -> dict:
    """The catalog's serving-band entries ({key: `advisor.data.specs.ServingBand`}) for ``widening``;
    ``basis`` says what the figures were."""
    from advisor.data.specs import ServingBand

    return {f"{mode}-{metric}": ServingBand(
        key=f"{mode}-{metric}", mode=mode, metric=metric, below=w.below, above=w.above, rows=w.rows,
        sources=w.sources, source=f"{basis}: {w.rows} figures from {w.sources} sources, each predicted with its "
                                  f"source left out of every fit")
        for (mode, metric), w in sorted(widening.items())}


def serving_bands_yaml(widening: dict[tuple[str, str], Widening], basis: str) -> str:
    """`catalog/serving_bands.yaml` for ``widening`` (`serving_bands`)."""
    import yaml

    header = ("# How far past `advisor serve`'s band edges servers were measured: GENERATED by\n"
              "# `python benchmarks/serving.py --write-bands`, do not edit by hand (refit after a recalibration).\n"
              "# A band is the load solved at the efficiency profile's edges; it leaves out the scheduling model's\n"
              "# own error, so each edge is widened by the factor that leaves a tenth of the held-out figures past\n"
              "# it (advisor.fit.serving_fit.band_widening; advisor.model.serving.widen_band applies it).\n")
    fields = ("key", "mode", "metric", "below", "above", "rows", "sources", "source")
    entries = [{f: getattr(b, f) for f in fields} for b in serving_bands(widening, basis).values()]
    return header + yaml.safe_dump({"serving_bands": entries}, sort_keys=False, allow_unicode=True, width=120)
