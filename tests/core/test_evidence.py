"""What measurements stand behind a prediction (issues 25 and 26): measured, extrapolated or
uncalibrated per runtime × hardware generation × format class, said in every output, and the band of
an extrapolated prediction widened by the factor the held-out errors support."""

from __future__ import annotations

import math

import pytest

from advisor.fit.calibration import HeldOut, bands_from
from advisor.model import efficiency
from advisor.model.config import Config
from advisor.model.efficiency import efficiency_for, evidence, format_class, widened
from advisor.model.predict import predict
from advisor.model.roofline import Workload
from advisor.model.sweep import sweep


def _cfg(cat, hw, model, quant, runtime, kv="f16"):
    return Config(cat.hardware[hw], cat.models[model], cat.quants[quant], cat.kv_dtypes[kv], cat.runtimes[runtime], 1,
                  "", Workload(batch=1, prompt_tokens=512, output_tokens=128))


def test_evidence_levels_follow_what_the_profiles_were_fitted_on(cat):
    q = cat.quants
    # llama.cpp's profiles saw GGUF rows on Ada (an RTX 4090 among them)
    assert evidence(cat.profiles, cat.runtimes["llama.cpp"], cat.hardware["rtx-4090"], q["q4_k_m"], q) == "measured"
    # every GGUF block type is one class: a Q5_K_S is backed by the Q4/Q8 rows
    assert format_class(q["q5_k_s"]) == format_class(q["q4_k_m"]) == "gguf"
    # vLLM's rows never ran NVFP4 on Blackwell (TensorRT-LLM's have since 2026-11-28: DeepSeek-R1 on a B200)
    assert evidence(cat.profiles, cat.runtimes["vllm"], cat.hardware["b200-hgx"], q["nvfp4"], q) == "extrapolated"
    assert evidence(cat.profiles, cat.runtimes["tensorrt-llm"], cat.hardware["b200-hgx"], q["nvfp4"], q) == "measured"
    # a runtime with no fitted profile at all runs on its defaults
    assert evidence({}, cat.runtimes["vllm"], cat.hardware["h100-sxm5-80gb"], q["fp8"], q) == "uncalibrated"


def test_an_extrapolated_prediction_says_so_and_carries_a_wider_band(cat, monkeypatch):
    monkeypatch.setitem(efficiency.EXTRAPOLATION_BAND_WIDENING, "decode", 1.3)
    monkeypatch.setitem(efficiency.EXTRAPOLATION_BAND_WIDENING, "prefill", 1.5)
    cfg = _cfg(cat, "b200-hgx", "llama-3.1-8b", "nvfp4", "vllm")
    p = predict(cat, cfg)
    assert p.evidence == "extrapolated" and any("no measurements of vLLM with NVFP4" in n for n in p.notes)
    e = efficiency_for(cat.profiles, cfg.runtime, cfg.hardware)
    w = widened(e, "extrapolated")
    assert w.decode_low == pytest.approx(e.decode_low / 1.3) and w.prefill_high == pytest.approx(e.prefill_high * 1.5)
    # the band around the same estimate is the widened one (the ceiling still caps the top)
    assert p.decode_low_tok_s == pytest.approx(p.decode_tok_s * w.decode_low, rel=1e-6)
    # the sweep applies the same widening
    s = sweep(cat, cfg.model, cfg.workload, hardware=["b200-hgx"], runtimes=["vllm"], quants=["nvfp4"])
    assert s.values["decode_low_tok_s"][0] == pytest.approx(p.decode_low_tok_s, rel=1e-6)
    # a measured configuration keeps its profile's band
    m = predict(cat, _cfg(cat, "rtx-4090", "llama-3.1-8b", "q4_k_m", "llama.cpp"))
    e4 = efficiency_for(cat.profiles, cat.runtimes["llama.cpp"], cat.hardware["rtx-4090"])
    assert m.evidence == "measured" and m.decode_low_tok_s == pytest.approx(m.decode_tok_s * e4.decode_low, rel=1e-6)


def test_calibrate_measures_the_widening_on_rows_that_were_extrapolated(cat):
    """The factor that puts the band's share (90 %) of the extrapolated rows' held-out errors inside an own
    profile's band, added in log space: rows inside the band need none."""
    from advisor.fit.measurements import Case

    base = _cfg(cat, "rtx-4090", "llama-3.1-8b", "q4_k_m", "llama.cpp")

    def held(ratio, seen, level="family"):
        case = Case(row=1, hardware=base.hardware, model=base.model, quant=base.quant, kv=base.kv_dtype,
                    runtime=base.runtime, gpus=1, workload=base.workload, metric="decode", measured=100.0 * ratio,
                    source="s")
        return HeldOut(case, "s", 100.0, level, "p", 200.0, seen)

    inside = [held(1.0, "measured") for _ in range(20)]
    outside = [held(math.exp(0.5), "extrapolated") for _ in range(10)]  # 65 % faster than predicted
    b = bands_from(inside + outside)
    lo, hi = b.own[("decode", "device")]
    assert b.extrapolation_widening["decode"] == pytest.approx(math.exp(0.5) / hi, rel=1e-6)
    assert bands_from(inside).extrapolation_widening["decode"] == efficiency.EXTRAPOLATION_BAND_WIDENING["decode"]
