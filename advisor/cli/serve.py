"""`advisor serve`: a server under load — concurrent clients, a request rate, or everything queued."""

from __future__ import annotations

import argparse
import math
import sys
from typing import Any

from advisor.cli.csvio import csv_value, run_cases
from advisor.cli.options import add_configuration
from advisor.data.catalog import Catalog, user_catalog
from advisor.data.errors import AdvisorError
from advisor.model.config import configure, whole_number
from advisor.model.disaggregation import disaggregate
from advisor.model.serving import BATCH_MIX_POINTS, Load, concurrency_sweep, output_mix, prompt_mix, serve
from advisor.text.format import duration_ms, json_text, num, table
from advisor.cli.exit_codes import EXIT_OK, EXIT_UNMET, does_not_fit

SERVE_CSV_INPUTS = ["hardware", "model", "quant", "runtime", "gpus", "parallel", "prompt", "output", "concurrency",
                    "rate", "requests"]
SERVE_CSV_OUTPUTS = ["ttft_ms", "ttft_low_ms", "ttft_high_ms", "ttft_p90_ms", "ttft_p99_ms", "itl_ms", "itl_low_ms",
                     "itl_high_ms", "itl_p50_ms", "itl_p90_ms", "itl_p99_ms", "e2e_ms", "throughput_tok_s", "throughput_low_tok_s",
                     "throughput_high_tok_s", "request_rate_rps", "running_batch", "bound", "error"]
DEFAULT_PROMPT, DEFAULT_OUTPUT = 1024, 256
#: serve's flags that --cases would ignore (its file names every configuration and load)
SERVE_CASES_IGNORE = ("hardware", "model", "quant", "kv_dtype", "runtime", "gpus", "parallel", "memory_gb", "threads", "prompt",
                      "output", "concurrency", "rate", "offline", "think_s", "prefix_hit", "prompt_spread", "output_spread", "lengths",
                      "max_seqs", "chunk_tokens", "requests", "sweep", "json", "disaggregate", "prefill_instances",
                      "decode_instances", "prefill_gpus", "prefill_hardware", "ttft_ms", "tok_s")


def _fraction(name: str, text: Any, default: float = 0.0) -> float:
    if text is None or (isinstance(text, str) and not text.strip()):
        return default
    try:
        v = float(str(text).strip())
    except ValueError:
        raise AdvisorError(f"{name} must be a number, got {text!r}") from None
    if not math.isfinite(v):
        raise AdvisorError(f"{name} must be a finite number, got {text!r}")
    return v


def load_from(*, prompt=None, output=None, concurrency=None, rate=None, offline=False, think_s=None,
              prefix_hit=None, max_seqs=None, chunk_tokens=None, prompt_spread=None, lengths=None,
              requests=None, prompt_cache: bool = True, output_spread=None) -> Load:
    """A `Load` from what the user typed; exactly one of concurrency, rate or offline. The lengths may
    be distributions: ``prompt_spread`` and ``output_spread`` (coefficients of variation around
    --prompt and --output) or a trace file ``lengths`` (its prompts, and its outputs where it has
    them). ``requests``: with concurrency, a benchmark run of that many requests; offline, a batch of
    that many sent at once."""
    rate_text = str(rate).strip().lower() if rate not in (None, "") else ""
    if rate_text in ("inf", "infinity", "offline"):
        offline, rate_text = True, ""
    given = [x for x in (concurrency not in (None, ""), bool(rate_text), offline) if x]
    if len(given) > 1:
        raise AdvisorError("give one of --concurrency, --rate or --offline")
    mix: dict[str, Any] = {}
    if lengths:
        from advisor.data.lengths import read_lengths

        if prompt not in (None, "") or prompt_spread not in (None, ""):
            raise AdvisorError("give --lengths, or --prompt (and --prompt-spread): not both")
        trace = read_lengths(lengths)
        mix = prompt_mix(trace.mean_prompt, samples=trace.prompts)
        if trace.mean_output is not None:
            if output not in (None, "") or output_spread not in (None, ""):
                raise AdvisorError("--lengths already gives the output lengths: drop --output and --output-spread")
            mix.update(output_mix(0, samples=[max(x, 2) for x in trace.outputs], points=BATCH_MIX_POINTS))
            output = mix.pop("output_tokens")
    elif prompt_spread not in (None, ""):
        mix = prompt_mix(whole_number("prompt", prompt, DEFAULT_PROMPT), _fraction("prompt-spread", prompt_spread))
    if output_spread not in (None, "") and not lengths:
        mix.update(output_mix(whole_number("output", output, DEFAULT_OUTPUT), _fraction("output-spread", output_spread),
                              points=BATCH_MIX_POINTS))
        output = mix.pop("output_tokens")
    common = dict(prompt_tokens=mix.pop("prompt_tokens", None) or whole_number("prompt", prompt, DEFAULT_PROMPT),
                  output_tokens=whole_number("output", output, DEFAULT_OUTPUT), **mix,
                  think_s=_fraction("think-s", think_s), prefix_hit=_fraction("prefix-hit", prefix_hit),
                  max_seqs=whole_number("max-seqs", max_seqs, 0) or None,
                  chunk_tokens=whole_number("chunk-tokens", chunk_tokens, 0) or None, prompt_cache=prompt_cache)
    n = whole_number("requests", requests, 0) if requests not in (None, "") else None
    if n is not None and n < 1:
        raise AdvisorError(f"requests must be a whole number from 1 to 1e8, got {requests!r}")
    if offline:
        load = Load(kind="offline", requests=n, **common)
    elif rate_text:
        if n:
            raise AdvisorError("--requests is a benchmark run of a closed loop (--concurrency) or a batch sent at "
                               "once (--offline), not of a request rate")
        load = Load(kind="open", rate_rps=_fraction("rate", rate_text), **common)
    else:
        load = Load(kind="closed", concurrency=float(whole_number("concurrency", concurrency, 1)), requests=n, **common)
    load.check()
    return load


