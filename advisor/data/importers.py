"""Size any model: a `Model` spec from a Hugging Face ``config.json``, a GGUF file or a safetensors checkpoint.

Pure parsing (data layer): a source goes in, an `ImportedModel` comes out — the spec, the notes
that say what was read, assumed or left out, and, where the files tell, the exact bytes of the
weights. Nothing here imports the physics; the spec is checked exactly as the catalog loader checks
its entries (`entries.build_entry` + `entries.check_entry`).

Sources (`import_model`):

- a ``config.json`` path, or a folder holding one (a ``model.safetensors.index.json`` or the
  ``*.safetensors`` headers beside it give the exact checkpoint bytes);
- ``hf:org/name``: config.json (and the safetensors index) through ``huggingface_hub``'s cache,
  honouring ``HF_HUB_OFFLINE``/``HF_HOME``; gated, missing or unreachable repos are one-line errors;
- a ``.gguf`` file: the header and tensor infos only (never the data): hyperparameters from the
  metadata, the exact bytes of every tensor by its type. The file's mix becomes an imported weight
  format (``ImportedModel.quant``): a ``gguf`` quant whose body, routed-expert, head and embedding
  bits per weight are the file's own, so the memory plan prices the real file.

Parameter counts are computed from the architecture (embedding, attention, MLP or experts, norms,
biases where the family has them, the head unless tied); for GGUF they are the tensors' element
counts.
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
import os
import re
import struct
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping

from advisor.data import specs
from advisor.data.entries import EntryError, build_entry, check_entry
from advisor.data.safe_load import load_json
from advisor.data.errors import AdvisorError

#: Largest config.json / safetensors index / safetensors JSON header read (bytes).
MAX_JSON_BYTES = 8 * 2**20
MAX_SAFETENSORS_HEADER = 100 * 2**20
#: GGUF caps: what a real header never exceeds; a hostile file is refused before any large read.
GGUF_MAX_TENSORS = 1_000_000
GGUF_MAX_KV = 100_000
GGUF_MAX_STRING = 16 * 2**20
GGUF_MAX_ARRAY = 10_000_000
GGUF_MAX_HEADER = 512 * 2**20
GGUF_MAX_DIMS = 8

HF_PREFIX = "hf:"
_HF_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*/[A-Za-z0-9][A-Za-z0-9._-]*$")


@dataclass(frozen=True)
class ImportedModel:
    """An imported model: the spec, what was noticed while reading it, and where it came from."""

    model: specs.Model
    #: the spec as YAML-ready fields (what ``--save`` writes; validated)
    entry: dict
    notes: tuple[str, ...]
    source: str
    #: "hf-config", "gguf"
    kind: str
    #: the checkpoint's own weight format: a catalog quant key ("bf16", "fp8", "mxfp4", "awq-int4" …),
    #: or the imported quant's key for GGUF
    weight_format: str = ""
    #: exact bytes of the weights as stored (safetensors index / headers, GGUF tensors), None if unknown
    weight_bytes: float | None = None
    #: GGUF: the file's own mix as a weight format (exact bits per group); None otherwise
    quant: specs.Quant | None = None
    quant_entry: dict | None = None
    #: GGUF: bytes per parameter group {"non_expert", "expert", "embedding", "head"}
    group_bytes: Mapping[str, float] = field(default_factory=dict)


# ---- small helpers ------------------------------------------------------------------------------

def slug(text: str) -> str:
    s = re.sub(r"[^a-z0-9._+-]+", "-", str(text).strip().lower()).strip("-._+")
    return s or "imported-model"


def _int(cfg: Mapping[str, Any], *names: str, required: str | None = None, minimum: int = 0) -> int | None:
    """The first of ``names`` present (not None) as a whole number ≥ ``minimum``; `AdvisorError` when
    it is not one, or when ``required`` (the field named in the error) and none is present."""
    for n in names:
        v = cfg.get(n)
        if v is None:
            continue
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v != int(v):
            raise AdvisorError(f"config field {n} must be a whole number, got {v!r}")
        v = int(v)
        if v < minimum:
            raise AdvisorError(f"config field {n} must be at least {minimum}, got {v}")
        return v
    if required:
        raise AdvisorError(f"config has no {required} (the model's {'/'.join(names)}); cannot size it")
    return None


def _read_json(path: Path, what: str) -> Any:
    try:
        size = path.stat().st_size
    except OSError as exc:
        raise AdvisorError(f"cannot read {path}: {exc.strerror or exc}") from None
    if not path.is_file():
        raise AdvisorError(f"{path}: not a regular file (a pipe, socket or device)")
    if size > MAX_JSON_BYTES:
        raise AdvisorError(f"{path} is {size / 2**20:.0f} MiB, too large for a {what} "
                           f"(at most {MAX_JSON_BYTES // 2**20} MiB)")
    try:
        with open(path, "rb") as fh:
            raw = fh.read(MAX_JSON_BYTES + 1)
        return load_json(raw.decode("utf-8"), str(path))
    except OSError as exc:
        raise AdvisorError(f"cannot read {path}: {exc.strerror or exc}") from None
    except (UnicodeDecodeError, ValueError) as exc:
        raise AdvisorError(f"{path} is not valid JSON ({str(exc).splitlines()[0][:120]})") from None


# ---- Hugging Face config.json -------------------------------------------------------------------

#: families whose MLP is two matrices (up, down) rather than gated (gate, up, down)
PLAIN_FFN_TYPES = {"gptj", "gpt_neox", "falcon", "gpt2", "gpt_bigcode", "phi", "opt", "bloom", "mpt", "starcoder2",
                   "codegen", "nemotron", "nemotron_h", "stablelm_epoch"}
#: families with LayerNorm (weight and bias) rather than RMSNorm (weight only)
LAYERNORM_TYPES = {"gptj", "gpt_neox", "falcon", "gpt2", "gpt_bigcode", "phi", "opt", "bloom", "starcoder2",
                   "codegen", "stablelm", "stablelm_epoch"}
#: families known to the importer (others with the standard fields import with a note)
KNOWN_TYPES = {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "qwen3_next", "gemma",
               "gemma2", "gemma3", "gemma3_text", "phi3", "phi4", "deepseek_v2", "deepseek_v3", "kimi_k2", "gpt_oss",
               "glm4", "glm4_moe", "glm", "falcon", "gptj", "gpt_neox", "llama4", "llama4_text", "olmo2", "granite",
               "starcoder2", "stablelm", "internlm2", "cohere", "exaone", "mistral3", "ministral"}
FAMILY_OF = {"llama": "llama", "llama4": "llama", "llama4_text": "llama", "mistral": "mistral", "mixtral": "mistral",
             "mistral3": "mistral", "qwen2": "qwen", "qwen2_moe": "qwen", "qwen3": "qwen", "qwen3_moe": "qwen",
             "qwen3_next": "qwen", "gemma": "gemma", "gemma2": "gemma", "gemma3": "gemma", "gemma3_text": "gemma",
             "phi3": "phi", "phi4": "phi", "phi": "phi", "deepseek_v2": "deepseek", "deepseek_v3": "deepseek",
             "kimi_k2": "kimi", "gpt_oss": "gpt-oss", "glm4": "glm", "glm4_moe": "glm", "glm": "glm",
             "falcon": "falcon", "gptj": "gpt-j", "gpt_neox": "gpt-neox"}

#: quantization_config → catalog weight format (catalog/quants.yaml keys)
def _format_from_quantization(q: Any) -> tuple[str, str]:
    """(quant key, note) for a ``quantization_config``; `AdvisorError` for one we cannot map."""
    if not isinstance(q, Mapping):
        raise AdvisorError("config field quantization_config must be an object")
    method = str(q.get("quant_method") or q.get("quant_algo") or "").lower()
    bits = q.get("bits") or q.get("w_bit")
    if method == "fp8" or method in ("fbgemm_fp8",):
        return "fp8", "FP8 checkpoint (quantization_config.quant_method fp8)"
    if method == "mxfp4":
        return "mxfp4", "routed experts in MXFP4, the rest 16-bit (quantization_config.quant_method mxfp4)"
    if method in ("awq", "gptq", "auto-round", "autoround"):
        if bits in (4, "4"):
            return "awq-int4", f"{method.upper()} 4-bit checkpoint"
        if bits in (8, "8") and method == "gptq":
            return "gptq-int8", "GPTQ 8-bit checkpoint"
        raise AdvisorError(f"quantization_config: {method} with {bits!r} bits has no weight format in the catalog")
    if method == "bitsandbytes":
        if q.get("load_in_4bit"):
            return "nf4", "bitsandbytes 4-bit (NF4)"
        if q.get("load_in_8bit"):
            return "int8-w8a8", "bitsandbytes 8-bit (counted as INT8)"
    if method in ("compressed-tensors", "compressed_tensors"):
        groups = q.get("config_groups") or {}
        if isinstance(groups, Mapping) and groups:
            g = next(iter(groups.values()))
            w = (g or {}).get("weights") or {}
            a = (g or {}).get("input_activations") or {}
            nb, typ = w.get("num_bits"), str(w.get("type") or "").lower()
            if nb == 8 and typ == "float":
                return "fp8", "compressed-tensors FP8 weights"
            if nb == 4 and typ == "float":
                return "nvfp4", "compressed-tensors FP4 (NVFP4) weights"
            if nb == 8 and typ == "int":
                return ("int8-w8a8" if a else "gptq-int8"), "compressed-tensors INT8 weights"
            if nb == 4 and typ == "int":
                return "awq-int4", "compressed-tensors INT4 weights (W4A16)"
        fmt = str(q.get("format") or "").lower()
        if "float-quantized" in fmt:
            return "fp8", "compressed-tensors float-quantized (FP8)"
        if "nvfp4" in fmt:
            return "nvfp4", "compressed-tensors NVFP4"
        if "pack-quantized" in fmt:
            return "awq-int4", "compressed-tensors pack-quantized (INT4)"
        raise AdvisorError("quantization_config: compressed-tensors scheme not recognised "
                           "(no config_groups with weights num_bits/type)")
    if method in ("modelopt",):
        algo = str(q.get("quant_algo") or "").upper()
        if "FP8" in algo:
            return "fp8", "ModelOpt FP8"
        if "NVFP4" in algo:
            return "nvfp4", "ModelOpt NVFP4"
    raise AdvisorError(f"quantization_config: unknown quant_method {method or '(none)'!r}; "
                       "known: fp8, mxfp4, awq, gptq, bitsandbytes, compressed-tensors, modelopt")


def _dtype_format(cfg: Mapping[str, Any]) -> str:
    dt = str(cfg.get("torch_dtype") or cfg.get("dtype") or "bfloat16").lower()
    return {"float16": "f16", "fp16": "f16", "float32": "f32", "fp32": "f32"}.get(dt, "bf16")


def _text_config(cfg: Mapping[str, Any]) -> dict:
    """Multimodal configs keep the language model under ``text_config`` (or ``llm_config``)."""
    for k in ("text_config", "llm_config", "language_config"):
        sub = cfg.get(k)
        if isinstance(sub, Mapping) and "hidden_size" not in cfg:
            merged = dict(sub)
            for key in ("quantization_config", "tie_word_embeddings", "torch_dtype"):
                if key in cfg and key not in merged:
                    merged[key] = cfg[key]
            merged.setdefault("architectures", cfg.get("architectures"))
            return merged
    return dict(cfg)


def from_hf_config(raw: Any, *, name: str | None = None, source: str = "config.json",
                   checkpoint_bytes: float | None = None) -> ImportedModel:
    """The `Model` a Hugging Face ``config.json`` (already parsed) describes."""
    if not isinstance(raw, Mapping):
        raise AdvisorError(f"{source}: a config.json must be a JSON object, got {type(raw).__name__}")
    cfg = _text_config(raw)
    notes: list[str] = []
    archs = cfg.get("architectures") or []
    arch = str(archs[0]) if isinstance(archs, list) and archs else ""
    mtype = str(cfg.get("model_type") or "").lower()
    if mtype not in KNOWN_TYPES:
        notes.append(f"architecture {arch or mtype or '(unnamed)'} is not one the importer knows; "
                     "sized from the standard fields (check the figures)")

    hidden = _int(cfg, "hidden_size", "n_embd", "d_model", "dim", required="hidden_size", minimum=1)
    layers = _int(cfg, "num_hidden_layers", "n_layer", "num_layers", "n_layers", required="num_hidden_layers",
                  minimum=1)
    heads = _int(cfg, "num_attention_heads", "n_head", "num_heads", "n_heads", required="num_attention_heads",
                 minimum=1)
    vocab = _int(cfg, "vocab_size", "padded_vocab_size", "n_vocab", required="vocab_size", minimum=1)
    if cfg.get("multi_query") and mtype == "falcon" and not cfg.get("new_decoder_architecture"):
        kv_heads = 1
    else:
        kv_heads = _int(cfg, "num_key_value_heads", "num_kv_heads", "n_head_kv", "multi_query_group_num",
                        minimum=1)
        if kv_heads is None:
            kv_heads = 1 if cfg.get("multi_query") else heads
    mla = bool(cfg.get("kv_lora_rank"))
    v_head_dim = None
    if mla:
        nope = _int(cfg, "qk_nope_head_dim", required="qk_nope_head_dim", minimum=0)
        rope = _int(cfg, "qk_rope_head_dim", required="qk_rope_head_dim", minimum=0)
        head_dim = nope + rope
        v_head_dim = _int(cfg, "v_head_dim", minimum=1) or head_dim
        kv_lora = _int(cfg, "kv_lora_rank", minimum=1)
        q_lora = _int(cfg, "q_lora_rank", minimum=1)
        kv_heads = heads
    else:
        head_dim = _int(cfg, "head_dim", "kv_channels", minimum=1)
        if head_dim is None:
            if hidden % heads:
                raise AdvisorError(f"{source}: no head_dim, and hidden_size {hidden} is not a multiple of "
                                   f"num_attention_heads {heads}")
            head_dim = hidden // heads
            notes.append(f"head_dim is not in the config: hidden/heads = {hidden}/{heads} = {head_dim}")
    if kv_heads > heads:
        raise AdvisorError(f"{source}: num_key_value_heads {kv_heads} is more than num_attention_heads {heads}")

    # context
    ctx = _int(cfg, "max_position_embeddings", "n_positions", "max_sequence_length", "seq_length", "n_ctx",
               "model_max_length", minimum=1)
    if ctx is None:
        ctx = 2048
        notes.append("no max_position_embeddings: native context assumed 2048")
    rs = cfg.get("rope_scaling") or {}
    if isinstance(rs, Mapping) and rs.get("original_max_position_embeddings") and rs.get("factor"):
        scaled = int(rs["original_max_position_embeddings"] * rs["factor"])
        if scaled > ctx:
            notes.append(f"rope_scaling ({rs.get('rope_type') or rs.get('type')}, factor {rs['factor']}) reaches "
                         f"{scaled:,} tokens; native context kept at max_position_embeddings {ctx:,}")

    # tie
    if "tie_word_embeddings" in cfg:
        tie = bool(cfg["tie_word_embeddings"])
    else:
        tie = mtype not in ("gptj", "gpt_neox", "mixtral", "llama", "mistral", "qwen2_moe", "qwen3_moe",
                            "deepseek_v2", "deepseek_v3", "gpt_oss")
        notes.append(f"tie_word_embeddings absent: {'tied' if tie else 'untied'} as {mtype or 'transformers'} "
                     "defaults")

    ffn = "plain" if mtype in PLAIN_FFN_TYPES else "gated"
    intermediate = _int(cfg, "intermediate_size", "n_inner", "ffn_hidden_size", "ffn_dim", minimum=1)
    if mtype == "llama4" or mtype == "llama4_text":
        intermediate = _int(cfg, "intermediate_size_mlp", minimum=1) or intermediate

    # MoE
    experts = _int(cfg, "num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts", minimum=0) or None
    k = _int(cfg, "num_experts_per_tok", "experts_per_token", "num_experts_per_token", "moe_top_k",
             minimum=0) or None
    moe_inter = shared = shared_inter = first_dense = moe_layers = None
    if experts and k:
        moe_inter = _int(cfg, "moe_intermediate_size", "expert_intermediate_size", minimum=1)
        if mtype in ("llama4", "llama4_text"):
            moe_inter = _int(cfg, "intermediate_size", minimum=1)
        if moe_inter is None:
            moe_inter = intermediate  # Mixtral, gpt-oss: intermediate_size is the per-expert size
        if moe_inter is None:
            raise AdvisorError(f"{source}: MoE config without moe_intermediate_size or intermediate_size")
        n_shared = _int(cfg, "n_shared_experts", "num_shared_experts", "shared_experts", minimum=0)
        s_inter = _int(cfg, "shared_expert_intermediate_size", minimum=0)
        if mtype in ("llama4", "llama4_text"):
            n_shared, s_inter = 1, moe_inter
        if n_shared:
            shared = n_shared
            if s_inter and s_inter != moe_inter * n_shared:
                shared_inter = s_inter
        elif s_inter:
            shared = 1
            if s_inter != moe_inter:
                shared_inter = s_inter
        first_dense = _int(cfg, "first_k_dense_replace", "first_k_dense", "moe_layer_start_index", minimum=0) or None
        step = _int(cfg, "interleave_moe_layer_step", "decoder_sparse_step", "moe_layer_freq", minimum=1)
        mlp_only = cfg.get("mlp_only_layers") or []
        if isinstance(mlp_only, list) and mlp_only:
            moe_layers = layers - len(mlp_only) - (first_dense or 0)
            notes.append(f"mlp_only_layers: {len(mlp_only)} dense layers")
        elif step and step > 1:
            moe_layers = (layers - (first_dense or 0)) // step
        if experts and k > experts:
            raise AdvisorError(f"{source}: num_experts_per_tok {k} is more than the {experts} experts")
        dense_layers = layers - (moe_layers if moe_layers is not None else layers - (first_dense or 0))
        if dense_layers == 0 or not intermediate:
            intermediate = moe_inter
    else:
        experts = k = None
        if intermediate is None:
            intermediate = 4 * hidden
            notes.append(f"no intermediate_size: 4 x hidden = {intermediate} (the family's default)")

    # layer kinds: sliding window, chunked attention, linear (hybrid) layers
    sliding_window = sliding_layers = linear_layers = linear_state = None
    window = _int(cfg, "sliding_window", minimum=0)
    types = cfg.get("layer_types")
    if isinstance(types, list) and types and len(types) != layers:
        notes.append(f"layer_types lists {len(types)} layers, num_hidden_layers says {layers}; layer_types used "
                     "for the kinds only")
    if isinstance(types, list) and types:
        kinds = [str(t).lower() for t in types]
        n_slide = sum("sliding" in t or "local" in t or "chunk" in t for t in kinds)
        n_linear = sum("linear" in t or "mamba" in t or "conv" in t for t in kinds)
        if n_slide and window:
            sliding_window, sliding_layers = window, n_slide
        if n_linear:
            linear_layers = n_linear
    elif mtype == "gemma2" and window:
        sliding_window, sliding_layers = window, layers // 2
        notes.append("Gemma 2 alternates local and global attention: every other layer slides")
    elif mtype in ("gemma3", "gemma3_text") and window:
        pattern = _int(cfg, "sliding_window_pattern", minimum=1) or 6
        sliding_window, sliding_layers = window, layers - layers // pattern
        notes.append(f"sliding_window_pattern {pattern}: {sliding_layers} of {layers} layers slide")
    elif mtype in ("llama4", "llama4_text") and cfg.get("attention_chunk_size"):
        nope = cfg.get("no_rope_layers")
        chunked = sum(1 for x in nope if x) if isinstance(nope, list) and nope else layers - layers // 4
        sliding_window, sliding_layers = int(cfg["attention_chunk_size"]), chunked
        notes.append(f"chunked attention ({cfg['attention_chunk_size']} tokens) on {chunked} layers, "
                     "counted as sliding")
    elif window and cfg.get("use_sliding_window", True) is not False and window < ctx:
        sliding_window, sliding_layers = window, layers
        notes.append(f"sliding_window {window} on every layer")
    if mtype == "qwen3_next" and not linear_layers:
        interval = _int(cfg, "full_attention_interval", minimum=1) or 4
        linear_layers = layers - layers // interval
    if linear_layers:
        nk = _int(cfg, "linear_num_key_heads", minimum=0) or 0
        nv = _int(cfg, "linear_num_value_heads", minimum=0) or 0
        dk = _int(cfg, "linear_key_head_dim", minimum=0) or 0
        dv = _int(cfg, "linear_value_head_dim", minimum=0) or 0
        kernel = _int(cfg, "linear_conv_kernel_dim", minimum=1) or 4
        if nv and dk and dv:
            recurrent = nv * dv * dk
            conv = (2 * nk * dk + nv * dv) * (kernel - 1)
            linear_state = (recurrent + conv) * 2
            notes.append(f"linear-attention state per layer: ({nv}x{dv}x{dk} + ({2 * nk * dk + nv * dv})x"
                         f"{kernel - 1}) x 2 bytes = {linear_state:,}")
        else:
            notes.append("linear layers without linear_* dimensions: their state is not counted")

    # parameters
    counts = _hf_params(cfg, mtype, hidden=hidden, layers=layers, heads=heads, kv_heads=kv_heads, head_dim=head_dim,
                        v_head_dim=v_head_dim or head_dim, vocab=vocab, intermediate=intermediate, ffn=ffn, tie=tie,
                        experts=experts or 0, k=k or 0, moe_inter=moe_inter or 0, shared=shared or 0,
                        shared_inter=shared_inter or (moe_inter or 0), first_dense=first_dense or 0,
                        moe_layers=moe_layers, mla=mla,
                        kv_lora=(kv_lora if mla else 0), q_lora=(q_lora if mla else 0) or 0,
                        rope=(rope if mla else 0), nope=(nope if mla else 0), linear_layers=linear_layers or 0)
    total, active = counts
    if cfg.get("num_nextn_predict_layers"):
        notes.append(f"{cfg['num_nextn_predict_layers']} multi-token-prediction layer(s) ship with the checkpoint "
                     "and are not counted")

    weight_format = _dtype_format(cfg)
    if cfg.get("quantization_config") is not None:
        weight_format, qnote = _format_from_quantization(cfg["quantization_config"])
        notes.append(qnote + f" -> weight format {weight_format}")

    attention = "mla" if mla else "mqa" if kv_heads == 1 else "mha" if kv_heads == heads else "gqa"
    display = name or _config_name(raw) or arch or "Imported model"
    entry: dict[str, Any] = {
        "key": slug(display), "name": str(display), "family": FAMILY_OF.get(mtype, mtype or "imported"),
        "params_total_b": round(total / 1e9, 6), "params_active_b": round(active / 1e9, 6),
        "layers": layers, "hidden": hidden, "intermediate": intermediate, "heads": heads, "kv_heads": kv_heads,
        "head_dim": head_dim, "vocab": vocab, "native_context": ctx, "tie_embeddings": tie,
        "attention": attention, "ffn": ffn,
    }
    optional = {"v_head_dim": v_head_dim if mla and v_head_dim != head_dim else None,
                "sliding_window": sliding_window, "sliding_layers": sliding_layers,
                "linear_layers": linear_layers, "linear_state_bytes_per_layer": linear_state,
                "experts": experts, "experts_per_token": k, "shared_experts": shared,
                "moe_intermediate": moe_inter, "shared_expert_intermediate": shared_inter,
                "first_dense_layers": first_dense, "moe_layers": moe_layers,
                "kv_lora_rank": kv_lora if mla else None, "qk_rope_head_dim": rope if mla else None,
                "q_lora_rank": q_lora if mla else None}
    if mla and v_head_dim == head_dim:
        optional["v_head_dim"] = v_head_dim
    entry.update({k_: v for k_, v in optional.items() if v is not None})
    entry["source"] = source
    if checkpoint_bytes:
        notes.append(f"checkpoint weights: {checkpoint_bytes / 1e9:,.3f} GB as stored")
    entry["notes"] = "; ".join(notes)
    model = validate_entry(entry)
    return ImportedModel(model=model, entry=entry, notes=tuple(notes), source=source, kind="hf-config",
                         weight_format=weight_format, weight_bytes=checkpoint_bytes)


def _hf_params(cfg: Mapping[str, Any], mtype: str, *, hidden: int, layers: int, heads: int, kv_heads: int,
               head_dim: int, v_head_dim: int, vocab: int, intermediate: int, ffn: str, tie: bool, experts: int,
               k: int, moe_inter: int, shared: int, shared_inter: int, first_dense: int, moe_layers: int | None,
               mla: bool, kv_lora: int, q_lora: int, rope: int, nope: int, linear_layers: int) -> tuple[int, int]:
    """(total, active) parameters: embedding, attention, MLP/experts, norms, biases, head."""
    h = hidden
    norm = 2 * h if mtype in LAYERNORM_TYPES else h
    embed = vocab * h
    head = 0 if tie else vocab * h
    # attention per (attention) layer
    if mla:
        q = (h * q_lora + q_lora + q_lora * heads * (nope + rope)) if q_lora else h * heads * (nope + rope)
        attn = q + h * (kv_lora + rope) + kv_lora + kv_lora * heads * (nope + v_head_dim) + heads * v_head_dim * h
    else:
        q_width = heads * head_dim * (2 if mtype == "qwen3_next" else 1)  # Qwen3-Next gates its output
        attn = h * q_width + 2 * h * kv_heads * head_dim + heads * head_dim * h
        if cfg.get("attention_bias") or mtype in ("qwen2", "qwen2_moe") or cfg.get("qkv_bias"):
            attn += heads * head_dim + 2 * kv_heads * head_dim
            if mtype in ("gpt_oss",) or cfg.get("attention_bias") and mtype not in ("qwen2", "glm4_moe", "glm4"):
                attn += h  # o_proj bias
        if mtype in ("gpt_oss",):
            attn += heads  # attention sinks
        if mtype in ("qwen3", "qwen3_moe", "qwen3_next", "gemma3", "gemma3_text", "olmo2") or cfg.get("use_qk_norm"):
            attn += 2 * head_dim if mtype != "olmo2" else heads * head_dim + kv_heads * head_dim
        if mtype == "gpt_neox" or mtype == "gptj":
            attn += (3 * h if mtype == "gpt_neox" else 0) + (h if mtype == "gpt_neox" else 0)
    mats = 3 if ffn == "gated" else 2
    dense_mlp = mats * h * intermediate
    if mtype in ("gpt_neox", "gptj"):
        dense_mlp += intermediate + h  # biases
    layer_norms = (4 if mtype in ("gemma2", "gemma3", "gemma3_text") else 2) * norm
    if mtype == "falcon" and not cfg.get("new_decoder_architecture") and cfg.get("parallel_attn", True):
        layer_norms = norm
    # linear-attention layers (Qwen3-Next Gated DeltaNet)
    lin = 0
    if linear_layers:
        nk = int(cfg.get("linear_num_key_heads") or 0)
        nv = int(cfg.get("linear_num_value_heads") or 0)
        dk = int(cfg.get("linear_key_head_dim") or 0)
        dv = int(cfg.get("linear_value_head_dim") or 0)
        kern = int(cfg.get("linear_conv_kernel_dim") or 4)
        conv_ch = 2 * nk * dk + nv * dv
        lin = (h * (2 * nk * dk + 2 * nv * dv) + h * 2 * nv + conv_ch * kern + 2 * nv + dv + nv * dv * h)
    attn_layers = layers - linear_layers
    body = attn_layers * attn + linear_layers * lin + layers * layer_norms
    if experts and k:
        n_moe = moe_layers if moe_layers is not None else layers - first_dense
        each = mats * h * moe_inter
        if mtype == "gpt_oss":
            each += 2 * moe_inter + h  # expert biases
        router = experts * h + (experts if mtype in ("gpt_oss", "deepseek_v3", "kimi_k2", "glm4_moe") else 0)
        shared_p = shared * mats * h * shared_inter if shared_inter != moe_inter else shared * each
        if mtype == "qwen2_moe" and shared:
            shared_p += h  # shared_expert_gate
        body += (layers - n_moe) * dense_mlp + n_moe * (router + shared_p)
        routed = n_moe * experts * each
        total = embed + head + h + body + routed
        active = total - n_moe * (experts - k) * each
        return total, active
    body += layers * dense_mlp
    total = embed + head + h * (2 if norm == 2 * h else 1) + body
    return total, total


def validate_entry(entry: Mapping[str, Any]) -> specs.Model:
    """The spec ``entry`` makes, checked as the catalog loader checks its entries."""
    try:
        model = build_entry(specs.Model, dict(entry), origin=str(entry.get("source", "")))
        check_entry(model)
    except EntryError as exc:
        raise AdvisorError(f"the imported model is not a valid catalog entry: {exc.field} {exc}") from None
    return model


# ---- safetensors --------------------------------------------------------------------------------

_ST_DTYPE_BYTES = {"F64": 8, "F32": 4, "F16": 2, "BF16": 2, "I64": 8, "I32": 4, "I16": 2, "I8": 1, "U8": 1,
                   "BOOL": 1, "F8_E4M3": 1, "F8_E5M2": 1, "F8_E8M0": 1, "U16": 2, "U32": 4, "U64": 8,
                   "F4": 0.5, "F6_E2M3": 0.75, "F6_E3M2": 0.75}


def safetensors_header(path: Path) -> dict:
    """The JSON header of one ``.safetensors`` file (8-byte length + JSON; the data is never read)."""
    try:
        size = path.stat().st_size
        with open(path, "rb") as fh:
            head = fh.read(8)
            if len(head) < 8:
                raise AdvisorError(f"{path} is not a safetensors file (shorter than its 8-byte header length)")
            (n,) = struct.unpack("<Q", head)
            if n > MAX_SAFETENSORS_HEADER or n + 8 > size:
                raise AdvisorError(f"{path} is not a valid safetensors file (header length {n:,} bytes, "
                                   f"file {size:,} bytes)")
            raw = fh.read(n)
    except OSError as exc:
        raise AdvisorError(f"cannot read {path}: {exc.strerror or exc}") from None
    try:
        doc = load_json(raw.decode("utf-8"), f"{path}'s safetensors header")
    except (UnicodeDecodeError, ValueError):
        raise AdvisorError(f"{path} is not a valid safetensors file (its header is not JSON)") from None
    if not isinstance(doc, dict):
        raise AdvisorError(f"{path} is not a valid safetensors file (its header is not an object)")
    return doc


def safetensors_bytes(folder: Path) -> tuple[float | None, str]:
    """Exact weight bytes of the checkpoint in ``folder``: the index's ``total_size``, else the sum of
    the tensors in the ``*.safetensors`` headers. (None, "") when there is no checkpoint."""
    index = folder / "model.safetensors.index.json"
    if index.is_file():
        doc = _read_json(index, "safetensors index")
        total = (doc.get("metadata") or {}).get("total_size") if isinstance(doc, dict) else None
        if isinstance(total, (int, float)) and total > 0:
            return float(total), f"{index.name} total_size"
    files = sorted(folder.glob("*.safetensors"))[:10_000]
    if not files:
        return None, ""
    total = 0.0
    for f in files:
        for name, info in safetensors_header(f).items():
            if name == "__metadata__" or not isinstance(info, dict):
                continue
            offs = info.get("data_offsets")
            if isinstance(offs, list) and len(offs) == 2:
                total += float(offs[1]) - float(offs[0])
    return total, f"headers of {len(files)} safetensors file(s)"


# ---- GGUF ---------------------------------------------------------------------------------------

#: numeric arrays up to this many items are kept (per-layer head counts and the like); longer ones
#: (token scores, merges) are only counted
GGUF_KEEP_ARRAY = 4096
_GGUF_FIXED = {0: "<B", 1: "<b", 2: "<H", 3: "<h", 4: "<I", 5: "<i", 6: "<f", 7: "<?", 10: "<Q", 11: "<q", 12: "<d"}


@dataclass(frozen=True)
class GgufTensor:
    name: str
    shape: tuple[int, ...]      # as stored: ne0 (the row length) first
    type_name: str              # GGML type, e.g. Q4_K
    n_elements: int
    n_bytes: int


def _read_gguf_header(path: Path) -> tuple[dict[str, Any], list[GgufTensor]]:
    """The metadata and tensor infos of a GGUF file in one bounded pass over its header, before and
    instead of a full reader: magic, version, counts, string and array lengths, tensor shapes and
    types are checked against caps, every tensor's data must lie inside the file, and nothing is
    built per array item (a file of ten million tiny strings is counted, not materialised: the
    gguf package's reader took minutes and gigabytes on such files). Metadata values: numbers,
    strings, numeric arrays up to `GGUF_KEEP_ARRAY` items as lists, other arrays as their length."""
    import gguf

    try:
        size = path.stat().st_size
        if not path.is_file():   # opening a pipe blocks until a writer comes
            raise AdvisorError(f"{path}: not a regular file (a pipe, socket or device)")
        fh = open(path, "rb")
    except OSError as exc:
        raise AdvisorError(f"cannot read {path}: {exc.strerror or exc}") from None
    name = path.name
    read = 0

    def take(n: int) -> bytes:
        nonlocal read
        read += n
        if read > GGUF_MAX_HEADER:
            raise AdvisorError(f"{name}: GGUF header larger than {GGUF_MAX_HEADER // 2**20} MiB; refused")
        b = fh.read(n)
        if len(b) != n:
            raise AdvisorError(f"{name}: truncated GGUF file (the header ends early)")
        return b

    def u32() -> int:
        return struct.unpack("<I", take(4))[0]

    def u64() -> int:
        return struct.unpack("<Q", take(8))[0]

    def string() -> bytes:
        n = u64()
        if n > GGUF_MAX_STRING:
            raise AdvisorError(f"{name}: a GGUF string of {n:,} bytes; refused as corrupt")
        return take(n)

    def skip(n: int) -> None:
        nonlocal read
        read += n
        if read > GGUF_MAX_HEADER:
            raise AdvisorError(f"{name}: GGUF header larger than {GGUF_MAX_HEADER // 2**20} MiB; refused")
        if fh.tell() + n > size:
            raise AdvisorError(f"{name}: truncated GGUF file (the header ends early)")
        fh.seek(n, 1)

    def strings(n: int) -> None:
        """Step over ``n`` length-prefixed strings (a tokenizer's vocabulary): a tight loop over the
        mapped file, each length checked, none copied."""
        nonlocal read
        import mmap

        pos = start = fh.tell()
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            unpack = struct.Struct("<Q").unpack_from
            for _ in range(n):
                if pos + 8 > size:
                    raise AdvisorError(f"{name}: truncated GGUF file (the header ends early)")
                length = unpack(mm, pos)[0]
                if length > GGUF_MAX_STRING:
                    raise AdvisorError(f"{name}: a GGUF string of {length:,} bytes; refused as corrupt")
                pos += 8 + length
        if pos > size:
            raise AdvisorError(f"{name}: truncated GGUF file (the header ends early)")
        read += pos - start
        if read > GGUF_MAX_HEADER:
            raise AdvisorError(f"{name}: GGUF header larger than {GGUF_MAX_HEADER // 2**20} MiB; refused")
        fh.seek(pos)

    def value(t: int, depth: int = 0) -> Any:
        if t in _GGUF_FIXED:
            fmt = _GGUF_FIXED[t]
            return struct.unpack(fmt, take(struct.calcsize(fmt)))[0]
        if t == 8:
            return string().decode("utf-8", "replace")
        if t == 9:
            if depth > 2:
                raise AdvisorError(f"{name}: GGUF arrays nested too deep; refused as corrupt")
            et, n = u32(), u64()
            if n > GGUF_MAX_ARRAY:
                raise AdvisorError(f"{name}: a GGUF array of {n:,} items; refused as corrupt")
            if et in _GGUF_FIXED:
                width = struct.calcsize(_GGUF_FIXED[et])
                if n <= GGUF_KEEP_ARRAY:
                    return list(struct.unpack(f"<{n}{_GGUF_FIXED[et][1]}", take(width * n)))
                skip(width * n)
                return n
            if et == 8:
                strings(n)
                return n
            for _ in range(n):
                value(et, depth + 1)   # nested arrays: walked and bounded, not kept
            return n
        raise AdvisorError(f"{name}: unknown GGUF value type {t}; corrupt or unsupported file")

    meta: dict[str, Any] = {}
    tensors: list[GgufTensor] = []
    try:
        with fh:
            if size < 24 or fh.read(4) != b"GGUF":
                raise AdvisorError(f"{name} is not a GGUF file (no 'GGUF' magic)")
            read = 4
            version = u32()
            if version not in (2, 3):
                raise AdvisorError(f"{name}: GGUF version {version} is not supported (2 or 3)")
            n_tensors, n_kv = u64(), u64()
            if n_tensors > GGUF_MAX_TENSORS or n_kv > GGUF_MAX_KV:
                raise AdvisorError(f"{name}: GGUF header claims {n_tensors:,} tensors and {n_kv:,} metadata "
                                   "entries; refused as corrupt")
            for _ in range(n_kv):
                n = u64()
                if n > 65536:
                    raise AdvisorError(f"{name}: a GGUF key of {n:,} bytes; refused as corrupt")
                key = take(n).decode("utf-8", "replace")
                meta[key] = value(u32())
            alignment = meta.get("general.alignment", 32)
            if not isinstance(alignment, int) or alignment <= 0 or alignment & (alignment - 1):
                raise AdvisorError(f"{name}: GGUF alignment {alignment} is not a power of two")
            ends = []
            for _ in range(n_tensors):
                tname = string().decode("utf-8", "replace")
                nd = u32()
                if nd == 0 or nd > GGUF_MAX_DIMS:
                    raise AdvisorError(f"{name}: a GGUF tensor with {nd} dimensions; refused as corrupt")
                dims = tuple(u64() for _ in range(nd))
                t = u32()
                offset = u64()
                try:
                    qtype = gguf.GGMLQuantizationType(t)
                    block, tsize = gguf.GGML_QUANT_SIZES[qtype]
                except (ValueError, KeyError):
                    raise AdvisorError(f"{name}: unknown GGML tensor type {t}; corrupt or newer than "
                                       "the gguf package") from None
                n = math.prod(dims)
                if n > 2**50 or n % block:
                    raise AdvisorError(f"{name}: a GGUF tensor of shape {list(dims)} does not fit its type; corrupt")
                nbytes = n // block * tsize
                ends.append(offset + nbytes)
                tensors.append(GgufTensor(tname, dims, qtype.name, n, nbytes))
            start = fh.tell()
            data = start + (-start % alignment)
            if ends and data + max(ends) > size:
                raise AdvisorError(f"{name}: truncated GGUF file (tensor data ends at {data + max(ends):,} "
                                   f"bytes, the file has {size:,})")
    except struct.error:
        raise AdvisorError(f"{name}: truncated GGUF file") from None
    return meta, tensors


def from_gguf(path: Path, *, name: str | None = None, source: str | None = None) -> ImportedModel:
    """The `Model` and the exact weight mix of one GGUF file (header and tensor infos only)."""
    import gguf

    path = Path(path)
    meta, tensors = _read_gguf_header(path)
    arch = str(meta.get("general.architecture") or "")
    if not arch:
        raise AdvisorError(f"{path.name}: GGUF metadata has no general.architecture")
    notes: list[str] = []

    def a(key: str) -> Any:
        return meta.get(f"{arch}.{key}")

    def first(v: Any) -> Any:
        if isinstance(v, list):
            nonzero = [x for x in v if x]
            return max(nonzero) if nonzero else (v[0] if v else None)
        return v

    def need(key: str) -> int:
        v = first(a(key))
        if v is None or not isinstance(v, (int, float)) or v <= 0:
            raise AdvisorError(f"{path.name}: GGUF metadata has no usable {arch}.{key}")
        return int(v)

    # tensors: element counts and bytes by group
    groups = {"non_expert": [0, 0.0], "expert": [0, 0.0], "embedding": [0, 0.0], "head": [0, 0.0]}
    types: dict[str, int] = {}
    for t in tensors:
        n = int(t.n_elements)
        nbytes = float(t.n_bytes)
        tname = t.name
        g = ("embedding" if tname == "token_embd.weight" else "head" if tname == "output.weight"
             else "expert" if "_exps" in tname else "non_expert")
        groups[g][0] += n
        groups[g][1] += nbytes
        types[t.type_name] = types.get(t.type_name, 0) + n
    total_params = sum(v[0] for v in groups.values())
    total_bytes = sum(v[1] for v in groups.values())
    if total_params <= 0:
        raise AdvisorError(f"{path.name}: GGUF file lists no tensors")

    layers = need("block_count")
    hidden = need("embedding_length")
    heads = need("attention.head_count")
    kv_heads = int(first(a("attention.head_count_kv")) or heads)
    kv_lora = first(a("attention.kv_lora_rank"))
    key_len = first(a("attention.key_length"))
    val_len = first(a("attention.value_length"))
    rope_dim = first(a("rope.dimension_count"))
    mla = bool(kv_lora)
    if mla:
        head_dim = int(key_len or 0)
        if not head_dim:
            raise AdvisorError(f"{path.name}: MLA GGUF without {arch}.attention.key_length")
        kv_heads = heads
    elif key_len:
        head_dim = int(key_len)
    else:
        head_dim = hidden // heads
        notes.append(f"no {arch}.attention.key_length: head_dim = hidden/heads = {head_dim}")
    vocab = first(a("vocab_size")) or meta.get("tokenizer.ggml.tokens")
    emb = next((t for t in tensors if t.name == "token_embd.weight"), None)
    if emb is not None:
        vocab = int(emb.shape[-1]) if int(emb.shape[0]) == hidden else int(emb.shape[0])
    if not vocab:
        raise AdvisorError(f"{path.name}: GGUF metadata gives no vocabulary size")
    ctx = int(first(a("context_length")) or 0)
    if ctx < 128:
        ctx = max(ctx, 2048)
        notes.append(f"no {arch}.context_length: 2048 assumed")
    inter_v = a("feed_forward_length")
    intermediate = int(first(inter_v) or 0)
    experts = int(first(a("expert_count")) or 0) or None
    k = int(first(a("expert_used_count")) or 0) or None
    tie = not any(t.name == "output.weight" for t in tensors)
    plain = not any(".ffn_gate" in t.name for t in tensors)
    moe_inter = shared = shared_inter = first_dense = moe_layers = None
    if experts and k:
        moe_inter = int(first(a("expert_feed_forward_length")) or 0) or intermediate
        n_shared = int(first(a("expert_shared_count")) or 0)
        s_inter = int(first(a("expert_shared_feed_forward_length")) or 0)
        if n_shared or any("_shexp" in t.name for t in tensors):
            shared = n_shared or 1
            if s_inter and s_inter != moe_inter * shared:
                shared_inter = s_inter
        first_dense = int(first(a("leading_dense_block_count")) or 0) or None
        moe_blocks = {t.name.split(".")[1] for t in tensors if "_exps" in t.name and t.name.startswith("blk.")}
        if moe_blocks and len(moe_blocks) != layers - (first_dense or 0):
            moe_layers = len(moe_blocks)
        if not intermediate or (moe_layers is None and not first_dense):
            intermediate = moe_inter
        plain = not any("ffn_gate" in t.name for t in tensors)
    else:
        experts = k = None
    if not intermediate:
        raise AdvisorError(f"{path.name}: GGUF metadata has no {arch}.feed_forward_length")
    window = int(first(a("attention.sliding_window")) or 0) or None
    sliding_layers = None
    if window:
        pattern = a("attention.sliding_window_pattern")
        if isinstance(pattern, list) and pattern:
            sliding_layers = sum(1 for x in pattern if x)
        elif arch == "gemma2" or arch == "gpt-oss":
            sliding_layers = layers // 2
        elif arch.startswith("gemma3"):
            sliding_layers = layers - layers // 6
        else:
            sliding_layers = layers
        notes.append(f"sliding window {window} on {sliding_layers} of {layers} layers")
    routed = groups["expert"][0]
    active = total_params - (routed * (1 - k / experts) if experts and k else 0)
    display = name or meta.get("general.name") or path.stem
    entry: dict[str, Any] = {
        "key": slug(display), "name": str(display), "family": arch,
        "params_total_b": round(total_params / 1e9, 9), "params_active_b": round(active / 1e9, 9),
        "layers": layers, "hidden": hidden, "intermediate": intermediate, "heads": heads, "kv_heads": kv_heads,
        "head_dim": head_dim, "vocab": int(vocab), "native_context": ctx, "tie_embeddings": tie,
        "attention": "mla" if mla else "mqa" if kv_heads == 1 else "mha" if kv_heads == heads else "gqa",
        "ffn": "plain" if plain else "gated",
    }
    optional = {"v_head_dim": int(val_len) if val_len and int(val_len) != head_dim else None,
                "sliding_window": window, "sliding_layers": sliding_layers,
                "experts": experts, "experts_per_token": k, "shared_experts": shared, "moe_intermediate": moe_inter,
                "shared_expert_intermediate": shared_inter, "first_dense_layers": first_dense,
                "moe_layers": moe_layers,
                "kv_lora_rank": int(kv_lora) if mla else None,
                "qk_rope_head_dim": int(rope_dim or 0) if mla else None,
                "q_lora_rank": int(first(a("attention.q_lora_rank")) or 0) or None if mla else None}
    entry.update({k_: v for k_, v in optional.items() if v is not None})
    src = source or str(path)
    entry["source"] = f"{src} (GGUF header)"
    mix = ", ".join(f"{tn} {n / total_params:.0%}" for tn, n in sorted(types.items(), key=lambda x: -x[1]))
    notes.append(f"exact file weights {total_bytes / 1e9:,.3f} GB = {total_bytes * 8 / total_params:.3f} bits "
                 f"per weight; tensor types by parameters: {mix}")
    entry["notes"] = "; ".join(notes)
    model = validate_entry(entry)

    def bits(g: str) -> float | None:
        n, b = groups[g]
        return round(b * 8 / n, 6) if n else None

    ftype = meta.get("general.file_type")
    try:
        ftype_name = gguf.LlamaFileType(int(ftype)).name.replace("MOSTLY_", "") if ftype is not None else ""
    except (ValueError, TypeError):
        ftype_name = ""
    body_bits = bits("non_expert") or bits("expert") or 16.0
    qentry: dict[str, Any] = {
        "key": f"gguf-{entry['key']}", "name": f"{display} (GGUF file{', ' + ftype_name if ftype_name else ''})",
        "kind": "gguf", "bits_per_weight": bits("expert") if experts and bits("expert") else body_bits,
        "quality_rank": _gguf_quality(ftype_name, body_bits),
        "runtimes": ["llama.cpp"], "compute_dtype": _gguf_compute_dtype(ftype_name, body_bits),
        "source": f"{src}: every tensor's bytes by its GGML type (header only)",
        "notes": f"this file's own mix: {mix}",
    }
    if experts and bits("expert"):
        qentry["non_expert_bits_per_weight"] = body_bits
    emb_bits, head_bits = bits("embedding"), bits("head")
    if head_bits:
        qentry["head_bits_per_weight"] = head_bits
        if emb_bits:
            qentry["embedding_bits_per_weight"] = emb_bits
    elif emb_bits:  # tied: the embedding is the head
        qentry["head_bits_per_weight"] = emb_bits
    for k_ in ("bits_per_weight", "non_expert_bits_per_weight", "head_bits_per_weight", "embedding_bits_per_weight"):
        if k_ in qentry:
            qentry[k_] = min(32.0, max(1.0, qentry[k_]))
    quant = _validate_quant(qentry)
    return ImportedModel(model=model, entry=entry, notes=tuple(notes), source=src, kind="gguf",
                         weight_format=qentry["key"], weight_bytes=total_bytes, quant=quant, quant_entry=qentry,
                         group_bytes={g: v[1] for g, v in groups.items()})


#: quality rank of the catalog's GGUF formats (catalog/quants.yaml), by llama.cpp file-type name
_GGUF_QUALITY = {"ALL_F32": 100, "F16": 100, "BF16": 100, "Q8_0": 97, "Q6_K": 90, "Q5_K_M": 84, "Q5_K_S": 82,
                 "Q5_1": 81, "Q5_0": 80, "Q4_K_M": 76, "Q4_K_S": 74, "IQ4_XS": 74, "IQ4_NL": 73, "Q4_1": 72,
                 "Q4_0": 70, "MXFP4_MOE": 72, "Q3_K_L": 64, "Q3_K_M": 62, "IQ3_M": 62, "IQ3_S": 60, "Q3_K_S": 56,
                 "IQ3_XS": 56, "IQ3_XXS": 52, "Q2_K": 44, "IQ2_M": 44, "IQ2_S": 40, "IQ2_XS": 36, "IQ2_XXS": 30,
                 "IQ1_M": 20, "IQ1_S": 15}


def _gguf_compute_dtype(ftype_name: str, body_bits: float) -> dict[str, str]:
    """What a GGUF file's matrix products compute in, by vendor (as catalog/quants.yaml states it for
    the named formats): a float file in its own type (F16 on a CPU through FP32), a quantized one in
    int8 on NVIDIA (MMQ) and CPUs (dot products against Q8-quantized activations), else FP16."""
    if body_bits >= 31:
        return {"default": "fp32"}
    if body_bits >= 15.5:
        return {"default": "bf16"} if ftype_name.upper() == "BF16" else {"default": "fp16"}
    return {"default": "fp16", "NVIDIA": "int8", "CPU": "int8"}


def _gguf_quality(ftype: str, bits: float) -> int:
    if ftype in _GGUF_QUALITY:
        return _GGUF_QUALITY[ftype]
    # by bits per weight, between the catalog's anchors
    return int(max(10, min(100, round(100 - 6 * max(0.0, 16 - bits) * (0.6 if bits > 4 else 1.0)))))


def _validate_quant(entry: Mapping[str, Any]) -> specs.Quant:
    try:
        q = build_entry(specs.Quant, dict(entry), origin=str(entry.get("source", "")))
        check_entry(q)
    except EntryError as exc:
        raise AdvisorError(f"the GGUF file's weight mix is not a valid format entry: {exc.field} {exc}") from None
    return q


# ---- sources --------------------------------------------------------------------------------------

def is_import_source(text: str) -> bool:
    """True when ``text`` names something to import (``hf:org/name``, or an existing path to a
    config.json, a folder, a .gguf) rather than a catalog name."""
    t = str(text).strip()
    if t.startswith(HF_PREFIX):
        return True
    if t.endswith((".gguf", ".json")) or os.sep in t or t.startswith(("~", ".")):
        try:
            return Path(t).expanduser().exists()
        except OSError:
            return False
    return False


def _hf_fetch(repo_id: str, filename: str, *, cache_dir: str | None, required: bool) -> Path | None:
    try:
        from huggingface_hub import hf_hub_download
        from huggingface_hub.utils import (EntryNotFoundError, GatedRepoError, LocalEntryNotFoundError,
                                           RepositoryNotFoundError)
    except ImportError:  # pragma: no cover - a declared dependency
        raise AdvisorError("importing from the Hub needs huggingface_hub (pip install huggingface_hub)") from None
    try:
        return Path(hf_hub_download(repo_id, filename, cache_dir=cache_dir))
    except GatedRepoError:
        raise AdvisorError(f"hf:{repo_id} is gated: accept its licence on huggingface.co and log in "
                           "(huggingface-cli login), or download config.json and import the file") from None
    except RepositoryNotFoundError:
        raise AdvisorError(f"hf:{repo_id}: no such model on the Hub (or it is private)") from None
    except LocalEntryNotFoundError:  # (a subclass of EntryNotFoundError: first)
        if required:
            raise AdvisorError(f"hf:{repo_id}: {filename} is not in the local cache and the Hub cannot be "
                               "reached (offline?)") from None
        return None
    except EntryNotFoundError:
        if required:
            raise AdvisorError(f"hf:{repo_id} has no {filename}") from None
        return None
    except (OSError, ValueError) as exc:
        if required:
            raise AdvisorError(f"hf:{repo_id}: cannot fetch {filename} "
                               f"({type(exc).__name__}: {str(exc).splitlines()[0][:120] if str(exc) else ''})") from None
        return None
    except Exception as exc:  # noqa: BLE001 - network stacks raise their own kinds
        if required:
            raise AdvisorError(f"hf:{repo_id}: cannot fetch {filename} ({type(exc).__name__})") from None
        return None


def import_model(source: str, *, name: str | None = None, cache_dir: str | None = None) -> ImportedModel:
    """Import ``source``: ``hf:org/name``, a config.json, a folder holding one, or a .gguf file."""
    text = str(source or "").strip()
    if not text:
        raise AdvisorError("nothing to import: give a config.json, a folder, a .gguf file or hf:org/name")
    if text.startswith(HF_PREFIX):
        repo = text[len(HF_PREFIX):].strip().strip("/")
        if not _HF_ID_RE.match(repo):
            raise AdvisorError(f"{text!r} is not a Hub model id (hf:org/name)")
        cfg_path = _hf_fetch(repo, "config.json", cache_dir=cache_dir, required=True)
        index = _hf_fetch(repo, "model.safetensors.index.json", cache_dir=cache_dir, required=False)
        nbytes = None
        if index is not None:
            nbytes, _ = safetensors_bytes(index.parent)
        src = f"https://huggingface.co/{repo}/blob/main/config.json (imported {_dt.date.today().isoformat()})"
        return from_hf_config(_read_json(cfg_path, "config.json"), name=name or repo.split("/")[-1], source=src,
                              checkpoint_bytes=nbytes)
    path = Path(text).expanduser()
    if not path.exists():
        raise AdvisorError(f"{text}: no such file or folder")
    stamp = f"(imported {_dt.date.today().isoformat()})"
    if path.is_dir():
        cfg = path / "config.json"
        if not cfg.is_file():
            ggufs = sorted(path.glob("*.gguf"))
            if len(ggufs) == 1:
                return from_gguf(ggufs[0], name=name, source=f"{ggufs[0].resolve()} {stamp}")
            # as typed, with the folder it named where that differs ("~" is the home folder)
            shown = text if str(path) == text else f"{text} ({path})"
            raise AdvisorError(f"{shown} holds no config.json" + (f" (and {len(ggufs)} .gguf files: name one)"
                                                                  if ggufs else ""))
        nbytes, how = safetensors_bytes(path)
        raw = _read_json(cfg, "config.json")
        return from_hf_config(raw, name=name or _config_name(raw) or path.resolve().name,
                              source=f"{cfg.resolve()} {stamp}", checkpoint_bytes=nbytes)
    if not path.is_file():   # a pipe or a device would block the read or never end
        raise AdvisorError(f"{text}: not a regular file (a pipe, socket or device); give a model file or folder")
    if path.suffix.lower() == ".gguf" or _has_gguf_magic(path):
        return from_gguf(path, name=name, source=f"{path.resolve()} {stamp}")
    if path.suffix.lower() == ".safetensors":
        raise AdvisorError(f"{path.name}: a safetensors file has no architecture; import the folder with its "
                           "config.json")
    nbytes, _ = safetensors_bytes(path.parent) if path.name == "config.json" else (None, "")
    raw = _read_json(path, "config.json")
    return from_hf_config(raw, name=name or _config_name(raw) or (path.resolve().parent.name
                                                                  if path.name == "config.json" else path.stem),
                          source=f"{path.resolve()} {stamp}", checkpoint_bytes=nbytes)


def _config_name(raw: Mapping) -> str:
    """The model's own name from its config (``_name_or_path``: "meta-llama/Llama-3.1-8B" or the local
    folder it was saved from), as its last part; "" when the config does not say."""
    text = raw.get("_name_or_path") if isinstance(raw, Mapping) else None
    if not isinstance(text, str) or not text.strip():
        return ""
    return re.split(r"[\\/]", text.strip().rstrip("/\\"))[-1]


def _has_gguf_magic(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == b"GGUF"
    except OSError:
        return False


def saved_entry(imported: ImportedModel, key: str | None = None) -> dict:
    """The entry ``--save`` writes (YAML-ready): the spec with its source and import date."""
    entry = dict(imported.entry)
    if key:
        entry["key"] = key
    validate_entry(entry)
    return entry


def with_key(imported: ImportedModel, key: str, name: str | None = None) -> ImportedModel:
    """The same import under another key (to avoid replacing a catalog model of the same key), and
    with ``name`` another display name (so that names typed for the catalog's model stay unique)."""
    name = name or imported.model.name
    entry = dict(imported.entry, key=key, name=name)
    model = dataclasses.replace(imported.model, key=key, name=name)
    quant, qentry = imported.quant, imported.quant_entry
    if qentry is not None:
        qentry = dict(qentry, key=f"gguf-{key}")
        quant = dataclasses.replace(quant, key=qentry["key"])
    return dataclasses.replace(imported, model=model, entry=entry, quant=quant, quant_entry=qentry,
                               weight_format=qentry["key"] if qentry else imported.weight_format)


def renamed(imported: ImportedModel, name: str, key: str | None = None) -> ImportedModel:
    """The same import under the display ``name`` the user gave it (and the key that name makes, or
    ``key``); `AdvisorError` for a name with nothing to make a key of."""
    name = str(name or "").strip()
    key = key or slug(name)
    if not name or not key:
        raise AdvisorError("give the model a name with at least one letter or digit")
    return with_key(imported, key, name)


IMPORTED_FILE = "imported-models.yaml"


def save_imported_model(cat: Any, imported: ImportedModel, folder: Path | None = None,
                        filename: str = IMPORTED_FILE) -> tuple[ImportedModel, Path]:
    """Write ``imported`` to the user catalog (``models`` section of ``imported-models.yaml`` in the
    data folder, merged with what is there; a GGUF file's weight mix goes to its ``quants`` section),
    atomically. A key that names a different shipped model is re-keyed ``imported-…`` rather than
    overriding it. Returns the (possibly re-keyed) import and the file written; nothing is written
    when anything is invalid."""
    from advisor.data.userdata import save_entries

    current = cat.models.get(imported.model.key) if cat is not None else None
    if current is not None and not str(getattr(current, "origin", "")).endswith(filename) \
            and current != imported.model:
        imported = with_key(imported, f"imported-{imported.model.key}", f"{imported.model.name} (imported)")
    entry = dict(imported.entry)
    stamp = _dt.date.today().isoformat()
    if "imported" not in entry["source"]:
        entry["source"] = f"{entry['source']} (imported {stamp})"
    entry = saved_entry(dataclasses.replace(imported, entry=entry))
    qentry = None
    if imported.quant_entry is not None:
        qentry = dict(imported.quant_entry)
        _validate_quant(qentry)
    if qentry is not None:
        save_entries("quants", [qentry], filename, folder)
    path = save_entries("models", [entry], filename, folder)
    return dataclasses.replace(imported, entry=entry), path
