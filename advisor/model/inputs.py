"""From catalog entries to the kernel's `Inputs`: for one configuration, or gathered for many.

Each catalog section contributes its columns through one function here (`hardware_columns`,
`runtime_columns`, `weight_bits`, the peak for a runtime × format × vendor), so that a single
prediction (`inputs_for`) and the vectorised sweep and calibration (`Tables.gather`) cannot
disagree about what a figure means. Adding a physical input: add a field to `Inputs`, fill it in
the column function of the section it comes from, and use it in the kernel.
"""

from __future__ import annotations

import math
import weakref
from typing import TYPE_CHECKING, Sequence

import numpy as np

from advisor.data.specs import COMPUTE_DTYPES, Hardware, KvDtype, Quant, Runtime
from advisor.data.vendor_max import shipped_vendor_max
from advisor.model import compat
from advisor.model.ceilings import ceiling_row
from advisor.model.devices import (domain_gpus, format_gemm_us, gemm_share, link_gb_s, matrix_share, max_gpus,
                                   mla_decode_bw_fraction, mla_decode_fraction, network_gb_s, peak_for,
                                   side_work_scale, usable_memory_gb, with_side_work)
from advisor.model.efficiency import (BAND_FIELDS, EVIDENCE_LEVELS, EXTRAPOLATION_BAND_WIDENING, RATE_FIELDS,
                                      Efficiency, efficiency_for, evidence, expert_weight, linear_fraction)
from advisor.model.config import default_runtime
from advisor.model.geometry import WeightBits, geometry, weight_bits
from advisor.model.roofline import Inputs, Workload

if TYPE_CHECKING:
    from advisor.data.catalog import Catalog

HARDWARE_COLUMNS = ("bandwidth_gb_s", "capacity_gb", "link_gb_s", "sram_gb", "sram_bandwidth_gb_s", "ddr_gb",
                    "ddr_bandwidth_gb_s", "domain_gpus", "network_gb_s", "side_work_scale", "reads_then_products")
RUNTIME_COLUMNS = ("memory_fraction", "memory_of_free", "reserve_gb", "overhead_gb", "workspace_tokens",
                   "allreduce_per_device", "prefill_moe_layer_us", "prefill_complex_layer_us", "vector_batch_max",
                   "decode_expert_weight", "prompt_pipeline_copies")


def hardware_columns(h: Hardware) -> dict:
    return {"bandwidth_gb_s": h.bandwidth_gb_s, "capacity_gb": usable_memory_gb(h), "link_gb_s": link_gb_s(h),
            "domain_gpus": float(domain_gpus(h)), "network_gb_s": network_gb_s(h),
            "side_work_scale": side_work_scale(h), "reads_then_products": float(h.kind == "cpu"), **memory_tiers(h)}


def memory_tiers(h: Hardware) -> dict:
    """The SRAM tier in front of main memory and the DDR tier behind it, GB and GB/s. A tier the
    entry lacks (or gives without its bandwidth) has size 0 and main memory's bandwidth, so that
    its terms in the kernel are exactly zero."""
    bw = h.bandwidth_gb_s
    sram = bool(h.sram_gib and h.sram_bandwidth_gb_s)
    ddr = bool(h.ddr_gib and h.ddr_bandwidth_gb_s)
    return {"sram_gb": h.sram_gib * 2**30 / 1e9 if sram else 0.0, "sram_bandwidth_gb_s": h.sram_bandwidth_gb_s if sram else bw,
            "ddr_gb": h.ddr_gib * 2**30 / 1e9 if ddr else 0.0, "ddr_bandwidth_gb_s": h.ddr_bandwidth_gb_s if ddr else bw}


def runtime_columns(r: Runtime) -> dict:
    return {"memory_fraction": r.memory_fraction, "memory_of_free": r.memory_fraction_of == "free",
            "reserve_gb": r.reserve_gb, "overhead_gb": r.overhead_gb, "workspace_tokens": float(r.workspace_tokens),
            "allreduce_per_device": r.allreduce_per_device, "prefill_moe_layer_us": r.prefill_moe_layer_us,
            "prefill_complex_layer_us": r.prefill_complex_layer_us, "vector_batch_max": float(r.vector_batch_max or 0),
            "decode_expert_weight": expert_weight(r), "prompt_pipeline_copies": prompt_pipeline_copies(r)}


