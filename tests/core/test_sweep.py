"""The vectorised sweep gives exactly what `predict` gives, and only runnable combinations."""

import math

import numpy as np

import pytest

from advisor.model.compat import refusal
from advisor.model.predict import predict_entries as predict
from advisor.model.roofline import Workload
from advisor.model.sweep import sweep


def test_sweep_matches_predict(cat):
    model = cat.model_named("Qwen3-30B-A3B")
    wl = Workload(batch=4, prompt_tokens=1000, output_tokens=200, depth_tokens=300)
    r = sweep(cat, model, wl, hardware=["rtx-4090", "h100-sxm5-80gb", "apple-m2-max-38c"], runtimes=None,
              quants=["q4_k_m", "bf16", "fp8"], kv_dtypes=("f16", "q8_0"), gpus=(1, 2), batch=(1, 4))
    assert len(r) > 10
    for i in range(len(r)):
        row = r.row(i)
        p = predict(row["hardware"], model, row["quant"], row["runtime"],
                    Workload(row["batch"], 1000, 200, 300), row["kv_dtype"], row["gpus"], cat.profiles,
                    check_context=False)
        assert row["decode_tok_s"] == pytest.approx(p.decode_tok_s, rel=1e-5)  # sweeps run in float32
        assert row["max_batch"] == p.max_batch
        assert row["fits"] == p.fits
        if math.isfinite(p.ttft_ms):
            assert row["ttft_s"] * 1e3 == pytest.approx(p.ttft_ms, rel=1e-5)


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_sweep_drops_what_cannot_run(cat):
    r = sweep(cat, cat.model_named("Llama-3.1-8B"), Workload(), runtimes=None, quants=None, kv_dtypes=None,
              gpus=(1, 8))
    t = r.tables
    # every configuration the sweep kept is one the compatibility rules allow, checked per distinct
    # combination rather than per row (there are ~60,000 rows)
    combos = {(int(h), int(rt), int(q), int(k)) for h, rt, q, k in zip(r.hw, r.rt, r.q, r.kv)}
    for h, rt, q, k in combos:
        hw, runtime, quant, kv = t.hardware[h], t.runtimes[rt], t.quants[q], t.kv_dtypes[k]
        assert hw.vendor in runtime.vendors
        assert runtime.format_family in quant.runtimes and runtime.format_family in kv.runtimes
        assert quant.non_expert_bits_per_weight is None  # experts-only formats are not for a dense model
        assert refusal(hw, None, quant, kv, runtime, 1) is None  # the support matrix (generation rules) too
    # the support matrix drops whole generations: no vLLM on Pascal, no TensorRT-LLM FP8 on Ampere
    kept = {(t.hardware[h].family, t.runtimes[rt].key, t.quants[q].key) for h, rt, q, _ in combos}
    assert not any(f == "nvidia-pascal" and rt == "vllm" for f, rt, _ in kept)
    assert ("nvidia-ampere", "tensorrt-llm", "fp8") not in kept and ("nvidia-ada", "tensorrt-llm", "fp8") in kept
    multi = np.unique(r.hw[r.gpus > 1])
    assert all(t.hardware[h].kind in ("datacenter", "workstation", "consumer", "dataflow") for h in multi)
    apple = np.array([t.hardware[h].vendor == "Apple" for h in r.hw])
    assert apple.any()
    assert {t.runtimes[x].format_family for x in np.unique(r.rt[apple])} <= {"llama.cpp", "mlx"}
    # and the rows it dropped are exactly those: the count matches the grids
    ok = t.ok_hw_rt[:, :, None, None] & t.ok_rt_q[None, :, :, None] & t.ok_rt_kv[None, :, None, :]
    ok &= t.ok_hw_rt_q[:, :, :, None] & t.ok_hw_rt_kv[:, :, None, :]
    ok &= ~t.expert_only[None, None, :, None]
    per_gpu_count = ok.sum(axis=(1, 2, 3))
    expected = per_gpu_count.sum() + per_gpu_count[t.max_gpus >= 8].sum()
    assert len(r) == expected


def test_sweep_values_are_a_complete_mapping(cat):
    r = sweep(cat, cat.model_named("Llama-3.1-8B"), Workload(), hardware=["rtx-4090"], batch=(1, 4))
    assert len(r.values) == len(list(r.values)) and "decode_low_tok_s" in r.values and "ttft_high_s" in r.values
    assert all(r.values[k].shape == (len(r),) for k in r.values)
    row = r.row(len(r) - 1)
    assert set(r.values) <= set(row) and row["batch"] == 4
