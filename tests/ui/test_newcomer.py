"""What a newcomer tripped over (issue 28), each on the real widgets: a configuration that does not fit
says so before its speeds, Compare prices and powers each column and marks the best value among those
that fit, rows without a value sort last, a name that does not resolve stays marked, the
recommendations state and take a context, an imported model keeps its own name, Will it run follows
the Weights input when asked, charts read out their values under the pointer, and freed memory goes
back to the system when the window is idle."""

from __future__ import annotations

import json
import math
import shutil
from pathlib import Path

import numpy as np
import pytest
from PySide6.QtCore import QPointF, Qt

from advisor import api
from advisor.text.format import num
from advisor.text.report import shown_source
from ui.views.table import Column, RowsModel, make_table, visible_rows

HF_CONFIGS = Path(__file__).resolve().parents[1] / "data" / "hf_configs"


def test_a_configuration_that_does_not_fit_says_so_before_its_speeds(window):
    s = window.session
    assert s.set_inputs(hardware="rtx 4090", model="llama 3.3 70b", quant="Q4_K_M", tok_s_target=5)
    assert not s.prediction.fits
    cards = window.results.cards
    assert cards["fits"].value.text() == "No"
    for name in ("ttft", "decode", "throughput"):
        assert cards[name].detail.text().startswith("does not fit"), name
        assert "#d23c3c" not in cards[name].value.styleSheet()   # greyed, never "met" green
    # its speed would meet the target, but a configuration that does not fit meets nothing
    assert s.prediction.decode_tok_s > 5
    assert window.results.targets_card.value.text() == "Missed"
    assert cards["max_batch"].value.text() == "—" and cards["max_context"].value.text() == "—"
    assert s.set_inputs(model="llama 3.1 8b")
    assert cards["fits"].value.text() == "Yes" and not cards["decode"].detail.text().startswith("does not fit")
    assert window.results.targets_card.value.text() == "Met"


def test_compare_prices_each_column_and_the_best_value_is_one_that_fits(window):
    s, view = window.session, window.compare
    s.compare.clear()
    assert s.set_inputs(hardware="rtx 3090", model="llama 3.1 8b", quant="Q4_K_M")
    s.compare.pin()
    # faster on paper, but 70B does not fit a 5090: it must not win a speed or value row
    assert s.set_inputs(hardware="rtx 5090", model="llama 3.3 70b", quant="Q4_K_M")
    s.compare.pin()
    assert s.set_inputs(hardware="h100 sxm", model="llama 3.1 8b", runtime="vllm")
    s.compare.pin()
    rows = {r[0]: r[1:] for r in view.table_rows()}
    for label in ("Buy", "Rent", "Board power", "$ / M tokens"):
        assert label in rows, label
    assert rows["Fits"][1].startswith("no") and "(if it fit)" in rows["Decode / user"][1]
    assert rows["Max batch"][1] == "—"
    assert rows["Board power"] == ["350 W", "575 W", "700 W"]   # each card's board power (catalog)
    # $/M tokens: the rent per hour over the tokens an hour serves, for those that fit
    cost = api.costs(s.cat, s.compare[2].hardware, 1, view.predictions[2].throughput_tok_s)
    assert math.isclose(cost.usd_per_million_tokens, cost.rent_usd_hour / (view.predictions[2].throughput_tok_s
                                                                              * 3600) * 1e6)
    assert rows["$ / M tokens"][1] == "—"
    assert view.best_value in (0, 2)
    header = view.table.horizontalHeaderItem(view.best_value).text()
    assert header.endswith("★ best value")
    assert "does not fit" in view.table.horizontalHeaderItem(1).text()
    # the faster 8B column wins decode; the bold winner is never the column that does not fit
    best_decode = max((0, 2), key=lambda j: view.predictions[j].decode_tok_s)
    row = [r[0] for r in view.table_rows()].index("Decode / user") - 1
    assert view.table.item(row, best_decode).font().bold()
    assert not view.table.item(row, 1).font().bold()


def test_rows_without_a_value_sort_last_in_either_direction(qtbot):
    model = RowsModel([Column("x", lambda r: r)])
    view, _ = make_table(model)
    qtbot.addWidget(view)
    model.set_rows([3.0, None, 1.0, math.nan, 2.0])
    view.sortByColumn(0, Qt.SortOrder.AscendingOrder)
    assert [r[0] for r in visible_rows(view)[1:]] == ["1.00", "2.00", "3.00", "—", "—"]
    view.sortByColumn(0, Qt.SortOrder.DescendingOrder)
    assert [r[0] for r in visible_rows(view)[1:]] == ["3.00", "2.00", "1.00", "—", "—"]


