"""A prediction as lines of text: what the CLI prints and the report's summary quotes."""

from __future__ import annotations

from advisor.model.predict import Prediction
from advisor.text.format import duration_ms, num


def prediction_summary(p: Prediction) -> list[str]:
    """The configuration, memory plan, prefill, decode, efficiency basis and notes, one line each."""
    out: list[str] = []
    w = f"batch {p.batch}, prompt {p.prompt_tokens:,}, output {p.output_tokens:,}"
    if p.depth_tokens:
        w += f", {p.depth_tokens:,} tokens already cached"
    gpus = f"{p.gpus} × " if p.gpus > 1 else ""
    out.append(f"{p.model} · {p.quant} weights · {p.kv_dtype} KV cache · {p.runtime} on {gpus}{p.hardware}")
    out.append(f"workload: {w}" + (f"; {p.parallelism}" if p.gpus > 1 else ""))
    out.append("")
    verdict = "fits" if p.fits else f"DOES NOT FIT (short by {num(p.shortfall_gb)} GB)"
    per = " per GPU" if p.gpus > 1 else ""
    out.append(f"Memory{per}: {num(p.per_gpu_total_gb)} GB needed of {num(p.per_gpu_usable_gb)} GB usable — {verdict}")
    out.append(f"  weights {num(p.weights_gb)} GB · KV cache {num(p.kv_gb)} GB · workspace {num(p.workspace_gb)} GB"
          f" · runtime {num(p.overhead_gb)} GB   (totals over {p.gpus} GPU{'s' if p.gpus > 1 else ''})")
    ctx = p.prompt_tokens + p.output_tokens + p.depth_tokens
    out.append(f"  max batch at {ctx:,} tokens each: {p.max_batch:,} · max context at batch 1: {p.max_context:,} tokens"
          f" · KV {num(p.kv_bytes_per_token / 1024)} KiB/token")
    if p.prompt_tokens:
        out.append(f"Prefill: TTFT {duration_ms(p.ttft_ms)} ({duration_ms(p.ttft_low_ms)}–{duration_ms(p.ttft_high_ms)})"
              f" · {num(p.prefill_tok_s)} tok/s ({num(p.prefill_low_tok_s)}–{num(p.prefill_high_tok_s)})"
              f" · ceiling {num(p.prefill_ceiling_tok_s)} · {p.prefill_bound}-bound")
    else:
        out.append(f"Prefill: none (no prompt) · first token after {duration_ms(p.ttft_ms)}")
    if p.output_tokens:
        out.append(f"Decode: {num(p.decode_tok_s)} tok/s per sequence ({num(p.decode_low_tok_s)}–{num(p.decode_high_tok_s)})"
              f" · ceiling {num(p.decode_ceiling_tok_s)} · {p.bound}-bound · throughput {num(p.throughput_tok_s)} tok/s")
        out.append(f"  roofline: {num(p.bandwidth_gb_s)} GB/s, {num(p.peak_tflops)} TFLOPS {p.compute_dtype}; "
              f"weights alone turn compute-bound beyond batch ≈ {num(p.knee_batch)}")
    out.append(f"Efficiency: {p.efficiency_basis}")
    for note in p.notes:
        out.append(f"note: {note}")
    return out
