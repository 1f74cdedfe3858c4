"""How right `serve` is under load: every mapped row of `catalog/measured/serving.csv` (public
measurements of vLLM, SGLang and TensorRT-LLM servers) against its prediction, per runtime ×
hardware generation, per source and per metric, with how often the printed band holds the
measurement.

Held out by source (the default): each source is predicted by a catalog that never saw it. The
servers' decode steps of some sources are calibration rows (`advisor.fit.serving_cases.decode_cases`)
and their lone-user TTFT fits the eager prompt-pass terms (`advisor.fit.serving_fit`): for each
such source the profiles are refitted without its rows (rates refitted, the shipped bands kept)
and the terms fitted without it. `--shipped` uses the catalog as shipped instead (in sample for
those sources).

Error of a group = the median over its sources of each source's median absolute error (so a
source with 200 rows counts once); bias = the median of predicted ÷ measured − 1 over the rows.

Bands: `serve` widens each band by how far past such edges servers were measured, per load (steady or a
batch sent at once) and metric (`catalog/serving_bands.yaml`). Held out, each source's band is widened by
factors fitted without it; `--write-bands` refits the file on every source (after a recalibration).

Run: python benchmarks/serving.py [--markdown] [--rows] [--shipped] [--write-bands]
"""

from __future__ import annotations

import argparse
import math
import re
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from advisor.data.catalog import user_catalog  # noqa: E402
from advisor.fit.serving_cases import (SHAREGPT_OUTPUT_SPREAD, ServingCase, load_serving_cases, map_row,  # noqa: E402
                                       run_key)
from advisor.fit.serving_fit import (BAND_METRIC, BandFigure, _design, band_widening, fit_from_design,  # noqa: E402
                                     floor_cases, serving_bands, serving_bands_yaml, with_terms)
from advisor.model.serving import serve  # noqa: E402
from advisor.text.format import markdown_table as markdown, table  # noqa: E402

#: the serving bands `--write-bands` writes
BANDS_FILE = ROOT / "catalog" / "serving_bands.yaml"
METRIC_GROUPS = {"ttft": "TTFT", "itl": "ITL", "e2e": "end to end", "throughput": "throughput",
                 "total_throughput": "throughput", "request_rate": "throughput"}
#: all at once (N requests sent together) is a batch job, not a steady state (`advisor.model.serving.
#: batch_run`): its throughput is the makespan's, which the longest outputs set (ShareGPT's tail, whose
#: spread the data does not state), and its latencies those of a drain; so they are groups of their own
ORDER = ("TTFT", "ITL", "throughput", "end to end", "TTFT, all at once", "ITL, all at once", "throughput, all at once",
         "end to end, all at once")
#: the spreads of ShareGPT's output lengths the all-at-once rows are also predicted at (the catalog as
#: shipped): the spread is an assumption (`advisor.fit.serving_cases.SHAREGPT_OUTPUT_SPREAD`)
SPREADS = (0.0, 0.5, 1.0, 1.5)


def group_of(case) -> str:
    """The metric's group; all-at-once runs apart (`is_burst`)."""
    g = METRIC_GROUPS[case.metric]
    return f"{g}, all at once" if is_burst(case) else g


def predicted(case: ServingCase, rep) -> tuple[float, float, float]:
    """(prediction, band low, band high) of the case's figure, in its units."""
    L = case.load
    per_request = L.prompt_tokens + L.output_tokens
    if case.metric in ("ttft", "itl", "e2e"):
        # the data's TPOT rows are ITL cases (serving_cases.METRICS); their percentiles are TPOT's
        return rep.latency("tpot" if case.row.get("metric") == "tpot" else case.metric, case.stat)
    scale = {"throughput": 1.0, "total_throughput": per_request / L.output_tokens,
             "request_rate": 1.0 / L.output_tokens}[case.metric]
    return (rep.throughput_tok_s * scale, rep.throughput_low_tok_s * scale, rep.throughput_high_tok_s * scale)


def is_burst(case: ServingCase) -> bool:
    """Every request sent at once (the data's ``offline`` load)."""
    return case.row.get("load") == "offline"


