"""From names the user typed to a resolved configuration and its prediction.

The CLI, the `--cases` CSV path and the desktop app all go through `scenario_from_names`, so
that defaults (runtime for the hardware, quantization for the runtime) are chosen in one place.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.data.catalog import Catalog
from advisor.data.errors import AdvisorError
from advisor.model.roofline import Prediction, Workload, default_quant_key, default_runtime_key, predict
from advisor.data.specs import Hardware, KvDtype, Model, Quant, Runtime

DEFAULT_PROMPT = 512
DEFAULT_OUTPUT = 128
DEFAULT_KV = "f16"


@dataclass(frozen=True)
class Scenario:
    hardware: Hardware
    model: Model
    quant: Quant
    kv_dtype: KvDtype
    runtime: Runtime
    gpus: int
    workload: Workload
    parallelism: str | None = None

    def predict(self, cat: Catalog) -> Prediction:
        return predict(self.hardware, self.model, self.quant, self.runtime, self.workload, self.kv_dtype,
                       self.gpus, cat.profiles, self.parallelism)


def _int(name: str, value, default: int) -> int:
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
    if f != int(f):
        raise AdvisorError(f"{name} must be a whole number, got {value!r}")
    return int(f)


def scenario_from_names(cat: Catalog, *, hardware: str, model: str, quant: str | None = None,
                        kv_dtype: str | None = None, runtime: str | None = None, gpus=None, batch=None,
                        prompt=None, output=None, depth=None, parallelism: str | None = None) -> Scenario:
    """Resolve names (forgivingly) and fill defaults; raise `AdvisorError` on anything wrong."""
    if not hardware or not str(hardware).strip():
        raise AdvisorError("no hardware given (--hardware)")
    if not model or not str(model).strip():
        raise AdvisorError("no model given (--model)")
    hw = cat.hardware_named(hardware)
    m = cat.model_named(model)
    rt = cat.runtime_named(runtime) if runtime else cat.runtimes[default_runtime_key(hw)]
    q = cat.quant_named(quant) if quant else cat.quants[default_quant_key(rt)]
    kv = cat.kv_dtype_named(kv_dtype) if kv_dtype else cat.kv_dtypes[DEFAULT_KV]
    wl = Workload(batch=_int("batch", batch, 1), prompt_tokens=_int("prompt", prompt, DEFAULT_PROMPT),
                  output_tokens=_int("output", output, DEFAULT_OUTPUT), depth_tokens=_int("depth", depth, 0))
    par = None
    if parallelism:
        par = {"tp": "tp", "tensor": "tp", "pp": "pp", "pipeline": "pp", "layer": "pp"}.get(parallelism.lower())
        if par is None:
            raise AdvisorError(f"parallelism must be tp or pp, got {parallelism!r}")
    return Scenario(hw, m, q, kv, rt, _int("gpus", gpus, 1), wl, par)
