"""A serving technique's before → after (`advisor.model.techniques.Effect`) as rows of text: the
app's What-ifs tab and the PDF report show the same table."""

from __future__ import annotations

import math
from typing import Any

from advisor.text.format import duration_ms, num

HEADER = ("", "before", "after", "change")
#: (Figures field, row label, how a value is shown)
ROWS = (("ttft_ms", "Time to first token", duration_ms),
        ("decode_tok_s", "Decode speed per user", lambda v: f"{num(v)} tok/s"),
        ("throughput_tok_s", "All users", lambda v: f"{num(v)} tok/s"),
        ("max_batch", "Max batch", lambda v: f"{int(v):,}"),
        ("memory_gb", "Memory per GPU", lambda v: f"{num(v)} GB"),
        ("fits", "Fits", lambda v: "yes" if v else "no"))


def change_text(field: str, before: Any, after: Any) -> str:
    """How a figure moved: a ratio for speeds, times and batch sizes, a difference for memory; "—"
    for no change (within 0.05 %) or no ratio."""
    if field == "fits":
        return "—" if bool(before) == bool(after) else f"{'yes' if before else 'no'} → {'yes' if after else 'no'}"
    if field == "memory_gb":
        d = float(after) - float(before)
        return "—" if abs(d) < 5e-4 else f"{'+' if d > 0 else '−'}{num(abs(d))} GB"
    b, a = float(before), float(after)
    if field == "max_batch" and b == 0 and a > 0:
        return f"+{int(a):,}"
    if not (math.isfinite(a) and math.isfinite(b)) or b == 0:
        return "—"
    r = a / b
    return "—" if abs(r - 1) < 5e-4 else f"×{num(r)}"


def technique_rows(effect) -> tuple[tuple[str, str, str, str], ...]:
    """(label, before, after, change) for TTFT, decode speed, throughput, max batch, memory, fits."""
    out = []
    for f, label, fmt in ROWS:
        b, a = getattr(effect.before, f), getattr(effect.after, f)
        out.append((label, fmt(b), fmt(a), change_text(f, b, a)))
    return tuple(out)


def technique_details(effect) -> list[str]:
    """The technique's own figures in a line or two (the draft's steps and memory, the score
    workspace, the KV ratio, what lives in host memory)."""
    d = effect.details
    if effect.technique == "speculative":
        return [f"{num(d['expected_tokens'])} tokens per round of {d['k']} drafts at α {num(d['accept'])}: "
                f"{d['k']} draft steps of {duration_ms(d['draft_step_ms'])} + a verification of "
                f"{duration_ms(d['verify_step_ms'])} (a plain step: {duration_ms(d['plain_step_ms'])})",
                f"the draft adds {num(d['draft_weights_gb'])} GB of weights and {num(d['draft_kv_gb'])} GB of KV"]
    if effect.technique == "eager-attention":
        return [f"score workspace {num(d['score_workspace_gpu_gb'])} GB per GPU; prefill moves "
                f"{num(d['prefill_extra_gb_per_gpu'])} GB more per GPU"]
    if effect.technique == "attention":
        return [f"KV per token {num(d['kv_bytes_per_token_before'] / 1024)} → "
                f"{num(d['kv_bytes_per_token_after'] / 1024)} KiB (×{num(d['kv_ratio'])}); weights "
                f"{num(d['weights_gb_before'])} → {num(d['weights_gb_after'])} GB; max context "
                f"{d['max_context_before']:,} → {d['max_context_after']:,}"]
    if effect.technique == "offload":
        return [f"{num(d['host_gb'])} GB in host memory; PCIe {num(d['pcie_gb_s'])} GB/s; all on the GPU: "
                f"{num(d['all_gpu_decode_tok_s'])} tok/s (ceiling {num(d['all_gpu_ceiling_tok_s'])})"]
    return []
