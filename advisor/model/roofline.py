"""The performance model: memory plan, prefill/TTFT, decode speed and their roofline ceilings.

One vectorised function, `evaluate`, does the arithmetic of docs/ARCHITECTURE.md ("The physics")
on numpy arrays that broadcast against each other: its `Inputs` hold one element per
configuration (or a scalar shared by all), so one call prices a single configuration
(`advisor.model.predict`), a curve along one workload axis, or the whole catalog × formats × GPU
counts × batch sizes (`advisor.model.sweep`), and returns a typed `Result`. The kernel is three
steps: `memory_plan`, `decode_step` and `prefill`. Units: bytes, FLOPs and seconds inside; every
result field names its unit.

Times per GPU step (B sequences, context c):
- decode: max(weight bytes / (BW·η_bw), linear FLOPs / (peak·η_c)) + max(KV bytes / (BW·η_bw),
  attention FLOPs / (peak_att·η_c)) + layers·τ_layer + τ_step + B·τ_seq + communication, averaged
  over the output tokens (Simpson's rule over the growing context): the linear layers' kernels and the
  attention kernels run one after the other, each at its own roof (the ceiling takes the whole step
  at one roof, the looser bound);
- prefill of s tokens after d cached: linear FLOPs / (peak·η_c) + attention FLOPs / (peak_att·η_att)
  (peak_att: the attention dtype's peak, 16-bit or FP8, never the weights' FP4/INT4 rate)
  + weight bytes / (BW·η_bw) per micro-batch + fixed costs per micro-batch.
Tensor parallel (tp) divides bytes and FLOPs per GPU and adds two all-reduces per layer;
pipeline/layer split (pp, llama.cpp's default) runs the GPUs one after another for a sequence.
Past one group (`Inputs.stages`, `attention_dp`, `expert_parallel`, `domain_gpus`): tensor-parallel
groups in pipeline stages, data-parallel attention (each group holds the non-expert weights and its
share of the sequences) and experts spread whole over a stage's GPUs with all-to-all dispatch and
combine; every exchange runs at the slowest link its group spans (the scale-up link within a
domain, the network past it).
"""

from __future__ import annotations

from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from advisor.data.errors import AdvisorError
from advisor.data.specs import Model
from advisor.model.efficiency import Efficiency
from advisor.model.devices import with_side_work
from advisor.model.geometry import (DECODE_EXPERT_WEIGHT, Geometry, WeightBits, bytes_read, expert_pass_bytes,
                                    weight_bytes)

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
#: Expert-parallel all-to-all: tokens go out to their experts at FP8 and come back at 16-bit (DeepEP's
#: setting, which vLLM and SGLang use for wide EP: "FP8 dispatching and BF16 combining").
DISPATCH_BYTES, COMBINE_BYTES = 1, 2
#: The share of a link's bandwidth an all-to-all or a collective over it attains. DeepEP
#: (deepseek-ai/DeepEP docs/legacy.md @ dd758ca, H800 with CX7 400 Gb/s ≈ 50 GB/s): low-latency
#: dispatch and combine at EP 64-256 reach 39-46 GB/s of RDMA bandwidth (0.78-0.92); its README's V2
#: table reaches 643-740 GB/s over B200 NVLink (900 GB/s per direction: 0.71-0.82). 0.8 for both.
LINK_EFFICIENCY = 0.8
#: The share of the shorter of a pass's kernels and its expert all-to-all that two-batch overlap leaves
#: exposed (wide EP: `_wide_comm`). LMSYS's ablation on 96 H100s (lmsys.org 2025-05-05, "Ablation
#: Study: Two-batch Overlap"): decode at 128 sequences per GPU, 17,552 tok/s per node with it against
#: 12,929 without (1.358×); prefill "a 27% to 35% throughput increase ... even when processing the same
#: token count per device". With this kernel's times for those runs (`benchmarks/multinode.py` prints
#: them), the decode figure leaves 0.28 of the shorter part exposed and the prefill range 0.23-0.37:
#: the halves do not overlap perfectly (each layer's dispatch waits on its attention, the combine on
#: its experts, and the communication kernels take SMs).
TBO_EXPOSED = 0.3
#: Unfused attention moves its score matrix four times: written by Q·Kᵀ, read and written by the
#: softmax, read by the product with V (llama.cpp's path without flash attention).
EAGER_SCORE_PASSES = 4


@dataclass(frozen=True)
class Inputs:
    """Everything the kernel needs per configuration besides the model's geometry.

    Every field is a number or a numpy array; arrays broadcast against each other (one element
    per configuration, or a column of configurations against a row of batch sizes). Built for
    one configuration by `advisor.model.predict.inputs_for` and for many at once by
    `advisor.model.sweep.Tables.gather`; both read the catalog through the same column functions.
    """

    bandwidth_gb_s: Any
    capacity_gb: Any          # memory the device may use (Apple: the GPU wired limit), GB per GPU
    peak_tflops: Any          # dense matrix peak at the compute dtype in force; nan = unknown
    link_gb_s: Any            # GPU-to-GPU bandwidth per direction
    bits: WeightBits          # bits per weight of each parameter group
    kv_bits: Any
    memory_fraction: Any      # of total (vLLM) or of what is free after the weights (TensorRT-LLM)
    memory_of_free: Any
    reserve_gb: Any
    overhead_gb: Any
    workspace_tokens: Any     # tokens per forward pass the activation workspace is sized for
    tensor_parallel: Any      # True: tensor parallel; False: layer split (pipeline)
    gpus: Any
    eff: Efficiency
    batch: Any
    prompt: Any
    output: Any
    depth: Any
    # What-ifs of advisor.model.techniques; the defaults change nothing.
    #: whether the linear layers' products run on int8 dot products (the compute dtype in force is
    #: int8: llama.cpp's quantized kernels); they then reach the efficiency's int8 fraction of the peak
    int8_linear: Any = False
    #: the share of its peak the format's matrix products reach relative to 16-bit ones'
    #: (`advisor.model.devices.gemm_share`: FP8 on Hopper 0.70-0.81); it multiplies the linear layers'
    #: and the experts' compute fractions (capped at the peak), never the attention's
    gemm_share: Any = 1.0
    #: the share of its datasheet peak the hardware's matrix units sustain under dense load, relative
    #: to the Hopper parts the fitted fractions stand for (`advisor.model.devices.matrix_share`: MI300X
    #: 0.67, from AMD's published max-achievable FLOPs; 1 where none is published); it multiplies
    #: every compute fraction (linear, experts, attention), not a published MLA kernel share
    matrix_share: Any = 1.0
    #: how long the work beside the matrix products takes per matrix FLOP, relative to the parts the
    #: fitted fractions stand for (`advisor.model.devices.side_work_scale`: the H20, whose matrix rate
    #: is capped far below its SMs', 0.23; 1 elsewhere); it turns every fitted compute fraction η into
    #: 1 / (1 + (1/η − 1) × scale) before `matrix_share` applies (the MLA kernel's share arrives with
    #: it applied: `advisor.model.devices.mla_decode_fraction`)
    side_work_scale: Any = 1.0
    #: 1 on a CPU: a decode step's linear layers read their weights and then multiply them, on the same
    #: cores, one after the other (`decode_step`); 0 elsewhere (the larger of the two)
    reads_then_products: Any = 0.0
    #: extra fixed cost of each dense matrix product in the weights' format, µs
    #: (`advisor.model.devices.format_gemm_us`: FP8 on Hopper 3.4-8.8): quantizing the activations,
    #: and scaled kernels that fill small products worse; paid where the non-expert weights are in it
    format_gemm_us: Any = 0.0
    #: the share of the attention's peak a latent-attention (MLA) decode kernel reaches where it is
    #: compute-bound (`advisor.model.devices.mla_decode_fraction`: 0.636 on Hopper at 16 bits); nan = the
    #: linear layers' fraction, as for every other attention's decode
    mla_decode_fraction: Any = np.nan
    #: the share of the bandwidth a latent-attention decode kernel reads its 16-bit cache at
    #: (`advisor.model.devices.mla_decode_bw_fraction`: Hopper 0.90); nan = the runtime's fraction
    mla_bw_fraction: Any = np.nan
    #: tokens each sequence feeds per decode step: 1, or k+1 when a speculative round verifies
    #: k drafted tokens (FLOPs and routed experts grow with B·q; the KV read stays B sequences')
    query_tokens: Any = 1.0
    #: bytes per attention-score element an unfused ("eager") attention materialises (fp32: 4);
    #: 0 = fused (flash) attention, which keeps the scores on chip
    score_bytes: Any = 0.0
    # Tiered memory (dataflow machines, `advisor.model.inputs.memory_tiers`): an SRAM tier in front
    # of main memory and a DDR tier behind it, GB per GPU; 0 = no such tier. Weights, then the KV
    # cache, fill the fastest tier with room first, and each tier's bytes are read at its bandwidth.
    sram_gb: Any = 0.0
    sram_bandwidth_gb_s: Any = 0.0
    ddr_gb: Any = 0.0
    ddr_bandwidth_gb_s: Any = 0.0
    #: True where each tensor-parallel exchange is paid once per GPU rather than once
    #: (`Runtime.allreduce_per_device`: late-2023 llama.cpp launched every split matrix product on
    #: each GPU in turn and had the main GPU wait on each)
    allreduce_per_device: Any = False
    #: dense peak at the attention products' dtype (16-bit, or FP8 where the KV cache is FP8 and the
    #: runtime's kernels compute in it: `advisor.model.inputs.attention_dtype`); None = peak_tflops
    attn_peak_tflops: Any = None
    #: extra fixed cost per MoE layer and per MLA / linear-attention layer of a prompt pass over a
    #: decode step's, µs (`Runtime.prefill_moe_layer_us`): eager launches where decode replays a graph
    prefill_moe_layer_us: Any = 0.0
    prefill_complex_layer_us: Any = 0.0
    # Layouts past one tensor-parallel group (advisor.plan.deployment.Layout); the defaults change nothing.
    #: pipeline stages, each a tensor-parallel group (None: the runtime's split alone: tp = gpus, or
    #: a layer split over all of them)
    stages: Any = None
    #: data-parallel attention groups per stage: each holds the non-expert weights (split over its
    #: tp GPUs) and its share of the sequences and their KV cache
    attention_dp: Any = 1
    #: the routed experts whole on a stage's GPUs (expert parallel): MoE layers send each token to
    #: its experts' GPUs and back (all-to-all) instead of an all-reduce
    expert_parallel: Any = False
    #: GPUs one scale-up domain holds (a node, or an NVL72 rack): a group larger than it exchanges
    #: over the network, ``network_gb_s`` per GPU and direction (nan: none)
    domain_gpus: Any = np.inf
    network_gb_s: Any = np.nan
    #: the linear layers' peak over at most ``vector_batch_max`` sequences, where the runtime's
    #: quantized products run vector kernels that unpack the weights again per sequence
    #: (`advisor.model.inputs.vector_peak`: llama.cpp's MMVQ); inf / 0 = no such path
    vector_peak_tflops: Any = np.inf
    vector_batch_max: Any = 0.0
    #: what those vector kernels do for the format, in FP32 operations at ``vector_peak_tflops`` a
    #: weight: over one sequence, and for each further one (`advisor.model.inputs.format_costs`,
    #: measured); nan: two FLOPs a weight and sequence at the linear fraction of that peak
    vector_ops_per_weight: Any = np.nan
    vector_seq_ops_per_weight: Any = np.nan
    #: a mixture of experts decoding B sequences here runs slower than modelled by up to
    #: 1 + this · log2 B (B to 64; `Runtime.batched_experts_slow_per_doubling`, measured): the band's
    #: slow edge takes it, not the estimate
    experts_slow_per_doubling: Any = 0.0
    #: fixed cost per expert a token visits, in plain layers' worth (`Runtime.decode_expert_weight`,
    #: `Geometry.fixed_layers_at`), where the efficiency has no ``expert_overhead_us`` of its own
    decode_expert_weight: Any = DECODE_EXPERT_WEIGHT
    #: micro-batches of one batch a layer split keeps in flight across its GPUs, one prompt's among them
    #: (`Runtime.prompt_pipeline_copies`); 0: only different requests' (`pipeline_share`)
    prompt_pipeline_copies: Any = 0.0
    #: the most output tokens per second the instance can give: a vendor's published maximum for this
    #: model on this hardware (`advisor.model.ceilings`); inf = none. A decode step of B sequences
    #: takes at least B / this.
    throughput_cap_tok_s: Any = np.inf

    def replace(self, **changes: Any) -> "Inputs":
        return replace(self, **changes)


