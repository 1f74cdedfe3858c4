"""One configuration to predict: resolved catalog entries, GPU count and split, and the workload.

The CLI, the `--cases` CSV path, the desktop app and the report all build a `Config` through
`configure` (from names the user typed) or `Config.replace` (one input changed), so that the
defaults — runtime for the hardware, weight format for the runtime — are chosen in one place
(`with_defaults`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from advisor.data.errors import AdvisorError
from advisor.data.specs import Hardware, KvDtype, Model, Quant, Runtime
from advisor.model.compat import format_refusal, refusal, runtime_refusal
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
    if hw.kind == "datacenter" and hw.vendor in ("NVIDIA", "AMD"):
        return "vllm"
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


def default_quant_key(runtime: Runtime) -> str:
    return DEFAULT_GGUF_QUANT if "gguf" in runtime.quant_kinds else DEFAULT_QUANT


def with_defaults(cat: "Catalog", hardware: Hardware, model: Model, runtime: Runtime | None = None) -> Defaults:
    """The runtime, weight format and KV dtype a new sizing of ``model`` on ``hardware`` starts from."""
    rt = runtime or default_runtime(cat, hardware)
    q = cat.quants.get(default_quant_key(rt))
    if q is None or format_refusal(hardware, rt, q, model):
        # the preferred format is not loadable here (BF16 before Ampere): the best-quality one that is
        q = next((x for x in sorted(cat.quants.values(), key=lambda x: -x.quality_rank)
                  if not format_refusal(hardware, rt, x, model)), None)
        if q is None:
            raise AdvisorError(f"{rt.name} can load no weight format in the catalog for {model.name}")
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
        """Raise `AdvisorError` for a workload no model has or a combination no runtime runs."""
        self.workload.check(self.model if check_context else None)
        why = refusal(self.hardware, self.model, self.quant, self.kv_dtype, self.runtime, self.gpus)
        if why:
            raise AdvisorError(why)
        if self.split not in ("tp", "pp"):
            raise AdvisorError(f"parallelism must be tp or pp, got {self.split!r}")

    def keys(self) -> dict[str, Any]:
        """The inputs as catalog keys and numbers: what a saved sizing file holds."""
        w = self.workload
        return {"hardware": self.hardware.key, "model": self.model.key, "quant": self.quant.key,
                "kv_dtype": self.kv_dtype.key, "runtime": self.runtime.key, "gpus": self.gpus,
                "parallelism": self.parallelism, "batch": w.batch, "prompt": w.prompt_tokens,
                "output": w.output_tokens, "depth": w.depth_tokens}


def whole_number(name: str, value, default: int) -> int:
    """An integer from what a user typed ("1_000", "2,048", 4.0); `AdvisorError` otherwise."""
    if value is None or (isinstance(value, str) and not value.strip()):
        return default
    if isinstance(value, bool):
        raise AdvisorError(f"{name} must be a whole number, got {value!r}")
    if isinstance(value, int):
        return value
    text = str(value).strip().replace("_", "").replace(",", "")
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
              parallelism: str | None = None) -> Config:
    """Resolve names (forgivingly) and fill defaults; raise `AdvisorError` on anything wrong."""
    if not hardware or not str(hardware).strip():
        raise AdvisorError("no hardware given (--hardware)")
    if not model or not str(model).strip():
        raise AdvisorError("no model given (--model)")
    hw = cat.hardware_named(hardware)
    m = cat.model_named(model)
    rt = cat.runtime_named(runtime) if runtime else None
    own = None if quant else cat.imported_quant(m)  # an imported model: its own weight format (a GGUF file's mix)
    if own is not None and format_refusal(hw, rt or default_runtime(cat, hw), own, m):
        if own.kind == "gguf" and rt is None and "llama.cpp" in cat.runtimes:
            rt = cat.runtimes["llama.cpp"]
        else:
            own = None
    d = with_defaults(cat, hw, m, rt)
    q = cat.quant_named(quant) if quant else (own or d.quant)
    kv = cat.kv_dtype_named(kv_dtype) if kv_dtype else d.kv_dtype
    wl = Workload(batch=whole_number("batch", batch, 1), prompt_tokens=whole_number("prompt", prompt, DEFAULT_PROMPT),
                  output_tokens=whole_number("output", output, DEFAULT_OUTPUT), depth_tokens=whole_number("depth", depth, 0))
    return Config(hw, m, q, kv, d.runtime, whole_number("gpus", gpus, 1), parallelism_key(parallelism), wl)
