"""The What-ifs tab (issue 18 in the app): the numbers are the core's `api.techniques`, they follow
every input change, and the charts are the core's curves."""

from __future__ import annotations

import math

import numpy as np
import pytest

from advisor import api
from advisor.text.format import duration_ms, num


def shown(view) -> dict[str, tuple[str, str, str]]:
    """{row label: (before, after, change)} as the table shows them."""
    t = view.table
    return {t.item(i, 0).text(): tuple(t.item(i, j).text() for j in (1, 2, 3)) for i in range(t.rowCount())}


def expected(effect) -> dict[str, tuple[str, str, str]]:
    """The core's figures as the table must show them (and as the report prints them)."""
    rows = {label: (b, a, c) for label, b, a, c in api.technique_rows(effect)}
    f0, f1 = effect.before, effect.after
    assert rows["Time to first token"][:2] == (duration_ms(f0.ttft_ms), duration_ms(f1.ttft_ms))
    assert rows["Decode speed per user"][:2] == (f"{num(f0.decode_tok_s)} tok/s", f"{num(f1.decode_tok_s)} tok/s")
    assert rows["Max batch"][:2] == (f"{f0.max_batch:,}", f"{f1.max_batch:,}")
    assert rows["Memory per GPU"][:2] == (f"{num(f0.memory_gb)} GB", f"{num(f1.memory_gb)} GB")
    assert rows["Fits"][:2] == ("yes" if f0.fits else "no", "yes" if f1.fits else "no")
    return rows


def open_whatifs(window, kind: str):
    window.show_view("whatifs")
    view = window.whatifs
    view.kind.setCurrentIndex(view.kind.findData(kind))
    return view


def core_effect(session):
    [e] = api.techniques(session.cat, session.cfg, session.whatif.techniques)
    return e


def test_speculative_decoding_shows_the_core_numbers_and_follows_the_batch(window):
    s = window.session
    view = open_whatifs(window, "speculative")
    tech = s.whatif.techniques
    # Llama 3.1 8B: the smallest catalog model with its tokenizer drafts, at the typical k and α
    assert tech.draft.key == "llama-3.2-1b" and tech.draft_k is None and tech.accept is None
    e = core_effect(s)
    assert shown(view) == expected(e)
    assert e.after.decode_tok_s > e.before.decode_tok_s           # batch 1: speculation pays
    assert "Llama 3.2 1B" in view.summary.text() and any("α = 0.7 is a typical" in n for n in e.notes)
    assert "typical figure" in view.notes.text()
    # the chart is the core's curve, the crossover marked where the core puts it
    c = api.speculative_curve(s.cat, s.cfg, tech)
    x, y = view.spec_line.getOriginalDataset()
    assert x[0] == 1 and x[-1] == 4096 and len(x) > 100           # sampled on a log scale
    assert np.allclose(y, c.speedup[x.astype(int) - 1])
    assert c.crossover_batch is not None and view.spec_cross.isVisible()
    assert math.isclose(view.spec_cross.value(), math.log10(c.crossover_batch))
    assert e.details["crossover_batch"] == c.crossover_batch
    # past the crossover the what-if turns into a slow-down, live
    window.inputs.spin_batch.setValue(c.crossover_batch * 2)
    e2 = core_effect(s)
    assert e2.after.decode_tok_s < e2.before.decode_tok_s
    assert shown(view) == expected(e2) and shown(view) != expected(e)
    nx, ny = view.spec_now.getOriginalDataset()
    assert list(nx) == [c.crossover_batch * 2] and ny[0] == pytest.approx(e2.speedup) and ny[0] < 1


def test_draft_length_acceptance_and_head(window):
    s = window.session
    view = open_whatifs(window, "speculative")
    view.spin_accept.setValue(0.0)                                # α = 0 never speeds up
    assert s.whatif.techniques.accept == 0.0
    e = core_effect(s)
    assert e.after.decode_tok_s < e.before.decode_tok_s and shown(view) == expected(e)
    view.spin_k.setValue(2)
    assert s.whatif.techniques.k == 2 and shown(view) == expected(core_effect(s))
    view.typical.click()                                          # back to the core's defaults
    assert s.whatif.techniques.draft_k is None and s.whatif.techniques.accept is None
    assert view.spin_k.value() == 4 and view.spin_accept.value() == pytest.approx(0.7)
    view.radio_head.setChecked(True)                              # an EAGLE-style head
    t = s.whatif.techniques
    assert t.draft is None and t.head_params_b == pytest.approx(view.head_b.value()) and t.draft_kind == "head"
    assert view.spin_k.value() == 3 and view.spin_accept.value() == pytest.approx(0.8)
    e = core_effect(s)
    assert shown(view) == expected(e) and "draft head" in e.label


