"""GuideLLM's ``benchmarks.json`` report (vllm-project/guidellm, formerly neuralmagic/guidellm).

The report is one JSON object whose ``"benchmarks"`` list holds one entry per load level run (a
sweep writes synchronous, throughput and several constant/poisson rates). Each entry has a
``"metrics"`` object of distributions, each split by request status::

    "time_to_first_token_ms": {
        "successful": {"mean", "median", "mode", "variance", "std_dev", "min", "max", "count",
                       "total_sum", "percentiles": {"p001" … "p999"}, …},
        "errored": {…}, "incomplete": {…}, "total": {…}}

Only the ``successful`` distributions are read. Layouts handled (read at
vllm-project/guidellm @ ee7a77457ba668b4b5ccb40f110518829893b36a and its tags):
- v0.2–v0.3 (``src/guidellm/benchmark/benchmark.py``, ``objects/statistics.py``): the entry's
  ``"args": {"strategy": {"type_": …}}``, ``"worker": {"backend_type", "backend_target",
  "backend_model"}``, ``"request_totals"``; percentiles without ``p50`` (the median is ``median``);
- v0.4–v0.6 (``benchmark/schemas/generative/*.py``): report ``"metadata"`` (schema version 1) and
  ``"args"`` (``target``, ``model``, ``backend``); the entry's ``"config": {"strategy", "backend":
  {"target", "model", …}}``, ``"metrics": {"request_totals", …}``;
- v0.7 (``benchmark/schemas/{report,benchmark,base,metrics}.py``, ``schemas/statistics.py``): report
  schema version 2 with ``"config": {"spec": {"backend": {"kind", "target", "model"}}}``; entries as
  in v0.4–v0.6, with the backend's ``kind``.
v0.1's report (``core/report.py``: reports holding raw per-request results, no summaries) is
recognised and refused with a message saying so.

Metrics and their units (GuideLLM's ``docs/guides/metrics.md`` and the request-stats definitions):
- ``time_to_first_token_ms`` → ``ttft_ms``;
- ``inter_token_latency_ms`` → ``itl_ms``: per request (last token − first token) / (tokens − 1),
  its distribution weighted by each request's tokens − 1, so its mean is the mean over all gaps
  between tokens, vLLM's ITL mean (its percentiles are of per-request averages, not of single gaps);
- ``request_latency`` is in SECONDS in every version → ``e2e_ms`` (× 1000);
- ``output_tokens_per_second`` → ``throughput_tok_s`` and ``requests_per_second`` →
  ``request_throughput_rps``, the mean only: these are rate-over-time distributions whose mean,
  weighted by interval duration, is the aggregate rate (events ÷ the measured window) — the figure
  GuideLLM's own console prints as "Output Tok/sec" — while their percentiles describe moments of
  the run, not requests, and are left out;
- ``time_per_output_token_ms`` is NOT read: GuideLLM's TPOT includes the first token
  ((last token − request start) / tokens), so it is neither `METRICS`' ``tpot_ms`` (after the first
  token) nor ITL, and naming it either would bias a comparison.
Statistics kept for latencies: mean, median, p90, p95, p99. A distribution with no successful
samples (``count`` 0), or a value of exactly 0 (how GuideLLM writes a latency it did not observe,
e.g. TTFT without streaming), gives no record.

No GuideLLM layout names the hardware; a v0.7 report's ``--label`` named ``gpu``, ``hardware`` or
``accelerator`` (GuideLLM's migration guide gives ``--label gpu=NVIDIA_Z500`` as its example) is
taken as the hardware's name, as written; otherwise hardware is None and named in ``missing``.

Load per entry, from its strategy: ``synchronous`` → concurrency 1; ``concurrent`` → its
``streams``; ``constant`` / ``poisson`` / ``async`` → ``request_rate_rps`` = its ``rate``;
``throughput`` → ``request_rate_rps`` = inf (all requests at once).
"""

from __future__ import annotations

import math
import re
from datetime import datetime, timezone
from typing import Any

from advisor.data.errors import AdvisorError
from advisor.fit.bench_records import BenchRecord

TOOL = "guidellm"

#: file metric → (record metric, factor to the record's unit, whether only the mean is meaningful)
_METRICS = {
    "time_to_first_token_ms": ("ttft_ms", 1.0, False),
    "inter_token_latency_ms": ("itl_ms", 1.0, False),
    "request_latency": ("e2e_ms", 1e3, False),              # seconds
    "output_tokens_per_second": ("throughput_tok_s", 1.0, True),
    "requests_per_second": ("request_throughput_rps", 1.0, True),
}
_REQUIRED = ("request_latency", "requests_per_second")
#: record statistic → where it sits in a DistributionSummary
_STATS = {"mean": ("mean",), "median": ("median",), "p90": ("percentiles", "p90"),
          "p95": ("percentiles", "p95"), "p99": ("percentiles", "p99")}