@dataclass(frozen=True)
class Result:
    """The kernel's answer: arrays broadcast to the inputs' shape (or scalars). Per GPU unless
    the name says otherwise; the decode step is the one at the middle of the output."""

    # memory plan
    weights_bytes: Any            # all GPUs together
    weights_gpu_bytes: Any
    kv_gpu_bytes: Any             # the batch at its longest context
    kv_seq_bytes: Any             # one sequence at its longest context
    workspace_gpu_bytes: Any
    overhead_gpu_bytes: Any
    usable_gpu_bytes: Any         # what the runtime may use: KV budget + weights + workspace + overhead
    capacity_gpu_bytes: Any
    kv_budget_gpu_bytes: Any
    fits: Any
    max_batch: Any
    max_context: Any
    # tiered memory: weights and KV placed in the SRAM and DDR tiers (None: no tiers)
    sram_gpu_bytes: Any = None
    ddr_gpu_bytes: Any = None
    # decode
    decode_tok_s: Any = None
    decode_low_tok_s: Any = None
    decode_high_tok_s: Any = None
    decode_ceiling_tok_s: Any = None
    #: the decode speed before a vendor's published maximum floors the step (`decode_tok_s` where none
    #: applies), and that maximum for the instance (output tok/s; inf where none): the serving model
    #: holds its whole served step, the prompts it carries included, to it
    decode_free_tok_s: Any = None
    throughput_cap_tok_s: Any = None
    throughput_tok_s: Any = None
    decode_memory_s: Any = None       # bytes / attained bandwidth of the middle step
    decode_compute_s: Any = None      # FLOPs / attained compute of the middle step
    #: the step's time in its memory-bound kernels and in its compute-bound ones (linear layers and
    #: attention judged apart), over the output: the step is their sum plus the fixed costs
    decode_memory_bound_s: Any = None
    decode_compute_bound_s: Any = None
    decode_fixed_s: Any = None        # per-layer, per-step and per-sequence costs plus GPU-to-GPU communication
    #: of the step: the routed experts' products past each touched expert's first token, which their
    #: grouped kernels add to their reads (0 for a dense model or one sequence)
    decode_expert_products_s: Any = None
    decode_expert_products_flops: Any = None   # those products' FLOPs, per GPU
    decode_bytes: Any = None          # bytes one middle step moves (per GPU; pipeline: all stages)
    decode_flops: Any = None
    decode_weight_bytes: Any = None   # of which: weights (body and head)
    decode_head_bytes: Any = None     #   the output head alone
    decode_kv_bytes: Any = None       #   KV cache (and linear-attention state)
    decode_attention_flops: Any = None  # score and value products over the context
    decode_head_flops: Any = None
    decode_exchanges: Any = None      # GPU-to-GPU messages per step (each pays the link latency)
    decode_transfer_s: Any = None     # their transfer time at the link's bandwidth
    knee_batch: Any = None
    # prefill
    prefill_s: Any = None
    prefill_tok_s: Any = None
    prefill_low_tok_s: Any = None
    prefill_high_tok_s: Any = None
    prefill_ceiling_tok_s: Any = None
    prefill_linear_flops: Any = None  # per GPU, like the decode figures
    prefill_expert_flops: Any = None  # the routed experts' share of the linear FLOPs (MoE)
    prefill_attention_flops: Any = None
    prefill_bytes: Any = None         # weight bytes read over all micro-batches
    micro_batches: Any = None
    prefill_exchanges: Any = None
    prefill_transfer_s: Any = None
    prefill_compute_share: Any = None  # ideal compute time / ideal time: ≥ 0.5 = compute-bound
    prefill_compute_s: Any = None     # the linear and attention FLOPs at the attained compute rate
    prefill_activation_bytes: Any = None  # what the element-wise kernels move per GPU (`Geometry.activation_bytes`)
    prefill_pass_extra_s: Any = None  # a prompt pass's extra fixed cost over a decode step's (eager launches)
    #: the prompt pass's time over its stages' work one after another (`pipeline_share`; 1 without stages)
    prefill_pipeline_share: Any = None
    #: the part of the pass that grows with its tokens: the products, the element-wise kernels, the
    #: tensor-parallel all-reduces of the activations (and an eager attention's score traffic); a wide
    #: layout's server-wide products and element-wise kernels
    prefill_token_s: Any = None
    #: a wide layout with data-parallel attention: of one prompt's pass, the work that stays on its
    #: own attention group (the non-expert products, the attention, their element-wise kernels), at
    #: that group's GPUs alone; 0 elsewhere. A server's step waits for its busiest group
    #: (`advisor.model.serving`), so a prompt there is not spread over every group
    prefill_group_s: Any = None
    attention_groups: Any = None      # data-parallel attention groups of the stage (1 without)
    ttft_s: Any = None
    ttft_low_s: Any = None
    ttft_high_s: Any = None
    request_s: Any = None             # of the TTFT: the request's own setup, once (no prompt work)

    def names(self) -> list[str]:
        """The fields this result has values for (a memory-only result has no speeds)."""
        return [name for name in RESULT_FIELDS if getattr(self, name) is not None]


