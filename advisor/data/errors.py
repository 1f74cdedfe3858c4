"""The one error type the core raises for bad input; the CLI turns it into a one-line message."""

from __future__ import annotations

from typing import Callable


class AdvisorError(Exception):
    """Bad input or an impossible request, with a message meant for the user."""


class UnknownName(AdvisorError):
    """A name that matches no catalog entry, or several equally well.

    Either give the message and candidates, or ``explain``: a function returning both, which runs
    at most once, the first time the message (``str``, ``args``, ``repr``) or ``candidates`` is read;
    so a miss that is caught and dropped costs nothing to describe.
    """

    def __init__(self, message: str = "", candidates: tuple[str, ...] = (), *,
                 explain: Callable[[], tuple[str, tuple[str, ...]]] | None = None):
        super().__init__(message)
        self._message = message
        self._candidates = tuple(candidates)
        self._explain = explain

    def _described(self) -> None:
        explain = self._explain
        if explain is not None:
            message, candidates = explain()
            self._message, self._candidates = message, tuple(candidates)
            BaseException.args.__set__(self, (message,))
            self._explain = None

    @property
    def candidates(self) -> tuple[str, ...]:
        self._described()
        return self._candidates

    @candidates.setter
    def candidates(self, value: tuple[str, ...]) -> None:
        self._described()
        self._candidates = tuple(value)

    @property
    def args(self):  # type: ignore[override]
        self._described()
        return BaseException.args.__get__(self)

    @args.setter
    def args(self, value) -> None:
        self._described()
        BaseException.args.__set__(self, value)
        self._message = "" if not value else str(value[0]) if len(value) == 1 else str(tuple(value))

    def __str__(self) -> str:
        self._described()
        return self._message

    def __repr__(self) -> str:
        return f"{type(self).__name__}({str(self)!r})"

    def __reduce__(self):
        # a described copy: pickling must not drag the name index along
        return type(self), (str(self), self.candidates), None
