"""GenAI-Perf ``profile_export_genai_perf.json`` and AIPerf ``profile_export_aiperf.json`` read into records
(advisor.fit.bench_formats.genai_perf); fixtures and their sources: tests/data/bench_results/genai_perf.md."""

from __future__ import annotations

import copy
import json
import math
from pathlib import Path

import pytest

from advisor.data.errors import AdvisorError
from advisor.fit.bench_formats import genai_perf
from advisor.fit.bench_results import parse_results, read_results, read_text, structured

DATA = Path(__file__).resolve().parents[1] / "data" / "bench_results"
GENAI = DATA / "genai_perf_profile_export_genai_perf.json"
LEGACY = DATA / "genai_perf_legacy_args_genai_perf.json"
AIPERF = DATA / "genai_perf_aiperf_profile_export_aiperf.json"


def _by(records):
    return {(r.metric, r.stat): r for r in records}


def test_genai_perf_config_layout():
    tool, records = read_results(GENAI)
    assert tool == genai_perf.TOOL
    got = _by(records)
    assert {r.tool for r in records} == {"genai-perf"}
    assert got["ttft_ms", "mean"].value == pytest.approx(84.0151)
    assert got["ttft_ms", "median"].value == pytest.approx(84.3575)
    assert got["ttft_ms", "p99"].value == pytest.approx(110.4148)
    # GenAI-Perf's ITL is (latency − TTFT) / (OSL − 1) per request: TPOT by METRICS' definition
    assert got["tpot_ms", "p90"].value == pytest.approx(11.9318)
    assert not any(r.metric == "itl_ms" for r in records)
    assert got["e2e_ms", "p95"].value == pytest.approx(1649.423)
    assert got["throughput_tok_s", "mean"].value == pytest.approx(674.0133)
    assert got["request_throughput_rps", "mean"].value == pytest.approx(5.2614)
    # run-level metrics carry only an average
    assert {s for m, s in got if m == "throughput_tok_s"} == {"mean"}
    assert {s for m, s in got if m == "ttft_ms"} == {"mean", "median", "p90", "p95", "p99"}
    assert len(records) == 3 * 5 + 2
    r = records[0]
    assert r.model == "meta-llama/Llama-3.1-8B-Instruct"
    assert r.concurrency == 8 and r.request_rate_rps is None
    assert (r.prompt_tokens, r.output_tokens) == (512, 128)
    assert r.requests_completed == 400
    assert r.hardware is None and "hardware" in r.missing
    assert r.runtime is None and "runtime" in r.missing     # an OpenAI endpoint: the server is unnamed
    assert r.source == GENAI.name


def test_genai_perf_argument_layout_with_request_rate_and_triton_backend():
    tool, records = read_results(LEGACY)
    assert tool == genai_perf.TOOL
    got = _by(records)
    assert {r.tool for r in records} == {"genai-perf"}
    assert got["tpot_ms", "mean"].value == pytest.approx(8.4161)
    assert got["e2e_ms", "median"].value == pytest.approx(2189.0312)
    assert got["throughput_tok_s", "mean"].value == pytest.approx(957.8224)
    r = records[0]
    assert r.model == "llama3_8b_vllm"
    assert r.request_rate_rps == 4.0 and r.concurrency is None
    assert r.runtime == "vllm"                     # Triton's vLLM backend
    assert (r.prompt_tokens, r.output_tokens) == (550, 256)
    assert r.missing == ("hardware",)


def test_aiperf_export():
    tool, records = read_results(AIPERF)
    assert tool == genai_perf.TOOL
    got = _by(records)
    assert {r.tool for r in records} == {"aiperf"}
    assert got["ttft_ms", "p95"].value == pytest.approx(179.6066)
    assert got["tpot_ms", "mean"].value == pytest.approx(14.4858)
    # inter-chunk latency: the gaps between streamed chunks, vLLM's ITL
    assert got["itl_ms", "median"].value == pytest.approx(14.5718)
    assert got["e2e_ms", "p99"].value == pytest.approx(3502.055)
    assert got["throughput_tok_s", "mean"].value == pytest.approx(1053.0957)
    assert got["request_throughput_rps", "mean"].value == pytest.approx(5.2658)
    r = records[0]
    assert r.model == "Qwen/Qwen3-8B"
    assert r.concurrency == 16 and r.request_rate_rps is None
    assert (r.prompt_tokens, r.output_tokens) == (1000, 200)
    assert r.requests_completed == 800
    assert r.measured_at == "2025-10-08T14:02:11.524613"
    assert "hardware" in r.missing


def _doc(path: Path) -> dict:
    return json.loads(path.read_text())


def _parse(doc, name="x.json"):
    return parse_results(json.dumps(doc), name)


