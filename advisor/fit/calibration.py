"""Fit runtime efficiency profiles to public measurements, and size their bands honestly.

The model has a few physical parameters per (runtime, hardware group):

- decode: ``1/η_bw`` (spec bandwidth over reached bandwidth), ``τ_layer`` (a fixed cost per
  layer per step: kernel launches and synchronisation, which is why small models reach a lower
  fraction of bandwidth), ``τ_step`` (a fixed cost per forward pass) and the all-reduce latency;
- prefill: ``1/η_c`` for the linear layers and ``1/η_att`` for the attention products (only
  identifiable where prompts are long or the cache is deep).

Step time is linear in these unknowns, so each fit is a small least-squares problem in relative
error. Every parameter has a physical prior (`PRIOR_SD`: fractions of a roof, overheads in µs,
attention near the matmul fraction) and physical bounds; the fit is the MAP estimate — ridge
towards the prior in closed form, with an active set for the bounds — and the inverse normal
matrix gives each parameter's posterior sd. A parameter the data cannot identify stays at its
prior, never at a clip. Groups are nested — runtime, then vendor, then family — and each level's
prior is centred on its parent's fit, so a family with few rows borrows strength instead of
memorising them. A family gets its own profile only with ≥ 2 measured devices. In a pooled
(runtime, vendor, family) decode fit each device weighs alike, however many rows it has
(`_device_weights`): those profiles speak for devices without rows of their own.

Bands come from out-of-sample errors, never from in-sample residuals: every row is predicted with
its whole source file, and again with its whole build era (runtime build), left out of the fit
(`predict_held_out`), by the profile a prediction would pick. The 5th–95th percentiles of
ln(measured / predicted) (`BAND_QUANTILES`), per profile level (device or family, vendor, runtime), become the
low/high multipliers of that level's profiles (`bands_from`); the same errors measure how much a
borrowed sibling-build profile's band must widen and how wide the runtime defaults' band is.
"""

from __future__ import annotations

import hashlib
import math
from collections import Counter, defaultdict
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Iterable, Sequence

import numpy as np
import yaml

from advisor.data.catalog import Catalog
from advisor.fit.cases import Case
from advisor.model.devices import tier
from advisor.model.efficiency import (EXTRAPOLATION_BAND_WIDENING, IDEAL, SIBLING_BAND_WIDENING,
                                      UNCALIBRATED_DECODE_BAND, UNCALIBRATED_PREFILL_BAND, Efficiency,
                                      efficiency_for, evidence, expert_weight)
from advisor.model.geometry import geometry
from advisor.model.inputs import inputs_for, stack_inputs
from advisor.model.roofline import evaluate, expert_overhead, format_fixed_s
from advisor.data.specs import Profile, Runtime
from advisor.data.userdata import write_atomic

#: Physical priors on the fitted parameters, in the units the fit solves in (1/η for fractions,
#: µs for fixed costs). The runtime level is centred on the runtime's documented starting values
#: (catalog/runtimes.yaml); each lower level on its parent's fit, with the same width. A parameter
#: the data cannot pin down stays at its prior (its posterior sd stays near the width).
#:   inv_bw      1/decode bandwidth fraction: 0.25 ≈ the span between 0.6 and 0.9 of spec bandwidth
#:   tau_layer   fixed cost per layer per forward pass: a few µs to tens of µs (kernel launches)
#:   tau_step    fixed cost per forward pass: tens to hundreds of µs (sampling, scheduling)
#:   allreduce   per GPU-to-GPU message: µs (NVLink ~5–10, PCIe ~20–50)
#:   tau_expert  fixed cost per expert a token visits per MoE layer per forward pass: a few µs to
#:               tens (routing, gathering and each expert's small products at a decode step's batch;
#:               a fused MoE kernel of one vendor costs more per expert than another's). The prior is
#:               the runtime's `decode_expert_weight` in plain layers' worth (0.2 × τ_layer); a runtime
#:               whose weight is 0 keeps none. Told apart from τ_layer by models that visit different
#:               numbers of experts per layer
#:   inv_c       1/prefill compute fraction of the dense peak
#:   att_vs_c    (1/η_att − 1/η_c) / (1/η_c): with flash attention the attention products run at
#:               about the matmul fraction, so the attention prior is centred on the group's own
#:               prefill fraction, ±25 % (deep prompts in the data can still move it further). Left
#:               out of sample, ±25 % beats ±50 % (prefill 20.7 vs 22.8 % with sources held out)
#:   exp_vs_c    the same for the routed experts' products (MoE): centred on the parent group's ratio
#:               to the compute fraction (1 at the runtime level), so a group without MoE prompt rows
#:               keeps what its parent learnt
#:   tau_seq     fixed cost per running sequence per decode step: tens of µs (Python bookkeeping,
#:               sampling, detokenising); fitted only in a group whose decode rows vary the batch,
#:               held at the parent's value elsewhere (with one batch size it is the step cost's twin)
#:   tau_req     fixed cost once per request before its first token: setting the request up and
#:               its first pass's launches in an engine's own benchmark (~1 ms), plus HTTP,
#:               tokenising and scheduling behind a serving API (tens of ms); fitted where TTFT
#:               rows exist. A step cost is tens to hundreds of µs, so a TTFT the FLOPs and bytes
#:               do not explain is charged to the request (once), not to every decode step, and a
#:               tiny model's TTFT does not drag the prompt compute fraction down
PRIOR_SD = {"inv_bw": 0.25, "tau_layer_us": 20.0, "tau_step_us": 200.0, "allreduce_us": 20.0, "tau_expert_us": 10.0,
            "inv_c": 1.5,
            "att_vs_c": 0.25, "exp_vs_c": 0.25, "tau_seq_us": 50.0, "tau_req_us": 20000.0,
            # int8 kernels against float ones. On a CPU the same vector units unpack the quantized
            # blocks and multiply them, so llama.cpp's int8 kernels reach a far smaller share of
            # their peak than a float GEMM does of its own: loose, the data decides. On GPUs the
            # unpacking runs beside the matrix units, and freeing the ratio made prefill held out by
            # source worse on the 2026-11-26 data (24.6 % → 25.7 % at 0.25, 27.1 % at 1.0): held.
            "i8_vs_c": 1.0, "i8_vs_c_gpu": 1e-3}
