"""Public measurements of servers under load (`catalog/measured/serving.csv`) as cases to predict:
a configuration, a load, and the figure the source measured (TTFT, ITL, throughput …) with its
statistic. The serving model is checked against them (``benchmarks/serving.py``); nothing here
fits anything.

A row maps to a case when its hardware, model, format and runtime resolve in the catalog and its
mean prompt and output lengths are stated. Rows that cannot be expressed yet say why (`Skipped`):
per-GPU figures of multi-node deployments, speculative decoding, lengths not stated, and figures a
row's note marks "Not compared:" (kept as the source printed them, but known to be wrong there).
"""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from advisor.data.catalog import Catalog
from advisor.data.errors import AdvisorError
from advisor.fit.cases import Case
from advisor.model.config import Config, configure
from advisor.model.roofline import Workload
from advisor.model.serving import BATCH_MIX_POINTS, Load, output_mix, prompt_mix

DATA = Path(__file__).resolve().parents[2] / "catalog" / "measured" / "serving.csv"

#: names in the data that the catalog's forgiving look-up does not take as they are
HARDWARE_ALIASES = {"A100 80G": "A100 80GB SXM4", "H100 80G": "H100 SXM5 80GB"}
#: the data's format words to the catalog's formats
QUANTS = {"bf16": "bf16", "fp16": "bf16", "fp8": "fp8", "mxfp4": "mxfp4", "nvfp4": "nvfp4"}
RUNTIMES = {"vllm": "vllm", "sglang": "sglang", "tensorrt-llm": "tensorrt-llm", "vllm-tpu": "vllm-tpu",
            "vllm-neuron": "vllm-neuron"}
#: the measured metric → (the ServeReport figure it is compared with, its unit)
METRICS = {"ttft": "ttft", "itl": "itl", "tpot": "itl", "e2e_latency": "e2e",
           "output_throughput": "throughput", "total_throughput": "total_throughput",
           "request_throughput": "request_rate"}
#: which figure a statistic of a latency is compared with (the serving model gives means, p50, p90
#: and p99)
LATENCY_STATS = {"mean": "mean", "median": "p50", "unstated": "mean", "p99": "p99"}
SPECULATIVE = re.compile(r"eagle|mtp|nextn|spec", re.I)
REQUESTS = re.compile(r"(\d[\d,]*) requests", re.I)
#: ShareGPT as `vllm bench serve` samples it keeps a conversation's first turn only where the prompt
#: has 4 to 1,024 tokens and prompt + output at most 2,048 (vllm-project/vllm benchmarks/datasets.py
#: `is_valid_sequence`): no output is longer than 2,044 tokens
SHAREGPT_MAX_OUTPUT = 2044
#: The spread (coefficient of variation) of ShareGPT's output lengths: an ASSUMPTION, stated as such.
#: No source we have prints it for the sampled set. 1 is what a reply that ends at each token with the
#: same small chance gives (a geometric length); `benchmarks/serving.py` prints how the all-at-once
#: rows move at 0.5 and 1.5.
SHAREGPT_OUTPUT_SPREAD = 1.0


@dataclass(frozen=True)
class ServingCase:
    """One measured figure of a server under load, with what to predict it from."""

    source: str
    cfg: Config
    load: Load
    metric: str           # ttft | itl | e2e | throughput | total_throughput | request_rate
    stat: str             # mean | p50 | p99 (latencies); mean for throughputs
    value: float          # ms for latencies, tok/s for throughputs, req/s for request rates
    parallel: str         # as the source states it (TP8, TP8 EP8, TP8 dp-attention …)
    runtime_version: str
    row: dict = field(compare=False, repr=False)

    @property
    def generation(self) -> str:
        """The hardware's vendor and family (NVIDIA Hopper, AMD CDNA3 …): the axis the goals are stated on."""
        hw = self.cfg.hardware
        return f"{hw.vendor} {hw.family}"

    @property
    def label(self) -> str:
        return f"{self.cfg.runtime.key} · {self.generation}"


@dataclass(frozen=True)
class Skipped:
    source: str
    reason: str


def _float(text: str) -> float | None:
    try:
        v = float(text)
    except (TypeError, ValueError):
        return None
    return v if v > 0 else None


