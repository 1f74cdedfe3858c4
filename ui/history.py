"""Undo and redo of the session's inputs: a stack of states, with quick repeats of one kind of change
(a slider drag) merged into one step."""

from __future__ import annotations

import time
from typing import Generic, TypeVar

T = TypeVar("T")

#: input changes of the same kind closer together than this are one undo step (a slider drag)
UNDO_MERGE_S = 0.8
#: states kept to undo
DEPTH = 200


class History(Generic[T]):
    def __init__(self) -> None:
        self._undo: list[T] = []
        self._redo: list[T] = []
        self._last_merge: tuple[str, float] = ("", 0.0)

    def push(self, previous: T, merge: str = "") -> None:
        """Record ``previous`` before a change; a change of the same ``merge`` kind right after the
        last one joins its step instead."""
        now = time.monotonic()
        kind, t = self._last_merge
        if not (merge and merge == kind and now - t < UNDO_MERGE_S and self._undo):
            self._undo.append(previous)
            del self._undo[:-DEPTH]
        self._last_merge = (merge, now)
        self._redo.clear()

    def drop_last(self) -> None:
        """Forget the step just pushed (the change it recorded was refused)."""
        if self._undo:
            self._undo.pop()

    def undo(self, current: T) -> T | None:
        if not self._undo:
            return None
        self._redo.append(current)
        self._last_merge = ("", 0.0)
        return self._undo.pop()

    def redo(self, current: T) -> T | None:
        if not self._redo:
            return None
        self._undo.append(current)
        self._last_merge = ("", 0.0)
        return self._redo.pop()

    def clear(self) -> None:
        self._undo.clear()
        self._redo.clear()

    @property
    def can_undo(self) -> bool:
        return bool(self._undo)

    @property
    def can_redo(self) -> bool:
        return bool(self._redo)
