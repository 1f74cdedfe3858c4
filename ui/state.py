"""The values the session holds: the inputs in force with the targets and the prompt spread (`State`,
one undo step), and a configuration's short label."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from advisor import api

DEFAULT_HARDWARE = "rtx 4090"
DEFAULT_MODEL = "llama 3.1 8b"


@dataclass(frozen=True)
class Targets:
    """What the user wants; 0 = no target."""

    ttft_ms: float = 0.0
    tok_s: float = 0.0

    def to_dict(self) -> dict[str, float]:
        return {"ttft_ms": self.ttft_ms, "tok_s": self.tok_s}


@dataclass(frozen=True)
class State:
    cfg: "api.Config"
    targets: Targets = field(default_factory=Targets)
    #: how much prompt lengths vary around the prompt input under load (coefficient of variation of a
    #: log-normal; 0 = all the same): the Serving tab's and the cards' queue see it
    prompt_spread: float = 0.0
    #: the server keeps its host-memory prompt cache (llama-server's default, `--cache-ram`), which
    #: saves each finished request before the next prompt (`api.Load.prompt_cache`)
    prompt_cache: bool = True


def _spread(value: Any) -> float:
    """A prompt spread (coefficient of variation) from a widget or a file, or an `api.AdvisorError`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= float(value) <= 10:
        raise api.AdvisorError(f"the prompt spread must be a number from 0 to 10, got {value!r}")
    return float(value)


def _switch(name: str, value: Any) -> bool:
    """A yes/no input from a widget or a file, or an `api.AdvisorError`."""
    if not isinstance(value, bool):
        raise api.AdvisorError(f"{name} must be true or false, got {value!r}")
    return value


def describe(cfg: "api.Config") -> str:
    """A short label for a configuration: model on N× hardware, format, runtime."""
    n = f"{cfg.gpus}× " if cfg.gpus > 1 else ""
    return f"{cfg.model.name} · {n}{cfg.hardware.name} · {cfg.quant.name} · {cfg.runtime.name}"


def default_config(cat: "api.Catalog", sized) -> "api.Config":
    """The sizing a new window starts with: the default hardware and model where the catalog has
    them, else its first entries; ``sized(key)`` gives the hardware as the app sizes it."""
    hw = DEFAULT_HARDWARE if _resolves(cat.hardware_named, DEFAULT_HARDWARE) else next(iter(cat.hardware))
    model = DEFAULT_MODEL if _resolves(cat.model_named, DEFAULT_MODEL) else next(iter(cat.models))
    cfg = api.configure(cat, hardware=hw, model=model)
    return cfg.replace(hardware=sized(cfg.hardware.key))


def _resolves(fn, name: str) -> bool:
    try:
        fn(name)
        return True
    except Exception:  # noqa: BLE001
        return False
