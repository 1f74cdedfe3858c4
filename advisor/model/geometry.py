"""What a model's architecture implies: parameter groups, bytes per weight group, KV per token.

Everything here is plain arithmetic on the config fields (docs/ARCHITECTURE.md, "The physics"); the performance model
(`advisor.model.roofline`) turns it into times.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from advisor.data.specs import Model, Quant


#: What a layer's fixed per-pass cost (the profile's µs per layer: its kernels' launch and minimum
#: run time in a captured graph) is in plain layers' worth, beyond one. An MoE layer runs the router,
#: top-k, token sorting, the grouped products and the combine besides a dense layer's kernels, and at a
#: decode step's batch each expert a token visits is a few small GEMMs that leave most of the GPU
#: idle: `DECODE_EXPERT_WEIGHT` per expert visited (routed top-k plus shared: 1.6 for Qwen3's 8, 0.8
#: for gpt-oss's 4, 0.4 for Llama 4's 1 + 1). An MLA or linear-attention layer runs its latent down-
#: and up-projections, norms, split RoPE and absorbed products (or the state update):
#: `DECODE_COMPLEX_LAYER_WEIGHT`. Both chosen on held-out error, each point a full recalibration:
#: first a flat MoE weight on a grid (0-2 × 0-3; 1 and 2 took the servers' ITL held out by source
#: 38 → 28 %, steady throughput 27 → 23 %, the calibration's decode 12.5 → 11.1 %), then per expert
#: visited (0.125-0.3 × 1.5-3; 0.2 and 2 took ITL 29 → 25 %, steady throughput 23 → 18 %, end to end
#: 27 → 22 %, the calibration's decode 11.8 → 12.0 %): the flat weight had fitted AMD's top-8 models
#: and Blackwell's top-4 gpt-oss in opposite directions.
DECODE_EXPERT_WEIGHT = 0.2
DECODE_COMPLEX_LAYER_WEIGHT = 2.0

@dataclass(frozen=True)
class Geometry:
    """Parameter counts (not billions: plain counts) and layer kinds of one model."""

    embedding_params: float      # token embedding V·h (for tied models also the head)
    head_params: float           # separate output head (0 when tied)
    routed_expert_params: float  # all routed experts of all MoE layers
    expert_params_each: float    # one routed expert in one layer
    non_expert_params: float     # attention, dense FFN, shared experts, norms (the body minus routed experts)
    attention_params: float      # of which: the attention projections (Q, K, V, O; MLA's down/up projections)
    moe_layers: int
    experts: int
    experts_per_token: int
    layers: int
    full_layers: int             # attention layers over the whole context
    sliding_layers: int          # attention layers over at most `window` tokens
    linear_layers: int           # linear-attention / SSM layers (fixed state per sequence)
    window: int
    heads: int
    kv_heads: int
    qk_head_dim: int
    v_head_dim: int
    kv_elems_per_layer: int      # KV elements one token adds to one attention layer (no TP split)
    kv_splits: bool              # False for MLA: the latent KV is replicated under tensor parallel
    linear_state_bytes: float    # per sequence, per linear layer
    hidden: int
    intermediate: int
    moe_intermediate: int
    vocab: int
    native_context: int
    #: DeepSeek Sparse Attention: tokens core attention reads per query (inf = dense), and the
    #: indexer that picks them: FLOPs per query per cached token per layer, bytes cached per token per layer
    sparse_topk: float = math.inf
    indexer_flops_per_pair: float = 0.0
    indexer_key_bytes: float = 0.0
    #: MLA: the latent's rank (kv_lora_rank). A decode step attends in the latent space (the up-
    #: projections absorbed into the query and output, as FlashMLA and every MLA decode kernel do):
    #: per head and cached token, scores over the latent and its RoPE part, values over the latent
    latent_rank: int = 0
    shared_experts: int = 0      # always-active experts per MoE layer (DeepSeek's one, Llama 4's one)

    @property
    def decode_attention_coeff(self) -> float:
        """Attention FLOPs of one decode query per layer per cached token (all heads)."""
        if self.latent_rank:
            return 2.0 * self.heads * (self.kv_elems_per_layer + self.latent_rank)
        return 2.0 * self.heads * (self.qk_head_dim + self.v_head_dim)

    @property
    def sparse(self) -> bool:
        """Whether core attention reads only the top-k tokens an indexer picks (DeepSeek Sparse Attention)."""
        return math.isfinite(self.sparse_topk)

    @property
    def output_params(self) -> float:
        """The matrix read to produce logits: the head, or the tied embedding."""
        return self.head_params or self.embedding_params

    def expert_fraction(self, tokens):
        """Fraction of the routed experts ``tokens`` tokens (≥ 0; a number or an array) touch:
        each picks k of E, so the expected distinct experts per layer are E·(1 − (1 − k/E)^n)."""
        if not self.experts:
            return 0.0
        # 1 − (1 − k/E)^n as −expm1(n · log1p(−k/E)): the same number, ~15× faster than a power over
        # a sweep's arrays (and exact where k/E is tiny); a numpy scalar keeps float32 arrays float32
        if self.experts_per_token >= self.experts:
            return np.where(np.asarray(tokens) > 0, 1.0, 0.0) if np.ndim(tokens) else float(tokens > 0)
        c = math.log1p(-self.experts_per_token / self.experts)
        if isinstance(tokens, np.ndarray) and tokens.dtype == np.float32:
            return -np.expm1(tokens * np.float32(c))
        return -np.expm1(tokens * c)

    @property
    def routed_active_params(self) -> float:
        """The routed experts' parameters one token multiplies through: its k experts in every MoE layer."""
        return self.moe_layers * self.experts_per_token * self.expert_params_each

    @property
    def flops_params_per_token(self) -> float:
        """Parameters one token multiplies through (2 FLOPs each): body with its k experts, no head."""
        return self.non_expert_params + self.routed_active_params

    def kv_bytes_per_token(self, kv_bits: float) -> float:
        """KV bytes one token adds at long context (all attention layers, no window cap, one GPU),
        with a sparse-attention indexer's keys at their own precision."""
        full, sliding = self.kv_elems_per_token(1)
        return (full + sliding) * kv_bits / 8.0 + self.full_layers * self.indexer_key_bytes

    @property
    def eager_layers(self) -> tuple[int, int]:
        """(MoE layers with plain attention, MLA or linear-attention layers): the layers whose prompt
        pass launches many small kernels outside a captured graph (`Runtime.prefill_moe_layer_us`,
        `prefill_complex_layer_us`). A dense layer with plain attention launches a handful of fused
        kernels and counts in neither."""
        complex_layers = self.linear_layers + (0 if self.kv_splits else self.full_layers + self.sliding_layers)
        complex_moe = min(complex_layers, self.moe_layers) if self.experts else 0
        return max(self.moe_layers - complex_moe, 0), complex_layers

    @property
    def fixed_layers(self) -> float:
        """`fixed_layers_at` the default weight per visited expert."""
        return self.fixed_layers_at(DECODE_EXPERT_WEIGHT)

    def fixed_layers_at(self, expert_weight):
        """The layers' fixed per-pass cost in plain layers' worth: an MLA or linear-attention layer
        runs more small kernels than a dense layer with plain attention (`DECODE_COMPLEX_LAYER_WEIGHT`
        extra), and an MoE layer more the more experts each token visits, routed and shared
        (``expert_weight`` extra per expert, `Runtime.decode_expert_weight`: where each expert is a few
        small GEMMs of its own at a decode step's batch, the GPU's units idle through each; a runtime
        whose one kernel takes every expert at once, llama.cpp's, pays none). A number or an array."""
        return self.layers + DECODE_COMPLEX_LAYER_WEIGHT * self.eager_layers[1] + expert_weight * self.expert_visits

    @property
    def expert_visits(self) -> int:
        """Experts one token visits in a forward pass, routed top-k plus shared, over the MoE layers."""
        return (self.experts_per_token + self.shared_experts) * self.moe_layers

    def fixed_pass_us(self, layer_us, expert_us):
        """The fixed cost of one forward pass's layers, µs: ``layer_us`` per plain layer's worth (an MLA or
        linear-attention layer counting extra) and ``expert_us`` per expert visit (`expert_visits`).
        Numbers or arrays."""
        return self.fixed_layers_at(0.0) * layer_us + self.expert_visits * expert_us

    @property
    def dense_products(self) -> int:
        """Matrix products per forward pass outside the routed experts, fused as vLLM, SGLang and
        TensorRT-LLM fuse them: the attention's input (QKV) and output projections in every layer,
        and the MLP's up (gate and up) and down products in a dense layer or an MoE layer's shared
        experts."""
        mlp_layers = self.layers - self.moe_layers + (self.moe_layers if self.shared_experts else 0)
        return 2 * self.layers + 2 * mlp_layers

    @property
    def activation_bytes(self) -> tuple[float, float, float]:
        """Bytes the memory-bound element-wise kernels of a prompt pass move per token, over all
        layers, at 16-bit activations: (on every GPU of a tensor-parallel group, split over the group,
        split over the GPUs holding the routed experts). Per layer two fused add-RMSNorms each read
        the input and the residual and write both (4 × hidden), on every GPU, since each holds the
        whole hidden state between the all-reduces; RoPE reads and writes the queries and keys
        (attention layers); the gated activation reads gate and up and writes their product
        (3 × intermediate: a dense MLP's, the shared experts', each routed expert's a token visits).
        The products' own reads and writes are in the GEMMs'; the norms' few weights are not counted."""
        attention_layers = self.full_layers + self.sliding_layers
        dense_mlp = (self.layers - self.moe_layers) * self.intermediate \
            + self.moe_layers * self.shared_experts * self.moe_intermediate
        replicated = 2.0 * self.layers * 2 * 4 * self.hidden
        split = 2.0 * (attention_layers * 2 * (self.heads + self.kv_heads) * self.qk_head_dim + 3 * dense_mlp)
        experts = 2.0 * 3 * self.moe_layers * self.experts_per_token * self.moe_intermediate
        return replicated, split, experts

    def kv_elems_per_token(self, tp: int = 1) -> tuple[float, float]:
        """KV elements per token per GPU for (full layers, sliding layers) under tensor parallel ``tp``."""
        per_layer = self.kv_elems_per_layer
        if self.kv_splits and tp > 1:
            # GQA heads are split across GPUs; with fewer KV heads than GPUs they are replicated.
            per_layer = per_layer * math.ceil(self.kv_heads / tp) / self.kv_heads
        return self.full_layers * per_layer, self.sliding_layers * per_layer