def _requests(notes: str) -> int | None:
    """The number of requests sent at once in an offline run ("1000 requests, all at once")."""
    m = REQUESTS.search(notes or "")
    return int(m.group(1).replace(",", "")) if m else None


#: the serving command's scheduler limits, per runtime family: (running sequences, tokens per step)
SCHEDULER_FLAGS = {
    "vllm": (r"--max-num-seqs[ =](\d+)", r"--max-num-batched-tokens[ =](\d+)"),
    "sglang": (r"--max-running-requests[ =](\d+)", r"--chunked-prefill-size[ =](\d+)"),
    "tensorrt-llm": (r"--max_batch_size[ =](\d+)", r"--max_num_tokens[ =](\d+)"),
}


def _scheduler(notes: str, family: str) -> tuple[int | None, int | None]:
    """The running-sequence and per-step token limits the row's serving command states (vLLM's
    --max-num-seqs and --max-num-batched-tokens, SGLang's --max-running-requests and
    --chunked-prefill-size, TensorRT-LLM's --max_batch_size and --max_num_tokens), each only where
    the notes state exactly one value (a note quoting two runs says nothing certain about this one)."""
    if family not in SCHEDULER_FLAGS:
        return None, None
    seqs, tokens = ({int(v) for v in re.findall(pattern, notes or "")} for pattern in SCHEDULER_FLAGS[family])
    return (seqs.pop() if len(seqs) == 1 else None), (tokens.pop() if len(tokens) == 1 else None)


def _gpus_and_split(row: dict) -> tuple[int, str]:
    n = int(row["n_gpus"])
    text = row["parallel"].upper()
    pp = re.search(r"PP(\d+)", text)
    return n, ("pp" if pp and int(pp.group(1)) > 1 else "tp")


def layout_text(parallel: str, gpus: int) -> str | None:
    """The layout a source's parallel column states past plain tensor parallel, as `--layout` reads
    it, or None: data-parallel attention ("dp-attention", SGLang's DP groups: DPk, else one per GPU)
    and expert parallel over every GPU of the instance ("EP", "EPk" with k = GPUs, "--enable-expert-
    parallel"). An EP smaller than the instance (EP2 of 8: experts split two ways, each part tensor
    parallel) has no layout of ours and is read as tensor parallel."""
    text = (parallel or "").upper()
    dp_attention = "DP-ATTENTION" in text or "DP ATTENTION" in text
    dp = re.search(r"\bDP(\d+)", text)
    eps = [int(x) for x in re.findall(r"\bEP(\d+)", text)]
    ep = gpus if ("--ENABLE-EXPERT-PARALLEL" in text or re.search(r"\bEP\b", text) or (eps and eps[0] == gpus)) else 1
    groups = int(dp.group(1)) if dp else (gpus if dp_attention else 1)
    if groups <= 1 and ep <= 1:
        return None
    if groups > 1 and gpus % groups:
        return None
    parts = [f"tp{gpus // groups}"] if gpus // groups > 1 else []
    parts += [f"dp{groups}"] if groups > 1 else []
    parts += [f"ep{ep}"] if ep > 1 else []
    return "+".join(parts)


#: the words a row's note begins its reason with where the row is kept but never compared (a figure
#: the source itself got wrong, e.g. a page that repeats another page's results)
NOT_COMPARED = "Not compared:"