#: Physical bounds (as lower bounds on the solved quantities): a decode bandwidth fraction cannot
#: exceed ~0.95 (refresh, page and command overheads), compute fractions cannot exceed 1, costs ≥ 0.
MAX_BW_FRACTION = 0.95
MAX_COMPUTE_FRACTION = 1.0
#: … and where we measured the kernels ourselves, what attention reached: on Hopper the best causal or
#: chunked prefill attention of the first-party H100 and H200 runs came to 0.70 of the BF16 peak
#: (catalog/measured/kernels_h100_device.md, kernels_h200_device.md; tests/core/test_kernel_ceilings.py
#: holds every Hopper profile to it). A group all of one such family fits its attention fraction below it.
MAX_ATTENTION_FRACTION = {"nvidia-hopper": 0.69}
#: Relative noise of one measured row: estimated per group from the fit's residuals, never below
#: this floor (repeated runs of one benchmark scatter by a few per cent).
MIN_ROW_SD = 0.03
#: The band is this central interval of held-out ln(measured/predicted). Its aim is to hold 80 %
#: of the rows of a source or build the fit has not seen; the 10th–90th percentiles held only 63 %
#: when whole sources were left out (sources disagree more than the others' errors predict: errors
#: are not exchangeable between sources), the 5th–95th hold 78–88 % (README, Accuracy).
BAND_QUANTILES = (0.05, 0.95)
MIN_BAND = (0.95, 1.05)
MIN_DEVICES_FOR_FAMILY = 2
#: A single device gets its own profile only when its rows span this many models (and rows):
#: then the parameters are pinned by variation across models, not by repeating one number.
MIN_MODELS_FOR_DEVICE = 3
MIN_ROWS_FOR_DEVICE = 12


# ---- evaluating cases with given efficiencies ----------------------------------------------------

def _ideal_terms(r, x, g) -> dict[str, np.ndarray]:
    """What multiplies each fitted parameter, from the kernel's physical quantities: ideal (100 %)
    times, per-layer and per-pass counts, GPU-to-GPU message counts and transfer times; and what is
    known, not fitted: the low-precision format's fixed cost per pass (`roofline.format_fixed_s`), the
    prompt's element-wise kernels' bytes (`Geometry.activation_bytes`, at the decode-side η_bw)."""
    bw = np.asarray(x.bandwidth_gb_s, float) * 1e9
    # the hardware sustains its own share of the peak under dense load (`advisor.model.devices.matrix_share`):
    # the fitted fractions are the reference parts' (Hopper's)
    sustained = np.asarray(x.matrix_share, float)
    peak = np.asarray(x.peak_tflops, float) * 1e12 * sustained
    apeak = peak if x.attn_peak_tflops is None else np.asarray(x.attn_peak_tflops, float) * 1e12 * sustained
    # the format's products reach their own share of the peak (`advisor.model.devices.gemm_share`): the
    # fitted fraction is the 16-bit products' one
    share = np.asarray(x.gemm_share, float)
    peak = peak * share
    lin = (r.prefill_linear_flops - r.prefill_expert_flops) / peak
    exp = r.prefill_expert_flops / peak
    att = r.prefill_attention_flops / apeak
    int8 = np.asarray(x.int8_linear, bool)
    # the work beside the products at the part's own SM rate (`advisor.model.devices.with_side_work`):
    # a product's time is (1 − scale) × its time at the share-free peak, known, plus scale × its ideal
    # time over the fitted fraction
    side = np.asarray(x.side_work_scale, float)
    return {
        "dec_comm_lat_coeff": r.decode_exchanges, "dec_comm_bw_s": r.decode_transfer_s,
        "dec_batch": np.asarray(x.batch, float) + 0.0 * r.decode_exchanges,
        "pf_lin_ideal_s": np.where(int8, 0.0, lin) * side, "pf_i8_ideal_s": np.where(int8, lin, 0.0) * side,
        "pf_exp_ideal_s": exp * side, "pf_att_ideal_s": att * side,
        "pf_side_s": ((lin + exp) * share + att) * (1.0 - side),
        # what the pass reads and writes at the bandwidth: weights per micro-batch, the element-wise
        # kernels' activations
        "pf_mem_ideal_s": (r.prefill_bytes + r.prefill_activation_bytes) / bw, "ubatches": r.micro_batches,
        "pf_comm_lat_coeff": r.prefill_exchanges, "pf_comm_bw_s": r.prefill_transfer_s,
        "format_fixed_s": format_fixed_s(g, x),
    }


def _case_inputs(c: Case, eff: Efficiency):
    x = inputs_for(c.hardware, c.runtime, c.quant, c.kv, eff, c.gpus, c.runtime.parallelism, c.workload)
    # the run's own prompt micro-batch where the source states it: each one re-reads the weights
    return x.replace(workspace_tokens=float(c.ubatch_tokens)) if c.ubatch_tokens else x


def evaluate_cases(cases: Sequence[Case], effs: Sequence[Efficiency]) -> dict[str, np.ndarray]:
    """Run the performance model on every case with its own efficiencies; arrays in case order:
    the kernel's results plus the terms the fit solves with (`_ideal_terms`)."""
    n = len(cases)
    out: dict[str, np.ndarray] = {}
    by_model: dict[str, list[int]] = defaultdict(list)
    for i, c in enumerate(cases):
        by_model[c.model.key].append(i)
    for idx in by_model.values():
        x = stack_inputs([_case_inputs(cases[i], effs[i]) for i in idx])
        g = geometry(cases[idx[0]].model)
        r = evaluate(g, x)
        values = {name: getattr(r, name) for name in r.names()} | _ideal_terms(r, x, g)
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

