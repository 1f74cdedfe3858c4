""""Why?" for each figure of a prediction: the formula with this workload's numbers in it, and
the efficiency profile it used. Plain text, shared by the desktop app and the report."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

from advisor.model.devices import matrix_share, side_work_scale, with_side_work
from advisor.model.efficiency import efficiency_for, expert_weight
from advisor.model.geometry import geometry
from advisor.model.inputs import accumulates_fp16, format_products, mla_fraction
from advisor.model.roofline import expert_overhead
from advisor.text.format import duration_ms, num
from advisor.model.notes import efficiency_note

if TYPE_CHECKING:
    from advisor.data.catalog import Catalog
    from advisor.model.config import Config
    from advisor.model.predict import Prediction


@dataclass(frozen=True)
class Explanation:
    title: str
    formula: str
    text: str


def _profile_line(cat: "Catalog", cfg: "Config") -> tuple[str, object]:
    eff = efficiency_for(cat.profiles, cfg.runtime, cfg.hardware)
    note = efficiency_note(eff, cfg.runtime, cfg.hardware)
    line = f"Efficiency profile: {eff.basis}" + (f" — {note}" if note else " (measured on this hardware group)")
    return line, eff


def explain(cat: "Catalog", cfg: "Config", p: "Prediction") -> dict[str, Explanation]:
    """One `Explanation` per figure: ttft, decode, throughput, memory, max_batch, max_context, bound."""
    profile, eff = _profile_line(cat, cfg)
    g = geometry(cfg.model)
    w = cfg.workload
    tp = cfg.gpus if cfg.split == "tp" else 1
    out: dict[str, Explanation] = {}
    band_d = f"band ×{float(eff.decode_low):.2f}–×{float(eff.decode_high):.2f}"
    band_p = f"band ×{float(eff.prefill_low):.2f}–×{float(eff.prefill_high):.2f}"

    step_ms = 1e3 / p.decode_tok_s if p.decode_tok_s else math.nan
    mem_ms = p.decode_bytes_per_step / (p.bandwidth_gb_s * 1e9 * float(eff.decode_bw_fraction)) * 1e3
    # what the hardware's matrix units sustain under dense load, against the parts η_c was fitted on
    # (said where it differs by 2 % or more: the reference parts themselves read 0.99-1.01)
    sustained = matrix_share(cfg.hardware)
    shown = abs(sustained - 1.0) >= 0.02
    sustained_note = (f" Its matrix units sustain {sustained:.2f} of the share of their peak that η_c assumes "
                      f"(measured under dense load, where the chip clocks down), so the FLOPs run at "
                      f"η_c × {sustained:.2f}." if shown else "")
    # a part whose matrix rate is capped below its SMs' does the work beside the products relatively
    # faster (`advisor.model.devices.side_work_scale`): the fitted fractions act larger there
    side = side_work_scale(cfg.hardware)
    eta_c = float(eff.prefill_compute_fraction)
    eta_c_here = with_side_work(eta_c, side)
    side_shown = abs(side - 1.0) >= 0.02
    side_note = (f" Its matrix peak is capped below its SMs' own rate ({side:.2f} of the H100's matrix peak over "
                 f"FP32 rate), so the work beside the products (tile loads, epilogues, norms, softmax) takes "
                 f"{side:.2f} of the time per FLOP it takes there: η_c {eta_c:.2f} acts as {eta_c_here:.2f}." if side_shown else "")
    eta_c_text = f"η_c {eta_c:.2f}" + (f" (→ {eta_c_here:.2f})" if side_shown else "")
    # llama.cpp's FP16-accumulate products on a GeForce die: a peak twice the datasheet's usual figure
    acc_note = (f" {cfg.runtime.name}'s 16-bit products accumulate in FP16, which this "
                f"GeForce die runs at {num(cfg.hardware.fp16_fp16acc_dense_tflops)} TFLOP/s, twice its "
                f"FP32-accumulate {num(cfg.hardware.fp16_dense_tflops)}."
                if accumulates_fp16(cfg.hardware, cfg.runtime, p.compute_dtype) else "")
    comp_ms = (p.decode_flops_per_step / (p.peak_tflops * 1e12 * eta_c_here * sustained) * 1e3
               if math.isfinite(p.peak_tflops) else math.nan)
    seq_us = float(eff.seq_overhead_us)
    # a low-precision format's dense products each cost a little more (`advisor.model.devices.format_gemm_us`)
    products, fmt_dtype, fmt_us = format_products(cfg.hardware, cfg.runtime, cfg.quant, cfg.model)
    # the layers in plain layers' worth (`Geometry.fixed_layers_at`): latent-attention layers launch
    # more small kernels, and the kernel charges them so; each expert a token visits costs its own
    plain_layers = float(g.fixed_layers_at(0.0))
    layers_text = (f"{num(plain_layers)} plain layers' worth ({g.layers} layers; latent-attention "
                   f"layers count more)" if abs(plain_layers - g.layers) > 0.5 else f"{g.layers} layers")
    expert_us = float(expert_overhead(eff, expert_weight(cfg.runtime)))
    visits = g.expert_visits if expert_us > 0 else 0
    experts_text = (f" + {visits:,} expert visits ({g.experts_per_token + g.shared_experts} a token in each of "
                    f"{g.moe_layers} MoE layers) × {num(expert_us)} µs" if visits else "")
    fixed_ms = (plain_layers * float(eff.layer_overhead_us) + visits * expert_us + products * fmt_us
                + float(eff.step_overhead_us) + w.batch * seq_us) / 1e3
    per_seq = f" + {w.batch} × {num(seq_us)} µs per sequence" if seq_us > 0 else ""
    per_product = (f" + {products} {fmt_dtype.upper()} products × {num(fmt_us)} µs (quantizing "
                   f"activations)") if products else ""
    mla = mla_fraction(cfg.hardware, cfg.runtime, cfg.kv_dtype) if g.latent_rank else math.nan
    mla_note = (f" Its latent attention (MLA) computes at {mla:.2f} of the attention's peak, what the "
                f"{cfg.hardware.family.replace('nvidia-', '').title()} MLA decode kernels reach (not η_c)."
                if math.isfinite(mla) else "")
    # a mixture of experts' grouped kernels add their products to their reads (`roofline.decode_step`)
    exp_ms = float(p.decode_expert_products_s) * 1e3
    # (a profile without an experts' fraction has nan there: the linear layers' own, as the kernel takes it)
    exp_eta = float(eff.expert_compute_fraction)
    exp_eta = exp_eta if math.isfinite(exp_eta) else eta_c
    exp_gflop = float(p.decode_expert_products_flops) / 1e9
    experts_note = (f" The routed experts run as grouped kernels that multiply after they read: the products "
                    f"of each token past a touched expert's first, {num(exp_gflop)} GFLOP per GPU at "
                    f"{num(exp_gflop / exp_ms)} TFLOP/s (η_exp {exp_eta:.2f} with the format's share), add "
                    f"{num(exp_ms)} ms." if exp_ms >= 0.001 else "")
    out["decode"] = Explanation(
        "Decode tok/s per user",
        "step time = max(bytes / (bandwidth × η_bw), FLOPs / (peak × η_c)) + layers × τ_layer "
        "+ expert visits × τ_expert + τ_step + batch × τ_seq + GPU exchanges"
        + (" + the routed experts' products past each one's first token (grouped kernels multiply after they read)"
           if cfg.model.experts else ""),
        f"One step of {w.batch} sequence{'s' if w.batch != 1 else ''} at the middle of the output moves {num(p.decode_bytes_per_step / 1e9)} GB "
        f"per GPU (weights{' split over ' + str(tp) + ' GPUs' if tp > 1 else ''} plus the KV cache) and computes "
        f"{num(p.decode_flops_per_step / 1e9)} GFLOP. At {num(p.bandwidth_gb_s)} GB/s × η_bw "
        f"{float(eff.decode_bw_fraction):.2f} the bytes take {num(mem_ms)} ms; at {num(p.peak_tflops)} TFLOP/s "
        f"{p.compute_dtype} × {eta_c_text}{' × ' + format(sustained, '.2f') if shown else ''} the FLOPs take {num(comp_ms)} ms; fixed "
        f"costs {layers_text} × {num(float(eff.layer_overhead_us))} µs{experts_text}{per_product} + "
        f"{num(float(eff.step_overhead_us))} µs{per_seq} = "
        f"{num(fixed_ms)} ms.{experts_note}{mla_note}{sustained_note}{side_note}{acc_note} Averaged over the output: {num(step_ms)} ms per step = {num(p.decode_tok_s)} tok/s "
        f"({band_d}: {num(p.decode_low_tok_s)}–{num(p.decode_high_tok_s)}). The 100 % roofline ceiling is "
        f"{num(p.decode_ceiling_tok_s)} tok/s.\n{profile}")
    out["throughput"] = Explanation(
        "Aggregate decode tok/s", "throughput = batch × per-user tok/s",
        f"{w.batch} × {num(p.decode_tok_s)} = {num(p.throughput_tok_s)} tok/s. The weights are read once per step "
        f"for the whole batch, so throughput grows with the batch until the compute roof binds near batch "
        f"≈ {num(p.knee_batch)} (the knee) or the KV cache runs out at {p.max_batch:,} sequences.\n{profile}")
    if w.prompt_tokens > 0 and math.isfinite(p.prefill_tok_s):
        lin = 2 * g.flops_params_per_token * w.batch * w.prompt_tokens
        # the element-wise kernels between the products: the norms whole on each GPU, the rest split
        repl, split, experts = g.activation_bytes
        act_gb = w.batch * w.prompt_tokens * (repl + (split + experts) / tp) / 1e9
        act_ms = act_gb * 1e9 / (p.bandwidth_gb_s * 1e9 * float(eff.decode_bw_fraction)) * 1e3
        # pipeline stages that work on different micro-batches at once (`roofline.pipeline_share`)
        piped_text = (f"; the pipeline stages work on different micro-batches at once, so the pass takes "
                      f"{p.prefill_pipeline_share:.2f} of their work one after another"
                      if p.prefill_pipeline_share < 0.999 else "")
        out["ttft"] = Explanation(
            "Time to first token",
            "TTFT = linear FLOPs / (peak × η_c) + attention FLOPs / (peak × η_att) + element-wise bytes / (BW × η_bw) "
            "+ weight reads per micro-batch + fixed costs",
            f"{w.batch} prompt(s) of {w.prompt_tokens:,} tokens after {w.depth_tokens:,} cached: "
            f"{num(lin / 1e12)} TFLOP in the linear layers (2 × {num(g.flops_params_per_token / 1e9)} B active "
            f"parameters × {w.batch * w.prompt_tokens:,} tokens) plus the causal attention, on "
            f"{num(p.peak_tflops)} TFLOP/s {p.compute_dtype} at {eta_c_text} and "
            f"η_att {float(eff.attention_compute_fraction):.2f}; the element-wise kernels between the products "
            f"(norms, RoPE, the gated activation) move {num(act_gb)} GB per GPU, {num(act_ms)} ms at η_bw "
            f"{float(eff.decode_bw_fraction):.2f}{piped_text}: {duration_ms(p.ttft_ms)} "
            f"({band_p}: {duration_ms(p.ttft_low_ms)}–{duration_ms(p.ttft_high_ms)}), {num(p.prefill_tok_s)} prompt "
            f"tok/s, {p.prefill_bound}-bound.{sustained_note}{side_note}{acc_note} The 100 % roofline would do {num(p.prefill_ceiling_tok_s)} tok/s.\n{profile}")
    else:
        out["ttft"] = Explanation("Time to first token", "TTFT = one decode step (no prompt)",
                                  f"With no prompt the first token takes one decode step: {duration_ms(p.ttft_ms)}.\n{profile}")
    out["memory"] = Explanation(
        "Memory plan", "weights + KV cache + workspace + runtime overhead ≤ usable memory",
        f"Weights {num(p.weights_gb)} GB ({cfg.quant.name}, {num(cfg.model.params_total_b)} B parameters) + KV "
        f"{num(p.kv_gb)} GB ({w.batch} × {w.context_tokens:,} tokens × {num(p.kv_bytes_per_token / 1024)} KiB per "
        f"token at {cfg.kv_dtype.name}) + workspace {num(p.workspace_gb)} GB + overhead {num(p.overhead_gb)} GB = "
        f"{num(p.total_gb)} GB against {num(p.usable_gb)} GB usable on {cfg.gpus} GPU{'s' if cfg.gpus != 1 else ''} "
        f"({cfg.runtime.name} claims {cfg.runtime.memory_fraction:.0%} of memory"
        f"{' after the weights' if cfg.runtime.memory_fraction_of == 'free' else ''}). "
        + ("It fits." if p.fits else f"Short by {num(p.shortfall_gb)} GB."))
    out["max_batch"] = Explanation(
        "Max batch", "max batch = floor(KV budget / KV bytes per sequence)",
        f"What is left after weights, workspace and overhead holds {p.max_batch:,} sequences of "
        f"{w.context_tokens:,} tokens at {num(p.kv_bytes_per_token / 1024)} KiB per token ({cfg.kv_dtype.name}).")
    out["max_context"] = Explanation(
        "Max context", "max context = KV budget / KV bytes per token (one sequence), capped at the native context",
        f"One sequence can reach {p.max_context:,} tokens; {cfg.model.name} is trained for "
        f"{cfg.model.native_context:,}.")
    out["bound"] = Explanation(
        "Which roof binds", "decode is memory-bound below the knee batch, compute-bound above it",
        f"Decode here is {p.bound}-bound: arithmetic intensity {num(p.arithmetic_intensity)} FLOP/byte against the "
        f"device's ridge at {num(p.peak_tflops * 1e12 / (p.bandwidth_gb_s * 1e9))} FLOP/byte. Weights alone turn "
        f"compute-bound beyond batch ≈ {num(p.knee_batch)}. Prefill is {p.prefill_bound}-bound.")
    return out