RESULT_FIELDS = tuple(f.name for f in fields(Result))


def _where(cond, a, b):
    """np.where, short-cut for plain numbers (a single prediction), where it would make 0-d arrays."""
    if np.ndim(cond) == 0 and np.ndim(a) == 0 and np.ndim(b) == 0:
        return a if cond else b
    return np.where(cond, a, b)


def _choose(cond, if_true, if_false):
    """np.where(cond, if_true(), if_false()), computing a branch only where some element takes it
    (in a sweep every configuration usually has a prompt: the other branch would be wasted)."""
    if np.all(cond):
        return if_true()
    if not np.any(cond):
        return if_false()
    return np.where(cond, if_true(), if_false())


def _arr(v, ft):
    """``v`` in the working dtype: an array, or a numpy scalar when it is a single number (numpy
    scalar arithmetic is several times faster than 0-d arrays, and one prediction is all scalars)."""
    a = np.asarray(v, ft)
    return a[()] if a.ndim == 0 else a


def format_fixed_s(g: Geometry, x: Inputs):
    """The extra fixed seconds per forward pass of a low-precision format's dense products (each
    `Inputs.format_gemm_us`), where the non-expert weights are in it: 16-bit attention and dense
    layers beside 4-bit experts (gpt-oss's MXFP4, Kimi's INT4) run 16-bit products."""
    quantized = np.asarray(x.bits.non_expert, float) < 16
    return np.where(quantized, g.dense_products * np.asarray(x.format_gemm_us, float) * 1e-6, 0.0)


def expert_overhead(e, expert_weight):
    """µs per expert visit (`Efficiency.expert_overhead_us`), or where it is nan ``expert_weight`` plain
    layers' worth (the runtime's ``decode_expert_weight``). Numbers or arrays."""
    fitted = np.asarray(e.expert_overhead_us, float)
    return np.where(np.isfinite(fitted), fitted, np.asarray(expert_weight, float) * np.asarray(e.layer_overhead_us, float))


class _Arrays:
    """The inputs as arrays of the working dtype, converted once per evaluation and shared by the
    three steps, plus the terms they all use (GPU split, KV per sequence, fixed costs)."""

    def __init__(self, g: Geometry, x: Inputs, ft):
        self.ft = ft
        self.n = _arr(x.gpus, ft)
        self.tpm = np.asarray(x.tensor_parallel, bool)
        dp, ep = np.asarray(x.attention_dp), np.asarray(x.expert_parallel, bool)
        # a layout past one group: the plain path below runs untouched where no configuration has one
        self.wide = x.stages is not None or bool(np.any(dp > 1) or np.any(ep)) \
            or bool(np.any(np.asarray(x.gpus) > np.asarray(x.domain_gpus)))
        if self.wide:
            stages = _arr(1.0 if x.stages is None else x.stages, ft)
            self.pp = _arr(_where(self.tpm, stages, self.n), ft)
            self.dp = _arr(_where(self.tpm, dp, 1.0), ft)
            self.tp = _arr(_where(self.tpm, self.n / (self.pp * self.dp), 1.0), ft)
            self.ep = ep & self.tpm
            self.domain = _arr(x.domain_gpus, ft)
            self.net = _arr(x.network_gb_s, ft) * 1e9 * LINK_EFFICIENCY
        else:
            self.tp = _arr(_where(self.tpm, self.n, 1.0), ft)
            self.pp = _arr(_where(self.tpm, 1.0, self.n), ft)
            self.dp = 1.0
        # latencies per tensor-parallel exchange: one, or one per GPU taking part
        self.lat_per_exchange = _arr(_where(np.asarray(x.allreduce_per_device, bool), self.tp, 1.0), ft)
        self.B = _arr(x.batch, ft)
        self.s = _arr(x.prompt, ft)
        self.o = _arr(x.output, ft)
        self.d = _arr(x.depth, ft)
        self.bw = _arr(x.bandwidth_gb_s, ft) * 1e9
        self.peak = _arr(x.peak_tflops, ft) * 1e12
        # attention runs at its own dtype's peak, never at the weights' FP4/INT4 rate
        self.attn_peak = self.peak if x.attn_peak_tflops is None else _arr(x.attn_peak_tflops, ft) * 1e12
        self.vec_peak = _arr(x.vector_peak_tflops, ft) * 1e12
        self.serial = _arr(x.reads_then_products, ft) > 0
        self.vec_max = _arr(x.vector_batch_max, ft)
        self.vec_ops = _arr(x.vector_ops_per_weight, ft)
        self.vec_seq_ops = _arr(x.vector_seq_ops_per_weight, ft)
        self.experts_slow = _arr(x.experts_slow_per_doubling, ft)
        self.link = _arr(x.link_gb_s, ft) * 1e9
        self.bits = WeightBits(*(_arr(b, ft) for b in (x.bits.non_expert, x.bits.expert, x.bits.embedding,
                                                              x.bits.head, x.bits.expert_dequant)))
        e = x.eff
        self.eta_bw, self.eta_c, self.eta_att = (_arr(v, ft) for v in (e.decode_bw_fraction,
                                                                             e.prefill_compute_fraction,
                                                                             e.attention_compute_fraction))
        # int8 kernels reach their own fraction of the int8 peak (nan: the linear layers' own)
        i8 = np.asarray(e.int8_compute_fraction, float)
        if np.any(np.asarray(x.int8_linear, bool)) and np.any(np.isfinite(i8)):
            self.eta_c = _arr(np.where(np.asarray(x.int8_linear, bool) & np.isfinite(i8), i8,
                                       e.prefill_compute_fraction), ft)
        # the routed experts' fraction: where none is set (nan), the linear layers' own
        exp = np.asarray(e.expert_compute_fraction, float)
        self.eta_exp = self.eta_c if not np.any(np.isfinite(exp)) else _arr(
            np.where(np.isfinite(exp), exp, e.prefill_compute_fraction), ft)
        share = _arr(x.gemm_share, ft)
        # what the hardware's matrix units sustain under dense load (the fitted fractions are Hopper's)
        sustained = _arr(x.matrix_share, ft)
        # the work beside the products at the part's own SM rate (`devices.with_side_work`; the plain
        # path's arithmetic untouched where every part's scale is 1)
        side = np.asarray(x.side_work_scale, float)
        plain = bool(np.all(side == 1.0))

        def sided(fraction):
            return fraction if plain else _arr(with_side_work(fraction, side), ft)

        self.eta_att = sided(self.eta_att) * sustained
        self.eta_c16 = sided(self.eta_c) * sustained   # the attention products' (their own dtype)
        # a decode step's attention: the linear layers' fraction, or a latent attention's own kernel's
        self.eta_att_dec = self.eta_c16
        mla = np.asarray(x.mla_decode_fraction, float)
        if g.latent_rank and np.any(np.isfinite(mla)):
            self.eta_att_dec = _arr(np.where(np.isfinite(mla), mla, self.eta_c16), ft)
        # a decode step's cache reads: at the runtime's bandwidth fraction, or a latent attention's
        # kernel's own (`mla_bw_fraction`), which the calibration holds as it holds compute-bound kernels
        self.kv_own = np.zeros((), bool)
        self.eta_kv = self.eta_bw
        mla_bw = np.asarray(x.mla_bw_fraction, float)
        if g.latent_rank and np.any(np.isfinite(mla_bw)):
            self.kv_own = np.isfinite(mla_bw)
            self.eta_kv = _arr(np.where(self.kv_own, mla_bw, self.eta_bw), ft)
        self.eta_c = np.minimum(sided(self.eta_c * share) * sustained, 1.0)
        self.eta_exp = np.minimum(sided(self.eta_exp * share) * sustained, 1.0)
        self.decode_band = (_arr(e.decode_low, ft), _arr(e.decode_high, ft))
        self.bw_spread = _arr(e.bandwidth_spread, ft)   # the ceiling's memory roof: the best reading
        self.prefill_band = (_arr(e.prefill_low, ft), _arr(e.prefill_high, ft))
        # per forward pass: L·τ_layer + τ_step, and the latency of one GPU-to-GPU message
        self.fixed = (_arr(g.fixed_pass_us(e.layer_overhead_us, expert_overhead(e, x.decode_expert_weight)), ft) * 1e-6
                      + _arr(format_fixed_s(g, x), ft) + _arr(e.step_overhead_us, ft) * 1e-6)
        self.lat = _arr(e.allreduce_latency_us, ft) * 1e-6
        self.per_seq = _arr(e.seq_overhead_us, ft) * 1e-6
        self.per_request = _arr(e.request_overhead_us, ft) * 1e-6
        # a prompt pass's extra launches: per MoE layer, and per MLA / linear-attention layer
        moe_layers, complex_layers = g.eager_layers
        self.eager = _arr(moe_layers * np.asarray(x.prefill_moe_layer_us, float)
                          + complex_layers * np.asarray(x.prefill_complex_layer_us, float), ft) * 1e-6
        self.kv = _Kv(g, self, _arr(x.kv_bits, ft))
        self.cap = x.throughput_cap_tok_s
        # the techniques' inputs: None where they are at their defaults, so that the plain path
        # runs exactly the arithmetic it always did
        q = np.asarray(x.query_tokens)
        self.q = None if np.all(q == 1) else _arr(q, ft)
        sb = np.asarray(x.score_bytes)
        self.score = None if not np.any(sb) else _arr(sb, ft)
        # memory tiers: the plain path runs untouched where no configuration has one
        sram, ddr = np.asarray(x.sram_gb), np.asarray(x.ddr_gb)
        self.tiered = bool(np.any(sram) or np.any(ddr))
        if self.tiered:
            self.sram, self.ddr = _arr(sram, ft) * 1e9, _arr(ddr, ft) * 1e9
            # extra seconds per byte read from a tier instead of main memory (negative for SRAM)
            with np.errstate(divide="ignore", invalid="ignore"):
                self.d_sram = _arr(_where(sram > 0, 1.0 / (_arr(x.sram_bandwidth_gb_s, ft) * 1e9) - 1.0 / self.bw, 0.0), ft)
                self.d_ddr = _arr(_where(ddr > 0, 1.0 / (_arr(x.ddr_bandwidth_gb_s, ft) * 1e9) - 1.0 / self.bw, 0.0), ft)
            # set by memory_plan: the extra seconds per byte of weights and of KV read, at η = 1
            self.w_tier = self.kv_tier = 0.0

    def score_elems(self, g: Geometry, c):
        """Attention scores per query token per GPU over a context c (all layers, heads / tp)."""
        W = float(g.window) if g.window else np.inf
        return g.heads / self.tp * (g.full_layers * c + g.sliding_layers * np.minimum(c, W))


