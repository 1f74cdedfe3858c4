"""The CPU as a first-class device (issue 27): threads, measured rates, int8 kernels, CPU catalog
entries and their calibration from public llama.cpp results."""

import dataclasses
import subprocess
import sys

import pytest

from advisor.data.catalog import with_threads
from advisor.data.errors import AdvisorError
from advisor.fit.measurements import map_rows
from advisor.model.config import configure
from advisor.model.devices import peak_for
from advisor.model.efficiency import PERSONAL_PREFIX, efficiency_for
from advisor.model.predict import predict


def _measured_cpu(cat, **changes):
    """A CPU entry as `advisor --probe --save` writes one: measured read and GEMM rates."""
    base = dict(key="this-machine", vendor="CPU", name="This machine (Test CPU)", kind="cpu", family="cpu-x86_64",
                memory_gib=64.0, bandwidth_gb_s=40.0, fp32_tflops=0.5, int8_dense_tops=2.0, cpu_cores=8,
                core_bandwidth_gb_s=12.0, unified_memory=True, rates_measured=True, source="test")
    base.update(changes)
    return dataclasses.replace(cat.hardware["ryzen-9-7950x"], **base)


def test_threads_scale_compute_by_cores_and_bandwidth_by_what_the_cores_can_pull(cat):
    hw = _measured_cpu(cat)
    two = with_threads(hw, 2)
    assert two.fp32_tflops == pytest.approx(0.5 * 2 / 8) and two.int8_dense_tops == pytest.approx(2.0 * 2 / 8)
    assert two.bandwidth_gb_s == pytest.approx(24.0)          # 2 × 12 GB/s, below the 40 of all cores
    assert two.key == hw.key and two.name.endswith("2 threads") and two.rates_measured
    assert with_threads(hw, 8).bandwidth_gb_s == 40.0          # all cores: the whole memory system
    more = with_threads(hw, 16)
    assert more.fp32_tflops == hw.fp32_tflops and any("counted as 8" in a for a in more.assumed)


def test_threads_on_a_catalog_cpu_say_what_they_assume_and_refuse_a_gpu(cat):
    cpu = cat.hardware["ryzen-9-7950x"]
    four = with_threads(cpu, 4)
    assert four.fp32_tflops == pytest.approx(cpu.fp32_tflops / 4)
    assert four.bandwidth_gb_s == cpu.bandwidth_gb_s and any("no one-core bandwidth" in a for a in four.assumed)
    with pytest.raises(AdvisorError, match="not a CPU entry"):
        with_threads(cat.hardware["rtx-4090"], 4)
    for bad in (0, -1, 2.5, True):
        with pytest.raises(AdvisorError, match="--threads"):
            with_threads(cpu, bad)
    cfg = configure(cat, hardware="ryzen 9 7950x", model="llama 3.1 8b", runtime="llama.cpp", threads="4")
    assert cfg.hardware.name == "Ryzen 9 7950X, 4 threads"
    slow, fast = predict(cat, cfg), predict(cat, configure(cat, hardware="ryzen 9 7950x", model="llama 3.1 8b",
                                                          runtime="llama.cpp"))
    assert slow.prefill_tok_s == pytest.approx(fast.prefill_tok_s / 4, rel=0.15)


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_threads_on_the_command_line():
    def run(*args):
        return subprocess.run([sys.executable, "-m", "advisor.cli.entry", *args], capture_output=True, text=True,
                              timeout=60)

    ok = run("predict", "--hardware", "epyc 9654", "--model", "llama 3.1 8b", "--runtime", "llama.cpp", "--threads",
             "16", "--json")
    assert ok.returncode == 0, ok.stderr
    assert '"hardware": "EPYC 9654, 16 threads"' in ok.stdout
    bad = run("predict", "--hardware", "rtx 4090", "--model", "llama 3.1 8b", "--threads", "4")
    assert bad.returncode != 0 and "Traceback" not in bad.stderr
    assert bad.stderr.strip().count("\n") == 0 and "not a CPU entry" in bad.stderr


