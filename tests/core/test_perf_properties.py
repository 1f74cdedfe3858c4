import pytest
"""Physical invariants of the model, checked over random configurations from the catalog."""

import dataclasses
import math

from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from advisor.data.catalog import load_catalog
from advisor.model.compat import (cache_refusal, format_refusal, kv_refusal, model_cache_refusal, runtime_refusal,
                                  tp_refusal)
from advisor.model.config import Config
from advisor.model.devices import max_gpus
from advisor.model.predict import predict
from advisor.model.roofline import Workload

CAT = load_catalog(user=None)
MODELS = sorted(CAT.models)
RUNTIMES = sorted(k for k, r in CAT.runtimes.items() if not r.historic)
# hardware that some current runtime runs on (no catalog runtime serves Trainium3 yet)
HW = sorted(k for k, h in CAT.hardware.items()
            if h.vendor != "CPU" and any(runtime_refusal(h, CAT.runtimes[r]) is None for r in RUNTIMES))


@st.composite
def config(draw):
    """Any runnable configuration: every current runtime (tensor parallel, layer split and the
    free-memory allocator of TensorRT-LLM), every format and KV dtype it loads, 1–8 GPUs, every
    model kind (dense GQA, MoE, MLA, sliding-window, hybrid)."""
    hw = CAT.hardware[draw(st.sampled_from(HW))]
    rt = CAT.runtimes[draw(st.sampled_from([r for r in RUNTIMES if runtime_refusal(hw, CAT.runtimes[r]) is None]))]
    model = CAT.models[draw(st.sampled_from(MODELS))]
    quants = sorted(k for k, q in CAT.quants.items() if format_refusal(hw, rt, q, model) is None)
    assume(quants)  # a model this runtime refuses on this hardware (MLA on vLLM TPU)
    # the caches the runtime has on this hardware, and for this model (vLLM's FP8 for MLA before Hopper)
    kvs = sorted(k for k, x in CAT.kv_dtypes.items()
                 if cache_refusal(hw, rt, x) is None and model_cache_refusal(hw, rt, x, model) is None)
    split = draw(st.sampled_from(["tp", "pp"]))
    # a tensor-parallel group gives each GPU whole attention heads (Qwen2.5-7B's 28 do not split over 8)
    gpus = [g for g in (1, 2, 4, 8) if g <= max_gpus(hw) and (split == "pp" or tp_refusal(model, rt, g) is None)]
    return {
        "hw": hw.key, "runtime": rt.key, "model": model.key, "quant": draw(st.sampled_from(quants)),
        "kv": draw(st.sampled_from(kvs)), "gpus": draw(st.sampled_from(gpus)),
        "split": split, "batch": draw(st.integers(1, 64)),
        "prompt": draw(st.integers(1, 4000)), "output": draw(st.integers(1, 1000)), "depth": draw(st.integers(0, 4000)),
    }


SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def pred(c, hw=None, **over):
    c = {**c, **over}
    h = hw or CAT.hardware[c["hw"]]
    wl = Workload(batch=c["batch"], prompt_tokens=c["prompt"], output_tokens=c["output"], depth_tokens=c["depth"])
    cfg = Config(h, CAT.models[c["model"]], CAT.quants[c["quant"]], CAT.kv_dtypes[c["kv"]], CAT.runtimes[c["runtime"]],
                 c["gpus"], c["split"], wl)
    return predict(CAT, cfg, check_context=False)


def has_no_peak(p) -> bool:
    return any("no compute peak" in n for n in p.notes)


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
@SETTINGS
@given(config(), st.floats(1.01, 4.0))
def test_more_bandwidth_never_slows_decode(c, k):
    hw = CAT.hardware[c["hw"]]
    faster = dataclasses.replace(hw, bandwidth_gb_s=hw.bandwidth_gb_s * k)
    assert pred(c, hw=faster).decode_tok_s >= pred(c).decode_tok_s * (1 - 1e-12)
    base = pred(c)
    assert has_no_peak(base) or pred(c, hw=faster).ttft_ms <= base.ttft_ms * (1 + 1e-12)


@SETTINGS
@given(config(), st.integers(1, 4000))
def test_a_longer_prompt_never_shortens_ttft(c, extra):
    longer, shorter = pred(c, prompt=c["prompt"] + extra), pred(c)
    if math.isnan(shorter.ttft_ms):  # only where the catalog has no compute peak, and then it says so
        assert has_no_peak(shorter) and math.isnan(longer.ttft_ms)
        return
    assert longer.ttft_ms >= shorter.ttft_ms


