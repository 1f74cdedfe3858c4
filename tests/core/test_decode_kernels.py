"""A decode step runs its linear layers' kernels and its attention kernels one after the other, each
at its own roof (`advisor.model.roofline.decode_step`): a large batch whose products are
compute-bound still waits for its KV reads, which the whole step at one roof let overlap."""

import math

import pytest

from advisor.model.config import configure
from advisor.model.efficiency import efficiency_for
from advisor.model.geometry import geometry
from advisor.model.inputs import inputs_for
from advisor.model.roofline import evaluate


def result(cat, batch, prompt, output=256):
    cfg = configure(cat, hardware="h100 sxm", model="llama 3.1 8b", runtime="vllm", batch=batch, prompt=prompt,
                    output=output)
    eff = efficiency_for(cat.profiles, cfg.runtime, cfg.hardware)
    x = inputs_for(cfg.hardware, cfg.runtime, cfg.quant, cfg.kv_dtype, eff, 1, "pp", cfg.workload)
    return evaluate(geometry(cfg.model), x)


def test_a_large_batch_at_long_context_pays_both_kinds_of_kernel(cat):
    # 512 sequences of 8,000 tokens: the linear products are compute-bound, the KV reads memory-bound
    r = result(cat, 512, 8000)
    memory, compute = float(r.decode_memory_bound_s), float(r.decode_compute_bound_s)
    assert memory > 0 and compute > 0
    step = 1 / float(r.decode_tok_s)
    # the step is the two kinds of kernel one after the other, plus the fixed costs …
    assert step == pytest.approx(memory + compute + float(r.decode_fixed_s), rel=1e-9)
    # … which is slower than the whole step at one roof
    overlapped = max(float(r.decode_memory_s), float(r.decode_compute_s)) + float(r.decode_fixed_s)
    assert step > 1.05 * overlapped


def test_one_sequence_is_all_reads_as_before(cat):
    # batch 1: every kernel waits on memory, the two ways of adding agree
    r = result(cat, 1, 512)
    assert float(r.decode_compute_bound_s) == 0.0
    assert float(r.decode_memory_bound_s) == pytest.approx(float(r.decode_memory_s), rel=1e-2)


@pytest.mark.parametrize("batch,prompt", [(1, 512), (64, 2000), (512, 8000), (2048, 32000)])
def test_the_ceiling_still_bounds_the_estimate(cat, batch, prompt):
    # the ceiling keeps the whole step at one roof (the looser bound): never below the estimate
    r = result(cat, batch, prompt)
    assert math.isfinite(float(r.decode_ceiling_tok_s))
    assert float(r.decode_ceiling_tok_s) >= float(r.decode_tok_s)
    assert float(r.decode_high_tok_s) <= float(r.decode_ceiling_tok_s) + 1e-9
