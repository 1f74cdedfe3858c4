"""Which efficiencies a (runtime, hardware) pair runs at: the calibrated profile or the defaults.

Efficiency is a property of (runtime, hardware family, dtype), not a universal constant
(docs/ARCHITECTURE.md). `advisor.fit.calibration` fits profiles per runtime and hardware group into
``catalog/profiles.yaml``; this module picks the most specific one that applies, and falls back
to the runtime's documented starting values, with a wide band, where nothing was measured.
"""

from __future__ import annotations

import math

from dataclasses import dataclass, replace
from typing import Any, Sequence

import numpy as np

from advisor.model.devices import tier
from advisor.data.eras import parse_date, weights as era_weights
from advisor.data.specs import Hardware, Profile, Runtime
from advisor.model.geometry import DECODE_EXPERT_WEIGHT

#: Band for an uncalibrated runtime: wide, because nothing measured backs it. `advisor calibrate`
#: measures it (the 5th–95th percentile on rows predicted from a runtime's defaults with their
#: source or era left out) and prints it beside these values; on the 2026-11-24 data it was
#: 0.33–1.23 for decode (151 rows) and 0.55–1.82 for prefill (56 rows). Neither side is set
#: narrower than that nor than before (0.6–1.4, 0.4–1.8).
UNCALIBRATED_DECODE_BAND = (0.33, 1.4)
UNCALIBRATED_PREFILL_BAND = (0.4, 1.82)


def expert_weight(r: Runtime) -> float:
    """`Runtime.decode_expert_weight`, else the default (`advisor.model.geometry.DECODE_EXPERT_WEIGHT`)."""
    return DECODE_EXPERT_WEIGHT if r.decode_expert_weight is None else float(r.decode_expert_weight)


#: The fitted rates, in the order the calibration solves for them.
RATE_FIELDS = ("decode_bw_fraction", "layer_overhead_us", "step_overhead_us", "prefill_compute_fraction",
               "attention_compute_fraction", "allreduce_latency_us", "expert_compute_fraction", "seq_overhead_us",
               "request_overhead_us", "int8_compute_fraction", "expert_overhead_us")
#: The rates that set decode speed: blended between build eras (prefill follows the era's kernels).
DECODE_RATE_FIELDS = ("decode_bw_fraction", "layer_overhead_us", "step_overhead_us", "allreduce_latency_us",
                      "seq_overhead_us", "expert_overhead_us")
BAND_FIELDS = ("decode_low", "decode_high", "prefill_low", "prefill_high", "bandwidth_spread")
#: the fields that set each phase's speed and band (a profile may lend one phase, see `efficiency_for`)
PREFILL_FIELDS = ("prefill_compute_fraction", "attention_compute_fraction", "expert_compute_fraction",
                  "request_overhead_us", "int8_compute_fraction", "prefill_low", "prefill_high")
DECODE_FIELDS = DECODE_RATE_FIELDS + ("decode_low", "decode_high")


