"""The Serving tab: the configuration on screen as a server under load, charted over concurrency."""

from __future__ import annotations

import math

import numpy as np
import pytest

from advisor import api


def test_users_input_moves_the_steady_state_and_the_curve_marks_the_queue(window, qtbot):
    s = window.session
    window.show_view("serving")
    view = window.serving
    window.inputs.spin_batch.setValue(2)
    qtbot.waitUntil(lambda: not view.busy and view.model.rowCount() > 0, timeout=20000)   # the sweep: a worker
    first = view.report
    assert first is not None and first.fits and first.load.concurrency == 2
    x, y = view.now[0].getOriginalDataset()
    assert list(x) == [2] and y[0] == first.throughput_tok_s
    # the table is the sweep over concurrency, the same the core computes
    expected = api.concurrency_sweep(s.cat, s.cfg, api.Load(kind="closed", prompt_tokens=first.load.prompt_tokens,
                                                             output_tokens=first.load.output_tokens))
    assert view.model.rowCount() == len([r for r in expected if r.fits])
    users, total = view.total.getOriginalDataset()
    assert list(users) == [r.load.concurrency for r in expected if r.fits]
    assert np.all(np.diff(total) >= -1e-9)            # throughput never falls with more users
    # past the server's capacity users queue: the marker line shows where, TTFT turns up
    sat = next(r for r in expected if r.saturated)
    assert view.saturation[0].isVisible()
    assert math.isclose(view.saturation[0].value(), math.log10(sat.capacity))
    sweep = view.sweep
    window.inputs.spin_batch.setValue(int(sat.load.concurrency) * 2)
    assert not view.busy and view.sweep is sweep        # more users move the marker, not the sweep
    busy = view.report
    assert busy.saturated and busy.queue > 0 and busy.ttft_p90_ms > 10 * first.ttft_p90_ms
    assert "waiting" in view.summary.text()


def test_poisson_rate_past_capacity_says_the_queue_grows(window, qtbot):
    window.show_view("serving")
    view = window.serving
    view.kind.setCurrentIndex(view.kind.findData("open"))
    assert not view.think.isEnabled() and view.rate.isEnabled()
    view.rate.setValue(100000.0)
    r = view.report
    assert r.load.kind == "open" and r.saturated and r.bound == "queue"
    assert "grows without bound" in view.summary.text()


def test_several_users_are_judged_as_clients_of_a_server(window, qtbot):
    s = window.session
    window.inputs.spin_batch.setValue(32)
    srv = s.serving
    assert srv is not None and srv.load.concurrency == 32
    # the cards show what the users see under load, and say what all-at-once would be
    card = window.results.cards["ttft"]
    assert card.value.text() == api_duration(srv.ttft_p90_ms)
    assert "all at once" in card.detail.text()
    # the TTFT target is judged on the p90 under load, not on all prompts at once
    s.set_inputs(ttft_target_ms=srv.ttft_p90_ms * 1.01)
    assert s.meets_targets()["ttft"] is True
    s.set_inputs(ttft_target_ms=srv.ttft_p90_ms * 0.99)
    assert s.meets_targets()["ttft"] is False
    window.inputs.spin_batch.setValue(1)                     # one user: the static prediction itself
    assert s.serving is None and card.value.text() == api_duration(s.prediction.ttft_ms)


def api_duration(ms: float) -> str:
    from advisor.text.format import duration_ms

    return duration_ms(ms)


