"""The PDF sizing report's content, assembled as data (no Qt): the question, the answer in one
sentence, the recommendation table and the closest rejected alternatives, the chosen
configuration's figures and chart data (memory plan, roofline, decode vs batch, TTFT vs prompt,
throughput vs latency over concurrency), its launch command, the method with this workload's
numbers in it, the efficiency profile and its measured error, the notes, and every catalog figure
used with its source. ``ui/report.py`` renders it; tests read it directly.

Two ways in: `report_from_requirements` (the buying question, as ``advisor recommend`` takes it)
and `report_from_config` (one configuration, as the app holds it).
"""

from __future__ import annotations

import dataclasses
import datetime as _dt
import math
import re
from dataclasses import dataclass, field
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Callable, Sequence

import numpy as np

from advisor import __version__
from advisor.data.errors import AdvisorError
from advisor.model.config import Config
from advisor.model.efficiency import efficiency_for, expert_weight, select_profile
from advisor.model.inputs import format_products
from advisor.model.predict import Curve, Prediction, Roofline, curve, predict, roofline
from advisor.plan import pricing
from advisor.model.roofline import Workload, expert_overhead
from advisor.model.serving import Load, ServeReport, concurrency_sweep, serve
from advisor.text.explain import Explanation, explain
from advisor.text.format import duration_ms, num
from advisor.text.verdicts import EVIDENCE_WORDS, VERDICTS, candidate_verdict, reason_text

if TYPE_CHECKING:
    from advisor.data.catalog import Catalog
    from advisor.plan.recommend import Recommendation, Requirements

#: rows of the recommendation table and of the rejected alternatives
TOP_N = 5
REJECTED_N = 5
#: points per curve in the report's charts
CURVE_POINTS = 120
EXPLAIN_ORDER = ("ttft", "decode", "throughput", "memory", "max_batch", "max_context", "bound")

BANDS_TEXT = (
    "Every speed carries a band: multipliers from the efficiency profile that held the 5th to 95th percentile of "
    "the errors on measurements whose whole source or build era was left out of the fit, widened where the "
    "profile is borrowed from another build. Read a band as 'about 8 in 10 results from a source the fit never "
    "saw fell inside it'. TTFT's band follows "
    "the prefill band, per-user speed the decode band; the pessimistic edge is what the recommender's safe mode "
    "judges by. Under a load (the serving figures), TTFT's, inter-token latency's and throughput's bands are "
    "widened further by how far past such edges servers were measured under that kind of load, a steady state "
    "or a batch sent at once, so that about 8 in 10 server figures from sources the fit never saw fall inside. "
    "Profiles fitted on few rows, borrowed from a sibling build, or extrapolated to another hardware "
    "family carry wider bands and say so in the notes. No prediction exceeds the 100 % roofline ceiling.")

NOT_MODELLED = (
    "Request lengths are fixed at the typical prompt and output; real traffic varies, and long requests hold KV "
    "blocks longer.",
    "The figures are without speculative decoding or CPU offload (these appear only as a what-if, when one is "
    "chosen); disaggregated prefill/decode, disk offload of weights or KV, LoRA adapters and multi-node "
    "deployments are not modelled.",
    "Prefix caching is off unless stated (the prefix-hit fraction of the load); sampling, tokenization, network "
    "and HTTP overheads are not in the times.",
    "Power, thermal and clock throttling, ECC and MIG partitioning, and interference from other jobs on the same "
    "machine are not modelled.",
    "Large MoE models under tensor parallel: expert routing and dispatch costs are not in the data, so decode "
    "predictions are likely optimistic.",
    "Quality: the model's release format is the reference; other formats show llama.cpp's KL divergence "
    "(or perplexity increase) on Llama-3-8B, or \"unmeasured\"; task accuracy of the quantized model is not predicted.",
    "Prices are dated, each on its stated basis (launch MSRP, typical street, median on-demand $/GPU-hour); "
    "your own quote replaces them.",
)


@dataclass(frozen=True)
class Table:
    """A table of text cells: a title, a header and rows (all strings), an optional note below."""

    title: str
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]
    note: str = ""


@dataclass(frozen=True)
class SourceEntry:
    """One catalog entry used by the report, the figures taken from it, and where they come from."""

    section: str      # hardware, price, model, weight format, KV cache, runtime, scheduler, efficiency profile
    name: str
    figures: str
    source: str


