"""Jobs in the ranking process (ui/process.py through Workers.run_in_process): a real child process
started with ``spawn``; items arrive on the GUI thread in order, a newer job supersedes an older one
of its channel, kept objects cross once, failures and a dead child come back as errors, and a closed
window's child serves the next one."""

import os
import time

import pytest
from PySide6.QtCore import QThread

from advisor import api


# ---- jobs (top level: the child imports them from this module) ---------------------------------

def pid_and_items(n, delay_s=0.0):
    yield os.getpid()
    for i in range(n):
        time.sleep(delay_s)
        yield i


def kept_identity(catalog):
    return id(catalog), len(catalog)


def fails(kind):
    if kind == "advisor":
        raise api.AdvisorError("no hardware in the catalog matches the hardware constraints")

    class Local(Exception):   # cannot be pickled (defined in a function): sent as a RuntimeError
        pass

    raise Local("a local failure")


def dies():
    os._exit(3)


def slow_then(value, delay_s):
    time.sleep(delay_s)
    return value


# ---- tests -------------------------------------------------------------------------------------

def _collect(qtbot, w, channel, fn, args=(), kept=None):
    got, done, errors, threads = [], [], [], []
    w.run_in_process(channel, fn, args, kept,
                     on_item=lambda x: (got.append(x), threads.append(QThread.currentThread())),
                     on_done=lambda: done.append(True), on_error=lambda exc, tb: errors.append((exc, tb)))
    qtbot.waitUntil(lambda: bool(done or errors), timeout=30000)
    return got, errors, threads


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_items_arrive_in_order_on_the_gui_thread_from_another_process(qtbot):
    from ui.workers import Workers

    w = Workers()
    busy = []
    w.sig_busy_changed.connect(busy.append)
    got, errors, threads = _collect(qtbot, w, "c", pid_and_items, (3,))
    assert not errors
    assert got[0] != os.getpid() and got[1:] == [0, 1, 2]   # another process, every item in order
    assert all(t is w.thread() for t in threads)
    assert busy[0] == 1 and busy[-1] == 0 and w.busy == 0
    w.close()


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_a_newer_job_supersedes_the_older_and_kept_objects_cross_once(qtbot):
    from ui.workers import Workers

    w = Workers()
    old = []
    w.run_in_process("c", pid_and_items, (50, 0.02), on_item=old.append)   # ~1 s of items
    qtbot.waitUntil(lambda: len(old) >= 2, timeout=30000)
    got, errors, _ = _collect(qtbot, w, "c", slow_then, ("new", 0.0))
    assert got == ["new"] and not errors
    qtbot.waitUntil(lambda: w.busy == 0, timeout=10000)
    n_old = len(old)
    qtbot.wait(200)
    assert len(old) == n_old < 51   # the older job stopped at its next item: nothing more came from it

    cat = {"a": 1, "b": 2}
    first, _, _ = _collect(qtbot, w, "c", kept_identity, (), {"catalog": cat})
    again, _, _ = _collect(qtbot, w, "c", kept_identity, (), {"catalog": cat})
    other, _, _ = _collect(qtbot, w, "c", kept_identity, (), {"catalog": dict(cat)})
    assert first == again and first[0][1] == 2   # the same object in the child: sent once
    assert other[0][0] != first[0][0]            # a new object is sent again
    w.close()


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_failures_and_a_dead_child_come_back_as_errors_and_the_next_job_runs(qtbot):
    from ui.workers import Workers

    w = Workers()
    _, errors, _ = _collect(qtbot, w, "c", fails, ("advisor",))
    assert isinstance(errors[0][0], api.AdvisorError) and "no hardware" in str(errors[0][0])
    assert "Traceback" in errors[0][1]
    _, errors, _ = _collect(qtbot, w, "c", fails, ("local",))
    assert isinstance(errors[0][0], RuntimeError) and "Local: a local failure" in str(errors[0][0])

    _, errors, _ = _collect(qtbot, w, "c", dies)
    assert isinstance(errors[0][0], RuntimeError) and "stopped (exit code 3)" in str(errors[0][0])
    assert w.busy == 0
    got, errors, _ = _collect(qtbot, w, "c", pid_and_items, (1,))   # a new child took over
    assert not errors and got[1:] == [0]
    w.close()


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_a_closed_workers_child_serves_the_next_one(qtbot):
    from ui.workers import Workers

    w = Workers()
    first, _, _ = _collect(qtbot, w, "c", pid_and_items, (0,))
    w.close()
    w2 = Workers()
    second, _, _ = _collect(qtbot, w2, "c", pid_and_items, (0,))
    assert first == second   # the same process (its pid), started once
    w2.close()


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_recommendations_survive_a_killed_ranking_process_and_one_that_cannot_start(window, qtbot, monkeypatch):
    """The tab says why it could not rank, keeps running, and ranks again with a fresh process."""
    import signal

    from ui import process, ranking

    view = window.recommend
    view.spin_max_gpus.setValue(2)
    window.show_view("recommend")
    qtbot.waitUntil(lambda: view.rec is not None and not view.computing, timeout=30000)

    child = window.workers._children[ranking.ALL]
    window.session.set_inputs(prompt=1500)
    view._timer.stop()
    view.compute()
    os.kill(child.process.pid, signal.SIGKILL)
    qtbot.waitUntil(lambda: not view.computing, timeout=30000)
    if view.rec is None:   # killed before it answered (else it had answered already: nothing to see)
        assert "Could not rank" in view.status.text() and "process stopped" in view.status.text()
    qtbot.waitUntil(lambda: window.workers.busy == 0, timeout=30000)   # the first look's answer too
    assert not child.alive
    old = view.rec
    view.compute()
    qtbot.waitUntil(lambda: view.rec is not None and view.rec is not old and not view.computing, timeout=30000)
    assert window.workers._children[ranking.ALL] is not child and view.rec.n_passing > 0

    def refuse(self):
        raise OSError("no more processes")

    window.workers.close()          # nothing to reuse: the next ranking must start a process
    monkeypatch.setattr(process, "_idle", [])
    monkeypatch.setattr(process.Child, "__init__", refuse)
    view.compute()
    assert not view.computing and view.rec is None
    assert "Could not rank" in view.status.text() and "cannot start (no more processes)" in view.status.text()


