"""NVIDIA GenAI-Perf ``profile_export_genai_perf.json`` and NVIDIA AIPerf ``profile_export_aiperf.json``.

Both write one JSON object: a summary object per metric at the top level,
``"time_to_first_token": {"unit": "ms", "avg": …, "p1" … "p99", "min", "max", "std"}``, and the run's
configuration under ``"input_config"``. Per-request metrics carry the full statistics; run-level ones
(``request_throughput``, ``output_token_throughput``, ``request_count``) only ``unit`` and ``avg``.
AIPerf's exporter was written "to mimic the structure of the GenAI-Perf JSON output", so one reader
serves both; ``record.tool`` says which wrote the file.

Read from the sources (not guessed):
- GenAI-Perf: triton-inference-server/perf_analyzer @ 263c5f6e0c7a6c15472a54409174981f67930cfe,
  ``genai-perf/genai_perf/export_data/json_exporter.py`` (stats dict + ``input_config``),
  ``genai_perf/metrics/statistics.py`` (``avg``, ``p1…p99``, ``min``, ``max``, ``std``; time metrics are
  scaled ns → ms before export and labelled ``"ms"``; ``requests/sec``, ``tokens/sec``, ``tokens``),
  ``genai_perf/profile_data_parser/llm_profile_data_parser.py`` (the ITL formula below).
  ``input_config`` has two layouts: up to early 2025 the CLI arguments themselves
  (``"model": [...]``, ``"concurrency"``, ``"request_rate"``, ``"service_kind"``, ``"backend"``;
  tests/test_exporters/test_json_exporter.py @ 9235d482), since the config-file rework (#308, 2025-03)
  the config tree (``"model_names"``, ``"endpoint": {"service_kind", "backend", …}``,
  ``"perf_analyzer": {"stimulus": {"concurrency": N} | {"request_rate": R}}``).
- AIPerf: ai-dynamo/aiperf @ db4f6397d11ee2d4cfbb41f70b2327315163dcf0, ``aiperf/exporters/json_exporter.py``,
  ``aiperf/common/models/export_models.py`` (``JsonExportData``, ``JsonMetricResult``),
  ``aiperf/metrics/types/*`` (units: ns recorded, ms displayed; ``requests/sec``, ``tokens/sec``,
  ``sec``), ``aiperf/common/config/{endpoint,loadgen}_config.py`` (``input_config.endpoint.model_names``,
  ``input_config.loadgen.concurrency`` / ``request_rate``). AIPerf always writes ``was_cancelled`` and
  ``error_summary`` at the top level, GenAI-Perf never does: that tells the two apart.

What the metrics mean, and where they go:
- ``time_to_first_token`` → ``ttft_ms``; ``request_latency`` → ``e2e_ms``;
- ``inter_token_latency`` → ``tpot_ms``: both tools compute it per request as
  (request latency − TTFT) / (output tokens − 1) and then summarise over requests, which is exactly
  `METRICS`' TPOT (vLLM's TPOT), not vLLM's ITL (the gaps between streamed chunks);
- AIPerf's ``inter_chunk_latency`` (the gaps between streamed chunks, pooled over all requests) →
  ``itl_ms`` when the file has it;
- ``output_token_throughput`` (total output tokens / benchmark duration) → ``throughput_tok_s``;
  ``request_throughput`` → ``request_throughput_rps``.
Statistics kept: avg → mean, p50 → median, p90, p95, p99. Values are converted to the metric's unit
from the file's ``"unit"``; a unit this reader does not know is refused rather than guessed.
A value of exactly 0 is how these tools leave a statistic unmeasured (e.g. TTFT without streaming),
so it is skipped; a negative or non-finite one is an error.
"""

from __future__ import annotations

import math
import re
from typing import Any

from advisor.data.errors import AdvisorError
from advisor.fit.bench_records import BenchRecord

TOOL = "genai-perf / aiperf"