@dataclass(frozen=True)
class ReportContent:
    """Everything the PDF shows, as plain data (strings, numbers and the core's result types)."""

    title: str
    question: tuple[tuple[str, str], ...]        # (label, value) rows
    answer: str                                  # the answer in one sentence
    created: str                                 # date the report was made (ISO)
    version: str                                 # advisor.__version__
    data_date: str                               # the catalog's newest dated price or source
    data_date_note: str                          # what that date is
    config: Config                               # the chosen configuration
    prediction: Prediction                       # the kernel at the chosen configuration's batch
    serving: ServeReport | None                  # the load on it (None for a single static batch)
    users: int
    targets: dict[str, float | None]             # ttft_ms, tok_s (None: no target)
    figures: Table                               # the chosen configuration's headline numbers
    recommendations: Table | None
    rejected: Table | None
    launch: str
    launch_note: str
    summary: tuple[str, ...]                     # the prediction as the CLI prints it
    roofline: Roofline
    batch_curve: Curve
    prompt_curve: Curve
    sweep: tuple[ServeReport, ...]               # closed-loop concurrency 1, 2, 4 … past saturation
    explanations: tuple[Explanation, ...]
    profile: Table                               # the efficiency profile used and its measured error
    bands: str
    not_modelled: tuple[str, ...]
    notes: tuple[str, ...]
    sources: tuple[SourceEntry, ...]
    prompt_curve_batch: int = 1                  # prompts processed together in ``prompt_curve``
    extra: dict[str, Any] = field(default_factory=dict)
    #: the what-ifs chosen (the app's What-ifs tab): one before → after table per technique, its notes below
    what_ifs: tuple[Table, ...] = ()
    #: the user's own measurements beside the predictions (`report --measured`, the app's Measured tab):
    #: the table, and (metric label, measured, predicted, low, high) per compared row for the chart
    measured: Table | None = None
    measured_points: tuple[tuple[str, float, float, float, float], ...] = ()

    @property
    def label(self) -> str:
        """The chosen configuration in a few words: ``2 × H100 SXM5 80GB · FP8 · vLLM``."""
        c = self.config
        n = f"{c.gpus} × " if c.gpus > 1 else ""
        return f"{n}{c.hardware.name} · {c.quant.name} · {c.runtime.name}"


# ---- helpers ------------------------------------------------------------------------------------

def _today() -> str:
    return _dt.date.today().isoformat()


def _gpus(n: int, name: str) -> str:
    return f"{n} × {name}" if n > 1 else name


def _ttft_band(ttft_ms: float, eff) -> tuple[float, float]:
    """TTFT's band from the prefill multipliers on speed (a faster prefill is a shorter TTFT)."""
    return ttft_ms / float(eff.prefill_high), ttft_ms / float(eff.prefill_low)


def _tok_band(tok: float, eff) -> tuple[float, float]:
    return tok * float(eff.decode_low), tok * float(eff.decode_high)


def _cost(c, basis: str) -> str:
    """The cost on the ranking's basis, marked where it rests on fewer than three quotes."""
    thin_rent = " (1 quote)" if getattr(c, "price_thin_rent", False) else ""
    thin_buy = " (few quotes)" if getattr(c, "price_thin_buy", False) else ""
    if basis == "hour" and c.cost_usd_hour:
        return f"${c.cost_usd_hour:,.2f}/h{thin_rent}"
    if basis == "purchase" and c.cost_usd:
        power = f" + ${c.power_usd_month:,.0f}/mo power" if getattr(c, "power_usd_month", None) else ""
        return f"${c.cost_usd:,.0f}{power}{thin_buy}"
    if c.cost_usd_hour:
        return f"${c.cost_usd_hour:,.2f}/h{thin_rent}"
    if c.cost_usd:
        return f"${c.cost_usd:,.0f}{thin_buy}"
    return "no price"


def _buy_vs_rent(c) -> str:
    if not (c.cost_usd and getattr(c, "rent_usd_month", None)):
        return ""
    even = (f"buying breaks even after {c.break_even_months:.0f} months" if c.break_even_months
            else "buying never breaks even")
    return f"buy ${c.cost_usd:,.0f} against rent ${c.rent_usd_month:,.0f} a month at 24/7: {even}"


def _quality(q) -> str:
    if q.kld is not None:
        return f"KLD {q.kld:.3f} (Llama-3-8B)"
    return f"+{q.ppl_delta:.2f} ppl (Llama-3-8B)" if q.ppl_delta is not None else "unmeasured"


_DATE = re.compile(r"\b(20\d\d)-(0[1-9]|1[0-2])(?:-(0[1-9]|[12]\d|3[01]))?\b")


def catalog_data_date(cat: "Catalog") -> tuple[str, str]:
    """The newest date among the catalog's dated prices and the dates quoted in its sources, and
    what carries it: ('2026-11-09', 'newest dated price or source: H100 … cloud price')."""
    best: tuple[str, str] = ("", "")

    def see(text: str | None, what: str) -> None:
        nonlocal best
        for m in _DATE.finditer(str(text or "")):
            d = m.group(0)
            if d > best[0] and d <= _today():
                best = (d, what)

    for section in ("hardware", "models", "quants", "kv_dtypes", "runtimes", "profiles"):
        for e in getattr(cat, section).values():
            name = getattr(e, "name", "") or e.key
            see(getattr(e, "source", ""), f"source of {name}")
            price = getattr(e, "price", None)
            if price:
                see(price.msrp_date, f"purchase price of {name}")
                see(price.cloud_date, f"cloud price of {name}")
                see(price.msrp_source, f"purchase-price source of {name}")
                see(price.cloud_source, f"cloud-price source of {name}")
    for key, quotes in cat.quotes.items():
        for quote in quotes:
            hw = cat.hardware.get(key)
            see(quote.date, f"{quote.basis} quote of {hw.name if hw else key} ({quote.provider})")
    if not best[0]:
        return "unknown", "the catalog carries no dated price or source"
    return best[0], f"the newest date among the catalog's dated prices and sources ({best[1]})"


# ---- sources ------------------------------------------------------------------------------------

