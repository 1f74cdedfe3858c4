"""The H200 and H100 kernel timings this project measured (`catalog/measured/kernels_h200_device.md`,
`kernels_h100_device.md`) as ceilings for the shipped calibration: an end-to-end efficiency fitted for
Hopper may not claim more of a roof than the kernels themselves reached there. A refit that does has
absorbed something else into that fraction (a wrong FLOP count, a missing overhead) and should be
looked at."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from advisor import api

ROOT = Path(__file__).resolve().parents[2]
RUNS = {"h200-sxm-141gb": ROOT / "benchmarks" / "device_runs" / "2026-11-27-h200-kernels" / "kernels.jsonl",
        "h100-sxm5-80gb": ROOT / "benchmarks" / "device_runs" / "2026-11-27-h100-kernels" / "kernels.jsonl"}
RUN = RUNS["h200-sxm-141gb"]
PEAK_TFLOPS = {"bf16": 989.4, "fp8": 1978.9}   # the catalog's H200 SXM and H100 SXM dense roofs (the same die)


def read_run(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def best_share(rows, kind):
    return max(r["tflops"] / PEAK_TFLOPS[r.get("dtype", "bf16")] for r in rows if r["kind"] == kind and "error" not in r)


@pytest.mark.parametrize("key", sorted(RUNS))
def test_the_catalog_roofs_are_the_ones_the_shares_were_taken_of(key):
    hw = api.load_catalog().hardware[key]
    assert (hw.bf16_dense_tflops, hw.fp8_dense_tflops) == (PEAK_TFLOPS["bf16"], PEAK_TFLOPS["fp8"])
    assert read_run(RUNS[key])[0]["device"].startswith("NVIDIA " + hw.name.split()[0])


@pytest.mark.parametrize("key", sorted(RUNS))
def test_hopper_profiles_claim_no_more_of_the_peak_than_the_kernels_reached(key):
    kernels = read_run(RUNS[key])
    dense, grouped = best_share(kernels, "dense"), best_share(kernels, "grouped")
    attention = max(best_share(kernels, "attention_causal"), best_share(kernels, "attention_chunk"))
    assert 0.7 < dense < 0.9 and 0.6 < grouped < 0.9 and 0.6 < attention < 0.8   # the run is the one described
    hopper = [p for p in api.load_catalog().profiles.values() if p.family == "nvidia-hopper"]
    assert len(hopper) >= 5
    for p in hopper:
        assert p.prefill_compute_fraction <= dense, p.key
        assert p.attention_compute_fraction <= attention, p.key
        if p.expert_compute_fraction is not None:
            assert p.expert_compute_fraction <= grouped, p.key


def test_the_summary_prints_every_table_of_a_run(capsys):
    spec = importlib.util.spec_from_file_location("gpu_kernels", ROOT / "benchmarks" / "gpu_kernels.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)        # no torch needed: it is imported only to measure
    mod.summary(RUN, 989.4, 1978.9, 4800)
    out = capsys.readouterr().out
    assert "NVIDIA H200" in out and "copy: 4,281 GB/s (0.89 of the datasheet)" in out
    for title in ("Dense GEMM", "Grouped-expert GEMM", "Causal prefill attention", "A 2,048-token chunk"):
        assert title in out
    # one row per shape × dtype, with the share at 1,024 tokens (llama-70b gate_up BF16: 0.80)
    assert "| llama-70b gate_up (8192 x 28672) bf16 | 0.00 |" in out and "| 0.80 |" in out