def test_a_name_that_does_not_resolve_stays_marked_until_one_does(window, qtbot):
    s, picker = window.session, window.inputs.hw_picker
    before = s.cfg.hardware.name
    qtbot.keyClicks(picker.search, "rtx 9999 ultra")
    qtbot.keyClick(picker.search, Qt.Key.Key_Return)
    assert s.cfg.hardware.name == before
    assert not picker.error.isHidden()
    assert "unknown hardware" in picker.error.text() and f"still using {before}" in picker.error.text()
    assert "d23c3c" in picker.search.styleSheet()
    qtbot.wait(50)
    assert not picker.error.isHidden()   # not a flash: it stays until fixed
    picker.search.clear()
    qtbot.keyClicks(picker.search, "rtx 3090")
    qtbot.keyClick(picker.search, Qt.Key.Key_Return)
    assert s.cfg.hardware.name.endswith("RTX 3090")
    assert picker.error.isHidden() and picker.search.styleSheet() == ""


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_recommendations_state_the_context_and_take_another(window):
    view = window.recommend
    assert view.requirements().context == api.DEFAULT_CHAT_CONTEXT   # the CLI's default for chat
    view.spin_context.setValue(32_768)
    req = view.requirements()
    assert req.context == 32_768 and not req.context_is_default
    view.spin_context.setValue(0)
    assert view.spin_context.text() == "context: default"
    assert view.requirements().context_is_default


