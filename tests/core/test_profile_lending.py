"""A profile fitted to one phase's rows cannot speak for the other: its prefill (or decode) rates
and band come from the next profile that saw such rows (`advisor.model.efficiency.efficiency_for`)."""

from dataclasses import replace

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
