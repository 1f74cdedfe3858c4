"""Serving under load: continuous batching with chunked prefill, in steady state.

A server runs one engine step after another. Each step decodes one token for every sequence in
the running batch b and spends what is left of its token budget K (the runtime's chunk size) on
prompt tokens of arriving requests. Requests beyond what the KV cache or the max-sequences
setting holds wait in a queue. Per step, with the decode step time τ_dec(b) from the roofline
kernel (weights read once, every sequence's KV read, fixed and per-sequence costs) and a marginal cost τ_p per
prompt token (its linear and attention FLOPs at the attained compute rate):

    step time        τ(b) = τ_dec(b) + π · τ_p,   π = prompt tokens per step
    decode phase     a request decodes D = output − 1 tokens, one per step
    Little's law     b = X · D · τ           (X requests/s in steady state)
    prompt tokens    π = X · P′ · τ          (P′ = prompt not served from the prefix cache)
    ⇒                τ(b) = τ_dec(b) + min(b, C − 1) · P′ · τ_p / D

A request's own prompt comes before its first token: while one client's prompt runs, at most the
other C − 1 clients of a closed loop decode (one lone client decodes at the bare step); open loop and
offline, every running sequence shares the steps that carry prompts.

Closed loop (C clients, think time Z): C = X · (TTFT + D·τ + Z), solved for b by bisection;
open loop (Poisson, R requests/s): b = R · D · τ(b); offline (all queued): b at capacity. When
the demand exceeds the capacity b_max = min(KV capacity, max sequences), b = b_max and the rest
queue (closed loop: the surplus clients wait; open loop: the queue grows without bound).

TTFT is the steps that carry the prompt's chunks (P′ / (K − b) of them, at least one, each a
decode step plus its share of the prompt's compute), plus — for arrivals at random moments — the
wait for other prompts (M/D/1 at the share of time spent on prompts) and half a step, plus the
queue. With data-parallel attention a prompt's own work (its non-expert products and attention)
runs on the one group its request went to, and the step waits for the busiest group
(`busiest_group_tokens`). A step-by-step simulator of the same scheduler in tests/core/test_serving.py is the
reference this is checked against. ITL is the step time; its 90th percentile is
the time of a step that carries a full prompt chunk when such steps are common. Everything is
vectorised over configurations: the recommender solves the whole catalog in one call.
"""

from __future__ import annotations

import dataclasses
import heapq
import math
from dataclasses import dataclass
from typing import Any

import numpy as np

from advisor.data.errors import AdvisorError

LOAD_KINDS = ("closed", "open", "offline")
#: Batch sizes at which the decode step is evaluated; τ_dec between them is interpolated linearly.
STEP_GRID = np.array([1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192], dtype=float)
#: Halvings of the log-scale search (`bisect_rising`): 16 leave a bracket 1/65536 of it wide.
BISECTION_STEPS = 16
#: The smallest running batch the solver looks for (a lone client thinking for a day is ~1e-6).
B_MIN = 1e-12
#: Steps that carry a prompt chunk set the 90th-percentile ITL once more than this share of steps
#: do, and the 99th once more than a hundredth of them do (a percentile lands on the slow steps
#: when more of the gaps than its tail are slow).
MIXED_STEP_SHARE_FOR_P90 = 0.10
MIXED_STEP_SHARE_FOR_P99 = 0.01
MAX_CONCURRENCY = 1_000_000


@dataclass(frozen=True)
class Load:
    """What arrives at the server. Lengths in tokens, time in seconds."""

    kind: str = "closed"              # closed | open | offline
    concurrency: float = 1.0          # closed loop: clients, each with one request in flight or thinking
    rate_rps: float = 0.0             # open loop: Poisson arrivals per second
    think_s: float = 0.0              # closed loop: pause between a response and the next request
    prompt_tokens: int = 1024
    output_tokens: int = 256
    prefix_hit: float = 0.0           # fraction of each prompt found in the prefix cache
    max_seqs: int | None = None       # running sequences at most (None: the runtime's default)
    chunk_tokens: int | None = None   # tokens per step, decode and prompt together (None: the runtime's)
    #: the prompt lengths' distribution, as points with weights (`prompt_mix`); empty = every prompt is
    #: ``prompt_tokens`` long. ``prompt_tokens`` stays the mean, which the steady state uses.
    prompt_points: tuple[float, ...] = ()
    prompt_weights: tuple[float, ...] = ()
    #: the output lengths' distribution, as points with weights (`output_mix`); empty = every output is
    #: ``output_tokens`` long, which stays the mean. A batch of requests sent at once (offline with
    #: ``requests``) drains at its end through the longest of them (`batch_run`)
    output_points: tuple[float, ...] = ()
    output_weights: tuple[float, ...] = ()
    #: the requests' lengths vary (a dataset such as ShareGPT, or lengths drawn at random) though no
    #: distribution is given: a closed loop's clients then finish at random moments, and their next
    #: prompts arrive as a random stream would (`solve`)
    varied_lengths: bool = False
    #: a closed loop measured over a finite run (``vllm bench serve --num-prompts N
    #: --max-concurrency C``, SGLang's bench_serving): every client sends its first request at
    #: once, and that first wave's prompts queue behind each other. Offline: a batch job of this many
    #: requests, all sent at once, timed from the first to the last (`batch_run`). None = the steady
    #: state alone.
    requests: int | None = None
    #: the server keeps its host-memory prompt cache (llama-server's default; `--cache-ram 0` turns it
    #: off), which saves every finished request before the next prompt (`prompt_cache_save_s`)
    prompt_cache: bool = True

    @property
    def lengths_vary(self) -> bool:
        """The requests differ in length (said so, or a prompt or output distribution given): the
        clients of a closed loop finish at random moments."""
        return bool(self.varied_lengths or self.prompt_points or self.output_points)

    def check(self) -> None:
        if self.kind not in LOAD_KINDS:
            raise AdvisorError(f"load must be one of {', '.join(LOAD_KINDS)}, got {self.kind!r}")
        if self.kind == "closed" and not (1 <= self.concurrency <= MAX_CONCURRENCY):
            raise AdvisorError(f"concurrency must be between 1 and {MAX_CONCURRENCY:,}, got {self.concurrency:g}")
        if self.kind == "open" and not (0 < self.rate_rps < 1e6 and math.isfinite(self.rate_rps)):
            raise AdvisorError(f"rate must be a positive number of requests per second, got {self.rate_rps:g}")
        if not (0 <= self.think_s < 1e6):
            raise AdvisorError(f"think time must be between 0 and 1e6 s, got {self.think_s:g}")
        if self.prompt_tokens < 1 or self.output_tokens < 2:
            raise AdvisorError("serving needs a prompt of at least 1 token and an output of at least 2")
        if self.requests is not None and (isinstance(self.requests, bool) or not isinstance(self.requests, (int, np.integer))
                                          or not 1 <= self.requests <= 100_000_000):
            raise AdvisorError(f"requests must be a whole number from 1 to 1e8, got {self.requests!r}")
        if self.requests is not None and self.kind == "open":
            raise AdvisorError("a run of a number of requests is a closed loop of clients (--concurrency) or a "
                               "batch sent at once (--offline)")
        if not (0 <= self.prefix_hit < 1):
            raise AdvisorError(f"prefix hit must be a fraction in [0, 1), got {self.prefix_hit:g}")
        for name, v in (("max sequences", self.max_seqs), ("chunk tokens", self.chunk_tokens)):
            if v is not None and (isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 1):
                raise AdvisorError(f"{name} must be a whole number of at least 1, got {v!r}")
        if len(self.prompt_points) != len(self.prompt_weights) or (
                self.prompt_points and (min(self.prompt_points) < 1 or min(self.prompt_weights) < 0
                                        or not math.isclose(sum(self.prompt_weights), 1.0, rel_tol=1e-6))):
            raise AdvisorError("the prompt length distribution needs positive lengths and weights that sum to 1")
        if len(self.output_points) != len(self.output_weights) or (
                self.output_points and (min(self.output_points) < 2 or min(self.output_weights) < 0
                                        or not math.isclose(sum(self.output_weights), 1.0, rel_tol=1e-6))):
            raise AdvisorError("the output length distribution needs lengths of at least 2 and weights that sum to 1")

    @property
    def new_prompt_tokens(self) -> float:
        """Prompt tokens the server computes: what the prefix cache does not hold (at least one)."""
        return max(self.prompt_tokens * (1.0 - self.prefix_hit), 1.0)

    def new_prompt_points(self) -> tuple[np.ndarray, np.ndarray]:
        """The computed prompt lengths as (points, weights): one point at the mean without a distribution."""
        if not self.prompt_points:
            return np.array([self.new_prompt_tokens]), np.array([1.0])
        pts = np.maximum(np.asarray(self.prompt_points, float) * (1.0 - self.prefix_hit), 1.0)
        return pts, np.asarray(self.prompt_weights, float)


#: Points a prompt-length distribution is described by (equal-probability quantiles).
MIX_POINTS = 16
#: Points an output-length distribution is described by where a batch's drain depends on its tail: the
#: top point is the 99.8th percentile, what a batch of a few hundred reaches (`batch_run`)
BATCH_MIX_POINTS = 256


def _length_points(what: str, mean: float, spread: float, samples, points: int, top: float | None):
    """Equal-probability quantile points of a length distribution: of ``samples`` (a trace's lengths),
    or of a log-normal of the given mean and coefficient of variation ``spread`` (0: None, every
    length the mean), cut at ``top`` (a client's cap on each request) with the mean kept. Returns
    (mean, points or None)."""
    q = (np.arange(points) + 0.5) / points
    if samples is not None:
        xs = np.asarray(samples, float)
        if xs.size == 0 or not np.all(np.isfinite(xs)) or xs.min() < 1:
            raise AdvisorError(f"{what} lengths must be positive numbers")
        return float(xs.mean()), np.maximum(np.quantile(xs, q), 1.0)
    if not (0 <= spread <= 10):
        raise AdvisorError(f"the {what} spread (coefficient of variation) must be between 0 and 10, got {spread:g}")
    if spread == 0:
        return mean, None
    from statistics import NormalDist

    sigma = math.sqrt(math.log1p(spread * spread))
    z = np.array([NormalDist().inv_cdf(float(x)) for x in q])
    pts = mean * np.exp(sigma * z - sigma * sigma / 2.0)
    pts *= mean / pts.mean()   # the points' mean is the mean asked for
    if top is not None:
        if top < mean:
            raise AdvisorError(f"the {what} lengths' cap ({top:g}) is below their mean ({mean:g})")
        for _ in range(50):    # cut the tail, lift the rest back to the mean: a few rounds settle it
            pts = np.minimum(pts, top)
            pts *= mean / pts.mean()
        pts = np.minimum(pts, top)
    return mean, np.maximum(pts, 1.0)