@dataclass(frozen=True)
class Efficiency:
    """The fractions of the roofs a runtime reaches on some hardware, its fixed costs, and the
    band around its predictions. The one efficiency type: runtime defaults, calibrated profiles,
    the calibration's trial values and the kernel's inputs are all `Efficiency`. Fields are
    numbers, or numpy arrays with one element per configuration (`stack`, `take`)."""

    decode_bw_fraction: Any            # of spec bandwidth, reached by decode weight and KV reads
    layer_overhead_us: Any             # fixed cost per layer per forward pass
    step_overhead_us: Any              # fixed cost per forward pass
    prefill_compute_fraction: Any      # of dense peak, reached by the linear layers in prefill
    attention_compute_fraction: Any    # of dense peak, reached by the attention products in prefill
    allreduce_latency_us: Any          # per GPU-to-GPU message
    #: of dense peak, reached by the routed experts' products in prefill (each expert multiplies
    #: only the tokens routed to it, gathered and scattered around a smaller product); nan = the
    #: prefill compute fraction (dense models, and groups whose data has no MoE prompt rows)
    expert_compute_fraction: Any = math.nan
    #: fixed cost per running sequence per decode step (the engine's bookkeeping, sampling and
    #: output handling for each sequence): what makes a large batch's step slower than its reads
    seq_overhead_us: Any = 0.0
    #: fixed cost once per request, before its first token (the engine's setup of the request and
    #: its first pass): in the time to first token, not in any later step or in prompt tok/s
    request_overhead_us: Any = 0.0
    #: of the int8 peak, reached by the linear layers where they compute in int8 (llama.cpp's
    #: quantized kernels: on CPUs their unpacking and scaling cost far more than the dot products
    #: themselves, so they reach a smaller share of their peak than a float GEMM); nan = the prefill
    #: compute fraction (groups whose data has no int8 prompt rows)
    int8_compute_fraction: Any = math.nan
    #: fixed cost per expert a token visits (routed top-k plus shared) per MoE layer per forward pass:
    #: the routing, gathering and small products each expert adds at a decode step's batch, which
    #: differ by runtime and hardware (a fused MoE kernel of one vendor against another's); nan = the
    #: runtime's ``decode_expert_weight`` plain layers' worth (`expert_overhead`)
    expert_overhead_us: Any = math.nan
    decode_low: Any = 1.0              # band: multipliers on the predicted speed
    decode_high: Any = 1.0
    prefill_low: Any = 1.0
    prefill_high: Any = 1.0
    #: a probed CPU's best read ÷ its median one (`Hardware.bandwidth_best_gb_s`), 1 elsewhere: the
    #: roofline's ceiling reads memory at the best figure, and the decode band's top (in
    #: ``decode_high``) stretches by it, while the estimate keeps the typical one
    bandwidth_spread: Any = 1.0
    #: what the figures come from: a profile key, or "defaults of <runtime>"
    basis: str = ""
    #: how specific the match is: hardware, family, vendor, sibling-*, runtime, or none (defaults)
    level: str = "none"
    #: the level of the profile that lent a phase its figures, where one did (`efficiency_for`: a
    #: profile without rows of that phase borrows it); "" = ``level``
    decode_level: str = ""
    prefill_level: str = ""

    def level_of(self, phase: str) -> str:
        """The level that the ``phase`` (decode | prefill) figures come from."""
        return (self.decode_level if phase == "decode" else self.prefill_level) or self.level

    @property
    def calibrated(self) -> bool:
        return self.level != "none"

    @classmethod
    def of_runtime(cls, rt: Runtime) -> "Efficiency":
        """The runtime's documented starting values, with the wide uncalibrated band."""
        return cls(rt.decode_bw_fraction, rt.layer_overhead_us, rt.step_overhead_us, rt.prefill_compute_fraction,
                   rt.attention_compute_fraction, rt.allreduce_latency_us, seq_overhead_us=rt.seq_overhead_us,
                   request_overhead_us=rt.request_overhead_us,
                   expert_overhead_us=expert_weight(rt) * rt.layer_overhead_us,
                   decode_low=UNCALIBRATED_DECODE_BAND[0], decode_high=UNCALIBRATED_DECODE_BAND[1],
                   prefill_low=UNCALIBRATED_PREFILL_BAND[0], prefill_high=UNCALIBRATED_PREFILL_BAND[1],
                   basis=f"defaults of {rt.name} (uncalibrated)", level="none")

    @classmethod
    def of_profile(cls, p: Profile, rt: Runtime, level: str, decode_widen: float = 1.0,
                   prefill_widen: float = 1.0) -> "Efficiency":
        """A profile's efficiencies; its bands widened by the factors (low ÷ f, high × f)."""
        return cls(p.decode_bw_fraction, p.layer_overhead_us, p.step_overhead_us, p.prefill_compute_fraction,
                   p.attention_compute_fraction,
                   p.allreduce_latency_us if p.allreduce_latency_us is not None else rt.allreduce_latency_us,
                   math.nan if p.expert_compute_fraction is None else p.expert_compute_fraction,
                   p.seq_overhead_us if p.seq_overhead_us is not None else rt.seq_overhead_us,
                   p.request_overhead_us if p.request_overhead_us is not None else rt.request_overhead_us,
                   math.nan if p.int8_compute_fraction is None else p.int8_compute_fraction,
                   # a runtime whose one kernel takes every expert at once keeps none, whichever
                   # sibling's profile it borrows
                   0.0 if expert_weight(rt) == 0 else p.expert_overhead_us if p.expert_overhead_us is not None
                   else expert_weight(rt) * p.layer_overhead_us,
                   decode_low=p.decode_low / decode_widen, decode_high=p.decode_high * decode_widen,
                   prefill_low=p.prefill_low / prefill_widen, prefill_high=p.prefill_high * prefill_widen,
                   basis=(f"{p.key} (calibrated on your {p.decode_rows + p.prefill_rows} measurements)"
                          if p.key.startswith(PERSONAL_PREFIX) else p.key), level=level)

    def rates(self) -> tuple:
        return tuple(getattr(self, f) for f in RATE_FIELDS)

    def replace(self, **changes: Any) -> "Efficiency":
        return replace(self, **changes)

    @classmethod
    def stack(cls, items: Sequence["Efficiency"]) -> "Efficiency":
        """One `Efficiency` of arrays from many (labels dropped)."""
        return cls(*(np.array([getattr(e, f) for e in items], dtype=float) for f in RATE_FIELDS + BAND_FIELDS),
                   basis="", level="mixed")

    def take(self, index) -> "Efficiency":
        """The elements ``index`` of an `Efficiency` of arrays (numpy fancy indexing)."""
        return replace(self, **{f: np.asarray(getattr(self, f))[index] for f in RATE_FIELDS + BAND_FIELDS})

    def take_flat(self, flat_index) -> "Efficiency":
        """The elements at ``flat_index`` of the raveled arrays (one gather instead of a 2-D one)."""
        return replace(self, **{f: np.ravel(getattr(self, f)).take(flat_index) for f in RATE_FIELDS + BAND_FIELDS})


