"""llama.cpp's quantized CUDA kernels and the datasheet int8 peak (`advisor.model.inputs.int8_cap`).

Measured on an H100 SXM (catalog/measured/llamacpp_h100_device.md), Q4_K_M and Q8_0 prompts ran at
half the F16 rate; the H100's int8 datasheet peak had them twice as fast. The cap is 8× the FP32
rate for llama.cpp on GPUs: it binds the datacenter parts and leaves GeForce cards, whose int8
tensor peak it is, where they were."""

from __future__ import annotations

import math

import pytest

from advisor.model.config import configure
from advisor.model.inputs import Tables, compute_peak, int8_cap
from advisor.model.predict import predict
from advisor.model.roofline import Workload


def test_the_cap_binds_datacenter_parts_and_only_llama_cpp(cat):
    h100, rtx4090 = cat.hardware["h100-sxm5-80gb"], cat.hardware["rtx-4090"]
    llama, vllm = cat.runtimes["llama.cpp"], cat.runtimes["vllm"]
    q4 = cat.quants["q4_k_m"]
    peak, used, _ = compute_peak(h100, llama, q4)
    assert used == "int8" and peak == pytest.approx(8 * h100.fp32_tflops) and peak < h100.int8_dense_tops / 3
    # a GeForce card's int8 tensor peak is 8× its FP32 rate: the cap leaves it as it was
    peak_4090, _, _ = compute_peak(rtx4090, llama, q4)
    assert peak_4090 == pytest.approx(min(rtx4090.int8_dense_tops, 8 * rtx4090.fp32_tflops))
    assert peak_4090 >= 0.99 * rtx4090.int8_dense_tops
    # float formats, other engines' int8 GEMMs (CUTLASS reaches the datasheet's rate) and CPUs are untouched
    assert compute_peak(h100, llama, cat.quants["f16"])[0] == pytest.approx(h100.fp16_dense_tflops)
    assert compute_peak(h100, vllm, cat.quants["int8-w8a8"])[0] == pytest.approx(h100.int8_dense_tops)
    assert math.isinf(int8_cap(h100, vllm))
    assert math.isinf(int8_cap(next(h for h in cat.hardware.values() if h.kind == "cpu"), llama))


def test_the_sweep_tables_and_the_scalar_path_agree(cat):
    t = Tables(cat)
    for hk in ("h100-sxm5-80gb", "a100-sxm4-80gb", "rtx-4090"):
        for qk in ("q4_k_m", "q8_0", "f16"):
            h, r, q = cat.hardware[hk], cat.runtimes["llama.cpp"], cat.quants[qk]
            assert t.peak[t.hw_index[hk], t.rt_index["llama.cpp"], t.q_index[qk]] == pytest.approx(compute_peak(h, r, q)[0])


def test_quantized_prompts_on_an_h100_are_no_faster_than_f16(cat):
    # the measured order: F16 20.4k, Q8_0 10.9k, Q4_K_M 9.6k tok/s at pp512
    def pp(quant: str) -> float:
        cfg = configure(cat, hardware="h100 sxm", model="llama 3.1 8b", quant=quant, runtime="llama.cpp")
        return predict(cat, cfg.replace(workload=Workload(1, 512, 0, 0)), check_context=False).prefill_tok_s

    assert pp("q4_k_m") < pp("f16") and pp("q8_0") < pp("f16")
    assert 8_000 < pp("q4_k_m") < 13_000


# ---- a handful of sequences: llama.cpp's vector kernels (MMVQ) ---------------------------------------

def _decode(cat, hardware: str, quant: str, batch: int, runtime: str = "llama.cpp") -> float:
    cfg = configure(cat, hardware=hardware, model="llama 3.1 8b", quant=quant, runtime=runtime)
    return predict(cat, cfg.replace(workload=Workload(batch, 512, 128, 0)), check_context=False).decode_tok_s


