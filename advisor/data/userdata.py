"""The user's data folder: catalog additions (custom hardware, imported models, "this machine").

Files there have the catalog's YAML structure and overlay the shipped catalog. Every write is
atomic (a temporary file in the same folder, flushed, then renamed over the target), so a crash
or a full disk never leaves a half-written file behind; a read-modify-write holds an advisory lock
(`file_lock`), so saves at the same time keep each other's entries.
"""

from __future__ import annotations

import contextlib
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Mapping

import yaml

from advisor.data.errors import AdvisorError

APP_NAME = "advisor"
ENV_VAR = "ADVISOR_DATA_DIR"
CACHE_ENV_VAR = "ADVISOR_CACHE_DIR"


def user_data_dir() -> Path:
    """Where user additions live: $ADVISOR_DATA_DIR, else the platform's per-user data folder."""
    override = os.environ.get(ENV_VAR)
    if override:
        return Path(override).expanduser()
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Application Support" / APP_NAME
    if sys.platform.startswith("win"):
        base = os.environ.get("APPDATA") or str(Path.home() / "AppData" / "Roaming")
        return Path(base) / APP_NAME
    base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
    return Path(base) / APP_NAME


def user_cache_dir() -> Path | None:
    """Where advisor keeps what it can rebuild (the parsed shipped catalog): $ADVISOR_CACHE_DIR, else
    the platform's per-user cache folder; None when $ADVISOR_CACHE_DIR is empty (no cache)."""
    override = os.environ.get(CACHE_ENV_VAR)
    if override is not None:
        return Path(override).expanduser() if override.strip() else None
    if sys.platform == "darwin":
        return Path.home() / "Library" / "Caches" / APP_NAME
    if sys.platform.startswith("win"):
        base = os.environ.get("LOCALAPPDATA") or str(Path.home() / "AppData" / "Local")
        return Path(base) / APP_NAME / "cache"
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / APP_NAME


def output_target(path) -> Path:
    """Where a file the user named (`-o`, `--out`, Save as) is written: a symbolic link is written
    through (the file it points to is replaced, the link stays); anything but a regular file or a
    new name (a device such as /dev/full, a folder, a pipe, a socket) is refused with `AdvisorError`,
    since renaming a new file over it would replace the device node or swallow the folder."""
    p = Path(os.path.expanduser(str(path)))
    real = Path(os.path.realpath(p)) if p.is_symlink() else p
    if real.exists() and not real.is_file():
        kind = "a folder" if real.is_dir() else "not a regular file (a device, pipe or socket)"
        raise AdvisorError(f"cannot write {p}: it is {kind}; give the path of a file")
    return real


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` atomically; raise `AdvisorError` with a clear reason on failure.
    ``path`` follows `output_target`'s rules (links written through, devices and folders refused)."""
    with atomic_writer(path) as fh:
        fh.write(text)


@contextlib.contextmanager
def atomic_writer(path, newline: str | None = None):
    """A text file to write bit by bit (a long table as it is computed) that appears at ``path`` only
    when the block ends without an error: a temporary file in the same folder, flushed and renamed
    over the target; on any error or interrupt it is removed and the target is untouched. ``path``
    follows `output_target`'s rules; `AdvisorError` with a clear reason on failure."""
    path = output_target(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    except OSError as exc:
        raise AdvisorError(f"cannot write {path}: {exc.strerror or exc}") from None
    try:
        with os.fdopen(fd, "w", encoding="utf-8", newline=newline) as fh:
            yield fh
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException as exc:
        # never leave the temporary file behind, whatever went wrong
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError):
            raise AdvisorError(f"cannot write {path}: {exc.strerror or exc}") from None
        raise


def save_entries(section: str, entries: list[Mapping[str, Any]], filename: str,
                 folder: Path | None = None) -> Path:
    """Add or replace ``entries`` (by key) in the user file ``filename`` under ``section``.

    Other sections and entries already in the file are kept. Returns the file's path.
    """
    path = (folder or user_data_dir()) / filename
    # read, merge and write under one lock: two saves at once (ten `import-model --save` in
    # parallel) each keep the other's entries instead of the last writer winning
    with file_lock(path):
        doc = _read_user_doc(path)
        existing = [e for e in doc.get(section) or [] if isinstance(e, dict)]
        new_keys = {e["key"] for e in entries}
        doc[section] = [e for e in existing if e.get("key") not in new_keys] + [dict(e) for e in entries]
        text = "# advisor user catalog: entries here override the shipped catalog by key\n"
        text += yaml.safe_dump(doc, sort_keys=False, allow_unicode=True)
        write_atomic(path, text)
    return path


def _read_user_doc(path: Path) -> dict[str, Any]:
    """The user file as a mapping ({} when there is none); `AdvisorError` when it cannot be read."""
    if not path.exists():
        return {}
    try:
        from advisor.data.safe_load import load_yaml

        loaded = load_yaml(path.read_text(encoding="utf-8"), str(path))
    except AdvisorError as exc:
        raise AdvisorError(f"{exc}; fix or move it, nothing was written") from None
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
        raise AdvisorError(f"{path} exists but cannot be read ({exc.__class__.__name__}); "
                           "fix or move it, nothing was written") from None
    if isinstance(loaded, dict):
        return loaded
    if loaded is not None:
        raise AdvisorError(f"{path} is not a catalog file (expected a mapping); nothing was written")
    return {}


#: how long a save waits for another one to finish before it gives up
LOCK_TIMEOUT_S = 30.0


@contextlib.contextmanager
def file_lock(path: Path, timeout_s: float = LOCK_TIMEOUT_S):
    """An exclusive advisory lock for read-modify-write of ``path``, held on a sidecar file
    (``.NAME.lock`` beside it: the file itself is replaced by the write). POSIX `flock`, else
    Windows' `msvcrt.locking`; released when the process ends, so a crash leaves no stale lock."""
    path = Path(path)
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fh = open(path.with_name(f".{path.name}.lock"), "a+b")
    except OSError as exc:
        raise AdvisorError(f"cannot write {path}: {exc.strerror or exc}") from None
    deadline = time.monotonic() + timeout_s
    try:
        while True:
            try:
                _lock(fh)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise AdvisorError(f"{path} is being written by another advisor for more than "
                                       f"{timeout_s:g} s; nothing was written") from None
                time.sleep(0.05)
        yield
    finally:
        try:
            _unlock(fh)
        except OSError:
            pass
        fh.close()


if os.name == "nt":  # pragma: no cover - exercised on Windows only
    import msvcrt

    def _lock(fh) -> None:
        fh.seek(0)
        msvcrt.locking(fh.fileno(), msvcrt.LK_NBLCK, 1)

    def _unlock(fh) -> None:
        fh.seek(0)
        msvcrt.locking(fh.fileno(), msvcrt.LK_UNLCK, 1)
else:
    import fcntl

    def _lock(fh) -> None:
        fcntl.flock(fh.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)

    def _unlock(fh) -> None:
        fcntl.flock(fh.fileno(), fcntl.LOCK_UN)