def prompt_pipeline_copies(rt: Runtime) -> float:
    """`Runtime.prompt_pipeline_copies`, 0 for a build (``name@DATE``) older than the feature."""
    if rt.at_date and rt.prompt_pipeline_from and rt.at_date < rt.prompt_pipeline_from:
        return 0.0
    return float(rt.prompt_pipeline_copies)


def own_gpu_kernels(h: Hardware, r: Runtime) -> bool:
    """Whether ``h`` runs runtime ``r``'s own GPU kernels (its ``vector_vendors``: llama.cpp's CUDA and
    HIP builds), the ones its vector-kernel and batched-experts figures were measured on; never a CPU."""
    return h.kind != "cpu" and h.vendor in r.vector_vendors


#: (prompt cost, vector operations a weight over one sequence, over each further one) where a format
#: has no costs of its own: the plain int8 and vector rates
NO_FORMAT_COSTS = (1.0, math.nan, math.nan)


def format_costs_apply(h: Hardware, r: Runtime) -> bool:
    """Whether runtime ``r``'s per-format kernel costs apply on ``h``: its own GPU kernels
    (`own_gpu_kernels`) on a vendor it lists in ``format_cost_vendors``, where they were measured."""
    return h.vendor in r.format_cost_vendors and own_gpu_kernels(h, r)


def quant_costs(q: Quant) -> tuple[float, float, float]:
    """Format ``q``'s own kernel costs (`Quant.mmq_cost`, `Quant.mmvq_ops_per_weight`,
    `Quant.mmvq_seq_ops_per_weight`), `NO_FORMAT_COSTS`' figures where it has none."""
    return (float(q.mmq_cost or 1.0), float(q.mmvq_ops_per_weight or math.nan),
            float(q.mmvq_seq_ops_per_weight or math.nan))


def format_costs(h: Hardware, r: Runtime, q: Quant, int8_linear: bool) -> tuple[float, float, float]:
    """(prompt cost, one sequence's vector operations a weight, each further sequence's) of format
    ``q`` in runtime ``r``'s own GPU kernels on ``h`` (`quant_costs`): where the format's products run
    int8 and the costs apply (`format_costs_apply`); else `NO_FORMAT_COSTS`.

    On a GPU whose bandwidth reads a compressed format's bytes quickly, unpacking them is what takes
    the time: an H200 decoded one sequence of Llama 3.1 8B in Q4_0 at 343 tok/s and in Q3_K_S, 25 %
    fewer bytes, at 193 (catalog/measured/llamacpp_h200_formats_device.md)."""
    return quant_costs(q) if int8_linear and format_costs_apply(h, r) else NO_FORMAT_COSTS


def experts_slow(h: Hardware, r: Runtime) -> float:
    """`Runtime.batched_experts_slow_per_doubling` where it applies to ``h`` (`own_gpu_kernels`); 0 elsewhere."""
    k = r.batched_experts_slow_per_doubling
    return float(k) if k and own_gpu_kernels(h, r) else 0.0


def prompt_cache_gb_s(rt) -> float:
    """The rate of a runtime's server's prompt-cache saves (`Runtime.server_prompt_cache_gb_s`), 0 where
    it has none: none at all, or a build (``name@DATE``) older than the cache (``server_prompt_cache_from``)."""
    if not rt.server_prompt_cache_gb_s:
        return 0.0
    if rt.at_date and rt.server_prompt_cache_from and rt.at_date < rt.server_prompt_cache_from:
        return 0.0
    return float(rt.server_prompt_cache_gb_s)


