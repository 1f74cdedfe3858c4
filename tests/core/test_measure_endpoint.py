"""Issue 27: `advisor measure` against a server on loopback. The server here is a small stand-in
(stdlib http.server streaming OpenAI-style events with set delays), so each failure mode can be
produced on purpose: refused port, HTTP errors mid-run, a stream of nothing, a stream that never
ends, malformed events. Every request goes to 127.0.0.1 and every run is bounded."""

from __future__ import annotations

import json
import time

import pytest

from advisor.cli.main import main
from advisor.data.errors import AdvisorError
from advisor.fit.bench_results import read_results
from advisor.fit.endpoint import measure
from tests.fake_openai import FakeServer
from tests.llama_model import free_port


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


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
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


#: what llama-server answers on GET /props (tools/server/server-context.cpp get_res_props, in the
#: llama.cpp that llama-cpp-python 0.3.36 vendors), the fields read and a few beside them
LLAMA_PROPS = {"default_generation_settings": {"n_ctx": 4096, "params": {}}, "total_slots": 16,
               "model_alias": "tiny", "model_ftype": "Q4_K - Medium",
               "model_path": "/models/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", "build_info": "b7000-0c1e5709",
               "modalities": {"vision": False}, "is_sleeping": False}


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_a_llama_server_says_what_it_runs_and_the_comparison_uses_it(cat, capsys):
    # its slots are the sequences it runs at once: a comparison must not assume llama.cpp's default of 4
    with FakeServer(first_s=0.0, gap_s=0.0, props=LLAMA_PROPS) as srv:
        m = measure(srv.url, concurrencies=(1,), requests=2, prompt_tokens=50, output_tokens=4, timeout_s=10)
    assert m.server == {"kind": "llama-server", "slots": 16, "model_path": LLAMA_PROPS["model_path"],
                        "model_type": "Q4_K - Medium", "build": "b7000-0c1e5709", "context_per_slot": 4096}
    from advisor.fit.endpoint import records_from
    from advisor.fit.compare import _load, compare, Overrides

    records = records_from(m.to_dict(), "m.json")
    assert records and all(r.runtime == "llama.cpp" and r.quant == "Q4_K_M" and r.max_seqs == 16
                           and r.build == "b7000-0c1e5709" and r.missing == ("hardware",) for r in records)
    assert _load(records[0]).max_seqs == 16
    c = next(c for c in compare(cat, records, Overrides(hardware="rtx 4090")) if c.predicted)
    assert "Llama 3.1 8B · Q4_K_M · llama.cpp" in c.configuration
    # servers without the route (vLLM, SGLang …) are measured as before, with nothing assumed
    with FakeServer(first_s=0.0, gap_s=0.0) as srv:
        m = measure(srv.url, concurrencies=(1,), requests=1, prompt_tokens=50, output_tokens=4, timeout_s=10)
    assert m.server == {} and "server" not in m.to_dict()
    assert all(r.runtime is None and r.max_seqs is None for r in records_from(m.to_dict()))
    # a /props that is not llama-server's is ignored
    with FakeServer(first_s=0.0, gap_s=0.0, props={"total_slots": "many"}) as srv:
        assert measure(srv.url, concurrencies=(1,), requests=1, prompt_tokens=50, output_tokens=4).server == {}
    # the command line says what the server said
    with FakeServer(first_s=0.0, gap_s=0.0, props=LLAMA_PROPS) as srv:
        assert main(["measure", "--url", srv.url, "--concurrency", "1", "--requests", "1", "--output", "4"]) == 0
    assert "server: llama-server, 16 slots · Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf (Q4_K - Medium)" in capsys.readouterr().out


@pytest.mark.parametrize("mode, words", [("garbage", "not an openai-style event stream"),
                                         ("empty", "streamed no tokens"),
                                         ("reject", "http 400: the request exceeds the available context size")])
@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_a_server_that_does_not_stream_tokens_is_one_line(mode, words):
    with FakeServer(mode) as srv, pytest.raises(AdvisorError) as err:
        measure(srv.url, requests=2, output_tokens=4, timeout_s=5)
    assert words in str(err.value).lower() and "\n" not in str(err.value)


def test_no_server_no_models_and_bad_urls(capsys):
    port = free_port()
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


def test_compare_a_llama_server_run_without_its_prompt_cache(capsys):
    """No result file records llama-server's --cache-ram: `compare-measured --no-prompt-cache` says it
    was off. The H100 run with --cache-ram 0 (one client, 2,000-token prompts, TTFT 103 ms measured)
    is then predicted without the save; with the default assumed, the save is in and TTFT is twice."""
    from pathlib import Path

    run = Path(__file__).parents[2] / "benchmarks/device_runs/2026-11-27-h100-moe-cache/measure-dense-nocache-c1-long.json"
    args = ["compare-measured", str(run), "--model", "llama-3.1-8b", "--quant", "F16", "--hardware", "h100-sxm5-80gb",
            "--runtime", "llama.cpp", "--json"]

    def ttft(extra):
        assert main(args + extra) == 0
        rows = json.loads(capsys.readouterr().out)["files"][0]["rows"]
        return next(r for r in rows if r["metric"] == "ttft_ms" and r["stat"] == "mean")

    off, default = ttft(["--no-prompt-cache"]), ttft([])
    assert off["predicted"] == pytest.approx(off["measured"], rel=0.15) and off["low"] <= off["measured"] <= off["high"]
    assert default["predicted"] > 2 * off["predicted"]


def test_compare_says_what_it_assumed_of_llama_servers_prompt_cache(capsys):
    """The text table ends with the assumption where it matters (llama-server rows under load) and
    how to change it; not once it is stated, and not for llama-bench rows."""
    from pathlib import Path

    runs = Path(__file__).parents[2] / "benchmarks/device_runs/2026-11-27-h100-moe-cache"
    args = ["compare-measured", str(runs / "measure-dense-nocache-c1-long.json"), "--model", "llama-3.1-8b", "--quant",
            "F16", "--hardware", "h100-sxm5-80gb"]
    assert main(args) == 0 and "add --no-prompt-cache" in capsys.readouterr().out
    assert main(args + ["--no-prompt-cache"]) == 0 and "prompt cache" not in capsys.readouterr().out
    bench = ["compare-measured", str(runs / "llama-bench-moe.json"), "--model", "qwen3-30b-a3b", "--quant", "Q8_0",
             "--hardware", "h100-sxm5-80gb"]
    assert main(bench) == 0 and "prompt cache" not in capsys.readouterr().out
