"""The command that starts a recommended configuration, per runtime.

Each runtime's `launch` template in catalog/runtimes.yaml has {placeholders}; this module fills
them with what the runtime needs to load the configuration and nothing it would reject:

- the weights: a published checkpoint of the model in that weight format (catalog/checkpoints.yaml,
  each with its source), never ``--quantization X`` pointed at the BF16 repository (vLLM and SGLang
  read a quantized checkpoint's ``quantization_config`` themselves). Where no checkpoint is
  published the line loads a local folder or file and says, as a shell comment, what to make it
  with (llm-compressor, TensorRT Model Optimizer, llama-quantize, mlx_lm.convert);
- vLLM/SGLang's online FP8 (``--quantization fp8`` on BF16 weights) only where the BF16 weights
  fit on the GPUs while they load; never on a model shipped in another quantized format;
- GGUF files by repository and exact file (``-hf repo --hf-file file``, for a split set its first
  part) or, where the table has no file name, by the quantization tag (``-hf repo:Q4_K_M``);
- each runtime's spelling of the KV dtype; TensorRT-LLM's FP8 cache through its YAML options;
- llama-server's ``-c`` as the total over its ``-np`` slots (each slot gets ``-c / -np``).

The flags used here were read from each runtime's argument parser; tests/data/runtime_flags.yaml
lists them with the source file and commit, and tests/core/test_launch.py checks every line the
recommender prints against that list and every checkpoint against catalog/checkpoints.yaml.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, Mapping

from advisor.data.specs import Checkpoint, Model, Quant
from advisor.model.compat import refusal, refuses_format_key
from advisor.model.devices import usable_memory_gb
from advisor.model.geometry import WeightBits, geometry, weight_bytes
from advisor.model.inputs import prompt_cache_gb_s

#: NVIDIA generations before Ada (compute capability < 8.9), where vLLM's "fp8" KV cache (E4M3) falls
#: back to the Triton attention backend, which has no E4M3 below sm89 (vllm-project/vllm issue #26431);
#: the launch line asks for E5M2 there (vllm/config/cache.py CacheDType: auto, bfloat16, fp8, fp8_e4m3,
#: fp8_e5m2, …).
E4M3_KV_MISSING = frozenset({"nvidia-volta", "nvidia-turing", "nvidia-ampere"})
# (each runtime's KV flag values, online quantization, quantizer, checkpoint kind and slots are
# fields of its entry in catalog/runtimes.yaml: `Runtime.kv_cache_flags` …)
#: The tag a GGUF file name and llama.cpp's -hf repo:TAG use for a format, where it is not the
#: first word of the format's name (gpt-oss ships its MoE-MXFP4 mix as "mxfp4").
GGUF_TAG = {"mxfp4-moe-gguf": "MXFP4"}
#: mlx_lm.convert's bits per format (mlx-community names its repositories -4bit / -8bit).
MLX_BITS = {"mlx-4bit": 4, "mlx-8bit": 8}
#: TensorRT-LLM runs pre-quantized checkpoints made with NVIDIA's Model Optimizer (the nvidia/
#: repositories), NVIDIA/TensorRT-LLM docs/source/features/quantization.md "Running Pre-quantized Models".
MODELOPT_PUBLISHER = "nvidia/"
#: vllm-project/vllm docs/source/features/quantization/fp8.md ('HF collection of quantized FP8 checkpoints
#: of popular LLMs ready to use with vLLM': neuralmagic) and sgl-project/sglang docs/backend/quantization.md
#: ('For popular pre-quantized models, please visit neuralmagic collection'); Neural Magic is now RedHatAI.
COMPRESSED_TENSORS_PUBLISHERS = ("RedHatAI/", "neuralmagic/")


@dataclass(frozen=True)
class Weights:
    """What a launch line loads: the model argument, extra format flags, and a note (a shell
    comment) when the checkpoint has to be made first."""

    model: str
    flags: str = ""
    note: str = ""
    checkpoint: Checkpoint | None = None


def gguf_tag(q: Quant) -> str:
    return GGUF_TAG.get(q.key, q.name.split()[0])


def is_gguf(cp: Checkpoint) -> bool:
    return cp.repo.lower().endswith("gguf") or any(f.lower().endswith(".gguf") for f in cp.files)


@lru_cache(maxsize=1)
def shipped_checkpoints() -> Mapping[str, Checkpoint]:
    """catalog/checkpoints.yaml as shipped (for callers that hold no catalog)."""
    from advisor.data.catalog import CATALOG_DIR, parse_file

    parsed, _ = parse_file(CATALOG_DIR / "checkpoints.yaml")
    return {cp.key: cp for cp in parsed["checkpoints"]}


_BY_MODEL: dict[int, tuple[Mapping[str, Checkpoint], dict[str, list[Checkpoint]]]] = {}


def of_model(checkpoints: Mapping[str, Checkpoint], model_key: str) -> list[Checkpoint]:
    """The checkpoints of one model (the table indexed once per table: launch lines are built by
    the thousand)."""
    hit = _BY_MODEL.get(id(checkpoints))
    if hit is None or hit[0] is not checkpoints:
        index: dict[str, list[Checkpoint]] = {}
        for cp in checkpoints.values():
            index.setdefault(cp.model, []).append(cp)
        if len(_BY_MODEL) > 16:
            _BY_MODEL.clear()
        hit = _BY_MODEL[id(checkpoints)] = (checkpoints, index)
    return hit[1].get(model_key, [])


def checkpoints_of(checkpoints: Mapping[str, Checkpoint], model: Model, quant: Quant, gguf: bool) -> list[Checkpoint]:
    """Published checkpoints of ``model`` in ``quant``: GGUF repositories, or safetensors ones."""
    return [cp for cp in of_model(checkpoints, model.key) if quant.key in cp.quants and is_gguf(cp) == gguf]


def gguf_file(cp: Checkpoint, q: Quant) -> str | None:
    """The checkpoint's file of format ``q`` (the first of a split set), if the table lists it."""
    tag = gguf_tag(q).lower()
    for f in cp.files:
        stem = f.lower().rsplit("/", 1)[-1]
        if re.search(rf"[-_.]{re.escape(tag)}([-_.]|$)", stem.removesuffix(".gguf") + "."):
            return f
    return None


