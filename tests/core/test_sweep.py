"""The vectorised sweep gives exactly what `predict` gives, and only runnable combinations."""

import math

import pytest

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


def test_sweep_drops_what_cannot_run(cat):
    r = sweep(cat, cat.model_named("Llama-3.1-8B"), Workload(), runtimes=None, quants=None, kv_dtypes=None,
              gpus=(1, 8))
    for i in range(0, len(r), 97):
        row = r.row(i)
        hw, rt, q, kv = row["hardware"], row["runtime"], row["quant"], row["kv_dtype"]
        assert hw.vendor in rt.vendors
        assert rt.format_family in q.runtimes and rt.format_family in kv.runtimes
        assert row["gpus"] == 1 or hw.kind in ("datacenter", "workstation", "consumer")
    apple = [i for i in range(len(r)) if r.row(i)["hardware"].vendor == "Apple"]
    assert apple and all(r.row(i)["runtime"].format_family in ("llama.cpp", "mlx") for i in apple)