@dataclass(frozen=True)
class Posterior:
    """A MAP estimate and its uncertainty: x, the posterior sd of each entry, and which entries sit
    on a physical bound (their sd is then the conditional one, 0)."""

    x: np.ndarray
    sd: np.ndarray
    at_bound: np.ndarray
    row_sd: float


def map_solve(A: np.ndarray, rhs: np.ndarray, R: np.ndarray, r0: np.ndarray, lower: np.ndarray) -> Posterior:
    """min ‖(A x − rhs)/s‖² + ‖R x − r0‖² with x ≥ lower: a Gaussian likelihood with row noise s
    and a Gaussian prior (rows R, targets r0), i.e. ridge towards the prior in closed form.

    s is estimated from the residuals (two passes, floor `MIN_ROW_SD`). Entries the data pull below
    their bound are fixed there (active set) and the rest refitted. The posterior covariance is the
    inverse of the normal matrix (AᵀA/s² + RᵀR) on the free entries.
    """
    n, k = A.shape
    s = 0.1
    x = np.zeros(k)
    fixed = np.zeros(k, bool)
    for _ in range(2):
        fixed[:] = False
        x = np.zeros(k)
        for _ in range(k + 1):
            free = ~fixed
            M = np.vstack([A[:, free] / s, R[:, free]])
            b = np.concatenate([(rhs - A[:, fixed] @ x[fixed]) / s, r0 - R[:, fixed] @ x[fixed]])
            x[free] = np.linalg.lstsq(M, b, rcond=None)[0]
            low = free & (x < lower)
            if not low.any():
                break
            x[low] = lower[low]
            fixed |= low
        resid = A @ x - rhs
        dof = max(n - int((~fixed).sum()), 1)
        s = max(math.sqrt(float(resid @ resid) / dof), MIN_ROW_SD) if n else 0.1
    free = ~fixed
    sd = np.zeros(k)
    if free.any():
        H = A[:, free].T @ A[:, free] / s ** 2 + R[:, free].T @ R[:, free]
        sd[free] = np.sqrt(np.diag(np.linalg.inv(H)))
    return Posterior(x, sd, fixed, s)