def prompt_mix(mean: float, spread: float = 0.0, samples=None, points: int = MIX_POINTS) -> dict:
    """Load fields for a distribution of prompt lengths: from ``samples`` (a trace's lengths), or a
    log-normal of the given mean and coefficient of variation ``spread`` (0 = all the same). Returns
    ``prompt_tokens`` (the mean), ``prompt_points`` and ``prompt_weights`` (equal-probability
    quantile points: the long tail a few long prompts make is what sets TTFT's tail)."""
    mean, pts = _length_points("prompt", mean, spread, samples, points, None)
    if pts is None:
        return {"prompt_tokens": int(round(mean)), "prompt_points": (), "prompt_weights": ()}
    return {"prompt_tokens": max(int(round(mean)), 1), "prompt_points": tuple(float(x) for x in pts),
            "prompt_weights": tuple([1.0 / len(pts)] * len(pts))}


def output_mix(mean: float, spread: float = 0.0, samples=None, points: int = MIX_POINTS, top: float | None = None) -> dict:
    """Load fields for a distribution of output lengths, as `prompt_mix` for prompts: ``output_tokens``
    (the mean), ``output_points`` and ``output_weights``. ``top``: the longest output a request may
    have (a benchmark client's cap on prompt + output, say). What a batch of requests sent at once
    takes depends on it: the longest outputs finish last, at a small batch (`batch_run`)."""
    mean, pts = _length_points("output", mean, spread, samples, points, top)
    if pts is None:
        return {"output_tokens": max(int(round(mean)), 2), "output_points": (), "output_weights": ()}
    pts = np.maximum(pts, 2.0)
    return {"output_tokens": max(int(round(float(pts.mean()))), 2), "output_points": tuple(float(x) for x in pts),
            "output_weights": tuple([1.0 / len(pts)] * len(pts))}


@dataclass(frozen=True)
class StepCosts:
    """Per configuration (arrays of one shape, or scalars): what the solver needs from the kernel."""

    step_s: Any            # (G, …) decode step time at each STEP_GRID batch, seconds
    step_compute_s: Any    # (G, …) its compute part (for which roof binds)
    step_memory_s: Any     # (G, …) its memory part
    prompt_token_s: Any    # marginal time of one prompt token in a mixed step
    kv_capacity: Any       # running sequences the KV budget holds at the average context
    max_seqs: Any
    chunk_tokens: Any
    #: the request's own setup before its first pass (latency, not server time: it is host work
    #: that overlaps other requests' steps)
    request_s: Any = 0.0
    #: what a step that carries a prompt chunk costs beyond a decode step (the runtime's eager
    #: launches of a prompt pass, `Runtime.prefill_moe_layer_us`): server time, paid once per such step
    prompt_step_s: Any = 0.0
    #: the server's own work for each arriving request before its prompt, on the thread that runs
    #: every sequence (llama-server saving a finished request's KV to its prompt cache,
    #: `prompt_cache_save_s`): server time, once per request; everyone running waits through it
    request_server_s: Any = 0.0
    #: the scheduler runs a waiting prompt's chunks as prefill batches of their own, ahead of the
    #: decode (SGLang: `Runtime.prefill_first`), not inside the decode steps (vLLM, TensorRT-LLM)
    prefill_first: bool = False
    #: data-parallel attention: the marginal time of one prompt token's work that stays on its own
    #: attention group (the non-expert products and the attention, at that group's GPUs alone), and
    #: the groups. `prompt_token_s` spreads it over every group; a step waits for its busiest group
    #: (`busiest_group_tokens`). 0 and 1 without data-parallel attention
    prompt_group_token_s: Any = 0.0
    attention_groups: Any = 1.0
    #: the vendor's published maximum for the instance, output tok/s (`advisor.model.ceilings`; inf where
    #: none): a served step of b sequences, the prompt work it carries included, takes at least b / it.
    #: ``step_s`` is the decode step before it (`Result.decode_free_tok_s`)
    ceiling_tok_s: Any = math.inf


@dataclass(frozen=True)
class Serving:
    """Steady-state figures of one load on one or many configurations (arrays of one shape)."""

    ttft_ms: Any
    ttft_p50_ms: Any
    ttft_p90_ms: Any
    ttft_p99_ms: Any
    itl_ms: Any
    itl_p90_ms: Any
    itl_p99_ms: Any
    e2e_ms: Any
    throughput_tok_s: Any      # output tokens per second, all users together
    request_rate_rps: Any
    running_batch: Any
    queue: Any                 # requests waiting for a slot (closed loop: clients; open loop: inf when unstable)
    capacity: Any              # running sequences at most: min(KV capacity, max sequences)
    bound: Any                 # compute | memory-bandwidth | kv-capacity | max-seqs | prefill-budget | queue
    saturated: Any
    #: each request's mean gap between its tokens, (end to end − TTFT) / (output − 1), averaged over
    #: requests (a benchmark client's TPOT) and its median: the ITL in a steady state, where every
    #: request sees the same steps; a batch's short requests run while the queue's prompts are computed
    #: and see the slowest steps
    tpot_ms: Any
    tpot_p50_ms: Any
    #: the median gap between tokens: a plain decode step where fewer than half the steps carry a
    #: prompt's chunk (the mean ITL spreads the prompts' time over every gap; the median does not)
    itl_p50_ms: Any


class _StepTable:
    """A table of per-grid-batch values, (G, …) per configuration, read at any batch b by linear
    interpolation between the grid's batch sizes (the decode step is close to linear in b: it
    reads the weights once and every sequence's KV). The grid is STEP_GRID's first G batches (a
    closed loop of U clients never runs more than U sequences, so its table may stop there); past
    the last, the last batch's value. Converted and flattened once per solve."""

    def __init__(self, table, shape):
        t = np.asarray(table)
        rows = t.shape[0]
        grid = STEP_GRID[:rows]
        # (G, …configurations) to (G, *shape): new axes (client counts) go in front of the configurations'
        t = t.reshape(rows, *([1] * (len(shape) - (t.ndim - 1))), *t.shape[1:])
        flat = np.broadcast_to(t, (rows, *shape)).reshape(rows, -1)
        # per configuration and grid segment: value at the segment's start and slope per sequence,
        # laid out configuration-major so that one gather reads neighbouring memory
        self.start = np.ascontiguousarray(flat[:-1].T).reshape(-1)
        self.slope = np.ascontiguousarray((np.diff(flat, axis=0) / np.diff(grid)[:, None]).T).reshape(-1)
        self.row0 = np.arange(flat.shape[1]) * (rows - 1)
        self.segments, self.last = rows - 1, grid[-1]
        self.shape = shape

    def _read(self, b, row0):
        bb = np.clip(b, 1.0, self.last)
        # the grid is the powers of two from 1: the segment is the integer part of log2
        i = np.minimum(np.log2(bb).astype(np.intp), self.segments - 1)
        j = row0 + i
        return self.start[j] + self.slope[j] * (bb - np.exp2(i))

    def at(self, b):
        """The value at batch ``b`` (one per configuration, or one for all: it broadcasts to them, as
        a batch per client count does over a sweep's band edges)."""
        return self._read(np.broadcast_to(np.asarray(b, float), self.shape).reshape(-1), self.row0).reshape(self.shape)

    def at_batches(self, batches, cols):
        """The value at each of ``batches`` (n,) for the flattened configurations ``cols``: (n, cols)."""
        return self._read(np.asarray(batches, float)[:, None], self.row0[cols][None, :])


#: The prompt budget's utilisation at which the batch stops growing (`solve`): the M/D/1 wait for the
#: budget is 24 prompt services there, and the clients beyond wait in the queue instead.
PROMPT_BUDGET_UTIL_MAX = 0.98


def bisect_rising(f, hi):
    """Where the rising function ``f`` crosses zero in (B_MIN, hi], element by element.

    The search halves the interval on a log scale `BISECTION_STEPS` times, then reads the crossing off
    the straight line between the last bracket's ends (where both were evaluated; else its middle). A
    smooth ``f`` is near-linear over a bracket 1/65536 of the range wide, so the answer is relatively
    exact to ~1e-7 for a running batch of 1e-6 (one client thinking for days) as for one of thousands;
    where ``f`` jumps (a prompt's chunk count steps up) it is within the bracket, 6e-4 relative. Twice
    the halvings with no line cost twice the time for an exactness no figure shows."""
    lo, hi = np.full(np.shape(hi), math.log(B_MIN)), np.log(np.maximum(hi, B_MIN))
    f_lo = np.full(np.shape(lo), np.nan)
    f_hi = np.full(np.shape(lo), np.nan)
    for _ in range(BISECTION_STEPS):
        mid = 0.5 * (lo + hi)
        value = np.asarray(f(np.exp(mid)), float)
        below = value < 0
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
        f_lo, f_hi = np.where(below, value, f_lo), np.where(below, f_hi, value)
    with np.errstate(divide="ignore", invalid="ignore"):
        t = f_lo / (f_lo - f_hi)     # f_lo < 0 ≤ f_hi: the line's zero, as a share of the bracket
    t = np.where(np.isfinite(t) & (t >= 0.0) & (t <= 1.0), t, 0.5)
    return np.exp(lo + t * (hi - lo))


def busiest_group_tokens(prompt_tokens_per_step, prompt_tokens, groups):
    """The prompt tokens of a step's busiest attention group, of ``prompt_tokens_per_step`` over
    ``groups`` data-parallel groups: each prompt runs on the one group its request was sent to, so
    while a step carries less than a prompt per group the busiest takes a whole prompt's chunk (or
    all of them, under one prompt's worth), and past that an even share."""
    pi = np.asarray(prompt_tokens_per_step, float)
    return np.maximum(np.minimum(pi, prompt_tokens), pi / np.maximum(groups, 1.0))