def native_checkpoint(checkpoints: Mapping[str, Checkpoint], model: Model) -> tuple[Checkpoint | None, str]:
    """The model's own release (its repository is one of the model's catalog names) and the
    format it was published in (its first listed). A publisher may release it twice (Z.ai's GLM in
    BF16 and FP8): the release in the model's own format (``native_quant``, else 16-bit) is the one."""
    own = [cp for cp in of_model(checkpoints, model.key)
           if not is_gguf(cp) and cp.repo in model.aliases and cp.quants]
    release = model.native_quant or "bf16"
    own.sort(key=lambda cp: cp.quants[0] != release and not (release == "bf16" and cp.quants[0] == "f16"))
    return (own[0], own[0].quants[0]) if own else (None, "")


def bf16_load_fits(c: Any, model: Model) -> bool:
    """Online quantization loads the BF16 weights first: do they fit on the GPUs while loading?"""
    hw = getattr(c, "hardware", None)
    if hw is None:
        return False
    bf16 = weight_bytes(geometry(model), WeightBits(16.0, 16.0, 16.0, 16.0)) / max(c.gpus, 1)
    return bf16 <= usable_memory_gb(hw) * 1e9 * c.runtime.memory_fraction


def local_name(own: Checkpoint | None, model: Model, suffix: str) -> str:
    """A local path for a checkpoint the user makes: named after the model's own release."""
    base = own.repo.split("/", 1)[1] if own is not None else model.key
    return f"./{base}-{suffix}"


def fp16_only(c: Any) -> bool:
    """Hardware where the engine must be told to run BF16 weights at FP16 (before Ampere:
    vLLM refuses BF16 below compute capability 8.0 and suggests --dtype half)."""
    hw = getattr(c, "hardware", None)
    return hw is not None and refuses_format_key(hw, c.runtime, "bf16")


