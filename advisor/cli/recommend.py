"""`advisor recommend` and `advisor will-it-run`: the buying question and its reverse."""

from __future__ import annotations

import argparse
import math
import re

from advisor.cli.options import add_memory, add_threads
from advisor.data.catalog import Catalog, user_catalog
from advisor.model.config import context_note
from advisor.model.devices import NETWORKS_GBIT_S
from advisor.data.errors import AdvisorError
from advisor.text.format import duration_ms, json_text, num, table
from advisor.plan.pricing import thin_quote_factor
from advisor.plan.recommend import by_hardware, distinct
from advisor.text.verdicts import EVIDENCE_WORDS, VERDICTS, candidate_record, reason_text, why_first
from advisor.cli.exit_codes import EXIT_OK, EXIT_UNMET

#: The verdict in a table cell.
SHORT_VERDICT = {"margin": "margin", "estimate": "if estimate", "miss": "misses"}


def _csv_list(text: str | None) -> list[str]:
    return [x.strip() for x in (text or "").split(",") if x.strip()]


def _number(name: str, text, kind=float):
    if text is None:
        return None
    t = str(text).strip()
    if "," in t and not re.fullmatch(r"[+-]?\d{1,3}(,\d{3})+(\.\d*)?", t):
        # thousands separators only where they group thousands: "2,048" is 2048, "1,2" is not 12
        raise AdvisorError(f"--{name} must be a number, got {text!r}")
    try:
        v = kind(t.replace("_", "").replace(",", ""))
    except ValueError:
        raise AdvisorError(f"--{name} must be a number, got {text!r}") from None
    if not math.isfinite(v):
        raise AdvisorError(f"--{name} must be a finite number, got {text!r}")
    return v


def sized_catalog(cat: Catalog, args: argparse.Namespace) -> Catalog:
    """``cat`` with each --hardware device in the memory size its name or --memory-gb gives (sweeps
    read the catalog's entries, so a chosen size must be in the catalog they run on)."""
    from advisor.model.config import memory_size

    memory_gb = memory_size(getattr(args, "memory_gb", None))
    names = _csv_list(args.hardware)
    if memory_gb is not None and not names:
        raise AdvisorError("--memory-gb needs --hardware: the device whose memory size it sets")
    sized = [hw for hw in (_sized(cat, n, memory_gb) for n in names) if hw.variant_of]
    return cat.with_hardware(*sized) if sized else cat


def _sized(cat: Catalog, name: str, memory_gb=None):
    """The hardware ``name`` designates; another memory size than the entry's own is an entry of its
    own ("apple-m4-max-40c@64gb"), so that two sizes of one chip are two rows of the answer."""
    import dataclasses

    hw = cat.hardware_named(name, memory_gb)
    if hw == cat.hardware.get(hw.key):
        return hw
    return dataclasses.replace(hw, key=f"{hw.key}@{hw.memory_gib:g}gb", variant_of=hw.key, aliases=())


