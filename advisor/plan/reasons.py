"""Why a configuration does not meet a requirement, as data: which constraint, what was
required, what was achieved, and the physics behind it. `advisor.text.verdicts` turns these
into English for the CLI, the app and the report."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

#: The constraints a candidate is judged against, in the order their reasons are listed.
CONSTRAINTS = ("quality", "memory", "load", "ttft", "tok_s", "prediction", "budget_usd", "budget_usd_hour")


@dataclass(frozen=True)
class Reason:
    """One unmet requirement. ``required`` and ``achieved`` are in ``unit``; ``detail`` holds what
    explains the miss (bound, fraction of the roof reached, prices, the quantization's figures)."""

    constraint: str        # one of CONSTRAINTS
    required: float | None
    achieved: float | None
    unit: str              # "GB per GPU", "requests/s", "ms", "tok/s per user", "USD", "USD/h", "quality rank", "+ppl"
    detail: dict[str, Any] = field(default_factory=dict)
