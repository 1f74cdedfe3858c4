"""The analytic serving model (`advisor.model.serving`) against a step-by-step simulator of the
scheduler it describes, plus properties of the analytic model.

The simulator is the reference: it runs the engine steps one by one (continuous batching, FCFS
chunked prefill, a slot limit) with the same per-step costs the analytic model uses, so any gap
between the two is the analytic model's approximation (Little's law at mean values, M/D/1 for the
wait for the prompt budget), not a difference in the physics.
"""

import dataclasses
import heapq
import math
import json
from collections import defaultdict, deque
from dataclasses import dataclass, field

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor import api
from advisor.data.errors import AdvisorError
from advisor.model import serving
from advisor.model.efficiency import efficiency_for
from advisor.model.predict import evaluate_config
from advisor.model.serving import STEP_GRID, Load, StepCosts
from tests.scheduler_steps import fill_prompt_budget


def decode_step_s(costs: StepCosts, batches) -> list[float]:
    """τ_dec(b) at each b, read from the cost table the way `solve` reads it (the module's own
    interpolation between the grid's batch sizes, so that both sides use the same step time)."""
    if hasattr(serving, "_interp_step"):
        return serving._interp_step(costs, np.asarray(batches, float))[0].tolist()
    table = serving._StepTable(costs.step_s, ())
    return [float(table.at(float(b))) for b in batches]


# ---- the reference: a discrete-event simulator of the scheduler ------------------------------------


@dataclass
class Sim:
    ttft_ms: float              # mean, arrival → end of the step that finishes the prompt (queue included)
    ttft_p90_ms: float          # its 90th percentile
    itl_ms: float               # mean time between a request's output tokens
    throughput_tok_s: float     # output tokens (first tokens included) per second of wall time
    running_batch: float        # time-averaged number of sequences in the decode phase
    completed: int              # requests measured (after the warm-up)
    queue: list = field(repr=False)     # (time, requests waiting for a slot) after every step


def simulate(costs: StepCosts, load: Load, steps: int = 20_000, seed: int = 0, warmup: float = 0.2,
             together: bool = False) -> Sim:
    """Run ``steps`` engine steps of ``load`` on ``costs``; measure after the first ``warmup`` share
    of the completed requests. ``together``: a closed loop's clients all send their first request at
    the start, as a benchmark run's do. A load with output lengths (``output_points``) draws each
    request's; a closed loop of ``load.requests`` requests stops sending after that many and is
    measured whole, from its start to its last answer (its throughput: the run's output tokens over
    that time)."""
    rng = np.random.default_rng(seed)
    run = load.requests if load.kind == "closed" else None
    out_pts = np.asarray(load.output_points, float)
    out_w = np.asarray(load.output_weights, float) / max(sum(load.output_weights), 1e-30) if load.output_points else None

    def decode_len() -> int:
        """A request's decode steps: the load's one output length, or drawn from its distribution."""
        return load.output_tokens - 1 if out_w is None else max(int(round(rng.choice(out_pts, p=out_w))) - 1, 1)
    issued, produced = (min(int(load.concurrency), run) if run else 0), 0
    P = max(int(round(load.new_prompt_tokens)), 1)
    pts, wts = load.new_prompt_points()

    def prompt_len() -> int:
        """A request's prompt: the load's one length, or drawn from its distribution's points."""
        return P if not load.prompt_points else max(int(round(rng.choice(pts, p=wts))), 1)
    D = load.output_tokens - 1
    K = int(load.chunk_tokens or costs.chunk_tokens)
    cap = int(min(math.floor(float(costs.kv_capacity)), load.max_seqs or costs.max_seqs))
    tau_p = float(costs.prompt_token_s)
    # data-parallel attention: each request's prompt runs on the group it was sent to (round robin),
    # and a step waits for its busiest group (`StepCosts.prompt_group_token_s`)
    tau_g, groups = float(np.asarray(costs.prompt_group_token_s)), max(int(np.asarray(costs.attention_groups)), 1)
    sent = 0
    extra = float(np.asarray(costs.prompt_step_s))
    save = float(np.asarray(costs.request_server_s))   # the server's own work per admitted request
    # τ_dec(b) for b = 0 … cap, tabulated once; a step with no decoding sequence still costs τ_dec(1)
    tdec = decode_step_s(costs, [max(b, 1) for b in range(cap + 1)])
    if load.kind == "closed":
        # clients start at random over one request's life (think time included): started together,
        # their prompts would share steps and, with fixed output lengths, stay in that convoy forever
        b = min(int(load.concurrency), cap)
        life = (D + 1) * tdec[b] + (b + 1) * P * tau_p + load.think_s
        first = min(int(load.concurrency), run) if run else int(load.concurrency)
        arrivals = [0.0] * first if together else sorted(rng.uniform(0.0, life, first).tolist())
    else:
        arrivals = [rng.exponential(1.0 / load.rate_rps)]      # Poisson: the next arrival, drawn as we go
    waiting = deque()           # arrived, no slot yet (FCFS)
    prefill = deque()           # admitted, [arrival time, prompt tokens left], FCFS
    finishes = defaultdict(list)    # step number → (arrival, first-token time) of the requests it completes
    n_dec, t, step = 0, 0.0, 0
    log, done, queue = [], [], []
    for _ in range(steps):
        while arrivals and arrivals[0] <= t:
            a = heapq.heappop(arrivals)
            waiting.append(a)
            if load.kind == "open":
                heapq.heappush(arrivals, a + rng.exponential(1.0 / load.rate_rps))
        admitted = 0
        while waiting and len(prefill) + n_dec < cap:          # a slot per admitted request
            prefill.append([waiting.popleft(), prompt_len(), sent % groups])
            sent += 1
            admitted += 1
        if not prefill and n_dec == 0:                          # idle: wait for the next arrival
            t = arrivals[0]
            continue
        # the step decodes n_dec sequences and fills the rest of its budget with prompt tokens, FCFS
        # (at least one, as in the analytic model, so prompts always move)
        before = [r[1] for r in prefill]
        pi = fill_prompt_budget(prefill, n_dec, K)
        per_group = [0] * groups
        for r, left in zip(prefill, before):
            per_group[r[2]] += left - r[1]
        # a step that carries prompt tokens is an eager pass: its launches on top (prompt_step_s)
        # and each request admitted before it costs the server its own work first (everyone waits)
        dt = (tdec[n_dec] + pi * tau_p + tau_g * (max(per_group) - pi / groups) + (extra if pi else 0.0)
              + admitted * save)
        t += dt
        step += 1
        b = n_dec
        for arrival, first in finishes.pop(step, ()):          # their last token came out in this step
            n_dec -= 1
            done.append((arrival, first, t))
            if load.kind == "closed" and (not run or issued < run):
                # exponential think time of the load's mean: the jitter of real clients, which keeps
                # them from merging into lockstep convoys (the analytic model uses only the mean)
                heapq.heappush(arrivals, t + (rng.exponential(load.think_s) if load.think_s else 0.0))
                issued += 1
        if run and len(done) == run:                            # the run's last answer: measured whole
            return Sim(ttft_ms=math.nan, ttft_p90_ms=math.nan, itl_ms=math.nan, throughput_tok_s=produced / t,
                       running_batch=math.nan, completed=run, queue=queue)
        firsts = 0
        while prefill and prefill[0][1] == 0:                   # prompt done: first token now, its decode steps follow
            d = decode_len()
            finishes[step + d].append((prefill.popleft()[0], t))
            produced += d + 1
            n_dec += 1
            firsts += 1
        log.append((t - dt, dt, b, b + firsts))
        queue.append((t, len(waiting)))
    kept = done[int(warmup * len(done)):]
    s = np.array([x for x in log if x[0] >= kept[0][2]])
    span = t - s[0, 0]                                          # wall time, idle gaps included
    # the request's own setup is a fixed latency before its first token (host work, not server time)
    ttfts = np.array([f - a for a, f, _ in kept]) + float(np.asarray(costs.request_s))
    return Sim(ttft_ms=1e3 * float(np.mean(ttfts)), ttft_p90_ms=1e3 * float(np.quantile(ttfts, 0.9)),
               itl_ms=1e3 * np.mean([(c - f) / D for _, f, c in kept]),
               throughput_tok_s=s[:, 3].sum() / span, running_batch=(s[:, 2] * s[:, 1]).sum() / span,
               completed=len(kept), queue=queue)


