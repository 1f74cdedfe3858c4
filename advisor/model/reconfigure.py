"""Changing some inputs of a configuration, and what changes with them: the policy the app applies to
every input change, kept in the core so that it is tested as `configure` is.

- A new hardware starts in its default memory size (or the size its name states) and, where the
  runtime in use does not run on it, with that hardware's default runtime; a new memory size keeps
  the CPU threads in use.
- The runtime, weight format and KV-cache dtype in use stay where they still run; where they do
  not, the defaults for the new combination take over. A runtime chosen on purpose that cannot run
  is refused with the reason.
- An imported model's own format (a GGUF file's exact mix, an FP8 or MXFP4 release) comes with it,
  and a GGUF file's mix never stays with another model.
- Prompt, output and depth stay within the model's context: a field that was moved stops at the
  limit; after a model change, depth gives way first, then the prompt, then the output.
- A GPU count the new hardware is not used at goes back to one; one the engine cannot split a new
  model's attention heads over (tensor parallel 8 of 28 heads) steps down to the largest that it can.

Each change that was not asked for is said in a notice, for the status bar.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from advisor.data.catalog import MEMORY_SIZE_HINT, hardware_sized, with_threads
from advisor.data.errors import AdvisorError
from advisor.model.compat import formats_for, kv_dtypes_for, runtimes_for, tp_refusal, tp_sizes
from advisor.model.layout import parse_layout
from advisor.model.config import Config, with_defaults

if TYPE_CHECKING:
    from advisor.data.catalog import Catalog

WORKLOAD_FIELDS = ("batch", "prompt", "output", "depth")


@dataclass(frozen=True)
class Reconfigured:
    config: Config
    notices: tuple[str, ...] = ()   # what changed without being asked ("GPU count reset to 1")


def sized_hardware(cat: "Catalog", value: Any, memory_gib: float | None = None,
                   size_hint: str = MEMORY_SIZE_HINT):
    """A hardware spec from a spec, a catalog key or a typed name ("M3 Max 40-core 64GB"), in
    ``memory_gib`` or the size the name states, else in its default size with the "assumed" note
    that ends in ``size_hint``."""
    if not isinstance(value, str):
        if memory_gib is None or memory_gib == value.memory_gib:
            return value
        return hardware_sized(cat, value.key, memory_gib, size_hint)
    if value in cat.hardware:
        key, stated = value, None
    else:
        named = cat.hardware_named(value)
        key = named.key
        stated = named.memory_gib if named.memory_gib != cat.hardware[key].memory_gib else None
    return hardware_sized(cat, key, memory_gib if memory_gib is not None else stated, size_hint)


def reconfigure(cat: "Catalog", base: Config, *, size_hint: str = MEMORY_SIZE_HINT, **changes: Any) -> Reconfigured:
    """``base`` with ``changes`` applied (hardware, model, runtime, quant, kv_dtype as specs, keys or
    names; memory_gb; threads; gpus, parallelism, batch, prompt, output, depth), and what else had to
    change with them. Raises `AdvisorError` for a change that cannot be made."""
    notices: list[str] = []
    memory = changes.pop("memory_gb", None)
    memory = None if memory is None else float(memory)
    threads = changes.pop("threads", None)   # CPUs: llama.cpp's -t; 0 = every core
    hw_in = changes.pop("hardware", None)
    if hw_in is not None:
        hw = sized_hardware(cat, hw_in, memory, size_hint)
    elif memory is not None or threads is not None:
        hw = sized_hardware(cat, base.hardware.key, memory if memory is not None else base.hardware.memory_gib,
                            size_hint)
    else:
        hw = base.hardware
    new_device = hw.key != base.hardware.key
    if threads is None and hw is not base.hardware and not new_device:
        threads = base.hardware.threads   # a new memory size keeps the threads in use
    if threads and hw.kind == "cpu":
        hw = with_threads(hw, int(threads))
    model = _spec(cat, "models", changes.pop("model", None)) or base.model
    rt = _spec(cat, "runtimes", changes.pop("runtime", None))
    quant = _spec(cat, "quants", changes.pop("quant", None))
    kv = _spec(cat, "kv_dtypes", changes.pop("kv_dtype", None))
    asked_runtime = rt is not None
    if rt is None:
        rt = base.runtime
        if new_device:
            rt = with_defaults(cat, hw, model).runtime
    runtime_choice = next((c for c in runtimes_for(cat, hw) if c.key == rt.key), None)
    if runtime_choice is not None and not runtime_choice.ok:
        if asked_runtime:  # chosen on purpose (a greyed item, a typed name): say why not
            raise AdvisorError(runtime_choice.reason or f"{rt.name} does not run on {hw.name}")
        rt = with_defaults(cat, hw, model).runtime
    d = with_defaults(cat, hw, model, rt)
    if quant is None:
        formats = formats_for(cat, rt, model, hardware=hw)
        # an imported checkpoint's own format when the model is chosen or the format in use no longer loads
        own = cat.imported_quant(model)
        own = own if own is not None and _ok(formats, own.key) else None
        # a GGUF file's mix describes that file only: another model does not keep it
        keep = _ok(formats, base.quant.key) and not (model is not base.model and cat.is_file_mix(base.quant))
        if own is not None and (model is not base.model or not keep):
            quant = own
        else:
            quant = base.quant if keep else d.quant
    if kv is None:
        kv = base.kv_dtype if _ok(kv_dtypes_for(cat, rt, hardware=hw, model=model), base.kv_dtype.key) else d.kv_dtype
    limited = fit_context(base, model, changes)
    if limited:
        notices.append(limited)
    if "layout" in changes:   # text from a sizing file or a field ("" = none)
        text = changes.pop("layout")
        changes["layout"] = parse_layout(text, None, model.experts or 0) \
            if isinstance(text, str) and text.strip() else (text or None)
        if changes["layout"] is not None and "gpus" not in changes:
            changes["gpus"] = changes["layout"].gpus
    layout = changes.get("layout", base.layout)
    if layout is not None and (int(changes.get("gpus", base.gpus)) != layout.gpus or rt.parallelism != "tp"
                               or (layout.ep > 1 and (not model.experts or layout.ep > model.experts))):
        # the layout no longer describes the GPUs, the runtime or the model: back to the plain split
        changes["layout"] = None
        notices.append(f"layout {layout.text()} cleared: it does not fit {model.name} on "
                       f"{int(changes.get('gpus', base.gpus))} GPUs with {rt.name}")
    cfg = base.replace(hardware=hw, model=model, runtime=rt, quant=quant, kv_dtype=kv, **changes)
    try:
        cfg.check()
    except AdvisorError:
        if cfg.gpus > 1 and new_device and "gpus" not in changes:
            # the new device is not used that many at a time: start it at one
            cfg = cfg.replace(gpus=1)
            cfg.check()
            notices.append(f"{hw.name}: GPU count reset to 1")
        elif cfg.gpus > 1 and "gpus" not in changes and cfg.layout is None and cfg.split == "tp" \
                and tp_refusal(cfg.model, cfg.runtime, cfg.gpus):
            # another model or runtime whose attention heads do not split over the GPUs in use: the
            # largest tensor-parallel group below that does
            fewer = max(tp_sizes(cfg.model, cfg.runtime, cfg.gpus))
            notices.append(f"GPU count {cfg.gpus} → {fewer}: {cfg.runtime.name} cannot split {cfg.model.name}'s "
                           f"attention heads over {cfg.gpus} GPUs")
            cfg = cfg.replace(gpus=fewer)
            cfg.check()
        else:
            raise
    return Reconfigured(cfg, tuple(notices))


def fit_context(base: Config, model, changes: dict[str, Any]) -> str:
    """Keep depth + prompt + output of ``changes`` (else ``base``'s) within ``model``'s context,
    editing ``changes``: a workload field that was moved stops at the limit; otherwise depth gives way
    first, then prompt, then output. Returns the notice to show, or "" when nothing had to give."""
    wl = base.workload
    vals = {"prompt": int(changes.get("prompt", wl.prompt_tokens)),
            "output": int(changes.get("output", wl.output_tokens)),
            "depth": int(changes.get("depth", wl.depth_tokens))}
    over = sum(vals.values()) - int(model.native_context)
    if over <= 0:
        return ""
    moved = [k for k in WORKLOAD_FIELDS if k in changes and k != "batch"]
    order = moved + [k for k in ("depth", "prompt", "output") if k not in moved]
    for k in order:
        floor = 0 if k == "depth" else 1
        take = min(over, max(0, vals[k] - floor))
        vals[k] -= take
        over -= take
        if over <= 0:
            break
    if over > 0:
        return ""  # cannot fit: the configuration's check says why
    changes.update(vals)
    return f"context limited to {model.native_context:,} tokens, {model.name}'s native context"


def _spec(cat: "Catalog", section: str, value: Any) -> Any:
    """A spec object from a spec, a catalog key or a forgiving name (None stays None)."""
    if value is None or not isinstance(value, str):
        return value
    table = getattr(cat, section)
    if value in table:
        return table[value]
    return cat.resolve(section, value)


def _ok(choices: list, key: str) -> bool:
    return any(c.key == key and c.ok for c in choices)
