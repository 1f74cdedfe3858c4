"""The most the model says a system can decode, against what its vendor publishes as its maximum
(`catalog/measured/vendor_max.csv`): how optimistic a large-batch decode step is where no ceiling holds it.

`advisor.model.ceilings` bounds every prediction near a vendor's figure by that figure, so predictions
there never show the model's own error. This script takes the bound off: per row, the decode
throughput of a batch at the row's lengths, its prompts then its outputs (B·out / (the B prompts' pass +
out decode steps), what a static batch gives and a full continuous batch about matches) at every batch that
fits, in the plain tensor-parallel split and, for a mixture of experts on several GPUs, in attention
data-parallel + expert parallel over all of them (the layout TensorRT-LLM's max-throughput guides run
for DeepSeek-R1), at the runtime's default KV cache (the rows do not all state theirs), and prints the
best against the vendor's figure, which counts its prompts' work too (128 tokens in and 128 out cost
about as much prompt work as decode work on a compute-bound GPU).

The vendors' figures come from continuous batching (trtllm-bench: thousands of requests through a
fixed number of slots, new prompts entering as others finish), so beside it the serving model runs
the same (`advisor serve`, offline, the slots at the batch the row's quote states, else the best static
batch, same layout, no ceiling): there every step also carries the prompts of the requests that
replace the finished ones, and with data-parallel attention each prompt holds up every group while its
own group computes it (`serving.busiest_group_tokens`).

    python benchmarks/vendor_max.py [--markdown]
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path
from unittest import mock

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from advisor.data.catalog import user_catalog  # noqa: E402
from advisor.data.errors import AdvisorError  # noqa: E402
from advisor.data.vendor_max import shipped_vendor_max  # noqa: E402
from advisor.model.config import configure  # noqa: E402
from advisor.model.efficiency import efficiency_for  # noqa: E402
from advisor.model.geometry import geometry  # noqa: E402
from advisor.model.inputs import inputs_for  # noqa: E402
from advisor.model.roofline import evaluate  # noqa: E402
from advisor.text.format import markdown_table, table  # noqa: E402

BATCHES = np.array([2.0 ** k for k in range(0, 14)])   # 1 … 8,192 sequences


def best_uncapped(cat, row, layout: str | None) -> tuple[float, int]:
    """(the most output tok/s over the batches that fit, at which batch) with no vendor ceiling."""
    cfg = configure(cat, hardware=row.hardware, model=row.model, quant=row.quant, runtime=row.runtime,
                    gpus=row.gpus, layout=layout)
    cfg = cfg.replace(prompt=row.prompt_tokens, output=row.output_tokens, batch=1)
    eff = efficiency_for(cat.profiles, cfg.runtime, cfg.hardware)
    x = inputs_for(cfg.hardware, cfg.runtime, cfg.quant, cfg.kv_dtype, eff, cfg.gpus, cfg.split, cfg.workload,
                   cfg.layout).replace(batch=BATCHES)
    r = evaluate(geometry(cfg.model), x)
    out = float(row.output_tokens)
    total = BATCHES * out / (np.asarray(r.prefill_s, float) + out / np.asarray(r.decode_tok_s, float))
    fits = np.asarray(r.max_batch, float) >= BATCHES
    if not fits.any():
        return float("nan"), 0
    i = int(np.argmax(np.where(fits, total, -1.0)))
    return float(total[i]), int(BATCHES[i])


def serving_uncapped(cat, row, layout: str | None, batch: int) -> float:
    """Output tok/s of continuous batching through ``batch`` slots at the row's lengths (the serving
    model, offline), with the vendor's ceiling taken off."""
    from advisor.model.serving import Load, serve

    cfg = configure(cat, hardware=row.hardware, model=row.model, quant=row.quant, runtime=row.runtime,
                    gpus=row.gpus, layout=layout)
    load = Load(kind="offline", prompt_tokens=row.prompt_tokens, output_tokens=row.output_tokens, max_seqs=batch)
    with mock.patch("advisor.model.predict.ceiling_at", return_value=None):
        return float(serve(cat, cfg, load).throughput_tok_s)


def stated_batch(quote: str) -> int | None:
    """The batch a vendor's quote states ('Batch = 3072'), or None."""
    m = re.search(r"Batch\s*=\s*([\d,]+)", quote or "")
    return int(m.group(1).replace(",", "")) if m else None


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    cat = user_catalog()
    rows = []
    for row in shipped_vendor_max():
        model = cat.models[row.model]
        layouts = [None] + ([f"dp{row.gpus}+ep{row.gpus}"] if model.experts and row.gpus > 1 else [])
        best = []
        for layout in layouts:
            try:
                tok_s, batch = best_uncapped(cat, row, layout)
            except AdvisorError as exc:
                print(f"{row.model} on {row.gpus} × {row.hardware}, {layout or 'TP'}: {exc}", file=sys.stderr)
                continue
            best.append((tok_s, batch, layout or (f"TP{row.gpus}" if row.gpus > 1 else "1 GPU")))
        if not best:
            continue
        tok_s, batch, how = max(best)
        layout = None if how.startswith(("TP", "1 GPU")) else how
        stated = stated_batch(row.quote)
        slots = stated or batch
        served = serving_uncapped(cat, row, layout, slots)
        rows.append([f"{model.name} · {row.gpus}× {cat.hardware[row.hardware].name}", row.quant,
                     f"{row.prompt_tokens:,}/{row.output_tokens:,}", f"{row.max_output_tok_s:,.0f}",
                     f"{tok_s:,.0f}", f"{batch:,} ({how})", f"{tok_s / row.max_output_tok_s:.2f}",
                     f"{served:,.0f}", f"{slots:,}{' (stated)' if stated else ''}",
                     f"{served / row.max_output_tok_s:.2f}"])
    fmt = markdown_table if args.markdown else table
    print(fmt(["system", "format", "in/out", "vendor's max tok/s", "static batch (no ceiling)",
               "at batch (layout)", "÷ vendor", "continuous batching (no ceiling)", "slots", "÷ vendor"], rows))


if __name__ == "__main__":
    main()
