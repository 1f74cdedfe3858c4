"""The recommender: the cheapest hardware × GPU count × quantization × KV dtype × runtime (and
data-parallel replicas of it) that holds the model at the required context and concurrency and
meets the latency targets.

One vectorised sweep prices every combination (`advisor.model.sweep`); each gets a verdict with a
one-line reason; the ones that pass are ranked by cost on one basis (buy or rent, stated), then
quality, then headroom; the Pareto front of cost, speed and quality is marked.

Quality is one scale: the model's own release format is the reference; other formats carry the
KL divergence (or perplexity increase) llama.cpp published for them on Llama-3-8B, or are
"unmeasured". A natively quantized model (gpt-oss in MXFP4, DeepSeek-V3/R1 in FP8) is never
upcast: a wider format costs memory and buys no quality.
"""

from __future__ import annotations

import dataclasses
import math
import weakref
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

from advisor.data.catalog import Catalog
from advisor.data.errors import AdvisorError
from advisor.model.efficiency import EVIDENCE_LEVELS
from advisor.model.roofline import MAX_BATCH, Workload, experts_slowdown
from advisor.model.config import context_refusal
from advisor.data.specs import Hardware, KvDtype, Model, Quant, Runtime
from advisor.model.serving import (PASS_FIELDS, STEP_FIELDS, STEP_GRID, Load, band_factors, costs_from_result,
                                    server_sample_s, solve)
from advisor.model.devices import NETWORKS_GBIT_S, domain_gpus, max_gpus
from advisor.model.sweep import Layouts, sweep
from advisor.plan import pricing
from advisor.model.layout import Layout
from advisor.plan.launch import keeps_prompt_cache, launch_line
from advisor.plan.pricing import thin_quote_factor
from advisor.plan.reasons import Reason

GPU_COUNTS = (1, 2, 4, 8)
#: Instance sizes past one machine (TP 8 in pipeline stages; MoE: wide EP with data-parallel
#: attention), tried for models too large for a node at 16-bit or for loads of thousands, and
#: whenever --max-gpus allows more than a node; 72 is one NVL72 rack.
CLUSTER_GPU_COUNTS = (16, 32, 64, 72)
#: Past these, one machine's instances rarely serve the load: instances past a node are tried too.
CLUSTER_USERS, CLUSTER_RPS, CLUSTER_PARAMS = 1000, 50.0, 150e9
#: Data-parallel replicas tried, in this order, when one group (within one node: up to 8 GPUs)
#: cannot serve the load; each replica serves its share of the users or of the request rate. The
#: search stops at the first count that serves, at the load itself (one replica per user), or at
#: --max-gpus in all.
REPLICAS = (1, 2, 3, 4, 6, 8, 12, 16, 24, 32, 48, 64, 96, 128, 192, 256, 384, 512, 768, 1024)
#: The default floor: 4-bit class formats (Q4_K_M, AWQ INT4, NVFP4, MXFP4 …); --min-bits lowers it.
DEFAULT_MIN_BITS = 4
#: Chat sessions grow past one prompt + answer: without --context every user may reach this many tokens
#: (or the model's native context, if shorter).
DEFAULT_CHAT_CONTEXT = 8192
DEFAULT_KV = ("f16", "fp8", "q8_0")
#: With --rps and no latency targets, Little's law uses these to turn a rate into concurrency.
DEFAULT_TTFT_S = 1.0
DEFAULT_TOK_S = 20.0
#: The per-user speed below which a chat is too slow to use, about reading speed: will-it-run's
#: "usable", and the floor a server for several users is sized to where no --tok-s is given
#: (`with_default_speed`).
DEFAULT_MIN_TOK_S = 10.0


@dataclass(frozen=True)
class Requirements:
    """What the user needs. Lengths in tokens, rates in requests/s, latency in ms, money in USD."""

    model: Model
    prompt_tokens: int = 1024
    output_tokens: int = 256
    context_tokens: int | None = None        # longest context that must fit (default ≥ 8k, DEFAULT_CHAT_CONTEXT)
    users: int | None = None                 # concurrent users: clients in a closed loop (burst: sequences at once)
    rps: float | None = None                 # or a Poisson request rate (open loop)
    think_s: float = 0.0                     # closed loop: pause between a response and the next request
    ttft_ms: float | None = None
    tok_s: float | None = None               # per-user decode speed
    tok_s_default: bool = False              # tok_s is DEFAULT_MIN_TOK_S, set because none was asked for
    hardware_kinds: tuple[str, ...] = ()
    vendors: tuple[str, ...] = ()
    hardware: tuple[str, ...] = ()           # keys of a named list
    max_gpus: int | None = None              # GPUs in all, replicas included (None: what the load needs)
    budget_usd: float | None = None
    budget_usd_hour: float | None = None
    runtimes: tuple[str, ...] = ()
    min_quality_rank: int = 0
    quality_floor: str = ""                  # the name of the worst acceptable quantization
    max_ppl_delta: float | None = None       # formats without a published figure fail it ("unmeasured")
    min_bits: float = DEFAULT_MIN_BITS       # the floor on a format's bit class (the native format always passes)
    cost_basis: str = ""                     # "buy", "rent" or "" (rent for datacenter, buy otherwise)
    kv_dtypes: tuple[str, ...] = DEFAULT_KV
    safe: bool = False                       # judge by the pessimistic edge of the band
    allow_spec: bool = False                 # try speculative decoding on configurations too slow without it
    allow_offload: bool = False              # try partial offload to host RAM on configurations that do not fit
    burst: bool = False                      # judge all users' prompts arriving at once (a static batch)
    prefix_hit: float = 0.0                  # share of each prompt the prefix cache holds (a shared RAG/system prefix)
    #: prompts vary in length: points and weights of their distribution (`serving.prompt_mix`);
    #: prompt_tokens stays the mean. Empty = every prompt is prompt_tokens long.
    prompt_points: tuple[float, ...] = ()
    prompt_weights: tuple[float, ...] = ()
    life_years: float = pricing.DEFAULT_LIFE_YEARS      # buy: electricity counted over this life
    hours_per_day: float | None = None       # buy: hours a day at board power (default: 24 for a server, 0 for one user)
    usd_per_kwh: float | None = None         # buy: your electricity rate (else the catalog's tariff)
    own_host: bool = False                   # buy: the cards go in a machine you have (cards only)
    network: str = ""                        # the network between nodes (NETWORKS_GBIT_S), else each hardware's own
    #: instances across nodes: True always, False never, None when the model or the load calls for them
    across_nodes: bool | None = None

    @property
    def context(self) -> int:
        if self.context_tokens:
            return self.context_tokens
        # (the longest prompts of a distribution must fit too)
        longest = int(math.ceil(max(self.prompt_points, default=self.prompt_tokens)))
        return max(max(self.prompt_tokens, longest) + self.output_tokens,
                   min(DEFAULT_CHAT_CONTEXT, self.model.native_context))

    @property
    def context_is_default(self) -> bool:
        return not self.context_tokens and self.context > self.prompt_tokens + self.output_tokens

    @property
    def duty_hours(self) -> float:
        """Hours a day a bought machine is counted at board power: a server's 24 (an upper bound: it
        idles between requests), none for one user's machine unless --hours-per-day says."""
        if self.hours_per_day is not None:
            return self.hours_per_day
        return pricing.DEFAULT_HOURS_PER_DAY if (self.rps or (self.users or 1) > 1) else 0.0

    def concurrency(self) -> int:
        if self.users:
            return self.users
        if self.rps:
            ttft = (self.ttft_ms / 1e3) if self.ttft_ms else DEFAULT_TTFT_S
            speed = DEFAULT_TOK_S if self.tok_s_default or not self.tok_s else self.tok_s
            return max(1, math.ceil(self.rps * (ttft + self.output_tokens / speed)))
        return 1

    def check(self) -> None:
        m = self.model
        for name, v in (("prompt", self.prompt_tokens), ("output", self.output_tokens)):
            if v < 0:
                raise AdvisorError(f"{name} must be at least 0, got {v}")
        if self.prompt_tokens + self.output_tokens == 0:
            raise AdvisorError("prompt and output are both 0: there is nothing to serve")
        if self.context < self.prompt_tokens + self.output_tokens:
            raise AdvisorError(f"context {self.context:,} is shorter than prompt + output "
                               f"({self.prompt_tokens + self.output_tokens:,})")
        why = context_refusal(m, self.context)  # beyond the native context: RoPE scaling, up to 4x
        if why:
            raise AdvisorError(why)
        if self.users is not None and self.users < 1:
            raise AdvisorError(f"users must be at least 1, got {self.users}")
        if self.users is not None and self.rps is not None:
            raise AdvisorError("give --users (clients in a closed loop) or --rps (arrivals per second), not both")
        if self.burst and self.rps is not None:
            raise AdvisorError("--burst is every user's prompt at the same instant: it takes --users, not --rps")
        if self.rps is not None and not (0 < self.rps < 1e6):
            raise AdvisorError(f"rps must be a positive rate, got {self.rps}")
        if self.concurrency() > MAX_BATCH:
            raise AdvisorError(f"{self.concurrency():,} concurrent sequences is beyond what we model")
        for name, v in (("ttft-ms", self.ttft_ms), ("tok-s", self.tok_s), ("budget-usd", self.budget_usd),
                        ("budget-usd-hour", self.budget_usd_hour)):
            if v is not None and not (v > 0 and math.isfinite(v)):
                raise AdvisorError(f"--{name} must be a positive number, got {v}")
        if self.max_gpus is not None and not 1 <= self.max_gpus <= 100_000:
            raise AdvisorError(f"--max-gpus must be between 1 and 100,000, got {self.max_gpus}")
        if not 1 <= self.min_bits <= 32:
            raise AdvisorError(f"--min-bits must be between 1 and 32, got {self.min_bits:g}")
        for name, v, lo, hi in (("life-years", self.life_years, 0.1, 30), ("hours-per-day", self.duty_hours, 0, 24)):
            if not (lo <= v <= hi):
                raise AdvisorError(f"--{name} must be between {lo:g} and {hi:g}, got {v:g}")
        if self.usd_per_kwh is not None and not (0 <= self.usd_per_kwh < 10):
            raise AdvisorError(f"--usd-per-kwh must be between 0 and 10, got {self.usd_per_kwh:g}")
        if not (0 <= self.prefix_hit < 1):
            raise AdvisorError(f"--prefix-hit must be a fraction in [0, 1), got {self.prefix_hit:g}")
        if self.cost_basis not in ("", "buy", "rent"):
            raise AdvisorError(f"--cost-basis must be buy or rent, got {self.cost_basis!r}")
        if self.network and self.network not in NETWORKS_GBIT_S:
            raise AdvisorError(f"unknown network {self.network!r}: one of {', '.join(NETWORKS_GBIT_S)}")

    def cluster_sizes(self) -> bool:
        """Whether instances past one machine are tried: when asked (`across_nodes`; the CLI asks when
        --max-gpus passes a node), else for a model too large for a node at 16-bit or a load of thousands."""
        if self.across_nodes is not None:
            return self.across_nodes
        params = self.model.params_total_b * 1e9
        return params >= CLUSTER_PARAMS or (self.users or 0) >= CLUSTER_USERS or (self.rps or 0) >= CLUSTER_RPS


