"""Deployment files (advisor/plan/exports.py) read by the tools that run them: compose files validate
against the compose-spec schema, llm-d values against the chart's own schema and field names, shell
scripts parse with `bash -n`, and every command line in any of them uses only flags its program's
argument parser has (tests/data/runtime_flags.yaml, each list with its source file and commit).
Plans are built by hand: one machine of H100s, two nodes of H200s with attention DP and EP, a
disaggregated plan, one consumer GPU, AMD Instinct."""

from __future__ import annotations

import json
import re
import shlex
import subprocess
from functools import lru_cache
from pathlib import Path

import jsonschema
import pytest
import yaml

from advisor.data.errors import AdvisorError
from advisor.plan import exports
from advisor.plan.deployment import Deployment, Layout, Pool, Predicted

DATA = Path(__file__).parents[1] / "data"
FLAGS = yaml.safe_load((DATA / "runtime_flags.yaml").read_text())
#: The container fields the llm-d chart reads (charts/llm-d-modelservice/templates/_helpers.tpl
#: `.container.*` at the commit in tests/data/schemas/README.md): its schema leaves containers open.
CHART_CONTAINER_FIELDS = {"name", "image", "extraConfig", "securityContext", "imagePullPolicy", "modelCommand",
                          "command", "args", "env", "ports", "livenessProbe", "readinessProbe", "startupProbe",
                          "resources", "volumeMounts", "mountModelVolume", "workingDir", "stdin", "tty"}

PREDICTED = Predicted(ttft_ms=412.0, itl_ms=23.5, throughput_tok_s=2760.0, power_kw=9.4, users=64,
                      prompt_tokens=2048, output_tokens=512)
VLLM_70B = ("vllm serve meta-llama/Llama-3.3-70B-Instruct --tensor-parallel-size 8 --max-model-len 16384 "
            "--max-num-seqs 64 --kv-cache-dtype auto --gpu-memory-utilization 0.9")


def plan(runtime: str, *pools: Pool, **kw) -> Deployment:
    fields = dict(model_key="llama-3.3-70b", model_name="Llama 3.3 70B", checkpoint="meta-llama/Llama-3.3-70B-Instruct",
                  runtime_key=runtime, runtime_name=runtime, quant_key="bf16", kv_dtype_key="f16",
                  context_tokens=16384, memory_fraction=0.9, pools=pools, predicted=PREDICTED,
                  network="InfiniBand NDR 400 Gb/s per GPU")
    fields.update(kw)
    return Deployment(**fields)


def h100_tp8() -> Deployment:
    return plan("vllm", Pool("both", "h100-sxm5-80gb", "H100 SXM5 80GB", Layout(tp=8), launch=VLLM_70B))


def r1_sglang(runtime: str = "sglang", launch: str | None = None) -> Deployment:
    """DeepSeek-R1 on 2 × 8 H200: SGLang's TP 16 with attention DP 16 and EP 16 (tp-size counts every GPU)."""
    line = launch if launch is not None else (
        "python -m sglang.launch_server --model-path deepseek-ai/DeepSeek-R1 --tp-size 16 --context-length 32768 "
        "--max-running-requests 256 --kv-cache-dtype auto --mem-fraction-static 0.88")
    return plan(runtime, Pool("both", "h200-sxm-141gb", "H200 SXM 141GB", Layout(tp=1, dp_attention=16, ep=16),
                              launch=line),
                model_key="deepseek-r1", model_name="DeepSeek R1", checkpoint="deepseek-ai/DeepSeek-R1",
                quant_key="fp8", context_tokens=32768)


def disaggregated(runtime: str = "vllm") -> Deployment:
    """A prefill pool of 2 × 8 H200 and a decode pool of 4 × 8 H200."""
    line = {"vllm": VLLM_70B,
            "sglang": "python -m sglang.launch_server --model-path meta-llama/Llama-3.3-70B-Instruct --tp-size 8 "
                      "--context-length 16384 --max-running-requests 64 --kv-cache-dtype auto --mem-fraction-static 0.88",
            "tensorrt-llm": "trtllm-serve meta-llama/Llama-3.3-70B-Instruct --tp_size 8 --max_seq_len 16384 "
                            "--max_batch_size 64 --kv_cache_free_gpu_memory_fraction 0.9"}[runtime]
    return plan(runtime,
                Pool("prefill", "h200-sxm-141gb", "H200 SXM 141GB", Layout(tp=8), replicas=2, launch=line),
                Pool("decode", "h200-sxm-141gb", "H200 SXM 141GB", Layout(tp=8), replicas=4, launch=line))


