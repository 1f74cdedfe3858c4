"""Giving freed memory back to the system.

A sweep allocates and frees hundreds of MB of numpy arrays on the worker threads; glibc keeps the
freed pages in its heaps rather than returning them, so the app's resident memory only grows (about
1 GB after a few minutes of use, measured by benchmarks/gui_memory.py, nearly all of it free).
`release_free_memory` hands them back (glibc's malloc_trim); the window calls it when it is idle.
Elsewhere (macOS, Windows, musl) it does nothing: their allocators return large blocks themselves.
"""

from __future__ import annotations

import ctypes
import sys
import time
from functools import lru_cache


@lru_cache(maxsize=1)
def _malloc_trim():
    if not sys.platform.startswith("linux"):
        return None
    try:
        trim = ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):   # not glibc
        return None
    trim.argtypes = [ctypes.c_size_t]
    trim.restype = ctypes.c_int
    return trim


def release_free_memory() -> float | None:
    """Return the heaps' free pages to the system; the milliseconds it took, or None where the
    allocator has no such call."""
    trim = _malloc_trim()
    if trim is None:
        return None
    t0 = time.perf_counter()
    trim(0)
    return (time.perf_counter() - t0) * 1e3
