"""Issue 27: measured beside predicted (`advisor.fit.compare`): names as benchmark files write them
resolve, what a file lacks is asked for and never guessed, and each figure is the model's own."""

from __future__ import annotations

import math

import numpy as np
import pytest

from advisor.fit.bench_records import BenchRecord
from advisor.fit.compare import Overrides, compare, gguf_quant, model_name, summarise
from advisor.model.config import configure
from advisor.model.predict import predict
from advisor.model.roofline import Workload
from advisor.model.serving import BATCH_MIX_POINTS, Load, output_mix, serve


def test_names_as_files_write_them():
    assert model_name("/models/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf") == "Meta-Llama-3.1-8B-Instruct"
    assert model_name("meta-llama/Llama-3.1-8B-Instruct") == "Llama-3.1-8B-Instruct"
    assert model_name(r"C:\models\qwen2.5-7b-instruct-q8_0-00001-of-00002.gguf") == "qwen2.5-7b-instruct"
    assert gguf_quant("Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf") == "Q4_K_M"
    assert gguf_quant("qwen2.5-7b-instruct-q8_0-00001-of-00002.gguf") == "Q8_0"
    assert gguf_quant("model.gguf") is None


def _bench(metric, value, **kw):
    base = dict(tool="llama-bench", metric=metric, value=value, runtime="llama.cpp",
                hardware="NVIDIA GeForce RTX 4090", model="/m/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", batch=1)
    base.update(kw)
    return BenchRecord(**base)


def test_llama_bench_rows_are_the_predictions_of_their_workload(cat):
    rows = [_bench("prefill_tok_s", 11000.0, prompt_tokens=512), _bench("decode_tok_s", 140.0, output_tokens=128),
            _bench("decode_tok_s", 120.0, output_tokens=128, depth_tokens=8192)]
    got = compare(cat, rows)
    assert all(not c.skipped for c in got), [c.skipped for c in got]
    cfg = configure(cat, hardware="rtx 4090", model="llama 3.1 8b", quant="q4_k_m", runtime="llama.cpp")
    pp = predict(cat, cfg.replace(workload=Workload(1, 512, 0, 0)), check_context=False)
    tg = predict(cat, cfg.replace(workload=Workload(1, 0, 128, 8192)), check_context=False)
    assert got[0].predicted == pytest.approx(pp.prefill_tok_s) and got[0].low == pytest.approx(pp.prefill_low_tok_s)
    assert got[2].predicted == pytest.approx(tg.decode_tok_s)
    assert got[1].predicted > got[2].predicted          # a deep context decodes slower
    assert got[0].error == pytest.approx(pp.prefill_tok_s / 11000.0 - 1)
    assert "Q4_K_M" in got[0].configuration and "RTX 4090" in got[0].configuration


def test_what_the_file_lacks_is_asked_for_not_guessed(cat):
    rec = BenchRecord(tool="vllm bench serve", metric="ttft_ms", value=80.0, runtime="vllm",
                      model="meta-llama/Llama-3.1-8B-Instruct", concurrency=8, prompt_tokens=1000,
                      output_tokens=200, requests_completed=200, missing=("hardware",))
    [c] = compare(cat, [rec])
    assert c.predicted is None and "--hardware" in c.skipped
    [c] = compare(cat, [rec], Overrides(hardware="h100 sxm"))
    cfg = configure(cat, hardware="h100 sxm", model="llama 3.1 8b", runtime="vllm")
    rep = serve(cat, cfg, Load(kind="closed", concurrency=8, prompt_tokens=1000, output_tokens=200, requests=200))
    assert c.predicted == pytest.approx(rep.ttft_ms) and c.low <= c.predicted <= c.high
    # the format the file does not name is the runtime's default for the model, and the label says
    # it was assumed; one the user gives is not
    assert "(assumed: give --quant)" in c.configuration
    [c] = compare(cat, [rec], Overrides(hardware="h100 sxm", quant="bf16"))
    assert "BF16 ·" in c.configuration and "assumed" not in c.configuration
    # the sequences the server ran at once, where the user says: a smaller cap queues the clients
    [few] = compare(cat, [rec], Overrides(hardware="h100 sxm", max_seqs=2))
    assert few.predicted > 2 * c.predicted
    # an unknown GPU name is not replaced by a near one
    [c] = compare(cat, [rec], Overrides(hardware="Quantum Accelerator 9000"))
    assert c.predicted is None and "--hardware" in c.skipped


