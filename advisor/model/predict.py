"""Predictions for one configuration: the scalar `Prediction`, curves along one workload axis,
and the roofline's operating points — all from one call of the vectorised kernel.

`predict` evaluates a single `Config`; `curve` varies batch, prompt, depth or output over an
array in the same call (a chart's worth of points in well under a millisecond); `roofline` places
prefill, decode and each operator class of the decode step against the device's roofs.
"""

from __future__ import annotations

import dataclasses

import math
from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from advisor.data.errors import AdvisorError
from advisor.model.config import Config
from advisor.model.efficiency import Efficiency, efficiency_for, evidence, widened
from advisor.model.geometry import geometry, weight_bits
from advisor.model.ceilings import ceiling_note, ceiling_tok_s, config_ceiling
from advisor.model.inputs import compute_peak, inputs_for, linear_flops_s
from advisor.model.notes import prediction_notes, unpack_note
from advisor.model.roofline import MAX_BATCH, MAX_CONTEXT_TOKENS, Result, evaluate
from advisor.data.specs import COMPUTE_DTYPES

if TYPE_CHECKING:
    from advisor.data.catalog import Catalog

CURVE_AXES = ("batch", "prompt", "depth", "output")
GB = 1e9


@dataclass(frozen=True)
class Prediction:
    """Everything predicted for one configuration. Sizes in GB (1e9 bytes) totalled over GPUs
    unless the name says per GPU; speeds in tokens/s; times in ms."""

    hardware: str
    model: str
    quant: str
    kv_dtype: str
    runtime: str
    gpus: int
    parallelism: str
    batch: int
    prompt_tokens: int
    output_tokens: int
    depth_tokens: int
    # memory plan
    weights_gb: float
    kv_gb: float
    workspace_gb: float
    overhead_gb: float
    total_gb: float
    usable_gb: float
    per_gpu_total_gb: float
    per_gpu_usable_gb: float
    fits: bool
    shortfall_gb: float
    max_batch: int
    max_context: int
    kv_bytes_per_token: float
    # prefill
    ttft_ms: float
    ttft_low_ms: float
    ttft_high_ms: float
    prefill_tok_s: float
    prefill_low_tok_s: float
    prefill_high_tok_s: float
    prefill_ceiling_tok_s: float
    prefill_bound: str
    # decode
    decode_tok_s: float
    decode_low_tok_s: float
    decode_high_tok_s: float
    decode_ceiling_tok_s: float
    throughput_tok_s: float
    bound: str
    knee_batch: float
    # roofline coordinates of the decode step (per GPU): bytes, FLOPs, intensity
    decode_bytes_per_step: float
    decode_flops_per_step: float
    bandwidth_gb_s: float
    peak_tflops: float
    compute_dtype: str
    efficiency_basis: str
    calibrated: bool
    notes: tuple[str, ...] = field(default=())
    #: how much measured data backs it: measured | extrapolated | uncalibrated (`efficiency.evidence`)
    evidence: str = ""
    #: the prompt pass's time over its pipeline stages' work one after another (`roofline.pipeline_share`):
    #: 1 without stages, or where they cannot overlap
    prefill_pipeline_share: float = 1.0
    #: of a decode step: the routed experts' products that their grouped kernels add to their reads
    #: (past each touched expert's first token), seconds; 0 for a dense model or one sequence
    decode_expert_products_s: float = 0.0
    decode_expert_products_flops: float = 0.0   # those products' FLOPs, per GPU

    @property
    def arithmetic_intensity(self) -> float:
        """Decode FLOPs per byte moved (the x coordinate on a roofline chart)."""
        return self.decode_flops_per_step / self.decode_bytes_per_step if self.decode_bytes_per_step else math.nan

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["notes"] = list(self.notes)
        out["arithmetic_intensity"] = self.arithmetic_intensity
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in out.items()}



def ceiling_at(cfg: Config, **workload_arrays):
    """The vendor's published maximum that bounds ``cfg`` (`advisor.model.ceilings`) at the lengths of
    ``workload_arrays`` where they are single numbers (a serving load's), else the configuration's."""
    w = cfg.workload
    lengths = {}
    for name, field in (("prompt", "prompt_tokens"), ("output", "output_tokens"), ("depth", "depth_tokens")):
        v = workload_arrays.get(name)
        lengths[field] = int(v) if v is not None and np.ndim(v) == 0 else getattr(w, field)
    if lengths != {f: getattr(w, f) for f in lengths}:
        cfg = cfg.replace(workload=dataclasses.replace(w, **lengths))
    return config_ceiling(cfg)


