"""The one worker helper: results come back on the GUI thread, a newer job makes an older one stale."""

import threading
import time

from PySide6.QtCore import QThread


def test_stale_result_is_dropped_and_errors_come_back(qtbot):
    from ui.workers import Workers

    w = Workers()
    got, errors, threads = [], [], []
    release = threading.Event()

    def slow():
        release.wait(5)
        return "old"

    w.run("chan", slow, got.append)
    w.run("chan", lambda: "new", lambda r: (got.append(r), threads.append(QThread.currentThread())))
    qtbot.waitUntil(lambda: got == ["new"], timeout=5000)
    release.set()
    qtbot.waitUntil(lambda: w.busy == 0, timeout=5000)
    time.sleep(0.05)
    qtbot.wait(20)
    assert got == ["new"]  # the older, slower answer was dropped
    assert threads[0] is w.thread()  # delivered on the GUI thread

    def boom():
        raise ValueError("bad")

    w.run("other", boom, got.append, lambda exc, tb: errors.append((exc, tb)))
    qtbot.waitUntil(lambda: bool(errors), timeout=5000)
    assert isinstance(errors[0][0], ValueError) and "Traceback" in errors[0][1]
    assert w.wait(5000)