def test_prompt_spread_is_an_undoable_input_that_lengthens_the_ttft_tail(window, qtbot):
    s = window.session
    window.show_view("serving")
    view = window.serving
    window.inputs.spin_batch.setValue(3)      # within the 4 slots: no queue to hide the prompts
    window.inputs.spin_prompt.setValue(2000)
    same = view.report
    assert same.load.prompt_points == () and s.serving.load.prompt_points == ()
    view.spread.setValue(1.5)
    spread = view.report
    # the mean prompt is the input's; a log-normal of CV 1.5 puts some prompts far past it
    assert spread.load.prompt_tokens == 2000 and max(spread.load.prompt_points) > 4 * 2000
    assert spread.ttft_p90_ms > same.ttft_p90_ms
    # the cards' queue sees it too, and the summary says what the prompts span
    assert s.serving.load.prompt_points == spread.load.prompt_points
    assert "prompts" in view.summary.text() and "(" in view.summary.text()
    # one undo step takes it back, and the box follows
    s.undo()
    assert s.state.prompt_spread == 0.0 and view.spread.value() == 0.0
    assert view.report.load.prompt_points == ()
    # out of range from elsewhere (a file, a script) is refused with a message, nothing changes
    before = s.state
    assert not s.set_inputs(prompt_spread=-1)
    assert s.state == before and "prompt spread" in s.last_error


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_llama_servers_prompt_cache_is_an_undoable_input_that_costs_each_request(window, qtbot):
    """llama-server copies each finished request's KV cache to its host-memory prompt cache before the
    next prompt: the Serving tab shows the switch for runtimes that have one, turning it off removes
    that cost (and the note) from the tab and the cards, one undo step brings it back, and a
    recommendation row comes in as its launch line starts the server."""
    s = window.session
    window.show_view("serving")
    view = window.serving
    assert s.set_inputs(hardware="h100 sxm", model="llama 3.1 8b", runtime="llama.cpp", quant="f16", batch=4, prompt=2000)
    assert view.cache.isVisible() and view.cache.isChecked() and s.state.prompt_cache
    on = view.report
    assert any("prompt cache" in n for n in on.notes)
    view.cache.setChecked(False)
    off = view.report
    assert not s.state.prompt_cache and off.load.prompt_cache is False
    assert off.ttft_ms < on.ttft_ms and not any("prompt cache" in n for n in off.notes)
    assert s.serving.load.prompt_cache is False       # the cards' server too
    s.undo()
    assert s.state.prompt_cache and view.cache.isChecked() and view.report.ttft_ms == on.ttft_ms
    # vLLM has no such cache: no switch
    assert s.set_inputs(runtime="vllm", quant="bf16")
    assert not view.cache.isVisible()
    # a recommendation's llama-server line without prefix hits carries --cache-ram 0: so does the sizing
    rec = api.recommend(s.cat, api.Requirements(model=s.cat.models["llama-3.1-8b"], users=4,
                                                hardware=("rtx-4090",), runtimes=("llama.cpp",)))
    first = rec.passing[0]
    assert "--cache-ram 0" in first.launch
    assert s.load_candidate(first) and s.state.prompt_cache is False
    # refused from elsewhere with a message, nothing changes
    before = s.state
    assert not s.set_inputs(prompt_cache="maybe")
    assert s.state == before and "prompt cache" in s.last_error


def test_a_batch_sent_at_once_says_when_its_last_answer_comes(window, qtbot):
    """The Serving tab's third load: N requests at once, timed to the last answer (`serve` with an
    offline load of N requests), longer the more the answers' lengths vary."""
    s = window.session
    window.show_view("serving")
    view = window.serving
    view.kind.setCurrentIndex(view.kind.findData("batch"))
    assert view.requests.isEnabled() and view.out_spread.isEnabled()
    assert not view.think.isEnabled() and not view.rate.isEnabled()
    view.requests.setValue(500)
    fixed = view.report
    assert fixed.load.kind == "offline" and fixed.load.requests == 500 and not fixed.load.output_points
    core = api.serve(s.cat, s.cfg, fixed.load)
    assert math.isclose(fixed.throughput_tok_s, core.throughput_tok_s, rel_tol=1e-9)
    text = view.summary.text()
    assert "500 requests at once" in text and "all answered in" in text
    assert f"{api_duration(core.itl_p50_ms)} median" in text and core.itl_p50_ms <= core.itl_ms * (1 + 1e-9)
    view.out_spread.setValue(1.0)
    varied = view.report
    assert len(varied.load.output_points) == api.BATCH_MIX_POINTS
    assert varied.throughput_tok_s < fixed.throughput_tok_s
    assert "answers" in view.summary.text()
    view.kind.setCurrentIndex(view.kind.findData("closed"))
    assert not view.requests.isEnabled() and view.report.load.kind == "closed"
