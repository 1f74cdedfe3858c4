"""A deployment plan as files people run: a docker compose file, llm-d Helm values, the engine's launch.

`render(deployment, kind)` returns {file name: text} for kind "compose", "llm-d" or "launch";
`write(deployment, kind, folder)` writes those files atomically and returns their paths.

- **compose** (`compose.yaml`): one machine. One service per instance (GPUs pinned by id, so
  instances never share a GPU), the engine's official image, the Hugging Face cache mounted,
  ``HF_TOKEN`` from the environment. A plan that needs more than one node is refused: compose
  has no way to start one engine across machines.
- **llm-d** (`values.yaml`): values for the llm-d modelservice chart
  (github.com/llm-d-incubation/llm-d-modelservice, charts/llm-d-modelservice), with the chart's own
  field names; a pool spanning nodes becomes a LeaderWorkerSet (``multinode: true``) whose pods find
  their leader through the variables LeaderWorkerSet injects (``LWS_LEADER_ADDRESS``,
  ``LWS_WORKER_INDEX``, ``LWS_GROUP_SIZE``).
- **launch** (`launch.sh` for one node, else one script per node, plus `router.sh` for a
  disaggregated plan): the engine's own multi-node launch — vLLM's data-parallel flags or Ray,
  SGLang's ``--nnodes/--node-rank/--dist-init-addr``, TensorRT-LLM under ``mpirun`` with
  ``trtllm-llmapi-launch``.

Every file begins with the plan in comments — model, hardware, pools and their layouts, the
predicted figures — and the ``vllm bench serve`` command that measures them once it runs. What a
format cannot express faithfully is said in a comment, never papered over with a guessed flag: every
flag written here was read in the engine's argument parser, and tests/data/runtime_flags.yaml lists
each with its source file and commit (tests/core/test_exports.py parses every rendered command line
against it).

The engine's command for one instance comes from `Pool.launch` (`advisor.plan.launch`: checkpoint,
format and KV-cache flags, memory fraction); this module owns the flags that place it — parallel
sizes, nodes, addresses, ports, the prefill/decode role — and replaces any the line already has.
"""

from __future__ import annotations

import math
import os
import re
import shlex
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import yaml

from advisor.data.errors import AdvisorError
from advisor.data.catalog import shipped_hardware
from advisor.plan.deployment import Deployment, Pool
from advisor.plan.launch import SGLANG_DIST_PORT

KINDS = ("compose", "llm-d", "launch")

#: The HTTP port each engine listens on by default (vLLM's FrontendArgs.port, SGLang's ServerArgs.port,
#: trtllm-serve's --port, llama-server's --port), kept so that a plan's ports read as each engine's own.
ENGINE_PORT = {"vllm": 8000, "sglang": 30000, "tensorrt-llm": 8000, "llama.cpp": 8080}
#: The router of a disaggregated plan: a port no engine uses by default (vllm-router's docs use 8090).
ROUTER_PORT = 8090
#: SGLang's prefill servers hand KV caches over through a bootstrap server on this port
#: (ServerArgs.disaggregation_bootstrap_port, default 8998); the router is told it per prefill server.
SGLANG_BOOTSTRAP_PORT = 8998
#: Rendezvous ports of the multi-node launches. Any free port works; these are the ones the engines'
#: docs use in their examples (vLLM data parallel: 13345; Ray's default GCS port 6379).
VLLM_DP_RPC_PORT = 13345
RAY_PORT = 6379
#: vLLM's P/D hand-over through NIXL (vllm/config/kv_transfer.py KVTransferConfig: kv_connector,
#: kv_role), as the llm-d chart's examples/values-pd.yaml runs it on both roles.
VLLM_NIXL = '{"kv_connector":"NixlConnector","kv_role":"kv_both"}'
#: The llm-d chart's P/D side channel for NIXL (examples/values-pd.yaml: VLLM_NIXL_SIDE_CHANNEL_PORT).
NIXL_SIDE_CHANNEL_PORT = 5600
#: Where the containers keep downloaded weights (the images run as root).
HF_CACHE = "/root/.cache/huggingface"
LLAMA_CACHE = "/root/.cache/llama.cpp"

#: The engines' official images (Deployment.image overrides). Sources: vLLM docs deployment/docker.md
#: (vllm/vllm-openai) and installation/gpu.rocm "pre-built images" (vllm/vllm-openai-rocm); SGLang docs
#: (lmsysorg/sglang; its ROCm builds are tags of the same repository, built from docker/Dockerfile.rocm,
#: one per release and GPU family — this default is the MI300-series build of v0.5.5.post3); NVIDIA's
#: NGC catalog (nvcr.io/nvidia/tensorrt-llm/release); llama.cpp docs/docker.md (server-cuda,
#: server-rocm, server-vulkan: llama-server as the entrypoint).
IMAGES = {
    ("vllm", "nvidia"): "vllm/vllm-openai:latest",
    ("vllm", "amd"): "vllm/vllm-openai-rocm:latest",
    ("sglang", "nvidia"): "lmsysorg/sglang:latest",
    ("sglang", "amd"): "lmsysorg/sglang:v0.5.5.post3-rocm700-mi30x",
    ("tensorrt-llm", "nvidia"): "nvcr.io/nvidia/tensorrt-llm/release:1.0.0",
    ("llama.cpp", "nvidia"): "ghcr.io/ggml-org/llama.cpp:server-cuda",
    ("llama.cpp", "amd"): "ghcr.io/ggml-org/llama.cpp:server-rocm",
}
#: llm-d runs vLLM from its own image, which carries NIXL for the P/D hand-over (the chart's examples).
LLMD_VLLM_IMAGE = "ghcr.io/llm-d/llm-d-cuda:latest"
#: The chart's resource name per accelerator type (values.yaml accelerator.resources).
LLMD_GPU_RESOURCE = {"nvidia": "nvidia.com/gpu", "amd": "amd.com/gpu"}
#: The chart's routing sidecar listens on routing.servicePort and forwards decode traffic to the engine
#: on routing.proxy.targetPort (values.yaml: servicePort 8000, targetPort 8200).
LLMD_SERVICE_PORT = 8000
LLMD_PROXY_TARGET_PORT = 8200

_FAMILY_NAMES = {"vllm": "vLLM", "sglang": "SGLang", "tensorrt-llm": "TensorRT-LLM", "llama.cpp": "llama.cpp"}


class _Raw(str):
    """A shell word that must expand (an address variable): written in double quotes, never escaped."""


def _sh(argv: list[str]) -> str:
    """One command line: plain words quoted for the shell, `_Raw` words left to expand."""
    return " ".join(f'"{w}"' if isinstance(w, _Raw) else shlex.quote(str(w)) for w in argv)


class _Dumper(yaml.SafeDumper):
    """Block mappings; a list of short scalars (a command line, GPU ids) on one line; a script as a
    literal block."""


def _represent_list(dumper, data):
    flow = bool(data) and all(isinstance(x, (str, int, float)) and "\n" not in str(x) for x in data)
    return dumper.represent_sequence("tag:yaml.org,2002:seq", data, flow_style=flow)


def _represent_str(dumper, data):
    return dumper.represent_scalar("tag:yaml.org,2002:str", str(data), style="|" if "\n" in data else None)


_Dumper.add_representer(list, _represent_list)
_Dumper.add_representer(str, _represent_str)
_Dumper.add_representer(_Raw, _represent_str)


def _yaml(doc: dict) -> str:
    return yaml.dump(doc, Dumper=_Dumper, sort_keys=False, default_flow_style=False, width=100000,
                     allow_unicode=True)


# --------------------------------------------------------------------------------------------------
# What the plan runs on: the engine family and the GPU vendor
# --------------------------------------------------------------------------------------------------