def shown_source(source: str) -> str:
    """A source as a report shows it to others: an imported model's local file by its folder and name
    only ("qwen3-8b/config.json (imported 2026-11-26)"), not the absolute path on this machine."""
    m = re.match(r"^(.*?)( \(imported [^)]*\))?$", source or "")
    path = m.group(1) if m else ""
    if not (path.startswith(("/", "~")) or re.match(r"^[A-Za-z]:[\\/]", path)):
        return source
    parts = [p for p in re.split(r"[\\/]", path) if p]
    return "local file " + "/".join(parts[-2:]) + (m.group(2) or "")


def _sources(cat: "Catalog", configs) -> tuple[SourceEntry, ...]:
    """Every catalog entry behind ``configs`` ((hardware, model, quant, kv, runtime) tuples), once each."""
    out: list[SourceEntry] = []
    seen: set[tuple[str, str]] = set()

    def add(section, key, name, figures, source):
        if (section, key) in seen:
            return
        seen.add((section, key))
        out.append(SourceEntry(section, name, figures, source or "(no source recorded)"))

    for hw, model, quant, kv, rt in configs:
        add("model", model.key, model.name,
            f"{num(model.params_total_b)} B parameters ({num(model.params_active_b)} B active), {model.layers} layers, "
            f"{model.attention.upper()} with {model.kv_heads} KV heads, native context {model.native_context:,}",
            shown_source(model.source))
    for hw, model, quant, kv, rt in configs:
        add("hardware", hw.key, hw.name,
            f"{num(hw.memory_gib)} GiB {hw.memory_type or ''} at {num(hw.bandwidth_gb_s)} GB/s; "
            f"FP16 {num(hw.fp16_dense_tflops) if hw.fp16_dense_tflops else '—'} / FP8 "
            f"{num(hw.fp8_dense_tflops) if hw.fp8_dense_tflops else '—'} dense TFLOP/s"
            + (f"; {hw.interconnect} {num(hw.interconnect_gb_s)} GB/s" if hw.interconnect_gb_s else ""),
            hw.source)
        rent = pricing.rent(cat, hw)
        if rent is not None:
            add("price", hw.key + ":rent", hw.name, f"rent {rent.text(' per GPU-hour')}",
                "; ".join(rent.sources) or "your quote")
        device, _ = pricing.device_buy(cat, hw)
        if device is not None:
            add("price", hw.key + ":buy", hw.name, f"buy ${device.usd:,.0f} each ({device.label}, {device.newest})",
                "; ".join(device.sources) or "your quote")
    for hw, model, quant, kv, rt in configs:
        add("weight format", quant.key, quant.name,
            f"{num(quant.bits_per_weight)} bits per weight; quality {_quality(quant)}", quant.source)
    for hw, model, quant, kv, rt in configs:
        add("KV cache", kv.key, kv.name, f"{kv.bits} bits per element", kv.source)
    for hw, model, quant, kv, rt in configs:
        add("runtime", rt.key, rt.name,
            f"claims {rt.memory_fraction:.0%} of memory ({rt.memory_fraction_of}), overhead {num(rt.overhead_gb)} GB, "
            f"workspace {rt.workspace_tokens:,} tokens", rt.source)
        if rt.scheduler_source:
            seqs, chunk = rt.scheduler_on(hw)
            add("scheduler", f"{rt.key}:{seqs}:{chunk}", rt.name, f"up to {seqs:,} running sequences, "
                f"{chunk:,} tokens per step on {hw.name}", rt.scheduler_source)
    for hw, model, quant, kv, rt in configs:
        found = select_profile(cat.profiles, rt, hw)
        if found is None:
            add("efficiency profile", "defaults:" + rt.key, f"defaults of {rt.name}",
                f"η_bw {rt.decode_bw_fraction:g}, η_c {rt.prefill_compute_fraction:g} (uncalibrated)", rt.source)
        else:
            prof, level = found
            add("efficiency profile", prof.key, prof.key,
                f"matched at {level} level; fitted on {prof.decode_rows} decode and {prof.prefill_rows} prefill rows",
                prof.source)
    return tuple(out)


def _format_cost(cfg: Config) -> str:
    """The low-precision format's extra cost per product, as the fixed-costs row adds it ('' where none)."""
    products, dtype, us = format_products(cfg.hardware, cfg.runtime, cfg.quant, cfg.model)
    return f" + {products} {dtype.upper()} products × {num(us)} µs each (the format's)" if products else ""