def linear_fraction(eff: Efficiency, compute_dtype: str) -> float:
    """The fraction of the peak the linear layers reach at ``compute_dtype`` (one configuration)."""
    i8 = float(eff.int8_compute_fraction)
    return i8 if compute_dtype == "int8" and math.isfinite(i8) else float(eff.prefill_compute_fraction)


#: 100 % of both roofs and no fixed costs: the plain roofline most calculators print.
IDEAL = Efficiency(1.0, 0.0, 0.0, 1.0, 1.0, 0.0, 1.0, 0.0, 0.0, 1.0, basis="ideal roofline", level="ideal")


#: A sibling runtime's profile (another backend or build of the same engine) has its band widened
#: by this factor on each side (low ÷ f, high × f), per band kind: measured on the same hardware, but
#: not with this build. `advisor calibrate` measures the factor that holds the band's share (90 %)
#: of the rows predicted by a sibling's profile with their source or era left out, and prints it
#: beside these values: on the 2026-11-26 data (1,237 rows) 1.50 for decode and 1.23 for prefill
#: (on 2026-11-24, 1.45 and 1.40); the values kept are the larger of the fits so far.
SIBLING_BAND_WIDENING = {"decode": 1.50, "prefill": 1.45}
#: A runtime's own profile predicting a hardware generation or format class its rows never saw
#: (evidence "extrapolated") has its band widened by this factor on each side. `advisor calibrate`
#: measures it as the sibling widening is measured, on the rows that were extrapolated when their
#: source was left out, and prints it beside these values: on the 2026-11-26 data ×1.01–1.02 for
#: decode and ×1.08–1.11 for prefill over the refits of that day (the own bands, sized per level on
#: held-out rows, already hold most of it); the larger of each is kept.
EXTRAPOLATION_BAND_WIDENING = {"decode": 1.02, "prefill": 1.11}


#: the key prefix of the profiles `calibrate --mine` fits to a user's own measurements
PERSONAL_PREFIX = "mine+"