@dataclass
class Candidate:
    """One configuration with its predicted numbers and verdict."""

    hardware: Hardware
    runtime: Runtime
    quant: Quant
    kv_dtype: KvDtype
    gpus: int
    users: int
    ttft_ms: float
    ttft_safe_ms: float
    tok_s: float
    tok_s_safe: float
    throughput_tok_s: float
    memory_needed_gb: float       # per GPU, at the full context and concurrency
    memory_usable_gb: float       # per GPU
    max_batch: int                # sequences at the full context
    max_context: int              # at one user
    prefill_compute_share: float
    bound: str                    # what limits it: memory(-bandwidth), compute, kv-capacity, max-seqs, queue
    running_batch: float          # sequences decoding together (serving) or the batch (burst)
    queue: float                  # requests waiting (serving; 0 in burst)
    cost_usd: float | None        # purchase, all GPUs of all replicas
    cost_usd_hour: float | None   # rent, all GPUs of all replicas
    price_note: str
    replicas: int = 1             # data-parallel copies of the gpus-GPU group, users split among them
    usd_per_million_tokens: float | None = None   # rent: cost_usd_hour over the output tokens it serves
    buy_total_usd: float | None = None   # purchase plus the electricity over the stated life (what "buy" ranks by)
    power_usd_month: float | None = None  # the GPUs' electricity per month, bought
    rent_usd_month: float | None = None   # rent for a month at 24/7
    break_even_months: float | None = None  # when buying costs less than renting 24/7 (None: never)
    price_thin_rent: bool = False         # the rent rests on fewer than three quotes
    price_thin_buy: bool = False          # the purchase does
    rank_cost: float | None = None        # the cost the ranking compares (a thin price × its spread)
    quality: str = ""             # "reference (native BF16)", "KLD 0.031 (Llama-3-8B)", "unmeasured"
    technique: str = ""           # what makes it pass with --allow-spec / --allow-offload, in words
    ok: bool = False
    #: the verdict: "margin" (passes at the pessimistic edge of every band), "estimate" (passes at
    #: the prediction only; `edge_misses` says what the edge misses) or "miss"
    tier: str = "miss"
    edge_misses: list[Reason] = field(default_factory=list)
    #: how much measured data backs the speeds: measured | extrapolated | uncalibrated
    evidence: str = ""
    usual_runtime: bool = False   # the runtime people usually run on this hardware
    headroom: float = 0.0
    pareto: bool = False
    launch: str = ""
    failures: list[Reason] = field(default_factory=list)
    #: how one instance's GPUs split the model (tensor, pipeline, expert parallel, attention DP)
    layout: Layout = field(default_factory=Layout)
    power_kw: float | None = None         # the deployment's maximum draw, kW (`pricing.deployment_power`)
    power_basis: str = ""                 # what that figure is: a system's maximum, or board power
    network_gbit_s: float | None = None   # the network between an instance's nodes, per GPU (None: one node)
    joules_per_token: float | None = None  # that power over the output tokens served

    @property
    def config_layout(self) -> Layout | None:
        """The layout a `Config` of this candidate carries: None for the runtime's own split."""
        return None if self.layout.gpus != self.gpus or self.layout.plain else self.layout

    @property
    def one_machine(self) -> bool:
        """Every GPU of every replica fits one machine (what a compose file can start)."""
        return self.total_gpus <= max_gpus(self.hardware)

    @property
    def nodes(self) -> int:
        """Machines one instance spans (a node holds `max_gpus` of this hardware)."""
        return max(1, math.ceil(self.gpus / max_gpus(self.hardware)))

    @property
    def split_text(self) -> str:
        """The instance's split in words: "TP 8", "attention DP 16 + EP 16, 2 nodes"."""
        if self.layout.gpus == 1 and self.gpus > 1:   # a runtime's own split (llama.cpp's layer split)
            return f"TP {self.gpus}" if self.runtime.parallelism == "tp" else f"layer split {self.gpus}"
        text = self.layout.text()
        if self.nodes > 1 and self.gpus <= domain_gpus(self.hardware):
            return text + f", {self.nodes} nodes in one NVLink domain"   # an NVL72 rack's compute trays
        return text + (f", {self.nodes} nodes" if self.nodes > 1 else "")

    @property
    def label(self) -> str:
        gpus = f"{self.gpus} × " if self.gpus > 1 else ""
        group = f"{gpus}{self.hardware.name}"
        if self.replicas > 1 and self.gpus > 1:
            return f"{self.replicas} × ({group}, {self.split_text})"
        if self.replicas > 1:
            return f"{self.replicas} × {group} (a replica each)"
        if self.gpus > 1 and (self.layout.gpus > 1 and self.layout.text() != f"TP {self.gpus}" or self.nodes > 1):
            return f"{group} ({self.split_text})"
        return group

    @property
    def total_gpus(self) -> int:
        return self.gpus * self.replicas



def bits_class(q: Quant) -> int:
    """The bit class a --min-bits floor compares (Q3_K_L is 3-bit class at 4.2 bits per weight)."""
    return q.bits_class or int(q.bits_per_weight)


#: Formats that hold a native format's weights unchanged in another container (gpt-oss's MXFP4
#: experts repacked as GGUF by llama.cpp's converter).
SAME_WEIGHTS = {"mxfp4": ("mxfp4-moe-gguf",)}


def native_quant(m: Model) -> str:
    return m.native_quant or "bf16"


def is_reference(q: Quant, m: Model) -> bool:
    """The model's own release format (16-bit formats stand for a BF16 release)."""
    native = native_quant(m)
    if native == "bf16":
        return q.kind == "float" and q.bits_per_weight >= 16
    return q.key == native or q.key in SAME_WEIGHTS.get(native, ())


def is_upcast(q: Quant, m: Model) -> bool:
    """A format at least as wide as the one a natively quantized model ships in: it saves no memory
    and cannot add quality (an INT8 copy of an FP8 release only loses some)."""
    return bool(m.native_quant) and not is_reference(q, m) and bits_class(q) >= native_bits(m)


def native_bits(m: Model) -> int:
    return 16 if not m.native_quant else {"fp8": 8, "mxfp4": 4, "nvfp4": 4, "int4-experts-g32": 4}.get(m.native_quant, 16)


def quality_text(q: Quant, m: Model) -> str:
    """One scale: the native format is the reference; else the published figure on Llama-3-8B; else unmeasured."""
    if is_reference(q, m):
        return f"reference (native {q.name})" if m.native_quant else "reference (16-bit)"
    if m.native_quant:
        return f"unmeasured (vs native {native_quant(m).upper()})"
    if q.kld is not None:
        return f"KLD {q.kld:.3f} (Llama-3-8B)"
    if q.ppl_delta is not None:
        return f"+{q.ppl_delta:.2f} ppl (Llama-3-8B)"
    return "unmeasured"


