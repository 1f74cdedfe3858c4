"""Launch lines that start: every line the recommender prints uses only flags its runtime's
argument parser has (tests/data/runtime_flags.yaml, each list with its source file and commit)
and loads a checkpoint or file listed in catalog/checkpoints.yaml, or says how to make it."""

from __future__ import annotations

import re
import shlex
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from advisor.plan.launch import gguf_file, is_gguf, launch_line, native_checkpoint
from advisor.plan.recommend import Requirements, recommend

FLAGS = yaml.safe_load((Path(__file__).parents[1] / "data" / "runtime_flags.yaml").read_text())
TRT_KV_PREFIX = "printf 'kv_cache_config:\\n  dtype: fp8\\n' > kv_fp8.yaml && "
#: (model, users, context, hardware kinds, GPUs at most): models, formats, GPU counts and runtimes
#: the recommender prints, from one user at home to a team on a multi-GPU server.
SCENARIOS = [
    ("llama-3.1-8b", 4, 16384, ("consumer",), 2),
    ("llama-3.1-8b", 1, 8192, ("apple",), 1),
    ("llama-3.3-70b", 50, 8192, ("datacenter",), 8),
    ("llama-3.1-405b", 20, 8192, ("datacenter",), 8),
    ("qwen3-30b-a3b", 8, 32768, ("workstation", "datacenter"), 4),
    ("gpt-oss-120b", 4, 16384, ("datacenter", "soc"), 4),
    ("gpt-oss-20b", 1, 8192, ("consumer", "apple"), 1),
    ("deepseek-r1", 20, 8192, ("datacenter",), 8),
    ("gemma-3-27b", 2, 8192, ("consumer", "apple"), 2),
]
#: Past one machine: multi-node tensor-parallel stages, wide EP with data-parallel attention (the slow
#: tier: two sweeps over every datacenter part at instance sizes up to 72 GPUs).
CLUSTER_SCENARIOS = [
    ("deepseek-r1", 2000, 8192, ("datacenter",), 256),
    ("llama-3.1-405b", 1000, 8192, ("datacenter",), 128),
]


def parse(line: str, family: str) -> tuple[list[str], str]:
    """(tokens after the command, the trailing comment) of a launch line; asserts the command."""
    if line.startswith(TRT_KV_PREFIX):
        assert family == "tensorrt-llm" and "--extra_llm_api_options kv_fp8.yaml" in line
        line = line[len(TRT_KV_PREFIX):]
    elif line.startswith("printf '"):
        # TensorRT-LLM's LLM-API options (attention DP, the KV dtype): only fields of its LlmArgs
        options, _, line = line.partition(" > llm_api.yaml && ")
        assert family == "tensorrt-llm" and "--extra_llm_api_options llm_api.yaml" in line, line
        fields = {x.strip().split(":")[0] for x in options[len("printf '"):].rstrip("'").split("\\n") if x.strip()}
        assert fields <= {"kv_cache_config", "dtype", "enable_attention_dp"}, options
    code, _, comment = line.partition("  #")
    tokens = shlex.split(code)
    command = FLAGS[family]["command"]
    assert tokens[:len(command)] == command, line
    return tokens[len(command):], comment


