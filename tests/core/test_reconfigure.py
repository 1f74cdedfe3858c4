"""api.reconfigure: what else changes when some inputs change (the policy the app applies to every
input change), tested in the core as `configure` is."""

from __future__ import annotations

import pytest

from advisor import api


@pytest.fixture(scope="module")
def base(cat):
    return api.configure(cat, hardware="rtx 4090", model="llama 3.1 8b", quant="Q4_K_M")


def test_what_still_runs_stays(cat, base):
    r = api.reconfigure(cat, base, hardware="rtx 3090", prompt=2048)
    assert r.config.hardware.key != base.hardware.key
    assert (r.config.runtime.key, r.config.quant.key, r.config.kv_dtype.key) == \
        (base.runtime.key, base.quant.key, base.kv_dtype.key)
    assert r.config.workload.prompt_tokens == 2048 and r.notices == ()


def test_a_format_the_new_runtime_cannot_load_gives_way_to_its_default(cat, base):
    r = api.reconfigure(cat, base, hardware="h100 sxm", runtime="vllm")
    assert r.config.runtime.key == "vllm"
    assert r.config.quant.key != "q4_k_m"   # GGUF K-quants do not load in vLLM
    ok = [c.key for c in api.formats_for(cat, r.config.runtime, r.config.model, hardware=r.config.hardware) if c.ok]
    assert r.config.quant.key in ok


def test_a_runtime_asked_for_that_cannot_run_is_refused_with_why(cat, base):
    with pytest.raises(api.AdvisorError) as e:
        api.reconfigure(cat, base, runtime="mlx-lm")
    assert str(e.value) == "MLX (mlx-lm) does not run on NVIDIA hardware (GeForce RTX 4090); it supports Apple"


def test_a_gpu_count_the_new_device_is_not_used_at_resets_to_one_and_says_so(cat):
    eight = api.configure(cat, hardware="h100 sxm", model="llama 3.1 70b", gpus=8)
    r = api.reconfigure(cat, eight, hardware="m3 max")
    assert r.config.gpus == 1
    assert r.notices == (f"{r.config.hardware.name}: GPU count reset to 1",)
    # a count asked for with the device is never silently changed
    with pytest.raises(api.AdvisorError):
        api.reconfigure(cat, eight, hardware="m3 max", gpus=8)


def test_a_model_whose_heads_do_not_split_over_the_gpus_steps_down_and_says_so(cat):
    """Qwen2.5-7B's 28 attention heads do not split over 8 GPUs in vLLM: choosing it on 8 H100s keeps
    the most GPUs that split them (4), with a notice; asking for 8 again is refused with why."""
    cfg = api.configure(cat, hardware="h100 sxm", model="llama 3.1 8b", runtime="vllm", gpus=8)
    r = api.reconfigure(cat, cfg, model="qwen2.5-7b")
    assert r.config.gpus == 4 and any("8 → 4" in n and "attention heads" in n for n in r.notices)
    with pytest.raises(api.AdvisorError, match="28 attention heads"):
        api.reconfigure(cat, r.config, gpus=8)
    assert api.reconfigure(cat, cfg, model="llama 3.1 70b").config.gpus == 8   # 64 heads: 8 stays


def test_the_workload_stays_within_the_context(cat, base):
    ctx = base.model.native_context
    moved = api.reconfigure(cat, base, prompt=ctx * 2)
    wl = moved.config.workload
    assert wl.prompt_tokens + wl.output_tokens + wl.depth_tokens == ctx   # the moved field stops at the limit
    assert moved.notices == (f"context limited to {ctx:,} tokens, {base.model.name}'s native context",)
    deep = api.reconfigure(cat, base, depth=ctx - base.workload.prompt_tokens - base.workload.output_tokens).config
    small = next(m for m in cat.models.values() if m.native_context < ctx // 2 and not m.is_moe)
    r = api.reconfigure(cat, deep, model=small.key)
    w2 = r.config.workload
    # after a model change the depth gives way first: prompt and output stay as they were
    assert (w2.prompt_tokens, w2.output_tokens) == (deep.workload.prompt_tokens, deep.workload.output_tokens)
    assert w2.depth_tokens + w2.prompt_tokens + w2.output_tokens == small.native_context
    assert r.notices


def test_names_and_sizes(cat, base):
    r = api.reconfigure(cat, base, hardware="M3 Max 40-core 64GB")
    assert r.config.hardware.memory_gib == 64
    assert api.reconfigure(cat, r.config, memory_gb=128).config.hardware.memory_gib == 128
    with pytest.raises(api.AdvisorError):
        api.reconfigure(cat, r.config, memory_gb=100)
    with pytest.raises(api.UnknownName):
        api.reconfigure(cat, base, hardware="rtx 9999 ultra")


def test_a_new_memory_size_keeps_the_cpu_threads(cat):
    cpu = next(h for h in cat.hardware.values() if h.kind == "cpu" and len(api.memory_options(h)) > 1)
    c = api.configure(cat, hardware=cpu.key, model="llama 3.1 8b")
    threaded = api.reconfigure(cat, c, threads=4).config
    assert threaded.hardware.threads == 4
    other = next(m for m in api.memory_options(cpu) if m != threaded.hardware.memory_gib)
    assert api.reconfigure(cat, threaded, memory_gb=other).config.hardware.threads == 4
    # another device starts on every core
    assert not api.reconfigure(cat, threaded, hardware="rtx 4090").config.hardware.threads


def test_a_gguf_files_own_mix_comes_with_it_and_stays_with_it(cat, write_gguf, tmp_path):
    path = tmp_path / "tiny.gguf"
    write_gguf(path)
    imported = api.import_model(str(path))
    cat2, imported = api.catalog_with_imported(cat, imported)
    base = api.configure(cat2, hardware="rtx 4090", model="llama 3.1 8b")
    mine = api.reconfigure(cat2, base, model=imported.model.key).config
    assert mine.quant.key == imported.quant.key and cat2.is_file_mix(mine.quant)
    back = api.reconfigure(cat2, mine, model="llama 3.1 8b").config
    assert back.quant.key != imported.quant.key   # the file's mix describes that file only
