"""Google TPUs and AWS Trainium/Inferentia (issue 29): the names people type, the runtime each runs,
launch lines that count the devices those runtimes count, and refusals that say why."""

import shlex

import pytest

from advisor.cli.main import main
from advisor.model.compat import cache_refusal, format_refusal, runtime_refusal
from advisor.model.config import default_runtime_key
from advisor.plan.recommend import Requirements, recommend

NAMES = {
    "tpu-v5e": ["TPU v5e", "v5e", "Cloud TPU v5e", "TPU v5 lite"],
    "tpu-v5p": ["TPU v5p", "v5p"],
    "tpu-v6e": ["TPU v6e", "Trillium", "v6e"],
    "tpu7x": ["TPU7x", "Ironwood"],
    "aws-inferentia2": ["Inferentia2", "Inf2"],
    "aws-trainium1": ["Trainium", "Trn1"],
    "aws-trainium2": ["Trainium2", "Trn2"],
}


@pytest.mark.parametrize("key,names", NAMES.items())
def test_names_people_type_resolve(cat, key, names):
    for name in names:
        assert cat.hardware_named(name).key == key, name


def test_each_accelerator_runs_its_vendors_vllm(cat):
    for key in ("tpu-v5e", "tpu-v6e", "tpu7x"):
        hw = cat.hardware[key]
        assert default_runtime_key(hw) == "vllm-tpu" and runtime_refusal(hw, cat.runtimes["vllm-tpu"]) is None
    for key in ("aws-inferentia2", "aws-trainium1", "aws-trainium2"):
        hw = cat.hardware[key]
        assert default_runtime_key(hw) == "vllm-neuron" and runtime_refusal(hw, cat.runtimes["vllm-neuron"]) is None
    # the GPU runtimes do not run on them, and say so
    why = runtime_refusal(cat.hardware["tpu-v6e"], cat.runtimes["vllm"])
    assert why and "Google" in why


def test_trainium3_is_refused_with_the_reason(capsys):
    assert main(["predict", "--model", "llama 3.1 8b", "--hardware", "trainium3"]) != 0
    err = capsys.readouterr().err
    assert "Trainium3" in err and "beta" in err and "Traceback" not in err


def test_formats_follow_each_generation(cat):
    rt, model = cat.runtimes["vllm-tpu"], cat.models["llama-3.3-70b"]
    v6e, v7 = cat.hardware["tpu-v6e"], cat.hardware["tpu7x"]
    # FP8 computes natively on v7x only; INT8 W8A8 on v5e/v6e only
    assert format_refusal(v6e, rt, cat.quants["fp8"], model) is not None
    assert format_refusal(v7, rt, cat.quants["fp8"], model) is None
    assert format_refusal(v6e, rt, cat.quants["int8-w8a8"], model) is None
    assert format_refusal(v7, rt, cat.quants["int8-w8a8"], model) is not None
    # Neuron serves the BF16 release only, and no FP8 cache through this launch line
    neuron, trn2 = cat.runtimes["vllm-neuron"], cat.hardware["aws-trainium2"]
    assert format_refusal(trn2, neuron, cat.quants["bf16"], model) is None
    for q in ("fp8", "nf4", "awq-int4", "int8-w8a8"):
        assert format_refusal(trn2, neuron, cat.quants[q], model) is not None, q
    assert "kv_cache_quant" in cache_refusal(trn2, neuron, cat.kv_dtypes["fp8"])


def test_mla_models_are_refused_on_vllm_tpu_with_what_they_need(cat):
    why = format_refusal(cat.hardware["tpu7x"], cat.runtimes["vllm-tpu"], cat.quants["fp8"], cat.models["deepseek-r1"])
    assert why and "NEW_MODEL_DESIGN" in why


def _tp(line: str) -> int:
    args = shlex.split(line)
    return int(args[args.index("--tensor-parallel-size") + 1])


@pytest.mark.parametrize("hardware,devices", [("tpu-v6e", 1), ("tpu7x", 2), ("aws-trainium2", 4),
                                              ("aws-inferentia2", 2)])
def test_launch_lines_count_the_devices_the_runtime_counts(cat, hardware, devices):
    req = Requirements(model=cat.models["llama-3.3-70b"], users=8, context_tokens=8192, hardware=(hardware,))
    rec = recommend(cat, req)
    best = rec.top(1)[0]
    assert best.hardware.key == hardware and best.launch.startswith("vllm serve")
    # --tensor-parallel-size counts chiplets and NeuronCores: chips × devices per chip
    assert _tp(best.launch) == best.gpus * devices
    if best.runtime.key == "vllm-neuron":
        # no paging: exactly one compiled cache slot per running sequence
        args = shlex.split(best.launch)
        assert "--no-enable-prefix-caching" in args
        assert args[args.index("--num-gpu-blocks-override") + 1] == args[args.index("--max-num-seqs") + 1]


def test_trainium2_is_calibrated_on_awss_own_measurements(cat, capsys):
    assert main(["predict", "--model", "llama 3.1 405b", "--hardware", "trainium2", "--gpus", "16",
                 "--prompt", "10000", "--output", "1500", "--json"]) == 0
    import json
    out = json.loads(capsys.readouterr().out)
    assert out["evidence"] == "measured" and out["efficiency_basis"].startswith("vllm-neuron")
    # AWS's tutorial measured 37.9 ms per token (26 tok/s) on 16 chips: the band holds it
    assert out["decode_low_tok_s"] <= 1e3 / 37.9 <= out["decode_high_tok_s"]


def test_recommend_can_be_limited_to_the_cloud_vendors(capsys):
    import json
    assert main(["recommend", "--model", "llama 3.1 8b", "--users", "10", "--vendor", "google,aws", "--top", "5",
                 "--json"]) == 0
    rows = json.loads(capsys.readouterr().out)["candidates"]
    assert rows and {r["hardware_key"].split("-")[0][:3] for r in rows} <= {"tpu", "aws"}
    assert main(["recommend", "--model", "llama 3.1 8b", "--vendor", "acme"]) != 0
    assert "Google" in capsys.readouterr().err


def test_a_model_no_format_can_carry_says_why(capsys):
    assert main(["predict", "--model", "deepseek r1", "--hardware", "tpu7x", "--gpus", "8"]) != 0
    err = capsys.readouterr().err
    assert "can load no weight format" in err and "NEW_MODEL_DESIGN" in err and "Traceback" not in err