def llama_cpp_one_gpu() -> Deployment:
    line = ("llama-server -hf bartowski/Meta-Llama-3.1-8B-Instruct-GGUF --hf-file Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf "
            "-c 32768 -np 4 -ngl 99 -fa on -ctk q8_0 -ctv q8_0")
    return plan("llama.cpp", Pool("both", "rtx-4090", "GeForce RTX 4090", Layout(), gpus_per_node=1, launch=line),
                model_key="llama-3.1-8b", model_name="Llama 3.1 8B",
                checkpoint="bartowski/Meta-Llama-3.1-8B-Instruct-GGUF", quant_key="q4_k_m", kv_dtype_key="q8_0",
                context_tokens=8192, predicted=Predicted(ttft_ms=95.0, itl_ms=8.2, throughput_tok_s=410.0,
                                                         power_kw=0.41, users=4))


def mi300x() -> Deployment:
    return plan("vllm", Pool("both", "mi300x", "Instinct MI300X", Layout(tp=8), launch=VLLM_70B))


# ---------------------------------------------------------------- checking command lines

def program(argv: list[str]) -> str:
    """The runtime_flags.yaml entry whose command starts ``argv`` (python3 is the images' python; a
    program may be named by its path in an image, /app/llama-server)."""
    first = argv[0].rsplit("/", 1)[-1]
    argv = ["python" if first == "python3" else first] + argv[1:]
    hits = [k for k, spec in FLAGS.items() if argv[:len(spec["command"])] == spec["command"]]
    assert hits, f"no verified flag list for {argv[:3]}"
    return max(hits, key=lambda k: len(FLAGS[k]["command"]))


def check_argv(argv: list[str]) -> dict[str, list]:
    """Every flag of ``argv`` is one its parser has, with the number of values it takes and an accepted
    value; returns {flag: [value, …]} (a switch maps to [None]). Follows mpirun into the program it runs."""
    name = program(argv)
    spec = FLAGS[name]
    rest = list(argv[len(spec["command"]):])
    if name == "mpirun":   # mpirun's options, then the program it runs (TensorRT-LLM's wrapper)
        seen = {}
        while rest[0].startswith("-"):
            flag = rest.pop(0)
            assert flag in spec["flags"], f"{flag} is not an mpirun flag we verified"
            seen[flag] = [rest.pop(0)]
        assert rest[0] in FLAGS["tensorrt-llm"]["wrappers"], rest[0]
        return seen | check_argv(rest[1:])
    values: dict[str, list] = {}
    if rest and not rest[0].startswith("-"):
        assert name in ("vllm", "tensorrt-llm"), f"a positional argument to {name}: {argv}"
        values["<model>"] = [rest.pop(0)]
    while rest:
        flag = rest.pop(0)
        assert flag in spec["flags"], f"{flag} is not a {name} flag we verified: {shlex.join(argv)}"
        assert flag not in values or flag in ("--prefill", "--decode"), f"{flag} twice: {shlex.join(argv)}"
        if flag in spec.get("switches", []):
            values.setdefault(flag, []).append(None)
            continue
        n = spec.get("nargs", {}).get(flag, 1)
        got = rest[:n]
        del rest[:n]
        assert len(got) == n and not any(v.startswith("-") for v in got), f"{flag} needs {n} value(s): {argv}"
        allowed = spec.get("values", {}).get(flag)
        assert allowed is None or got[0] in allowed, f"{flag} {got[0]} is not accepted by {name}"
        values.setdefault(flag, []).append(got[0] if n == 1 else got)
    return values


SHELL_WORDS = ("#", "if ", "else", "fi", "until ", "export ", ": ", "set ", "wait", "exit", "START_RANK=", "printf ",
               "pip install ")


def script_commands(text: str) -> list[list[str]]:
    """The command lines of a shell script (engine, router, ray, mpirun), env assignments and `exec`,
    `&` taken off; shell plumbing (tests, waits, variable checks, the YAML printf) skipped."""
    out = []
    for line in text.splitlines()[1:]:
        line = line.strip()
        if not line or line.startswith(SHELL_WORDS):
            continue
        words = shlex.split(line.removesuffix(" &"))
        while words and (words[0] == "exec" or re.fullmatch(r"[A-Z_]+=\S*", words[0])):
            words.pop(0)
        out.append(words)
    return out


def bench_lines(text: str) -> list[list[str]]:
    return [shlex.split(line.split("#", 1)[1].strip().removesuffix(" &"))
            for line in text.splitlines() if line.startswith("#   vllm bench serve")]