# ---- step costs ------------------------------------------------------------------------------------

CAT = api.load_catalog(user=False)
CFG = api.configure(CAT, hardware="H100 SXM5 80GB", model="Llama-3.1-70B", quant="fp8", runtime="vllm", gpus=2,
                    kv_dtype="fp8")


def real_costs(load: Load, cfg=CFG, prompt_fraction: float | None = None) -> StepCosts:
    """What `serving.serve` hands to `solve`: the kernel on the batch grid, then the step costs.
    ``prompt_fraction``: the prompts' compute at that fraction of the peak instead of the profile's
    (of the format's peak: FP8 products reach `gemm_share` of what the fitted fraction gives)."""
    from advisor.model.devices import gemm_share
    from advisor.model.inputs import compute_peak

    eff = efficiency_for(CAT.profiles, cfg.runtime, cfg.hardware)
    if prompt_fraction is not None:
        share = gemm_share(cfg.hardware, cfg.runtime.key, compute_peak(cfg.hardware, cfg.runtime, cfg.quant)[1])
        eff = eff.replace(prefill_compute_fraction=prompt_fraction / share, attention_compute_fraction=prompt_fraction)
    P = load.new_prompt_tokens
    r = evaluate_config(cfg, eff, batch=STEP_GRID, prompt=P, depth=load.prompt_tokens - P, output=load.output_tokens)
    seqs, chunk, paged = serving.runtime_scheduler(cfg.runtime)
    return serving.costs_from_result(r, load, paged, load.max_seqs or seqs, load.chunk_tokens or chunk,
                                     serving.server_sample_s(cfg.runtime.server_sample_ns_per_vocab or 0.0,
                                                             cfg.model.vocab),
                                     serving.prompt_cache_of(cfg.runtime, cfg.gpus))


def synthetic_costs(kv=64.5, tau_p=5e-5, chunk=2048, max_seqs=256, base=0.02, per_seq=3e-4,
                    prompt_step=0.0) -> StepCosts:
    """A simple step: 20 ms fixed plus 0.3 ms per decoding sequence; prompts 50 µs a token."""
    return StepCosts(step_s=base + per_seq * STEP_GRID, step_compute_s=per_seq / 3 * STEP_GRID,
                     step_memory_s=base + per_seq / 2 * STEP_GRID, prompt_token_s=tau_p, kv_capacity=kv,
                     max_seqs=max_seqs, chunk_tokens=chunk, prompt_step_s=prompt_step)


LONG = dict(prompt_tokens=5000, output_tokens=500)     # the motivating workload: long prompts, 70B FP8
SHORT = dict(prompt_tokens=3000, output_tokens=200)    # synthetic: 3000 > K − b, every prompt is chunked
COSTS_LONG = real_costs(Load(**LONG))                  # capacity 88 sequences (KV), K = 8192
#: the same with prompts at half the peak: a 5,000-token prompt takes ~0.36 s, not the ~0.9 s of the
#: Hopper profile (a third of the BF16 peak's share, FP8 products at 0.7 of it), so 32 clients that
#: think put the prompt budget at ~35 %
COSTS_LONG_HALF_PEAK = real_costs(Load(**LONG), prompt_fraction=0.5)
COSTS_SYN = synthetic_costs()                          # capacity 64 sequences (KV), K = 2048


def analytic(costs, load):
    s = serving.solve(costs, load)
    keys = ("ttft_ms", "ttft_p50_ms", "ttft_p90_ms", "itl_ms", "throughput_tok_s", "running_batch", "request_rate_rps")
    return {k: float(np.asarray(getattr(s, k))) for k in keys} | {
        "saturated": bool(np.asarray(s.saturated)), "bound": str(np.asarray(s.bound))}


def close(a, b, rel, abs_=0.0):
    return abs(a - b) <= max(rel * abs(b), abs_)


def check_agreement(costs, load, ttft_rel=0.25, ttft_abs_ms=20.0, **sim_kw):
    a, s = analytic(costs, load), simulate(costs, load, **sim_kw)
    why = f"analytic {a} vs simulated {s}"
    assert close(a["throughput_tok_s"], s.throughput_tok_s, 0.10), why
    assert close(a["itl_ms"], s.itl_ms, 0.10), why
    assert close(a["running_batch"], s.running_batch, 0.10, 1.0), why
    assert close(a["ttft_ms"], s.ttft_ms, ttft_rel, ttft_abs_ms), why
    return a, s


# ---- 1. closed loop: light load, the knee, saturation ----------------------------------------------

@pytest.mark.parametrize("costs,shape,c", [
    *[(COSTS_LONG, LONG, c) for c in (1, 4, 16, 50, 64, 88, 100, 200, 400)],
    *[(COSTS_SYN, SHORT, c) for c in (1, 8, 32, 80, 200)],
])
def test_closed_loop_agrees_with_simulator(costs, shape, c):
    """No think time, light load to saturated: throughput, ITL and running batch within 10 %, mean TTFT
    within 25 % or 20 ms (70B FP8 on 2×H100, 5000/500 tokens, capacity 88; and a synthetic step with
    chunked prompts, capacity 64). Reached: throughput and ITL within 4 %, TTFT within 6 %."""
    check_agreement(costs, Load(kind="closed", concurrency=c, **shape))


def test_closed_loop_just_below_capacity_with_chunked_prompts():
    """The synthetic case at C = 60 of 64 slots, 3000-token prompts over a 1989-token budget: clients
    with no think time come back right after their own last step, so their prompts hardly ever meet
    and nobody waits for the budget (the analytic model adds no wait there; it used to, 37 % high)."""
    check_agreement(COSTS_SYN, Load(kind="closed", concurrency=60, **SHORT))


@pytest.mark.parametrize("c", [1, 8, 32, 200])
def test_eager_prompt_steps_agree_with_simulator(c):
    """Steps that carry a prompt chunk cost 40 ms more (an MoE model's eager launches, ~2 decode
    steps): the simulator charges it on each such step, the analytic model per request's chunks (at
    most every step). Same tolerances; one user's TTFT holds one such step per chunk exactly."""
    costs = synthetic_costs(prompt_step=0.04)
    a, s = check_agreement(costs, Load(kind="closed", concurrency=c, **SHORT))
    plain = analytic(synthetic_costs(), Load(kind="closed", concurrency=c, **SHORT))
    assert a["ttft_ms"] > plain["ttft_ms"] and a["throughput_tok_s"] <= plain["throughput_tok_s"]
    if c == 1:   # 3000 tokens over a 2047-token budget: two chunks, two eager passes
        assert math.isclose(a["ttft_ms"] - plain["ttft_ms"], 2 * 40.0, rel_tol=1e-6)


@pytest.mark.parametrize("costs,shape", [(COSTS_LONG, LONG), (COSTS_SYN, SHORT)])
def test_closed_loop_with_think_time_agrees(costs, shape):
    """8 clients, 5 s (exponential) think time, well below the knee: same tolerances as without
    (TTFT is ~13 % low: see the known disagreement below)."""
    check_agreement(costs, Load(kind="closed", concurrency=8, think_s=5.0, **shape), steps=60_000)


# ---- 2. open loop -----------------------------------------------------------------------------------

def capacity_rate(costs, shape):
    return analytic(costs, Load(kind="offline", **shape))["request_rate_rps"]