def _profile_table(cat: "Catalog", cfg: Config) -> Table:
    eff = efficiency_for(cat.profiles, cfg.runtime, cfg.hardware)
    found = select_profile(cat.profiles, cfg.runtime, cfg.hardware)
    rows = [("profile", eff.basis), ("matched at", eff.level if eff.calibrated else "none: the runtime's defaults")]
    if found:
        prof = found[0]
        rows.append(("measured rows", f"{prof.decode_rows} decode, {prof.prefill_rows} prefill"))
        applies = prof.hardware or " ".join(x for x in (prof.family, prof.tier) if x) or prof.vendor or "any hardware"
        rows.append(("applies to", f"{prof.runtime} on {applies}"))
    else:
        rows.append(("measured rows", "none (uncalibrated)"))
    rows += [
        ("decode bandwidth fraction η_bw", f"{float(eff.decode_bw_fraction):.3f}"),
        ("prefill compute fraction η_c", f"{float(eff.prefill_compute_fraction):.3f}"),
        ("attention compute fraction η_att", f"{float(eff.attention_compute_fraction):.3f}"),
        ("fixed costs", f"{num(float(eff.layer_overhead_us))} µs per layer{_format_cost(cfg)} + "
                        + (f"{num(float(expert_overhead(eff, expert_weight(cfg.runtime))))} µs per expert a token "
                           f"visits + " if cfg.model.experts else "") +
                        f"{num(float(eff.step_overhead_us))} µs per step + {num(float(eff.seq_overhead_us))} µs per "
                        f"running sequence; "
                        f"{num(float(eff.request_overhead_us))} µs per request before its first token; "
                        f"all-reduce {num(float(eff.allreduce_latency_us))} µs"),
        ("decode band (measured error)", f"×{float(eff.decode_low):.2f} – ×{float(eff.decode_high):.2f} on tok/s"),
        ("prefill band (measured error)", f"×{float(eff.prefill_low):.2f} – ×{float(eff.prefill_high):.2f} on prompt "
                                          f"tok/s (TTFT ÷ these)"),
    ]
    if found:
        rows.append(("source", found[0].source))
    return Table("Efficiency profile used", ("item", "value"), tuple(rows))


def _log_points(lo: int, hi: int, n: int = CURVE_POINTS) -> np.ndarray:
    lo, hi = max(1, int(lo)), max(int(hi), int(lo) + 1)
    return np.unique(np.round(np.geomspace(lo, hi, n)).astype(np.int64))


def _curves(cat: "Catalog", cfg: Config, p: Prediction, prompt_batch: int) -> tuple[Curve, Curve]:
    """Decode vs batch (past the KV limit) and TTFT vs prompt (to the native context, through the
    workload's prompt) for ``prompt_batch`` prompts at once."""
    wl = cfg.workload
    top_batch = int(min(max(64, (p.max_batch or 1) * 2, wl.batch * 2), 8192))
    cb = curve(cat, cfg, "batch", _log_points(1, top_batch))
    room = max(2, int(cfg.model.native_context) - wl.depth_tokens - wl.output_tokens)
    xs = np.union1d(_log_points(16 if room > 32 else 1, room), [wl.prompt_tokens] if 0 < wl.prompt_tokens <= room else [])
    pcfg = cfg if prompt_batch == wl.batch else cfg.replace(batch=prompt_batch)
    cp = curve(cat, pcfg, "prompt", xs.astype(np.int64))
    return cb, cp


def _sweep(cat: "Catalog", cfg: Config, prompt: int, output: int) -> tuple[ServeReport, ...]:
    if output < 2 or prompt < 1:
        return ()
    try:
        return tuple(concurrency_sweep(cat, cfg, Load(prompt_tokens=prompt, output_tokens=output)))
    except AdvisorError:
        return ()


def _figures_table(p: Prediction, s: ServeReport | None, eff, users: int) -> Table:
    rows = []
    if s is not None and s.fits:
        lo, hi = _ttft_band(s.ttft_p90_ms, eff)
        rows.append(("TTFT p90 under load", f"{duration_ms(s.ttft_p90_ms)}", f"{duration_ms(lo)} – {duration_ms(hi)}",
                     f"mean {duration_ms(s.ttft_ms)}, median {duration_ms(s.ttft_p50_ms)}"))
        tok = s.tok_s_per_user
        lo, hi = _tok_band(tok, eff)
        rows.append(("decode tok/s per user under load", num(tok), f"{num(lo)} – {num(hi)}",
                     f"one token every {duration_ms(s.itl_ms)} (p90 {duration_ms(s.itl_p90_ms)})"))
        thr_band = (f"{num(s.throughput_low_tok_s)} – {num(s.throughput_high_tok_s)}"
                    if math.isfinite(s.throughput_low_tok_s) and math.isfinite(s.throughput_high_tok_s) else "")
        rows.append(("output tok/s, all users", num(s.throughput_tok_s), thr_band,
                     f"{num(s.request_rate_rps)} requests/s"))
        rows.append(("running sequences", num(s.running_batch), "",
                     f"capacity {num(s.capacity)}, queue {num(s.queue)}; {s.bound}-bound"))
    if p.prompt_tokens:
        rows.append((f"TTFT, batch of {p.batch} at once", duration_ms(p.ttft_ms),
                     f"{duration_ms(p.ttft_low_ms)} – {duration_ms(p.ttft_high_ms)}",
                     f"{num(p.prefill_tok_s)} prompt tok/s, {p.prefill_bound}-bound"))
    rows.append((f"decode tok/s per user, batch {p.batch}", num(p.decode_tok_s),
                 f"{num(p.decode_low_tok_s)} – {num(p.decode_high_tok_s)}",
                 f"ceiling {num(p.decode_ceiling_tok_s)}; {p.bound}-bound; knee ≈ batch {num(p.knee_batch)}"))
    per = " per GPU" if p.gpus > 1 else ""
    rows.append((f"memory{per}", f"{num(p.per_gpu_total_gb)} GB", "", f"of {num(p.per_gpu_usable_gb)} GB usable — "
                 + ("fits" if p.fits else f"short by {num(p.shortfall_gb)} GB")))
    ctx = p.prompt_tokens + p.output_tokens + p.depth_tokens
    rows.append(("room for", f"{p.max_batch:,} sequences", "", f"at {ctx:,} tokens each (KV cache budget); "
                 f"{p.max_context:,} tokens for one"))
    return Table("Predicted figures", ("figure", "value", "band", "detail"), tuple(rows))


