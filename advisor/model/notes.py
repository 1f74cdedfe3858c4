"""The warnings a prediction carries (part of its record, in English): does not fit, missing figures, borrowed or
extrapolated efficiency profiles. The CLI prints them, the app shows them, the report lists them."""

from __future__ import annotations

import math

from advisor.model.config import context_note
from advisor.model.devices import domain_gpus


def efficiency_note(eff, runtime, hw, evidence: str = "", quant=None) -> str | None:
    """Where the efficiencies come from when that should temper trust in the numbers. ``evidence``
    (`advisor.model.efficiency.evidence`) says whether rows of this hardware family and format back it."""
    if not eff.calibrated:
        return f"efficiencies are {eff.basis}: wide band"
    if eff.level.startswith("sibling"):
        return (f"no measurements of {runtime.name} on {hw.vendor} hardware: using '{eff.basis}', measured "
                "with another build or backend of the same engine (band widened)")
    if evidence == "extrapolated" and quant is not None:
        return (f"no measurements of {runtime.name} with {_format_words(quant)} on {hw.family}: profile "
                f"'{eff.basis}' extrapolated")
    if not evidence and eff.level in ("vendor", "runtime"):
        return f"no measurements for {hw.family} on {runtime.name}: profile '{eff.basis}' extrapolated"
    return None


def unpack_note(cfg, used_dtype: str, decode_compute_s: float, decode_memory_s: float) -> str | None:
    """Where the runtime's vector kernels unpack the format more slowly than the GPU reads its bytes
    (`advisor.model.inputs.format_costs`), so that a few sequences decode at the unpacking's rate and a
    smaller file is not a faster one."""
    from advisor.model.inputs import format_costs

    rt, q, hw = cfg.runtime, cfg.quant, cfg.hardware
    if not rt.vector_batch_max or cfg.workload.batch > rt.vector_batch_max or decode_compute_s <= decode_memory_s:
        return None
    if math.isnan(format_costs(hw, rt, q, used_dtype == "int8")[1]):
        return None
    return (f"{rt.name}'s vector kernels unpack {q.name} more slowly than {hw.name} reads it: up to "
            f"{rt.vector_batch_max} sequences decode at the unpacking's rate, not the bandwidth's, so fewer bits "
            "need not be faster (measured on an H200 at one sequence: Q4_0 343 tok/s, IQ4_XS 320, Q8_0 250, "
            "Q6_K 206, Q3_K_S 193)")


def _format_words(quant) -> str:
    from advisor.model.efficiency import format_class

    cls = format_class(quant)
    return {"gguf": "GGUF weights", "16-bit": "16-bit weights"}.get(cls, f"{quant.name} weights")


def prediction_notes(cfg, eff, *, evidence: str = "", fits: bool, weights_fit: bool, per_gpu_total_gb: float, per_gpu_usable_gb: float,
                     shortfall_gb: float, kv_gpu_gb: float, kv_budget_gpu_gb: float, peak: float, used_dtype: str,
                     wanted_dtype: str, sram_gpu_gb: float | None = None, main_gpu_gb: float | None = None,
                     ddr_gpu_gb: float | None = None) -> list[str]:
    hw, w, gpus = cfg.hardware, cfg.workload, cfg.gpus
    notes: list[str] = []
    if not fits:
        if not weights_fit:
            notes.append(f"weights do not fit: needs {per_gpu_total_gb:.1f} GB per GPU, {per_gpu_usable_gb:.1f} GB usable "
                         f"(short by {shortfall_gb:.1f} GB over {gpus} GPU{'s' if gpus > 1 else ''})")
        else:
            notes.append(f"KV cache does not fit: {w.batch} × {w.context_tokens:,} tokens needs "
                         f"{kv_gpu_gb:.1f} GB per GPU, {kv_budget_gpu_gb:.1f} GB left after weights")
    if not math.isfinite(peak):
        notes.append(f"the catalog has no compute peak for {hw.name}: prefill and TTFT cannot be predicted, "
                     "decode assumes the memory roof binds")
    elif used_dtype != wanted_dtype and hw.kind not in ("apple", "cpu"):
        notes.append(f"{hw.name} has no {wanted_dtype} matrix peak in the catalog: using {used_dtype}")
    why = efficiency_note(eff, cfg.runtime, hw, evidence, cfg.quant)
    if why:
        notes.append(why)
    if hw.kind == "dataflow":
        notes.append(f"extrapolated: no measurements of {hw.name} in the calibration data (default efficiencies, "
                     "the vendor's memory figures); its fixed per-layer costs are unpublished, so where its memory "
                     "is fast the decode figure is an upper bound")
    if main_gpu_gb is not None:
        notes.append(tier_note(hw, sram_gpu_gb or 0.0, main_gpu_gb, ddr_gpu_gb or 0.0))
    experts = batched_experts_note(cfg, w.batch)
    if experts:
        notes.append(experts)
    if cfg.quant.expert_dequant_bits and cfg.model.experts:
        # vLLM's bitsandbytes MoE method (`Quant.expert_dequant_bits`): the weights' saving is lost every step
        dq, stored = cfg.quant.expert_dequant_bits, cfg.quant.bits_per_weight
        notes.append(f"{cfg.runtime.name} dequantizes every expert a GPU holds to {dq:g}-bit at each forward pass "
                     f"with {cfg.quant.name}, not only those the tokens route to: a step moves about "
                     f"{(stored + dq) / stored:.0f}× the experts' stored bytes whatever the batch; AWQ or GPTQ "
                     "(grouped 4-bit expert kernels) decode much faster")
    if hw.kind == "apple" and not hw.gpu_wired_limit_gb:
        notes.append("usable memory = default macOS GPU wired limit (2/3 of RAM up to 32 GB, 3/4 above)")
    notes.extend(hw.assumed)  # what the hardware name left open: memory size, GPU-core bin
    across = tensor_parallel_across_nodes_note(cfg)
    if across:
        notes.append(across)
    beyond = context_note(cfg.model, w.context_tokens)
    if beyond:
        notes.append(beyond)
    return notes


