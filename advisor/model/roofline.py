"""The performance model: memory plan, prefill/TTFT, decode speed and their roofline ceilings.

One vectorised function, `evaluate`, does the arithmetic of DESIGN.md §2 on numpy arrays that
broadcast against each other, so that one call prices a single configuration (`predict`) or the
whole catalog × quantizations × GPU counts × batch sizes (`advisor.model.sweep`). Units: bytes,
FLOPs, seconds inside; GB (1e9 bytes), ms and tokens/s in results.

Times per GPU step (B sequences, context c):
- decode: max(bytes / (BW·η_bw), FLOPs / (peak·η_c)) + layers·τ_layer + τ_step + communication,
  averaged over the output tokens (Simpson's rule over the growing context);
- prefill of s tokens after d cached: linear FLOPs / (peak·η_c) + attention FLOPs / (peak·η_att)
  + weight bytes / (BW·η_bw) per micro-batch + fixed costs per micro-batch.
Tensor parallel (tp) divides bytes and FLOPs per GPU and adds two all-reduces per layer;
pipeline/layer split (pp, llama.cpp's default) runs the GPUs one after another for a sequence.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

from advisor.model.devices import link_gb_s, max_gpus, peak_for, usable_memory_gb
from advisor.model.efficiency import Efficiency, efficiency_for
from advisor.data.errors import AdvisorError
from advisor.model.geometry import Geometry, WeightBits, bytes_read, geometry, weight_bits, weight_bytes
from advisor.data.specs import Hardware, KvDtype, Model, Quant, Runtime

#: Longest context we accept anywhere, tokens (beyond any released model).
MAX_CONTEXT_TOKENS = 100_000_000
MAX_BATCH = 1_000_000
#: Activation workspace per token in flight: hidden states and attention outputs (≈4 fp16 copies
#: of `hidden`) plus the FFN's intermediate activations (≈2 fp16 copies); logits are fp32 rows,
#: computed for at most LOGIT_ROWS tokens per pass. An estimate of what engines allocate.
WORKSPACE_HIDDEN_BYTES = 8
WORKSPACE_FFN_BYTES = 4
LOGIT_ROWS = 512
#: Activations exchanged between GPUs are 16-bit.
ACTIVATION_BYTES = 2


@dataclass(frozen=True)
class Workload:
    """What is asked of the model: B sequences, each with a prompt, an output, and a KV depth.

    ``depth_tokens`` are already in the KV cache before the prompt (a long chat history, a
    cached system prompt); decode then runs from depth + prompt to depth + prompt + output.
    """

    batch: int = 1
    prompt_tokens: int = 512
    output_tokens: int = 128
    depth_tokens: int = 0

    @property
    def context_tokens(self) -> int:
        return self.depth_tokens + self.prompt_tokens + self.output_tokens

    def check(self, model: Model | None = None) -> None:
        """Raise `AdvisorError` for numbers no real workload has."""
        for name, value, low in (("batch", self.batch, 1), ("prompt", self.prompt_tokens, 0),
                                 ("output", self.output_tokens, 0), ("depth", self.depth_tokens, 0)):
            if not isinstance(value, (int, np.integer)) or isinstance(value, bool):
                raise AdvisorError(f"{name} must be a whole number, got {value!r}")
            if value < low:
                raise AdvisorError(f"{name} must be at least {low}, got {value}")
        if self.batch > MAX_BATCH:
            raise AdvisorError(f"batch {self.batch} is absurd (limit {MAX_BATCH:,})")
        if self.prompt_tokens + self.output_tokens == 0:
            raise AdvisorError("prompt and output are both 0: there is nothing to compute")
        ctx = self.context_tokens
        if ctx > MAX_CONTEXT_TOKENS:
            raise AdvisorError(f"context of {ctx:,} tokens (depth + prompt + output) is beyond any model")
        if model is not None and ctx > model.native_context:
            raise AdvisorError(
                f"context of {ctx:,} tokens (depth {self.depth_tokens:,} + prompt {self.prompt_tokens:,} + "
                f"output {self.output_tokens:,}) exceeds {model.name}'s native context of {model.native_context:,}")


def evaluate(g: Geometry, *, bw_gb_s, capacity_gb, peak_tflops, link_gb_s_, b_non_expert, b_expert,
             b_embedding, b_head, kv_bits, memory_fraction, memory_of_free, reserve_gb, overhead_gb,
             workspace_tokens, allreduce_us, tensor_parallel, eta_bw, tau_layer_us, tau_step_us, eta_compute,
             eta_attention, gpus, batch, prompt, output, depth, memory_only: bool = False,
             dtype=np.float64) -> dict[str, np.ndarray]:
    """The model's arithmetic on broadcastable arrays; see the module docstring. Returns arrays.

    ``memory_only``: stop after the memory plan (a recommender checks capacity at the longest
    context separately from speed at the typical one). ``dtype``: float64 for single predictions;
    sweeps over hundreds of thousands of configurations use float32 (7 significant digits), which
    halves the memory traffic.
    """
    ft = dtype
    n = np.asarray(gpus, ft)
    tpm = np.asarray(tensor_parallel, bool)
    tp = np.where(tpm, n, 1.0)
    pp = np.where(tpm, 1.0, n)
    B = np.asarray(batch, ft)
    s = np.asarray(prompt, ft)
    o = np.asarray(output, ft)
    d = np.asarray(depth, ft)
    bw = np.asarray(bw_gb_s, ft) * 1e9
    peak = np.asarray(peak_tflops, ft) * 1e12
    link = np.asarray(link_gb_s_, ft) * 1e9
    kvb = np.asarray(kv_bits, ft) / 8.0
    W = float(g.window) if g.window else np.inf

    # ---- weights -------------------------------------------------------------------------------
    bits = WeightBits(*(np.asarray(x, ft) for x in (b_non_expert, b_expert, b_embedding, b_head)))
    weights_total = weight_bytes(g, bits)
    weights_gpu = weights_total / n

    # ---- KV cache per sequence per GPU -----------------------------------------------------------
    per_layer = float(g.kv_elems_per_layer)
    if g.kv_splits:
        tp_share = np.ceil(g.kv_heads / tp) / g.kv_heads
    else:
        tp_share = np.ones_like(tp)  # MLA's latent KV is replicated on every GPU
    kv_share = np.where(tpm, tp_share, 1.0 / n)
    full_elems = g.full_layers * per_layer * kv_share
    slide_elems = g.sliding_layers * per_layer * kv_share
    state_gpu = g.linear_layers * g.linear_state_bytes / n

    def kv_seq(c):
        return kvb * (full_elems * c + slide_elems * np.minimum(c, W)) + state_gpu

    c_max = d + s + o
    kv_need = B * kv_seq(c_max)

    # ---- memory plan (per GPU) ---------------------------------------------------------------------
    ffn_act = g.experts_per_token * g.moe_intermediate if g.experts else g.intermediate
    ws_tok = np.asarray(workspace_tokens, ft)
    workspace = ws_tok * (WORKSPACE_HIDDEN_BYTES * g.hidden + WORKSPACE_FFN_BYTES * ffn_act) \
        + np.minimum(ws_tok, LOGIT_ROWS) * 4.0 * g.vocab
    capacity = np.asarray(capacity_gb, ft) * 1e9
    reserve = np.asarray(reserve_gb, ft) * 1e9
    overhead = np.asarray(overhead_gb, ft) * 1e9
    frac = np.asarray(memory_fraction, ft)
    free_after_weights = capacity - reserve - overhead - weights_gpu - workspace
    kv_budget = np.where(np.asarray(memory_of_free, bool), frac * free_after_weights,
                         capacity * frac - reserve - overhead - weights_gpu - workspace)
    usable = kv_budget + weights_gpu + workspace + overhead
    fits = (kv_budget >= kv_need) & (kv_budget >= 0)
    seq_bytes = kv_seq(c_max)
    # the branches np.where discards may divide by ~0 and overflow float32: silence them
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        max_batch = np.where(kv_budget > 0, np.floor(kv_budget / np.maximum(seq_bytes, 1e-30)), 0.0)
        # longest context at B=1: kv_seq(c) <= budget, piecewise linear in c
        rem = (kv_budget - state_gpu) / kvb
        both = full_elems + slide_elems
        below_window = rem / np.maximum(both, 1e-30)
        above_window = np.where(full_elems > 0, W + (rem - both * W) / np.maximum(full_elems, 1e-30), np.inf)
        ctx = np.where(rem >= both * W, above_window, below_window)
    max_context = np.clip(np.floor(np.nan_to_num(ctx, posinf=g.native_context)), 0, g.native_context)
    max_context = np.where(kv_budget > 0, max_context, 0.0)
    max_batch = np.minimum(max_batch, MAX_BATCH)
    memory = {
        "weights_bytes": weights_total, "weights_gpu_bytes": weights_gpu, "kv_gpu_bytes": kv_need,
        "kv_seq_bytes": seq_bytes, "workspace_gpu_bytes": workspace + 0 * n, "overhead_gpu_bytes": overhead + 0 * n,
        "usable_gpu_bytes": usable, "capacity_gpu_bytes": capacity + 0 * n, "kv_budget_gpu_bytes": kv_budget,
        "fits": fits, "max_batch": max_batch, "max_context": max_context,
    }
    if memory_only:
        return memory

    # ---- decode ----------------------------------------------------------------------------------
    out_params = g.output_params
    attn_coeff = 2.0 * g.heads * (g.qk_head_dim + g.v_head_dim)   # FLOPs per token per layer per context token

    def attn_flops(c):
        return attn_coeff * (g.full_layers * c + g.sliding_layers * np.minimum(c, W))

    w_read = bytes_read(g, bits, g.expert_fraction(B))
    dec_flops_lin = B * 2.0 * (g.flops_params_per_token + out_params)
    eta_bw_ = np.asarray(eta_bw, ft)
    eta_c = np.asarray(eta_compute, ft)
    fixed = g.layers * np.asarray(tau_layer_us, ft) * 1e-6 + np.asarray(tau_step_us, ft) * 1e-6
    lat = np.asarray(allreduce_us, ft) * 1e-6
    msg = B * g.hidden * ACTIVATION_BYTES
    comm = np.where(tp > 1, 2.0 * g.layers * (lat + 2.0 * (tp - 1) / tp * msg / link), 0.0) \
        + np.where(pp > 1, (pp - 1) * (lat + msg / link), 0.0)

    def step_parts(c):
        bytes_ = w_read / tp + B * kv_seq(c) * pp
        flops = (dec_flops_lin + B * attn_flops(c)) / tp
        return bytes_, flops

    c0 = d + s
    c1 = c0 + o
    cm = 0.5 * (c0 + c1)
    # one evaluation of bytes and FLOPs at each Simpson node serves both the expected time and the ceiling
    nodes = [step_parts(c) for c in (c0, cm, c1)]
    eff_bw, eff_c = bw * eta_bw_, peak * eta_c

    def simpson(values):
        return (values[0] + 4.0 * values[1] + values[2]) / 6.0

    # fmax: with no compute peak in the catalog (nan) the memory roof alone decides
    t_step = simpson([np.fmax(b_ / eff_bw, f_ / eff_c) for b_, f_ in nodes]) + fixed + comm
    t_step_ceil = simpson([np.fmax(b_ / bw, f_ / peak) for b_, f_ in nodes])
    t_step_first = np.fmax(nodes[0][0] / eff_bw, nodes[0][1] / eff_c) + fixed + comm
    mid_bytes, mid_flops = nodes[1]
    t_mem_mid = mid_bytes / eff_bw
    t_comp_mid = mid_flops / eff_c
    decode_tok_s = 1.0 / t_step
    decode_ceiling = 1.0 / t_step_ceil

    # The knee: the batch where the decode compute roof meets the memory roof for the weights
    # alone (ideal roofs, all experts read): B* = weight bytes · peak / (BW · FLOPs per token).
    # KV reads grow with B too and push the real knee higher, or remove it at long context.
    f1 = 2.0 * (g.flops_params_per_token + out_params) / tp
    w_all = bytes_read(g, bits, 1.0) / tp
    knee = w_all * peak / (bw * f1)

    # ---- prefill ---------------------------------------------------------------------------------
    T = B * s
    ub = np.maximum(np.ceil(T / ws_tok), 1.0)
    tok_per_ub = np.minimum(T, ws_tok)
    pf_w_bytes = bytes_read(g, bits, g.expert_fraction(tok_per_ub), with_output=False)
    pf_lin = 2.0 * g.flops_params_per_token * T + 2.0 * out_params * B  # logits of the last token only
    pf_att = B * attn_coeff * s * (g.full_layers * (d + s / 2.0) + g.sliding_layers * np.minimum(W, d + s / 2.0))
    eta_att = np.asarray(eta_attention, ft)
    pf_comm = np.where(tp > 1, ub * 2.0 * g.layers * (lat + 2.0 * (tp - 1) / tp * tok_per_ub * g.hidden * ACTIVATION_BYTES / link), 0.0) \
        + np.where(pp > 1, ub * (pp - 1) * (lat + tok_per_ub * g.hidden * ACTIVATION_BYTES / link), 0.0)
    t_prefill = (pf_lin / tp / (peak * eta_c) + pf_att / tp / (peak * eta_att)
                 + ub * pf_w_bytes / tp / (bw * eta_bw_) + ub * fixed + pf_comm)
    t_prefill_ceil = np.maximum((pf_lin + pf_att) / tp / peak, pf_w_bytes / tp / bw)
    has_prompt = T > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        prefill_tok_s = np.where(has_prompt, T / t_prefill, np.nan)
        prefill_ceiling = np.where(has_prompt, T / t_prefill_ceil, np.nan)
    t_prefill = np.where(has_prompt, t_prefill, 0.0)
    # The first token comes out of the prefill pass; with no prompt it takes one decode step.
    ttft = np.where(has_prompt, t_prefill, t_step_first)
    compute_share = np.where(has_prompt, (pf_lin + pf_att) / tp / peak / np.maximum(t_prefill_ceil, 1e-30), np.nan)

    # Pieces the calibration fits against: ideal (100 %) times, and what multiplies each fitted
    # overhead (per-layer cost, all-reduce latency), per decode step and per prefill.
    lat_coeff = np.where(tp > 1, 2.0 * g.layers, 0.0) + np.where(pp > 1, pp - 1, 0.0)
    parts = {
        "dec_mem_ideal_s": mid_bytes / bw, "dec_comp_ideal_s": mid_flops / peak,
        "dec_comm_lat_coeff": lat_coeff, "dec_comm_bw_s": comm - lat * lat_coeff,
        "pf_lin_ideal_s": pf_lin / tp / peak, "pf_att_ideal_s": pf_att / tp / peak,
        "pf_mem_ideal_s": ub * pf_w_bytes / tp / bw, "ubatches": ub,
        "pf_comm_lat_coeff": ub * lat_coeff, "pf_comm_bw_s": pf_comm - lat * ub * lat_coeff,
    }
    return parts | memory | {
        "decode_tok_s": decode_tok_s, "decode_ceiling_tok_s": decode_ceiling, "throughput_tok_s": B * decode_tok_s,
        "decode_memory_s": t_mem_mid, "decode_compute_s": t_comp_mid, "decode_fixed_s": fixed + comm + 0 * n,
        "decode_bytes": mid_bytes, "decode_flops": mid_flops, "knee_batch": knee,
        "prefill_s": t_prefill, "prefill_tok_s": prefill_tok_s, "prefill_ceiling_tok_s": prefill_ceiling,
        "prefill_flops": pf_lin + pf_att, "prefill_bytes": ub * pf_w_bytes, "prefill_compute_share": compute_share,
        "ttft_s": ttft,
    }


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

    @property
    def arithmetic_intensity(self) -> float:
        """Decode FLOPs per byte moved (the x coordinate on a roofline chart)."""
        return self.decode_flops_per_step / self.decode_bytes_per_step if self.decode_bytes_per_step else math.nan

    def to_dict(self) -> dict[str, Any]:
        out = asdict(self)
        out["notes"] = list(self.notes)
        out["arithmetic_intensity"] = self.arithmetic_intensity
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in out.items()}


def check_compatible(hw: Hardware, quant: Quant, kv: KvDtype, runtime: Runtime, gpus: int,
                     model: Model | None = None) -> None:
    """Raise `AdvisorError` when the runtime cannot run this combination at all."""
    if model is not None and quant.non_expert_bits_per_weight is not None and not model.is_moe:
        raise AdvisorError(f"{quant.name} quantizes only the experts of MoE models; {model.name} is dense")
    if runtime.vendors and hw.vendor not in runtime.vendors:
        raise AdvisorError(f"{runtime.name} does not run on {hw.vendor} hardware ({hw.name}); "
                           f"it supports {', '.join(runtime.vendors)}")
    if quant.runtimes and runtime.format_family not in quant.runtimes:
        raise AdvisorError(f"{runtime.name} cannot load {quant.name} weights; runtimes that can: {', '.join(quant.runtimes)}")
    if kv.runtimes and runtime.format_family not in kv.runtimes:
        raise AdvisorError(f"{runtime.name} has no {kv.name} KV cache; runtimes that do: {', '.join(kv.runtimes)}")
    if not isinstance(gpus, (int, np.integer)) or isinstance(gpus, bool) or gpus < 1:
        raise AdvisorError(f"gpus must be a whole number of at least 1, got {gpus!r}")
    limit = max_gpus(hw)
    if gpus > limit:
        raise AdvisorError(f"{hw.name} is used {limit} at a time at most here (asked for {gpus})")


def default_runtime_key(hw: Hardware) -> str:
    """The runtime people most often use on this hardware."""
    if hw.kind in ("datacenter",) and hw.vendor in ("NVIDIA", "AMD"):
        return "vllm"
    return "llama.cpp"


def default_quant_key(runtime: Runtime) -> str:
    return "q4_k_m" if "gguf" in runtime.quant_kinds else "bf16"


def predict(hw: Hardware, model: Model, quant: Quant, runtime: Runtime, workload: Workload,
            kv: KvDtype, gpus: int = 1, profiles: dict | None = None, parallelism: str | None = None,
            check_context: bool = True) -> Prediction:
    """Predict one configuration. Raises `AdvisorError` for impossible input, never for "does not fit"."""
    workload.check(model if check_context else None)
    check_compatible(hw, quant, kv, runtime, gpus, model)
    par = parallelism or runtime.parallelism
    if par not in ("tp", "pp"):
        raise AdvisorError(f"parallelism must be tp or pp, got {par!r}")
    g = geometry(model)
    eff = efficiency_for(profiles, runtime, hw)
    compute = runtime.compute_for(quant, hw.vendor)
    peak, used_dtype = peak_for(hw, compute)  # nan when the catalog has no figure: prefill unknown
    bits = weight_bits(quant)
    r = evaluate(
        g, bw_gb_s=hw.bandwidth_gb_s, capacity_gb=usable_memory_gb(hw), peak_tflops=peak, link_gb_s_=link_gb_s(hw),
        b_non_expert=bits.non_expert, b_expert=bits.expert, b_embedding=bits.embedding, b_head=bits.head,
        kv_bits=kv.bits, memory_fraction=runtime.memory_fraction, memory_of_free=runtime.memory_fraction_of == "free",
        reserve_gb=runtime.reserve_gb, overhead_gb=runtime.overhead_gb, workspace_tokens=runtime.workspace_tokens,
        allreduce_us=eff.allreduce_latency_us, tensor_parallel=(par == "tp"), eta_bw=eff.decode_bw_fraction,
        tau_layer_us=eff.layer_overhead_us, tau_step_us=eff.step_overhead_us, eta_compute=eff.prefill_compute_fraction,
        eta_attention=eff.attention_compute_fraction, gpus=gpus, batch=workload.batch, prompt=workload.prompt_tokens,
        output=workload.output_tokens, depth=workload.depth_tokens,
    )
    return _to_prediction(r, hw, model, quant, kv, runtime, workload, gpus, par, eff, peak, used_dtype, compute, g)


def _to_prediction(r: dict, hw: Hardware, model: Model, quant: Quant, kv: KvDtype, runtime: Runtime,
                   w: Workload, gpus: int, par: str, eff: Efficiency, peak: float, used_dtype: str,
                   wanted_dtype: str, g: Geometry) -> Prediction:
    v = {k: float(np.asarray(a).reshape(-1)[0]) for k, a in r.items()}
    gb = 1e9
    weights = v["weights_bytes"] / gb
    kv_total = v["kv_gpu_bytes"] * gpus / gb
    ws = v["workspace_gpu_bytes"] * gpus / gb
    over = v["overhead_gpu_bytes"] * gpus / gb
    per_gpu_total = (v["weights_gpu_bytes"] + v["kv_gpu_bytes"] + v["workspace_gpu_bytes"] + v["overhead_gpu_bytes"]) / gb
    per_gpu_usable = v["usable_gpu_bytes"] / gb
    fits = bool(v["fits"])
    shortfall = max(0.0, per_gpu_total - per_gpu_usable) * gpus if not fits else 0.0
    dec, pre = v["decode_tok_s"], v["prefill_tok_s"]
    ceiling_d, ceiling_p = v["decode_ceiling_tok_s"], v["prefill_ceiling_tok_s"]
    notes: list[str] = []
    if not fits:
        if v["kv_budget_gpu_bytes"] < 0:
            notes.append(f"weights do not fit: needs {per_gpu_total:.1f} GB per GPU, {per_gpu_usable:.1f} GB usable "
                         f"(short by {shortfall:.1f} GB over {gpus} GPU{'s' if gpus > 1 else ''})")
        else:
            notes.append(f"KV cache does not fit: {w.batch} × {w.context_tokens:,} tokens needs "
                         f"{v['kv_gpu_bytes'] / gb:.1f} GB per GPU, {v['kv_budget_gpu_bytes'] / gb:.1f} GB left after weights")
    if not math.isfinite(peak):
        notes.append(f"the catalog has no compute peak for {hw.name}: prefill and TTFT cannot be predicted, "
                     "decode assumes the memory roof binds")
    elif used_dtype != wanted_dtype and hw.kind not in ("apple", "cpu"):
        notes.append(f"{hw.name} has no {wanted_dtype} matrix peak in the catalog: using {used_dtype}")
    if not eff.calibrated:
        notes.append(f"efficiencies are {eff.basis}: wide band")
    elif eff.level.startswith("sibling"):
        notes.append(f"no measurements of {runtime.name} on {hw.vendor} hardware: using '{eff.basis}', measured "
                     "with another build or backend of the same engine (band widened)")
    elif eff.level in ("vendor", "runtime"):
        notes.append(f"no measurements for {hw.family} on {runtime.name}: profile '{eff.basis}' extrapolated")
    if hw.kind == "apple" and not hw.gpu_wired_limit_gb:
        notes.append("usable memory = default macOS GPU wired limit (2/3 of RAM up to 32 GB, 3/4 above)")
    kv_per_token = g.kv_bytes_per_token(kv.bits)

    def low_high(x, lo, hi, ceiling):
        return x * lo, min(x * hi, ceiling) if math.isfinite(ceiling) else x * hi

    d_lo, d_hi = low_high(dec, eff.decode_low, eff.decode_high, ceiling_d)
    p_lo, p_hi = low_high(pre, eff.prefill_low, eff.prefill_high, ceiling_p) if math.isfinite(pre) else (math.nan, math.nan)
    ttft_ms = v["ttft_s"] * 1e3
    if w.prompt_tokens > 0:
        ttft_lo, ttft_hi = ttft_ms * pre / p_hi, ttft_ms * pre / p_lo
    else:
        ttft_lo, ttft_hi = ttft_ms * dec / d_hi, ttft_ms * dec / d_lo
    return Prediction(
        hardware=hw.name, model=model.name, quant=quant.name, kv_dtype=kv.name, runtime=runtime.name, gpus=gpus,
        parallelism="tensor parallel" if par == "tp" else ("layer split (pipeline)" if gpus > 1 else "single device"),
        batch=w.batch, prompt_tokens=w.prompt_tokens, output_tokens=w.output_tokens, depth_tokens=w.depth_tokens,
        weights_gb=weights, kv_gb=kv_total, workspace_gb=ws, overhead_gb=over,
        total_gb=weights + kv_total + ws + over, usable_gb=per_gpu_usable * gpus,
        per_gpu_total_gb=per_gpu_total, per_gpu_usable_gb=per_gpu_usable, fits=fits, shortfall_gb=shortfall,
        max_batch=int(v["max_batch"]), max_context=int(v["max_context"]), kv_bytes_per_token=kv_per_token,
        ttft_ms=ttft_ms, ttft_low_ms=ttft_lo, ttft_high_ms=ttft_hi,
        prefill_tok_s=pre, prefill_low_tok_s=p_lo, prefill_high_tok_s=p_hi, prefill_ceiling_tok_s=ceiling_p,
        prefill_bound=("compute" if v["prefill_compute_share"] >= 0.5 else "memory") if math.isfinite(pre) else "none",
        decode_tok_s=dec, decode_low_tok_s=d_lo, decode_high_tok_s=d_hi, decode_ceiling_tok_s=ceiling_d,
        throughput_tok_s=v["throughput_tok_s"],
        bound="compute" if v["decode_compute_s"] > v["decode_memory_s"] else "memory",
        knee_batch=v["knee_batch"], decode_bytes_per_step=v["decode_bytes"], decode_flops_per_step=v["decode_flops"],
        bandwidth_gb_s=hw.bandwidth_gb_s, peak_tflops=peak, compute_dtype=used_dtype,
        efficiency_basis=eff.basis, calibrated=eff.calibrated, notes=tuple(notes),
    )
