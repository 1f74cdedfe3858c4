"""Recommendation verdicts in English: one sentence per unmet requirement (`advisor.plan.reasons`)."""

from __future__ import annotations

from advisor.plan.reasons import Reason
from advisor.text.format import duration_ms, num


def reason_text(r: Reason) -> str:
    d = r.detail
    if r.constraint == "quality":
        if r.unit == "upcast":
            return (f"{d['quant']} not considered: the model ships in {d['native']}, and a format as wide "
                    f"or wider saves no memory and adds no quality")
        if r.unit == "+ppl" and d.get("unmeasured"):
            return (f"{d['quant']} rejected: no published perplexity figure for it on this model "
                    f"(--max-ppl accepts measured formats and the native one only)")
        if r.unit == "+ppl":
            return f"{d['quant']} rejected: +{r.achieved:.2f} ppl exceeds the +{r.required:g} limit"
        if r.unit == "bits":
            kld = f" (KLD {d['kld']:.3f} on Llama-3-8B)" if d.get("kld") is not None else ""
            return (f"{d['quant']}{kld} rejected: {r.achieved:g}-bit class is below the {r.required:g}-bit floor "
                    f"(--min-bits lowers it)")
        ppl = f" (+{d['ppl_delta']:.2f} ppl)" if d.get("ppl_delta") is not None else ""
        return f"{d['quant']}{ppl} rejected: below the quality floor {d['floor']}".rstrip()
    if r.constraint == "memory":
        room = d.get("room_for", 0)
        users = d.get("users", 0)
        extra = f" (room for {room} of {users} users at {d['context']:,} tokens)" if 0 < room < users else ""
        return f"needs {num(r.required)} GB per GPU, has {num(r.achieved)}{extra}"
    if r.constraint == "load" and d.get("load") == "open":
        return (f"cannot keep up with {num(r.required)} requests/s: completes {num(r.achieved)}/s with "
                f"{num(d['capacity'])} running sequences ({_limit(d['bound'])}); the queue grows without bound")
    if r.constraint == "load":
        return (f"{_serving_why(d)} of {num(d['users'])} users: the rest wait for a free slot "
                f"(give a TTFT target to accept some waiting)")
    if r.constraint == "ttft" and d.get("serving"):
        return f"TTFT p90 {duration_ms(r.achieved)} > {duration_ms(r.required)} target: {_serving_why(d)}"
    if r.constraint == "tok_s" and d.get("serving"):
        return (f"{num(r.achieved)} tok/s per user < {num(r.required)} target: each step decodes "
                f"{num(d['running'])} sequences ({_limit(d['bound'])})")
    if r.constraint == "ttft":
        share = d.get("compute_share")
        why = "prefill" if share is None else ("prefill compute-bound" if share >= 0.5 else "prefill memory-bound")
        return (f"TTFT {duration_ms(r.achieved)} > {duration_ms(r.required)} target: {why} at "
                f"{num(d['peak_fraction'] * 100, 2)} % of peak")
    if r.constraint == "tok_s":
        return (f"{num(r.achieved)} tok/s per user < {num(r.required)} target: decode {d['bound']}-bound "
                f"at {num(d['bandwidth_fraction'] * 100, 2)} % of {num(d['bandwidth_gb_s'])} GB/s")
    if r.constraint == "prediction":
        return f"no prediction: the catalog lacks a figure {d.get('hardware', 'this hardware')} needs (a compute peak)"
    if r.constraint == "budget_usd":
        return f"${r.achieved:,.0f} is over the ${r.required:,.0f} budget" if r.achieved else "no purchase price in the catalog"
    if r.constraint == "budget_usd_hour":
        return f"${r.achieved:.2f}/h is over the ${r.required:.2f}/h budget" if r.achieved else "no hourly price in the catalog"
    return f"{r.constraint}: needs {num(r.required)} {r.unit}, has {num(r.achieved)}"


def _limit(bound: str) -> str:
    return {"kv-capacity": "the KV cache is full", "max-seqs": "the max-sequences setting is reached",
            "prefill-budget": "the prompts use up the steps' token budget",
            "queue": "arrivals outpace service", "compute": "compute-bound",
            "memory-bandwidth": "memory-bandwidth-bound", "memory": "memory-bandwidth-bound"}.get(bound, bound)