def _family(runtime_key: str) -> str:
    for family in ("vllm", "sglang", "tensorrt-llm", "llama.cpp"):
        if runtime_key == family or runtime_key.startswith(family + "-"):
            return family
    raise AdvisorError(f"deployment files cover vLLM, SGLang, TensorRT-LLM and llama.cpp, not {runtime_key!r}")


def _vendor(pool: Pool) -> str:
    """"nvidia" or "amd": the container runtimes, images and Kubernetes resources differ."""
    hw = shipped_hardware().get(pool.hardware_key)
    vendor = hw.vendor if hw is not None else ""
    if not vendor:   # a user's own entry: read its name
        name = pool.hardware_name.lower()
        vendor = "AMD" if any(w in name for w in ("amd", "instinct", "radeon")) else "NVIDIA"
    if vendor.upper() not in ("NVIDIA", "AMD"):
        raise AdvisorError(f"deployment files cover NVIDIA and AMD GPUs; {pool.hardware_name} is {vendor}")
    return vendor.lower()


def _image(dep: Deployment, family: str, vendor: str) -> str:
    if dep.image:
        return dep.image
    if dep.runtime_key.endswith("-vulkan") and family == "llama.cpp":
        return "ghcr.io/ggml-org/llama.cpp:server-vulkan"
    image = IMAGES.get((family, vendor))
    if image is None:
        raise AdvisorError(f"{_FAMILY_NAMES[family]} publishes no {vendor.upper()} image; set the deployment's image")
    return image


# --------------------------------------------------------------------------------------------------
# The engine's command line
# --------------------------------------------------------------------------------------------------

@dataclass
class _Command:
    """One engine process: shell lines to run first (TensorRT-LLM's YAML of LLM API options), its
    arguments, and the launch line's trailing note (how to make a checkpoint that is not published)."""

    argv: list[str]
    setup: list[str] = field(default_factory=list)
    note: str = ""


#: The flags this module owns per engine (parallel sizes, placement, ports, P/D role): removed from
#: the pool's launch line and written again from the plan, in every spelling the parser accepts.
_OWNED = {
    "vllm": {"--tensor-parallel-size", "-tp", "--pipeline-parallel-size", "-pp", "--data-parallel-size", "-dp",
             "--data-parallel-size-local", "-dpl", "--data-parallel-address", "-dpa", "--data-parallel-rpc-port",
             "-dpp", "--data-parallel-start-rank", "-dpr", "--headless", "--enable-expert-parallel",
             "--distributed-executor-backend", "--kv-transfer-config", "--host", "--port"},
    "sglang": {"--tp-size", "--tp", "--tensor-parallel-size", "--dp-size", "--dp", "--data-parallel-size",
               "--enable-dp-attention", "--ep-size", "--ep", "--expert-parallel-size", "--pp-size",
               "--pipeline-parallel-size", "--nnodes", "--node-rank", "--dist-init-addr", "--nccl-init-addr",
               "--disaggregation-mode", "--disaggregation-bootstrap-port", "--host", "--port"},
    "tensorrt-llm": {"--tp_size", "--pp_size", "--ep_size", "--host", "--port"},
    "llama.cpp": {"--host", "--port"},
}
#: Flags of these engines that take no value (everything else here takes exactly one).
_SWITCHES = {"--headless", "--enable-expert-parallel", "--enable-dp-attention"}
#: The cap on running sequences, per engine (launch templates in catalog/runtimes.yaml).
_MAX_SEQS_FLAG = {"vllm": "--max-num-seqs", "sglang": "--max-running-requests", "tensorrt-llm": "--max_batch_size"}
#: The words that name each engine's program: vllm serve | python -m sglang.launch_server | one word.
_COMMAND_WORDS = {"vllm": 2, "sglang": 3, "tensorrt-llm": 1, "llama.cpp": 1}
#: How advisor.plan.launch writes TensorRT-LLM's LLM API options (a KV dtype, attention DP) in front
#: of trtllm-serve: a printf into a YAML file that --extra_llm_api_options then names.
_TRT_PREFIX = re.compile(r"^printf '(?P<yaml>[^']*)' > (?P<file>\S+) && ")
#: How it installs a package the engine serves the weights' format through (vLLM 0.28+: bitsandbytes in
#: vllm-bnb-plugin, `Runtime.format_plugins`) in front of the command.
_PLUGIN_PREFIX = re.compile(r"^pip install (?P<package>\S+) && ")
TRT_OPTIONS_FILE = "extra-llm-api-options.yaml"


def _drop(argv: list[str], flags: set[str]) -> list[str]:
    """``argv`` without ``flags`` and their values."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        word, i = argv[i], i + 1
        name = word.split("=", 1)[0]
        if name in flags:
            if "=" not in word and name not in _SWITCHES and i < len(argv) and not argv[i].startswith("-"):
                i += 1
            continue
        out.append(word)
    return out


def _base_command(dep: Deployment, pool: Pool, family: str) -> _Command:
    """The pool's launch line as arguments, without the flags this module writes itself."""
    line = pool.launch.strip()
    options_yaml = None     # the LLM API options advisor.plan.launch writes for TensorRT-LLM
    if not line:
        ctx, mf = str(dep.context_tokens), f"{dep.memory_fraction:g}"
        argv = {
            "vllm": ["vllm", "serve", dep.checkpoint, "--max-model-len", ctx, "--gpu-memory-utilization", mf],
            "sglang": ["python", "-m", "sglang.launch_server", "--model-path", dep.checkpoint, "--context-length", ctx,
                       "--mem-fraction-static", mf],
            "tensorrt-llm": ["trtllm-serve", dep.checkpoint, "--max_seq_len", ctx,
                             "--kv_cache_free_gpu_memory_fraction", mf],
            "llama.cpp": ["llama-server", "-m" if dep.checkpoint.endswith(".gguf") else "-hf", dep.checkpoint,
                          "-c", ctx, "-ngl", "99"],
        }[family]
        note = ("the plan carries no launch line: the weight-format and KV-cache flags are the engine's defaults; "
                "add them from `advisor recommend`")
        cmd = _Command(argv, note=note)
    else:
        code, _, note = line.partition("  #")
        plugin = _PLUGIN_PREFIX.match(code)
        if plugin:
            code = code[plugin.end():]
        prefix = _TRT_PREFIX.match(code)
        if prefix:
            options_yaml = prefix.group("yaml")
            code = code[prefix.end():]
        cmd = _Command(shlex.split(code), note=_kept_note(note))
        if plugin:   # installed in the container before the engine starts
            cmd.setup.append(f"pip install {shlex.quote(plugin.group('package'))}")
        if prefix:   # its file is written again below, under one name, with whatever the layout adds
            cmd.argv = _drop(cmd.argv, {"--extra_llm_api_options"})
    cmd.argv = _drop(cmd.argv, _OWNED[family])
    if pool.max_seqs and family in _MAX_SEQS_FLAG:
        # vLLM and TensorRT-LLM schedule each data-parallel rank on its own (advisor.plan.launch):
        # the instance's cap is shared among its ranks; SGLang's is the server's whole limit
        ranks = pool.layout.dp_attention if family in ("vllm", "tensorrt-llm") else 1
        flag = _MAX_SEQS_FLAG[family]
        cmd.argv = _drop(cmd.argv, {flag}) + [flag, str(math.ceil(pool.max_seqs / ranks))]
    if family == "tensorrt-llm":
        own_file = "--extra_llm_api_options" in cmd.argv    # the user's own options file: left as it is
        if pool.layout.dp_attention > 1 and "enable_attention_dp" not in (options_yaml or ""):
            if own_file:
                cmd.note = "; ".join(filter(None, [cmd.note, "attention DP needs enable_attention_dp: true in the "
                                                             "--extra_llm_api_options file"]))
            else:   # attention DP is an LLM API option, not a trtllm-serve flag
                options_yaml = (options_yaml or "") + "enable_attention_dp: true\\n"
        if options_yaml and not own_file:
            cmd.setup.append(f"printf {shlex.quote(options_yaml)} > {TRT_OPTIONS_FILE}")
            cmd.argv += ["--extra_llm_api_options", TRT_OPTIONS_FILE]
    return cmd


