"""The state of the tabs that keep their own: the configurations pinned to Compare and the what-if
chosen on the What-ifs tab. Each is a small object with its own signal, held by the `Session` (which
keeps the inputs, the targets, undo and the one prediction); a view subscribes to the state it shows
and nothing else."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Iterator

from PySide6.QtCore import QObject, Signal

from advisor import api
from ui.sizing_file import TECHNIQUE_FIELDS

if TYPE_CHECKING:
    from ui.session import Session

#: the most configurations the Compare tab shows side by side
MAX_COMPARE = 4


class CompareList(QObject):
    """The configurations pinned to Compare, in order (a list of `api.Config`, at most MAX_COMPARE)."""

    sig_changed = Signal()

    def __init__(self, session: "Session"):
        super().__init__(session)
        self.session = session
        self._configs: list[api.Config] = []

    def __iter__(self) -> Iterator["api.Config"]:
        return iter(self._configs)

    def __len__(self) -> int:
        return len(self._configs)

    def __getitem__(self, i: int) -> "api.Config":
        return self._configs[i]

    def __contains__(self, cfg: object) -> bool:
        return cfg in self._configs

    def pin(self, cfg: "api.Config | None" = None) -> bool:
        """Pin ``cfg`` (default: the inputs in force); False when it is pinned already or the list is full."""
        cfg = cfg or self.session.cfg
        if cfg in self._configs:
            return False
        if len(self._configs) >= MAX_COMPARE:
            self.session.sig_error.emit(f"Compare holds {MAX_COMPARE} configurations at most; remove one first")
            return False
        self._configs.append(cfg)
        self.sig_changed.emit()
        return True

    def unpin(self, index: int) -> None:
        if 0 <= index < len(self._configs):
            del self._configs[index]
            self.sig_changed.emit()

    def clear(self) -> None:
        if self._configs:
            self._configs.clear()
            self.sig_changed.emit()


class WhatIf(QObject):
    """The what-if on the What-ifs tab (``techniques``: None when none is chosen), its before/after for
    the inputs in force (``effects``), or why it cannot apply there (``error``)."""

    sig_changed = Signal()
    """A what-if was chosen (its effects are new); after an input change the session's results signal
    says that the effects were recomputed."""

    def __init__(self, session: "Session"):
        super().__init__(session)
        self.session = session
        self.techniques: api.Techniques | None = None
        self.effects: list[api.TechniqueEffect] = []
        self.error = ""

    def set(self, tech: "api.Techniques | None") -> bool:
        """Choose the what-if (None: none) and compute its before/after for the inputs in force. A
        technique that cannot apply here (a draft of another tokenizer, a runtime with no offload) is
        kept, with the reason in ``error``; returns False then."""
        self.techniques = tech
        ok = self.recompute()
        self.sig_changed.emit()
        return ok

    def recompute(self) -> bool:
        """The effects for the inputs in force (the session calls it after every input change)."""
        self.effects, self.error = [], ""
        if self.techniques is None or not self.techniques.any:
            return True
        try:
            self.effects = api.techniques(self.session.cat, self.session.cfg, self.techniques)
        except api.AdvisorError as exc:
            self.error = str(exc)
            return False
        return True

    def keys(self) -> dict[str, Any]:
        """The chosen what-if as saved (a draft by its catalog key, only the fields that differ from
        "no technique"); empty when none is chosen."""
        t = self.techniques
        if t is None or not t.any:
            return {}
        plain = api.Techniques()
        out: dict[str, Any] = {}
        for name in TECHNIQUE_FIELDS:
            value = getattr(t, name)
            if value != getattr(plain, name):
                out[name] = value.key if name == "draft" else value
        return out

    def load_keys(self, keys: dict[str, Any]) -> bool:
        """Choose the what-if saved by `keys` (a sizing file, the last session); a bad one is refused
        with the session's error signal and the what-if in force stays."""
        try:
            tech = api.techniques_from(self.session.cat, **{k: keys[k] for k in TECHNIQUE_FIELDS if k in keys})
        except api.AdvisorError as exc:
            self.session.refuse(f"what-if: {exc}")
            return False
        self.set(tech if tech.any else None)
        return True
