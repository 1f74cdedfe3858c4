"""The app driven through its real widgets; assertions on the Session and on the plot items' data."""

from __future__ import annotations

import pytest

import math

import numpy as np
from PySide6.QtCore import Qt


def test_prompt_slider_moves_the_prefill_point_and_raises_ttft(window, qtbot):
    s = window.session
    window.show_view("roofline")
    before_xy = window.roofline.point_xy("prefill")
    before_ttft = s.prediction.ttft_ms
    slider = window.inputs.prompt.slider
    slider.setValue(slider.value() + 200)  # the same signal a drag emits
    assert s.cfg.workload.prompt_tokens > 512
    assert s.prediction.ttft_ms > before_ttft
    after_xy = window.roofline.point_xy("prefill")
    assert after_xy != before_xy
    r = s.roofline
    prefill = next(p for p in r.points if p.name == "prefill")
    assert after_xy == (prefill.intensity, prefill.attained_tflops)
    # the spin box shows the value the slider chose
    assert window.inputs.spin_prompt.value() == s.cfg.workload.prompt_tokens


def test_spin_box_change_updates_the_ttft_curve_marker(window, qtbot):
    window.show_view("curves")
    curves = window.curves
    drawn = dict(curves.draws)
    window.inputs.spin_prompt.setValue(4096)
    # the marker is a point at (1, 1) moved to log10 of the inputs' own prompt and TTFT
    pos = curves.ttft_now.pos()
    assert curves.ttft_now.isVisible()
    assert np.isclose(10 ** pos.x(), 4096) and np.isclose(10 ** pos.y(), window.session.prediction.ttft_ms)
    cp = curves.data["prompt"]
    assert np.all(np.diff(cp.ttft_ms) >= 0)  # a longer prompt never shortens TTFT
    # TTFT vs prompt does not depend on the prompt in force: only its marker moved
    assert curves.draws["prompt"] == drawn["prompt"]
    assert curves.draws["batch"] == drawn["batch"] + 1 and curves.draws["depth"] == drawn["depth"] + 1
    window.session.set_inputs(batch=4)
    assert curves.draws["prompt"] == drawn["prompt"] + 1


def test_bigger_model_lowers_max_batch(window, qtbot):
    s = window.session
    assert s.set_inputs(hardware="h100 sxm")
    small = s.prediction.max_batch
    picker = window.inputs.model_picker
    qtbot.keyClicks(picker.search, "llama 3.1 70b")
    qtbot.keyClick(picker.search, Qt.Key.Key_Return)
    assert s.cfg.model.key.startswith("llama-3.1-70b")
    assert s.prediction.max_batch < small
    # 70B in BF16 does not fit one 80 GB H100: no user fits, which reads as a dash, not "0"
    assert s.prediction.max_batch == 0 and not s.prediction.fits
    assert window.results.cards["max_batch"].value.text() == "—"
    assert s.set_inputs(gpus=2)
    assert window.results.cards["max_batch"].value.text() == f"{s.prediction.max_batch:,}"


def test_infeasible_workload_shows_the_shortfall(window):
    s = window.session
    assert s.set_inputs(model="llama 3.1 70b", hardware="rtx 4090", runtime="vllm", quant="bf16")
    p = s.prediction
    assert not p.fits and p.shortfall_gb > 0
    card = window.results.cards["fits"]
    assert card.value.text() == "No"
    assert "short by" in card.detail.text()


def test_impossible_change_is_refused_inline_and_the_widgets_show_what_is_in_force(window):
    s = window.session
    before = s.cfg
    errors = []
    s.sig_error.connect(errors.append)
    assert not s.set_inputs(gpus=10_000)
    assert s.cfg == before and errors
    assert window.inputs.spin_gpus.value() == before.gpus
    assert "⚠" in window.statusBar().currentMessage()


def test_undo_restores_the_previous_inputs(window):
    s = window.session
    first = s.cfg
    window.inputs.spin_batch.setValue(8)
    s._last_merge = ("", 0.0)  # a separate edit, not part of the same drag
    window.inputs.spin_output.setValue(1000)
    assert s.cfg.workload.batch == 8 and s.cfg.workload.output_tokens == 1000
    window.act_undo.trigger()
    assert s.cfg.workload.output_tokens == first.workload.output_tokens and s.cfg.workload.batch == 8
    assert window.inputs.spin_output.value() == first.workload.output_tokens
    window.act_undo.trigger()
    assert s.cfg == first
    window.act_redo.trigger()
    assert s.cfg.workload.batch == 8