def solve(costs: StepCosts, load: Load, concurrency=None) -> Serving:
    """The steady state of ``load`` on every configuration of ``costs`` (vectorised). ``concurrency``:
    a closed loop's clients as an array that broadcasts with the configurations (a sweep over them
    in one solve), instead of ``load.concurrency``."""
    load.check()
    if load.kind == "offline" and load.requests:
        return batch_run(costs, load)
    C = np.asarray(load.concurrency if concurrency is None else concurrency, float)
    P = load.new_prompt_tokens
    D = float(load.output_tokens - 1)
    tau_p = np.asarray(costs.prompt_token_s, float)
    K = np.asarray(load.chunk_tokens or costs.chunk_tokens, float)
    S = np.asarray(load.max_seqs or costs.max_seqs, float)
    kv_cap = np.floor(np.asarray(costs.kv_capacity, float))
    cap = np.minimum(kv_cap, S)
    ceiling = np.asarray(costs.ceiling_tok_s, float)
    capped = bool(np.any(np.isfinite(ceiling)))
    shape = np.broadcast(tau_p, K, S, kv_cap, ceiling, C if load.kind == "closed" else 0.0).shape
    step_table = _StepTable(costs.step_s, shape)
    request_s = np.asarray(costs.request_s, float)
    extra = np.asarray(costs.prompt_step_s, float)
    save = np.asarray(costs.request_server_s, float)
    tau_g, groups = np.asarray(costs.prompt_group_token_s, float), np.asarray(costs.attention_groups, float)
    grouped = bool(np.any(tau_g > 0) and np.any(groups > 1))

    def tau_at(pi):
        """A prompt token's time in steps that carry ``pi`` prompt tokens: spread over every attention
        group, plus what the busiest group's share holds the others up (data-parallel attention)."""
        if not grouped:
            return tau_p
        with np.errstate(divide="ignore", invalid="ignore"):
            share = np.where(pi > 0, busiest_group_tokens(pi, P, groups) / np.maximum(pi, 1e-30), 1.0)
        return tau_p + tau_g * (share - 1.0 / groups)

    # a request's own prompt runs on its own group
    tau_own = tau_p + tau_g * (1.0 - 1.0 / groups) if grouped else tau_p

    # A decoding request's steps carry the prompts of the *other* requests: its own prompt was
    # computed before its first token. While one client's prompt runs, at most the other C − 1
    # clients of a closed loop decode, so a prompt step slows min(b, C − 1) sequences: one lone
    # client decodes at the bare step and its prompt is in its TTFT alone. (The server's time is
    # still all spent: a prompt no one decodes beside is in its own client's cycle.) Poisson
    # arrivals come from a population without end.
    others = C - 1.0 if load.kind == "closed" else math.inf

    def served(b, t_dec, others=others):
        # each finishing request's prompt was computed in the steps of those still decoding: its
        # tokens, and the steps that carried its chunks (their eager launches, at most every step)
        mixed = np.minimum(b, others)
        chunks = np.maximum(np.ceil(P / np.maximum(K - b, 1.0)), 1.0)
        return t_dec + mixed * (P * tau_at(mixed * P / D) + save) / D + extra * np.minimum(mixed * chunks / D, 1.0)

    def decode_and_step(b):
        """(the decode step τ_dec(b), the served step with the prompt work it carries); where a vendor's
        published maximum binds, the decode lengthened so that the served step takes b / that
        maximum: the vendor measured the prompts inside its figure."""
        t_dec = step_table.at(b)
        tau = served(b, t_dec)
        if not capped:
            return t_dec, tau
        pad = np.maximum(b / ceiling - tau, 0.0)
        return t_dec + pad, tau + pad

    # Arrivals at random moments (Poisson, clients that think for a while, or clients whose requests
    # differ in length and so finish at random moments) find the server busy with other prompts and
    # land in the middle of a step; clients of one fixed length with no think time return at the end
    # of their own last step, so their prompts rarely meet and nobody waits for a step to end.
    random_arrivals = np.asarray(load.kind == "open" or load.think_s > 0 or (
        (load.kind == "closed") & (C > 1) & load.lengths_vary))

    pts, wts = load.new_prompt_points()
    pts = pts.reshape((-1,) + (1,) * len(shape))
    wts = wts.reshape((-1,) + (1,) * len(shape))

    def services(b, t_dec):
        """The time the steps that carry each prompt length take: each decodes the running batch
        and computes a chunk (points × configurations)."""
        budget = np.maximum(K - b, 1.0)
        return np.maximum(np.ceil(pts / budget), 1.0) * (t_dec + extra) + pts * tau_own + request_s + save

    def ttft_parts(b, tau, X, t_dec):
        budget = np.maximum(K - b, 1.0)
        s_i = services(b, t_dec)
        service = (wts * s_i).sum(axis=0)
        if not random_arrivals.any():
            return service, np.zeros_like(service)
        # the share of time the server spends on prompts (their chunks' steps), as the utilisation
        # of a queue for the prompt budget (M/G/1: the wait grows with the service time's second
        # moment, so a few long prompts make everyone wait), plus half a step for arriving mid-step
        util = np.clip(X * (P * (tau_at(X * P * tau) + (t_dec + extra) / budget) + save), 0.0, PROMPT_BUDGET_UTIL_MAX)
        second = (wts * s_i * s_i).sum(axis=0) / np.maximum(service, 1e-30)
        wait = second * util / (2.0 * (1.0 - util)) + 0.5 * tau
        return service, np.where(random_arrivals, wait, 0.0)

    b_hi = np.broadcast_to(np.maximum(cap, 1.0), shape).astype(float)
    kv_or_seqs = b_hi
    if load.kind == "closed":
        # a closed loop never runs more sequences than it has clients (and at as many its demand is
        # met: the gap below is ≥ 0 there), so nothing past them is looked at
        b_hi = np.minimum(b_hi, np.maximum(C, B_MIN))
    if load.kind == "offline":
        b = b_hi
        saturated = np.ones(shape, bool)
    else:
        # The prompts must fit in what the steps leave of their token budget: past a utilisation
        # near 1 their wait grows without bound, so the budget, not the KV cache, caps the batch
        # (long prompts, short answers). The utilisation rises with b (more requests finish per
        # second while each step leaves fewer tokens for prompts): bisect for the cap.
        def prompt_util(b):
            t_dec, tau = decode_and_step(b)
            X = b / (D * tau)
            return X * (P * (tau_at(X * P * tau) + (t_dec + extra) / np.maximum(K - b, 1.0)) + save)

        u_max = np.where(random_arrivals, PROMPT_BUDGET_UTIL_MAX, 1.0)
        over = prompt_util(b_hi) > u_max
        if np.any(over):
            b_hi = np.where(over, bisect_rising(lambda b: prompt_util(b) - u_max, b_hi), b_hi)

        # the demand gap rises with b: bisect for where it closes
        def demand_gap(b):
            t_dec, tau = decode_and_step(b)
            X = b / (D * tau)
            if load.kind == "open":
                return X - load.rate_rps
            service, wait = ttft_parts(b, tau, X, t_dec)
            return b + X * (service + wait + load.think_s) - C

        saturated = demand_gap(b_hi) < 0      # even a full running batch does not meet the demand
        # a closed loop never runs more sequences than it has clients: a narrower search
        search_hi = np.minimum(b_hi, C) if load.kind == "closed" else b_hi
        b = np.where(saturated, b_hi, bisect_rising(demand_gap, search_hi))
    t_dec, tau = decode_and_step(b)
    X = b / (D * tau)
    if load.kind == "closed":
        # no closed loop gets more from a server than the server gives full. Up to the cap the prompt
        # charge of C − 1 others lands up to ~1 % above the full server, which a step-by-step
        # simulation of the same costs puts level with it (the same slots are always busy)
        full = served(kv_or_seqs, decode_and_step(kv_or_seqs)[0], others=math.inf)
        X = np.minimum(X, kv_or_seqs / (D * full))
    service, wait = ttft_parts(b, tau, X, t_dec)
    # the queue: closed loop, the clients a full server cannot take; open loop, unbounded past capacity
    if load.kind == "closed":
        in_system = b + X * (service + wait) + X * load.think_s
        queue = np.where(saturated, np.maximum(C - in_system, 0.0), 0.0)
        queue_wait = np.where(X > 0, queue / np.maximum(X, 1e-30), 0.0)
    elif load.kind == "open":
        queue = np.where(saturated, np.inf, 0.0)
        queue_wait = np.where(saturated, np.inf, 0.0)
    else:
        queue = np.full(shape, np.nan)
        queue_wait = np.full(shape, np.nan)
    ttft = service + wait + queue_wait
    # tails: the budget wait and the queue are exponential-like (p50 at ln 2, p90 at ln 10 of the
    # mean); the chunked service is deterministic for one prompt length, and with a distribution of
    # lengths each length's service adds its own (the percentile of the mixture)
    if load.prompt_points:
        s_i = services(b, t_dec)
        ttft_p50, ttft_p90, ttft_p99 = (_mixture_quantile(s_i, wts, wait + queue_wait, q) for q in (0.5, 0.9, 0.99))
    else:
        ttft_p50, ttft_p90, ttft_p99 = (service + (wait + queue_wait) * math.log(k) for k in (2, 10, 100))
    if load.requests and load.kind == "closed":
        # clients that all started together, with one fixed length and no pause, keep the groups their
        # first wave formed (`_with_first_wave`): nothing ever spreads them
        lockstep = not (load.think_s > 0 or load.lengths_vary)
        ttft, ttft_p50, ttft_p90, ttft_p99 = _with_first_wave(load, C, costs, step_table, K, cap, tau_p, extra,
                                                              request_s, ttft, ttft_p50, ttft_p90, ttft_p99,
                                                              lockstep, save)
    t_comp, t_mem = _StepTable(costs.step_compute_s, shape).at(b), _StepTable(costs.step_memory_s, shape).at(b)
    mixed_share = np.clip(X * P * tau / np.maximum(K - b, 1.0), 0.0, 1.0)
    if load.requests and load.kind == "closed":
        # A run of N requests from C clients: the first wave's C prompts are computed before anyone
        # decodes, so only the N − C later prompts interrupt the decoding: the steps carry that share
        # of the steady state's prompt work (a run of as many requests as clients, none: four
        # llama-server clients sent four requests and decoded at 68 ms a token, mean and median,
        # where the steady state's mean was twice its median)
        later = 1.0 - _first_wave_share(load, C)
        tau = t_dec + later * (tau - t_dec)
        mixed_share = mixed_share * later
    # a step that carries prompt work fills what the budget leaves (charging one prompt's worth
    # instead, for steps where arrivals rarely coincide, made the held-out ITL worse: 23 → 25 %)
    full_chunk_step = t_dec + extra + np.maximum(K - b, 0.0) * tau_at(np.maximum(K - b, 0.0))
    itl_p90 = np.where(mixed_share > MIXED_STEP_SHARE_FOR_P90, np.maximum(full_chunk_step, tau), tau)
    itl_p99 = np.where(mixed_share > MIXED_STEP_SHARE_FOR_P99, np.maximum(full_chunk_step, tau), tau)
    itl_p50 = np.where(mixed_share > 0.5, np.maximum(full_chunk_step, tau), t_dec)
    e2e = ttft + D * tau
    X_run = X
    if load.requests and load.kind == "closed" and load.output_points:
        # what a benchmark client divides by: the run's time to its last answer, drain included
        X_run = float(load.requests) / _finite_run_seconds(load, C, ttft, tau, lambda bb: decode_and_step(bb)[0])
    limit = np.where(b_hi < kv_or_seqs * (1 - 1e-9), "prefill-budget", np.where(kv_cap <= S, "kv-capacity", "max-seqs"))
    busy = np.where(t_comp + P * tau_at(X * P * tau) * X * tau > t_mem, "compute", "memory-bandwidth")
    bound = np.where(saturated, np.where(load.kind == "open", "queue", limit), busy)
    return Serving(
        ttft_ms=ttft * 1e3, ttft_p50_ms=ttft_p50 * 1e3, ttft_p90_ms=ttft_p90 * 1e3, ttft_p99_ms=ttft_p99 * 1e3,
        itl_ms=tau * 1e3, itl_p90_ms=itl_p90 * 1e3, itl_p99_ms=itl_p99 * 1e3, e2e_ms=e2e * 1e3,
        throughput_tok_s=X_run * load.output_tokens, request_rate_rps=X_run,
        running_batch=b, queue=queue, capacity=cap, bound=bound, saturated=saturated, tpot_ms=tau * 1e3,
        tpot_p50_ms=tau * 1e3, itl_p50_ms=itl_p50 * 1e3)