def evaluate_config(cfg: Config, eff: Efficiency, **workload_arrays) -> Result:
    """The kernel for one configuration; ``workload_arrays`` (batch=, prompt=, …) replace the
    workload's scalars with arrays to trace a curve."""
    x = inputs_for(cfg.hardware, cfg.runtime, cfg.quant, cfg.kv_dtype, eff, cfg.gpus, cfg.split, cfg.workload,
                   cfg.layout, cfg.network or None, ceiling_tok_s(ceiling_at(cfg, **workload_arrays), cfg.gpus))
    if workload_arrays:
        x = x.replace(**workload_arrays)
    return evaluate(geometry(cfg.model), x)


def predict(cat: "Catalog | None", cfg: Config, check_context: bool = True, profiles=None) -> Prediction:
    """Predict one configuration. Raises `AdvisorError` for impossible input, never for "does not fit".

    ``profiles``: efficiency profiles to use instead of the catalog's (``cat`` may then be None).
    """
    cfg.check(check_context)
    profiles = cat.profiles if profiles is None and cat is not None else profiles
    backing = evidence(profiles, cfg.runtime, cfg.hardware, cfg.quant, cat.quants if cat is not None else None)
    eff = widened(efficiency_for(profiles, cfg.runtime, cfg.hardware), backing)
    r = evaluate_config(cfg, eff)
    return _to_prediction(r, cfg, eff, backing)


def predict_entries(hw, model, quant, runtime, workload, kv, gpus: int = 1, profiles=None, parallelism: str = "",
                    check_context: bool = True) -> Prediction:
    """`predict` for callers that hold catalog entries rather than a `Config` (tests, benchmarks)."""
    return predict(None, Config(hw, model, quant, kv, runtime, gpus, parallelism or "", workload), check_context,
                   profiles=profiles)


#: the result fields a `Prediction` is made of
_PREDICTION_INPUTS = ("weights_bytes", "weights_gpu_bytes", "kv_gpu_bytes", "workspace_gpu_bytes", "overhead_gpu_bytes",
                      "usable_gpu_bytes", "fits", "kv_budget_gpu_bytes", "max_batch", "max_context", "ttft_s",
                      "ttft_low_s", "ttft_high_s", "prefill_tok_s", "prefill_low_tok_s", "prefill_high_tok_s",
                      "prefill_ceiling_tok_s", "prefill_compute_share", "decode_tok_s", "decode_low_tok_s",
                      "decode_high_tok_s", "decode_ceiling_tok_s", "throughput_tok_s", "decode_compute_s",
                      "decode_memory_s", "knee_batch", "decode_bytes", "decode_flops", "prefill_pipeline_share",
                      "decode_expert_products_s", "decode_expert_products_flops")