def check_line(cat, c, line: str, context: int) -> None:
    family = c.runtime.format_family
    spec = FLAGS[family]
    # a format the engine serves through an out-of-tree package (vLLM 0.28+: bitsandbytes) installs it first
    plugin = dict(c.runtime.format_plugins).get(c.quant.key)
    if plugin:
        assert line.startswith(f"pip install {plugin} && "), line
        line = line[len(f"pip install {plugin} && "):]
    assert not line.startswith("pip install"), line
    args, comment = parse(line, family)
    model_arg = args.pop(0) if args and not args[0].startswith("-") else None  # vllm serve / trtllm-serve MODEL
    values: dict[str, str] = {}
    while args:
        flag = args.pop(0)
        assert flag in spec["flags"], f"{flag} is not a {family} flag we verified: {line}"
        if flag in spec.get("switches", []):   # takes no value (--enable-expert-parallel …)
            continue
        assert args and not (args[0].startswith("-") and not re.fullmatch(r"-?\d+(\.\d+)?", args[0])), line
        values[flag] = args.pop(0)
        allowed = spec.get("values", {}).get(flag)
        assert allowed is None or values[flag] in allowed, f"{flag} {values[flag]} is not accepted: {line}"
    repos = {cp.repo: cp for cp in cat.checkpoints.values()}
    # a local path: the comment says how to make it (a checkpoint the table lacks, or a BF16 copy of a
    # narrower release for an engine that quantizes as it loads)
    made_locally = re.search(r"in catalog/checkpoints\.yaml[^#]*: make it|dequantize \S+ to BF16 into \./", comment) is not None
    if c.runtime.loads_hf_checkpoints:
        model_arg = model_arg or values.get("--model-path") or values.get("--model")
        if model_arg.startswith("./"):
            assert made_locally, f"a local checkpoint without saying how to make it: {line}"
        else:
            cp = repos[model_arg]  # a KeyError here: a repository not in catalog/checkpoints.yaml
            assert not is_gguf(cp)
            online = values.get("--quantization")
            assert c.quant.key in cp.quants or online or (c.quant.key == "f16" and "bf16" in cp.quants), line
            if online:  # online quantization starts from the model's own 16-bit release
                assert cp.quants[0] in ("bf16", "f16") and cp.model == c.model_key
    else:
        if "-m" in values:
            assert values["-m"].startswith("./") and made_locally, line
        else:
            repo, _, tag = values["-hf"].partition(":")
            cp = repos[repo]
            assert is_gguf(cp) and c.quant.key in cp.quants, line
            if "--hf-file" in values:
                assert values["--hf-file"] in cp.files and values["--hf-file"] == gguf_file(cp, c.quant)
        # llama-server divides -c among its -np slots: every user gets the whole context
        assert int(values["-c"]) == context * int(values["-np"])
    if family == "vllm":
        # every GPU of the instance: tensor parallel × data-parallel ranks × pipeline stages, in the
        # devices the engine counts (two per TPU7x chip, NeuronCores on Trainium and Inferentia)
        gpus = int(values["--tensor-parallel-size"]) * int(values.get("--data-parallel-size", 1)) \
            * int(values.get("--pipeline-parallel-size", 1))
        assert gpus == c.gpus * c.hardware.devices_per_gpu, line
    if family == "sglang":
        assert int(values["--tp-size"]) * int(values.get("--pp-size", 1)) == c.gpus, line
        if "--nnodes" in values:
            assert int(values["--nnodes"]) == c.nodes and values["--node-rank"] == "0", line
    if family == "tensorrt-llm" and c.quant.kind != "float" and model_arg and not model_arg.startswith("./"):
        cp = repos[model_arg]
        assert cp.repo.startswith("nvidia/") or cp.key.endswith(".official"), line


def _printed(cat, scenarios, across_nodes=False):
    out = []
    for model, users, context, kinds, max_gpus in scenarios:
        req = Requirements(model=cat.models[model], users=users, context_tokens=context, hardware_kinds=kinds,
                           max_gpus=max_gpus, across_nodes=across_nodes)
        seen = set()
        for c in recommend(cat, req).passing[:3000]:
            key = (c.runtime.key, c.quant.key, c.kv_dtype.key, c.gpus, c.layout, c.hardware.family)
            if key not in seen:
                seen.add(key)
                c.model_key = model
                out.append((c, req))
    return out


@pytest.fixture(scope="module")
def printed(cat):
    """Distinct (runtime, format, KV, GPU count, layout, hardware family) candidates of every scenario,
    each within one machine (CLUSTER_SCENARIOS cover the rest)."""
    return _printed(cat, SCENARIOS)


@pytest.fixture(scope="module")
def printed_clusters(cat):
    """The same for the scenarios past one machine."""
    return _printed(cat, CLUSTER_SCENARIOS, across_nodes=True)


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_every_printed_line_uses_verified_flags_and_listed_checkpoints(cat, printed, printed_clusters):
    assert len(printed) > 100
    families = set()
    for c, req in printed + printed_clusters:
        assert c.launch, f"a passing candidate without a launch line: {c.label} {c.runtime.key}"
        check_line(cat, c, c.launch, req.context)
        families.add(c.runtime.format_family)
    assert families >= {"llama.cpp", "vllm", "sglang", "tensorrt-llm", "mlx"}
    # the layouts past one group were printed and checked too
    assert any(c.nodes > 1 for c, _ in printed_clusters) and any(c.layout.ep > 1 for c, _ in printed_clusters)


