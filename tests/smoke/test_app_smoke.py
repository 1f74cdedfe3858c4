"""The real app in a subprocess: --smoke, --screenshot, and the no-display path."""

from __future__ import annotations

import pytest

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def _env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM")}
    env.update(extra)
    return env


def _run(args, env, timeout=60):
    return subprocess.run([sys.executable, "-m", "ui.app", *args], cwd=ROOT, env=env, capture_output=True,
                          text=True, timeout=timeout)


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_smoke_renders_every_view(tmp_path):
    out = _run(["--smoke"], _env(QT_QPA_PLATFORM="offscreen", ADVISOR_DATA_DIR=str(tmp_path)))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "rendered 11 views" in out.stdout and "whatifs" in out.stdout and "0 errors" in out.stdout
    assert re.search(r"recommendations: [\d,]+ of [\d,]+ configurations pass", out.stdout), out.stdout   # ranked in its process


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_screenshot_writes_a_png(tmp_path):
    png = tmp_path / "shot.png"
    out = _run(["--screenshot", str(png), "--view", "curves"],
               _env(QT_QPA_PLATFORM="offscreen", ADVISOR_DATA_DIR=str(tmp_path)))
    assert out.returncode == 0, out.stdout + out.stderr
    data = png.read_bytes()
    assert data.startswith(b"\x89PNG") and len(data) > 10_000


def test_no_display_prints_one_line_and_exits_2(tmp_path):
    out = _run([], _env(ADVISOR_DATA_DIR=str(tmp_path)), timeout=30)
    assert out.returncode == 2
    lines = (out.stdout + out.stderr).strip().splitlines()
    assert len(lines) == 1 and "advisor --help" in lines[0]
    assert "Traceback" not in out.stderr
