"""Issue 27: `advisor measure` against a server on loopback. The server here is a small stand-in
(stdlib http.server streaming OpenAI-style events with set delays), so each failure mode can be
produced on purpose: refused port, HTTP errors mid-run, a stream of nothing, a stream that never
ends, malformed events. Every request goes to 127.0.0.1 and every run is bounded."""

from __future__ import annotations

import json
import socket
import time

import pytest

from advisor.cli.main import main
from advisor.data.errors import AdvisorError
from advisor.fit.bench_results import read_results
from advisor.fit.endpoint import measure
from tests.fake_openai import FakeServer


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_a_healthy_server_is_measured_per_concurrency(tmp_path, capsys):
    with FakeServer(first_s=0.05, gap_s=0.004) as srv:
        m = measure(srv.url, concurrencies=(1, 3), requests=6, prompt_tokens=64, output_tokens=12, timeout_s=10)
    assert m.model == "tiny-test" and [lv.concurrency for lv in m.levels] == [1, 3]
    one = m.levels[0].stats()
    assert one["completed"] == 6 and one["failed"] == 0
    assert 40 <= one["ttft_ms"]["mean"] <= 400            # the server waits 50 ms before the first token
    assert 3 <= one["itl_ms"]["p50"] <= 100 and one["itl_ms"]["p99"] >= one["itl_ms"]["p50"]
    assert one["mean_output_tokens"] == 12 and one["mean_prompt_tokens"] == 100   # the server's own counts
    assert one["output_throughput_tok_s"] > 0
    # the CLI's JSON carries the contract's fields, and --out is a file compare-measured reads
    out = tmp_path / "m.json"
    with FakeServer() as srv:
        code = main(["measure", "--url", srv.url, "--concurrency", "1,2", "--requests", "3", "--output", "8",
                     "--json", "--out", str(out)])
    d = json.loads(capsys.readouterr().out)
    assert code == 0 and [lv["concurrency"] for lv in d["levels"]] == [1, 2]
    assert {"ttft_ms", "itl_ms", "output_throughput_tok_s", "completed", "failed"} <= set(d["levels"][0])
    assert set(d["levels"][0]["ttft_ms"]) == {"mean", "p50", "p90", "p99"}
    tool, records = read_results(out)
    assert tool == "advisor measure" and {r.metric for r in records} >= {"ttft_ms", "itl_ms", "throughput_tok_s"}
    assert all(r.concurrency in (1.0, 2.0) and r.prompt_tokens == 100 and "hardware" in r.missing for r in records)


def test_no_two_requests_share_a_prefix_a_cache_could_reuse():
    # llama-server, vLLM and SGLang reuse a cached prefix: one prompt sent again would be prefilled in
    # one token, and the TTFT measured would hold no prefill at all (seen on a real llama-server)
    with FakeServer(first_s=0.0, gap_s=0.0) as srv:
        measure(srv.url, concurrencies=(1, 2), requests=4, prompt_tokens=200, output_tokens=2, timeout_s=10)
    prompts = srv.prompts
    assert len(prompts) == 9                        # the first check, then 4 per concurrency
    assert all(180 <= len(p.split()) <= 220 for p in prompts)
    first_words = [tuple(p.split()[:4]) for p in prompts]
    assert len(set(first_words)) == len(prompts)


def _free_port() -> int:
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


@pytest.mark.parametrize("mode, words", [("garbage", "not an openai-style event stream"),
                                         ("empty", "streamed no tokens"),
                                         ("reject", "http 400: the request exceeds the available context size")])
@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_a_server_that_does_not_stream_tokens_is_one_line(mode, words):
    with FakeServer(mode) as srv, pytest.raises(AdvisorError) as err:
        measure(srv.url, requests=2, output_tokens=4, timeout_s=5)
    assert words in str(err.value).lower() and "\n" not in str(err.value)


def test_no_server_no_models_and_bad_urls(capsys):
    port = _free_port()
    code = main(["measure", "--url", f"http://127.0.0.1:{port}/v1", "--requests", "2"])
    err = capsys.readouterr().err
    assert code == 2 and "cannot reach" in err and err.count("\n") == 1
    with FakeServer("no-models") as srv:
        code = main(["measure", "--url", srv.url])
    assert code == 2 and "give --model" in capsys.readouterr().err
    assert main(["measure", "--url", "127.0.0.1:8080"]) == 2
    assert "http://" in capsys.readouterr().err


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_errors_mid_run_are_counted_and_what_was_measured_is_kept():
    with FakeServer(fail_after=4) as srv:   # the probe and three requests succeed, then HTTP 500
        m = measure(srv.url, concurrencies=(1,), requests=6, output_tokens=4, timeout_s=5)
    s = m.levels[0].stats()
    assert s["completed"] == 3 and s["failed"] == 3 and s["errors"] == ["HTTP 500"]
    assert s["ttft_ms"] is not None


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_a_stream_that_never_ends_is_cut_by_the_timeout_and_the_budget():
    with FakeServer("endless", gap_s=0.01) as srv:
        t = time.perf_counter()
        with pytest.raises(AdvisorError, match="no complete answer within 1 s"):
            measure(srv.url, requests=3, output_tokens=4, timeout_s=1, budget_s=5)
        assert time.perf_counter() - t < 10


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_a_cancelled_run_keeps_what_it_measured():
    done = []
    with FakeServer(gap_s=0.002) as srv:
        m = measure(srv.url, concurrencies=(1, 2), requests=10, output_tokens=4, timeout_s=5,
                    progress=lambda d, t, w: done.append(d), cancel=lambda: len(done) >= 3)
    assert len(m.levels) == 1 and m.levels[0].stopped == "cancelled"
    assert m.levels[0].stats()["completed"] == 3