def _to_prediction(r: Result, cfg: Config, eff: Efficiency, backing: str = "") -> Prediction:
    v = _first_values(r, _PREDICTION_INPUTS)
    hw, w, gpus = cfg.hardware, cfg.workload, cfg.gpus
    peak, used_dtype, wanted_dtype = compute_peak(hw, cfg.runtime, cfg.quant)
    weights = v["weights_bytes"] / GB
    per_gpu_total = (v["weights_gpu_bytes"] + v["kv_gpu_bytes"] + v["workspace_gpu_bytes"] + v["overhead_gpu_bytes"]) / GB
    per_gpu_usable = v["usable_gpu_bytes"] / GB
    fits = bool(v["fits"])
    shortfall = max(0.0, per_gpu_total - per_gpu_usable) * gpus if not fits else 0.0
    kv_total = v["kv_gpu_bytes"] * gpus / GB
    ws = v["workspace_gpu_bytes"] * gpus / GB
    over = v["overhead_gpu_bytes"] * gpus / GB
    pre = v["prefill_tok_s"]
    split = cfg.split
    notes = prediction_notes(cfg, eff, evidence=backing, fits=fits, weights_fit=v["kv_budget_gpu_bytes"] >= 0,
                             per_gpu_total_gb=per_gpu_total, per_gpu_usable_gb=per_gpu_usable, shortfall_gb=shortfall,
                             kv_gpu_gb=v["kv_gpu_bytes"] / GB, kv_budget_gpu_gb=v["kv_budget_gpu_bytes"] / GB,
                             peak=peak, used_dtype=used_dtype, wanted_dtype=wanted_dtype,
                             **_tier_gb(r))
    unpack = unpack_note(cfg, used_dtype, v["decode_compute_s"], v["decode_memory_s"])
    if unpack:
        notes.append(unpack)
    row = config_ceiling(cfg)
    if row is not None and w.batch * v["decode_tok_s"] >= 0.999 * ceiling_tok_s(row, gpus):
        notes.append(ceiling_note(row, hw))   # the vendor's figure, not the roofline, set the speed
    return Prediction(
        hardware=hw.name, model=cfg.model.name, quant=cfg.quant.name, kv_dtype=cfg.kv_dtype.name,
        runtime=cfg.runtime.name, gpus=gpus,
        parallelism=(cfg.layout.text() if cfg.layout is not None and split == "tp" else
                     "tensor parallel" if split == "tp" else ("layer split (pipeline)" if gpus > 1 else "single device")),
        batch=w.batch, prompt_tokens=w.prompt_tokens, output_tokens=w.output_tokens, depth_tokens=w.depth_tokens,
        weights_gb=weights, kv_gb=kv_total, workspace_gb=ws, overhead_gb=over,
        total_gb=weights + kv_total + ws + over, usable_gb=per_gpu_usable * gpus,
        per_gpu_total_gb=per_gpu_total, per_gpu_usable_gb=per_gpu_usable, fits=fits, shortfall_gb=shortfall,
        max_batch=int(v["max_batch"]), max_context=int(v["max_context"]),
        kv_bytes_per_token=geometry(cfg.model).kv_bytes_per_token(cfg.kv_dtype.bits),
        ttft_ms=v["ttft_s"] * 1e3, ttft_low_ms=v["ttft_low_s"] * 1e3, ttft_high_ms=v["ttft_high_s"] * 1e3,
        prefill_tok_s=pre, prefill_low_tok_s=v["prefill_low_tok_s"], prefill_high_tok_s=v["prefill_high_tok_s"],
        prefill_ceiling_tok_s=v["prefill_ceiling_tok_s"],
        prefill_bound=("compute" if v["prefill_compute_share"] >= 0.5 else "memory") if math.isfinite(pre) else "none",
        decode_tok_s=v["decode_tok_s"], decode_low_tok_s=v["decode_low_tok_s"], decode_high_tok_s=v["decode_high_tok_s"],
        decode_ceiling_tok_s=v["decode_ceiling_tok_s"], throughput_tok_s=v["throughput_tok_s"],
        bound="compute" if v["decode_compute_s"] > v["decode_memory_s"] else "memory",
        knee_batch=v["knee_batch"], decode_bytes_per_step=v["decode_bytes"], decode_flops_per_step=v["decode_flops"],
        bandwidth_gb_s=hw.bandwidth_gb_s, peak_tflops=peak, compute_dtype=used_dtype,
        efficiency_basis=eff.basis, calibrated=eff.calibrated, notes=tuple(notes), evidence=backing,
        prefill_pipeline_share=v["prefill_pipeline_share"], decode_expert_products_s=v["decode_expert_products_s"],
        decode_expert_products_flops=v["decode_expert_products_flops"],
    )


def _tier_gb(r: Result) -> dict[str, float]:
    """The bytes a machine with memory tiers keeps in its SRAM and DDR tiers, GB per GPU (none without tiers)."""
    if r.sram_gpu_bytes is None:
        return {}
    sram, ddr = (float(np.ravel(v)[0]) / GB for v in (r.sram_gpu_bytes, r.ddr_gpu_bytes))
    resident = (float(np.ravel(r.weights_gpu_bytes)[0]) + float(np.ravel(r.kv_gpu_bytes)[0])) / GB
    return {"sram_gpu_gb": sram, "main_gpu_gb": max(resident - sram - ddr, 0.0), "ddr_gpu_gb": ddr}


def _first_values(r: Result, names=None) -> dict[str, float]:
    """The result of a single configuration as plain floats (all fields, or ``names``)."""
    out = {}
    for k in names or r.names():
        a = getattr(r, k)
        out[k] = float(a) if np.ndim(a) == 0 else float(np.ravel(a)[0])
    return out


# ---- curves ----------------------------------------------------------------------------------------

@dataclass(frozen=True)
class Curve:
    """Predictions along one workload axis: every array has one element per x value. Memory is
    per GPU, in GB; speeds in tokens/s; times in ms."""

    vary: str
    x: np.ndarray
    ttft_ms: np.ndarray
    ttft_low_ms: np.ndarray
    ttft_high_ms: np.ndarray
    prefill_tok_s: np.ndarray
    prefill_low_tok_s: np.ndarray
    prefill_high_tok_s: np.ndarray
    prefill_ceiling_tok_s: np.ndarray
    decode_tok_s: np.ndarray
    decode_low_tok_s: np.ndarray
    decode_high_tok_s: np.ndarray
    decode_ceiling_tok_s: np.ndarray
    throughput_tok_s: np.ndarray
    throughput_low_tok_s: np.ndarray
    throughput_high_tok_s: np.ndarray
    weights_gb: np.ndarray
    kv_gb: np.ndarray
    workspace_gb: np.ndarray
    overhead_gb: np.ndarray
    usable_gb: np.ndarray
    free_gb: np.ndarray
    fits: np.ndarray
    max_batch: np.ndarray
    max_context: np.ndarray
    knee_batch: float


