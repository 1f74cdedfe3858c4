"""Serving techniques as what-ifs: speculative decoding, attention without flash attention, another
attention layout (MHA / GQA / MQA) and partial offload to host memory.

Each technique is computed on top of the kernel (`advisor.model.roofline.evaluate`) and compared
with the plain configuration: an `Effect` holds the `Figures` before and after (TTFT, decode
tok/s per sequence, throughput, max batch, memory per GPU) plus the technique's own details. With
no technique asked for nothing here runs, and the kernel's new inputs (`query_tokens`,
`score_bytes`) sit at defaults that change nothing.

- **Speculative decoding** (Leviathan et al. 2023, arXiv:2211.17192; Chen et al. 2023,
  arXiv:2302.01318): a draft proposes k tokens, the target verifies them in one pass over k+1
  tokens per sequence and keeps on average E = (1 − α^(k+1)) / (1 − α) of them (α the per-token
  acceptance rate). A round costs k draft decode steps plus one target step with k+1 query tokens
  per sequence (``query_tokens = k+1``: B·(k+1) tokens of FLOPs, B sequences of KV), so
  tokens/s per sequence = E / (k·t_draft + t_verify). At batch 1 the verification costs about a
  plain step (memory-bound); as B·(k+1) passes the knee it costs up to k+1 steps and the
  speed-up turns into a slow-down: `crossover_batch` is the batch from which it stays below 1×
  (a MoE target may also lose below `pays_from_batch`, where k+1 tokens wake more experts).
  Memory: the draft's weights and its KV per sequence. The draft is a catalog model sharing the
  target's tokenizer, or an MTP/EAGLE-style head given by its parameters and depth (it shares the
  target's embedding and output head, so only its own layers add memory, but each draft step
  reads the output head).
- **Flash attention off** (eager attention): the score matrix is materialised in memory as fp32;
  prefill moves `EAGER_SCORE_PASSES · 4 B · heads · s·(d + (s+u)/2)` extra bytes per layer and
  sequence (u: the runtime's prompt chunk) and needs one layer's chunk of scores,
  `4 B · heads · u · (d + s)`, as workspace (``score_bytes = 4``).
- **Attention layout**: the same model with G KV heads (`attention_variant`): KV per token scales
  with G, the weights change by the K and V projections only.
- **Partial offload**: llama.cpp ``-ngl N`` keeps N of the L layers (and their KV) on the GPU; the
  CPU computes the others from host RAM during decode, and for prompt batches ggml copies their
  weights to the GPU over PCIe. vLLM/SGLang ``--cpu-offload-gb X`` keep X GB of weights in pinned
  host memory that the GPU reads over PCIe on every forward pass (zero-copy, UVA).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import numpy as np

from advisor.data.errors import AdvisorError
from advisor.data.specs import Hardware, Model
from advisor.model.compat import refusal
from advisor.model.config import Config
from advisor.model.devices import DEFAULT_PCIE, PCIE_GB_S_PER_LANE
from advisor.model.efficiency import Efficiency, efficiency_for
from advisor.model.geometry import geometry, weight_bits
from advisor.model.inputs import linear_flops_s
from advisor.model.predict import Prediction, _to_prediction, evaluate_config
from advisor.model.roofline import MAX_BATCH, Result

if TYPE_CHECKING:
    from advisor.data.catalog import Catalog

GB = 1e9

# ---- defaults, with their sources ----------------------------------------------------------------

#: Draft length k. Production systems settle on 3–5 drafted tokens; EAGLE-style heads are run with
#: chains of about 3–4 (vLLM's `num_speculative_tokens` examples use 3–5).
DEFAULT_DRAFT_K = {"draft": 4, "head": 3}
#: Per-token acceptance α. A small draft of the same family: Leviathan et al. (arXiv:2211.17192,
#: Table 3) measure α between about 0.5 and 0.9 for same-family pairs; 0.7 is the middle.
#: A trained head: EAGLE (arXiv:2401.15077) reports acceptance of about 0.8 for its chain drafts and
#: DeepSeek-V3 (arXiv:2412.19437, §5.4.3) 85–90 % for its MTP module's second token.
DEFAULT_ACCEPT = {"draft": 0.7, "head": 0.8}
#: llama.cpp refuses a draft whose vocabulary differs from the target's by more than this many
#: tokens (common/speculative.cpp SPEC_VOCAB_MAX_SIZE_DIFFERENCE), besides matching token texts.
VOCAB_MAX_DIFFERENCE = 128
#: Batches searched for the speed-up's crossover below 1×.
CROSSOVER_SEARCH = 4096
#: Eager attention keeps its scores in fp32 (llama.cpp's KQ product is F32).
SCORE_BYTES_FP32 = 4.0
# How each runtime turns flash attention off is `Runtime.eager_attention_flag` (empty: no unfused
# attention path on GPUs: vLLM V1's backends FLASH_ATTN, FLASHINFER, TRITON_ATTN and FLEX_ATTENTION are
# all fused; TensorRT-LLM and MLX fuse attention too); how it keeps weights off the GPU is
# `Runtime.partial_offload` (by layers: llama.cpp; by GB over PCIe: vLLM and SGLang).
#: Host RAM for llama.cpp's CPU layers: dual-channel DDR5-5600, 2 × 8 B × 5600 MT/s = 89.6 GB/s
#: peak (JEDEC), of which a CPU decode reaches an estimated 70 %.
DEFAULT_HOST_BW_GB_S = 89.6
HOST_BW_FRACTION = 0.7
#: Reads over PCIe reach an estimated 80 % of the link's payload rate.
PCIE_READ_FRACTION = 0.8


@dataclass(frozen=True)
class Techniques:
    """The what-ifs asked for; the defaults ask for none."""

    draft: Model | None = None           # a draft model from the catalog
    head_params_b: float = 0.0           # or an MTP/EAGLE-style head: its parameters (billions) …
    head_layers: int = 1                 # … and depth (decoder layers)
    draft_k: int | None = None           # drafted tokens per round (default by kind)
    accept: float | None = None          # per-token acceptance rate α (default by kind)
    flash_attention: bool = True         # False: eager attention
    attention: str = ""                  # "mha", "gqa:G", "mqa"; empty = as published
    gpu_layers: int | None = None        # llama.cpp -ngl N
    offload_gb: float | None = None      # vLLM / SGLang --cpu-offload-gb X
    host_bandwidth_gb_s: float = DEFAULT_HOST_BW_GB_S

    @property
    def speculative(self) -> bool:
        return self.draft is not None or self.head_params_b > 0

    @property
    def draft_kind(self) -> str:
        return "head" if self.draft is None and self.head_params_b > 0 else "draft"

    @property
    def k(self) -> int:
        return self.draft_k if self.draft_k is not None else DEFAULT_DRAFT_K[self.draft_kind]

    @property
    def alpha(self) -> float:
        return self.accept if self.accept is not None else DEFAULT_ACCEPT[self.draft_kind]

    @property
    def any(self) -> bool:
        return (self.speculative or not self.flash_attention or bool(self.attention)
                or self.gpu_layers is not None or self.offload_gb is not None)

    def check(self) -> None:
        if self.draft is not None and self.head_params_b > 0:
            raise AdvisorError("give either a draft model or a draft head, not both")
        if self.draft_k is not None and not (isinstance(self.draft_k, int) and 1 <= self.draft_k <= 64):
            raise AdvisorError(f"draft length k must be a whole number from 1 to 64, got {self.draft_k!r}")
        if self.accept is not None and not (0.0 <= self.accept < 1.0):
            raise AdvisorError(f"acceptance rate must be at least 0 and below 1, got {self.accept!r}")
        if self.head_params_b < 0 or (self.head_params_b > 0 and self.head_layers < 1):
            raise AdvisorError("a draft head needs a positive parameter count and at least one layer")
        if self.gpu_layers is not None and self.offload_gb is not None:
            raise AdvisorError("give either --gpu-layers (llama.cpp) or --offload-gb (vLLM, SGLang), not both")
        if self.gpu_layers is not None and (not isinstance(self.gpu_layers, int) or self.gpu_layers < 0):
            raise AdvisorError(f"GPU layers must be a whole number ≥ 0, got {self.gpu_layers!r}")
        if self.offload_gb is not None and not (self.offload_gb >= 0 and math.isfinite(self.offload_gb)):
            raise AdvisorError(f"offload must be a number of GB ≥ 0, got {self.offload_gb!r}")
        if not (self.host_bandwidth_gb_s > 0 and math.isfinite(self.host_bandwidth_gb_s)):
            raise AdvisorError(f"host bandwidth must be a positive number of GB/s, got {self.host_bandwidth_gb_s!r}")


@dataclass(frozen=True)
class Figures:
    """What a user compares: per GPU memory in GB, speeds in tokens/s, TTFT in ms."""

    ttft_ms: float
    decode_tok_s: float        # per sequence
    throughput_tok_s: float    # all sequences
    max_batch: int
    memory_gb: float           # per GPU: weights + KV of the batch + workspace + overhead
    fits: bool

    def to_dict(self) -> dict[str, Any]:
        return {k: (None if isinstance(v, float) and not math.isfinite(v) else v)
                for k, v in dataclasses.asdict(self).items()}


@dataclass(frozen=True)
class Effect:
    """One technique's before and after, with its own figures in ``details``."""

    technique: str             # speculative, eager-attention, attention, offload
    label: str                 # what was asked, in words
    before: Figures
    after: Figures
    details: dict[str, Any] = field(default_factory=dict)
    notes: tuple[str, ...] = ()
    #: speculative decoding: its speed-up at every batch 1…CROSSOVER_SEARCH (what the crossover was
    #: searched on; the app charts it without computing it again)
    curve: "SpeculativeCurve | None" = field(default=None, repr=False, compare=False)

    @property
    def speedup(self) -> float:
        return self.after.decode_tok_s / self.before.decode_tok_s if self.before.decode_tok_s else math.nan

    @property
    def ttft_ratio(self) -> float:
        return self.after.ttft_ms / self.before.ttft_ms if self.before.ttft_ms else math.nan

    def to_dict(self) -> dict[str, Any]:
        def clean(v):
            if isinstance(v, float) and not math.isfinite(v):
                return None
            if isinstance(v, (np.floating, np.integer)):
                return clean(v.item())
            if isinstance(v, (list, tuple)):
                return [clean(x) for x in v]
            if isinstance(v, dict):
                return {k: clean(x) for k, x in v.items()}
            return v
        return {"technique": self.technique, "label": self.label, "before": self.before.to_dict(),
                "after": self.after.to_dict(), "decode_speedup": clean(self.speedup),
                "ttft_ratio": clean(self.ttft_ratio), "details": clean(self.details), "notes": list(self.notes)}