def _load_text(load: Load) -> str:
    if load.kind == "closed":
        think = f", {num(load.think_s)} s think time" if load.think_s else ""
        run = f", a run of {load.requests:,} requests timed from its first wave (all clients at once) to its last answer" \
            if load.requests else ""
        return f"{load.concurrency:g} concurrent client{'s' if load.concurrency != 1 else ''} (closed loop{think}{run})"
    if load.kind == "open":
        return f"{num(load.rate_rps)} requests/s (Poisson arrivals)"
    if load.requests:
        return f"a batch of {load.requests:,} requests sent at once (timed from the first to the last)"
    return "everything queued at once (offline, maximum throughput)"


def _print_report(rep) -> None:
    ld = rep.load
    gpus = f"{rep.gpus} × " if rep.gpus > 1 else ""
    print(f"{rep.model} · {rep.quant} weights · {rep.kv_dtype} KV cache · {rep.runtime} on {gpus}{rep.hardware}")
    hit = f", {ld.prefix_hit:.0%} of each prompt cached" if ld.prefix_hit else ""
    spread = (f" on average ({num(min(ld.prompt_points))}–{num(max(ld.prompt_points))} from the 3rd to the 97th "
              f"percentile)" if ld.prompt_points else "")
    out_spread = (f" on average ({num(min(ld.output_points))}–{num(max(ld.output_points))})"
                  if ld.output_points else "")
    print(f"load: {_load_text(ld)}; prompt {ld.prompt_tokens:,}{spread}{hit}, output {ld.output_tokens:,}{out_spread} "
          f"tokens")
    print(f"scheduler: up to {rep.max_seqs:,} running sequences, {rep.chunk_tokens:,} tokens per step; "
          f"the KV cache holds {num(rep.kv_capacity)} sequences at this length\n")
    if not rep.fits:
        print("Does not fit.")
    else:
        print(f"TTFT: {duration_ms(rep.ttft_ms)} mean ({_band(rep.ttft_low_ms, rep.ttft_high_ms, duration_ms)}) · "
              f"p50 {duration_ms(rep.ttft_p50_ms)} · p90 {duration_ms(rep.ttft_p90_ms)} · "
              f"p99 {duration_ms(rep.ttft_p99_ms)}")
        print(f"Inter-token latency: {duration_ms(rep.itl_ms)} mean ({_band(rep.itl_low_ms, rep.itl_high_ms, duration_ms)})"
              f" · p50 {duration_ms(rep.itl_p50_ms)} · p90 {duration_ms(rep.itl_p90_ms)} · p99 {duration_ms(rep.itl_p99_ms)} "
              f"({num(rep.tok_s_per_user)} tok/s per user)")
        if math.isfinite(rep.e2e_ms):
            print(f"End to end: {duration_ms(rep.e2e_ms)} per request")
        print(f"Throughput: {num(rep.throughput_tok_s)} output tok/s "
              f"({_band(rep.throughput_low_tok_s, rep.throughput_high_tok_s, num)}) · {num(rep.request_rate_rps)} requests/s")
        if ld.kind == "offline" and ld.requests and rep.request_rate_rps > 0:
            done, fast, slow = rep.batch_seconds()
            print(f"Batch: all {ld.requests:,} done in {duration_ms(done * 1e3)} "
                  f"({_band(fast * 1e3, slow * 1e3, duration_ms)}) · TPOT {duration_ms(rep.tpot_ms)} mean per request")
        queue = "" if not rep.queue or not math.isfinite(rep.queue) else f" · {num(rep.queue)} waiting"
        print(f"Running batch: {num(rep.running_batch)} of {num(rep.capacity)}{queue} · limited by {rep.bound}")
    print(f"Efficiency: {rep.efficiency_basis}")
    for n in rep.notes:
        print(f"note: {n}")


