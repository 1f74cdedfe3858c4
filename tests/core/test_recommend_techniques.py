"""recommend --allow-spec / --allow-offload (issue 18): the techniques are tried on near misses, and the
output says when one is what makes a configuration pass."""

import pytest

from advisor.cli.main import main
from advisor.plan.recommend import Requirements, recommend


def test_expert_offload_makes_gpt_oss_120b_run_on_one_24_gb_card(cat):
    # 59 GiB of MXFP4_MOE weights cannot sit in 24 GB; llama.cpp keeps the experts of some layers in the
    # CPU (--n-cpu-moe, ggml-org/llama.cpp#15077: "llama-server -hf ggml-org/gpt-oss-120b-GGUF ...
    # --n-gpu-layers 99 --n-cpu-moe 3" on two 5090s), which beats moving whole layers (-ngl) for a MoE
    base = dict(model=cat.model_named("gpt-oss-120b"), users=1, hardware=("rtx-3090",), max_gpus=1,
                runtimes=("llama.cpp",))
    assert recommend(cat, Requirements(**base)).n_passing == 0
    rec = recommend(cat, Requirements(**base, allow_offload=True))
    assert rec.passing
    c = rec.passing[0]
    assert c.technique.startswith("passes only with partial offload") and "--n-cpu-moe" in c.technique
    n = int(c.launch.split("--n-cpu-moe ")[1].split()[0])
    assert 0 < n < 36 and "-ngl 99" in c.launch and c.memory_needed_gb <= c.memory_usable_gb
    assert c.tok_s < 100   # the CPU reads the routed experts of n layers from host RAM every token


def test_layer_offload_for_a_dense_model_on_a_small_card(cat):
    # Qwen3 32B at Q4_K_M (~19 GB) on a 16 GB card: whole layers go to the CPU (-ngl N < 64)
    base = dict(model=cat.model_named("Qwen3 32B"), users=1, hardware=("rtx-4060-ti-16gb",), max_gpus=1,
                runtimes=("llama.cpp",), context_tokens=4096)
    rec = recommend(cat, Requirements(**base, allow_offload=True))
    offloaded = [c for c in rec.passing if c.technique]
    assert offloaded
    c = offloaded[0]
    n = int(c.launch.split("-ngl ")[1].split()[0])
    assert 0 < n < 64 and "--n-cpu-moe" not in c.launch and f"-ngl {n}:" in c.technique


def test_moe_offload_arithmetic(cat):
    # one step costs N·a·(1/host − 1/BW) more than all on the GPU, a = the routed bytes a token reads in
    # one layer: gpt-oss-120b at batch 1 reads 4 of 128 experts per layer at 4.25 bits
    from advisor.model.config import Config
    from advisor.model.efficiency import efficiency_for
    from advisor.model.geometry import geometry
    from advisor.model.roofline import Workload
    from advisor.model.techniques import DEFAULT_HOST_BW_GB_S, HOST_BW_FRACTION, moe_offload_curve

    hw, m = cat.hardware["rtx-3090"], cat.models["gpt-oss-120b"]
    cfg = Config(hardware=hw, model=m, quant=cat.quants["mxfp4-moe-gguf"], kv_dtype=cat.kv_dtypes["f16"],
                 runtime=cat.runtimes["llama.cpp"], workload=Workload(batch=1, prompt_tokens=512, output_tokens=64))
    curve = moe_offload_curve(cat, cfg)
    g = geometry(m)
    a = g.routed_expert_params / g.moe_layers * 4.25 / 8 * 4 / 128
    bw = hw.bandwidth_gb_s * 1e9 * float(efficiency_for(cat.profiles, cfg.runtime, hw).decode_bw_fraction)
    host = DEFAULT_HOST_BW_GB_S * 1e9 * HOST_BW_FRACTION
    for n in (1, 12, 36):
        extra = 1 / curve.decode_tok_s[n] - 1 / curve.decode_tok_s[0]
        assert extra == pytest.approx(n * a * (1 / host - 1 / bw), rel=1e-9)
    # memory: every expert of n layers leaves the GPU
    assert curve.memory_gb[0] - curve.memory_gb[36] == pytest.approx(g.routed_expert_params * 4.25 / 8 / 1e9, rel=1e-9)
    assert not curve.fits[0] and curve.fits[36]


def test_offload_respects_a_speed_target_and_is_not_tried_for_many_users(cat):
    base = dict(model=cat.model_named("gpt-oss-120b"), hardware=("rtx-3090",), max_gpus=1, runtimes=("llama.cpp",),
                allow_offload=True)
    assert recommend(cat, Requirements(**base, users=1, tok_s=200)).n_passing == 0
    many = recommend(cat, Requirements(**base, users=8))
    assert many.n_passing == 0 and not any(c.technique for c in many.all()[:50])


def test_speculative_decoding_makes_a_too_slow_configuration_pass(cat):
    # FP8 on one H100: ~70 GB of weights read per token at ~3.35 TB/s is below 40 tok/s without a draft
    base = dict(model=cat.model_named("Llama 3.1 70B"), users=1, tok_s=40, hardware=("h100-sxm5-80gb",),
                runtimes=("vllm",), max_gpus=1, min_quality_rank=94, quality_floor="FP8")
    plain = recommend(cat, Requirements(**base))
    assert plain.n_passing == 0
    assert any(c.quant.key == "fp8" and [r.constraint for r in c.failures] == ["tok_s"]
               for c in plain.closest_misses(10))
    rec = recommend(cat, Requirements(**base, allow_spec=True))
    assert rec.passing
    c = rec.passing[0]
    assert c.technique.startswith("passes only with speculative decoding") and "Llama 3.2 1B" in c.technique
    assert c.tok_s >= 40 and "--speculative-config" in c.launch and '"num_speculative_tokens": 4' in c.launch


def test_cli_marks_what_a_technique_made_pass(capsys):
    assert main(["recommend", "--model", "gpt-oss-120b", "--users", "1", "--hardware", "rtx 3090", "--max-gpus", "1",
                 "--runtime", "llama.cpp", "--allow-offload"]) == 0
    out = capsys.readouterr().out
    assert "1*†" in out or "1†" in out
    assert "† #1 passes only with partial offload" in out
