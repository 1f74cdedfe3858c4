"""SGLang's benchmark result files, JSON Lines that each run appends one line to:

- ``python -m sglang.bench_serving --output-file X.jsonl`` (sgl-project/sglang,
  ``python/sglang/bench_serving.py``). The late-2025 line (the copy the index holds with
  ``server_info``; its shape matches commit 0033168f0f58 plus what that copy adds): ``tag``,
  ``backend``, ``dataset_name``, ``request_rate`` (JSON's ``Infinity`` when unlimited, ``"trace"``
  when a trace's timestamps paced the run), ``max_concurrency``, ``sharegpt_output_len``,
  ``random_input_len``, ``random_output_len``, ``random_range_ratio``, ``server_info`` (the server's
  ``/get_server_info``: its ServerArgs — ``model_path``, ``tp_size``, ``quantization`` … —, scheduler
  info, ``internal_states`` and ``version``; null when the server is not SGLang), ``duration``,
  ``completed``, ``total_input_tokens``, ``total_output_tokens``, ``request_throughput``,
  ``input_throughput``, ``output_throughput``, ``total_throughput``, ``mean/median/std/p99`` of
  ``e2e_latency_ms``, ``ttft_ms`` and ``tpot_ms``, ``mean/median/std/p95/p99`` of ``itl_ms``,
  ``concurrency`` (the measured mean of requests in flight, not a limit), ``accept_length``,
  ``max_output_tokens_per_s``, ``max_concurrent_requests``. Mid-2025 (commit 0033168f0f58): the same
  without ``tag``, ``server_info``, ``total_throughput`` and the maxima. Mid-2024 (commit
  50a613687fe1): only ``backend``, ``dataset_name``, ``request_rate``, the token totals,
  ``mean/median_e2e_latency_ms``, ``median_ttft_ms``, ``median_itl_ms``, ``output_throughput``, the
  random-dataset arguments, ``duration`` and ``completed``.
- ``python -m sglang.bench_one_batch --result-filename X.jsonl`` (``python/sglang/bench_one_batch.py``,
  commit 009441505062; the older ``bench_latency.py`` wrote the same keys): one static batch per line,
  ``run_name``, ``batch_size``, ``input_len``, ``output_len``, ``prefill_latency`` (s),
  ``prefill_throughput`` (input_len × batch / prefill latency: the batch's total),
  ``median_decode_latency`` (s per step) and ``median_decode_throughput`` (batch / that: the batch's
  total) when output_len > 1, ``total_latency``, ``overall_throughput``. These records carry
  ``tool = "sglang bench_one_batch"``; the module's `TOOL` names the serving client, which the
  dispatcher uses only in its messages.

Neither writes the hardware; bench_one_batch writes no model either (it ran in-process with the
model given on its command line). What is absent is None and named in ``missing``.
"""

from __future__ import annotations

import re
from typing import Any

from advisor.fit.bench_formats.vllm_serve import (SGLANG_ONLY_KEYS, Fields, absent, first_object, mean_tokens,
                                                  request_lengths, runs_of, serving_records)
from advisor.fit.bench_records import BenchRecord

TOOL = "sglang bench_serving"
ONE_BATCH_TOOL = "sglang bench_one_batch"

_STAT_KEY = re.compile(r"^(mean|median|std|min|max|p\d+)_(ttft|tpot|itl|e2e_latency)_ms$")
_METRICS = {"ttft": "ttft_ms", "tpot": "tpot_ms", "itl": "itl_ms", "e2e_latency": "e2e_ms"}
_ONE_BATCH_KEYS = ("batch_size", "input_len", "output_len", "prefill_latency", "prefill_throughput")
#: bench_serving's --backend → the server it implies ("gserver", "truss": not an engine we know)
_BACKEND_RUNTIMES = {"sglang": "sglang", "sglang-native": "sglang", "sglang-oai": "sglang",
                     "sglang-oai-chat": "sglang", "vllm": "vllm", "vllm-chat": "vllm", "lmdeploy": "lmdeploy",
                     "lmdeploy-chat": "lmdeploy", "trt": "tensorrt-llm"}
_CONTEXT_FIELDS = ["hardware", "model", "quant", "gpus", "runtime", "build"]


def _is_serving(obj: dict) -> bool:
    return "output_throughput" in obj and any(k in obj for k in SGLANG_ONLY_KEYS)


def _is_one_batch(obj: dict) -> bool:
    # these three are bench_one_batch's own (bench_one_batch_server writes no prefill figures)
    return all(k in obj for k in ("batch_size", "prefill_latency", "prefill_throughput"))


