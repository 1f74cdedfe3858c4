"""Will it run? For given hardware, the best weight format that fits each model at a context,
its decode speed and its longest context — or, for one model, every format the runtime can load."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.data.catalog import Catalog
from advisor.data.errors import AdvisorError
from advisor.data.specs import Hardware, Model, Quant, Runtime
from advisor.model.compat import gpus_refusal, quant_refusal, runtime_refusal
from advisor.model.config import with_defaults
from advisor.model.roofline import Workload
from advisor.model.sweep import sweep

#: The output a context is split into when sizing a single user (the rest is the prompt).
OUTPUT_TOKENS = 128


@dataclass(frozen=True)
class FitRow:
    model: Model
    quant: Quant | None          # None: no format fits
    fits: bool
    weights_gb: float            # all GPUs together
    decode_tok_s: float
    max_context: int
    needs_gb: float              # per GPU, weights and workspace of the smallest format (when none fits)


@dataclass(frozen=True)
class WillItRun:
    hardware: Hardware
    runtime: Runtime
    gpus: int
    context_tokens: int
    rows: tuple[FitRow, ...]
    #: True: one row per model (its best fitting format); False: one model, one row per format
    per_model: bool


def will_it_run(cat: Catalog, hardware: Hardware, runtime: Runtime | None = None, gpus: int = 1,
                context: int = 4096, model: Model | None = None) -> WillItRun:
    """Rows for every catalog model (or every format of ``model``), one user at ``context`` tokens
    with an F16 KV cache; formats ranked by quality, then speed."""
    if runtime is None:
        runtime = with_defaults(cat, hardware, model or next(iter(cat.models.values()))).runtime
    if isinstance(gpus, bool) or not isinstance(gpus, int) or gpus < 1 or isinstance(context, bool) or context < 2:
        raise AdvisorError("--gpus must be ≥ 1 and --context ≥ 2")
    why = runtime_refusal(hardware, runtime) or gpus_refusal(hardware, gpus)
    if why:
        raise AdvisorError(why)
    rows: list[FitRow] = []
    models = [model] if model else list(cat.models.values())
    for m in models:
        quants = [q.key for q in cat.quants.values() if not quant_refusal(runtime, q, m)]
        c = min(context, m.native_context)
        wl = Workload(batch=1, prompt_tokens=max(c - OUTPUT_TOKENS, 1), output_tokens=min(OUTPUT_TOKENS, c - 1))
        r = sweep(cat, m, wl, hardware=[hardware.key], runtimes=[runtime.key], quants=quants, kv_dtypes=("f16",),
                  gpus=(gpus,))
        if len(r) == 0:
            continue
        v = r.values
        quality = [r.tables.quants[q].quality_rank for q in r.q]
        order = sorted(range(len(r)), key=lambda i: (-quality[i], -v["decode_tok_s"][i]))

        def row(i: int) -> FitRow:
            return FitRow(m, r.tables.quants[r.q[i]], bool(v["fits"][i]), float(v["weights_bytes"][i] / 1e9),
                          float(v["decode_tok_s"][i]), int(v["max_context"][i]),
                          float((v["weights_gpu_bytes"][i] + v["workspace_gpu_bytes"][i]) / 1e9))

        if model is not None:
            rows += [row(i) for i in order]
            continue
        ok = [i for i in order if v["fits"][i]]
        if ok:
            rows.append(row(ok[0]))
        else:
            small = row(min(range(len(r)), key=lambda i: v["weights_bytes"][i]))
            rows.append(FitRow(m, None, False, small.weights_gb, float("nan"), 0, small.needs_gb))
    return WillItRun(hardware, runtime, gpus, context, tuple(rows), model is None)