def _prior_rows(centre: np.ndarray, sd: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Independent Gaussian prior rows: (x_j − centre_j)/sd_j."""
    return np.diag(1 / sd), centre / sd


def _device_weights(cases: Sequence[Case], rows: np.ndarray) -> np.ndarray:
    """Row weights that give each device the same say in a pooled (runtime, vendor or family) decode
    fit, their squares summing to the row count as before; all 1 for one device's rows (a hardware
    profile, a personal fit).

    Unweighted, the device with the most rows sets the figures its siblings borrow: SGLang's 24
    batch-1 rows of one H20 source (about a third of its 4 TB/s read) set its NVIDIA and Hopper
    bandwidth fraction, which an H100 and a B200, whose own rows are a few MoE models at batch 1
    that barely test bandwidth, then inherited (held out, GPUStack's Qwen3-8B on one H100 decoded
    27 % too slow; 7 % weighed by device). The prompt fits stay row-weighted: weighed by device,
    their error on held-out sources rose (23.9 → 25.8 %)."""
    devs = [cases[i].device for i in rows]
    n = Counter(devs)
    return np.sqrt(rows.size / (len(n) * np.array([n[d] for d in devs], dtype=float)))


def _fit_decode(cases: Sequence[Case], parts: dict[str, np.ndarray], rows: np.ndarray,
                prior: Efficiency, at: Efficiency | None = None, fit_experts: bool = False) -> tuple[Efficiency, dict[str, float]]:
    """MAP fit of 1/η_bw, τ_layer, τ_step, the all-reduce latency and τ_seq (per running sequence)
    to the decode rows ``rows``; ``parts`` were evaluated at the efficiencies ``at`` (default the
    prior), whose compute fractions price the compute-bound kernels. Rows from several devices are
    weighed so that each device counts alike (`_device_weights`).

    The cost of an expert visit: with ``fit_experts`` (a runtime's group of one vendor's GPUs, whose
    MoE kernels are its own) a parameter of its own where the data pins it down, its prior the
    prior's ratio to τ_layer; elsewhere it keeps that ratio (the runtime's ``decode_expert_weight`` at
    the top), so that a group of a few rows does not trade it against τ_layer; a runtime whose weight
    is 0 keeps none.

    End-to-end latency rows count as decode rows: (latency − predicted TTFT) / (output − 1) is
    their time per step, and for short prompts and long outputs it dominates the latency.
    Returns the efficiencies and the posterior sd of each fitted field (in its own units).
    """
    if rows.size == 0:
        return prior, {}
    batch = parts["dec_batch"][rows]
    varied = bool(np.ptp(batch) > 0)  # τ_seq is told apart from τ_step only across batch sizes
    weight = expert_weight(cases[rows[0]].runtime)
    expert_us = float(expert_overhead(prior, weight))
    ratio = expert_us / prior.layer_overhead_us if prior.layer_overhead_us > 0 else weight
    centre = np.array([1 / prior.decode_bw_fraction, prior.layer_overhead_us, prior.step_overhead_us,
                       prior.allreduce_latency_us, prior.seq_overhead_us, expert_us])

    def step_time(i: int) -> float:
        c = cases[i]
        if c.metric == "decode":
            return 1.0 / c.measured
        steps = max(c.workload.output_tokens - 1, 1)
        return max(c.measured / 1e3 - parts["ttft_s"][i], 0.05 * c.measured / 1e3) / steps

    t = np.array([step_time(i) for i in rows])
    shapes = [geometry(cases[i].model) for i in rows]
    layers = np.array([g.fixed_layers_at(0.0) for g in shapes], dtype=float)
    visits = np.array([g.expert_visits for g in shapes], dtype=float)
    own = fit_experts and weight > 0 and bool(visits.any())
    k = 6 if own else 5   # the parameters solved for: τ_expert last, where it is the group's own
    if not own:  # the visits count as plain layers at the prior's ratio; τ_expert follows τ_layer
        layers = layers + ratio * visits
    width = np.array([PRIOR_SD["inv_bw"], PRIOR_SD["tau_layer_us"], PRIOR_SD["tau_step_us"], PRIOR_SD["allreduce_us"],
                      PRIOR_SD["tau_seq_us"] if varied else 1e-3, PRIOR_SD["tau_expert_us"]])[:k]
    # a kernel whose products take longer than its reads (a handful of sequences on llama.cpp's vector
    # kernels, or a large batch's linear layers) says nothing of the bandwidth fraction: its time is
    # its compute at the fractions the parts were evaluated at (``at``). The linear layers' kernels and
    # the attention kernels are judged apart, at each context the kernel evaluates, as it runs them
    mem_ideal = np.nan_to_num(parts["decode_memory_bound_s"][rows]) * (at or prior).decode_bw_fraction
    compute_s = np.nan_to_num(parts["decode_compute_bound_s"][rows])
    A = np.column_stack([mem_ideal, layers * 1e-6, np.full(rows.size, 1e-6),
                         parts["dec_comm_lat_coeff"][rows] * 1e-6, batch * 1e-6, visits * 1e-6])[:, :k] / t[:, None]
    rhs = 1.0 - (parts["dec_comm_bw_s"][rows] + compute_s + parts["format_fixed_s"][rows]) / t
    w = _device_weights(cases, rows)
    A, rhs = A * w[:, None], rhs * w
    R, r0 = _prior_rows(centre[:k], width)
    if own:
        # the expert visit's prior is the prior's ratio to the group's own τ_layer (τ_e − ratio·τ_layer
        # ≈ 0), as the attention fraction's is to the group's own compute fraction: where the data does
        # not tell the two apart, the ratio holds
        R[5, 1], r0[5] = -ratio / width[5], 0.0
    post = map_solve(A, rhs, R, r0, np.array([1 / MAX_BW_FRACTION, 0.0, 0.0, 0.0, 0.0, 0.0])[:k])
    x = post.x
    eff = prior.replace(decode_bw_fraction=1 / float(x[0]), layer_overhead_us=float(x[1]),
                        step_overhead_us=float(x[2]), allreduce_latency_us=float(x[3]), seq_overhead_us=float(x[4]),
                        expert_overhead_us=float(x[5]) if own else ratio * float(x[1]))
    names = ("decode_bw_fraction", "layer_overhead_us", "step_overhead_us", "allreduce_latency_us", "seq_overhead_us",
             "expert_overhead_us")[:k]
    sd = dict(zip(names, (float(v) for v in post.sd)))
    sd["decode_bw_fraction"] = float(post.sd[0]) / float(x[0]) ** 2
    out = _mark(sd, post, names, width / np.array([x[0] ** 2, 1, 1, 1, 1, 1])[:k])
    if not varied:
        out.pop("seq_overhead_us")  # held, not fitted: nothing to report
    if own and out["expert_overhead_us"][1] != "fitted":
        # the data did not pin it down (its sd barely moved): it keeps the prior's ratio, as a group
        # without its own fit does, rather than a value the other parameters' noise moved
        return _fit_decode(cases, parts, rows, prior, at=at, fit_experts=False)
    return eff, out


def _mark(sd: dict[str, float], post: Posterior, names: tuple[str, ...], prior_sd: np.ndarray) -> dict:
    """The sds, with each parameter's status: 'bound' (held on a physical bound), 'prior' (the
    data barely moved its uncertainty: it is the prior's value) or 'fitted'."""
    out = {}
    for j, name in enumerate(names):
        status = "bound" if post.at_bound[j] else ("prior" if sd[name] > 0.7 * prior_sd[j] else "fitted")
        out[name] = (sd[name], status)
    return out


