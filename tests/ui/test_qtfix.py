"""PySide6 6.12.0 on CPython < 3.12 drops a reference to None on every void C++ call and to True on
every Python signal emit (ui/_qtfix.py). Without the guard, this test aborts the interpreter."""

import sys

from PySide6.QtCore import QObject, Signal

import ui._qtfix as qtfix


class _Emitter(QObject):
    sig = Signal(int)


def test_many_void_calls_and_emits_do_not_exhaust_none_or_true():
    o = _Emitter()
    o.sig.connect(lambda v: None)
    for i in range(50_000):  # far more than None's or True's normal reference count
        o.setObjectName("x")
        o.sig.emit(i)
    assert sys.getrefcount(None) > 0 and sys.getrefcount(True) > 0
    if sys.version_info < (3, 12):
        assert set(qtfix.applied) <= {"None", "True", "False"}