def figures(p: Prediction) -> Figures:
    return Figures(ttft_ms=p.ttft_ms, decode_tok_s=p.decode_tok_s, throughput_tok_s=p.throughput_tok_s,
                   max_batch=p.max_batch, memory_gb=p.per_gpu_total_gb, fits=p.fits)


def _eff(cat: "Catalog | None", cfg: Config, profiles=None) -> Efficiency:
    return efficiency_for(cat.profiles if profiles is None and cat is not None else profiles, cfg.runtime, cfg.hardware)


def _first(a) -> float:
    return float(a) if np.ndim(a) == 0 else float(np.ravel(a)[0])


def _budget_factor(cfg: Config) -> float:
    """How much of a byte freed (or taken) before the KV budget is computed reaches it: all of it
    where the budget is a fraction of total memory, the fraction where it is one of what is free."""
    rt = cfg.runtime
    return rt.memory_fraction if rt.memory_fraction_of == "free" else 1.0


# ---- speculative decoding ------------------------------------------------------------------------

def expected_tokens(alpha, k):
    """Tokens a round yields per sequence: the accepted prefix of k drafts plus the target's own
    token, E = 1 + α + … + α^k = (1 − α^(k+1)) / (1 − α) (Leviathan et al. 2023, eq. 1)."""
    alpha = np.asarray(alpha, dtype=float)
    with np.errstate(divide="ignore", invalid="ignore"):
        e = np.where(alpha >= 1.0, k + 1.0, (1.0 - alpha ** (k + 1)) / (1.0 - alpha))
    return float(e) if e.ndim == 0 else e