def requirements_from_args(cat: Catalog, args: argparse.Namespace):
    from advisor.plan.pricing import DEFAULT_LIFE_YEARS
    from advisor.plan.recommend import DEFAULT_KV, DEFAULT_MIN_BITS, Requirements

    model = cat.model_named(args.model)
    kinds = tuple(_csv_list(args.hardware_kind))
    from advisor.data.specs import HARDWARE_KINDS

    bad = [k for k in kinds if k not in HARDWARE_KINDS]
    if bad:
        raise AdvisorError(f"unknown hardware kind {bad[0]!r}; choose from {', '.join(HARDWARE_KINDS)}")
    from advisor.data.specs import VENDORS

    vendors = []
    for v in _csv_list(args.vendor):
        match = [x for x in VENDORS if x.lower() == v.lower()]
        if not match:
            raise AdvisorError(f"unknown vendor {v!r}; choose from {', '.join(VENDORS)}")
        vendors.append(match[0])
    memory_gb = getattr(args, "memory_gb", None)
    from advisor.model.config import memory_size

    hardware = tuple(_sized(cat, h, memory_size(memory_gb)).key for h in _csv_list(args.hardware))
    runtimes = tuple(cat.runtime_named(r).key for r in _csv_list(args.runtime))
    kv = tuple(cat.kv_dtype_named(k).key for k in _csv_list(args.kv_dtype)) or DEFAULT_KV
    floor = cat.quant_named(args.min_quant) if args.min_quant else None
    prompt = _number("prompt", args.prompt, int)
    output = _number("output", args.output, int)
    mix: dict = {}
    if getattr(args, "lengths", None):
        from advisor.data.lengths import read_lengths
        from advisor.model.serving import prompt_mix

        if prompt is not None or getattr(args, "prompt_spread", None):
            raise AdvisorError("give --lengths, or --prompt (and --prompt-spread): not both")
        trace = read_lengths(args.lengths)
        mix = prompt_mix(trace.mean_prompt, samples=trace.prompts)
        prompt = mix.pop("prompt_tokens")
        if trace.mean_output is not None:
            if output is not None:
                raise AdvisorError("--lengths already gives the output lengths: drop --output")
            output = max(int(round(trace.mean_output)), 2)
    elif getattr(args, "prompt_spread", None):
        from advisor.model.serving import prompt_mix

        mix = prompt_mix(1024 if prompt is None else prompt, _number("prompt-spread", args.prompt_spread))
        mix.pop("prompt_tokens")
    max_gpus = _number("max-gpus", args.max_gpus, int)
    return Requirements(
        model=model, prompt_tokens=1024 if prompt is None else prompt, output_tokens=256 if output is None else output,
        context_tokens=_number("context", args.context, int), users=_number("users", args.users, int),
        rps=_number("rps", args.rps), ttft_ms=_number("ttft-ms", args.ttft_ms), tok_s=_number("tok-s", args.tok_s),
        hardware_kinds=kinds, vendors=tuple(vendors), hardware=hardware,
        max_gpus=max_gpus,
        prefix_hit=_number("prefix-hit", getattr(args, "prefix_hit", None)) or 0.0,
        budget_usd=_number("budget-usd", args.budget_usd), budget_usd_hour=_number("budget-usd-hour", args.budget_usd_hour),
        runtimes=runtimes, min_quality_rank=floor.quality_rank if floor else 0, quality_floor=floor.name if floor else "",
        max_ppl_delta=_number("max-ppl", args.max_ppl), kv_dtypes=kv, safe=bool(args.safe),
        think_s=_number("think-s", args.think_s) or 0.0, burst=bool(args.burst),
        # (other commands that reuse this parser, such as report, may not offer these flags)
        min_bits=DEFAULT_MIN_BITS if getattr(args, "min_bits", None) is None else _number("min-bits", args.min_bits),
        cost_basis=(getattr(args, "cost_basis", None) or "").lower(),
        allow_spec=bool(getattr(args, "allow_spec", False)), allow_offload=bool(getattr(args, "allow_offload", False)),
        life_years=_number("life-years", getattr(args, "life_years", None)) or DEFAULT_LIFE_YEARS,
        hours_per_day=_number("hours-per-day", getattr(args, "hours_per_day", None)),
        usd_per_kwh=_number("usd-per-kwh", getattr(args, "usd_per_kwh", None)),
        own_host=bool(getattr(args, "own_host", False)), network=getattr(args, "network", None) or "",
        # --max-gpus past a node asks for instances across nodes
        across_nodes=True if (max_gpus or 0) > 8 else None, **mix,
    )


def _cost_cell(c, basis):
    if basis == "hour":
        if not c.cost_usd_hour:
            return "no price"
        per_m = f" · ${c.usd_per_million_tokens:,.2f}/M tok" if c.usd_per_million_tokens else ""
        return f"${c.cost_usd_hour:,.2f}/h{per_m}" + (" · 1 quote" if c.price_thin_rent else "")
    if basis == "purchase":
        if not c.cost_usd:
            return "no price"
        power = f" + ${c.power_usd_month:,.0f}/mo power" if c.power_usd_month else ""
        return f"${c.cost_usd:,.0f}{power}" + (" · few quotes" if c.price_thin_buy else "")
    return "no price"


def _power_cell(c) -> str:
    if not c.power_kw:
        return "—"
    per_token = f" · {num(c.joules_per_token)} J/tok" if c.joules_per_token else ""
    return f"{num(c.power_kw)} kW{per_token}"


def _buy_vs_rent(c) -> str:
    """Buying beside renting 24/7, and when buying breaks even."""
    if not (c.cost_usd and c.rent_usd_month):
        return "—"
    even = f"even at {c.break_even_months:.0f} mo" if c.break_even_months else "never even"
    return f"${c.cost_usd:,.0f} vs ${c.rent_usd_month:,.0f}/mo · {even}"