def _level(p: Profile, hw: Hardware) -> str | None:
    """How specifically profile ``p`` matches ``hw``; None if it does not apply."""
    if p.hardware:
        return "hardware" if p.hardware in (hw.key, hw.variant_of) else None
    if p.family:
        if p.family != hw.family or (p.tier and p.tier != tier(hw)):
            return None
        return "family"
    if p.vendor:
        return "vendor" if p.vendor == hw.vendor else None
    return "runtime"


def ranked_profiles(profiles: dict[str, Profile] | None, runtime: Runtime, hw: Hardware) -> list[tuple[Profile, str]]:
    """The profiles that apply, most specific first: this runtime's for the hardware's device,
    family or vendor; then a sibling runtime's (same engine, another backend or build), its level
    prefixed "sibling-"; then this runtime's catch-all."""
    own: dict[str, Profile] = {}
    sibling: dict[str, Profile] = {}
    for p in (profiles or {}).values():
        level = _level(p, hw)
        if level is None:
            continue
        if p.runtime == runtime.key:
            # the user's own calibration (`calibrate --mine`) comes before a shipped profile of the level
            if level not in own or (p.key.startswith(PERSONAL_PREFIX) and not own[level].key.startswith(PERSONAL_PREFIX)):
                own[level] = p
        elif p.formats_of and p.formats_of == runtime.format_family and level != "runtime":
            sibling.setdefault(level, p)
    ranked = [(own[lv], lv) for lv in ("hardware", "family", "vendor") if lv in own]
    ranked += [(sibling[lv], f"sibling-{lv}") for lv in ("hardware", "family", "vendor") if lv in sibling]
    if "runtime" in own:
        ranked.append((own["runtime"], "runtime"))
    return ranked


def select_profile(profiles: dict[str, Profile] | None, runtime: Runtime, hw: Hardware) -> tuple[Profile, str] | None:
    """The profile to use (the first of `ranked_profiles`), or None."""
    ranked = ranked_profiles(profiles, runtime, hw)
    return ranked[0] if ranked else None


def _of(p: Profile, runtime: Runtime, level: str) -> Efficiency:
    if level.startswith("sibling"):
        return Efficiency.of_profile(p, runtime, level, SIBLING_BAND_WIDENING["decode"], SIBLING_BAND_WIDENING["prefill"])
    return Efficiency.of_profile(p, runtime, level)


def efficiency_for(profiles: dict[str, Profile] | None, runtime: Runtime, hw: Hardware) -> Efficiency:
    """The efficiencies a prediction for ``runtime`` on ``hw`` uses (see `ranked_profiles`); for a
    runtime asked for at a build date (`name@DATE`), the blend of its eras around that date.

    A profile fitted to decode rows only cannot speak for prefill (its prefill figures are its
    priors): the prefill rates and band then come from the next profile that saw prefill rows,
    and the other way round."""
    if runtime.at_date:
        return _at_date(profiles, runtime, hw)
    ranked = ranked_profiles(profiles, runtime, hw)
    eff = _efficiency_of(ranked, runtime) if ranked else Efficiency.of_runtime(runtime)
    front = _front_end_request_us(profiles, runtime, ranked)
    if front is not None:
        eff = eff.replace(request_overhead_us=front, basis=f"{eff.basis} (request cost of {runtime.formats_of}'s front end)")
    if hw.kind == "cpu" and hw.rates_measured and not eff.basis.startswith(PERSONAL_PREFIX):
        eff = _on_measured_rates(eff, hw)
    return eff


def _front_end_request_us(profiles: dict[str, Profile] | None, runtime: Runtime, ranked: list) -> float | None:
    """The per-request cost of a runtime that serves through another's front end (`formats_of`:
    vLLM's OpenAI server, tokenizer and scheduler run the same on TPU and Neuron as on GPUs) and
    has none fitted of its own: that runtime's, as its catch-all profile fitted it; else None."""
    if not runtime.formats_of or runtime.formats_of == runtime.key or runtime.request_overhead_us:
        return None
    if any(p.request_overhead_us is not None for p, _ in ranked):
        return None
    family = next((p for p in (profiles or {}).values() if p.runtime == runtime.formats_of and not p.hardware
                   and not p.family and not p.vendor and p.request_overhead_us is not None), None)
    return float(family.request_overhead_us) if family is not None else None