def _band(lo: float, hi: float, fmt) -> str:
    if math.isfinite(lo) and math.isinf(hi):
        return f"{fmt(lo)}–∞: saturated at the pessimistic edge"
    return f"{fmt(lo)}–{fmt(hi)}" if math.isfinite(lo) and math.isfinite(hi) else "band n/a"


def _print_sweep(reports) -> None:
    rows = [[f"{r.load.concurrency:g}", duration_ms(r.ttft_ms), duration_ms(r.ttft_p90_ms), duration_ms(r.itl_ms),
             num(r.tok_s_per_user), num(r.throughput_tok_s), num(r.running_batch), num(r.queue), r.bound]
            for r in reports if r.fits]
    print(table(["concurrency", "TTFT", "TTFT p90", "ITL", "tok/s/user", "total tok/s", "running", "waiting", "limit"],
                rows))


def _optional_number(name: str, text) -> float | None:
    if text is None:
        return None
    if not str(text).strip():
        raise AdvisorError(f"--{name} is empty; give a number or leave the flag out")
    v = _fraction(name, text)
    if v <= 0:
        raise AdvisorError(f"{name} must be positive, got {text!r}")
    return v


def _count(name: str, text) -> int | None:
    """A count flag of the disaggregated split: None when not given, else a whole number ≥ 1."""
    if text is None:
        return None
    if not str(text).strip():
        raise AdvisorError(f"--{name} is empty; give a number or leave the flag out")
    n = whole_number(name, text, 0)
    if n < 1:
        raise AdvisorError(f"--{name} must be at least 1, got {text!r}")
    return n


def _disaggregated(cat: Catalog, cfg, load: Load, args: argparse.Namespace) -> int:
    split = disaggregate(cat, cfg, load,
                         prefill_instances=_count("prefill-instances", args.prefill_instances),
                         decode_instances=_count("decode-instances", args.decode_instances),
                         ttft_ms=_optional_number("ttft-ms", args.ttft_ms), tok_s=_optional_number("tok-s", args.tok_s),
                         prefill_gpus=_count("prefill-gpus", getattr(args, "prefill_gpus", None)),
                         prefill_hardware=cat.hardware_named(args.prefill_hardware)
                         if getattr(args, "prefill_hardware", None) else None)
    if args.json:
        print(json_text(split.to_dict()))
        return EXIT_OK if split.meets else EXIT_UNMET
    inst = f"{split.gpus_per_instance} × {split.hardware}" if split.gpus_per_instance > 1 else split.hardware
    phw = split.prefill_hardware or split.hardware
    pinst = f"{split.prefill_gpus} × {phw}" if split.prefill_gpus > 1 else phw
    print(f"{split.model} · {split.runtime}; each prefill instance {pinst}, each decode instance {inst}")
    print(f"load: {_load_text(load)}; prompt {load.prompt_tokens:,}, output {load.output_tokens:,} tokens\n")
    print(f"Disaggregated: {split.prefill_instances} prefill + {split.decode_instances} decode instance(s) = "
          f"{split.gpus} GPUs")
    print(f"  prefill: {duration_ms(split.prefill_s * 1e3)} per prompt · utilisation {split.prefill_utilisation:.0%}")
    print(f"  KV hand-over: {duration_ms(split.transfer_ms)} per request at {num(split.link_gb_s)} GB/s per GPU")
    print(f"  decode: {num(split.running_batch)} running per instance of {num(split.kv_capacity)} the KV cache holds")
    rows = [["disaggregated", duration_ms(split.ttft_ms), duration_ms(split.ttft_p90_ms), duration_ms(split.itl_ms),
             num(1e3 / split.itl_ms), num(split.throughput_tok_s), split.bound]]
    c = split.colocated
    if c is not None and c.fits:
        replicas = max(1, round(split.gpus / split.gpus_per_instance))
        rows.append([f"colocated ({replicas} replicas)", duration_ms(c.ttft_ms), duration_ms(c.ttft_p90_ms),
                     duration_ms(c.itl_ms), num(c.tok_s_per_user),
                     num(c.throughput_tok_s * replicas), c.bound])
    print()
    print(table(["deployment", "TTFT", "TTFT p90", "ITL", "tok/s/user", "total tok/s", "limit"], rows))
    if split.colocated_replicas:
        n = split.colocated_replicas
        print(f"\nColocated, the targets need {n} replica{'s' if n > 1 else ''} of {inst} "
              f"({n * split.gpus_per_instance} GPUs) against {split.gpus} disaggregated.")
    for n in split.notes:
        print(f"note: {n}")
    if not split.meets:
        print("advisor: no split in reach meets the targets", file=sys.stderr)
        return EXIT_UNMET
    return EXIT_OK