def _fit_prefill(cases: Sequence[Case], parts: dict[str, np.ndarray], rows: np.ndarray, p: Efficiency,
                 fit_step: bool = False) -> tuple[Efficiency, dict]:
    """MAP fit of 1/η_c, 1/η_att and 1/η_exp to prefill and TTFT rows, decode-side parameters
    held; where TTFT rows exist also the per-request cost; with ``fit_step`` (a group without
    decode rows, e.g. TTFT-only data) also the per-step cost. The attention prior is centred on
    the group's own compute fraction, the experts' on the parent's ratio to it (see `PRIOR_SD`)."""
    ratio = 1.0  # the parent's 1/η_exp over its 1/η_c
    if np.isfinite(p.expert_compute_fraction):
        ratio = p.prefill_compute_fraction / p.expert_compute_fraction
    ratio8 = 1.0  # the parent's 1/η_int8 over its 1/η_c
    if np.isfinite(p.int8_compute_fraction):
        ratio8 = p.prefill_compute_fraction / p.int8_compute_fraction
    if rows.size == 0:  # nothing to fit: the attention prior's centre is the compute fraction
        return p.replace(attention_compute_fraction=p.prefill_compute_fraction,
                         expert_compute_fraction=min(p.prefill_compute_fraction / ratio, MAX_COMPUTE_FRACTION),
                         int8_compute_fraction=min(p.prefill_compute_fraction / ratio8, MAX_COMPUTE_FRACTION)), {}
    t = np.array([cases[i].workload.prompt_tokens * cases[i].workload.batch / cases[i].measured
                  if cases[i].metric == "prefill" else cases[i].measured / 1e3 for i in rows])
    ub = parts["ubatches"][rows]
    # the layers' fixed costs of each pass, µs, at the decode fit's per-layer and per-expert costs
    fixed_us = np.array([geometry(cases[i].model).fixed_pass_us(
        p.layer_overhead_us, float(expert_overhead(p, expert_weight(cases[i].runtime)))) for i in rows], dtype=float)
    is_ttft = np.array([cases[i].metric == "ttft" for i in rows], dtype=float)
    fit_request = bool(is_ttft.any())  # prompt tok/s figures carry no per-request cost
    # the runtime's eager launches per prompt pass are its own (fitted on servers' TTFT), not the group's
    eager = np.nan_to_num(parts["prefill_pass_extra_s"][rows]) if "prefill_pass_extra_s" in parts else 0.0
    known = (parts["pf_mem_ideal_s"][rows] / p.decode_bw_fraction + parts["pf_side_s"][rows] + ub * fixed_us * 1e-6
             + ub * (eager + parts["format_fixed_s"][rows])
             + parts["pf_comm_bw_s"][rows] + parts["pf_comm_lat_coeff"][rows] * p.allreduce_latency_us * 1e-6)
    if not fit_step:
        known = known + ub * p.step_overhead_us * 1e-6
    # a layer split's stages work on different micro-batches at once: the pass takes this share of its
    # stages' work (`roofline.pipeline_share`); the request's own cost is outside the pass
    piped = parts["prefill_pipeline_share"][rows]
    known = known * piped
    if not fit_request:
        known = known + is_ttft * p.request_overhead_us * 1e-6
    A = np.column_stack([parts["pf_lin_ideal_s"][rows] * piped, parts["pf_att_ideal_s"][rows] * piped,
                         parts["pf_exp_ideal_s"][rows] * piped, ub * piped * 1e-6 * (1.0 if fit_step else 0.0),
                         is_ttft * 1e-6, parts["pf_i8_ideal_s"][rows] * piped]) / t[:, None]
    rhs = 1.0 - known / t
    ok = np.isfinite(A).all(axis=1) & np.isfinite(rhs)
    if not ok.any():
        return p, {}
    inv_c = 1 / p.prefill_compute_fraction
    step_sd = PRIOR_SD["tau_step_us"] if fit_step else 1e-3  # held: a near-certain prior keeps it
    req_sd = PRIOR_SD["tau_req_us"] if fit_request else 1e-3
    cpu = all(cases[i].hardware.kind == "cpu" for i in rows)
    w_att, w_exp, w_i8 = (PRIOR_SD[k] * inv_c for k in ("att_vs_c", "exp_vs_c", "i8_vs_c" if cpu else "i8_vs_c_gpu"))
    R = np.array([[1 / PRIOR_SD["inv_c"], 0, 0, 0, 0, 0],
                  [-1 / w_att, 1 / w_att, 0, 0, 0, 0],
                  [-ratio / w_exp, 0, 1 / w_exp, 0, 0, 0],
                  [0, 0, 0, 1 / step_sd, 0, 0],
                  [0, 0, 0, 0, 1 / req_sd, 0],
                  [-ratio8 / w_i8, 0, 0, 0, 0, 1 / w_i8]])
    r0 = np.array([inv_c / PRIOR_SD["inv_c"], 0.0, 0.0, p.step_overhead_us / step_sd, p.request_overhead_us / req_sd,
                   0.0])
    families = {cases[i].hardware.family for i in rows}
    family = next(iter(families)) if len(families) == 1 else None
    att_max = MAX_ATTENTION_FRACTION.get(family, MAX_COMPUTE_FRACTION)
    lower = np.array([1 / MAX_COMPUTE_FRACTION, 1 / att_max, 1 / MAX_COMPUTE_FRACTION, 0.0, 0.0,
                      1 / MAX_COMPUTE_FRACTION])
    post = map_solve(A[ok], rhs[ok], R, r0, lower)
    x = post.x
    eff = p.replace(prefill_compute_fraction=1 / float(x[0]), attention_compute_fraction=1 / float(x[1]),
                    expert_compute_fraction=1 / float(x[2]), int8_compute_fraction=1 / float(x[5]),
                    step_overhead_us=float(x[3]),
                    request_overhead_us=float(x[4]))
    names = ("prefill_compute_fraction", "attention_compute_fraction", "expert_compute_fraction",
             "step_overhead_us", "request_overhead_us", "int8_compute_fraction")
    # fractions' sds through 1/x; the attention and expert priors' widths are given the compute
    # fraction (which the data usually pins down)
    scale = np.array([float(x[0]) ** 2, float(x[1]) ** 2, float(x[2]) ** 2, 1.0, 1.0, float(x[5]) ** 2])
    sd = dict(zip(names, (float(v) for v in post.sd / scale)))
    prior_sd = np.array([PRIOR_SD["inv_c"], w_att, w_exp, PRIOR_SD["tau_step_us"], PRIOR_SD["tau_req_us"], w_i8]) / scale
    out = _mark(sd, post, names, prior_sd)
    if not fit_step:
        out.pop("step_overhead_us")  # held, not fitted: nothing to report
    if not fit_request:
        out.pop("request_overhead_us")
    return eff, out


def fit_group(cases: Sequence[Case], rows: np.ndarray, prior: Efficiency,
              fit_experts: bool = False) -> tuple[Efficiency, dict]:
    """Fit one group's parameters (decode first, then prefill/TTFT) on the cases ``rows``; returns
    the efficiencies and {field: (posterior sd, 'fitted' | 'prior' | 'bound')}. ``fit_experts``: the
    cost of an expert visit is the group's own (`_fit_decode`)."""
    if rows.size == 0:
        return prior, {}
    sub = [cases[i] for i in rows]
    parts = evaluate_cases(sub, [prior] * len(sub))
    local = np.arange(len(sub))
    dec = local[[c.metric in ("decode", "e2e") for c in sub]]
    pre = local[[c.metric in ("prefill", "ttft") for c in sub]]
    p, sd_dec = _fit_decode(sub, parts, dec, prior, fit_experts=fit_experts)
    p, sd_pre = _fit_prefill(sub, parts, pre, p, fit_step=dec.size == 0)
    if dec.size and pre.size and np.any(np.nan_to_num(parts["decode_compute_bound_s"][dec]) > 0):
        # decode kernels bound by compute were priced at the prior's compute fractions: once more at
        # the ones the prompt rows gave, and the prompt fit again on the decode figures that gives
        at = p
        parts = evaluate_cases(sub, [at] * len(sub))
        p, sd_dec = _fit_decode(sub, parts, dec, prior, at=at, fit_experts=fit_experts)
        p, sd_pre = _fit_prefill(sub, parts, pre, p)
    return p, sd_dec | sd_pre


