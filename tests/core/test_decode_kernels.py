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


def cpu_result(cat, batch, hardware="ryzen 9 7950x", serial=None):
    cfg = configure(cat, hardware=hardware, model="llama 3.2 1b", quant="q4_0", runtime="llama.cpp", batch=batch,
                    prompt=64, output=32)
    eff = efficiency_for(cat.profiles, cfg.runtime, cfg.hardware)
    x = inputs_for(cfg.hardware, cfg.runtime, cfg.quant, cfg.kv_dtype, eff, 1, "pp", cfg.workload)
    if serial is not None:
        x = x.replace(reads_then_products=serial)
    return evaluate(geometry(cfg.model), x)


def test_a_cpu_reads_its_weights_then_multiplies_them_for_every_further_sequence(cat):
    # one sequence: its products ride along with the read, as on a GPU
    one, one_max = cpu_result(cat, 1), cpu_result(cat, 1, serial=0.0)
    assert float(one.decode_tok_s) == pytest.approx(float(one_max.decode_tok_s), rel=1e-12)
    assert cpu_result(cat, 1).decode_compute_bound_s == 0.0
    # eight: every sequence past the first adds its products after the read, where the larger of the
    # two roofs would hide them under it (llama.cpp on a 2-core Zen 4, Q4_0, measured 1 → 8 sequences
    # 53.8 → 83.9 tok/s together: catalog/measured/llamacpp_cpu_batched_this_machine.md)
    eight, eight_max = cpu_result(cat, 8), cpu_result(cat, 8, serial=0.0)
    step, step_max = 1 / float(eight.decode_tok_s), 1 / float(eight_max.decode_tok_s)
    assert step > 1.2 * step_max
    # and still more tokens a second than one sequence (the step grows slower than the batch)
    assert 8 * float(eight.decode_tok_s) > float(one.decode_tok_s)
    # the fit's split of the step: what is compute-bound is the further sequences' products
    assert float(eight.decode_compute_bound_s) > 0
    # a CPU without a compute peak in the catalog (EPYC 9965): the memory roof alone, as on any part
    no_peak = cpu_result(cat, 8, hardware="epyc 9965")
    assert math.isfinite(float(no_peak.decode_tok_s)) and float(no_peak.decode_tok_s) > 0


def test_a_gpu_keeps_the_larger_of_the_two_roofs(cat):
    # the flag is the CPU's: a GPU's SMs overlap their loads with their products
    cfg = configure(cat, hardware="rtx 4090", model="llama 3.2 1b", quant="q4_0", runtime="llama.cpp", batch=8)
    eff = efficiency_for(cat.profiles, cfg.runtime, cfg.hardware)
    x = inputs_for(cfg.hardware, cfg.runtime, cfg.quant, cfg.kv_dtype, eff, 1, "pp", cfg.workload)
    assert x.reads_then_products == 0.0
    assert cpu_result(cat, 8).decode_tok_s < cpu_result(cat, 8, serial=0.0).decode_tok_s


def test_an_expert_whose_first_token_outlasts_its_read_pays_the_products(cat):
    # a 1.75-bit mixture on a P100: the touched experts' first tokens multiply for longer than the experts
    # take to read, so a larger batch no longer gives fewer tokens a second (it did, by 0.2 %, when the
    # first tokens' products were taken as free under the read)
    def tok_s(batch):
        cfg = configure(cat, hardware="p100-pcie-12gb", model="ernie-4.5-21b-a3b", quant="iq1_m", runtime="llama.cpp",
                        batch=batch, prompt=1, output=1, kv_dtype="bf16")
        eff = efficiency_for(cat.profiles, cfg.runtime, cfg.hardware)
        x = inputs_for(cfg.hardware, cfg.runtime, cfg.quant, cfg.kv_dtype, eff, 1, "tp", cfg.workload)
        return batch * float(evaluate(geometry(cfg.model), x).decode_tok_s)
    assert tok_s(35) > tok_s(7)