@pytest.mark.slow   # the scenarios' recommendations take seconds here: the slow tier (CI runs it)
def test_lines_download_published_checkpoints_where_they_exist(cat, printed):
    lines = {(c.model_key, c.runtime.key, c.quant.key): c.launch for c, _ in printed}
    # a quantized checkpoint's repository, not --quantization on the BF16 one
    awq = lines.get(("llama-3.3-70b", "vllm", "awq-int4")) or lines.get(("llama-3.1-405b", "vllm", "awq-int4"))
    assert awq is None or "--quantization" not in awq
    fp8 = [v for (m, rt, q), v in lines.items() if m == "llama-3.3-70b" and rt == "vllm" and q == "fp8"]
    assert fp8 and all("RedHatAI/Llama-3.3-70B-Instruct-FP8-dynamic" in v for v in fp8)
    # gpt-oss ships in MXFP4: its own repository, no FP8 flag
    oss = [v for (m, rt, q), v in lines.items() if m == "gpt-oss-120b" and rt in ("vllm", "sglang") and q == "mxfp4"]
    assert oss and all("openai/gpt-oss-120b" in v and "--quantization" not in v for v in oss)
    # a split set by its first part (llama.cpp fetches the rest); a single file by its exact name
    assert any("-hf ggml-org/gpt-oss-120b-GGUF --hf-file gpt-oss-120b-mxfp4-00001-of-00003.gguf " in v
               for (m, rt, q), v in lines.items() if m == "gpt-oss-120b")
    mlx = [v for (m, rt, q), v in lines.items() if m == "llama-3.1-8b" and rt == "mlx" and q == "mlx-4bit"]
    assert mlx and all("--model mlx-community/Meta-Llama-3.1-8B-Instruct-4bit" in v for v in mlx)


def _candidate(cat, hw, runtime, quant, kv="f16", gpus=1, users=4):
    return SimpleNamespace(hardware=cat.hardware[hw], runtime=cat.runtimes[runtime], quant=cat.quants[quant],
                           kv_dtype=cat.kv_dtypes[kv], gpus=gpus, users=users)


def test_online_fp8_only_where_the_bf16_weights_fit_while_loading(cat):
    req = SimpleNamespace(model=cat.models["llama-3.1-70b"], context=8192, output_tokens=256)
    bare = {k: cp for k, cp in cat.checkpoints.items() if not k.startswith("llama-3.1-70b.fp8")}
    # 8 × H100: 141 GB of BF16 spread over 8 GPUs loads, then vLLM quantizes it to FP8
    eight = launch_line(_candidate(cat, "h100-sxm5-80gb", "vllm", "fp8", gpus=8), req, bare)
    assert "meta-llama/Llama-3.1-70B-Instruct" in eight and "--quantization fp8" in eight
    # 1 × H100: the FP8 weights (70 GB) would fit, the BF16 ones do not: no online FP8, make the checkpoint
    one = launch_line(_candidate(cat, "h100-sxm5-80gb", "vllm", "fp8"), req, bare)
    assert "--quantization" not in one and "do not fit" in one and "llm-compressor" in one
    # with the published FP8 checkpoint in the table, that is what the line downloads
    published = launch_line(_candidate(cat, "h100-sxm5-80gb", "vllm", "fp8"), req, cat.checkpoints)
    assert "RedHatAI/Meta-Llama-3.1-70B-Instruct-FP8" in published and "--quantization" not in published


def test_what_is_not_published_names_the_tool_that_makes_it(cat):
    req = SimpleNamespace(model=cat.models["qwen2.5-72b"], context=4096, output_tokens=256)
    gguf = launch_line(_candidate(cat, "rtx-4090", "llama.cpp", "q3_k_m", kv="q8_0", gpus=2), req, cat.checkpoints)
    assert gguf.startswith("llama-server -m ./Qwen2.5-72B-Instruct-Q3_K_M.gguf") and "llama-quantize Q3_K_M" in gguf
    assert "-sm layer -ts 1,1" in gguf and "-c 16384 -np 4" in gguf
    mlx = launch_line(_candidate(cat, "apple-m2-max-38c", "mlx", "mlx-8bit"), req, cat.checkpoints)
    assert "mlx_lm.convert --hf-path Qwen/Qwen2.5-72B-Instruct" in mlx and "--q-bits 8" in mlx
    trt = launch_line(_candidate(cat, "h100-sxm5-80gb", "tensorrt-llm", "awq-int4", gpus=2), req, cat.checkpoints)
    assert trt.startswith("trtllm-serve ./Qwen2.5-72B-Instruct-AWQ") and "Model Optimizer" in trt


