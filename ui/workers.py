"""One recipe for slow jobs: run a plain function on the thread pool, deliver the answer on the GUI thread.

Rules (Anki's, Picard's):
- the function receives plain data and never touches widgets;
- its result or its exception comes back through a queued signal, on the GUI thread;
- each job has a *channel*; starting a job on a channel makes older jobs on it stale, and a stale
  result is dropped, so a slow answer never overwrites a newer one.

`run_in_process` is the same recipe in a child process (`ui.process`), for work that would hold the
GIL the GUI thread needs (the recommender) or Qt's locks beside it (the PDF report): a generator's
items arrive one by one, and a newer job
on a channel supersedes the older one there too (it stops at its next item). Each channel has a
process of its own, so two channels run side by side.
"""

from __future__ import annotations

import functools
import logging
import traceback
from typing import Any, Callable

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

from ui import process

log = logging.getLogger(__name__)


class _Signals(QObject):
    done = Signal(object)
    failed = Signal(object, str)
    progress = Signal(str)


class _Job(QRunnable):
    def __init__(self, fn: Callable[..., Any], with_progress: bool, signals: _Signals):
        super().__init__()
        self.fn = fn
        self.with_progress = with_progress
        # owned by the Workers, not by the job: the pool deletes a finished job, perhaps before
        # its result is delivered on the GUI thread, and the signals must outlive it until then
        self.signals = signals
        self.setAutoDelete(True)

    def run(self) -> None:  # worker thread
        try:
            out = self.fn(self.signals.progress.emit) if self.with_progress else self.fn()
        except Exception as exc:  # noqa: BLE001 - handed to the GUI thread
            self.signals.failed.emit(exc, traceback.format_exc())
        else:
            self.signals.done.emit(out)


def _relay(signal, channel: str, msg: tuple) -> None:
    """What a child sent, handed to the GUI thread (called on the child's reader thread)."""
    signal.emit((channel, msg))