def test_a_target_without_a_catalog_draft_switches_to_a_head(window):
    s = window.session
    view = open_whatifs(window, "speculative")
    s.set_inputs(model="falcon 7b")
    assert view.radio_head.isChecked() and not view.draft.isEnabled()
    assert "no catalog model can draft" in view.draft.currentText()
    assert s.whatif.techniques.head_params_b > 0 and not s.whatif.error
    assert shown(view) == expected(core_effect(s))


def test_partial_offload_of_a_model_too_large_for_the_card(window):
    s = window.session
    s.set_inputs(model="llama 3.1 70b")
    assert s.cfg.runtime.key == "llama.cpp" and not s.prediction.fits
    view = open_whatifs(window, "offload")
    assert view.spin_layers.isVisible() and not view.spin_gb.isVisible()
    curve = api.offload_curve(s.cat, s.cfg)
    most = int(curve.gpu_layers[curve.fits][-1])
    # by default the most layers with which it fits, and then it fits
    assert view.spin_layers.value() == most and s.whatif.techniques.gpu_layers == most
    e = core_effect(s)
    assert not e.before.fits and e.after.fits and shown(view) == expected(e)
    x, y = view.off_line.getOriginalDataset()
    assert np.array_equal(x, curve.gpu_layers[curve.fits]) and np.allclose(y, curve.decode_tok_s[curve.fits])
    assert np.all(np.diff(y) >= 0)                               # more GPU layers never slow decode
    view.spin_layers.setValue(most // 2)
    e2 = core_effect(s)
    assert e2.after.decode_tok_s < e.after.decode_tok_s and shown(view) == expected(e2)
    nx, ny = view.off_now.getOriginalDataset()
    assert list(nx) == [most // 2] and ny[0] == pytest.approx(e2.after.decode_tok_s)


def test_offload_by_gb_on_vllm_and_none_on_a_runtime_without_it(window):
    s = window.session
    view = open_whatifs(window, "offload")
    assert s.set_inputs(hardware="h100 sxm", model="llama 3.1 70b", runtime="vllm", quant="bf16")
    assert view.spin_gb.isVisible() and not view.spin_layers.isVisible()
    # 141 GB of BF16 weights on an 80 GB card: by default the fewest GB offloaded with which it fits
    curve = api.offload_curve(s.cat, s.cfg)
    least = float(curve.host_gb[curve.fits][0])
    assert s.whatif.techniques.offload_gb == pytest.approx(least) and least > 0
    e = core_effect(s)
    assert not e.before.fits and e.after.fits and shown(view) == expected(e)
    view.spin_gb.setValue(least + 10.0)
    e2 = core_effect(s)
    assert s.whatif.techniques.offload_gb == pytest.approx(least + 10.0) and shown(view) == expected(e2)
    assert e2.after.decode_tok_s < e.after.decode_tok_s
    x, _ = view.off_line.getOriginalDataset()
    assert np.array_equal(x, curve.host_gb[curve.fits]) and "host memory" in view.off_plot.titleLabel.text
    assert s.set_inputs(runtime="tensorrt-llm")
    assert "no partial offload" in view.offload_label.text()
    assert "no partial offload" in s.whatif.error and "no partial offload" in view.summary.text()
    assert all(v == ("—", "—", "—") for v in shown(view).values())


def test_attention_layout_and_eager_attention(window):
    s = window.session
    view = open_whatifs(window, "attention")
    assert s.whatif.techniques.attention == "mha"                        # a GQA model: what MHA would cost
    e = core_effect(s)
    assert e.details["kv_ratio"] == pytest.approx(4.0) and shown(view) == expected(e)
    assert e.after.max_batch < e.before.max_batch
    assert view.charts.currentWidget() is view.no_chart
    view.layout_combo.setCurrentIndex(view.layout_combo.findData("mqa"))
    view.layout_combo.activated.emit(view.layout_combo.currentIndex())
    e = core_effect(s)
    assert s.whatif.techniques.attention == "mqa" and e.details["kv_ratio"] == pytest.approx(1 / 8)
    assert "×0.125" in view.notes.text() and shown(view) == expected(e)
    view = open_whatifs(window, "eager")
    window.inputs.spin_prompt.setValue(32768)
    e = core_effect(s)
    assert e.technique == "eager-attention" and e.after.ttft_ms >= e.before.ttft_ms
    assert shown(view) == expected(e) and "-fa off" in view.notes.text()


def test_what_if_follows_the_session_while_hidden(window):
    s = window.session
    view = open_whatifs(window, "speculative")
    window.show_view("roofline")
    window.inputs.spin_batch.setValue(8)
    assert not view.isVisible()
    window.show_view("whatifs")
    assert shown(view) == expected(core_effect(s))
    assert window.current_table_rows()[1][0] == "Time to first token"
