"""Memory configurations (issue 16): a chip in the size you have, the wired limit that follows,
runtime-aware format names, and contexts beyond the native one."""

import json

import pytest

from advisor.data.catalog import memory_options, with_memory
from advisor.data.errors import AdvisorError
from advisor.model.config import ROPE_SCALING_MAX_FACTOR, configure, context_limit, quant_for
from advisor.model.devices import usable_memory_gb
from advisor.model.predict import predict

GIB = 2**30 / 1e9  # GB per GiB


def test_listed_sizes_are_sourced_and_the_default_is_the_largest(cat):
    listed = [h for h in cat.hardware.values() if h.memory_options_gib]
    assert len(listed) >= 15
    for hw in listed:
        if hw.kind == "cpu":
            # a CPU's memory is the buyer's choice: the default is a typical fill (one DIMM per
            # channel), and larger fills are options
            assert hw.memory_gib in hw.memory_options_gib and "typical" in hw.notes + hw.source or \
                "assumed" in hw.notes, hw.key
        else:
            assert max(hw.memory_options_gib) == hw.memory_gib, hw.key
        assert "memory_options_gib" in hw.notes, f"{hw.key}: the notes must cite where the sizes come from"
    assert memory_options(cat.hardware["apple-m3-max-30c"]) == (36, 96)
    assert memory_options(cat.hardware["apple-m2-ultra-76c"]) == (64, 128, 192)
    assert memory_options(cat.hardware["rtx-4090"]) == (24,)


def test_a_size_changes_memory_and_the_wired_limit_not_bandwidth(cat):
    big = cat.hardware["apple-m3-max-40c"]
    small = with_memory(big, 64)
    assert (small.key, small.memory_gib, small.bandwidth_gb_s) == (big.key, 64, big.bandwidth_gb_s)
    assert small.name == "M3 Max (40-core GPU) 64GB"
    # 128 GB keeps its measured wired limit (96 GiB); 64 GB falls to the default rule: 3/4 of 64 GiB
    assert usable_memory_gb(big) == pytest.approx(96 * GIB)
    assert small.gpu_wired_limit_gb is None and usable_memory_gb(small) == pytest.approx(48 * GIB)
    assert with_memory(big, 128) is big


@pytest.mark.parametrize("memory_gib,measured_gib", [(16, 10.67), (24, 16.0), (32, 21.33), (64, 48.0), (128, 96.0)])
def test_the_default_rule_reproduces_each_measured_wired_limit(cat, memory_gib, measured_gib):
    """apple.yaml's header lists recommendedMaxWorkingSetSize measured per RAM size (macOS <= 15); a
    chosen size drops the entry's stated limit and relies on the rule, so the rule must give them."""
    hw = with_memory(cat.hardware["apple-m4-10c"] if memory_gib <= 32 else cat.hardware["apple-m4-max-40c"],
                     memory_gib)
    if hw.gpu_wired_limit_gb is not None:  # the entry's own size: its stated value
        assert hw.gpu_wired_limit_gb == pytest.approx(measured_gib, abs=0.01)
        hw = hw.__class__(**{**hw.__dict__, "gpu_wired_limit_gb": None})
    assert usable_memory_gb(hw) / GIB == pytest.approx(measured_gib, abs=0.01)


def test_the_size_changes_fits_max_batch_and_usable_memory(cat):
    args = dict(model="Llama 3.1 70B", quant="q4_k_m", runtime="llama.cpp", prompt=4096, output=256)
    full = predict(cat, configure(cat, hardware="M3 Max 40-core", **args))
    mid = predict(cat, configure(cat, hardware="M3 Max 40-core", memory_gb=64, **args))
    low = predict(cat, configure(cat, hardware="M3 Max 40-core 48GB", **args))
    reserve = cat.runtimes["llama.cpp"].reserve_gb  # llama.cpp keeps this free of the wired limit
    assert full.usable_gb == pytest.approx(96 * GIB - reserve, rel=1e-9)
    assert mid.usable_gb == pytest.approx(48 * GIB - reserve, rel=1e-9)
    assert full.fits and mid.fits and not low.fits  # ~43 GB of Q4_K_M weights: 36 GiB usable is short
    assert full.max_batch > mid.max_batch >= 1
    assert full.decode_tok_s == pytest.approx(mid.decode_tok_s)  # same bin, same bandwidth
    assert any(n.startswith("assumed 128 GB") for n in full.notes)
    assert not any(n.startswith("assumed") and "GB" in n for n in mid.notes)


