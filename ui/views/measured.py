"""Measured: the user's own benchmark results beside the predictions (the app's `compare-measured`).

Open one or more result files (llama-bench, llama-batched-bench, vllm bench serve, SGLang, GenAI-Perf/
AIPerf, GuideLLM; recognised by content), or measure a running server (``advisor measure`` on a
worker, with progress and Stop, which keeps what was measured). Each row is predicted for the configuration and load it
was measured under; the chart puts every measurement against its prediction, with the prediction's
band as an error bar and the diagonal where they agree. Reading and predicting run on a worker.

Most serving files do not say which GPU they ran on: the "Measured on" field says which hardware
such rows are predicted for (it starts as the hardware selected in the inputs, and says so).
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QFileDialog, QHBoxLayout, QLabel, QLineEdit, QPushButton, QSpinBox, QSplitter,
                               QVBoxLayout, QWidget)

from advisor import api
from advisor.text.format import num
from ui.views.table import Column, RowsModel, RowsTab, make_table

FILE_FILTER = "Benchmark results (*.json *.jsonl *.csv *.md *.txt *.log);;All files (*)"
#: one colour per metric family: speeds, first-token latencies, per-token latencies, whole requests
COLOURS = {"prefill_tok_s": "#1f77b4", "decode_tok_s": "#2ca02c", "batch_decode_tok_s": "#2ca02c",
           "throughput_tok_s": "#17becf", "request_throughput_rps": "#17becf", "ttft_ms": "#d62728",
           "itl_ms": "#ff7f0e", "tpot_ms": "#ff7f0e", "e2e_ms": "#9467bd"}


def _metric(c) -> str:
    return api.measured_metric_text(c.record)


def _load(c) -> str:
    return api.measured_load_text(c.record)


def _band(c) -> str:
    if c.low is None or c.high is None or math.isnan(c.low):
        return "—"
    return f"{num(c.low)}–{num(c.high)}"


COLUMNS = [
    Column("File", lambda c: c.record.source, "The result file and the record's place in it"),
    Column("Metric", _metric),
    Column("Load", _load, "Batch (static runs), clients (closed loop) or arrival rate, and prompt/output tokens"),
    Column("Measured", lambda c: float(c.record.value), fmt=lambda v: num(v)),
    Column("Predicted", lambda c: float(c.predicted) if c.predicted is not None else float("nan"),
           row_tip=lambda c: c.skipped),
    Column("Band", _band, "The prediction's band: where the measurement should fall"),
    Column("Error", lambda c: 100 * c.error if c.error is not None else float("nan"),
           "predicted / measured − 1", fmt=lambda v: "—" if math.isnan(v) else f"{v:+.0f} %",
           colour=lambda c: None if c.within_band is None else ("#2e9d3a" if c.within_band else "#d23c3c")),
    Column("Unit", lambda c: api.MEASURED_UNITS.get(c.record.metric, "")),
    # what to give when a row could not be predicted: before the long configuration column
    Column("Note", lambda c: c.skipped or ("inside the band" if c.within_band else
                                            "outside the band" if c.within_band is False else ""),
           row_tip=lambda c: c.skipped),
    Column("Configuration", lambda c: c.configuration or "—"),
]


class MeasuredView(QWidget, RowsTab):
    def __init__(self, session, workers, parent=None):
        super().__init__(parent)
        self.session, self.workers = session, workers
        self.paths: list[str] = []
        self.comparisons: list = []
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        bar = QHBoxLayout()
        self.btn_open = QPushButton("&Open results…")
        self.btn_open.setToolTip("llama-bench (json, jsonl, csv, md), llama-batched-bench, vllm bench serve, SGLang "
                                 "bench_serving / bench_one_batch, GenAI-Perf / AIPerf, GuideLLM result files")
        self.hardware = QLineEdit()
        self.hardware.setObjectName("measured_hardware")
        self.hardware.setPlaceholderText("hardware the results were measured on")
        self.hardware.setToolTip("Rows whose file does not name its hardware are predicted for this hardware")
        self.model_name = QLineEdit()
        self.model_name.setObjectName("measured_model")
        self.model_name.setPlaceholderText("model, if the file's name for it does not resolve")
        self.btn_again = QPushButton("Compare &again")
        self.btn_learn = QPushButton("&Learn from these")
        self.btn_learn.setToolTip("Fit a personal profile to these rows (advisor calibrate --mine): later predictions "
                                  "for this runtime and hardware use it, where it predicts your rows better held out")
        self.btn_learn.setEnabled(False)
        self.btn_forget = QPushButton("&Forget my calibration")
        self.btn_forget.setToolTip("Remove the personal profiles (advisor calibrate --mine --reset)")
        bar.addWidget(self.btn_open)
        bar.addWidget(QLabel("Measured on:"))
        bar.addWidget(self.hardware, 2)
        bar.addWidget(self.model_name, 2)
        bar.addWidget(self.btn_again)
        bar.addWidget(self.btn_learn)
        bar.addWidget(self.btn_forget)
        lay.addLayout(bar)
        live = QHBoxLayout()
        self.url = QLineEdit()
        self.url.setObjectName("measured_url")
        self.url.setPlaceholderText("http://127.0.0.1:8080/v1 — a running llama-server, vLLM, SGLang, Ollama, "
                                    "LM Studio or mlx_lm.server")
        self.levels = QLineEdit("1,4")
        self.levels.setObjectName("measured_levels")
        self.levels.setToolTip("Concurrent clients, a comma list: each level sends the requests below, that many "
                               "at a time")
        self.levels.setMaximumWidth(90)
        self.spin_requests = QSpinBox()
        self.spin_requests.setRange(1, 200)
        self.spin_requests.setValue(8)
        self.spin_requests.setSuffix(" requests")
        self.btn_measure = QPushButton("Measure &server")
        self.btn_measure.setToolTip("A short, bounded benchmark (streamed completions, 256-token prompts, 64 tokens "
                                    "out; 5 minutes at most); Stop keeps what was measured")
        live.addWidget(QLabel("Server:"))
        live.addWidget(self.url, 3)
        live.addWidget(QLabel("clients"))
        live.addWidget(self.levels)
        live.addWidget(self.spin_requests)
        live.addWidget(self.btn_measure)
        lay.addLayout(live)
        self._stop: list[int] | None = None
        self._note = ""     # what the last learn/forget said, shown before the next comparison's summary
        self.heading = QLabel("Open the result files your benchmark client wrote to see how close the "
                              "predictions are on your machine.")
        self.heading.setWordWrap(True)
        lay.addWidget(self.heading)
        split = QSplitter(Qt.Orientation.Horizontal)
        self.plot = pg.PlotWidget()
        self.plot.setObjectName("measured_chart")
        p = self.plot.getPlotItem()
        p.setLogMode(True, True)
        p.showGrid(True, True, 0.25)
        p.setLabel("bottom", "measured")
        p.setLabel("left", "predicted")
        self.legend = p.addLegend(offset=(8, 8))
        split.addWidget(self.plot)
        self.model = RowsModel(COLUMNS, self)
        self.table, self.proxy = make_table(self.model)
        self.table.setObjectName("measured_table")
        for i, w in enumerate((100, 90, 130, 65, 65, 95, 75, 40, 300, 320)):
            self.table.setColumnWidth(i, w)
        split.addWidget(self.table)
        split.setSizes([360, 900])
        lay.addWidget(split, 1)
        self.btn_open.clicked.connect(self.pick_files)
        self.btn_measure.clicked.connect(self.measure_or_stop)
        self.btn_learn.clicked.connect(self.learn)
        self.btn_forget.clicked.connect(self.forget)
        self.btn_again.clicked.connect(self.run)
        self.hardware.returnPressed.connect(self.run)
        self.model_name.returnPressed.connect(self.run)

    def pick_files(self) -> None:
        paths, _ = QFileDialog.getOpenFileNames(self, "Open benchmark results", str(Path.home()), FILE_FILTER)
        if paths:
            self.open_files(paths)

    def open_files(self, paths) -> None:
        """Read and compare ``paths`` (on a worker). Rows that need a hardware are predicted for the
        hardware field, which starts as the hardware selected in the inputs."""
        self.paths = [str(p) for p in paths]
        if not self.hardware.text().strip():
            self.hardware.setText(self.session.cfg.hardware.name)
        self.run()

    def _overrides(self) -> "api.MeasuredOverrides":
        """What the comparisons take from the tab (the hardware and model typed) and from the sizing: the
        server's prompt cache as the Serving tab sets it (no result file records llama-server's
        --cache-ram)."""
        return api.MeasuredOverrides(hardware=self.hardware.text().strip() or None,
                                     model=self.model_name.text().strip() or None,
                                     prompt_cache=self.session.state.prompt_cache)

    def run(self) -> None:
        if not self.paths:
            return
        paths, cat = list(self.paths), self.session.cat
        overrides = self._overrides()

        def job():
            out, problems = [], []
            for path in paths:   # a file that cannot be read is named; the others are still compared
                try:
                    tool, records = api.read_results(path)
                except api.AdvisorError as exc:
                    problems.append(str(exc))
                    continue
                out.append((path, tool, api.compare_measured(cat, records, overrides)))
            if not out and problems:
                raise api.AdvisorError("; ".join(problems))
            return out, problems

        self.heading.setText(f"Reading {', '.join(Path(p).name for p in paths)}…")
        self.workers.run("measured", job, lambda result: self._on_done(*result), self._on_error)

    def measure_or_stop(self) -> None:
        """Measure the server in the URL field (on a worker, with progress), or stop the run in progress
        (the requests in flight finish; what was measured is kept and compared)."""
        if self._stop is not None:
            self._stop.append(1)
            self.btn_measure.setEnabled(False)
            self.heading.setText("Stopping: the requests in flight finish…")
            return
        url = self.url.text().strip()
        if not url:
            self.heading.setText("<span style='color:#d23c3c'>Give the server's URL, e.g. "
                                 "http://127.0.0.1:8080/v1</span>")
            return
        try:
            levels = [int(x) for x in self.levels.text().replace(" ", "").split(",") if x]
        except ValueError:
            self.heading.setText(f"<span style='color:#d23c3c'>Clients must be a comma list of whole numbers, got "
                                 f"{self.levels.text()!r}</span>")
            return
        if not self.hardware.text().strip():
            self.hardware.setText(self.session.cfg.hardware.name)
        stop: list[int] = []
        self._stop = stop
        requests = self.spin_requests.value()
        cat = self.session.cat
        overrides = self._overrides()

        def job(progress):
            m = api.measure_endpoint(url, concurrencies=levels or [1], requests=requests,
                                     progress=lambda done, total, what: progress(f"{done}/{total} · {what}"),
                                     cancel=lambda: bool(stop))
            d = m.to_dict()
            return [(url, "advisor measure", api.compare_measured(cat, api.measured_records(d, url), overrides))]

        self.btn_measure.setText("&Stop")
        self.heading.setText(f"Measuring {url}…")
        self.workers.run("measured", job, self._on_measured, self._on_measure_error,
                         on_progress=lambda msg: self.heading.setText(f"Measuring {url}: {msg}"))

    def _end_measure(self) -> None:
        self._stop = None
        self.btn_measure.setText("Measure &server")
        self.btn_measure.setEnabled(True)

    def _on_measured(self, files) -> None:
        self._end_measure()
        self._on_done(files)

    def _on_measure_error(self, exc, tb) -> None:
        self._end_measure()
        self._on_error(exc, tb)

    def _on_done(self, files, problems=()) -> None:
        self.comparisons = [c for _, _, cs in files for c in cs]
        self.model.set_rows(self.comparisons)
        self.btn_learn.setEnabled(any(c.record.metric in ("prefill_tok_s", "decode_tok_s", "batch_decode_tok_s")
                                      for c in self.comparisons))
        s = api.summarise_measured(self.comparisons)
        tools = ", ".join(sorted({tool for _, tool, _ in files}))
        err = f"median |error| <b>{100 * s.median_abs_error:.0f} %</b>" if s.median_abs_error is not None else \
            "no row could be predicted (see the Note column)"
        skipped = (f" <span style='color:#d23c3c'>Not read: {'; '.join(problems)}</span>" if problems else "")
        note, self._note = self._note, ""
        self.heading.setText(f"{note}{len(files)} file(s) from {tools}: {s.compared} of {s.rows} rows compared · {err} · "
                             f"{s.within_band} of {s.compared} measurements inside the predicted band. "
                             f"Rows without hardware in the file: predicted for {self.hardware.text() or '—'}."
                             f"{skipped}")
        self._draw()

    def learn(self) -> None:
        """Fit and save a personal profile to the rows on screen (on a worker), then reload the catalog
        so every prediction uses it; says before → after → held out, or why nothing was kept."""
        records = [c.record for c in self.comparisons]
        if not records:
            return
        cat = self.session.cat
        overrides = self._overrides()

        def job():
            fits, skipped = api.fit_mine(cat, records, overrides)
            if not fits:
                reasons = sorted({why for _, why in skipped})
                raise api.AdvisorError("nothing to fit: " + ("; ".join(reasons[:2]) if reasons else "no rows"))
            path = api.save_mine(fits) if any(f.improves for f in fits) else None
            return fits, path

        self.heading.setText("Fitting a personal profile to these rows…")
        self.workers.run("measured-learn", job, self._learned, self._on_error)

    def _learned(self, result) -> None:
        fits, path = result
        parts = []
        for f in fits:
            held = f"{100 * f.error_held_out:.0f} %" if f.error_held_out is not None else "—"
            verdict = "kept" if f.improves else "not kept (it does not predict your rows better)"
            parts.append(f"{f.profile.key.split('+', 1)[1]}: |error| {100 * f.error_before:.0f} % → "
                         f"{100 * f.error_after:.0f} % (held out {held}), {verdict}")
        note = "Personal calibration: " + "; ".join(parts) + (f". Saved to {path}." if path is not None else ".")
        self.heading.setText(note)
        if path is not None:
            self.session.reload_catalog()
            self._note = note + " "
            self.run()   # the rows again, now predicted with the personal profile

    def forget(self) -> None:
        removed = api.reset_mine()
        note = ("Your personal calibration was removed." if removed else
                "There was no personal calibration to remove.")
        self.heading.setText(note)
        if removed and self.paths:
            self.session.reload_catalog()
            self._note = note + " "
            self.run()

    def _on_error(self, exc, _tb) -> None:
        msg = str(exc) if isinstance(exc, api.AdvisorError) else f"{type(exc).__name__}: {exc}"
        self.heading.setText(f"<span style='color:#d23c3c'>Could not compare: {msg}</span>")
        self.comparisons = []
        self.model.set_rows([])
        self._draw()

    def _draw(self) -> None:
        p = self.plot.getPlotItem()
        p.clear()       # the legend empties with it
        rows = [c for c in self.comparisons if c.predicted is not None and c.predicted > 0 and c.record.value > 0]
        if not rows:
            return
        x = np.array([c.record.value for c in rows])
        y = np.array([c.predicted for c in rows])
        lo = np.array([c.low if c.low is not None and c.low > 0 else c.predicted for c in rows])
        hi = np.array([c.high if c.high is not None and c.high > 0 else c.predicted for c in rows])
        a, b = float(min(x.min(), lo.min())) / 1.5, float(max(x.max(), hi.max())) * 1.5
        # where prediction and measurement agree, and ±25 % (plot items take the axes' log mode
        # themselves; the scatter and error bars below are given log10 values)
        p.plot([a, b], [a, b], pen=pg.mkPen("#888", width=1))
        for k in (0.75, 1.25):
            p.plot([a, b], [a * k, b * k], pen=pg.mkPen("#888", width=1, style=Qt.PenStyle.DotLine))
        # the band as an error bar
        p.addItem(pg.ErrorBarItem(x=np.log10(x), y=np.log10(y), top=np.log10(hi) - np.log10(y),
                                  bottom=np.log10(y) - np.log10(lo), beam=0.0, pen=pg.mkPen("#999")))
        for metric in sorted({c.record.metric for c in rows}):
            idx = [i for i, c in enumerate(rows) if c.record.metric == metric]
            tips = [f"{_metric(rows[i])} · {_load(rows[i])}: measured {num(x[i])}, predicted {num(y[i])} "
                    f"({100 * rows[i].error:+.0f} %)" for i in idx]
            p.addItem(pg.ScatterPlotItem(x=np.log10(x[idx]), y=np.log10(y[idx]), size=9,
                                         name=api.MEASURED_LABELS.get(metric, metric),
                                         brush=pg.mkBrush(COLOURS.get(metric, "#444")), pen=None, hoverable=True,
                                         data=tips, tip=lambda x, y, data: data))

    @property
    def busy(self) -> bool:
        return self.workers.running("measured", "measured-learn")

    def chart(self):
        return self.plot.getPlotItem(), self.plot
