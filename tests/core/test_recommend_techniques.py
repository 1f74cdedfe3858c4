"""recommend --allow-spec / --allow-offload (issue 18): the techniques are tried on near misses, and the
output says when one is what makes a configuration pass."""

from advisor.cli.main import main
from advisor.plan.recommend import Requirements, recommend


def test_partial_offload_makes_gpt_oss_120b_run_on_one_24_gb_card(cat):
    # 59 GiB of MXFP4_MOE weights cannot sit in 24 GB: only with most layers in host RAM (llama.cpp -ngl)
    base = dict(model=cat.model_named("gpt-oss-120b"), users=1, hardware=("rtx-3090",), max_gpus=1,
                runtimes=("llama.cpp",))
    assert recommend(cat, Requirements(**base)).n_passing == 0
    rec = recommend(cat, Requirements(**base, allow_offload=True))
    assert rec.passing
    c = rec.passing[0]
    assert c.technique.startswith("passes only with partial offload") and "-ngl" in c.technique
    layers = int(c.launch.split("-ngl ")[1].split()[0])
    assert 0 < layers < 36 and c.memory_needed_gb <= c.memory_usable_gb
    assert c.tok_s < 100   # far below the all-GPU estimate: most layers decode on the CPU


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