class Workers(QObject):
    """Runs jobs on a private `QThreadPool` or in a child process; ``busy`` tells how many are in flight."""

    sig_busy_changed = Signal(int)
    _sig_from_child = Signal(object)   # emitted on the child's reader thread, delivered on the GUI thread

    def __init__(self, parent: QObject | None = None, max_threads: int = 2):
        super().__init__(parent)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(max_threads)
        self._generation: dict[str, int] = {}
        self._in_flight: dict[str, int] = {}   # jobs started and not yet delivered, per channel
        self._children: dict[str, process.Child] = {}   # per channel
        self._child_jobs: dict[tuple[str, int], tuple] = {}   # (channel, job) → (generation, on_item, on_done, on_error)
        self._transient: set[str] = set()   # channels whose child stops when idle (`run_in_process(stay=False)`)
        self._sig_from_child.connect(self._from_child)

    def run(self, channel: str, fn: Callable[..., Any], on_done: Callable[[Any], None],
            on_error: Callable[[BaseException, str], None] | None = None,
            on_progress: Callable[[str], None] | None = None) -> int:
        """Start ``fn()`` (or ``fn(progress)`` when ``on_progress`` is given); returns the job's generation."""
        gen = self._generation.get(channel, 0) + 1
        self._generation[channel] = gen
        signals = _Signals(self)
        job = _Job(fn, on_progress is not None, signals)

        self._in_flight[channel] = self._in_flight.get(channel, 0) + 1

        def finish() -> None:
            signals.deleteLater()   # after this delivery: nothing else comes from the job
            self._in_flight[channel] -= 1
            self.sig_busy_changed.emit(self.busy)

        def done(out: Any) -> None:
            finish()
            if self._generation.get(channel) == gen:
                on_done(out)
            else:
                log.debug("dropped a stale result on %s (generation %d)", channel, gen)

        def failed(exc: BaseException, tb: str) -> None:
            finish()
            if self._generation.get(channel) != gen:
                return
            if on_error is not None:
                on_error(exc, tb)
            else:
                log.error("background job on %s failed:\n%s", channel, tb)

        signals.done.connect(done)
        signals.failed.connect(failed)
        if on_progress is not None:
            signals.progress.connect(lambda msg: self._generation.get(channel) == gen and on_progress(msg))
        self.sig_busy_changed.emit(self.busy)
        self.pool.start(job)
        return gen

    def run_in_process(self, channel: str, fn: Callable[..., Any], args: tuple = (), kept: dict | None = None,
                       on_item: Callable[[Any], None] | None = None, on_done: Callable[[], None] | None = None,
                       on_error: Callable[[BaseException, str], None] | None = None, stay: bool = True) -> int:
        """Start ``fn(*args, **kept)`` in the channel's child process (one per channel, so two channels
        run side by side): a picklable top-level function, whose items (a generator's, one by one;
        else its one result) reach ``on_item``, then ``on_done``. ``kept`` objects cross once per
        child and are reused while they stay the same object. ``stay=False``: the child is stopped
        once the channel has nothing left to do (an occasional job whose imports weigh more than its
        start-up costs: the report's Qt widgets and charts). Returns the job's generation."""
        if not stay:
            self._transient.add(channel)
        else:
            self._transient.discard(channel)
        gen = self._generation.get(channel, 0) + 1
        self._generation[channel] = gen
        for attempt in (1, 2):
            child = self._children.get(channel)
            if child is None:
                sink = functools.partial(_relay, self._sig_from_child, channel)
                child = self._children[channel] = process.acquire(sink)
                # a window deleted without closing hands its child back too
                self.destroyed.connect(functools.partial(process.release, child, sink))
            try:
                job = child.submit(channel, fn, args, kept or {})
                break
            except (OSError, ValueError):   # the pipe broke: the child is gone; start another once
                process.discard(self._children.pop(channel))
                if attempt == 2:
                    raise
        self._child_jobs[channel, job] = (gen, on_item, on_done, on_error)
        self._in_flight[channel] = self._in_flight.get(channel, 0) + 1
        self.sig_busy_changed.emit(self.busy)
        return gen

    def _from_child(self, message: tuple) -> None:
        channel, msg = message
        kind, job = msg[0], msg[1]
        if kind in ("died", "garbled"):
            child = self._children.pop(channel, None)
            if child is not None:
                process.discard(child)
            why = (f"the {channel} process stopped (exit code {msg[2]})" if kind == "died"
                   else f"the {channel} process sent an answer that cannot be read ({msg[2]})")
            for key in [k for k in self._child_jobs if k[0] == channel]:
                self._child_finished(key, RuntimeError(why), why)
            return
        if (channel, job) not in self._child_jobs:
            return   # an answer for the Workers that had this child before
        gen, on_item, _, _ = self._child_jobs[channel, job]
        if kind == "item":
            if on_item is not None and self._generation.get(channel) == gen:
                on_item(msg[2])
        elif kind == "error":
            self._child_finished((channel, job), msg[2], msg[3])
        else:   # "done", or "dropped" for a newer job of the channel
            self._child_finished((channel, job), None, "", delivered=kind == "done")

    def _child_finished(self, key: tuple[str, int], exc: BaseException | None, tb: str,
                        delivered: bool = False) -> None:
        channel = key[0]
        gen, _, on_done, on_error = self._child_jobs.pop(key)
        self._in_flight[channel] -= 1
        if channel in self._transient and self._in_flight[channel] == 0 and channel in self._children:
            process.discard(self._children.pop(channel))
        self.sig_busy_changed.emit(self.busy)
        if self._generation.get(channel) != gen:
            return
        if exc is not None:
            if on_error is not None:
                on_error(exc, tb)
            else:
                log.error("job on %s failed in its process:\n%s", channel, tb)
        elif delivered and on_done is not None:
            on_done()

    def close(self) -> None:
        """Hand the child processes back (the next Workers reuses them); jobs in flight are forgotten."""
        for child in self._children.values():
            process.release(child, child.sink)
        self._children.clear()
        for channel, _ in list(self._child_jobs):
            self._in_flight[channel] -= 1
        self._child_jobs.clear()

    @property
    def busy(self) -> int:
        """Jobs started and not yet delivered, on every channel."""
        return sum(self._in_flight.values())

    def running(self, *channels: str) -> bool:
        """Whether a job on any of ``channels`` is still running (its answer not yet delivered)."""
        return any(self._in_flight.get(c, 0) > 0 for c in channels)

    def current(self, channel: str) -> int:
        return self._generation.get(channel, 0)

    def wait(self, msecs: int = 5000) -> bool:
        return self.pool.waitForDone(msecs)