#: Parts of a launch line's note about placing it (advisor.plan.launch: the other nodes' lines, a
#: Ray cluster, mpirun, replicas behind a load balancer): the files here place it themselves.
_PLACEMENT_NOTE = re.compile(r"^(node 0 of|on a Ray cluster|across \d+ nodes|one of \d+ replicas)")


def _kept_note(note: str) -> str:
    parts = [part.strip(" #") for part in ("  " + note).split("  #")]
    return "; ".join(p for p in parts if p and not _PLACEMENT_NOTE.match(p))


def _parallel_flags(family: str, pool: Pool) -> list[str]:
    """The layout in the engine's own flags (one instance; placement across nodes comes separately)."""
    lay = pool.layout
    stage_gpus = lay.tp * lay.dp_attention    # GPUs of one pipeline stage
    if family == "vllm":
        # vLLM counts tensor parallel within a data-parallel rank; EP spans DP × TP on its own
        flags = ["--tensor-parallel-size", str(lay.tp)]
        if lay.pp > 1:
            flags += ["--pipeline-parallel-size", str(lay.pp)]
        if lay.dp_attention > 1:
            flags += ["--data-parallel-size", str(lay.dp_attention)]
        if lay.ep > 1:
            flags += ["--enable-expert-parallel"]
        return flags
    if family == "sglang":
        # SGLang's --tp-size counts every GPU of a stage; DP attention splits them into --dp-size groups
        flags = ["--tp-size", str(stage_gpus)]
        if lay.dp_attention > 1:
            flags += ["--dp-size", str(lay.dp_attention), "--enable-dp-attention"]
        if lay.ep > 1:
            flags += ["--ep-size", str(lay.ep)]
        if lay.pp > 1:
            flags += ["--pp-size", str(lay.pp)]
        return flags
    if family == "tensorrt-llm":
        flags = ["--tp_size", str(stage_gpus)]
        if lay.pp > 1:
            flags += ["--pp_size", str(lay.pp)]
        if lay.ep > 1:
            flags += ["--ep_size", str(lay.ep)]
        return flags
    return []   # llama.cpp: the launch line's -sm layer -ts already spreads the layers over the GPUs


def _split_command(cmd: _Command, family: str) -> tuple[list[str], list[str]]:
    """(command words and positional model, options)."""
    head = _COMMAND_WORDS[family]
    if family in ("vllm", "tensorrt-llm") and len(cmd.argv) > head and not cmd.argv[head].startswith("-"):
        head += 1   # vllm serve MODEL / trtllm-serve MODEL
    return cmd.argv[:head], cmd.argv[head:]


# --------------------------------------------------------------------------------------------------
# Placement: which instance runs on which node
# --------------------------------------------------------------------------------------------------

@dataclass
class _Instance:
    pool: Pool
    index: int                  # 0 … replicas−1
    nodes: list[int]            # plan-wide node numbers it spans
    first_gpu: int = 0          # within its node, when several instances share one
    slot: int = 0               # its place among the instances on its node: its ports follow from it
    port: int = 0

    @property
    def role(self) -> str:
        return self.pool.role

    @property
    def shares_node(self) -> bool:
        return self.pool.gpus_per_instance < self.pool.gpus_per_node


@dataclass
class _Node:
    number: int
    role: str                   # the pool role of what runs there ("both": a colocated plan, or all of a one-node plan)
    index: int                  # its number within the role (prefill-node1 …)
    instances: list[_Instance] = field(default_factory=list)
    gpus_used: int = 0

    @property
    def name(self) -> str:
        return f"node{self.index}" if self.role == "both" else f"{self.role}-node{self.index}"

    @property
    def address(self) -> _Raw:
        return _Raw("${" + self.name.upper().replace("-", "_") + "_ADDR}")

    def add(self, inst: _Instance, family: str) -> None:
        inst.first_gpu, inst.slot = self.gpus_used, len(self.instances)
        inst.port = ENGINE_PORT[family] + inst.slot
        self.gpus_used += inst.pool.gpus_per_instance
        self.instances.append(inst)


def _fits_one_node(dep: Deployment) -> bool:
    return (len({p.hardware_key for p in dep.pools}) == 1 and all(p.nodes_per_instance == 1 for p in dep.pools)
            and dep.gpus <= min(p.gpus_per_node for p in dep.pools))


#: Replicas of a pool written out one by one in the launch scripts; past these, the scripts of the
#: first ones are the pattern every further replica repeats on nodes of its own (a plan of 192
#: replicas is not 384 files of the same lines).
RENDERED_REPLICAS = 4


def _rendered(pool: Pool) -> int:
    return min(pool.replicas, RENDERED_REPLICAS)


def _place(dep: Deployment, family: str) -> tuple[list[_Node], list[_Instance]]:
    """Instances onto nodes, in pool order: a plan that fits one node runs there whole; otherwise
    instances that fit a node are packed (each on its own GPUs) onto nodes of their pool, and an
    instance larger than a node gets nodes of its own (the first `RENDERED_REPLICAS` of a pool)."""
    pools = sorted(dep.pools, key=lambda p: ("prefill", "decode", "both").index(p.role))
    if _fits_one_node(dep):
        node = _Node(0, "both", 0)
        instances = [_Instance(pool, r, [0]) for pool in pools for r in range(pool.replicas)]
        for inst in instances:
            node.add(inst, family)
        return [node], instances
    nodes: list[_Node] = []
    instances: list[_Instance] = []
    for pool in pools:
        role_nodes: list[_Node] = []

        def new_node() -> _Node:
            node = _Node(len(nodes), pool.role, len(role_nodes))
            role_nodes.append(node)
            nodes.append(node)
            return node

        for r in range(_rendered(pool)):
            if pool.nodes_per_instance > 1:
                span = [new_node() for _ in range(pool.nodes_per_instance)]
                inst = _Instance(pool, r, [n.number for n in span])
                for n in span:
                    n.add(inst, family)
            else:
                current = role_nodes[-1] if role_nodes else None
                if current is None or current.gpus_used + pool.gpus_per_instance > pool.gpus_per_node:
                    current = new_node()
                inst = _Instance(pool, r, [current.number])
                current.add(inst, family)
            instances.append(inst)
    return nodes, instances


# --------------------------------------------------------------------------------------------------
# The comments every file opens with
# --------------------------------------------------------------------------------------------------

def _num(x: float) -> str:
    if abs(x) >= 100:
        return f"{x:,.0f}"
    if abs(x) >= 10:
        return f"{x:.1f}"
    return f"{x:.2f}"


def predicted_text(dep: Deployment) -> str:
    """The predicted figures in one line ("TTFT 350 ms, ITL 25.0 ms, …")."""
    p = dep.predicted
    parts = []
    for label, value, unit in (("TTFT", p.ttft_ms, "ms"), ("ITL", p.itl_ms, "ms"),
                               ("throughput", p.throughput_tok_s, "output tok/s"), ("power", p.power_kw, "kW")):
        parts.append(f"{label} {_num(value)} {unit}" if value is not None else f"{label} not predicted")
    return ", ".join(parts)