class _Kv:
    """KV (and linear-attention state) bytes per sequence per GPU as a function of context."""

    def __init__(self, g: Geometry, a: _Arrays, kv_bits):
        self.kvb = kv_bits / 8.0
        self.window = float(g.window) if g.window else np.inf
        per_layer = float(g.kv_elems_per_layer)
        # GQA heads split across tensor-parallel GPUs (replicated when fewer than GPUs); MLA's
        # latent KV is replicated on every GPU; a layer split gives each GPU its layers' share
        tp_share = np.ceil(g.kv_heads / a.tp) / g.kv_heads if g.kv_splits else np.ones_like(a.tp)
        kv_share = _where(a.tpm, tp_share / a.pp, 1.0 / a.n) if a.wide else _where(a.tpm, tp_share, 1.0 / a.n)
        self.full = g.full_layers * per_layer * kv_share
        self.slide = g.sliding_layers * per_layer * kv_share
        self.state = g.linear_layers * g.linear_state_bytes / a.n
        # DeepSeek Sparse Attention: the indexer's keys, bytes per token at their own precision
        # (replicated under tensor parallel, as the latent is), and the tokens core attention reads
        self.idx = g.full_layers * g.indexer_key_bytes * kv_share
        self.topk = g.sparse_topk
        self.sparse = g.sparse
        # elements per token of the full layers, the indexer's bytes counted as elements of the cache
        self.full_stored = self.full + self.idx / self.kvb if self.sparse else self.full

    def __call__(self, c):
        """Bytes held per sequence at context c."""
        held = self.kvb * (self.full * c + self.slide * np.minimum(c, self.window)) + self.state
        return held + self.idx * c if self.sparse else held

    def read(self, c):
        """Bytes a decode step reads per sequence at context c: with sparse attention, the latent of
        the ``topk`` tokens picked and every token's indexer key."""
        if not self.sparse:
            return self(c)
        return self.kvb * (self.full * np.minimum(c, self.topk) + self.slide * np.minimum(c, self.window)) \
            + self.idx * c + self.state


def memory_plan(g: Geometry, x: Inputs, a: _Arrays) -> Result:
    """Weights, KV at the longest context, workspace and overhead against usable memory."""
    ft, n, kv, B = a.ft, a.n, a.kv, a.B
    weights_total = weight_bytes(g, a.bits)
    weights_gpu = weights_total / n
    c_max = a.d + a.s + a.o
    seq_bytes = kv(c_max)
    kv_need = B * seq_bytes
    if a.wide:
        # each attention group holds the non-expert weights (split over its tp GPUs and the stages)
        # and the sequences it serves; the routed experts are split over all of a stage's GPUs
        experts = g.routed_expert_params * a.bits.expert / 8.0   # as stored
        weights_gpu = (weights_total - experts) / (a.tp * a.pp) + experts / (a.tp * a.dp * a.pp)
        kv_need = np.ceil(B / a.dp) * seq_bytes
        # a sequence's cache sits in one group: per GPU of the instance, 1/dp of it on average
        # (what the KV budget holds: max_batch, and the server's capacity, count the whole instance)
        seq_bytes = seq_bytes / a.dp
    ffn_act = g.experts_per_token * g.moe_intermediate if g.experts else g.intermediate
    ws_tok = np.asarray(x.workspace_tokens, ft)
    workspace = ws_tok * (WORKSPACE_HIDDEN_BYTES * g.hidden + WORKSPACE_FFN_BYTES * ffn_act) \
        + np.minimum(ws_tok, LOGIT_ROWS) * 4.0 * g.vocab
    dq = np.asarray(a.bits.expert_dequant, ft)
    if g.experts and np.any(dq > 0):
        # a runtime that dequantizes every expert before its products (vLLM's bitsandbytes) holds one
        # layer's dequantized copy of the experts on the GPU while it multiplies
        workspace = workspace + dq / 8.0 * g.routed_expert_params / g.moe_layers / (a.tp * a.dp)
    if a.score is not None:
        # eager attention: one layer's score matrix at a time, for the larger of a prompt chunk
        # (its tokens × the context it attends to) and a decode step (B·q tokens × the context)
        chunk = np.minimum(B * a.s, ws_tok)
        q = 1.0 if a.q is None else a.q
        workspace = workspace + a.score * g.heads / a.tp * np.maximum(chunk * (a.d + a.s), B * q * c_max)
    capacity = np.asarray(x.capacity_gb, ft) * 1e9
    reserve = np.asarray(x.reserve_gb, ft) * 1e9
    overhead = np.asarray(x.overhead_gb, ft) * 1e9
    frac = np.asarray(x.memory_fraction, ft)
    free_after_weights = capacity - reserve - overhead - weights_gpu - workspace
    kv_budget = _where(np.asarray(x.memory_of_free, bool), frac * free_after_weights,
                         capacity * frac - reserve - overhead - weights_gpu - workspace)
    tier_bytes = {}
    if a.tiered:
        kv_budget, capacity, tier_bytes = _place_in_tiers(a, weights_gpu, kv_need, kv_budget, capacity)
    usable = kv_budget + weights_gpu + workspace + overhead
    fits = (kv_budget >= kv_need) & (kv_budget >= 0)
    W = kv.window
    # the branches np.where discards may divide by ~0 and overflow float32: silence them
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        max_batch = _where(kv_budget > 0, np.floor(kv_budget / np.maximum(seq_bytes, 1e-30)), 0.0)
        # longest context at B=1: kv(c) <= budget, piecewise linear in c
        rem = (kv_budget - kv.state) / kv.kvb
        full = kv.full_stored
        both = full + kv.slide
        below_window = rem / np.maximum(both, 1e-30)
        above_window = _where(full > 0, W + (rem - both * W) / np.maximum(full, 1e-30), np.inf)
        ctx = _where(rem >= both * W, above_window, below_window)
    max_context = np.clip(np.floor(np.nan_to_num(ctx, posinf=g.native_context)), 0, g.native_context)
    max_context = _where(kv_budget > 0, max_context, 0.0)
    max_batch = np.minimum(max_batch, MAX_BATCH)
    return Result(
        weights_bytes=weights_total, weights_gpu_bytes=weights_gpu, kv_gpu_bytes=kv_need, kv_seq_bytes=seq_bytes,
        workspace_gpu_bytes=workspace + 0 * n, overhead_gpu_bytes=overhead + 0 * n, usable_gpu_bytes=usable,
        capacity_gpu_bytes=capacity + 0 * n, kv_budget_gpu_bytes=kv_budget, fits=fits, max_batch=max_batch,
        max_context=max_context, **tier_bytes)