#: file metric → (record metric, the kind of unit it must be in)
_METRICS = {
    "time_to_first_token": ("ttft_ms", "time"),
    "inter_token_latency": ("tpot_ms", "time"),
    "inter_chunk_latency": ("itl_ms", "time"),
    "request_latency": ("e2e_ms", "time"),
    "output_token_throughput": ("throughput_tok_s", "tokens/s"),
    "request_throughput": ("request_throughput_rps", "requests/s"),
}
#: file statistic → record statistic
_STATS = {"avg": "mean", "p50": "median", "p90": "p90", "p95": "p95", "p99": "p99"}
#: unit strings as the tools write them (and close spellings) → factor to ms / per second
_UNIT_FACTORS = {
    "time": {"ns": 1e-6, "us": 1e-3, "µs": 1e-3, "ms": 1.0, "s": 1e3, "sec": 1e3, "seconds": 1e3},
    "tokens/s": {"tokens/sec": 1.0, "tokens/s": 1.0, "tok/s": 1.0, "tokens per second": 1.0},
    "requests/s": {"requests/sec": 1.0, "requests/s": 1.0, "req/s": 1.0, "per sec": 1.0,
                   "requests per second": 1.0},
}
#: the metric every run with a completed request writes (both tools' base metrics)
_REQUIRED = "request_latency"
#: what a sniff of unparsed text looks for: a known metric opening with its unit, as both tools write it
_TEXT_SIGNATURE = re.compile(r'"(?:time_to_first_token|request_latency|request_throughput|'
                             r'output_token_throughput|inter_token_latency)"\s*:\s*\{\s*"unit"')


def sniff(text: str, data: Any) -> bool:
    """A top-level object with at least one known metric summarised as ``{"unit": …, "avg": …}``."""
    if isinstance(data, dict):
        return any(isinstance(data.get(k), dict) and ("unit" in data[k] or "avg" in data[k])
                   for k in _METRICS)
    if data is None:
        # cut short or otherwise not JSON: claim it when it opens like these exports, to say why
        head = text[:4096]
        return head.lstrip().startswith("{") and bool(_TEXT_SIGNATURE.search(head))
    return False


def parse(text: str, data: Any, source: str) -> list[BenchRecord]:
    if not isinstance(data, dict):
        raise AdvisorError(f"{source}: a GenAI-Perf/AIPerf export that is not a whole JSON object "
                           f"(cut short?)")
    tool = _which_tool(data)
    if not isinstance(data.get(_REQUIRED), dict):
        raise AdvisorError(f"{source}: a {tool} export without a '{_REQUIRED}' summary object")
    config = data.get("input_config")
    if config is not None and not isinstance(config, dict):
        raise AdvisorError(f"{source}: a {tool} export whose 'input_config' is not an object")
    conditions = _conditions(data, config or {}, tool, source)
    records = []
    for key, (metric, kind) in _METRICS.items():
        if key not in data:
            continue
        for stat, value in _stat_values(data[key], key, kind, tool, source):
            records.append(BenchRecord(metric=metric, value=value, stat=stat, **conditions))
    return records


def _which_tool(data: dict) -> str:
    """"aiperf" when the file has AIPerf's own top-level fields or config layout, else "genai-perf"."""
    if "was_cancelled" in data or "error_summary" in data:
        return "aiperf"
    config = data.get("input_config")
    if isinstance(config, dict) and ("loadgen" in config or
                                     isinstance(config.get("endpoint"), dict)
                                     and "model_names" in config["endpoint"]):
        return "aiperf"
    return "genai-perf"


def _stat_values(summary: Any, key: str, kind: str, tool: str, source: str) -> list[tuple[str, float]]:
    """(record stat, value in the metric's unit) of one summary object."""
    if not isinstance(summary, dict):
        raise AdvisorError(f"{source}: {tool} metric '{key}' is not an object with 'unit' and 'avg'")
    factor = _unit_factor(summary.get("unit"), key, kind, tool, source)
    if "avg" not in summary:
        raise AdvisorError(f"{source}: {tool} metric '{key}' without 'avg'")
    out = []
    for file_stat, stat in _STATS.items():
        if file_stat not in summary or summary[file_stat] is None:
            continue
        value = _number(summary[file_stat], f"{key}.{file_stat}", tool, source) * factor
        if not math.isfinite(value):
            raise AdvisorError(f"{source}: {tool} field '{key}.{file_stat}' is out of range")
        if value > 0:   # 0 is the tools' mark of "not measured"
            out.append((stat, value))
    return out


def _unit_factor(unit: Any, key: str, kind: str, tool: str, source: str) -> float:
    if not isinstance(unit, str):
        raise AdvisorError(f"{source}: {tool} metric '{key}' without a 'unit'")
    factors = _UNIT_FACTORS[kind]
    factor = factors.get(unit.strip().lower())
    if factor is None:
        want = "a time unit" if kind == "time" else kind
        raise AdvisorError(f"{source}: {tool} metric '{key}' is in unit {unit!r}, which this reader "
                           f"does not know ({want}: {', '.join(factors)})")
    return factor