def _serving_why(d: dict) -> str:
    """What makes a served request wait: a full server (and how many queue), or slow steps."""
    if d["bound"] in ("kv-capacity", "max-seqs"):
        what = "the KV cache holds" if d["bound"] == "kv-capacity" else "the max-sequences setting allows"
        queue = f"; {num(d['queue'])} queue" if d.get("queue") and d["queue"] > 0 else ""
        return f"{what} {num(d['capacity'])} running sequences{queue}"
    if d["bound"] == "prefill-budget":
        queue = f"; {num(d['queue'])} queue" if d.get("queue") and d["queue"] > 0 else ""
        return f"the prompts use up the steps' token budget at {num(d['running'])} running sequences{queue}"
    if d["bound"] == "queue":
        return "arrivals outpace service: the queue grows without bound"
    return f"prompt processing is {_limit(d['bound'])} with {num(d['running'])} sequences running"


#: The three verdicts a configuration can have, as printed (CLI, app, report).
VERDICTS = {"margin": "meets, with margin", "estimate": "meets if the estimate holds", "miss": "misses"}


def verdict(ok: bool, reasons: list[Reason], tier: str = "", edge: list[Reason] | None = None) -> str:
    """One line: with margin (every target met at the pessimistic edge of its band), if the estimate
    holds (met at the prediction; what the edge misses follows), or the first unmet requirement."""
    if ok and tier == "estimate":
        what = "; ".join(_edge_text(r) for r in edge or [])
        return f"{VERDICTS['estimate']}" + (f" (pessimistic edge: {what})" if what else "")
    if ok:
        return f"{VERDICTS['margin']} (every target met at the pessimistic edge of its band)"
    return reason_text(reasons[0]) if reasons else "does not meet the requirements"


def _edge_text(r: Reason) -> str:
    if r.constraint == "ttft":
        return f"TTFT {duration_ms(r.achieved)} > {duration_ms(r.required)}"
    return f"{num(r.achieved)} < {num(r.required)} tok/s per user"


def candidate_verdict(c) -> str:
    """The one-line verdict of an `advisor.plan.recommend.Candidate`."""
    return verdict(c.ok, c.failures, c.tier, c.edge_misses)


#: What the evidence levels mean, in a table cell and a sentence.
EVIDENCE_WORDS = {"measured": "measured", "extrapolated": "extrapolated", "uncalibrated": "no data"}
EVIDENCE_TEXT = {
    "measured": "this runtime's calibration has rows of this hardware generation and format class",
    "extrapolated": "no measurements of this runtime with this format class on this hardware generation: "
                    "a fitted profile extrapolated",
    "uncalibrated": "no measurements of this runtime on this vendor: its documented defaults, wide band",
}


def candidate_record(c) -> dict:
    """A candidate as the documented JSON record of ``advisor recommend --json`` (and the app's CSV)."""
    return {
        "hardware": c.hardware.name, "hardware_key": c.hardware.key, "gpus": c.gpus,
        "runtime": c.runtime.key, "quant": c.quant.name, "quant_key": c.quant.key,
        "kv_dtype": c.kv_dtype.key, "users": c.users, "ok": c.ok, "verdict": candidate_verdict(c),
        "verdict_kind": c.tier, "evidence": c.evidence,
        "ttft_ms": c.ttft_ms, "ttft_safe_ms": c.ttft_safe_ms, "tok_s_per_user": c.tok_s,
        "tok_s_per_user_safe": c.tok_s_safe, "throughput_tok_s": c.throughput_tok_s,
        "memory_needed_gb_per_gpu": c.memory_needed_gb, "memory_usable_gb_per_gpu": c.memory_usable_gb,
        "max_users_at_context": c.max_batch, "max_context_at_one_user": c.max_context,
        "cost_usd": c.cost_usd, "cost_usd_hour": c.cost_usd_hour, "price_note": c.price_note,
        "replicas": c.replicas, "total_gpus": c.gpus * c.replicas, "label": c.label,
        "usd_per_million_output_tokens": c.usd_per_million_tokens, "buy_total_usd": c.buy_total_usd,
        "power_usd_month": c.power_usd_month, "rent_usd_month": c.rent_usd_month,
        "break_even_months": c.break_even_months, "rent_quotes_thin": c.price_thin_rent,
        "buy_quotes_thin": c.price_thin_buy,
        "quality": c.quality, "kld": c.quant.kld,
        "quality_rank": c.quant.quality_rank, "ppl_delta": c.quant.ppl_delta,
        "headroom": c.headroom, "pareto": c.pareto, "launch": c.launch or None, "technique": c.technique or None,
        "bound": c.bound, "running_batch": c.running_batch, "queue": c.queue,
        # the instance's layout and its machines; power at board power
        "tp": c.layout.tp if c.layout.gpus > 1 else c.gpus, "pp": c.layout.pp, "ep": c.layout.ep,
        "dp_attention": c.layout.dp_attention, "layout": c.split_text if c.gpus > 1 else "",
        "nodes_per_replica": c.nodes, "nodes": c.nodes * c.replicas,
        "network_gbit_s_per_gpu": c.network_gbit_s,
        "power_kw": c.power_kw, "power_basis": c.power_basis, "joules_per_output_token": c.joules_per_token,
    }


