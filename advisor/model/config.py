"""One configuration to predict: resolved catalog entries, GPU count and split, and the workload.

The CLI, the `--cases` CSV path, the desktop app and the report all build a `Config` through
`configure` (from names the user typed) or `Config.replace` (one input changed), so that the
defaults — runtime for the hardware, weight format for the runtime — are chosen in one place
(`with_defaults`).
"""

from __future__ import annotations

import dataclasses
import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from advisor.data.catalog import with_threads
from advisor.data.errors import AdvisorError
from advisor.data.specs import Hardware, KvDtype, Model, Quant, Runtime
from advisor.model.compat import format_refusal, gpus_refusal, refusal, runtime_refusal, tp_refusal
from advisor.model.devices import CLUSTER_KINDS, NETWORKS_GBIT_S, max_gpus
from advisor.model.layout import Layout, parse_layout
from advisor.model.roofline import Workload

if TYPE_CHECKING:
    from advisor.data.catalog import Catalog

DEFAULT_PROMPT = 512
DEFAULT_OUTPUT = 128
DEFAULT_KV = "f16"
#: Preferred weight format per runtime family kind: GGUF engines start at Q4_K_M (what most people
#: download), the others at the 16-bit checkpoint as published.
DEFAULT_GGUF_QUANT = "q4_k_m"
DEFAULT_QUANT = "bf16"
PARALLELISM_WORDS = {"tp": "tp", "tensor": "tp", "pp": "pp", "pipeline": "pp", "layer": "pp"}
#: Beyond its native context a model needs RoPE scaling (YaRN and the like): predicted, with a note,
#: up to this many times the native context; refused above it (see `context_refusal`).
ROPE_SCALING_MAX_FACTOR = 4
#: Each runtime's own spelling of weight formats, by format family (`Runtime.format_family`):
#: spelling (compared after `names.normalise`) → catalog quant key, or "!" + why that runtime has no such format and what
#: to use instead. Consulted before the catalog's names, for the runtime in force (`quant_for`).
#: llama.cpp: llama-quantize's types (MXFP4_MOE is its MXFP4; it has no FP8 or AWQ/GPTQ weights);
#: vLLM/SGLang: --quantization awq, gptq, fp8, mxfp4, bitsandbytes, compressed-tensors' w4a16/w8a8;
#: MLX: mlx_lm.convert -q --q-bits 4/8; TensorRT-LLM: quantize.py --qformat fp8, nvfp4, int4_awq,
#: int8_sq, int8_wo, int4_wo (TensorRT-LLM examples/quantization).
_LLAMA_CPP_NO_FP8 = "!llama.cpp has no FP8 weights; Q8_0 is its 8-bit format"
_LLAMA_CPP_NO_INT4 = ("!llama.cpp loads GGUF formats, not AWQ/GPTQ checkpoints; Q4_K_M is its common 4-bit format "
                      "(AWQ and GPTQ run on vLLM, SGLang and TensorRT-LLM)")
