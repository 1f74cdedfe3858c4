"""A deployment plan: what to run where, independent of how it is started.

A recommendation (or the user) fixes the model, the engine, the weights and KV format, and one or
two pools of instances — colocated (prefill and decode on the same instances) or a prefill pool and
a decode pool — each instance a group of GPUs with its parallel layout (tensor, pipeline, expert
parallel, data-parallel attention), spanning one or more nodes. `advisor.plan.exports` renders a
plan as a docker compose file, llm-d Helm values and the engine's own multi-node launch lines; each
carries the predicted figures as comments and the benchmark command that checks them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from advisor.data.errors import AdvisorError
from advisor.model.layout import Layout

ROLES = ("both", "prefill", "decode")


@dataclass(frozen=True)
class Pool:
    """``replicas`` identical instances of ``layout.gpus`` GPUs of one hardware type, behind a router."""

    role: str                     # both | prefill | decode
    hardware_key: str
    hardware_name: str
    layout: Layout
    replicas: int = 1
    gpus_per_node: int = 8        # GPUs one node of this hardware holds (an instance may span several)
    launch: str = ""              # the engine's command for one instance on one node (node rank 0)
    max_seqs: int = 0             # running sequences one instance admits (0: the engine's default)

    @property
    def gpus_per_instance(self) -> int:
        return self.layout.gpus

    @property
    def nodes_per_instance(self) -> int:
        return max(1, math.ceil(self.layout.gpus / max(self.gpus_per_node, 1)))

    @property
    def gpus(self) -> int:
        return self.layout.gpus * self.replicas

    @property
    def nodes(self) -> int:
        return self.nodes_per_instance * self.replicas


@dataclass(frozen=True)
class Predicted:
    """What the plan should measure after it is deployed, at the load it was sized for."""

    ttft_ms: float | None = None
    itl_ms: float | None = None
    throughput_tok_s: float | None = None    # output tokens per second, all pools together
    power_kw: float | None = None            # the GPUs' draw at that load
    users: int | None = None                 # concurrent clients (closed loop)
    rps: float | None = None                 # or a request rate (open loop)
    prompt_tokens: int = 1024
    output_tokens: int = 256


@dataclass(frozen=True)
class Deployment:
    """One runtime-neutral plan: the model and engine, and the pools that serve it."""

    model_key: str
    model_name: str
    checkpoint: str               # what the engine loads: a Hugging Face repository id or a local path
    runtime_key: str              # vllm | sglang | tensorrt-llm | llama.cpp | …
    runtime_name: str
    quant_key: str
    kv_dtype_key: str
    context_tokens: int
    memory_fraction: float
    pools: tuple[Pool, ...]
    network: str = ""             # the link between nodes, in words ("InfiniBand NDR 400 Gb/s per GPU")
    image: str = ""               # the engine's container image (exports fill a default per runtime)
    predicted: Predicted = field(default_factory=Predicted)
    notes: tuple[str, ...] = ()

    def __post_init__(self):
        if not self.pools:
            raise AdvisorError("a deployment needs at least one pool of instances")
        roles = [p.role for p in self.pools]
        for r in roles:
            if r not in ROLES:
                raise AdvisorError(f"unknown pool role {r!r} (one of {', '.join(ROLES)})")
        if "both" in roles and len(roles) > 1:
            raise AdvisorError("a colocated pool ('both') cannot sit beside prefill or decode pools")
        if len(roles) != len(set(roles)):
            raise AdvisorError("each pool role appears once")
        if ("prefill" in roles) != ("decode" in roles):
            raise AdvisorError("a disaggregated deployment needs both a prefill and a decode pool")

    @property
    def disaggregated(self) -> bool:
        return any(p.role == "prefill" for p in self.pools)

    @property
    def gpus(self) -> int:
        return sum(p.gpus for p in self.pools)

    @property
    def nodes(self) -> int:
        return sum(p.nodes for p in self.pools)

    def pool(self, role: str) -> Pool | None:
        return next((p for p in self.pools if p.role == role), None)


def from_candidate(c, req, checkpoints=None) -> Deployment:
    """The plan of a recommended configuration (an `advisor.plan.recommend.Candidate` and its
    `Requirements`): one colocated pool of its replicas, the weights its launch line loads, the load
    it was sized for and what it predicts there."""
    from advisor.model.devices import NETWORKS_GBIT_S, max_gpus
    from advisor.plan.launch import shipped_checkpoints, weights_for

    w = weights_for(c, req.model, shipped_checkpoints() if checkpoints is None else checkpoints)
    layout = c.config_layout or Layout(tp=c.gpus)
    pool = Pool(role="both", hardware_key=c.hardware.key, hardware_name=c.hardware.name, layout=layout,
                replicas=c.replicas, gpus_per_node=max_gpus(c.hardware), launch=c.launch,
                max_seqs=math.ceil(c.users / max(c.replicas, 1)))
    network = ""
    if c.nodes > 1:
        gbit = NETWORKS_GBIT_S[req.network] if req.network else c.hardware.scale_out_gbit_s
        network = f"{req.network or 'the reference system’s network'}: {gbit:g} Gb/s per GPU"
    predicted = Predicted(ttft_ms=c.ttft_ms, itl_ms=1e3 / c.tok_s if c.tok_s else None,
                          throughput_tok_s=c.throughput_tok_s, power_kw=c.power_kw,
                          users=None if req.rps and not req.users else c.users, rps=req.rps,
                          prompt_tokens=req.prompt_tokens, output_tokens=req.output_tokens)
    return Deployment(model_key=req.model.key, model_name=req.model.name, checkpoint=w.model,
                      runtime_key=c.runtime.key, runtime_name=c.runtime.name, quant_key=c.quant.key,
                      kv_dtype_key=c.kv_dtype.key, context_tokens=req.context,
                      memory_fraction=c.runtime.memory_fraction, pools=(pool,), network=network,
                      predicted=predicted, notes=tuple(x for x in (w.note.strip(" #"),) if x))