# ---- assembly -----------------------------------------------------------------------------------

def _assemble(cat: "Catalog", cfg: Config, *, question, answer, users: int, targets, serving: ServeReport | None,
              recommendations: Table | None, rejected: Table | None, launch: str, launch_note: str,
              table_configs, title: str, created: str | None, extra: dict | None = None,
              static: bool = False) -> ReportContent:
    p = predict(cat, cfg, check_context=False)
    eff = efficiency_for(cat.profiles, cfg.runtime, cfg.hardware)
    # under load a request's prompt is processed on its own (chunked, beside the decoding batch)
    prompt_batch = 1 if serving is not None and not static else cfg.workload.batch
    cb, cp = _curves(cat, cfg, p, prompt_batch)
    wl = cfg.workload
    sweep = _sweep(cat, cfg, wl.prompt_tokens, wl.output_tokens)
    ex = explain(cat, cfg, p)
    serving_ex = _serving_explanation(serving) if serving is not None else None
    notes: list[str] = list(p.notes)
    if serving is not None:
        notes += [n for n in serving.notes if n not in notes]
    from advisor.text.summary import prediction_summary

    date, what = catalog_data_date(cat)
    used = [(cfg.hardware, cfg.model, cfg.quant, cfg.kv_dtype, cfg.runtime)] + list(table_configs)
    return ReportContent(
        title=title, question=tuple(question), answer=answer, created=created or _today(), version=__version__,
        data_date=date, data_date_note=what, config=cfg, prediction=p, serving=serving, users=users,
        targets=dict(targets), figures=_figures_table(p, serving, eff, users), recommendations=recommendations,
        rejected=rejected, launch=launch, launch_note=launch_note, summary=tuple(prediction_summary(p)),
        roofline=roofline(cat, cfg), batch_curve=cb, prompt_curve=cp, sweep=sweep,
        explanations=((serving_ex,) if serving_ex else ()) + tuple(ex[k] for k in EXPLAIN_ORDER if k in ex),
        profile=_profile_table(cat, cfg),
        bands=BANDS_TEXT, not_modelled=NOT_MODELLED, notes=tuple(notes), sources=_sources(cat, used),
        prompt_curve_batch=prompt_batch, extra=dict(extra or {}))


def _serving_explanation(s: ServeReport) -> Explanation | None:
    """The server under load with this workload's numbers: step time, Little's law, TTFT's parts."""
    if not s.fits or not math.isfinite(s.itl_ms):
        return None
    ld = s.load
    D = ld.output_tokens - 1
    who = (f"{ld.concurrency:g} clients in a closed loop" + (f" with {num(ld.think_s)} s think time" if ld.think_s else "")
           if ld.kind == "closed" else f"{num(ld.rate_rps)} requests/s (Poisson)" if ld.kind == "open"
           else "everything queued at once")
    text = (f"{s.runtime} batches continuously: each engine step decodes one token for every running sequence and "
            f"spends the rest of its {s.chunk_tokens:,}-token budget on prompt chunks. With {who}, prompts of "
            f"{ld.prompt_tokens:,} and outputs of {ld.output_tokens:,} tokens (D = {D:,} decode steps each), the "
            f"steady state runs b = {num(s.running_batch)} sequences at a step time τ = {duration_ms(s.itl_ms)} "
            f"(prompt work included), so X = b / (D × τ) = {num(s.request_rate_rps)} requests/s and "
            f"{num(s.throughput_tok_s)} output tok/s in all; each user sees {num(s.tok_s_per_user)} tok/s. "
            f"TTFT is the steps that carry the prompt's chunks plus the wait for the step budget and any queue: "
            f"mean {duration_ms(s.ttft_ms)}, p90 {duration_ms(s.ttft_p90_ms)}. The KV cache holds "
            f"{num(s.kv_capacity)} sequences at this length and the scheduler allows {s.max_seqs:,}, so at most "
            f"{num(s.capacity)} run at once; here the server is {s.bound}-bound"
            + (f" and {num(s.queue)} clients wait in the queue." if s.saturated and s.queue > 0 else "."))
    return Explanation("Serving under load",
                       "τ(b) = τ_dec(b) + b · P′ · τ_p / D;  b = X · D · τ (Little's law);  TTFT = chunk steps + "
                       "M/D/1 budget wait + queue", text)


def _load_words(req, rec) -> str:
    if rec.load_kind == "open":
        return f"{num(req.rps)} requests/s (Poisson arrivals, ≈ {rec.users} in flight)"
    users = f"{rec.users} concurrent user{'s' if rec.users > 1 else ''}"
    if req.burst:
        return users + " arriving at once (burst)"
    return users + (f" (closed loop, {num(req.think_s)} s think time)" if req.think_s else " (closed loop)")