BASIS_TEXT = {"hour": "ranked by rent: on-demand $/GPU-hour × GPUs, the median of ≥ 3 dated quotes where there are "
                      "(and $/million output tokens at the predicted throughput)",
              "purchase": "ranked by buy: the whole machine (street price, else launch price, with its host) plus its "
                          "electricity over the stated life",
              "headroom": "no prices known for these: ranked by quality, then memory and speed headroom"}


def cmd_recommend(args: argparse.Namespace) -> int:
    from advisor.plan.recommend import recommend

    cat = sized_catalog(user_catalog(), args)
    req = requirements_from_args(cat, args)
    if getattr(args, "export", None):
        from advisor.plan.exports import KINDS

        if args.export[0] not in KINDS:
            raise AdvisorError(f"--export: unknown kind {args.export[0]!r}; one of {', '.join(KINDS)}")
    rec = recommend(cat, req)
    req = rec.requirements   # with the defaults recommend filled in (a usable speed for several users)
    if args.top is not None and args.top < 1:
        raise AdvisorError(f"--top must be at least 1, got {args.top}")
    top_n = args.top or 10
    written = []
    if getattr(args, "export", None):
        # before anything is printed: a kind that cannot express the answer is the only line
        if not rec.n_passing:
            raise AdvisorError("--export: no configuration meets every requirement; nothing to export")
        written = _export(args, req, by_hardware(rec, 1)[0].best)
    if args.json:

        cands = rec.all() if not args.top else distinct(rec, top_n) + rec.closest_misses(top_n)
        doc = {"model": req.model.name, "users": rec.users, "context_tokens": req.context,
               "context_note": context_note(req.model, req.context),
               "prompt_tokens": req.prompt_tokens, "output_tokens": req.output_tokens, "ttft_ms_target": req.ttft_ms,
               "load": rec.load_kind, "think_s": req.think_s,
               "tok_s_target": req.tok_s, "tok_s_target_is_default": req.tok_s_default, "safe": req.safe, "cost_basis": rec.cost_basis,
               "cost_basis_why": rec.cost_basis_why, "context_is_default": req.context_is_default,
               "min_bits": req.min_bits, "native_quant": req.model.native_quant or "bf16",
               "configurations": len(rec), "passing": rec.n_passing, "passing_with_margin": rec.n_margin, "sweep_ms": round(rec.elapsed_ms, 1),
               "candidates": [candidate_record(c) for c in cands]}
        if written:
            doc["exported"] = [str(p) for p in written]
        if getattr(args, "disaggregate", False) and rec.n_passing:
            split = disaggregated_alternative(cat, req, rec, by_hardware(rec, 1)[0].best)
            doc["disaggregated"] = split.to_dict() if split is not None else None
        print(json_text(doc))
        return EXIT_OK if rec.n_passing else EXIT_UNMET
    targets = []
    if req.ttft_ms:
        targets.append(f"TTFT ≤ {duration_ms(req.ttft_ms)}")
    if req.tok_s:
        targets.append(f"≥ {num(req.tok_s)} tok/s per user"
                       + (" (default for several users: about reading speed; --tok-s to change)" if req.tok_s_default else ""))
    if rec.load_kind == "open":
        users = f"{num(req.rps)} requests/s (Poisson arrivals, ≈ {rec.users} in flight)"
    else:
        users = f"{rec.users} concurrent user{'s' if rec.users > 1 else ''}"
        users += " arriving at once (burst)" if req.burst else (
            f" (closed loop, {num(req.think_s)} s think time)" if req.think_s else " (closed loop)")
    context = f"context {req.context:,}" + (" (default for chat; --context to change)" if req.context_is_default else "")
    mixed = (f" on average ({num(min(req.prompt_points))}–{num(max(req.prompt_points))})"
             if req.prompt_points else "")
    print(f"{req.model.name} for {users} · prompt {req.prompt_tokens:,}{mixed} · output {req.output_tokens:,} · "
          f"{context}" + (f" · targets: {', '.join(targets)}" if targets else ""))
    beyond = context_note(req.model, req.context)
    if beyond:
        print(f"Note: {beyond}.")
    floor = f"weights at least {req.min_bits:g}-bit class (--min-bits)" if req.min_bits > 1 else "no bit floor"
    native = req.model.native_quant.upper() if req.model.native_quant else "16-bit"
    print(f"Quality: {native} (the release format) is the reference; {floor}; figures are llama.cpp's KL divergence "
          f"on Llama-3-8B, else \"unmeasured\".")
    if req.safe:
        print("Safe mode: judged by the pessimistic edge of each prediction's band.")
    why = f" ({rec.cost_basis_why})" if rec.cost_basis_why and rec.cost_basis != "headroom" else ""
    tiers = (f"{rec.n_margin:,} meet every requirement with margin, {rec.n_passing - rec.n_margin:,} only if the "
             f"estimate holds" if rec.n_passing else "none meets every requirement")
    print(f"Swept {len(rec):,} configurations in {rec.elapsed_ms:.0f} ms: {tiers}; "
          f"{BASIS_TEXT[rec.cost_basis]}{why}.\n")
    if not rec.n_passing:
        print("No configuration meets every requirement. Closest misses (those that fit first):")
        misses = rec.distinct(8, misses=True)
        print(table(["configuration", "runtime", "weights", "KV", "TTFT", "tok/s/user", "mem/GPU GB", "why not"],
                    [[c.label, c.runtime.name, c.quant.name, c.kv_dtype.name,
                      duration_ms(c.ttft_ms) if c.ttft_ms == c.ttft_ms else "—", num(c.tok_s) if c.tok_s == c.tok_s else "—",
                      f"{num(c.memory_needed_gb)}/{num(c.memory_usable_gb)}", "; ".join(reason_text(r) for r in c.failures[:2])]
                     for c in misses]))
        return EXIT_UNMET
    groups = by_hardware(rec, top_n)
    best = [g.best for g in groups]

    def row(mark, c):
        return [mark + ("*" if c.pareto else "") + ("†" if c.technique else ""), c.label, c.runtime.name, c.quant.name, c.kv_dtype.name,
                f"{duration_ms(c.ttft_ms)} ({duration_ms(c.ttft_safe_ms)})", f"{num(c.tok_s)} ({num(c.tok_s_safe)})",
                num(c.throughput_tok_s), f"{num(c.memory_needed_gb)}/{num(c.memory_usable_gb)}",
                _cost_cell(c, rec.cost_basis), _power_cell(c), c.quality, SHORT_VERDICT[c.tier],
                EVIDENCE_WORDS[c.evidence]] + ([_buy_vs_rent(c)] if both else [])

    both = any(g.best.cost_usd and g.best.rent_usd_month for g in groups)   # buy and rent beside each other
    rows = [row(str(i), g.best) for i, g in enumerate(groups, 1)]
    ttft_head = "TTFT (safe)" if req.burst else "TTFT p90 (safe)"
    print(f"Best configuration per hardware ({len(groups)} of {rec.hardware_passing()} "
          f"that pass):")
    print(table(["#", "configuration", "runtime", "weights", "KV", ttft_head, "tok/s/user (safe)", "total tok/s",
                 "mem/GPU GB", "cost", "power", "quality", "verdict", "data"] + (["buy vs rent 24/7"] if both else []),
                rows))
    print("* on the Pareto front of cost, per-user speed and quality. (safe) = the pessimistic edge of the band. "
          "power: the most the deployment draws (its share of the server or rack these GPUs are sold in, at the "
          "vendor's maximum system power; else every GPU at its board power, hosts and network not counted) and "
          "joules per output token at the predicted throughput.")
    print("verdict: margin = every target met at the pessimistic edge of the band; if estimate = met at the prediction "
          "only (ranked after). data: measured = the runtime's calibration has rows of this hardware generation and "
          "format class; extrapolated = it has not; no data = the runtime's defaults.")
    for i, g in enumerate(groups, 1):
        if g.best.technique:
            print(f"† #{i} {g.best.technique}.")
    if len(best) > 1:
        print("Why #1: " + why_first(best[0], best[1], rec.cost_basis))
    alts = [(i, c) for i, g in enumerate(groups[:3], 1) for c in g.alternatives]
    if alts:
        print("\nAlternatives on the same hardware:")
        for i, c in alts:
            print(f"  #{i}: {c.label} · {c.runtime.name} · {c.quant.name} · {c.kv_dtype.name} KV · "
                  f"{num(c.tok_s)} tok/s/user · {_cost_cell(c, rec.cost_basis)} · {VERDICTS[c.tier]}")
    print("\nLaunch:")
    for i, c in enumerate(best[:3], 1):
        each = f" (on each of the {c.replicas} replicas, behind one load balancer)" if c.replicas > 1 else ""
        print(f"  #{i}{each}: {c.launch or f'none: {c.runtime.name} is a hosted service or vendor appliance'}")
    if rec.cost_basis in ("hour", "purchase") and any(
            (c.price_thin_rent if rec.cost_basis == "hour" else c.price_thin_buy) for c in best):
        print(f"\nA price on fewer than 3 quotes is ranked at ×{thin_quote_factor(cat):.2f}: where devices have "
              "3 or more current quotes, their median sits that far above their cheapest.")
    priced = [c for c in best if c.price_note]
    if priced:
        print("\nPrices used (dated; override with your own quote):")
        for c in {c.hardware.key: c for c in priced}.values():
            print(f"  {c.hardware.name}: {c.price_note}")
    if getattr(args, "disaggregate", False):
        _print_disaggregated(cat, req, rec, best[0])
    if written:
        print(f"\nWrote #1 as {args.export[0]}: " + ", ".join(str(p) for p in written))
    return EXIT_OK