# ---- the hierarchy ---------------------------------------------------------------------------------

@dataclass
class Group:
    level: str               # runtime | vendor | family | hardware
    runtime: str
    vendor: str
    family: str
    rows: np.ndarray         # indices into the case list
    params: Efficiency | None = None
    #: {field: (posterior sd, 'fitted' | 'prior' | 'bound')}
    uncertainty: dict | None = None
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
        if c.hardware.kind != "cpu" and not c.family_only:
            # a runtime's catch-all speaks for accelerators it has not seen; CPUs (main memory,
            # vector units, no kernel launches) are a kind apart and have their own vendor group
            by[(c.runtime.key, "", "", "")].append(i)
        if not c.family_only:
            by[(c.runtime.key, c.hardware.vendor, "", "")].append(i)
        by[(c.runtime.key, c.hardware.vendor, c.hardware.family, tier(c.hardware))].append(i)
    # rows that speak for their family alone join the groups the other rows make, and make none
    # themselves: with or without them, the same profiles exist (a group they alone kept alive would
    # predict the other phase from its parent's figures at its own band)
    own = {i for i in fit_rows if not cases[i].family_only}
    groups = []
    for (rt, vendor, family, tr), rows in sorted(by.items()):
        devices = {cases[i].device for i in rows if not cases[i].family_only}
        if family and len(devices) < MIN_DEVICES_FOR_FAMILY or not devices:
            continue
        level = "family" if family else ("vendor" if vendor else "runtime")
        groups.append(Group(level, rt, vendor, family, np.array(rows), tier=tr))
    per_device: dict[tuple, list[int]] = defaultdict(list)
    for i in fit_rows:
        c = cases[i]
        per_device[(c.runtime.key, c.hardware.vendor, c.hardware.family, tier(c.hardware), c.device)].append(i)
    for (rt, vendor, family, tr, dev), rows in sorted(per_device.items()):
        base = [i for i in rows if i in own]
        if len(base) >= MIN_ROWS_FOR_DEVICE and len({cases[i].model.key for i in base}) >= MIN_MODELS_FOR_DEVICE:
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
             exclude: set[int] | None = None, uncertainty: dict | None = None) -> dict[str, Efficiency]:
    """Fit every group top-down, optionally without some rows; returns params by group key (and
    fills ``uncertainty`` with each group's posterior sds, when given)."""
    exclude = exclude or set()
    fitted: dict[str, Efficiency] = {}
    for level in ("runtime", "vendor", "family", "hardware"):
        for g in groups:
            if g.level != level:
                continue
            parent = _parent(groups, g)
            prior = fitted.get(parent.key) if parent else Efficiency.of_runtime(runtimes[g.runtime])
            rows = np.array([i for i in g.rows if i not in exclude], dtype=int)
            # an expert visit's cost is fitted per runtime and vendor: the MoE kernels differ by vendor
            # (ROCm's against CUDA's), hardly between one vendor's GPUs, and a family's few MoE rows
            # would trade it against τ_layer
            fitted[g.key], sd = (fit_group(cases, rows, prior, fit_experts=g.level == "vendor") if rows.size
                                 else (prior, {}))
            if uncertainty is not None:
                uncertainty[g.key] = sd
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


# ---- out of sample: whole sources or build eras left out of the fit, and the bands ------------------

#: How a row is grouped when it is left out: the file it came from, or the runtime build (era) it
#: was measured with. Today's eras are the catalog's runtime builds: llama.cpp-2023 and llama.cpp
#: (with its Vulkan backend beside it); every other runtime is one era of its own.
HOLDOUT_UNITS = {
    "source": lambda c: c.source or "(no file)",
    "era": lambda c: c.runtime.key,
}

#: Where a level has too few held-out errors for its quantiles, the next coarser one's band is used.
MIN_ERRORS_FOR_BAND = 8
OWN_COARSER = {"device": "vendor", "vendor": "runtime", "runtime": None}
#: A borrowed profile's band is never widened by more than this factor on each side.
MAX_SIBLING_WIDENING = 4.0


def level_class(level: str) -> str:
    """The band class of a profile level (`efficiency.select_profile`): device (a device's or its
    family's profile), vendor, runtime, sibling (borrowed from another build) or none (defaults)."""
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
    #: what the fit without this row's source saw of it (`efficiency.evidence`): measured where its
    #: family and format class were in the remaining data, else extrapolated (or uncalibrated)
    evidence: str = ""

    @property
    def error(self) -> float:
        return self.predicted / self.case.measured - 1.0

    @property
    def log_speed_ratio(self) -> float:
        """ln(measured / predicted) as a speed: > 0 when the run was faster than predicted."""
        r = math.log(self.case.measured / self.predicted)
        return -r if self.case.metric in ("ttft", "e2e") else r


@dataclass(frozen=True)
class Bands:
    """Band multipliers sized from held-out errors: one per (band kind, own level class) — what a
    profile of that level carries — plus the widening a borrowed (sibling) profile's band needs
    and the band of predictions from a runtime's defaults, as measured on the held-out rows."""

    own: dict[tuple[str, str], tuple[float, float]]
    sibling_widening: dict[str, float]       # per band kind: low ÷ f, high × f
    uncalibrated: dict[str, tuple[float, float]]
    errors: dict[tuple[str, str], int]        # how many held-out errors each (kind, class) had
    #: per band kind, the factor an own profile's band needs where no measurement backed the row's
    #: hardware family and format class (the row was extrapolated when it was predicted)
    extrapolation_widening: dict[str, float] = field(default_factory=dict)

    def band_for(self, kind: str, level: str) -> tuple[float, float]:
        """The band a prediction at profile ``level`` carries (as `efficiency_for` applies it)."""
        lc = level_class(level)
        if lc == "none":
            return self.uncalibrated[kind]
        if lc == "sibling":
            own = self.own[(kind, level_class(level.removeprefix("sibling-")))]
            return (own[0] / self.sibling_widening[kind], own[1] * self.sibling_widening[kind])
        return self.own[(kind, lc)]