def tokenizer_refusal(draft: Model, target: Model) -> str:
    """Why ``draft`` cannot draft for ``target`` (empty if it can): the same tokenizer family,
    vocabularies within llama.cpp's tolerance of 128 tokens (padding rows)."""
    if draft.family != target.family:
        return (f"{draft.name} ({draft.family} family) cannot draft for {target.name} ({target.family} family): "
                "a draft must share the target's tokenizer")
    if abs(draft.vocab - target.vocab) > VOCAB_MAX_DIFFERENCE:
        return (f"{draft.name} (vocabulary {draft.vocab:,}) cannot draft for {target.name} (vocabulary "
                f"{target.vocab:,}): the tokenizers differ (runtimes allow at most {VOCAB_MAX_DIFFERENCE} "
                "padding tokens of difference)")
    if draft.params_total_b >= target.params_total_b:
        return f"{draft.name} is not smaller than {target.name}: a draft must be cheaper than the target"
    return ""


def head_model(target: Model, params_b: float, layers: int) -> Model:
    """An MTP/EAGLE-style draft head as a model the kernel can price: ``layers`` dense decoder
    layers of the target's width holding ``params_b`` billion parameters, plus the target's
    embedding and output head (shared: `speculative` does not count them as new memory)."""
    g = geometry(target)
    shared = g.embedding_params + g.head_params
    return dataclasses.replace(
        target, key=f"{target.key}+head", name=f"{target.name} draft head", params_total_b=params_b + shared / GB,
        params_active_b=params_b + shared / GB, layers=layers, experts=None, experts_per_token=None,
        shared_experts=None, moe_intermediate=None, shared_expert_intermediate=None, first_dense_layers=None,
        moe_layers=None, linear_layers=None, attention_layers=None, linear_state_bytes_per_layer=None,
        sliding_layers=None, sliding_window=None)


def _draft_config(cfg: Config, tech: Techniques) -> tuple[Config, float]:
    """The draft as a configuration on the same hardware, runtime, format and KV dtype, and the
    bytes of its weights that the target already holds (a head shares embedding and output head)."""
    if tech.draft is not None:
        why = tokenizer_refusal(tech.draft, cfg.model)
        if why:
            raise AdvisorError(why)
        d = cfg.replace(model=tech.draft)
        why = refusal(d.hardware, d.model, d.quant, d.kv_dtype, d.runtime, d.gpus)
        if why:
            raise AdvisorError(f"the draft: {why}")
        return d, 0.0
    m = head_model(cfg.model, tech.head_params_b, tech.head_layers)
    g, b = geometry(m), weight_bits(cfg.quant)
    shared = (g.embedding_params * (b.head if g.head_params == 0 else b.embedding) + g.head_params * b.head) / 8.0
    return cfg.replace(model=m), shared


@dataclass(frozen=True)
class SpeculativeCurve:
    """Speculative decoding along the batch: every array has one element per batch size."""

    batch: np.ndarray
    plain_tok_s: np.ndarray        # per sequence, without speculation
    speculative_tok_s: np.ndarray  # per sequence, with it
    speedup: np.ndarray
    draft_step_ms: np.ndarray
    verify_step_ms: np.ndarray
    plain_step_ms: np.ndarray
    crossover_batch: int | None    # from this batch on the speed-up stays below 1 (None: it pays at the last batch)
    pays_from_batch: int | None = None  # where speculation first pays, when it does not at batch 1 (MoE
                                        # targets: k+1 tokens per sequence wake more experts than one)