def disaggregated_alternative(cat: Catalog, req, rec, c):
    """#1 as separate prefill and decode pools (`advisor.model.disaggregation`) for the whole load:
    its instance as the decode instance, prefill instances of 1-8 GPUs of the same hardware; None
    where the split cannot be sized (a burst, no prompt, nothing in reach)."""
    from advisor.model.config import Config
    from advisor.model.disaggregation import disaggregate
    from advisor.model.roofline import Workload
    from advisor.model.serving import Load
    from advisor.plan.launch import keeps_prompt_cache

    if req.burst or req.prompt_tokens < 1 or not c.launch:
        return None
    cfg = Config(c.hardware, req.model, c.quant, c.kv_dtype, c.runtime, c.gpus, "",
                 Workload(batch=1, prompt_tokens=req.prompt_tokens, output_tokens=max(req.output_tokens, 2)),
                 c.config_layout, req.network)
    load = Load(kind="open" if rec.load_kind == "open" else "closed", concurrency=float(rec.users),
                rate_rps=req.rps or 0.0, think_s=req.think_s, prompt_tokens=req.prompt_tokens,
                output_tokens=max(req.output_tokens, 2), prompt_cache=keeps_prompt_cache(req))
    try:
        split = disaggregate(cat, cfg, load, ttft_ms=req.ttft_ms, tok_s=req.tok_s)
    except AdvisorError:
        return None
    return split if split.meets else None


