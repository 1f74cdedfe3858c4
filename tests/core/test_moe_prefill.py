"""The routed experts' products in prefill run at their own fraction of the peak
(`Efficiency.expert_compute_fraction`): each expert multiplies only the tokens routed to it."""

import math

import pytest

from advisor.model.config import configure
from advisor.model.efficiency import efficiency_for
from advisor.model.geometry import geometry
from advisor.model.inputs import inputs_for
from advisor.model.roofline import evaluate


def prefill_tok_s(cat, model, expert_fraction):
    cfg = configure(cat, hardware="rtx 4090", model=model, runtime="llama.cpp", prompt=2048)
    eff = efficiency_for(cat.profiles, cfg.runtime, cfg.hardware).replace(expert_compute_fraction=expert_fraction)
    x = inputs_for(cfg.hardware, cfg.runtime, cfg.quant, cfg.kv_dtype, eff, 1, "pp", cfg.workload)
    return float(evaluate(geometry(cfg.model), x).prefill_tok_s)


def test_only_a_moe_model_feels_the_experts_fraction(cat):
    dense_nan, dense_low = (prefill_tok_s(cat, "llama 3.1 8b", f) for f in (math.nan, 0.05))
    assert dense_nan == pytest.approx(dense_low)
    moe_nan, moe_low = (prefill_tok_s(cat, "qwen3 30b a3b", f) for f in (math.nan, 0.05))
    assert moe_low < 0.7 * moe_nan


def test_the_calibration_learns_it_for_llama_cpp_on_geforce(cat):
    # gpt-oss prompt rows on GeForce cards (RTX 4080, 5070 Ti, 5090) run well below a dense
    # model's rate per active FLOP: the NVIDIA profile's experts are slower than its linear layers
    p = cat.profiles["llama.cpp+nvidia"]
    assert p.expert_compute_fraction is not None and p.expert_compute_fraction < 0.9 * p.prefill_compute_fraction


def test_a_decode_step_runs_its_experts_at_their_fraction_too(cat):
    """A decode step's routed-expert products run at the experts' own fraction, as a prompt pass's do:
    DeepSeek-R1 on eight H200s with TensorRT-LLM (its Hopper profile has the experts at 0.41 of the
    peak where the linear layers reach 0.78) at 4,096 sequences is slower than at one fraction for
    all; one sequence, and a dense model, do not move."""
    own, eff = _step_s(cat, "deepseek-r1", 4096)
    assert float(eff.expert_compute_fraction) < 0.7 * float(eff.prefill_compute_fraction)
    one, _ = _step_s(cat, "deepseek-r1", 4096, math.nan)     # nan: the linear layers' own fraction
    assert own > 1.05 * one
    assert _step_s(cat, "deepseek-r1", 1)[0] == _step_s(cat, "deepseek-r1", 1, math.nan)[0]
    assert _step_s(cat, "llama-3.1-70b", 4096)[0] == _step_s(cat, "llama-3.1-70b", 4096, math.nan)[0]


def test_a_decode_step_adds_its_experts_products_to_their_reads(cat):
    """A grouped expert kernel reads its weights, then multiplies its tokens: the products do not hide
    behind the reads (aiconfigurator's MoE tables, `benchmarks/moe_kernels.py` table 4). At 256
    sequences DeepSeek-R1's step is bound by its reads, yet it takes longer as its experts' fraction
    falls, by the products beyond each touched expert's first token: at least twice as long at half
    the fraction (more where the dtype's share of the peak scales it too). One sequence gives each
    expert at most one token: nothing is added."""
    free, _ = _step_s(cat, "deepseek-r1", 256, 1e6)          # products at no cost: the reads alone
    at_04, _ = _step_s(cat, "deepseek-r1", 256, 0.4)
    at_02, _ = _step_s(cat, "deepseek-r1", 256, 0.2)
    assert at_04 > free * 1.02
    assert at_02 - free >= 2.0 * (at_04 - free)
    assert _step_s(cat, "deepseek-r1", 1, 1e6)[0] == pytest.approx(_step_s(cat, "deepseek-r1", 1, 0.2)[0], rel=1e-12)


def _step_s(cat, model, batch, expert_fraction=None):
    """A decode step's seconds on eight H200s with TensorRT-LLM, FP8, tensor-parallel (the experts' fraction
    replaced where given), and the efficiency it ran at."""
    cfg = configure(cat, hardware="h200-sxm-141gb", model=model, runtime="tensorrt-llm", quant="fp8", gpus=8,
                    batch=batch, prompt=1024, output=2048)
    eff = efficiency_for(cat.profiles, cfg.runtime, cfg.hardware)
    if expert_fraction is not None:
        eff = eff.replace(expert_compute_fraction=expert_fraction)
    x = inputs_for(cfg.hardware, cfg.runtime, cfg.quant, cfg.kv_dtype, eff, 8, "tp", cfg.workload)
    return 1.0 / float(evaluate(geometry(cfg.model), x).decode_tok_s), eff


def test_the_explanation_says_what_the_experts_products_add(cat):
    """`predict`'s explanation of a decode step names the time the experts' grouped kernels add after their
    reads, and it is the step's own figure; one sequence, or a dense model, says nothing of it."""
    from advisor import api

    def decode_text(model, batch):
        cfg = configure(cat, hardware="h200-sxm-141gb", model=model, runtime="tensorrt-llm", gpus=8, batch=batch)
        p = api.predict(cat, cfg)
        return api.explain(cat, cfg, p)["decode"].text, p

    text, p = decode_text("deepseek-r1", 256)
    assert p.decode_expert_products_s > 0
    assert f"add {p.decode_expert_products_s * 1e3:.2f} ms" in text and "grouped kernels" in text
    # the products' FLOPs and the rate they run at, as the step has them
    assert f"{p.decode_expert_products_flops / 1e9:,.0f} GFLOP per GPU" in text
    assert "grouped kernels" not in decode_text("deepseek-r1", 1)[0]
    # a profile with no experts' fraction of its own names the linear layers' (it printed "η_exp nan")
    cfg = configure(cat, hardware="a100-sxm4-80gb", model="qwen3-30b-a3b", runtime="sglang", batch=64)
    eff_text = api.explain(cat, cfg, api.predict(cat, cfg))["decode"].text
    assert "grouped kernels" in eff_text and "nan" not in eff_text
    assert "grouped kernels" not in decode_text("llama-3.1-70b", 256)[0]