def test_a_cpu_computes_f16_through_fp32_never_at_the_bf16_rate(cat):
    cpu = cat.hardware["ryzen-9-7950x"]
    assert cpu.bf16_dense_tflops and cpu.int8_dense_tops
    assert peak_for(cpu, "fp16") == (cpu.fp32_tflops, "fp32")
    for quant, dtype in (("f16", "fp32"), ("bf16", "fp32"), ("q4_k_m", "int8"), ("q8_0", "int8")):
        p = predict(cat, configure(cat, hardware="ryzen 9 7950x", model="llama 3.1 8b", runtime="llama.cpp",
                                   quant=quant))
        assert p.compute_dtype == dtype, quant


def test_quantized_kernels_reach_their_own_share_of_the_int8_peak(cat):
    """The public CPU rows (catalog/measured/llamacpp_cpu_*) fit a CPU profile whose int8 kernels reach a
    far smaller share of their peak than the float GEMM does of its own; GPUs keep one fraction."""
    prof = cat.profiles["llama.cpp+cpu"]
    assert prof.int8_compute_fraction is not None
    assert prof.int8_compute_fraction < 0.6 * prof.prefill_compute_fraction
    assert cat.profiles["llama.cpp+nvidia"].int8_compute_fraction is None
    # the runtime's catch-all speaks for accelerators: no CPU row is in it
    assert not any(f.startswith("cpu-") for f in cat.profiles["llama.cpp"].measured_families)


def test_on_measured_rates_decode_reads_at_the_probed_bandwidth(cat):
    hw = _measured_cpu(cat)
    shipped = efficiency_for(cat.profiles, cat.runtimes["llama.cpp"], dataclasses.replace(hw, rates_measured=False))
    eff = efficiency_for(cat.profiles, cat.runtimes["llama.cpp"], hw)
    assert shipped.decode_bw_fraction < 0.8
    assert eff.decode_bw_fraction == 1.0 and eff.prefill_compute_fraction == 1.0
    assert eff.int8_compute_fraction == pytest.approx(shipped.int8_compute_fraction / shipped.prefill_compute_fraction)
    assert "measured read and GEMM rates" in eff.basis
    assert (eff.decode_low, eff.decode_high) == (shipped.decode_low, shipped.decode_high)
    # a personal profile was fitted on this machine's own figures: used as it is
    mine = dataclasses.replace(cat.profiles["llama.cpp+cpu"], key=f"{PERSONAL_PREFIX}llama.cpp+this-machine",
                               hardware="this-machine", decode_bw_fraction=0.9)
    own = efficiency_for({**cat.profiles, mine.key: mine}, cat.runtimes["llama.cpp"], hw)
    assert own.decode_bw_fraction == 0.9


def test_a_best_read_above_the_typical_one_lifts_the_band_top_and_ceiling_not_the_estimate(cat):
    """A probed machine whose memory read 40 GB/s typically and 52 at best (a shared or virtual
    machine): its decode estimate stays on the typical figure, while the band's top and the
    roofline's ceiling reach the best one (a run in a fast moment is inside the band)."""
    typical = _measured_cpu(cat)
    varied = _measured_cpu(cat, bandwidth_best_gb_s=52.0)
    eff = efficiency_for(cat.profiles, cat.runtimes["llama.cpp"], varied)
    assert eff.bandwidth_spread == pytest.approx(1.3) and "best read 1.30×" in eff.basis
    cfg = configure(cat, hardware="ryzen 9 7950x", model="llama 3.1 8b", quant="F16", runtime="llama.cpp")
    p0, p1 = (predict(cat, dataclasses.replace(cfg, hardware=h)) for h in (typical, varied))
    assert p1.decode_tok_s == pytest.approx(p0.decode_tok_s) and p1.decode_low_tok_s == pytest.approx(p0.decode_low_tok_s)
    assert p1.decode_ceiling_tok_s == pytest.approx(p0.decode_ceiling_tok_s * 1.3, rel=0.02)   # a memory-bound step
    assert p1.decode_high_tok_s > p0.decode_high_tok_s * 1.2
    assert p1.decode_high_tok_s <= p1.decode_ceiling_tok_s
    # fewer threads: the best reading moves with the typical one
    two = with_threads(varied, 2)
    assert two.bandwidth_best_gb_s == pytest.approx(24.0 * 1.3)


