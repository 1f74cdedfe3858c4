"""Which efficiencies a (runtime, hardware) pair runs at: the calibrated profile or the defaults.

Efficiency is a property of (runtime, hardware family, dtype), not a universal constant
(DESIGN.md §2). `advisor.fit.calibration` fits profiles per runtime and hardware group into
``catalog/profiles.yaml``; this module picks the most specific one that applies, and falls back
to the runtime's documented starting values, with a wide band, where nothing was measured.
"""

from __future__ import annotations

from dataclasses import dataclass

from advisor.model.devices import tier
from advisor.data.specs import Hardware, Profile, Runtime

#: Band for an uncalibrated runtime: wide, because nothing measured backs it.
UNCALIBRATED_DECODE_BAND = (0.6, 1.4)
UNCALIBRATED_PREFILL_BAND = (0.4, 1.8)


@dataclass(frozen=True)
class Efficiency:
    decode_bw_fraction: float
    layer_overhead_us: float
    step_overhead_us: float
    prefill_compute_fraction: float
    attention_compute_fraction: float
    allreduce_latency_us: float
    decode_low: float
    decode_high: float
    prefill_low: float
    prefill_high: float
    #: what the figures come from: a profile key, or "defaults of <runtime>"
    basis: str
    #: how specific the match is: hardware, family, vendor, sibling-*, runtime, or none (defaults)
    level: str

    @property
    def calibrated(self) -> bool:
        return self.level != "none"


#: A sibling runtime's profile (another backend or build of the same engine) is stretched this much
#: in log space: measured on the same hardware, but not with this build.
SIBLING_BAND_STRETCH = 1.5


def _level(p: Profile, hw: Hardware) -> str | None:
    """How specifically profile ``p`` matches ``hw``; None if it does not apply."""
    if p.hardware:
        return "hardware" if p.hardware == hw.key else None
    if p.family:
        if p.family != hw.family or (p.tier and p.tier != tier(hw)):
            return None
        return "family"
    if p.vendor:
        return "vendor" if p.vendor == hw.vendor else None
    return "runtime"


def select_profile(profiles: dict[str, Profile] | None, runtime: Runtime, hw: Hardware) -> tuple[Profile, str] | None:
    """The profile to use: this runtime's most specific one for the hardware's device, family or
    vendor; else a sibling runtime's (same engine, another backend or build) for the vendor; else
    this runtime's catch-all. The level returned is prefixed "sibling-" in the second case."""
    own: dict[str, Profile] = {}
    sibling: dict[str, Profile] = {}
    for p in (profiles or {}).values():
        level = _level(p, hw)
        if level is None:
            continue
        if p.runtime == runtime.key:
            own.setdefault(level, p)
        elif p.formats_of and p.formats_of == runtime.format_family and level != "runtime":
            sibling.setdefault(level, p)
    for level in ("hardware", "family", "vendor"):
        if level in own:
            return own[level], level
    for level in ("hardware", "family", "vendor"):
        if level in sibling:
            return sibling[level], f"sibling-{level}"
    if "runtime" in own:
        return own["runtime"], "runtime"
    return None


def efficiency_for(profiles: dict[str, Profile] | None, runtime: Runtime, hw: Hardware) -> Efficiency:
    found = select_profile(profiles, runtime, hw)
    if found is None:
        return Efficiency(
            decode_bw_fraction=runtime.decode_bw_fraction, layer_overhead_us=runtime.layer_overhead_us,
            step_overhead_us=runtime.step_overhead_us, prefill_compute_fraction=runtime.prefill_compute_fraction,
            attention_compute_fraction=runtime.attention_compute_fraction,
            allreduce_latency_us=runtime.allreduce_latency_us,
            decode_low=UNCALIBRATED_DECODE_BAND[0], decode_high=UNCALIBRATED_DECODE_BAND[1],
            prefill_low=UNCALIBRATED_PREFILL_BAND[0], prefill_high=UNCALIBRATED_PREFILL_BAND[1],
            basis=f"defaults of {runtime.name} (uncalibrated)", level="none",
        )
    p, level = found
    k = SIBLING_BAND_STRETCH if level.startswith("sibling") else 1.0
    return Efficiency(
        decode_bw_fraction=p.decode_bw_fraction, layer_overhead_us=p.layer_overhead_us,
        step_overhead_us=p.step_overhead_us, prefill_compute_fraction=p.prefill_compute_fraction,
        attention_compute_fraction=p.attention_compute_fraction,
        allreduce_latency_us=p.allreduce_latency_us if p.allreduce_latency_us is not None else runtime.allreduce_latency_us,
        decode_low=p.decode_low ** k, decode_high=p.decode_high ** k,
        prefill_low=p.prefill_low ** k, prefill_high=p.prefill_high ** k,
        basis=p.key, level=level,
    )