def _quality_score(q: Quant, m: Model) -> int:
    """For ranking only (never printed): the reference first, then the catalog's ordering."""
    return 101 if is_reference(q, m) else q.quality_rank


def _quality_reason(q: Quant, req: Requirements) -> Reason | None:
    m = req.model
    if is_upcast(q, m):
        return Reason("quality", None, None, "upcast", {"quant": q.name, "native": native_quant(m).upper()})
    if is_reference(q, m):
        return None
    if req.max_ppl_delta is not None and (q.ppl_delta is None or m.native_quant):
        return Reason("quality", req.max_ppl_delta, None, "+ppl", {"quant": q.name, "unmeasured": True})
    if req.max_ppl_delta is not None and q.ppl_delta > req.max_ppl_delta:
        return Reason("quality", req.max_ppl_delta, q.ppl_delta, "+ppl", {"quant": q.name})
    if bits_class(q) < req.min_bits:
        return Reason("quality", req.min_bits, bits_class(q), "bits",
                      {"quant": q.name, "kld": q.kld, "ppl_delta": q.ppl_delta})
    if q.quality_rank < req.min_quality_rank:
        return Reason("quality", req.min_quality_rank, q.quality_rank, "quality rank",
                      {"quant": q.name, "ppl_delta": q.ppl_delta, "floor": req.quality_floor})
    return None


class Recommendation:
    """Every configuration considered, judged; candidates are built on demand (there can be 100k)."""

    def __init__(self, req: Requirements, users: int, configs, arrays: dict, order: np.ndarray,
                 basis: str, elapsed_ms: float, basis_why: str = "", catalog: Catalog | None = None):
        self.requirements = req
        self.catalog = catalog
        self.users = users
        # ``configs``: a sweep with one entry per configuration (its index arrays name them);
        # ``arrays``: everything judged about them, in the same order
        self._configs, self._a = configs, arrays
        self._order = order              # passing first (ranked), then failing by headroom
        self.cost_basis = basis          # "hour" (rent), "purchase" (buy) or "headroom" (no prices)
        self.cost_basis_why = basis_why  # why that basis: the flag, a budget, or the hardware's kind
        self.elapsed_ms = elapsed_ms
        self.n_passing = int(arrays["ok"].sum())
        self.n_margin = int((arrays["ok"] & arrays["margin"]).sum())   # of them, passing at the bands' edge
        self.load_kind = "burst" if req.burst else ("open" if req.rps and not req.users else "closed")
        self._cache: dict[int, Candidate] = {}
        self._prices: dict[tuple, tuple] = {}   # per (hardware, size, GPUs, replicas): its prices
        self._distinct: dict[bool, np.ndarray] = {}   # `_distinct_order`, of the passing and the misses

    def __len__(self) -> int:
        return int(self._order.size)

    def candidate(self, i: int) -> Candidate:
        """Candidate number ``i`` of the sweep (not the rank)."""
        c = self._cache.get(i)
        if c is None:
            c = _build(self, i)
            self._cache[i] = c
        return c

    @property
    def passing(self) -> list[Candidate]:
        return [self.candidate(int(i)) for i in self._order[: self.n_passing]]

    def top(self, n: int) -> list[Candidate]:
        return [self.candidate(int(i)) for i in self._order[: min(n, self.n_passing)]]

    def closest_misses(self, n: int = 5) -> list[Candidate]:
        """Failing configurations that came nearest (largest worst-case ratio of achieved to required)."""
        return [self.candidate(int(i)) for i in self._order[self.n_passing: self.n_passing + n]]

    def all(self) -> list[Candidate]:
        return [self.candidate(int(i)) for i in self._order]

    def _distinct_order(self, misses: bool = False) -> np.ndarray:
        """The passing (or failing) configurations in rank order, the first of each distinct
        (hardware, GPUs, layout, replicas, runtime, format): the KV-dtype variants folded into the best one.
        On the index arrays: a candidate is built only for what is shown (there can be 50k). Kept: the
        groups, the rows and the count each read it."""
        if misses in self._distinct:
            return self._distinct[misses]
        order = self._order[self.n_passing:] if misses else self._order[: self.n_passing]
        if order.size == 0:
            return order
        s = self._configs
        key = np.zeros(order.size, np.int64)   # the six indices as one number (a row-wise unique is 10× slower)
        for part in (s.hw, s.gpus, s.layout, self._a["replicas"], s.rt, s.q):
            values = np.asarray(part)[order].astype(np.int64)
            key = key * (int(values.max()) + 1) + values
        _, first = np.unique(key, return_index=True)
        self._distinct[misses] = order[np.sort(first)]
        return self._distinct[misses]

    def distinct(self, n: int, misses: bool = False) -> list[Candidate]:
        """The first ``n`` distinct passing configurations (or closest misses), as `distinct` picks them."""
        return [self.candidate(int(i)) for i in self._distinct_order(misses)[:n]]

    def hardware_passing(self) -> int:
        """How many hardware entries have a configuration that passes."""
        return int(np.unique(self._configs.hw[self._order[: self.n_passing]]).size)

    def by_hardware(self, n: int, alternatives: int = 2) -> list["HardwareGroup"]:
        """`by_hardware` over the passing configurations, building only the candidates it lists."""
        groups: dict[int, list[int]] = {}
        for i in self._distinct_order():
            hw = int(self._configs.hw[i])
            g = groups.get(hw)
            if g is None:
                if len(groups) < n:
                    groups[hw] = [int(i)]
            elif len(g) <= alternatives:
                g.append(int(i))
        return [HardwareGroup(self.candidate(g[0]), [self.candidate(j) for j in g[1:]]) for g in groups.values()]

    def shortlist(self, rows: int, groups: int, alternatives: int = 2) -> "Shortlist":
        """What a table shows of this ranking (see `Shortlist`)."""
        return Shortlist(self.requirements, self.cost_basis, self.cost_basis_why, self.elapsed_ms, self.n_passing,
                         self.n_margin, len(self), self.top(rows), self.closest_misses(rows),
                         self.by_hardware(groups, alternatives))


@dataclass
class Shortlist:
    """What a table shows of a `Recommendation`: its first passing configurations, its closest misses
    and its best ones per hardware, with its counts and cost basis, and none of the sweep's arrays.
    The app ranks in a process of its own and sends this back: a few hundred candidates pickle to
    under a megabyte, a whole Recommendation to ~50 MB. The reading methods are the Recommendation's."""

    requirements: Requirements
    cost_basis: str
    cost_basis_why: str
    elapsed_ms: float
    n_passing: int
    n_margin: int
    n_total: int
    passing_rows: list[Candidate]
    miss_rows: list[Candidate]
    groups: list["HardwareGroup"]

    def __len__(self) -> int:
        return self.n_total

    def top(self, n: int) -> list[Candidate]:
        return self.passing_rows[:n]

    def closest_misses(self, n: int = 5) -> list[Candidate]:
        return self.miss_rows[:n]


def distinct(cands, n: int) -> list[Candidate]:
    """The first ``n`` candidates that differ in hardware, GPU count, replicas, runtime or weight format
    (the KV-dtype variants of one configuration are folded into the first, best-ranked one). Given a
    `Recommendation`, its passing configurations (without building the others)."""
    if isinstance(cands, Recommendation):
        return cands.distinct(n)
    seen, out = set(), []
    for c in cands:
        key = (c.hardware.key, c.gpus, c.layout, c.replicas, c.runtime.key, c.quant.key)
        if key in seen:
            continue
        seen.add(key)
        out.append(c)
        if len(out) >= n:
            break
    return out


@dataclass
class HardwareGroup:
    """The best configuration on one hardware entry and the next-best distinct ones on it."""

    best: Candidate
    alternatives: list[Candidate]


def by_hardware(cands, n: int, alternatives: int = 2) -> list[HardwareGroup]:
    """The first ``n`` hardware entries in rank order, each with its best configuration and up to
    ``alternatives`` other distinct configurations (so eight rows of one GPU do not hide the rest).
    Given a `Recommendation`, its passing configurations (without building the others)."""
    if isinstance(cands, Recommendation):
        return cands.by_hardware(n, alternatives)
    groups: dict[str, HardwareGroup] = {}
    for c in distinct(cands, 10**9):
        g = groups.get(c.hardware.key)
        if g is None:
            if len(groups) < n:
                groups[c.hardware.key] = HardwareGroup(c, [])
        elif len(g.alternatives) < alternatives:
            g.alternatives.append(c)
    return list(groups.values())


def _candidate_prices(rec: Recommendation, hw: Hardware, gpus: int, replicas: int):
    """Purchase and rent of ``replicas`` machines of ``gpus`` × ``hw``, the note that states their
    bases, quotes and dates, and the figures a buyer compares (rent per month, break-even)."""
    key = (hw.key, hw.memory_gib, hw.price, gpus, replicas)
    if key not in rec._prices:
        rec._prices[key] = _prices_of(rec, hw, gpus, replicas)
    usd, hour, note, extra = rec._prices[key]
    return usd, hour, note, dict(extra)