def speculative_curve(cat: "Catalog | None", cfg: Config, tech: Techniques, batches=None,
                      profiles=None) -> SpeculativeCurve:
    """Plain and speculative decode speed over ``batches`` (default 1…CROSSOVER_SEARCH) in three
    vectorised kernel calls: the target's plain step, its verification step (k+1 query tokens per
    sequence) and the draft's step, all at the workload's context."""
    tech.check()
    if not tech.speculative:
        raise AdvisorError("no draft model or draft head given")
    cfg.check(check_context=False)
    eff = _eff(cat, cfg, profiles)
    dcfg, _ = _draft_config(cfg, tech)
    b = np.arange(1, CROSSOVER_SEARCH + 1, dtype=float) if batches is None else np.asarray(batches, dtype=float)
    k, alpha = tech.k, tech.alpha
    plain = evaluate_config(cfg, eff, batch=b)
    verify = evaluate_config(cfg, eff, batch=b, query_tokens=float(k + 1))
    draft = evaluate_config(dcfg, eff, batch=b)
    t_plain = 1.0 / np.broadcast_to(plain.decode_tok_s, b.shape)
    t_verify = 1.0 / np.broadcast_to(verify.decode_tok_s, b.shape)
    t_draft = 1.0 / np.broadcast_to(draft.decode_tok_s, b.shape)
    spec = expected_tokens(alpha, k) / (k * t_draft + t_verify)
    speedup = spec * t_plain
    below = speedup < 1.0
    pays = np.nonzero(~below)[0]
    if not below[-1]:
        crossover = None
    else:
        # the batch after the last one where it still pays (a MoE target can lose at batch 1, win
        # from a few sequences on, and lose again near the compute roof)
        crossover = int(b[pays[-1] + 1]) if pays.size else int(b[0])
    # where it pays from on, up to the crossover: after the last loss below it (a MoE target can
    # break even at batch 1 and still lose at 2-4, where k+1 tokens per sequence wake more experts)
    end = np.searchsorted(b, crossover) if crossover is not None else b.size
    losses = np.nonzero(below[:end])[0]
    pays_from = int(b[losses[-1] + 1]) if losses.size and losses[-1] + 1 < end else None
    return SpeculativeCurve(batch=b, plain_tok_s=1.0 / t_plain, speculative_tok_s=spec, speedup=speedup,
                            draft_step_ms=t_draft * 1e3, verify_step_ms=t_verify * 1e3, plain_step_ms=t_plain * 1e3,
                            crossover_batch=crossover, pays_from_batch=pays_from)


def speculative(cat: "Catalog | None", cfg: Config, tech: Techniques, profiles=None) -> Effect:
    """Speculative decoding at the configuration's batch, with the batch where it stops paying."""
    tech.check()
    cfg.check()
    eff = _eff(cat, cfg, profiles)
    base = evaluate_config(cfg, eff)
    before_p = _to_prediction(base, cfg, eff)
    dcfg, shared = _draft_config(cfg, tech)
    k, alpha, B = tech.k, tech.alpha, cfg.workload.batch
    verify = evaluate_config(cfg, eff, query_tokens=float(k + 1))
    draft = evaluate_config(dcfg, eff)
    t_plain = 1.0 / _first(base.decode_tok_s)
    t_verify = 1.0 / _first(verify.decode_tok_s)
    t_draft = 1.0 / _first(draft.decode_tok_s)
    E = expected_tokens(alpha, k)
    t_round = k * t_draft + t_verify
    spec_tok_s = E / t_round
    # memory: the draft's own weights (per GPU) come out of the KV budget; each sequence keeps
    # the draft's KV as well as the target's
    n = cfg.gpus
    draft_w_gpu = (_first(draft.weights_bytes) - shared) / n
    seq = _first(base.kv_seq_bytes) + _first(draft.kv_seq_bytes)
    budget = _first(base.kv_budget_gpu_bytes) - draft_w_gpu * _budget_factor(cfg)
    max_batch = int(min(math.floor(budget / seq), MAX_BATCH)) if budget > 0 else 0
    fits = budget >= 0 and budget >= B * seq
    memory = before_p.per_gpu_total_gb + (draft_w_gpu + B * _first(draft.kv_seq_bytes)) / GB
    # the draft prefills the prompt too before the first round
    ttft_ms = before_p.ttft_ms + (_first(draft.prefill_s) * 1e3 if cfg.workload.prompt_tokens else 0.0)
    after = Figures(ttft_ms=ttft_ms, decode_tok_s=spec_tok_s, throughput_tok_s=B * spec_tok_s, max_batch=max_batch,
                    memory_gb=memory, fits=bool(fits))
    curve = speculative_curve(cat, cfg, tech, profiles=profiles)
    what = tech.draft.name if tech.draft is not None else \
        f"a {tech.head_params_b:g}B {tech.head_layers}-layer draft head"
    notes = []
    if curve.pays_from_batch is not None:
        notes.append(f"speculation slows decoding below batch {curve.pays_from_batch} (verifying {k + 1} tokens per "
                     f"sequence reads more of the model than one token does) and pays from there")
    if curve.crossover_batch is not None and curve.pays_from_batch is None and curve.crossover_batch == 1:
        notes.append("speculation does not pay at any batch here")
    elif curve.crossover_batch is not None:
        notes.append(f"speculation slows decoding from batch {curve.crossover_batch} on "
                     f"(the verification pass of B·{k + 1} tokens nears the compute roof)")
    else:
        notes.append(f"speculation still pays at batch {CROSSOVER_SEARCH}")
    if tech.accept is None:
        notes.append(f"acceptance α = {alpha:g} is a typical figure for a {tech.draft_kind}; it depends on the "
                     "task and the pair (measure it: runtimes log their acceptance rate)")
    details = {"draft": what, "draft_kind": tech.draft_kind, "k": k, "accept": alpha, "expected_tokens": E,
               "plain_step_ms": t_plain * 1e3, "draft_step_ms": t_draft * 1e3, "verify_step_ms": t_verify * 1e3,
               "round_ms": t_round * 1e3, "draft_weights_gb": draft_w_gpu * n / GB,
               "draft_kv_gb": B * _first(draft.kv_seq_bytes) * n / GB, "crossover_batch": curve.crossover_batch,
               "pays_from_batch": curve.pays_from_batch}
    return Effect("speculative", f"speculative decoding with {what}, k={k}, α={alpha:g}", figures(before_p), after,
                  details, tuple(notes), curve=curve)