@lru_cache(maxsize=1024)
def geometry(m: Model) -> Geometry:
    """The parameter groups and layer kinds of ``m`` (cached: a model's geometry never changes)."""
    embedding = float(m.vocab * m.hidden)
    head = 0.0 if m.tie_embeddings else float(m.vocab * m.hidden)
    ffn_mats = 3 if m.ffn == "gated" else 2
    if m.is_moe:
        moe_layers = m.moe_layers if m.moe_layers is not None else m.layers - (m.first_dense_layers or 0)
        each = float(ffn_mats * m.hidden * m.moe_intermediate)
        routed = moe_layers * m.experts * each
    else:
        moe_layers, each, routed = 0, 0.0, 0.0
    body = m.params_total_b * 1e9 - embedding - head
    # Published totals are rounded: the non-expert part (attention, dense FFNs, shared experts) is
    # what is left after the routed experts; a rounded total must not drive it to nothing, so it
    # is kept above a fifth of the (full-rank) attention projections.
    attention_params = m.layers * m.hidden * m.head_dim * 2 * (m.heads + m.kv_heads)
    non_expert = max(body - routed, 0.2 * attention_params)
    linear = m.linear_layers or 0
    attention = m.attention_layers if m.attention_layers is not None else m.layers - linear
    # Q and O are heads × head_dim wide, K and V kv_heads × head_dim. MLA: the latent
    # down-projection, its up-projection to every head's K and V, and Q and O (query compression
    # ignored). Never more than the body holds.
    v_dim = m.v_head_dim or m.head_dim
    projections = attention * m.hidden * (m.heads * (m.head_dim + v_dim) + m.kv_heads * (m.head_dim + v_dim))
    if m.attention == "mla":
        projections = attention * (m.hidden * (m.kv_lora_rank + (m.qk_rope_head_dim or 0))
                                   + m.kv_lora_rank * m.heads * (m.head_dim + v_dim)
                                   + m.hidden * m.heads * (m.head_dim + v_dim))
    sliding = min(m.sliding_layers or 0, attention)
    if m.attention == "mla":
        kv_elems = m.kv_lora_rank + (m.qk_rope_head_dim or 0)
        splits = False
    else:
        kv_elems = m.kv_heads * (m.head_dim + v_dim)
        splits = True
    return Geometry(
        embedding_params=embedding, head_params=head, routed_expert_params=routed, expert_params_each=each,
        non_expert_params=non_expert, attention_params=min(float(projections), non_expert), moe_layers=moe_layers, experts=m.experts or 0,
        experts_per_token=m.experts_per_token or 0, layers=m.layers, full_layers=attention - sliding,
        sliding_layers=sliding, linear_layers=linear, window=m.sliding_window or 0, heads=m.heads,
        kv_heads=m.kv_heads, qk_head_dim=m.head_dim, v_head_dim=v_dim, kv_elems_per_layer=kv_elems,
        kv_splits=splits, latent_rank=(m.kv_lora_rank or 0) if m.attention == "mla" else 0,
        linear_state_bytes=float(m.linear_state_bytes_per_layer or 0), hidden=m.hidden,
        intermediate=m.intermediate, moe_intermediate=m.moe_intermediate or 0, vocab=m.vocab, native_context=m.native_context,
        sparse_topk=float(m.sparse_topk) if m.sparse_topk else math.inf,
        # the indexer's q·k products for every head (its head weights and ReLU are negligible)
        indexer_flops_per_pair=2.0 * (m.indexer_heads or 0) * (m.indexer_head_dim or 0) if m.sparse_topk else 0.0,
        indexer_key_bytes=float(m.indexer_key_bytes or 0) if m.sparse_topk else 0.0,
        shared_experts=(m.shared_experts or 0) if m.is_moe else 0,
    )