def _prices_of(rec: Recommendation, hw: Hardware, gpus: int, replicas: int):
    req, cat = rec.requirements, rec.catalog
    rent, purchase = _rent(cat, hw), _buy(cat, req, hw, gpus)
    hour = rent.usd * gpus * replicas if rent else None
    notes, extra = [], {"price_thin_rent": bool(rent and rent.thin), "price_thin_buy": bool(purchase and purchase.thin)}
    each = f" per machine, × {replicas} machines" if replicas > 1 else ""
    if purchase is not None:
        notes.append(f"buy {purchase.parts}{each}; {purchase.power_note}")
        extra.update(buy_total_usd=purchase.total_usd(req.life_years) * replicas,
                     power_usd_month=purchase.power_usd_month * replicas)
    if rent is not None:
        notes.append(f"rent {rent.text('/GPU-hour')}")
        extra["rent_usd_month"] = pricing.monthly_rent(hour)
    if purchase is not None and hour:
        months = pricing.break_even_months(purchase, hour / replicas)
        extra["break_even_months"] = months
        notes.append(f"buying breaks even after {months:.1f} months of 24/7 rent" if months
                     else "renting 24/7 costs less than the electricity of owning: buying never breaks even")
    usd = purchase.capex_usd * replicas if purchase else None
    return usd, hour, "; ".join(notes), extra


def _build(rec: Recommendation, i: int) -> Candidate:
    s, a, req = rec._configs, rec._a, rec.requirements
    t = s.tables
    hw, rt, q, kv = t.hardware[s.hw[i]], t.runtimes[s.rt[i]], t.quants[s.q[i]], t.kv_dtypes[s.kv[i]]
    g = int(s.gpus[i])
    r = int(a["replicas"][i])
    usd, hour, note, extra = _candidate_prices(rec, hw, g, r)
    per_replica_users = int(a["users"][i])
    # users: all of them (the launch line splits them over the replicas)
    layout = s.layouts.layout(int(s.layout[i])) if rt.parallelism == "tp" else Layout()
    c = Candidate(hw, rt, q, kv, g, rec.users, float(a["ttft"][i]), float(a["ttft_safe"][i]),
                  float(a["tok"][i]), float(a["tok_safe"][i]), float(a["throughput"][i]), float(a["needed"][i]),
                  float(a["usable"][i]), int(a["max_batch"][i]), int(a["max_context"][i]),
                  float(a["compute_share"][i]), str(a["bound"][i]), float(a["running"][i]), float(a["queue"][i]),
                  usd, hour, note, replicas=r, quality=quality_text(q, req.model), layout=layout)
    if c.nodes > 1 and g > domain_gpus(hw):
        c.network_gbit_s = NETWORKS_GBIT_S[req.network] if req.network else hw.scale_out_gbit_s
    c.power_kw, c.power_basis = pricing.deployment_power(rec.catalog, hw, g * r)
    if c.power_kw and c.throughput_tok_s > 0:
        c.joules_per_token = c.power_kw * 1e3 / c.throughput_tok_s
    for k, v in extra.items():
        setattr(c, k, v)
    if hour and c.throughput_tok_s > 0:
        c.usd_per_million_tokens = hour / (c.throughput_tok_s * 3600) * 1e6
    fail: list[Reason] = []
    quality = _quality_reason(q, req)
    if quality:
        fail.append(quality)
    if not a["fits"][i]:
        fail.append(Reason("memory", float(a["needed"][i]), float(a["usable"][i]), "GB per GPU",
                           {"room_for": c.max_batch, "context": req.context,
                            "users": per_replica_users if req.burst or a["fixed_slots"][i] else 1}))
    serving = {"serving": not req.burst, "running": c.running_batch, "capacity": float(a["capacity"][i]),
               "queue": c.queue, "load": rec.load_kind, "users": per_replica_users}
    if not req.burst and not a["load_ok"][i]:
        fail.append(Reason("load", req.rps, float(a["rate"][i]), "requests/s", serving | {"bound": c.bound}))
    if req.ttft_ms and not a["ttft_ok"][i]:
        share = c.prefill_compute_share
        fail.append(Reason("ttft", req.ttft_ms, float(a["judge_ttft"][i]), "ms",
                           {"compute_share": share if math.isfinite(share) else None,
                            "peak_fraction": float(a["peak_share"][i]), "bound": c.bound} | serving))
    if req.tok_s and not a["tok_ok"][i]:
        fail.append(Reason("tok_s", req.tok_s, float(a["judge_tok"][i]), "tok/s per user",
                           {"bound": c.bound, "bandwidth_fraction": float(a["bw_share"][i]),
                            "bandwidth_gb_s": hw.bandwidth_gb_s} | serving))
    if not a["predicted"][i]:
        fail.append(Reason("prediction", None, None, "", {"hardware": hw.name}))
    if req.budget_usd is not None and not a["budget_ok"][i]:
        fail.append(Reason("budget_usd", req.budget_usd, usd, "USD"))
    if req.budget_usd_hour is not None and not a["budget_hour_ok"][i]:
        fail.append(Reason("budget_usd_hour", req.budget_usd_hour, hour, "USD/h"))
    c.failures = fail
    c.ok = bool(a["ok"][i])
    c.evidence = EVIDENCE_LEVELS[int(a["evidence"][i])]
    c.usual_runtime = bool(t.usual_runtime[s.hw[i], s.rt[i]])
    c.rank_cost = float(a["rank_cost"][i]) if "rank_cost" in a and np.isfinite(a["rank_cost"][i]) else None
    if c.ok:
        c.tier = "margin" if a["margin"][i] else "estimate"
    if c.tier == "estimate":
        if req.ttft_ms and c.ttft_safe_ms > req.ttft_ms:
            c.edge_misses.append(Reason("ttft", req.ttft_ms, c.ttft_safe_ms, "ms", {"edge": True}))
        if req.tok_s and c.tok_s_safe < req.tok_s:
            c.edge_misses.append(Reason("tok_s", req.tok_s, c.tok_s_safe, "tok/s per user", {"edge": True}))
    c.headroom = float(a["headroom"][i])
    c.pareto = bool(a["pareto"][i])
    tech = a["technique"].get(i)
    if tech:
        c.technique = tech["text"]
    if c.ok:
        # the catalog's checkpoints (a user's own published ones among them), else the shipped ones
        c.launch = launch_line(c, req, rec.catalog.checkpoints if rec.catalog is not None and rec.catalog.checkpoints
                               else None)
        if tech and c.launch:
            c.launch = _with_technique(c.launch, c, tech, t.quants_by_key)
    return c


# ---- techniques that make a near miss pass (--allow-spec, --allow-offload) --------------------------

#: Near misses tried per technique: each costs a few kernel calls, so only the closest are tried.
TECHNIQUE_TRIES = 40
#: Partial offload is a single-user (home) technique: with more users the PCIe or host-RAM reads of
#: every step are shared by a batch we do not model.
OFFLOAD_MAX_USERS = 2


def _near_misses(memory, a, mask: np.ndarray) -> list[int]:
    """The configurations in ``mask``, closest first, one per (hardware, GPUs, runtime, format)."""
    idx = np.flatnonzero(mask)
    idx = idx[np.argsort(-a["headroom"][idx], kind="stable")]
    seen, out = set(), []
    for i in idx:
        key = (int(memory.hw[i]), int(memory.gpus[i]), int(memory.rt[i]), int(memory.q[i]))
        if key not in seen:
            seen.add(key)
            out.append(int(i))
        if len(out) >= TECHNIQUE_TRIES:
            break
    return out


def _config(memory, i: int, req: Requirements, batch: int):
    from advisor.model.config import Config

    t = memory.tables
    return Config(hardware=t.hardware[memory.hw[i]], model=req.model, quant=t.quants[memory.q[i]],
                  kv_dtype=t.kv_dtypes[memory.kv[i]], runtime=t.runtimes[memory.rt[i]], gpus=int(memory.gpus[i]),
                  workload=Workload(batch=batch, prompt_tokens=req.prompt_tokens,
                                    output_tokens=max(req.output_tokens, 2)))


def draft_for(cat: Catalog, model: Model) -> Model | None:
    """The smallest catalog model that can draft for ``model`` (same tokenizer family, smaller)."""
    from advisor.model.techniques import tokenizer_refusal

    fits = [m for m in cat.models.values() if m.key != model.key and not tokenizer_refusal(m, model)]
    return min(fits, key=lambda m: m.params_total_b, default=None)