def reads_a_missing_file(path):
    with open(path) as f:   # FileNotFoundError: an OSError of the job's, not of the pipe
        return f.read()


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_an_oserror_of_the_job_is_its_error_and_the_child_lives_on(qtbot, tmp_path):
    from ui.workers import Workers

    w = Workers()
    before, _, _ = _collect(qtbot, w, "c", pid_and_items, (0,))
    _, errors, _ = _collect(qtbot, w, "c", reads_a_missing_file, (str(tmp_path / "missing.txt"),))
    assert isinstance(errors[0][0], FileNotFoundError)
    after, _, _ = _collect(qtbot, w, "c", pid_and_items, (0,))
    assert before == after   # the same process ran on
    w.close()


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_a_job_that_cannot_be_sent_fails_alone(qtbot):
    from ui.workers import Workers

    w = Workers()
    _, errors, _ = _collect(qtbot, w, "c", slow_then, (lambda: None, 0.0))   # a lambda does not pickle
    assert isinstance(errors[0][0], RuntimeError) and "cannot be sent" in str(errors[0][0])
    got, errors, _ = _collect(qtbot, w, "c", pid_and_items, (1,))
    assert not errors and got[1:] == [0] and w.busy == 0
    w.close()


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_a_channel_that_does_not_stay_stops_its_child_when_done(qtbot):
    from ui.workers import Workers

    w = Workers()
    got, done = [], []
    w.run_in_process("once", pid_and_items, (1,), on_item=got.append, on_done=lambda: done.append(True), stay=False)
    child = w._children["once"]
    qtbot.waitUntil(lambda: bool(done), timeout=30000)
    assert got[1:] == [0] and "once" not in w._children
    qtbot.waitUntil(lambda: not child.alive, timeout=5000)
    w.close()
