"""The one object that holds the app's inputs and latest results; views subscribe and only render.

Every input change goes through `Session.set_inputs`: the new `api.Config` is checked and predicted
at once (one `predict` + one `roofline`, each well under a millisecond), the previous inputs go on the
undo stack, and `sig_results_changed` tells the views. An impossible change (a runtime that cannot run
the weight format, a prompt longer than the model's context) is refused with `sig_error`, and
`sig_inputs_changed` tells the input widgets to show the inputs that are still in force.

What changes with an input change (the runtime, format or KV dtype that no longer run, the context
limit, a GPU count reset) is the core's policy, `api.reconfigure`; the session applies it. The tabs
that keep state of their own hold it in small objects with their own signals: `compare` and `whatif`
(ui/tab_state.py) and `imports` (ui/imports.py).
"""

from __future__ import annotations

import logging
import math
import time
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np
from PySide6.QtCore import QObject, Signal

from advisor import api
from ui.imports import ImportedModels
from ui.tab_state import CompareList, WhatIf

log = logging.getLogger(__name__)

DEFAULT_HARDWARE = "rtx 4090"
DEFAULT_MODEL = "llama 3.1 8b"
#: input changes of the same kind closer together than this are one undo step (a slider drag)
UNDO_MERGE_S = 0.8
#: how the app asks for another memory size (the core's note otherwise names the CLI's --memory-gb)
MEMORY_SIZE_HINT = "choose the memory size next to the hardware"


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


