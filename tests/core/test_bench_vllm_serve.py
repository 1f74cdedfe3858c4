"""`vllm bench serve --save-result` files (and the older benchmark_serving.py ones) read into records."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from advisor.data.errors import AdvisorError
from advisor.fit.bench_formats import vllm_serve
from advisor.fit.bench_results import parse_results, read_results, structured

DATA = Path(__file__).resolve().parents[1] / "data" / "bench_results"


def _by_stat(records):
    return {(r.metric, r.stat): r for r in records}


def _fixture(name: str) -> dict:
    return json.loads((DATA / name).read_text())


def test_current_save_result():
    tool, records = read_results(DATA / "vllm_serve.json")
    raw = _fixture("vllm_serve.json")
    assert tool == "vllm bench serve"
    got = _by_stat(records)
    # --percentile-metrics ttft,tpot,itl,e2el --metric-percentiles 90,99: 4 metrics × 5 stats + 2 throughputs
    assert len(records) == 22
    for metric, key in (("ttft_ms", "ttft"), ("tpot_ms", "tpot"), ("itl_ms", "itl"), ("e2e_ms", "e2el")):
        for stat in ("mean", "median", "std", "p90", "p99"):
            assert got[(metric, stat)].value == raw[f"{stat}_{key}_ms"]
    assert got[("throughput_tok_s", "mean")].value == raw["output_throughput"] == 377.402
    assert got[("request_throughput_rps", "mean")].value == raw["request_throughput"]
    r = records[0]
    assert (r.metric, r.stat, r.value) == ("ttft_ms", "mean", 89.5888)
    assert r.model == "meta-llama/Llama-3.1-8B-Instruct"
    assert r.concurrency == 8.0 and math.isinf(r.request_rate_rps)
    assert (r.prompt_tokens, r.output_tokens) == (1024, 256)      # 32768 / 32, 8192 / 32
    assert (r.requests_completed, r.requests_failed) == (32, 0)
    assert r.measured_at == "2025-06-14T10:15:30"
    assert r.source == "vllm_serve.json"
    # backend "openai" says only that the server speaks OpenAI's API
    assert r.runtime is None and r.build is None and r.hardware is None and r.batch is None
    assert r.missing == ("hardware", "quant", "gpus", "runtime", "build")


def test_legacy_benchmark_serving():
    tool, records = read_results(DATA / "vllm_serve_legacy.json")
    assert tool == "vllm bench serve"
    got = _by_stat(records)
    assert sorted(got) == sorted([(m, s) for m in ("ttft_ms", "tpot_ms") for s in ("mean", "median", "p99")]
                                 + [("throughput_tok_s", "mean"), ("request_throughput_rps", "mean")])
    assert got[("request_throughput_rps", "mean")].value == 3.0056     # from "request_inthroughput"
    assert got[("tpot_ms", "p99")].value == 28.7929
    r = records[0]
    assert r.runtime == "vllm" and r.build is None                     # "version": "N/A"
    assert r.request_rate_rps == 4.0 and r.concurrency is None
    assert (r.prompt_tokens, r.output_tokens, r.requests_completed) == (263, 221, 100)
    assert r.requests_failed is None
    assert "concurrency" in r.missing and "hardware" in r.missing and "request_rate_rps" not in r.missing


def test_appended_runs_are_one_record_set_each():
    tool, records = read_results(DATA / "vllm_serve_append.jsonl")
    assert tool == "vllm bench serve"
    assert len(records) == 28
    first = [r for r in records if r.source == "vllm_serve_append.jsonl, line 1"]
    second = [r for r in records if r.source == "vllm_serve_append.jsonl, line 2"]
    assert len(first) == len(second) == 14
    assert {r.concurrency for r in first} == {1.0} and {r.concurrency for r in second} == {4.0}
    assert {(r.runtime, r.build, r.model) for r in records} == {("vllm", "0.9.1", "Qwen/Qwen2.5-7B-Instruct")}
    assert _by_stat(second)[("throughput_tok_s", "mean")].value == 233.503
    assert second[0].measured_at == "2025-07-04T09:00:04"
    assert {s for (m, s) in _by_stat(first)} == {"mean", "median", "std", "p99"}


def _variant(**changes) -> str:
    raw = _fixture("vllm_serve.json")
    for k, v in changes.items():
        if v is ...:
            raw.pop(k)
        else:
            raw[k] = v
    return json.dumps(raw)


def test_rate_and_version_variants():
    _, records = parse_results(_variant(request_rate=2.5, max_concurrency=None, version="v0.4.0"), "r.json")
    r = records[0]
    assert r.request_rate_rps == 2.5 and r.concurrency is None and r.build == "v0.4.0"
    assert "concurrency" not in r.missing            # null: no limit, said by the file
    _, records = parse_results(_variant(request_rate=float("inf")).replace('"inf"', "Infinity"), "r.json")
    assert math.isinf(records[0].request_rate_rps)
    _, records = parse_results(_variant(request_rate=..., max_concurrency=...), "r.json")
    assert {"concurrency", "request_rate_rps"} <= set(records[0].missing)


def test_zero_statistics_are_not_measurements():
    # vLLM writes 0 for what it could not measure (TTFT of a non-streaming backend)
    _, records = parse_results(_variant(mean_ttft_ms=0, median_ttft_ms=0.0), "r.json")
    got = _by_stat(records)
    assert ("ttft_ms", "mean") not in got and ("ttft_ms", "median") not in got and ("ttft_ms", "p99") in got


def test_percentiles_without_a_name_are_skipped():
    _, records = parse_results(_variant(**{"p50_ttft_ms": 90.0, "p99.9_ttft_ms": 120.0}), "r.json")
    assert {r.stat for r in records if r.metric == "ttft_ms"} == {"mean", "median", "std", "p90", "p99"}


def test_every_request_failed_is_no_measurement():
    with pytest.raises(AdvisorError, match="no measurements"):
        parse_results(_variant(completed=0, failed=32), "r.json")


def _one_line_error(text: str, *words: str, source: str = "bad.json") -> None:
    with pytest.raises(AdvisorError) as exc:
        parse_results(text, source)
    message = str(exc.value)
    assert "\n" not in message and source in message
    for w in words:
        assert w in message


@pytest.mark.parametrize("text, words", [
    (_variant(completed=...), ("'completed'",)),
    (_variant(output_throughput=...), ("'output_throughput'",)),
    (_variant(output_throughput="fast"), ("'output_throughput'", "not a number")),
    (_variant(completed=True), ("'completed'",)),
    (_variant(completed=31.5), ("'completed'", "whole")),
    (_variant(mean_ttft_ms=float("nan")), ("'mean_ttft_ms'", "finite")),
    (_variant(p99_itl_ms=-3.0), ("'p99_itl_ms'", "negative")),
    (_variant(max_concurrency="8"), ("'max_concurrency'",)),
    (_variant(max_concurrency=0), ("'max_concurrency'", "positive")),
    (_variant(request_rate="fast"), ("'request_rate'",)),
    (_variant(request_rate=0), ("'request_rate'",)),
    (_variant(model_id=["a"]), ("'model_id'", "not a string")),
    (json.dumps({k: v for k, v in _fixture("vllm_serve.json").items() if not k.endswith("_ms")}),
     ("'mean_ttft_ms'",)),
])
def test_malformed_fields(text, words):
    _one_line_error(text, *words)


def test_cut_short():
    text = (DATA / "vllm_serve.json").read_text()
    _one_line_error(text[:300], "not valid JSON")
    _one_line_error(text[: len(text) // 2], "not valid JSON")


def test_appended_file_cut_short_names_its_line():
    text = (DATA / "vllm_serve_append.jsonl").read_text()
    _one_line_error(text[:-40], "line 2", "not valid JSON", source="runs.jsonl")


def test_a_later_line_of_another_shape_names_its_line():
    lines = (DATA / "vllm_serve_append.jsonl").read_text().splitlines()
    text = lines[0] + "\n" + json.dumps({"backend": "vllm", "completed": 3}) + "\n"
    _one_line_error(text, "line 2", "'output_throughput'", source="runs.jsonl")


def test_empty_result_list():
    with pytest.raises(AdvisorError, match="empty"):
        vllm_serve.parse("[]", [], "empty.json")
    with pytest.raises(AdvisorError):
        parse_results("[]", "empty.json")


def test_per_request_lengths_are_read_where_the_client_saved_them():
    """`--save-detailed` (vLLM) and `--output-details` (SGLang) add each request's prompt and output
    tokens: the records carry the completed ones (a failed request's output is 0), their JSON the
    count, not thousands of numbers; a file without them has none."""
    raw = _fixture("vllm_serve.json")
    inputs = [1024] * 31 + [900]
    outputs = [16 * (i + 1) for i in range(31)] + [0]          # the last request failed
    detailed = {**raw, "input_lens": inputs, "output_lens": outputs}
    records = vllm_serve.parse(json.dumps(detailed), detailed, "d.json")
    r = records[0]
    assert r.output_lengths == tuple(outputs[:31]) and r.prompt_lengths == tuple(inputs[:31])
    d = r.to_dict()
    assert d["requests_with_lengths"] == 31 and "output_lengths" not in d
    assert vllm_serve.parse(json.dumps(raw), raw, "s.json")[0].output_lengths == ()


@pytest.mark.parametrize("lists, words", [
    ({"input_lens": [10, 20], "output_lens": "many"}, ("'output_lens'", "token counts")),
    ({"input_lens": [10, -1], "output_lens": [5, 5]}, ("'input_lens'", "token counts")),
    ({"input_lens": [10, 2.5], "output_lens": [5, 5]}, ("'input_lens'", "token counts")),
    ({"input_lens": [10, 20, 30], "output_lens": [5, 5]}, ("'output_lens'", "2 entries", "3")),
])
def test_malformed_per_request_lengths(lists, words):
    _one_line_error(json.dumps({**_fixture("vllm_serve.json"), **lists}), *words)