def cmd_serve(args: argparse.Namespace) -> int:
    cat = user_catalog()
    if args.cases:
        from advisor.cli.csvio import refuse_flags_with_cases

        refuse_flags_with_cases(args, SERVE_CASES_IGNORE)
        return _serve_cases(cat, args)
    if args.out:
        raise AdvisorError("--out writes the table of --cases: give --cases FILE.csv, or drop --out")
    if not args.hardware or not args.model:
        raise AdvisorError("serve needs --hardware and --model (or --cases FILE.csv)")
    cfg = configure(cat, hardware=args.hardware, model=args.model, quant=args.quant, kv_dtype=args.kv_dtype,
                    runtime=args.runtime, gpus=args.gpus, parallelism=args.parallel, memory_gb=args.memory_gb, threads=args.threads,
                    layout=args.layout, network=args.network)
    load = load_from(prompt=args.prompt, output=args.output, concurrency=args.concurrency, rate=args.rate,
                     offline=args.offline, think_s=args.think_s, prefix_hit=args.prefix_hit, max_seqs=args.max_seqs,
                     prompt_spread=args.prompt_spread, lengths=args.lengths,
                     chunk_tokens=args.chunk_tokens, requests=args.requests,
                     prompt_cache=getattr(args, "prompt_cache", True), output_spread=args.output_spread)
    if args.disaggregate or any(v is not None for v in (args.prefill_instances, args.decode_instances,
                                                        getattr(args, "prefill_gpus", None),
                                                        getattr(args, "prefill_hardware", None))):
        if load.kind == "offline" and load.requests:
            raise AdvisorError("--disaggregate sizes prefill and decode pools for a steady load; a batch of "
                               "--requests sent at once is not one: drop --requests (the server at capacity) "
                               "or --disaggregate")
        return _disaggregated(cat, cfg, load, args)
    for flag, value in (("--ttft-ms", args.ttft_ms), ("--tok-s", args.tok_s)):
        if value is not None:   # once silently ignored
            raise AdvisorError(f"{flag} goes with --disaggregate (a target for choosing its split); serve "
                               "reports TTFT and speed for the load given, and recommend sizes for targets")
    if args.sweep:
        reports = concurrency_sweep(cat, cfg, load)
        if args.json:
            print(json_text({"sweep": [r.to_dict() for r in reports]}))
        else:
            _print_report(reports[-1]) if not reports[0].fits else _print_sweep(reports)
        return EXIT_OK if reports[0].fits else EXIT_UNMET
    rep = serve(cat, cfg, load)
    if args.json:
        print(json_text(rep.to_dict()))
    else:
        _print_report(rep)
    if not rep.fits:
        return does_not_fit(rep.notes[0])
    return EXIT_OK


