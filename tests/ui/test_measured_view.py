"""Issue 27: the Measured tab. A real result file opens into a table and a chart of measured against
predicted; a live server (the loopback stand-in) is measured from the tab with progress and Stop."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from tests.fake_openai import FakeServer

RESULTS = Path(__file__).resolve().parents[1] / "data" / "bench_results"


def test_a_llama_bench_file_opens_into_table_and_chart(window, settle):
    path = RESULTS / "llama_bench.json"
    if not path.is_file():
        pytest.skip("the llama-bench fixture is not there")
    window.session.set_inputs(hardware="rtx 4090")
    window.open_measurements([str(path)])
    view = window.measured
    settle(window)
    assert view.comparisons and view.model.rowCount() == len(view.comparisons)
    compared = [c for c in view.comparisons if c.predicted is not None]
    assert compared, [c.skipped for c in view.comparisons]
    assert "rows compared" in view.heading.text() and "median |error|" in view.heading.text()
    items = view.plot.getPlotItem().listDataItems()
    assert len(items) >= 3          # the diagonal, the ±25 % lines
    scatters = [i for i in view.plot.getPlotItem().items if i.__class__.__name__ == "ScatterPlotItem"]
    assert sum(len(s.data) for s in scatters) == len([c for c in compared if c.predicted > 0])
    assert window.current_view_name() == "measured"


def test_a_file_that_is_no_result_says_so(window, settle, tmp_path):
    bad = tmp_path / "notes.txt"
    bad.write_text("hello, these are my notes\n")
    window.open_measurements([str(bad)])
    settle(window)
    assert "not a benchmark result" in window.measured.heading.text()
    assert window.measured.model.rowCount() == 0


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_measure_a_server_from_the_tab(window, settle):
    view = window.view("measured")
    window.session.set_inputs(hardware="rtx 4090")
    with FakeServer(first_s=0.01, gap_s=0.002) as srv:
        view.url.setText(srv.url)
        view.levels.setText("1,2")
        view.spin_requests.setValue(3)
        view.measure_or_stop()
        assert view.btn_measure.text() == "&Stop"
        settle(window)
        assert view.btn_measure.text() == "Measure &server"
        metrics = {c.record.metric for c in view.comparisons}
        assert {"ttft_ms", "itl_ms", "throughput_tok_s"} <= metrics
        # the stand-in serves "tiny-test", no catalog model: each row says what to give, nothing is guessed
        assert all(c.predicted is None and "model" in c.skipped for c in view.comparisons)
        view.model_name.setText("llama 3.1 8b")
        view.measure_or_stop()
        settle(window)
    compared = [c for c in view.comparisons if c.predicted is not None]
    assert compared and all("RTX 4090" in c.configuration for c in compared)
    assert "median |error|" in view.heading.text()


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_stop_keeps_what_was_measured(window, settle):
    view = window.view("measured")
    with FakeServer(first_s=0.05, gap_s=0.01) as srv:
        view.url.setText(srv.url)
        view.levels.setText("1")
        view.spin_requests.setValue(200)
        view.measure_or_stop()
        time.sleep(0.8)                 # a few requests in
        view.measure_or_stop()          # Stop
        settle(window)
    assert view.btn_measure.isEnabled() and view.btn_measure.text() == "Measure &server"
    done = [c for c in view.comparisons if c.record.metric == "ttft_ms" and c.record.stat == "mean"]
    assert done and 1 <= done[0].record.requests_completed < 200


def test_a_bad_file_among_good_ones_is_named_and_the_good_ones_kept(window, settle, tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('{"mean_ttft_ms": ')
    window.session.set_inputs(hardware="rtx 4080")
    window.open_measurements([str(RESULTS / "llama_bench.json"), str(bad)])
    settle(window)
    view = window.measured
    assert view.comparisons and all("llama_bench.json" in c.record.source for c in view.comparisons)
    assert "Not read:" in view.heading.text() and "broken.json" in view.heading.text()


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_learn_from_these_and_forget(window, settle, tmp_path, private_user_data):
    """The app's `calibrate --mine`: the rows on screen fit a personal profile that the session's
    predictions then use; Forget removes it."""
    import json

    from advisor.model.config import configure
    from advisor.model.predict import predict
    from advisor.model.roofline import Workload

    cat = window.session.cat
    template = json.loads((RESULTS / "llama_bench.json").read_text())[0]
    cfg = configure(cat, hardware="rtx 4080", model="qwen2.5 7b", quant="q4_k_m", runtime="llama.cpp")
    rows = []
    for pp, tg, d in [(512, 0, 0), (1024, 0, 0), (0, 128, 0), (0, 128, 4096), (0, 64, 8192)]:
        p = predict(cat, cfg.replace(workload=Workload(1, pp, tg, d)), check_context=False)
        v = p.decode_tok_s * 0.7 if tg else p.prefill_tok_s * 1.3
        rows.append(dict(template, n_prompt=pp, n_gen=tg, n_depth=d, avg_ts=v, samples_ts=[v]))
    path = tmp_path / "mine.json"
    path.write_text(json.dumps(rows))
    window.session.set_inputs(hardware="rtx 4080", model="qwen2.5 7b", quant="q4_k_m")
    window.open_measurements([str(path)])
    settle(window)
    view = window.measured
    before = sorted(abs(c.error) for c in view.comparisons)
    assert view.btn_learn.isEnabled()
    view.learn()
    settle(window)
    assert (private_user_data / "my-calibration.yaml").is_file()
    assert "kept" in view.heading.text() and "Saved to" in view.heading.text()
    after = sorted(abs(c.error) for c in view.comparisons)
    assert after[len(after) // 2] < before[len(before) // 2]
    assert "calibrated on your 5 measurements" in window.session.prediction.efficiency_basis
    view.forget()
    settle(window)
    assert not (private_user_data / "my-calibration.yaml").exists() and "removed" in view.heading.text()
    assert "mine+" not in window.session.prediction.efficiency_basis


def test_a_llama_server_run_is_compared_with_the_prompt_cache_the_serving_tab_sets(window, settle):
    """No result file says whether llama-server kept its host-memory prompt cache: the Measured tab
    compares as the sizing's switch says (the Serving tab's). The H100 run with --cache-ram 0 (one
    client, 2,000-token prompts, 103 ms to the first token) is inside the band with the cache off,
    and predicted twice as slow with it on."""
    run = (Path(__file__).resolve().parents[2] / "benchmarks" / "device_runs" / "2026-11-27-h100-moe-cache"
           / "measure-dense-nocache-c1-long.json")
    s = window.session
    view = window.measured
    assert s.set_inputs(hardware="h100 sxm", model="llama 3.1 8b", runtime="llama.cpp", quant="f16")
    view.model_name.setText("llama-3.1-8b")

    def ttft():
        window.open_measurements([str(run)])
        settle(window)
        return next(c for c in view.comparisons if c.record.metric == "ttft_ms" and c.record.stat == "mean")

    on = ttft()
    assert s.set_inputs(prompt_cache=False)
    off = ttft()
    assert off.within_band and off.predicted == pytest.approx(off.record.value, rel=0.15)
    assert on.predicted > 2 * off.predicted
