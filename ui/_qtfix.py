"""Work around two reference-count bugs in PySide6/shiboken6 6.12.0 on CPython < 3.12.

- every call of a C++ method that returns ``void`` (``setToolTip``, ``setObjectName``, everything
  pyqtgraph calls in ``setData``) returns ``None`` without taking a reference to it;
- ``SignalInstance.emit()`` returns ``True`` the same way.

Each such call takes one reference away from ``None``/``True``; after some thousands the interpreter
aborts ("Fatal Python error: none_dealloc" / "bool_dealloc"), typically a few seconds into dragging a
slider. CPython 3.12+ makes these objects immortal, so the bugs are harmless there.

We detect each bug (call once, compare the reference count) and, only where present, give the object
a very large number of extra references, which makes it effectively immortal for the life of the
process. Remove this module once PySide6 is fixed (checked: 6.12.0 is affected; 6.12.0 is the newest).
"""

from __future__ import annotations

import ctypes
import sys

from PySide6.QtCore import QObject, Signal

EXTRA = 1 << 40
#: which singletons were topped up
applied: list[str] = []


class _Probe(QObject):
    sig = Signal()


def _top_up(obj: object, label: str) -> None:
    refcnt = ctypes.c_ssize_t.from_address(id(obj))  # ob_refcnt is the first field of every object
    refcnt.value += EXTRA
    applied.append(label)


def apply() -> list[str]:
    """Apply the guard where this PySide6 has the bugs; returns what was topped up."""
    if applied or sys.implementation.name != "cpython" or sys.version_info >= (3, 12):
        return applied
    p = _Probe()
    before = sys.getrefcount(True)
    for _ in range(4):
        p.sig.emit()
    if sys.getrefcount(True) < before:
        _top_up(True, "True")
        _top_up(False, "False")
    before = sys.getrefcount(None)
    for _ in range(4):
        p.setObjectName("probe")
    if sys.getrefcount(None) < before:
        _top_up(None, "None")
    return applied


apply()
