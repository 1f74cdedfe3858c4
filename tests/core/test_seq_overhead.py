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