def _axis_values(vary: str, values, cfg: Config) -> np.ndarray:
    if vary not in CURVE_AXES:
        raise AdvisorError(f"a curve varies one of {', '.join(CURVE_AXES)}, not {vary!r}")
    x = np.asarray(values, dtype=float).reshape(-1)
    if x.size == 0:
        raise AdvisorError("a curve needs at least one value")
    if not np.all(np.isfinite(x)) or np.any(x != np.floor(x)):
        raise AdvisorError(f"{vary} values must be whole numbers")
    low = 1 if vary == "batch" else 0
    if x.min() < low:
        raise AdvisorError(f"{vary} must be at least {low}, got {x.min():g}")
    if vary == "batch" and x.max() > MAX_BATCH:
        raise AdvisorError(f"batch {x.max():g} is absurd (limit {MAX_BATCH:,})")
    if x.max() > MAX_CONTEXT_TOKENS:
        raise AdvisorError(f"{vary} of {x.max():g} tokens is beyond any model")
    return x


def curve(cat: "Catalog", cfg: Config, vary: str, values) -> Curve:
    """One vectorised evaluation of ``cfg`` with ``vary`` (batch, prompt, depth or output) taking
    each of ``values``; the other inputs as in ``cfg``. Contexts beyond the model's native one are
    computed, not refused (a chart may run past it; `predict` refuses)."""
    x = _axis_values(vary, values, cfg)
    cfg.check(check_context=False)
    eff = efficiency_for(cat.profiles, cfg.runtime, cfg.hardware)
    r = evaluate_config(cfg, eff, **{vary: x})
    n = x.size

    def arr(a):
        return np.broadcast_to(np.asarray(a, dtype=float), (n,)).copy()

    weights, kv, ws = arr(r.weights_gpu_bytes) / GB, arr(r.kv_gpu_bytes) / GB, arr(r.workspace_gpu_bytes) / GB
    over, usable = arr(r.overhead_gpu_bytes) / GB, arr(r.usable_gpu_bytes) / GB
    B = arr(x if vary == "batch" else cfg.workload.batch)
    return Curve(
        vary=vary, x=x, ttft_ms=arr(r.ttft_s) * 1e3, ttft_low_ms=arr(r.ttft_low_s) * 1e3,
        ttft_high_ms=arr(r.ttft_high_s) * 1e3, prefill_tok_s=arr(r.prefill_tok_s),
        prefill_low_tok_s=arr(r.prefill_low_tok_s), prefill_high_tok_s=arr(r.prefill_high_tok_s),
        prefill_ceiling_tok_s=arr(r.prefill_ceiling_tok_s), decode_tok_s=arr(r.decode_tok_s),
        decode_low_tok_s=arr(r.decode_low_tok_s), decode_high_tok_s=arr(r.decode_high_tok_s),
        decode_ceiling_tok_s=arr(r.decode_ceiling_tok_s), throughput_tok_s=arr(r.throughput_tok_s),
        throughput_low_tok_s=B * arr(r.decode_low_tok_s), throughput_high_tok_s=B * arr(r.decode_high_tok_s),
        weights_gb=weights, kv_gb=kv, workspace_gb=ws, overhead_gb=over, usable_gb=usable,
        free_gb=np.maximum(usable - weights - kv - ws - over, 0.0), fits=np.broadcast_to(r.fits, (n,)).copy(),
        max_batch=arr(r.max_batch), max_context=arr(r.max_context), knee_batch=float(np.asarray(r.knee_batch).flat[0]),
    )


# ---- the roofline's operating points -----------------------------------------------------------------

@dataclass(frozen=True)
class RooflinePoint:
    """One piece of work on the roofline chart: FLOPs per byte moved and FLOP/s attained."""

    name: str               # prefill, decode, attention, mlp, lm-head, all-reduce
    intensity: float        # FLOP / byte
    attained_tflops: float
    low_tflops: float
    high_tflops: float
    bound: str              # memory | compute | latency
    time_ms: float          # its share of one pass (decode operators: of one step)


