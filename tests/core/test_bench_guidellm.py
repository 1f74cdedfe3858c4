"""GuideLLM ``benchmarks.json`` reports read into records (advisor.fit.bench_formats.guidellm); fixtures
and their sources: tests/data/bench_results/guidellm.md."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest

from advisor.data.errors import AdvisorError
from advisor.fit.bench_formats import guidellm
from advisor.fit.bench_results import parse_results, read_results, read_text, structured

DATA = Path(__file__).resolve().parents[1] / "data" / "bench_results"
V03 = DATA / "guidellm_v03_stripped.json"       # GuideLLM's own test asset (a real run)
V05 = DATA / "guidellm_v05_concurrent.json"
V07 = DATA / "guidellm_v07_sweep.json"


def _by(records):
    return {(r.metric, r.stat): r for r in records}


def _benchmark(records, i):
    return [r for r in records if r.source.endswith(f"benchmark {i}")]


def test_v03_report_from_guidellms_own_tests():
    tool, records = read_results(V03)
    assert tool == "guidellm"
    got = _by(records)
    assert got["ttft_ms", "mean"].value == pytest.approx(16.792535781860348)
    assert got["ttft_ms", "median"].value == pytest.approx(16.38054847717285)
    assert got["ttft_ms", "p99"].value == pytest.approx(21.281957626342773)
    assert got["itl_ms", "p90"].value == pytest.approx(4.973544849185493)
    # request_latency is in seconds in the file
    assert got["e2e_ms", "mean"].value == pytest.approx(644.4743664368339)
    assert got["e2e_ms", "p95"].value == pytest.approx(656.728982925415)
    # aggregate rates: the mean only
    assert got["throughput_tok_s", "mean"].value == pytest.approx(198.13346751788123)
    assert got["request_throughput_rps", "mean"].value == pytest.approx(1.5481806532737452)
    assert {s for m, s in got if m in ("throughput_tok_s", "request_throughput_rps")} == {"mean"}
    # GuideLLM's TPOT includes the first token: not read
    assert not any(r.metric == "tpot_ms" for r in records)
    assert len(records) == 3 * 5 + 2
    r = records[0]
    assert r.tool == "guidellm" and r.model == "example_model"
    assert r.concurrency == 1 and r.request_rate_rps is None          # synchronous
    assert (r.prompt_tokens, r.output_tokens) == (257, 128)
    assert (r.requests_completed, r.requests_failed) == (46, 0)
    assert r.measured_at == "2025-06-05T20:59:28+00:00"
    assert r.hardware is None and "hardware" in r.missing
    assert r.source == f"{V03.name}, benchmark 1"


def test_v05_concurrent_streams():
    tool, records = read_results(V05)
    assert tool == "guidellm"
    first, second = _by(_benchmark(records, 1)), _by(_benchmark(records, 2))
    assert len(first) == len(second) == 17
    assert first["ttft_ms", "p90"].value == pytest.approx(43.45747568897065)
    assert second["e2e_ms", "mean"].value == pytest.approx(1847.6806552159772)
    assert second["throughput_tok_s", "mean"].value == pytest.approx(1107.2166666666667)
    r1, r2 = first["ttft_ms", "mean"], second["ttft_ms", "mean"]
    assert (r1.concurrency, r2.concurrency) == (4, 16)
    assert r1.model == "Qwen/Qwen2.5-7B-Instruct"
    assert (r1.prompt_tokens, r1.output_tokens) == (1024, 128)
    assert r2.requests_completed == 1038
    assert "runtime" in r1.missing                  # openai_http: the server is not named


def test_v07_sweep_load_levels():
    tool, records = read_results(V07)
    assert tool == "guidellm"
    loads = [(_benchmark(records, i)[0].concurrency, _benchmark(records, i)[0].request_rate_rps)
             for i in range(1, 5)]
    assert loads == [(1.0, None), (None, math.inf), (None, 3.5), (None, 6.2)]
    third = _by(_benchmark(records, 3))
    assert third["request_throughput_rps", "mean"].value == pytest.approx(3.5)
    assert third["throughput_tok_s", "mean"].value == pytest.approx(895.4333333333333)
    assert third["itl_ms", "mean"].value == pytest.approx(9.578544000051004)
    assert third["e2e_ms", "median"].value == pytest.approx(2477.415972696328)
    r = third["ttft_ms", "mean"]
    assert r.model == "meta-llama/Llama-3.1-8B-Instruct"
    assert r.hardware == "NVIDIA_H100_80GB_HBM3"    # the report's --label gpu=…
    assert "hardware" not in r.missing
    assert r.measured_at.startswith("2026-08-")


def _doc(path: Path) -> dict:
    return json.loads(path.read_text())


def _parse(doc, name="b.json"):
    return parse_results(json.dumps(doc), name)


def test_strategies_map_to_loads():
    doc = _doc(V07)
    strategies = [{"type_": "poisson", "rate": 2.0}, {"type_": "concurrent", "streams": 8},
                  {"type_": "trace"}, {"type_": "synchronous"}]
    for bench, strategy in zip(doc["benchmarks"], strategies):
        bench["config"]["strategy"] = strategy
    records = _parse(doc)[1]
    loads = [(_benchmark(records, i)[0].concurrency, _benchmark(records, i)[0].request_rate_rps)
             for i in range(1, 5)]
    assert loads == [(None, 2.0), (8, None), (None, None), (1, None)]
    assert "concurrency" in _benchmark(records, 3)[0].missing


def test_vllm_python_backend_names_the_runtime():
    doc = _doc(V07)
    for bench in doc["benchmarks"]:
        bench["config"]["backend"] = {"kind": "vllm_python", "model": "Qwen/Qwen3-8B"}
    r = _parse(doc)[1][0]
    assert (r.runtime, r.model) == ("vllm", "Qwen/Qwen3-8B") and "runtime" not in r.missing


def test_model_falls_back_to_the_report_args():
    doc = _doc(V05)
    for bench in doc["benchmarks"]:
        del bench["config"]["backend"]["model"]
    assert _parse(doc)[1][0].model == "Qwen/Qwen2.5-7B-Instruct"


def test_distribution_without_successful_samples_gives_no_record():
    doc = _doc(V07)
    ttft = doc["benchmarks"][0]["metrics"]["time_to_first_token_ms"]["successful"]
    ttft.update(count=0, mean=0.0, median=0.0)
    records = _benchmark(_parse(doc)[1], 1)
    assert not any(r.metric == "ttft_ms" for r in records)


def test_v01_report_is_refused_with_a_reason():
    doc = {"benchmarks": [{"benchmarks": [{"mode": "synchronous", "rate": None, "results": [],
                                            "errors": [], "concurrencies": []}],
                           "args": {"target": "http://localhost:8000", "model": "m"}}]}
    with pytest.raises(AdvisorError, match="0.1"):
        _parse(doc)


def _broken(mutate, path=V07):
    doc = _doc(path)
    mutate(doc)
    with pytest.raises(AdvisorError) as exc:
        _parse(doc, "broken.json")
    message = str(exc.value)
    assert "\n" not in message and message.startswith("broken.json")
    return message


def _metric(doc, key, i=0):
    return doc["benchmarks"][i]["metrics"][key]


def test_malformed_variants_name_the_field():
    assert "request_latency" in _broken(lambda d: d["benchmarks"][0]["metrics"].pop("request_latency"))
    assert "metrics" in _broken(lambda d: d["benchmarks"][1].pop("metrics"))
    assert "successful" in _broken(lambda d: _metric(d, "time_to_first_token_ms").pop("successful"))
    assert "time_to_first_token_ms.successful.mean" in _broken(
        lambda d: _metric(d, "time_to_first_token_ms")["successful"].pop("mean"))
    assert "inter_token_latency_ms.successful.percentiles.p90" in _broken(
        lambda d: _metric(d, "inter_token_latency_ms")["successful"]["percentiles"].update(p90="9.1"))
    assert "request_latency.successful.mean" in _broken(
        lambda d: _metric(d, "request_latency")["successful"].update(mean=-0.5))
    assert "strategy" in _broken(lambda d: d["benchmarks"][2]["config"].pop("strategy"))
    assert "strategy.rate" in _broken(lambda d: d["benchmarks"][2]["config"]["strategy"].pop("rate"))
    assert "strategy.streams" in _broken(
        lambda d: d["benchmarks"][0]["config"]["strategy"].update(streams=0),
        V05)
    assert "benchmark 2" in _broken(lambda d: d["benchmarks"].__setitem__(1, "not an object"))
    assert "benchmarks" in _broken(lambda d: d.update(benchmarks=[]))


def test_nan_is_refused():
    text = V03.read_text().replace('"mean": 16.792535781860348', '"mean": NaN', 1)
    with pytest.raises(AdvisorError) as exc:
        parse_results(text, "nan.json")
    assert "time_to_first_token_ms.successful.mean" in str(exc.value) and "\n" not in str(exc.value)


def test_cut_short_is_claimed_and_refused_in_one_line():
    text = V07.read_text()[:40_000]
    assert guidellm.sniff(text, None)
    with pytest.raises(AdvisorError) as exc:
        guidellm.parse(text, None, "cut.json")
    assert str(exc.value).startswith("cut.json") and "\n" not in str(exc.value)


def test_unrelated_benchmarks_lists_are_not_claimed():
    assert not guidellm.sniff("{}", {})
    assert not guidellm.sniff("", {"benchmarks": []})
    assert not guidellm.sniff("", {"benchmarks": [{"name": "x", "value": 1}]})
    assert not guidellm.sniff("", [{"benchmarks": []}])


def _data(path: Path):
    text = read_text(path)
    try:
        return text, structured(text, path.name)
    except ValueError:          # JSON Lines the dispatcher could not split: sniffs see no data
        return text, None