@pytest.mark.parametrize("hardware,memory_gb,message", [
    ("M3 Max 40-core", 36, "ships with 48, 64, 128 GB, not 36 GB"),
    ("M3 Max 30-core", "64GB", "ships with 36, 96 GB, not 64 GB"),
    ("rtx 4090", 48, "ships with 24 GB, not 48 GB"),
    ("M3 Max 64GB", 48, "says 64 GB but --memory-gb says 48"),
    ("M3 Max", "lots", "--memory-gb must be a size in GB"),
    ("M3 Max", -8, "positive size"),
])
def test_a_size_the_entry_does_not_offer_is_a_clear_error(cat, hardware, memory_gb, message):
    with pytest.raises(AdvisorError, match=message.replace("(", r"\(")):
        configure(cat, hardware=hardware, model="Llama 3.1 8B", memory_gb=memory_gb)


def test_unlisted_sizes_of_a_unified_memory_chip_are_accepted_up_to_its_largest(cat):
    hw = cat.hardware["apple-m1-max-32c"]  # no source for its sizes: any up to 64 GB
    assert not hw.memory_options_gib
    assert cat.hardware_named("M1 Max 32-core 32GB").memory_gib == 32
    with pytest.raises(AdvisorError, match="ships with 64 GB"):
        cat.hardware_named("M1 Max 32-core", memory_gib=96)


def _run(capsys, *argv):
    from advisor.cli.main import main

    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_cli_memory_gb_on_predict_will_it_run_and_recommend(cat, capsys):
    code, out, err = _run(capsys, "predict", "--hardware", "MacBook Pro M4 Pro", "--memory-gb", "24",
                          "--model", "qwen3 32b", "--json")
    d = json.loads(out)
    # "M4 Pro" is the base bin, 12-core CPU / 16-core GPU, since issue 29
    assert d["hardware"] == "M4 Pro (16-core GPU) 24GB" and d["usable_gb"] == pytest.approx(
        16 * GIB - cat.runtimes["llama.cpp"].reserve_gb)  # 24 GB: 2/3 wired, less llama.cpp's reserve
    code, out, err = _run(capsys, "will-it-run", "--hardware", "M3 Max 30-core", "--memory-gb", "36",
                          "--model", "llama 3.1 8b", "--json")
    assert code == 0 and json.loads(out)["hardware"] == "M3 Max (30-core GPU) 36GB"
    code, out, err = _run(capsys, "recommend", "--model", "llama 3.1 70b", "--hardware", "M3 Max 40-core",
                          "--memory-gb", "48", "--json")
    names = {c["hardware"] for c in json.loads(out)["candidates"]}
    assert names == {"M3 Max (40-core GPU) 48GB"}
    code, out, err = _run(capsys, "predict", "--hardware", "M3 Max 40-core", "--memory-gb", "36",
                          "--model", "llama 3.1 8b")
    assert code == 2 and err.count("\n") == 1 and "ships with 48, 64, 128 GB" in err and "Traceback" not in err
    code, out, err = _run(capsys, "recommend", "--model", "llama 3.1 8b", "--memory-gb", "36")
    assert code == 2 and "--memory-gb needs --hardware" in err