def evaluate(cat, cases):
    """[(case, prediction, low, high)] for every case that fits; one throughput row per run."""
    reports, out, seen = {}, [], set()
    for c in cases:
        group = METRIC_GROUPS[c.metric]
        if group == "throughput":
            k = run_key(c)
            if k in seen:
                continue
            seen.add(k)
        key = (c.cfg, c.load)
        if key not in reports:
            try:
                reports[key] = serve(cat, c.cfg, c.load)
            except Exception as exc:  # noqa: BLE001 - a row the model refuses is reported, not fatal
                reports[key] = exc
        rep = reports[key]
        if isinstance(rep, Exception) or not rep.fits:
            continue
        p, lo, hi = predicted(c, rep)
        if math.isfinite(p) and p > 0:
            out.append((c, p, lo, hi))
    return out


def held_out(cat, cases, fmt):
    """([(case, prediction, low, high)], [BandFigure]) with each source predicted by profiles and eager
    terms fitted without it, its bands widened by serving bands fitted without it (the figures: the
    bands before any widening, what `--write-bands` fits); prints the terms fitted on every source."""
    from dataclasses import replace

    from advisor.data.catalog import CATALOG_DIR, Catalog, load_catalog
    from advisor.fit.calibration import fit_profiles
    from advisor.fit.measurements import load_cases

    design = _design(cat, floor_cases(cases))
    terms = fit_from_design(design)
    print("eager prompt-pass terms fitted on every source (µs per layer; catalog/runtimes.yaml holds them)\n")
    print(fmt(["runtime", "MoE layer µs", "MLA / linear layer µs", "rows", "sources"],
              [[k, t.moe_us, t.complex_us, t.rows, t.sources] for k, t in sorted(terms.items())]))
    print()
    base = load_catalog(CATALOG_DIR, user=None)
    bare = Catalog(hardware=base.hardware, models=base.models, quants=base.quants, kv_dtypes=base.kv_dtypes,
                   runtimes=base.runtimes, profiles={})
    cal_cases, _ = load_cases(bare)
    calibrating = {c.source for c in cal_cases}
    band_fields = ("decode_low", "decode_high", "prefill_low", "prefill_high")
    unwidened = replace(cat, serving_bands={})
    held = []   # (source, catalog without it, its cases with terms fitted without it)
    for source in sorted({c.source for c in cases}):
        mine = [c for c in cases if c.source == source]
        held_cat = unwidened
        if source in calibrating:
            refit = fit_profiles(bare, [c for c in cal_cases if c.source != source])
            profiles = {k: (replace(p, **{f: getattr(cat.profiles[k], f) for f in band_fields})
                            if k in cat.profiles else p) for k, p in refit.items()}
            held_cat = replace(unwidened, profiles=profiles)
        t = fit_from_design([r for r in design if r[1] != source])
        held.append((source, held_cat, [replace(c, cfg=with_terms(c.cfg, t)) for c in mine]))
    figures = [band_figure(c, lo, hi) for _, held_cat, mine in held for c, _, lo, hi in evaluate(held_cat, mine)]
    out = []
    for source, held_cat, mine in held:
        widening = band_widening(figures, leave_out=source)
        out += evaluate(replace(held_cat, serving_bands=serving_bands(widening, "held out")), mine)
    return out, figures


def band_figure(case: ServingCase, low: float, high: float) -> BandFigure:
    return BandFigure(case.source, "batch" if is_burst(case) else "steady", case.metric, case.value, low, high)


def bands_table(figures, rows, widening):
    """[[load, metric, below, above, figures, sources, in band unwidened, in band widened]]: each
    (load, metric)'s ``widening`` (fitted on every source), and how often the band holds the figure
    before and after widening with the figure's own source held out of the widening's fit."""
    inside = defaultdict(lambda: [0, 0, 0])
    for f in figures:
        k = (f.mode, BAND_METRIC.get(f.metric))
        inside[k][0] += min(f.low, f.high) <= f.measured <= max(f.low, f.high)
        inside[k][2] += 1
    for c, _, lo, hi in rows:
        k = ("batch" if is_burst(c) else "steady", BAND_METRIC.get(c.metric))
        inside[k][1] += min(lo, hi) <= c.value <= max(lo, hi)
    return [[m, k, f"÷{w.below:.2f}", f"×{w.above:.2f}", w.rows, w.sources,
             f"{100 * inside[(m, k)][0] / inside[(m, k)][2]:.0f} %", f"{100 * inside[(m, k)][1] / inside[(m, k)][2]:.0f} %"]
            for (m, k), w in sorted(widening.items())]