_VLLM_SPELLINGS = {
    "awq": "awq-int4", "awq int4": "awq-int4", "gptq": "awq-int4", "gptq int4": "awq-int4", "int4": "awq-int4",
    "w4a16": "awq-int4", "gptq int8": "gptq-int8", "w8a16": "gptq-int8", "int8": "int8-w8a8", "w8a8": "int8-w8a8",
    "w8a8 int8": "int8-w8a8", "fp8": "fp8", "w8a8 fp8": "fp8", "fp8 dynamic": "fp8", "mxfp4": "mxfp4",
    "nvfp4": "nvfp4", "modelopt fp4": "nvfp4", "bitsandbytes": "nf4", "bnb": "nf4", "bnb 4bit": "nf4",
    "q4 k m": "!vLLM and SGLang are sized here with their own formats (AWQ/GPTQ INT4 for 4-bit); "
              "GGUF formats such as Q4_K_M are llama.cpp's",
}
RUNTIME_FORMAT_SPELLINGS: dict[str, dict[str, str]] = {
    "llama.cpp": {"mxfp4": "mxfp4-moe-gguf", "mxfp4 moe": "mxfp4-moe-gguf", "fp8": _LLAMA_CPP_NO_FP8,
                  "fp8 e4m3": _LLAMA_CPP_NO_FP8, "float8": _LLAMA_CPP_NO_FP8, "w8a8": _LLAMA_CPP_NO_FP8,
                  "int8": "q8_0", "8bit": "q8_0", "8 bit": "q8_0", "q8": "q8_0", "4bit": "q4_k_m", "4 bit": "q4_k_m",
                  "q4": "q4_k_m", "awq": _LLAMA_CPP_NO_INT4, "gptq": _LLAMA_CPP_NO_INT4, "int4": _LLAMA_CPP_NO_INT4,
                  "w4a16": _LLAMA_CPP_NO_INT4,
                  "nvfp4": "!the catalog has no GGUF NVFP4 format; MXFP4_MOE is llama.cpp's 4-bit float format "
                           "(MoE experts), Q4_K_M its common 4-bit format"},
    "vllm": _VLLM_SPELLINGS,
    "sglang": _VLLM_SPELLINGS,
    "mlx": {"4bit": "mlx-4bit", "4 bit": "mlx-4bit", "q4": "mlx-4bit", "int4": "mlx-4bit",
            "8bit": "mlx-8bit", "8 bit": "mlx-8bit", "q8": "mlx-8bit", "int8": "mlx-8bit",
            "fp8": "!MLX has no FP8 weights; its 8-bit format is 8-bit affine (8bit)",
            "q4 k m": "!MLX loads its own formats here, not GGUF: 4bit is its 4-bit format",
            "awq": "!MLX has no AWQ weights: 4bit is its 4-bit format",
            "gptq": "!MLX has no GPTQ weights: 4bit is its 4-bit format"},
    "tensorrt-llm": {"fp8": "fp8", "nvfp4": "nvfp4", "int4 awq": "awq-int4", "w4a16 awq": "awq-int4",
                     "awq": "awq-int4", "int4 wo": "awq-int4", "int8 sq": "int8-w8a8", "int8 wo": "gptq-int8",
                     "w4a8 awq": "!the catalog has no W4A8 AWQ format; int4_awq (W4A16) is the nearest"},
}
WORKLOAD_FIELDS = {"batch": "batch", "prompt": "prompt_tokens", "output": "output_tokens", "depth": "depth_tokens",
                   "prompt_tokens": "prompt_tokens", "output_tokens": "output_tokens", "depth_tokens": "depth_tokens"}


@dataclass(frozen=True)
class Defaults:
    runtime: Runtime
    quant: Quant
    kv_dtype: KvDtype


def default_runtime_key(hw: Hardware) -> str:
    """The runtime people most often use on this hardware."""
    if hw.kind == "dataflow":
        return "dataflow"  # the vendors' own stacks: nothing else runs on these machines
    if hw.vendor == "Google":
        return "vllm-tpu"  # Google's own serving recipes run vLLM's TPU backend
    if hw.vendor == "AWS":
        return "vllm-neuron"  # the path AWS's Neuron docs recommend
    if hw.kind == "datacenter" and hw.vendor in ("NVIDIA", "AMD", "Intel"):
        return "vllm"  # Intel: Gaudi and the Data Center GPU Max/Flex serve through vLLM's HPU/XPU builds
    return "llama.cpp"


#: Where the usual runtime does not run on this generation (vLLM on a Pascal P40, llama.cpp on
#: Gaudi), the first of these that does (the support matrix, advisor.model.compat).
FALLBACK_RUNTIMES = ("llama.cpp", "vllm", "sglang", "tensorrt-llm", "mlx", "llama.cpp-vulkan")


def default_runtime(cat: "Catalog", hw: Hardware) -> Runtime:
    """The runtime people most often use on this hardware, among those that run on it."""
    for key in (default_runtime_key(hw),) + FALLBACK_RUNTIMES + tuple(cat.runtimes):
        rt = cat.runtimes.get(key)
        if rt is not None and not rt.historic and runtime_refusal(hw, rt) is None:
            return rt
    return cat.runtimes[default_runtime_key(hw)]  # none runs here: Config.check says why