@dataclass(frozen=True)
class WeightBits:
    """Bits per weight of each parameter group under one quantization."""

    non_expert: float
    expert: float
    embedding: float
    head: float
    #: 0, or the bits a runtime dequantizes every routed expert a GPU holds to at each forward pass
    #: before its products (`Quant.expert_dequant_bits`: vLLM's bitsandbytes MoE method)
    expert_dequant: float = 0.0


def weight_bits(q: Quant) -> WeightBits:
    body = q.bits_per_weight
    non_expert = q.non_expert_bits_per_weight or body
    return WeightBits(
        non_expert=non_expert,
        expert=body,
        embedding=q.embedding_bits_per_weight or non_expert,
        head=q.head_bits_per_weight or non_expert,
        expert_dequant=q.expert_dequant_bits or 0.0,
    )


def weight_bytes(g: Geometry, b: WeightBits) -> float:
    """Bytes of all weights in memory. A tied embedding is stored once, at the head's precision.
    The bits may be numpy arrays (the performance model passes a column per configuration)."""
    embedding_bits = b.head if g.head_params == 0 else b.embedding
    return (g.non_expert_params * b.non_expert + g.routed_expert_params * b.expert
            + g.embedding_params * embedding_bits + g.head_params * b.head) / 8.0


def bytes_read(g: Geometry, b: WeightBits, expert_fraction, with_output: bool = True):
    """Weight bytes one forward pass reads: the non-expert weights, the ``expert_fraction`` of the
    routed experts its tokens touch, and (for decode) the output head; embedding rows are not
    counted (a lookup reads a few rows, not the matrix). Works on numpy arrays."""
    out = g.output_params * b.head if with_output else 0.0
    return (g.non_expert_params * b.non_expert + out) / 8.0 + expert_pass_bytes(g, b, expert_fraction)


def expert_pass_bytes(g: Geometry, b: WeightBits, expert_fraction):
    """Bytes of the routed experts one forward pass moves: the ``expert_fraction`` its tokens touch,
    as stored; or, where the runtime dequantizes every expert first (``b.expert_dequant``), all of them
    read as stored and written at that width, and the touched ones read back at it."""
    dq = np.asarray(b.expert_dequant, float)
    if not np.any(dq > 0):
        return g.routed_expert_params * expert_fraction * b.expert / 8.0
    touched = np.where(dq > 0, dq, b.expert)
    return g.routed_expert_params * (expert_fraction * touched + np.where(dq > 0, b.expert + dq, 0.0)) / 8.0


def kv_bytes_per_token(m: Model, kv_bits: float) -> float:
    """KV bytes one token adds at long context (all attention layers, no window cap, one GPU)."""
    return geometry(m).kv_bytes_per_token(kv_bits)
