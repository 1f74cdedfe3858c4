"""Processes of their own for work that would hold the GUI thread's interpreter lock (the recommender)
or take Qt's locks beside it (the PDF report).

A ranking is ~0.4 s of numpy and Python. On a worker thread it still shares the GIL with the GUI
thread, so the event loop stalls for tens of milliseconds at a time and the ranking itself takes a
third longer. In a child process neither happens; what crosses is small (the request, and back a
`Shortlist` of the rows a table shows).

- One child per `Workers` channel, started on first use with the ``spawn`` method (never ``fork``:
  the parent runs Qt and threads). Children are reused by the next `Workers` once the old one is
  closed or gone, and stopped at exit.
- What goes to a child is pickled and written by a thread of its own: the GUI thread never waits for
  a child that is busy or still starting to read a megabyte of catalog.
- A job is a picklable top-level function; a generator's every item is sent back as it comes (a
  first look, then everything). Big inputs that rarely change (the catalog) are *kept*: sent once per
  child under a name, then passed by that name.
- The newest job of a channel wins: one queued behind a newer one of its channel is answered
  "dropped" without running, and a running generator is abandoned at its next item when a newer job
  of its channel is waiting.
- Idle for a moment, the child hands its freed memory back to the system, as the window does.
"""

from __future__ import annotations

import atexit
import logging
import multiprocessing
import os
import pickle
import queue
import threading
import traceback
from typing import Any, Callable

log = logging.getLogger(__name__)

#: seconds idle before a child returns its freed heap pages (after a ranking's arrays are gone)
TRIM_AFTER_S = 1.5
#: how much lower a child's scheduling priority is than the window's (Unix niceness, added)
CHILD_NICENESS = 5


# ---- the child ---------------------------------------------------------------------------------

def _portable(exc: BaseException) -> BaseException:
    """The exception itself if it survives pickling, else a RuntimeError that says what it was."""
    try:
        pickle.loads(pickle.dumps(exc))
        return exc
    except Exception:  # noqa: BLE001 - any exception type may refuse pickling
        return RuntimeError(f"{type(exc).__name__}: {exc}")


def _child_main(conn) -> None:
    """The child's loop: read jobs, run each unless a newer one of its channel waits, send back its items."""
    import signal

    signal.signal(signal.SIGINT, signal.SIG_IGN)   # Ctrl+C in the terminal is for the parent
    try:
        os.nice(CHILD_NICENESS)   # the window's thread gets a core the moment it needs one
    except (AttributeError, OSError):   # not on this system
        pass
    from ui.memory import release_free_memory

    kept: dict[str, Any] = {}
    queue: list[tuple] = []   # ("job", number, channel, fn, args, kept objects new to the child, kept names)

    class ParentGone(Exception):
        """The pipe closed, or the parent said stop: the child ends."""

    def send(msg: tuple) -> None:
        try:
            conn.send(msg)
        except (EOFError, OSError) as exc:
            raise ParentGone from exc

    def read(timeout_s: float | None = 0.0) -> None:
        """Queue what has arrived (waiting up to ``timeout_s`` for something; None: for ever)."""
        try:
            if not conn.poll(timeout_s):
                return
            while True:
                msg = conn.recv()
                if msg is None:
                    raise ParentGone
                kept.update(msg[5])
                queue.append(msg)
                if not conn.poll():
                    return
        except (EOFError, OSError) as exc:
            raise ParentGone from exc

    def newer(channel: str) -> bool:
        return any(m[2] == channel for m in queue)

    trimmed = True
    try:
        while True:
            if not queue:
                read(None if trimmed else TRIM_AFTER_S)
                if not queue:   # idle for a while: hand the freed heap back, then wait for ever
                    release_free_memory()
                    trimmed = True
                    continue
            _, job_id, channel, fn, args, _, names = queue.pop(0)
            if newer(channel):
                send(("dropped", job_id))
                continue
            trimmed = False
            items = None
            try:
                out = fn(*args, **{n: kept[n] for n in names})
                items = out if hasattr(out, "__next__") else iter((out,))
                finished = True
                for item in items:
                    send(("item", job_id, item))
                    read()
                    if newer(channel):   # abandoned at this item: the newer job runs next
                        finished = False
                        break
            except ParentGone:
                raise
            except BaseException as exc:  # noqa: BLE001 - the job's failure, of any kind, goes back to the parent
                send(("error", job_id, _portable(exc), traceback.format_exc()))
                continue
            finally:
                if items is not None and hasattr(items, "close"):
                    items.close()
            send(("done" if finished else "dropped", job_id))
    except ParentGone:
        return