def _print_disaggregated(cat: Catalog, req, rec, c) -> None:
    split = disaggregated_alternative(cat, req, rec, c)
    print("\nDisaggregated alternative for #1:")
    if split is None:
        print("  none in reach: no split of up to 16 prefill and 16 decode instances of it meets the targets")
        return
    pinst = f"{split.prefill_gpus} × {split.prefill_hardware or split.hardware}"
    print(f"  {split.prefill_instances} prefill instance(s) of {pinst} + {split.decode_instances} decode instance(s) "
          f"of {c.gpus} × {c.hardware.name} = {split.gpus} GPUs, against {c.total_gpus} colocated; "
          f"TTFT p90 {duration_ms(split.ttft_p90_ms)}, {num(1e3 / split.itl_ms)} tok/s per user, "
          f"{num(split.throughput_tok_s)} tok/s in all; KV hand-over {duration_ms(split.transfer_ms)} a request "
          f"at {num(split.link_gb_s)} GB/s per GPU")


def _export(args: argparse.Namespace, req, c) -> list:
    """Write candidate ``c`` as files of the kind --export names; a kind that cannot express it (a
    compose file for a plan across machines) is a one-line error."""
    from advisor.plan import exports
    from advisor.plan.deployment import from_candidate

    kind, folder = args.export
    if not c.launch:
        raise AdvisorError(f"--export: {c.runtime.name} has no launch line to export (a hosted service or appliance)")
    return exports.write(from_candidate(c, req), kind, folder)