def _try_speculation(cat: Catalog, req: Requirements, memory, a: dict) -> None:
    """Configurations that miss only the per-user speed: does a draft of the same family make them pass?"""
    from advisor.model.techniques import Techniques, speculative

    draft = draft_for(cat, req.model)
    if draft is None:
        return
    t = memory.tables
    speculates = np.array([r.speculative_decoding for r in t.runtimes])[memory.rt]
    mask = (~a["ok"] & ~a["tok_ok"] & a["fits"] & a["load_ok"] & a["ttft_ok"] & a["predicted"] & a["quality_ok"]
            & a["budget_ok"] & a["budget_hour_ok"] & speculates)
    tech = Techniques(draft=draft)
    for i in _near_misses(memory, a, mask):
        batch = max(1, int(round(float(a["running"][i]))))
        try:
            eff = speculative(cat, _config(memory, i, req, batch), tech)
        except AdvisorError:
            continue          # the draft cannot run here (format, runtime): no rescue
        gain = eff.speedup
        if not (eff.after.fits and math.isfinite(gain) and gain > 1.0):
            continue
        judged = (a["tok_safe"][i] if req.safe else a["tok"][i]) * gain
        if judged < req.tok_s:
            continue
        before = float(a["tok"][i])
        for k in ("tok", "tok_safe", "judge_tok", "throughput"):
            a[k][i] = a[k][i] * gain
        a["tok_ok"][i] = a["ok"][i] = True
        a["headroom"][i] = min(float(a["headroom"][i]) * gain, judged / req.tok_s)
        a["technique"][i] = {"kind": "spec", "draft": draft, "k": tech.k, "alpha": tech.alpha,
                             "text": (f"passes only with speculative decoding: {draft.name} drafts {tech.k} tokens "
                                      f"(acceptance {tech.alpha:g} assumed), {before:.3g} → {before * gain:.3g} "
                                      f"tok/s per user")}


def _try_offload(cat: Catalog, req: Requirements, memory, a: dict, users: int) -> None:
    """Single-GPU configurations that miss only memory: does keeping part of the model in host RAM
    (llama.cpp -ngl, vLLM/SGLang --cpu-offload-gb) make them fit, and are they still fast enough?"""
    from advisor.model.techniques import Techniques, moe_offload_curve, offload_curve

    if users > OFFLOAD_MAX_USERS or req.burst:
        return
    t = memory.tables
    offloads = np.array([bool(r.partial_offload) for r in t.runtimes])[memory.rt]
    unified = np.array([bool(h.unified_memory) or h.kind in ("apple", "soc", "cpu", "dataflow")
                        for h in t.hardware])[memory.hw]
    mask = (~a["ok"] & ~a["fits"] & a["predicted"] & a["quality_ok"] & a["budget_ok"] & a["budget_hour_ok"]
            & (memory.gpus == 1) & (a["replicas"] == 1) & ~unified
            & offloads)
    for i in _near_misses(memory, a, mask):
        cfg = _config(memory, i, req, users)
        layers = cfg.runtime.partial_offload == "layers"
        try:
            curve = offload_curve(cat, cfg, Techniques(gpu_layers=0) if layers else Techniques(offload_gb=0.0))
        except AdvisorError:
            continue
        fit = np.flatnonzero(curve.fits)
        if fit.size == 0:
            continue
        # the most on the GPU that fits: the largest -ngl, or the fewest GB on the host
        j = int(fit[-1]) if layers else int(fit[0])
        all_gpu = -1 if layers else 0
        ratio = float(curve.decode_tok_s[j] / curve.decode_tok_s[all_gpu])
        extra_ttft = float(curve.ttft_ms[j] - curve.ttft_ms[all_gpu])
        moe = None
        if layers and req.model.is_moe:
            # llama.cpp --n-cpu-moe: only the experts go to the CPU, which reads just the routed ones
            m = moe_offload_curve(cat, cfg)
            mf = np.flatnonzero(m.fits)
            if mf.size:
                jm = int(mf[0])
                mratio = float(m.decode_tok_s[jm] / m.decode_tok_s[0])
                if mratio > ratio:
                    moe, ratio, extra_ttft = (m, jm), mratio, float(m.ttft_ms[jm] - m.ttft_ms[0])
        tok, ttft = float(a["tok"][i]) * ratio, float(a["ttft"][i]) + extra_ttft
        judged_tok = (a["tok_safe"][i] if req.safe else a["tok"][i]) * ratio
        judged_ttft = (a["ttft_safe"][i] if req.safe else a["ttft"][i]) + extra_ttft
        if (req.tok_s and judged_tok < req.tok_s) or (req.ttft_ms and judged_ttft > req.ttft_ms) \
                or not (a["load_ok"][i]):
            continue
        before = float(a["tok"][i])
        a["tok"][i], a["tok_safe"][i], a["judge_tok"][i] = tok, a["tok_safe"][i] * ratio, judged_tok
        a["ttft"][i], a["ttft_safe"][i], a["judge_ttft"][i] = ttft, a["ttft_safe"][i] + extra_ttft, judged_ttft
        a["throughput"][i] = a["throughput"][i] * ratio
        a["needed"][i] = float(curve.memory_gb[j] if moe is None else moe[0].memory_gb[moe[1]])
        a["fits"][i] = a["tok_ok"][i] = a["ttft_ok"][i] = a["serves"][i] = a["ok"][i] = True
        host_gb = float(curve.host_gb[j])
        if moe is not None:
            m, jm = moe
            n, total = int(m.cpu_moe_layers[jm]), int(m.cpu_moe_layers[-1])
            how = (f"--n-cpu-moe {n}: the experts of {n} of {total} MoE layers in host RAM, "
                   f"{float(m.host_gb[jm]):.1f} GB")
            tech = {"kind": "offload", "n_cpu_moe": n}
        elif layers:
            n, total = int(curve.gpu_layers[j]), int(curve.gpu_layers[-1])
            how = f"-ngl {n}: {n} of {total} layers on the GPU, {host_gb:.1f} GB in host RAM"
            tech = {"kind": "offload", "gpu_layers": n}
        else:
            how = f"--cpu-offload-gb {host_gb:g}: weights read over PCIe every step"
            tech = {"kind": "offload", "offload_gb": host_gb}
        tech["text"] = (f"passes only with partial offload ({how}); {before:.3g} tok/s per user all on the GPU "
                        f"(if it fitted) → {tok:.3g}")
        a["technique"][i] = tech


def _with_technique(line: str, c: Candidate, tech: dict, quants) -> str:
    """The launch line with the technique's flags (llama-server -ngl / -hfd / -md and --draft-max;
    vLLM --cpu-offload-gb and --speculative-config)."""
    import json
    import re

    from advisor.plan.launch import draft_gguf, gguf_tag, gguf_weights, native_checkpoint, shipped_checkpoints

    family = c.runtime.format_family
    note = ""
    if "  #" in line:
        line, note = line.split("  #", 1)
        note = "  #" + note
    if tech["kind"] == "offload" and "n_cpu_moe" in tech:
        line = f"{line} --n-cpu-moe {tech['n_cpu_moe']}"
    elif tech["kind"] == "offload" and "gpu_layers" in tech:
        flag = f"-ngl {tech['gpu_layers']}"
        line = re.sub(r"-ngl \d+", flag, line) if re.search(r"-ngl \d+", line) else f"{line} {flag}"
    elif tech["kind"] == "offload":
        line = f"{line} --cpu-offload-gb {math.ceil(tech['offload_gb'])}"
    elif tech["kind"] == "spec" and family == "llama.cpp":
        # the draft's own published GGUF: in the target's format if there is one, else its widest
        # (llama-server fetches it with --spec-draft-hf repo:TAG; current builds name the draft
        # length --spec-draft-n-max, the old --draft-max is gone)
        found = draft_gguf(tech["draft"], c.quant, shipped_checkpoints(), quants)
        if found is not None:
            cp, q = found
            src = f"--spec-draft-hf {cp.repo}:{gguf_tag(q)}"
        else:
            w = gguf_weights(tech["draft"], c.quant, shipped_checkpoints(), c.runtime.quantize_with)
            src = "-md " + w.model[3:]
            note += w.note.replace("  # ", "  # draft: ", 1)
        line = f"{line} {src} --spec-draft-n-max {tech['k']}"
    elif tech["kind"] == "spec":
        own, _ = native_checkpoint(shipped_checkpoints(), tech["draft"])
        repos = [own.repo] if own is not None else [x for x in tech["draft"].aliases if "/" in x]
        if repos:
            spec = json.dumps({"model": repos[0], "num_speculative_tokens": tech["k"]})
            line = f"{line} --speculative-config '{spec}'"
        else:
            note += f"  # add the draft {tech['draft'].name} with --speculative-config (no repository in the catalog)"
    return line + note


def with_default_speed(req: Requirements) -> Requirements:
    """``req`` with a usable per-user speed (`DEFAULT_MIN_TOK_S`) where it serves several users and
    asks for none. Without one the cheapest answer for thousands of users in a closed loop serves each
    at a token or two a second, and "meets every requirement" would say nothing of use. A batch
    arriving at once (burst) is a throughput job, and one user sets their own pace: no floor."""
    if req.tok_s is not None or req.burst or not (req.rps or (req.users or 1) > 1):
        return req
    return dataclasses.replace(req, tok_s=DEFAULT_MIN_TOK_S, tok_s_default=True)