def load_text(dep: Deployment) -> str:
    p = dep.predicted
    if p.rps:
        load = f"{_num(p.rps)} requests/s (open loop)"
    elif p.users:
        load = f"{p.users} concurrent users"
    else:
        load = "one user (the plan states no load)"
    return f"{load}, {p.prompt_tokens}-token prompts, {p.output_tokens}-token replies"


def bench_command(dep: Deployment, base_url: str, servers: int = 1) -> str:
    """`vllm bench serve` against ``base_url`` at the plan's load, or at its share of it when
    ``servers`` equal servers take the load with no balancer in front (each gets 1/servers).

    Flags from vllm-project/vllm vllm/benchmarks/serve.py (add_cli_args: --backend, --base-url,
    --endpoint, --max-concurrency, --model, --request-rate) and vllm/benchmarks/datasets.py
    (add_dataset_parser: --dataset-name, --num-prompts, --random-input-len, --random-output-len)."""
    p = dep.predicted
    argv = ["vllm", "bench", "serve", "--backend", "openai-chat", "--base-url", base_url,
            "--endpoint", "/v1/chat/completions", "--model", dep.checkpoint, "--dataset-name", "random",
            "--random-input-len", str(p.prompt_tokens), "--random-output-len", str(p.output_tokens)]
    if p.rps:
        # an open loop: Poisson arrivals at the rate, ten requests per user or else a minute of them
        rate = p.rps / servers
        prompts = 10 * math.ceil(p.users / servers) if p.users else max(100, math.ceil(rate * 60))
        argv += ["--request-rate", f"{rate:.4g}", "--num-prompts", str(prompts)]
    else:
        clients = math.ceil((p.users or 1) / servers)
        argv += ["--max-concurrency", str(clients), "--num-prompts", str(10 * clients)]
    return _sh(argv)


def _pool_text(pool: Pool) -> str:
    what = {"both": "serving (prefill and decode together)", "prefill": "prefill", "decode": "decode"}[pool.role]
    span = (f"each across {pool.nodes_per_instance} nodes of {pool.gpus_per_node} GPUs" if pool.nodes_per_instance > 1
            else f"each within a node of {pool.gpus_per_node} GPUs")
    inst = "instance" if pool.replicas == 1 else "instances"
    return (f"{what}: {pool.replicas} {inst} × {pool.gpus_per_instance} × {pool.hardware_name} "
            f"({pool.layout.text() or 'one GPU'}), {span}")


def _header(dep: Deployment, title: str, bench: list[str], where: str, extra: list[str] = ()) -> str:
    """The plan in comments: what, on what, how split, the predicted figures and how to check them."""
    family = _FAMILY_NAMES[_family(dep.runtime_key)]
    lines = [
        f"{title} — written by advisor",
        f"model: {dep.model_name} ({dep.checkpoint}), {dep.quant_key} weights, {dep.kv_dtype_key} KV cache, "
        f"context {dep.context_tokens} tokens",
        f"engine: {dep.runtime_name} ({family})",
        f"hardware: {dep.gpus} GPU{'s' if dep.gpus != 1 else ''} in all" + (f"; network between nodes: {dep.network}" if dep.network else ""),
    ]
    lines += [f"pool {_pool_text(p)}" for p in dep.pools]
    lines += [f"predicted at {load_text(dep)}: {predicted_text(dep)}"]
    lines += [f"note: {n}" for n in dep.notes]
    lines += list(extra)
    if family == "llama.cpp":   # vllm bench counts tokens with --model's tokenizer, which a GGUF repository lacks
        lines.append("vllm bench tokenizes with --model's tokenizer: if the GGUF repository has none, add "
                     "--tokenizer <the model's own Hugging Face repository>")
    lines += [f"check the predicted figures once it serves ({where}):"]
    lines += [f"  {b}" for b in bench]
    return "".join(f"# {line}\n" if line else "#\n" for line in lines)


# --------------------------------------------------------------------------------------------------
# compose
# --------------------------------------------------------------------------------------------------

def _one_machine(dep: Deployment) -> None:
    """Refuse what one machine cannot hold, naming the kinds that can."""
    hint = "; use kind 'llm-d' or 'launch' for a plan across machines"
    for p in dep.pools:
        if p.nodes_per_instance > 1:
            raise AdvisorError(f"a compose file runs on one machine, but each {p.role} instance spans "
                               f"{p.nodes_per_instance} nodes ({p.gpus_per_instance} GPUs, {p.gpus_per_node} per node){hint}")
    if len({p.hardware_key for p in dep.pools}) > 1:
        raise AdvisorError(f"a compose file runs on one machine, but the pools run on different hardware{hint}")
    per_node = min(p.gpus_per_node for p in dep.pools)
    if dep.gpus > per_node:
        raise AdvisorError(f"a compose file runs on one machine, but the plan needs {dep.gpus} GPUs and one node "
                           f"holds {per_node}{hint}")


def _gpu_access(vendor: str, gpu_ids: list[int]) -> dict:
    """How a service sees exactly its GPUs."""
    ids = [str(i) for i in gpu_ids]
    if vendor == "nvidia":
        # compose-spec deploy.resources.reservations.devices; device_ids (not count) so that two
        # services never land on the same GPU
        return {"deploy": {"resources": {"reservations": {"devices": [
            {"driver": "nvidia", "device_ids": ids, "capabilities": ["gpu"]}]}}}}
    # ROCm: the device nodes (vLLM's and SGLang's docker instructions), the video group and an
    # unconfined seccomp profile; HIP_VISIBLE_DEVICES picks this service's GPUs
    return {"devices": ["/dev/kfd", "/dev/dri"], "group_add": ["video"], "security_opt": ["seccomp=unconfined"],
            "environment": {"HIP_VISIBLE_DEVICES": ",".join(ids)}}


def _service(dep: Deployment, family: str, vendor: str, cmd: _Command, gpu_ids: list[int], port: int,
             container_port: int) -> dict:
    service: dict = {"image": _image(dep, family, vendor)}
    if cmd.setup:   # a file to write before the engine starts: one shell
        service["entrypoint"] = ["/bin/bash", "-c", " && ".join(cmd.setup + ["exec " + _sh(cmd.argv)])]
    elif family == "llama.cpp":   # the server images' entrypoint is llama-server itself (docs/docker.md)
        service["command"] = list(cmd.argv[1:])
    else:
        service["entrypoint"] = list(cmd.argv)
    service["ports"] = [f"{port}:{container_port}"]
    service["ipc"] = "host"   # PyTorch shares tensors between a server's processes through /dev/shm
    cache = LLAMA_CACHE if family == "llama.cpp" else HF_CACHE
    service["volumes"] = [f"${{HOME}}/.cache/{'llama.cpp' if family == 'llama.cpp' else 'huggingface'}:{cache}"]
    env = {"HF_TOKEN": "${HF_TOKEN:-}"}
    if family == "llama.cpp":
        env["LLAMA_CACHE"] = LLAMA_CACHE
    access = _gpu_access(vendor, gpu_ids)
    env.update(access.pop("environment", {}))
    service["environment"] = env
    if family == "tensorrt-llm":   # NVIDIA's container instructions: unlimited locked memory, 64 MiB stack
        service["ulimits"] = {"memlock": -1, "stack": 67108864}
    service.update(access)
    return service