def sniff(text: str, data: Any) -> bool:
    first = first_object(data)
    if first is not None:
        return _is_serving(first) or _is_one_batch(first)
    if data is not None or not text.lstrip().startswith("{"):
        return False
    # a file cut short does not parse, but still names the keys only these clients write (the
    # serving client's arguments come first, its end-to-end latency before the other statistics)
    return (any(f'"{k}"' in text for k in SGLANG_ONLY_KEYS)
            or ('"dataset_name"' in text and '"random_range_ratio"' in text)
            or all(f'"{k}"' in text for k in _ONE_BATCH_KEYS))


def parse(text: str, data: Any, source: str) -> list[BenchRecord]:
    out: list[BenchRecord] = []
    for where, obj in runs_of(text, data, source, TOOL):
        if isinstance(obj, dict) and ("prefill_throughput" in obj or "run_name" in obj):
            out.extend(_one_batch(Fields(obj, where, ONE_BATCH_TOOL)))
        else:
            out.extend(_serving(Fields(obj, where, TOOL)))
    return out


def _serving(f: Fields) -> list[BenchRecord]:
    completed = f.count("completed", required=True)
    throughput = f.number("output_throughput", required=True)
    stats = f.stats(_STAT_KEY, _METRICS)
    if not stats and completed:
        f.lack("median_ttft_ms")     # the one latency statistic every version writes
    if completed == 0:
        return []   # nothing completed: the zeros measure nothing

    paced_by_trace = isinstance(f.obj.get("request_rate"), str) and f.obj["request_rate"].strip() == "trace"
    concurrency = f.count("max_concurrency", positive=True)
    backend = f.text("backend")
    context: dict[str, Any] = {
        "runtime": _BACKEND_RUNTIMES.get(backend.lower()) if backend else None,
        "build": None, "hardware": None, "model": None, "quant": None, "gpus": None,
        "concurrency": float(concurrency) if concurrency is not None else None,
        "request_rate_rps": None if paced_by_trace else f.rate("request_rate"),
        # means over the completed requests: the file gives only totals
        "prompt_tokens": mean_tokens(f.number("total_input_tokens"), completed),
        "output_tokens": mean_tokens(f.number("total_output_tokens"), completed),
        "requests_completed": completed,
        "source": f.where,
    }
    context.update(_server(f))
    wanted = _CONTEXT_FIELDS + ["prompt_tokens", "output_tokens"]
    if "max_concurrency" not in f.obj:      # null says "no limit"; only a missing key leaves it unknown
        wanted.append("concurrency")
    if "request_rate" not in f.obj or paced_by_trace:
        wanted.append("request_rate_rps")
    context["missing"] = absent(context, wanted)
    context.update(request_lengths(f))
    return serving_records(TOOL, stats, throughput, f.number("request_throughput"), **context)


def _server(f: Fields) -> dict[str, Any]:
    """What the server reported of itself (``server_info``, SGLang servers only): its version, the
    model it loaded, the quantization it was told to apply and how many GPUs one engine spans."""
    info = f.obj.get("server_info")
    if info is None:
        return {}
    s = Fields(info, f.where, f"{f.tool} result's server_info")
    tp = s.count("tp_size", positive=True) or 1
    pp = s.count("pp_size", positive=True) or 1
    dp = s.count("dp_size", positive=True) or 1
    # data-parallel replicas each hold tp × pp GPUs, except with DP attention, where the
    # attention's replicas share the tensor-parallel group's GPUs
    replicas = 1 if info.get("enable_dp_attention") is True else dp
    out: dict[str, Any] = {"runtime": "sglang", "build": s.text("version"),
                           "model": s.text("model_path") or s.text("served_model_name"),
                           "quant": s.text("quantization")}
    if "tp_size" in info:
        out["gpus"] = tp * pp * replicas
    return out


def _one_batch(f: Fields) -> list[BenchRecord]:
    batch = f.count("batch_size", required=True, positive=True)
    prompt = f.count("input_len", required=True, positive=True)
    output = f.count("output_len", required=True, positive=True)
    prefill = f.number("prefill_throughput", required=True)
    if not prefill:
        f.fail("prefill_throughput", "is not positive (0)")
    decode_batch = f.number("median_decode_throughput")   # absent when output_len is 1
    context: dict[str, Any] = {
        "runtime": "sglang", "build": None, "hardware": None, "model": None, "quant": None, "gpus": None,
        "batch": batch, "prompt_tokens": prompt, "output_tokens": output, "source": f.where,
    }
    context["missing"] = absent(context, _CONTEXT_FIELDS)
    out = [BenchRecord(tool=ONE_BATCH_TOOL, metric="prefill_tok_s", value=prefill, **context)]
    if decode_batch:
        out.append(BenchRecord(tool=ONE_BATCH_TOOL, metric="batch_decode_tok_s", value=decode_batch,
                               stat="median", **context))
        # every sequence of a static batch advances one token per step
        out.append(BenchRecord(tool=ONE_BATCH_TOOL, metric="decode_tok_s", value=decode_batch / batch,
                               stat="median", **context))
    return out
