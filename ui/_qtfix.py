"""Work around a reference-count bug in PySide6 6.12.0 on CPython < 3.12.

`SignalInstance.emit()` returns ``True`` without taking a reference, so every emit from Python (ours and
pyqtgraph's, hundreds per second while a slider moves) takes one reference away from ``True``; after a
few hundred the interpreter aborts with "Fatal Python error: bool_dealloc". CPython 3.12+ makes ``True``
immortal, so the bug is harmless there.

We detect the bug (emit once, compare the reference count) and, only if present, give ``True`` a very
large number of extra references, which makes it effectively immortal for the life of the process.
Remove this module once PySide6 fixes emit (checked: 6.12.0 is affected).
"""

from __future__ import annotations

import ctypes
import sys

from PySide6.QtCore import QObject, Signal

applied = False
EXTRA = 1 << 40


class _Probe(QObject):
    sig = Signal()


def apply() -> bool:
    """Apply the guard if this PySide6 has the bug; returns whether it did."""
    global applied
    if applied or sys.implementation.name != "cpython" or sys.version_info >= (3, 12):
        return applied
    p = _Probe()
    before = sys.getrefcount(True)
    for _ in range(4):
        p.sig.emit()
    lost = before - sys.getrefcount(True)
    if lost > 0:
        refcnt = ctypes.c_ssize_t.from_address(id(True))
        refcnt.value += EXTRA + lost
        applied = True
    return applied


apply()
