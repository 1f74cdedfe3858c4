"""One recipe for slow jobs: run a plain function on the thread pool, deliver the answer on the GUI thread.

Rules (Anki's, Picard's):
- the function receives plain data and never touches widgets;
- its result or its exception comes back through a queued signal, on the GUI thread;
- each job has a *channel*; starting a job on a channel makes older jobs on it stale, and a stale
  result is dropped, so a slow answer never overwrites a newer one.
"""

from __future__ import annotations

import logging
import traceback
from typing import Any, Callable

from PySide6.QtCore import QObject, QRunnable, QThreadPool, Signal

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


class Workers(QObject):
    """Runs jobs on a private `QThreadPool`; ``busy`` tells how many are in flight."""

    sig_busy_changed = Signal(int)

    def __init__(self, parent: QObject | None = None, max_threads: int = 2):
        super().__init__(parent)
        self.pool = QThreadPool(self)
        self.pool.setMaxThreadCount(max_threads)
        self._generation: dict[str, int] = {}
        self._in_flight: dict[str, int] = {}   # jobs started and not yet delivered, per channel

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