# ---- flash attention off -------------------------------------------------------------------------

def eager_attention(cat: "Catalog | None", cfg: Config, profiles=None) -> Effect:
    """The configuration with unfused attention: scores materialised in fp32."""
    cfg.check()
    eff = _eff(cat, cfg, profiles)
    before_r = evaluate_config(cfg, eff)
    after_r = evaluate_config(cfg, eff, score_bytes=SCORE_BYTES_FP32)
    before, after = _to_prediction(before_r, cfg, eff), _to_prediction(after_r, cfg, eff)
    extra_ws = (_first(after_r.workspace_gpu_bytes) - _first(before_r.workspace_gpu_bytes))
    extra_bytes = _first(after_r.prefill_bytes) - _first(before_r.prefill_bytes)
    switch = cfg.runtime.eager_attention_flag
    notes = [f"how: {switch}" if switch else
             f"{cfg.runtime.name} has no unfused attention path on this hardware; the figures show what one would cost"]
    details = {"score_workspace_gpu_gb": extra_ws / GB, "prefill_extra_gb_per_gpu": extra_bytes / GB,
               "switch": switch or ""}
    return Effect("eager-attention", "flash attention off (eager attention)", figures(before), figures(after),
                  details, tuple(notes))


# ---- attention layout ----------------------------------------------------------------------------

def kv_groups(model: Model, spec: str) -> int:
    """KV heads for "mha", "mqa" or "gqa:G" (G must divide the query heads)."""
    text = str(spec).strip().lower().replace(" ", "")
    if text == "mha":
        return model.heads
    if text == "mqa":
        return 1
    if text.startswith("gqa"):
        rest = text[3:].lstrip(":=")
        try:
            G = int(rest)
        except ValueError:
            raise AdvisorError(f"attention must be mha, mqa or gqa:G (G KV heads), got {spec!r}") from None
        if G < 1 or G > model.heads or model.heads % G:
            raise AdvisorError(f"{model.name} has {model.heads} query heads: G must divide it, got {G}")
        return G
    raise AdvisorError(f"attention must be mha, mqa or gqa:G (G KV heads), got {spec!r}")


def attention_variant(model: Model, spec: str) -> Model:
    """``model`` with another number of KV heads; the parameters change by the K and V
    projections: attention layers × hidden × (head_dim + v_head_dim) × ΔG."""
    if model.attention == "mla":
        raise AdvisorError(f"{model.name} uses MLA (a latent KV); an MHA/GQA/MQA what-if does not apply")
    G = kv_groups(model, spec)
    attention_layers = model.attention_layers if model.attention_layers is not None \
        else model.layers - (model.linear_layers or 0)
    v_dim = model.v_head_dim or model.head_dim
    delta = attention_layers * model.hidden * (model.head_dim + v_dim) * (G - model.kv_heads) / GB
    kind = "mha" if G == model.heads else ("mqa" if G == 1 else "gqa")
    label = kind if kind != "gqa" else f"gqa{G}"
    return dataclasses.replace(model, key=f"{model.key}+{label}", name=f"{model.name} ({label.upper()})",
                               kv_heads=G, attention=kind, params_total_b=model.params_total_b + delta,
                               params_active_b=model.params_active_b + delta)


def attention(cat: "Catalog | None", cfg: Config, spec: str, profiles=None) -> Effect:
    cfg.check()
    eff = _eff(cat, cfg, profiles)
    variant = attention_variant(cfg.model, spec)
    vcfg = cfg.replace(model=variant)
    vcfg.check()
    before = _to_prediction(evaluate_config(cfg, eff), cfg, eff)
    after = _to_prediction(evaluate_config(vcfg, eff), vcfg, eff)
    details = {"kv_heads_before": cfg.model.kv_heads, "kv_heads_after": variant.kv_heads,
               "kv_bytes_per_token_before": before.kv_bytes_per_token, "kv_bytes_per_token_after": after.kv_bytes_per_token,
               "kv_ratio": after.kv_bytes_per_token / before.kv_bytes_per_token,
               "weights_gb_before": before.weights_gb, "weights_gb_after": after.weights_gb,
               "max_context_before": before.max_context, "max_context_after": after.max_context}
    notes = ("a what-if of the architecture: the published weights cannot be run this way without retraining "
             "(or uptraining, as GQA's authors did from MHA checkpoints)",)
    return Effect("attention", f"{variant.attention.upper()} with {variant.kv_heads} KV heads", figures(before),
                  figures(after), details, notes)


# ---- partial offload ---------------------------------------------------------------------------

