"""The support matrix (runtime × hardware generation × weight format × KV dtype, the `support`
rules in catalog/runtimes.yaml) and the defaults that follow from it (issue 16: defaults by
capability; issue 17: configurations that cannot run are refused with a reason, never printed)."""

from __future__ import annotations

import pytest

from advisor import api
from advisor.cli.main import main
from advisor.model.compat import cache_refusal, format_refusal, hardware_refusal, refusal, runtime_refusal
from advisor.model.config import configure
from advisor.model.inputs import tables_for


def test_tensorrt_llm_fp8_on_ampere_and_nvfp4_on_hopper_are_refused_with_a_reason(cat):
    trt = cat.runtimes["tensorrt-llm"]
    why = format_refusal(cat.hardware["a100-sxm4-80gb"], trt, cat.quants["fp8"])
    assert why and "TensorRT-LLM cannot run FP8" in why and "Ada" in why and "Ampere has none" in why
    why = format_refusal(cat.hardware["h100-sxm5-80gb"], trt, cat.quants["nvfp4"])
    assert why and "NVFP4" in why and "Blackwell" in why
    # no INT8 W8A8 recipe in trtllm-serve's default backend, on any generation
    assert "INT8" in format_refusal(cat.hardware["h100-sxm5-80gb"], trt, cat.quants["int8-w8a8"])
    # the same formats run a generation later
    assert format_refusal(cat.hardware["h100-sxm5-80gb"], trt, cat.quants["fp8"]) is None
    assert format_refusal(cat.hardware["b200-hgx"], trt, cat.quants["nvfp4"]) is None
    # current vLLM runs FP8 on Turing and Ampere (weight-only, FP8 Marlin; docs v0.32.0) but not on
    # Volta; NVFP4 only on Blackwell
    vllm = cat.runtimes["vllm"]
    assert format_refusal(cat.hardware["a100-sxm4-80gb"], vllm, cat.quants["fp8"]) is None
    assert format_refusal(cat.hardware["t4-16gb"], vllm, cat.quants["fp8"]) is None
    assert "Marlin" in format_refusal(cat.hardware["v100-sxm2-16gb"], vllm, cat.quants["fp8"])
    assert "Blackwell" in format_refusal(cat.hardware["h100-sxm5-80gb"], vllm, cat.quants["nvfp4"])


def test_generations_a_runtime_does_not_run_on(cat):
    assert "compute capability 7.0" in runtime_refusal(cat.hardware["p40-24gb"], cat.runtimes["vllm"])
    assert "sm75" in runtime_refusal(cat.hardware["p40-24gb"], cat.runtimes["sglang"])
    assert "Gaudi" in runtime_refusal(cat.hardware["gaudi3"], cat.runtimes["llama.cpp"])
    assert runtime_refusal(cat.hardware["gaudi3"], cat.runtimes["vllm"]) is None
    assert runtime_refusal(cat.hardware["p40-24gb"], cat.runtimes["llama.cpp"]) is None
    assert "Ampere" in runtime_refusal(cat.hardware["t4-16gb"], cat.runtimes["tensorrt-llm"])
    # BF16 needs Ampere: a T4 runs the same weights at FP16; an FP8 cache on TensorRT-LLM needs nothing newer
    assert "--dtype half" in format_refusal(cat.hardware["t4-16gb"], cat.runtimes["vllm"], cat.quants["bf16"])
    assert format_refusal(cat.hardware["t4-16gb"], cat.runtimes["vllm"], cat.quants["f16"]) is None
    assert cache_refusal(cat.hardware["t4-16gb"], cat.runtimes["vllm"], cat.kv_dtypes["bf16"])
    assert cache_refusal(cat.hardware["a100-sxm4-80gb"], cat.runtimes["tensorrt-llm"], cat.kv_dtypes["fp8"]) is None
    # every rule names its source; a rule for another vendor never applies
    for rt in cat.runtimes.values():
        assert all(rule.source and rule.reason for rule in rt.support)
    assert hardware_refusal(cat.hardware["apple-m2-max-38c"], cat.runtimes["llama.cpp"]) is None


@pytest.mark.parametrize("hardware,runtime,quant", [
    ("p40", "llama.cpp", "q4_k_m"),    # Pascal: no vLLM; llama.cpp runs it
    ("t4", "vllm", "f16"),             # Turing: vLLM, at FP16 (no BF16)
    ("v100", "vllm", "f16"),           # Volta: likewise
    ("a100 80gb sxm", "vllm", "bf16"),
    ("gaudi 3", "vllm", "bf16"),       # no llama.cpp backend for Gaudi
    ("max 1550", "vllm", "bf16"),      # Intel's datacenter GPUs serve through vLLM (XPU)
])
def test_defaults_by_capability(cat, hardware, runtime, quant):
    cfg = configure(cat, hardware=hardware, model="llama 3.1 8b")
    assert (cfg.runtime.key, cfg.quant.key) == (runtime, quant)
    cfg.check()


