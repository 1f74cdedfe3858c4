"""Compare two to four configurations side by side: a table of figures and overlaid curves
(decode speed vs batch, TTFT vs prompt). The pinned configurations are the session's `CompareList`
(ui/tab_state.py)."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtWidgets import (QHBoxLayout, QHeaderView, QLabel, QPushButton, QSplitter, QTableWidget,
                               QTableWidgetItem, QVBoxLayout, QWidget)
from PySide6.QtCore import Qt
from PySide6.QtGui import QColor

from advisor import api
from advisor.text.format import duration_ms, num
from ui.state import describe
from ui.tab_state import MAX_COMPARE
from ui.tabs import TabView
from ui.views.curves import frame, log_points, title_legend
from ui.widgets import plot_colors, with_readout

def _price(v: float | None, unit: str = "", digits: int = 0) -> str:
    return "—" if v is None else f"${v:,.{digits}f}{unit}"


def _speed(p, text: str) -> str:
    """A speed of a configuration that does not fit is what it would reach if it did: say so."""
    return text if p.fits else f"{text} (if it fit)"


def _count(v: float) -> str:
    """A capacity of none ("0 users fit") reads as a dash, not as a number to compare."""
    return num(int(v)) if v >= 1 else "—"


#: label, text(prediction, config, costs), the figure compared across columns (None: not compared)
#: and whether lower is better; a figure is compared only between configurations that fit
ROWS = (
    ("Hardware", lambda p, c, k: f"{c.gpus}× {p.hardware}" if c.gpus > 1 else p.hardware, None, False),
    ("Fits", lambda p, c, k: "yes" if p.fits else f"no — short {num(p.shortfall_gb)} GB", None, False),
    ("Model", lambda p, c, k: p.model, None, False),
    ("Weights / KV", lambda p, c, k: f"{p.quant} / {p.kv_dtype}", None, False),
    ("Runtime", lambda p, c, k: p.runtime, None, False),
    ("Workload", lambda p, c, k: f"{p.batch} × {p.prompt_tokens:,} in / {p.output_tokens:,} out", None, False),
    ("Memory", lambda p, c, k: f"{num(p.total_gb)} of {num(p.usable_gb)} GB", None, False),
    ("TTFT", lambda p, c, k: _speed(p, duration_ms(p.ttft_ms)), lambda p, k: p.ttft_ms, True),
    ("Decode / user", lambda p, c, k: _speed(p, f"{num(p.decode_tok_s)} tok/s"), lambda p, k: p.decode_tok_s, False),
    ("Aggregate", lambda p, c, k: _speed(p, f"{num(p.throughput_tok_s)} tok/s"), lambda p, k: p.throughput_tok_s,
     False),
    ("Max batch", lambda p, c, k: _count(p.max_batch), lambda p, k: p.max_batch, False),
    ("Max context", lambda p, c, k: _count(p.max_context), lambda p, k: p.max_context, False),
    ("Bound", lambda p, c, k: p.bound, None, False),
    ("Buy", lambda p, c, k: _price(k.buy_usd) + (" (few quotes)" if k.thin and k.buy_usd else ""),
     lambda p, k: k.buy_usd, True),
    ("Rent", lambda p, c, k: _price(k.rent_usd_hour, "/h", 2), lambda p, k: k.rent_usd_hour, True),
    ("Board power", lambda p, c, k: "—" if k.power_w is None else f"{k.power_w:,.0f} W", lambda p, k: k.power_w, True),
    ("$ / M tokens", lambda p, c, k: _price(k.usd_per_million_tokens, "", 2) + (" (rent)" if k.usd_per_million_tokens
                                                                                  else ""),
     lambda p, k: k.usd_per_million_tokens, True),
)
#: what a price cell's figure is, for its tooltip
PRICE_BASIS = {"Buy": lambda k: k.buy_label, "Rent": lambda k: k.rent_label}
#: the row whose best column is "best value" in the header (else the cheapest to buy)
VALUE_ROWS = ("$ / M tokens", "Buy")
SERIES = ("a", "b", "c", "e")


class CompareView(QWidget, TabView):
    def __init__(self, session, parent=None):
        super().__init__(parent)
        self.session = session
        col = plot_colors()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        bar = QHBoxLayout()
        self.btn_pin = QPushButton("&Add current configuration")
        self.btn_pin.setToolTip(f"Pin the current inputs for comparison (up to {MAX_COMPARE})")
        self.btn_remove = QPushButton("Remove selected")
        self.btn_load = QPushButton("Load selected")
        self.hint = QLabel(f"Pin two to {MAX_COMPARE} configurations; select a column to remove or load it.")
        bar.addWidget(self.btn_pin)
        bar.addWidget(self.btn_remove)
        bar.addWidget(self.btn_load)
        bar.addWidget(self.hint, 1)
        lay.addLayout(bar)
        split = QSplitter(Qt.Orientation.Horizontal)
        self.table = QTableWidget(len(ROWS), 0)
        self.table.setObjectName("compare_table")
        self.table.setVerticalHeaderLabels([r[0] for r in ROWS])
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.table.setSelectionBehavior(QTableWidget.SelectionBehavior.SelectColumns)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        split.addWidget(self.table)
        self.glw = pg.GraphicsLayoutWidget()
        self.p_batch = self.glw.addPlot(row=0, col=0)
        self.p_prompt = self.glw.addPlot(row=1, col=0)
        self.p_batch.chart_title, self.p_prompt.chart_title = "Decode per user vs batch", "TTFT vs prompt"
        for p, xl, yl in ((self.p_batch, "batch", "tok/s"), (self.p_prompt, "prompt (tokens)", "ms")):
            p.setLogMode(True, True)
            p.setLabel("bottom", xl)
            p.setLabel("left", yl)
            p.getAxis("bottom").enableAutoSIPrefix(False)
            p.getAxis("left").enableAutoSIPrefix(False)
            p.setMenuEnabled(False)
            p.disableAutoRange()
            p.setMouseEnabled(x=False, y=False)
        self.lines_batch = [self.p_batch.plot([], [], pen=pg.mkPen(col[k], width=2), name=f"#{i + 1}")
                            for i, k in enumerate(SERIES)]
        self.lines_prompt = [self.p_prompt.plot([], [], pen=pg.mkPen(col[k], width=2), name=f"#{i + 1}")
                             for i, k in enumerate(SERIES)]
        self.charts = with_readout(self.glw, (self.p_batch, self.p_prompt))
        split.addWidget(self.charts)
        split.setSizes([600, 400])
        lay.addWidget(split, 1)
        self.btn_pin.clicked.connect(lambda: session.compare.pin())
        self.btn_remove.clicked.connect(self._remove)
        self.btn_load.clicked.connect(self._load)
        session.compare.sig_changed.connect(self.render)
        self.predictions: list[api.Prediction] = []
        self.best_value: int | None = None
        self.render()

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        if not self.session.compare:  # start from the configuration on screen
            self.session.compare.pin()

    def _selected_col(self) -> int:
        cols = {i.column() for i in self.table.selectedIndexes()}
        return min(cols) if cols else self.table.currentColumn()

    def _remove(self) -> None:
        i = self._selected_col()
        if i >= 0:
            self.session.compare.unpin(i)

    def _load(self) -> None:
        i = self._selected_col()
        if 0 <= i < len(self.session.compare):
            c = self.session.compare[i]
            keys = c.keys()
            self.session.load_keys(keys, self.session.targets.to_dict())

    def render(self) -> None:
        s = self.session
        cfgs = list(s.compare)
        self.table.setColumnCount(len(cfgs))
        # the hardware has its own row: the header numbers the column (the legends' #1…) and marks it
        headers = [f"#{i + 1}" for i in range(len(cfgs))]
        self.predictions = []
        figures: dict[int, tuple] = {}   # column -> (prediction, costs)
        for j, cfg in enumerate(cfgs):
            try:
                p = api.predict(s.cat, cfg)
            except api.AdvisorError as exc:
                s.sig_error.emit(f"Compare #{j + 1}: {exc}")
                continue
            self.predictions.append(p)
            figures[j] = (p, api.costs(s.cat, cfg.hardware, cfg.gpus, p.throughput_tok_s if p.fits else None))
        best = _best_columns(figures)
        muted, good = QColor(plot_colors()["muted"]), QColor(plot_colors()["c"])
        for j, (p, k) in figures.items():
            cfg = cfgs[j]
            if not p.fits:
                headers[j] += " — does not fit"
            for i, (label, text, value, _) in enumerate(ROWS):
                item = QTableWidgetItem(text(p, cfg, k))
                tip = describe(cfg)
                if label in PRICE_BASIS:
                    tip = PRICE_BASIS[label](k) or "no sourced figure in the catalog"
                if not p.fits and value is not None and label not in ("Buy", "Rent", "Board power"):
                    # it does not fit: its speeds are what it would reach if it did, never a winner
                    item.setForeground(muted)
                    tip = f"Does not fit (short {num(p.shortfall_gb)} GB): the figure it would reach if it did"
                elif label == "Fits" and not p.fits:
                    item.setForeground(QColor(plot_colors()["d"]))
                if best.get(label) == j:
                    f = item.font()
                    f.setBold(True)
                    item.setFont(f)
                    item.setForeground(good)
                    tip = f"Best of the configurations that fit · {tip}"
                item.setToolTip(tip)
                self.table.setItem(i, j, item)
        value_col = next((best[r] for r in VALUE_ROWS if r in best), None)
        if value_col is not None and len(figures) > 1:
            headers[value_col] += " ★ best value"
        self.table.setHorizontalHeaderLabels(headers)
        self.best_value = value_col
        bx, by, px, py = [], [], [], []
        for i in range(MAX_COMPARE):
            lb, lp = self.lines_batch[i], self.lines_prompt[i]
            if i < len(cfgs):
                cfg = cfgs[i]
                cb = s.curve("batch", log_points(1, 1024), cfg)
                ctx = int(cfg.model.native_context)
                cp = s.curve("prompt", log_points(16, max(32, ctx - cfg.workload.output_tokens
                                                          - cfg.workload.depth_tokens)), cfg)
                if cb is not None:
                    lb.setData(cb.x, np.where(cb.fits, cb.decode_tok_s, np.nan), connect="finite")
                    bx.append(cb.x)
                    by.append(np.where(cb.fits, cb.decode_tok_s, np.nan))
                if cp is not None:
                    lp.setData(cp.x, cp.ttft_ms)
                    px.append(cp.x)
                    py.append(cp.ttft_ms)
                lb.setVisible(True)
                lp.setVisible(True)
            else:
                lb.setData([], [])
                lp.setData([], [])
                lb.setVisible(False)
                lp.setVisible(False)
        if bx:
            frame(self.p_batch, bx, by)
        if px:
            frame(self.p_prompt, px, py)
        for plot in (self.p_batch, self.p_prompt):
            title_legend(plot)   # the lines of the columns pinned, by number, off the data
        self.hint.setText(f"{len(cfgs)} of {MAX_COMPARE} pinned" + (" — pin one more to compare" if len(cfgs) == 1
                                                                    else ""))

    def chart(self):
        return self.glw.scene(), self.glw

    def copy_text(self) -> str:
        rows = ["\t".join([""] + [f"#{j + 1}" for j in range(self.table.columnCount())])]
        for i in range(self.table.rowCount()):
            cells = [self.table.item(i, j).text() if self.table.item(i, j) else "" for j in range(self.table.columnCount())]
            rows.append("\t".join([ROWS[i][0]] + cells))
        return "\n".join(rows)

    def table_rows(self) -> list[list[str]]:
        return [line.split("\t") for line in self.copy_text().split("\n")]


def _best_columns(figures: dict[int, tuple]) -> dict[str, int]:
    """Per compared row, the column with the best figure among the configurations that fit (none
    where fewer than two have the figure: a lone value is not a winner)."""
    out: dict[str, int] = {}
    for label, _, value, lower in ROWS:
        if value is None:
            continue
        have = {j: value(p, k) for j, (p, k) in figures.items() if p.fits}
        have = {j: v for j, v in have.items() if _finite(v) and v > 0}
        if len(have) < 2 or len(set(have.values())) < 2:
            continue
        out[label] = (min if lower else max)(have, key=have.get)
    return out


def _finite(x) -> bool:
    return x is not None and math.isfinite(x)