def pcie_gb_s(hw: Hardware) -> float:
    """The host link per direction, GB/s (PCIe; NVLink-C2C superchips list it as interconnect)."""
    gen, lanes = hw.pcie_gen or DEFAULT_PCIE[0], hw.pcie_lanes or DEFAULT_PCIE[1]
    return PCIE_GB_S_PER_LANE.get(gen, PCIE_GB_S_PER_LANE[DEFAULT_PCIE[0]]) * lanes


@dataclass(frozen=True)
class OffloadCurve:
    """Speed and memory as the GPU holds fewer layers (llama.cpp) or more bytes stay on the host."""

    gpu_layers: np.ndarray
    host_gb: np.ndarray            # weights (and, llama.cpp, KV) in host memory
    decode_tok_s: np.ndarray
    ttft_ms: np.ndarray
    max_batch: np.ndarray
    memory_gb: np.ndarray          # per GPU
    fits: np.ndarray


def _offload_arrays(cfg: Config, eff: Efficiency, r: Result, gpu_layers, offload_bytes, host_bw_gb_s: float):
    """Decode step, TTFT and memory with part of the model in host memory (arrays over N or X).

    llama.cpp (``gpu_layers`` N of L): the step is the GPU's own step with the host layers' share
    replaced by their time on the CPU, t = t_gpu + f·(t_body_host − t_body_gpu) + [N<L]·(t_head_host
    − t_head_gpu), f = (L − N)/L, where the CPU reads its weights and KV at the host RAM bandwidth
    (never faster than the GPU would be); prompts copy the host weights over PCIe once per
    micro-batch. vLLM/SGLang (``offload_bytes`` X): every forward pass reads X over PCIe instead of
    from device memory: t = t_gpu + X·(1/PCIe − 1/BW)."""
    g = geometry(cfg.model)
    hw = cfg.hardware
    b = weight_bits(cfg.quant)
    eff_bw = hw.bandwidth_gb_s * 1e9 * float(eff.decode_bw_fraction)
    eff_c = linear_flops_s(hw, cfg.runtime, cfg.quant, eff)
    pcie = pcie_gb_s(hw) * 1e9 * PCIE_READ_FRACTION
    host = host_bw_gb_s * 1e9 * HOST_BW_FRACTION
    t0 = 1.0 / _first(r.decode_tok_s)
    ttft0 = _first(r.ttft_s)
    ub = _first(r.micro_batches) if cfg.workload.prompt_tokens else 0.0
    budget0, seq0 = _first(r.kv_budget_gpu_bytes), _first(r.kv_seq_bytes)
    total0 = (_first(r.weights_gpu_bytes) + _first(r.kv_gpu_bytes) + _first(r.workspace_gpu_bytes)
              + _first(r.overhead_gpu_bytes))
    B = cfg.workload.batch
    factor = _budget_factor(cfg)
    body_w = (g.non_expert_params * b.non_expert + g.routed_expert_params * b.expert) / 8.0
    head_w = g.output_params * b.head / 8.0
    if gpu_layers is not None:
        L = g.layers
        N = np.clip(np.asarray(gpu_layers, dtype=float), 0, L)
        f = (L - N) / L
        on_host_head = N < L
        head_read, head_flops = _first(r.decode_head_bytes), _first(r.decode_head_flops)
        body_read = _first(r.decode_weight_bytes) - head_read + _first(r.decode_kv_bytes)
        body_flops = _first(r.decode_flops) - head_flops
        t_body_gpu = max(body_read / eff_bw, body_flops / eff_c)
        t_head_gpu = max(head_read / eff_bw, head_flops / eff_c)
        t_body_host = max(body_read / host, t_body_gpu)
        t_head_host = max(head_read / host, t_head_gpu)
        t = t0 + f * (t_body_host - t_body_gpu) + np.where(on_host_head, t_head_host - t_head_gpu, 0.0)
        w_host = f * body_w + np.where(on_host_head, head_w, 0.0)
        kv_host = f * seq0
        seq_gpu = seq0 - kv_host
        prompt_extra = ub * w_host * max(1.0 / pcie - 1.0 / eff_bw, 0.0)
    else:
        X = np.clip(np.asarray(offload_bytes, dtype=float), 0.0, body_w)
        t = t0 + X * max(1.0 / pcie - 1.0 / eff_bw, 0.0)
        w_host, kv_host, seq_gpu = X, 0.0 * X, seq0 + 0.0 * X
        N = None
        prompt_extra = ub * X * max(1.0 / pcie - 1.0 / eff_bw, 0.0)
    budget = budget0 + w_host * factor
    with np.errstate(divide="ignore", invalid="ignore"):
        mb = np.where(budget > 0, np.floor(budget / np.maximum(seq_gpu, 1e-30)), 0.0)
    mb = np.minimum(mb, MAX_BATCH)
    fits = (budget >= 0) & (budget >= B * seq_gpu)
    memory = total0 - w_host - B * kv_host
    ttft = ttft0 + prompt_extra
    return N, (w_host + B * kv_host) / GB, 1.0 / t, ttft * 1e3, mb, memory / GB, fits


