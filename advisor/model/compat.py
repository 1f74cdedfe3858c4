"""Which runtime can run what: the one place the compatibility rules live.

A combination is refused for a reason the user can read: the runtime does not run on this
vendor's hardware, cannot load this weight format or KV dtype, the format quantizes only the
experts of MoE models, or more GPUs are asked for than the hardware is used with. An empty list
in the catalog means "no restriction" everywhere (a runtime with no ``vendors`` runs on all).

The support matrix (runtime × hardware generation × weight format × KV dtype) is each runtime's
``support`` rules in catalog/runtimes.yaml: per vendor, the hardware families (generations) that
can run the runtime at all, a format, or a KV dtype (vLLM needs compute capability 7.0, FP8
weights on TensorRT-LLM need Ada or newer, NVFP4 needs Blackwell, llama.cpp has no Gaudi
backend). `hardware_refusal` reads them.

`predict` raises the first refusal as an error; the sweep builds its boolean grids from the same
functions; the recommender's launch lines and the default runtime and format
(`advisor.model.config.with_defaults`) use them too; the app greys out refused choices and shows
the reason on hover.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from advisor.data.specs import Hardware, KvDtype, Model, Quant, Runtime
from advisor.model.devices import CLUSTER_KINDS, NETWORKS_GBIT_S, domain_gpus, max_gpus, network_gb_s

if TYPE_CHECKING:
    from advisor.data.catalog import Catalog


@dataclass(frozen=True)
class Choice:
    """One entry of a picker: can it be chosen, and if not, why not."""

    key: str
    name: str
    ok: bool
    reason: str = ""


def _family_words(family: str) -> str:
    return family.replace("-", " ")


def hardware_refusal(hw: Hardware, runtime: Runtime, quant: Quant | None = None,
                     kv: KvDtype | None = None) -> str | None:
    """The support matrix: why ``runtime`` cannot run on ``hw``'s generation at all (no ``quant``
    or ``kv``), or cannot run ``quant`` weights or a ``kv`` cache there; None if it can."""
    for rule in runtime.support:
        if rule.vendor != hw.vendor or hw.family in rule.families:
            continue
        if rule.quants:
            if quant is not None and quant.key in rule.quants:
                return (f"{runtime.name} cannot run {quant.name} weights on {hw.name} "
                        f"({_family_words(hw.family)}): {rule.reason}")
        elif rule.kv_dtypes:
            if kv is not None and kv.key in rule.kv_dtypes:
                return (f"{runtime.name} has no {kv.name} KV cache on {hw.name} "
                        f"({_family_words(hw.family)}): {rule.reason}")
        elif quant is None and kv is None:
            return f"{runtime.name} does not run on {hw.name} ({_family_words(hw.family)}): {rule.reason}"
    return None


def _scoped_to(rule, hw: Hardware | None) -> bool:
    """Whether a `ModelSupport` rule applies on ``hw``: every part, or its vendor's listed families."""
    return not rule.vendor or (hw is not None and hw.vendor == rule.vendor
                               and (not rule.families or hw.family in rule.families))


def model_refusal(hw: Hardware | None, runtime: Runtime, quant: Quant, model: Model | None) -> str | None:
    """The model × format axis: why ``runtime`` cannot run ``model`` in ``quant`` weights (on ``hw``'s
    generation, for rules scoped to one), or None. TensorRT-LLM's support matrix lists formats per
    architecture (no AWQ for DeepSeek-V3/R1); SGLang's NVFP4 on CDNA3 has dense kernels only."""
    if model is None:
        return None
    arch = model.architecture
    for rule in runtime.model_support:
        if rule.kv_dtypes:   # a rule about the cache (`model_cache_refusal`)
            continue
        if rule.quants and quant.key not in rule.quants:
            continue
        if not _scoped_to(rule, hw):
            continue
        what = f"{quant.name} weights of {model.name}" if rule.quants else model.name
        if rule.dense_only and model.is_moe:
            return f"{runtime.name} cannot run {what} (a mixture of experts): {rule.reason}"
        if arch and ((rule.architectures and arch not in rule.architectures) or arch in rule.excluded):
            return f"{runtime.name} cannot run {what} ({arch}): {rule.reason}"
    return None