def test_slider_drag_is_one_undo_step(window):
    s = window.session
    first = s.cfg
    for v in (100, 200, 300, 400):
        window.inputs.prompt.slider.setValue(window.inputs.prompt.slider.value() + 20)
    s.undo()
    assert s.cfg == first


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_a_recommendation_row_loads_into_the_inputs(window, qtbot):
    s = window.session
    s.set_inputs(batch=4)
    view = window.recommend
    view.spin_max_gpus.setValue(1)  # a smaller sweep keeps the test quick
    window.show_view("recommend")
    qtbot.waitUntil(lambda: view.model.rowCount() > 0, timeout=15000)
    view.table.selectRow(0)
    c = view.selected()
    assert c.ok
    view.btn_copy.click()  # the launch line goes to the clipboard
    from PySide6.QtGui import QGuiApplication

    assert QGuiApplication.clipboard().text() == c.launch != ""
    view.btn_load.click()
    assert s.cfg.hardware.key == c.hardware.key
    assert (s.cfg.runtime.key, s.cfg.quant.key, s.cfg.kv_dtype.key, s.cfg.gpus) == \
        (c.runtime.key, c.quant.key, c.kv_dtype.key, c.gpus)
    star = [c.title for c in view.model.columns].index("★")
    assert "★" in "".join(view.model.cell_text(r, star) for r in range(view.model.rowCount()))
    view.check_pareto.setChecked(True)
    assert view.model.rowCount() > 0 and all(c.pareto for c in view.model.rows)


def test_why_shows_the_formula_with_this_workloads_numbers(window):
    window.results.cards["ttft"].why.click()
    text = window.results.why_box.toPlainText()
    assert "TTFT" in text or "first token" in text.lower()
    assert "512" in text  # this workload's prompt
    assert "Efficiency profile" in text


def test_roofline_has_roofs_bandwidth_and_hover_text(window):
    window.show_view("roofline")
    r = window.session.roofline
    v = window.roofline
    for dtype, peak in r.roofs.items():
        x, y = v.roofs[dtype].getOriginalDataset()
        assert y[0] == peak
    text = v.describe("decode")
    assert "FLOP/byte" in text and "TFLOP/s" in text


def test_curves_mark_the_kv_limit(window):
    window.show_view("curves")
    p = window.session.prediction
    assert math.isclose(10 ** window.curves.kv_limit.value(), p.max_batch, rel_tol=1e-9)
    x, total = window.curves.mem_batch["tops"][-1].getOriginalDataset()
    assert len(x) > 50 and np.all(np.diff(total) >= -1e-9)  # more users never need less memory


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_compare_and_will_it_run(window, qtbot):
    s = window.session
    window.show_view("compare")
    s.compare.pin()
    s.set_inputs(hardware="rtx 3090")
    window.compare.btn_pin.click()
    assert len(s.compare) == 2 and window.compare.table.columnCount() == 2
    assert all(len(line.getOriginalDataset()[0]) > 10 for line in window.compare.lines_batch[:2])
    window.show_view("will_it_run")
    qtbot.waitUntil(lambda: window.will_it_run.model.rowCount() > 0, timeout=10000)
    assert window.will_it_run.model.rowCount() == len(s.cat.models)


def test_exports(window, tmp_path):
    window.show_view("roofline")
    assert window.export_chart(tmp_path / "roof.png") and (tmp_path / "roof.png").stat().st_size > 1000
    assert window.export_chart(tmp_path / "roof.svg") and "<svg" in (tmp_path / "roof.svg").read_text()
    assert window.export_csv(tmp_path / "fig.csv")
    assert "ttft_ms" in (tmp_path / "fig.csv").read_text()
    assert window.act_report.isEnabled()


def test_uncaught_exception_shows_a_dialog_without_blocking(qtbot):
    import sys

    from ui import errors

    try:
        raise RuntimeError("boom")
    except RuntimeError:
        errors.report(*sys.exc_info())
    dlg = errors.shown[-1]
    qtbot.addWidget(dlg)
    assert dlg.isVisible() and "boom" in dlg.details
    dlg.copy_details()
    from PySide6.QtGui import QGuiApplication

    assert "RuntimeError" in QGuiApplication.clipboard().text()
    dlg.close()


