"""`advisor compare-measured FILE…`: a user's own benchmark results beside the predictions.

The files are the ones benchmark clients write (llama-bench, llama-batched-bench, vllm bench serve,
SGLang's bench_serving and bench_one_batch, GenAI-Perf/AIPerf, GuideLLM), recognised by content. What
a file does not say (often the GPU) is given with a flag; nothing is guessed.
"""

from __future__ import annotations

import argparse
import math
from collections import Counter

from advisor.data.catalog import user_catalog
from advisor.data.errors import AdvisorError
from advisor.fit.bench_records import METRICS
from advisor.fit.bench_results import read_results
from advisor.fit.compare import (METRIC_LABELS as LABELS, METRIC_UNITS as UNITS, Comparison, Overrides, compare,
                                 load_text, metric_text, summarise)
from advisor.model.config import whole_number
from advisor.text.format import json_text, num, table
from advisor.cli.exit_codes import EXIT_OK


def _row(c: Comparison) -> list[str]:
    r = c.record
    unit = UNITS.get(r.metric, "")
    metric = metric_text(r)
    if c.predicted is None:
        return [metric, load_text(r), f"{num(r.value)} {unit}", "—", "—", "—", c.skipped]
    band = f"{num(c.low)}–{num(c.high)}" if c.low is not None and not math.isnan(c.low) else "—"
    mark = "" if c.within_band is None else (" in band" if c.within_band else " outside")
    return [metric, load_text(r), f"{num(r.value)} {unit}", f"{num(c.predicted)} {unit}", band,
            f"{100 * c.error:+.0f} %{mark}", ""]


def cmd_compare_measured(args: argparse.Namespace) -> int:
    cat = user_catalog()
    gpus = whole_number("gpus", args.gpus, 0) if args.gpus is not None else None
    if gpus is not None and gpus < 1:
        raise AdvisorError(f"--gpus must be at least 1, got {args.gpus!r}")
    seqs = whole_number("--max-seqs", args.max_seqs, 0) if args.max_seqs is not None else None
    if seqs is not None and not 1 <= seqs <= 1_000_000:
        raise AdvisorError(f"--max-seqs must be 1 to 1,000,000, got {args.max_seqs!r}")
    overrides = Overrides(hardware=args.hardware, model=args.model, quant=args.quant, runtime=args.runtime,
                          gpus=gpus, max_seqs=seqs, prompt_cache=getattr(args, "prompt_cache", True))
    files = []
    for path in args.files:
        tool, records = read_results(path)
        files.append((path, tool, compare(cat, records, overrides)))
    every = [c for _, _, cs in files for c in cs]
    summary = summarise(every)
    if summary.compared == 0:
        # the reasons most rows share first; a statistic that is never predicted (std) only if alone
        counts = Counter(c.skipped for c in every if c.skipped)
        reasons = [r for r, _ in counts.most_common() if "is not predicted" not in r] or list(counts)
        raise AdvisorError("no row could be compared: " + "; ".join(reasons[:2]))
    if args.json:
        print(json_text({"files": [{"file": str(p), "tool": tool, "rows": [c.to_dict() for c in cs]}
                                   for p, tool, cs in files],
                         "summary": summary.to_dict()}))
        return EXIT_OK
    for path, tool, cs in files:
        configs = sorted({c.configuration for c in cs if c.configuration})
        print(f"{path} — {tool}, {len(cs)} rows" + (f"; predicted for {'; '.join(configs)}" if configs else ""))
        print(table(["metric", "load", "measured", "predicted", "band", "error", "note"], [_row(c) for c in cs],
                    right=[False, False, True, True, True, True, False]))
        print()
    err = f"{100 * summary.median_abs_error:.1f} %" if summary.median_abs_error is not None else "—"
    print(f"{summary.compared} of {summary.rows} rows compared · median |error| {err} · "
          f"{summary.within_band} of {summary.compared} measurements inside the predicted band")
    print("error = predicted / measured − 1; metrics: " +
          "; ".join(f"{LABELS[m]}: {METRICS[m]}" for m in sorted({c.record.metric for c in every}) if m in LABELS))
    served = [c for c in every if c.predicted is not None and (c.record.concurrency or c.record.request_rate_rps)
              and (c.record.runtime or args.runtime or "").lower().startswith("llama.cpp")]
    if served and overrides.prompt_cache:
        print("llama-server rows assume its host-memory prompt cache, its default (each finished request's KV "
              "is copied out before the next prompt); for a server started with --cache-ram 0, add --no-prompt-cache")
    return EXIT_OK


def register(sub) -> None:
    p = sub.add_parser("compare-measured", help="your benchmark results (llama-bench, vllm bench serve, SGLang, "
                                                "GenAI-Perf/AIPerf, GuideLLM files) beside the predictions")
    p.add_argument("files", nargs="+", metavar="FILE", help="result files, recognised by their content")
    p.add_argument("--hardware", help="the hardware the results were measured on (most files do not say)")
    p.add_argument("--model", help="the model, where the file's name for it does not resolve")
    p.add_argument("--quant", help="the weight format, where the file does not say")
    p.add_argument("--runtime", help="the runtime, where the file does not say")
    p.add_argument("--gpus", help="GPUs the server used, where the file does not say (default 1)")
    p.add_argument("--max-seqs", help="sequences the server ran at once (vLLM --max-num-seqs, SGLang "
                   "--max-running-requests, llama-server -np), where the file does not say (default: the runtime's)")
    p.add_argument("--no-prompt-cache", dest="prompt_cache", action="store_false",
                   help="the server ran without its host-memory prompt cache (llama-server --cache-ram 0)")
    p.add_argument("--json", action="store_true", help="rows with metric, measured, predicted, low, high, error")
    p.set_defaults(func=cmd_compare_measured)