def summarise(rows):
    """rows: [(case, pred, lo, hi)] → (n, sources, median over sources of median |err|, bias, in band)."""
    per_source = defaultdict(list)
    for c, p, lo, hi in rows:
        per_source[c.source].append(abs(p / c.value - 1))
    src_err = [statistics.median(v) for v in per_source.values()]
    bias = statistics.median(p / c.value - 1 for c, p, _, _ in rows)
    inside = sum(1 for c, p, lo, hi in rows if min(lo, hi) <= c.value <= max(lo, hi)) / len(rows)
    return len(rows), len(per_source), statistics.median(src_err), bias, inside


def fmt_row(label, rows):
    n, s, err, bias, inside = summarise(rows)
    return [label, n, s, f"{100 * err:.0f} %", f"{100 * bias:+.0f} %", f"{100 * inside:.0f} %"]


#: a prompt this long makes its run a check of long-prompt prefill (the issue's "16k+")
LONG_PROMPT_TOKENS = 16_000
LONG_PROMPT_HARDWARE = {"NVIDIA H200": "H200 SXM 141GB", "NVIDIA B200": "B200", "NVIDIA H100": "H100 SXM5 80GB"}
LONG_PROMPT_RUNTIME = (("tensorrt", "tensorrt-llm"), ("vllm", "vllm"), ("sglang", "sglang"))


def long_prompts(cat):
    """[(label, measured s, predicted s, band, why not)] for mlperf.csv's single-request long-prompt rows:
    TTFT (or a prefill time) of one request of 10k–130k tokens."""
    import csv

    from advisor.data.catalog import CATALOG_DIR
    from advisor.model.config import configure
    from advisor.model.predict import predict
    from advisor.model.roofline import Workload

    out = []
    with open(CATALOG_DIR / "measured" / "mlperf.csv", newline="", encoding="utf-8") as f:
        rows = [r for r in csv.DictReader(f) if r["scenario"] == "single-request-long-prompt"]
    for r in rows:
        notes = r["notes"]
        m = re.search(r"ISL=(\d+)k", notes) or re.search(r"prompt length ([\d,]+) tokens", notes)
        prompt = int(m.group(1).replace(",", "")) * (1000 if "ISL=" in m.group(0) else 1)
        o = re.search(r"OSL=(\d+)|output (\d+) tokens", notes)
        output = int(next(g for g in o.groups() if g)) if o else 2
        value_s = float(r["value"]) / (1e3 if r["unit"] == "ms" else 1.0)
        label = f"{r['benchmark']} · {r['system']} · {prompt:,} tokens"
        runtime = next((k for w, k in LONG_PROMPT_RUNTIME if w in r["software"].lower()), None)
        try:
            if int(r["n_accelerators"]) > 8:
                raise ValueError(f"{r['n_accelerators']} GPUs in one NVLink domain (multi-node: issue 31)")
            cfg = configure(cat, hardware=LONG_PROMPT_HARDWARE.get(r["accelerator"], r["accelerator"]),
                            model=r["benchmark"].replace("-Instruct-2507", "").replace("-Instruct", ""),
                            runtime=runtime, quant="bf16", gpus=int(r["n_accelerators"]))
            p = predict(cat, cfg.replace(workload=Workload(batch=1, prompt_tokens=prompt, output_tokens=max(output, 2))))
            out.append((label, value_s, p.ttft_ms / 1e3, (p.ttft_low_ms / 1e3, p.ttft_high_ms / 1e3), ""))
        except Exception as exc:  # noqa: BLE001 - a row we cannot express is listed with why
            out.append((label, value_s, math.nan, (math.nan, math.nan), str(exc).splitlines()[0]))
    return out


AIC_DIR = Path(__file__).resolve().parent / "aiconfigurator"


def _aic_key(source, model, gpu, gpus, parallel, backend, quant, isl, osl, conc, metric, stat, value) -> tuple:
    return (source, model, gpu, int(gpus), parallel, backend, quant, int(isl), int(osl), int(float(conc)), metric, stat,
            round(float(value), 6))