#: The most groups a finite run's in-flight requests drain in (`_finite_run_seconds`): up to this many
#: clients, one request a group
DRAIN_GROUPS = 128


def _finite_run_seconds(load: Load, clients, ttft, tau, decode_step):
    """The time a closed-loop run of N = ``load.requests`` requests from C = ``clients`` clients takes
    from its first request to its last answer (what `vllm bench serve` and SGLang's bench_serving
    divide the requests by), where the outputs' lengths vary (``load.output_points``).

    Each client runs one request after another, S = TTFT + (L − 1)·τ each, so the N requests are
    W = N·E[S] of client time. Until the last request is sent every client is busy; then the C in
    flight finish one after another, the batch shrinking, each step a plain decode step τ_dec(b) of
    those left (no prompts are coming). With R the C requests' remaining times when the last is
    sent, the clients were all busy for (W − ΣR) / C, and the drain takes the sorted R's gaps at the
    shrinking batch's steps. A fixed length leaves no drain (clients finish together); varied
    lengths leave the longest ones running alone at the end, so a short run of long-tailed lengths
    delivers less than its steady state (SGLang's random lengths, drawn evenly from 1 to 2×mean,
    run by 16 clients for 80 requests: ~12 % less).

    The remaining times are the last request sent (a whole S) and C − 1 draws from the stationary
    residual life of S, P(R > r) = E[(S − r)⁺] / E[S], taken at their expected order statistics
    (Blom's positions, `DRAIN_GROUPS` groups at most); a run of fewer than 2·C requests is still in
    its first requests, whose remaining times are draws of S itself. One client: N·E[S] exactly."""
    N = float(load.requests)
    pts, w = np.asarray(load.output_points, float), np.asarray(load.output_weights, float)
    order = np.argsort(pts)
    pts, w = pts[order], w[order] / w.sum()
    pts = pts * (float(load.output_tokens) / float((pts * w).sum()))   # the load's mean, as the steady state has it
    C = np.broadcast_to(np.minimum(np.asarray(clients, float), N), np.shape(tau))
    ttft, tau = np.broadcast_arrays(np.asarray(ttft, float), np.asarray(tau, float))
    lead = (-1,) + (1,) * tau.ndim
    S = ttft + (pts.reshape(lead) - 1.0) * tau                 # (points, *shape), ascending
    wl = w.reshape(lead)
    mean_s = (wl * S).sum(axis=0)
    # the stationary residual's CDF at the breakpoints S_k, and the suffix sums that invert it
    A = np.flip(np.cumsum(np.flip(wl * S, 0), axis=0), 0)      # Σ_{j≥k} w_j S_j
    B = np.flip(np.cumsum(np.flip(np.broadcast_to(wl, S.shape), 0), axis=0), 0)   # Σ_{j≥k} w_j
    A_next = np.concatenate([A[1:], np.zeros_like(A[:1])])
    B_next = np.concatenate([B[1:], np.zeros_like(B[:1])])
    F_at = 1.0 - (A_next - S * B_next) / np.maximum(mean_s, 1e-30)
    cum_w = np.cumsum(w)

    def remaining(q1, stationary):
        """The times left at rank positions ``q1`` (G,): quantiles of the stationary residual of S,
        or of S itself (G, *shape)."""
        if not stationary:
            lengths = np.interp(q1, cum_w - w / 2.0, pts).reshape(lead)
            return ttft + (lengths - 1.0) * tau
        q = q1.reshape(lead)
        k = np.minimum((F_at[None] < q[:, None]).sum(axis=1), S.shape[0] - 1)   # segment [S_(k−1), S_k]
        return (np.take_along_axis(A, k, axis=0) - (1.0 - q) * mean_s) / np.maximum(np.take_along_axis(B, k, axis=0), 1e-30)

    stationary_mean = (wl * S * S).sum(axis=0) / (2.0 * np.maximum(mean_s, 1e-30))
    out = np.empty(tau.shape)
    for c in np.unique(C):
        sel = (C == c)
        n = int(round(c)) - 1                                     # in flight beside the last one sent
        stationary = N >= 2.0 * c
        if n > 0:
            groups = min(n, DRAIN_GROUPS)
            tops = np.arange(1, groups + 1) * (n / groups)        # each group's highest rank
            r = remaining((tops - 0.375) / (n + 0.25), stationary)
            counts = np.full(groups, n / groups)
        else:
            r, counts = np.zeros((0,) + tau.shape), np.zeros(0)
        # the last request sent: a whole S (its mean)
        r = np.concatenate([r, mean_s[None]])
        counts = np.append(counts, 1.0)
        idx = np.argsort(r, axis=0)
        r = np.take_along_axis(r, idx, axis=0)
        cnt = counts[idx]
        remaining_total = (n * (stationary_mean if stationary else mean_s)) + mean_s
        busy = (N * mean_s - remaining_total) / c
        active = c - np.concatenate([np.zeros((1,) + tau.shape), np.cumsum(cnt, axis=0)[:-1]])
        gaps = np.diff(np.concatenate([np.zeros((1,) + tau.shape), r]), axis=0)
        drain = np.zeros(tau.shape)
        for g in range(r.shape[0]):
            drain = drain + gaps[g] / np.maximum(tau, 1e-30) * decode_step(np.maximum(active[g], 1.0))
        out = np.where(sel, busy + drain, out)
    return out


#: The most requests of a batch whose schedule is worked out one by one (`batch_run`); a larger
#: batch runs its rest at the full batch between that many's start and their drain.
BATCH_SCHEDULE_MAX = 20_000


def batch_lengths(load: Load, n: int) -> np.ndarray:
    """The output lengths of a batch of ``n`` requests, in the order they are sent: ``n``
    equal-probability quantiles of the load's output distribution with its mean kept (every one the
    mean where the load has no distribution), in an order shuffled with a fixed seed (a benchmark
    client samples its dataset at random; a seed keeps the prediction repeatable)."""
    if not load.output_points:
        return np.full(n, float(load.output_tokens))
    pts, w = np.asarray(load.output_points, float), np.asarray(load.output_weights, float)
    order = np.argsort(pts)
    pts, w = pts[order], w[order]
    x = np.interp((np.arange(n) + 0.5) / n, np.cumsum(w) - w / 2.0, pts)
    x *= float((pts * w).sum()) / x.mean()
    np.random.default_rng(0).shuffle(x)
    return np.maximum(np.round(x), 2.0)


def batch_schedule(lengths: np.ndarray, slots: int, prompt_tokens: float, step_tokens: float,
                   prefill_first: bool = False):
    """When each request of a batch takes a slot, has its prompt computed, and gives the slot back, in
    engine steps from the batch's start: first come first served on ``slots`` running sequences, every
    running sequence one token a step. The prompts share each step's token budget (``step_tokens``
    less the sequences decoding beside them) first come first served, one after another, so prompts
    admitted together finish one after another, and a long prompt's chunks ride along with the decode
    of everyone else for as many steps as they take (vLLM's and TensorRT-LLM's chunked prefill).
    Returns (slot taken, prompt begun, prompt done: a position within its last step, first decode
    step = the step after the one that finishes its prompt, slot freed), each (n,). Positions are in
    steps and do not depend on how long each step takes.

    ``prefill_first`` (SGLang): the prompts of the requests a free slot admits run as prefill batches
    of their own before the next decode step, and nobody decodes meanwhile; positions then count
    decode steps only, and a prompt takes none of them (begun = done = the slot's position)."""
    n = len(lengths)
    k = min(int(slots), n)
    if prefill_first:
        heap = [0.0] * k
        starts = np.zeros(n)
        for i in range(n):
            starts[i] = heapq.heappop(heap)
            heapq.heappush(heap, float(starts[i] + lengths[i] - 1.0))
        return starts, starts.copy(), starts.copy(), starts.copy(), starts + lengths - 1.0
    each = max(float(prompt_tokens), 1.0)
    starts, begun, done, first, ends = (np.zeros(n) for _ in range(5))
    slots_heap: list[float] = []       # when the running requests give their slots back
    decoding: list[float] = []         # when the requests decoding at the pipeline's position finish
    pipe, seen = 0.0, 0
    for i in range(n):
        t = heapq.heappop(slots_heap) if i >= k else 0.0
        b = max(t, pipe)
        # the budget this prompt finds: the step's tokens less the sequences decoding then (their
        # prompts done before its own begins: ``first`` rises with the order)
        while seen < i and first[seen] <= b:
            heapq.heappush(decoding, float(ends[seen]))
            seen += 1
        while decoding and decoding[0] <= b:
            heapq.heappop(decoding)
        pipe = b + each / max(step_tokens - len(decoding), 1.0)
        f = math.ceil(pipe - 1e-9)      # its first token comes out with the step that ends its prompt
        starts[i], begun[i], done[i], first[i], ends[i] = t, b, pipe, f, f + lengths[i] - 1.0
        heapq.heappush(slots_heap, float(ends[i]))
    return starts, begun, done, first, ends


@dataclass(frozen=True)
class _BatchClock:
    """A batch schedule's times for some configurations: each request's first token and finish
    (n, configs) and its own prompt's share of the first (``own``), the whole run (configs), the
    gaps between tokens with their weights, the running batch averaged over the time anything
    decodes (configs; the drain's long small-batch tail counts by its time, not its steps) and the
    largest running batch."""

    t_first: Any
    t_end: Any
    own: Any
    total: Any
    gaps: Any
    gap_weights: Any
    running_mean: Any
    running_max: float


def _segments(bounds, first, ends):
    """The running batch in each segment between ``bounds``, and the segments' lengths in steps."""
    at = bounds[:-1]
    running = (np.searchsorted(np.sort(first), at, side="right")
               - np.searchsorted(np.sort(ends), at, side="right")).astype(float)
    return running, np.diff(bounds)


def _time_averaged(running, decode_time):
    """The running batch averaged over ``decode_time`` (segments, configs), the time each segment's
    decoding takes: (configs,)."""
    return (decode_time * running[:, None]).sum(axis=0) / np.maximum(decode_time.sum(axis=0), 1e-30)