def native_quant_key(model: Model, runtime: Runtime) -> str | None:
    """The catalog key of the model's published quantized format in this runtime's terms (llama.cpp
    loads gpt-oss's MXFP4 as its MXFP4_MOE GGUF), or None for a model published in 16 bits."""
    if not model.native_quant:
        return None
    spelled = RUNTIME_FORMAT_SPELLINGS.get(runtime.format_family, {}).get(model.native_quant, "")
    return spelled if spelled and not spelled.startswith("!") else model.native_quant


def default_quant_key(runtime: Runtime) -> str:
    return DEFAULT_GGUF_QUANT if "gguf" in runtime.quant_kinds else DEFAULT_QUANT


def with_defaults(cat: "Catalog", hardware: Hardware, model: Model, runtime: Runtime | None = None) -> Defaults:
    """The runtime, weight format and KV dtype a new sizing of ``model`` on ``hardware`` starts from."""
    rt = runtime or default_runtime(cat, hardware)
    # a model published quantized (gpt-oss in MXFP4, DeepSeek-V3 in FP8) starts from that checkpoint:
    # upcasting it costs memory and buys no quality
    native = cat.quants.get(native_quant_key(model, rt) or "")
    q = native if native is not None and not format_refusal(hardware, rt, native, model) else \
        cat.quants.get(default_quant_key(rt))
    if q is None or format_refusal(hardware, rt, q, model):
        # the preferred format is not loadable here (BF16 before Ampere): the best-quality one that is
        q = next((x for x in sorted(cat.quants.values(), key=lambda x: -x.quality_rank)
                  if not format_refusal(hardware, rt, x, model)), None)
        if q is None:
            # say why for the format it would have started from (a model rule names what is missing)
            why = format_refusal(hardware, rt, native or cat.quants[DEFAULT_QUANT], model)
            raise AdvisorError(f"{rt.name} can load no weight format in the catalog for {model.name}"
                               + (f": {why}" if why else ""))
    return Defaults(rt, q, cat.kv_dtypes[DEFAULT_KV])


@dataclass(frozen=True)
class Config:
    """Everything one prediction needs besides the catalog's efficiency profiles."""

    hardware: Hardware
    model: Model
    quant: Quant
    kv_dtype: KvDtype
    runtime: Runtime
    gpus: int = 1
    #: "tp" or "pp"; empty = the runtime's default
    parallelism: str = ""
    workload: Workload = field(default_factory=Workload)
    #: a layout past one tensor-parallel group (pipeline stages, attention DP, EP); None = the split
    layout: Layout | None = None
    #: the network between nodes (a key of NETWORKS_GBIT_S); empty = the hardware's reference system's
    network: str = ""

    @property
    def split(self) -> str:
        """The multi-GPU split in force: "tp" (tensor parallel) or "pp" (layer split)."""
        return self.parallelism or self.runtime.parallelism

    def replace(self, **changes: Any) -> "Config":
        """A copy with some inputs changed; workload fields (batch, prompt, output, depth) may be named directly."""
        wl = {WORKLOAD_FIELDS[k]: changes.pop(k) for k in list(changes) if k in WORKLOAD_FIELDS}
        if wl:
            changes["workload"] = dataclasses.replace(changes.get("workload", self.workload), **wl)
        return dataclasses.replace(self, **changes)

    def check(self, check_context: bool = True) -> None:
        """Raise `AdvisorError` for a workload no model has or a combination no runtime runs.
        A context beyond the model's native one is allowed up to `context_limit` (RoPE scaling)."""
        self.workload.check(None)
        if check_context:
            why = context_refusal(self.model, self.workload.context_tokens, self.workload)
            if why:
                raise AdvisorError(why)
        why = refusal(self.hardware, self.model, self.quant, self.kv_dtype, self.runtime, self.gpus) \
            if self.gpus <= max_gpus(self.hardware) or refusal(self.hardware, self.model, self.quant, self.kv_dtype,
                                                               self.runtime, 1) \
            else gpus_refusal(self.hardware, self.gpus, self.runtime, self.network or None)
        if why:
            raise AdvisorError(why)
        if self.network and self.hardware.kind not in CLUSTER_KINDS:
            raise AdvisorError(f"--network: {self.hardware.name} is not a server GPU that goes in clusters; "
                               "a network between nodes applies to datacenter GPUs")
        if self.layout is not None:
            self.layout.check(self.model.experts or 0)
            if self.layout.gpus != self.gpus:
                raise AdvisorError(f"the layout {self.layout.text()} uses {self.layout.gpus} GPUs, not {self.gpus}")
            if self.runtime.parallelism != "tp" and self.layout.gpus > 1:
                raise AdvisorError(f"{self.runtime.name} splits GPUs by layers only; a layout needs vLLM, SGLang "
                                   "or TensorRT-LLM")
            if self.layout.ep > 1 and not self.runtime.expert_parallel:
                raise AdvisorError(f"{self.runtime.name} has no expert parallel")
        if self.split not in ("tp", "pp"):
            raise AdvisorError(f"parallelism must be tp or pp, got {self.split!r}")
        if self.split == "tp":
            why = tp_refusal(self.model, self.runtime, self.layout.tp if self.layout is not None else self.gpus)
            if why:
                raise AdvisorError(why)

    def keys(self) -> dict[str, Any]:
        """The inputs as catalog keys and numbers: what a saved sizing file holds."""
        w = self.workload
        return {"hardware": self.hardware.key, "model": self.model.key, "quant": self.quant.key,
                "kv_dtype": self.kv_dtype.key, "runtime": self.runtime.key, "gpus": self.gpus,
                "parallelism": self.parallelism, "batch": w.batch, "prompt": w.prompt_tokens,
                "output": w.output_tokens, "depth": w.depth_tokens,
                "layout": self.layout.key() if self.layout is not None else "", "network": self.network}


