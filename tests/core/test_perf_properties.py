"""Physical invariants of the model, checked over random configurations from the catalog."""

import dataclasses
import math

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.data.catalog import load_catalog
from advisor.model.predict import predict_entries as predict
from advisor.model.roofline import Workload

CAT = load_catalog(user=None)
HW = sorted(k for k, h in CAT.hardware.items() if h.vendor != "CPU")
MODELS = sorted(CAT.models)
# experts-only formats (MXFP4 MoE) are refused for dense models, so they are left out here
GGUF = sorted(k for k, q in CAT.quants.items() if "llama.cpp" in q.runtimes and q.non_expert_bits_per_weight is None)

config = st.fixed_dictionaries({
    "hw": st.sampled_from(HW),
    "model": st.sampled_from(MODELS),
    "quant": st.sampled_from(GGUF),
    "batch": st.integers(1, 64),
    "prompt": st.integers(1, 4000),
    "output": st.integers(1, 1000),
    "depth": st.integers(0, 4000),
})
SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def pred(c, hw=None, **over):
    c = {**c, **over}
    h = hw or CAT.hardware[c["hw"]]
    wl = Workload(batch=c["batch"], prompt_tokens=c["prompt"], output_tokens=c["output"], depth_tokens=c["depth"])
    return predict(h, CAT.models[c["model"]], CAT.quants[c["quant"]], CAT.runtimes["llama.cpp"], wl,
                   CAT.kv_dtypes["f16"], 1, CAT.profiles, check_context=False)


@SETTINGS
@given(config, st.floats(1.01, 4.0))
def test_more_bandwidth_never_slows_decode(c, k):
    hw = CAT.hardware[c["hw"]]
    faster = dataclasses.replace(hw, bandwidth_gb_s=hw.bandwidth_gb_s * k)
    assert pred(c, hw=faster).decode_tok_s >= pred(c).decode_tok_s * (1 - 1e-12)
    assert not pred(c, hw=faster).ttft_ms > pred(c).ttft_ms * (1 + 1e-12)


@SETTINGS
@given(config, st.integers(1, 4000))
def test_a_longer_prompt_never_shortens_ttft(c, extra):
    longer, shorter = pred(c, prompt=c["prompt"] + extra).ttft_ms, pred(c).ttft_ms
    assert longer >= shorter or (math.isnan(longer) and math.isnan(shorter))


@SETTINGS
@given(config, st.floats(1.01, 4.0))
def test_more_memory_never_lowers_max_batch_or_context(c, k):
    hw = CAT.hardware[c["hw"]]
    bigger = dataclasses.replace(hw, memory_gib=hw.memory_gib * k,
                                 gpu_wired_limit_gb=hw.gpu_wired_limit_gb and hw.gpu_wired_limit_gb * k)
    a, b = pred(c), pred(c, hw=bigger)
    assert b.max_batch >= a.max_batch
    assert b.max_context >= a.max_context


@SETTINGS
@given(config)
def test_expected_values_stay_under_the_ceilings_and_inside_their_bands(c):
    p = pred(c)
    assert 0 < p.decode_low_tok_s <= p.decode_tok_s <= p.decode_high_tok_s <= p.decode_ceiling_tok_s * (1 + 1e-9)
    if math.isnan(p.prefill_tok_s):  # hardware without a compute peak in the catalog
        assert any("no compute peak" in n for n in p.notes)
        return
    assert 0 < p.prefill_low_tok_s <= p.prefill_tok_s <= p.prefill_high_tok_s <= p.prefill_ceiling_tok_s * (1 + 1e-9)
    assert p.ttft_low_ms <= p.ttft_ms <= p.ttft_high_ms


@SETTINGS
@given(config, st.integers(2, 16))
def test_batching_raises_throughput_but_not_per_sequence_speed(c, factor):
    a, b = pred(c), pred(c, batch=c["batch"] * factor)
    assert b.throughput_tok_s >= a.throughput_tok_s
    assert b.decode_tok_s <= a.decode_tok_s * (1 + 1e-12)


@SETTINGS
@given(config, st.integers(1, 8000))
def test_a_deeper_cache_never_speeds_decode(c, extra):
    assert pred(c, depth=c["depth"] + extra).decode_tok_s <= pred(c).decode_tok_s * (1 + 1e-12)


@SETTINGS
@given(config)
def test_fits_agrees_with_max_batch(c):
    p = pred(c)
    assert p.fits == (p.max_batch >= c["batch"])