def test_serving_metrics_and_statistics(cat):
    common = dict(tool="vllm bench serve", runtime="vllm", model="meta-llama/Llama-3.1-8B-Instruct",
                  hardware="H100 SXM", prompt_tokens=1000, output_tokens=200, requests_completed=400)
    rows = [BenchRecord(metric="itl_ms", value=12.0, concurrency=32, **common),
            BenchRecord(metric="itl_ms", value=30.0, stat="p99", concurrency=32, **common),
            BenchRecord(metric="throughput_tok_s", value=2500.0, concurrency=32, **common),
            BenchRecord(metric="request_throughput_rps", value=12.5, concurrency=32, **common),
            BenchRecord(metric="ttft_ms", value=900.0, request_rate_rps=math.inf, **common),
            BenchRecord(metric="ttft_ms", value=50.0, request_rate_rps=4.0, **common),
            BenchRecord(metric="ttft_ms", value=50.0, stat="std", concurrency=32, **common)]
    got = compare(cat, rows)
    assert [c.skipped for c in got[:6]] == [""] * 6
    assert got[1].predicted >= got[0].predicted                    # p99 from the p90 tail (the model has no p99)
    assert got[3].predicted == pytest.approx(got[2].predicted / 200)
    assert got[4].predicted > got[5].predicted                     # all at once queues; 4 req/s does not
    # all at once is a batch of the file's requests, as serve --offline --requests predicts it
    batch = serve(cat, configure(cat, hardware="H100 SXM", model="llama-3.1-8b", runtime="vllm"),
                  Load(kind="offline", requests=400, prompt_tokens=1000, output_tokens=200))
    assert got[4].predicted == pytest.approx(batch.ttft_ms, rel=1e-6)
    assert "std" in got[6].skipped
    s = summarise(got)
    assert s.rows == 7 and s.compared == 6 and s.median_abs_error is not None


def test_a_runs_own_lengths_are_its_distributions(cat):
    """A file with each request's lengths (vLLM's --save-detailed) is predicted with them: 16 clients
    of 80 requests whose outputs run from 2 to 1,000 tokens drain through the longest at the end, so
    the run delivers less than one of the same mean length, as `serve` with that distribution
    predicts; lengths all the same are the mean alone."""
    outputs = tuple(int(x) for x in np.linspace(2, 1000, 80))
    common = dict(tool="vllm bench serve", runtime="vllm", model="meta-llama/Llama-3.1-8B-Instruct",
                  hardware="H100 SXM", prompt_tokens=500, output_tokens=round(sum(outputs) / 80),
                  requests_completed=80, concurrency=16, metric="throughput_tok_s", value=5000.0)
    [plain] = compare(cat, [BenchRecord(**common)])
    [varied] = compare(cat, [BenchRecord(**common, prompt_lengths=(500,) * 80, output_lengths=outputs)])
    [same] = compare(cat, [BenchRecord(**common, prompt_lengths=(500,) * 80, output_lengths=(501,) * 80)])
    assert varied.predicted < 0.95 * plain.predicted and same.predicted == plain.predicted
    cfg = configure(cat, hardware="H100 SXM", model="llama-3.1-8b", runtime="vllm")
    mix = output_mix(0, samples=outputs, points=BATCH_MIX_POINTS)
    rep = serve(cat, cfg, Load(kind="closed", concurrency=16, requests=80, prompt_tokens=500,
                               varied_lengths=True, **{**mix, "output_tokens": common["output_tokens"]}))
    assert varied.predicted == pytest.approx(rep.throughput_tok_s, rel=1e-9)


def test_this_machine_before_the_probe_says_how_to_get_it(capsys):
    from advisor.cli.main import main

    assert main(["predict", "--hardware", "this machine", "--model", "llama 3.1 8b"]) == 2
    err = capsys.readouterr().err
    assert "advisor --probe --save" in err and "nearest" not in err and err.count("\n") == 1