def test_probe_runs_in_the_background_and_adds_this_machine(window, qtbot, monkeypatch, private_user_data):
    import probes

    from ui.views import probe as probe_view

    def fake_probe(quick, progress):  # the real quick probe, with CPU figures filled in (the full one takes seconds)
        progress("reading the CPU and memory")
        r = probes.probe(quick=True)
        r.cpu.copy_gb_s, r.cpu.fp32_gflops = 20.0, 100.0
        r.cpu.ram_gb = r.cpu.ram_gb or 16.0
        return r

    monkeypatch.setattr(probe_view, "_probe", fake_probe)
    window.show_view("probe")
    view = window.probe
    view.btn_probe.click()
    qtbot.waitUntil(lambda: view.btn_use.isEnabled(), timeout=10000)
    assert "reading the CPU" in view.log.toPlainText()
    assert view.table.rowCount() > 0
    combo = window.inputs.hw_picker.combo
    assert combo.findData("this-machine") >= 0
    view.btn_use.click()
    assert window.session.cfg.hardware.key == "this-machine"


def test_about_and_copy(window):
    import advisor
    from PySide6.QtGui import QGuiApplication

    assert advisor.__version__ in window.about_text()
    window.show_view("roofline")
    window.act_copy.trigger()
    assert "Llama" in QGuiApplication.clipboard().text()


def test_unknown_name_is_reported_in_the_status_bar(window, qtbot):
    before = window.session.cfg
    picker = window.inputs.hw_picker
    qtbot.keyClicks(picker.search, "zzz no such gpu 9999")
    qtbot.keyClick(picker.search, Qt.Key.Key_Return)
    assert window.session.cfg == before
    assert "⚠" in window.statusBar().currentMessage()


def test_model_filters_narrow_the_picker(window):
    picker = window.inputs.model_picker
    moe = picker.filters["is_moe"]
    moe.setCurrentIndex(moe.findData("True"))
    keys = [picker.combo.itemData(i) for i in range(picker.combo.count())]
    cat = window.session.cat
    assert all(cat.models[k].is_moe or k == window.session.cfg.model.key for k in keys)
    assert len(keys) < len(cat.models)


def test_workload_stays_within_the_models_context(window):
    s = window.session
    ctx = s.cfg.model.native_context
    window.inputs.spin_prompt.setValue(ctx)  # with 128 output tokens this would overflow the context
    w = s.cfg.workload
    assert w.prompt_tokens + w.output_tokens + w.depth_tokens == ctx
    assert w.output_tokens == 128
    small = min(s.cat.models.values(), key=lambda m: m.native_context)
    assert small.native_context < ctx
    assert s.set_inputs(model=small.key)  # a shorter model shrinks the workload instead of refusing
    w = s.cfg.workload
    assert w.prompt_tokens + w.output_tokens + w.depth_tokens <= small.native_context



def test_a_catalog_entry_that_failed_validation_is_shown_and_the_app_runs(qtbot, private_user_data, settings_path):
    from advisor import api

    from ui.main_window import MainWindow
    from ui.session import Session
    from ui.settings import Settings

    private_user_data.mkdir(parents=True, exist_ok=True)
    (private_user_data / "mine.yaml").write_text(
        "hardware:\n- key: my-gpu\n  vendor: NVIDIA\n  name: My GPU\n  kind: consumer\n  family: nvidia-ada\n"
        "  memory_gib: lots\n  bandwidth_gb_s: 1000\n  source: me\n")
    cat = api.load_catalog()
    assert cat.issues
    w = MainWindow(session=Session(cat), settings=Settings(settings_path), restore=False)
    qtbot.addWidget(w)
    assert "skipped" in w.catalog_label.text()
    assert "my-gpu" in w.catalog_label.toolTip() or "memory" in w.catalog_label.toolTip()
    assert w.session.prediction is not None