def test_units_are_converted_from_the_unit_field():
    doc = _doc(GENAI)
    ttft = doc["time_to_first_token"]
    ns = {k: (v * 1e6 if isinstance(v, float) and k != "unit" else v) for k, v in ttft.items()}
    doc["time_to_first_token"] = {**ns, "unit": "ns"}
    doc["request_latency"] = {k: (v / 1e3 if k != "unit" else "sec")
                              for k, v in doc["request_latency"].items()}
    got = _by(_parse(doc)[1])
    assert got["ttft_ms", "mean"].value == pytest.approx(84.0151)
    assert got["e2e_ms", "p95"].value == pytest.approx(1649.423)


def test_request_rate_wins_over_concurrency_and_rate_stimulus():
    doc = _doc(AIPERF)
    doc["input_config"]["loadgen"] = {"concurrency": 32, "request_rate": 10.0}
    r = _parse(doc)[1][0]
    assert (r.request_rate_rps, r.concurrency) == (10.0, None)
    doc = _doc(GENAI)
    doc["input_config"]["perf_analyzer"]["stimulus"] = {"request_rate": 2.5}
    r = _parse(doc)[1][0]
    assert (r.request_rate_rps, r.concurrency) == (2.5, None)


def test_without_input_config_the_load_and_model_are_named_missing():
    doc = _doc(GENAI)
    del doc["input_config"]
    r = _parse(doc)[1][0]
    assert r.tool == "genai-perf" and r.model is None and r.concurrency is None
    assert {"hardware", "model", "concurrency"} <= set(r.missing)


def test_zero_is_not_measured():
    doc = _doc(GENAI)
    doc["time_to_first_token"] = {"unit": "ms", "avg": 0.0, "p50": 0.0, "p90": 0.0}
    records = _parse(doc)[1]
    assert not any(r.metric == "ttft_ms" for r in records)


def _broken(mutate, path=GENAI):
    doc = _doc(path)
    mutate(doc)
    with pytest.raises(AdvisorError) as exc:
        _parse(doc, "broken.json")
    message = str(exc.value)
    assert "\n" not in message and message.startswith("broken.json")
    return message


def test_malformed_variants_name_the_field():
    assert "request_latency" in _broken(lambda d: d.pop("request_latency"))
    assert "avg" in _broken(lambda d: d["time_to_first_token"].pop("avg"))
    assert "unit" in _broken(lambda d: d["time_to_first_token"].pop("unit"))
    assert "time_to_first_token.p90" in _broken(lambda d: d["time_to_first_token"].update(p90="12"))
    assert "inter_token_latency.avg" in _broken(lambda d: d["inter_token_latency"].update(avg=-1.0))
    assert "request_throughput" in _broken(lambda d: d.update(request_throughput=[1, 2]))
    assert "input_config" in _broken(lambda d: d.update(input_config="concurrency=8"))
    assert "concurrency" in _broken(lambda d: d["input_config"]["perf_analyzer"].update(
        stimulus={"concurrency": 0}))
    assert "concurrency" in _broken(lambda d: d["input_config"]["loadgen"].update(concurrency="16"),
                                    AIPERF)


def test_unknown_unit_is_refused():
    message = _broken(lambda d: d["request_latency"].update(unit="fortnights"))
    assert "request_latency" in message and "fortnights" in message
    assert "tokens/sec/user" in _broken(
        lambda d: d["output_token_throughput"].update(unit="tokens/sec/user"))


def test_nan_is_refused():
    text = GENAI.read_text().replace('"avg": 84.0151', '"avg": NaN', 1)
    with pytest.raises(AdvisorError) as exc:
        parse_results(text, "nan.json")
    assert "time_to_first_token.avg" in str(exc.value) and "\n" not in str(exc.value)


def test_cut_short_is_claimed_and_refused_in_one_line():
    text = GENAI.read_text()[:1500]
    assert genai_perf.sniff(text, None)
    with pytest.raises(AdvisorError) as exc:
        genai_perf.parse(text, None, "cut.json")
    assert str(exc.value).startswith("cut.json") and "\n" not in str(exc.value)


def test_no_metric_objects_is_not_claimed():
    assert not genai_perf.sniff("{}", {})
    assert not genai_perf.sniff('{"mean_ttft_ms": 12.0}', {"mean_ttft_ms": 12.0})
    assert not genai_perf.sniff("[]", [])


def _data(path: Path):
    text = read_text(path)
    try:
        return text, structured(text, path.name)
    except ValueError:          # JSON Lines the dispatcher could not split: sniffs see no data
        return text, None


def test_fixture_is_not_mutated_by_parse():
    doc = _doc(AIPERF)
    before = copy.deepcopy(doc)
    genai_perf.parse(json.dumps(doc), doc, "x.json")
    assert doc == before and math.isfinite(doc["request_throughput"]["avg"])