def hf_weights(c: Any, model: Model, checkpoints: Mapping[str, Checkpoint]) -> Weights:
    """The checkpoint a Hugging Face engine (vLLM, SGLang, TensorRT-LLM, MLX) loads for ``c``."""
    family, q = c.runtime.format_family, c.quant
    found = checkpoints_of(checkpoints, model, q, gguf=False)
    own, native = native_checkpoint(checkpoints, model)
    if family == "tensorrt-llm" and q.kind != "float":
        # TensorRT-LLM runs Model Optimizer checkpoints (and a model's own quantized release),
        # not compressed-tensors or AutoAWQ ones
        found = [cp for cp in found if cp.repo.startswith(MODELOPT_PUBLISHER) or cp is own]
    elif family in ("vllm", "sglang"):
        # Red Hat's (Neural Magic's) compressed-tensors checkpoints first, which both projects' docs
        # point to for pre-quantized models, Model Optimizer ones last
        found.sort(key=lambda cp: (not cp.repo.startswith(COMPRESSED_TENSORS_PUBLISHERS),
                                   cp.repo.startswith(MODELOPT_PUBLISHER)))
    # vLLM/SGLang run a BF16 checkpoint at FP16 when asked (--dtype half): for the F16 format, and
    # on GPUs without BF16 for any checkpoint whose unquantized layers are BF16
    half = " --dtype half" if family in ("vllm", "sglang") and (q.key == "f16" or fp16_only(c)) else ""
    trt_f16 = ("  # served at the checkpoint's BF16 (trtllm-serve takes the dtype from the checkpoint; same size)"
               if q.key == "f16" and family == "tensorrt-llm" else "")
    if found:
        return Weights(found[0].repo, half, trt_f16 if "f16" not in found[0].quants else "", found[0])
    online = dict(c.runtime.online_quantization).get(q.key)
    if online and own is not None and native in ("bf16", "f16") and (online != "fp8" or bf16_load_fits(c, model)):
        return Weights(own.repo, f"{half} --quantization {online}", "", own)
    if online and online != "fp8" and own is not None and native not in ("bf16", "f16"):
        # the engine quantizes 16-bit weights as it loads them (bitsandbytes), and the release is in
        # a narrower format: dequantize it to BF16 first, then serve that copy
        path = local_name(own, model, "BF16")
        how = (" (a block-scaled FP8 release as DeepSeek's: inference/fp8_cast_bf16.py of deepseek-ai/DeepSeek-V3, "
               "then copy the config and tokenizer files and drop quantization_config from config.json)"
               if native == "fp8" else "")
        return Weights(path, f"{half} --quantization {online}",
                       f"  # {c.runtime.name} quantizes 16-bit weights to {q.name} as it loads them, and {model.name} "
                       f"ships in {native.upper()}: dequantize {own.repo} to BF16 into {path} first{how}")
    if q.key == "f16" and own is not None and native == "bf16":  # the BF16 repository served at FP16
        return Weights(own.repo, half, trt_f16, own)
    if family == "mlx" and q.key in MLX_BITS and own is not None:
        path = local_name(own, model, f"{MLX_BITS[q.key]}bit")
        return Weights(path, "", f"  # no {q.name} checkpoint of {model.name} in catalog/checkpoints.yaml: "
                                 f"make it with mlx_lm.convert --hf-path {own.repo} --mlx-path {path} -q "
                                 f"--q-bits {MLX_BITS[q.key]}")
    why = (" (and its BF16 weights do not fit on these GPUs while loading for online quantization)"
           if online == "fp8" and own is not None and native in ("bf16", "f16") else "")
    source = own.repo if own is not None else model.name
    path = local_name(own, model, q.name.split()[0].replace("/", "-"))
    return Weights(path, "", f"  # no {q.name} checkpoint of {model.name} in catalog/checkpoints.yaml{why}: "
                             f"make it from {source} with {c.runtime.quantize_with} into {path}")


def gguf_weights(model: Model, q: Quant, checkpoints: Mapping[str, Checkpoint], quantize_with: str) -> Weights:
    """The GGUF file llama-server loads for format ``q``: exact file, or the repository's tag."""
    for cp in checkpoints_of(checkpoints, model, q, gguf=True):
        f = gguf_file(cp, q)
        if f:
            # the exact file; for a split set its first part: llama.cpp's downloader reads the
            # first part's split.count and fetches the other parts (common_download_model)
            return Weights(f"-hf {cp.repo} --hf-file {f}", checkpoint=cp)
        return Weights(f"-hf {cp.repo}:{gguf_tag(q)}", checkpoint=cp)
    own, _ = native_checkpoint(checkpoints, model)
    path = local_name(own, model, f"{gguf_tag(q)}.gguf")
    source = own.repo if own is not None else model.name
    how = (f"convert_hf_to_gguf.py --outtype {q.key}" if q.kind == "float"
           else f"{quantize_with} {gguf_tag(q)}")
    return Weights(f"-m {path}", "", f"  # no {gguf_tag(q)} GGUF of {model.name} in catalog/checkpoints.yaml: "
                                     f"make it from {source} with {how}")