def versus_aiconfigurator(rows):
    """[(metric, rows, sources, ours, theirs)] on the rows both predict: NVIDIA closed loops that
    aiconfigurator 0.12 estimated (`aiconfigurator/`: its inputs, outputs and how it was run), p99
    rows left out (it gives one figure per metric)."""
    import csv

    with open(AIC_DIR / "cases.csv", newline="") as f:
        cases = {r["case_id"]: r for r in csv.DictReader(f)}
    with open(AIC_DIR / "predictions-0.12.0.csv", newline="") as f:
        preds = {r["case_id"]: r for r in csv.DictReader(f) if r["status"] == "ok"}
    theirs = {}
    for cid, p in preds.items():
        c = cases[cid]
        key = _aic_key(c["source"], c["model"], c["gpu"], c["n_gpus"], c["parallel"], c["backend"], c["quant"],
                       c["isl"], c["osl"], c["concurrency"], c["metric"], c["stat"], c["measured"])
        isl, osl = float(c["isl"]), float(c["osl"])
        thr = float(p["aic_throughput_tok_s"])
        theirs[key] = {"ttft": float(p["aic_ttft_ms"]), "itl": float(p["aic_tpot_ms"]), "tpot": float(p["aic_tpot_ms"]),
                       "output_throughput": thr, "total_throughput": thr * (isl + osl) / osl,
                       "request_throughput": thr / osl}[c["metric"]]
    pairs = defaultdict(list)
    for c, ours, _, _ in rows:
        r = c.row
        if r["stat"] == "p99":
            continue
        key = _aic_key(c.source, r["model"], c.cfg.hardware.key, c.cfg.gpus, c.parallel, c.cfg.runtime.key, r["quant"],
                       c.load.prompt_tokens, c.load.output_tokens, c.load.concurrency, r["metric"], r["stat"], c.value)
        if key in theirs:
            pairs[group_of(c)].append((c, ours, theirs[key]))
    out = []
    for m in ORDER:
        if not pairs[m]:
            continue
        def err(i):
            per = defaultdict(list)
            for c, *preds in pairs[m]:
                per[c.source].append(abs(preds[i] / c.value - 1))
            return statistics.median(statistics.median(v) for v in per.values())
        out.append((m, len(pairs[m]), len({c.source for c, _, _ in pairs[m]}), err(0), err(1)))
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--rows", action="store_true", help="print every compared row")
    ap.add_argument("--shipped", action="store_true", help="the catalog as shipped (no refits per source)")
    ap.add_argument("--write-bands", action="store_true",
                    help=f"write the serving bands fitted on every source to {BANDS_FILE.relative_to(ROOT)}")
    args = ap.parse_args()
    fmt = markdown if args.markdown else table
    cat = user_catalog()
    t0 = time.perf_counter()
    cases, skipped = load_serving_cases(cat, args.data)
    if args.shipped:
        rows, figures = evaluate(cat, cases), []
        mode = "the catalog as shipped (in sample for the sources that calibrate it)"
    else:
        rows, figures = held_out(cat, cases, fmt)
        mode = "each source held out of every fit, the serving bands' widening too"
    seconds = time.perf_counter() - t0
    reasons = defaultdict(int)
    for s in skipped:
        reasons[s.reason] += 1
    print(f"{len(rows)} measured figures compared ({len(cases)} rows mapped, {len(skipped)} not: "
          + "; ".join(f"{n} {r}" for r, n in sorted(reasons.items(), key=lambda kv: -kv[1])) + f") in {seconds:.1f} s\n")
    headers = ["group", "rows", "sources", "median abs err", "bias", "in band"]
    by_metric = defaultdict(list)
    for r in rows:
        by_metric[group_of(r[0])].append(r)
    print(f"all sources: {mode}\n")
    print(fmt(headers, [fmt_row(m, by_metric[m]) for m in ORDER if by_metric[m]]))
    # a run's mean and p99 TTFT carry its one-off costs (a cold start: a lone client's mean far above
    # its median); its median does not. The same rows by statistic:
    by_stat = [(f"TTFT, {st} rows only", [r for r in by_metric["TTFT"] if r[0].stat == st]) for st in ("p50", "mean", "p99")]
    print("\n" + fmt(headers, [fmt_row(label, rs) for label, rs in by_stat if rs]))
    # prompts of 16k tokens and more: the runs they are in are prefill-bound (32,000-token prompts with
    # ~100-token answers), so their figures check long-prompt prefill under load
    long_rows = defaultdict(list)
    for r in rows:
        if r[0].load.prompt_tokens >= LONG_PROMPT_TOKENS:
            long_rows[r[0].label].append(r)
    if long_rows:
        print(f"\nprompts of {LONG_PROMPT_TOKENS:,}+ tokens (prefill-bound runs), by runtime × hardware generation\n")
        print(fmt(headers, [fmt_row(k, v) for k, v in sorted(long_rows.items())]
                  + [fmt_row("all", [r for v in long_rows.values() for r in v])]))
    for title, key in (("runtime × hardware generation", lambda c: c.label), ("source", lambda c: c.source)):
        for m in ORDER:
            stats = defaultdict(list)
            for r in by_metric[m]:
                stats[key(r[0])].append(r)
            if stats:
                print(f"\n{m} by {title}\n")
                print(fmt(headers, [fmt_row(k, v) for k, v in sorted(stats.items())]))
    if figures:
        widening = band_widening(figures)
        print("\nserving bands: how far past the band's edges servers were measured (the factors of "
              f"{BANDS_FILE.relative_to(ROOT)}, fitted on every source), and how often the band holds the figure "
              "before widening and after it (each source's band widened by factors fitted without it)\n")
        print(fmt(["load", "metric", "low edge", "high edge", "figures", "sources", "in band before", "in band after"],
                  bands_table(figures, rows, widening)))
        if args.write_bands:
            from advisor.data.userdata import write_atomic

            write_atomic(BANDS_FILE, serving_bands_yaml(widening, f"catalog/measured/serving.csv as of "
                                                                  f"{time.strftime('%Y-%m-%d')}"))
            print(f"\nwrote {BANDS_FILE.relative_to(ROOT)}")
    print("\nall at once: ShareGPT's output spread (an assumption) against the error, the catalog as shipped\n")
    spread_rows, groups = [], [m for m in ORDER if m.endswith("all at once") and by_metric[m]]
    burst_rows = [c.row for c in cases if is_burst(c)]   # the all-at-once rows, mapped again at each spread
    for spread in SPREADS:
        got = defaultdict(list)
        for r in evaluate(cat, [map_row(cat, row, spread) for row in burst_rows]):
            got[group_of(r[0])].append(r)
        spread_rows.append([f"{spread:g}" + (" (used)" if spread == SHAREGPT_OUTPUT_SPREAD else "")]
                           + [fmt_row(m, got[m])[3] if got[m] else "–" for m in groups])
    print(fmt(["spread"] + groups, spread_rows))
    print("\nagainst aiconfigurator 0.12 (NVIDIA's per-kernel simulator, its aggregated estimate) on the NVIDIA"
          " closed-loop rows it can estimate, each side's median over sources of each source's median error\n")
    print(fmt(["metric", "rows", "sources", "advisor (held out)", "aiconfigurator 0.12"],
              [[m, n, s_, f"{100 * a:.0f} %", f"{100 * b:.0f} %"] for m, n, s_, a, b in versus_aiconfigurator(rows)]))
    print("\nlong prompts: one request of 10k-130k tokens (mlperf.csv's single-request rows; predict's TTFT)\n")
    print(fmt(["row", "measured", "predicted", "band", "error", "not predicted because"],
              [[label, f"{v:.3g} s", f"{p:.3g} s" if math.isfinite(p) else "–",
                f"{lo:.3g}–{hi:.3g} s" if math.isfinite(lo) else "–",
                f"{100 * (p / v - 1):+.0f} %" if math.isfinite(p) else "–", why]
               for label, v, p, (lo, hi), why in long_prompts(cat)]))
    if args.rows:
        print()
        print(fmt(["source", "model", "hardware", "runtime", "load", "metric", "measured", "predicted", "band"],
                  [[c.source, c.cfg.model.key, f"{c.cfg.gpus}x {c.cfg.hardware.key}", c.cfg.runtime.key,
                    f"{c.load.kind} {c.load.concurrency if c.load.kind == 'closed' else c.load.rate_rps:g} "
                    f"{c.load.prompt_tokens}/{c.load.output_tokens}", f"{c.metric} {c.stat}", f"{c.value:.4g}",
                    f"{p:.4g}", f"{lo:.3g}–{hi:.3g}"] for c, p, lo, hi in rows]))


if __name__ == "__main__":
    main()
