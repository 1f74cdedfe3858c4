"""A profile fitted to one phase's rows cannot speak for the other: its prefill (or decode) rates
and band come from the next profile that saw such rows (`advisor.model.efficiency.efficiency_for`)."""

from dataclasses import replace

import pytest

from advisor.model.efficiency import efficiency_for


def test_a_decode_only_profile_borrows_prefill_from_the_next_that_saw_prefill(cat):
    hw, rt = cat.hardware["rtx-4090"], cat.runtimes["llama.cpp"]
    base = efficiency_for(cat.profiles, rt, hw)
    first = next(p for p in cat.profiles.values() if p.key == base.basis.split(" ")[0])
    # a more specific profile for this very card, fitted to decode rows only
    own = replace(first, key="test-4090-decode-only", hardware="rtx-4090", family="", vendor="",
                  decode_bw_fraction=0.5, prefill_compute_fraction=0.9, decode_rows=5, prefill_rows=0)
    eff = efficiency_for({**cat.profiles, own.key: own}, rt, hw)
    assert eff.level == "hardware" and eff.decode_bw_fraction == 0.5
    assert eff.prefill_compute_fraction == base.prefill_compute_fraction != 0.9
    assert (eff.prefill_low, eff.prefill_high) == (base.prefill_low, base.prefill_high)
    assert f"prefill from {first.key}" in eff.basis
    # with prefill rows of its own it speaks for both
    both = replace(own, prefill_rows=3)
    assert efficiency_for({**cat.profiles, own.key: both}, rt, hw).prefill_compute_fraction == 0.9


def test_a_runtime_on_another_runtimes_front_end_pays_its_request_cost(cat):
    # vLLM's OpenAI server, tokenizer and scheduler run the same in front of TPUs and Neuron devices:
    # without TTFT rows of their own, vllm-tpu and vllm-neuron pay the request cost vLLM's fit gives
    vllm_fit = next(p for p in cat.profiles.values() if p.runtime == "vllm" and not (p.vendor or p.family or p.hardware))
    assert vllm_fit.request_overhead_us and vllm_fit.request_overhead_us > 1000
    for rt, hw in (("vllm-tpu", "tpu-v6e"), ("vllm-neuron", "trainium2")):
        eff = efficiency_for(cat.profiles, cat.runtimes[rt], cat.hardware_named(hw))
        assert eff.request_overhead_us == pytest.approx(vllm_fit.request_overhead_us)
        assert "front end" in eff.basis
    # a runtime with its own fit, or of its own family, keeps what it has
    own = efficiency_for(cat.profiles, cat.runtimes["sglang"], cat.hardware_named("h100 sxm"))
    assert "front end" not in own.basis
    llama = efficiency_for(cat.profiles, cat.runtimes["llama.cpp-vulkan"], cat.hardware_named("rtx 4090"))
    assert "front end" not in llama.basis     # llama.cpp has no request cost fitted to lend