def test_the_sweep_the_pickers_and_predict_share_the_matrix(cat):
    t = tables_for(cat)
    i, trt, fp8 = t.hw_index["a100-sxm4-80gb"], t.rt_index["tensorrt-llm"], t.q_index["fp8"]
    assert not t.ok_hw_rt_q[i, trt, fp8] and t.ok_hw_rt_q[t.hw_index["h100-sxm5-80gb"], trt, fp8]
    a100 = cat.hardware["a100-sxm4-80gb"]
    formats = {c.key: c for c in api.formats_for(cat, cat.runtimes["tensorrt-llm"], hardware=a100)}
    assert not formats["fp8"].ok and "Ampere has none" in formats["fp8"].reason and formats["bf16"].ok
    runtimes = {c.key: c for c in api.runtimes_for(cat, cat.hardware["p40-24gb"])}
    assert not runtimes["vllm"].ok and runtimes["llama.cpp"].ok
    cfg = configure(cat, hardware="a100 80gb sxm", model="llama 3.1 8b", runtime="tensorrt-llm", quant="fp8")
    with pytest.raises(api.AdvisorError, match="Ampere has none"):
        api.predict(cat, cfg)
    assert refusal(cfg.hardware, cfg.model, cfg.quant, cfg.kv_dtype, cfg.runtime, 1)


def test_cli_predict_refuses_with_the_reason(capsys):
    code = main(["predict", "--hardware", "h100 sxm", "--model", "llama 3.1 8b", "--runtime", "tensorrt-llm",
                 "--quant", "nvfp4"])
    err = capsys.readouterr().err
    assert code != 0 and "NVFP4" in err and "Blackwell" in err and err.count("\n") == 1 and "Traceback" not in err


@pytest.mark.parametrize("hardware,model,runtime,quant", [
    ("B200", "gpt-oss 120b", "vllm", "mxfp4"),              # published in MXFP4: not upcast to BF16
    ("B200", "gpt-oss 120b", "llama.cpp", "mxfp4-moe-gguf"),  # llama.cpp's spelling of the same format
    ("H100 SXM", "DeepSeek V3", "vllm", "fp8"),              # published in FP8
    ("B200", "DeepSeek V3", "llama.cpp", "q4_k_m"),           # llama.cpp has no FP8 weights: its usual 4-bit
    ("H100 SXM", "Llama 3.1 8B", "vllm", "bf16"),             # published in 16 bits
])
def test_a_natively_quantized_model_starts_from_its_own_format(cat, hardware, model, runtime, quant):
    cfg = configure(cat, hardware=hardware, model=model, runtime=runtime, gpus=8 if "DeepSeek" in model else 1)
    assert cfg.quant.key == quant


def test_the_model_axis_refuses_formats_a_runtime_does_not_list_for_an_architecture(cat):
    """Issue 26: configurations that did not start. TensorRT-LLM's support matrix lists no AWQ for
    DeepSeek-V3/R1; SGLang's NVFP4 on CDNA3 has dense kernels only; MXFP4 needs CDNA4 under SGLang.
    The sweep never offers them, and a dense model in the same format is not refused."""
    from advisor.model.compat import model_refusal, refusal
    from advisor.model.roofline import Workload
    from advisor.model.sweep import sweep

    r1, llama = cat.models["deepseek-r1"], cat.models["llama-3.3-70b"]
    trt, sglang = cat.runtimes["tensorrt-llm"], cat.runtimes["sglang"]
    h200, mi325 = cat.hardware["h200-sxm-141gb"], cat.hardware["mi325x"]
    assert "DeepseekV3ForCausalLM" in model_refusal(h200, trt, cat.quants["awq-int4"], r1)
    assert model_refusal(h200, trt, cat.quants["fp8"], r1) is None
    assert "mixture of experts" in refusal(mi325, r1, cat.quants["nvfp4"], cat.kv_dtypes["fp8"], sglang, 8)
    assert model_refusal(mi325, sglang, cat.quants["nvfp4"], llama) is None      # dense: Petit runs it
    assert model_refusal(cat.hardware["mi355x"], sglang, cat.quants["nvfp4"], r1) is None  # the rule is CDNA3's
    assert "gfx95" in refusal(mi325, r1, cat.quants["mxfp4"], cat.kv_dtypes["fp8"], sglang, 8)
    s = sweep(cat, r1, Workload(batch=1, prompt_tokens=1000, output_tokens=100), hardware=["h200-sxm-141gb", "mi325x"],
              runtimes=["tensorrt-llm", "sglang"], quants=None, kv_dtypes=("fp8",), gpus=(8,), memory_only=True)
    combos = {(s.tables.hardware[h].key, s.tables.runtimes[r].key, s.tables.quants[q].key)
              for h, r, q in zip(s.hw, s.rt, s.q)}
    assert ("h200-sxm-141gb", "tensorrt-llm", "awq-int4") not in combos
    assert ("mi325x", "sglang", "nvfp4") not in combos and ("mi325x", "sglang", "mxfp4") not in combos
    assert ("h200-sxm-141gb", "tensorrt-llm", "fp8") in combos and ("mi325x", "sglang", "fp8") in combos