def test_dragging_the_batch_slider_with_the_mouse(window, qtbot):
    from PySide6.QtCore import QPoint
    from PySide6.QtWidgets import QStyle, QStyleOptionSlider

    slider = window.inputs.batch.slider
    opt = QStyleOptionSlider()
    slider.initStyleOption(opt)
    handle = slider.style().subControlRect(QStyle.ComplexControl.CC_Slider, opt,
                                           QStyle.SubControl.SC_SliderHandle, slider)
    start = handle.center()
    qtbot.mousePress(slider, Qt.MouseButton.LeftButton, pos=start)
    for i in range(1, 11):
        qtbot.mouseMove(slider, QPoint(start.x() + i * (slider.width() // 20), start.y()))
    qtbot.mouseRelease(slider, Qt.MouseButton.LeftButton, pos=QPoint(start.x() + slider.width() // 2, start.y()))
    s = window.session
    assert s.cfg.workload.batch > 1
    assert window.inputs.spin_batch.value() == s.cfg.workload.batch
    assert s.prediction.batch == s.cfg.workload.batch
    s.undo()  # the whole drag is one undo step
    assert s.cfg.workload.batch == 1


def test_recolours_when_the_system_switches_light_and_dark(window):
    import pyqtgraph as pg

    window.show_view("curves")
    window._on_color_scheme_changed()  # what Qt calls on a system switch; must not fail
    assert all(isinstance(w, pg.GraphicsView) for w in window.findChildren(pg.GraphicsView))


@pytest.mark.slow   # over half a second here: a recommendation of DeepSeek-R1 across nodes
def test_a_recommendation_across_nodes_shows_its_layout_and_exports(window, qtbot, tmp_path):
    """DeepSeek-R1 for 2,000 users on datacenter GPUs: rows across nodes show their layout and power;
    Export deployment writes the engine's per-node scripts, and a compose file for a plan across
    machines is refused in the status bar with nothing written."""
    s = window.session
    assert s.set_inputs(model="deepseek-r1", hardware="h100-sxm5-80gb", batch=2000)
    view = window.recommend
    view.spin_max_gpus.setValue(4096)
    view.combo_vendor.setCurrentIndex(view.combo_vendor.findData("NVIDIA"))
    view.combo_kind.setCurrentIndex(view.combo_kind.findData("datacenter"))
    view.spin_min_bits.setValue(8)
    window.show_view("recommend")
    qtbot.waitUntil(lambda: view.model.rowCount() > 0 and not view.computing and not view.first_look, timeout=60000)
    layout_col = [c.title for c in view.model.columns].index("Layout")
    power_col = [c.title for c in view.model.columns].index("Power kW")
    rows = [r for r in range(view.model.rowCount()) if "nodes" in view.model.cell_text(r, layout_col)]
    assert rows, "no configuration across nodes"
    r = rows[0]
    assert view.model.cell_text(r, power_col) not in ("", "—")
    view.table.selectRow(view.proxy.mapFromSource(view.model.index(r, 0)).row())
    c = view.selected()
    assert c.nodes > 1
    written = view.export_selected("launch", str(tmp_path / "launch"))
    assert written and all(p.exists() for p in written) and written[0].name == "node0.sh"
    messages = []
    s.sig_message.connect(messages.append)
    assert view.export_selected("compose", str(tmp_path / "compose")) == []
    assert messages and "Not exported" in messages[-1] and not (tmp_path / "compose").exists()
    view.load_selected()   # the layout comes along into the inputs
    assert s.cfg.gpus == c.gpus and (s.cfg.layout is None or s.cfg.layout == c.layout)


def test_the_split_combo_offers_the_layouts_the_runtime_runs(window):
    """DeepSeek-R1 on 16 H100s with SGLang: the split combo offers attention DP 16 + EP 16 and TP 8 + PP 2
    besides tensor parallel; choosing one makes it the inputs' layout, choosing tensor parallel clears it;
    a dense model gets no EP choice."""
    s = window.session
    assert s.set_inputs(model="deepseek-r1", hardware="h100-sxm5-80gb", runtime="sglang", gpus=16)
    combo = window.inputs.combo_par
    labels = [combo.itemText(i) for i in range(combo.count())]
    assert "attention DP 16 + EP 16" in labels and "TP 8 + PP 2" in labels
    combo.activated.emit(labels.index("attention DP 16 + EP 16"))
    assert s.cfg.layout is not None and s.cfg.layout.ep == 16
    assert combo.currentText() == "attention DP 16 + EP 16"
    assert "EP 16" in s.prediction.parallelism
    combo.activated.emit([combo.itemText(i) for i in range(combo.count())].index("tensor parallel (tp)"))
    assert s.cfg.layout is None and s.cfg.parallelism == "tp"
    assert s.set_inputs(model="llama-3.1-70b")
    assert not any("EP" in combo.itemText(i) for i in range(combo.count()))