def map_row(cat: Catalog, row: dict, output_spread: float = SHAREGPT_OUTPUT_SPREAD) -> ServingCase | Skipped:
    src = row["source_id"]
    if NOT_COMPARED in row.get("notes", ""):
        return Skipped(src, "a figure its note marks 'Not compared:' (printed wrong by the source; the note says how)")
    if row["unit"] in ("tok/s/gpu", "tok/s/node"):
        return Skipped(src, "a per-GPU or per-node figure of a multi-node deployment")
    metric = METRICS.get(row["metric"])
    if metric is None:
        return Skipped(src, f"metric {row['metric']!r} is not predicted")
    if SPECULATIVE.search(row["parallel"] or ""):
        return Skipped(src, "speculative decoding")
    runtime = RUNTIMES.get(row["runtime"])
    if runtime is None:
        return Skipped(src, f"runtime {row['runtime']!r} is not in the catalog")
    prompt, output = _float(row["prompt_tokens"]), _float(row["output_tokens"])
    if prompt is None or output is None:
        return Skipped(src, "mean prompt or output length not stated")
    value = _float(row["value"])
    if value is None:
        return Skipped(src, "no value")
    stat = row["stat"]
    if metric in ("ttft", "itl", "e2e"):
        stat = LATENCY_STATS.get(stat)
        if stat is None:
            return Skipped(src, f"statistic {row['stat']!r}")
    kind = row["load"]
    if kind == "offline" and metric in ("ttft", "itl", "e2e") and not _requests(row["notes"]):
        # every request sent at once, but not how many: the latencies of a batch depend on its size
        return Skipped(src, "latency of an all-at-once (offline) run of an unstated number of requests")
    gpus, split = _gpus_and_split(row)
    try:
        cfg = configure(cat, hardware=HARDWARE_ALIASES.get(row["hardware"], row["hardware"]), model=row["model"],
                        quant=QUANTS.get(row["quant"], row["quant"]), runtime=runtime, gpus=gpus,
                        parallelism=split if gpus > 1 else None,
                        kv_dtype=row["kv_dtype"] or None,
                        layout=layout_text(row["parallel"], gpus) if split == "tp" else None)
        cfg.check(check_context=False)
    except AdvisorError as exc:
        return Skipped(src, f"not expressible: {str(exc).splitlines()[0]}")
    max_seqs, chunk = _scheduler(row["notes"], cfg.runtime.format_family)
    lengths = dict(prompt_tokens=max(int(round(prompt)), 1), output_tokens=max(int(round(output)), 2),
                   max_seqs=max_seqs, chunk_tokens=chunk)
    # lengths that vary: a dataset of real requests (ShareGPT), or SGLang bench_serving's random
    # lengths, which draw each length from [range ratio × L, L] (--random-range-ratio, default 0: from 1
    # to L; sgl-project/sglang python/sglang/bench_serving.py). `vllm bench serve`'s random lengths are
    # [L(1 − r), L(1 + r)] with r = 0 by default: fixed
    dist = row.get("length_dist", "").strip().lower()
    uniform = dist == "random" and "bench_serving" in row["notes"] and not re.search(r"range[- ]ratio \d", row["notes"])
    lengths["varied_lengths"] = dist.startswith("sharegpt") or uniform
    if uniform:
        # drawn evenly from 1 to L (the row's mean is about L/2): a known spread, so the wait for the
        # step budget sees its second moment (4/3 of a fixed length's)
        top = 2.0 * float(lengths["prompt_tokens"]) - 1.0
        lengths.update({k: v for k, v in prompt_mix(0, samples=np.linspace(1.0, max(top, 1.0), 1001)).items()
                        if k != "prompt_tokens"})

    def with_outputs(lengths):
        """``lengths`` with the outputs' distribution where a run of N requests ends by draining
        through the longest of them: a dataset's lengths vary (ShareGPT: its cap is known, its spread
        assumed), SGLang's random lengths are drawn evenly from 1 to L."""
        if dist.startswith("sharegpt"):
            return {**lengths, **output_mix(lengths["output_tokens"], output_spread, points=BATCH_MIX_POINTS,
                                             top=max(SHAREGPT_MAX_OUTPUT, lengths["output_tokens"]))}
        if uniform:
            top_out = 2.0 * float(lengths["output_tokens"]) - 1.0
            return {**lengths, **output_mix(0, samples=np.linspace(2.0, max(top_out, 2.0), 1001),
                                             points=BATCH_MIX_POINTS)}
        return lengths

    if kind == "closed":
        # a benchmark run of N requests: its first wave and its drain are in the figures (`Load.requests`)
        n, conc = _requests(row["notes"]), float(row["concurrency"] or 1)
        run = n if n and n >= conc else None
        # (the mean stays the row's: the distribution gives the drain its shape)
        load = Load(kind="closed", concurrency=conc, requests=run,
                    **({**with_outputs(lengths), "output_tokens": lengths["output_tokens"]} if run else lengths))
    elif kind == "open":
        load = Load(kind="open", rate_rps=float(row["rate_rps"]), **lengths)
    else:
        # all at once: a batch job of N requests, timed from the first to the last (`batch_run`)
        n = _requests(row["notes"])
        lengths = with_outputs(lengths)
        load = Load(kind="offline", requests=n, **lengths) if n else Load(kind="offline", **lengths)
    return ServingCase(src, cfg, load, metric, stat or "mean", value, row["parallel"], row["runtime_version"], row)


