"""A fixed cost per running sequence per decode step (`Efficiency.seq_overhead_us`): the engine's
bookkeeping, sampling and output handling for each sequence, which makes a large batch's step
slower than its memory reads alone (vLLM's MI300X latency sweep, batch 1 → 128)."""

import pytest

from advisor.model.config import configure
from advisor.model.efficiency import efficiency_for
from advisor.model.geometry import geometry
from advisor.model.inputs import inputs_for
from advisor.model.roofline import evaluate


def step_ms(cat, batch, seq_us):
    cfg = configure(cat, hardware="h100 sxm", model="llama 3.1 8b", runtime="vllm", batch=batch, prompt=128, output=128)
    eff = efficiency_for(cat.profiles, cfg.runtime, cfg.hardware).replace(seq_overhead_us=seq_us)
    x = inputs_for(cfg.hardware, cfg.runtime, cfg.quant, cfg.kv_dtype, eff, 1, "pp", cfg.workload)
    return 1e3 / float(evaluate(geometry(cfg.model), x).decode_tok_s)


@pytest.mark.parametrize("batch", [1, 8, 64])
def test_each_running_sequence_adds_its_cost_to_the_step(cat, batch):
    # 100 µs per sequence: the step grows by batch × 0.1 ms, nothing else moves
    assert step_ms(cat, batch, 100.0) - step_ms(cat, batch, 0.0) == pytest.approx(0.1 * batch, rel=1e-6)


def test_the_fit_learns_it_where_the_batch_varies(cat):
    # the MI300X rows sweep the batch from 1 to 128 at a fixed model: the per-sequence cost is told
    # apart from the fixed step cost, with a posterior narrower than its prior (50 µs)
    p = cat.profiles["vllm+amd"]
    assert p.seq_overhead_us is not None and 20 < p.seq_overhead_us < 400
    assert "per-sequence µs" in p.notes and "per-sequence µs ±" in p.notes
    sd = float(p.notes.split("per-sequence µs ±")[1].split()[0].rstrip(",;"))
    assert sd < 25


def test_a_runtime_without_batched_rows_keeps_its_default(cat):
    # no batched decode rows for TensorRT-LLM in the data: nothing written, the runtime's value (0) used
    assert all(p.seq_overhead_us is None for k, p in cat.profiles.items() if p.runtime == "tensorrt-llm")


def _ttft(cat, request_us):
    cfg = configure(cat, hardware="h100 sxm", model="llama 3.1 8b", runtime="tensorrt-llm", quant="fp8", prompt=512)
    eff = efficiency_for(cat.profiles, cfg.runtime, cfg.hardware).replace(request_overhead_us=request_us)
    x = inputs_for(cfg.hardware, cfg.runtime, cfg.quant, cfg.kv_dtype, eff, 1, "pp", cfg.workload)
    return evaluate(geometry(cfg.model), x)


def test_a_request_cost_is_paid_once_in_the_ttft_not_in_prompt_or_decode_speed(cat):
    base, slow = _ttft(cat, 0.0), _ttft(cat, 2000.0)
    assert float(slow.ttft_s - base.ttft_s) == pytest.approx(2e-3, rel=1e-6)
    assert float(slow.prefill_tok_s) == pytest.approx(float(base.prefill_tok_s))
    assert float(slow.decode_tok_s) == pytest.approx(float(base.decode_tok_s))


def test_ttft_rows_charge_what_they_do_not_explain_to_the_request_not_to_every_step(cat):
    # TensorRT-LLM's batch-1 TTFT rows hold ~1-2 ms the FLOPs and bytes do not explain; a step
    # cost is tens to hundreds of µs (its prior), so the fit puts it on the request
    p = cat.profiles["tensorrt-llm+nvidia"]
    assert p.request_overhead_us is not None and p.request_overhead_us > 500
    assert p.step_overhead_us < 1000
    assert "per-request µs" in p.notes