def recommend(cat: Catalog, req: Requirements) -> Recommendation:
    """Sweep, judge and rank every configuration for ``req`` (vectorised; candidates built lazily).
    The `Recommendation`'s requirements are ``req`` with its defaults filled (`with_default_speed`)."""
    import time

    t0 = time.perf_counter()
    req.check()
    req = with_default_speed(req)
    users = req.concurrency()
    # dataflow machines (hosted services and appliances, extrapolated) only when asked for by kind or key
    hw_keys = [h.key for h in cat.hardware.values()
               if (h.kind in req.hardware_kinds if req.hardware_kinds else h.kind != "dataflow" or h.key in req.hardware)
               and (not req.vendors or h.vendor in req.vendors)
               and (not req.hardware or h.key in req.hardware)]
    if not hw_keys:
        raise AdvisorError("no hardware in the catalog matches the hardware constraints")
    rt_keys = [r.key for r in cat.runtimes.values() if not r.historic and (not req.runtimes or r.key in req.runtimes)]
    if not rt_keys:
        raise AdvisorError("no runtime matches --runtime")
    kv_keys = [k for k in req.kv_dtypes if k in cat.kv_dtypes]
    if not kv_keys:
        raise AdvisorError("no KV-cache dtype matches --kv-dtype")
    counts = GPU_COUNTS + (CLUSTER_GPU_COUNTS if req.cluster_sizes() and not req.burst else ())
    gpus = [g for g in counts if g <= (req.max_gpus or counts[-1])] or [1]
    keys = dict(hardware=hw_keys, runtimes=rt_keys, quants=None, kv_dtypes=kv_keys,
                layouts=Layouts.for_instances(gpus, req.model.is_moe and not req.burst), network=req.network or None)
    extra = req.context - req.prompt_tokens - req.output_tokens
    if req.burst:
        # all users' prompts at once: a static batch, and memory for every user at the longest context
        speed = sweep(cat, req.model, Workload(batch=users, prompt_tokens=req.prompt_tokens,
                                               output_tokens=req.output_tokens), **keys)
        memory = sweep(cat, req.model, Workload(batch=users, prompt_tokens=req.prompt_tokens + extra,
                                                output_tokens=req.output_tokens), memory_only=True, **keys)
    else:
        # a server under load: the decode step at every batch size, then the steady state; memory
        # must hold one user at the longest context (more users queue, which TTFT shows)
        # (a prefix the cache holds is depth, not prompt: only the rest is computed per request)
        cached = int(req.prompt_tokens * req.prefix_hit)
        speed = sweep(cat, req.model, Workload(batch=1, prompt_tokens=max(req.prompt_tokens - cached, 1),
                                               output_tokens=max(req.output_tokens, 2), depth_tokens=cached),
                      batch=_step_grid(req, users), **keys)
        memory = sweep(cat, req.model, Workload(batch=1, prompt_tokens=req.prompt_tokens + extra,
                                                output_tokens=req.output_tokens), memory_only=True, **keys)
    t = speed.tables
    mv = memory.values
    n = len(memory)
    base = {
        "needed": (mv["weights_gpu_bytes"] + mv["kv_gpu_bytes"] + mv["workspace_gpu_bytes"]
                   + mv["overhead_gpu_bytes"]) / 1e9,
        "usable": mv["usable_gpu_bytes"] / 1e9,
        "max_batch": mv["max_batch"],               # sequences at the longest context
    }

    def judge(replicas: int, cols: np.ndarray | None = None, share: int | None = None) -> dict[str, np.ndarray]:
        """Every configuration (or those in ``cols``) as ``replicas`` copies behind one endpoint, each
        serving its share of the users (or of the request rate)."""
        share = share or math.ceil(users / replicas)
        rate = req.rps / replicas if req.rps else None
        a = _judge_burst(speed) if req.burst else _judge_serving(speed, req, share, cols, rate)
        sub = (lambda x: x) if cols is None else (lambda x: x[cols])
        n = mv["fits"].size if cols is None else cols.size
        a.update({k: sub(v) for k, v in base.items()})
        a.setdefault("fixed_slots", np.zeros(n, bool))
        a["fits"] = sub(mv["fits"].astype(bool))
        a["fits"] &= _slots_fit(a["fixed_slots"], a["max_batch"], share)
        a["judge_ttft"] = np.array(a["ttft_safe"] if req.safe else a["ttft"], dtype=float)   # copies: a
        a["judge_tok"] = np.array(a["tok_safe"] if req.safe else a["tok"], dtype=float)      # technique edits both
        ratios = [a["usable"] / np.maximum(a["needed"], 1e-9)]
        a["ttft_ok"] = np.ones(n, bool)
        a["tok_ok"] = np.ones(n, bool)
        if req.ttft_ms:
            a["ttft_ok"] = a["judge_ttft"] <= req.ttft_ms
            ratios.append(np.where(a["judge_ttft"] > 0, req.ttft_ms / a["judge_ttft"], 0.0))
        if req.tok_s:
            a["tok_ok"] = a["judge_tok"] >= req.tok_s
            ratios.append(a["judge_tok"] / req.tok_s)
        a["headroom"] = np.nan_to_num(np.minimum.reduce(ratios), nan=0.0)
        # a prediction the catalog cannot make (a missing peak) is no pass
        # (an open loop past capacity has an endless TTFT: predicted, and a miss that replicas may fix)
        a["predicted"] = np.isfinite(a["tok"]) & ~np.isnan(a["ttft"])
        a["serves"] = a["fits"] & a["load_ok"] & a["ttft_ok"] & a["tok_ok"] & a["predicted"]
        a["replicas"] = np.full(n, replicas)
        a["users"] = np.full(n, share)
        a["throughput"] = a["throughput"] * replicas
        return a

    if req.burst or req.allow_offload:
        a = judge(1)  # offload turns configurations that do not fit into candidates: judge them all
    else:
        # the load is solved only where one user fits (about half the configurations): the rest are
        # judged on memory alone, their speed left unknown (nan)
        fit_cols = np.flatnonzero(mv["fits"].astype(bool))
        a = _spread(judge(1, fit_cols), fit_cols, n)
        a.update(base)
        a["max_context"] = speed.values.first_row("max_context")
        a["fits"] = mv["fits"].astype(bool)
        a["headroom"][~a["fits"]] = (base["usable"] / np.maximum(base["needed"], 1e-9))[~a["fits"]]
        a["replicas"][~a["fits"]] = 1
        a["users"][~a["fits"]] = math.ceil(users)
    if not req.burst and users > 1:
        # one group cannot serve everyone: data-parallel copies (the users or the rate split among
        # them) on the configurations that hold one user but do not serve; a configuration keeps the
        # fewest replicas that serve, or one if none does. One that misses the targets with a single
        # user on it cannot be saved by more copies, and is not tried.
        cols = np.flatnonzero(~a["serves"] & a["predicted"] & mv["fits"].astype(bool))
        if cols.size and (req.ttft_ms or req.tok_s):
            # (with no latency target a lone user always passes: these hold one user, so it fits)
            alone = judge(users, cols, share=1)
            cols = cols[alone["ttft_ok"] & alone["tok_ok"] & alone["fits"]]
        owned: set[str] = set()   # the arrays of ``a`` copied already (some are the sweeps' own)
        for r in REPLICAS[1:]:
            cols = cols[~a["serves"][cols]]
            if req.max_gpus:
                cols = cols[memory.gpus[cols] * r <= req.max_gpus]
            if r > users or cols.size == 0:
                break
            # where the slots cannot hold r copies' share of the users, `judge` would refuse them:
            # the serving model is not run there (half the configurations, and most of the passes'
            # time); a later pass may fit them
            share = math.ceil(users / r)
            tried = cols[_slots_fit(a["fixed_slots"][cols], a["max_batch"][cols], share)]
            if tried.size == 0:
                continue
            more = judge(r, tried, share)
            take = more["serves"]
            if take.any():
                idx = tried[take]
                for k, v in more.items():
                    if isinstance(v, np.ndarray) and v.shape == (tried.size,):
                        dtype = np.result_type(a[k].dtype, v.dtype)
                        if k not in owned or a[k].dtype != dtype:
                            a[k] = a[k].astype(dtype)   # a copy, once per array and not every pass
                            owned.add(k)
                        a[k][idx] = v[take]
    cfg_hw, cfg_q, cfg_gpus = memory.hw, memory.q, memory.gpus   # one entry per configuration
    total_gpus = cfg_gpus * a["replicas"]
    q_ok = np.array([_quality_reason(q, req) is None for q in t.quants])
    a["quality_ok"] = q_ok[cfg_q]
    # prices (nan = unknown): rent per GPU-hour × every GPU; buying, each replica's machine with its
    # GPUs and host, plus the electricity over the stated life (what "buy" ranks by)
    usd, hour, buy_total, thin_rent, thin_buy = _price_arrays(cat, req, t, cfg_hw, cfg_gpus, a["replicas"])
    a["budget_ok"] = np.ones(n, bool) if req.budget_usd is None else (usd <= req.budget_usd)
    a["budget_hour_ok"] = np.ones(n, bool) if req.budget_usd_hour is None else (hour <= req.budget_usd_hour)
    a["ok"] = a["serves"] & a["quality_ok"] & a["budget_ok"] & a["budget_hour_ok"]
    a["technique"] = {}
    if req.allow_spec and req.tok_s:
        _try_speculation(cat, req, memory, a)
    if req.allow_offload:
        _try_offload(cat, req, memory, a, users)
    ok_idx = np.flatnonzero(a["ok"])
    kinds = {cat.hardware[k].kind for k in hw_keys}
    basis, why = _cost_basis(req, kinds, users)
    if basis == "hour" and not np.isfinite(hour[ok_idx]).any() and np.isfinite(usd[ok_idx]).any() \
            and not req.cost_basis:
        basis, why = "purchase", "no rental price for any configuration that passes"
    elif basis == "purchase" and not np.isfinite(usd[ok_idx]).any() and np.isfinite(hour[ok_idx]).any() \
            and not req.cost_basis:
        basis, why = "hour", "no purchase price for any configuration that passes"
    cost = hour if basis == "hour" else buy_total
    if not np.isfinite(cost[ok_idx]).any():
        basis, why = "headroom", why
    # a price that rests on fewer than three quotes is ranked at the spread well-quoted devices show
    # above their median: one cheap quote must not decide the answer
    thin = thin_rent if basis == "hour" else thin_buy
    rank_cost = np.where(thin, cost * thin_quote_factor(cat), cost)
    a["rank_cost"] = rank_cost
    quality = np.array([_quality_score(q, req.model) for q in t.quants])[cfg_q]
    # the verdict's tier: a pass at the pessimistic edge of every band ("with margin") or only at
    # the prediction ("if the estimate holds"); --safe accepts the first only
    a["margin"] = a["ok"] & _passes_at_edge(a, req)
    if req.safe:
        a["ok"] &= a["margin"]
    a["evidence"] = t.evidence[cfg_hw, memory.rt, cfg_q]
    ok_idx = np.flatnonzero(a["ok"])
    ranked = ok_idx[np.lexsort(_rank_keys(a, req, t, memory, rank_cost, total_gpus, ok_idx)[::-1])]
    fail_idx = np.flatnonzero(~a["ok"])
    # the closest misses: those that run (fit in memory) before those that do not, and among them those
    # in acceptable weights (a format below the quality floor is a choice, not a near miss), each
    # nearest first
    failing = fail_idx[np.lexsort((-a["headroom"][fail_idx], ~a["quality_ok"][fail_idx], ~a["fits"][fail_idx]))]
    a["pareto"] = np.zeros(n, bool)
    a["pareto"][ok_idx] = _pareto(np.column_stack([np.where(np.isfinite(cost[ok_idx]), cost[ok_idx], np.inf),
                                                   -a["tok"][ok_idx], -quality[ok_idx]]))
    elapsed = (time.perf_counter() - t0) * 1e3
    return Recommendation(req, users, memory, a, np.concatenate([ranked, failing]), basis, elapsed, why, cat)