def _clock_mixed(table, cols, P, K, per_prompt, extra, starts, begun, done, first, ends, ceiling) -> _BatchClock:
    """vLLM's and TensorRT-LLM's steps: each carries the decode of everyone running and the prompt
    chunks the budget leaves room for, so a step's time is τ_dec(b) plus the prompt work of the
    chunks in it (each prompt's spread over the steps that carry it) and a prompt pass's launches,
    and at least b / ``ceiling`` (a vendor's published maximum, output tok/s per configuration)."""
    lo = np.floor(begun)
    hi = np.maximum(np.ceil(done - 1e-9), lo + 1.0)
    bounds = np.unique(np.concatenate([[0.0], lo, hi, first, ends]))
    running, seg = _segments(bounds, first, ends)
    # prompts per step in each segment: the ramps of those whose steps it lies in
    events = np.concatenate([lo, hi])
    order = np.argsort(events, kind="stable")
    rate = np.concatenate([1.0 / (hi - lo), -1.0 / (hi - lo)])[order].cumsum()
    prompts = np.maximum(rate[np.searchsorted(events[order], bounds[:-1], side="right") - 1], 0.0)
    busy = prompts > 1e-9
    tau = np.where((running > 0)[:, None], table.at_batches(running, cols), 0.0)   # (segments, configs)
    step = np.maximum(tau + prompts[:, None] * per_prompt[None, :] + busy[:, None] * extra[None, :],
                      running[:, None] / ceiling[None, :])
    clock = np.concatenate([np.zeros((1, len(cols))), np.cumsum(seg[:, None] * step, axis=0)])

    def T(pos):
        return clock[np.searchsorted(bounds, pos)]

    t_first = T(first)
    live = running > 0
    # the gaps between tokens: each segment's step, once per step for each sequence decoding in it
    return _BatchClock(t_first, T(ends), t_first - T(lo), clock[-1], step[live], (seg * running)[live],
                       _time_averaged(running[live], seg[live][:, None] * step[live]), float(running.max()))


def _clock_prefill_first(table, cols, P, K, per_prompt, extra, starts, begun, done, first, ends,
                         ceiling) -> _BatchClock:
    """SGLang's steps: the prompts a free slot admits run as prefill batches of K tokens before the
    next decode step, while nobody decodes (a lump of prompt time at that position), and a decode
    step is τ_dec(b). Those admitted together get their first tokens one prefill batch after
    another; everyone decoding sees the lump as one long gap. A segment's lump and steps take at
    least its steps × b / ``ceiling`` (a vendor's published maximum, output tok/s per configuration)."""
    bounds = np.unique(np.concatenate([[0.0], first, ends]))
    running, seg = _segments(bounds, first, ends)
    tau = np.where((running > 0)[:, None], table.at_batches(running, cols), 0.0)   # (segments, configs)
    steps_u, count = np.unique(starts, return_counts=True)
    lump_u = count[:, None] * per_prompt[None, :] + extra[None, :] * np.ceil(count * P / K)[:, None]
    lump = np.zeros((len(bounds), len(cols)))
    lump[np.searchsorted(bounds, steps_u)] = lump_u
    # the decode steps lengthened where the segment would outrun the ceiling, its lump counted in
    tau = np.maximum(tau, running[:, None] / ceiling[None, :] - lump[:-1] / np.maximum(seg, 1e-30)[:, None])
    # the time at each bound, before the prompts admitted there
    clock = np.concatenate([np.zeros((1, len(cols))), np.cumsum(lump[:-1] + seg[:, None] * tau, axis=0)])
    # a request's place among those admitted with it: its prompt ends with the prefill batch that
    # carries its last token, and those of one batch get their first tokens together
    order = np.argsort(starts, kind="stable")
    rank, together = np.empty(len(starts)), np.empty(len(starts))
    rank[order] = np.arange(len(starts)) - np.repeat(np.cumsum(count) - count, count)
    together[order] = np.repeat(count, count)
    batches = np.ceil((rank + 1.0) * P / K)
    done_tokens = np.minimum(batches * K, together * P)
    per_token = (per_prompt / max(P, 1e-30))[None, :]
    ahead = done_tokens[:, None] * per_token + batches[:, None] * extra[None, :]
    j = np.searchsorted(bounds, starts)
    t_first = clock[j] + ahead
    # its own prompt's batches (what one that reaches the server late still waits for)
    own = np.broadcast_to(per_prompt[None, :] + math.ceil(P / K) * extra[None, :], ahead.shape)
    live = running > 0
    # a segment's first step comes after the lump before it: one gap of both for everyone already
    # decoding, and for each request admitted there the rest of the lump after its own first token;
    # the segment's other steps are τ_dec
    admitted = np.zeros(len(bounds))
    admitted[np.searchsorted(bounds, steps_u)] = count
    first_gap = tau + lump[:-1]
    gaps = np.concatenate([first_gap[live], tau[live], lump[j] - ahead + tau[np.minimum(j, len(seg) - 1)]])
    gap_weights = np.concatenate([(running - admitted[:-1])[live], ((seg - 1.0) * running)[live],
                                  np.ones(len(starts))])
    return _BatchClock(t_first, clock[np.searchsorted(bounds, ends)], own, clock[-1], gaps, gap_weights,
                       _time_averaged(running[live], lump[:-1][live] + seg[live][:, None] * tau[live]),
                       float(running.max()))


def _weighted_quantile(values, weights, q: float):
    """The ``q`` quantile of ``values`` (n, M) weighted by ``weights`` (n,), along the first axis."""
    order = np.argsort(values, axis=0)
    v = np.take_along_axis(values, order, axis=0)
    w = np.take_along_axis(np.broadcast_to(np.asarray(weights, float)[:, None], values.shape), order, axis=0)
    cum = np.cumsum(w, axis=0)
    total = cum[-1]
    idx = np.argmax(cum >= q * total, axis=0)
    return np.take_along_axis(v, idx[None, :], axis=0)[0]


def batch_run(costs: StepCosts, load: Load) -> Serving:
    """A batch job: ``load.requests`` requests sent at once, timed from the first request to the last
    response (what a benchmark client of N prompts with no rate limit, or an offline batch, measures).

    The server runs at most ``cap`` = min(KV capacity, max sequences) at once and admits the rest
    first come first served as slots free; the prompts queue for each step's token budget, one after
    another (`batch_schedule`). Every running sequence makes one token a step, so where each request
    is at each step follows from the lengths alone; one clock over the schedule's segments then
    charges each step τ_dec(b) for the b sequences decoding in it, the prompt work of the chunks it
    carries (P′·τ_p and the server's own per-request work, spread over the steps of each prompt) and a
    prompt pass's launches where it carries any. Once the queue is empty the batch drains: the
    longest outputs finish last, at a small batch whose steps cost nearly what a full one's do, so a
    batch of varied lengths (`output_mix`) takes longer than one of its mean length, and the more so
    the fewer requests it has per slot. The steady state (b = cap throughout) is this model's limit
    for a batch of many times ``cap`` requests of one length.

    The front end hands the engine one request per ``request_s`` (a serial process: HTTP, template,
    tokenizer), which caps a burst of short requests and sets when the late ones can start.
    TTFT is the clock at the step that ends a request's prompt (its wait for a slot and for the
    prompts ahead of it included); ITL the step time of every step, once for each sequence decoding
    in it (a step carrying a long prompt's chunk is a long gap for all of them); TPOT each request's
    own mean gap; end to end its finish. Vectorised over the configurations of ``costs``: one
    schedule per distinct (cap, step budget)."""
    n_all = int(load.requests)
    P = load.new_prompt_tokens
    tau_p = np.asarray(costs.prompt_token_s, float)
    K = np.asarray(load.chunk_tokens or costs.chunk_tokens, float)
    S = np.asarray(load.max_seqs or costs.max_seqs, float)
    kv_cap = np.floor(np.asarray(costs.kv_capacity, float))
    request_s = np.asarray(costs.request_s, float)
    extra = np.asarray(costs.prompt_step_s, float)
    save = np.asarray(costs.request_server_s, float)
    ceiling = np.asarray(costs.ceiling_tok_s, float)
    shape = np.broadcast(tau_p, K, S, kv_cap, request_s, extra, save, ceiling).shape
    table = _StepTable(costs.step_s, shape)
    comp_table, mem_table = _StepTable(costs.step_compute_s, shape), _StepTable(costs.step_memory_s, shape)
    M = int(np.prod(shape)) if shape else 1
    flat = lambda a: np.broadcast_to(np.asarray(a, float), shape).reshape(M)  # noqa: E731
    cap_f, K_f, tau_p_f = np.maximum(flat(np.minimum(kv_cap, S)), 1.0), np.maximum(flat(K), 1.0), flat(tau_p)
    req_f, extra_f, save_f, ceiling_f = flat(request_s), flat(extra), flat(save), flat(ceiling)

    n = min(n_all, BATCH_SCHEDULE_MAX)
    rest = n_all - n
    lengths = batch_lengths(load, n)
    out = {k: np.full(M, np.nan) for k in ("ttft", "p50", "p90", "p99", "itl", "itl50", "itl90", "itl99", "e2e", "span",
                                           "b", "comp", "mem", "tpot", "tpot50")}
    per_prompt_f = P * tau_p_f + save_f
    clock_of = _clock_prefill_first if costs.prefill_first else _clock_mixed
    for cap, K in sorted({(float(a), float(b)) for a, b in zip(cap_f, K_f)}):
        cols = np.nonzero((cap_f == cap) & (K_f == K))[0]
        starts, begun, done, first, ends = batch_schedule(lengths, int(cap), P, K, bool(costs.prefill_first))
        c = clock_of(table, cols, P, K, per_prompt_f[cols], extra_f[cols], starts, begun, done, first, ends,
                     ceiling_f[cols])
        t_first, t_end, own = c.t_first, c.t_end, c.own
        # the front end (HTTP, chat template, tokenizer: one process in vLLM, SGLang and trtllm-serve)
        # takes a burst's requests one at a time, ``request_s`` each (the per-request cost fitted on a
        # lone client's first token), so the i-th request sent reaches the engine at (i + 1)·request_s
        # at the earliest, behind the rest of the batch's requests beyond the schedule if any came first;
        # one that reaches it late still takes its own prompt's steps
        ahead = (np.arange(n) + 1.0 + np.where(starts > 0, rest, 0))[:, None]
        reach = ahead * req_f[cols][None, :]
        engine = t_first + req_f[cols][None, :]
        ttft = np.maximum(engine, reach + own)
        after = t_end - t_first
        e2e = ttft + after
        span = np.maximum(c.total + req_f[cols], e2e.max(axis=0))
        tpot = after / np.maximum(lengths - 1.0, 1.0)[:, None]
        weight = np.ones(n)
        gaps, gap_weights = c.gaps, c.gap_weights
        if rest:
            # a batch larger than the schedule: the rest join the queue behind the first wave and run
            # at the full batch, so the schedule's later requests come that much later; the rest's own
            # requests start evenly over that time
            full = table.at_batches([c.running_max], cols)[0]
            # each request's share of the full batch's steps and its own prompt; under a vendor's
            # maximum, its tokens at that rate at least (the prompts inside it), and each step as long
            each = np.maximum((lengths.mean() - 1.0) / cap * full + per_prompt_f[cols] + extra_f[cols] * P / K,
                              (lengths.mean() - 1.0) / ceiling_f[cols])
            full = np.maximum(full, c.running_max / ceiling_f[cols])
            middle = rest * each
            waited = (starts > 0)[:, None]
            t_a = np.where(waited, engine, np.inf).min(axis=0) if waited.any() else ttft.max(axis=0)
            m = 64
            share = ((np.arange(m) + 0.5) / m)[:, None]
            # sent after the first wave (those that started at once) and before the schedule's later ones
            inserted = np.maximum(t_a[None, :] + middle[None, :] * share,
                                  (np.count_nonzero(starts == 0) + share * rest) * req_f[cols][None, :]) \
                + per_prompt_f[cols][None, :]
            late = np.where(waited, np.maximum(engine + middle, reach + own), ttft)
            ttft = np.concatenate([late, inserted])
            e2e = np.concatenate([late + after, inserted + (lengths.mean() - 1.0) * full[None, :]])
            tpot = np.concatenate([tpot, np.broadcast_to(full, (m, len(cols)))])
            weight = np.concatenate([weight, np.full(m, rest / m)])
            gaps = np.concatenate([gaps, full[None, :]])
            gap_weights = np.concatenate([gap_weights, [rest * (lengths.mean() - 1.0)]])
            span = np.maximum(span + middle, n_all * req_f[cols] + (lengths.mean() - 1.0) * full)
        w = weight[:, None] / weight.sum()
        out["ttft"][cols], out["e2e"][cols], out["tpot"][cols] = ((x * w).sum(axis=0) for x in (ttft, e2e, tpot))
        for key, x, q in (("p50", ttft, 0.5), ("p90", ttft, 0.9), ("p99", ttft, 0.99), ("tpot50", tpot, 0.5),
                          ("itl50", gaps, 0.5), ("itl90", gaps, 0.9), ("itl99", gaps, 0.99)):
            out[key][cols] = _weighted_quantile(x, weight if x is not gaps else gap_weights, q)
        out["itl"][cols] = (gaps * gap_weights[:, None]).sum(axis=0) / max(gap_weights.sum(), 1e-30)
        out["span"][cols] = span
        out["b"][cols] = c.running_mean
        top = [c.running_max]
        out["comp"][cols], out["mem"][cols] = comp_table.at_batches(top, cols)[0], mem_table.at_batches(top, cols)[0]
    rs = lambda a: a.reshape(shape)  # noqa: E731
    span = rs(out["span"])
    cap_s = rs(cap_f)
    waiting = np.maximum(n_all - cap_s, 0.0)
    limit = np.where(np.broadcast_to(kv_cap, shape) <= np.broadcast_to(S, shape), "kv-capacity", "max-seqs")
    busy_bound = np.where(rs(out["comp"]) > rs(out["mem"]), "compute", "memory-bandwidth")
    return Serving(
        ttft_ms=rs(out["ttft"]) * 1e3, ttft_p50_ms=rs(out["p50"]) * 1e3, ttft_p90_ms=rs(out["p90"]) * 1e3,
        ttft_p99_ms=rs(out["p99"]) * 1e3, itl_ms=rs(out["itl"]) * 1e3, itl_p90_ms=rs(out["itl90"]) * 1e3,
        itl_p99_ms=rs(out["itl99"]) * 1e3, e2e_ms=rs(out["e2e"]) * 1e3,
        throughput_tok_s=float(lengths.sum()) * (n_all / n) / span, request_rate_rps=n_all / span,
        running_batch=rs(out["b"]), queue=waiting, capacity=cap_s,
        bound=np.where(waiting > 0, limit, busy_bound), saturated=waiting > 0,
        tpot_ms=rs(out["tpot"]) * 1e3, tpot_p50_ms=rs(out["tpot50"]) * 1e3, itl_p50_ms=rs(out["itl50"]) * 1e3)