def _constraints(req) -> str:
    parts = []
    if req.hardware_kinds:
        parts.append(", ".join(req.hardware_kinds) + " hardware")
    if req.vendors:
        parts.append(", ".join(req.vendors))
    if req.hardware:
        parts.append("hardware " + ", ".join(req.hardware))
    parts.append(f"up to {req.max_gpus:,} GPUs in all" if req.max_gpus else "replicas of up to 8 GPUs per node, as many as the load needs")
    if req.runtimes:
        parts.append("runtimes " + ", ".join(req.runtimes))
    if req.quality_floor:
        parts.append(f"weights no worse than {req.quality_floor}")
    if req.max_ppl_delta is not None:
        parts.append(f"perplexity increase ≤ +{req.max_ppl_delta:g}")
    if req.budget_usd is not None:
        parts.append(f"budget ${req.budget_usd:,.0f}")
    if req.budget_usd_hour is not None:
        parts.append(f"budget ${req.budget_usd_hour:,.2f}/h")
    parts.append("KV cache " + ", ".join(req.kv_dtypes))
    if req.safe:
        parts.append("judged by the pessimistic edge of each band (safe mode)")
    return "; ".join(parts)


def report_from_requirements(cat: "Catalog", req: "Requirements", top: int = TOP_N, created: str | None = None,
                             rec: "Recommendation | None" = None) -> ReportContent:
    """The buying question: recommend, pick the best candidate (or the closest miss), and assemble."""
    from advisor.plan.recommend import distinct, recommend

    rec = rec or recommend(cat, req)
    req = rec.requirements   # with the defaults recommend filled in
    best = distinct(rec, top)
    misses = rec.distinct(REJECTED_N, misses=True)
    chosen = best[0] if best else (misses[0] if misses else None)
    if chosen is None:
        raise AdvisorError("no configuration of the catalog can run this model under these constraints")
    effs = {id(c): efficiency_for(cat.profiles, c.runtime, c.hardware) for c in best + misses}
    ttft_head = "TTFT" if req.burst else "TTFT p90"
    rec_table = None
    if best:
        rows = []
        for i, c in enumerate(best, 1):
            e = effs[id(c)]
            tl, th = _ttft_band(c.ttft_ms, e)
            kl, kh = _tok_band(c.tok_s, e)
            rows.append((str(i) + ("*" if c.pareto else ""),
                         f"{c.label} · {c.runtime.name} · {c.quant.name} · {c.kv_dtype.name} KV",
                         f"{duration_ms(c.ttft_ms)} ({duration_ms(tl)}–{duration_ms(th)})",
                         f"{num(c.tok_s)} ({num(kl)}–{num(kh)})", num(c.throughput_tok_s),
                         f"{num(c.memory_needed_gb)} / {num(c.memory_usable_gb)}", f"{c.max_batch:,}",
                         f"×{c.headroom:.2f}", _cost(c, rec.cost_basis), c.quality or _quality(c.quant),
                         VERDICTS[c.tier], EVIDENCE_WORDS.get(c.evidence, c.evidence)))
        basis = {"hour": "ranked by rent (on-demand $/GPU-hour, the median of three or more dated quotes where "
                         "there are)",
                 "purchase": "ranked by buying the machine, with its electricity over the stated life",
                 "headroom": "no prices known: ranked by quality, then headroom"}[rec.cost_basis]
        rec_table = Table(
            f"Top {len(best)} of {rec.n_passing:,} configurations that pass: {rec.n_margin:,} with margin, "
            f"{rec.n_passing - rec.n_margin:,} only if the estimate holds ({basis})",
            ("#", "configuration · runtime · weights · KV", f"{ttft_head} (band)", "tok/s per user (band)",
             "total tok/s", "GB per GPU needed / usable", "room for users", "headroom", "cost", "quality",
             "verdict", "data"),
            tuple(rows),
            f"* on the Pareto front of cost, per-user speed and quality. Swept {len(rec):,} configurations in "
            f"{rec.elapsed_ms:.0f} ms. Verdict: with margin = every target met at the pessimistic edge of its band; "
            f"if the estimate holds = met at the prediction only, ranked after. Data: measured = the runtime's "
            f"calibration has rows of this hardware generation and format class; extrapolated = it has not. A "
            f"price on fewer than three quotes is marked and ranked at its spread. Headroom: the smallest ratio of "
            f"achieved to required over memory and the targets. Bands: 5th–95th percentile of the profile's error "
            f"on sources left out of the fit.")
    rej_table = None
    if misses:
        rows = []
        for c in misses:
            rows.append((f"{c.label} · {c.runtime.name} · {c.quant.name} · {c.kv_dtype.name} KV",
                         duration_ms(c.ttft_ms), num(c.tok_s), f"{num(c.memory_needed_gb)} / {num(c.memory_usable_gb)}",
                         _cost(c, rec.cost_basis),
                         "; ".join(reason_text(r) for r in c.failures[:2]) or candidate_verdict(c)))
        rej_table = Table("Closest rejected alternatives, and why",
                          ("configuration · runtime · weights · KV", ttft_head, "tok/s per user",
                           "GB per GPU needed / usable", "cost", "why not"), tuple(rows))
    c = chosen
    prompt, output = req.prompt_tokens, max(req.output_tokens, 2 if not req.burst else req.output_tokens)
    batch = max(1, rec.users if req.burst else int(round(min(max(c.running_batch, 1.0), max(c.max_batch, 1)))))
    extra_ctx = req.context - req.prompt_tokens - req.output_tokens
    # the chosen configuration as it runs: its layout past one tensor-parallel group and the network
    cfg = Config(c.hardware, req.model, c.quant, c.kv_dtype, c.runtime, c.gpus, "",
                 Workload(batch=batch, prompt_tokens=prompt, output_tokens=output), c.config_layout, req.network)
    serving = None
    if not req.burst and output >= 2 and prompt >= 1:
        from advisor.plan.launch import keeps_prompt_cache

        load = Load(kind="open" if rec.load_kind == "open" else "closed", concurrency=float(rec.users),
                    rate_rps=req.rps or 0.0, think_s=req.think_s, prompt_tokens=prompt, output_tokens=output,
                    prompt_cache=keeps_prompt_cache(req))
        try:
            serving = serve(cat, cfg, load)
        except AdvisorError:
            serving = None
    e = effs[id(c)]
    tl, th = _ttft_band(c.ttft_ms, e)
    kl, kh = _tok_band(c.tok_s, e)
    cost = _cost(c, rec.cost_basis)
    what = f"{c.label} at {c.quant.name} with {c.runtime.name}"
    numbers = (f"TTFT {duration_ms(c.ttft_ms)} ({duration_ms(tl)}–{duration_ms(th)}), {num(c.tok_s)} tok/s per user "
               f"({num(kl)}–{num(kh)}), room for {c.max_batch:,} users at {req.context:,} tokens"
               + (f", {num(c.power_kw)} kW at {c.power_basis or 'board power'} ({num(c.joules_per_token)} J per output token)"
                  if c.power_kw and c.joules_per_token else ""))
    if best:
        verdict = ("It meets every target at the pessimistic edge of its bands." if c.tier == "margin" else
                   f"It {candidate_verdict(c)}.")
        money = _buy_vs_rent(c)
        answer = (f"{what}: {numbers}" + (f", {cost}" if cost != "no price" else "") + ". " + verdict
                  + (f" {money[0].upper() + money[1:]}." if money else ""))
    else:
        answer = (f"No configuration meets every requirement; the closest is {what}: {numbers}. "
                  f"It misses because {reason_text(c.failures[0]) if c.failures else 'it does not meet them'}.")
    targets = []
    if req.ttft_ms:
        targets.append(f"TTFT ≤ {duration_ms(req.ttft_ms)}" + ("" if req.burst else " (90th percentile)"))
    if req.tok_s:
        targets.append(f"≥ {num(req.tok_s)} tok/s per user"
                       + (" (the default for several users: about reading speed)" if req.tok_s_default else ""))
    question = [("model", req.model.name), ("load", _load_words(req, rec)),
                ("workload", f"prompt {req.prompt_tokens:,} tokens, output {req.output_tokens:,} tokens, "
                             f"context up to {req.context:,} tokens"),
                ("targets", ", ".join(targets) or "none"), ("constraints", _constraints(req))]
    launch = c.launch if c.ok else ""
    if not launch:
        from advisor.plan.launch import launch_line
        launch = launch_line(c, req, cat.checkpoints or None)
    note = (f"{c.runtime.name}'s command for {c.label}, sized for {rec.users} users at {req.context:,} tokens of "
            "context. Check the flags against the version you deploy.")
    table_configs = [(x.hardware, req.model, x.quant, x.kv_dtype, x.runtime) for x in best + misses]
    return _assemble(cat, cfg, question=question, answer=answer, users=rec.users,
                     targets={"ttft_ms": req.ttft_ms, "tok_s": req.tok_s}, serving=serving,
                     recommendations=rec_table, rejected=rej_table, launch=launch, launch_note=note,
                     table_configs=table_configs, title=f"Hardware sizing: {req.model.name}", created=created,
                     extra={"passing": rec.n_passing, "swept": len(rec), "cost": cost, "extra_context": extra_ctx,
                            "chosen_ok": bool(c.ok)})