def draft_gguf(model: Model, quant: Quant, checkpoints: Mapping[str, Checkpoint],
               quants: Mapping[str, Quant]) -> tuple[Checkpoint, Quant] | None:
    """A published GGUF of a draft ``model`` and the format it is fetched in: ``quant`` where the
    draft is published in it, else the widest format its repositories list (a small draft's Q8_0
    costs little and drafts better than a 4-bit one)."""
    for cp in checkpoints_of(checkpoints, model, quant, gguf=True):
        return cp, quant
    best = None
    for cp in of_model(checkpoints, model.key):
        if not is_gguf(cp):
            continue
        for key in cp.quants:
            q = quants.get(key)
            if q is not None and (best is None or q.bits_per_weight > best[1].bits_per_weight):
                best = (cp, q)
    return best


def weights_for(c: Any, model: Model, checkpoints: Mapping[str, Checkpoint]) -> Weights:
    if c.runtime.loads_hf_checkpoints:
        return hf_weights(c, model, checkpoints)
    return gguf_weights(model, c.quant, checkpoints, c.runtime.quantize_with)


#: The head node's address in a multi-node line: the user puts the first node's host name there.
HEAD_NODE = "HEAD_NODE_IP"
#: SGLang's rendezvous port in a multi-node line (any free port; `advisor.plan.exports` uses the same)
SGLANG_DIST_PORT = 20000