def cmd_will_it_run(args: argparse.Namespace) -> int:
    from advisor.plan.machine import THIS_MACHINE_KEY
    from advisor.plan.will_it_run import DEFAULT_MIN_BITS, DEFAULT_MIN_TOK_S, HOST_RAM_SHARE, MODES, will_it_run

    from advisor.data.catalog import with_threads
    from advisor.model.config import memory_size, whole_number

    cat = user_catalog()
    hw = cat.hardware_named(args.hardware, memory_size(getattr(args, "memory_gb", None)))
    if args.threads:
        hw = with_threads(hw, whole_number("--threads", args.threads, 0))
    rt = cat.runtime_named(args.runtime) if args.runtime else None
    gpus = _number("gpus", args.gpus, int) or 1
    ctx = _number("context", args.context, int) or 4096
    host_ram = _number("host-ram-gb", args.host_ram_gb)
    ram_note = "--host-ram-gb"
    if host_ram is None and hw.key == THIS_MACHINE_KEY:
        from probes.cpu import describe

        host_ram, ram_note = describe().ram_gb, "this machine's RAM"
    min_bits = _number("min-bits", args.min_bits) or DEFAULT_MIN_BITS
    min_tok = _number("min-tok-s", args.min_tok_s) or DEFAULT_MIN_TOK_S
    quant = cat.quant_named(args.quant) if args.quant else None
    answer = will_it_run(cat, hw, rt, gpus, ctx, cat.model_named(args.model) if args.model else None,
                         min_bits=min_bits, min_tok_s=min_tok, host_ram_gb=host_ram, quant=quant)
    rt = answer.runtime

    def record(x):
        return {"model": x.model.name, "quant": x.quant.name if x.quant else None, "runs": x.fits,
                "mode": x.mode or None, "how": x.how or None, "grade": x.grade,
                "decode_tok_s": x.decode_tok_s if math.isfinite(x.decode_tok_s) else None,
                "weights_gb": x.weights_gb, "gpu_gb": x.needs_gb, "host_ram_gb": x.host_ram_gb,
                "max_context": x.max_context}

    if args.json:
        print(json_text({"hardware": hw.name, "gpus": gpus, "runtime": rt.name, "context_tokens": ctx,
                         "min_tok_s": min_tok, "fast_tok_s": answer.fast_tok_s, "min_bits": min_bits,
                         "quant": quant.name if quant is not None else None,
                         "host_ram_gb": host_ram, "rows": [record(x) for x in answer.rows],
                         "not_split": list(answer.unsplit)}))
        return EXIT_OK
    where = f"{gpus} × {hw.name}" if gpus > 1 else hw.name
    from advisor.model.devices import usable_memory_gb

    on_cpu = hw.kind == "cpu"
    modes = {**MODES, "gpu": "on the CPU"} if on_cpu else MODES
    mem_col = "RAM GB" if on_cpu else "GPU GB"
    if on_cpu:
        ram = f"CPU inference from {num(usable_memory_gb(hw))} GB of system RAM"
    elif hw.unified_memory or hw.kind in ("apple", "soc"):
        ram = f"one memory for CPU and GPU, of which the GPU may use {num(usable_memory_gb(hw))} GB"
    elif host_ram is not None:
        ram = f"{num(host_ram)} GB of system RAM ({ram_note})"
    else:
        ram = "system RAM not given (--host-ram-gb): offload rows say how much they need"
    weights = (f"weights in {quant.name} only (--quant)" if quant is not None else
               f"weights at least {min_bits:g}-bit class (--min-bits; a model's own release format always passes)")
    print(f"Will it run on {where} with {rt.name}? One user, context {ctx:,} tokens, F16 KV cache; {weights}; {ram}.")
    if quant is not None and not answer.rows:
        print(f"No model loads in {quant.name} in {rt.name}: choose another --quant or --runtime.")
        return EXIT_OK
    print(f"Speed: fast ≥ {num(answer.fast_tok_s)} tok/s, usable ≥ {num(min_tok)} (--min-tok-s), else too slow.\n")

    def ram_cell(x):
        return f"{num(x.host_ram_gb)} GB" if x.mode in ("experts", "offload") else "—"

    def speed(x):
        return num(x.decode_tok_s) if math.isfinite(x.decode_tok_s) else "—"

    if args.model:
        print(table(["weights", "runs as", "decode tok/s", "grade", mem_col, "system RAM", "max context"],
                    [[x.quant.name, modes.get(x.mode, "does not fit") + (f": {x.how}" if x.how else ""), speed(x),
                      x.grade, num(x.needs_gb), ram_cell(x), f"{x.max_context:,}" if x.max_context else "—"]
                     for x in answer.rows]))
        return EXIT_OK
    usable = [x for x in answer.rows if x.runs_usably]
    slow = [x for x in answer.rows if x.fits and not x.runs_usably]
    none_ = [x for x in answer.rows if not x.fits]
    print(f"{len(usable)} of {len(answer.rows)} models run usably, most capable first; {len(slow)} run too slowly or "
          f"need more RAM; {len(none_)} do not fit at all.")
    if usable or slow:
        print(table(["model", "weights", "runs as", "decode tok/s", "grade", mem_col, "system RAM", "max context"],
                    [[x.model.name, x.quant.name, modes.get(x.mode, "") + (f": {x.how}" if x.how else ""), speed(x),
                      x.grade, num(x.needs_gb), ram_cell(x), f"{x.max_context:,}"] for x in usable + slow]))
    if none_:
        offload = ("in all of the RAM" if on_cpu else "with offload" if gpus == 1
                   else "on the GPUs (offload to system RAM is modelled for one GPU)")
        print(f"\nDo not fit, even {offload} (smallest allowed weights, {mem_col} needed): "
              + "; ".join(f"{x.model.name} {num(x.needs_gb)}" for x in none_[:12])
              + (f" … and {len(none_) - 12} more" if len(none_) > 12 else ""))
    if answer.unsplit:
        print(f"\nLeft out: {rt.name} cannot split {len(answer.unsplit)} models' attention heads over tensor parallel "
              f"{gpus} (" + ", ".join(answer.unsplit[:8]) + (" …" if len(answer.unsplit) > 8 else "")
              + "): ask with fewer --gpus.")
    if any(x.mode in ("experts", "offload") for x in usable + slow):
        print(f"\nOffload rows keep part of the model in system RAM (at most {HOST_RAM_SHARE:.0%} of it counted as free); "
              "the CPU reads it at the host memory's speed.")
    return EXIT_OK


