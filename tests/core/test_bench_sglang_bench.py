"""SGLang's bench_serving and bench_one_batch JSON Lines read into records."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from advisor.data.errors import AdvisorError
from advisor.fit.bench_formats import sglang_bench
from advisor.fit.bench_results import parse_results, read_results, structured

DATA = Path(__file__).resolve().parents[1] / "data" / "bench_results"


def _by_stat(records):
    return {(r.metric, r.stat): r for r in records}


def _lines(name: str) -> list[dict]:
    return [json.loads(ln) for ln in (DATA / name).read_text().splitlines() if ln.strip()]


def test_bench_serving_with_server_info():
    tool, records = read_results(DATA / "sglang_bench.jsonl")
    raw = _lines("sglang_bench.jsonl")
    assert tool == "sglang bench_serving"
    assert len(records) == 38
    for line, conc in ((1, 16.0), (2, 64.0)):
        run = [r for r in records if r.source == f"sglang_bench.jsonl, line {line}"]
        got = _by_stat(run)
        d = raw[line - 1]
        assert len(run) == 19
        assert got[("e2e_ms", "mean")].value == d["mean_e2e_latency_ms"]
        assert got[("e2e_ms", "p99")].value == d["p99_e2e_latency_ms"]
        assert got[("ttft_ms", "median")].value == d["median_ttft_ms"]
        assert got[("itl_ms", "p95")].value == d["p95_itl_ms"]
        assert got[("throughput_tok_s", "mean")].value == d["output_throughput"]
        assert got[("request_throughput_rps", "mean")].value == d["request_throughput"]
        assert {r.concurrency for r in run} == {conc}
    r = records[0]
    assert (r.metric, r.stat, r.value) == ("ttft_ms", "mean", 274.383)
    assert r.runtime == "sglang" and r.build == "0.5.3"
    assert r.model == "meta-llama/Llama-3.3-70B-Instruct" and r.quant == "fp8" and r.gpus == 4
    assert math.isinf(r.request_rate_rps)
    assert (r.prompt_tokens, r.output_tokens, r.requests_completed) == (2048, 512, 64)
    assert r.hardware is None and r.missing == ("hardware",)
    assert r.batch is None and r.measured_at is None


def test_mid_2024_single_line():
    tool, records = read_results(DATA / "sglang_bench_legacy.jsonl")
    assert tool == "sglang bench_serving"
    got = _by_stat(records)
    assert sorted(got) == sorted([("ttft_ms", "median"), ("itl_ms", "median"), ("e2e_ms", "mean"),
                                  ("e2e_ms", "median"), ("throughput_tok_s", "mean")])
    assert got[("itl_ms", "median")].value == 14.1673
    r = records[0]
    assert r.request_rate_rps == 8.0 and r.concurrency is None and r.runtime == "sglang"
    assert (r.prompt_tokens, r.output_tokens, r.requests_completed) == (522, 521, 1000)
    assert r.source == "sglang_bench_legacy.jsonl"
    assert {"hardware", "model", "build", "concurrency"} <= set(r.missing)


def test_bench_one_batch():
    tool, records = read_results(DATA / "sglang_bench_one_batch.jsonl")
    assert tool == "sglang bench_serving"              # the module's name; each record names its client
    assert {r.tool for r in records} == {"sglang bench_one_batch"}
    assert [(r.metric, r.stat, r.batch) for r in records] == [
        ("prefill_tok_s", "mean", 1), ("batch_decode_tok_s", "median", 1), ("decode_tok_s", "median", 1),
        ("prefill_tok_s", "mean", 16), ("batch_decode_tok_s", "median", 16), ("decode_tok_s", "median", 16),
        ("prefill_tok_s", "mean", 16)]
    assert records[3].value == 29936.0497                 # the batch's total
    assert records[4].value == 1619.4332
    assert records[5].value == pytest.approx(1619.4332 / 16)   # per sequence
    assert (records[0].prompt_tokens, records[0].output_tokens) == (1024, 128)
    assert records[6].output_tokens == 1 and records[6].source == "sglang_bench_one_batch.jsonl, line 3"
    assert records[0].runtime == "sglang"
    assert records[0].missing == ("hardware", "model", "quant", "gpus", "build")


def _variant(**changes) -> str:
    raw = _lines("sglang_bench.jsonl")[0]
    for k, v in changes.items():
        if v is ...:
            raw.pop(k)
        else:
            raw[k] = v
    return json.dumps(raw)


def _server(**changes) -> dict:
    info = dict(_lines("sglang_bench.jsonl")[0]["server_info"])
    info.update(changes)
    return info


def test_gpus_from_parallelism():
    assert parse_results(_variant(server_info=_server(dp_size=2)), "r.jsonl")[1][0].gpus == 8
    assert parse_results(_variant(server_info=_server(dp_size=2, enable_dp_attention=True)),
                         "r.jsonl")[1][0].gpus == 4
    assert parse_results(_variant(server_info=_server(pp_size=2)), "r.jsonl")[1][0].gpus == 8


def test_without_server_info_the_backend_names_the_runtime():
    r = parse_results(_variant(server_info=None), "r.jsonl")[1][0]
    assert r.runtime == "sglang" and r.build is None and r.model is None
    assert {"model", "build", "quant", "gpus"} <= set(r.missing)
    r = parse_results(_variant(server_info=None, backend="vllm-chat"), "r.jsonl")[1][0]
    assert r.runtime == "vllm"
    r = parse_results(_variant(server_info=None, backend="truss"), "r.jsonl")[1][0]
    assert r.runtime is None and "runtime" in r.missing


def test_trace_paced_run_has_no_rate():
    r = parse_results(_variant(request_rate="trace", max_concurrency=None), "r.jsonl")[1][0]
    assert r.request_rate_rps is None and "request_rate_rps" in r.missing
    assert r.concurrency is None and "concurrency" not in r.missing


def _one_line_error(text: str, *words: str, source: str = "bad.jsonl") -> None:
    with pytest.raises(AdvisorError) as exc:
        parse_results(text, source)
    message = str(exc.value)
    assert "\n" not in message and source in message
    for w in words:
        assert w in message


def _one_batch(**changes) -> str:
    raw = _lines("sglang_bench_one_batch.jsonl")[1]
    for k, v in changes.items():
        if v is ...:
            raw.pop(k)
        else:
            raw[k] = v
    return json.dumps(raw)


@pytest.mark.parametrize("text, words", [
    (_variant(completed=...), ("'completed'",)),
    (_variant(output_throughput="fast"), ("'output_throughput'", "not a number")),
    (_variant(mean_ttft_ms=float("nan")), ("'mean_ttft_ms'", "finite")),
    (_variant(p99_itl_ms=-1), ("'p99_itl_ms'", "negative")),
    (_variant(max_concurrency=2.5), ("'max_concurrency'", "whole")),
    (_variant(request_rate=-1), ("'request_rate'",)),
    (_variant(server_info="yes"), ("server_info",)),
    (_variant(server_info=_server(tp_size="4")), ("'tp_size'", "server_info")),
    (_variant(server_info=_server(version=5)), ("'version'", "not a string")),
    (json.dumps({k: v for k, v in _lines("sglang_bench_legacy.jsonl")[0].items()
                 if not k.endswith("_ttft_ms") and not k.endswith("_itl_ms") and "e2e" not in k}
                | {"mean_e2e_latency_ms": 0}), ("'median_ttft_ms'",)),
    (_one_batch(batch_size=0), ("'batch_size'", "positive", "sglang bench_one_batch")),
    (_one_batch(input_len=...), ("'input_len'",)),
    (_one_batch(prefill_throughput="fast"), ("'prefill_throughput'",)),
    (_one_batch(prefill_throughput=0), ("'prefill_throughput'",)),
    (_one_batch(median_decode_throughput=float("inf")), ("'median_decode_throughput'", "finite")),
])
def test_malformed_fields(text, words):
    _one_line_error(text, *words)


def test_cut_short_names_the_line():
    text = (DATA / "sglang_bench.jsonl").read_text()
    _one_line_error(text[:-300], "line 2", "not valid JSON")
    _one_line_error(text[:260], "not valid JSON")
    text = (DATA / "sglang_bench_one_batch.jsonl").read_text()
    _one_line_error(text[:-20], "line 3", "not valid JSON")


def test_a_line_of_another_shape_names_its_line():
    text = (DATA / "sglang_bench_one_batch.jsonl").read_text() + json.dumps({"completed": 1}) + "\n"
    _one_line_error(text, "line 4", "'output_throughput'")


def test_empty_result_list():
    with pytest.raises(AdvisorError, match="empty"):
        sglang_bench.parse("[]", [], "empty.jsonl")
    with pytest.raises(AdvisorError):
        parse_results("[]", "empty.jsonl")