class Session(QObject):
    """Inputs (`cfg`, `targets`), the latest `prediction` and `roofline`, undo/redo, compare list."""

    sig_inputs_changed = Signal()
    """The inputs in force changed (or a refused change must be undone in the widgets)."""
    sig_results_changed = Signal()
    """`prediction` and `roofline` are new."""
    sig_catalog_changed = Signal()
    """The catalog was reloaded (a probed "this machine" was added)."""
    sig_error = Signal(str)
    """A one-line message: a refused input, a bad file, a failed job."""
    sig_message = Signal(str)
    """A one-line notice for the status bar."""
    sig_undo_changed = Signal()

    def __init__(self, cat: "api.Catalog | None" = None, parent: QObject | None = None):
        super().__init__(parent)
        self.cat = cat if cat is not None else api.load_catalog()
        self.state = State(self._default_config())
        self.prediction: api.Prediction | None = None
        #: the users on screen as clients of a server (closed loop); None for one user or when it cannot serve
        self.serving: api.ServeReport | None = None
        self.roofline: api.Roofline | None = None
        self.generation = 0
        self._explanations: dict[str, Any] | None = None
        self._undo: list[State] = []
        self._redo: list[State] = []
        self._last_merge: tuple[str, float] = ("", 0.0)
        #: the configurations pinned to Compare, and the What-ifs tab's what-if (ui/tab_state.py)
        self.compare = CompareList(self)
        self.whatif = WhatIf(self)
        self.last_error = ""
        #: the models imported in this session, kept across reloads (ui/imports.py)
        self.imports = ImportedModels(self)
        self._compute()

    # ------------------------------------------------------------------ inputs
    @property
    def cfg(self) -> "api.Config":
        return self.state.cfg

    @property
    def targets(self) -> Targets:
        return self.state.targets

    def _default_config(self) -> "api.Config":
        cfg = api.configure(self.cat, hardware=self._first_hardware(), model=self._first_model())
        return cfg.replace(hardware=self.hardware(cfg.hardware.key))

    def _first_hardware(self) -> str:
        return DEFAULT_HARDWARE if _resolves(self.cat.hardware_named, DEFAULT_HARDWARE) else next(iter(self.cat.hardware))

    def _first_model(self) -> str:
        return DEFAULT_MODEL if _resolves(self.cat.model_named, DEFAULT_MODEL) else next(iter(self.cat.models))

    def hardware(self, value: Any, memory_gb: float | None = None) -> Any:
        """A hardware spec from a spec, a key or a typed name, sized as `api.sized_hardware` does."""
        return api.sized_hardware(self.cat, value, memory_gb, MEMORY_SIZE_HINT)

    def memory_options(self) -> tuple[float, ...]:
        """The memory sizes (GB) the hardware in use ships in (one: nothing to choose)."""
        entry = self.cat.hardware.get(self.cfg.hardware.key, self.cfg.hardware)
        return api.memory_options(entry)

    def build(self, base: "api.Config", changes: dict[str, Any]) -> "api.Config":
        """``base`` with ``changes`` applied by `api.reconfigure` (what else changes with them is said in
        the status bar). Raises `api.AdvisorError`."""
        r = api.reconfigure(self.cat, base, size_hint=MEMORY_SIZE_HINT, **changes)
        for notice in r.notices:
            self.sig_message.emit(notice)
        return r.config

    def set_inputs(self, merge: str = "", **changes: Any) -> bool:
        """Apply input changes (hardware/model/quant/kv_dtype/runtime as spec, key or name; memory_gb; gpus,
        parallelism, batch, prompt, output, depth; prompt_spread; ttft_target_ms, tok_s_target). Returns False and
        emits `sig_error` when the change is impossible. ``merge`` names a kind of change that, repeated
        quickly (a slider drag), makes one undo step."""
        targets = self.targets
        if "ttft_target_ms" in changes:
            targets = replace(targets, ttft_ms=max(0.0, float(changes.pop("ttft_target_ms") or 0)))
        if "tok_s_target" in changes:
            targets = replace(targets, tok_s=max(0.0, float(changes.pop("tok_s_target") or 0)))
        spread = self.state.prompt_spread
        try:
            if "prompt_spread" in changes:
                spread = _spread(changes.pop("prompt_spread"))
            cfg = self.build(self.cfg, changes) if changes else self.cfg
        except api.AdvisorError as exc:
            return self.refuse(str(exc))
        return self._apply(State(cfg, targets, spread), merge)

    def load_keys(self, keys: dict[str, Any], targets: dict[str, Any] | None = None) -> bool:
        """Inputs from a saved sizing (catalog keys or names, and numbers); False + `sig_error` if bad."""
        if not isinstance(keys, dict):
            return self.refuse(f"the inputs must be a mapping of names to values, got {type(keys).__name__}")
        if targets is not None and not isinstance(targets, dict):
            return self.refuse(f"the targets must be a mapping (ttft_ms, tok_s), got {type(targets).__name__}")
        try:
            cfg = self.configure_keys(keys)
            spread = _spread(keys.get("prompt_spread") or 0.0)
            t = Targets(float((targets or {}).get("ttft_ms") or 0), float((targets or {}).get("tok_s") or 0))
        except api.AdvisorError as exc:
            return self.refuse(str(exc))
        except (TypeError, ValueError) as exc:
            return self.refuse(f"bad target value: {exc}")
        return self._apply(State(cfg, t, spread), "")

    def configure_keys(self, keys: dict[str, Any]) -> "api.Config":
        names = {k: keys.get(k) for k in ("hardware", "model", "quant", "kv_dtype", "runtime", "gpus", "batch",
                                          "prompt", "output", "depth", "parallelism")}
        threads = keys.get("threads") or None
        if not names["hardware"] or not names["model"]:
            raise api.AdvisorError("a sizing needs at least a hardware and a model")
        memory = keys.get("memory_gb")
        if memory is not None and (isinstance(memory, bool) or not isinstance(memory, (int, float))):
            raise api.AdvisorError(f"memory_gb must be a size in GB such as 64, got {memory!r}")
        cfg = api.configure(self.cat, memory_gb=memory,
                            **{k: (str(v) if isinstance(v, str) else v) for k, v in names.items()})
        # the size saved, else the size the name states, else the default with the app's note
        stated = cfg.hardware.memory_gib if cfg.hardware.memory_gib != self.cat.hardware[cfg.hardware.key].memory_gib \
            else None
        hw = self.hardware(cfg.hardware.key, memory if memory is not None else stated)
        if threads is not None:
            if isinstance(threads, bool) or not isinstance(threads, int):
                raise api.AdvisorError(f"threads must be a whole number, got {threads!r}")
            hw = api.with_threads(hw, threads)
        cfg = cfg.replace(hardware=hw)
        cfg.check()
        return cfg

    def input_keys(self) -> dict[str, Any]:
        """`Config.keys` plus the memory size (``memory_gb``) of a hardware that ships in several and
        the prompt spread when there is one: what a sizing file and the settings hold."""
        out = self.cfg.keys()
        if len(self.memory_options()) > 1:
            out["memory_gb"] = self.cfg.hardware.memory_gib
        if self.cfg.hardware.threads:
            out["threads"] = self.cfg.hardware.threads
        if self.state.prompt_spread:
            out["prompt_spread"] = self.state.prompt_spread
        return out

    def load_candidate(self, c: "api.Candidate") -> bool:
        """Make a recommendation row the current inputs."""
        # a layout past one tensor-parallel group (pipeline stages, attention DP, EP) comes along
        plain = c.layout.gpus != c.gpus or (c.layout.pp == 1 and c.layout.dp_attention == 1 and c.layout.ep == 1)
        return self.set_inputs(hardware=c.hardware, runtime=c.runtime, quant=c.quant, kv_dtype=c.kv_dtype,
                               gpus=int(c.gpus), batch=max(1, int(c.users or self.cfg.workload.batch)),
                               layout=None if plain else c.layout)

    def switch_to(self, cfg: "api.Config") -> bool:
        """Make ``cfg`` the inputs (undoable), the targets and prompt spread kept; False if it cannot run."""
        return self._apply(State(cfg, self.targets, self.state.prompt_spread), "")

    def new(self) -> None:
        """File → New: the default sizing (undoable)."""
        self._apply(State(self._default_config(), Targets()), "")

    def refuse(self, message: str) -> bool:
        """Say why a change was refused (`sig_error`) and put the widgets back to the inputs in force."""
        self.last_error = message
        self.sig_error.emit(message)
        self.sig_inputs_changed.emit()
        return False

    def _apply(self, state: State, merge: str) -> bool:
        if state == self.state:
            return True
        now = time.monotonic()
        last_kind, last_t = self._last_merge
        if not (merge and merge == last_kind and now - last_t < UNDO_MERGE_S and self._undo):
            self._undo.append(self.state)
            del self._undo[:-200]
        self._last_merge = (merge, now)
        self._redo.clear()
        old = self.state
        self.state = state
        if not self._compute():
            self.state = old
            self._undo.pop()
            self._compute()
            self.sig_inputs_changed.emit()
            return False
        self.last_error = ""
        self.sig_inputs_changed.emit()
        self.sig_undo_changed.emit()
        self.sig_results_changed.emit()
        return True

    # ------------------------------------------------------------------ undo
    def can_undo(self) -> bool:
        return bool(self._undo)

    def can_redo(self) -> bool:
        return bool(self._redo)

    def undo(self) -> None:
        if self._undo:
            self._redo.append(self.state)
            self._swap(self._undo.pop())

    def redo(self) -> None:
        if self._redo:
            self._undo.append(self.state)
            self._swap(self._redo.pop())

    def clear_history(self) -> None:
        """Forget undo/redo (after restoring the last session or opening a file into a fresh window)."""
        self._undo.clear()
        self._redo.clear()
        self.sig_undo_changed.emit()

    def _swap(self, state: State) -> None:
        self.state = state
        self._last_merge = ("", 0.0)
        self._compute()
        self.sig_inputs_changed.emit()
        self.sig_undo_changed.emit()
        self.sig_results_changed.emit()

    # ------------------------------------------------------------------ results
    def _compute(self) -> bool:
        try:
            pred = api.predict(self.cat, self.cfg)
            roof = api.roofline(self.cat, self.cfg)
        except api.AdvisorError as exc:
            self.last_error = str(exc)
            self.sig_error.emit(str(exc))
            return False
        self.prediction, self.roofline = pred, roof
        self.serving = self._serve()
        self._explanations = None
        self.whatif.recompute()
        self.generation += 1
        return True

    def explanations(self) -> dict[str, Any]:
        """api.explain for the current prediction (computed on first use)."""
        if self._explanations is None:
            try:
                self._explanations = api.explain(self.cat, self.cfg, self.prediction)
            except Exception as exc:  # noqa: BLE001 - a missing explanation must not break the app
                log.warning("explain failed: %s", exc)
                self._explanations = {}
        return self._explanations

    def curve(self, vary: str, values: np.ndarray, cfg: "api.Config | None" = None) -> "api.Curve | None":
        """api.curve for the current (or given) configuration; None when the core refuses."""
        try:
            return api.curve(self.cat, cfg or self.cfg, vary, np.asarray(values, dtype=np.int64))
        except api.AdvisorError as exc:
            log.info("curve %s refused: %s", vary, exc)
            return None

    def load(self, kind: str = "closed", **fields: Any) -> "api.Load":
        """The workload on screen as a load on a server: its prompt (spread as set) and output lengths."""
        w = self.cfg.workload
        return api.Load(kind=kind, output_tokens=max(w.output_tokens, 2),
                        **api.prompt_mix(max(w.prompt_tokens, 1), self.state.prompt_spread), **fields)

    def _serve(self) -> "api.ServeReport | None":
        """Several users are clients of a server (continuous batching, a queue when it is full), not
        prompts arriving at the same instant: their TTFT and speed come from the serving model."""
        w = self.cfg.workload
        if w.batch <= 1 or w.prompt_tokens < 1 or w.output_tokens < 2:
            return None
        try:
            rep = api.serve(self.cat, self.cfg, self.load(concurrency=float(w.batch)))
        except api.AdvisorError as exc:
            log.info("serving refused: %s", exc)
            return None
        return rep if rep.fits else None

    def user_view(self) -> dict[str, float]:
        """TTFT (ms) and per-user and total tok/s as the users see them: under load for several users
        (TTFT at its 90th percentile), the static prediction for one; with the prediction's bands."""
        p, s = self.prediction, self.serving
        if s is None:
            return {"ttft_ms": p.ttft_ms, "ttft_low_ms": p.ttft_low_ms, "ttft_high_ms": p.ttft_high_ms,
                    "tok_s": p.decode_tok_s, "tok_s_low": p.decode_low_tok_s, "tok_s_high": p.decode_high_tok_s,
                    "total_tok_s": p.throughput_tok_s, "under_load": False}
        f_lo = p.ttft_low_ms / p.ttft_ms if p.ttft_ms else 1.0
        f_hi = p.ttft_high_ms / p.ttft_ms if p.ttft_ms else 1.0
        d_lo = p.decode_low_tok_s / p.decode_tok_s if p.decode_tok_s else 1.0
        d_hi = p.decode_high_tok_s / p.decode_tok_s if p.decode_tok_s else 1.0
        return {"ttft_ms": s.ttft_p90_ms, "ttft_low_ms": s.ttft_p90_ms * f_lo, "ttft_high_ms": s.ttft_p90_ms * f_hi,
                "tok_s": s.tok_s_per_user, "tok_s_low": s.tok_s_per_user * d_lo, "tok_s_high": s.tok_s_per_user * d_hi,
                "total_tok_s": s.throughput_tok_s, "under_load": True}

    def meets_targets(self) -> dict[str, bool | None]:
        t = self.targets
        out: dict[str, bool | None] = {"ttft": None, "tok_s": None}
        if self.prediction is None:
            return out
        u = self.user_view()
        if t.ttft_ms > 0 and math.isfinite(u["ttft_ms"]):
            out["ttft"] = u["ttft_ms"] <= t.ttft_ms
        if t.tok_s > 0 and math.isfinite(u["tok_s"]):
            out["tok_s"] = u["tok_s"] >= t.tok_s
        return out

    # ------------------------------------------------------------------ catalog
    def reload_catalog(self) -> None:
        """Re-read the catalog (after "this machine" was saved) and keep the inputs where possible."""
        keys, targets, spread = self.input_keys(), self.targets, self.state.prompt_spread
        self.cat = self.imports.readd(api.load_catalog())   # this session's imports stay usable
        try:
            cfg = self.configure_keys(keys)
        except api.AdvisorError:
            cfg = self._default_config()
        self.compare.clear()
        self.state = State(cfg, targets, spread)
        self._undo.clear()
        self._redo.clear()
        self._compute()
        self.sig_catalog_changed.emit()
        self.sig_inputs_changed.emit()
        self.sig_undo_changed.emit()
        self.sig_results_changed.emit()

    # ------------------------------------------------------------------ files
    def to_file_dict(self) -> dict[str, Any]:
        """The sizing as saved; an imported model's source goes with it, so the file opens elsewhere."""
        out = {"advisor_sizing": 1, "inputs": self.input_keys(), "targets": self.targets.to_dict()}
        source = self.imports.sources.get(self.cfg.model.key)
        if source:
            out["model_source"] = source
            name = self.imports.names.get(self.cfg.model.key)
            if name:
                out["model_name"] = name   # renamed on import: read again under this name
        technique = self.whatif.keys()
        if technique:
            out["technique"] = technique
        return out


def _spread(value: Any) -> float:
    """A prompt spread (coefficient of variation) from a widget or a file, or an `api.AdvisorError`."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= float(value) <= 10:
        raise api.AdvisorError(f"the prompt spread must be a number from 0 to 10, got {value!r}")
    return float(value)


def _resolves(fn, name: str) -> bool:
    try:
        fn(name)
        return True
    except Exception:  # noqa: BLE001
        return False


def describe(cfg: "api.Config") -> str:
    """A short label for a configuration: model on N× hardware, format, runtime."""
    n = f"{cfg.gpus}× " if cfg.gpus > 1 else ""
    return f"{cfg.model.name} · {n}{cfg.hardware.name} · {cfg.quant.name} · {cfg.runtime.name}"
