"""Disaggregated serving: prompts on one pool of instances, decoding on another.

Some deployments (DistServe, Mooncake; vLLM and SGLang's prefill/decode disaggregation) run the
prompt phase and the decode phase on separate instances of the same configuration, so that long
prompts never stall the running batch's tokens. For a load this module answers how many prefill
and how many decode instances it needs and what the KV hand-over costs. Each instance is the
configuration ``cfg`` (its GPU count is the instance's tensor/pipeline group).

    prefill instance   one prompt at a time (prefill is compute-bound: batching prompts adds no
                       throughput), service time t_p = the kernel's TTFT of one prompt; the p
                       instances serve one queue (M/D/p) at utilisation ρ = X · t_p / p, with the
                       G/G/m approximation of Sakasegawa and Allen–Cunneen (Hopp & Spearman,
                       Factory Physics, §8.4): wait = (c_a² + c_s²)/2 · ρ^(√(2(p+1)) − 1) /
                       (p (1 − ρ)) · t_p, c_a² = 1 (random arrivals), c_s² = 0 (a fixed prompt);
                       exact for p = 1 (M/D/1)
    hand-over          the prompt's KV cache, per GPU, over the GPU-to-GPU link where both pools
                       share one scale-up domain, else over the network between nodes (RDMA, as
                       NIXL and Mooncake move it; the slower of the two pools' networks):
                       t_kv = KV(prompt) / bandwidth (not overlapped with the prefill:
                       conservative; layer-by-layer streaming hides part of it)
    prefill hardware   the prefill pool may be another GPU type than the decode pool (a prompt is
                       compute, a decode step memory): ``prefill_hardware``
    decode instance    decode-only steps, τ(b) = τ_dec(b) from the kernel; b ≤ min(KV capacity,
                       max sequences); d instances, Little's law X = d · b / (D · τ(b))
    TTFT               wait + t_p + t_kv (the prefill produces the first token)
    closed loop        C = d · b + X · (TTFT + Z), solved for b by bisection, like `serving.solve`

Prompt arrivals at the prefill pool are treated as random even in a closed loop without think
time: completions come from d decode instances at unrelated moments. Everything is vectorised
over a grid of (prefill instances, decode instances); `disaggregate` picks the smallest pool that
meets the targets, and prices the same GPUs colocated (`serving.serve` per replica) beside it.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass, replace

import numpy as np

from advisor.data.errors import AdvisorError
from advisor.model.devices import domain_gpus, link_gb_s, network_gb_s
from advisor.model.roofline import LINK_EFFICIENCY
from advisor.model.serving import (STEP_GRID, Load, ServeReport, _first, _StepTable, bisect_rising,
                                   costs_from_result, prompt_cache_of, runtime_scheduler, serve,
                                   server_sample_s)

#: Instances per pool considered when the split is chosen for you.
MAX_INSTANCES = 16
#: Without targets, the split keeps every prefill instance below this utilisation (queueing for a
#: prompt slot stays under about twice the prompt's own time at ρ = 0.8 in an M/D/1 queue).
DEFAULT_PREFILL_UTILISATION = 0.8
UTILISATION_CAP = 0.999
#: Offline, a split is as good as the best when its throughput per instance is within this share of it.
OFFLINE_BALANCE = 0.95


@dataclass(frozen=True)
class PoolCosts:
    """What the disaggregated solver needs from the kernel, for one configuration."""

    prefill_s: float          # one prompt, alone, on one instance
    transfer_s: float         # its KV cache over the GPU-to-GPU link, per GPU
    step_s: np.ndarray        # (G,) decode-only step time at each STEP_GRID batch
    kv_capacity: float        # sequences one decode instance holds at the average context
    max_seqs: int


@dataclass(frozen=True)
class Pools:
    """Steady state on a grid of (prefill instances, decode instances): arrays of one shape."""

    prefill_instances: np.ndarray
    decode_instances: np.ndarray
    ttft_ms: np.ndarray
    ttft_p90_ms: np.ndarray
    itl_ms: np.ndarray
    throughput_tok_s: np.ndarray
    request_rate_rps: np.ndarray
    running_batch: np.ndarray       # per decode instance
    prefill_utilisation: np.ndarray
    saturated: np.ndarray           # demand not met: decode pool full (closed: clients queue), or open
                                    # loop: more prompts than the prefill pool serves (unstable)
    bound: np.ndarray               # prefill | decode-capacity | none


def solve_pools(costs: PoolCosts, load: Load, prefill_instances, decode_instances) -> Pools:
    """The steady state of ``load`` on every (p, d) pair given as broadcastable arrays."""
    load.check()
    p = np.asarray(prefill_instances, float)
    d = np.asarray(decode_instances, float)
    shape = np.broadcast(p, d).shape
    p, d = np.broadcast_to(p, shape), np.broadcast_to(d, shape)
    D = float(load.output_tokens - 1)
    t_p, t_kv = costs.prefill_s, costs.transfer_s
    cap = max(math.floor(min(costs.kv_capacity, load.max_seqs or costs.max_seqs)), 1)
    steps = _StepTable(costs.step_s, shape)

    # as in `serving.solve`: arrivals at random moments (Poisson, or clients that think) queue for
    # a prompt slot (one M/D/p queue); clients with no think time come back as their
    # own request ends, so prompts rarely meet, but the prefill pool still caps the request rate
    random_arrivals = load.kind == "open" or load.think_s > 0

    def state(b):
        tau = steps.at(b)
        X = d * b / (D * tau)
        rho = np.clip(X * t_p / p, 0.0, UTILISATION_CAP)
        wait = (0.5 * rho ** (np.sqrt(2.0 * (p + 1.0)) - 1.0) / (p * (1.0 - rho)) * t_p if random_arrivals
                else np.zeros(shape))
        return tau, X, rho, wait

    b_cap = np.full(shape, float(cap))
    b_hi = b_cap
    if load.kind == "closed" and not random_arrivals:
        # the running batch the prefill pool can feed: X(b) = p / t_p
        def over_prefill(b):
            return state(b)[1] * t_p / p - UTILISATION_CAP
        b_hi = np.where(over_prefill(b_cap) > 0, bisect_rising(over_prefill, b_cap), b_cap)
    if load.kind == "offline":
        b = b_cap
        saturated = np.ones(shape, bool)
    else:
        def gap(b):
            tau, X, rho, wait = state(b)
            if load.kind == "open":
                return X - load.rate_rps
            return d * b + X * (wait + t_p + t_kv + load.think_s) - load.concurrency

        saturated = gap(b_hi) < 0
        b = np.where(saturated, b_hi, bisect_rising(gap, b_hi))
    tau, X, rho, wait = state(b)
    prefill_full = X * t_p / p >= UTILISATION_CAP * (1 - 1e-6)
    if load.kind == "offline":
        # the slower pool sets the pace: the prompts cannot come faster than the prefill pool runs
        X = np.minimum(X, p / t_p)
        prefill_full = X * t_p / p >= UTILISATION_CAP
    ttft = wait + t_p + t_kv
    if load.kind == "closed":
        in_system = d * b + X * (ttft + load.think_s)
        queue_wait = np.where(saturated, np.maximum(load.concurrency - in_system, 0.0) / np.maximum(X, 1e-30), 0.0)
    elif load.kind == "open":
        unstable = saturated | prefill_full
        queue_wait = np.where(unstable, np.inf, 0.0)
        saturated = unstable
    else:
        queue_wait = np.zeros(shape)
    # the prompt queue's wait is exponential-like (p90 at ln 10 of its mean); service is deterministic
    ttft_p90 = t_p + t_kv + (wait + queue_wait) * math.log(10)
    ttft = ttft + queue_wait
    bound = np.where(prefill_full, "prefill", np.where(saturated, "decode-capacity", "none"))
    return Pools(prefill_instances=p, decode_instances=d, ttft_ms=ttft * 1e3, ttft_p90_ms=ttft_p90 * 1e3,
                 itl_ms=tau * 1e3, throughput_tok_s=X * load.output_tokens, request_rate_rps=X,
                 running_batch=b, prefill_utilisation=X * t_p / p, saturated=saturated, bound=bound)


def handover_gb_s(cfg, prefill_cfg) -> float:
    """Bandwidth per GPU of the KV hand-over, GB/s: the GPU-to-GPU link where both pools are one GPU
    type whose scale-up domain holds a prefill and a decode instance together, else the slower of
    the pools' networks (the reference systems', or the configuration's ``network``); a part with
    no network falls back to its GPU link (one machine)."""
    a, b = cfg.hardware, prefill_cfg.hardware
    if a.key == b.key and prefill_cfg.gpus + cfg.gpus <= domain_gpus(a):
        return link_gb_s(a)
    nets = [network_gb_s(a, cfg.network or None), network_gb_s(b, prefill_cfg.network or cfg.network or None)]
    nets = [x * LINK_EFFICIENCY for x in nets if math.isfinite(x)]
    return min(nets) if len(nets) == 2 else min(link_gb_s(a), link_gb_s(b))


def pool_costs(cat, cfg, load: Load, prefill_cfg=None) -> PoolCosts:
    """Kernel figures under ``load``: the prompt alone on a prefill instance (``prefill_cfg``, else
    ``cfg``), the KV hand-over, and decode-only steps of ``cfg`` at every grid batch."""
    from advisor.model.efficiency import efficiency_for
    from advisor.model.predict import evaluate_config

    eff = efficiency_for(cat.profiles, cfg.runtime, cfg.hardware)
    P = load.new_prompt_tokens
    r = evaluate_config(cfg, eff, batch=STEP_GRID, prompt=P, depth=load.prompt_tokens - P, output=load.output_tokens)
    seqs, chunk, paged = runtime_scheduler(cfg.runtime, cfg.hardware)
    costs = costs_from_result(r, load, paged, load.max_seqs or seqs, load.chunk_tokens or chunk,
                              server_sample_s(cfg.runtime.server_sample_ns_per_vocab or 0.0, cfg.model.vocab),
                              prompt_cache_of(cfg.runtime, cfg.gpus))
    prefill_s = float(_first(r.ttft_s))
    pg = cfg.gpus
    if prefill_cfg is not None and prefill_cfg != cfg:
        pe = efficiency_for(cat.profiles, prefill_cfg.runtime, prefill_cfg.hardware)
        rp = evaluate_config(prefill_cfg, pe, prompt=P, depth=load.prompt_tokens - P, output=load.output_tokens)
        prefill_s, pg = float(_first(rp.ttft_s)), prefill_cfg.gpus
    # the prompt's share of one sequence's KV (linear in tokens; sliding windows make it conservative),
    # moved GPU to GPU in parallel by the smaller of the two groups, over the slower link
    full = load.prompt_tokens + load.output_tokens
    prompt_kv_bytes = float(_first(r.kv_seq_bytes)) * cfg.gpus / min(pg, cfg.gpus) * load.prompt_tokens / full
    link = handover_gb_s(cfg, prefill_cfg or cfg)
    return PoolCosts(prefill_s=prefill_s, transfer_s=prompt_kv_bytes / (link * 1e9),
                     step_s=np.asarray(costs.step_s, float).reshape(-1), kv_capacity=float(costs.kv_capacity),
                     max_seqs=int(costs.max_seqs))


@dataclass(frozen=True)
class Split:
    """One disaggregated deployment and the colocated one on the same GPUs."""

    hardware: str
    model: str
    runtime: str
    gpus_per_instance: int           # a decode instance's GPUs
    load: Load
    prefill_instances: int
    decode_instances: int
    prefill_s: float
    transfer_ms: float
    link_gb_s: float
    kv_capacity: float
    ttft_ms: float
    ttft_p90_ms: float
    itl_ms: float
    throughput_tok_s: float
    running_batch: float
    prefill_utilisation: float
    bound: str
    saturated: bool
    meets: bool                      # the targets (or the default utilisation rule) hold
    colocated: ServeReport | None    # the same GPUs as prefill + decode replicas of the configuration
    colocated_replicas: int | None = None   # colocated replicas the targets need (None: no targets, or > 32)
    notes: tuple[str, ...] = ()
    prefill_gpus_per_instance: int = 0     # a prefill instance's GPUs (0: as a decode instance's)
    prefill_hardware: str = ""             # the prefill pool's GPU type ("": the decode pool's)

    @property
    def prefill_gpus(self) -> int:
        return self.prefill_gpus_per_instance or self.gpus_per_instance

    @property
    def gpus(self) -> int:
        return self.prefill_instances * self.prefill_gpus + self.decode_instances * self.gpus_per_instance

    def to_dict(self) -> dict:
        out = {k: v for k, v in asdict(self).items() if k != "colocated"}
        out["load"] = asdict(self.load)
        out["gpus"] = self.gpus
        out["prefill_gpus_per_instance"] = self.prefill_gpus
        out["notes"] = list(self.notes)
        out["colocated"] = self.colocated.to_dict() if self.colocated else None
        return out


#: Prefill instance sizes tried when the prefill pool's shape is chosen for you.
PREFILL_GPU_COUNTS = (1, 2, 4, 8)


def disaggregate(cat, cfg, load: Load, prefill_instances: int | None = None, decode_instances: int | None = None,
                 ttft_ms: float | None = None, tok_s: float | None = None, prefill_gpus: int | None = None,
                 prefill_hardware=None) -> Split:
    """As `disaggregate_shaped`, with the prefill instances' GPU count ``prefill_gpus``, or (None) the
    size of 1, 2, 4 or 8 GPUs that holds the model and meets the targets with the fewest GPUs in
    all: the two pools are sized independently (a prompt is compute, a decode step is memory; the
    best group for one is rarely the best for the other). ``prefill_hardware`` (a `Hardware`): the
    prefill pool on another GPU type, with the same runtime, weights and KV cache."""
    from advisor.model.compat import gpus_refusal, refusal

    phw = prefill_hardware or cfg.hardware
    if prefill_hardware is not None:
        why = refusal(phw, cfg.model, cfg.quant, cfg.kv_dtype, cfg.runtime, 1)
        if why:
            raise AdvisorError(f"prefill on {phw.name}: {why}")

    def prefill_cfg(g: int):
        # a prefill instance is tensor parallel over its GPUs (no layout of the decode pool's)
        return cfg.replace(hardware=phw, gpus=g, layout=None)

    if prefill_gpus is not None:
        why = gpus_refusal(phw, prefill_gpus, cfg.runtime, cfg.network or None)
        if why:
            raise AdvisorError(why)
        return disaggregate_shaped(cat, cfg, load, prefill_instances, decode_instances, ttft_ms, tok_s,
                                   prefill_cfg(prefill_gpus))
    best = None
    for g in PREFILL_GPU_COUNTS:
        if gpus_refusal(phw, g):
            continue
        try:
            split = disaggregate_shaped(cat, cfg, load, prefill_instances, decode_instances, ttft_ms, tok_s,
                                        prefill_cfg(g))
        except AdvisorError:
            continue
        if split.prefill_s <= 0 or not math.isfinite(split.prefill_s):
            continue   # the model does not fit a prefill instance this small
        key = (not split.meets, split.gpus, -split.throughput_tok_s)
        if best is None or key < best[0]:
            best = (key, split)
    if best is None:
        return disaggregate_shaped(cat, cfg, load, prefill_instances, decode_instances, ttft_ms, tok_s,
                                   None if prefill_hardware is None else prefill_cfg(cfg.gpus))
    return best[1]


def disaggregate_shaped(cat, cfg, load: Load, prefill_instances: int | None = None,
                        decode_instances: int | None = None, ttft_ms: float | None = None,
                        tok_s: float | None = None, prefill_cfg=None) -> Split:
    """Size (or, with both counts given, evaluate) a disaggregated deployment of ``cfg`` for ``load``.

    Chosen for you: the fewest instances (prefill + decode; ties go to higher throughput) whose TTFT
    p90 ≤ ``ttft_ms`` and per-user tok/s ≥ ``tok_s`` without saturating; with no targets, the fewest
    whose prefill utilisation stays ≤ 0.8 without saturating the decode pool; offline (everything
    queued), the fewest instances within 5 % of the best throughput per instance. With both counts given, it is only
    judged against the targets. The colocated alternative is priced on the same GPUs, and
    ``colocated_replicas`` says how many colocated replicas the targets would need."""
    load.check()
    cfg.check(check_context=False)
    for name, v in (("prefill instances", prefill_instances), ("decode instances", decode_instances)):
        if v is not None and not (1 <= v <= 1024):
            raise AdvisorError(f"{name} must be between 1 and 1024, got {v}")
    prefill_cfg = prefill_cfg or cfg
    if prefill_cfg is not cfg:
        prefill_cfg.check(check_context=False)
        _prefill_fits(cat, prefill_cfg, load)
    costs = pool_costs(cat, cfg, load, prefill_cfg)
    if costs.kv_capacity < 1:
        raise AdvisorError(f"{cfg.model.name} on {cfg.gpus} × {cfg.hardware.name} leaves no room for one "
                           f"sequence's KV cache of {load.prompt_tokens + load.output_tokens:,} tokens")
    ps = np.arange(1, MAX_INSTANCES + 1) if prefill_instances is None else np.array([prefill_instances])
    ds = np.arange(1, MAX_INSTANCES + 1) if decode_instances is None else np.array([decode_instances])
    grid = solve_pools(costs, load, ps[:, None], ds[None, :])
    fixed = prefill_instances is not None and decode_instances is not None
    ok = _within(grid.ttft_p90_ms, grid.itl_ms, ttft_ms, tok_s)
    if load.kind != "offline":
        ok &= ~grid.saturated & (grid.bound == "none") | fixed
        if ttft_ms is None and tok_s is None and not fixed:
            ok &= grid.prefill_utilisation <= DEFAULT_PREFILL_UTILISATION
    total = grid.prefill_instances + grid.decode_instances
    if load.kind == "offline" and not fixed:
        # balance the pools: within 5 % of the best throughput per instance, the fewest instances
        per_instance = grid.throughput_tok_s / total
        ok &= per_instance >= OFFLINE_BALANCE * per_instance[ok].max(initial=0.0)
    # the fewest GPUs in all (the pools may differ in instance size), then the most throughput
    gpus_all = grid.prefill_instances * prefill_cfg.gpus + grid.decode_instances * cfg.gpus
    score = np.where(ok, gpus_all * 1e12 - grid.throughput_tok_s, np.inf)
    meets = bool(np.isfinite(score).any())
    if meets:
        i, j = np.unravel_index(np.argmin(score), score.shape)
    else:
        # nothing in reach meets the targets: show the largest pools considered, and say so
        i, j = total.shape[0] - 1, total.shape[1] - 1
    pick = {f: grid.__dict__[f][i, j] for f in grid.__dict__}
    p, d = int(pick["prefill_instances"]), int(pick["decode_instances"])
    notes = []
    if not meets:
        notes.append(f"no split of up to {ps.max()} prefill and {ds.max()} decode instances meets the targets; "
                     f"showing {p} + {d}")
    if prefill_cfg.gpus != cfg.gpus or prefill_cfg.hardware.key != cfg.hardware.key:
        notes.append(f"prefill instances of {prefill_cfg.gpus} × {prefill_cfg.hardware.name}, decode instances of "
                     f"{cfg.gpus} × {cfg.hardware.name}")
    notes.append(f"KV hand-over: {costs.transfer_s * 1e3:.3g} ms per request over "
                 f"{handover_gb_s(cfg, prefill_cfg):.0f} GB/s per GPU, counted in TTFT, not overlapped with the "
                 "prefill")
    # colocated on (about) the same GPUs: replicas of the decode configuration
    replicas = max(1, round((p * prefill_cfg.gpus + d * cfg.gpus) / cfg.gpus))
    colocated_load = replace(load, concurrency=max(load.concurrency / replicas, 1.0)) if load.kind == "closed" \
        else replace(load, rate_rps=load.rate_rps / replicas) if load.kind == "open" else load
    colocated = serve(cat, cfg, colocated_load)
    needed = _colocated_replicas(cat, cfg, load, ttft_ms, tok_s) if ttft_ms is not None or tok_s is not None else None
    if load.kind != "offline":
        notes.append(f"colocated: {replicas} replicas of {cfg.gpus} GPU(s), the load split evenly among them")
    return Split(hardware=cfg.hardware.name, model=cfg.model.name, runtime=cfg.runtime.name, gpus_per_instance=cfg.gpus,
                 load=load, prefill_instances=p, decode_instances=d, prefill_s=costs.prefill_s,
                 transfer_ms=costs.transfer_s * 1e3, link_gb_s=handover_gb_s(cfg, prefill_cfg),
                 kv_capacity=costs.kv_capacity,
                 ttft_ms=float(pick["ttft_ms"]), ttft_p90_ms=float(pick["ttft_p90_ms"]), itl_ms=float(pick["itl_ms"]),
                 throughput_tok_s=float(pick["throughput_tok_s"]), running_batch=float(pick["running_batch"]),
                 prefill_utilisation=float(pick["prefill_utilisation"]), bound=str(pick["bound"]),
                 saturated=bool(pick["saturated"]), meets=meets, colocated=colocated, colocated_replicas=needed,
                 notes=tuple(notes), prefill_gpus_per_instance=prefill_cfg.gpus,
                 prefill_hardware=prefill_cfg.hardware.name)


def _prefill_fits(cat, cfg, load: Load) -> None:
    """A prefill instance must hold the weights and one prompt's KV cache."""
    from advisor.model.efficiency import efficiency_for
    from advisor.model.predict import evaluate_config

    r = evaluate_config(cfg, efficiency_for(cat.profiles, cfg.runtime, cfg.hardware), prompt=load.prompt_tokens,
                        output=1)
    if not bool(np.ravel(r.fits)[0]):
        raise AdvisorError(f"{cfg.model.name} does not fit a prefill instance of {cfg.gpus} × {cfg.hardware.name}")


def _within(ttft_p90_ms, itl_ms, ttft_ms, tok_s):
    ok = np.ones(np.shape(itl_ms), bool)
    if ttft_ms is not None:
        ok &= np.asarray(ttft_p90_ms) <= ttft_ms
    if tok_s is not None:
        ok &= 1e3 / np.asarray(itl_ms) >= tok_s
    return ok


def _colocated_replicas(cat, cfg, load: Load, ttft_ms, tok_s, limit: int = 2 * MAX_INSTANCES) -> int | None:
    """The fewest colocated replicas of ``cfg`` (the load split evenly) that meet the targets."""
    if load.kind == "offline":
        return None
    for n in range(1, limit + 1):
        share = replace(load, concurrency=max(load.concurrency / n, 1.0)) if load.kind == "closed" \
            else replace(load, rate_rps=load.rate_rps / n)
        rep = serve(cat, cfg, share)
        if rep.fits and not rep.saturated and bool(_within(rep.ttft_p90_ms, rep.itl_ms, ttft_ms, tok_s)):
            return n
    return None
