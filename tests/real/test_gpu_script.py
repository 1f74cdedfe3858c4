"""The GPU measuring run (`benchmarks/gpu_llama_cpp.py`) rehearsed on this machine's CPU with the
llama.cpp CI built (`--cpu-only --bin`: a tiny model, no CUDA build), so the script a lent GPU
machine runs does not rot between the sessions that have one: every step writes its file, the
server's measurement carries what llama-server said of itself, and the run ends."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.real
ROOT = Path(__file__).resolve().parents[2]
BIN = Path(os.environ.get("ADVISOR_LLAMA_CPP_BIN", "/nonexistent"))


def rehearse(script: str, tmp_path: Path) -> tuple[subprocess.CompletedProcess, Path]:
    """``benchmarks/<script>`` with ``--cpu-only --bin``: (the run, its results folder), the run
    checked to have ended well."""
    out = tmp_path / "out"
    run = subprocess.run([sys.executable, str(ROOT / "benchmarks" / script), "--src", str(tmp_path / "none"),
                          "--out", str(out), "--work", str(tmp_path / "work"), "--cpu-only", "--bin", str(BIN),
                          "--hardware", "epyc-9654"], capture_output=True, text=True, timeout=600,
                         env=dict(os.environ, HOME=str(tmp_path)))   # the probe's user data stays in the test's folder
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    return run, out


@pytest.mark.skipif(not (BIN / "llama-server").is_file(),
                    reason="ADVISOR_LLAMA_CPP_BIN is not set to a built llama.cpp (scripts/llama_cpp.sh)")
def test_the_gpu_run_rehearses_on_the_cpu(tmp_path):
    run, out = rehearse("gpu_llama_cpp.py", tmp_path)
    assert {"run.log", "probe.json", "llama-bench.json", "batched-bench.txt", "measure.json", "compare.txt"} <= \
        {p.name for p in out.iterdir()}
    assert run.stdout.rstrip().endswith("done")
    bench = json.loads((out / "llama-bench.json").read_text())
    assert {t["model_type"].split(" ", 2)[2] for t in bench} == {"F16", "Q8_0", "Q4_K - Medium"}
    measured = json.loads((out / "measure.json").read_text())
    assert measured["server"]["kind"] == "llama-server" and measured["server"]["slots"] == 2
    assert all(level["completed"] > 0 for level in measured["levels"])
    compared = (out / "compare.txt").read_text()
    assert "### bench (text), rc 0" in compared and "### measure (text), rc 0" in compared


@pytest.mark.skipif(not (BIN / "llama-bench").is_file(),
                    reason="ADVISOR_LLAMA_CPP_BIN is not set to a built llama.cpp (scripts/llama_cpp.sh)")
def test_the_long_prompt_run_rehearses_on_the_cpu(tmp_path):
    """`benchmarks/gpu_long_prompts.py` likewise: both formats at both micro-batches, compared."""
    run, out = rehearse("gpu_long_prompts.py", tmp_path)
    assert run.stdout.rstrip().endswith("done")
    bench = json.loads((out / "llama-bench.json").read_text())
    assert {(t["model_type"].split(" ", 2)[2], t["n_ubatch"]) for t in bench} == \
        {(f, u) for f in ("F16", "Q4_K - Medium") for u in (512, 2048)}
    assert "### long prompts (text), rc 0" in (out / "compare.txt").read_text()


@pytest.mark.skipif(not (BIN / "llama-bench").is_file(),
                    reason="ADVISOR_LLAMA_CPP_BIN is not set to a built llama.cpp (scripts/llama_cpp.sh)")
def test_the_formats_run_rehearses_on_the_cpu(tmp_path):
    """`benchmarks/gpu_formats.py` likewise: every format written from random blocks, loaded by
    llama.cpp under the type it was written in, benched one sequence and batched, and deleted."""
    run, out = rehearse("gpu_formats.py", tmp_path)
    assert run.stdout.rstrip().endswith("done")
    from benchmarks.gpu_formats import FORMATS

    bench = json.loads((out / "llama-bench.json").read_text())
    assert {t["model_filename"].rsplit("-", 1)[1].removesuffix(".gguf") for t in bench} == set(FORMATS)
    assert {t["n_prompt"] > 0 for t in bench} == {True, False} and len(bench) == 2 * len(FORMATS)
    # llama.cpp names each file's type from its tensors (the file type written says the same)
    assert any("Q3_K" in t["model_type"] for t in bench) and any("IQ2_XXS" in t["model_type"] for t in bench)
    assert (out / "batched-bench.txt").read_text().count("=== ") == len(FORMATS)
    assert not list((tmp_path / "work").glob("*.gguf"))     # each file deleted once measured