def test_a_handful_of_quantized_sequences_pay_the_vector_kernels(cat):
    """Up to 8 sequences, llama.cpp's CUDA/HIP build multiplies quantized weights with MMVQ, which
    unpacks them again for every sequence: the step grows with the batch at about the FP32 rate.
    Measured on an H100 (llama-batched-bench, Llama 3.1 8B Q4_K_M): one sequence 3.85 ms a step,
    eight 8.36 ms, 32 sequences 10.8 ms. From 9 sequences on the tensor-core kernels (MMQ) take over."""
    from advisor.model.inputs import vector_peak

    h100, llama = cat.hardware["h100-sxm5-80gb"], cat.runtimes["llama.cpp"]
    assert vector_peak(h100, llama, True) == pytest.approx(llama.vector_peak_per_fp32 * h100.fp32_tflops)
    # 16-bit weights (cuBLAS from two sequences on), other engines, CPUs and Apple GPUs: no vector path
    assert math.isinf(vector_peak(h100, llama, False))
    assert math.isinf(vector_peak(h100, cat.runtimes["vllm"], True))
    assert math.isinf(vector_peak(next(h for h in cat.hardware.values() if h.kind == "cpu"), llama, True))
    assert math.isinf(vector_peak(next(h for h in cat.hardware.values() if h.vendor == "Apple"), llama, True))
    step_ms = {b: 1e3 / _decode(cat, "h100 sxm", "q4_k_m", b) for b in (1, 8, 9, 32)}   # per sequence
    assert step_ms[8] > 1.8 * step_ms[1]                  # measured 2.2x
    assert 7.0 < step_ms[8] < 10.0                        # measured 8.36 ms
    assert step_ms[9] < step_ms[8]                        # the tensor-core kernels from 9 on
    assert step_ms[32] < 1.5 * step_ms[8]                 # measured 1.3x
    # F16 weights run cuBLAS from two sequences on: eight cost little more than one
    assert 1 / _decode(cat, "h100 sxm", "f16", 8) < 1.5 / _decode(cat, "h100 sxm", "f16", 1)


def test_the_vector_path_is_in_the_sweep_tables_too(cat):
    from advisor.model.inputs import vector_peak

    t = Tables(cat)
    for hk in ("h100-sxm5-80gb", "rtx-4090", "m2-ultra-76c" if "m2-ultra-76c" in cat.hardware else "h100-sxm5-80gb"):
        for qk in ("q4_k_m", "f16"):
            h, r, q = cat.hardware[hk], cat.runtimes["llama.cpp"], cat.quants[qk]
            i8 = compute_peak(h, r, q)[1] == "int8"
            assert t.vector_peak[t.hw_index[hk], t.rt_index["llama.cpp"], t.q_index[qk]] == vector_peak(h, r, i8)


# ---- each format's own unpacking (catalog/measured/llamacpp_h200_formats_device.md) -------------------

def test_format_costs_apply_to_llama_cpp_int8_formats_on_nvidia_only(cat):
    from advisor.model.inputs import format_costs

    h200, llama = cat.hardware["h200-sxm-141gb"], cat.runtimes["llama.cpp"]
    q3 = cat.quants["q3_k_s"]
    cost, ops, seq_ops = format_costs(h200, llama, q3, True)
    assert (cost, ops, seq_ops) == (q3.mmq_cost, q3.mmvq_ops_per_weight, q3.mmvq_seq_ops_per_weight)
    assert cost > 1 and ops > seq_ops > 0
    amd = next(h for h in cat.hardware.values() if h.vendor == "AMD" and h.kind != "cpu")
    cpu = next(h for h in cat.hardware.values() if h.kind == "cpu")
    for args in ((amd, llama, q3, True), (cpu, llama, q3, True), (h200, cat.runtimes["vllm"], q3, True),
                 (h200, llama, q3, False)):
        cost, ops, seq_ops = format_costs(*args)
        assert cost == 1.0 and math.isnan(ops) and math.isnan(seq_ops)
    # every llama.cpp format that runs int8 on NVIDIA carries its costs (measured, or a kin's, named)
    for q in cat.quants.values():
        if q.runtimes == ("llama.cpp",) and q.compute_for("NVIDIA") == "int8":
            assert q.mmq_cost and q.mmvq_ops_per_weight and q.mmvq_seq_ops_per_weight and q.kernel_cost_source, q.key


def test_on_an_h200_unpacking_not_bytes_orders_one_sequences_decode(cat):
    """Measured on an H200 (tg128): Q4_0 343 tok/s, Q3_K_S (a quarter fewer bytes) 193, Q8_0 250,
    Q6_K (fewer bytes than Q8_0) 206. On an RTX 4090, with a fifth of the bandwidth, the bytes decide
    again: the smaller file decodes faster."""
    tg = {q: _decode(cat, "h200", q, 1) for q in ("q4_0", "q3_k_s", "q8_0", "q6_k")}
    assert tg["q4_0"] > 1.4 * tg["q3_k_s"]          # measured 1.78x
    assert tg["q6_k"] < tg["q8_0"]                  # measured 0.83x
    assert 280 < tg["q4_0"] < 400 and 150 < tg["q3_k_s"] < 230
    assert _decode(cat, "rtx 4090", "q3_k_s", 1) > _decode(cat, "rtx 4090", "q4_0", 1)
    # each further sequence adds its unpacking: Q3_K's more than Q4_0's (0.75 against 0.45 ms a sequence)
    grow = {q: 1 / _decode(cat, "h200", q, 8) - 1 / _decode(cat, "h200", q, 1) for q in ("q4_0", "q3_k_s")}
    assert grow["q3_k_s"] > grow["q4_0"] > 0