def _place_in_tiers(a: "_Arrays", weights, kv, kv_budget, capacity):
    """Place the resident bytes fastest tier first: the weights, then the KV cache, fill the SRAM
    tier, then main memory's room (what the runtime leaves for weights and KV), then the DDR tier
    (the SN40L paper's order: parameters sit in DDR, the models in use are served from HBM and
    streamed through SRAM; a greedy fill is its simplest reading). Sets on ``a`` the extra seconds
    per byte of weights and of KV read (Σ bytes_tier / bw_tier minus all bytes / bw_main) and
    returns the KV budget and capacity with the two tiers added, and the bytes each tier holds."""
    F, D = a.sram, a.ddr
    main_room = np.maximum(kv_budget + weights, 0.0)
    W, K = weights, kv
    w_sram = np.minimum(W, F)
    w_ddr = np.maximum(W - F - main_room, 0.0)
    k_sram = np.clip(F - W, 0.0, K)
    k_ddr = np.maximum(W + K - np.maximum(W, F + main_room), 0.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        a.w_tier = (w_sram * a.d_sram + w_ddr * a.d_ddr) / np.maximum(W, 1e-30)
        a.kv_tier = (k_sram * a.d_sram + k_ddr * a.d_ddr) / np.maximum(K, 1e-30)
    return (kv_budget + F + D, capacity + F + D,
            {"sram_gpu_bytes": w_sram + k_sram, "ddr_gpu_bytes": np.minimum(w_ddr + k_ddr, D)})


def pipeline_share(pp, micro_batches, prompts, copies, largest=None):
    """The time a prompt pass over ``pp`` pipeline stages takes, as a share of its stages' work done one
    after another: each stage starts the next micro-batch as it hands one on, so the pass takes every
    micro-batch's time on one stage plus the largest's on the other pp − 1: a share of
    1/pp + (pp − 1)/pp · ``largest`` (that micro-batch's share of the pass's tokens; 1/m for m equal
    ones, (m + pp − 1)/(m·pp); a prompt one token past a micro-batch gains next to nothing) — when
    enough of them are in flight: at most ``copies`` at once where one prompt's micro-batches pipeline
    (llama.cpp's layer split keeps 4), else one per prompt (vLLM, SGLang and TensorRT-LLM put a request
    in one batch at a time, so a lone prompt crosses the stages one after another). With c in flight
    the stages are at most c/pp busy. 1 without stages."""
    if largest is None:
        largest = 1.0 / np.maximum(micro_batches, 1.0)
    in_flight = np.minimum(np.minimum(pp, micro_batches), np.where(copies > 0, copies, np.maximum(prompts, 1.0)))
    share = np.maximum(1.0 / np.maximum(in_flight, 1.0), 1.0 / pp + (pp - 1.0) / pp * largest)
    return np.where(pp > 1, share, 1.0)


def _exchanges(g: Geometry, tp, pp, per_exchange=1.0):
    """GPU-to-GPU messages per forward pass: two all-reduces per layer under tensor parallel
    (each ``per_exchange`` latencies), one hand-over between consecutive stages under a layer split."""
    return _arr(_where(tp > 1, 2.0 * g.layers * per_exchange, 0.0) + _where(pp > 1, pp - 1, 0.0), tp.dtype)


def _transfer_s(g: Geometry, tokens, tp, pp, link):
    """Time on the link for the activations of ``tokens`` tokens in one forward pass: a ring
    all-reduce moves 2·(tp−1)/tp of the message twice per layer; a stage hand-over moves it once."""
    per_byte = (_where(tp > 1, 2.0 * g.layers * 2.0 * (tp - 1) / tp, 0.0) + _where(pp > 1, pp - 1, 0.0)) / link
    return _arr(per_byte, link.dtype) * (tokens * (g.hidden * ACTIVATION_BYTES))


def _link_for(a: _Arrays, group):
    """Bytes per second a collective over ``group`` GPUs attains: the scale-up link within a
    domain, the network (at `LINK_EFFICIENCY`) past it."""
    return _where(group <= a.domain, a.link, a.net)


def _wide_comm(g: Geometry, a: _Arrays, tokens, per_node: bool = False):
    """(messages, seconds on the links, of which the experts' all-to-all) of one forward pass of
    ``tokens`` tokens (all of a stage's attention groups together) in a layout past one group:

    - attention's output: an all-reduce within each tensor-parallel group, over its share of the tokens;
    - without data-parallel attention, an MLP the experts do not split (dense layers; MoE layers
      without EP) all-reduces over the stage's GPUs; with it, the dense layers run data-parallel in
      each group (SGLang's --moe-dense-tp-size 1, what its large-scale EP guides run) and MoE
      layers without EP all-reduce over the stage, over every token of it;
    - MoE layers with EP: each token to the GPUs of its top-k experts (at most EP − 1 others) and
      back, the share of peers beyond the domain over the network, the rest over the scale-up link,
      both at once (`LINK_EFFICIENCY`): a decode step's low-latency kernels send straight to each
      GPU. A prompt pass's (``per_node``) throughput kernels send a token once to each other domain
      that holds one of its experts and forward it there over the scale-up link (DeepEP's normal
      kernels, which SGLang and vLLM run for prompts: "forwarding data from NVLink domain to RDMA
      domain", deepseek-ai/DeepEP docs/legacy.md; its test counts RDMA bytes per distinct node): of N
      domains, a token's k experts reach N·(1 − (1 − 1/N)^k) of them, its own among them;
    - between pipeline stages, the activations once, over the network where the instance spans domains.
    A ring all-reduce moves 2·(G − 1)/G of the message per GPU. The all-to-all is returned apart:
    engines that run wide EP overlap it with the other half-batch's compute (two-batch overlap).
    """
    tp, dp, pp, act = a.tp, a.dp, a.pp, g.hidden * ACTIVATION_BYTES
    G = tp * dp
    moe = float(g.moe_layers)
    dense = float(g.layers) - moe
    mlp_layers = _where(dp > 1, _where(a.ep, 0.0, moe), _where(a.ep, dense, float(g.layers)))
    msgs = _where(tp > 1, float(g.layers), 0.0) + _where(G > 1, mlp_layers, 0.0)
    secs = _where(tp > 1, g.layers * 2.0 * (tp - 1) / tp * (tokens / dp) * act / _link_for(a, tp), 0.0) \
        + _where(G > 1, mlp_layers * 2.0 * (G - 1) / np.maximum(G, 1.0) * tokens * act / _link_for(a, G), 0.0)
    a2a = 0.0
    if g.experts and np.any(a.ep):
        peers = np.maximum(G - 1.0, 1.0)
        beyond = np.clip((G - a.domain) / peers, 0.0, 1.0)   # of a GPU's peers, those past its domain
        sent = tokens / G * np.minimum(float(g.experts_per_token), G - 1.0) * g.hidden \
            * (DISPATCH_BYTES + COMBINE_BYTES)
        if per_node:
            # every GPU-to-GPU delivery ends on the scale-up link; the network carries one copy per
            # other domain reached
            domains = np.maximum(G / a.domain, 1.0)
            reached = (domains - 1.0) * -np.expm1(float(g.experts_per_token) * np.log1p(-1.0 / np.maximum(domains, 2.0)))
            on_link = sent
            on_net = tokens / G * reached * g.hidden * (DISPATCH_BYTES + COMBINE_BYTES)
        else:
            on_link, on_net = sent * (1.0 - beyond), sent * beyond
        # (no network where one is needed: nan, a prediction that cannot be made)
        a2a = moe * np.maximum(on_link / (a.link * LINK_EFFICIENCY), _where(beyond > 0, on_net / a.net, 0.0))
        msgs = msgs + _where(a.ep, 2.0 * moe, 0.0)
        a2a = _where(a.ep & (G > 1), a2a, 0.0)
    hop = _where(a.n > a.domain, a.net, a.link)
    msgs = msgs + _where(pp > 1, pp - 1.0, 0.0)
    secs = secs + _where(pp > 1, (pp - 1.0) * (tokens / dp) * act / hop, 0.0)
    return _arr(msgs, a.ft), _arr(secs, a.ft), _arr(a2a, a.ft)


#: the largest batch `experts_slowdown` was measured at; past it the factor stays
EXPERTS_SLOW_MAX_BATCH = 64


def experts_slowdown(per_doubling, batch):
    """How much slower than modelled a mixture of experts decodes ``batch`` sequences at once where
    the runtime is measured so (`Inputs.experts_slow_per_doubling`): 1 + k · log2 B, B from 1 to 64."""
    b = np.clip(np.asarray(batch, float), 1.0, EXPERTS_SLOW_MAX_BATCH)
    return 1.0 + np.asarray(per_doubling, float) * np.log2(b)


def linear_peak(a: "_Arrays", tokens):
    """The linear layers' peak for a decode step of ``tokens`` query tokens: the vector kernels' at
    most where the runtime has them and the step is small enough (`Inputs.vector_peak_tflops`)."""
    if not np.any(np.isfinite(a.vec_peak)):
        return a.peak
    return np.where(tokens <= a.vec_max, np.fmin(a.peak, a.vec_peak), a.peak)


def decode_step(g: Geometry, a: _Arrays) -> dict[str, Any]:
    """Time per output token (averaged over the output by Simpson's rule), its roofline
    coordinates at the middle step, its 100 % ceiling and the knee batch."""
    n, tp, pp, B, bw, peak, link, bits, kv = a.n, a.tp, a.pp, a.B, a.bw, a.peak, a.link, a.bits, a.kv
    W = kv.window
    out_params = g.output_params
    attn_coeff = g.decode_attention_coeff   # FLOPs per token per layer per context token

    def attn_flops(c):
        if kv.sparse:  # core attention over the tokens picked; the indexer scores every one
            return attn_coeff * (g.full_layers * np.minimum(c, kv.topk) + g.sliding_layers * np.minimum(c, W)) \
                + g.indexer_flops_per_pair * g.full_layers * c
        return attn_coeff * (g.full_layers * c + g.sliding_layers * np.minimum(c, W))

    Bq = B if a.q is None else B * a.q   # query tokens per step (speculative verification: B·(k+1))
    touched = g.expert_fraction(Bq)   # the share of the routed experts the step's tokens visit
    w_read = bytes_read(g, bits, touched)
    dec_flops_lin = Bq * 2.0 * (g.flops_params_per_token + out_params)
    eta_bw, eta_c, fixed, lat = a.eta_bw, a.eta_c, a.fixed, a.lat
    a2a = 0.0
    if a.wide:
        exchanges, transfer, a2a = _wide_comm(g, a, Bq)
    else:
        exchanges = _exchanges(g, tp, pp, a.lat_per_exchange)
        transfer = _transfer_s(g, Bq, tp, pp, link)
    comm = exchanges * lat + transfer
    # the busiest attention group's sequences (data-parallel attention splits them; else all B)
    Bg = np.ceil(B / a.dp) if a.wide else B

    c0 = a.d + a.s
    c1 = c0 + a.o
    cm = 0.5 * (c0 + c1)
    # a handful of sequences: the quantized products run vector kernels that unpack the weights
    # again for each sequence (`vector_peak`), at the vector units' rate instead of the matrix peak
    peak = linear_peak(a, Bq)
    eff_bw, eff_c = bw * eta_bw, peak * eta_c
    w_tp = w_read / tp
    lin_share = 1.0 / tp
    experts = expert_pass_bytes(g, bits, touched) if g.experts else 0.0
    exp_gpu = experts / tp   # the routed experts' bytes each GPU reads
    if a.wide:
        # the non-expert weights whole in each attention group; the experts the stage's tokens
        # route to, split over all its GPUs; the linear FLOPs of every token split over them all
        exp_gpu = experts / (tp * a.dp)
        w_tp = (w_read - experts) / tp + exp_gpu
        lin_share = 1.0 / (tp * a.dp)
    # A grouped expert kernel pays its weight reads and its products one after the other: each expert
    # multiplies too few tokens for its tile loads to hide behind its products the way a dense GEMM's
    # do. aiconfigurator's MoE tables (DeepSeek's layer over 8 GPUs, 2 to 256 tokens an expert, 65
    # engine × version × dtype × GPU tables) fit reads + products within 10 % at the median table's
    # worst token count, where the larger of the two misses by 36 % (`benchmarks/moe_kernels.py`,
    # table 4). The first token a touched expert gets rides along with its read (one token is a
    # matrix-vector product, bound by the read); each further one adds its products, at the experts'
    # fraction (each multiplies only the tokens routed to it, as in a prompt pass); the other linear
    # layers' products (``dense_flops``, the stage's) keep their roofline. Per GPU: all the routed
    # products' time (``exp_c``) and the added.
    dense_flops = dec_flops_lin
    exp_c = exp_more = more_flops = 0.0
    if g.experts:
        exp_flops = Bq * 2.0 * g.routed_active_params
        dense_flops = dec_flops_lin - exp_flops
        exp_c = np.nan_to_num(exp_flops * lin_share / (peak * a.eta_exp), nan=0.0)
        more_flops = 2.0 * np.maximum(Bq * g.routed_active_params - touched * g.routed_expert_params, 0.0) * lin_share
        # (0 where the catalog has no compute peak: the memory roof alone decides, as fmax has it below)
        exp_more = np.nan_to_num(more_flops / (peak * a.eta_exp), nan=0.0)

    # Step time at context c = max(bytes / attained bandwidth, FLOPs / attained compute), with
    # bytes = weights / tp + B · KV(c) · pp and FLOPs = (linear + B · attention(c)) / tp. Factored
    # so that the per-configuration terms are computed once and only a few operations run over
    # every configuration × batch (a sweep is memory-bound on those).
    Bgq = Bg if a.q is None else Bg * a.q

    # the attention products run at their own dtype's peak (16-bit or FP8), never the weights' FP4/INT4
    apeak = a.attn_peak

    # the vector kernels' time where the format's unpacking was measured (`Inputs.vector_ops_per_weight`):
    # one sequence's pass over every weight read, and each further sequence's over the active ones.
    # Not scaled by the fitted compute fraction (the operations are counted at the measured rate);
    # elsewhere, and past vector_batch_max (the matrix kernels), the FLOPs at the attained compute rate.
    # It does not depend on the context: worked out once, not for each point the step is evaluated at
    lin_measured = None
    if np.any(np.isfinite(a.vec_ops)):
        weights_read = g.non_expert_params + out_params + g.routed_expert_params * touched
        weights_active = g.flops_params_per_token + out_params
        vec_s = (a.vec_ops * weights_read + a.vec_seq_ops * np.maximum(Bq - 1.0, 0.0) * weights_active) \
            / (a.vec_peak * tp)
        vec_on = (Bq <= a.vec_max) & np.isfinite(vec_s)
        # (the vector kernels unpack every weight, the experts' too, in one pass: their rows whole)
        lin_measured = np.where(vec_on, vec_s, dense_flops * (1.0 / eff_c) / tp)

    def linear_times(inv_bw, inv_c, inv_eta, measured_vec=True):
        """((weight bytes, linear FLOPs), (expert bytes, expert products added, all expert products)) in
        seconds at the given rates, the same at every context: the linear layers' kernels at their own
        roofs, and the routed experts' grouped kernels (their reads, then the products beyond each
        expert's first token). ``measured_vec``: the attained rates, the linear layers as
        `lin_measured` has them and the experts apart (the ceiling keeps every product at the peak
        in the one roof: its second part is 0)."""
        w_byte_s = inv_bw
        if a.tiered:
            # the bytes in the SRAM and DDR tiers at their own bandwidth instead of main memory's
            w_byte_s = inv_bw + a.w_tier * inv_eta
        w_mem = w_tp * w_byte_s
        flops = dense_flops if measured_vec else dec_flops_lin
        if a.wide:
            lin = flops * lin_share * inv_c
        else:
            lin = flops * inv_c / tp
            if measured_vec and lin_measured is not None:
                lin = lin_measured
        if not (measured_vec and g.experts):
            return (w_mem, lin), (0.0, 0.0, 0.0)
        # the experts' reads out of the linear layers' roof, with their products after them
        exp_mem, exp_lin, exp_add = exp_gpu * w_byte_s, exp_c, exp_more
        if lin_measured is not None and not a.wide:
            exp_mem, exp_lin, exp_add = (np.where(vec_on, 0.0, x) for x in (exp_mem, exp_lin, exp_add))
        return (w_mem - exp_mem, lin), (exp_mem, exp_add, exp_lin)

    def attention_times(c, inv_bw, inv_eta, inv_att):
        """(KV bytes, attention FLOPs) at context c, in seconds at the given rates."""
        kv_mem = Bg * kv.read(c) * pp * inv_bw
        if a.tiered:
            kv_mem = kv_mem + Bg * kv.read(c) * pp * a.kv_tier * inv_eta
        if a.score is not None:
            kv_mem = kv_mem + Bgq * a.score * EAGER_SCORE_PASSES * a.score_elems(g, c) * inv_bw
        att = Bgq * attn_flops(c) / tp * inv_att if a.wide else Bq * attn_flops(c) * inv_att / tp
        return kv_mem, att

    def simpson(values):
        return (values[0] + 4.0 * values[1] + values[2]) / 6.0

    # A step runs its linear layers' kernels, its experts' and its attention kernels one after the
    # other, each at its own roof: a batch whose products are compute-bound still waits for its KV
    # reads (fmax: with no compute peak in the catalog, nan, the memory roof alone decides). The
    # linear layers' and the experts' kernels take the same at every context: worked out once.
    (w_mem, lin), (exp_mem, exp_add, exp_lin) = linear_times(1.0 / eff_bw, 1.0 / eff_c, 1.0 / eta_bw)
    attention = [attention_times(c, 1.0 / (bw * a.eta_kv), 1.0 / eta_bw, 1.0 / (apeak * a.eta_att_dec))
                 for c in (c0, cm, c1)]
    # On a CPU the same cores read the weights and multiply them: over a few sequences the products of
    # the first ride along with the read (a matrix-vector product streams at the bandwidth), and each
    # further sequence's come after it. llama.cpp's CPU kernels on a 2-core AMD EPYC (Zen 4), TinyLlama's
    # shape, 1 to 8 sequences (catalog/measured/llamacpp_cpu_batched_this_machine.md): in Q4_0 and Q8_0
    # each sequence from the third on added 8.1-10.8 ms, about what a prompt token costs there, where
    # the larger of the two roofs kept the step at the read up to 4 sequences (38-113 % too fast).
    # Elsewhere (GPUs, whose SMs overlap loads with products), the larger of the two.
    # (a CPU without a compute peak in the catalog, nan: the memory roof alone, as fmax has it below)
    first = lin / np.maximum(Bq, 1.0)
    further = np.nan_to_num(lin - first, nan=0.0)
    with_read, first_bound = _first_with_read(w_mem, first)
    lin_time = np.where(a.serial, with_read + further, np.fmax(w_mem, lin))
    lin_compute_bound = np.where(a.serial, further + first_bound, np.where(lin > w_mem, lin, 0.0))
    # the experts likewise: each touched expert's first token multiplies as the expert is read, and
    # takes longer than the read only where the products are slow for the bytes (a 1.75-bit format on
    # a P100), the further tokens' products after it
    exp_with_read, exp_first_bound = _first_with_read(exp_mem, exp_lin - exp_add)
    linear_kernels = lin_time + exp_with_read + exp_add
    attention_kernels = [np.fmax(kv_mem, att) for kv_mem, att in attention]
    mid_memory_s, mid_compute_s = w_mem + exp_mem + attention[1][0], lin + exp_lin + attention[1][1]
    # the ceiling: the whole step at one roof, the looser bound (a runtime that overlaps the two
    # kinds of kernel could approach it; none can pass it)
    (w_ideal, lin_ideal), _ = linear_times(1.0 / (bw * a.bw_spread), 1.0 / peak, 1.0, False)
    ideal = [np.fmax(w_ideal + kv_mem, lin_ideal + att)
             for kv_mem, att in (attention_times(c, 1.0 / (bw * a.bw_spread), 1.0, 1.0 / apeak) for c in (c0, cm, c1))]
    fixed_comm = fixed + comm + Bg * a.per_seq  # every running sequence adds its bookkeeping
    t_kernels = linear_kernels + simpson(attention_kernels)
    t_step = t_kernels
    # the time of a step's compute-bound kernels (the rest is memory-bound): what the calibration's fit
    # holds, and divides the rest by the bandwidth fraction (nan compute: none)
    t_compute_bound = lin_compute_bound + exp_first_bound + exp_add \
        + simpson([np.where(att > kv_mem, att, np.where(a.kv_own, kv_mem, 0.0)) for kv_mem, att in attention])
    if a.wide:
        # the all-to-all hides behind the other half-batch's work, all but TBO_EXPOSED of the shorter
        t_step = np.fmax(t_step, a2a) + TBO_EXPOSED * np.fmin(t_step, a2a)
        transfer = transfer + a2a
    t_step = t_step + fixed_comm
    t_step_ceil = simpson(ideal)
    t_step_first = linear_kernels + attention_kernels[0] + fixed_comm
    cap = np.asarray(a.cap)
    free_tok_s = 1.0 / t_step   # before the vendor's figure: the serving model floors a whole served step
    if np.any(np.isfinite(cap)):
        # never faster than the vendor publishes for this model on this hardware
        # (where a configuration has none, nothing: a step the kernel cannot time, nan, stays unknown
        # rather than becoming the floor of an infinite maximum, 0)
        floor = np.where(np.isfinite(cap), B / _arr(cap, a.ft), np.nan)
        t_step, t_step_first = np.fmax(t_step, floor), np.fmax(t_step_first, floor)
    mid_kv = Bg * (kv.read(cm) * pp)
    mid_bytes = w_tp + mid_kv
    mid_flops = dec_flops_lin * lin_share + Bgq * attn_flops(cm) / tp if a.wide \
        else (dec_flops_lin + Bq * attn_flops(cm)) / tp
    decode_tok_s = 1.0 / t_step
    ceiling = 1.0 / t_step_ceil
    # The knee: the batch where the decode compute roof meets the memory roof for the weights
    # alone (ideal roofs, all experts read): B* = weight bytes · peak / (BW · FLOPs per token).
    # KV reads grow with B too and push the real knee higher, or remove it at long context.
    f1 = 2.0 * (g.flops_params_per_token + out_params) / tp
    knee = bytes_read(g, bits, 1.0) / tp * a.peak / (bw * f1)
    low = decode_tok_s * a.decode_band[0]
    if g.experts:
        low = low / experts_slowdown(a.experts_slow, B)
    high = np.fmin(decode_tok_s * a.decode_band[1], ceiling)  # never above the roofline
    if np.any(np.isfinite(cap)):
        high = np.fmin(high, _arr(cap, a.ft) / B)          # nor above the vendor's published maximum
    return {
        "decode_tok_s": decode_tok_s, "decode_free_tok_s": free_tok_s, "throughput_cap_tok_s": _arr(cap, a.ft) + 0 * n,
        "decode_low_tok_s": low, "decode_high_tok_s": high,
        "decode_ceiling_tok_s": ceiling, "throughput_tok_s": B * decode_tok_s,
        "decode_memory_s": mid_memory_s, "decode_compute_s": mid_compute_s,
        "decode_memory_bound_s": t_kernels - t_compute_bound, "decode_compute_bound_s": t_compute_bound,
        "decode_fixed_s": fixed_comm + 0 * n, "decode_expert_products_s": exp_add + 0 * n,
        "decode_expert_products_flops": more_flops + 0 * n,
        "decode_bytes": mid_bytes, "decode_flops": mid_flops,
        "decode_weight_bytes": w_tp, "decode_head_bytes": out_params * bits.head / 8.0 / tp,
        "decode_kv_bytes": mid_kv, "decode_attention_flops": Bgq * attn_flops(cm) / tp,
        "decode_head_flops": Bq * 2.0 * out_params / tp, "decode_exchanges": exchanges, "decode_transfer_s": transfer,
        "knee_batch": knee, "_first_step_s": t_step_first,
    }


def _first_with_read(read_s, first_s):
    """A kernel that reads its weights and then multiplies them (a CPU's linear layers, a grouped expert
    kernel; `decode_step`): the first token's products stream with the read, the further tokens' come
    after it. The read and the first token's products together, and the part of that the products
    bind (a nan product: the read alone, none bound); the caller adds the further products."""
    return np.fmax(read_s, first_s), np.where(first_s > read_s, first_s, 0.0)


def prefill(g: Geometry, x: Inputs, a: _Arrays) -> dict[str, Any]:
    """Time to process B prompts of s tokens after d cached ones, in micro-batches of the
    runtime's workspace: linear and attention FLOPs, the element-wise kernels' activation traffic, weight
    reads per micro-batch, fixed costs."""
    ft, tp, pp, B, s, d, bw, peak, link, bits = a.ft, a.tp, a.pp, a.B, a.s, a.d, a.bw, a.peak, a.link, a.bits
    W = float(g.window) if g.window else np.inf
    attn_coeff = 2.0 * g.heads * (g.qk_head_dim + g.v_head_dim)
    ws_tok = np.asarray(x.workspace_tokens, ft)
    T = B * s
    ub = np.maximum(np.ceil(T / ws_tok), 1.0)
    tok_per_ub = np.minimum(T, ws_tok)
    w_bytes = bytes_read(g, bits, g.expert_fraction(tok_per_ub), with_output=False)
    lin = 2.0 * g.flops_params_per_token * T + 2.0 * g.output_params * B  # logits of the last token only
    # the part of it in the routed experts (MoE): they run at their own fraction of the peak
    lin_exp = 2.0 * g.routed_active_params * T
    # causal attention: each prompt token attends to the cache and half the prompt on average
    att = B * attn_coeff * s * (g.full_layers * (d + s / 2.0) + g.sliding_layers * np.minimum(W, d + s / 2.0))
    if g.sparse:
        # sparse attention: each prompt token attends to at most top-k of the tokens before it (the
        # average position's count, min(k, d + s/2)); the indexer scores all of them
        att = B * s * (attn_coeff * (g.full_layers * np.minimum(g.sparse_topk, d + s / 2.0)
                                     + g.sliding_layers * np.minimum(W, d + s / 2.0))
                       + g.indexer_flops_per_pair * g.full_layers * (d + s / 2.0))
    eta_c, eta_att, eta_bw, fixed, lat = a.eta_c, a.eta_att, a.eta_bw, a.fixed, a.lat
    # the GPUs the non-expert and attention work of these prompts spreads over, and the experts'
    tp_d = tp_e = tp
    if a.wide:
        # each prompt runs in one attention group (B prompts fill min(B, dp) of them); the routed
        # experts are split over all of the stage's GPUs
        groups = np.minimum(np.maximum(B, 1.0), a.dp)
        tp_d, tp_e = tp * groups, tp * a.dp
        # the groups run their micro-batches side by side: each pass carries one from every busy
        # group through the experts and the exchanges
        ub = np.maximum(np.ceil(T / groups / ws_tok), 1.0)
        tok_per_ub = np.minimum(T / groups, ws_tok) * groups
        w_bytes = bytes_read(g, bits, g.expert_fraction(tok_per_ub), with_output=False)
        exchanges, transfer, a2a = _wide_comm(g, a, tok_per_ub, per_node=True)
        exchanges, transfer, a2a = ub * exchanges, ub * transfer, ub * a2a
    else:
        exchanges = ub * _exchanges(g, tp, pp, a.lat_per_exchange)
        transfer = ub * _transfer_s(g, tok_per_ub, tp, pp, link)
    # per-configuration coefficients first, so that few operations run over configurations × batches
    w_gpu = w_bytes / tp
    if a.wide:
        experts = expert_pass_bytes(g, bits, g.expert_fraction(tok_per_ub))
        w_gpu = (w_bytes - experts) / tp + experts / tp_e
    lin_gpu, att_gpu, bytes_gpu = lin / tp_d, att / tp_d, ub * w_gpu
    per_pass = w_gpu / (bw * eta_bw) + fixed + a.eager
    if a.tiered:
        per_pass = per_pass + w_gpu * a.w_tier / eta_bw
    apeak = a.attn_peak
    # the element-wise kernels between the products (norms, residual adds, RoPE, the gated
    # activation) are memory-bound: the norms run whole on every GPU of a group, the rest split
    repl, split, experts_act = g.activation_bytes

    def group_work(gpus):
        """(the non-expert and attention products' time, their element-wise kernels' bytes) per GPU
        with that work over ``gpus`` GPUs."""
        return ((lin - lin_exp) * (1.0 / (gpus * peak * eta_c)) + att * (1.0 / (gpus * apeak * eta_att)),
                T * (repl * tp / gpus + split / gpus))

    def spread_over(gpus):
        """(the products' time, the element-wise kernels' bytes) per GPU with the non-expert and
        attention work over ``gpus`` GPUs (the routed experts always over the stage's)."""
        products, act = group_work(gpus)
        if g.experts:
            products = products + lin_exp * (1.0 / (tp_e * peak * a.eta_exp))
        return products, act + T * experts_act / tp_e

    compute, act_gpu = spread_over(tp_d)
    act_s = act_gpu / (bw * eta_bw)
    t = compute + act_s + ub * per_pass + exchanges * lat + transfer
    # the part of the pass that grows with its tokens (what a server's steps pay per prompt token):
    # the products, the element-wise kernels and, under tensor parallel, the activations' all-reduces
    token_s = compute + act_s + transfer
    group_s = 0.0 * token_s
    if a.wide:
        # the all-to-all of one half-batch runs while the other computes (two-batch overlap)
        busy = compute + act_s + ub * per_pass
        t = np.fmax(busy, a2a) + TBO_EXPOSED * np.fmin(busy, a2a) + exchanges * lat + transfer
        transfer = transfer + a2a
        # what the prompts cost a server whose attention groups all take prompts at once: the
        # non-expert and attention work spread over every group (TTFT above keeps one prompt's own)
        compute, server_act = spread_over(tp_e)
        token_s = compute + server_act / (bw * eta_bw)
        own, own_act = group_work(tp)
        group_s = own + own_act / (bw * eta_bw)
    if a.score is not None:
        # eager attention: each chunk of u prompt tokens materialises its u × (cache so far)
        # scores; over the prompt that is s·(d + (s + u)/2) per sequence, head and layer
        u = np.minimum(s, ws_tok)
        score_bytes = B * a.score * EAGER_SCORE_PASSES * s * (g.heads / tp) \
            * (g.full_layers * (d + (s + u) / 2.0) + g.sliding_layers * np.minimum(W, d + (s + u) / 2.0))
        t = t + score_bytes / (bw * eta_bw)
        token_s = token_s + score_bytes / (bw * eta_bw)
        bytes_gpu = bytes_gpu + score_bytes
    # stages work on different micro-batches at once (a layer split, or pipeline stages of a wide layout):
    # the tokens' work waits for the largest micro-batch on the other stages, the fixed costs (each
    # micro-batch's launches and messages, the same for every one) for one micro-batch's worth
    with np.errstate(divide="ignore", invalid="ignore"):
        largest = np.where(T > 0, np.minimum(tok_per_ub / np.maximum(T, 1e-30), 1.0), 1.0)
        copies = np.asarray(x.prompt_pipeline_copies, ft)
        token_share = pipeline_share(pp, ub, B, copies, largest)
        fixed_share = token_share
        piped = token_share
        if np.any(pp > 1):   # without stages both shares are 1
            fixed_share = pipeline_share(pp, ub, B, copies)
            fixed_part = np.minimum(ub * per_pass + exchanges * lat, t)
            piped = np.where(token_share == fixed_share, token_share,
                             ((t - fixed_part) * token_share + fixed_part * fixed_share) / np.maximum(t, 1e-30))
    t = t * piped
    w_read_s = w_gpu / bw + w_gpu * a.w_tier if a.tiered else w_gpu / bw
    ideal_compute = lin * (1.0 / (tp * peak)) + att * (1.0 / (tp * apeak))
    if a.wide:
        ideal_compute = (lin - lin_exp) * (1.0 / (tp_d * peak)) + lin_exp * (1.0 / (tp_e * peak)) \
            + att * (1.0 / (tp_d * apeak))
    t_ceil = np.maximum(ideal_compute * token_share, w_read_s * fixed_share)
    has_prompt = T > 0
    with np.errstate(divide="ignore", invalid="ignore"):
        tok_s = _choose(has_prompt, lambda: T / t, lambda: np.nan)
        ceiling = _choose(has_prompt, lambda: T / t_ceil, lambda: np.nan)
        share = _choose(has_prompt, lambda: ideal_compute * token_share
                        / np.maximum(t_ceil, 1e-30),
                        lambda: np.nan)
    low = tok_s * a.prefill_band[0]
    high = np.fmin(tok_s * a.prefill_band[1], ceiling)
    return {
        "prefill_s": _choose(has_prompt, lambda: t, lambda: 0.0), "prefill_tok_s": tok_s, "prefill_low_tok_s": low,
        "prefill_high_tok_s": high, "prefill_ceiling_tok_s": ceiling, "prefill_linear_flops": lin_gpu,
        "prefill_expert_flops": lin_exp / tp_e,
        "prefill_attention_flops": att_gpu, "prefill_bytes": bytes_gpu, "micro_batches": ub,
        "prefill_exchanges": exchanges, "prefill_transfer_s": transfer, "prefill_compute_share": share,
        "prefill_compute_s": compute, "prefill_activation_bytes": act_gpu, "prefill_pass_extra_s": a.eager + 0 * tp,
        "prefill_token_s": token_s, "prefill_group_s": group_s,
        "attention_groups": (a.dp if a.wide else 1.0) + 0 * tp, "prefill_pipeline_share": piped + 0 * tp,
    }


def evaluate(g: Geometry, x: Inputs, memory_only: bool = False, dtype=np.float64) -> Result:
    """The model's arithmetic on broadcastable arrays; see the module docstring.

    ``memory_only``: stop after the memory plan (a recommender checks capacity at the longest
    context separately from speed at the typical one). ``dtype``: float64 for single predictions;
    sweeps over hundreds of thousands of configurations use float32 (7 significant digits), which
    halves the memory traffic.
    """
    a = _Arrays(g, x, dtype)
    plan = memory_plan(g, x, a)
    if memory_only:
        return plan
    dec = decode_step(g, a)
    pre = prefill(g, x, a)
    first_step = dec.pop("_first_step_s")
    has_prompt = a.B * a.s > 0
    # The first token comes out of the prefill pass; with no prompt it takes one decode step.
    # Its band follows the pass that produced it.
    # The request's own setup comes first, once (it is in no prompt tok/s figure).
    ttft = _choose(has_prompt, lambda: pre["prefill_s"], lambda: first_step) + a.per_request
    with np.errstate(divide="ignore", invalid="ignore"):
        ttft_low = _choose(has_prompt, lambda: ttft * pre["prefill_tok_s"] / pre["prefill_high_tok_s"],
                           lambda: ttft * dec["decode_tok_s"] / dec["decode_high_tok_s"])
        ttft_high = _choose(has_prompt, lambda: ttft / a.prefill_band[0], lambda: ttft / a.decode_band[0])
    return replace(plan, **dec, **pre, ttft_s=ttft, ttft_low_s=ttft_low, ttft_high_s=ttft_high,
                   request_s=a.per_request + 0.0 * ttft)


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