def what_if_tables(cat: "Catalog", cfg: Config, techniques) -> tuple[Table, ...]:
    """One before → after table per technique asked for in ``techniques`` (`advisor.model.techniques.
    Techniques`), with the technique's notes and own figures as the table's note; `AdvisorError` when
    a technique does not apply to ``cfg``."""
    from advisor.model.techniques import what_if
    from advisor.text.techniques import HEADER, technique_details, technique_rows

    if techniques is None or not techniques.any:
        return ()
    return tuple(Table(f"What if: {e.label}", HEADER, technique_rows(e), note=" ".join(
        f"{n.rstrip('.')}." for n in (*e.notes, *technique_details(e)))) for e in what_if(cat, cfg, techniques))


def report_from_config(cat: "Catalog", cfg: Config, *, ttft_ms: float | None = None, tok_s: float | None = None,
                       created: str | None = None, techniques=None, prompt_cache: bool = True) -> ReportContent:
    """One configuration as the app holds it: the static batch of ``cfg.workload`` (the app's
    numbers), the server under that many clients, the charts, the method and the sources; with
    ``techniques`` (a `Techniques`), the before → after of each technique asked for. ``prompt_cache``:
    the server keeps its host-memory prompt cache (the figures and the launch line agree)."""
    from advisor.plan.launch import launch_line

    cfg.check()
    p = predict(cat, cfg)
    wl = cfg.workload
    users = int(wl.batch)
    serving = None
    if wl.output_tokens >= 2 and wl.prompt_tokens >= 1:
        try:
            serving = serve(cat, cfg, Load(concurrency=float(users), prompt_tokens=wl.prompt_tokens,
                                           output_tokens=wl.output_tokens, prompt_cache=prompt_cache))
        except AdvisorError:
            serving = None
    what = f"{_gpus(cfg.gpus, cfg.hardware.name)} at {cfg.quant.name} with {cfg.runtime.name}"
    if not p.fits:
        answer = f"{what} does not fit: {p.notes[0] if p.notes else 'short of memory'}."
    else:
        tt = (f"TTFT {duration_ms(p.ttft_ms)} ({duration_ms(p.ttft_low_ms)}–{duration_ms(p.ttft_high_ms)}), "
              if wl.prompt_tokens else "")
        answer = (f"{what}: {tt}{num(p.decode_tok_s)} tok/s per user ({num(p.decode_low_tok_s)}–"
                  f"{num(p.decode_high_tok_s)}), room for {p.max_batch:,} users at "
                  f"{wl.prompt_tokens + wl.output_tokens + wl.depth_tokens:,} tokens.")
    targets = []
    if ttft_ms:
        targets.append(f"TTFT ≤ {duration_ms(ttft_ms)}" + (" — met" if p.ttft_ms <= ttft_ms else " — missed"))
    if tok_s:
        targets.append(f"≥ {num(tok_s)} tok/s per user" + (" — met" if p.decode_tok_s >= tok_s else " — missed"))
    question = [("model", cfg.model.name),
                ("configuration", f"{what}, {cfg.kv_dtype.name} KV cache"
                                  + (f", {'tensor parallel' if cfg.split == 'tp' else 'layer split'}" if cfg.gpus > 1 else "")),
                ("workload", f"batch {wl.batch} (concurrent users), prompt {wl.prompt_tokens:,} tokens, output "
                             f"{wl.output_tokens:,} tokens" + (f", {wl.depth_tokens:,} already cached" if wl.depth_tokens else "")),
                ("targets", ", ".join(targets) or "none")]
    ctx = wl.prompt_tokens + wl.output_tokens + wl.depth_tokens
    req = SimpleNamespace(model=cfg.model, context=ctx, output_tokens=wl.output_tokens, prompt_cache=prompt_cache)
    cand = SimpleNamespace(runtime=cfg.runtime, kv_dtype=cfg.kv_dtype, quant=cfg.quant, gpus=cfg.gpus, users=users)
    launch = launch_line(cand, req, cat.checkpoints or None)
    note = f"{cfg.runtime.name}'s command for this configuration, sized for {users} users at {ctx:,} tokens of context."
    content = _assemble(cat, cfg, question=question, answer=answer, users=users,
                        targets={"ttft_ms": ttft_ms, "tok_s": tok_s}, serving=serving, recommendations=None,
                        rejected=None, launch=launch, launch_note=note, table_configs=[],
                        title=f"Sizing report: {cfg.model.name}", created=created, static=True)
    what_ifs = what_if_tables(cat, cfg, techniques)
    return dataclasses.replace(content, what_ifs=what_ifs) if what_ifs else content