def _offload_check(cfg: Config, tech: Techniques) -> None:
    how = cfg.runtime.partial_offload
    which = "--gpu-layers" if tech.gpu_layers is not None else "--offload-gb"
    if cfg.gpus != 1:
        raise AdvisorError(f"{which}: partial offload is modelled for one GPU")
    if cfg.hardware.unified_memory or cfg.hardware.kind in ("apple", "soc", "cpu"):
        raise AdvisorError(f"{which}: {cfg.hardware.name} has one memory for CPU and GPU: there is nothing to "
                           "offload to")
    if tech.gpu_layers is not None and how != "layers":
        raise AdvisorError(f"--gpu-layers is llama.cpp's -ngl; {cfg.runtime.name} offloads by size (--offload-gb)"
                           if how == "gb" else f"--gpu-layers: {cfg.runtime.name} has no partial offload")
    if tech.offload_gb is not None and how != "gb":
        raise AdvisorError(f"--offload-gb: {cfg.runtime.name} offloads whole layers: use --gpu-layers (-ngl)"
                           if how == "layers" else f"--offload-gb: {cfg.runtime.name} has no partial offload")


def offload_curve(cat: "Catalog | None", cfg: Config, tech: Techniques | None = None, profiles=None) -> OffloadCurve:
    """Speed, TTFT and memory for every llama.cpp ``-ngl`` from 0 to L (or, for vLLM/SGLang,
    offloads from 0 to all the body's weights in 1 GB steps)."""
    by_layers = cfg.runtime.partial_offload == "layers"
    tech = tech or Techniques(gpu_layers=0 if by_layers else None, offload_gb=None if by_layers else 0.0)
    tech.check()
    _offload_check(cfg, tech)
    cfg.check(check_context=False)
    eff = _eff(cat, cfg, profiles)
    r = evaluate_config(cfg, eff)
    g = geometry(cfg.model)
    if tech.gpu_layers is not None:
        layers = np.arange(0, g.layers + 1, dtype=float)
        N, host, tok, ttft, mb, mem, fits = _offload_arrays(cfg, eff, r, layers, None, tech.host_bandwidth_gb_s)
    else:
        b = weight_bits(cfg.quant)
        body = (g.non_expert_params * b.non_expert + g.routed_expert_params * b.expert) / 8.0
        xs = np.arange(0.0, math.ceil(body / GB) + 1.0) * GB
        _, host, tok, ttft, mb, mem, fits = _offload_arrays(cfg, eff, r, None, xs, tech.host_bandwidth_gb_s)
        layers = np.full(xs.shape, np.nan)
    return OffloadCurve(gpu_layers=layers, host_gb=np.asarray(host), decode_tok_s=np.asarray(tok),
                        ttft_ms=np.asarray(ttft), max_batch=np.asarray(mb), memory_gb=np.asarray(mem),
                        fits=np.asarray(fits))


def offload(cat: "Catalog | None", cfg: Config, tech: Techniques, profiles=None) -> Effect:
    """The configuration with ``tech.gpu_layers`` on the GPU (llama.cpp) or ``tech.offload_gb``
    of weights in host memory (vLLM, SGLang)."""
    tech.check()
    _offload_check(cfg, tech)
    cfg.check()
    eff = _eff(cat, cfg, profiles)
    r = evaluate_config(cfg, eff)
    before = _to_prediction(r, cfg, eff)
    g = geometry(cfg.model)
    xs = None if tech.offload_gb is None else tech.offload_gb * GB
    _, host, tok, ttft, mb, mem, fits = _offload_arrays(cfg, eff, r, tech.gpu_layers, xs, tech.host_bandwidth_gb_s)
    B = cfg.workload.batch
    after = Figures(ttft_ms=float(ttft), decode_tok_s=float(tok), throughput_tok_s=B * float(tok),
                    max_batch=int(mb), memory_gb=float(mem), fits=bool(fits))
    if tech.gpu_layers is not None:
        label = f"{min(tech.gpu_layers, g.layers)} of {g.layers} layers on the GPU (-ngl {tech.gpu_layers})"
        how = (f"the CPU computes the other layers from host RAM ({tech.host_bandwidth_gb_s:g} GB/s peak, "
               f"{HOST_BW_FRACTION:.0%} attained, assumed); prompts copy their weights over PCIe")
    else:
        label = f"{tech.offload_gb:g} GB of weights in host memory (--cpu-offload-gb {tech.offload_gb:g})"
        how = "the GPU reads the offloaded weights over PCIe on every forward pass"
    details = {"host_gb": float(host), "pcie_gb_s": pcie_gb_s(cfg.hardware),
               "host_bandwidth_gb_s": tech.host_bandwidth_gb_s, "all_gpu_decode_tok_s": before.decode_tok_s,
               "all_gpu_ceiling_tok_s": before.decode_ceiling_tok_s}
    return Effect("offload", label, figures(before), after, details, (how,))


@dataclass(frozen=True)
class MoeOffloadCurve:
    """llama.cpp ``--n-cpu-moe N``: the routed experts of the first N MoE layers in host RAM."""

    cpu_moe_layers: np.ndarray     # N, 0 … moe_layers
    host_gb: np.ndarray            # expert weights in host memory
    decode_tok_s: np.ndarray
    ttft_ms: np.ndarray
    memory_gb: np.ndarray          # per GPU
    fits: np.ndarray