def context_limit(model: Model) -> int:
    """The longest context predicted for ``model``: `ROPE_SCALING_MAX_FACTOR` × its native context
    (the catalog holds no published YaRN maximum per model; 4× is YaRN's usual factor, e.g. Qwen's
    32k → 128k with factor 4)."""
    return ROPE_SCALING_MAX_FACTOR * int(model.native_context)


def context_refusal(model: Model, context_tokens: int, workload: Workload | None = None) -> str | None:
    """Why a context of ``context_tokens`` is refused for ``model`` (beyond `context_limit`), or None."""
    if context_tokens <= context_limit(model):
        return None
    parts = (f" (depth {workload.depth_tokens:,} + prompt {workload.prompt_tokens:,} + output "
             f"{workload.output_tokens:,})") if workload is not None else ""
    return (f"context of {context_tokens:,} tokens{parts} exceeds {ROPE_SCALING_MAX_FACTOR}× {model.name}'s native "
            f"context of {model.native_context:,} ({context_limit(model):,}), the most predicted with RoPE scaling")


def context_note(model: Model, context_tokens: int) -> str | None:
    """The warning for a context beyond the native one (predicted, but not as trained), or None."""
    if context_tokens <= model.native_context:
        return None
    return (f"context {context_tokens:,} is beyond {model.name}'s native {model.native_context:,} tokens: it needs "
            f"RoPE scaling (YaRN; {context_tokens / model.native_context:.1f}× the native context) and may lose quality")


def quant_for(cat: "Catalog", text: str, runtime: Runtime) -> Quant:
    """The weight format ``text`` means on ``runtime``: the runtime's own spelling first
    (`RUNTIME_FORMAT_SPELLINGS`), then the catalog's names; `AdvisorError` for a format it lacks."""
    from advisor.data.names import normalise

    table = {normalise(k): v for k, v in RUNTIME_FORMAT_SPELLINGS.get(runtime.format_family, {}).items()}
    hit = table.get(normalise(text))
    if hit is None:
        return cat.quant_named(text)
    if hit.startswith("!"):
        raise AdvisorError(f"--quant {text}: {hit[1:]}")
    return cat.quants[hit]