def _quantile_band(pool: Sequence[float], quantiles: tuple[float, float]) -> tuple[float, float]:
    lo, hi = np.quantile(pool, quantiles)
    return (min(math.exp(lo), MIN_BAND[0]), max(math.exp(hi), MIN_BAND[1]))


def bands_from(held: Sequence[HeldOut], quantiles: tuple[float, float] = BAND_QUANTILES) -> Bands:
    """Bands from held-out ln(measured/predicted): the ``quantiles`` per (kind, level class); a
    level with fewer than `MIN_ERRORS_FOR_BAND` errors takes the next coarser level's band, and
    with none at all the uncalibrated band. The sibling widening is the factor on the own band that
    holds the same share of the sibling-level errors; the defaults' band is their own quantiles."""
    by: dict[tuple[str, str], list[float]] = defaultdict(list)
    for h in held:
        by[(band_kind(h.case.metric), level_class(h.level))].append(h.log_speed_ratio)
    share = quantiles[1] - quantiles[0]
    own: dict[tuple[str, str], tuple[float, float]] = {}
    uncalibrated: dict[str, tuple[float, float]] = {}
    defaults = {"decode": UNCALIBRATED_DECODE_BAND, "prefill": UNCALIBRATED_PREFILL_BAND}
    for kind in ("decode", "prefill"):
        none = by[(kind, "none")]
        uncalibrated[kind] = _quantile_band(none, quantiles) if len(none) >= MIN_ERRORS_FOR_BAND else defaults[kind]
        for lc in ("device", "vendor", "runtime"):
            src: str | None = lc
            while src in OWN_COARSER and len(by[(kind, src)]) < MIN_ERRORS_FOR_BAND:
                src = OWN_COARSER[src]
            if src in OWN_COARSER:
                own[(kind, lc)] = _quantile_band(by[(kind, src)], quantiles)
            elif lc == "runtime" and (kind, "vendor") in own:
                # a runtime's catch-all on an unseen vendor: no better than the vendor band, nor
                # than the runtime's defaults
                v, u = own[(kind, "vendor")], uncalibrated[kind]
                own[(kind, lc)] = (min(v[0], u[0]), max(v[1], u[1]))
            else:
                own[(kind, lc)] = uncalibrated[kind]
    # per kind, the factor f that puts `share` of the sibling-level errors r inside (ln lo − ln f,
    # ln hi + ln f): a margin added in log space, so an already wide vendor band is not blown up
    needed: dict[str, list[float]] = {"decode": [], "prefill": []}
    for h in held:
        if level_class(h.level) == "sibling":
            kind = band_kind(h.case.metric)
            lo, hi = own[(kind, level_class(h.level.removeprefix("sibling-")))]
            r = h.log_speed_ratio
            needed[kind].append(max(math.log(lo) - r, r - math.log(hi), 0.0))
    widening = {kind: (float(np.clip(math.exp(np.quantile(v, share)), 1.0, MAX_SIBLING_WIDENING))
                       if len(v) >= MIN_ERRORS_FOR_BAND else SIBLING_BAND_WIDENING[kind]) for kind, v in needed.items()}
    # likewise for rows an own profile predicted without measurements of their family or format class
    needed = {"decode": [], "prefill": []}
    for h in held:
        lc = level_class(h.level)
        if h.evidence == "extrapolated" and lc not in ("sibling", "none"):
            kind = band_kind(h.case.metric)
            lo, hi = own[(kind, lc)]
            r = h.log_speed_ratio
            needed[kind].append(max(math.log(lo) - r, r - math.log(hi), 0.0))
    extrapolated = {kind: (float(np.clip(math.exp(np.quantile(v, share)), 1.0, MAX_SIBLING_WIDENING))
                           if len(v) >= MIN_ERRORS_FOR_BAND else EXTRAPOLATION_BAND_WIDENING[kind])
                    for kind, v in needed.items()}
    return Bands(own, widening, uncalibrated, {k: len(v) for k, v in by.items()}, extrapolated)


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
                seen = evidence(profiles, c.runtime, c.hardware, c.quant, cat.quants)
                # a phase lent by a coarser profile is that profile's prediction (its band class)
                out.append(HeldOut(c, unit, float(p), e.level_of(band_kind(c.metric)), e.basis, float(cl), seen))
    return out


@dataclass
class CalibrationResult:
    profiles: list[Profile]
    groups: list[Group]
    rows_used: int
    bands: "Bands | None" = None