def moe_offload_curve(cat: "Catalog | None", cfg: Config, host_bw_gb_s: float = DEFAULT_HOST_BW_GB_S,
                      profiles=None) -> MoeOffloadCurve:
    """Speed, TTFT and memory for every llama.cpp ``--n-cpu-moe N`` (PR ggml-org/llama.cpp#15077: the
    MoE weights of the first N layers stay in the CPU). Attention, shared experts and the KV stay on
    the GPU; per decode step the CPU reads only the experts the batch routes to in those N layers,
    at the host RAM bandwidth: t = t_gpu + N·a·(1/host − 1/BW), a = the routed bytes one layer's
    batch touches (E·(1−(1−k/E)^B) experts). Prompts copy those layers' experts over PCIe once per
    micro-batch, as partial offload does. Memory: N layers' experts leave the GPU."""
    if cfg.runtime.partial_offload != "layers":
        raise AdvisorError(f"--n-cpu-moe is llama.cpp's; {cfg.runtime.name} has no expert offload")
    tech = Techniques(gpu_layers=0)
    _offload_check(cfg, tech)
    g = geometry(cfg.model)
    if not g.moe_layers or not g.routed_expert_params:
        raise AdvisorError(f"{cfg.model.name} has no routed experts to keep in the CPU")
    cfg.check(check_context=False)
    eff = _eff(cat, cfg, profiles)
    r = evaluate_config(cfg, eff)
    b = weight_bits(cfg.quant)
    hw = cfg.hardware
    eff_bw = hw.bandwidth_gb_s * 1e9 * float(eff.decode_bw_fraction)
    host = host_bw_gb_s * 1e9 * HOST_BW_FRACTION
    pcie = pcie_gb_s(hw) * 1e9 * PCIE_READ_FRACTION
    B = cfg.workload.batch
    layer_experts = g.routed_expert_params / g.moe_layers * b.expert / 8.0          # all experts of a layer
    touched = layer_experts * float(np.ravel(g.expert_fraction(B))[0])             # what a step reads
    n = np.arange(0, g.moe_layers + 1, dtype=float)
    t0 = 1.0 / _first(r.decode_tok_s)
    t = t0 + n * touched * max(1.0 / host - 1.0 / eff_bw, 0.0)
    w_host = n * layer_experts
    ub = _first(r.micro_batches) if cfg.workload.prompt_tokens else 0.0
    ttft = _first(r.ttft_s) + ub * w_host * max(1.0 / pcie - 1.0 / eff_bw, 0.0)
    budget = _first(r.kv_budget_gpu_bytes) + w_host * _budget_factor(cfg)
    seq = _first(r.kv_seq_bytes)
    fits = (budget >= 0) & (budget >= B * seq)
    total0 = (_first(r.weights_gpu_bytes) + _first(r.kv_gpu_bytes) + _first(r.workspace_gpu_bytes)
              + _first(r.overhead_gpu_bytes))
    return MoeOffloadCurve(cpu_moe_layers=n, host_gb=w_host / GB, decode_tok_s=1.0 / t, ttft_ms=ttft * 1e3,
                           memory_gb=(total0 - w_host) / GB, fits=fits)


# ---- all of them -------------------------------------------------------------------------------

def what_if(cat: "Catalog | None", cfg: Config, tech: Techniques, profiles=None) -> list[Effect]:
    """Each technique asked for in ``tech``, alone, against the plain configuration."""
    tech.check()
    out = []
    if tech.speculative:
        out.append(speculative(cat, cfg, tech, profiles))
    if not tech.flash_attention:
        out.append(eager_attention(cat, cfg, profiles))
    if tech.attention:
        out.append(attention(cat, cfg, tech.attention, profiles))
    if tech.gpu_layers is not None or tech.offload_gb is not None:
        out.append(offload(cat, cfg, tech, profiles))
    return out


def techniques_from(cat: "Catalog", *, draft=None, head_params_b=None, head_layers=None, draft_k=None, accept=None,
                    flash_attention=None, attention=None, gpu_layers=None, offload_gb=None,
                    host_bandwidth_gb_s=None) -> Techniques:
    """A `Techniques` from what a user typed (names, numbers as text); `AdvisorError` on bad input."""
    def number(name, v, kind):
        if v is None or (isinstance(v, str) and not v.strip()):
            return None
        try:
            x = kind(str(v).strip().replace("_", "")) if isinstance(v, str) else v
            if isinstance(x, bool) or not math.isfinite(x) or (kind is int and x != int(x)):
                raise ValueError
            return kind(x)
        except (TypeError, ValueError, OverflowError):
            # nan and inf too: never a silent "default"
            raise AdvisorError(f"{name} must be a {'whole ' if kind is int else ''}number, got {v!r}") from None

    def flag(v):
        if v is None or isinstance(v, bool):
            return True if v is None else v
        t = str(v).strip().lower()
        if t in ("", "on", "true", "yes", "1", "flash"):
            return True
        if t in ("off", "false", "no", "0", "eager"):
            return False
        raise AdvisorError(f"flash_attention must be on or off, got {v!r}")

    tech = Techniques(
        draft=cat.model_named(draft) if draft and str(draft).strip() else None,
        head_params_b=number("draft head parameters", head_params_b, float) or 0.0,
        head_layers=number("draft head layers", head_layers, int) or 1,
        draft_k=number("draft length k", draft_k, int), accept=number("acceptance rate", accept, float),
        flash_attention=flag(flash_attention), attention=(attention or "").strip(),
        gpu_layers=number("GPU layers", gpu_layers, int), offload_gb=number("offload GB", offload_gb, float),
        host_bandwidth_gb_s=(DEFAULT_HOST_BW_GB_S if host_bandwidth_gb_s in (None, "")
                             else number("host bandwidth", host_bandwidth_gb_s, float)))
    tech.check()
    return tech