def memory_size(value) -> float | None:
    """A memory size in GB from what a user typed ("64", "64GB", 36.0); None when empty."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return None
    text = str(value).strip().lower().removesuffix("gib").removesuffix("gb").strip()
    try:
        size = float(text)
    except ValueError:
        raise AdvisorError(f"--memory-gb must be a size in GB such as 64, got {value!r}") from None
    if not (size > 0 and size < 1e6):
        raise AdvisorError(f"--memory-gb must be a positive size in GB, got {value!r}")
    return size


def whole_number(name: str, value, default: int) -> int:
    """An integer from what a user typed ("1_000", "2,048", 4.0); `AdvisorError` otherwise."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return default
    if isinstance(value, bool):
        raise AdvisorError(f"{name} must be a whole number, got {value!r}")
    if isinstance(value, int):
        return value
    text = str(value).strip()
    if "," in text and not re.fullmatch(r"[+-]?\d{1,3}(,\d{3})+(\.0*)?", text):
        # thousands separators only where they group thousands: "2,048" is 2048, "1,2" is not 12
        raise AdvisorError(f"{name} must be a whole number, got {value!r}")
    text = text.replace("_", "").replace(",", "")
    try:
        f = float(text)
    except ValueError:
        raise AdvisorError(f"{name} must be a whole number, got {value!r}") from None
    if f != f or f in (float("inf"), float("-inf")) or f != int(f):
        raise AdvisorError(f"{name} must be a whole number, got {value!r}")
    return int(f)


def parallelism_key(text: str | None) -> str:
    if not text:
        return ""
    par = PARALLELISM_WORDS.get(str(text).strip().lower())
    if par is None:
        raise AdvisorError(f"parallelism must be tp or pp, got {text!r}")
    return par


def configure(cat: "Catalog", *, hardware: str, model: str, quant: str | None = None, kv_dtype: str | None = None,
              runtime: str | None = None, gpus=None, batch=None, prompt=None, output=None, depth=None,
              parallelism: str | None = None, memory_gb=None, threads=None, layout: str | None = None,
              network: str | None = None) -> Config:
    """Resolve names (forgivingly) and fill defaults; raise `AdvisorError` on anything wrong.
    ``memory_gb``: one of the memory sizes the hardware ships in (else the name's, else its default);
    ``threads``: the CPU threads of CPU inference (CPU entries only; default: every core);
    ``quant`` is read in the runtime's own spelling first (`quant_for`)."""
    if not hardware or not str(hardware).strip():
        raise AdvisorError("no hardware given (--hardware)")
    if not model or not str(model).strip():
        raise AdvisorError("no model given (--model)")
    hw = cat.hardware_named(hardware, memory_size(memory_gb))
    if threads is not None and not (isinstance(threads, str) and not threads.strip()):
        hw = with_threads(hw, whole_number("--threads", threads, 0))
    m = cat.model_named(model)
    rt = cat.runtime_named(runtime) if runtime else None
    own = None if quant else cat.imported_quant(m)  # an imported model: its own weight format (a GGUF file's mix)
    if own is not None and format_refusal(hw, rt or default_runtime(cat, hw), own, m):
        if own.kind == "gguf" and rt is None and "llama.cpp" in cat.runtimes:
            rt = cat.runtimes["llama.cpp"]
        else:
            own = None
    d = with_defaults(cat, hw, m, rt)
    q = quant_for(cat, quant, d.runtime) if quant else (own or d.quant)
    kv = cat.kv_dtype_named(kv_dtype) if kv_dtype else d.kv_dtype
    wl = Workload(batch=whole_number("batch", batch, 1), prompt_tokens=whole_number("prompt", prompt, DEFAULT_PROMPT),
                  output_tokens=whole_number("output", output, DEFAULT_OUTPUT), depth_tokens=whole_number("depth", depth, 0))
    n = whole_number("gpus", gpus, 1)
    lay = None
    if layout is not None and str(layout).strip():
        lay = parse_layout(layout, None, m.experts or 0)
        if gpus is None or (isinstance(gpus, str) and not gpus.strip()):
            n = lay.gpus     # --layout alone says how many
        elif lay.gpus != n:
            raise AdvisorError(f"--layout {layout} uses {lay.gpus} GPUs (TP × PP × DP), not the {n} of --gpus")
    if network and str(network).strip() and str(network).strip() not in NETWORKS_GBIT_S:
        raise AdvisorError(f"unknown network {network!r}: one of {', '.join(NETWORKS_GBIT_S)}")
    return Config(hw, m, q, kv, d.runtime, n, parallelism_key(parallelism), wl, lay, (network or "").strip())