def _on_measured_rates(eff: Efficiency, hw: Hardware) -> Efficiency:
    """``eff`` (fitted against datasheet peaks) for a CPU ``hw`` whose figures the probe measured.

    Its roofs are what a streaming read and a float GEMM reached on this machine: llama.cpp's
    decode is such a read (it streams the weights), and its float prompt kernels are such a GEMM,
    so they run at the measured figures themselves (fraction 1). What the profile knows beyond
    the peaks carries over as ratios to its float GEMM fraction: the attention, expert and int8
    kernels' (llama.cpp's quantized kernels unpack blocks on the same vector units: a third of
    their int8 peak on the public CPU data), and every fixed cost and band as fitted. Where the probe
    saw the memory system read faster at best than typically (`Hardware.bandwidth_best_gb_s`: a
    shared or virtual machine), the estimate keeps the typical figure, and the decode band's top and
    the ceiling reach the best one (`bandwidth_spread`): a run in a fast moment is no surprise."""
    c = float(eff.prefill_compute_fraction)
    best, typical = hw.bandwidth_best_gb_s, hw.bandwidth_gb_s
    spread = best / typical if best and best > typical else 1.0

    def rel(v) -> float:
        v = float(v)
        return min(v / c, 1.0) if math.isfinite(v) else math.nan

    return eff.replace(decode_bw_fraction=1.0, prefill_compute_fraction=1.0,
                       attention_compute_fraction=rel(eff.attention_compute_fraction),
                       expert_compute_fraction=rel(eff.expert_compute_fraction),
                       int8_compute_fraction=rel(eff.int8_compute_fraction),
                       decode_high=eff.decode_high * spread, bandwidth_spread=spread,
                       basis=f"{eff.basis}, on this machine's measured read and GEMM rates"
                             + (f" (its best read {spread:.2f}× the typical one)" if spread > 1 else ""))


def _efficiency_of(ranked: list, runtime: Runtime) -> Efficiency:
    """The first ranked profile's efficiencies, a phase it has no rows for lent by the next one that has."""
    p, level = ranked[0]
    eff = _of(p, runtime, level)
    for fields, rows, other_rows, part in ((PREFILL_FIELDS, "prefill_rows", "decode_rows", "prefill"),
                                           (DECODE_FIELDS, "decode_rows", "prefill_rows", "decode")):
        if getattr(p, rows) == 0 and getattr(p, other_rows) > 0:
            donor = next(((q, lv) for q, lv in ranked[1:] if getattr(q, rows) > 0), None)
            if donor is not None:
                lent = _of(donor[0], runtime, donor[1])
                eff = eff.replace(**{f: getattr(lent, f) for f in fields}, **{f"{part}_level": donor[1]},
                                  basis=f"{eff.basis} ({part} from {donor[0].key})")
    return eff


#: Builds this many days from those a profile was measured on count as the same builds (a release a
#: quarter apart rarely changes the kernels a profile prices); past it the band widens.
SAME_BUILDS_DAYS = 92


def days_outside_measured_builds(runtime: Runtime) -> int:
    """How many days the build date a dated runtime asks for lies outside the span of builds its
    family's calibration rows were measured on (`Runtime.era_from` … `Runtime.era` over its eras);
    0 inside it."""
    d = parse_date(runtime.at_date)
    oldest = min(parse_date(r.era_from or r.era) for r in runtime.eras)
    newest = max(parse_date(r.era) for r in runtime.eras)
    return max((oldest - d).days, (d - newest).days, 0)