def check_header(dep: Deployment, text: str, kind: str) -> None:
    """The plan's figures and a benchmark command at the top, before any content."""
    head = text.split("\nset -euo pipefail")[0] if kind == "launch" else text.split("\nname:")[0].split("\nmultinode:")[0]
    lines = head.splitlines()
    assert all(line.startswith("#") for line in lines), "the header is all comments"
    assert dep.model_name in head and dep.checkpoint in head
    p = dep.predicted
    assert f"TTFT {exports._num(p.ttft_ms)} ms" in head and f"ITL {exports._num(p.itl_ms)} ms" in head
    assert f"{exports._num(p.throughput_tok_s)} output tok/s" in head and f"power {exports._num(p.power_kw)} kW" in head
    for pool in dep.pools:
        assert pool.layout.text() in head and pool.hardware_name in head
    benches = bench_lines(text)
    assert benches, "no benchmark command"
    total_users = 0
    for argv in benches:
        got = check_argv(argv)
        assert got["--model"] == [dep.checkpoint]
        assert got["--random-input-len"] == [str(p.prompt_tokens)]
        assert got["--random-output-len"] == [str(p.output_tokens)]
        assert re.fullmatch(r"http://HOST\d*:\d+", got["--base-url"][0])
        if p.rps:
            assert "--request-rate" in got and "--max-concurrency" not in got
        else:
            users = int(got["--max-concurrency"][0])
            assert int(got["--num-prompts"][0]) == 10 * users
            total_users += users
    if not p.rps:
        assert total_users >= (p.users or 1)   # replicas split the users, none is left out


@lru_cache(maxsize=None)
def validator(name: str) -> jsonschema.Draft7Validator:
    return jsonschema.Draft7Validator(json.loads((DATA / "schemas" / name).read_text()))


@pytest.fixture(scope="module", autouse=True)
def _read_once():
    """The schemas and the shipped catalog tables the exports read, read before the tests time."""
    for name in ("compose-spec.json", "llm-d-modelservice.values.schema.json"):
        validator(name)
    exports.render(h100_tp8(), "llm-d")


def compose_doc(dep: Deployment) -> tuple[dict, str]:
    files = exports.render(dep, "compose")
    assert list(files) == ["compose.yaml"]
    text = files["compose.yaml"]
    doc = yaml.safe_load(text)
    errors = [e.message for e in validator("compose-spec.json").iter_errors(doc)]
    assert not errors, errors
    check_header(dep, text, "compose")
    return doc, text


def values_doc(dep: Deployment) -> tuple[dict, str]:
    files = exports.render(dep, "llm-d")
    assert list(files) == ["values.yaml"]
    text = files["values.yaml"]
    doc = yaml.safe_load(text)
    errors = [f"{list(e.path)}: {e.message}" for e in validator("llm-d-modelservice.values.schema.json").iter_errors(doc)]
    assert not errors, errors
    schema = validator("llm-d-modelservice.values.schema.json").schema
    for role in ("decode", "prefill"):
        assert set(doc[role]) <= set(schema["properties"][role]["properties"]), doc[role].keys()
        for c in doc[role].get("containers", []):
            assert set(c) <= CHART_CONTAINER_FIELDS, set(c) - CHART_CONTAINER_FIELDS
            for argv in container_commands(doc, c, role):
                check_argv(argv)
    check_header(dep, text, "llm-d")
    return doc, text


def container_commands(doc: dict, c: dict, role: str) -> list[list[str]]:
    """The command lines a container runs, as the chart writes them (templates/_helpers.tpl)."""
    if c["modelCommand"] == "vllmServe":
        # vllmServeModelCommand: vllm serve <model> --port P --tensor-parallel-size T … --served-model-name N, args
        par = doc[role]["parallelism"]
        port = 8200 if role == "decode" and doc["routing"]["proxy"]["enabled"] else 8000
        argv = ["vllm", "serve", doc["modelArtifacts"]["uri"].removeprefix("hf://"), "--port", str(port)]
        if par["tensor"] > 1:
            argv += ["--tensor-parallel-size", str(par["tensor"])]
        if par["data"] > 1:
            argv += ["--data-parallel-size", str(par["data"])]
        if par["dataLocal"] > 1:
            argv += ["--data-parallel-size-local", str(par["dataLocal"])]
        return [argv + ["--served-model-name", doc["modelArtifacts"]["name"]] + c["args"]]
    if c["command"][:2] == ["/bin/bash", "-c"]:
        script = c["args"][0]
        assert subprocess.run(["bash", "-n"], input=script, text=True).returncode == 0
        return script_commands("#!\n" + script)
    return [c["command"] + c["args"]]


def launch_files(dep: Deployment) -> dict[str, str]:
    files = exports.render(dep, "launch")
    for name, text in files.items():
        assert name.endswith(".sh") and text.startswith("#!/usr/bin/env bash\n")
        bash = subprocess.run(["bash", "-n"], input=text, text=True, capture_output=True)
        assert bash.returncode == 0, (name, bash.stderr)
        check_header(dep, text, "launch")
        for argv in script_commands(text):
            check_argv(argv)
    return files


