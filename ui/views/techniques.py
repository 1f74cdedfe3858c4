"""What-ifs: one serving technique at a time on top of the configuration on screen, before → after.

The techniques are the core's (`api.techniques`, issue 18): speculative decoding with a catalog
draft or an MTP/EAGLE-style head, flash attention off, the attention layout (MHA / GQA:G / MQA) and
partial offload to host memory (llama.cpp ``-ngl``, vLLM/SGLang ``--cpu-offload-gb``). The widgets
here only describe the technique; the session's `WhatIf` (ui/tab_state.py) holds it and recomputes
its effect on every input change, and this view renders its ``effects``: a table of TTFT,
decode speed, throughput, max batch, memory per GPU and fits, the technique's notes, and a chart
where the physics has a curve (speed-up against batch with the crossover batch; decode speed
against the GPU layers or the offloaded GB). Each redraw costs one `speculative_curve` or
`offload_curve` call (about a millisecond), so it runs on the GUI thread.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QButtonGroup, QComboBox, QDoubleSpinBox, QFormLayout, QHBoxLayout, QHeaderView, QLabel,
                               QRadioButton, QSizePolicy, QSpinBox, QSplitter, QStackedWidget, QTableWidget,
                               QTableWidgetItem, QToolButton, QVBoxLayout, QWidget)

from advisor import api
from advisor.text.format import num
from ui.series import Series
from ui.views.curves import frame
from ui.tabs import TabView
from ui.widgets import HoverReadout, LazyView, Steady, plot_colors, set_quietly

KINDS = (("speculative", "Speculative decoding"), ("eager", "Flash attention off (eager attention)"),
         ("attention", "Attention layout: MHA / GQA / MQA"), ("offload", "Partial offload to host memory"))
#: the table's rows before any technique is computed (the same labels `api.technique_rows` gives)
ROW_LABELS = ("Time to first token", "Decode speed per user", "All users", "Max batch", "Memory per GPU", "Fits")
HEADERS = ("", "Before", "After", "Change")
#: the batches the speed-up chart samples: 1 … 4096 (the core's crossover search), 256 log-spaced
CHART_BATCHES = np.unique(np.round(np.logspace(0, np.log10(4096), 256)))
#: what an untouched draft length / acceptance shows: the core's default for each kind of draft
DEFAULT_FOR = {"draft": api.Techniques(), "head": api.Techniques(head_params_b=1.0)}


def sample_curve(curve: "api.SpeculativeCurve", batches: np.ndarray) -> "api.SpeculativeCurve":
    """``curve`` at the given batches (those it was computed at: 1…N, one per batch)."""
    index = np.searchsorted(curve.batch, batches[batches <= curve.batch[-1]])
    return dataclasses.replace(curve, **{name: getattr(curve, name)[index] for name in (
        "batch", "plain_tok_s", "speculative_tok_s", "speedup", "draft_step_ms", "verify_step_ms", "plain_step_ms")})


def one_layer_params_b(m) -> float:
    """Parameters (billions) of one of the target's decoder layers: what an EAGLE-style one-layer head
    adds (it shares the embedding and output head with the target)."""
    embed = m.vocab * m.hidden * (1 if m.tie_embeddings else 2) / 1e9
    return max((m.params_total_b - embed) / max(m.layers, 1), 0.001)


class TechniquesView(LazyView, TabView):
    def __init__(self, session, parent=None):
        super().__init__(session, parent)
        col = plot_colors()
        self._model_key = ""
        self._runtime_key = ""
        self._k_touched = self._accept_touched = self._layers_touched = self._gb_touched = False
        self._offload_mode = ""          # "layers", "gb", or "" (the runtime has no partial offload)
        self._offload_reset = True       # the model or runtime changed since the offload page was synced
        self.effect: api.TechniqueEffect | None = None
        self.spec_curve: api.SpeculativeCurve | None = None
        self.offload_curve: api.OffloadCurve | None = None
        self.offload_message = ""
        #: a technique chosen outside the widgets (a sizing file, the settings), shown at the next render
        self._pending: api.Techniques | None = session.whatif.techniques  # the tab is built on first use

        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        top = QHBoxLayout()
        top.addWidget(QLabel("What if:"))
        self.kind = QComboBox()
        self.kind.setObjectName("whatif_kind")
        for key, label in KINDS:
            self.kind.addItem(label, key)
        self.kind.setToolTip("A serving technique applied to the configuration on the left; the table shows "
                             "before → after at the workload on screen")
        top.addWidget(self.kind)
        top.addStretch(1)
        lay.addLayout(top)

        self.pages = QStackedWidget()
        self.pages.addWidget(self._speculative_page())
        eager = QLabel("The attention scores are materialised in fp32 instead of a fused flash-attention kernel: "
                       "prefill moves and holds the score matrix, so long prompts slow down and need more "
                       "workspace; decoding is barely affected.")
        eager.setWordWrap(True)
        self.pages.addWidget(eager)
        self.pages.addWidget(self._attention_page())
        self.pages.addWidget(self._offload_page())
        self._fit_pages()
        lay.addWidget(self.pages)

        self.summary = QLabel()
        self.summary.setObjectName("whatif_summary")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        lay.addWidget(Steady(self.summary))

        split = QSplitter(Qt.Orientation.Horizontal)
        left = QWidget()
        ll = QVBoxLayout(left)
        ll.setContentsMargins(0, 0, 0, 0)
        self.table = QTableWidget(len(ROW_LABELS), len(HEADERS))
        self.table.setObjectName("whatif_table")
        self.table.setHorizontalHeaderLabels(HEADERS)
        self.table.verticalHeader().hide()
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.ResizeToContents)
        self.table.horizontalHeader().setStretchLastSection(True)
        for i, label in enumerate(ROW_LABELS):
            self.table.setItem(i, 0, QTableWidgetItem(label))
            for j in (1, 2, 3):
                item = QTableWidgetItem("—")
                item.setTextAlignment(Qt.AlignmentFlag.AlignRight | Qt.AlignmentFlag.AlignVCenter)
                self.table.setItem(i, j, item)
        self.table.resizeRowsToContents()
        frame_px = 2 * self.table.frameWidth()
        self.table.setFixedHeight(self.table.horizontalHeader().sizeHint().height()
                                  + self.table.verticalHeader().length() + frame_px + 2)
        self.table.setVerticalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        ll.addWidget(self.table)
        self.notes = QLabel()
        self.notes.setObjectName("whatif_notes")
        self.notes.setWordWrap(True)
        self.notes.setTextFormat(Qt.TextFormat.RichText)
        self.notes.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.notes.setAlignment(Qt.AlignmentFlag.AlignTop)
        ll.addWidget(Steady(self.notes), 1)
        split.addWidget(left)

        # the charts: created once, updated with setData
        self.charts = QStackedWidget()
        self.spec_plot_widget, self.spec_plot = self._plot("Speculative decoding: speed-up vs batch",
                                                           "batch (sequences)", "speed-up ×", (10, -10))
        self.spec_plot.setLogMode(True, False)
        self.spec_line = Series(self.spec_plot, pen=pg.mkPen(col["a"], width=2), name="speed-up")
        self.spec_now = self.spec_plot.plot([], [], pen=None, symbol="o", symbolSize=10, symbolBrush=col["d"],
                                            name="this batch")
        self.spec_one = pg.InfiniteLine(pos=1.0, angle=0,
                                        pen=pg.mkPen(col["muted"], width=1, style=Qt.PenStyle.DashLine))
        self.spec_cross = pg.InfiniteLine(angle=90, pen=pg.mkPen(col["b"], width=1.5), label="",
                                          labelOpts={"position": 0.85, "color": col["b"]})
        self.spec_plot.addItem(self.spec_one, ignoreBounds=True)
        self.spec_plot.addItem(self.spec_cross, ignoreBounds=True)
        self.off_plot_widget, self.off_plot = self._plot("Partial offload: decode speed vs GPU layers",
                                                         "layers on the GPU", "tok/s per user", (10, 10))
        self.off_line = Series(self.off_plot, pen=pg.mkPen(col["a"], width=2), name="fits")
        self.off_nofit = self.off_plot.plot([], [], pen=None, symbol="x", symbolSize=7, symbolPen=col["d"],
                                            name="does not fit")
        self.off_now = self.off_plot.plot([], [], pen=None, symbol="o", symbolSize=10, symbolBrush=col["d"],
                                          name="chosen")
        self.no_chart = QLabel("No chart for this technique: the table shows its effect at the workload on "
                               "screen; move the prompt, depth or users to see it change.")
        self.no_chart.setWordWrap(True)
        self.no_chart.setAlignment(Qt.AlignmentFlag.AlignCenter)
        for w in (self.spec_plot_widget, self.off_plot_widget, self.no_chart):
            self.charts.addWidget(w)
        # what is under the pointer, on either chart, in one line under them
        self.hover = QLabel()
        self.hover.setObjectName("whatifs_hover")
        self.hover.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.readouts = [HoverReadout(w, [p], self.hover, "hover the chart for its values")
                         for w, p in ((self.spec_plot_widget, self.spec_plot), (self.off_plot_widget, self.off_plot))]
        box = QWidget()
        box_lay = QVBoxLayout(box)
        box_lay.setContentsMargins(0, 0, 0, 0)
        box_lay.addWidget(self.charts, 1)
        box_lay.addWidget(self.hover)
        split.addWidget(box)
        split.setSizes([420, 560])
        lay.addWidget(split, 1)

        self.kind.currentIndexChanged.connect(self._on_kind)
        session.whatif.sig_changed.connect(self._on_techniques_changed)

    # ------------------------------------------------------------------ building
    def _plot(self, title: str, xlabel: str, ylabel: str,
              legend_at: tuple[int, int]) -> tuple[pg.PlotWidget, pg.PlotItem]:
        """A chart; ``legend_at`` is pyqtgraph's legend offset (negative: from the right or bottom),
        put where its curve leaves room."""
        w = pg.PlotWidget(title=title)
        p = w.getPlotItem()
        p.setLabel("bottom", xlabel)
        p.setLabel("left", ylabel)
        for ax in ("bottom", "left"):
            p.getAxis(ax).enableAutoSIPrefix(False)
        p.setMenuEnabled(False)
        p.setMouseEnabled(x=False, y=False)
        p.disableAutoRange()
        # no grid: its translucent lines across the chart were a fifth of an input change on a
        # software renderer; the dashed break-even line and the crossover mark what matters
        p.addLegend(offset=legend_at, labelTextSize="7pt")
        return w, p

    def _speculative_page(self) -> QWidget:
        page = QWidget()
        form = QFormLayout(page)
        form.setContentsMargins(0, 0, 0, 0)
        self.radio_draft = QRadioButton("Draft model")
        self.radio_head = QRadioButton("Draft head")
        self.radio_draft.setToolTip("A smaller model of the same tokenizer family proposes the tokens")
        self.radio_head.setToolTip("An MTP/EAGLE-style head on the target proposes them; it shares the target's "
                                   "embedding and output head")
        self._draft_group = QButtonGroup(self)
        self._draft_group.addButton(self.radio_draft)
        self._draft_group.addButton(self.radio_head)
        self.radio_draft.setChecked(True)
        self.draft = QComboBox()
        self.draft.setObjectName("whatif_draft")
        self.draft.setToolTip("Catalog models that can draft for this model (same tokenizer, smaller)")
        self.draft.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
        self.draft.setMinimumContentsLength(14)
        row = QHBoxLayout()
        row.addWidget(self.radio_draft)
        row.addWidget(self.draft, 1)
        row.addSpacing(12)
        row.addWidget(self.radio_head)
        self.head_b = QDoubleSpinBox()
        self.head_b.setObjectName("whatif_head_b")
        self.head_b.setRange(0.001, 100.0)
        self.head_b.setDecimals(3)
        self.head_b.setSuffix(" B params")
        self.head_b.setKeyboardTracking(False)
        self.head_b.setToolTip("Parameters of the head's own layers (set to one decoder layer of the target when "
                               "the model changes, as in an EAGLE head)")
        self.head_layers = QSpinBox()
        self.head_layers.setRange(1, 16)
        self.head_layers.setSuffix(" layer(s)")
        self.head_layers.setToolTip("Decoder layers in the head")
        row.addWidget(self.head_b)
        row.addWidget(self.head_layers)
        row.addStretch(1)
        form.addRow(row)
        row = QHBoxLayout()
        self.spin_k = QSpinBox()
        self.spin_k.setObjectName("whatif_k")
        self.spin_k.setRange(1, 64)
        self.spin_k.setPrefix("k = ")
        self.spin_k.setKeyboardTracking(False)
        self.spin_k.setToolTip("Draft length: tokens proposed per round")
        self.spin_accept = QDoubleSpinBox()
        self.spin_accept.setObjectName("whatif_accept")
        self.spin_accept.setRange(0.0, 0.99)
        self.spin_accept.setSingleStep(0.05)
        self.spin_accept.setDecimals(2)
        self.spin_accept.setPrefix("α = ")
        self.spin_accept.setKeyboardTracking(False)
        self.spin_accept.setToolTip("Acceptance rate per drafted token; it depends on the task and the pair "
                                    "(runtimes log it)")
        self.typical = QToolButton()
        self.typical.setText("typical")
        self.typical.setToolTip("Back to the typical k and α for this kind of draft (sourced in the core)")
        row.addWidget(self.spin_k)
        row.addWidget(self.spin_accept)
        row.addWidget(self.typical)
        row.addStretch(1)
        form.addRow(row)
        self.radio_draft.toggled.connect(lambda _on: self._on_draft_kind())
        self.draft.activated.connect(lambda _i: self._push())
        self.head_b.valueChanged.connect(lambda _v: self._push())
        self.head_layers.valueChanged.connect(lambda _v: self._push())
        self.spin_k.valueChanged.connect(lambda _v: self._touch("k"))
        self.spin_accept.valueChanged.connect(lambda _v: self._touch("accept"))
        self.typical.clicked.connect(self._typical)
        return page

    def _attention_page(self) -> QWidget:
        page = QWidget()
        row = QHBoxLayout(page)
        row.setContentsMargins(0, 0, 0, 0)
        self.layout_combo = QComboBox()
        self.layout_combo.setObjectName("whatif_attention")
        self.layout_combo.setToolTip("KV heads: MHA has one per query head, GQA groups them, MQA shares one")
        self.layout_combo.activated.connect(lambda _i: self._push())
        row.addWidget(QLabel("Layout"))
        row.addWidget(self.layout_combo)
        row.addStretch(1)
        return page

    def _offload_page(self) -> QWidget:
        page = QWidget()
        row = QHBoxLayout(page)
        row.setContentsMargins(0, 0, 0, 0)
        self.spin_layers = QSpinBox()
        self.spin_layers.setObjectName("whatif_gpu_layers")
        self.spin_layers.setPrefix("GPU layers ")
        self.spin_layers.setKeyboardTracking(False)
        self.spin_layers.setToolTip("llama.cpp -ngl: layers kept on the GPU; the CPU runs the rest from host RAM")
        self.spin_gb = QDoubleSpinBox()
        self.spin_gb.setObjectName("whatif_offload_gb")
        self.spin_gb.setRange(0.0, 10000.0)
        self.spin_gb.setDecimals(1)
        self.spin_gb.setSuffix(" GB offloaded")
        self.spin_gb.setKeyboardTracking(False)
        self.spin_gb.setToolTip("vLLM/SGLang --cpu-offload-gb: weights kept in pinned host memory, read over PCIe "
                                "on every forward pass")
        self.spin_host = QDoubleSpinBox()
        self.spin_host.setRange(1.0, 2000.0)
        self.spin_host.setDecimals(1)
        self.spin_host.setValue(api.Techniques().host_bandwidth_gb_s)
        self.spin_host.setPrefix("host RAM ")
        self.spin_host.setSuffix(" GB/s")
        self.spin_host.setKeyboardTracking(False)
        self.spin_host.setToolTip("Peak bandwidth of the host's memory (the default is dual-channel DDR5-5600)")
        self.offload_label = QLabel()
        self.offload_label.setWordWrap(True)
        for w in (self.spin_layers, self.spin_gb, self.spin_host):
            row.addWidget(w)
        row.addWidget(self.offload_label, 1)
        self.spin_layers.valueChanged.connect(lambda _v: self._touch("layers"))
        self.spin_gb.valueChanged.connect(lambda _v: self._touch("gb"))
        self.spin_host.valueChanged.connect(lambda _v: self._push())
        return page

    # ------------------------------------------------------------------ widgets → session
    def _touch(self, what: str) -> None:
        setattr(self, f"_{what}_touched", True)
        self._push()

    def _typical(self) -> None:
        self._k_touched = self._accept_touched = False
        self._show_typical()
        self._push()

    def _on_draft_kind(self) -> None:
        self.draft.setEnabled(self.radio_draft.isChecked())
        self.head_b.setEnabled(self.radio_head.isChecked())
        self.head_layers.setEnabled(self.radio_head.isChecked())
        self._show_typical()
        self._push()

    def _on_kind(self, _index: int) -> None:
        if self.kind.currentData() == "offload":
            self._sync_offload()
        self.pages.setCurrentIndex(self.kind.currentIndex())
        self._fit_pages()
        self._push()

    def _fit_pages(self) -> None:
        """The options take the height of the page shown, not of the tallest page."""
        for i in range(self.pages.count()):
            policy = QSizePolicy.Policy.Preferred if i == self.pages.currentIndex() else QSizePolicy.Policy.Ignored
            self.pages.widget(i).setSizePolicy(policy, policy)
        self.pages.setFixedHeight(self.pages.currentWidget().sizeHint().height())

    def _show_typical(self) -> None:
        d = DEFAULT_FOR["draft" if self.radio_draft.isChecked() else "head"]
        for spin, touched, value in ((self.spin_k, self._k_touched, d.k), (self.spin_accept, self._accept_touched,
                                                                           d.alpha)):
            if not touched:
                set_quietly(spin, value)

    def chosen(self) -> "api.Techniques":
        """The technique the widgets describe."""
        kind = self.kind.currentData()
        if kind == "speculative":
            k = self.spin_k.value() if self._k_touched else None
            accept = self.spin_accept.value() if self._accept_touched else None
            if self.radio_draft.isChecked():
                key = self.draft.currentData()
                draft = self.session.cat.models.get(key) if key else None
                if draft is None:  # no catalog model can draft: the core says why for the target itself
                    draft = self.session.cfg.model
                return api.Techniques(draft=draft, draft_k=k, accept=accept)
            return api.Techniques(head_params_b=self.head_b.value(), head_layers=self.head_layers.value(),
                                  draft_k=k, accept=accept)
        if kind == "eager":
            return api.Techniques(flash_attention=False)
        if kind == "attention":
            return api.Techniques(attention=self.layout_combo.currentData() or "mha")
        host = self.spin_host.value()
        if self._offload_mode == "gb":
            return api.Techniques(offload_gb=self.spin_gb.value(), host_bandwidth_gb_s=host)
        return api.Techniques(gpu_layers=self.spin_layers.value(), host_bandwidth_gb_s=host)

    def _push(self) -> None:
        tech = self.chosen()
        if tech != self.session.whatif.techniques:
            self.session.whatif.set(tech)

    # ------------------------------------------------------------------ session → widgets
    def _sync_options(self) -> None:
        """Refill what depends on the model and runtime (drafts, layouts, offload range), keeping the
        user's choices where they still apply."""
        s = self.session
        cfg = s.cfg
        model_changed = cfg.model.key != self._model_key
        runtime_changed = cfg.runtime.key != self._runtime_key or model_changed
        if model_changed:
            self._model_key = cfg.model.key
            self._fill_drafts()
            self._fill_layouts()
            self.head_b.blockSignals(True)
            self.head_b.setValue(one_layer_params_b(cfg.model))
            self.head_b.blockSignals(False)
            self._layers_touched = self._gb_touched = False
        self._runtime_key = cfg.runtime.key
        self._offload_reset = self._offload_reset or runtime_changed
        if self.kind.currentData() == "offload":
            # the offload range costs a curve: only while that page is chosen (`_on_kind` syncs it
            # when the user turns to it)
            self._sync_offload()
        self._show_typical()

    def _fill_drafts(self) -> None:
        target = self.session.cfg.model
        current = self.draft.currentData()
        drafts = sorted((m for m in self.session.cat.models.values() if not api.draft_refusal(m, target)),
                        key=lambda m: (m.params_total_b, m.name.lower()))
        self.draft.blockSignals(True)
        self.draft.clear()
        for m in drafts:
            self.draft.addItem(f"{m.name} ({num(m.params_total_b)} B)", m.key)
        if not drafts:
            self.draft.addItem(f"no catalog model can draft for {target.name}", "")
        i = self.draft.findData(current)
        self.draft.setCurrentIndex(i if i >= 0 else 0)
        self.draft.blockSignals(False)
        if not drafts and self.radio_draft.isChecked():
            self.radio_head.blockSignals(True)
            self.radio_head.setChecked(True)
            self.radio_head.blockSignals(False)
        self.draft.setEnabled(self.radio_draft.isChecked())
        self.head_b.setEnabled(self.radio_head.isChecked())
        self.head_layers.setEnabled(self.radio_head.isChecked())

    def _fill_layouts(self) -> None:
        m = self.session.cfg.model
        current = self.layout_combo.currentData()
        self.layout_combo.blockSignals(True)
        self.layout_combo.clear()
        heads = int(m.heads)
        for g in (heads, *[g for g in range(heads - 1, 1, -1) if heads % g == 0], 1):
            spec = "mha" if g == heads else ("mqa" if g == 1 else f"gqa:{g}")
            name = "MHA" if g == heads else ("MQA" if g == 1 else "GQA")
            mine = " — as published" if g == m.kv_heads and m.attention != "mla" else ""
            self.layout_combo.addItem(f"{name}: {g} KV head{'s' if g > 1 else ''}{mine}", spec)
        # default: the layout that differs most the other way (a GQA model → MHA, MHA → GQA:8 or MQA)
        i = self.layout_combo.findData(current)
        if i < 0:
            i = 0 if m.kv_heads != heads else self.layout_combo.count() - 1
            eight = self.layout_combo.findData("gqa:8")
            if m.kv_heads == heads and eight >= 0:
                i = eight
        self.layout_combo.setCurrentIndex(i)
        self.layout_combo.blockSignals(False)
        self.layout_combo.setEnabled(m.attention != "mla")

    def _sync_offload(self) -> None:
        """Which offload the runtime has (from the core's curve), its range and, unless the user set
        one (for this model and runtime), the most layers (or the least GB) with which the model fits."""
        reset, self._offload_reset = self._offload_reset, False
        s = self.session
        try:
            curve = api.offload_curve(s.cat, s.cfg)
            self.offload_message = ""
        except api.AdvisorError as exc:
            curve, self.offload_message = None, str(exc)
        if curve is None:
            self._offload_mode = ""
        else:
            self._offload_mode = "gb" if np.all(np.isnan(curve.gpu_layers)) else "layers"
        self.spin_layers.setVisible(self._offload_mode == "layers")
        self.spin_gb.setVisible(self._offload_mode == "gb")
        self.spin_host.setVisible(self._offload_mode == "layers")
        self.offload_label.setText(self.offload_message)
        if curve is None:
            return
        fits = np.asarray(curve.fits, dtype=bool)
        if self._offload_mode == "layers":
            layers = int(np.nanmax(curve.gpu_layers))
            self.spin_layers.blockSignals(True)
            self.spin_layers.setRange(0, layers)
            self.spin_layers.setSuffix(f" of {layers}")
            if reset or not self._layers_touched:
                self.spin_layers.setValue(int(curve.gpu_layers[fits][-1]) if fits.any() else 0)
            self.spin_layers.blockSignals(False)
        else:
            top = float(np.nanmax(curve.host_gb))
            self.spin_gb.blockSignals(True)
            self.spin_gb.setRange(0.0, max(top, 0.1))
            if reset or not self._gb_touched:
                self.spin_gb.setValue(float(curve.host_gb[fits][0]) if fits.any() else top)
            self.spin_gb.blockSignals(False)

    # ------------------------------------------------------------------ rendering
    def _on_techniques_changed(self) -> None:
        tech = self.session.whatif.techniques
        if tech is not None and tech != self.chosen():
            # chosen elsewhere (a sizing file, the last session): the widgets take it before they push
            self._pending = tech
            if self.isVisible():
                self.render()
                return
        if self.isVisible():
            self._draw()
        else:
            self._dirty = True

    def render(self) -> None:
        self._sync_options()
        if self._pending is not None:
            self._show_technique(self._pending)
            self._pending = None
        self._push()
        self._draw()

    def _show_technique(self, tech: "api.Techniques") -> None:
        """Set the widgets to ``tech`` without pushing (its draft length, acceptance and offload kept
        as given, not reset to the typical ones)."""
        widgets = (self.kind, self.radio_draft, self.radio_head, self.draft, self.head_b, self.head_layers,
                   self.spin_k, self.spin_accept, self.layout_combo, self.spin_layers, self.spin_gb, self.spin_host)
        for w in widgets:
            w.blockSignals(True)
        try:
            kind = ("speculative" if tech.speculative else "eager" if not tech.flash_attention
                    else "attention" if tech.attention else "offload")
            self.kind.setCurrentIndex(max(0, self.kind.findData(kind)))
            self.pages.setCurrentIndex(self.kind.currentIndex())
            self._fit_pages()
            if tech.speculative:
                by_draft = tech.draft is not None
                self.radio_draft.setChecked(by_draft)
                self.radio_head.setChecked(not by_draft)
                if by_draft and self.draft.findData(tech.draft.key) >= 0:
                    self.draft.setCurrentIndex(self.draft.findData(tech.draft.key))
                if not by_draft:
                    self.head_b.setValue(tech.head_params_b)
                    self.head_layers.setValue(tech.head_layers)
                self.draft.setEnabled(by_draft)
                self.head_b.setEnabled(not by_draft)
                self.head_layers.setEnabled(not by_draft)
                self._k_touched, self._accept_touched = tech.draft_k is not None, tech.accept is not None
                self.spin_k.setValue(tech.k)
                self.spin_accept.setValue(tech.alpha)
            elif tech.attention:
                i = self.layout_combo.findData(tech.attention)
                if i >= 0:
                    self.layout_combo.setCurrentIndex(i)
            elif tech.gpu_layers is not None or tech.offload_gb is not None:
                self.spin_host.setValue(tech.host_bandwidth_gb_s)
                if tech.gpu_layers is not None:
                    self.spin_layers.setValue(tech.gpu_layers)
                    self._layers_touched = True
                else:
                    self.spin_gb.setValue(tech.offload_gb)
                    self._gb_touched = True
        finally:
            for w in widgets:
                w.blockSignals(False)

    def _draw(self) -> None:
        s = self.session
        effects = s.whatif.effects
        self.effect = effects[0] if effects else None
        kind = self.kind.currentData()
        if s.whatif.error or self.effect is None:
            why = s.whatif.error or "choose a technique"
            self.summary.setText(f"<span style='color:#d23c3c'>{why}</span>")
            self.notes.setText("")
            for i in range(len(ROW_LABELS)):
                for j in (1, 2, 3):
                    self.table.item(i, j).setText("—")
        else:
            e = self.effect
            users = s.cfg.workload.batch
            load = ("" if s.serving is None else
                    f"<br><span style='color:#888'>Before and after are for the {users:,} users as one batch with "
                    "their prompts at once (the static prediction); the cards above show them as clients of a "
                    "server.</span>")
            self.summary.setText(f"<b>{e.label}</b>: decode ×{num(e.speedup)}, TTFT ×{num(e.ttft_ratio)}{load}")
            for i, row in enumerate(api.technique_rows(e)):
                for j, text in enumerate(row):
                    self.table.item(i, j).setText(text)
            self.notes.setText("<br>".join(f"• {n}" for n in (*e.notes, *api.technique_details(e))))
        if kind == "speculative":
            self._draw_speculative()
        elif kind == "offload":
            self._draw_offload()
        else:
            self.charts.setCurrentWidget(self.no_chart)

    def _draw_speculative(self) -> None:
        s = self.session
        self.charts.setCurrentWidget(self.spec_plot_widget)
        self.spec_curve = None
        if not s.whatif.error and self.effect is not None and self.effect.curve is not None:
            # the core's own curve, searched at every batch, sampled where the chart draws
            self.spec_curve = sample_curve(self.effect.curve, CHART_BATCHES)
        c = self.spec_curve
        if c is None:
            for item in (self.spec_line, self.spec_now):
                item.setData([], [])
            self.spec_cross.hide()
            return
        self.spec_line.setData(c.batch, c.speedup)
        if self.effect is not None:  # this batch: the table's own speed-up
            self.spec_now.setData([s.cfg.workload.batch], [self.effect.speedup])
        frame(self.spec_plot, [c.batch], [c.speedup, [1.0]], logx=True, logy=False, y0=0.0)
        # the crossover is the core's, searched batch by batch (the chart samples the batches)
        cross = self.effect.details.get("crossover_batch") if self.effect is not None else None
        if cross is None:
            self.spec_cross.hide()
        else:
            self.spec_cross.setValue(math.log10(cross))
            self.spec_cross.label.setFormat(f"slower from batch {cross:,}")
            self.spec_cross.show()

    def _draw_offload(self) -> None:
        s = self.session
        self.charts.setCurrentWidget(self.off_plot_widget)
        self.offload_curve = None
        tech = s.whatif.techniques
        if not s.whatif.error and tech is not None and (tech.gpu_layers is not None or tech.offload_gb is not None):
            try:
                self.offload_curve = api.offload_curve(s.cat, s.cfg, tech)
            except api.AdvisorError:
                self.offload_curve = None
        c = self.offload_curve
        if c is None:
            for item in (self.off_line, self.off_nofit, self.off_now):
                item.setData([], [])
            return
        by_layers = tech.gpu_layers is not None
        x = c.gpu_layers if by_layers else c.host_gb
        self.off_plot.setTitle("Partial offload: decode speed vs GPU layers" if by_layers
                               else "Partial offload: decode speed vs GB of weights in host memory")
        self.off_plot.setLabel("bottom", "layers on the GPU (-ngl)" if by_layers else "GB in host memory")
        fits = np.asarray(c.fits, dtype=bool)
        y = np.asarray(c.decode_tok_s, dtype=float)
        self.off_line.setData(x[fits], y[fits])
        self.off_nofit.setData(x[~fits], y[~fits])
        e = self.effect
        if e is not None:
            chosen = min(tech.gpu_layers, int(np.nanmax(x))) if by_layers else e.details.get("host_gb", 0.0)
            self.off_now.setData([chosen], [e.after.decode_tok_s])
        frame(self.off_plot, [x], [y], logx=False, logy=False, y0=0.0)

    # ------------------------------------------------------------------ copy / export
    def chart(self):
        chart = self.charts.currentWidget()
        if chart is self.spec_plot_widget:
            return self.spec_plot, chart
        if chart is self.off_plot_widget:
            return self.off_plot, chart
        return None

    def table_rows(self) -> list[list[str]]:
        rows = [list(HEADERS)]
        rows[0][0] = self.effect.label if self.effect is not None else "what-if"
        for i in range(len(ROW_LABELS)):
            rows.append([self.table.item(i, j).text() for j in range(len(HEADERS))])
        return rows

    def copy_text(self) -> str:
        return "\n".join("\t".join(r) for r in self.table_rows())