def _serve_cases(cat: Catalog, args: argparse.Namespace) -> int:
    def fill(cells: dict[str, str], result: dict) -> str:
        cfg = configure(cat, hardware=cells.get("hardware"), model=cells.get("model"),
                        quant=cells.get("quant") or None, kv_dtype=cells.get("kv_dtype") or None,
                        runtime=cells.get("runtime") or None, gpus=cells.get("gpus"),
                        parallelism=cells.get("parallel") or None, memory_gb=cells.get("memory_gb") or None, threads=cells.get("threads") or None)
        load = load_from(prompt=cells.get("prompt"), output=cells.get("output"),
                         concurrency=cells.get("concurrency") or None, rate=cells.get("rate") or None,
                         think_s=cells.get("think_s"), prefix_hit=cells.get("prefix_hit"),
                         requests=cells.get("requests") or None, prompt_cache=getattr(args, "prompt_cache", True))
        rep = serve(cat, cfg, load)
        d = rep.to_dict()
        for c in SERVE_CSV_OUTPUTS[:-1]:
            result[c] = csv_value(d[c])
        return "" if rep.fits else rep.notes[0]

    failed = run_cases(args.cases, args.out, SERVE_CSV_INPUTS, lambda columns: list(SERVE_CSV_OUTPUTS), fill)
    return EXIT_UNMET if failed else EXIT_OK


def register(sub) -> None:
    p = sub.add_parser("serve", help="a server under load: TTFT, inter-token latency and throughput for N users")
    add_configuration(p)
    p.add_argument("--prompt", help=f"prompt tokens per request (default {DEFAULT_PROMPT})")
    p.add_argument("--output", help=f"output tokens per request (default {DEFAULT_OUTPUT})")
    p.add_argument("--concurrency", help="closed loop: clients, each sending its next request when the last ends")
    p.add_argument("--rate", help="open loop: Poisson arrivals, requests per second ('inf' = offline)")
    p.add_argument("--offline", action="store_true", help="everything queued at once: the maximum throughput")
    p.add_argument("--think-s", dest="think_s", help="closed loop: seconds between a response and the next request")
    p.add_argument("--requests", help="closed loop: a benchmark run of this many requests (vllm bench serve "
                                      "--num-prompts), whose clients all start at once: that first wave's TTFT "
                                      "is in the figures, and with one fixed length and no think time the clients "
                                      "stay in its groups (default: the steady state alone). With --offline: a "
                                      "batch job of this many requests sent at once, timed to the last answer")
    p.add_argument("--prefix-hit", dest="prefix_hit", help="fraction of each prompt served from the prefix cache")
    p.add_argument("--no-prompt-cache", dest="prompt_cache", action="store_false",
                   help="the server runs without its host-memory prompt cache (llama-server --cache-ram 0), "
                        "which otherwise saves each finished request before the next prompt")
    p.add_argument("--prompt-spread", dest="prompt_spread",
                   help="prompts vary in length: their coefficient of variation around --prompt (log-normal; e.g. 1.0)")
    p.add_argument("--output-spread", dest="output_spread",
                   help="outputs vary in length: their coefficient of variation around --output (log-normal; "
                        "1.0 = a reply that ends at any token with the same chance). A batch sent at once "
                        "(--offline --requests) ends with its longest outputs at a small batch")
    p.add_argument("--lengths", help="a trace of request lengths (CSV or JSON Lines with prompt/input and "
                                     "output columns, or one prompt length per line): the load's mix of lengths")
    p.add_argument("--max-seqs", dest="max_seqs", help="running sequences at most (default: the runtime's)")
    p.add_argument("--chunk-tokens", dest="chunk_tokens", help="tokens per engine step (default: the runtime's)")
    p.add_argument("--sweep", action="store_true", help="the throughput–latency curve over concurrency 1, 2, 4 …")
    p.add_argument("--disaggregate", action="store_true",
                   help="prompts and decoding on separate instances: how many of each, and the KV hand-over")
    p.add_argument("--prefill-instances", dest="prefill_instances", help="with --disaggregate: fix the prefill pool")
    p.add_argument("--prefill-hardware", dest="prefill_hardware",
                   help="with --disaggregate: the prefill pool on another GPU type (same runtime, weights and KV "
                        "cache); the KV cache then moves over the network between nodes")
    p.add_argument("--decode-instances", dest="decode_instances", help="with --disaggregate: fix the decode pool")
    p.add_argument("--prefill-gpus", dest="prefill_gpus",
                   help="with --disaggregate: GPUs per prefill instance (default: the size, 1-8, that needs the "
                        "fewest GPUs in all; decode instances use --gpus)")
    p.add_argument("--ttft-ms", dest="ttft_ms", help="with --disaggregate: TTFT p90 target for choosing the split")
    p.add_argument("--tok-s", dest="tok_s", help="with --disaggregate: per-user tok/s target for choosing the split")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--cases", help="CSV of loads to serve (columns: " + ",".join(SERVE_CSV_INPUTS) + ")")
    p.add_argument("--out", help="with --cases: write the CSV here (default: standard output)")
    p.set_defaults(func=cmd_serve)