def engine_lines(text: str, command: str) -> list[dict[str, list]]:
    return [check_argv(argv) for argv in script_commands(text) if shlex.join(argv).startswith(command)]


def one_line_error(excinfo) -> str:
    message = str(excinfo.value)
    assert message and "\n" not in message
    return message


# ---------------------------------------------------------------- compose

def test_compose_one_h100_machine_reserves_its_gpus_and_serves_the_plan():
    doc, text = compose_doc(h100_tp8())
    assert doc["name"] == "advisor-llama-3-3-70b" and list(doc["services"]) == ["engine-0"]
    svc = doc["services"]["engine-0"]
    assert svc["image"] == "vllm/vllm-openai:latest" and svc["ipc"] == "host"
    assert svc["deploy"]["resources"]["reservations"]["devices"] == [
        {"driver": "nvidia", "device_ids": [str(i) for i in range(8)], "capabilities": ["gpu"]}]
    assert svc["ports"] == ["8000:8000"] and svc["environment"]["HF_TOKEN"] == "${HF_TOKEN:-}"
    assert svc["volumes"] == ["${HOME}/.cache/huggingface:/root/.cache/huggingface"]
    got = check_argv(svc["entrypoint"])
    # the launch line's own flags are kept, the placement flags written once, from the layout
    assert got["<model>"] == ["meta-llama/Llama-3.3-70B-Instruct"] and got["--max-model-len"] == ["16384"]
    assert got["--tensor-parallel-size"] == ["8"] and got["--port"] == ["8000"] and got["--host"] == ["0.0.0.0"]
    assert bench_lines(text)[0][bench_lines(text)[0].index("--base-url") + 1] == "http://HOST:8000"


def test_a_format_served_through_a_plugin_installs_it_before_the_engine():
    """vLLM 0.28+ serves bitsandbytes through vllm-bnb-plugin: the recommender's line installs it first
    (`Runtime.format_plugins`), and every export runs that install before the engine, whose flags stay
    its parser's."""
    line = "pip install vllm-bnb-plugin && " + VLLM_70B + " --quantization bitsandbytes"
    dep = plan("vllm", Pool("both", "h100-sxm5-80gb", "H100 SXM5 80GB", Layout(tp=8), launch=line), quant_key="nf4")
    doc, _ = compose_doc(dep)
    entry = doc["services"]["engine-0"]["entrypoint"]
    assert entry[:2] == ["/bin/bash", "-c"]
    install, engine = entry[2].split(" && ")
    assert install == "pip install vllm-bnb-plugin" and engine.startswith("exec vllm serve ")
    got = check_argv(shlex.split(engine.removeprefix("exec ")))
    assert got["--quantization"] == ["bitsandbytes"] and got["--tensor-parallel-size"] == ["8"]
    script = "\n".join(launch_files(dep).values())
    assert "pip install vllm-bnb-plugin" in script
    assert script.index("pip install vllm-bnb-plugin") < script.index("vllm serve ")
    values, _ = values_doc(dep)   # the chart's schema holds; the engine runs as a custom command
    assert "pip install vllm-bnb-plugin && exec vllm serve " in yaml.safe_dump(values)


def test_compose_on_amd_passes_the_rocm_devices():
    doc, _ = compose_doc(mi300x())
    svc = doc["services"]["engine-0"]
    assert svc["image"] == "vllm/vllm-openai-rocm:latest"
    assert svc["devices"] == ["/dev/kfd", "/dev/dri"] and svc["group_add"] == ["video"]
    assert svc["environment"]["HIP_VISIBLE_DEVICES"] == "0,1,2,3,4,5,6,7" and "deploy" not in svc


def test_compose_packs_replicas_on_their_own_gpus_and_splits_the_benchmark():
    dep = plan("vllm", Pool("both", "h100-sxm5-80gb", "H100 SXM5 80GB", Layout(tp=2), replicas=4,
                            launch=VLLM_70B.replace("--tensor-parallel-size 8", "--tensor-parallel-size 2")))
    doc, text = compose_doc(dep)
    services = doc["services"]
    ids = [s["deploy"]["resources"]["reservations"]["devices"][0]["device_ids"] for s in services.values()]
    assert ids == [["0", "1"], ["2", "3"], ["4", "5"], ["6", "7"]]
    assert [s["ports"][0] for s in services.values()] == ["8000:8000", "8001:8000", "8002:8000", "8003:8000"]
    assert all(check_argv(s["entrypoint"])["--tensor-parallel-size"] == ["2"] for s in services.values())
    assert [b[b.index("--max-concurrency") + 1] for b in bench_lines(text)] == ["16"] * 4   # 64 users over 4