def test_the_other_configurations_of_issue_26_that_did_not_start_are_refused(cat):
    """llama.cpp's Vulkan build on an Instinct MI300X and SGLang on Strix Halo have no source that
    they run (docs/support-research.md); the refusal says why."""
    from advisor.model.compat import runtime_refusal

    assert "CDNA Instinct" in runtime_refusal(cat.hardware["mi300x"], cat.runtimes["llama.cpp-vulkan"])
    assert "gfx1151" in runtime_refusal(cat.hardware["ryzen-ai-max-plus-395"], cat.runtimes["sglang"])
    assert runtime_refusal(cat.hardware["mi300x"], cat.runtimes["sglang"]) is None
    assert runtime_refusal(cat.hardware["rx-7900-xtx"], cat.runtimes["llama.cpp-vulkan"]) is None


def test_vllm_has_no_fp8_cache_for_a_latent_attention_before_hopper(cat):
    """Before Hopper vLLM decodes DeepSeek's latent attention (MLA) with TRITON_MLA alone, whose FP8
    cache is E4M3 only, which Triton lacks below sm89 (the launch lines ask for E5M2 there, which that
    kernel does not take). So DeepSeek-R1 on A100s gets a 16-bit cache: predict refuses FP8 with the
    reason and the sweep never offers it; Llama on A100s and DeepSeek on H100s keep their FP8 cache."""
    from advisor.model.compat import model_cache_refusal
    from advisor.model.roofline import Workload
    from advisor.model.sweep import sweep

    r1, llama, vllm = cat.models["deepseek-r1"], cat.models["llama-3.3-70b"], cat.runtimes["vllm"]
    a100, h100, fp8 = cat.hardware["a100-sxm4-80gb"], cat.hardware["h100-sxm5-80gb"], cat.kv_dtypes["fp8"]
    assert "TRITON_MLA" in model_cache_refusal(a100, vllm, fp8, r1)
    assert model_cache_refusal(a100, vllm, cat.kv_dtypes["f16"], r1) is None
    assert model_cache_refusal(a100, vllm, fp8, llama) is None
    assert model_cache_refusal(h100, vllm, fp8, r1) is None
    cfg = configure(cat, hardware="a100 80gb sxm", model="deepseek-r1", runtime="vllm", quant="awq-int4", gpus=8,
                    kv_dtype="fp8")
    with pytest.raises(api.AdvisorError, match="TRITON_MLA"):
        api.predict(cat, cfg)
    s = sweep(cat, r1, Workload(batch=1, prompt_tokens=1000, output_tokens=100),
              hardware=["a100-sxm4-80gb", "h100-sxm5-80gb"], runtimes=["vllm"], quants=["awq-int4"],
              kv_dtypes=("fp8", "f16"), gpus=(8,), memory_only=True)
    combos = {(s.tables.hardware[h].key, s.tables.kv_dtypes[k].key) for h, k in zip(s.hw, s.kv)}
    assert ("a100-sxm4-80gb", "fp8") not in combos and ("a100-sxm4-80gb", "f16") in combos
    assert ("h100-sxm5-80gb", "fp8") in combos
    # the app's KV picker greys it with the reason, and moving an FP8 setup to A100s drops to 16 bits
    kvs = {c.key: c for c in api.kv_dtypes_for(cat, vllm, hardware=a100, model=r1)}
    assert not kvs["fp8"].ok and "TRITON_MLA" in kvs["fp8"].reason and kvs["f16"].ok
    on_h100 = configure(cat, hardware="h100 sxm", model="deepseek-r1", runtime="vllm", gpus=8, kv_dtype="fp8")
    moved = api.reconfigure(cat, on_h100, hardware="a100 80gb sxm").config
    assert moved.kv_dtype.key != "fp8" and moved.hardware.key == "a100-sxm4-80gb"