@SETTINGS
@given(config(), st.floats(1.01, 4.0))
def test_more_memory_never_lowers_max_batch_or_context(c, k):
    hw = CAT.hardware[c["hw"]]
    bigger = dataclasses.replace(hw, memory_gib=hw.memory_gib * k,
                                 gpu_wired_limit_gb=hw.gpu_wired_limit_gb and hw.gpu_wired_limit_gb * k)
    a, b = pred(c), pred(c, hw=bigger)
    assert b.max_batch >= a.max_batch
    assert b.max_context >= a.max_context


@SETTINGS
@given(config())
def test_expected_values_stay_under_the_ceilings_and_inside_their_bands(c):
    p = pred(c)
    assert 0 < p.decode_low_tok_s <= p.decode_tok_s <= p.decode_high_tok_s <= p.decode_ceiling_tok_s * (1 + 1e-9)
    if math.isnan(p.prefill_tok_s):  # hardware without a compute peak in the catalog
        assert has_no_peak(p) and math.isnan(p.ttft_ms)
        return
    assert math.isfinite(p.ttft_ms) and p.ttft_ms > 0
    assert 0 < p.prefill_low_tok_s <= p.prefill_tok_s <= p.prefill_high_tok_s <= p.prefill_ceiling_tok_s * (1 + 1e-9)
    assert p.ttft_low_ms <= p.ttft_ms <= p.ttft_high_ms


@SETTINGS
@given(config(), st.integers(2, 16))
def test_batching_raises_throughput_but_not_per_sequence_speed(c, factor):
    a, b = pred(c), pred(c, batch=c["batch"] * factor)
    # except where the added sequences' KV spills to a slower tier (a dataflow machine's DDR): each
    # added sequence then costs its KV at DDR speed, which can exceed the average time per token
    if not any("spilled to DDR" in n for n in b.notes):
        assert b.throughput_tok_s >= a.throughput_tok_s
    # except across llama.cpp's switch from its vector kernels (at most `vector_batch_max` sequences,
    # every weight unpacked again per sequence at the FP32 rate) to its tensor-core kernels: a few
    # sequences of a huge model can be compute-bound on the former and a few more memory-bound on the
    # latter, so one more sequence past the switch can shorten the step (the runtime's own per-GPU
    # switch points move with the GPU and the format, which the model does not follow)
    rt = CAT.runtimes[c["runtime"]]
    if rt.vector_batch_max and c["batch"] <= rt.vector_batch_max < c["batch"] * factor:
        return
    assert b.decode_tok_s <= a.decode_tok_s * (1 + 1e-12)


@SETTINGS
@given(config(), st.integers(1, 8000))
def test_a_deeper_cache_never_speeds_decode(c, extra):
    assert pred(c, depth=c["depth"] + extra).decode_tok_s <= pred(c).decode_tok_s * (1 + 1e-12)


@SETTINGS
@given(config())
def test_fits_agrees_with_max_batch(c):
    p = pred(c)
    assert p.fits == (p.max_batch >= c["batch"])


# The random draws above may miss a corner; these configurations are checked every run.
CORNERS = [
    dict(hw="h100-sxm5-80gb", runtime="vllm", model="deepseek-v3", quant="fp8", kv="fp8", gpus=8, split="tp"),
    dict(hw="h100-sxm5-80gb", runtime="tensorrt-llm", model="llama-3.1-70b", quant="fp8", kv="fp8", gpus=4, split="tp"),
    dict(hw="rtx-4090", runtime="llama.cpp", model="gemma-2-9b", quant="q4_k_m", kv="q8_0", gpus=2, split="pp"),
    dict(hw="rtx-3090", runtime="llama.cpp", model="qwen3-next-80b-a3b", quant="q4_k_m", kv="q4_0", gpus=4, split="pp"),
    dict(hw="apple-m2-max-38c", runtime="mlx", model="gemma-3-12b", quant="bf16", kv="f16", gpus=1, split="pp"),
]


def test_the_invariants_hold_on_the_corner_cases():
    for corner in CORNERS:
        for kv in sorted(CAT.kv_dtypes):
            if kv_refusal(CAT.runtimes[corner["runtime"]], CAT.kv_dtypes[kv]):
                continue
            c = {**corner, "kv": kv, "batch": 8, "prompt": 2000, "output": 200, "depth": 1000}
            p = pred(c)
            assert 0 < p.decode_low_tok_s <= p.decode_tok_s <= p.decode_high_tok_s <= p.decode_ceiling_tok_s * (1 + 1e-9)
            assert p.ttft_low_ms <= p.ttft_ms <= p.ttft_high_ms and math.isfinite(p.ttft_ms)
            assert pred(c, prompt=4000).ttft_ms > p.ttft_ms
            assert pred(c, batch=16).throughput_tok_s >= p.throughput_tok_s
            assert pred(c, depth=8000).decode_tok_s <= p.decode_tok_s
            assert p.fits == (p.max_batch >= 8)