#: per catalog: its rents by hardware and its purchases by hardware, GPUs and the buyer's terms
_quotes: "weakref.WeakKeyDictionary[Catalog, dict]" = weakref.WeakKeyDictionary()


def _rent(cat: Catalog, hw: Hardware):
    """`pricing.rent`, kept per catalog: a ranking after an input change asks for the same ~300 again."""
    memo, key = _quotes.setdefault(cat, {}), ("rent", hw.key, hw.memory_gib, hw.price)
    if key not in memo:
        memo[key] = pricing.rent(cat, hw)
    return memo[key]


def _buy(cat: Catalog, req: Requirements, hw: Hardware, gpus: int):
    """`pricing.buy` on the buyer's terms, kept per catalog (~900 per ranking, the same each time)."""
    memo = _quotes.setdefault(cat, {})
    key = ("buy", hw.key, hw.memory_gib, hw.price, gpus, req.duty_hours, req.usd_per_kwh, req.own_host)
    if key not in memo:
        memo[key] = pricing.buy(cat, hw, gpus, hours_per_day=req.duty_hours, usd_per_kwh=req.usd_per_kwh,
                                own_host=req.own_host)
    return memo[key]


def _price_arrays(cat: Catalog, req: Requirements, t, cfg_hw, cfg_gpus, replicas):
    """Per configuration: purchase (every replica's machine), rent per hour (every GPU), purchase plus
    electricity over the life, and whether the rent or the purchase rests on fewer than three quotes."""
    rents = [_rent(cat, h) for h in t.hardware]
    hour_unit = np.array([f.usd if f else np.nan for f in rents])
    thin_rent = np.array([bool(f and f.thin) for f in rents])[cfg_hw]
    hour = hour_unit[cfg_hw] * cfg_gpus * replicas
    # one purchase per distinct (hardware, GPUs), spread to the configurations by index (a 1-D key:
    # a column-wise unique and a mask per pair cost ~10x more over 100k configurations)
    key = cfg_hw.astype(np.int64) * 4096 + cfg_gpus.astype(np.int64)
    pairs, inverse = np.unique(key, return_inverse=True)
    each = np.full((3, pairs.size), np.nan)
    for j, k in enumerate(pairs):
        b = _buy(cat, req, t.hardware[int(k // 4096)], int(k % 4096))
        if b is not None:
            each[:, j] = (b.capex_usd, b.total_usd(req.life_years), float(b.thin))
    inverse = inverse.reshape(-1)
    capex, total = each[0][inverse] * replicas, each[1][inverse] * replicas
    thin_buy = each[2][inverse] == 1.0
    return capex, hour, total, thin_rent, thin_buy


def _passes_at_edge(a: dict, req: Requirements) -> np.ndarray:
    """Each configuration's latency targets judged at the pessimistic edge of its bands."""
    ok = np.ones(a["ok"].shape, bool)
    if req.ttft_ms:
        ok &= np.nan_to_num(a["ttft_safe"], nan=np.inf) <= req.ttft_ms
    if req.tok_s:
        ok &= np.nan_to_num(a["tok_safe"], nan=0.0) >= req.tok_s
    return ok


def _rank_keys(a: dict, req: Requirements, t, memory, cost: np.ndarray, total_gpus: np.ndarray,
               idx: np.ndarray) -> tuple[np.ndarray, ...]:
    """Sort keys of the passing configurations ``idx``, most important first, each on what the
    table prints: the verdict's tier (with margin first); priced before unpriced; the cost (unpriced
    ones: the fewest GPUs, so an unpriced machine shows in its smallest passing size); the weights
    (the release format first, then the wider bit class); the speed per user, where a runtime that
    is not the hardware's usual one must beat the usual one outside the band (its pessimistic edge
    against the other's estimate) to be preferred; then fewer GPUs."""
    m = a["margin"][idx]
    priced = np.isfinite(cost[idx])
    c = np.where(priced, cost[idx], total_gpus[idx].astype(float))
    quants = t.quants
    native = np.array([is_reference(q, req.model) for q in quants])[memory.q[idx]]
    bits = np.array([bits_class(q) for q in quants])[memory.q[idx]]
    usual = t.usual_runtime[memory.hw[idx], memory.rt[idx]]
    speed = np.where(usual, np.nan_to_num(a["tok"][idx]), np.nan_to_num(a["tok_safe"][idx]))
    return (~m, ~priced, c, ~native, -bits, -speed, total_gpus[idx])


def _slots_fit(fixed_slots: np.ndarray, max_batch: np.ndarray, share: int) -> np.ndarray:
    """Whether a server holds its ``share`` of the users: llama-server gives each user a slot with the
    whole context, and all of them must fit from the start; a paged cache admits what fits and
    queues the rest."""
    return ~fixed_slots | (max_batch >= share)


def _widening(tables, mode: str, metric: str) -> float:
    """The factor by which `serve` widens the slow edge of ``metric``'s band under ``mode``'s load
    (`advisor.model.serving.band_factors`)."""
    return band_factors(tables.serving_bands, mode, metric)[1]


def _judge_burst(speed) -> dict[str, np.ndarray]:
    """Speeds of all users' prompts processed together, then decoded as one static batch."""
    t, v = speed.tables, speed.values
    a: dict[str, np.ndarray] = {}
    a["ttft"] = v["ttft_s"] * 1e3
    a["tok"] = v["decode_tok_s"]
    # the pessimistic edges as `serve` prints a batch's band (widened as its measurements were)
    a["ttft_safe"] = v["ttft_high_s"] * 1e3 * _widening(t, "batch", "ttft")
    a["tok_safe"] = v["decode_low_tok_s"] / _widening(t, "batch", "itl")
    a["throughput"] = v["throughput_tok_s"]
    a["max_context"] = v["max_context"]
    a["compute_share"] = v["prefill_compute_share"]
    a["bound"] = np.where(v["decode_compute_s"] > v["decode_memory_s"], "compute", "memory")
    a["running"] = speed.batch.astype(float)
    a["queue"] = np.zeros(len(speed))
    a["capacity"] = v["max_batch"]
    a["load_ok"] = np.ones(len(speed), bool)
    a["rate"] = np.full(len(speed), np.nan)
    with np.errstate(divide="ignore", invalid="ignore"):
        # attained fractions of the roofs, for the verdicts
        peak = t.peak[speed.hw, speed.rt, speed.q] * 1e12
        bw = t.hw_cols["bandwidth_gb_s"][speed.hw] * 1e9
        a["peak_share"] = (v["prefill_linear_flops"] + v["prefill_attention_flops"]) / peak / v["prefill_s"]
        a["bw_share"] = v["decode_bytes"] / bw * a["tok"]
    return a


def _spread(part: dict, cols: np.ndarray, n: int) -> dict:
    """Arrays judged on the configurations ``cols`` laid out over all ``n``: the others get nan,
    False, 0 or an empty string by dtype."""
    out = {}
    for k, v in part.items():
        if isinstance(v, np.ndarray) and v.shape == (cols.size,):
            if v.dtype == bool:
                fill = False
            elif np.issubdtype(v.dtype, np.integer):
                fill = 0
            elif np.issubdtype(v.dtype, np.floating):
                fill = np.nan
            else:
                fill = ""
            full = np.full(n, fill, dtype=v.dtype)
            full[cols] = v
            out[k] = full
        else:
            out[k] = v
    return out


def _step_grid(req: Requirements, users: int) -> np.ndarray:
    """The batches the serving model needs the decode step at: STEP_GRID up to the first batch of at
    least ``users`` for clients in a closed loop (a replica never runs more sequences than its
    clients; half the grid for 50 users, and the sweep is a third of a recommendation), all of it
    for a request rate (the running batch grows to what the cache holds)."""
    if req.rps and not req.users:
        return STEP_GRID
    return STEP_GRID[:max(2, int(np.searchsorted(STEP_GRID, max(users, 1))) + 1)]


def _judge_serving(grid, req: Requirements, users: int, cols: np.ndarray | None = None,
                   rate_rps: float | None = None) -> dict[str, np.ndarray]:
    """The steady state of the load on every configuration (or those in ``cols``), from the decode
    step at STEP_GRID batches: ``users`` clients, or (open loop) ``rate_rps`` requests per second
    (one replica's share)."""
    t, v = grid.tables, grid.values
    sub = (lambda x: x) if cols is None else (lambda x: x[..., cols])
    hw, rt, q = (sub(x) for x in grid.configurations[:3])
    load = Load(kind="open" if req.rps and not req.users else "closed", concurrency=float(users),
                rate_rps=rate_rps or req.rps or 0.0, think_s=req.think_s, prompt_tokens=req.prompt_tokens,
                output_tokens=max(req.output_tokens, 2), prefix_hit=req.prefix_hit,
                prompt_points=req.prompt_points, prompt_weights=req.prompt_weights,
                prompt_cache=keeps_prompt_cache(req))

    # the fields the serving model reads: per batch (G, n) or per configuration (n,)
    kernel = SimpleNamespace(**{name: sub(v.table(name)) for name in STEP_FIELDS},
                             **{name: sub(v.first_row(name)) for name in PASS_FIELDS})

    # the launch line sets the server's running-sequence limit to the users (--max-num-seqs, -np …);
    # llama-server's slots each reserve the whole context, so they are not paged
    max_seqs = np.where(t.sets_max_seqs[rt], float(users), t.max_seqs[hw, rt])
    gpus = sub(grid.configurations[4])
    costs = costs_from_result(kernel, load, t.paged_kv[rt] & ~t.fixed_slots[rt], max_seqs, t.chunk_tokens[hw, rt],
                              server_sample_s(t.server_sample_ns[rt], grid.model.vocab),
                              (t.server_cache_gb_s[rt], t.server_cache_max_gb[rt], gpus))
    s = solve(costs, load)
    band = t.catalog_eff(hw, rt, q)   # the profile band, widened where the prediction is extrapolated
    n = hw.size
    a: dict[str, np.ndarray] = {}
    a["ttft"] = s.ttft_p90_ms                       # judged at the 90th percentile
    a["tok"] = 1e3 / s.itl_ms
    # the pessimistic edges as `serve` prints a steady state's band (widened as its measurements were)
    a["ttft_safe"] = a["ttft"] / band.prefill_low * _widening(t, "steady", "ttft")
    a["tok_safe"] = a["tok"] * band.decode_low / _widening(t, "steady", "itl")
    if grid.model.experts:   # a batched mixture of experts measured slower than modelled: the slow edge allows for it
        a["tok_safe"] = a["tok_safe"] / experts_slowdown(t.experts_slow[hw, rt], np.asarray(s.running_batch, float))
    a["throughput"] = s.throughput_tok_s
    a["max_context"] = sub(v.first_row("max_context"))
    a["compute_share"] = sub(v.first_row("prefill_compute_share"))
    a["bound"] = s.bound
    a["running"] = s.running_batch
    a["queue"] = s.queue
    a["capacity"] = s.capacity
    a["rate"] = s.request_rate_rps
    # an open loop past capacity never catches up; a full closed loop makes users wait, which a
    # TTFT target judges where one is given (without one, every user must be served at once)
    a["load_ok"] = ~s.saturated if (load.kind == "open" or not req.ttft_ms) else np.ones(n, bool)
    a["fixed_slots"] = t.fixed_slots[rt]
    with np.errstate(divide="ignore", invalid="ignore"):
        peak = t.peak[hw, rt, q] * 1e12
        bw = t.hw_cols["bandwidth_gb_s"][hw] * 1e9
        a["peak_share"] = sub(v.first_row("prefill_linear_flops") + v.first_row("prefill_attention_flops")) / peak \
            / sub(v.first_row("prefill_s"))
        a["bw_share"] = sub(v.first_row("decode_bytes")) / bw / costs.step_s[0]  # of spec bandwidth, at batch 1
    return a


def _cost_basis(req: Requirements, kinds: set[str], users: int) -> tuple[str, str]:
    """The one basis the ranking uses, and why: --cost-basis, a budget, else the hardware considered
    (rent for datacenter GPUs, buy for consumer, workstation, Apple and SoC machines; when both are
    considered, rent for several users and buy for one)."""
    if req.cost_basis:
        return ("hour" if req.cost_basis == "rent" else "purchase"), "--cost-basis " + req.cost_basis
    if req.budget_usd_hour is not None:
        return "hour", "--budget-usd-hour"
    if req.budget_usd is not None:
        return "purchase", "--budget-usd"
    if kinds <= {"datacenter"}:
        return "hour", "datacenter hardware is usually rented"
    if "datacenter" not in kinds:
        return "purchase", "this hardware is usually bought"
    if users > 1:
        return "hour", f"{users} users on any hardware: a team's basis"
    return "purchase", "one user on any hardware: a buyer's basis"


#: `_pareto` sweeps once per distinct value of the last column up to this many (quality scores: a few
#: dozen at most); past it, it compares blocks of points against the front instead
PARETO_LEVELS = 64


def _pareto(points: np.ndarray, block: int = 64) -> np.ndarray:
    """Non-dominated rows of three columns (every column: smaller is better).

    Sorted lexicographically, every point that dominates p comes before p, and any earlier point whose
    last column is at most p's and whose middle column is at most p's dominates it (its first column is
    at most p's by the order) unless it is p's twin. So for each value v of the last column, one running
    minimum of the middle column over the points with last column ≤ v, read just before p's group of
    identical points, says whether a point with last column v is dominated: one sort and a few array
    passes per distinct last-column value."""
    n = points.shape[0]
    if n == 0:
        return np.zeros(0, bool)
    levels = np.unique(points[:, 2])
    if levels.size > PARETO_LEVELS:
        return _pareto_blocks(points, block)
    order = np.lexsort(points.T[::-1])
    x, y, z = (points[order, i] for i in range(3))
    # where each run of identical points starts (a twin neither dominates nor is dominated by p)
    new_group = np.ones(n, bool)
    new_group[1:] = (x[1:] != x[:-1]) | (y[1:] != y[:-1]) | (z[1:] != z[:-1])
    group_start = np.maximum.accumulate(np.where(new_group, np.arange(n), 0))
    dominated = np.zeros(n, bool)
    for v in levels:
        mine = z == v
        below = np.where(z <= v, y, np.inf)
        before = np.concatenate([[np.inf], np.minimum.accumulate(below)[:-1]])   # min over earlier points
        dominated[mine] = before[group_start[mine]] <= y[mine]
    keep = np.zeros(n, bool)
    keep[order] = ~dominated
    return keep


def _pareto_blocks(points: np.ndarray, block: int = 64) -> np.ndarray:
    """`_pareto` for a last column of many values: each block of lexicographically sorted points is
    first tested against the front found so far in one numpy step; only the few that survive are
    checked one by one (against the front, which by then includes the block's earlier survivors)."""
    n = points.shape[0]
    keep = np.zeros(n, bool)
    order = np.lexsort(points.T[::-1])
    front = np.empty((0, points.shape[1]))

    def dominated(front, p):
        return (np.all(front <= p, axis=-1) & np.any(front < p, axis=-1)).any(axis=0)

    for start in range(0, n, block):
        idx = order[start:start + block]
        if front.shape[0]:
            idx = idx[~dominated(front[:, None, :], points[idx][None, :, :])]
        for i in idx:
            if not dominated(front, points[i]):
                keep[i] = True
                front = np.vstack([front, points[i]])
    return keep