def test_compose_disaggregated_sglang_on_one_node_routes_through_sglang_router():
    line = ("python -m sglang.launch_server --model-path meta-llama/Llama-3.3-70B-Instruct --tp-size 4 "
            "--context-length 16384 --max-running-requests 64 --kv-cache-dtype auto --mem-fraction-static 0.88")
    dep = plan("sglang", Pool("prefill", "h200-sxm-141gb", "H200 SXM 141GB", Layout(tp=4), launch=line),
               Pool("decode", "h200-sxm-141gb", "H200 SXM 141GB", Layout(tp=4), launch=line))
    doc, text = compose_doc(dep)
    assert list(doc["services"]) == ["prefill-0", "decode-0", "router"]
    prefill = check_argv(doc["services"]["prefill-0"]["entrypoint"])
    assert prefill["--disaggregation-mode"] == ["prefill"] and prefill["--tp-size"] == ["4"]
    router = check_argv(doc["services"]["router"]["entrypoint"])
    assert router["--prefill"] == [["http://prefill-0:30000", "8998"]] and router["--decode"] == ["http://decode-0:30000"]
    assert doc["services"]["router"]["depends_on"] == ["prefill-0", "decode-0"]
    assert "--base-url http://HOST:8090" in text


def test_compose_refuses_what_one_machine_cannot_hold():
    with pytest.raises(AdvisorError) as spans_nodes:
        exports.render(r1_sglang(), "compose")
    assert "llm-d" in one_line_error(spans_nodes) and "launch" in str(spans_nodes.value)
    with pytest.raises(AdvisorError) as too_many:
        exports.render(disaggregated(), "compose")     # 48 GPUs
    assert "48 GPUs" in one_line_error(too_many)


# ---------------------------------------------------------------- llm-d

def test_llmd_colocated_vllm_lets_the_chart_write_the_parallel_flags():
    doc, _ = values_doc(h100_tp8())
    assert doc["multinode"] is False and doc["accelerator"] == {"type": "nvidia"}
    assert doc["modelArtifacts"]["uri"] == "hf://meta-llama/Llama-3.3-70B-Instruct"
    assert doc["modelArtifacts"]["size"] == "150Gi"    # 131 GiB of BF16 weights + 10 %, to tens of GiB
    assert doc["prefill"] == {"create": False, "replicas": 0}
    decode = doc["decode"]
    assert decode["replicas"] == 1 and decode["parallelism"] == {"tensor": 8, "data": 1, "dataLocal": 1, "workers": 1}
    c = decode["containers"][0]
    assert c["modelCommand"] == "vllmServe" and "--tensor-parallel-size" not in c["args"]   # the chart adds it
    assert c["resources"]["limits"] == {"nvidia.com/gpu": "8"} == c["resources"]["requests"]
    assert check_argv(container_commands(doc, c, "decode")[0])["--tensor-parallel-size"] == ["8"]


