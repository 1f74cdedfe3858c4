"""Will it run? For given hardware, what each model runs as — the answer a hobbyist asks first.

The same rules as `recommend`: a quality floor (the 4-bit class by default; the model's own release
format always passes), no upcast of a natively quantized model (gpt-oss in MXFP4 is never offered
as BF16), and only what the runtime can load on this hardware generation. For each model the best
way to run it:

- **all on the GPU**: the best weights that fit at the context, at a speed that is usable;
- **experts in system RAM** (MoE models, llama.cpp ``--n-cpu-moe``): attention, shared experts and
  the KV cache on the GPU, the routed experts of some layers in host memory, read by the CPU;
- **partial offload** (dense models, llama.cpp ``-ngl``; vLLM/SGLang ``--cpu-offload-gb``): some
  layers on the CPU.

Each row carries the system RAM its offloaded weights need (checked against ``host_ram_gb`` when it
is known), its decode speed and a grade: "fast" (≥ 3 × the usable speed), "usable" (≥ ``min_tok_s``)
or "too slow". Models that run usably come first, most capable (most parameters) first.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from advisor.data.catalog import Catalog
from advisor.data.errors import AdvisorError
from advisor.data.specs import Hardware, Model, Quant, Runtime
from advisor.model.compat import gpus_refusal, runtime_refusal, tp_refusal
from advisor.model.config import Config, with_defaults
from advisor.model.roofline import Workload
from advisor.model.sweep import sweep
from advisor.model.techniques import moe_offload_curve, offload_curve
from advisor.plan.recommend import DEFAULT_MIN_TOK_S, is_reference, is_upcast, native_bits

#: The output a context is split into when sizing a single user (the rest is the prompt).
OUTPUT_TOKENS = 128
#: "fast": this many times the usable speed.
FAST_FACTOR = 3.0
#: The 4-bit class floor, as `recommend` (Q4_K_M, AWQ INT4, NVFP4, MXFP4 …); the native format passes.
DEFAULT_MIN_BITS = 4
#: The share of system RAM offloaded weights may take: the OS and other programs keep the rest
#: (an assumption, stated where the answer depends on it).
HOST_RAM_SHARE = 0.85
MODES = {"gpu": "all on the GPU", "experts": "experts in system RAM", "offload": "partial offload"}
GRADES = ("fast", "usable", "too slow", "needs more RAM", "does not fit")


@dataclass(frozen=True)
class FitRow:
    model: Model
    quant: Quant | None          # None: nothing runs (no format fits, even with offload)
    fits: bool                   # runs in ``mode``
    weights_gb: float            # all GPUs together (the whole model, wherever it sits)
    decode_tok_s: float
    max_context: int
    needs_gb: float              # per GPU: what the GPU holds in this mode (or, when nothing fits, the smallest)
    mode: str = "gpu"            # gpu | experts | offload | "" (none)
    host_ram_gb: float = 0.0     # system RAM the offloaded weights take
    grade: str = ""              # one of GRADES
    how: str = ""                # the runtime's flag for the mode ("--n-cpu-moe 24", "-ngl 40")

    @property
    def runs_usably(self) -> bool:
        return self.grade in ("fast", "usable")


@dataclass(frozen=True)
class WillItRun:
    hardware: Hardware
    runtime: Runtime
    gpus: int
    context_tokens: int
    rows: tuple[FitRow, ...]
    #: True: one row per model (its best way to run); False: one model, one row per format
    per_model: bool
    min_tok_s: float = DEFAULT_MIN_TOK_S
    min_bits: float = DEFAULT_MIN_BITS
    host_ram_gb: float | None = None
    #: models left out because the runtime cannot split them over this many GPUs (their heads)
    unsplit: tuple[str, ...] = ()

    @property
    def fast_tok_s(self) -> float:
        return FAST_FACTOR * self.min_tok_s


def bits_class(q: Quant) -> int:
    return q.bits_class or int(q.bits_per_weight)


def _allowed(q: Quant, m: Model, min_bits: float) -> bool:
    """Above the floor (or the release format) and not wider than the release: F32 of a BF16 model,
    like BF16 of an FP8 one, costs memory and adds nothing."""
    if is_upcast(q, m) or bits_class(q) > native_bits(m):
        return False
    return is_reference(q, m) or bits_class(q) >= min_bits


def _quality_key(q: Quant, m: Model) -> tuple:
    """Better weights first, on what is printed: the release format, the wider bit class, the
    smaller published KL divergence (an unmeasured format after a measured one of its class)."""
    from advisor.plan.recommend import is_reference

    return (not is_reference(q, m), -bits_class(q), q.kld if q.kld is not None else math.inf)


def grade(tok_s: float, min_tok_s: float) -> str:
    if not math.isfinite(tok_s) or tok_s < min_tok_s:
        return "too slow"
    return "fast" if tok_s >= FAST_FACTOR * min_tok_s else "usable"


def will_it_run(cat: Catalog, hardware: Hardware, runtime: Runtime | None = None, gpus: int = 1,
                context: int = 4096, model: Model | None = None, *, min_bits: float = DEFAULT_MIN_BITS,
                min_tok_s: float = DEFAULT_MIN_TOK_S, host_ram_gb: float | None = None,
                quant: Quant | None = None) -> WillItRun:
    """Rows for every catalog model (or every allowed format of ``model``): one user at ``context``
    tokens with an F16 KV cache, in the best mode that runs it. ``quant``: in that weight format
    only (a model the runtime cannot load in it is left out), whatever its bit class."""
    if runtime is None:
        runtime = with_defaults(cat, hardware, model or next(iter(cat.models.values()))).runtime
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1 or isinstance(context, bool) or context < 2:
        raise AdvisorError("--gpus must be ≥ 1 and --context ≥ 2")
    if not (0 < min_tok_s < 100_000):
        raise AdvisorError(f"--min-tok-s must be a positive speed, got {min_tok_s:g}")
    if not (1 <= min_bits <= 32):
        raise AdvisorError(f"--min-bits must be between 1 and 32, got {min_bits:g}")
    if host_ram_gb is not None and not (0 <= host_ram_gb < 100_000):
        raise AdvisorError(f"--host-ram-gb must be a size in GB, got {host_ram_gb:g}")
    why = runtime_refusal(hardware, runtime) or gpus_refusal(hardware, gpus)
    if why:
        raise AdvisorError(why)
    if cat.hardware.get(hardware.key) != hardware:
        cat = cat.with_hardware(hardware)   # a chosen memory size: the sweep reads the catalog's entry
    rows: list[FitRow] = []
    unsplit = []
    for m in ([model] if model else list(cat.models.values())):
        why = tp_refusal(m, runtime, gpus)
        if why:
            if model is not None:
                raise AdvisorError(why)
            unsplit.append(m.name)
            continue
        options = _options(cat, hardware, runtime, gpus, context, m, min_bits, min_tok_s, host_ram_gb,
                           every_format=model is not None, quant=quant)
        if model is not None:
            rows += options
        elif options:
            rows.append(options[0])
    if model is None:
        # what runs usably (fast or usable alike), most capable first; then too slow, then the rest
        order = {"fast": 0, "usable": 0, "too slow": 1, "needs more RAM": 2, "does not fit": 3}
        rows.sort(key=lambda r: (order.get(r.grade, 4), -r.model.params_total_b if r.runs_usably else 0,
                                 -(r.decode_tok_s if math.isfinite(r.decode_tok_s) else 0.0)))
    return WillItRun(hardware, runtime, gpus, context, tuple(rows), model is None, min_tok_s, min_bits, host_ram_gb,
                     tuple(unsplit))


def _options(cat, hw, rt, gpus, context, m: Model, min_bits, min_tok_s, host_ram_gb, every_format: bool,
             quant: Quant | None = None) -> list[FitRow]:
    """The ways to run ``m``, best first: every allowed format on the GPU (speed, context), and where
    none is usable there, the offload modes of the formats worth trying."""
    c = min(context, m.native_context)
    wl = Workload(batch=1, prompt_tokens=max(c - OUTPUT_TOKENS, 1), output_tokens=min(OUTPUT_TOKENS, c - 1))
    r = sweep(cat, m, wl, hardware=[hw.key], runtimes=[rt.key], quants=[quant.key] if quant is not None else None,
              kv_dtypes=("f16",), gpus=(gpus,))
    if len(r) == 0:
        return []
    v, t = r.values, r.tables
    if quant is not None:
        idx = [i for i in range(len(r)) if t.quants[r.q[i]].key == quant.key]
        if not idx:
            return []
    else:
        idx = [i for i in range(len(r)) if _allowed(t.quants[r.q[i]], m, min_bits)]
    if not idx:
        # the release's own format does not load in this runtime (Kimi K2 Thinking's INT4 experts
        # in llama.cpp): its bit class is the nearest the runtime has, not an upcast worth refusing
        idx = [i for i in range(len(r)) if min_bits <= bits_class(t.quants[r.q[i]]) <= native_bits(m)]
    if not idx:
        return []
    gpu: list[FitRow] = []
    for i in idx:
        q = t.quants[r.q[i]]
        fits = bool(v["fits"][i])
        tok = float(v["decode_tok_s"][i])
        gpu.append(FitRow(m, q, fits, float(v["weights_bytes"][i] / 1e9), tok if fits else math.nan,
                          int(v["max_context"][i]) if fits else 0,
                          float((v["weights_gpu_bytes"][i] + v["workspace_gpu_bytes"][i]) / 1e9),
                          "gpu" if fits else "", 0.0, grade(tok, min_tok_s) if fits else "does not fit"))
    gpu.sort(key=lambda row: _quality_key(row.quant, m))
    usable = [x for x in gpu if x.fits and x.runs_usably]
    fitting = [x for x in gpu if x.fits]
    # fast before merely usable, then the best weights; nothing usable: the fastest that fits
    best_gpu = sorted(usable, key=lambda x: x.grade != "fast")[:1] or sorted(fitting, key=lambda x: -x.decode_tok_s)[:1]
    offloaded: list[FitRow] = []
    if (every_format or not usable) and gpus == 1 and not (hw.unified_memory or hw.kind in ("apple", "soc", "cpu")):
        # the formats worth moving partly off the GPU: all of them for one model, else the best
        # few that do not fit (the release format, each bit class's best)
        tries = [x for x in gpu if not x.fits] if every_format else _worth_trying([x for x in gpu if not x.fits], m)
        for x in tries:
            row = _offload(cat, hw, rt, m, x, wl, c, min_tok_s, host_ram_gb)
            if row is not None:
                offloaded.append(row)
    if every_format:
        by_quant = {x.quant.key: x for x in offloaded}
        out = [by_quant.get(x.quant.key, x) for x in gpu]
        return sorted(out, key=lambda x: (GRADES.index(x.grade) if x.grade in GRADES else 9, _quality_key(x.quant, m)))
    # usable: on the GPU before offloaded, then the best weights; not usable: what fits the RAM, fastest first
    # (with the system RAM unknown, the offload that needs the least of it: the answer must not
    # assume a workstation's RAM)
    usable = [x for x in best_gpu + offloaded if x.runs_usably]
    ranked = sorted(usable, key=lambda x: (x.mode != "gpu", x.host_ram_gb if host_ram_gb is None else 0.0,
                                           x.grade != "fast", _quality_key(x.quant, m))) or \
        sorted(best_gpu + offloaded, key=lambda x: (x.grade == "needs more RAM", -x.decode_tok_s))
    if ranked:
        return ranked[:1]
    small = min(gpu, key=lambda x: x.needs_gb)
    return [FitRow(m, None, False, small.weights_gb, math.nan, 0, small.needs_gb, "", 0.0, "does not fit")]


def _worth_trying(rows: list[FitRow], m: Model) -> list[FitRow]:
    """The best format of each bit class (the release format among them): one offload curve each."""
    seen, out = set(), []
    for x in rows:
        cls = bits_class(x.quant)
        if cls in seen:
            continue
        seen.add(cls)
        out.append(x)
    return out


def _offload(cat, hw, rt, m: Model, x: FitRow, wl: Workload, context: int, min_tok_s, host_ram_gb) -> FitRow | None:
    """``x``'s format with the fewest weights off the GPU that fits: the experts of some layers in
    system RAM (llama.cpp --n-cpu-moe) for MoE models, else layers on the CPU (-ngl) or weights read
    over PCIe (--cpu-offload-gb)."""
    cfg = Config(hw, m, x.quant, cat.kv_dtypes["f16"], rt, 1, "", wl)
    try:
        if m.is_moe and rt.partial_offload == "layers":
            curve = moe_offload_curve(cat, cfg)
            fit = [j for j in range(len(curve.fits)) if curve.fits[j]]
            if not fit:
                return None
            j = fit[0]
            n, total = int(curve.cpu_moe_layers[j]), int(curve.cpu_moe_layers[-1])
            mode, how = "experts", f"--n-cpu-moe {n} (the experts of {n} of {total} MoE layers in RAM)"
            host, tok, gpu_gb = float(curve.host_gb[j]), float(curve.decode_tok_s[j]), float(curve.memory_gb[j])
        elif rt.partial_offload:
            curve = offload_curve(cat, cfg)
            fit = [j for j in range(len(curve.fits)) if curve.fits[j]]
            if not fit:
                return None
            layers = rt.partial_offload == "layers"
            j = fit[-1] if layers else fit[0]
            how = (f"-ngl {int(curve.gpu_layers[j])} (of {int(curve.gpu_layers[-1])} layers on the GPU)" if layers
                   else f"--cpu-offload-gb {math.ceil(float(curve.host_gb[j]))}")
            mode, host, tok, gpu_gb = "offload", float(curve.host_gb[j]), float(curve.decode_tok_s[j]), float(curve.memory_gb[j])
        else:
            return None
    except AdvisorError:
        return None
    g = grade(tok, min_tok_s)
    if host_ram_gb is not None and host > host_ram_gb * HOST_RAM_SHARE:
        g = "needs more RAM"
    return FitRow(m, x.quant, True, x.weights_gb, tok, context, gpu_gb, mode, host, g, how)