def test_a_format_quantized_at_load_from_a_narrower_release_serves_a_bf16_copy(cat):
    """vLLM makes bitsandbytes NF4 from 16-bit weights as it loads them; no offline tool makes it, and
    since 0.28 it does so through the out-of-tree vllm-bnb-plugin, which the line installs first.
    A model released in 16 bits loads its own repository with the flag; DeepSeek-R1, released in
    block-scaled FP8, must be dequantized to a BF16 copy first, and the line serves that copy and says
    how to make it (DeepSeek's own script), not "make it with llm-compressor"."""
    req = SimpleNamespace(model=cat.models["deepseek-r1"], context=8192, output_tokens=256)
    line = launch_line(_candidate(cat, "quadro-rtx-8000", "vllm", "nf4", gpus=8), req, cat.checkpoints)
    # vLLM 0.28+ serves bitsandbytes through its out-of-tree plugin: the line installs it first
    assert line.startswith("pip install vllm-bnb-plugin && vllm serve ./DeepSeek-R1-BF16 ")
    assert "--quantization bitsandbytes" in line
    assert "ships in FP8" in line and "fp8_cast_bf16.py" in line and "llm-compressor" not in line
    check_line(cat, _candidate(cat, "quadro-rtx-8000", "vllm", "nf4", gpus=8), line, 8192)
    req = SimpleNamespace(model=cat.models["llama-3.1-8b"], context=8192, output_tokens=256)
    own = launch_line(_candidate(cat, "rtx-4090", "vllm", "nf4"), req, cat.checkpoints)
    assert own.startswith("pip install vllm-bnb-plugin && vllm serve meta-llama/Llama-3.1-8B-Instruct ")
    assert "--quantization bitsandbytes" in own
    assert "dequantize" not in own
    awq = launch_line(_candidate(cat, "rtx-4090", "vllm", "awq-int4"), req, cat.checkpoints)
    assert awq.startswith("vllm serve ")


def test_format_and_kv_flags_per_runtime(cat):
    req = SimpleNamespace(model=cat.models["llama-3.1-8b"], context=8192, output_tokens=256)
    # TensorRT-LLM: the FP8 cache through its YAML options, the Model Optimizer checkpoint
    trt = launch_line(_candidate(cat, "h100-sxm5-80gb", "tensorrt-llm", "fp8", kv="fp8"), req, cat.checkpoints)
    assert trt.startswith(TRT_KV_PREFIX) and "trtllm-serve nvidia/Llama-3.1-8B-Instruct-FP8 " in trt
    # vLLM on a T4 (no BF16): the BF16 repository at FP16
    t4 = launch_line(_candidate(cat, "t4-16gb", "vllm", "f16"), req, cat.checkpoints)
    assert "vllm serve meta-llama/Llama-3.1-8B-Instruct " in t4 and "--dtype half" in t4
    # NVFP4 on Blackwell: NVIDIA's FP4 checkpoint, no --quantization
    b200 = next(h.key for h in cat.hardware.values() if h.family == "nvidia-blackwell" and h.kind == "datacenter")
    fp4 = launch_line(_candidate(cat, b200, "vllm", "nvfp4"), req, cat.checkpoints)
    assert "vllm serve nvidia/Llama-3.1-8B-Instruct-FP4 " in fp4 and "--quantization" not in fp4
    # a configuration the support matrix refuses gets no line
    assert launch_line(_candidate(cat, "a100-sxm4-80gb", "tensorrt-llm", "fp8"), req, cat.checkpoints) == ""
    assert launch_line(_candidate(cat, "h100-sxm5-80gb", "vllm", "nvfp4"), req, cat.checkpoints) == ""