@pytest.mark.parametrize("costs,shape,share", [(COSTS_LONG, LONG, 0.2), (COSTS_LONG, LONG, 0.35),
                                               (COSTS_SYN, SHORT, 0.2), (COSTS_SYN, SHORT, 0.35)])
def test_open_loop_below_capacity_agrees(costs, shape, share):
    """Poisson arrivals at 20 % and 35 % of the capacity rate: throughput and ITL within 10 %, TTFT
    within 25 % or 20 ms (reached: TTFT 9–18 % low, the rest within 5 %). Long runs (120,000 steps): at light load the
    Poisson count of a short run alone moves the throughput by 10 %. At 50 % the TTFT is already
    20–25 % low, past it see the known disagreement below."""
    check_agreement(costs, Load(kind="open", rate_rps=share * capacity_rate(costs, shape), **shape), steps=120_000)


@pytest.mark.parametrize("costs,shape", [(COSTS_LONG, LONG), (COSTS_SYN, SHORT)])
def test_open_loop_past_capacity_is_a_growing_queue(costs, shape):
    """At 1.3× the capacity rate the analytic model says saturated ('queue', TTFT infinite) and the
    simulated queue grows roughly at the surplus rate while the server runs at capacity."""
    x_max = capacity_rate(costs, shape)
    load = Load(kind="open", rate_rps=1.3 * x_max, **shape)
    a, s = analytic(costs, load), simulate(costs, load, steps=10_000)
    assert a["saturated"] and a["bound"] == "queue" and math.isinf(float(np.asarray(serving.solve(costs, load).ttft_ms)))
    (t1, q1), (t2, q2) = s.queue[len(s.queue) // 2], s.queue[-1]
    assert 0 < q1 < q2
    assert close((q2 - q1) / (t2 - t1), 0.3 * x_max, 0.35)
    assert close(s.throughput_tok_s, a["throughput_tok_s"], 0.10)


# ---- random arrivals near capacity: the wait for the prompt budget ----------------------------------

@pytest.mark.parametrize("costs,shape,load", [
    (COSTS_LONG_HALF_PEAK, LONG, dict(kind="open", share=0.8)),
    (COSTS_SYN, SHORT, dict(kind="open", share=0.8)),
    (COSTS_LONG_HALF_PEAK, LONG, dict(kind="closed", concurrency=32, think_s=5.0)),
])
def test_random_arrivals_near_capacity_wait_for_the_prompt_budget(costs, shape, load):
    """Poisson arrivals (or clients that think) near capacity wait for other prompts: the analytic
    model's M/D/1 wait at the share of time spent on prompts, plus half a step for arriving mid-step,
    agrees with the simulator within 25 % or 20 ms (it undercounted by 1.5–2× when its utilisation
    was the share of the token budget used per step). With the Hopper profile's own prompt rate the
    budget is busier and the analytic ITL runs ~11 % under the simulator's: the convoys below."""
    if load["kind"] == "open":
        load = dict(kind="open", rate_rps=load["share"] * capacity_rate(costs, shape))
    check_agreement(costs, Load(**load, **shape), steps=60_000)


@pytest.mark.xfail(strict=True, reason="known gap: a closed loop's convoys at a busy prompt budget")
def test_clients_that_think_at_a_busy_prompt_budget_arrive_in_convoys():
    """Not modelled yet. The same 32 clients with the Hopper profile's prompt rate put the budget at
    ~65 %: prompts that queued together are served back to back, decode the same 500 steps, finish
    together and come back within a think time of each other, so the arrivals bunch (the gaps' spread
    is 1.5× their mean, where Poisson's is 1×). The simulator's mean TTFT is ~3.4 s (median 3.2, p90
    6.6), the M/G/1 wait's ~1.2 s; with prompts at half the peak (~35 %) the two agree (above)."""
    check_agreement(COSTS_LONG, Load(kind="closed", concurrency=32, think_s=5.0, **LONG), steps=60_000)


# ---- 3. properties of the analytic model ------------------------------------------------------------

def sweep(costs, shape, cs, **kw):
    return [analytic(costs, Load(kind="closed", concurrency=c, **shape, **kw)) for c in cs]


@pytest.mark.parametrize("costs,shape", [(COSTS_LONG, LONG), (COSTS_SYN, SHORT)])
def test_throughput_rises_then_saturates_flat_and_ttft_turns_up(costs, shape):
    cs = [1, 2, 4, 8, 16, 32, 48, 64, 88, 96, 128, 256, 512, 1024]
    rows = sweep(costs, shape, cs)
    x = [r["throughput_tok_s"] for r in rows]
    # (just below saturation nearly every client decodes, and a prompt slows the C − 1 others rather
    # than the whole running batch: the step into saturation may dip by a few parts in 10^4)
    assert all(b >= a * (1 - 1e-3) for a, b in zip(x, x[1:])), x
    sat = [r for r in rows if r["saturated"]]
    assert sat and all(math.isclose(r["throughput_tok_s"], sat[0]["throughput_tok_s"], rel_tol=1e-9) for r in sat)
    # TTFT barely moves below the knee and grows with the surplus clients past it
    light, knee = rows[0]["ttft_ms"], rows[cs.index(32)]["ttft_ms"]
    assert knee < 1.5 * light
    assert rows[-1]["ttft_ms"] > 10 * knee and rows[-2]["ttft_ms"] > 4 * knee


COST_DRAW = st.builds(synthetic_costs, kv=st.floats(1.5, 500), tau_p=st.floats(1e-6, 2e-4),
                      chunk=st.sampled_from([512, 2048, 8192]), max_seqs=st.sampled_from([16, 256, 1024]),
                      base=st.floats(0.002, 0.05), per_seq=st.floats(1e-5, 1e-3))
LOAD_DRAW = st.fixed_dictionaries({"concurrency": st.integers(1, 2000).map(float),  # clients are whole
                                   "think_s": st.sampled_from([0.0, 2.0]),
                                   "prompt_tokens": st.integers(1, 8000), "output_tokens": st.integers(2, 1000)})
PROPS = settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
@PROPS
@given(COST_DRAW, LOAD_DRAW, st.floats(1.05, 3.0))
def test_more_concurrency_never_lowers_throughput(costs, load, k):
    lo = analytic(costs, Load(kind="closed", **load))
    hi = analytic(costs, Load(kind="closed", **(load | {"concurrency": min(load["concurrency"] * k, 1e6)})))
    assert hi["throughput_tok_s"] >= lo["throughput_tok_s"] * (1 - 1e-6)


@PROPS
@given(COST_DRAW, LOAD_DRAW, st.floats(1.05, 4.0))
def test_more_kv_capacity_never_lowers_throughput(costs, load, k):
    from dataclasses import replace

    lo = analytic(costs, Load(kind="closed", **load))
    hi = analytic(replace(costs, kv_capacity=costs.kv_capacity * k), Load(kind="closed", **load))
    assert hi["throughput_tok_s"] >= lo["throughput_tok_s"] * (1 - 1e-6)


@PROPS
@given(COST_DRAW, LOAD_DRAW, st.integers(1, 4000))
def test_longer_prompt_never_lowers_ttft(costs, load, more):
    lo = analytic(costs, Load(kind="closed", **load))
    hi = analytic(costs, Load(kind="closed", **(load | {"prompt_tokens": load["prompt_tokens"] + more})))
    assert hi["ttft_ms"] >= lo["ttft_ms"] * (1 - 1e-6)


@PROPS
@given(COST_DRAW, LOAD_DRAW)
def test_itl_p90_at_least_mean(costs, load):
    s = serving.solve(costs, Load(kind="closed", **load))
    assert float(s.itl_p99_ms) >= float(s.itl_p90_ms) >= float(s.itl_ms) * (1 - 1e-12)
    assert float(s.ttft_p99_ms) >= float(s.ttft_p90_ms) * (1 - 1e-12) >= float(s.ttft_p50_ms) * (1 - 2e-12)


def test_longer_prompt_never_lowers_ttft_on_the_real_configuration():
    ttft = [serving.serve(CAT, CFG, Load(kind="closed", concurrency=50, prompt_tokens=p, output_tokens=500)).ttft_ms
            for p in (500, 1000, 2000, 5000, 10000, 20000)]
    assert all(b >= a for a, b in zip(ttft, ttft[1:])), ttft


def test_70b_fp8_on_two_h100_serves_50_users_with_long_prompts_under_a_second():
    """The motivating public measurement: Llama 3.1 70B FP8 on 2×H100 with an FP8 KV cache, 50 concurrent
    users, 5000-token prompts and 500-token outputs: TTFT well under a second, not saturated."""
    rep = serving.serve(CAT, CFG, Load(kind="closed", concurrency=50, prompt_tokens=5000, output_tokens=500))
    assert rep.fits and not rep.saturated
    assert rep.ttft_ms < 1000
    assert rep.capacity >= 50 and rep.queue == 0


def test_long_prompts_fill_the_step_budget_before_the_kv_cache():
    """8k prompts, 64-token answers, 2k-token steps: the prompts need more of each step than the
    running batch leaves, so the batch stops below the KV cache's capacity and the rest queue."""
    costs = synthetic_costs(kv=400, tau_p=5e-5, chunk=2048, max_seqs=1024, base=0.02, per_seq=3e-4)
    s = analytic(costs, Load(kind="closed", concurrency=500, think_s=2.0, prompt_tokens=8000, output_tokens=64))
    assert s["saturated"] and s["bound"] == "prefill-budget"
    assert s["running_batch"] < 400
    # prompts take 0.4 s of compute each: the server cannot start much more than 2.5 a second
    assert s["request_rate_rps"] * 8000 * 5e-5 < 1.0
    # the same load with short prompts is held by the KV cache instead
    short = analytic(costs, Load(kind="closed", concurrency=2000, think_s=2.0, prompt_tokens=50, output_tokens=64))
    assert short["bound"] == "kv-capacity" and short["running_batch"] == 400


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_serve_carries_a_band_per_metric(tmp_path, capsys):
    """Issue 25: `serve --json` and `serve --cases --out` carry the band of TTFT, ITL and throughput: the
    load solved at the profile's pessimistic and optimistic edges, around the estimate."""
    import csv
    import json

    from advisor.cli.main import main

    assert main(["serve", "--hardware", "H100 SXM", "--model", "llama 3.1 70b", "--quant", "fp8", "--gpus", "2",
                 "--prompt", "2000", "--output", "300", "--concurrency", "32", "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["ttft_low_ms"] < d["ttft_ms"] < d["ttft_high_ms"]
    assert d["itl_low_ms"] < d["itl_ms"] < d["itl_high_ms"]
    assert d["throughput_low_tok_s"] < d["throughput_tok_s"] < d["throughput_high_tok_s"]
    cases = tmp_path / "in.csv"
    cases.write_text("hardware,model,quant,gpus,prompt,output,concurrency\nH100 SXM,llama 3.1 8b,fp8,1,1000,200,8\n")
    assert main(["serve", "--cases", str(cases), "--out", str(tmp_path / "out.csv")]) == 0
    row = next(csv.DictReader((tmp_path / "out.csv").open()))
    for k in ("ttft_low_ms", "ttft_high_ms", "itl_low_ms", "itl_high_ms", "throughput_low_tok_s", "throughput_high_tok_s"):
        assert float(row[k]) > 0, k
    assert float(row["itl_low_ms"]) <= float(row["itl_ms"]) <= float(row["itl_high_ms"])



# ---- 4. prompts of many lengths ---------------------------------------------------------------------

def test_a_prompt_mix_keeps_its_mean_and_its_tail():
    mix = serving.prompt_mix(2000, 1.0)
    pts, w = np.array(mix["prompt_points"]), np.array(mix["prompt_weights"])
    assert mix["prompt_tokens"] == 2000 and len(pts) == serving.MIX_POINTS and math.isclose(w.sum(), 1.0)
    assert (pts * w).sum() == pytest.approx(2000, rel=1e-6) and pts.max() > 3 * 2000 > 10 * pts.min()
    assert serving.prompt_mix(2000, 0.0)["prompt_points"] == ()
    with pytest.raises(AdvisorError):
        serving.prompt_mix(2000, -1)


@pytest.mark.parametrize("share", [0.5, 0.8])
def test_a_prompt_mix_agrees_with_the_simulator(share):
    """Poisson arrivals of prompts whose lengths vary (log-normal, CV 1, mean 3000 tokens): throughput
    and ITL as for one length, the mean TTFT grown by the second moment of the prompt service (M/G/1)
    and its 90th percentile by the mixture's tail — within 10 % on throughput and ITL and 25 % on
    TTFT mean and p90, where one fixed length would put the p90 about twice as low."""
    shape = dict(prompt_tokens=3000, output_tokens=200)
    rate = share * capacity_rate(COSTS_SYN, shape)
    load = Load(kind="open", rate_rps=rate, output_tokens=200, **serving.prompt_mix(3000, 1.0))
    a, s = check_agreement(COSTS_SYN, load, steps=80_000)
    got = serving.solve(COSTS_SYN, load)
    assert close(float(np.asarray(got.ttft_p90_ms)), s.ttft_p90_ms, 0.25, 20.0), (float(got.ttft_p90_ms), s)
    fixed = serving.solve(COSTS_SYN, Load(kind="open", rate_rps=rate, **shape))
    assert float(np.asarray(got.ttft_p90_ms)) > 1.3 * float(np.asarray(fixed.ttft_p90_ms))


def test_length_traces_are_read_by_content_and_bad_ones_get_one_line(tmp_path):
    from advisor.data.lengths import read_lengths

    (tmp_path / "a.csv").write_text("input_len,output_len\n100,20\n300,40\n")
    (tmp_path / "b.jsonl").write_text('{"prompt_tokens": 100, "completion_tokens": 5}\n{"prompt_tokens": 50, "completion_tokens": 7}\n')
    (tmp_path / "c.txt").write_text("120\n80\n")
    assert read_lengths(tmp_path / "a.csv").mean_prompt == 200 and read_lengths(tmp_path / "a.csv").mean_output == 30
    assert read_lengths(tmp_path / "b.jsonl").prompts == (100, 50)
    assert read_lengths(tmp_path / "c.txt").mean_output is None
    for name, text, says in (("d.csv", "model,latency\nx,1\n", "no prompt-length column"),
                             ("e.jsonl", '{"prompt": -4}\n', "not a positive token count"),
                             ("f.txt", "", "empty"), ("g.jsonl", "{nope\n", "not a JSON object")):
        (tmp_path / name).write_text(text)
        with pytest.raises(AdvisorError, match=says):
            read_lengths(tmp_path / name)
    with pytest.raises(AdvisorError, match="no length trace"):
        read_lengths(tmp_path / "missing.csv")


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_serve_and_recommend_take_a_length_trace(tmp_path, capsys):
    from advisor.cli.main import main

    trace = tmp_path / "trace.csv"
    rng = np.random.default_rng(3)
    rows = ["prompt,output"] + [f"{int(rng.lognormal(7, 1)) + 1},{int(rng.lognormal(5, 0.5)) + 2}" for _ in range(400)]
    trace.write_text("\n".join(rows) + "\n")
    assert main(["serve", "--hardware", "H100 SXM", "--model", "llama 3.1 8b", "--quant", "fp8", "--rate", "5",
                 "--lengths", str(trace), "--json"]) == 0
    d = json.loads(capsys.readouterr().out)
    assert d["load"]["prompt_points"] and d["ttft_p90_ms"] > d["ttft_p50_ms"]
    assert main(["serve", "--hardware", "H100 SXM", "--model", "llama 3.1 8b", "--rate", "5", "--lengths", str(trace),
                 "--prompt", "100"]) == 2
    assert "not both" in capsys.readouterr().err
    assert main(["recommend", "--model", "llama 3.1 8b", "--users", "20", "--lengths", str(trace), "--hardware",
                 "h100 sxm", "--ttft-ms", "500", "--json", "--top", "3"]) in (0, 1)
    assert json.loads(capsys.readouterr().out)["prompt_tokens"] > 1000


def test_a_benchmark_runs_first_wave_is_in_its_ttft():
    """A run of N requests from C clients that all start at once (vllm bench serve --num-prompts N
    --max-concurrency C): the first wave's C prompts queue behind each other, K tokens a step, so the
    run's mean TTFT is above the steady state's and its tail is the wave; one client's run is its
    steady state; the median moves only once the wave is half the run."""
    # lengths that vary (a dataset's): the clients spread after the first wave (one fixed length keeps
    # them in lockstep: the next test)
    mix = dict(kind="closed", concurrency=40, prompt_tokens=1000, output_tokens=200, varied_lengths=True)
    steady = analytic(COSTS_SYN, Load(**mix))
    run = analytic(COSTS_SYN, Load(**mix, requests=200))
    assert run["ttft_ms"] > steady["ttft_ms"] and run["ttft_p90_ms"] > steady["ttft_p90_ms"]
    assert run["ttft_p50_ms"] == steady["ttft_p50_ms"]                 # the wave is 20 % of the run
    # the wave: 40 prompts of 1000 tokens through a 2048-token budget, ~20 steps; its last waits ~20×
    wave = analytic(COSTS_SYN, Load(**mix, requests=40))
    assert wave["ttft_p90_ms"] > 10 * steady["ttft_p50_ms"]
    assert run["throughput_tok_s"] == steady["throughput_tok_s"]
    # only the prompts after the first wave interrupt the decoding: a run of as many requests as
    # clients decodes without them, a run of five times as many carries four fifths of the steady
    # state's prompt work in its steps
    assert wave["itl_ms"] < run["itl_ms"] < steady["itl_ms"]
    assert (steady["itl_ms"] - run["itl_ms"]) / (steady["itl_ms"] - wave["itl_ms"]) == pytest.approx(0.2, rel=0.05)
    # the wave is the top 20 % of the run: the 90th percentile halfway through it, the 99th 95 % of the
    # way to its last prompt
    s_run = serving.solve(COSTS_SYN, Load(**mix, requests=200))
    assert float(s_run.ttft_p99_ms) > 1.5 * float(s_run.ttft_p90_ms) > 1.5 * steady["ttft_p90_ms"]
    assert float(s_run.ttft_p99_ms) <= wave["ttft_p90_ms"] / 0.9 * 1.01     # at most the last of the wave
    one = dict(kind="closed", concurrency=1, prompt_tokens=1000, output_tokens=200)
    assert math.isclose(analytic(COSTS_SYN, Load(**one, requests=10))["ttft_ms"],
                        analytic(COSTS_SYN, Load(**one))["ttft_ms"], rel_tol=0.02)
    for bad in (dict(kind="open", rate_rps=1.0, requests=10), dict(kind="closed", requests=0),
                dict(kind="closed", requests=2.5)):
        with pytest.raises(AdvisorError):
            Load(**bad).check()


#: SGLang bench_serving's random outputs at --random-output-len 1000: drawn evenly from 1 to 1000
UNIFORM_1000 = serving.output_mix(0, samples=np.linspace(2.0, 999.0, 1001), points=serving.BATCH_MIX_POINTS)


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
@pytest.mark.parametrize("c, n", [(16, 80), (4, 100), (64, 320)])
def test_a_finite_runs_throughput_waits_for_its_longest_answers(c, n):
    """A benchmark run of N requests from C clients is timed to its last answer: once the last
    request is sent the clients finish one after another, the longest outputs last, at a shrinking
    batch. Its throughput (what the client prints) is below the steady state's where lengths vary,
    by as much as the step-by-step simulator of the same run finds (the mean of 6 runs)."""
    load = Load(kind="closed", concurrency=c, prompt_tokens=500, varied_lengths=True, requests=n, **UNIFORM_1000)
    a = analytic(COSTS_SYN, load)
    steady = analytic(COSTS_SYN, dataclasses.replace(load, requests=None))
    sims = [simulate(COSTS_SYN, load, steps=10**7, seed=k, together=True).throughput_tok_s for k in range(6)]
    assert a["throughput_tok_s"] < steady["throughput_tok_s"]
    assert close(a["throughput_tok_s"], float(np.mean(sims)), 0.03), (a["throughput_tok_s"], sims, steady)


def test_a_finite_runs_sweep_over_clients_and_an_output_spread_alone_spreads_them(cat):
    """`serve --requests N --sweep`: the throughput-latency curve of runs of N requests, one solve over
    every client count and band edge, each point what `serve` gives at that many clients (it crashed:
    the first wave's decode step was read at one batch per client count, not per edge). An output
    distribution alone is lengths that vary: the clients finish at random moments and do not keep
    the first wave's groups (their TTFT is the steady state's after the wave, not lockstep's)."""
    cfg = api.configure(cat, hardware="h100-sxm5-80gb", model="llama-3.1-8b")
    spread = serving.output_mix(256, 1.0, points=serving.BATCH_MIX_POINTS)
    run = Load(kind="closed", concurrency=64, prompt_tokens=1024, requests=200, **spread)
    sweep = serving.concurrency_sweep(cat, cfg, run)
    assert len(sweep) >= 8 and all(r.fits for r in sweep)
    tok_s = [r.throughput_tok_s for r in sweep]
    assert tok_s[3] > tok_s[1] > tok_s[0]
    one = api.serve(cat, cfg, dataclasses.replace(run, concurrency=8.0))
    assert sweep[3].load.concurrency == 8 and sweep[3].throughput_tok_s == pytest.approx(one.throughput_tok_s, rel=1e-9)
    assert sweep[3].ttft_ms == pytest.approx(one.ttft_ms, rel=1e-9)
    # the output spread alone: after the first wave, the steady state's median TTFT
    long_run = dataclasses.replace(run, concurrency=8.0, requests=100_000)
    assert api.serve(cat, cfg, long_run).ttft_p50_ms == pytest.approx(
        api.serve(cat, cfg, dataclasses.replace(long_run, requests=None)).ttft_p50_ms, rel=1e-9)
    assert Load(kind="closed", **spread).lengths_vary and not Load(kind="closed").lengths_vary


def test_a_finite_run_of_one_client_is_its_requests_back_to_back():
    """One client runs its N requests one after another: N times a request's mean time, the steady
    state's throughput exactly; one fixed length (no distribution) leaves no drain either."""
    one = Load(kind="closed", concurrency=1, prompt_tokens=500, varied_lengths=True, **UNIFORM_1000)
    assert analytic(COSTS_SYN, dataclasses.replace(one, requests=10))["throughput_tok_s"] == pytest.approx(
        analytic(COSTS_SYN, one)["throughput_tok_s"], rel=1e-6)
    fixed = Load(kind="closed", concurrency=16, prompt_tokens=500, output_tokens=500)
    assert analytic(COSTS_SYN, dataclasses.replace(fixed, requests=80))["throughput_tok_s"] == \
        analytic(COSTS_SYN, fixed)["throughput_tok_s"]


@pytest.mark.parametrize("c, prompt, output", [(8, 200, 100), (4, 512, 128), (40, 1000, 200), (30, 300, 300)])
def test_clients_that_start_together_stay_in_lockstep(c, prompt, output):
    """A benchmark run's clients all send their first request at once. With one fixed length and no
    think time nothing ever spreads them: their prompts come back in the groups the first wave
    formed, and every request waits for the step that carries its group's prompts. The reference
    simulator, every client starting at 0, agrees; the steady state of clients at random phases
    (each waiting for its own prompt alone) is 1.6-3x below it. Throughput is the same either way."""
    fixed = dict(kind="closed", concurrency=c, prompt_tokens=prompt, output_tokens=output)
    run = analytic(COSTS_SYN, Load(**fixed, requests=100_000))
    sim = simulate(COSTS_SYN, Load(**fixed), steps=8_000, together=True)
    assert close(run["ttft_ms"], sim.ttft_ms, 0.12)
    assert close(run["ttft_p50_ms"], sim.ttft_ms, 0.12)
    assert close(run["throughput_tok_s"], sim.throughput_tok_s, 0.02)
    steady = analytic(COSTS_SYN, Load(**fixed))
    assert sim.ttft_ms > 1.5 * steady["ttft_ms"]
    # lengths that vary spread the clients: the steady state after the first wave
    mixed = dict(fixed, varied_lengths=True)
    assert analytic(COSTS_SYN, Load(**mixed, requests=100_000))["ttft_p50_ms"] == analytic(COSTS_SYN, Load(**mixed))["ttft_p50_ms"]


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_serve_requests_on_the_command_line(capsys, tmp_path):
    """`serve --requests N` predicts a benchmark run (its first wave in TTFT), says so, and is refused
    without a closed loop; `--cases` takes a `requests` column."""
    import csv
    import json

    from advisor.cli.main import main

    base = ["serve", "--hardware", "H100 SXM", "--model", "llama 3.1 8b", "--prompt", "3000", "--output", "300",
            "--concurrency", "64", "--json"]
    assert main(base) == 0
    steady = json.loads(capsys.readouterr().out)
    assert main(base + ["--requests", "320"]) == 0
    run = json.loads(capsys.readouterr().out)
    assert run["load"]["requests"] == 320 and steady["load"]["requests"] is None
    assert run["ttft_ms"] > steady["ttft_ms"] and run["ttft_p90_ms"] > steady["ttft_p90_ms"]
    assert run["throughput_tok_s"] == steady["throughput_tok_s"]
    assert main(base[:-1] + ["--requests", "320"]) == 0
    assert "a run of 320 requests" in capsys.readouterr().out
    assert main(["serve", "--hardware", "H100 SXM", "--model", "llama 3.1 8b", "--rate", "2", "--requests", "9"]) == 2
    assert "closed loop" in capsys.readouterr().err
    cases = tmp_path / "in.csv"
    cases.write_text("hardware,model,prompt,output,concurrency,requests\nH100 SXM,llama 3.1 8b,3000,300,64,320\n"
                     "H100 SXM,llama 3.1 8b,3000,300,64,\n")
    assert main(["serve", "--cases", str(cases), "--out", str(tmp_path / "out.csv")]) == 0
    rows = list(csv.DictReader((tmp_path / "out.csv").open()))
    assert float(rows[0]["ttft_ms"]) > float(rows[1]["ttft_ms"])


def test_llama_server_pays_its_sampler_per_sequence():
    """llama-server samples every slot's token on the host over the whole vocabulary (128,256
    entries for Llama 3.1): measured +0.48 ms a token over llama-bench on an H100 and an H200. A
    served step carries it per running sequence; the benchmark tools' figures (`predict`) do not,
    nor do engines that sample on the GPU."""
    from advisor.model.predict import predict
    from advisor.model.roofline import Workload
    from advisor.model.serving import server_sample_s

    cfg = api.configure(CAT, hardware="h200", model="llama 3.1 8b", quant="q4_k_m", runtime="llama.cpp")
    per_seq = server_sample_s(cfg.runtime.server_sample_ns_per_vocab or 0.0, cfg.model.vocab)
    assert per_seq == pytest.approx(0.48e-3, rel=0.02)
    bench_ms = 1e3 / predict(CAT, cfg.replace(workload=Workload(1, 512, 128, 0)), check_context=False).decode_tok_s
    one = serving.serve(CAT, cfg, Load(kind="closed", concurrency=1, prompt_tokens=512, output_tokens=128))
    assert one.itl_ms == pytest.approx(bench_ms + 0.48, rel=0.03)
    vllm = api.configure(CAT, hardware="h200", model="llama 3.1 8b", runtime="vllm")
    assert server_sample_s(vllm.runtime.server_sample_ns_per_vocab or 0.0, vllm.model.vocab) == 0.0


def test_prompt_cache_save_is_the_kv_of_one_request_at_its_rate():
    """llama-server saves a finished request's whole KV cache to host memory at ~1.3 GB/s (H100 and
    this VM alike): Llama 3.1 8B's 2,064 tokens at F16 KV, 258 MiB, took 217 ms on the H100. None
    where the runtime has no such cache, none for a state larger than the cache, every GPU's part."""
    from advisor.model.serving import prompt_cache_save_s

    kv_tok = 32 * 8 * 128 * 2 * 2                       # Llama 3.1 8B, F16 KV: 128 KiB a token
    assert prompt_cache_save_s(2064 * kv_tok, 1, 1.3) == pytest.approx(0.208, rel=0.01)
    assert prompt_cache_save_s(2064 * kv_tok, 2, 1.3) == pytest.approx(2 * 0.208, rel=0.01)
    assert prompt_cache_save_s(2064 * kv_tok, 1, 0.0) == 0.0
    assert prompt_cache_save_s(2064 * kv_tok, 1, 1.3, max_gb=0.2) == 0.0     # larger than the cache: skipped
    per_cfg = prompt_cache_save_s(np.array([1e8, 1e8]), np.array([1, 1]), np.array([1.0, 0.0]), np.array([8.59, 8.59]))
    assert per_cfg.tolist() == pytest.approx([0.1, 0.0])


def test_llama_server_saves_each_request_before_its_prompt():
    """One client of 2,000-token prompts on an H100, Llama 3.1 8B F16: the first token came 217 ms
    later with llama-server's default prompt cache than with --cache-ram 0 (319 vs 102 ms); the save
    is in `serve`'s TTFT and note, not in vLLM's, and at 16 clients it holds everyone's steps."""
    cfg = api.configure(CAT, hardware="H100 SXM5 80GB", model="llama 3.1 8b", quant="f16", runtime="llama.cpp")
    load = Load(kind="closed", concurrency=1, prompt_tokens=2000, output_tokens=64)
    with_cache = serving.serve(CAT, cfg, load)
    off = cfg.replace(runtime=dataclasses.replace(cfg.runtime, server_prompt_cache_gb_s=None))
    without = serving.serve(CAT, off, load)
    kv_gb = 32 * 8 * 128 * 2 * 2 * 2064 / 1e9
    assert with_cache.ttft_ms - without.ttft_ms == pytest.approx(kv_gb / 1.3 * 1e3, rel=0.02)
    assert any("prompt cache" in n for n in with_cache.notes) and not any("prompt cache" in n for n in without.notes)
    assert with_cache.itl_ms == pytest.approx(without.itl_ms, rel=1e-9)     # a lone client decodes beside no one
    busy = Load(kind="closed", concurrency=16, prompt_tokens=512, output_tokens=128)
    assert serving.serve(CAT, cfg, busy).itl_ms > serving.serve(CAT, off, busy).itl_ms * 1.1
    assert serving.serve(CAT, cfg, busy).throughput_tok_s < serving.serve(CAT, off, busy).throughput_tok_s
    vllm = api.configure(CAT, hardware="H100 SXM5 80GB", model="llama 3.1 8b", runtime="vllm")
    assert not any("prompt cache" in n for n in serving.serve(CAT, vllm, load).notes)


@pytest.mark.parametrize("c", [1, 4, 12])
def test_server_work_per_request_agrees_with_simulator(c):
    """The server's own work per request (a prompt-cache save) is server time before the prompt:
    in its client's TTFT, and a stall in every other running sequence's steps; the step simulator
    that pays it at each admission agrees."""
    load = Load(kind="closed", concurrency=c, think_s=0.5, prompt_tokens=600, output_tokens=120)
    costs = synthetic_costs(kv=16, max_seqs=16)
    costs = StepCosts(**{**costs.__dict__, "request_server_s": 0.05})
    check_agreement(costs, load, steps=12_000)


def test_a_step_waits_for_its_busiest_attention_group():
    """With data-parallel attention a prompt runs on the one group its request went to: a step that
    carries less than a prompt per group waits for a whole prompt's chunk on one group, past that for
    an even share (`serving.busiest_group_tokens`)."""
    assert serving.busiest_group_tokens(100.0, 1000.0, 8.0) == 100.0
    assert serving.busiest_group_tokens(3000.0, 1000.0, 8.0) == 1000.0
    assert serving.busiest_group_tokens(16000.0, 1000.0, 8.0) == 2000.0
    assert serving.busiest_group_tokens(3000.0, 1000.0, 1.0) == 3000.0


@pytest.mark.parametrize("share", [0.2, 0.5])
def test_data_parallel_attention_agrees_with_the_simulator(share):
    """Eight attention groups, each prompt's own work (60 µs a token on its group) on the group it was
    sent to, round robin: the analytic steady state and a step simulator that charges each step its
    busiest group agree, and the steps are slower than the same work spread over every group."""
    costs = synthetic_costs(tau_p=1.5e-5, kv=128, max_seqs=128)
    grouped = StepCosts(**{**costs.__dict__, "prompt_group_token_s": 6e-5, "attention_groups": 8.0})
    shape = dict(prompt_tokens=800, output_tokens=200)
    load = Load(kind="open", rate_rps=share * capacity_rate(grouped, shape), **shape)
    a, _ = check_agreement(grouped, load, steps=60_000)
    assert a["itl_ms"] > analytic(costs, load)["itl_ms"]


def test_deepseek_with_data_parallel_attention_pays_for_its_busiest_group():
    """DeepSeek-R1 on eight H200s with SGLang, attention data-parallel over 8 groups and the experts
    over all 8 GPUs: the kernel hands the serving model each prompt's own-group work, and at 32 clients
    (a prompt every few steps) the inter-token latency is higher than if every prompt were spread."""
    from advisor.model.layout import Layout

    cfg = api.configure(CAT, hardware="H200", model="DeepSeek-R1", quant="fp8", runtime="sglang", gpus=8)
    cfg = cfg.replace(layout=Layout(tp=1, pp=1, ep=8, dp_attention=8))
    load = Load(kind="closed", concurrency=32, prompt_tokens=1000, output_tokens=300)
    costs = real_costs(load, cfg)
    assert float(np.asarray(costs.attention_groups)) == 8.0
    assert float(np.asarray(costs.prompt_group_token_s)) > 4 * float(np.asarray(costs.prompt_token_s)) / 8
    spread = StepCosts(**{**costs.__dict__, "attention_groups": 1.0})
    assert analytic(costs, load)["itl_ms"] > 1.05 * analytic(spread, load)["itl_ms"]
    # and without data-parallel attention nothing changes
    plain = real_costs(load, api.configure(CAT, hardware="H200", model="DeepSeek-R1", quant="fp8", runtime="sglang",
                                           gpus=8))
    assert float(np.asarray(plain.prompt_group_token_s)) == 0.0


def test_a_closed_loop_never_gets_more_than_the_full_server():
    """llama-server's 4 slots on an RTX 4090: four clients keep every slot busy, as eight do, so
    both get what the full server gives (the step simulator: the same figure for 4, 5 and 8
    clients). The prompt charge of C − 1 others put four clients 0.6 % above eight before."""
    cfg = api.configure(CAT, hardware="rtx 4090", model="llama 3.1 8b", quant="q4_k_m", runtime="llama.cpp")
    load = dict(kind="closed", prompt_tokens=1024, output_tokens=256)
    costs = real_costs(Load(**load, concurrency=4), cfg)
    assert float(costs.max_seqs) == 4 and float(np.asarray(costs.kv_capacity)) > 4     # the slots bind
    thr = {c: analytic(costs, Load(**load, concurrency=c))["throughput_tok_s"] for c in (3, 4, 5, 8)}
    assert thr[3] < thr[4] == pytest.approx(thr[5], rel=1e-6) == pytest.approx(thr[8], rel=1e-6)
    sim = simulate(costs, Load(**load, concurrency=4), steps=10_000)
    assert close(thr[4], sim.throughput_tok_s, 0.02)


def test_batched_mixture_of_experts_on_llama_cpp_says_it_is_optimistic():
    """llama.cpp on an H100 decoded 2-64 sequences of a Qwen3-30B-A3B-shaped model 1.2-1.7× slower
    than the model gives (one sequence matched): `serve` and `predict` say so where it applies, and
    nowhere else (a dense model, one sequence, vLLM)."""
    from advisor.model.notes import batched_experts_note

    moe = api.configure(CAT, hardware="H100 SXM5 80GB", model="qwen3-30b-a3b", quant="q8_0", runtime="llama.cpp")
    assert batched_experts_note(moe, 16) and batched_experts_note(moe, 1) is None
    dense = api.configure(CAT, hardware="H100 SXM5 80GB", model="llama 3.1 8b", quant="q8_0", runtime="llama.cpp")
    vllm = api.configure(CAT, hardware="H100 SXM5 80GB", model="qwen3-30b-a3b", runtime="vllm")
    assert batched_experts_note(dense, 16) is None and batched_experts_note(vllm, 16) is None
    busy = serving.serve(CAT, moe, Load(kind="closed", concurrency=8, prompt_tokens=512, output_tokens=128))
    assert any("mixture of experts at once" in n for n in busy.notes)
    lone = serving.serve(CAT, moe, Load(kind="closed", concurrency=1, prompt_tokens=512, output_tokens=128))
    assert not any("mixture of experts at once" in n for n in lone.notes)
    # the band's slow edge allows for it (1 + 0.125 · log2 B, as measured), the estimate and the fast edge do not move
    from advisor.model.predict import predict
    from advisor.model.roofline import Workload, experts_slowdown

    assert experts_slowdown(0.125, [1, 16, 64, 1000]).tolist() == pytest.approx([1.0, 1.5, 1.75, 1.75])
    p16 = predict(CAT, moe.replace(workload=Workload(16, 512, 128, 0)), check_context=False)
    plain = dataclasses.replace(moe.runtime, batched_experts_slow_per_doubling=None)
    q16 = predict(CAT, moe.replace(runtime=plain, workload=Workload(16, 512, 128, 0)), check_context=False)
    assert p16.decode_tok_s == pytest.approx(q16.decode_tok_s)
    assert p16.decode_low_tok_s == pytest.approx(q16.decode_low_tok_s / 1.5)
    assert p16.decode_high_tok_s == pytest.approx(q16.decode_high_tok_s)
    wide = serving.serve(CAT, moe, Load(kind="closed", concurrency=16, max_seqs=16, prompt_tokens=512, output_tokens=128))
    narrow = serving.serve(CAT, moe.replace(runtime=plain),
                           Load(kind="closed", concurrency=16, max_seqs=16, prompt_tokens=512, output_tokens=128))
    assert wide.throughput_tok_s == pytest.approx(narrow.throughput_tok_s)
    assert wide.throughput_low_tok_s < narrow.throughput_low_tok_s / 1.3 and wide.itl_high_ms > narrow.itl_high_ms * 1.3


def test_serve_without_the_prompt_cache(capsys):
    """`serve --no-prompt-cache` is llama-server started with --cache-ram 0: the save and its note go
    (measured on the H100, one client of 2,000-token prompts: 319 ms with the cache, 102 ms without)."""
    from advisor.cli.main import main

    args = ["serve", "--hardware", "H100 SXM5 80GB", "--model", "llama 3.1 8b", "--quant", "f16", "--runtime",
            "llama.cpp", "--prompt", "2000", "--output", "64", "--json"]
    assert main(args) == 0
    cached = json.loads(capsys.readouterr().out)
    assert main(args + ["--no-prompt-cache"]) == 0
    off = json.loads(capsys.readouterr().out)
    assert cached["ttft_ms"] - off["ttft_ms"] == pytest.approx(271.0 / 1.3, rel=0.02)   # 271 MB at 1.3 GB/s
    assert any("prompt cache" in n for n in cached["notes"]) and not any("prompt cache" in n for n in off["notes"])
    assert off["ttft_ms"] == pytest.approx(102, rel=0.25)


def test_serve_widens_its_band_by_the_catalogs_serving_bands(cat):
    """`serve`'s band is the load solved at the profile's edges, widened by how far past such edges
    servers were measured (catalog/serving_bands.yaml): a batch sent at once by the batch factors, a
    steady state by the steady ones; the estimate never moves, and without entries nothing widens."""
    from advisor.data.specs import ServingBand

    cfg = api.configure(cat, hardware="H100 SXM", model="llama 3.1 8b", quant="fp8")
    plain = dataclasses.replace(cat, serving_bands={})

    def bands(mode, below, above):
        return {f"{mode}-{m}": ServingBand(key=f"{mode}-{m}", mode=mode, metric=m, below=below, above=above, rows=100,
                                           sources=5, source="test") for m in ("ttft", "itl", "throughput")}

    batch = Load(kind="offline", requests=200, prompt_tokens=500, output_tokens=100)
    steady = Load(kind="closed", concurrency=8, prompt_tokens=500, output_tokens=100)
    wide = dataclasses.replace(cat, serving_bands={**bands("batch", 2.0, 3.0), **bands("steady", 1.5, 1.25)})
    for load, (below, above) in ((batch, (2.0, 3.0)), (steady, (1.5, 1.25))):
        assert serving.band_mode(load) == ("batch" if load is batch else "steady")
        a, b = serving.serve(plain, cfg, load), serving.serve(wide, cfg, load)
        assert b.ttft_ms == a.ttft_ms and b.itl_ms == a.itl_ms and b.throughput_tok_s == a.throughput_tok_s
        for f in ("ttft", "itl"):
            assert getattr(b, f"{f}_low_ms") == pytest.approx(getattr(a, f"{f}_low_ms") / below)
            assert getattr(b, f"{f}_high_ms") == pytest.approx(getattr(a, f"{f}_high_ms") * above)
        assert b.throughput_low_tok_s == pytest.approx(a.throughput_low_tok_s / below)
        assert b.throughput_high_tok_s == pytest.approx(a.throughput_high_tok_s * above)
        # a percentile's band and end to end follow
        assert b.latency("ttft", "p99")[2] == pytest.approx(a.latency("ttft", "p99")[2] * above)
        assert b.latency("e2e")[2] > a.latency("e2e")[2]
    # the shipped catalog widens too (its factors are ≥ 1), so its band holds the plain one
    shipped, bare = serving.serve(cat, cfg, batch), serving.serve(plain, cfg, batch)
    assert shipped.itl_low_ms <= bare.itl_low_ms and shipped.itl_high_ms >= bare.itl_high_ms
    assert shipped.throughput_high_tok_s >= bare.throughput_high_tok_s


def test_a_servers_prompt_pays_its_all_reduces_per_token():
    """A prompt's cost per token in a server's steps is the part of its pass that grows with its
    tokens: the products, the element-wise kernels between them and, under tensor parallel, each
    layer's all-reduce of the activations (Llama 3.1 70B on 4 × H100: ~10 % of a 2,000-token pass).
    The weight reads and launches are per pass and stay out; one GPU has no all-reduce."""
    load = Load(kind="closed", concurrency=8, prompt_tokens=2000, output_tokens=200)
    for gpus in (4, 1):
        cfg = api.configure(CAT, hardware="H100 SXM5 80GB", model="Llama 3.1 70B" if gpus > 1 else "Llama 3.1 8B",
                            quant="fp8", runtime="vllm", gpus=gpus)
        eff = efficiency_for(CAT.profiles, cfg.runtime, cfg.hardware)
        r = evaluate_config(cfg, eff, batch=STEP_GRID, prompt=2000, output=200)
        compute, transfer = float(np.ravel(r.prefill_compute_s)[0]), float(np.ravel(r.prefill_transfer_s)[0])
        elementwise = float(np.ravel(r.prefill_activation_bytes)[0]) / (
            cfg.hardware.bandwidth_gb_s * 1e9 * float(eff.decode_bw_fraction))
        costs = real_costs(load, cfg)
        assert float(np.ravel(costs.prompt_token_s)[0]) == pytest.approx((compute + elementwise + transfer) / 2000,
                                                                         rel=1e-6)
        assert 0.02 * compute < elementwise < 0.5 * compute
        if gpus > 1:
            assert transfer > 0.05 * compute          # the all-reduces are a real share of the prompt
        else:
            assert transfer == 0.0
        # and the whole pass costs more than its per-token part: the weight reads and launches
        assert float(np.ravel(r.prefill_s)[0]) > compute + elementwise + transfer


def test_a_prompts_element_wise_kernels_read_and_write_the_activations():
    """Between its products a prompt pass runs memory-bound element-wise kernels (`Geometry.activation_bytes`):
    two fused add-RMSNorms per layer read and write 4 × hidden 16-bit values per token on every GPU of a
    tensor-parallel group, since each holds the whole hidden state; RoPE and the gated activation are
    split over it. So their share of a pass grows with the group: Llama 3.1 70B's norms move 10.5 MB
    a token on each of eight GPUs whose products take an eighth of the FLOPs each."""
    from advisor.model.geometry import geometry
    from advisor.model.inputs import inputs_for
    from advisor.model.roofline import Workload, evaluate

    g = geometry(CAT.models["llama-3.1-70b"])
    replicated, split, experts = g.activation_bytes
    assert replicated == 2 * 80 * 2 * 4 * 8192                       # 10.5 MB per token
    assert split == 2 * (80 * 2 * (64 + 8) * 128 + 3 * 80 * 28672)   # RoPE on q and k, SwiGLU
    assert experts == 0
    moe = geometry(CAT.models["deepseek-r1"])
    assert moe.activation_bytes[2] == 2 * 3 * 58 * 8 * 2048          # each routed expert a token visits
    h100 = CAT.hardware["h100-sxm5-80gb"]
    cfg = api.configure(CAT, hardware="H100 SXM5 80GB", model="Llama 3.1 70B", quant="bf16", runtime="vllm", gpus=8)
    eff = efficiency_for(CAT.profiles, cfg.runtime, h100)
    shares = {}
    for tp in (1, 8):
        x = inputs_for(h100, cfg.runtime, cfg.quant, cfg.kv_dtype, eff, tp, "tp",
                       Workload(batch=1, prompt_tokens=8000, output_tokens=1))
        r = evaluate(g, x)
        act = float(r.prefill_activation_bytes)
        assert act == pytest.approx(8000 * (replicated + split / tp))
        shares[tp] = act / (h100.bandwidth_gb_s * 1e9 * float(eff.decode_bw_fraction)) / float(r.prefill_compute_s)
    assert shares[8] > 2.5 * shares[1]      # the norms do not shrink with the group; the products do
    # the explanation gives their bytes and time
    cfg = cfg.replace(workload=Workload(batch=1, prompt_tokens=8000, output_tokens=1))
    text = api.explain(CAT, cfg, api.predict(CAT, cfg))["ttft"].text
    per_gpu_gb = 8000 * (replicated + split / 8) / 1e9
    assert f"move {per_gpu_gb:.0f} GB per GPU" in text and "element-wise kernels" in text