#: GuideLLM's backend kinds that name the serving runtime (openai_http talks to any server)
_RUNTIMES = {"vllm_python": "vllm", "vllm": "vllm"}
_RATE_STRATEGIES = ("constant", "poisson", "async")
#: report labels (v0.7 ``--label``) taken as the hardware's name, as the user wrote it
_HARDWARE_LABELS = ("gpu", "hardware", "accelerator")
_TEXT_SIGNATURE = re.compile(r'"type_"\s*:\s*"generative_benchmark"')


def sniff(text: str, data: Any) -> bool:
    """A top-level ``"benchmarks"`` list of objects with ``"metrics"`` (v0.2+), a v0.1 report, or an
    empty list in a report whose metadata names GuideLLM."""
    if isinstance(data, dict) and isinstance(data.get("benchmarks"), list):
        entries = data["benchmarks"]
        if any(isinstance(b, dict) and ("metrics" in b or b.get("type_") == "generative_benchmark")
               for b in entries):
            return True
        if any(_is_v01_report(b) for b in entries):
            return True
        meta = data.get("metadata")
        return not entries and isinstance(meta, dict) and "guidellm_version" in meta
    if data is None:
        # cut short or otherwise not JSON: claim it when it holds GuideLLM's benchmark entries
        return text.lstrip().startswith("{") and '"benchmarks"' in text \
            and bool(_TEXT_SIGNATURE.search(text))
    return False


def parse(text: str, data: Any, source: str) -> list[BenchRecord]:
    if not isinstance(data, dict):
        raise AdvisorError(f"{source}: a GuideLLM report that is not a whole JSON object (cut short?)")
    entries = data.get("benchmarks")
    if not isinstance(entries, list) or not entries:
        raise AdvisorError(f"{source}: a GuideLLM report with an empty 'benchmarks' list")
    if any(_is_v01_report(b) for b in entries):
        raise AdvisorError(f"{source}: a GuideLLM 0.1 report, which holds raw request timings and no "
                           f"'metrics' summaries; rerun or re-export with GuideLLM 0.2 or later")
    report = _report_defaults(data)
    records: list[BenchRecord] = []
    for i, entry in enumerate(entries):
        where = f"{source}, benchmark {i + 1}"
        if not isinstance(entry, dict):
            raise AdvisorError(f"{where}: a GuideLLM benchmark entry that is not an object")
        records.extend(_entry_records(entry, report, where))
    return records


def _is_v01_report(entry: Any) -> bool:
    return isinstance(entry, dict) and isinstance(entry.get("benchmarks"), list) and "args" in entry \
        and "metrics" not in entry


def _report_defaults(data: dict) -> dict:
    """Model and backend kind named once for the whole report (v0.4–v0.6 ``args``, v0.7 ``config.spec``)."""
    args = data.get("args") if isinstance(data.get("args"), dict) else {}
    config = data.get("config") if isinstance(data.get("config"), dict) else {}
    spec = config.get("spec") if isinstance(config.get("spec"), dict) else {}
    backend = spec.get("backend") if isinstance(spec.get("backend"), dict) else {}
    meta = config.get("metadata") if isinstance(config.get("metadata"), dict) else {}
    labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
    return {"model": _text(backend.get("model")) or _text(args.get("model")),
            "kind": _text(backend.get("kind")) or _text(args.get("backend")),
            # v0.7's --label key=value pairs; its own docs' example labels the GPU (gpu=NVIDIA_Z500)
            "hardware": next((_text(labels.get(k)) for k in _HARDWARE_LABELS if _text(labels.get(k))), None)}


def _entry_records(entry: dict, report: dict, where: str) -> list[BenchRecord]:
    metrics = entry.get("metrics")
    if not isinstance(metrics, dict):
        raise AdvisorError(f"{where}: a GuideLLM benchmark without a 'metrics' object")
    for key in _REQUIRED:
        if key not in metrics:
            raise AdvisorError(f"{where}: a GuideLLM benchmark whose metrics lack '{key}'")
    conditions = _conditions(entry, metrics, report, where)
    records = []
    for key, (metric, factor, mean_only) in _METRICS.items():
        if key not in metrics:
            continue
        summary = _successful(metrics[key], key, where)
        if summary is None:
            continue
        for stat, path in _STATS.items():
            if mean_only and stat != "mean":
                continue
            value = _stat(summary, path, key, where)
            if value is None or value == 0:         # absent, or 0: not observed
                continue
            if not math.isfinite(value * factor):
                raise AdvisorError(f"{where}: GuideLLM field '{key}.successful.{'.'.join(path)}' "
                                   f"is out of range")
            records.append(BenchRecord(metric=metric, value=value * factor, stat=stat, **conditions))
    return records


def _successful(dist: Any, key: str, where: str) -> dict | None:
    """The ``successful`` DistributionSummary, or None when it has no samples."""
    if not isinstance(dist, dict):
        raise AdvisorError(f"{where}: GuideLLM metric '{key}' is not an object of status distributions")
    summary = dist.get("successful")
    if not isinstance(summary, dict):
        raise AdvisorError(f"{where}: GuideLLM metric '{key}' without a 'successful' distribution")
    count = summary.get("count")
    if count is not None and _number(count, f"{key}.successful.count", where) == 0:
        return None
    return summary