def test_llmd_two_node_sglang_runs_a_leader_worker_set_with_its_rank_from_lws():
    doc, _ = values_doc(r1_sglang())
    assert doc["multinode"] is True
    decode = doc["decode"]
    assert decode["parallelism"]["workers"] == 2 and decode["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "8"}
    [argv] = container_commands(doc, decode["containers"][0], "decode")
    got = check_argv(argv)
    assert got["--tp-size"] == ["16"] and got["--dp-size"] == ["16"] and got["--ep-size"] == ["16"]
    assert got["--enable-dp-attention"] == [None]
    assert got["--nnodes"] == ["${LWS_GROUP_SIZE}"] and got["--node-rank"] == ["${LWS_WORKER_INDEX}"]
    assert got["--dist-init-addr"] == ["${LWS_LEADER_ADDRESS}:20000"]
    assert doc["modelArtifacts"]["size"] == "690Gi"   # 627 GiB of FP8 weights + 10 %


def test_llmd_disaggregated_vllm_runs_both_pools_with_nixl_behind_the_routing_sidecar():
    doc, _ = values_doc(disaggregated())
    assert doc["routing"]["proxy"]["enabled"] is True
    assert doc["prefill"]["replicas"] == 2 and doc["decode"]["replicas"] == 4
    for role in ("prefill", "decode"):
        c = doc[role]["containers"][0]
        assert c["image"] == "ghcr.io/llm-d/llm-d-cuda:latest"
        got = check_argv(container_commands(doc, c, role)[0])
        assert got["--kv-transfer-config"] == ['{"kv_connector":"NixlConnector","kv_role":"kv_both"}']
        assert {e["name"] for e in c["env"]} == {"VLLM_NIXL_SIDE_CHANNEL_HOST", "VLLM_NIXL_SIDE_CHANNEL_PORT"}
    # the chart's ports: prefill on servicePort, decode on the sidecar's targetPort
    assert doc["prefill"]["containers"][0]["ports"][0]["containerPort"] == 8000
    assert doc["decode"]["containers"][0]["ports"][0]["containerPort"] == 8200


def test_llmd_on_amd_asks_for_amd_gpus():
    doc, _ = values_doc(mi300x())
    assert doc["accelerator"] == {"type": "amd"}
    assert doc["decode"]["containers"][0]["resources"]["limits"] == {"amd.com/gpu": "8"}


def test_llmd_vllm_data_parallel_across_nodes_starts_headless_workers():
    dep = r1_sglang("vllm", launch=("vllm serve deepseek-ai/DeepSeek-R1 --tensor-parallel-size 16 --max-model-len 32768 "
                                    "--max-num-seqs 256 --kv-cache-dtype auto --gpu-memory-utilization 0.9"))
    doc, _ = values_doc(dep)
    assert doc["decode"]["parallelism"] == {"tensor": 1, "data": 16, "dataLocal": 8, "workers": 2}
    leader, worker = container_commands(doc, doc["decode"]["containers"][0], "decode")
    assert "--headless" not in check_argv(leader) and check_argv(worker)["--headless"] == [None]
    assert check_argv(worker)["--data-parallel-start-rank"] == ["${START_RANK}"]


# ---------------------------------------------------------------- launch

def test_launch_one_node_plan_is_one_script():
    files = launch_files(h100_tp8())
    assert list(files) == ["launch.sh"]
    [serve] = engine_lines(files["launch.sh"], "vllm serve")
    assert serve["--tensor-parallel-size"] == ["8"] and "--distributed-executor-backend" not in serve


def test_launch_two_node_sglang_gives_each_node_its_rank():
    files = launch_files(r1_sglang())
    assert list(files) == ["node0.sh", "node1.sh"]
    for rank, name in enumerate(files):
        [line] = engine_lines(files[name], "python -m sglang.launch_server")
        assert line["--nnodes"] == ["2"] and line["--node-rank"] == [str(rank)]
        assert line["--dist-init-addr"] == ["${NODE0_ADDR}:20000"]
        assert line["--tp-size"] == ["16"] and line["--dp-size"] == ["16"] and line["--ep-size"] == ["16"]
        assert ': "${NODE0_ADDR:?' in files[name]   # the address must be given


def test_launch_vllm_across_nodes_data_parallel_or_ray():
    dp = r1_sglang("vllm", launch=("vllm serve deepseek-ai/DeepSeek-R1 --tensor-parallel-size 16 --max-model-len 32768 "
                                   "--kv-cache-dtype auto --gpu-memory-utilization 0.9"))
    files = launch_files(dp)
    [head] = engine_lines(files["node0.sh"], "vllm serve")
    [worker] = engine_lines(files["node1.sh"], "vllm serve")
    assert head["--data-parallel-size"] == ["16"] and head["--data-parallel-size-local"] == ["8"]
    assert head["--enable-expert-parallel"] == [None] and "--headless" not in head and head["--port"] == ["8000"]
    assert worker["--headless"] == [None] and worker["--data-parallel-start-rank"] == ["8"] and "--port" not in worker
    assert worker["--data-parallel-address"] == ["${NODE0_ADDR}"]
    # TP 16 across two nodes: a Ray cluster first
    tp = plan("vllm", Pool("both", "h100-sxm5-80gb", "H100 SXM5 80GB", Layout(tp=16),
                           launch=VLLM_70B.replace("8 ", "16 ", 1)))
    files = launch_files(tp)
    assert engine_lines(files["node0.sh"], "ray start")[0]["--head"] == [None]
    assert engine_lines(files["node0.sh"], "vllm serve")[0]["--distributed-executor-backend"] == ["ray"]
    assert engine_lines(files["node1.sh"], "ray start")[0]["--address"] == ["${NODE0_ADDR}:6379"]
    assert engine_lines(files["node1.sh"], "vllm serve") == []


@pytest.mark.parametrize("runtime", ["vllm", "sglang"])
def test_launch_disaggregated_gives_each_pool_its_nodes_and_a_router(runtime):
    files = launch_files(disaggregated(runtime))
    assert sorted(files) == sorted([f"prefill-node{i}.sh" for i in range(2)] + [f"decode-node{i}.sh" for i in range(4)]
                                   + ["router.sh"])
    engine = "vllm serve" if runtime == "vllm" else "python -m sglang.launch_server"
    for name, text in files.items():
        if name == "router.sh":
            continue
        [line] = engine_lines(text, engine)
        role = name.split("-")[0]
        if runtime == "vllm":
            assert line["--kv-transfer-config"] and f'VLLM_NIXL_SIDE_CHANNEL_HOST="${{{role.upper()}_NODE' in text
        else:
            assert line["--disaggregation-mode"] == [role]
    router = files["router.sh"]
    [argv] = script_commands(router)
    got = check_argv(argv)
    assert len(got["--prefill"]) == 2 and len(got["--decode"]) == 4 and got["--port"] == ["8090"]
    if runtime == "sglang":
        assert got["--prefill"][0] == ["http://${PREFILL_NODE0_ADDR}:30000", "8998"]
    assert "--base-url http://HOST:8090" in router


def test_launch_a_disaggregated_plan_that_fits_one_node_is_one_script_on_separate_gpus_and_ports():
    line = ("python -m sglang.launch_server --model-path meta-llama/Llama-3.3-70B-Instruct --tp-size 2 "
            "--context-length 16384 --max-running-requests 64 --kv-cache-dtype auto --mem-fraction-static 0.88")
    dep = plan("sglang", Pool("prefill", "h200-sxm-141gb", "H200 SXM 141GB", Layout(tp=2), replicas=2, launch=line),
               Pool("decode", "h200-sxm-141gb", "H200 SXM 141GB", Layout(tp=2), replicas=2, launch=line))
    files = launch_files(dep)
    assert list(files) == ["launch.sh"]
    text = files["launch.sh"]
    assert re.findall(r"^CUDA_VISIBLE_DEVICES=(\S+) ", text, re.M) == ["0,1", "2,3", "4,5", "6,7"]
    engines = engine_lines(text, "python -m sglang.launch_server")
    assert [e["--port"][0] for e in engines] == ["30000", "30001", "30002", "30003"]
    assert [e.get("--disaggregation-bootstrap-port") for e in engines] == [["8998"], ["8999"], None, None]
    [router] = engine_lines(text, "python -m sglang_router.launch_router")
    assert router["--prefill"] == [["http://localhost:30000", "8998"], ["http://localhost:30001", "8999"]]
    assert router["--decode"] == ["http://localhost:30002", "http://localhost:30003"]
    # the engines start in the background, the router in front
    lines = [line for line in text.splitlines() if line and not line.startswith(("#", ":", "set "))]
    assert all(line.endswith(" &") for line in lines[:-1]) and "sglang_router" in lines[-1]


def test_launch_tensorrt_llm_across_nodes_runs_under_mpirun_from_the_first_node():
    dep = r1_sglang("tensorrt-llm", launch=("printf 'kv_cache_config:\\n  dtype: fp8\\n' > kv_fp8.yaml && trtllm-serve "
                                            "nvidia/DeepSeek-R1-FP4 --tp_size 16 --max_seq_len 32768 --max_batch_size 256 "
                                            "--kv_cache_free_gpu_memory_fraction 0.9 --extra_llm_api_options kv_fp8.yaml"))
    files = launch_files(dep)
    [line] = engine_lines(files["node0.sh"], "mpirun")
    assert line["-np"] == ["16"] and line["-H"] == ["${NODE0_ADDR}:8,${NODE1_ADDR}:8"]
    assert line["--tp_size"] == ["16"] and line["--ep_size"] == ["16"]
    # the FP8 cache and attention DP go into one YAML of LLM API options
    assert "printf 'kv_cache_config:\\n  dtype: fp8\\nenable_attention_dp: true\\n' > extra-llm-api-options.yaml" \
        in files["node0.sh"]
    assert script_commands(files["node1.sh"]) == [] and "exit 0" in files["node1.sh"]


def test_launch_llama_cpp_one_gpu_and_refusals():
    files = launch_files(llama_cpp_one_gpu())
    [line] = engine_lines(files["launch.sh"], "llama-server")
    assert line["-c"] == ["32768"] and line["-np"] == ["4"] and line["--port"] == ["8080"]
    doc, _ = compose_doc(llama_cpp_one_gpu())
    svc = doc["services"]["engine-0"]
    assert svc["image"] == "ghcr.io/ggml-org/llama.cpp:server-cuda" and "entrypoint" not in svc
    assert check_argv(["llama-server"] + svc["command"])["--host"] == ["0.0.0.0"]
    doc, _ = values_doc(llama_cpp_one_gpu())
    assert doc["decode"]["containers"][0]["command"] == ["/app/llama-server"]
    assert doc["decode"]["containers"][0]["resources"]["limits"] == {"nvidia.com/gpu": "1"}
    two_nodes = plan("llama.cpp", Pool("both", "rtx-4090", "GeForce RTX 4090", Layout(tp=2), gpus_per_node=1))
    for kind in ("launch", "compose", "llm-d"):
        with pytest.raises(AdvisorError) as refused:
            exports.render(two_nodes, kind)
        assert "one machine" in one_line_error(refused)


# ---------------------------------------------------------------- the recommender's own launch lines

@pytest.mark.parametrize("runtime", ["vllm", "sglang", "tensorrt-llm"])
def test_exports_place_the_recommenders_multi_node_line_themselves(cat, runtime):
    """A launch line from advisor.plan.launch for a two-node instance (its head-node placeholder, its
    note on what the other nodes run): the files write each node's own line, every flag once."""
    from types import SimpleNamespace

    from advisor.plan.launch import launch_line

    layout = Layout(tp=1, dp_attention=16, ep=16)
    c = SimpleNamespace(hardware=cat.hardware["h200-sxm-141gb"], runtime=cat.runtimes[runtime],
                        quant=cat.quants["fp8"], kv_dtype=cat.kv_dtypes["fp8" if runtime == "tensorrt-llm" else "f16"],
                        gpus=16, users=256, layout=layout, nodes=2)
    line = launch_line(c, SimpleNamespace(model=cat.models["deepseek-r1"], context=8192, output_tokens=256),
                       cat.checkpoints)
    assert "HEAD_NODE_IP" in line or runtime == "tensorrt-llm"
    dep = r1_sglang(runtime, launch=line)
    files = launch_files(dep)                     # every flag verified, none twice
    kinds = [files] + ([exports.render(dep, "llm-d")] if runtime != "tensorrt-llm" else [])
    for rendered in kinds:
        for text in rendered.values():
            assert "HEAD_NODE_IP" not in text and "node 0 of" not in text and "node k" not in text
    engine = {"vllm": "vllm serve", "sglang": "python -m sglang.launch_server", "tensorrt-llm": "mpirun"}[runtime]
    [head] = engine_lines(files["node0.sh"], engine)
    seqs = {"vllm": "--max-num-seqs", "sglang": "--max-running-requests", "tensorrt-llm": "--max_batch_size"}[runtime]
    assert head[seqs] == (["256"] if runtime == "sglang" else ["16"])   # per data-parallel rank where it is one
    if runtime == "tensorrt-llm":
        assert files["node0.sh"].count("enable_attention_dp: true") == 1


# ---------------------------------------------------------------- every plan, every kind

ALL_PLANS = {"h100": h100_tp8, "r1": r1_sglang, "pd-vllm": disaggregated, "llama.cpp": llama_cpp_one_gpu,
             "mi300x": mi300x}


@pytest.mark.parametrize("name", sorted(ALL_PLANS))
def test_every_file_opens_with_the_plan_and_its_check(name):
    dep = ALL_PLANS[name]()
    rendered = 0
    for kind in exports.KINDS:
        try:
            files = exports.render(dep, kind)
        except AdvisorError:
            assert kind == "compose" and dep.nodes > 1
            continue
        for text in files.values():
            check_header(dep, text, kind)
            rendered += 1
    assert rendered >= 2


def test_an_open_loop_plan_benchmarks_at_its_request_rate():
    dep = plan("vllm", *h100_tp8().pools, predicted=Predicted(ttft_ms=300.0, itl_ms=20.0, rps=2.5))
    [bench] = bench_lines(exports.render(dep, "compose")["compose.yaml"])
    got = check_argv(bench)
    assert got["--request-rate"] == ["2.5"] and got["--num-prompts"] == ["150"] and "--max-concurrency" not in got


# ---------------------------------------------------------------- writing, and errors

def test_write_puts_every_file_in_place_and_scripts_are_executable(tmp_path):
    dep = disaggregated("sglang")
    paths = exports.write(dep, "launch", tmp_path / "out")
    rendered = exports.render(dep, "launch")
    assert sorted(p.name for p in paths) == sorted(rendered)
    for p in paths:
        assert p.read_text() == rendered[p.name] and p.stat().st_mode & 0o111
    assert not list((tmp_path / "out").glob(".*.tmp"))   # no temporary file left behind
    [compose] = exports.write(h100_tp8(), "compose", tmp_path / "out")
    assert compose.name == "compose.yaml" and not compose.stat().st_mode & 0o111


def test_errors_are_one_line(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    with pytest.raises(AdvisorError) as unwritable:
        exports.write(h100_tp8(), "compose", blocker / "sub")
    assert "a-file" in one_line_error(unwritable)
    with pytest.raises(AdvisorError) as not_a_folder:
        exports.write(h100_tp8(), "compose", blocker)
    assert "not a folder" in one_line_error(not_a_folder)
    with pytest.raises(AdvisorError) as unknown:
        exports.render(h100_tp8(), "helm")
    assert "compose, llm-d, launch" in one_line_error(unknown)
    with pytest.raises(AdvisorError) as engine:
        exports.render(plan("mlx", Pool("both", "apple-m2-max-38c", "M2 Max", Layout())), "launch")
    assert "mlx" in one_line_error(engine)


def test_the_api_offers_every_kind_the_exports_render():
    from advisor import api
    from advisor.plan import exports

    assert api.EXPORT_KINDS == exports.KINDS