def _first_wave_share(load: Load, clients):
    """The share of a run of ``load.requests`` requests that its first wave is: ``clients`` of them
    (all of them where the run has fewer)."""
    return np.minimum(clients, float(load.requests)) / float(load.requests)


def _with_first_wave(load: Load, clients, costs: StepCosts, step_table, K, cap, tau_p, extra, request_s,
                     ttft, ttft_p50, ttft_p90, ttft_p99, lockstep: bool = False, save=0.0):
    """TTFT over a finite run of ``load.requests`` requests from ``clients`` clients that
    all send their first request at once: that first wave (C of N requests) computes its prompts
    first come first served, a budget of K tokens per step, so the i-th of them waits ceil(i·P/K)
    such steps (their decode grows as the wave's prompts finish: the step at half the wave). The
    rest of the run is the steady state. Mean: the two blended by count; p50, p90 and p99: the wave
    fills the top C/N of the distribution, its TTFTs spread evenly from the first step to the last.

    ``lockstep`` (one fixed length, no think time): the wave's requests finish in the groups their
    prompts were computed in (as many prompts as a step's budget holds), so their next prompts come
    back together, group by group, for the whole run: each later request waits for the step that
    carries its group's prompts, not for its own prompt alone (llama-server computes every waiting
    prompt in one batch, so four clients of 512-token prompts stay four abreast; measured on an
    H200 it held TTFT near 475 ms at every request, p50 468 ms, where one client's was 127 ms).
    Where the clients outnumber what the cache holds, the queue mixes them and the steady state
    stands. ``save``: the server's work per arriving request before any prompt (`StepCosts.
    request_server_s`): a returning group's requests each pay it before their common step; the first
    wave finds the server empty and pays none."""
    C = np.minimum(clients, float(load.requests))
    share = _first_wave_share(load, clients)
    P = load.new_prompt_tokens
    admitted = np.minimum(C, cap)          # past the cache's capacity the rest wait a whole cycle: the queue
    per_step = np.minimum(K, admitted * P) * tau_p + step_table.at(np.maximum(admitted / 2.0, 1.0)) + extra
    steps_last = np.maximum(np.ceil(admitted * P / K), 1.0)
    first, last = per_step + request_s, steps_last * per_step + request_s
    if lockstep:
        grouped = C <= cap
        group = np.maximum(np.minimum(admitted, np.floor(K / max(P, 1))), 1.0)
        again = first + group * save
        ttft, ttft_p50, ttft_p90, ttft_p99 = (np.where(grouped, np.maximum(t, again), t)
                                              for t in (ttft, ttft_p50, ttft_p90, ttft_p99))
    wave_mean = 0.5 * (first + last)
    mean = (1.0 - share) * ttft + share * wave_mean

    def quantile(q, steady):
        # the q-quantile lies in the wave when the wave is more than the top (1 − q) of requests
        inside = share > 1.0 - q
        at = np.clip((q - (1.0 - share)) / np.maximum(share, 1e-12), 0.0, 1.0)
        return np.where(inside, np.maximum(steady, first + at * (last - first)), steady)

    return mean, quantile(0.5, ttft_p50), quantile(0.9, ttft_p90), quantile(0.99, ttft_p99)


def _mixture_quantile(s_i, w_i, mean_wait, p: float, iterations: int = 48):
    """The ``p`` quantile of TTFT = service(length) + wait, the length drawn from points ``s_i`` with
    weights ``w_i`` and the wait exponential with mean ``mean_wait`` (0: none), per configuration:
    bisection on the mixture's CDF Σ w_i · (1 − exp(−(t − s_i)/W))."""
    W = np.maximum(np.asarray(mean_wait, float), 0.0)
    lo = s_i.min(axis=0)
    hi = s_i.max(axis=0) + W * math.log(1e6) + 1e-12
    for _ in range(iterations):
        mid = 0.5 * (lo + hi)
        d = mid - s_i
        with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
            g = np.where(d < 0, 0.0, np.where(W > 0, -np.expm1(-d / np.where(W > 0, W, 1.0)), 1.0))
        below = (w_i * g).sum(axis=0) < p
        lo, hi = np.where(below, mid, lo), np.where(below, hi, mid)
    return 0.5 * (lo + hi)


# ---- from the kernel to step costs ----------------------------------------------------------------

#: The kernel's fields `costs_from_result` reads: per grid batch, and per configuration (at the first
#: batch). A caller that hands it a subset of a sweep (the recommender) takes these names from here.
STEP_FIELDS = ("decode_free_tok_s", "decode_compute_s", "decode_memory_s")
PASS_FIELDS = ("prefill_token_s", "kv_seq_bytes", "kv_budget_gpu_bytes", "request_s", "prefill_pass_extra_s",
               "prefill_group_s", "attention_groups", "throughput_cap_tok_s")