def test_a_formats_prompt_cost_slows_its_prompts_and_never_the_ceiling_below_the_estimate(cat):
    """Measured on an H200 (pp512): Q2_K 5.8k, Q4_K_M 9.4k, Q4_0 10.7k tok/s. The ceiling keeps two
    FLOPs a weight at the vector rate: it stays above every estimate and its band."""
    def pp(quant: str) -> float:
        cfg = configure(cat, hardware="h200", model="llama 3.1 8b", quant=quant, runtime="llama.cpp")
        return predict(cat, cfg.replace(workload=Workload(1, 512, 0, 0)), check_context=False).prefill_tok_s

    assert pp("q2_k") < 0.7 * pp("q4_k_m") < 0.7 * pp("q4_0")
    for q in ("q3_k_s", "q6_k", "iq1_s", "q8_0"):
        for b in (1, 4, 8):
            cfg = configure(cat, hardware="h200", model="llama 3.1 8b", quant=q, runtime="llama.cpp")
            p = predict(cat, cfg.replace(workload=Workload(b, 512, 128, 0)), check_context=False)
            assert p.decode_high_tok_s <= p.decode_ceiling_tok_s * (1 + 1e-9) and p.decode_tok_s < p.decode_ceiling_tok_s


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_the_format_costs_are_in_the_sweep_tables_too(cat):
    from advisor.model.inputs import format_costs

    t = Tables(cat)
    for hk in ("h200-sxm-141gb", "rtx-4090", "a100-sxm4-80gb"):
        for qk in ("q3_k_s", "iq2_m", "q4_k_m", "f16"):
            h, r, q = cat.hardware[hk], cat.runtimes["llama.cpp"], cat.quants[qk]
            i = (t.hw_index[hk], t.rt_index["llama.cpp"], t.q_index[qk])
            _, ops, seq_ops = format_costs(h, r, q, compute_peak(h, r, q)[1] == "int8")
            assert t.peak[i] == pytest.approx(compute_peak(h, r, q)[0])
            assert t.vector_ops[i] == pytest.approx(ops, nan_ok=True)
            assert t.vector_seq_ops[i] == pytest.approx(seq_ops, nan_ok=True)


def test_a_prediction_says_when_unpacking_not_bandwidth_sets_the_decode(cat):
    def notes(hardware: str, quant: str, batch: int = 1) -> str:
        cfg = configure(cat, hardware=hardware, model="llama 3.1 8b", quant=quant, runtime="llama.cpp")
        return " ".join(predict(cat, cfg.replace(workload=Workload(batch, 512, 128, 0)), check_context=False).notes)

    assert "unpack Q3_K_S more slowly than H200" in notes("h200", "q3_k_s")
    assert "unpack" not in notes("rtx 4090", "q3_k_s")       # there the bytes decide
    assert "unpack" not in notes("h200", "f16")               # no unpacking
    assert "unpack" not in notes("h200", "q3_k_s", 16)        # the matrix kernels past 8 sequences


def test_the_h200_formats_run_reads_back_within_its_bands(cat):
    """The raw llama-bench file of the lent H200 (benchmarks/device_runs/2026-11-28-h200-formats) through
    the importer and the comparison a user runs (`advisor compare-measured`): every dense format maps,
    and each one-sequence decode is inside its band and within 12 % (the model before the formats'
    costs had Q3_K_S at +74 %, outside)."""
    from pathlib import Path

    from advisor.fit.bench_results import read_results
    from advisor.fit.compare import Overrides, compare

    path = Path(__file__).resolve().parents[2] / "benchmarks/device_runs/2026-11-28-h200-formats/llama-bench.json"
    _tool, records = read_results(path)
    rows = compare(cat, records, Overrides(hardware="h200-sxm-141gb", model="llama-3.1-8b"))
    decode = [c for c in rows if c.record.metric == "decode_tok_s" and c.predicted is not None]
    assert len(rows) == 28 and len(decode) == 13          # MXFP4's GGUF format is experts-only: not mapped
    for c in decode:
        assert c.low <= c.record.value <= c.high and abs(c.predicted / c.record.value - 1) < 0.12, c.record
