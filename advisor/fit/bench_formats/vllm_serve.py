"""`vllm bench serve --save-result` files: one JSON object per run, or one per line with
``--append-result``.

What the client writes (vllm-project/vllm, ``vllm/benchmarks/serve.py``, commit 009e6d4a1cd6): the
run's setup (``date`` as ``%Y%m%d-%H%M%S``, ``backend``, ``label``, ``model_id``, ``tokenizer_id``,
``num_prompts``, ``request_rate`` — the string ``"inf"`` when unlimited —, ``burstiness``,
``max_concurrency``, and any ``--metadata KEY=VALUE`` pairs as top-level keys), then the results:
``duration``, ``completed``, ``failed``, ``total_input_tokens``, ``total_output_tokens``,
``request_throughput``, ``output_throughput``, ``total_token_throughput`` and, for each metric of
``--percentile-metrics`` (ttft, tpot, itl by default; e2el on request), ``mean_/median_/std_<m>_ms``
and ``p<P>_<m>_ms`` for each ``--metric-percentiles`` P (99 by default; "99.9" stays "p99.9").
With ``--save-detailed`` it adds per-request lists (``input_lens``, ``output_lens``, ``ttfts``,
``itls`` …): the lengths are read (`request_lengths`: the run's length distributions, which set how
it drains at its end and how long its prompts wait); the latencies, which the summary statistics
already cover, are not.

Older versions handled (the same repository's ``benchmarks/benchmark_serving.py``): 2025's copy
(commit 0049e29c41fd) writes the same keys without ``failed``; the early-2024 copies (v0.3/v0.4, seen
through the forks the index holds; vLLM's own commits of that time are not in it) write
``version`` (the engine's version, "N/A" unless given), ``request_inthroughput`` (sic) for
``request_throughput``, and only ``mean/median/p99`` of ttft and tpot; no ``max_concurrency``.

Neither version writes the hardware, the weight format or the GPU count; those are left None and
named in ``missing``. The shared readers here (`Fields`, `json_objects`, `serving_records`) are also
used by `sglang_bench`, whose format descends from this one.
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime
from typing import Any, Iterable

from advisor.data.errors import AdvisorError
from advisor.fit.bench_records import STATS, BenchRecord

TOOL = "vllm bench serve"

#: "p99_ttft_ms", "mean_e2el_ms", "p99.9_itl_ms" … (anchored: "probe_median_e2el_ms" and
#: "mean_e2el_including_client_queue_ms" are other measurements)
_STAT_KEY = re.compile(r"^(mean|median|std|min|max|p\d+(?:\.\d+)?)_(ttft|tpot|itl|e2el)_ms$")
_METRICS = {"ttft": "ttft_ms", "tpot": "tpot_ms", "itl": "itl_ms", "e2el": "e2e_ms"}
#: keys only SGLang's bench_serving writes (its end-to-end latency is named differently)
SGLANG_ONLY_KEYS = ("mean_e2e_latency_ms", "median_e2e_latency_ms")
#: the client's --backend (the request API it spoke) → the server it implies; "openai" and
#: "openai-chat" (the default) say only that the server speaks OpenAI's API, so no runtime
BACKEND_RUNTIMES = {"vllm": "vllm", "sglang": "sglang", "tgi": "tgi", "lmdeploy": "lmdeploy",
                    "tensorrt-llm": "tensorrt-llm", "deepspeed-mii": "deepspeed-mii", "llama.cpp": "llama.cpp",
                    "scalellm": "scalellm"}
#: engine versions as a user leaves them unset ("--version" defaulted to "N/A")
_NO_VERSION = {"", "n/a", "na", "none", "unknown"}


# --- shared readers (also used by sglang_bench) --------------------------------------------------

def _shown(v: Any) -> str:
    if isinstance(v, bool):
        return "true/false"
    if isinstance(v, str):
        return "a string"
    if isinstance(v, list):
        return "a list"
    if isinstance(v, dict):
        return "an object"
    return type(v).__name__


class Fields:
    """One result object's fields, read with checks: every error is one line naming the place in the
    file (``where``: the file, and its line for JSON Lines) and the key."""

    def __init__(self, obj: Any, where: str, tool: str):
        if not isinstance(obj, dict):
            raise AdvisorError(f"{where}: a {tool} result is a JSON object, not {_shown(obj)}")
        self.obj, self.where, self.tool = obj, where, tool

    def fail(self, key: str, problem: str) -> None:
        raise AdvisorError(f"{self.where}: '{key}' in a {self.tool} result {problem}")

    def lack(self, key: str) -> None:
        raise AdvisorError(f"{self.where}: a {self.tool} result without '{key}'")

    def number(self, key: str, required: bool = False) -> float | None:
        """A finite, non-negative number; None when absent or null (an error when ``required``)."""
        v = self.obj.get(key)
        if v is None:
            if required:
                self.lack(key)
            return None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            self.fail(key, f"is {_shown(v)}, not a number")
        if not math.isfinite(v):
            self.fail(key, "is not a finite number")
        if v < 0:
            self.fail(key, f"is negative ({v})")
        return float(v)

    def count(self, key: str, required: bool = False, positive: bool = False) -> int | None:
        v = self.number(key, required)
        if v is None:
            return None
        if not v.is_integer():
            self.fail(key, f"is not a whole number ({v})")
        if positive and v < 1:
            self.fail(key, f"is not positive ({int(v)})")
        return int(v)

    def text(self, key: str) -> str | None:
        v = self.obj.get(key)
        if v is None:
            return None
        if not isinstance(v, str):
            self.fail(key, f"is {_shown(v)}, not a string")
        return v.strip() or None

    def rate(self, key: str) -> float | None:
        """An arrival rate in requests/s: inf for "all at once" (written as the string "inf" by vLLM,
        as JSON's Infinity by SGLang), else a positive finite number."""
        v = self.obj.get(key)
        if v is None:
            return None
        if isinstance(v, str):
            if v.strip().lower() in ("inf", "+inf", "infinity", "+infinity"):
                return math.inf
            self.fail(key, f"is the string {v[:20]!r}, not a rate")
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            self.fail(key, f"is {_shown(v)}, not a rate")
        if math.isnan(v) or v <= 0:
            self.fail(key, f"is not a positive rate ({v})")
        return float(v)

    def stats(self, pattern: re.Pattern, metrics: dict[str, str]) -> list[tuple[str, str, float]]:
        """(metric, stat, value) of the keys ``pattern`` matches (groups: stat, metric), in the order
        of ``metrics`` then `STATS`. A zero is skipped: both clients write 0 for what they could not
        measure (the mean of an empty list, e.g. TTFT from a non-streaming backend). Percentiles that
        `STATS` has no name for (p50, p99.9) are skipped too."""
        found: dict[tuple[str, str], float] = {}
        for key in self.obj:
            m = pattern.match(key) if isinstance(key, str) else None
            if not m or m.group(1) not in STATS:
                continue
            value = self.number(key)
            if value:
                found[(metrics[m.group(2)], m.group(1))] = value
        order = {metric: i for i, metric in enumerate(metrics.values())}
        return [(metric, stat, v) for (metric, stat), v in
                sorted(found.items(), key=lambda kv: (order[kv[0][0]], STATS.index(kv[0][1])))]


def mean_tokens(total: float | None, completed: int) -> int | None:
    """A run's mean tokens per request (the files give totals over the completed requests)."""
    return round(total / completed) if total is not None and completed > 0 else None


def json_objects(text: str, data: Any, source: str) -> list[tuple[str, Any]] | None:
    """(where, value) of each result in the file — the file for one JSON object, "file, line N" for
    JSON Lines (N counts the file's lines, blank ones too), "file, item N" for a JSON array; None
    when the text is not JSON."""
    if isinstance(data, dict):
        return [(source, data)]
    if not isinstance(data, list):
        return None
    if text.lstrip().startswith("["):
        return [(f"{source}, item {i}", v) for i, v in enumerate(data, 1)]
    numbers = [i for i, ln in enumerate(text.splitlines(), 1) if ln.strip()]
    if len(numbers) != len(data):   # not the dispatcher's JSON Lines: count items instead
        return [(f"{source}, item {i}", v) for i, v in enumerate(data, 1)]
    return [(f"{source}, line {n}", v) for n, v in zip(numbers, data)]


def first_object(data: Any) -> Any:
    """The first result of parsed content (a JSON object, or the first of JSON Lines), else None."""
    if isinstance(data, dict):
        return data
    if isinstance(data, list) and data and all(isinstance(v, dict) for v in data):
        return data[0]
    return None


def not_json(text: str, source: str, tool: str) -> AdvisorError:
    """The error for content of ours that does not parse, naming the first broken line of JSON Lines."""
    lines = text.splitlines()
    filled = [(i, ln) for i, ln in enumerate(lines, 1) if ln.strip()]
    if len(filled) > 1 and all(ln.lstrip().startswith("{") for _, ln in filled):
        for i, ln in filled:
            try:
                json.loads(ln)
            except ValueError:
                return AdvisorError(f"{source}, line {i}: a {tool} result that is not valid JSON (cut short?)")
    return AdvisorError(f"{source}: a {tool} result that is not valid JSON (cut short?)")


def request_lengths(f: Fields) -> dict[str, tuple[int, ...]]:
    """The completed requests' prompt and output tokens from the per-request lists both clients save
    on request (``input_lens``, ``output_lens``; a failed request's output is 0 and is left out), as
    `BenchRecord` fields; none where the file has no such lists."""
    lists = {}
    for key in ("input_lens", "output_lens"):
        v = f.obj.get(key)
        if v is None:
            return {}
        if not isinstance(v, list) or any(isinstance(x, bool) or not isinstance(x, (int, float))
                                          or not math.isfinite(x) or x < 0 or x != int(x) for x in v):
            f.fail(key, "is not a list of token counts")
        lists[key] = [int(x) for x in v]
    prompts, outputs = lists["input_lens"], lists["output_lens"]
    if len(prompts) != len(outputs):
        f.fail("output_lens", f"has {len(outputs)} entries where 'input_lens' has {len(prompts)}")
    done = [(p, o) for p, o in zip(prompts, outputs) if o > 0]
    return {"prompt_lengths": tuple(max(p, 1) for p, _ in done), "output_lengths": tuple(o for _, o in done)}


def serving_records(tool: str, stats: Iterable[tuple[str, str, float]], throughput_tok_s: float | None,
                    request_rps: float | None, **context: Any) -> list[BenchRecord]:
    """A serving run's records: one per latency statistic, then the run's output-token and request
    throughputs (aggregates over the whole run, kept as its "mean"). ``context`` holds the
    `BenchRecord` fields every record of the run shares."""
    out = [BenchRecord(tool=tool, metric=metric, value=v, stat=stat, **context) for metric, stat, v in stats]
    if throughput_tok_s:
        out.append(BenchRecord(tool=tool, metric="throughput_tok_s", value=throughput_tok_s, **context))
    if request_rps:
        out.append(BenchRecord(tool=tool, metric="request_throughput_rps", value=request_rps, **context))
    return out


def absent(context: dict[str, Any], fields: Iterable[str]) -> tuple[str, ...]:
    """The names among ``fields`` whose value in ``context`` is None."""
    return tuple(f for f in fields if context.get(f) is None)


# --- vLLM ----------------------------------------------------------------------------------------

#: the setup keys every version writes first; a file with them is this client's even when a result
#: key is missing (then parse names the key)
_SETUP_KEYS = ("model_id", "tokenizer_id", "num_prompts")


def _is_vllm(obj: Any) -> bool:
    if not isinstance(obj, dict) or any(k in obj for k in SGLANG_ONLY_KEYS):
        return False
    if all(k in obj for k in _SETUP_KEYS):
        return True
    return ("output_throughput" in obj and any(k in obj for k in ("date", "model_id", "backend"))
            and any(isinstance(k, str) and _STAT_KEY.match(k) for k in obj))


def sniff(text: str, data: Any) -> bool:
    first = first_object(data)
    if first is not None:
        return _is_vllm(first)
    if data is not None or not text.lstrip().startswith("{"):
        return False
    # a file cut short does not parse, but still names the keys this client writes first (the
    # statistics come last, after the per-request lists)
    return ('"model_id"' in text and '"tokenizer_id"' in text
            and not any(f'"{k}"' in text for k in SGLANG_ONLY_KEYS))


def runs_of(text: str, data: Any, source: str, tool: str):
    """The (where, object) runs of a serving client's JSON or JSON Lines file, or one line saying why
    there are none (shared with sglang_bench)."""
    runs = json_objects(text, data, source)
    if runs is None:
        raise not_json(text, source, tool)
    if not runs:
        raise AdvisorError(f"{source}: an empty list, not a {tool} result")
    return runs


def parse(text: str, data: Any, source: str) -> list[BenchRecord]:
    out: list[BenchRecord] = []
    for where, obj in runs_of(text, data, source, TOOL):
        out.extend(_run(Fields(obj, where, TOOL)))
    return out


def _iso_date(text: str | None) -> str | None:
    """``date`` ("20250102-030405", local time as the client saw it) → "2025-01-02T03:04:05"."""
    if text is None:
        return None
    try:
        return datetime.strptime(text, "%Y%m%d-%H%M%S").isoformat()
    except ValueError:
        return None     # a date is context, not a measurement: an odd one is dropped, not fatal


def _run(f: Fields) -> list[BenchRecord]:
    completed = f.count("completed", required=True)
    throughput = f.number("output_throughput", required=True)
    # "request_inthroughput" is the early-2024 spelling of the same figure
    request_rps = f.number("request_throughput") if "request_throughput" in f.obj else f.number("request_inthroughput")
    stats = f.stats(_STAT_KEY, _METRICS)
    if not stats and completed:
        f.lack("mean_ttft_ms")
    if completed == 0:
        return []   # every request failed: the file's zeros measure nothing

    backend = f.text("backend")
    version = f.text("version")
    concurrency = f.count("max_concurrency", positive=True)
    context: dict[str, Any] = {
        "runtime": BACKEND_RUNTIMES.get(backend.lower()) if backend else None,
        "build": version if version and version.lower() not in _NO_VERSION else None,
        "hardware": None,
        "model": f.text("model_id"),
        "quant": None,
        "gpus": None,
        "concurrency": float(concurrency) if concurrency is not None else None,
        "request_rate_rps": f.rate("request_rate"),
        # means over the completed requests: the file gives only totals
        "prompt_tokens": mean_tokens(f.number("total_input_tokens"), completed),
        "output_tokens": mean_tokens(f.number("total_output_tokens"), completed),
        "requests_completed": completed,
        "requests_failed": f.count("failed"),
        "measured_at": _iso_date(f.text("date")),
        "source": f.where,
    }
    wanted = ["hardware", "model", "quant", "gpus", "runtime", "build", "prompt_tokens", "output_tokens"]
    # a null max_concurrency says "no limit"; only a file without the key leaves it unknown
    wanted += [k for k, key in (("concurrency", "max_concurrency"), ("request_rate_rps", "request_rate"))
               if key not in f.obj]
    context["missing"] = absent(context, wanted)
    context.update(request_lengths(f))
    return serving_records(TOOL, stats, throughput, request_rps, **context)