@pytest.mark.parametrize("runtime,text,key", [
    ("llama.cpp", "MXFP4", "mxfp4-moe-gguf"),
    ("llama.cpp", "mxfp4_moe", "mxfp4-moe-gguf"),
    ("llama.cpp", "8bit", "q8_0"),
    ("llama.cpp", "Q4_K_M", "q4_k_m"),
    ("llama.cpp (Vulkan)", "MXFP4", "mxfp4-moe-gguf"),
    ("vllm", "MXFP4", "mxfp4"),
    ("vllm", "AWQ", "awq-int4"),
    ("vllm", "GPTQ", "awq-int4"),
    ("vllm", "gptq-int8", "gptq-int8"),
    ("vllm", "w4a16", "awq-int4"),
    ("vllm", "w8a8", "int8-w8a8"),
    ("vllm", "int4", "awq-int4"),
    ("vllm", "bitsandbytes", "nf4"),
    ("sglang", "AWQ", "awq-int4"),
    ("mlx", "4bit", "mlx-4bit"),
    ("mlx", "8-bit", "mlx-8bit"),
    ("tensorrt-llm", "fp8", "fp8"),
    ("tensorrt-llm", "nvfp4", "nvfp4"),
    ("tensorrt-llm", "int4_awq", "awq-int4"),
    ("tensorrt-llm", "int8_sq", "int8-w8a8"),
])
def test_each_runtime_reads_its_own_spelling_of_formats(cat, runtime, text, key):
    assert quant_for(cat, text, cat.runtime_named(runtime)).key == key


@pytest.mark.parametrize("runtime,text,message", [
    ("llama.cpp", "FP8", "llama.cpp has no FP8 weights; Q8_0 is its 8-bit format"),
    ("llama.cpp", "AWQ", "Q4_K_M is its common 4-bit format"),
    ("mlx", "fp8", "MLX has no FP8 weights"),
    ("vllm", "q4_k_m", "GGUF formats such as Q4_K_M are llama.cpp's"),
])
def test_a_format_a_runtime_lacks_says_what_to_use(cat, runtime, text, message):
    with pytest.raises(AdvisorError, match=message):
        quant_for(cat, text, cat.runtime_named(runtime))


def test_configure_reads_the_format_for_the_runtime_in_force(cat):
    # no --runtime on an RTX 4090: llama.cpp by default, so MXFP4 is its GGUF format
    cfg = configure(cat, hardware="rtx 4090", model="gpt-oss-20b", quant="MXFP4")
    assert (cfg.runtime.key, cfg.quant.key) == ("llama.cpp", "mxfp4-moe-gguf")
    cfg = configure(cat, hardware="h100", model="gpt-oss-20b", quant="MXFP4", runtime="vllm")
    assert cfg.quant.key == "mxfp4"


def test_beyond_the_native_context_is_predicted_with_a_note(cat):
    base = dict(hardware="rtx 4090", model="Llama 2 7B", quant="q4_k_m", output=128)
    native = cat.model_named("Llama 2 7B").native_context
    assert context_limit(cat.model_named("Llama 2 7B")) == ROPE_SCALING_MAX_FACTOR * native == 16_384
    inside = predict(cat, configure(cat, prompt=native - 128, **base))
    beyond = predict(cat, configure(cat, prompt=2 * native, **base))
    assert not any("RoPE" in n for n in inside.notes)
    assert any("RoPE scaling" in n and "may lose quality" in n for n in beyond.notes)
    assert beyond.kv_gb > inside.kv_gb and beyond.ttft_ms > inside.ttft_ms
    predict(cat, configure(cat, prompt=4 * native - 128, **base))  # at the limit: computed
    with pytest.raises(AdvisorError, match="exceeds 4× Llama 2 7B's native context of 4,096"):
        predict(cat, configure(cat, prompt=4 * native, **base))


def test_serve_follows_the_same_context_rule(cat):
    from advisor.model.serving import Load, serve

    cfg = configure(cat, hardware="rtx 4090", model="Llama 2 7B", quant="q4_k_m")
    rep = serve(cat, cfg, Load(prompt_tokens=8000, output_tokens=200, concurrency=2))
    assert any("RoPE scaling" in n for n in rep.notes)
    with pytest.raises(AdvisorError, match="exceeds 4×"):
        serve(cat, cfg, Load(prompt_tokens=17_000, output_tokens=200, concurrency=2))


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_recommend_follows_the_same_context_rule(cat, capsys):
    code, out, err = _run(capsys, "recommend", "--model", "llama 2 7b", "--context", "12000", "--hardware",
                          "rtx 4090", "--json")
    doc = json.loads(out)
    assert code == 0 and doc["context_tokens"] == 12000 and "RoPE scaling" in doc["context_note"]
    code, out, err = _run(capsys, "recommend", "--model", "llama 2 7b", "--context", "20000", "--hardware", "rtx 4090")
    assert code == 2 and "exceeds 4×" in err
