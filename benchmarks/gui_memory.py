"""Resident memory of the desktop app under use, measured on the real window (offscreen). Prints a
table; asserts nothing.

    QT_QPA_PLATFORM=offscreen .venv/bin/python benchmarks/gui_memory.py [--seconds 300] [--seed 1]

For ``--seconds`` it makes random input changes (hardware, model, workload, undo) while moving
through every tab, waiting for each tab's background job (recommendations, will it run) to finish and
now and then pausing two seconds as a reader would, and reports the resident set size (VmRSS) after
start-up, after the first minute, at the end and after three idle seconds, with its peak (VmHWM),
of the window's process and of the ranking process it starts (ui/process.py), and their sum.
"""

from __future__ import annotations

import argparse
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


def rss_mb(pid: int | str = "self") -> tuple[float, float]:
    """(resident now, peak resident) in MB of a process, from /proc/PID/status (nan if it is gone)."""
    now = peak = float("nan")
    try:
        text = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return now, peak
    for line in text.splitlines():
        if line.startswith("VmRSS:"):
            now = int(line.split()[1]) / 1024
        elif line.startswith("VmHWM:"):
            peak = int(line.split()[1]) / 1024
    return now, peak


def sample() -> tuple[float, float, float, float]:
    """The window's process and the ranking processes (ui/process.py), each (now, peak) in MB."""
    from ui import process

    app_now, app_peak = rss_mb()
    kids = [rss_mb(c.process.pid) for c in process._all if c.alive]
    return (app_now, app_peak, sum(k[0] for k in kids) if kids else 0.0, sum(k[1] for k in kids) if kids else 0.0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--seconds", type=float, default=300.0, help="how long to make random input changes")
    ap.add_argument("--seed", type=int, default=1)
    args = ap.parse_args()
    rng = random.Random(args.seed)

    import ui  # noqa: F401  (applies the PySide6 guard before Qt objects exist)
    from ui.app import create_app
    from ui.main_window import MainWindow
    from ui.settings import Settings
    from ui.tabs import TABS

    app = create_app([])
    win = MainWindow(settings=Settings(Path(tempfile.mkdtemp()) / "s.ini"), restore=False)
    win.resize(1400, 900)
    win.show()
    app.processEvents()
    s = win.session
    rows = [("after start-up", *sample())]
    hardware = ["rtx 4090", "rtx 3090", "h100 sxm", "m3 max", "mi300x", "rtx 5090", "l40s", "a100 80gb"]
    models = ["llama 3.1 8b", "llama 3.1 70b", "qwen3 30b a3b", "qwen3 8b", "gpt-oss 120b", "mistral small 3.2"]
    tabs = [t.name for t in TABS if t.name != "probe"]   # the probe measures this machine: not an input
    changes, t0, minute = 0, time.perf_counter(), None
    while time.perf_counter() - t0 < args.seconds:
        kind = rng.random()
        if kind < 0.15:
            s.set_inputs(hardware=rng.choice(hardware))
        elif kind < 0.25:
            s.set_inputs(model=rng.choice(models))
        elif kind < 0.35:
            s.set_inputs(batch=rng.choice([1, 2, 4, 8, 16, 32, 64]))
        elif kind < 0.40:
            s.undo()
        elif kind < 0.45:
            win.show_view(rng.choice(tabs))
        else:
            s.set_inputs(merge="prompt", prompt=rng.randint(64, 8192), output=rng.randint(16, 1024))
        changes += 1
        app.processEvents()
        view = win.current_view()
        while view is not None and view.busy and time.perf_counter() - t0 < args.seconds + 60:
            app.processEvents()
            time.sleep(0.005)
        if rng.random() < 0.03:   # now and then the user reads the screen for two seconds
            pause_until = time.perf_counter() + 2.0
            while time.perf_counter() < pause_until:
                app.processEvents()
                time.sleep(0.01)
        if minute is None and time.perf_counter() - t0 >= 60:
            minute = sample()
            rows.append((f"after 1 minute ({changes:,} changes)", *minute))
    app.processEvents()
    rows.append((f"after {args.seconds:.0f} s ({changes:,} input changes, every tab)", *sample()))
    idle_until = time.perf_counter() + 3.0
    while time.perf_counter() < idle_until:
        app.processEvents()
        time.sleep(0.01)
    rows.append(("then 3 s idle", *sample()))
    print(f"advisor-gui resident memory (QT_QPA_PLATFORM={os.environ['QT_QPA_PLATFORM']}); MB")
    print(f"{'when':<56} {'window':>8} {'peak':>6} {'ranking':>8} {'peak':>6} {'total':>7}")
    print("-" * 96)
    for when, now, peak, kid, kid_peak in rows:
        print(f"{when:<56} {now:>8.0f} {peak:>6.0f} {kid:>8.0f} {kid_peak:>6.0f} {now + kid:>7.0f}")
    win.close()


if __name__ == "__main__":
    main()