def int8_cap(h: Hardware, r: Runtime) -> float:
    """The most TOPS runtime ``r``'s int8 kernels reach on GPU ``h`` (inf: its datasheet peak).

    llama.cpp's quantized CUDA kernels (MMQ) unpack each block on the SM's vector units before
    the int8 tensor instructions (mma.sync) multiply it. Measured, they reach about the same
    share of 8× the FP32 rate on every NVIDIA part (`Runtime.int8_peak_per_fp32`): on GeForce
    cards that is their int8 tensor peak, but the A100's and H100's datasheet peaks (32× and 30×
    their FP32 rate; Hopper's through wgmma, which these kernels do not use) are never
    approached: an H100 SXM ran Q4_K_M and Q8_0 prompts at 150–175 TOPS, half its F16 (cuBLAS)
    rate, where the datasheet peak would make them twice as fast (catalog/measured/
    llamacpp_h100_device.md)."""
    ratio = r.int8_peak_per_fp32
    if not ratio or h.kind == "cpu" or not h.fp32_tflops:
        return math.inf
    return ratio * float(h.fp32_tflops)


def vector_peak(h: Hardware, r: Runtime, int8_linear: bool) -> float:
    """The most TFLOP/s runtime ``r``'s quantized products reach on ``h`` over a handful of sequences
    (at most `Runtime.vector_batch_max`), where they run vector kernels that unpack the weights again
    for each sequence (llama.cpp's MMVQ on CUDA and HIP); inf where no such path applies (another
    runtime or vendor, a 16-bit format, a CPU)."""
    if (not int8_linear or not r.vector_batch_max or not r.vector_peak_per_fp32 or not own_gpu_kernels(h, r)
            or not h.fp32_tflops):
        return math.inf
    return r.vector_peak_per_fp32 * float(h.fp32_tflops)


def accumulates_fp16(h: Hardware, r: Runtime, used: str) -> bool:
    """Whether ``r``'s products in ``used`` run at ``h``'s FP16-accumulate rate (`Runtime.fp16_accumulate`
    on a part that has one apart: GeForce)."""
    return used == "fp16" and r.fp16_accumulate and bool(h.fp16_fp16acc_dense_tflops)


def compute_peak(h: Hardware, r: Runtime, q: Quant) -> tuple[float, str, str]:
    """(peak TFLOP/s, dtype used, dtype wanted) for runtime ``r`` running format ``q`` on ``h``."""
    wanted = r.compute_for(q, h.vendor)
    peak, used = peak_for(h, wanted)
    if accumulates_fp16(h, r, used):
        peak = h.fp16_fp16acc_dense_tflops
    if used == "int8":
        # the runtime's int8 kernels' reach, less what this format's unpacking costs them
        peak = min(peak, int8_cap(h, r)) / format_costs(h, r, q, True)[0]
    return peak, used, wanted


def format_products(h: Hardware, r: Runtime, q: Quant, model) -> tuple[int, str, float]:
    """(products, dtype, µs each): the dense products of a forward pass that run in the weights'
    low-precision format and the extra fixed cost each pays (`advisor.model.devices.format_gemm_us`,
    `advisor.model.roofline.format_fixed_s`); (0, dtype, 0.0) where none does."""
    _, used, _ = compute_peak(h, r, q)
    us = format_gemm_us(h, r.key, used) if weight_bits(q).non_expert < 16 else 0.0
    return (geometry(model).dense_products if us else 0), used, us


def linear_flops_s(h: Hardware, r: Runtime, q: Quant, eff: Efficiency) -> float:
    """The linear layers' attained compute, FLOP/s: the peak of the dtype the format runs in × the
    profile's fraction for it × the share of that peak its products reach (`gemm_share`) × the share
    the hardware sustains under dense load (`matrix_share`), the fraction first taken to the part's own
    side work (`with_side_work`); inf where the hardware has no peak for it."""
    peak, used, _ = compute_peak(h, r, q)
    if not math.isfinite(peak):
        return math.inf
    side = side_work_scale(h)
    if side != 1.0:
        fraction = with_side_work(linear_fraction(eff, used) * gemm_share(h, r.key, used), side)
        return peak * 1e12 * fraction * matrix_share(h)
    return peak * 1e12 * linear_fraction(eff, used) * gemm_share(h, r.key, used) * matrix_share(h)