def _stat(summary: dict, path: tuple[str, ...], key: str, where: str) -> float | None:
    field = f"{key}.successful.{'.'.join(path)}"
    value: Any = summary
    for part in path:
        if not isinstance(value, dict):
            raise AdvisorError(f"{where}: GuideLLM field '{field}' is not inside an object")
        if part not in value:
            if path == ("mean",):
                raise AdvisorError(f"{where}: GuideLLM field '{field}' is missing")
            return None                     # v0.2 has no p50 and any percentile may be absent
        value = value[part]
    return None if value is None else _number(value, field, where)


def _number(value: Any, field: str, where: str) -> float:
    """A finite, non-negative number; bools and numeric strings are refused."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise AdvisorError(f"{where}: GuideLLM field '{field}' is {type(value).__name__}, not a number")
    v = float(value)
    if not math.isfinite(v) or v < 0:
        raise AdvisorError(f"{where}: GuideLLM field '{field}' is {value!r}, not a finite number ≥ 0")
    return v


def _conditions(entry: dict, metrics: dict, report: dict, where: str) -> dict:
    concurrency, rate = _load(entry, where)
    backend = _backend(entry)
    model = _text(backend.get("model")) or report["model"]
    runtime = _RUNTIMES.get((_text(backend.get("kind")) or report["kind"] or "").lower())
    totals = metrics.get("request_totals", entry.get("request_totals"))
    completed = failed = None
    if isinstance(totals, dict):
        if totals.get("successful") is not None:
            completed = round(_number(totals["successful"], "request_totals.successful", where))
        if totals.get("errored") is not None:
            failed = round(_number(totals["errored"], "request_totals.errored", where))
    hardware = report["hardware"]
    missing = [name for name, value in (("hardware", hardware), ("model", model), ("runtime", runtime))
               if value is None]
    if concurrency is None and rate is None:
        missing.append("concurrency")
    return dict(
        tool=TOOL, runtime=runtime, hardware=hardware, model=model,
        concurrency=concurrency, request_rate_rps=rate,
        prompt_tokens=_mean_tokens(metrics, "prompt_token_count", where),
        output_tokens=_mean_tokens(metrics, "output_token_count", where),
        requests_completed=completed, requests_failed=failed,
        measured_at=_iso(entry.get("start_time")), source=where, missing=tuple(missing))


def _load(entry: dict, where: str) -> tuple[float | None, float | None]:
    """(concurrency, request rate) from the entry's scheduling strategy."""
    holder = entry.get("config") if isinstance(entry.get("config"), dict) else entry.get("args")
    strategy = holder.get("strategy") if isinstance(holder, dict) else None
    if not isinstance(strategy, dict) or not isinstance(strategy.get("type_"), str):
        raise AdvisorError(f"{where}: a GuideLLM benchmark without a 'strategy' with a 'type_'")
    kind = strategy["type_"]
    if kind == "synchronous":
        return 1.0, None
    if kind == "throughput":
        return None, math.inf
    if kind == "concurrent":
        return _positive(strategy.get("streams"), "strategy.streams", where), None
    if kind in _RATE_STRATEGIES:
        return None, _positive(strategy.get("rate"), "strategy.rate", where)
    return None, None          # trace replay and future kinds: no single load level to compare


def _positive(value: Any, field: str, where: str) -> float:
    if value is None:
        raise AdvisorError(f"{where}: GuideLLM field '{field}' is missing")
    v = _number(value, field, where)
    if v <= 0:
        raise AdvisorError(f"{where}: GuideLLM field '{field}' is {value!r}, not a positive number")
    return v


def _backend(entry: dict) -> dict:
    """{"kind", "model"} of the entry's backend in either layout."""
    config = entry.get("config") if isinstance(entry.get("config"), dict) else {}
    if isinstance(config.get("backend"), dict):                 # v0.4+
        return config["backend"]
    worker = entry.get("worker") if isinstance(entry.get("worker"), dict) else {}
    return {"kind": worker.get("backend_type"), "model": worker.get("backend_model")}   # v0.2–v0.3


def _mean_tokens(metrics: dict, key: str, where: str) -> int | None:
    if key not in metrics:
        return None
    summary = _successful(metrics[key], key, where)
    if summary is None:
        return None
    value = _stat(summary, ("mean",), key, where)
    return round(value) if value is not None and value >= 0.5 else None


def _iso(epoch_s: Any) -> str | None:
    if isinstance(epoch_s, bool) or not isinstance(epoch_s, (int, float)) or not math.isfinite(epoch_s) \
            or not 0 < epoch_s < 1e11:
        return None
    return datetime.fromtimestamp(epoch_s, tz=timezone.utc).isoformat(timespec="seconds")


def _text(value: Any) -> str | None:
    return value.strip() if isinstance(value, str) and value.strip() else None