def layout_flags(family: str, layout, gpus: int, nodes: int) -> tuple[int, str, list[str], str]:
    """What a layout past one tensor-parallel group adds to a launch line, per runtime family:
    (the value of the template's {tp}, extra flags, TensorRT-LLM LLM-API YAML lines, a note).

    - vLLM: data-parallel attention as data-parallel ranks with ``--enable-expert-parallel`` (its
      docs: "data parallel for the attention layers and expert ... parallel for the expert
      layers"), pipeline stages with ``--pipeline-parallel-size`` (across nodes over Ray);
    - SGLang: ``--tp-size`` is every GPU of the instance, ``--dp-size`` with
      ``--enable-dp-attention`` splits attention, ``--ep-size`` the experts; across nodes
      ``--nnodes``/``--node-rank``/``--dist-init-addr``;
    - TensorRT-LLM: ``--tp_size`` every GPU of a stage, ``--ep_size``, ``--pp_size``, and
      ``enable_attention_dp: true`` through its LLM-API options file.
    The line printed is the head node's (rank 0); the note says what the other nodes run."""
    tp, pp, dp, ep = layout.tp, layout.pp, layout.dp_attention, layout.ep
    flags, yaml_lines, note = "", [], ""
    if layout.gpus <= 1 or (layout.plain and nodes == 1):
        return gpus, "", [], ""
    if family == "vllm":
        if dp > 1:
            flags += f" --data-parallel-size {dp}"
        if ep > 1:
            flags += " --enable-expert-parallel"
        if pp > 1:
            flags += f" --pipeline-parallel-size {pp}"
        if nodes > 1:
            if dp > 1:
                local = max(1, dp // nodes)
                flags += f" --data-parallel-size-local {local} --data-parallel-address {HEAD_NODE}"
                note = (f"  # node 0 of {nodes}; on node k run the same line with --headless "
                        f"--data-parallel-start-rank {local}*k")
            else:
                flags += " --distributed-executor-backend ray"
                note = f"  # on a Ray cluster of {nodes} nodes (ray start --head here, ray start --address on the others)"
        return tp, flags, [], note
    if family == "sglang":
        if dp > 1:
            flags += f" --dp-size {dp} --enable-dp-attention"
        if ep > 1:
            flags += f" --ep-size {ep}"
        if pp > 1:
            flags += f" --pp-size {pp}"
        if nodes > 1:
            flags += f" --nnodes {nodes} --node-rank 0 --dist-init-addr {HEAD_NODE}:{SGLANG_DIST_PORT}"
            note = f"  # node 0 of {nodes}; the others run the same line with --node-rank 1 … {nodes - 1}"
        return tp * dp, flags, [], note
    if family == "tensorrt-llm":
        if ep > 1:
            flags += f" --ep_size {ep}"
        if pp > 1:
            flags += f" --pp_size {pp}"
        if dp > 1:
            yaml_lines.append("enable_attention_dp: true")
        if nodes > 1:
            note = f"  # across {nodes} nodes: start it under mpirun (or trtllm-llmapi-launch) with {gpus} ranks"
        return tp * dp, flags, yaml_lines, note
    return gpus, "", [], ""


def keeps_prompt_cache(req) -> bool:
    """Whether a launch line's server keeps its host-memory prompt cache (llama-server's
    ``--cache-ram``): as ``req.prompt_cache`` says where it says (a configuration as the app holds
    it), else only where prompts share prefixes (``prefix_hit``), which it can serve again.
    Otherwise the launch line turns it off (`Runtime.server_prompt_cache_off_flag`), and the
    prediction drops the save it costs each request (`advisor.model.serving.prompt_cache_save_s`)."""
    said = getattr(req, "prompt_cache", None)
    if said is not None:
        return bool(said)
    return float(getattr(req, "prefix_hit", 0.0) or 0.0) > 0


def launch_line(c, req, checkpoints: Mapping[str, Checkpoint] | None = None) -> str:
    """Fill the runtime's template for candidate ``c`` (an `advisor.plan.recommend.Candidate`, or
    anything with runtime, quant, kv_dtype, gpus, users and optionally hardware and replicas)."""
    rt = c.runtime
    if not rt.launch or rt.historic:  # an old build is kept for comparison, never launched
        return ""
    family = rt.format_family
    model = req.model
    hw = getattr(c, "hardware", None)
    if hw is not None and refusal(hw, model, c.quant, c.kv_dtype, rt, c.gpus):
        return ""  # a configuration the support matrix refuses gets no command line
    w = weights_for(c, model, shipped_checkpoints() if checkpoints is None else checkpoints)
    kv = dict(rt.kv_cache_flags).get(c.kv_dtype.key, c.kv_dtype.key)
    if family == "vllm" and kv == "fp8" and hw is not None and hw.family in E4M3_KV_MISSING:
        kv = "fp8_e5m2"   # "fp8" means E4M3, which vLLM's attention kernels lack before Ada
    layout = getattr(c, "layout", None)
    nodes = int(getattr(c, "nodes", 1) or 1)
    tp, par_flags, api_yaml, par_note = layout_flags(family, layout, c.gpus, nodes) if layout is not None \
        else (c.gpus, "", [], "")
    if hw is not None:
        tp *= hw.devices_per_gpu  # TPU7x chiplets and NeuronCores count as devices
    prefix = kv_flags = ""
    plugin = dict(rt.format_plugins).get(c.quant.key)
    if plugin:
        # the engine serves this format through an out-of-tree package: install it first
        prefix = f"pip install {plugin} && "
    if family == "tensorrt-llm" and c.kv_dtype.key == "fp8":
        api_yaml = ["kv_cache_config:", "  dtype: fp8"] + api_yaml
    if family == "tensorrt-llm" and api_yaml:
        # trtllm-serve has no KV-dtype or attention-DP flag: --extra_llm_api_options reads a YAML of
        # LLM API fields
        name = "kv_fp8.yaml" if api_yaml == ["kv_cache_config:", "  dtype: fp8"] else "llm_api.yaml"
        prefix += "printf '" + "\\n".join(api_yaml) + "\\n' > " + name + " && "
        kv_flags = " --extra_llm_api_options " + name
    split = ""
    if family == "llama.cpp" and c.gpus > 1:
        split = " -sm layer -ts " + ",".join(["1"] * c.gpus)
    replicas = int(getattr(c, "replicas", 1) or 1)
    slots = math.ceil(c.users / replicas)
    # llama-server divides -c among its -np slots: ask for every user's whole context
    context = req.context * slots if rt.fixed_slots else req.context
    # vLLM and TensorRT-LLM limit running sequences per data-parallel rank (each rank is its own
    # scheduler); SGLang's --max-running-requests is the server's whole limit
    dp = layout.dp_attention if layout is not None else 1
    per_rank = math.ceil(slots / dp) if family in ("vllm", "tensorrt-llm") else slots
    values = {
        "model": w.model, "context": context, "parallel": per_rank, "kv": kv, "tp": tp,
        "memory_fraction": rt.memory_fraction, "format_flags": w.flags, "kv_flags": kv_flags, "split": split,
        "output": req.output_tokens,
        # a server's default reply limit (mlx_lm.server --max-tokens): what the context leaves after
        # the prompt, never the typical answer's length (which would cut every longer reply)
        "max_tokens": max(req.output_tokens, req.context - getattr(req, "prompt_tokens", 0)),
    }
    line = rt.launch
    for k, v in values.items():
        line = line.replace("{" + k + "}", str(v))
    if rt.server_prompt_cache_off_flag and prompt_cache_gb_s(rt) and not keeps_prompt_cache(req):
        line += " " + rt.server_prompt_cache_off_flag
    line += par_flags
    note = w.note + par_note
    if replicas > 1:
        note += (f"  # one of {replicas} replicas ({c.gpus} GPU{'s' if c.gpus > 1 else ''} each) behind a load "
                 f"balancer, {slots} users each")
    return prefix + line + note