def _compose(dep: Deployment) -> dict[str, str]:
    family = _family(dep.runtime_key)
    _llama_cpp_fits(dep, family)
    _one_machine(dep)
    if dep.disaggregated and family in ("llama.cpp", "tensorrt-llm"):
        raise AdvisorError(f"a disaggregated {_FAMILY_NAMES[family]} plan has no compose form here; use kind 'launch'")
    vendor = _vendor(dep.pools[0])
    services: dict[str, dict] = {}
    urls: dict[str, list[str]] = {"prefill": [], "decode": []}
    endpoints: list[tuple[str, int]] = []
    published: dict[str, int] = {}
    notes: list[str] = []
    gpu = 0
    host_port = ENGINE_PORT[family]
    for pool in sorted(dep.pools, key=lambda p: ("prefill", "decode", "both").index(p.role)):
        for r in range(pool.replicas):
            name = f"{'engine' if pool.role == 'both' else pool.role}-{r}"
            cmd = _instance_command(dep, pool, family, nodes=1, rank=0, head=None, port=ENGINE_PORT[family])
            if cmd.note:
                notes.append(f"{name}: {cmd.note}")
            ids = list(range(gpu, gpu + pool.gpus_per_instance))
            gpu += pool.gpus_per_instance
            services[name] = _service(dep, family, vendor, cmd, ids, host_port, ENGINE_PORT[family])
            published[name] = host_port
            if pool.role in urls:
                urls[pool.role].append(f"http://{name}:{ENGINE_PORT[family]}")
            else:
                endpoints.append((name, host_port))
            host_port += 1
    if dep.disaggregated:
        if family == "sglang":   # the router ships in SGLang's image (docker/Dockerfile builds sgl-router)
            services["router"] = {"image": _image(dep, family, vendor),
                                  "entrypoint": _router_argv(family, urls["prefill"], urls["decode"]),
                                  "ports": [f"{ROUTER_PORT}:{ROUTER_PORT}"], "depends_on": list(services)}
            notes.append("SGLang's KV hand-over defaults to Mooncake over RDMA: give the prefill and decode "
                         "services the host's RDMA devices, or add --disaggregation-transfer-backend nixl")
        else:   # vLLM's image has no P/D router: vllm-router runs beside it, against the published ports
            local = {role: [f"http://localhost:{published[name]}" for name in published if name.startswith(role)]
                     for role in ("prefill", "decode")}
            notes.append("vLLM's image carries no P/D router: run vllm-router (github.com/vllm-project/router) "
                         "on this machine: " + _sh(_router_argv(family, local["prefill"], local["decode"])))
        endpoints = [("router", ROUTER_PORT)]
    if len(endpoints) == 1:
        bench = [bench_command(dep, f"http://HOST:{endpoints[0][1]}")]
        where = "HOST = this machine's address, localhost on it"
    else:
        bench = [bench_command(dep, f"http://HOST:{port}", servers=len(endpoints)) + " &"
                 for _, port in endpoints] + ["wait"]
        where = (f"HOST = this machine's address; the {len(endpoints)} instances are separate servers with no load "
                 f"balancer in front (put one there, or benchmark each with its share of the users together)")
    extra = [f"compose: {len(services)} service{'s' if len(services) > 1 else ''} on one machine with {dep.gpus} GPUs; "
             f"`docker compose up -d`, HF_TOKEN from the environment for gated models"]
    extra += [f"to do: {n}" for n in notes]
    doc = {"name": _project_name(dep), "services": services}
    return {"compose.yaml": _header(dep, "docker compose file", bench, where, extra) + _yaml(doc)}


def _project_name(dep: Deployment) -> str:
    # compose-spec: a project name is lowercase letters, digits, dashes and underscores
    return "advisor-" + (re.sub(r"[^a-z0-9_-]+", "-", dep.model_key.lower()).strip("-") or "plan")


def _router_argv(family: str, prefill: list[str], decode: list[str], bootstrap: list[int] | None = None,
                 port: int = ROUTER_PORT) -> list[str]:
    """The P/D router: SGLang's sglang_router (sgl-router/py_src/sglang_router/launch_router.py:
    --pd-disaggregation, --prefill URL BOOTSTRAP_PORT, --decode URL) or vLLM's vllm-router
    (vllm-project/router src/main.rs: --vllm-pd-disaggregation, --prefill URL, --decode URL).
    ``bootstrap``: each SGLang prefill server's bootstrap port (default: SGLang's, 8998)."""
    if family == "sglang":
        argv = ["python", "-m", "sglang_router.launch_router", "--pd-disaggregation"]
        for url, boot in zip(prefill, bootstrap or [SGLANG_BOOTSTRAP_PORT] * len(prefill)):
            argv += ["--prefill", url, str(boot)]
    else:
        argv = ["vllm-router", "--vllm-pd-disaggregation"]
        for url in prefill:
            argv += ["--prefill", url]
    for url in decode:
        argv += ["--decode", url]
    return argv + ["--host", "0.0.0.0", "--port", str(port)]


# --------------------------------------------------------------------------------------------------
# One instance's command on one of its nodes
# --------------------------------------------------------------------------------------------------