def calibrate(cat: Catalog, cases: Sequence[Case]) -> CalibrationResult:
    """Fit profiles for every runtime/vendor/family group with data; their bands come from the
    errors on whole sources and build eras left out of the fit (`predict_held_out`, `bands_from`)."""
    runtimes = dict(cat.runtimes)
    groups = _groups(cases)
    uncertainty: dict[str, dict] = {}
    fitted = _fit_all(cases, groups, runtimes, uncertainty=uncertainty)
    held = [h for by in HOLDOUT_UNITS for h in predict_held_out(cat, cases, by)]
    bands = bands_from(held)
    for g in groups:
        g.params = fitted[g.key]
        g.uncertainty = uncertainty[g.key]
        g.band_decode = bands.band_for("decode", g.level)
        g.band_prefill = bands.band_for("prefill", g.level)
    profiles = [_profile(cat, cases, g, g.params, g.band_decode, g.band_prefill) for g in groups]
    return CalibrationResult(profiles, groups, sum(len(g.rows) for g in groups if g.level == "runtime"), bands)


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
        # only where it differs from the linear layers' (MoE prompt rows here or in a parent group)
        expert_compute_fraction=(round(p.expert_compute_fraction, 4) if np.isfinite(p.expert_compute_fraction)
                                 and abs(p.expert_compute_fraction / p.prefill_compute_fraction - 1) > 0.01 else None),
        # likewise the int8 kernels' (int8 prompt rows here or in a parent group)
        int8_compute_fraction=(round(p.int8_compute_fraction, 4) if np.isfinite(p.int8_compute_fraction)
                               and abs(p.int8_compute_fraction / p.prefill_compute_fraction - 1) > 0.01 else None),
        # only where this runtime's data had several GPUs: otherwise the value is a prior, and a
        # build that borrows the profile must keep its own (the schema's "empty = the runtime's")
        allreduce_latency_us=(round(p.allreduce_latency_us, 1)
                              if _runtime_has(cases, g.runtime, lambda c: c.gpus > 1) else None),
        # likewise only where this runtime's data decoded several sequences at once
        seq_overhead_us=(round(p.seq_overhead_us, 1) if _runtime_has(
            cases, g.runtime, lambda c: c.workload.batch > 1 and c.metric in ("decode", "e2e")) else None),
        # and only where it had mixture-of-experts decode rows, the cost of an expert visit
        expert_overhead_us=(round(float(p.expert_overhead_us), 2) if expert_weight(cat.runtimes[g.runtime]) > 0
                            and np.isfinite(p.expert_overhead_us) and _runtime_has(
            cases, g.runtime, lambda c: c.metric in ("decode", "e2e") and geometry(c.model).expert_visits > 0) else None),
        # and only where it had time-to-first-token rows
        request_overhead_us=(round(p.request_overhead_us, 1)
                             if _runtime_has(cases, g.runtime, lambda c: c.metric == "ttft") else None),
        decode_low=round(band_decode[0], 3), decode_high=round(band_decode[1], 3),
        prefill_low=round(band_prefill[0], 3), prefill_high=round(band_prefill[1], 3),
        decode_rows=sum(c.metric in ("decode", "e2e") for c in sub),
        prefill_rows=sum(c.metric in ("prefill", "ttft") for c in sub),
        measured_families=tuple(sorted({c.hardware.family for c in sub})),
        measured_formats=tuple(sorted({c.quant.key for c in sub})),
        source=f"fitted by advisor calibrate to {len(sub)} rows of catalog/measured/calibration.csv ({', '.join(sources)})",
        notes=(uncertainty_text(g.uncertainty) + "; " if g.uncertainty else "")
        + f"devices: {', '.join(devices[:12])}{' …' if len(devices) > 12 else ''}",
    )


#: Short names of the fitted fields in the uncertainty text, with their rounding.
_SD_LABELS = {"decode_bw_fraction": ("bw", 3), "layer_overhead_us": ("layer µs", 1), "step_overhead_us": ("step µs", 0),
              "allreduce_latency_us": ("all-reduce µs", 0), "seq_overhead_us": ("per-sequence µs", 1),
              "expert_overhead_us": ("per-expert µs", 1),
              "request_overhead_us": ("per-request µs", 0),
              "prefill_compute_fraction": ("prefill", 3),
              "attention_compute_fraction": ("attention", 3), "expert_compute_fraction": ("experts", 3),
              "int8_compute_fraction": ("int8", 3)}


def uncertainty_text(uncertainty: dict) -> str:
    """'posterior sd: bw ±0.012, layer µs ±3.1 (prior), …' — (prior) where the data did not pin the
    value down (it is the prior's), (bound) where it sits on a physical bound."""
    parts = []
    for name, (label, digits) in _SD_LABELS.items():
        if name in uncertainty:
            sd, status = uncertainty[name]
            parts.append(f"{label} ±{sd:.{digits}f}" + ("" if status == "fitted" else f" ({status})"))
    return "posterior sd: " + ", ".join(parts)


def _runtime_has(cases: Sequence[Case], runtime: str, kind) -> bool:
    """Whether any of ``runtime``'s cases is of the ``kind`` (a predicate): a parameter only such
    rows identify is written to the profiles only then."""
    return any(kind(c) for c in cases if c.runtime.key == runtime)


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
        "# int8_compute_fraction = of the int8 peak, where the linear layers compute in int8 (llama.cpp's quantized kernels);\n"
        "# allreduce_latency_us = per all-reduce (multi-GPU); expert_overhead_us = per expert a token visits per MoE layer\n"
        "# per forward pass. Each is a MAP estimate under a physical prior (PRIOR_SD in\n"
        "# advisor/fit/calibration.py); notes give its posterior sd, (prior) where the data did not pin it down and\n"
        "# (bound) where it sits on a physical bound. Bands = 5th-95th percentile, per profile level, of ln(measured/\n"
        "# predicted) on rows whose whole source or build era was left out of the fit (bands_from, same file).\n"
    )
    entries = []
    for p in result.profiles:
        d = {k: getattr(p, k) for k in ("key", "runtime", "formats_of", "vendor", "family", "tier", "hardware",
                                         "decode_bw_fraction", "layer_overhead_us",
                                         "step_overhead_us", "prefill_compute_fraction", "attention_compute_fraction",
                                         "expert_compute_fraction", "int8_compute_fraction", "allreduce_latency_us",
                                         "seq_overhead_us", "expert_overhead_us", "request_overhead_us", "decode_low",
                                         "decode_high", "prefill_low",
                                         "prefill_high", "decode_rows", "prefill_rows", "measured_families",
                                         "measured_formats", "source", "notes")}
        d["measured_families"], d["measured_formats"] = list(p.measured_families), list(p.measured_formats)
        entries.append({k: v for k, v in d.items() if v not in ("", None, [])})
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
