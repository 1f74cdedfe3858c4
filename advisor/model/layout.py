"""How one instance's GPUs split a model: tensor parallel, pipeline stages, data-parallel attention
and expert parallel (`Layout`), read from the text people write ("TP8+PP2", "DP16+EP16").

The kernel takes a layout as `Inputs.stages`, `attention_dp` and `expert_parallel`
(`Layout.kernel_inputs`); the sweep tries several (`advisor.model.sweep.Layouts`); a deployment plan
carries one per pool (`advisor.plan.deployment`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from advisor.data.errors import AdvisorError


@dataclass(frozen=True)
class Layout:
    """How one instance's GPUs split the model. ``gpus`` = tp × pp × dp_attention; expert
    parallel (``ep`` > 1) spreads whole experts over the tp × dp_attention GPUs of a stage."""

    tp: int = 1
    pp: int = 1
    ep: int = 1
    dp_attention: int = 1

    @property
    def gpus(self) -> int:
        return self.tp * self.pp * self.dp_attention

    @property
    def plain(self) -> bool:
        """No stages, attention DP or EP: the runtime's own split of its GPUs."""
        return self.pp == 1 and self.dp_attention == 1 and self.ep == 1

    def check(self, experts: int = 0) -> None:
        for name in ("tp", "pp", "ep", "dp_attention"):
            v = getattr(self, name)
            if not isinstance(v, int) or v < 1:
                raise AdvisorError(f"{name} must be a whole number of GPUs ≥ 1, got {v!r}")
        if self.ep > 1:
            if not experts:
                raise AdvisorError("expert parallel (EP) needs a mixture-of-experts model; this one is dense")
            if self.ep > experts:
                raise AdvisorError(f"EP {self.ep} is larger than the model's {experts} experts")
            if self.ep != self.tp * self.dp_attention:
                raise AdvisorError(f"EP {self.ep} must span a stage's GPUs (TP {self.tp} × attention DP "
                                   f"{self.dp_attention} = {self.tp * self.dp_attention})")

    def text(self) -> str:
        parts = [f"TP {self.tp}"] if self.tp > 1 or self.gpus == 1 else []
        if self.dp_attention > 1:
            parts.append(f"attention DP {self.dp_attention}")
        if self.ep > 1:
            parts.append(f"EP {self.ep}")
        if self.pp > 1:
            parts.append(f"PP {self.pp}")
        return " + ".join(parts)

    def key(self) -> str:
        """The layout as `parse_layout` reads it back ("tp8+pp2", "dp16+ep16")."""
        parts = [f"tp{self.tp}"] if self.tp > 1 or self.gpus == 1 else []
        parts += [f"dp{self.dp_attention}"] if self.dp_attention > 1 else []
        parts += [f"ep{self.ep}"] if self.ep > 1 else []
        parts += [f"pp{self.pp}"] if self.pp > 1 else []
        return "+".join(parts)

    def kernel_inputs(self) -> dict:
        """The kernel's `Inputs` fields for this layout."""
        return {"stages": float(self.pp), "attention_dp": float(self.dp_attention), "expert_parallel": self.ep > 1}


def parse_layout(text: str, gpus: int | None = None, experts: int = 0) -> Layout:
    """A layout from text: parts joined by '+', each TP, PP, DP (data-parallel attention) or EP with
    its degree ("tp8+pp2", "dp16+ep16", "ep16" alone means attention DP 16 with EP 16), checked
    against the instance's ``gpus`` and the model's ``experts``."""
    parts = [x for x in re.split(r"[+,\s]+", str(text or "").strip().lower()) if x]
    if not parts:
        raise AdvisorError("--layout is empty: give parts like tp8, tp8+pp2 or dp16+ep16")
    degrees: dict[str, int] = {}
    for part in parts:
        m = re.fullmatch(r"(tp|pp|dp|ep)(\d+)", part)
        if not m or int(m.group(2)) < 1:
            raise AdvisorError(f"--layout: {part!r} is not a part like tp8, pp2, dp16 or ep16")
        if m.group(1) in degrees:
            raise AdvisorError(f"--layout: {m.group(1)} is given twice")
        degrees[m.group(1)] = int(m.group(2))
    ep = degrees.get("ep", 1)
    dp = degrees.get("dp", ep if ep > 1 and "tp" not in degrees else 1)
    tp = degrees.get("tp", max(ep // dp, 1) if ep > 1 else 1)
    layout = Layout(tp=tp, pp=degrees.get("pp", 1), ep=ep, dp_attention=dp)
    layout.check(experts)
    if gpus is not None and layout.gpus != gpus:
        raise AdvisorError(f"--layout {text} uses {layout.gpus} GPUs (TP × PP × DP), not the {gpus} of --gpus")
    return layout
