"""The one object that holds the app's inputs and latest results; views subscribe and only render.

Every input change goes through `Session.set_inputs`: the new `api.Config` is checked and predicted
at once (one `predict` + one `roofline`, each well under a millisecond), the previous inputs go on the
undo stack, and `sig_results_changed` tells the views. An impossible change (a runtime that cannot run
the weight format, a prompt longer than the model's context) is refused with `sig_error`, and
`sig_inputs_changed` tells the input widgets to show the inputs that are still in force.

What changes with an input change (the runtime, format or KV dtype that no longer run, the context
limit, a GPU count reset) is the core's policy, `api.reconfigure`; the session applies it. The tabs
that keep state of their own hold it in small objects with their own signals: `compare` and `whatif`
(ui/tab_state.py) and `imports` (ui/imports.py). Undo is `ui/history.py`, the values held
`ui/state.py`, what the users see under load `ui/user_view.py`, a sizing's keys `ui/sizing_file.py`.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

import numpy as np
from PySide6.QtCore import QObject, Signal

from advisor import api
from ui import sizing_file
from ui.history import History
from ui.state import State, Targets, _spread, _switch, default_config
from ui.imports import ImportedModels
from ui.tab_state import CompareList, WhatIf
from ui.user_view import load_of, meets_targets, serve_users, user_view

log = logging.getLogger(__name__)

#: how the app asks for another memory size (the core's note otherwise names the CLI's --memory-gb)
MEMORY_SIZE_HINT = "choose the memory size next to the hardware"


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
        self.history: History[State] = History()
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
        return default_config(self.cat, self.hardware)

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
        parallelism, batch, prompt, output, depth; prompt_spread, prompt_cache; ttft_target_ms, tok_s_target). Returns False and
        emits `sig_error` when the change is impossible. ``merge`` names a kind of change that, repeated
        quickly (a slider drag), makes one undo step."""
        targets = self.targets
        if "ttft_target_ms" in changes:
            targets = replace(targets, ttft_ms=max(0.0, float(changes.pop("ttft_target_ms") or 0)))
        if "tok_s_target" in changes:
            targets = replace(targets, tok_s=max(0.0, float(changes.pop("tok_s_target") or 0)))
        spread, cache = self.state.prompt_spread, self.state.prompt_cache
        try:
            if "prompt_spread" in changes:
                spread = _spread(changes.pop("prompt_spread"))
            if "prompt_cache" in changes:
                cache = _switch("the prompt cache", changes.pop("prompt_cache"))
            cfg = self.build(self.cfg, changes) if changes else self.cfg
        except api.AdvisorError as exc:
            return self.refuse(str(exc))
        return self._apply(State(cfg, targets, spread, cache), merge)

    def load_keys(self, keys: dict[str, Any], targets: dict[str, Any] | None = None) -> bool:
        """Inputs from a saved sizing (catalog keys or names, and numbers); False + `sig_error` if bad."""
        if not isinstance(keys, dict):
            return self.refuse(f"the inputs must be a mapping of names to values, got {type(keys).__name__}")
        if targets is not None and not isinstance(targets, dict):
            return self.refuse(f"the targets must be a mapping (ttft_ms, tok_s), got {type(targets).__name__}")
        try:
            cfg = self.configure_keys(keys)
            spread = _spread(keys.get("prompt_spread") or 0.0)
            cache = _switch("inputs.prompt_cache", keys.get("prompt_cache", True))
            t = Targets(float((targets or {}).get("ttft_ms") or 0), float((targets or {}).get("tok_s") or 0))
        except api.AdvisorError as exc:
            return self.refuse(str(exc))
        except (TypeError, ValueError) as exc:
            return self.refuse(f"bad target value: {exc}")
        return self._apply(State(cfg, t, spread, cache), "")

    def configure_keys(self, keys: dict[str, Any]) -> "api.Config":
        """A configuration from a sizing's keys (ui/sizing_file.py), its hardware sized as the app sizes it."""
        return sizing_file.config_from_keys(self.cat, keys, self.hardware)

    def input_keys(self) -> dict[str, Any]:
        """What a sizing file and the settings hold of the inputs (ui/sizing_file.py)."""
        return sizing_file.input_keys(self.cfg, self.memory_options(), self.state.prompt_spread,
                                      self.state.prompt_cache)

    def load_candidate(self, c: "api.Candidate") -> bool:
        """Make a recommendation row the current inputs, its server as its launch line starts it (a
        llama-server line without its prompt cache where the load shares no prefixes)."""
        # a layout past one tensor-parallel group (pipeline stages, attention DP, EP) comes along
        off = c.runtime.server_prompt_cache_off_flag
        return self.set_inputs(hardware=c.hardware, runtime=c.runtime, quant=c.quant, kv_dtype=c.kv_dtype,
                               gpus=int(c.gpus), batch=max(1, int(c.users or self.cfg.workload.batch)),
                               layout=c.config_layout, prompt_cache=not (off and off in (c.launch or "")))

    def switch_to(self, cfg: "api.Config") -> bool:
        """Make ``cfg`` the inputs (undoable), the targets and the load's settings kept; False if it cannot run."""
        return self._apply(replace(self.state, cfg=cfg), "")

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
        self.history.push(self.state, merge)
        old = self.state
        self.state = state
        if not self._compute():
            self.state = old
            self.history.drop_last()
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
        return self.history.can_undo

    def can_redo(self) -> bool:
        return self.history.can_redo

    def undo(self) -> None:
        self._swap(self.history.undo(self.state))

    def redo(self) -> None:
        self._swap(self.history.redo(self.state))

    def clear_history(self) -> None:
        """Forget undo/redo (after restoring the last session or opening a file into a fresh window)."""
        self.history.clear()
        self.sig_undo_changed.emit()

    def _swap(self, state: State | None) -> None:
        if state is None:
            return
        self.state = state
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
        """The workload on screen as a load on a server (ui/user_view.py)."""
        return load_of(self.cfg, self.state.prompt_spread, kind, prompt_cache=self.state.prompt_cache, **fields)

    def _serve(self) -> "api.ServeReport | None":
        return serve_users(self.cat, self.cfg, self.state.prompt_spread, self.state.prompt_cache)

    def user_view(self) -> dict[str, float]:
        """What the users on screen see, with bands (ui/user_view.py)."""
        return user_view(self.prediction, self.serving)

    def meets_targets(self) -> dict[str, bool | None]:
        return meets_targets(self.user_view() if self.prediction is not None else None,
                             self.targets.ttft_ms, self.targets.tok_s)

    # ------------------------------------------------------------------ catalog
    def reload_catalog(self) -> None:
        """Re-read the catalog (after "this machine" was saved) and keep the inputs where possible."""
        keys, targets, spread, cache = self.input_keys(), self.targets, self.state.prompt_spread, self.state.prompt_cache
        self.cat = self.imports.readd(api.load_catalog())   # this session's imports stay usable
        try:
            cfg = self.configure_keys(keys)
        except api.AdvisorError:
            cfg = self._default_config()
        self.compare.clear()
        self.state = State(cfg, targets, spread, cache)
        self.history.clear()
        self._compute()
        self.sig_catalog_changed.emit()
        self.sig_inputs_changed.emit()
        self.sig_undo_changed.emit()
        self.sig_results_changed.emit()

    # ------------------------------------------------------------------ files
    def to_file_dict(self) -> dict[str, Any]:
        """The sizing as saved; an imported model's source goes with it, so the file opens elsewhere."""
        model = self.cfg.model.key
        return sizing_file.file_dict(self.input_keys(), self.targets.to_dict(), self.imports.sources.get(model),
                                     self.imports.names.get(model), self.whatif.keys())