def costs_from_result(r, load: Load, paged, max_seqs, chunk_tokens, sample_s_per_seq=0.0,
                      prompt_cache=(0.0, None, 1)) -> StepCosts:
    """Step costs from kernel results at batch = STEP_GRID along the first axis (its first G
    batches), with prompt = the new prompt tokens after a cached depth and output = the load's
    output. ``r`` has the `Result` fields as attributes: (G, …) arrays, or (…) for those that do not
    depend on the batch. ``sample_s_per_seq``: the server's own work per running sequence and step
    (`server_sample_s`), on top of the kernel's step. ``prompt_cache``: (GB/s, size in GB, GPUs) of
    its server's prompt cache, which saves each finished request (`prompt_cache_save_s`). The decode step
    is the kernel's before a vendor's published maximum (`Result.decode_free_tok_s`): the solver holds
    the whole served step to it (`StepCosts.ceiling_tok_s`)."""
    step_s = 1.0 / r.decode_free_tok_s
    nd = np.ndim(r.decode_free_tok_s)   # a value per grid batch has the step's dimensions
    if np.any(np.asarray(sample_s_per_seq) > 0):
        b = STEP_GRID[:np.shape(step_s)[0]].reshape((-1,) + (1,) * (nd - 1))
        step_s = step_s + b * np.asarray(sample_s_per_seq, float)
    # prompt work is linear in its tokens: the per-token cost is the same at every grid batch (the
    # products and the tensor-parallel all-reduces of each token's activations; the weight reads and
    # launches are per pass, and the steps that carry chunks pay them)
    prompt_token_s = _first(r.prefill_token_s, nd) / load.new_prompt_tokens
    group_s = getattr(r, "prefill_group_s", None)
    groups = getattr(r, "attention_groups", None)
    group_token_s = 0.0 if group_s is None else _first(group_s, nd) / load.new_prompt_tokens
    seq_bytes, budget = _first(r.kv_seq_bytes, nd), _first(r.kv_budget_gpu_bytes, nd)
    full = load.prompt_tokens + load.output_tokens
    # a paged cache holds each sequence at its current length, on average prompt + output / 2
    # (KV grows linearly with context; sliding windows make this conservative)
    mean_len = np.where(np.asarray(paged, bool), (load.prompt_tokens + load.output_tokens / 2.0) / full, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        kv_capacity = np.where(budget > 0, budget / np.maximum(seq_bytes * mean_len, 1e-30), 0.0)
    request_s = _first(r.request_s, nd)
    extra = 0.0 if r.prefill_pass_extra_s is None else _first(r.prefill_pass_extra_s, nd)
    gb_s, max_gb, gpus = prompt_cache if load.prompt_cache else (0.0, None, 1)
    save = prompt_cache_save_s(seq_bytes, gpus, gb_s, max_gb)
    return StepCosts(step_s=step_s, step_compute_s=r.decode_compute_s, step_memory_s=r.decode_memory_s,
                     prompt_token_s=prompt_token_s, kv_capacity=kv_capacity, max_seqs=max_seqs,
                     chunk_tokens=chunk_tokens, request_s=request_s, prompt_step_s=extra, request_server_s=save,
                     prompt_group_token_s=group_token_s,
                     attention_groups=1.0 if groups is None else _first(groups, nd),
                     # the vendor counts every output token; the decode steps make all but each request's first
                     ceiling_tok_s=_first(r.throughput_cap_tok_s, nd) * max(load.output_tokens - 1, 1) / load.output_tokens)


def _first(a, grid_ndim: int = 1):
    """The first grid row of a value per grid batch; a batch-independent value as it is. A value per
    grid batch has the decode step's dimensions (``grid_ndim``: 1 for one configuration), one per
    configuration one fewer: told apart by dimensions, not by length (a grid cut short, or exactly
    as many configurations as grid batches, would fool a length test)."""
    a = np.asarray(a)
    return a[0] if a.ndim == grid_ndim else a


def server_sample_s(ns_per_vocab, vocab: int):
    """Seconds a runtime's server spends per running sequence and step on its own, from its
    `Runtime.server_sample_ns_per_vocab` (a number, or one per configuration; 0 = none) and the
    model's vocabulary: llama-server's sampler scans the whole vocabulary for each sequence."""
    return ns_per_vocab * vocab * 1e-9


def prompt_cache_save_s(seq_bytes, gpus, gb_s, max_gb=None):
    """Server time per request of llama-server's prompt cache: when a request arrives, the KV of the
    request that last held the slot (or of an idle one) is copied to host memory first, on the one
    thread that runs every slot, at ``gb_s`` (`Runtime.server_prompt_cache_gb_s`; 0 or empty: no
    such cache), unless it is larger than the cache (``max_gb``). In steady state each finished
    request is saved once, whole: ``seq_bytes``, a sequence at prompt + output per GPU, times the
    ``gpus`` that hold a part. Numbers, or one per configuration."""
    total = np.asarray(seq_bytes, float) * np.asarray(gpus, float)
    gb_s = np.nan_to_num(np.asarray(gb_s, float), nan=0.0)
    cap = np.asarray(math.inf if max_gb is None else max_gb, float)
    cap = np.where(np.isnan(cap), math.inf, cap)
    with np.errstate(divide="ignore", invalid="ignore"):
        return np.where((gb_s > 0) & (total <= cap * 1e9), total / np.where(gb_s > 0, gb_s, 1.0) * 1e-9, 0.0)


def prompt_cache_of(rt, gpus) -> tuple:
    """`costs_from_result`'s ``prompt_cache`` for a runtime on ``gpus`` GPUs."""
    from advisor.model.inputs import prompt_cache_gb_s

    return prompt_cache_gb_s(rt), rt.server_prompt_cache_max_gb, gpus


def runtime_scheduler(rt, hw=None) -> tuple[int, int, bool]:
    """(max sequences, tokens per step, paged KV) of a runtime's default scheduler on ``hw`` (vLLM
    starts smaller on GPUs under 70 GiB and on A100s: `Runtime.scheduler_on`)."""
    seqs, chunk = rt.scheduler_on(hw)
    return seqs, chunk, rt.paged_kv


# ---- one configuration ----------------------------------------------------------------------------

@dataclass(frozen=True)
class ServeReport:
    """A load on one configuration: the steady state as plain numbers, with what set it."""

    hardware: str
    model: str
    quant: str
    kv_dtype: str
    runtime: str
    gpus: int
    load: Load
    max_seqs: int
    chunk_tokens: int
    kv_capacity: float          # running sequences the KV cache holds at the average context
    fits: bool                  # the weights fit and at least one sequence's KV does
    ttft_ms: float
    ttft_p50_ms: float
    ttft_p90_ms: float
    itl_ms: float
    itl_p90_ms: float
    e2e_ms: float
    throughput_tok_s: float
    request_rate_rps: float
    running_batch: float
    queue: float
    capacity: float
    bound: str
    saturated: bool
    efficiency_basis: str
    notes: tuple[str, ...] = ()
    #: the band of each figure: the same load solved with the decode and prompt speeds at the low and
    #: high edges of the profile's bands (the pessimistic edge gives the high latencies and the low
    #: throughput), widened by how far past such edges servers were measured (`widen_band`)
    ttft_low_ms: float = math.nan
    ttft_high_ms: float = math.nan
    itl_low_ms: float = math.nan
    itl_high_ms: float = math.nan
    throughput_low_tok_s: float = math.nan
    throughput_high_tok_s: float = math.nan
    #: the 99th percentiles: the tail a benchmark client prints beside the median (the first wave's
    #: last prompts, the steps that carry a prompt chunk)
    ttft_p99_ms: float = math.nan
    itl_p99_ms: float = math.nan
    #: a benchmark client's TPOT, each request's own mean gap, averaged and its median (`Serving.tpot_ms`)
    tpot_ms: float = math.nan
    tpot_p50_ms: float = math.nan
    #: the median gap between tokens (`Serving.itl_p50_ms`)
    itl_p50_ms: float = math.nan

    @property
    def tok_s_per_user(self) -> float:
        """Decode speed one user sees: one token per inter-token latency."""
        return 1e3 / self.itl_ms if self.itl_ms > 0 else math.nan

    def batch_seconds(self) -> tuple[float, float, float]:
        """A batch's time to its last answer, s: (estimate, at the band's fast edge, at its slow edge);
        inf where a rate is 0."""
        n = self.load.requests
        done = n / self.request_rate_rps if self.request_rate_rps > 0 else math.inf
        fast, slow = (n * self.load.output_tokens / t if t > 0 else math.inf
                      for t in (self.throughput_high_tok_s, self.throughput_low_tok_s))
        return done, fast, slow

    def latency(self, metric: str, stat: str = "mean") -> tuple[float, float, float]:
        """(figure, band low, band high), ms, of a latency a benchmark client reports: ``metric`` ttft,
        itl, tpot or e2e; ``stat`` mean, p50 (or median), p90, p95 or p99 (p95 is given its p90).
        The high percentiles of the gaps (ITL) land on the steps that carry a prompt chunk, their median
        on a plain decode step (unless most steps carry one); those of TPOT (each request's own mean
        gap) average those steps in, which the mean ITL already does. A percentile's band is the
        mean's, scaled."""
        stat = "p50" if stat == "median" else stat
        if metric == "ttft":
            mid = {"p50": self.ttft_p50_ms, "p90": self.ttft_p90_ms, "p95": self.ttft_p90_ms,
                   "p99": self.ttft_p99_ms}.get(stat, self.ttft_ms)
            k = mid / self.ttft_ms if self.ttft_ms > 0 else 1.0
            return mid, self.ttft_low_ms * k, self.ttft_high_ms * k
        if metric in ("itl", "tpot"):
            per_gap = {"p50": self.itl_p50_ms, "p90": self.itl_p90_ms, "p95": self.itl_p90_ms, "p99": self.itl_p99_ms}
            per_request = {"p50": self.tpot_p50_ms}.get(stat, self.tpot_ms)
            mid = per_gap.get(stat, self.itl_ms) if metric == "itl" else (
                per_request if math.isfinite(per_request) else self.itl_ms)
            k = mid / self.itl_ms if self.itl_ms > 0 else 1.0
            return mid, self.itl_low_ms * k, self.itl_high_ms * k
        if metric == "e2e":
            d = self.load.output_tokens - 1
            return self.e2e_ms, self.ttft_low_ms + d * self.itl_low_ms, self.ttft_high_ms + d * self.itl_high_ms
        raise ValueError(f"not a latency: {metric!r}")

    def to_dict(self) -> dict:
        from dataclasses import asdict

        d = asdict(self)
        d["load"] = asdict(self.load)
        d["tok_s_per_user"] = self.tok_s_per_user
        d["notes"] = list(self.notes)
        return d


def _kernel(cat, cfg, load: Load) -> tuple:
    """What `serve` asks of the kernel for ``load``'s lengths: the profile's evidence, the efficiency,
    and the decode step at every STEP_GRID batch. The clients (concurrency, rate, think time) do not
    change it. Refuses a context the model cannot take."""
    from advisor.model.config import context_refusal
    from advisor.model.efficiency import efficiency_for, evidence, widened
    from advisor.model.predict import evaluate_config

    load.check()
    cfg.check(check_context=False)
    # beyond the native context (RoPE scaling) up to the limit predict uses, with its note
    why = context_refusal(cfg.model, load.prompt_tokens + load.output_tokens)
    if why:
        raise AdvisorError(f"prompt + output: {why}")
    backing = evidence(cat.profiles, cfg.runtime, cfg.hardware, cfg.quant, cat.quants)
    eff = widened(efficiency_for(cat.profiles, cfg.runtime, cfg.hardware), backing)
    P = load.new_prompt_tokens
    r = evaluate_config(cfg, eff, batch=STEP_GRID, prompt=P, depth=load.prompt_tokens - P,
                        output=load.output_tokens)
    return backing, eff, r


def serve(cat, cfg, load: Load) -> ServeReport:
    """The steady state of ``load`` on the configuration ``cfg`` (a `Config`)."""
    return _serve_at(cat, cfg, load, None)[0]


#: the fields of a report that come from the solve (estimate), and the band's (edge, field) pairs
_SOLVED = ("ttft_ms", "ttft_p50_ms", "ttft_p90_ms", "ttft_p99_ms", "itl_ms", "itl_p50_ms", "itl_p90_ms", "itl_p99_ms", "tpot_ms",
           "tpot_p50_ms", "e2e_ms",
           "throughput_tok_s", "request_rate_rps", "running_batch", "queue", "capacity")
_BAND = {"ttft_high_ms": (1, "ttft_ms"), "itl_high_ms": (1, "itl_ms"), "throughput_low_tok_s": (1, "throughput_tok_s"),
         "ttft_low_ms": (2, "ttft_ms"), "itl_low_ms": (2, "itl_ms"), "throughput_high_tok_s": (2, "throughput_tok_s")}


def _serve_at(cat, cfg, load: Load, clients) -> list[ServeReport]:
    """`serve`'s report of ``load``, or (``clients``: closed-loop client counts) one report per count,
    all from one vectorised solve of the estimate and both band edges."""
    from advisor.model.config import context_note
    from advisor.model.inputs import experts_slow
    from advisor.model.notes import batched_experts_note, efficiency_note, tensor_parallel_across_nodes_note
    from advisor.model.ceilings import ceiling_note, ceiling_tok_s
    from advisor.model.roofline import experts_slowdown
    from advisor.model.predict import ceiling_at

    context = load.prompt_tokens + load.output_tokens
    backing, eff, r = _kernel(cat, cfg, load)   # checks the load; the clients do not change it: once for all
    P = load.new_prompt_tokens
    seqs, chunk, paged = runtime_scheduler(cfg.runtime, cfg.hardware)
    seqs, chunk = load.max_seqs or seqs, load.chunk_tokens or chunk
    sample_s = server_sample_s(cfg.runtime.server_sample_ns_per_vocab or 0.0, cfg.model.vocab)
    costs = dataclasses.replace(costs_from_result(r, load, paged, seqs, chunk, sample_s,
                                                  prompt_cache_of(cfg.runtime, cfg.gpus)),
                                prefill_first=cfg.runtime.prefill_first)
    fits = float(costs.kv_capacity) >= 1
    loads = [load] if clients is None else [Load(**{**load.__dict__, "kind": "closed", "concurrency": float(c)})
                                            for c in clients]
    # what every report shares: the notes on the scheduler, the profile, the hardware, the context
    shared = []
    if not cfg.runtime.scheduler_source and not (load.max_seqs and load.chunk_tokens):
        shared.append(f"the catalog does not state {cfg.runtime.name}'s scheduler defaults: assumed {seqs:,} running "
                      f"sequences and {chunk:,} tokens per step (set --max-seqs and --chunk-tokens)")
    why = efficiency_note(eff, cfg.runtime, cfg.hardware, backing, cfg.quant)
    if why:
        shared.append(why)
    if sample_s > 0:
        shared.append(f"{cfg.runtime.name}'s server samples every running sequence on the host: "
                      f"{sample_s * 1e3:.2f} ms per sequence per step over a {cfg.model.vocab:,}-token vocabulary")
    save_s = float(costs.request_server_s)
    if save_s > 0:
        saved_gb = float(_first(r.kv_seq_bytes)) * cfg.gpus / 1e9
        shared.append(f"{cfg.runtime.name}'s server copies each finished request's KV cache ({saved_gb * 1e3:,.0f} MB) to "
                      f"its prompt cache in host memory when the next request arrives: {save_s * 1e3:,.0f} ms before "
                      f"that prompt, with every running sequence waiting (--cache-ram 0 turns the cache off; it pays "
                      f"back only where requests share long prefixes)")
    shared.extend(cfg.hardware.assumed)  # what the hardware name left open (memory size, GPU-core bin)
    across = tensor_parallel_across_nodes_note(cfg)
    if across:
        shared.append(across)
    beyond = context_note(cfg.model, context)
    if beyond:
        shared.append(beyond)
    if fits:
        # [estimate, slow edge, fast edge] for each client count, in one solve
        conc = None if clients is None else np.asarray(clients, float)[:, None]
        # the slow edge's steps where a batched mixture of experts is measured slower than modelled
        slow = experts_slowdown(experts_slow(cfg.hardware, cfg.runtime), STEP_GRID) if cfg.model.experts else None
        s = solve(with_edges(costs, eff, slow), load, conc)
        shape = (len(loads), 3)
        solved = {k: np.broadcast_to(np.asarray(getattr(s, k)), shape if clients is not None else (3,)).reshape(shape)
                  for k in (*_SOLVED, "bound", "saturated")}
        ceiling = ceiling_at(cfg, prompt=P, depth=load.prompt_tokens - P, output=load.output_tokens)
        cap = ceiling_tok_s(ceiling, cfg.gpus)
    reports = []
    for i, ld in enumerate(loads):
        notes = []
        if fits:
            v = {k: float(solved[k][i, 0]) for k in _SOLVED}
            # the band: the load at the profile's slow and fast edges
            v.update({k: float(solved[f][i, edge]) for k, (edge, f) in _BAND.items()})
            # … widened by how far past such edges servers were measured under this kind of load
            widen_band(v, cat.serving_bands, band_mode(ld))
            bound, saturated = str(solved["bound"][i, 0]), bool(solved["saturated"][i, 0])
            if math.isfinite(cap):
                # the band's optimistic edge stops at the vendor's published maximum as the estimate does
                v["throughput_high_tok_s"] = min(v["throughput_high_tok_s"], cap)
                if v["throughput_tok_s"] >= 0.98 * cap:
                    notes.append(ceiling_note(ceiling, cfg.hardware))
        else:
            v = dict.fromkeys(_SOLVED[:-1], math.nan)
            v["capacity"] = 0.0
            bound, saturated = "kv-capacity", True
            notes.append("does not fit: after the weights there is no room for one sequence's KV cache of "
                         f"{ld.prompt_tokens + ld.output_tokens:,} tokens")
        if saturated and fits and ld.kind == "closed" and bound == "prefill-budget":
            notes.append(f"saturated: the prompts use up what each step leaves of its token budget at "
                         f"{v['running_batch']:.0f} running sequences (the KV cache and max-seqs allow "
                         f"{v['capacity']:.0f}); {v['queue']:.0f} of {ld.concurrency:g} clients wait in the queue")
        elif saturated and fits and ld.kind == "closed":
            notes.append(f"saturated: {v['capacity']:.0f} sequences run at once ({bound}); "
                         f"{v['queue']:.0f} of {ld.concurrency:g} clients wait in the queue")
        if fits:
            experts = batched_experts_note(cfg, v["running_batch"])
            if experts:
                notes.append(experts)
        if saturated and fits and ld.kind == "open":
            notes.append(f"unstable: {ld.rate_rps:g} requests/s exceeds the {v['request_rate_rps']:.3g}/s the server "
                         f"completes at capacity ({v['capacity']:.0f} sequences, {bound}); the queue grows without bound")
        reports.append(ServeReport(
            hardware=cfg.hardware.name, model=cfg.model.name, quant=cfg.quant.name, kv_dtype=cfg.kv_dtype.name,
            runtime=cfg.runtime.name, gpus=cfg.gpus, load=ld, max_seqs=int(seqs), chunk_tokens=int(chunk),
            kv_capacity=float(costs.kv_capacity), fits=fits, bound=bound, saturated=saturated,
            efficiency_basis=eff.basis, notes=tuple(notes + shared), **v))
    return reports


#: each metric's band fields in a report: (estimate, low edge, high edge)
_BAND_FIELDS = {"ttft": ("ttft_ms", "ttft_low_ms", "ttft_high_ms"), "itl": ("itl_ms", "itl_low_ms", "itl_high_ms"),
                "throughput": ("throughput_tok_s", "throughput_low_tok_s", "throughput_high_tok_s")}


def band_mode(load: Load) -> str:
    """The kind of load a serving band's widening is fitted for (`advisor.data.specs.SERVING_MODES`):
    ``batch``, requests sent at once and timed to the last answer; ``steady``, anything else."""
    return "batch" if load.kind == "offline" and load.requests else "steady"


def band_factors(bands, mode: str, metric: str) -> tuple[float, float]:
    """(below, above): how far past the band edges of ``metric`` under ``mode``'s load servers were
    measured, from the catalog's serving bands (`advisor.data.specs.ServingBand`); (1, 1) without an
    entry."""
    for b in bands.values():
        if (b.mode, b.metric) == (mode, metric):
            return b.below, b.above
    return 1.0, 1.0


def widen_band(v: dict, bands, mode: str) -> None:
    """Widen the band edges in ``v`` (a report's fields) in place by `band_factors`: the edges are the
    load solved at the efficiency profile's edges, which leaves out the scheduling model's own error
    (how the steps fill, how the front end paces requests); the factors are how far past those edges
    servers were measured, each source held out."""
    for metric, (est, low, high) in _BAND_FIELDS.items():
        below, above = band_factors(bands, mode, metric)
        if (below, above) != (1.0, 1.0) and math.isfinite(v.get(est, math.nan)):
            v[low] = min(v[low], v[est]) / below
            v[high] = max(v[high], v[est]) * above


def with_edges(costs: StepCosts, eff, slow_steps=None) -> StepCosts:
    """``costs`` (one configuration) three times along a last axis: as estimated, at the profile's
    pessimistic edge (decode_low, prefill_low) and at its optimistic one (decode_high, prefill_high).
    One vectorised solve then gives the estimate and its band (a speed × k is a time ÷ k).
    ``slow_steps``: a further factor per grid batch on the pessimistic edge's decode steps (a
    mixture of experts measured slower than modelled, `advisor.model.roofline.experts_slowdown`)."""
    from dataclasses import replace as _replace

    decode = np.array([1.0, float(eff.decode_low), float(eff.decode_high)])
    prefill = np.array([1.0, float(eff.prefill_low), float(eff.prefill_high)])
    f = lambda a, k: np.asarray(a, float)[..., None] / k  # noqa: E731
    steps = [f(costs.step_s, decode), f(costs.step_compute_s, decode), f(costs.step_memory_s, decode)]
    if slow_steps is not None:
        for a in steps:
            a[..., 1] *= np.asarray(slow_steps, float).reshape((-1,) + (1,) * (a.ndim - 2))[:a.shape[0]]
    return _replace(costs, step_s=steps[0], step_compute_s=steps[1], step_memory_s=steps[2],
                    prompt_token_s=f(costs.prompt_token_s, prefill),
                    prompt_group_token_s=f(costs.prompt_group_token_s, prefill),
                    attention_groups=np.asarray(costs.attention_groups, float)[..., None] + 0.0 * prefill,
                    request_s=f(costs.request_s, prefill), prompt_step_s=f(costs.prompt_step_s, prefill))


def concurrency_sweep(cat, cfg, load: Load, limit: int = 4096) -> list[ServeReport]:
    """The throughput–latency curve: closed-loop concurrency 1, 2, 4 … up to two steps past saturation
    (every power of two up to ``limit`` solved at once, the kernel called once: the clients do not
    change it)."""
    clients = [2 ** k for k in range(int(math.log2(max(limit, 1))) + 1)]
    out: list[ServeReport] = []
    past = 0
    for rep in _serve_at(cat, cfg, Load(**{**load.__dict__, "kind": "closed", "concurrency": 1.0}), clients):
        out.append(rep)
        if not rep.fits:
            break
        past += rep.saturated
        if past >= 2:
            break
    return out