def test_checkpoint_table_is_sourced_and_consistent(cat):
    assert len(cat.checkpoints) >= 60
    models_with = {cp.model for cp in cat.checkpoints.values()}
    for key in ("llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "llama-3.3-70b", "qwen2.5-7b", "qwen2.5-14b",
                "qwen2.5-32b", "qwen2.5-72b", "qwen3-8b", "qwen3-32b", "qwen3-30b-a3b", "qwen3-235b-a22b",
                "gpt-oss-20b", "gpt-oss-120b", "deepseek-r1", "deepseek-v3", "mistral-small-24b-2501", "gemma-3-27b"):
        assert key in models_with, key
    for cp in cat.checkpoints.values():
        assert cp.model in cat.models and cp.quants and all(q in cat.quants for q in cp.quants), cp.key
        assert re.search(r"https://|\w+/\w+ \S+\.(md|py|cpp)", cp.source), cp.key
        if is_gguf(cp):  # every file listed is one of its formats (or a later part of a split set)
            assert all(any(gguf_file(cp, cat.quants[q]) == f for q in cp.quants) or re.search(r"-000\d\d-of-", f)
                       for f in cp.files), cp.key
        else:
            assert all(cat.quants[q].kind != "gguf" for q in cp.quants), cp.key
        assert "base" not in cp.repo.lower(), f"{cp.repo}: a base model, not an instruct/chat one"
    # every model in the table has its own release there (a repository the catalog lists among its names)
    # in the format it was released in (a publisher's second, FP8 release may sit beside it)
    for m in models_with:
        release = cat.models[m].native_quant or "bf16"
        own = [cp for cp in cat.checkpoints.values()
               if cp.model == m and cp.repo in cat.models[m].aliases and not is_gguf(cp)]
        assert len([cp for cp in own if cp.quants[0] in (release, "f16" if release == "bf16" else release)]) == 1, m
        assert native_checkpoint(cat.checkpoints, cat.models[m])[1] in (release, "f16"), m


def test_gguf_by_exact_file_or_by_tag_and_replicas_split_the_users(cat):
    req = SimpleNamespace(model=cat.models["deepseek-v3"], context=4096, output_tokens=256)
    tag = launch_line(_candidate(cat, "h100-sxm5-80gb", "llama.cpp", "q4_k_m", gpus=8), req, cat.checkpoints)
    assert "-hf unsloth/DeepSeek-V3-GGUF:Q4_K_M " in tag and "--hf-file" not in tag
    req = SimpleNamespace(model=cat.models["deepseek-r1"], context=4096, output_tokens=256)
    first = launch_line(_candidate(cat, "h100-sxm5-80gb", "llama.cpp", "q4_k_m", gpus=8), req, cat.checkpoints)
    assert "--hf-file DeepSeek-R1-Q4_K_M/DeepSeek-R1-Q4_K_M-00001-of-00009.gguf " in first
    # two data-parallel replicas of 10 users each: each server is sized for its share
    req = SimpleNamespace(model=cat.models["llama-3.1-8b"], context=8192, output_tokens=256)
    c = _candidate(cat, "rtx-4090", "llama.cpp", "q4_k_m", users=20)
    c.replicas = 2
    line = launch_line(c, req, cat.checkpoints)
    assert "-c 81920 -np 10 " in line and "one of 2 replicas" in line and "10 users each" in line


def test_vllm_asks_for_an_e5m2_kv_cache_before_ada(cat):
    """vLLM's "fp8" KV cache is E4M3, which its attention kernels lack on Ampere and older (issue #26431):
    the line asks for fp8_e5m2 there, and plain fp8 on Ada and newer."""
    req = SimpleNamespace(model=cat.models["llama-3.1-8b"], context=8192, output_tokens=256)
    a100 = launch_line(_candidate(cat, "a100-sxm4-80gb", "vllm", "bf16", kv="fp8"), req, cat.checkpoints)
    h100 = launch_line(_candidate(cat, "h100-sxm5-80gb", "vllm", "bf16", kv="fp8"), req, cat.checkpoints)
    assert "--kv-cache-dtype fp8_e5m2" in a100 and "--kv-cache-dtype fp8 " in h100 + " "


#: Models people ask about most (issue 29), and the formats their launch lines most often print
POPULAR = ["llama-3.1-8b", "llama-3.2-3b", "llama-3.3-70b", "qwen3-8b", "qwen3-14b", "qwen3-32b", "qwen3-30b-a3b",
           "qwen3-30b-a3b-instruct-2507", "qwen3-coder-30b-a3b-instruct", "qwen2.5-7b", "qwen2.5-14b", "qwen2.5-32b",
           "gemma-3-4b", "gemma-3-12b", "gemma-3-27b", "mistral-small-3.2-24b-2506", "qwq-32b",
           "deepseek-r1-distill-qwen-7b", "deepseek-r1-distill-qwen-32b", "glm-4.5-air", "glm-4.7-flash",
           "llama-4-scout-17b-16e", "phi-4", "nemotron-3-nano-30b-a3b", "gemma-4-e4b", "gemma-4-12b", "gemma-4-31b",
           "qwen3.5-2b"]