@dataclass(frozen=True)
class Roofline:
    bandwidth_gb_s: float
    roofs: dict[str, float]     # compute dtype → dense peak TFLOP/s, for each the device lists
    compute_dtype: str
    peak_tflops: float
    ridge_intensity: float      # FLOP / byte where the bandwidth slope meets the compute roof
    knee_batch: float
    points: tuple[RooflinePoint, ...]


def _point(name: str, flops: float, nbytes: float, t_s: float, band: tuple[float, float], bound: str) -> RooflinePoint:
    attained = flops / t_s / 1e12 if t_s > 0 else math.nan
    intensity = flops / nbytes if nbytes > 0 else math.inf
    return RooflinePoint(name, intensity, attained, attained * band[0], attained * band[1], bound, t_s * 1e3)


def roofline(cat: "Catalog", cfg: Config) -> Roofline:
    """Where prefill, decode and each operator class of the decode step sit against the roofs.

    The decode step is split by what it reads and computes: attention (its projections' weights,
    the KV cache, the score and value products), the MLP or experts (the rest of the body), the
    output head, and, under tensor parallel, the all-reduces. Each operator's time is its bytes at
    the attained bandwidth or its FLOPs at the attained compute, whichever is longer.
    """
    cfg.check(check_context=False)
    eff = efficiency_for(cat.profiles, cfg.runtime, cfg.hardware)
    r = evaluate_config(cfg, eff)
    v = _first_values(r)
    hw = cfg.hardware
    peak, used, _ = compute_peak(hw, cfg.runtime, cfg.quant)
    roofs = {d: float(hw.peak_tflops(d)) for d in COMPUTE_DTYPES if hw.peak_tflops(d)}
    bw = hw.bandwidth_gb_s * 1e9
    eff_bw = bw * float(eff.decode_bw_fraction)
    eff_c = linear_flops_s(hw, cfg.runtime, cfg.quant, eff)
    dec_band = (float(eff.decode_low), float(eff.decode_high))
    pre_band = (float(eff.prefill_low), float(eff.prefill_high))
    points = []
    if cfg.workload.prompt_tokens > 0 and v["prefill_s"] > 0:
        pf_flops = v["prefill_linear_flops"] + v["prefill_attention_flops"]
        share = v["prefill_compute_share"]
        points.append(_point("prefill", pf_flops, v["prefill_bytes"], v["prefill_s"], pre_band,
                             "compute" if share >= 0.5 else "memory"))
    if cfg.workload.output_tokens > 0:
        step = 1.0 / v["decode_tok_s"]
        points.append(_point("decode", v["decode_flops"], v["decode_bytes"], step, dec_band,
                             "compute" if v["decode_compute_s"] > v["decode_memory_s"] else "memory"))
        g = geometry(cfg.model)
        tp = cfg.gpus if cfg.split == "tp" else 1
        B = cfg.workload.batch
        # attention projections are read whole and multiply every token; the rest of the body is
        # the MLP (dense FFN, or the experts the batch routes to, and any shared experts)
        proj_bytes = g.attention_params * weight_bits(cfg.quant).non_expert / 8.0 / tp
        proj_flops = 2.0 * B * g.attention_params / tp
        body_bytes = v["decode_weight_bytes"] - v["decode_head_bytes"]
        body_flops = v["decode_flops"] - v["decode_head_flops"] - v["decode_attention_flops"]
        attn_bytes = proj_bytes + v["decode_kv_bytes"]
        attn_flops = proj_flops + v["decode_attention_flops"]
        mlp_bytes = max(body_bytes - proj_bytes, 0.0)
        mlp_flops = max(body_flops - proj_flops, 0.0)
        for name, f, b in (("attention", attn_flops, attn_bytes), ("mlp", mlp_flops, mlp_bytes),
                           ("lm-head", v["decode_head_flops"], v["decode_head_bytes"])):
            t_s = max(b / eff_bw, f / eff_c)
            points.append(_point(name, f, b, t_s, dec_band, "compute" if f / eff_c > b / eff_bw else "memory"))
        if tp > 1:
            lat = float(eff.allreduce_latency_us) * 1e-6
            msg_bytes = 2.0 * g.layers * cfg.workload.batch * g.hidden * 2.0 * 2.0 * (tp - 1) / tp
            flops = msg_bytes / 2.0  # one addition per 16-bit element received
            t_s = v["decode_exchanges"] * lat + v["decode_transfer_s"]
            points.append(_point("all-reduce", flops, msg_bytes, t_s, dec_band, "latency"))
    ridge = peak * 1e12 / bw if math.isfinite(peak) else math.nan
    return Roofline(hw.bandwidth_gb_s, roofs, used, peak, ridge, v.get("knee_batch", math.nan), tuple(points))