def _both(first, second) -> str:
    if first.tier == second.tier == "margin":
        return "both meet every requirement with margin"
    if first.tier == second.tier:
        return "both meet the requirements only if the estimate holds"
    return f"#1 {VERDICTS[first.tier]}, #2 {VERDICTS[second.tier]}"


def why_first(first, second, basis: str) -> str:
    """One line on why ``first`` ranks above ``second`` (both pass), in the ranking's order: the
    verdict (with margin before if the estimate holds), the cost on the ranking's basis, the
    weights, the speed per user, the GPU count."""
    def cost(c):
        return c.cost_usd_hour if basis == "hour" else c.buy_total_usd if basis == "purchase" else None

    if first.tier != second.tier:
        return (f"#1 {VERDICTS[first.tier]}; #2 ({second.label}) {VERDICTS[second.tier]}: a pass at the pessimistic "
                f"edge ranks first.")
    a, b = cost(first), cost(second)
    unit = "/h" if basis == "hour" else ""
    ra, rb = first.rank_cost, second.rank_cost
    if a is not None and b is not None and ra is not None and rb is not None and ra < rb - 1e-9 and a >= b - 1e-9:
        # the dearer-looking #2 is cheaper only on a price with fewer than three quotes
        mine = f"${a:,.2f}{unit}" if basis == "hour" else f"${a:,.0f}"
        other = f"${b:,.2f}{unit}" if basis == "hour" else f"${b:,.0f}"
        return (f"#2 ({second.label}) lists {other} against #1's {mine}, but on fewer than three quotes: ranked at "
                f"its spread ({(f'${rb:,.2f}' if basis == 'hour' else f'${rb:,.0f}')}{unit}), #1 is the cheaper sure price; "
                f"{_both(first, second)}.")
    if a is not None and (b is None or a < b - 1e-9):
        other = f"${b:,.2f}{unit}" if b is not None and basis == "hour" else (f"${b:,.0f}" if b is not None else "no price")
        mine = f"${a:,.2f}{unit}" if basis == "hour" else f"${a:,.0f}"
        power = " with its electricity" if basis == "purchase" and (first.power_usd_month or second.power_usd_month) else ""
        thin = (" (a price on fewer than 3 quotes ranks at its spread)" if
                (first.price_thin_rent if basis == "hour" else first.price_thin_buy) else "")
        return f"#1 costs {mine}{power} against {other} for #2 ({second.label}){thin}; {_both(first, second)}."
    if first.quant.key != second.quant.key and first.quality != second.quality:
        return (f"#1 and #2 cost the same; #1's weights are closer to the original: {first.quant.name} "
                f"{first.quality} against {second.quant.name} {second.quality}.")
    if first.runtime.key != second.runtime.key and first.usual_runtime and first.tok_s < second.tok_s:
        return (f"#1 and #2 cost the same; {first.runtime.name} is the usual runtime on {first.hardware.name}, and "
                f"{second.runtime.name}'s {num(second.tok_s)} tok/s per user is within #1's band "
                f"({num(first.tok_s_safe)}–{num(first.tok_s)} at the estimate).")
    if first.tok_s > second.tok_s * 1.001:
        return (f"#1 and #2 cost the same at the same quality; #1 is faster per user "
                f"({num(first.tok_s)} against {num(second.tok_s)} tok/s).")
    return f"#1 and #2 tie on cost, weights and speed; #1 uses {first.gpus * first.replicas} GPU(s)."
