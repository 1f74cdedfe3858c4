"""Curves along one input at a time (api.curve, ~160 log-spaced points each): decode speed vs batch
with the KV limit and the knee, TTFT vs prompt, decode speed vs context, and the per-GPU memory plan
(stacked) against the usable-memory line, vs context and vs batch."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QVBoxLayout

from ui.widgets import LazyView, plot_colors

N_POINTS = 160
MEMORY_LAYERS = (("weights_gb", "weights", "a"), ("kv_gb", "KV cache", "b"), ("workspace_gb", "workspace", "c"),
                 ("overhead_gb", "overhead", "e"))


INVISIBLE = pg.mkPen((0, 0, 0, 0))


def log_points(lo: int, hi: int, n: int = N_POINTS) -> np.ndarray:
    lo, hi = max(1, int(lo)), max(int(hi), int(lo) + 1)
    return np.unique(np.round(np.geomspace(lo, hi, n)).astype(np.int64))


class Fill(pg.FillBetweenItem):
    """A FillBetweenItem that recomputes its path only when told (`refresh`), not on every change of
    either curve: a view sets both curves, then refreshes once (saves ~5 ms per input change)."""

    def setCurves(self, curve1, curve2):  # noqa: N802 - pyqtgraph name
        super().setCurves(curve1, curve2)
        for c in self.curves:
            c.sigPlotChanged.disconnect(self.curveChanged)

    def refresh(self) -> None:
        self.updatePath()


def _alpha(colour: str, a: int) -> pg.QtGui.QColor:
    c = pg.mkColor(colour)
    c.setAlpha(a)
    return c


class Band:
    """A line with a shaded band (low–high) around it; all items made once."""

    def __init__(self, plot: pg.PlotItem, colour: str, name: str, width: float = 2.0):
        # an invisible pen, not pen=None: with no pen pyqtgraph builds no path, and the fill stays empty
        self.lo = pg.PlotDataItem([], [], pen=INVISIBLE)
        self.hi = pg.PlotDataItem([], [], pen=INVISIBLE)
        self.fill = Fill(self.lo, self.hi, brush=_alpha(colour, 50))
        plot.addItem(self.lo)
        plot.addItem(self.hi)
        plot.addItem(self.fill)
        self.line = plot.plot([], [], pen=pg.mkPen(colour, width=width), name=name)

    def set(self, x, y, lo, hi) -> None:
        self.lo.setData(x, lo)
        self.hi.setData(x, hi)
        self.line.setData(x, y)
        self.fill.refresh()


class CurvesView(LazyView):
    def __init__(self, session, parent=None):
        super().__init__(session, parent)
        col = plot_colors()
        self.colors = col
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        self.glw = pg.GraphicsLayoutWidget()
        self.glw.setObjectName("curves_layout")
        lay.addWidget(self.glw)
        dash = Qt.PenStyle.DashLine

        def new_plot(row, column, title, xlabel, ylabel, logx=True, logy=True):
            p = self.glw.addPlot(row=row, col=column, title=title)
            p.setLogMode(logx, logy)
            # no grid here: painting six log grids costs ~25 ms a frame on a software renderer
            # (measured with benchmarks/gui.py), more than the whole rest of an input change
            p.setLabel("bottom", xlabel)
            p.setLabel("left", ylabel)
            for ax in ("bottom", "left"):
                p.getAxis(ax).enableAutoSIPrefix(False)
            p.setMenuEnabled(False)
            p.addLegend(offset=(-5, 5), labelTextSize="7pt")
            return p

        # 1 decode vs batch
        self.p_batch = new_plot(0, 0, "Decode speed vs batch", "batch (concurrent users)", "tok/s")
        self.batch_user = Band(self.p_batch, col["a"], "per user")
        self.batch_total = Band(self.p_batch, col["b"], "aggregate")
        self.batch_ceiling = self.p_batch.plot([], [], pen=pg.mkPen(col["muted"], style=dash), name="per user at 100 %")
        self.kv_limit = pg.InfiniteLine(angle=90, pen=pg.mkPen(col["d"], width=1.5), label="KV limit",
                                        labelOpts={"position": 0.12, "color": col["d"]})
        self.knee = pg.InfiniteLine(angle=90, pen=pg.mkPen(col["muted"], style=dash), label="knee",
                                    labelOpts={"position": 0.22, "color": col["muted"]})
        self.p_batch.addItem(self.kv_limit, ignoreBounds=True)
        self.p_batch.addItem(self.knee, ignoreBounds=True)
        self.batch_now = self.p_batch.plot([], [], pen=None, symbol="o", symbolSize=9, symbolBrush=col["a"])

        # 2 TTFT vs prompt
        self.p_prompt = new_plot(0, 1, "Time to first token vs prompt", "prompt (tokens)", "TTFT (ms)")
        self.ttft = Band(self.p_prompt, col["b"], "TTFT")
        self.ttft_ceiling = self.p_prompt.plot([], [], pen=pg.mkPen(col["muted"], style=dash), name="at 100 %")
        self.ttft_now = self.p_prompt.plot([], [], pen=None, symbol="o", symbolSize=9, symbolBrush=col["b"])

        # 3 decode vs context
        self.p_ctx = new_plot(0, 2, "Decode speed vs context", "context (tokens)", "tok/s per user")
        self.ctx_speed = Band(self.p_ctx, col["a"], "per user")
        self.ctx_ceiling = self.p_ctx.plot([], [], pen=pg.mkPen(col["muted"], style=dash), name="at 100 %")
        self.ctx_now = self.p_ctx.plot([], [], pen=None, symbol="o", symbolSize=9, symbolBrush=col["a"])

        # 4/5 memory plans (per GPU), stacked
        self.p_mem_ctx = new_plot(1, 0, "Memory per GPU vs context", "context (tokens)", "GB", logy=False)
        self.p_mem_batch = new_plot(1, 1, "Memory per GPU vs batch", "batch", "GB", logy=False)
        self.mem_ctx = self._stack(self.p_mem_ctx)
        self.mem_batch = self._stack(self.p_mem_batch)
        # 6 prefill speed vs prompt
        self.p_prefill = new_plot(1, 2, "Prefill speed vs prompt", "prompt (tokens)", "prompt tok/s")
        self.prefill = Band(self.p_prefill, col["b"], "prefill")
        self.prefill_ceiling = self.p_prefill.plot([], [], pen=pg.mkPen(col["muted"], style=dash), name="at 100 %")
        self.glw.ci.layout.setColumnStretchFactor(0, 1)
        self.glw.ci.layout.setColumnStretchFactor(1, 1)
        self.glw.ci.layout.setColumnStretchFactor(2, 1)
        self.data: dict[str, object] = {}

    def _stack(self, plot: pg.PlotItem) -> dict[str, object]:
        col = self.colors
        base = pg.PlotDataItem([], [], pen=INVISIBLE)
        plot.addItem(base)
        tops, fills = [], []
        prev = base
        for _, label, ck in MEMORY_LAYERS:
            top = plot.plot([], [], pen=pg.mkPen(col[ck], width=1), name=label)
            fill = Fill(prev, top, brush=_alpha(col[ck], 110))
            plot.addItem(fill)
            tops.append(top)
            fills.append(fill)
            prev = top
        usable = plot.plot([], [], pen=pg.mkPen(col["d"], width=2, style=Qt.PenStyle.DashLine), name="usable")
        free = Fill(prev, usable, brush=_alpha(col["muted"], 35))
        plot.addItem(free)
        now = pg.InfiniteLine(angle=90, pen=pg.mkPen(col["muted"], style=Qt.PenStyle.DotLine))
        plot.addItem(now, ignoreBounds=True)
        return {"base": base, "tops": tops, "usable": usable, "now": now, "fills": fills + [free]}

    def _fill_stack(self, stack, c, x, now_x) -> None:
        acc = np.zeros_like(x, dtype=float)
        stack["base"].setData(x, acc.copy())
        for (attr, _, _), top in zip(MEMORY_LAYERS, stack["tops"]):
            acc = acc + np.nan_to_num(np.asarray(getattr(c, attr), dtype=float))
            top.setData(x, acc.copy())
        stack["usable"].setData(x, np.asarray(c.usable_gb, dtype=float))
        stack["now"].setPos(math.log10(max(now_x, 1)))
        for f in stack["fills"]:
            f.refresh()

    def render(self) -> None:
        s = self.session
        p = s.prediction
        if p is None:
            return
        cfg = s.cfg
        wl = cfg.workload
        ctx = int(cfg.model.native_context)
        # decode vs batch: up to past the KV limit
        top_batch = int(min(max(64, (p.max_batch or 1) * 2, wl.batch * 2), 8192))
        b = log_points(1, top_batch)
        cb = s.curve("batch", b)
        if cb is not None:
            self.batch_user.set(cb.x, cb.decode_tok_s, cb.decode_low_tok_s, cb.decode_high_tok_s)
            self.batch_total.set(cb.x, cb.throughput_tok_s, cb.throughput_low_tok_s, cb.throughput_high_tok_s)
            self.batch_ceiling.setData(cb.x, cb.decode_ceiling_tok_s)
            self.batch_now.setData([wl.batch], [p.decode_tok_s])
            self.kv_limit.setPos(math.log10(max(p.max_batch, 1)))
            self.kv_limit.setVisible(p.max_batch >= 1)
            self.kv_limit.label.setFormat(f"KV limit {p.max_batch:,}")
            kb = cb.knee_batch
            ok = kb is not None and math.isfinite(kb) and kb > 0
            self.knee.setVisible(ok)
            if ok:
                self.knee.setPos(math.log10(kb))
                self.knee.label.setFormat(f"knee ≈ {kb:,.0f}")
            self.mem_batch_x = cb.x
            self._fill_stack(self.mem_batch, cb, cb.x, wl.batch)
        # TTFT vs prompt
        room = max(2, ctx - wl.depth_tokens - wl.output_tokens)
        cp = s.curve("prompt", log_points(16 if room > 32 else 1, room))
        if cp is not None:
            self.ttft.set(cp.x, cp.ttft_ms, cp.ttft_low_ms, cp.ttft_high_ms)
            with np.errstate(divide="ignore", invalid="ignore"):
                ceiling = cp.ttft_ms * cp.prefill_tok_s / cp.prefill_ceiling_tok_s
            self.ttft_ceiling.setData(cp.x, ceiling)
            self.ttft_now.setData([wl.prompt_tokens], [p.ttft_ms])
            self.prefill.set(cp.x, cp.prefill_tok_s, cp.prefill_low_tok_s, cp.prefill_high_tok_s)
            self.prefill_ceiling.setData(cp.x, cp.prefill_ceiling_tok_s)
        # decode vs context (depth varies; x = the whole context)
        room = max(2, ctx - wl.prompt_tokens - wl.output_tokens)
        cd = s.curve("depth", np.concatenate([[0], log_points(16, room)]) if room > 32 else np.arange(0, room))
        if cd is not None:
            x = cd.x + wl.prompt_tokens + wl.output_tokens
            self.ctx_speed.set(x, cd.decode_tok_s, cd.decode_low_tok_s, cd.decode_high_tok_s)
            self.ctx_ceiling.setData(x, cd.decode_ceiling_tok_s)
            self.ctx_now.setData([wl.depth_tokens + wl.prompt_tokens + wl.output_tokens], [p.decode_tok_s])
            self._fill_stack(self.mem_ctx, cd, x, wl.depth_tokens + wl.prompt_tokens + wl.output_tokens)
        self.data = {"batch": cb, "prompt": cp, "depth": cd}