def load_serving_cases(cat: Catalog, path: str | Path | None = None,
                       output_spread: float = SHAREGPT_OUTPUT_SPREAD) -> tuple[list[ServingCase], list[Skipped]]:
    with open(path or DATA, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    cases, skipped = [], []
    for line, row in enumerate(rows, start=2):
        row["_line"] = str(line)
        out = map_row(cat, row, output_spread)
        (cases if isinstance(out, ServingCase) else skipped).append(out)
    return cases, skipped


#: a loaded server's ITL is its decode step when the other clients' prompts hardly touch the steps:
#: at most this many prompt tokens per step on average (C·P/D) …
DECODE_PROMPT_TOKENS_PER_STEP = 16
#: … and at most this share of steps carrying a prompt (C/D): each such step is an eager pass
DECODE_PROMPT_STEP_SHARE = 0.01
#: the preferred figure of a run's decode step, first first
_DECODE_PREFERENCE = (("itl", "mean"), ("tpot", "mean"), ("itl", "p50"), ("tpot", "p50"))


def decode_cases(cases: list[ServingCase]):
    """Servers' inter-token latency as decode measurements for the calibration (`Case`, metric
    ``decode``, per-sequence tok/s = 1000 / ITL at batch = the clients): closed loops of one client,
    or of a few whose prompts put at most `DECODE_PROMPT_TOKENS_PER_STEP` tokens and a
    `DECODE_PROMPT_STEP_SHARE` of prompt-carrying steps into the decode steps. One row per run (its
    ITL mean, else TPOT mean, else a median), labelled with its source."""
    best: dict[tuple, tuple[int, ServingCase]] = {}
    for c in cases:
        L = c.load
        if c.metric != "itl" or L.kind != "closed" or L.think_s:
            continue
        C, P, D = L.concurrency, L.prompt_tokens, L.output_tokens
        if not (C == 1 or (C * P / D <= DECODE_PROMPT_TOKENS_PER_STEP and C / D <= DECODE_PROMPT_STEP_SHARE)):
            continue
        rank = _DECODE_PREFERENCE.index((c.row["metric"], c.stat)) if (c.row["metric"], c.stat) in _DECODE_PREFERENCE \
            else None
        if rank is None:
            continue
        key = (c.source, c.cfg, L, c.parallel, c.row.get("notes", "")[:60])
        if key not in best or rank < best[key][0]:
            best[key] = (rank, c)
    out = []
    for _, c in best.values():
        cfg, L = c.cfg, c.load
        out.append(Case(int(c.row.get("_line", 0)), cfg.hardware, cfg.model, cfg.quant, cfg.kv_dtype, cfg.runtime,
                        cfg.gpus, Workload(batch=int(L.concurrency), prompt_tokens=L.prompt_tokens,
                                           output_tokens=L.output_tokens),
                        "decode", 1e3 / c.value, c.source,
                        f"serving.csv: {c.row['metric']} {c.stat} {c.value:g} ms at {L.concurrency:g} clients"))
    return out


def run_key(case: ServingCase) -> tuple:
    """One measured run: the figures a source prints of it (its throughput three ways: output, total,
    requests/s) share it."""
    where = re.search(r"line \d+", case.row.get("notes", ""))
    return (case.source, case.cfg.keys().__repr__(), case.load, case.parallel,
            where.group(0) if where else case.row.get("notes", "")[:80])


#: a batch of prompts at least this long, sent at once, is mostly prompt work: its makespan measures
#: the server's prompt rate under load (`prefill_cases`)
PREFILL_MIN_PROMPT_TOKENS = 1000
#: … where the model puts at least this share of the makespan in the prompts (the rest, the decode
#: steps, is the model's and taken off the measurement: the smaller it is, the less it matters)
PREFILL_MIN_SHARE = 0.5
#: the preferred figure of a batch's makespan, first first (each run prints it several ways)
_MAKESPAN_PREFERENCE = ("request_rate", "throughput", "total_throughput")


def _prompt_rates_scaled(cat: Catalog, factor: float) -> Catalog:
    """The catalog with every profile's prompt compute fractions times ``factor``."""
    from dataclasses import replace

    def scaled(v):
        return None if v is None else v * factor

    return replace(cat, profiles={k: replace(p, prefill_compute_fraction=scaled(p.prefill_compute_fraction),
                                             attention_compute_fraction=scaled(p.attention_compute_fraction),
                                             expert_compute_fraction=scaled(p.expert_compute_fraction),
                                             int8_compute_fraction=scaled(p.int8_compute_fraction))
                                  for k, p in cat.profiles.items()})


def prefill_cases(cases: list[ServingCase], cat: Catalog) -> list[Case]:
    """Batches of long prompts sent at once as prompt-rate measurements for the calibration (`Case`,
    metric ``prefill``: one prompt's tok/s at batch 1). GPUStack's 2,000-, 4,000- and 32,000-token
    batches with ~100-token answers spend most of their time computing prompts, in steps of the
    scheduler's budget beside the others' decode; they are the only prompt rates under load the data
    has for vLLM, SGLang and TensorRT-LLM on A100s and Hoppers.

    Derived, not read: the batch model (`advisor.model.serving.batch_run`) with ``cat``'s profiles
    splits its makespan into the prompts' compute, N·P·τ_p (exactly linear in τ_p: the schedule in
    steps does not depend on what a step costs), and the rest (decode steps, the server's own work).
    The measured makespan less the rest gives the measured τ_p; the case's value is one prompt's rate
    with that compute (its weight reads and fixed costs as the model has them). Only batches whose
    prompts the model puts at `PREFILL_MIN_SHARE` or more of the makespan, in a plain tensor-parallel
    layout (the calibration's `Case` has no other), one per run, labelled with their source so that a
    source held out of a fit takes its derived rows with it. They speak for their hardware family only
    (`Case.family_only`): one source's Hoppers reach a third of the BF16 peak in prompts, its A100s two
    thirds, and fifty such rows would otherwise set the vendor's prior for every family without data."""
    from advisor.model.serving import _first, _kernel, serve

    halved = _prompt_rates_scaled(cat, 0.5)
    best: dict[tuple, tuple[int, ServingCase]] = {}
    for c in cases:
        L = c.load
        if (c.row.get("load") != "offline" or c.metric not in _MAKESPAN_PREFERENCE or c.cfg.layout is not None
                or L.prompt_tokens < PREFILL_MIN_PROMPT_TOKENS):
            continue
        rank = _MAKESPAN_PREFERENCE.index(c.metric)
        key = run_key(c)
        if key not in best or rank < best[key][0]:
            best[key] = (rank, c)
    out = []
    for _, c in best.values():
        L = c.load
        try:
            now, slow = serve(cat, c.cfg, L), serve(halved, c.cfg, L)
        except AdvisorError:
            continue
        if not (now.fits and slow.fits):
            continue
        # the makespan of the batch, predicted (τ_p) and with τ_p doubled; measured from the figure
        per_request = {"request_rate": 1.0, "throughput": L.output_tokens,
                       "total_throughput": L.prompt_tokens + L.output_tokens}[c.metric]
        span, span2 = L.requests / float(now.request_rate_rps), L.requests / float(slow.request_rate_rps)
        measured = L.requests * per_request / c.value
        prompts = span2 - span                 # N·P·τ_p
        if prompts <= 0 or prompts < PREFILL_MIN_SHARE * span:
            continue
        ratio = (measured - (span - prompts)) / prompts   # measured τ_p over the model's
        if not 0.1 <= ratio <= 10.0:
            continue
        _, _, r = _kernel(cat, c.cfg, Load(kind="closed", concurrency=1.0, prompt_tokens=L.prompt_tokens,
                                           output_tokens=max(L.output_tokens, 2.0)))
        t_pass, t_compute = float(_first(r.prefill_s)), float(_first(r.prefill_compute_s))
        tok_s = L.prompt_tokens / (t_pass + (ratio - 1.0) * t_compute)
        cfg = c.cfg
        out.append(Case(int(c.row.get("_line", 0)), cfg.hardware, cfg.model, cfg.quant, cfg.kv_dtype, cfg.runtime,
                        cfg.gpus, Workload(batch=1, prompt_tokens=L.prompt_tokens, output_tokens=0),
                        "prefill", tok_s, c.source,
                        f"serving.csv: derived from a batch of {L.requests:,} prompts of {L.prompt_tokens:,.0f} tokens "
                        f"sent at once ({c.metric} {c.value:g}); the model's decode steps taken off",
                        family_only=True))
    return out