def _at_date(profiles, runtime: Runtime, hw: Hardware) -> Efficiency:
    """A runtime at a build date (`advisor.data.eras`): the nearest era's prefill efficiency (its
    kernels are the ones run), the decode efficiencies of the eras around the date blended
    linearly in time, the decode band wide enough to hold both."""
    parts = [(efficiency_for(profiles, replace(era, at_date=""), hw), w) for era, w in era_weights(runtime)]
    near = max(parts, key=lambda part: part[1])[0]
    if len(parts) == 1:
        away = days_outside_measured_builds(runtime)
        if away > SAME_BUILDS_DAYS:
            # no row measured builds of that time: the profile of the nearest ones, its band widened
            # as for a borrowed build (the spread measured when one build's profile predicts another's)
            d, f = SIBLING_BAND_WIDENING["decode"], SIBLING_BAND_WIDENING["prefill"]
            return replace(near, decode_low=near.decode_low / d, decode_high=near.decode_high * d,
                           prefill_low=near.prefill_low / f, prefill_high=near.prefill_high * f,
                           basis=f"{near.basis} (the nearest measured builds are {away} days from "
                                 f"{runtime.at_date}: their profile, band widened ×{d:g} decode, ×{f:g} prefill)")
        spans = [r for r in runtime.eras if r.era_from]
        if spans:   # one profile over many releases, and this build among them
            return replace(near, basis=f"{near.basis} (measured on builds of {spans[0].era_from} to "
                                       f"{spans[0].era}; this one of {runtime.at_date})")
        return replace(near, basis=f"{near.basis} (the build era nearest {runtime.at_date})")
    (a, wa), (b, wb) = parts
    decode = {f: wa * getattr(a, f) + wb * getattr(b, f) for f in DECODE_RATE_FIELDS}
    return replace(near, **decode, decode_low=min(a.decode_low, b.decode_low),
                   decode_high=max(a.decode_high, b.decode_high),
                   basis=f"decode {wa:.0%} {a.basis} + {wb:.0%} {b.basis}, prefill {near.basis} "
                         f"(builds of {runtime.at_date})")


# ---- what the measurements behind a prediction cover ------------------------------------------------

#: How much measured data stands behind a (runtime, hardware, weight format) prediction:
#: "measured"      a profile of this runtime was fitted on rows of this hardware family and format class;
#: "extrapolated"  a fitted profile applies, but its rows saw another family or another format class;
#: "uncalibrated"  no profile: the runtime's documented defaults.
EVIDENCE_LEVELS = ("measured", "extrapolated", "uncalibrated")


def format_class(quant) -> str:
    """Formats whose kernels are alike enough that measuring one speaks for the others: every GGUF
    block type and mix (llama.cpp's dequantising kernels), every 16-bit float; else the format itself."""
    if quant.kind == "gguf":
        return "gguf"
    if quant.kind == "float" and quant.bits_per_weight >= 16:
        return "16-bit"
    return quant.key


def evidence(profiles: dict[str, Profile] | None, runtime: Runtime, hw: Hardware, quant, quants=None) -> str:
    """One of `EVIDENCE_LEVELS` for ``runtime`` running ``quant`` weights on ``hw``. ``quants``: the
    catalog's formats by key, to read a profile's measured formats by class (without it, by key)."""
    if runtime.at_date:
        runtime = replace(runtime, at_date="")
    ranked = ranked_profiles(profiles, runtime, hw)
    if not ranked:
        return "uncalibrated"
    want = format_class(quant)
    for p, level in ranked:
        if level.startswith("sibling") or hw.family not in p.measured_families:
            continue
        seen = {format_class(quants[k]) if quants and k in quants else k for k in p.measured_formats}
        if want in seen or quant.key in p.measured_formats:
            return "measured"
    return "extrapolated"


def widened(eff: "Efficiency", backing: str) -> "Efficiency":
    """``eff`` with its band widened where no measurement backs the prediction (``backing`` =
    "extrapolated" from an own profile; sibling and default profiles carry their own wider bands)."""
    if backing != "extrapolated" or eff.level.startswith("sibling") or eff.level == "none":
        return eff
    fd, fp = EXTRAPOLATION_BAND_WIDENING["decode"], EXTRAPOLATION_BAND_WIDENING["prefill"]
    if fd == 1.0 and fp == 1.0:
        return eff
    return eff.replace(decode_low=eff.decode_low / fd, decode_high=eff.decode_high * fd,
                       prefill_low=eff.prefill_low / fp, prefill_high=eff.prefill_high * fp)