def _vllm_data_parallel_local(pool: Pool) -> int:
    """vLLM's data-parallel ranks per node when one DP/EP instance spans nodes."""
    lay = pool.layout
    if lay.pp > 1 or pool.gpus_per_node % lay.tp:
        raise AdvisorError(f"vLLM's data-parallel launch across nodes places whole TP groups on each node; "
                           f"TP {lay.tp} × PP {lay.pp} on nodes of {pool.gpus_per_node} GPUs does not divide")
    return min(lay.dp_attention, pool.gpus_per_node // lay.tp)


def _instance_command(dep: Deployment, pool: Pool, family: str, *, nodes: int, rank: int, head: str | None,
                      port: int, slot: int = 0) -> _Command:
    """The engine line for node ``rank`` of an instance spanning ``nodes`` nodes whose first node is
    at ``head`` (a shell word). One node: the instance's own line with its parallel flags. ``slot``:
    its place among the instances packed on one node (their side ports must differ)."""
    cmd = _base_command(dep, pool, family)
    words, options = _split_command(cmd, family)
    options += _parallel_flags(family, pool)
    serves_http = True
    if nodes > 1:
        if family == "vllm":
            if pool.layout.dp_attention > 1:
                # vLLM's data-parallel deployment: one API server on node 0, headless engines elsewhere
                local = _vllm_data_parallel_local(pool)
                options += ["--data-parallel-size-local", str(local), "--data-parallel-address", head,
                            "--data-parallel-rpc-port", str(VLLM_DP_RPC_PORT)]
                if rank > 0:
                    options += ["--headless", "--data-parallel-start-rank", str(rank * local)]
                    serves_http = False
            else:   # tensor/pipeline parallel across nodes runs on a Ray cluster started beforehand
                options += ["--distributed-executor-backend", "ray"]
        elif family == "sglang":
            options += ["--nnodes", str(nodes), "--node-rank", str(rank),
                        "--dist-init-addr", _Raw(f"{head}:{SGLANG_DIST_PORT}")]
        # TensorRT-LLM: one MPI world started from the first node (_launch); llama.cpp: refused before
    if pool.role in ("prefill", "decode"):
        if family == "vllm":
            options += ["--kv-transfer-config", VLLM_NIXL]
        elif family == "sglang":
            options += ["--disaggregation-mode", pool.role]
            if pool.role == "prefill":   # the router is told this port per prefill server
                options += ["--disaggregation-bootstrap-port", str(SGLANG_BOOTSTRAP_PORT + slot)]
    if serves_http:
        options += ["--host", "0.0.0.0", "--port", str(port)]
    cmd.argv = words + options
    return cmd


# --------------------------------------------------------------------------------------------------
# launch
# --------------------------------------------------------------------------------------------------

def _llama_cpp_fits(dep: Deployment, family: str) -> None:
    """llama.cpp serves one model from one process on one machine, prompt and replies together."""
    if family != "llama.cpp":
        return
    if dep.disaggregated:
        raise AdvisorError("llama.cpp has no prefill/decode disaggregation; plan a colocated pool")
    for p in dep.pools:
        if p.nodes_per_instance > 1:
            raise AdvisorError(f"llama.cpp serves from one machine, but each instance of this plan spans "
                               f"{p.nodes_per_instance} nodes ({p.gpus_per_instance} GPUs, {p.gpus_per_node} per "
                               f"node); choose a plan that fits one node or another engine")


def _gpu_env(vendor: str, inst: _Instance) -> str:
    ids = ",".join(str(i) for i in range(inst.first_gpu, inst.first_gpu + inst.pool.gpus_per_instance))
    return f"{'CUDA' if vendor == 'nvidia' else 'HIP'}_VISIBLE_DEVICES={ids}"


def _launch(dep: Deployment) -> dict[str, str]:
    family = _family(dep.runtime_key)
    _llama_cpp_fits(dep, family)
    nodes, instances = _place(dep, family)
    by_number = {n.number: n for n in nodes}
    one_file = len(nodes) == 1
    # a node running several servers (or servers and the router) starts them in the background
    background = {n.name: len(n.instances) > 1 or (one_file and dep.disaggregated) for n in nodes}
    bodies: dict[str, list[str]] = {n.name: [] for n in nodes}
    needs: dict[str, set[str]] = {n.name: set() for n in nodes}

    for inst in instances:
        pool, span = inst.pool, [by_number[k] for k in inst.nodes]
        vendor, head = _vendor(pool), span[0].address
        label = (f"{pool.role} " if pool.role != "both" else "") + f"instance {inst.index + 1} of {pool.replicas}"
        if family == "tensorrt-llm" and len(span) > 1:
            # one MPI world across the nodes, started from the first (TensorRT-LLM docs: trtllm-serve under
            # srun or mpirun with trtllm-llmapi-launch); the other nodes run nothing themselves
            cmd = _instance_command(dep, pool, family, nodes=1, rank=0, head=None, port=inst.port)
            hosts = _Raw(",".join(f"{n.address}:{pool.gpus_per_node}" for n in span))
            bodies[span[0].name] += ([f"# {label}: all {len(span)} nodes, started from here by mpirun over SSH",
                                      "# (Open MPI refuses to run as root unless given --allow-run-as-root: add it "
                                      "when this runs as root in a container)"]
                                     + ([f"# {cmd.note}"] if cmd.note else []) + cmd.setup
                                     + [_sh(["mpirun", "-np", str(pool.gpus_per_instance), "-H", hosts,
                                             "trtllm-llmapi-launch"] + cmd.argv)])
            needs[span[0].name] |= {n.address for n in span}
            for n in span[1:]:
                bodies[n.name] += [f"# {label}: mpirun on {span[0].name} starts this node's ranks over SSH.",
                                   f"# Nothing to start here: have the engine installed as on {span[0].name} (same "
                                   f"image, same paths), passwordless SSH from {span[0].name}, and the GPUs free.",
                                   "exit 0"]
            continue
        for rank, node in enumerate(span):
            cmd = _instance_command(dep, pool, family, nodes=len(span), rank=rank, head=head, port=inst.port,
                                    slot=inst.slot)
            where = f", node {rank + 1} of {len(span)}" if len(span) > 1 else ""
            gpus = (f", GPUs {inst.first_gpu}-{inst.first_gpu + pool.gpus_per_instance - 1}"
                    if len(node.instances) > 1 or inst.shares_node else "")
            lines = [f"# {label}{where}{gpus}"] + ([f"# {cmd.note}"] if cmd.note else [])
            if len(span) > 1:
                needs[node.name].add(head)
            if family == "vllm" and len(span) > 1 and pool.layout.dp_attention == 1:
                # vLLM across nodes without data parallel: a Ray cluster, its head on the first node
                if rank > 0:
                    bodies[node.name] += lines + [_sh(["ray", "start", "--address", _Raw(f"{head}:{RAY_PORT}"),
                                                       "--block"])]
                    continue
                lines += [_sh(["ray", "start", "--head", "--port", str(RAY_PORT)]),
                          f"# wait until the other {len(span) - 1} node(s) have joined ({pool.gpus_per_instance} GPUs)",
                          _ray_wait(pool.gpus_per_instance)]
            env = []
            if len(node.instances) > 1 or inst.shares_node:
                env.append(_gpu_env(vendor, inst))
            if family == "vllm" and pool.role != "both":
                # NIXL's side channel: reachable from the other pool's nodes, and its own port per server
                # when several share a node (the llm-d chart's P/D example sets both)
                if not one_file:
                    lines.append(f'export VLLM_NIXL_SIDE_CHANNEL_HOST="{node.address}"')
                    needs[node.name].add(node.address)
                if len(node.instances) > 1:
                    env.append(f"VLLM_NIXL_SIDE_CHANNEL_PORT={NIXL_SIDE_CHANNEL_PORT + inst.first_gpu}")
            lines += cmd.setup
            lines.append(" ".join(env + [_sh(cmd.argv)]) + (" &" if background[node.name] else ""))
            bodies[node.name] += lines

    # the router of a disaggregated plan, and where to point the benchmark
    router: list[str] = []
    if dep.disaggregated:
        def url(inst: _Instance) -> str:
            return f"http://{'localhost' if one_file else by_number[inst.nodes[0]].address}:{inst.port}"
        prefill = [url(i) for i in instances if i.role == "prefill"]
        decode = [url(i) for i in instances if i.role == "decode"]
        # each SGLang prefill server's bootstrap port, as its own command line sets it
        bootstrap = [SGLANG_BOOTSTRAP_PORT + i.slot for i in instances if i.role == "prefill"]
        argv = [_Raw(w) if "${" in w else w for w in _router_argv(family, prefill, decode, bootstrap)]
        if family == "tensorrt-llm":
            router = ["# TensorRT-LLM's disaggregated serving is not expressed here: each worker needs a",
                      "# cache_transceiver_config in its --extra_llm_api_options YAML, and the router is",
                      "# `trtllm-serve disaggregated -c <config>` listing the context (prefill) and generation",
                      "# (decode) servers (NVIDIA/TensorRT-LLM examples/disaggregated/README.md). The workers",
                      "# start as plain servers; write those files before relying on this plan."]
        else:
            if family == "vllm":
                router.append("# vllm-router: github.com/vllm-project/router (installed apart from vLLM)")
            router.append(_sh(argv))
        bench = [bench_command(dep, f"http://HOST:{ROUTER_PORT}")]
        where = "HOST = this machine" if one_file else "HOST = the machine router.sh runs on"
    else:
        serving = [i for i in instances if i.role == "both"]
        if len(serving) == 1:
            bench = [bench_command(dep, f"http://HOST:{serving[0].port}")]
            where = "HOST = this machine" if one_file else f"HOST = the address of {by_number[serving[0].nodes[0]].name}"
        else:
            total = sum(p.replicas for p in dep.pools if p.role == "both")
            bench = [bench_command(dep, f"http://HOST{k}:{i.port}", servers=total) + " &"
                     for k, i in enumerate(serving)] + ["wait"]
            where = (f"HOSTk = the node of instance k+1; the {total} instances are separate servers with no "
                     "load balancer in front: put one there, or benchmark each with its share of the users together")
            if total > len(serving):
                where += (f" (instances {len(serving) + 1} … {total} run copies of these scripts on nodes of their "
                          f"own, each with its own head address: run the same command against each)")

    env_note = ("environment: the engine installed on every node, e.g. inside "
                f"{_image(dep, family, _vendor(dep.pools[0]))} with the host network, all GPUs and the "
                "Hugging Face cache")
    files: dict[str, str] = {}
    for node in nodes:
        body = bodies[node.name]
        if one_file and router and not router[-1].startswith("#"):
            body = body + router            # the engines run in the background, the router in front
        elif background[node.name]:
            body = body + (router if one_file else []) + ["wait"]
        name = "launch.sh" if one_file else f"{node.name}.sh"
        this = "the whole plan" if one_file else f"{node.name} of {len(nodes)} nodes" + (
            f" written here ({dep.nodes} in the whole plan)" if dep.nodes > len(nodes) else "")
        files[name] = _script(dep, bench, where, [env_note, f"this file: {this}"], sorted(needs[node.name]), body)
    if router and not one_file:
        addresses = sorted({w for line in router for w in re.findall(r"\$\{[A-Z0-9_]+\}", line)})
        files["router.sh"] = _script(dep, bench, where, [env_note, "this file: the P/D router, on any machine that "
                                                                   "reaches the nodes"], addresses, router)
    return files


def _ray_wait(gpus: int) -> str:
    """A shell loop until the Ray cluster counts ``gpus`` GPUs (ray.init / ray.cluster_resources)."""
    probe = "import ray; ray.init(address=\"auto\"); print(int(ray.cluster_resources().get(\"GPU\", 0)))"
    return f'until [ "$(python3 -c {shlex.quote(probe)} 2>/dev/null || echo 0)" -ge {gpus} ]; do sleep 5; done'


def _script(dep: Deployment, bench: list[str], where: str, extra: list[str], addresses: list[str],
            body: list[str]) -> str:
    lines = ["#!/usr/bin/env bash", _header(dep, "engine launch", bench, where, extra).rstrip("\n"),
             "set -euo pipefail"]
    for address in addresses:   # each node's address, set by whoever runs the script
        var = address.strip("${}")
        lines.append(f': "${{{var}:?set {var} to the address of {var[:-5].lower().replace("_", "-")}}}"')
    return "\n".join(lines + body) + "\n"


# --------------------------------------------------------------------------------------------------
# llm-d
# --------------------------------------------------------------------------------------------------

@lru_cache(maxsize=1)
def _shipped_models_and_quants():
    from advisor.data.catalog import CATALOG_DIR, parse_file

    models, quants = {}, {}
    for path in sorted((CATALOG_DIR / "models").glob("*.yaml")):
        parsed, _ = parse_file(path)
        models.update({m.key: m for m in parsed["models"]})
    parsed, _ = parse_file(CATALOG_DIR / "quants.yaml")
    quants.update({q.key: q for q in parsed["quants"]})
    return models, quants


def checkpoint_gib(dep: Deployment) -> float | None:
    """What the pods download: the weights at the plan's format (or, for online quantization, the
    16-bit release the engine quantizes while loading); None for a model not in the shipped catalog."""
    from advisor.model.geometry import geometry, weight_bits, weight_bytes

    models, quants = _shipped_models_and_quants()
    online = any("--quantization" in shlex.split(p.launch.partition("  #")[0]) for p in dep.pools if p.launch)
    model, quant = models.get(dep.model_key), quants.get("bf16" if online else dep.quant_key)
    if model is None or quant is None:
        return None
    return weight_bytes(geometry(model), weight_bits(quant)) / 2**30


def _llmd_pool(dep: Deployment, pool: Pool, family: str, vendor: str, disaggregated: bool) -> tuple[dict, list[str]]:
    """One of the chart's `decode`/`prefill` sections, and comments for what it cannot say."""
    lay = pool.layout
    notes: list[str] = []
    nodes = pool.nodes_per_instance
    gpus_per_pod = pool.gpus_per_instance // nodes if nodes > 1 else pool.gpus_per_instance
    # the chart's ports: prefill answers on servicePort, decode behind the routing sidecar on targetPort
    port = LLMD_PROXY_TARGET_PORT if (disaggregated and pool.role == "decode") else LLMD_SERVICE_PORT
    # the chart's parallelism: tensor × dataLocal GPUs per pod, data ranks over `workers` pods
    parallelism = {"tensor": lay.tp, "data": 1, "dataLocal": 1, "workers": nodes}
    if family == "vllm" and lay.dp_attention > 1:
        local = _vllm_data_parallel_local(pool) if nodes > 1 else lay.dp_attention
        parallelism.update(data=lay.dp_attention, dataLocal=local)
    elif family != "vllm":   # other engines: the chart's count is GPUs per pod, the engine's flags say how
        parallelism["tensor"] = gpus_per_pod
    container: dict = {"name": "vllm" if family == "vllm" else family.replace(".", ""),
                       "image": (dep.image or (LLMD_VLLM_IMAGE if family == "vllm" and vendor == "nvidia"
                                               else _image(dep, family, vendor)))}
    cmd = _instance_command(dep, pool, family, nodes=1, rank=0, head=None, port=port)
    if cmd.note:
        notes.append(f"{pool.role}: {cmd.note}")
    words, options = _split_command(cmd, family)
    env: list[dict] = []
    if family == "vllm" and nodes == 1 and not cmd.setup:
        # the chart writes `vllm serve <model> --port --tensor-parallel-size --data-parallel-size
        # --data-parallel-size-local --served-model-name` (templates/_helpers.tpl vllmServeModelCommand)
        container["modelCommand"] = "vllmServe"
        container["args"] = _drop(options, {"--tensor-parallel-size", "--data-parallel-size", "--host", "--port"})
    else:
        container["modelCommand"] = "custom"
        if nodes > 1:
            script = _lws_script(dep, pool, family)
            container["command"] = ["/bin/bash", "-c"]
            container["args"] = [script]
        elif cmd.setup:
            container["command"] = ["/bin/bash", "-c"]
            container["args"] = [" && ".join(cmd.setup + ["exec " + _sh(cmd.argv)])]
        elif family == "llama.cpp":   # the server images keep llama-server in /app (llama.cpp docs/docker.md)
            container["command"] = ["/app/llama-server"]
            container["args"] = list(cmd.argv[1:])
        else:
            container["command"] = list(cmd.argv[:_COMMAND_WORDS[family]])
            container["args"] = list(cmd.argv[_COMMAND_WORDS[family]:])
        if family == "llama.cpp":   # its downloads in the chart's model volume (mounted at /model-cache)
            env.append({"name": "LLAMA_CACHE", "value": "/model-cache"})
    if family == "vllm" and pool.role in ("prefill", "decode"):
        env += [{"name": "VLLM_NIXL_SIDE_CHANNEL_HOST", "valueFrom": {"fieldRef": {"fieldPath": "status.podIP"}}},
                {"name": "VLLM_NIXL_SIDE_CHANNEL_PORT", "value": str(NIXL_SIDE_CHANNEL_PORT)}]
    container["env"] = env
    ports = [{"containerPort": port, "protocol": "TCP"}]
    if family == "vllm" and pool.role in ("prefill", "decode"):
        ports.append({"containerPort": NIXL_SIDE_CHANNEL_PORT, "protocol": "TCP"})
    container["ports"] = ports
    gpu = {LLMD_GPU_RESOURCE[vendor]: str(gpus_per_pod)}
    container["resources"] = {"limits": dict(gpu), "requests": dict(gpu)}
    container["mountModelVolume"] = True
    section = {"create": True, "replicas": pool.replicas, "parallelism": parallelism, "containers": [container]}
    return section, notes


def _lws_script(dep: Deployment, pool: Pool, family: str) -> str:
    """One LeaderWorkerSet pod's command: the same line on every pod, its rank from LWS_WORKER_INDEX."""
    head = "${LWS_LEADER_ADDRESS}"
    nodes = pool.nodes_per_instance
    port = LLMD_PROXY_TARGET_PORT if pool.role == "decode" and dep.disaggregated else LLMD_SERVICE_PORT
    if family == "sglang":
        cmd = _instance_command(dep, pool, family, nodes=nodes, rank=0, head=head, port=port)
        argv = _drop(cmd.argv, {"--node-rank", "--nnodes"})
        argv += ["--nnodes", _Raw("${LWS_GROUP_SIZE}"), "--node-rank", _Raw("${LWS_WORKER_INDEX}")]
        argv = [_Raw(w) if isinstance(w, str) and "${" in w else w for w in argv]
        return "\n".join(cmd.setup + ["exec " + _sh(argv)])
    if family == "vllm" and pool.layout.dp_attention > 1:
        leader = _instance_command(dep, pool, family, nodes=nodes, rank=0, head=head, port=port)
        worker = _instance_command(dep, pool, family, nodes=nodes, rank=1, head=head, port=port)
        worker.argv = _drop(worker.argv, {"--data-parallel-start-rank"})
        worker.argv += ["--data-parallel-start-rank", _Raw("${START_RANK}")]
        fix = lambda argv: [_Raw(w) if isinstance(w, str) and "${" in w else w for w in argv]  # noqa: E731
        # DP_SIZE_LOCAL: set by the chart from parallelism.dataLocal (templates/_helpers.tpl parallelismEnv)
        return "\n".join(["START_RANK=$(( LWS_WORKER_INDEX * DP_SIZE_LOCAL ))",
                          'if [ "${LWS_WORKER_INDEX}" = "0" ]; then',
                          "  exec " + _sh(fix(leader.argv)), "else", "  exec " + _sh(fix(worker.argv)), "fi"])
    if family == "vllm":   # tensor/pipeline parallel across pods: a Ray cluster, head on the leader
        cmd = _instance_command(dep, pool, family, nodes=nodes, rank=0, head=head, port=port)
        gpus = pool.gpus_per_instance
        return "\n".join([
            'if [ "${LWS_WORKER_INDEX}" = "0" ]; then',
            "  " + _sh(["ray", "start", "--head", "--port", str(RAY_PORT)]),
            "  " + _ray_wait(gpus),
            "  exec " + _sh(cmd.argv), "else",
            "  exec " + _sh(["ray", "start", "--address", _Raw(f"{head}:{RAY_PORT}"), "--block"]), "fi"])
    raise AdvisorError(f"{_FAMILY_NAMES[family]} across nodes needs MPI between the pods, which the llm-d "
                       f"modelservice chart does not set up; use kind 'launch'")


def _llmd(dep: Deployment) -> dict[str, str]:
    family = _family(dep.runtime_key)
    _llama_cpp_fits(dep, family)
    vendors = {_vendor(p) for p in dep.pools}
    if len(vendors) > 1:
        raise AdvisorError("the llm-d chart sets one accelerator type for a release; the pools use NVIDIA and AMD")
    vendor = vendors.pop()
    notes: list[str] = []
    sections = {}
    for pool in dep.pools:
        section, pool_notes = _llmd_pool(dep, pool, family, vendor, dep.disaggregated)
        sections["decode" if pool.role == "both" else pool.role] = section
        notes += pool_notes
    if not dep.disaggregated:   # a colocated plan: no prefill pods
        sections["prefill"] = {"create": False, "replicas": 0}
    elif family != "vllm":
        notes.append(f"llm-d's routing sidecar hands requests from prefill to decode with vLLM's NIXL connector; "
                     f"{_FAMILY_NAMES[family]}'s own P/D hand-over is not driven by it: route with the engine's "
                     "router (see kind 'launch') or run vLLM here")
    artifacts: dict = {"name": dep.checkpoint, "authSecretName": "hf-token"}
    if re.fullmatch(r"[\w.-]+/[\w.-]+", dep.checkpoint):
        artifacts["uri"] = f"hf://{dep.checkpoint}"
    else:
        artifacts["uri"] = f"pvc://model-pvc/{dep.checkpoint.lstrip('./')}"
        notes.append(f"{dep.checkpoint} is a local checkpoint: copy it to a PersistentVolumeClaim and set "
                     "modelArtifacts.uri to pvc://<claim>/<path> (model-pvc is a placeholder)")
    size = checkpoint_gib(dep)
    if size is not None:
        # the download lands in an emptyDir of this size (templates/_helpers.tpl mountModelVolumeVolumes)
        artifacts["size"] = f"{math.ceil(size * 1.1 / 10) * 10}Gi"
    else:
        notes.append("set modelArtifacts.size to at least the checkpoint's size (not known to advisor)")
    values = {
        "multinode": any(p.nodes_per_instance > 1 for p in dep.pools),
        "modelArtifacts": artifacts,
        "accelerator": {"type": vendor},
        "routing": {"servicePort": LLMD_SERVICE_PORT,
                    "proxy": {"enabled": dep.disaggregated, "targetPort": LLMD_PROXY_TARGET_PORT}},
        "decode": sections["decode"],
        "prefill": sections["prefill"],
    }
    extra = ["llm-d: helm install <release> llm-d-modelservice/llm-d-modelservice -f values.yaml "
             "(chart github.com/llm-d-incubation/llm-d-modelservice); the Hugging Face token in a secret: "
             "kubectl create secret generic hf-token --from-literal=HF_TOKEN=<token>"]
    if size is not None:
        extra.append(f"modelArtifacts.size: the checkpoint's {_num(size)} GiB plus 10 %")
    extra += [f"to do: {n}" for n in notes]
    bench = [bench_command(dep, f"http://HOST:{LLMD_SERVICE_PORT}")]
    where = ("HOST:8000 = the llm-d inference gateway in front of this release, or a port-forward to a decode pod's "
             "port 8000")
    return {"values.yaml": _header(dep, "llm-d modelservice Helm values", bench, where, extra) + _yaml(values)}


# --------------------------------------------------------------------------------------------------
# The public face
# --------------------------------------------------------------------------------------------------

def render(deployment: Deployment, kind: str) -> dict[str, str]:
    """The files of ``kind`` ("compose", "llm-d" or "launch") for ``deployment``: {file name: text}.
    Raises `AdvisorError` (one line) for a kind that does not exist or a plan the kind cannot express."""
    if kind == "compose":
        return _compose(deployment)
    if kind == "llm-d":
        return _llmd(deployment)
    if kind == "launch":
        return _launch(deployment)
    raise AdvisorError(f"unknown export kind {kind!r} (one of {', '.join(KINDS)})")


def write(deployment: Deployment, kind: str, directory) -> list[Path]:
    """Write ``render(deployment, kind)`` into ``directory`` (created if missing), each file atomically;
    shell scripts executable. Returns the paths written; `AdvisorError` (one line) when it cannot."""
    files = render(deployment, kind)
    folder = Path(os.path.expanduser(str(directory)))
    if folder.exists() and not folder.is_dir():
        raise AdvisorError(f"cannot write into {folder}: it is not a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise AdvisorError(f"cannot create {folder}: {exc.strerror or exc}") from None
    from advisor.data.userdata import write_atomic

    paths = []
    for name, text in files.items():
        path = folder / name
        write_atomic(path, text)
        try:   # the temporary file was created private (0600): give it a file's usual mode
            path.chmod(0o755 if name.endswith(".sh") else 0o644)
        except OSError as exc:
            raise AdvisorError(f"cannot set the mode of {path}: {exc.strerror or exc}") from None
        paths.append(path)
    return paths


__all__ = ["KINDS", "render", "write", "bench_command", "predicted_text", "load_text", "checkpoint_gib"]