def model_cache_refusal(hw: Hardware | None, runtime: Runtime, kv: KvDtype, model: Model | None) -> str | None:
    """The model × KV-cache axis: why ``runtime`` has no ``kv`` cache for ``model`` (on ``hw``'s
    generation, for rules scoped to one), or None. vLLM decodes a latent attention before Hopper with
    one Triton kernel whose FP8 cache Triton cannot run there."""
    if model is None:
        return None
    for rule in runtime.model_support:
        if not rule.kv_dtypes or kv.key not in rule.kv_dtypes:
            continue
        if not _scoped_to(rule, hw):
            continue
        if rule.latent_attention and not model.kv_lora_rank:
            continue
        return f"{runtime.name} has no {kv.name} KV cache for {model.name}: {rule.reason}"
    return None


def refuses_format_key(hw: Hardware, runtime: Runtime, quant_key: str) -> bool:
    """True where a support rule keeps ``runtime`` from running format ``quant_key`` on ``hw``
    (the launch lines ask for FP16 where BF16 is refused: --dtype half)."""
    return any(rule.vendor == hw.vendor and quant_key in rule.quants and hw.family not in rule.families
               for rule in runtime.support)


def runtime_refusal(hw: Hardware, runtime: Runtime) -> str | None:
    if runtime.vendors and hw.vendor not in runtime.vendors:
        return (f"{runtime.name} does not run on {hw.vendor} hardware ({hw.name}); "
                f"it supports {', '.join(runtime.vendors)}")
    return hardware_refusal(hw, runtime)


def format_refusal(hw: Hardware, runtime: Runtime, quant: Quant, model: Model | None = None) -> str | None:
    """Why ``runtime`` cannot load ``quant`` weights (of ``model``) on ``hw``; None if it can."""
    return (quant_refusal(runtime, quant, model) or hardware_refusal(hw, runtime, quant=quant)
            or model_refusal(hw, runtime, quant, model))


def cache_refusal(hw: Hardware, runtime: Runtime, kv: KvDtype) -> str | None:
    """Why ``runtime`` has no ``kv`` cache on ``hw``; None if it has."""
    return kv_refusal(runtime, kv) or hardware_refusal(hw, runtime, kv=kv)


def quant_refusal(runtime: Runtime, quant: Quant, model: Model | None = None) -> str | None:
    if model is not None and quant.non_expert_bits_per_weight is not None and not model.is_moe:
        return f"{quant.name} quantizes only the experts of MoE models; {model.name} is dense"
    if quant.runtimes and runtime.format_family not in quant.runtimes:
        return f"{runtime.name} cannot load {quant.name} weights; runtimes that can: {', '.join(quant.runtimes)}"
    if runtime.quant_kinds and quant.kind not in runtime.quant_kinds:
        # a runtime that shares another's formats but not all of them (vLLM on Neuron: 16-bit only)
        return f"{runtime.name} cannot load {quant.name} weights; it loads {' and '.join(runtime.quant_kinds)} formats"
    return None


def kv_refusal(runtime: Runtime, kv: KvDtype) -> str | None:
    if kv.runtimes and runtime.format_family not in kv.runtimes:
        return f"{runtime.name} has no {kv.name} KV cache; runtimes that do: {', '.join(kv.runtimes)}"
    return None


#: The largest instance (one model copy) sized here: wide expert parallel runs to a few hundred GPUs.
MAX_INSTANCE_GPUS = 1024


def gpus_refusal(hw: Hardware, gpus, runtime: Runtime | None = None, network: str | None = None) -> str | None:
    """Why one instance of ``gpus`` × ``hw`` cannot be run (by ``runtime``, over ``network``), or None.
    Past one machine an instance needs server GPUs, a runtime that spans nodes, and a link between
    them: the scale-up domain (NVL72) or a network (the reference system's, or the one named)."""
    if not isinstance(gpus, (int, np.integer)) or isinstance(gpus, bool) or gpus < 1:
        return f"gpus must be a whole number of at least 1, got {gpus!r}"
    limit = max_gpus(hw)
    if gpus <= limit:
        return None
    asked = f"{gpus:,}" if gpus < 10**9 else f"{float(gpus):.3g}"
    if hw.kind not in CLUSTER_KINDS or runtime is None or gpus > MAX_INSTANCE_GPUS:
        return f"{hw.name} is used {limit} at a time at most here (asked for {asked} GPUs)"
    if not runtime.multi_node:
        return f"{runtime.name} runs on one machine ({limit} × {hw.name} at most); {asked} GPUs need a runtime " \
               f"that spans nodes (vLLM, SGLang, TensorRT-LLM)"
    if gpus > domain_gpus(hw) and not math.isfinite(network_gb_s(hw, network)):
        return f"{asked} × {hw.name} span nodes, and {hw.name}'s reference system states no network between " \
               f"them: name one with --network ({', '.join(NETWORKS_GBIT_S)})"
    return None