__all__ = ["ReportContent", "SourceEntry", "Table", "catalog_data_date", "report_from_config",
           "report_from_requirements"]


def measured_section(comparisons, files: Sequence[str], metric_text: Callable[[Any], str],
                     load_text: Callable[[Any], str]) -> dict[str, Any]:
    """The ``measured`` and ``measured_points`` fields of a `ReportContent` from comparisons of the user's
    results with the predictions (`advisor.fit.compare.Comparison`, read by their fields; the metric and
    load wording is the caller's, `fit.compare.metric_text` / `load_text`)."""
    rows, points = [], []
    errors = []
    for c in comparisons:
        r = c.record
        label = metric_text(r)
        if c.predicted is None:
            rows.append((label, load_text(r), num(r.value), "—", "—", "—", c.skipped))
            continue
        err = c.predicted / r.value - 1.0
        errors.append(abs(err))
        inside = c.low is not None and c.high is not None and c.low <= r.value <= c.high
        rows.append((label, load_text(r), num(r.value), num(c.predicted), f"{num(c.low)}–{num(c.high)}",
                     f"{100 * err:+.0f} %", "inside the band" if inside else "outside the band"))
        points.append((label, float(r.value), float(c.predicted), float(c.low), float(c.high)))
    med = float(np.median(errors)) if errors else None
    note = (f"{len(errors)} of {len(rows)} rows predicted; median |error| {100 * med:.0f} % (error = predicted / "
            f"measured − 1). From: {', '.join(files)}." if med is not None else
            f"No row could be predicted. From: {', '.join(files)}.")
    table = Table("Measured on your machine", ("metric", "load", "measured", "predicted", "band", "error", "note"),
                  tuple(rows), note)
    return {"measured": table, "measured_points": tuple(points)}

