"""Throughput ceilings from what vendors publish (`advisor.data.vendor_max`).

A vendor's published maximum for a model on its hardware bounds every prediction of that model on
that hardware: the same format, or a wider one (FP8 weights never outrun the vendor's FP4 figure),
at lengths near the vendor's, by any runtime (the vendor's own stack is the one tuned for that
figure), per GPU of an instance of at most as many GPUs as the vendor's system (a wider
instance — expert parallel over dozens of GPUs — reads fewer expert weights per token and is not
bounded by a node's figure). It bounds the other members of the hardware's family too, scaled
by the lesser of their memory-bandwidth and compute ratios to the vendor's part (at the format's
compute dtype): at the maximum throughput a step is held by one of those roofs, so a sibling faster
in both is bounded by the smaller gain, and one slower in either by its loss. "Near": the mean context while decoding (prompt + output / 2)
within a factor `LENGTH_FACTOR` of the vendor's; further away the ceiling says nothing and is not
applied. The kernel takes it as `Inputs.throughput_cap_tok_s`: a decode step of B sequences takes
at least B / ceiling. The serving model holds the whole served step to it instead, the prompt work
the step carries included (`StepCosts.ceiling_tok_s`): the vendor measured its prompts inside its
figure.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Mapping

from advisor.data.specs import Hardware, Model, Quant
from advisor.data.catalog import shipped_hardware
from advisor.data.vendor_max import VendorMax, shipped_vendor_max
from advisor.model.devices import peak_for

#: How far (either way) the mean decode context may be from the vendor's for its figure to bound ours.
LENGTH_FACTOR = 2.0


#: The bit class of the formats vendors publish their maxima in (our catalog keys).
VENDOR_FORMAT_BITS = {"nvfp4": 4, "mxfp4": 4, "fp8": 8, "int8": 8, "bf16": 16, "f16": 16}


def _bits(q: Quant) -> float:
    return float(q.bits_class or q.bits_per_weight)


#: The compute dtype of a vendor's format, for scaling its figure to a sibling part.
BITS_DTYPE = {4: "fp4", 8: "fp8", 16: "bf16"}


def sibling_scale(hw: Hardware, ref: Hardware, bits: int) -> float:
    """The lesser of ``hw``'s memory-bandwidth and compute ratios to ``ref`` (1 for the part itself)."""
    if hw.key == ref.key or hw.variant_of == ref.key:
        return 1.0
    ratios = [hw.bandwidth_gb_s / ref.bandwidth_gb_s]
    a, b = peak_for(hw, BITS_DTYPE.get(bits, "bf16"))[0], peak_for(ref, BITS_DTYPE.get(bits, "bf16"))[0]
    if math.isfinite(a) and math.isfinite(b) and b > 0:
        ratios.append(a / b)
    return min(ratios)


@dataclass(frozen=True)
class Ceiling:
    """A published maximum as it bounds one part: the row, the part it was published for, the scale."""

    row: VendorMax
    reference: Hardware
    scale: float

    @property
    def per_gpu_tok_s(self) -> float:
        return self.row.per_gpu_tok_s * self.scale


def ceiling_row(hw: Hardware, model: Model, quant: Quant, prompt: int, output: int,
                rows: Iterable[VendorMax] | None = None, hardware: Mapping[str, Hardware] | None = None
                ) -> Ceiling | None:
    """The published maximum that bounds ``model`` on ``hw`` in ``quant`` at these lengths (the highest
    per GPU if several do: the vendor's best is what no prediction may pass), or None. ``hardware``: the catalog's entries, to bound ``hw``'s family
    siblings (without it only the part the figure was published for)."""
    mid = prompt + output / 2.0
    best = None
    for r in shipped_vendor_max() if rows is None else rows:
        if r.model != model.key:
            continue
        if r.hardware in (hw.key, hw.variant_of):
            ref = hw
        else:
            ref = (hardware or {}).get(r.hardware)
            if ref is None or ref.family != hw.family or ref.vendor != hw.vendor:
                continue
        vbits = VENDOR_FORMAT_BITS.get(r.quant)
        if quant.key != r.quant and (vbits is None or _bits(quant) < vbits):
            continue   # a narrower format than the vendor's is not bounded by its figure
        vmid = r.prompt_tokens + r.output_tokens / 2.0
        if not (vmid / LENGTH_FACTOR <= mid <= vmid * LENGTH_FACTOR):
            continue
        c = Ceiling(r, ref, sibling_scale(hw, ref, vbits or int(_bits(quant))))
        if best is None or c.per_gpu_tok_s > best.per_gpu_tok_s:
            best = c
    return best


def config_ceiling(cfg, hardware: Mapping[str, Hardware] | None = None) -> Ceiling | None:
    """`ceiling_row` for a `Config` at its workload's lengths (siblings bounded through the shipped
    entries the figures name, unless ``hardware`` is given)."""
    w = cfg.workload
    if not any(r.model == cfg.model.key for r in shipped_vendor_max()):
        return None
    return ceiling_row(cfg.hardware, cfg.model, cfg.quant, w.prompt_tokens, w.output_tokens,
                       hardware=shipped_hardware() if hardware is None else hardware)


def ceiling_tok_s(c: Ceiling | None, gpus: int) -> float:
    """The ceiling of an instance of ``gpus`` GPUs, output tokens per second (inf: none, or an
    instance wider than the vendor's system)."""
    return math.inf if c is None or gpus > c.row.gpus else c.per_gpu_tok_s * gpus


def ceiling_note(c: Ceiling, hw: Hardware) -> str:
    r = c.row
    parts = r.source.split("/")
    site = parts[2] if "//" in r.source else "the vendor"
    if site == "github.com" and len(parts) > 4:
        site = f"{parts[3]}/{parts[4]} on GitHub"   # the repository that publishes it, not the host
    scaled = "" if c.reference.key in (hw.key, hw.variant_of) else \
        f", × {c.scale:.2f} for {hw.name} against the {c.reference.name} (the lesser of bandwidth and compute)"
    return (f"throughput held at or below the maximum {site} publishes: {r.max_output_tok_s:,.0f} output tok/s "
            f"on {r.gpus} × {c.reference.name} at {r.prompt_tokens:,}/{r.output_tokens:,} tokens"
            f"{f' ({r.date})' if r.date else ''}{scaled}")