def tp_sizes(model: Model, runtime: Runtime, most: int = 8) -> list[int]:
    """The tensor-parallel sizes up to ``most`` that ``runtime`` can split ``model`` into."""
    return [t for t in range(1, most + 1) if tp_misfit(model, runtime, t) == ""]


def tp_misfit(model: Model, runtime: Runtime, tp: int) -> str:
    """What ``tp`` fails to divide ("heads", "kv"), or "" where ``runtime`` can split ``model`` so."""
    if tp <= 1 or not runtime.tp_shards:
        return ""
    if model.heads % tp:
        return "heads"
    kv = model.kv_heads
    if runtime.tp_shards == "heads+kv" and model.attention != "mla" and (kv % tp if tp < kv else tp % kv):
        return "kv"
    return ""


def tp_refusal(model: Model, runtime: Runtime, tp: int) -> str | None:
    """Why ``runtime`` cannot split ``model`` over a tensor-parallel group of ``tp`` GPUs, or None.
    Engines that shard attention by heads give each GPU whole query heads, and (vLLM, SGLang) whole
    KV heads or an equal number of copies of each (`Runtime.tp_shards`); MLA's latent cache is one
    copy per GPU whatever the split."""
    what = tp_misfit(model, runtime, tp)
    if not what:
        return None
    sizes = tp_sizes(model, runtime)
    fits = ", ".join(map(str, sizes[:-1])) + (" or " if len(sizes) > 1 else "") + str(sizes[-1])
    if what == "heads":
        why = f"its {model.heads} attention heads do not divide by {tp}"
    else:
        why = f"its {model.kv_heads} KV heads neither divide by {tp} nor divide {tp}"
    return f"{runtime.name} cannot split {model.name} over tensor parallel {tp}: {why} (TP {fits} can)"


def refusal(hw: Hardware, model: Model | None, quant: Quant, kv: KvDtype, runtime: Runtime, gpus) -> str | None:
    """The first reason this combination cannot run at all, or None."""
    if model is not None and quant.non_expert_bits_per_weight is not None and not model.is_moe:
        return quant_refusal(runtime, quant, model)
    return (runtime_refusal(hw, runtime) or format_refusal(hw, runtime, quant, model) or cache_refusal(hw, runtime, kv)
            or model_cache_refusal(hw, runtime, kv, model) or gpus_refusal(hw, gpus, runtime))


def runtimes_for(cat: "Catalog", hw: Hardware, include_historic: bool = True) -> list[Choice]:
    """Every runtime, marked with whether it runs on ``hw`` (historic builds last, if included)."""
    out = []
    for r in sorted(cat.runtimes.values(), key=lambda r: (r.historic, r.name)):
        if r.historic and not include_historic:
            continue
        why = runtime_refusal(hw, r)
        out.append(Choice(r.key, r.name, why is None, why or ("an old build, kept for comparison" if r.historic else "")))
    return out


def formats_for(cat: "Catalog", runtime: Runtime, model: Model | None = None,
                hardware: Hardware | None = None) -> list[Choice]:
    """Every weight format, best quality first, marked with whether ``runtime`` can run it for
    ``model`` (on ``hardware``'s generation, if given)."""
    out = []
    for q in sorted(cat.quants.values(), key=lambda q: (-q.quality_rank, q.bits_per_weight, q.name)):
        why = quant_refusal(runtime, q, model) or (hardware_refusal(hardware, runtime, quant=q) if hardware else None)
        out.append(Choice(q.key, q.name, why is None, why or ""))
    return out