def attention_dtype(h: Hardware, r: Runtime, kv: KvDtype) -> str:
    # engines whose attention kernels compute in FP8 when the KV cache is FP8 (`Runtime.fp8_attention`:
    # FlashAttention-3 and FlashInfer FP8 paths in vLLM and SGLang, TensorRT-LLM's FP8 context FMHA),
    # on hardware with FP8 units
    """The dtype attention's products run at: FP8 where the cache is FP8 and the engine computes in it,
    else 16-bit (llama.cpp's flash attention converts quantized caches to F16; FP4/INT4 weight formats
    never apply to the attention products)."""
    if kv.key == "fp8" and r.fp8_attention and h.fp8_dense_tflops:
        return "fp8"
    return "fp16"


def attention_peak(h: Hardware, r: Runtime, kv: KvDtype) -> float:
    return peak_for(h, attention_dtype(h, r, kv))[0]


def mla_fraction(h: Hardware, r: Runtime, kv: KvDtype) -> float:
    """The share of the attention's peak a latent attention's decode kernel reaches
    (`advisor.model.devices.mla_decode_fraction`, at the dtype its products run in)."""
    return mla_decode_fraction(h, attention_dtype(h, r, kv))


def inputs_for(hw: Hardware, runtime: Runtime, quant: Quant, kv: KvDtype, eff: Efficiency, gpus: int,
               split: str, workload: Workload, layout=None, network: str | None = None,
               cap_tok_s: float = np.inf) -> Inputs:
    """The kernel's inputs for one configuration (scalars); ``layout``: an `advisor.model.layout.Layout`
    past one tensor-parallel group; ``network``: the network between nodes instead of the hardware's;
    ``cap_tok_s``: a vendor's published maximum for the instance (`advisor.model.ceilings`)."""
    peak, used, _ = compute_peak(hw, runtime, quant)
    # the format's measured unpacking (the plain roofline, IDEAL, keeps two FLOPs a weight at the peaks)
    _, vec_ops, vec_seq_ops = format_costs(hw, runtime, quant, used == "int8" and eff.level != "ideal")
    x = Inputs(**hardware_columns(hw), **runtime_columns(runtime), peak_tflops=peak, int8_linear=used == "int8",
               # the plain roofline (IDEAL) stays at 100 % of every peak
               gemm_share=1.0 if eff.level == "ideal" else gemm_share(hw, runtime.key, used),
               matrix_share=1.0 if eff.level == "ideal" else matrix_share(hw),
               format_gemm_us=0.0 if eff.level == "ideal" else format_gemm_us(hw, runtime.key, used),
               attn_peak_tflops=attention_peak(hw, runtime, kv),
               # the plain roofline stays at 100 % of the attention's peak too
               mla_decode_fraction=math.nan if eff.level == "ideal" else mla_fraction(hw, runtime, kv),
               mla_bw_fraction=math.nan if eff.level == "ideal" else mla_decode_bw_fraction(hw, runtime.key, kv.bits),
               vector_peak_tflops=vector_peak(hw, runtime, used == "int8"),
               vector_ops_per_weight=vec_ops, vector_seq_ops_per_weight=vec_seq_ops,
               experts_slow_per_doubling=experts_slow(hw, runtime),
               bits=weight_bits(quant), kv_bits=kv.bits, tensor_parallel=split == "tp", gpus=gpus, eff=eff,
               batch=workload.batch, prompt=workload.prompt_tokens, output=workload.output_tokens,
               depth=workload.depth_tokens)
    if network:
        x = x.replace(network_gb_s=network_gb_s(hw, network))
    if layout is not None and split == "tp":
        x = x.replace(**layout.kernel_inputs())
    if math.isfinite(cap_tok_s):
        x = x.replace(throughput_cap_tok_s=cap_tok_s)
    return x