def test_public_cpu_rows_map_with_their_threads_and_forks_are_left_out(cat):
    head = {"params_b": "", "batch": "1", "unit": "tokens/s", "source_url": "u", "note": "", "bw_gbps_stated": "",
            "n_gpus": "1", "retrieval": "PRIMARY", "file": "t.csv"}
    rows = [dict(head, hardware="Ryzen 9 7950X", hardware_detail="16 cores; 1 socket; -t 4", model="Llama 3.1 8B",
                 quant="Q4_0", test="tg128", input_len="0", output_len="128", value="11",
                 framework="llama.cpp (CPU), llama-bench"),
            dict(head, hardware="Ryzen 9 7950X", hardware_detail="16 cores; -t 16", model="Llama 3.1 8B", quant="Q4_0",
                 test="pp512", input_len="512", output_len="0", value="130", framework="ik_llama.cpp (CPU), llama-bench"),
            dict(head, hardware="Graviton4", hardware_detail="AWS Graviton4; 64 threads, one process",
                 model="Llama 3.2 1B", quant="Q8_0", test="decode_tok_s", input_len="", output_len="", value="180",
                 framework="llama.cpp (CPU)")]
    cases, unmapped = map_rows(cat, rows)
    assert [c.hardware.name for c in cases] == ["Ryzen 9 7950X, 4 threads", "Graviton4, 64 threads"]
    assert len(unmapped) == 1 and "ik_llama.cpp is a fork" in unmapped[0].reason


def test_gguf_files_compute_in_their_own_type(tmp_path, cat):
    from advisor.data.importers import _gguf_compute_dtype
    from tests.llama_model import TINY, write_llama

    assert _gguf_compute_dtype("F16", 16.0) == {"default": "fp16"}
    assert _gguf_compute_dtype("BF16", 16.0) == {"default": "bf16"}
    assert _gguf_compute_dtype("Q4_K_M", 4.9)["CPU"] == "int8"
    path = write_llama(tmp_path / "tiny-F16.gguf", TINY, "F16")
    cfg = configure(cat, hardware="ryzen 9 7950x", model=str(path))
    assert predict(cat, cfg).compute_dtype == "fp32"   # an F16 file on a CPU: widened to FP32, not int8


def test_a_gpu_row_keeps_the_memory_size_its_detail_states(cat):
    """"8x NVIDIA A100-SXM4-40GB" is the 40 GB part (1,555 GB/s), not the 80 GB one the bare "A100 SXM4" names."""
    head = {"params_b": "", "batch": "1", "unit": "tokens/s", "source_url": "u", "note": "", "bw_gbps_stated": "",
            "n_gpus": "1", "retrieval": "PRIMARY", "file": "t.csv", "model": "Llama 3.1 8B", "quant": "BF16",
            "test": "decode_tok_s", "input_len": "128", "output_len": "128", "value": "70", "framework": "SGLang 0.5.6"}
    rows = [dict(head, hardware="A100 40GB SXM4", hardware_detail="8x NVIDIA A100-SXM4-40GB, NVLink, TP=8"),
            dict(head, hardware="A100", hardware_detail="NVIDIA A100 SXM4 (80GB)"),
            dict(head, hardware="H100", hardware_detail="H100 SXM5")]
    cases, unmapped = map_rows(cat, rows)
    assert not unmapped
    assert [c.hardware.key for c in cases] == ["a100-sxm4-40gb", "a100-sxm4-80gb", "h100-sxm5-80gb"]