def kv_dtypes_for(cat: "Catalog", runtime: Runtime, hardware: Hardware | None = None,
                  model: Model | None = None) -> list[Choice]:
    """Every KV-cache dtype, widest first, marked with whether ``runtime`` has it (on ``hardware``, and
    for ``model``, if given)."""
    out = []
    for k in sorted(cat.kv_dtypes.values(), key=lambda k: (-k.bits, k.name)):
        why = kv_refusal(runtime, k) or (hardware_refusal(hardware, runtime, kv=k) if hardware else None) \
            or model_cache_refusal(hardware, runtime, k, model)
        out.append(Choice(k.key, k.name, why is None, why or ""))
    return out


def grids(hardware, runtimes, quants, kv_dtypes) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Boolean tables (hardware × runtime, runtime × quant, runtime × KV) for the vectorised sweep."""
    ok_hw_rt = np.array([[runtime_refusal(h, r) is None for r in runtimes] for h in hardware], dtype=bool)
    ok_rt_q = np.array([[quant_refusal(r, x) is None for x in quants] for r in runtimes], dtype=bool)
    ok_rt_kv = np.array([[kv_refusal(r, x) is None for x in kv_dtypes] for r in runtimes], dtype=bool)
    return ok_hw_rt.reshape(len(hardware), len(runtimes)), ok_rt_q.reshape(len(runtimes), len(quants)), \
        ok_rt_kv.reshape(len(runtimes), len(kv_dtypes))


def generation_grids(hardware, runtimes, quants, kv_dtypes) -> tuple[np.ndarray, np.ndarray]:
    """The support matrix as boolean tables (hardware × runtime × quant, hardware × runtime × KV):
    True where the hardware's generation runs the format (the cache). Worked out once per
    (vendor, family), which is all a rule looks at."""
    groups: dict[tuple[str, str], int] = {}
    first = [groups.setdefault((h.vendor, h.family), i) for i, h in enumerate(hardware)]
    rows = sorted(set(first))
    q_ok = {i: [[hardware_refusal(hardware[i], r, quant=x) is None for x in quants] for r in runtimes] for i in rows}
    kv_ok = {i: [[hardware_refusal(hardware[i], r, kv=x) is None for x in kv_dtypes] for r in runtimes] for i in rows}
    ok_q = np.array([q_ok[i] for i in first], dtype=bool).reshape(len(hardware), len(runtimes), len(quants))
    ok_kv = np.array([kv_ok[i] for i in first], dtype=bool).reshape(len(hardware), len(runtimes), len(kv_dtypes))
    return ok_q, ok_kv


def _family_grid(hardware, runtimes, items, runs) -> np.ndarray:
    """(hardware × runtime × item) booleans from ``runs(hardware, runtime, item)``, asked once per
    hardware family (the rules are scoped to vendors and families, never to one part)."""
    groups: dict[tuple[str, str], int] = {}
    first = [groups.setdefault((h.vendor, h.family), i) for i, h in enumerate(hardware)]
    ok = {i: [[runs(hardware[i], r, x) for x in items] for r in runtimes] for i in set(first)}
    return np.array([ok[i] for i in first], dtype=bool).reshape(len(hardware), len(runtimes), len(items))


def model_grid(hardware, runtimes, quants, model: Model) -> np.ndarray | None:
    """The model × format axis for one model as a (hardware × runtime × quant) boolean table, True
    where it runs; None where no runtime has a model rule (the common case costs nothing)."""
    if not any(r.model_support for r in runtimes):
        return None
    return _family_grid(hardware, runtimes, quants,
                        lambda h, r, q: not r.model_support or model_refusal(h, r, q, model) is None)


def model_cache_grid(hardware, runtimes, kv_dtypes, model: Model) -> np.ndarray | None:
    """The model × KV-cache axis for one model as a (hardware × runtime × KV dtype) boolean table, True
    where it runs; None where no runtime has a cache rule (the common case costs nothing)."""
    if not any(rule.kv_dtypes for r in runtimes for rule in r.model_support):
        return None
    return _family_grid(hardware, runtimes, kv_dtypes, lambda h, r, k: model_cache_refusal(h, r, k, model) is None)


def expert_only(quants) -> np.ndarray:
    """Per quant: True for formats that quantize only the routed experts (not for dense models)."""
    return np.array([q.non_expert_bits_per_weight is not None for q in quants], dtype=bool)