class Tables:
    """The catalog as numpy arrays, one row per entry, built once per catalog object."""

    def __init__(self, cat: "Catalog"):
        self.hardware = list(cat.hardware.values())
        self.runtimes = list(cat.runtimes.values())
        self.quants = list(cat.quants.values())
        self.quants_by_key = dict(cat.quants)
        self.kv_dtypes = list(cat.kv_dtypes.values())
        #: how far past serve's band edges servers were measured (`advisor.model.serving.band_factors`)
        self.serving_bands = cat.serving_bands
        hw, rt, q, kv = self.hardware, self.runtimes, self.quants, self.kv_dtypes
        self.hw_index = {h.key: i for i, h in enumerate(hw)}
        self.rt_index = {r.key: i for i, r in enumerate(rt)}
        self.q_index = {x.key: i for i, x in enumerate(q)}
        self.kv_index = {x.key: i for i, x in enumerate(kv)}

        cols = [hardware_columns(h) for h in hw]
        self.hw_cols = {c: np.array([row[c] for row in cols], dtype=float) for c in HARDWARE_COLUMNS}
        self.max_gpus = np.array([max_gpus(h) for h in hw])
        cols = [runtime_columns(r) for r in rt]
        self.rt_cols = {c: np.array([row[c] for row in cols]) for c in RUNTIME_COLUMNS}
        self.tensor_parallel = np.array([r.parallelism == "tp" for r in rt])
        self.expert_parallel = np.array([r.expert_parallel for r in rt], dtype=bool)
        self.multi_node = np.array([r.multi_node for r in rt], dtype=bool)
        # the continuous-batching scheduler of each runtime (advisor.model.serving)
        # (hardware, runtime): a runtime may start smaller on smaller GPUs (`Runtime.scheduler_on`)
        on = np.array([[r.scheduler_on(h) for r in rt] for h in hw], dtype=float).reshape(len(hw), len(rt), 2)
        self.max_seqs, self.chunk_tokens = on[..., 0], on[..., 1]
        self.paged_kv = np.array([r.paged_kv for r in rt], dtype=bool)
        self.fixed_slots = np.array([r.fixed_slots for r in rt], dtype=bool)
        # the launch line sets the running-sequence limit to the users (--max-num-seqs, -np …)
        self.sets_max_seqs = np.array(["{parallel}" in r.launch for r in rt], dtype=bool)
        self.server_sample_ns = np.array([r.server_sample_ns_per_vocab or 0.0 for r in rt], dtype=float)
        # llama-server's prompt cache (advisor.model.serving.prompt_cache_save_s): GB/s, size in GB
        self.server_cache_gb_s = np.array([prompt_cache_gb_s(r) for r in rt], dtype=float)
        self.server_cache_max_gb = np.array([np.inf if r.server_prompt_cache_max_gb is None
                                             else r.server_prompt_cache_max_gb for r in rt], dtype=float)
        bits = [weight_bits(x) for x in q]
        self.bits = WeightBits(*(np.array([getattr(b, f) for b in bits]) for f in WeightBits.__dataclass_fields__))
        self.kv_bits = np.array([x.bits for x in kv], dtype=float)

        # peak per (hardware, runtime, quant): the runtime may run a format at another dtype. The
        # dtype depends on (runtime, quant, vendor) only, so look up per-hardware peaks by dtype.
        dtypes = list(COMPUTE_DTYPES)
        found = [[peak_for(h, d_) for d_ in dtypes] for h in hw]    # (peak, the dtype it is of)
        peak_by_dtype = np.array([[p_ for p_, _ in row] for row in found]).reshape(len(hw), len(dtypes))
        vendors = sorted({h.vendor for h in hw})
        dtype_idx = {v_: np.array([[dtypes.index(r.compute_for(x, v_)) for x in q] for r in rt], dtype=int)
                     .reshape(len(rt), len(q)) for v_ in vendors}
        dtype_by = np.array([[used == "int8" for _, used in row] for row in found]).reshape(len(hw), len(dtypes))
        def by_format(per_dtype) -> np.ndarray:
            """(hardware, runtime, quant) from ``per_dtype(hardware, runtime key, dtype in use)``."""
            by_dtype = np.array([[[per_dtype(h, r_.key, used) for _, used in row] for r_ in rt]
                                 for h, row in zip(hw, found)], dtype=float).reshape(len(hw), len(rt), len(dtypes))
            return np.stack([np.take_along_axis(by_dtype[i], dtype_idx[h.vendor], axis=1) for i, h in enumerate(hw)])

        self.peak = np.empty((len(hw), len(rt), len(q)))
        self.int8_linear = np.empty((len(hw), len(rt), len(q)), dtype=bool)
        caps = np.array([[int8_cap(h, r) for r in rt] for h in hw]).reshape(len(hw), len(rt), 1)
        for i, h in enumerate(hw):
            self.peak[i] = peak_by_dtype[i][dtype_idx[h.vendor]]
            self.int8_linear[i] = dtype_by[i][dtype_idx[h.vendor]]
            if h.fp16_fp16acc_dense_tflops:
                # runtimes whose 16-bit products accumulate in FP16 reach this part's FP16-accumulate rate
                used = np.array([u for _, u in found[i]])[dtype_idx[h.vendor]]   # (runtime, quant)
                fp16acc = np.array([[accumulates_fp16(h, r_, u) for u in row] for r_, row in zip(rt, used)], dtype=bool)
                self.peak[i] = np.where(fp16acc, h.fp16_fp16acc_dense_tflops, self.peak[i])
        # the share of the peak the format's products reach relative to 16-bit ones', and the extra
        # fixed cost of each of its products (`format_gemm_us`), by the dtype in use
        self.gemm_share = by_format(gemm_share)
        # what each part's matrix units sustain under dense load, against the fitted fractions' parts
        self.matrix_share = np.array([matrix_share(h) for h in hw], dtype=float)
        self.format_gemm_us = by_format(format_gemm_us)
        # each format's unpacking in the runtime's own kernels (`format_costs`): (cost, ops, seq ops);
        # whether they apply depends on the hardware and runtime, their values on the format alone
        applies = np.array([[format_costs_apply(h, r) for r in rt] for h in hw],
                           dtype=bool).reshape(len(hw), len(rt), 1, 1)
        by_quant = np.array([quant_costs(x) for x in q], dtype=float).reshape(1, 1, len(q), 3)
        costs = np.where(applies & self.int8_linear[..., None], by_quant, np.array(NO_FORMAT_COSTS))
        self.peak = np.where(self.int8_linear, np.minimum(self.peak, caps) / costs[..., 0], self.peak)
        # the vector kernels' peak where the format runs int8 products (per hardware × runtime, then by format)
        vec = np.array([[vector_peak(h, r, True) for r in rt] for h in hw], dtype=float).reshape(len(hw), len(rt), 1)
        self.vector_peak = np.where(self.int8_linear, vec, np.inf)
        self.vector_ops, self.vector_seq_ops = costs[..., 1], costs[..., 2]
        # batched mixtures of experts measured slower than modelled (the band's slow edge), per (hardware, runtime)
        self.experts_slow = np.array([[experts_slow(h, r) for r in rt] for h in hw], dtype=float).reshape(len(hw), len(rt))
        # the attention products' peak per (hardware, runtime, KV dtype)
        self.attn_peak = np.array([[[attention_peak(h, r, k) for k in kv] for r in rt] for h in hw],
                                  dtype=float).reshape(len(hw), len(rt), len(kv))
        # … and the share of it a latent attention's decode kernel reaches
        self.mla_fraction = np.array([[[mla_fraction(h, r, k) for k in kv] for r in rt] for h in hw],
                                     dtype=float).reshape(len(hw), len(rt), len(kv))
        # … and the share of the bandwidth it reads a 16-bit cache at
        self.mla_bw = np.array([[[mla_decode_bw_fraction(h, r.key, k.bits) for k in kv] for r in rt] for h in hw],
                               dtype=float).reshape(len(hw), len(rt), len(kv))
        effs = [[efficiency_for(cat.profiles, r, h) for r in rt] for h in hw]
        self.eff = Efficiency(*(np.array([[getattr(e, f) for e in row] for row in effs], dtype=float)
                                .reshape(len(hw), len(rt)) for f in RATE_FIELDS + BAND_FIELDS), level="table")
        self.eff_level = np.array([[e.level for e in row] for row in effs])
        # how much measured data backs each (hardware, runtime, format): an index into
        # EVIDENCE_LEVELS, worked out once per hardware family (all a profile's coverage looks at)
        first: dict[tuple[str, str], int] = {}
        rows = [first.setdefault((h.vendor, h.family), i) for i, h in enumerate(hw)]
        by_family = {i: [[EVIDENCE_LEVELS.index(evidence(cat.profiles, r, hw[i], x, cat.quants)) for x in q]
                         for r in rt] for i in set(rows)}
        self.evidence = np.array([by_family[i] for i in rows], dtype=np.int8).reshape(len(hw), len(rt), len(q))
        # where an extrapolated prediction's band is widened: an own profile (sibling and default
        # profiles carry wider bands of their own)
        self.widen_ok = np.array([[not (e.level.startswith("sibling") or e.level == "none") for e in row]
                                  for row in effs], dtype=bool).reshape(len(hw), len(rt))
        # the runtime people usually run on each hardware (the recommender's tie-breaks prefer it)
        usual = [default_runtime(cat, h).key for h in hw]
        self.usual_runtime = np.array([[r.key == u for r in rt] for u in usual], dtype=bool).reshape(len(hw), len(rt))

        self.ok_hw_rt, self.ok_rt_q, self.ok_rt_kv = compat.grids(hw, rt, q, kv)
        # the support matrix: formats and KV dtypes a runtime runs only on some generations
        self.ok_hw_rt_q, self.ok_hw_rt_kv = compat.generation_grids(hw, rt, q, kv)
        self.expert_only = compat.expert_only(q)
        self._model_grids: dict[tuple, np.ndarray | None] = {}

    def _kept(self, key, build) -> np.ndarray | None:
        """``build()``, kept under ``key`` (sweeps of one model repeat)."""
        if key not in self._model_grids:
            if len(self._model_grids) > 64:
                self._model_grids.clear()
            self._model_grids[key] = build()
        return self._model_grids[key]

    def model_grid(self, model) -> np.ndarray | None:
        """`compat.model_grid` for ``model``, kept per model."""
        return self._kept(("quants", model.key, model.architecture, model.is_moe),
                          lambda: compat.model_grid(self.hardware, self.runtimes, self.quants, model))

    def model_cache_grid(self, model) -> np.ndarray | None:
        """`compat.model_cache_grid` for ``model``, kept per model."""
        return self._kept(("kv", model.key, bool(model.kv_lora_rank)),
                          lambda: compat.model_cache_grid(self.hardware, self.runtimes, self.kv_dtypes, model))

    def gather(self, h, r, q, k, g, *, batch, prompt, output, depth, eff: Efficiency | None = None,
               tensor_parallel=None) -> Inputs:
        """Inputs for configurations given as index arrays into the tables (they broadcast with
        the workload arrays). ``eff``: efficiencies to use instead of the catalog's profiles
        (the calibration's trial values); ``tensor_parallel``: instead of each runtime's default."""
        return Inputs(
            **{c: v[h] for c, v in self.hw_cols.items()}, **{c: v[r] for c, v in self.rt_cols.items()},
            peak_tflops=self.peak[h, r, q], int8_linear=self.int8_linear[h, r, q], attn_peak_tflops=self.attn_peak[h, r, k],
            mla_decode_fraction=self.mla_fraction[h, r, k], mla_bw_fraction=self.mla_bw[h, r, k],
            gemm_share=self.gemm_share[h, r, q], matrix_share=self.matrix_share[h],
            format_gemm_us=self.format_gemm_us[h, r, q],
            vector_peak_tflops=self.vector_peak[h, r, q], experts_slow_per_doubling=self.experts_slow[h, r],
            vector_ops_per_weight=self.vector_ops[h, r, q], vector_seq_ops_per_weight=self.vector_seq_ops[h, r, q],
            bits=WeightBits(*(b[q] for b in (self.bits.non_expert, self.bits.expert, self.bits.embedding,
                                             self.bits.head, self.bits.expert_dequant))),
            kv_bits=self.kv_bits[k], tensor_parallel=self.tensor_parallel[r] if tensor_parallel is None else tensor_parallel,
            gpus=g, eff=self.catalog_eff(h, r, q) if eff is None else eff,
            batch=batch, prompt=prompt, output=output, depth=depth)

    def ceilings(self, model, workload: Workload) -> tuple[np.ndarray, np.ndarray] | None:
        """Per (hardware, format): the vendor's published maximum per GPU for ``model`` at these
        lengths (inf where none applies) and the GPUs of the vendor's system (the widest instance it
        bounds), or None where none applies anywhere (the usual case)."""
        rows = [r for r in shipped_vendor_max() if r.model == model.key]
        if not rows:
            return None
        out = np.full((len(self.hardware), len(self.quants)), np.inf)
        widest = np.zeros((len(self.hardware), len(self.quants)))
        by_key = {h.key: h for h in self.hardware}
        families = {(by_key[r.hardware].vendor, by_key[r.hardware].family) for r in rows if r.hardware in by_key}
        for i, h in enumerate(self.hardware):
            if (h.vendor, h.family) not in families:
                continue
            for j, q in enumerate(self.quants):
                c = ceiling_row(h, model, q, workload.prompt_tokens, workload.output_tokens, rows, by_key)
                if c is not None:
                    out[i, j], widest[i, j] = c.per_gpu_tok_s, c.row.gpus
        return (out, widest) if np.isfinite(out).any() else None

    def network_for(self, network: str) -> np.ndarray:
        """The network column with ``network`` (a key of NETWORKS_GBIT_S) on every cluster hardware."""
        return np.array([network_gb_s(x, network) for x in self.hardware], dtype=float)

    def catalog_eff(self, h, r, q) -> Efficiency:
        """The profiles' efficiencies of the configurations (h, r, q), the band widened where no
        measurement backs the runtime on that hardware generation and format (`widened`)."""
        e = self.eff.take_flat(h * len(self.runtimes) + r)
        fd, fp = EXTRAPOLATION_BAND_WIDENING["decode"], EXTRAPOLATION_BAND_WIDENING["prefill"]
        if fd == 1.0 and fp == 1.0:
            return e
        wide = (self.evidence[h, r, q] == EVIDENCE_LEVELS.index("extrapolated")) & self.widen_ok[h, r]
        kd, kp = np.where(wide, fd, 1.0), np.where(wide, fp, 1.0)
        return e.replace(decode_low=e.decode_low / kd, decode_high=e.decode_high * kd,
                         prefill_low=e.prefill_low / kp, prefill_high=e.prefill_high * kp)

    def indices(self, section: str, keys: Sequence[str] | None) -> np.ndarray:
        index = {"hardware": self.hw_index, "runtimes": self.rt_index, "quants": self.q_index,
                 "kv_dtypes": self.kv_index}[section]
        if keys is None:
            return np.arange(len(index))
        return np.array([index[x] for x in keys], dtype=int)


_tables: "weakref.WeakKeyDictionary[Catalog, Tables]" = weakref.WeakKeyDictionary()


def tables_for(cat: "Catalog") -> Tables:
    t = _tables.get(cat)
    if t is None:
        t = Tables(cat)
        _tables[cat] = t
    return t


def stack_inputs(items: Sequence[Inputs]) -> Inputs:
    """One `Inputs` of arrays from many single-configuration ones (built by `inputs_for`)."""
    first = items[0]
    arrays = {f: np.array([getattr(x, f) for x in items])
              for f in first.__dataclass_fields__ if f not in ("bits", "eff")}
    for f in ("stages", "attn_peak_tflops"):   # None = not set; kept where no item sets it
        if all(getattr(x, f) is None for x in items):
            arrays[f] = None
    bits = WeightBits(*(np.array([getattr(x.bits, f) for x in items], dtype=float)
                        for f in WeightBits.__dataclass_fields__))
    return Inputs(**arrays, bits=bits, eff=Efficiency.stack([x.eff for x in items]))
