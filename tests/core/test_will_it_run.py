"""Will it run? (issue 26): answers an enthusiast would accept on a 4090, 2 × 3090, a 64 GB M4 Max, a
DGX Spark and a Strix Halo — no sub-4-bit weights unless asked, no upcast of a native format,
gpt-oss-120b on one 24 GB card only with its experts in system RAM and the RAM that needs, speeds
graded, what runs usably first. Sources: docs/scenario-research.md section 8 (cited per test)."""

from __future__ import annotations

import math

import pytest

from advisor.cli.main import main
from advisor.plan.recommend import bits_class, is_reference
from advisor.plan.will_it_run import FAST_FACTOR, will_it_run


def row(answer, key):
    return next(r for r in answer.rows if r.model.key == key)


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_a_4090_runs_gpt_oss_120b_only_with_its_experts_in_64_gb_of_ram(cat):
    """gpt-oss-120b (MXFP4, ~63 GB) on one 24 GB card: llama.cpp --n-cpu-moe keeps attention and the
    shared weights on the GPU and the experts in system RAM; "64GB of system ram would be minimum"
    (Reddit Wrong-Historian via cybernews.com, 2025-08: 25.6 tok/s on a 14900K; llama.cpp PR #15077).
    Never IQ1_S (the old answer): every published gpt-oss-120b GGUF is ~60+ GB."""
    hw = cat.hardware["rtx-4090"]
    enough = row(will_it_run(cat, hw, host_ram_gb=64), "gpt-oss-120b")
    assert enough.quant.key == "mxfp4-moe-gguf" and enough.mode == "experts" and "--n-cpu-moe" in enough.how
    assert enough.runs_usably and 20 <= enough.host_ram_gb <= 64 * 0.85 and enough.needs_gb <= 24.5
    short = row(will_it_run(cat, hw, host_ram_gb=32), "gpt-oss-120b")
    assert short.grade == "needs more RAM" and not short.runs_usably
    unknown = row(will_it_run(cat, hw), "gpt-oss-120b")
    assert unknown.mode == "experts" and unknown.host_ram_gb > 20   # the RAM it needs is stated


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_a_4090_keeps_the_4_bit_floor_and_grades_speeds(cat):
    """On a 4090: gpt-oss-20b, Qwen3-30B-A3B and a 32B dense model at 4-5 bits run on the GPU, fast;
    a 70B at Q4_K_M only with about half its layers in system RAM, at ~3-6 tok/s: too slow
    (specpicks, hardware-corner.net; llama.cpp PR #16649: gpt-oss-20b 167-173 tok/s on a 4090)."""
    a = will_it_run(cat, cat.hardware["rtx-4090"], host_ram_gb=64)
    for r in a.rows:
        if r.quant is not None:
            assert bits_class(r.quant) >= 4 or is_reference(r.quant, r.model), (r.model.key, r.quant.key)
            assert r.quant.key != "f32"
    for key in ("gpt-oss-20b", "qwen3-30b-a3b", "qwen3-32b"):
        r = row(a, key)
        assert r.mode == "gpu" and r.grade == "fast", (key, r.grade)
    assert row(a, "gpt-oss-20b").quant.key == "mxfp4-moe-gguf"         # its release, never upcast
    seventy = row(a, "llama-3.1-70b")
    assert seventy.mode == "offload" and seventy.grade == "too slow" and 1 < seventy.decode_tok_s < 8
    assert bits_class(seventy.quant) == 4
    # what runs usably comes first, most capable first; the grades say fast/usable at 3x/1x the floor
    usable = [r for r in a.rows if r.runs_usably]
    assert a.rows[:len(usable)] == tuple(usable)
    assert [r.model.params_total_b for r in usable] == sorted((r.model.params_total_b for r in usable), reverse=True)
    assert all(r.decode_tok_s >= FAST_FACTOR * a.min_tok_s for r in a.rows if r.grade == "fast")
    assert all(a.min_tok_s <= r.decode_tok_s < FAST_FACTOR * a.min_tok_s for r in a.rows if r.grade == "usable")
    # sub-4-bit formats only when asked
    low = will_it_run(cat, cat.hardware["rtx-4090"], model=cat.models["llama-3.1-70b"], min_bits=2)
    assert any(bits_class(r.quant) <= 2 and r.mode == "gpu" for r in low.rows)


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_two_3090s_run_a_70b_at_4_bits_usably(cat):
    """2 × RTX 3090 (48 GB): a 70B at Q4_K_M fits with 8-16k context at ~12-18 tok/s; Q8 does not fit
    (docs/scenario-research.md section 3: community llama.cpp measurements)."""
    a = will_it_run(cat, cat.hardware["rtx-3090"], gpus=2, host_ram_gb=64)
    r = row(a, "llama-3.3-70b")
    assert r.mode == "gpu" and bits_class(r.quant) == 4 and r.runs_usably and 10 <= r.decode_tok_s <= 25
    q8 = will_it_run(cat, cat.hardware["rtx-3090"], gpus=2, model=cat.models["llama-3.3-70b"])
    assert not next(x for x in q8.rows if x.quant.key == "q8_0").mode == "gpu"


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_a_64_gb_m4_max_runs_qwen3_30b_and_a_70b_slowly_but_not_gpt_oss_120b(cat):
    """A 64 GB M4 Max: the GPU may wire ~48 GB by default; Qwen3-30B-A3B (18.6 GB at Q4_K_M) runs;
    a 70B at Q4 fits with modest context; gpt-oss-120b (63.4 GB) needs the 128 GB machine
    (docs/scenario-research.md sections 1 and 8c)."""
    hw = cat.hardware_named("M4 Max 64GB")
    a = will_it_run(cat, hw)
    assert row(a, "qwen3-30b-a3b").runs_usably
    assert row(a, "gpt-oss-120b").grade == "does not fit"
    seventy = row(a, "llama-3.3-70b")
    assert seventy.mode == "gpu" and bits_class(seventy.quant) == 4 and seventy.decode_tok_s < 15
    big = will_it_run(cat, cat.hardware_named("M4 Max 128GB"))
    assert row(big, "gpt-oss-120b").runs_usably and row(big, "gpt-oss-120b").quant.key == "mxfp4-moe-gguf"


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_a_dgx_spark_runs_gpt_oss_120b_natively_and_a_dense_70b_slowly(cat):
    """DGX Spark: gpt-oss-120b in its native MXFP4 at ~33-60 tok/s on one box; a dense 70B fits but
    decodes at ~3-4 tok/s (NVIDIA/dgx-spark-playbooks issue #79; spark-arena/recipe-registry #17)."""
    a = will_it_run(cat, cat.hardware["dgx-spark-gb10"])
    oss = row(a, "gpt-oss-120b")
    assert oss.mode == "gpu" and oss.quant.key == "mxfp4-moe-gguf" and 25 <= oss.decode_tok_s <= 70
    seventy = row(a, "llama-3.3-70b")
    assert seventy.mode == "gpu" and seventy.grade == "too slow" and seventy.decode_tok_s < 10


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_a_strix_halo_gives_its_gpu_96_of_128_gb_and_runs_gpt_oss_120b(cat):
    """Ryzen AI Max+ 395 (128 GB): AMD's Variable Graphics Memory gives the GPU 96 GB (AMD blog,
    2025-07-29); gpt-oss-120b runs at ~30-52 tok/s (AMD; agledger.ai, llama.cpp Vulkan)."""
    from advisor.model.devices import usable_memory_gb

    hw = cat.hardware["ryzen-ai-max-plus-395"]
    assert usable_memory_gb(hw) == pytest.approx(128 * 2**30 / 1e9 * 0.75)
    oss = row(will_it_run(cat, hw), "gpt-oss-120b")
    assert oss.mode == "gpu" and 25 <= oss.decode_tok_s <= 70


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_will_it_run_cli_grades_and_states_the_ram(capsys):
    assert main(["will-it-run", "--hardware", "rtx 4090", "--host-ram-gb", "64"]) == 0
    out = capsys.readouterr().out
    assert "models run usably" in out and "--n-cpu-moe" in out and "64.0 GB of system RAM" in out
    assert "IQ1_S" not in out and "IQ2" not in out
    assert main(["will-it-run", "--hardware", "rtx 4090", "--model", "gpt-oss-120b", "--json"]) == 0
    import json

    doc = json.loads(capsys.readouterr().out)
    assert doc["rows"][0]["mode"] == "experts" and doc["rows"][0]["host_ram_gb"] > 20
    assert main(["will-it-run", "--hardware", "rtx 4090", "--min-tok-s", "-3"]) == 2
    assert "--min-tok-s" in capsys.readouterr().err


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_models_the_engine_cannot_split_over_the_gpus_are_named_not_listed(cat, capsys):
    """On 8 × H100 with vLLM, Qwen2.5-7B (28 heads) and Falcon-7B (71 heads) would not start: the
    listing leaves them out and says so; asked for alone, one clear line."""
    from advisor.data.errors import AdvisorError

    h100, vllm = cat.hardware["h100-sxm5-80gb"], cat.runtimes["vllm"]
    answer = will_it_run(cat, h100, vllm, 8, 4096)
    assert {"Qwen2.5 7B", "Falcon-7B"} <= set(answer.unsplit)
    assert not {r.model.key for r in answer.rows} & {"qwen2.5-7b", "falcon-7b"}
    assert any(r.model.key == "llama-3.1-8b" for r in answer.rows)
    with pytest.raises(AdvisorError, match="28 attention heads"):
        will_it_run(cat, h100, vllm, 8, 4096, cat.models["qwen2.5-7b"])
    assert main(["will-it-run", "--hardware", "h100-sxm5-80gb", "--gpus", "8", "--runtime", "vllm"]) == 0
    assert "cannot split" in capsys.readouterr().out