# ---- the parent's handle on a child ------------------------------------------------------------

class Child:
    """A started child process and the thread that reads what it sends (handed to ``sink``)."""

    def __init__(self) -> None:
        ctx = multiprocessing.get_context("spawn")
        self.conn, theirs = ctx.Pipe()
        self.process = ctx.Process(target=_child_main, args=(theirs,), name="advisor-child", daemon=True)
        self.process.start()
        theirs.close()
        self.sink: Callable[[tuple], None] | None = None
        self.kept: dict[str, Any] = {}   # what the child holds, by name (the very objects sent)
        self._next_id = 0
        self._outbox: queue.SimpleQueue = queue.SimpleQueue()
        self._reader = threading.Thread(target=self._read, name="advisor-child-reader", daemon=True)
        self._writer = threading.Thread(target=self._write, name="advisor-child-writer", daemon=True)
        self._reader.start()
        self._writer.start()

    def _write(self) -> None:
        while True:
            msg = self._outbox.get()
            try:
                self.conn.send(msg)   # pickled whole before a byte is written
            except (OSError, ValueError):   # the child is gone: the reader says so
                return
            except Exception as exc:  # noqa: BLE001 - a job that cannot be pickled fails alone
                sink = self.sink
                if sink is not None:
                    try:
                        sink(("error", msg[1], RuntimeError(f"the job cannot be sent to its process ({exc})"),
                              traceback.format_exc()))
                    except RuntimeError:
                        pass
                continue
            if msg is None:
                return

    def _read(self) -> None:
        while True:
            try:
                msg = self.conn.recv()
            except (EOFError, OSError):
                self.process.join(1.0)
                msg = ("died", None, self.process.exitcode)
            except Exception as exc:  # noqa: BLE001 - an answer that cannot be unpickled
                msg = ("garbled", None, exc)
            sink = self.sink
            if sink is not None:
                try:
                    sink(msg)
                except RuntimeError:   # the receiver's Qt object is gone: nobody waits for this answer
                    pass
            if msg[0] == "died":
                return

    @property
    def alive(self) -> bool:
        return self.process.is_alive()

    def submit(self, channel: str, fn: Callable[..., Any], args: tuple, kept: dict[str, Any]) -> int:
        """Queue a job for the child (called on the GUI thread only); returns its number, unique in
        this child. A child that is gone answers it with "died"."""
        if not self.alive:
            raise OSError("the child process is not running")
        self._next_id += 1
        new = {n: obj for n, obj in kept.items() if self.kept.get(n) is not obj}
        self._outbox.put(("job", self._next_id, channel, fn, tuple(args), new, tuple(kept)))
        self.kept.update(new)
        return self._next_id

    def stop(self, timeout_s: float = 1.0) -> None:
        self.sink = None
        if self._writer.is_alive():
            self._outbox.put(None)
        self._writer.join(timeout_s)
        self.process.join(timeout_s)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(timeout_s)


_idle: list[Child] = []
_all: list[Child] = []


def acquire(sink: Callable[[tuple], None]) -> Child:
    """A running child for ``sink``: an idle one if there is one, else a new one."""
    while _idle:
        child = _idle.pop()
        if child.alive:
            child.sink = sink
            return child
    child = Child()
    child.sink = sink
    _all.append(child)
    return child


def release(child: Child, sink: Callable[[tuple], None]) -> None:
    """Hand back a child acquired for ``sink`` (nothing if another owner has it since): its current
    job's answers go nowhere from now on, and the next `acquire` may reuse it."""
    if child.sink is not sink:
        return
    child.sink = None
    if not child.alive:
        if child in _all:
            _all.remove(child)
    elif child not in _idle:
        _idle.append(child)


def discard(child: Child) -> None:
    """Stop a child for good (it died, answered what cannot be read, or its channel is done with it)."""
    if child in _idle:
        _idle.remove(child)
    if child in _all:
        _all.remove(child)
    child.stop(0.2)


@atexit.register
def _stop_all() -> None:
    children = list(_all)
    for child in children:   # every child told first, so that they finish their jobs side by side
        child.sink = None
        child._outbox.put(None)
    for child in children:
        child.stop()
    _all.clear()
    _idle.clear()