def tensor_parallel_across_nodes_note(cfg) -> str | None:
    """Where one tensor-parallel group is larger than a node (or NVLink domain): every layer's
    all-reduces then cross the network. The model prices that, but deployments split across nodes
    by layers or experts instead, so say so and name the layout that does."""
    tp = cfg.layout.tp if cfg.layout is not None else (cfg.gpus if cfg.split == "tp" else 1)
    domain = domain_gpus(cfg.hardware)
    if tp <= domain:
        return None
    nodes = math.ceil(tp / domain)
    alt = f"--layout tp{domain}+pp{tp // domain}" if tp % domain == 0 else f"tp {domain} with pipeline stages"
    if cfg.model.experts:
        alt += f", or attention DP with EP: --layout dp{tp}+ep{tp}"
    return (f"tensor parallel {tp} spans {nodes} nodes of {domain} GPUs: each layer's all-reduces cross the network "
            f"between them (priced here); multi-node deployments split by layers or experts instead ({alt})")


def batched_experts_note(cfg, batch: float) -> str | None:
    """Where the model is known to be optimistic and says so: a runtime measured to decode several
    sequences of a mixture of experts slower than modelled on its GPU kernels
    (`Runtime.batched_experts_slow_per_doubling`: llama.cpp, whose vector and MMQ kernels take each
    expert's few tokens apart). The band's slow edge allows for it (`roofline.experts_slowdown`)."""
    from advisor.model.inputs import experts_slow
    from advisor.model.roofline import EXPERTS_SLOW_MAX_BATCH, experts_slowdown

    k = experts_slow(cfg.hardware, cfg.runtime)
    if not (cfg.model.experts and k and batch >= 1.5):
        return None
    worst = float(experts_slowdown(k, EXPERTS_SLOW_MAX_BATCH))
    here = float(experts_slowdown(k, batch))
    return (f"{cfg.runtime.name} decoding {batch:.0f} sequences of a mixture of experts at once: measured on an H100, "
            f"such steps took up to {worst:.2f}× what this model gives, which it does not capture yet; the band's "
            f"slow edge allows ×{here:.2f} here, and the estimate is optimistic")


def tier_note(hw, sram_gpu_gb: float, main_gpu_gb: float, ddr_gpu_gb: float) -> str:
    """Where the weights and KV cache sit on a machine with memory tiers, and what each tier reads at."""
    parts = []
    if sram_gpu_gb > 0:
        parts.append(f"{sram_gpu_gb:.2f} GB in SRAM at {hw.sram_bandwidth_gb_s:,.0f} GB/s")
    parts.append(f"{main_gpu_gb:.1f} GB in {hw.memory_type or 'main memory'} at {hw.bandwidth_gb_s:,.0f} GB/s")
    if ddr_gpu_gb > 0:
        parts.append(f"{ddr_gpu_gb:.1f} GB spilled to DDR at {hw.ddr_bandwidth_gb_s:,.0f} GB/s (decode slows accordingly)")
    return "memory tiers, per chip, fastest first: " + "; ".join(parts)