def _number(value: Any, field: str, tool: str, source: str) -> float:
    """A finite, non-negative number; bools and numeric strings are refused."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise AdvisorError(f"{source}: {tool} field '{field}' is {type(value).__name__}, not a number")
    v = float(value)
    if not math.isfinite(v) or v < 0:
        raise AdvisorError(f"{source}: {tool} field '{field}' is {value!r}, not a finite number ≥ 0")
    return v


def _conditions(data: dict, config: dict, tool: str, source: str) -> dict:
    """The fields every record of this file shares: load, lengths, model, counts."""
    concurrency, rate = _load(config, tool, source)
    model = _model(config)
    runtime = _runtime(config) if tool == "genai-perf" else None
    missing = ["hardware"]
    if model is None:
        missing.append("model")
    if runtime is None:
        missing.append("runtime")
    if concurrency is None and rate is None:
        missing.append("concurrency")
    return dict(
        tool=tool, runtime=runtime, model=model, concurrency=concurrency, request_rate_rps=rate,
        prompt_tokens=_mean_tokens(data, "input_sequence_length", tool, source),
        output_tokens=_mean_tokens(data, "output_sequence_length", tool, source),
        requests_completed=_count(data, "request_count", tool, source),
        requests_failed=_count(data, "error_request_count", tool, source),
        measured_at=data["start_time"] if isinstance(data.get("start_time"), str) else None,
        source=source, missing=tuple(missing))


def _load(config: dict, tool: str, source: str) -> tuple[float | None, float | None]:
    """(concurrency, request rate) as configured. A request rate wins: both tools then pace arrivals
    by it and treat a concurrency, if also given, as a cap only."""
    analyzer = config.get("perf_analyzer")
    if isinstance(config.get("loadgen"), dict):                               # AIPerf
        place, where = config["loadgen"], "input_config.loadgen"
    elif isinstance(analyzer, dict) and isinstance(analyzer.get("stimulus"), dict):  # GenAI-Perf, config
        place, where = analyzer["stimulus"], "input_config.perf_analyzer.stimulus"
    else:                                                                     # GenAI-Perf, arguments
        place, where = config, "input_config"
    rate = _optional_positive(place.get("request_rate"), f"{where}.request_rate", tool, source)
    if rate is not None:
        return None, rate
    return _optional_positive(place.get("concurrency"), f"{where}.concurrency", tool, source), None


def _optional_positive(value: Any, field: str, tool: str, source: str) -> float | None:
    # GenAI-Perf's config writer turns None into ""; a stimulus read from a string has None
    if value is None or value == "":
        return None
    v = _number(value, field, tool, source)
    if v <= 0:
        raise AdvisorError(f"{source}: {tool} field '{field}' is {value!r}, not a positive number")
    return v


def _model(config: dict) -> str | None:
    endpoint = config.get("endpoint")
    for names in (endpoint.get("model_names") if isinstance(endpoint, dict) else None,
                  config.get("model_names"), config.get("model")):
        if isinstance(names, str) and names.strip():
            return names.strip()
        if isinstance(names, list):
            named = [n.strip() for n in names if isinstance(n, str) and n.strip()]
            if named:
                return ", ".join(named)
    return None


def _runtime(config: dict) -> str | None:
    """Triton's backend when GenAI-Perf drove Triton (the backend field means nothing otherwise)."""
    endpoint = config.get("endpoint") if isinstance(config.get("endpoint"), dict) else {}
    service = endpoint.get("service_kind", config.get("service_kind"))
    backend = endpoint.get("backend", config.get("backend"))
    if service != "triton" or not isinstance(backend, str):
        return None
    return {"tensorrtllm": "tensorrt-llm", "vllm": "vllm"}.get(backend.lower())


def _mean_tokens(data: dict, key: str, tool: str, source: str) -> int | None:
    summary = data.get(key)
    if summary is None:
        return None
    if not isinstance(summary, dict):
        raise AdvisorError(f"{source}: {tool} metric '{key}' is not an object with 'unit' and 'avg'")
    if summary.get("avg") is None:
        return None
    value = _number(summary["avg"], f"{key}.avg", tool, source)
    return round(value) if value >= 0.5 else None


def _count(data: dict, key: str, tool: str, source: str) -> int | None:
    summary = data.get(key)
    if not isinstance(summary, dict) or summary.get("avg") is None:
        return None
    return round(_number(summary["avg"], f"{key}.avg", tool, source))