def test_an_imported_model_is_named_by_its_config_and_reports_no_local_path(tmp_path):
    folder = tmp_path / "some-local-folder"
    folder.mkdir()
    shutil.copy(HF_CONFIGS / "llama-2-13b.json", folder / "config.json")
    assert json.loads((folder / "config.json").read_text())["_name_or_path"] == "meta-llama/Llama-2-13b-hf"
    imported = api.import_model(str(folder))
    assert imported.model.name == "Llama-2-13b-hf"
    assert api.import_model(str(folder), name="My 13B").model.name == "My 13B"
    shown = shown_source(imported.model.source)
    assert str(tmp_path) not in shown and shown.startswith("local file some-local-folder/config.json (imported ")
    assert shown_source("hf:Qwen/Qwen3-8B (imported 2026-11-26)") == "hf:Qwen/Qwen3-8B (imported 2026-11-26)"


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_will_it_run_checks_the_weights_in_the_inputs_when_asked(window, qtbot):
    s, view = window.session, window.will_it_run
    assert s.set_inputs(hardware="rtx 4090", runtime="llama.cpp", quant="Q4_K_M")
    window.show_view("will_it_run")
    qtbot.waitUntil(lambda: view.model.rowCount() > 0 and not view.heading.text().startswith("Checking"),
                    timeout=20000)
    assert {r.quant.key for r in view.model.rows if r.quant is not None} != {"q4_k_m"}   # best per model
    assert view.check_quant.text() == "Only Q4_K_M"
    view.check_quant.setChecked(True)
    qtbot.waitUntil(lambda: "in Q4_K_M" in view.heading.text(), timeout=20000)
    assert view.model.rows and {r.quant.key for r in view.model.rows if r.quant is not None} == {"q4_k_m"}
    # using a row keeps the format; a row in another format says that it replaced the inputs' format
    view.check_quant.setChecked(False)
    qtbot.waitUntil(lambda: "in Q4_K_M" not in view.heading.text() and not view.heading.text().startswith(
        "Checking"), timeout=20000)
    other = next(i for i, r in enumerate(view.model.rows) if r.quant is not None and r.quant.key != "q4_k_m")
    messages = []
    s.sig_message.connect(messages.append)
    view.table.selectRow(view.proxy.mapFromSource(view.model.index(other, 0)).row())
    view.load_selected()
    assert s.cfg.quant.key == view.model.rows[other].quant.key
    assert messages and "the inputs had Q4_K_M" in messages[-1]


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_will_it_run_quant_on_the_command_line(capsys):
    from advisor.cli.main import main

    assert main(["will-it-run", "--hardware", "rtx 4090", "--quant", "Q4_K_M", "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["quant"] == "Q4_K_M" and {r["quant"] for r in out["rows"]} == {"Q4_K_M"}
    assert main(["will-it-run", "--hardware", "rtx 4090", "--quant", "Q4_K_M", "--runtime", "vllm"]) == 0
    assert "No model loads in Q4_K_M in vLLM" in capsys.readouterr().out
    assert main(["will-it-run", "--hardware", "rtx 4090", "--quant", "no such format"]) == 2
    assert "unknown" in capsys.readouterr().err


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_freed_memory_goes_back_to_the_system_when_the_window_is_idle(window, qtbot, monkeypatch):
    import sys

    import ui.main_window as mw
    from ui.memory import release_free_memory

    took = release_free_memory()
    assert (took is not None and took >= 0) if sys.platform.startswith("linux") else took is None
    calls = []
    monkeypatch.setattr(mw, "release_free_memory", lambda: calls.append(1) or 0.0)
    window._idle_trim.setInterval(50)
    for prompt in (600, 700, 800):
        assert window.session.set_inputs(prompt=prompt)
    assert not calls                       # not while the inputs are changing
    qtbot.waitUntil(lambda: len(calls) == 1, timeout=5000)   # once, when they stop


def test_charts_read_out_their_values_under_the_pointer(window, qtbot):
    s = window.session
    assert s.set_inputs(hardware="rtx 4090", model="llama 3.1 8b", batch=8)
    window.show_view("curves")
    curves = window.curves
    plot = curves.p_batch
    centre = plot.vb.sceneBoundingRect().center()
    curves.readout._moved(centre)
    text = curves.hover.text()
    assert text.startswith("batch (concurrent users) ") and "per user" in text and text.endswith("— tok/s")
    # the value read is the curve's own at the batch under the pointer
    batch = round(10 ** plot.vb.mapSceneToView(centre).x())
    cb = curves.data["batch"]
    i = int(np.argmin(np.abs(np.log10(cb.x) - np.log10(batch))))
    assert f"per user {num(cb.decode_tok_s[i])}" in text
    # a stacked memory layer reads as its own GB, not the running total
    curves.readout._moved(curves.p_mem_batch.vb.sceneBoundingRect().center())
    assert "weights " in curves.hover.text() and curves.hover.text().endswith("— GB")
    weights = float(curves.hover.text().split("weights ")[1].split(" ")[0])
    assert weights == pytest.approx(s.prediction.weights_gb / max(1, s.cfg.gpus), rel=0.02)
    curves.readout._moved(plot.vb.sceneBoundingRect().topLeft() - QPointF(50, 50))   # off the charts
    assert curves.hover.text() == "hover a chart for its values"
    for tab in ("serving", "compare"):
        window.show_view(tab)
        view = window.view(tab)
        qtbot.waitUntil(lambda: not view.busy, timeout=20000)
        first = view.charts.readout.plots[0]
        view.charts.readout._moved(first.vb.sceneBoundingRect().center())
        assert " · " in view.charts.readout.label.text(), tab


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_recommendations_show_a_first_look_then_everything(window, qtbot):
    s = window.session
    assert s.set_inputs(model="llama 3.1 8b", batch=4, tok_s_target=20)
    window.show_view("recommend")
    view = window.recommend
    qtbot.waitUntil(lambda: not view.busy and view.rec is not None, timeout=60000)
    best_before = [g.best.hardware.key for g in view.groups]
    seen: list[tuple[bool, int, tuple]] = []
    view.model.modelReset.connect(lambda: seen.append((view.first_look, view.model.rowCount(),
                                                       view.rec.requirements.hardware)))
    assert s.set_inputs(prompt=700)   # a new workload: ranked again
    qtbot.waitUntil(lambda: bool(seen) and not view.busy, timeout=60000)
    first, last = seen[0], seen[-1]
    assert first[0] and first[1] > 0                   # rows at once, from the first look …
    assert not last[0] and not view.first_look         # … replaced by the whole ranking
    # the first look ranked the devices that were ranked best last time; the whole ranking every device
    from ui.views.recommend import FIRST_LOOK

    assert first[2] == tuple(best_before[:FIRST_LOOK]) and len(best_before) > FIRST_LOOK and last[2] == ()


def test_the_what_if_chart_reads_out_its_values(window):
    s = window.session
    assert s.set_inputs(hardware="rtx 3060 12gb", model="llama 3.1 8b", quant="Q8_0", runtime="llama.cpp")
    window.show_view("whatifs")
    view = window.whatifs
    assert s.whatif.set(api.Techniques(gpu_layers=16))
    assert view.charts.currentWidget() is view.off_plot_widget
    readout = view.readouts[1]
    readout._moved(view.off_plot.vb.sceneBoundingRect().center())
    text = view.hover.text()
    assert text.startswith("layers on the GPU (-ngl) ") and "fits " in text and text.endswith("— tok/s per user")


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_gpus_the_engine_cannot_split_the_heads_over(window, qtbot):
    """8 × H100 with vLLM: choosing Qwen2.5-7B (28 attention heads) steps the GPU count down to 4 and
    says so; Will it run leaves such models out of its table and says how many."""
    s, view = window.session, window.will_it_run
    assert s.set_inputs(hardware="h100 sxm", runtime="vllm", model="llama 3.1 8b", gpus=8)
    messages = []
    s.sig_message.connect(messages.append)
    assert s.set_inputs(model="qwen2.5 7b")
    assert s.cfg.gpus == 4 and any("8 → 4" in m for m in messages), messages
    assert s.set_inputs(model="llama 3.1 8b", gpus=8) and s.cfg.gpus == 8
    window.show_view("will_it_run")
    qtbot.waitUntil(lambda: view.model.rowCount() > 0 and not view.heading.text().startswith("Checking"),
                    timeout=20000)
    assert "left out" in view.heading.text() and "Qwen2.5 7B" in view.heading.toolTip()
    assert "qwen2.5-7b" not in {r.model.key for r in view.model.rows}
