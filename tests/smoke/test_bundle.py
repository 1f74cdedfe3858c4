"""The frozen app (PyInstaller one-folder bundle from packaging/build.sh), run as a user would.

Skipped unless ADVISOR_BUNDLE names the bundle folder (the one holding `advisor` and `advisor-gui`):

    packaging/build.sh
    ADVISOR_BUNDLE=dist/advisor QT_QPA_PLATFORM=offscreen .venv/bin/python -m pytest -q tests/smoke/test_bundle.py
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
_BUNDLE = os.environ.get("ADVISOR_BUNDLE", "")

pytestmark = pytest.mark.skipif(not _BUNDLE, reason="ADVISOR_BUNDLE is not set (path of a built bundle folder)")


@pytest.fixture(scope="module")
def bundle() -> Path:
    path = Path(_BUNDLE)
    if not path.is_absolute():
        path = (ROOT / path).resolve()
    for exe in ("advisor", "advisor-gui"):
        assert (path / exe).is_file() and os.access(path / exe, os.X_OK), f"no launcher {exe} in {path}"
    return path


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """No display, no project on the path: the bundle must bring everything itself."""
    env = {k: v for k, v in os.environ.items()
           if k not in ("DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM", "PYTHONPATH", "PYTHONHOME",
                        "VIRTUAL_ENV", "ADVISOR_DATA_DIR")}
    env.update(ADVISOR_DATA_DIR=str(tmp_path / "data"), HOME=str(tmp_path / "home"), **extra)
    return env


def test_bundle_gui_smoke(bundle: Path, tmp_path: Path) -> None:
    out = subprocess.run([str(bundle / "advisor-gui"), "--smoke"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=120, env=_env(tmp_path, QT_QPA_PLATFORM="offscreen"))
    assert out.returncode == 0, out.stdout + out.stderr
    assert "0 errors" in out.stdout, out.stdout + out.stderr
    # the ranking process is the frozen executable started again (multiprocessing.freeze_support)
    assert "configurations pass" in out.stdout, out.stdout + out.stderr


def test_bundle_cli_predict_finds_catalog(bundle: Path, tmp_path: Path) -> None:
    out = subprocess.run([str(bundle / "advisor"), "predict", "--hardware", "rtx 4090", "--model", "llama 3.1 8b",
                          "--json"], cwd=tmp_path, capture_output=True, text=True, timeout=60, env=_env(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    data = json.loads(out.stdout)
    assert "4090" in data["hardware"]
    assert data["decode_tok_s"] > 0


def test_bundle_cli_version(bundle: Path, tmp_path: Path) -> None:
    import advisor

    out = subprocess.run([str(bundle / "advisor"), "--version"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=60, env=_env(tmp_path))
    assert out.returncode == 0, out.stdout + out.stderr
    assert out.stdout.strip() == f"advisor {advisor.__version__}"


def test_bundle_cli_report_writes_a_pdf(bundle: Path, tmp_path: Path) -> None:
    """The PDF report from the frozen CLI: Qt's PDF writer, fonts and charts all come from the bundle."""
    env = _env(tmp_path, QT_QPA_PLATFORM="offscreen")
    helped = subprocess.run([str(bundle / "advisor"), "report", "--help"], cwd=tmp_path, capture_output=True,
                            text=True, timeout=60, env=env)
    if helped.returncode != 0:
        pytest.skip("this build has no `advisor report`")
    pdf = tmp_path / "report.pdf"
    out = subprocess.run([str(bundle / "advisor"), "report", "--hardware", "rtx 4090", "--model", "llama 3.1 8b",
                          "--out", str(pdf)], cwd=tmp_path, capture_output=True, text=True, timeout=120, env=env)
    assert out.returncode == 0, out.stdout + out.stderr
    data = pdf.read_bytes()
    assert data.startswith(b"%PDF") and len(data) > 10_000