@pytest.mark.parametrize("quant", ["q4_k_m", "q8_0"])
def test_popular_models_download_a_published_gguf(cat, quant):
    """Issue 29: the formats most users run have a published file behind every popular model's line;
    what has none says how to make it (tested above)."""
    missing = []
    for key in POPULAR:
        req = SimpleNamespace(model=cat.models[key], context=8192, output_tokens=256)
        line = launch_line(_candidate(cat, "rtx-4090", "llama.cpp", quant, gpus=1), req, cat.checkpoints)
        if " -hf " not in line:
            missing.append(key)
    assert not missing, f"{quant}: no published GGUF listed for {missing}"


def test_popular_models_have_their_own_release_listed(cat):
    for key in POPULAR:
        assert native_checkpoint(cat.checkpoints, cat.models[key]) is not None, key


def test_a_users_own_checkpoint_reaches_the_launch_line(private_user_data):
    """Launch lines read the catalog's checkpoints, the user's overlay among them (they read only the
    shipped file before)."""
    from advisor import api
    from advisor.plan.recommend import Requirements, recommend

    def gptq_lines(cat):
        rec = recommend(cat, Requirements(model=cat.models["llama-3.1-8b"], users=4, hardware=("h100-sxm5-80gb",),
                                          runtimes=("vllm",)))
        return [c.launch for c in rec.passing if c.quant.key == "gptq-int8" and c.launch]

    shipped = gptq_lines(api.load_catalog(user=False))
    assert shipped and all("make it" in line for line in shipped)   # nobody published one: made locally
    private_user_data.mkdir(parents=True, exist_ok=True)
    (private_user_data / "my-checkpoints.yaml").write_text(
        "checkpoints:\n- key: llama-3.1-8b.gptq-mine\n  model: llama-3.1-8b\n  quants: [gptq-int8]\n"
        "  repo: my-org/Llama-3.1-8B-GPTQ-Int8\n  source: our own quantization\n", encoding="utf-8")
    mine = gptq_lines(api.load_catalog())
    assert mine and all(line.startswith("vllm serve my-org/Llama-3.1-8B-GPTQ-Int8 ") for line in mine)


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_llama_server_runs_without_its_prompt_cache_unless_prompts_share_prefixes(cat):
    """llama-server saves every finished request's KV to its host-memory prompt cache before the next
    prompt (~1.3 GB/s, on the thread that runs every slot): a recommendation turns it off
    (--cache-ram 0) where prompts share nothing, keeps it where they share prefixes, and its
    predictions follow the line. A build older than the cache gets neither the flag nor the cost."""
    from advisor.data.eras import at_date
    from advisor.model.inputs import prompt_cache_gb_s

    c = _candidate(cat, "rtx-4090", "llama.cpp", "q4_k_m", users=4)
    plain = SimpleNamespace(model=cat.models["llama-3.1-8b"], context=8192, output_tokens=256, prefix_hit=0.0)
    shared = SimpleNamespace(**{**plain.__dict__, "prefix_hit": 0.6})
    assert launch_line(c, plain, cat.checkpoints).split("  #")[0].endswith(" --cache-ram 0")
    assert "--cache-ram" not in launch_line(c, shared, cat.checkpoints)
    old = at_date(cat.runtimes.values(), cat.runtimes["llama.cpp"], "b6000")    # summer 2025
    assert prompt_cache_gb_s(old) == 0.0 and prompt_cache_gb_s(cat.runtimes["llama.cpp"]) == pytest.approx(1.3)
    c.runtime = old
    assert "--cache-ram" not in launch_line(c, plain, cat.checkpoints)
    vllm = _candidate(cat, "h100-sxm5-80gb", "vllm", "bf16", users=4)
    assert "--cache-ram" not in launch_line(vllm, plain, cat.checkpoints)
    # the recommendation's own figures are the line's: no save without prefix hits
    rec = recommend(cat, Requirements(model=cat.models["llama-3.1-8b"], users=4, hardware=("rtx-4090",),
                                      runtimes=("llama.cpp",), context_tokens=8192, prompt_tokens=2000))
    with_hits = recommend(cat, Requirements(model=cat.models["llama-3.1-8b"], users=4, hardware=("rtx-4090",),
                                            runtimes=("llama.cpp",), context_tokens=8192, prompt_tokens=2000,
                                            prefix_hit=0.0001))
    first = rec.passing[0]
    kept = next(k for k in with_hits.passing if (k.quant.key, k.kv_dtype.key, k.gpus, k.replicas)
                == (first.quant.key, first.kv_dtype.key, first.gpus, first.replicas))
    assert first.launch.split("  #")[0].endswith("--cache-ram 0") and "--cache-ram" not in kept.launch
    assert first.ttft_ms < kept.ttft_ms