def register(sub) -> None:
    p = sub.add_parser("recommend", help="the cheapest hardware, GPU count and quantization for a workload")
    p.add_argument("--model", required=True, help="model name")
    p.add_argument("--prompt", help="typical prompt tokens (default 1024)")
    p.add_argument("--output", help="typical output tokens (default 256)")
    p.add_argument("--context", help="longest context every user must be able to reach (default prompt + output)")
    p.add_argument("--users", help="concurrent users: clients of a server, each sending its next request when "
                                   "the last one is answered (with --burst: prompts arriving at the same instant)")
    p.add_argument("--rps", help="or Poisson arrivals, requests per second")
    p.add_argument("--think-s", dest="think_s", help="with --users: seconds a user waits before the next request")
    p.add_argument("--burst", action="store_true",
                   help="judge all users' prompts arriving at once, decoded as one static batch (no queueing)")
    p.add_argument("--ttft-ms", dest="ttft_ms", help="time-to-first-token target, ms")
    p.add_argument("--tok-s", dest="tok_s", help="per-user decode speed target, tokens/s")
    p.add_argument("--hardware-kind", dest="hardware_kind",
                   help="comma list of datacenter, workstation, consumer, laptop, apple, soc")
    p.add_argument("--vendor", help="comma list of NVIDIA, AMD, Intel, Apple, CPU, Google, AWS …")
    p.add_argument("--hardware", help="comma list of hardware names to choose from")
    add_memory(p)
    p.add_argument("--max-gpus", dest="max_gpus",
                   help="GPUs in all at most, replicas included (default: as many as the load needs); past 8, "
                        "instances that span nodes are tried too (large models and loads of 1,000+ users or "
                        "50+ req/s try them anyway)")
    p.add_argument("--network", choices=sorted(NETWORKS_GBIT_S),
                   help="the network between nodes, per GPU (default: each hardware's reference system, e.g. "
                        "400 Gb/s InfiniBand on HGX H100)")
    p.add_argument("--prompt-spread", dest="prompt_spread",
                   help="prompts vary in length: their coefficient of variation around --prompt (log-normal; "
                        "TTFT p90 is judged over the mix)")
    p.add_argument("--lengths", help="a trace of request lengths (CSV or JSON Lines with prompt/input and output "
                                     "columns, or one prompt length per line): the users' mix of lengths")
    p.add_argument("--prefix-hit", dest="prefix_hit",
                   help="share of each prompt already in the prefix cache (a shared system prompt or RAG "
                        "context: 0.8 = 80 %% is computed once and reused; default 0)")
    p.add_argument("--budget-usd", dest="budget_usd", help="purchase budget, USD")
    p.add_argument("--budget-usd-hour", dest="budget_usd_hour", help="cloud budget, USD per hour")
    p.add_argument("--runtime", help="comma list of runtimes allowed")
    p.add_argument("--min-quant", dest="min_quant", help="worst acceptable weight format (e.g. q4_k_m)")
    p.add_argument("--max-ppl", dest="max_ppl", help="largest acceptable perplexity increase (llama.cpp, Llama-3-8B); "
                                                     "formats without a published figure are rejected")
    p.add_argument("--min-bits", dest="min_bits",
                   help="weakest bit class of the weights (default 4: Q4_K_M, AWQ INT4, NVFP4, MXFP4 …; 1 allows all); "
                        "a model's own release format always passes")
    p.add_argument("--cost-basis", dest="cost_basis", choices=("buy", "rent"),
                   help="rank by purchase price or by on-demand rent (default: rent for datacenter GPUs, "
                        "buy for consumer, workstation, Apple and SoC machines)")
    p.add_argument("--life-years", dest="life_years",
                   help="buy: the years over which a bought machine's electricity is counted (default 3)")
    p.add_argument("--hours-per-day", dest="hours_per_day",
                   help="buy: hours a day the machine runs at board power (default 24 for a server, 0 for one user)")
    p.add_argument("--usd-per-kwh", dest="usd_per_kwh",
                   help="buy: your electricity rate, USD per kWh (default: the newest sourced tariff)")
    p.add_argument("--own-host", dest="own_host", action="store_true",
                   help="buy: the cards go in a machine you already have (price the cards alone, not a host)")
    p.add_argument("--kv-dtype", dest="kv_dtype", help="comma list of KV-cache dtypes allowed (default f16,fp8,q8_0)")
    p.add_argument("--safe", action="store_true", help="judge by the pessimistic edge of each band")
    p.add_argument("--allow-spec", dest="allow_spec", action="store_true",
                   help="with --tok-s: try speculative decoding (the smallest catalog model of the same family as "
                        "draft) on configurations too slow without it, and say when it is what makes one pass")
    p.add_argument("--allow-offload", dest="allow_offload", action="store_true",
                   help="for one or two users: try partial offload to host RAM (llama.cpp -ngl, or --n-cpu-moe for MoE "
                        "models; vLLM/SGLang --cpu-offload-gb) on single GPUs that are too small, and say when it "
                        "is what makes one pass")
    p.add_argument("--top", type=int, help="how many to list (default 10; with --json: limit the candidates)")
    p.add_argument("--json", action="store_true", help="every candidate considered, with its verdict")
    p.add_argument("--disaggregate", action="store_true",
                   help="also size #1 as separate prefill and decode pools (its decode instance, prefill "
                        "instances of 1-8 GPUs of the same hardware) for the same load and targets, beside the "
                        "colocated answer")
    p.add_argument("--export", nargs=2, metavar=("KIND", "DIR"),
                   help="write the #1 configuration as files to run: compose (docker compose, one machine), "
                        "llm-d (Helm values of the llm-d modelservice chart) or launch (the engine's own "
                        "multi-node scripts), into DIR; each carries the predicted figures and the benchmark "
                        "command that checks them")
    p.set_defaults(func=cmd_recommend)

    p = sub.add_parser("will-it-run", help="for given hardware: the best quantization and longest context per model")
    p.add_argument("--hardware", required=True, help="hardware name")
    add_memory(p)
    add_threads(p)
    p.add_argument("--model", help="one model: list every quantization")
    p.add_argument("--gpus", help="number of GPUs (default 1)")
    p.add_argument("--runtime", help="runtime (default by hardware)")
    p.add_argument("--context", help="context to fit at, tokens (default 4096)")
    p.add_argument("--min-bits", dest="min_bits",
                   help="weakest bit class of the weights (default 4; a model's release format always passes)")
    p.add_argument("--min-tok-s", dest="min_tok_s", help="the decode speed that counts as usable (default 10 tok/s)")
    p.add_argument("--quant", help="every model in this weight format only (e.g. Q4_K_M; default: the best per "
                                   "model)")
    p.add_argument("--host-ram-gb", dest="host_ram_gb",
                   help="system RAM, GB: offloading experts or layers must fit in it (\"this machine\": probed)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_will_it_run)
