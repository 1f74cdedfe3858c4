"""llama.cpp's 16-bit matrix products accumulate in FP16 (cuBLAS CUBLAS_COMPUTE_16F, Vulkan's f16acc
pipelines), and a GeForce die runs FP16 accumulate at twice its FP32-accumulate rate
(`Hardware.fp16_fp16acc_dense_tflops`, `Runtime.fp16_accumulate`): an F16 prompt on an RTX 4090 runs
against 330 TFLOP/s, not the 165 vLLM's FP32-accumulate products see."""

from __future__ import annotations

import numpy as np
import pytest

from advisor.model.config import configure
from advisor.model.inputs import Tables, accumulates_fp16, compute_peak
from advisor.model.predict import predict


def test_geforce_entries_carry_their_fp16_accumulate_rate(cat):
    """Every GeForce entry whose notes state the halving has the FP16-accumulate rate at twice its
    FP32-accumulate one (the RTX 2080 Ti's is NVIDIA's own 107.6); full-rate parts (Titan RTX,
    workstation and datacenter cards) have none."""
    halved = [h for h in cat.hardware.values() if "half the FP16-accumulate rate" in (h.notes or "")
              and h.key != "dgx-spark-gb10"]
    assert len(halved) >= 50
    for h in halved:
        assert h.fp16_fp16acc_dense_tflops == pytest.approx(2 * h.fp16_dense_tflops, abs=0.01), h.key
    assert cat.hardware["rtx-2080-ti"].fp16_fp16acc_dense_tflops == pytest.approx(107.6)
    for key in ("titan-rtx", "rtx-a6000", "rtx-6000-ada", "a100-sxm4-80gb", "h100-sxm5-80gb", "dgx-spark-gb10"):
        assert not cat.hardware[key].fp16_fp16acc_dense_tflops, key


def test_only_fp16_accumulating_runtimes_reach_it(cat):
    rtx4090, rtx6000 = cat.hardware["rtx-4090"], cat.hardware["rtx-6000-ada"]
    llama, old, vulkan, vllm = (cat.runtimes[k] for k in ("llama.cpp", "llama.cpp-2023", "llama.cpp-vulkan", "vllm"))
    f16, bf16, q4 = cat.quants["f16"], cat.quants["bf16"], cat.quants["q4_0"]
    assert compute_peak(rtx4090, llama, f16)[0] == pytest.approx(330.4)
    assert compute_peak(rtx4090, vulkan, f16)[0] == pytest.approx(330.4)
    # late-2023 builds dequantized every format to 16 bits for cuBLAS
    assert compute_peak(rtx4090, old, q4)[0] == pytest.approx(330.4)
    # BF16 products accumulate in FP32 (CUBLAS_COMPUTE_32F); vLLM's products always do
    assert compute_peak(rtx4090, llama, bf16)[0] == pytest.approx(165.2)
    assert compute_peak(rtx4090, vllm, f16)[0] == pytest.approx(165.2)
    # the current build's quantized prompts run int8 kernels; a full-rate card has one FP16 rate
    assert compute_peak(rtx4090, llama, q4)[1] == "int8"
    assert compute_peak(rtx6000, llama, f16)[0] == pytest.approx(rtx6000.fp16_dense_tflops)
    assert accumulates_fp16(rtx4090, llama, "fp16") and not accumulates_fp16(rtx6000, llama, "fp16")


def test_the_sweep_tables_agree_with_one_configuration(cat):
    tables = Tables(cat)
    hw, rt, q = tables.hardware, tables.runtimes, tables.quants
    picks = [("rtx-4090", "llama.cpp", "f16"), ("rtx-4090", "vllm", "f16"), ("rtx-4090", "llama.cpp-2023", "q4_0"),
             ("rtx-3090", "llama.cpp-vulkan", "f16"), ("rtx-6000-ada", "llama.cpp", "f16"), ("rtx-4090", "llama.cpp", "bf16")]
    for h_key, r_key, q_key in picks:
        i, j, k = ([x.key for x in xs].index(key) for xs, key in ((hw, h_key), (rt, r_key), (q, q_key)))
        expected = compute_peak(hw[i], rt[j], q[k])[0]
        assert np.isclose(tables.peak[i, j, k], expected), (h_key, r_key, q_key)


def test_an_f16_prompt_on_a_geforce_card_runs_faster_under_llama_cpp(cat):
    """The same F16 prompt: llama.cpp's FP16-accumulate products against vLLM's FP32-accumulate ones,
    on an RTX 4090 (a compute-bound 4,096-token prompt, the profiles as shipped)."""
    def prompt_tok_s(runtime):
        cfg = configure(cat, hardware="RTX 4090", model="Llama 3.1 8B", quant="f16", runtime=runtime, batch=1,
                        prompt=4096, output=2)
        p = predict(cat, cfg)
        assert p.compute_dtype == "fp16"
        return p.prefill_ceiling_tok_s
    # the 100 % roofline alone (no fitted fraction): twice the peak, near twice the ceiling
    assert prompt_tok_s("llama.cpp") > 1.6 * prompt_tok_s("vllm")
    # and the explanation says why the peak is twice the datasheet's usual figure
    from advisor import api

    cfg = configure(cat, hardware="RTX 4090", model="Llama 3.1 8B", quant="f16", runtime="llama.cpp", prompt=4096)
    text = api.explain(cat, cfg, predict(cat, cfg))["ttft"].text
    assert "accumulate in FP16" in text and "330 TFLOP/s, twice its FP32-accumulate 165" in text
