"""Curves along one input at a time (api.curve, ~160 log-spaced points each): decode speed vs batch
with the KV limit and the knee, TTFT vs prompt, decode speed vs context, and the per-GPU memory plan
(stacked) against the usable-memory line, vs context and vs batch."""

from __future__ import annotations

import functools
import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QScrollArea, QVBoxLayout

from ui.series import Dot, Series
from ui.tabs import TabView
from ui.widgets import HoverReadout, LazyView, plot_colors

N_POINTS = 160
MEMORY_LAYERS = (("weights_gb", "weights", "a"), ("kv_gb", "KV", "b"), ("workspace_gb", "workspace", "c"),
                 ("overhead_gb", "overhead", "e"))


#: tokens: where the context axes start (the curves start at the prompt plus output)
CONTEXT_AXIS_FROM = 64
TITLE_HEIGHT = 40   # px: a chart's title and the legend line under it


def log_points(lo: int, hi: int, n: int = N_POINTS) -> np.ndarray:
    """``n`` integers spaced evenly on a log scale from ``lo`` to ``hi`` (fewer where they repeat)."""
    return _log_points(max(1, int(lo)), max(int(hi), int(lo) + 1), n).copy()


@functools.lru_cache(maxsize=64)
def _log_points(lo: int, hi: int, n: int) -> np.ndarray:
    # the same few ranges come back with every input change (the model's context, the batch's
    # range), and geomspace + unique is a tenth of a redraw
    return np.unique(np.round(np.geomspace(lo, hi, n)).astype(np.int64))


def area(plot: pg.PlotItem, brush, name: str | None = None) -> Series:
    """A filled region between two series (`Series.set_area`): one closed polygon. (pyqtgraph's
    FillBetweenItem rebuilds its path from both curves' paths on every change, ~0.4 ms each.)"""
    return Series(plot, brush=brush, name=name, antialias=False)


def _alpha(colour: str, a: int) -> pg.QtGui.QColor:
    c = pg.mkColor(colour)
    c.setAlpha(a)
    return c


def blend(colour: str, background: str, a: int) -> pg.QtGui.QColor:
    """``colour`` at opacity a/255 over ``background``, as an opaque colour: big areas painted opaque
    cost the software renderer much less than the same areas alpha-blended."""
    c, b = pg.mkColor(colour), pg.mkColor(background)
    f = a / 255.0
    return pg.mkColor(int(c.red() * f + b.red() * (1 - f)), int(c.green() * f + b.green() * (1 - f)),
                      int(c.blue() * f + b.blue() * (1 - f)))


def frame(plot: pg.PlotItem, xs, ys, logx: bool = True, logy: bool = True, y0: float | None = None,
          minor: bool = True) -> bool:
    """Set the plot's range by hand, each axis only when the data left it or shrank to under half of
    it: the axes then stay still while a slider moves (no tick regeneration, no second paint, no
    jumping). An axis whose range still fits keeps it when the other one must change: reframing both
    made a chart whose x grew and y shrank in turn reframe on every other input change."""
    x = np.concatenate([np.asarray(a, dtype=float).ravel() for a in xs])
    y = np.concatenate([np.asarray(a, dtype=float).ravel() for a in ys])
    x = x[np.isfinite(x) & ((x > 0) if logx else True)]
    y = y[np.isfinite(y) & ((y > 0) if logy else True)]
    if not len(x) or not len(y):
        return False
    x0, x1 = (np.log10(x.min()), np.log10(x.max())) if logx else (x.min(), x.max())
    ylo, yhi = (np.log10(y.min()), np.log10(y.max())) if logy else (min(y.min(), y0 if y0 is not None else y.min()), y.max())
    want = [(x0, x1 if x1 > x0 else x0 + 1), (ylo, yhi if yhi > ylo else ylo + 1)]
    pad = [0.04 * (w1 - w0) for w0, w1 in want]
    # the view range each axis gets when framed anew (y: more room on top for the labels)
    new = [(want[0][0] - pad[0], want[0][1] + pad[0]),
           (want[1][0] - pad[1] * (0 if (not logy and y0 is not None) else 1), want[1][1] + pad[1] * 3)]
    current = plot.vb.viewRange()
    framed = getattr(plot, "_framed", None)
    change = [True, True]
    if framed is not None:
        for i, ((w0, w1), (c0, c1)) in enumerate(zip(want, current)):
            change[i] = not (c0 <= w0 and w1 <= c1 and (w1 - w0) > 0.5 * (c1 - c0))
    if not any(change):
        return False
    ranges = [new[i] if change[i] else tuple(current[i]) for i in range(2)]
    plot.setRange(xRange=ranges[0], yRange=ranges[1], padding=0)
    plot._framed = True
    for i, (axis, is_log) in enumerate((("bottom", logx), ("left", logy))):
        if change[i] and is_log:
            ticks = log_ticks(*ranges[i])
            plot.getAxis(axis).setTicks(ticks if minor else ticks[:1])
    return True


def short_number(v: float) -> str:
    """1, 20, 500, 2k, 10k, 1M, 0.1 — tick labels that stay short."""
    for div, suffix in ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k")):
        if abs(v) >= div:
            return f"{v / div:.3g}{suffix}"
    return f"{v:.3g}"


def log_ticks(lo: float, hi: float) -> list[list[tuple[float, str]]]:
    """Ticks for a log axis between 10**lo and 10**hi: decades labelled, 2–9 as unlabelled minor
    ticks; when fewer than two decades show, 2 and 5 are labelled too. (pyqtgraph labels every minor
    tick of a short log axis, and the labels overlap.)"""
    major, minor = [], []
    for d in range(math.floor(lo), math.ceil(hi) + 1):
        for m in range(1, 10):
            v = d + math.log10(m)
            if lo <= v <= hi:
                (major if m == 1 else minor).append((v, m))
    labelled = [v for v, _ in major]
    if len(labelled) < 2:
        labelled += [v for v, m in minor if m in (2, 5)]
    labelled = sorted(set(labelled))
    rest = [v for v, _ in minor if v not in labelled]
    return [[(v, short_number(10 ** v)) for v in labelled], [(v, "") for v in rest]]


def _clip_memory(total, usable) -> np.ndarray:
    """What a memory plot frames: the usable line and the stack up to 2.5× it (past that, the weights
    and the usable line would shrink to nothing under a KV cache that far out of reach anyway)."""
    total, usable = np.asarray(total, dtype=float), np.asarray(usable, dtype=float)
    cap = 2.5 * np.nanmax(usable) if usable.size and np.isfinite(usable).any() else np.inf
    return np.concatenate([np.minimum(total, cap), usable])


class Band:
    """A line with a shaded band (low–high) around it; all items made once."""

    def __init__(self, plot: pg.PlotItem, colour: str, name: str, width: float = 2.0):
        self.area = area(plot, _alpha(colour, 50))
        self.line = Series(plot, pen=pg.mkPen(colour, width=width), name=name)

    def set(self, x, y, lo, hi) -> None:
        self.area.set_area(x, lo, hi)
        self.line.setData(x, y)


class CurvesView(LazyView, TabView):
    def __init__(self, session, parent=None):
        super().__init__(session, parent)
        col = plot_colors()
        self.colors = col
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        self.glw = pg.GraphicsLayoutWidget()
        self.glw.setObjectName("curves_layout")
        # in a scroll area: below ~2 × 230 px per plot the charts scroll instead of being crushed
        self.scroll = QScrollArea()
        self.scroll.setWidgetResizable(True)
        self.scroll.setFrameShape(QScrollArea.Shape.NoFrame)
        self.scroll.setWidget(self.glw)
        lay.addWidget(self.scroll)
        self.hover = QLabel(" ")
        self.hover.setObjectName("curves_hover")
        self.hover.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.hover)
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
            p.chart_title = title   # the legend goes under it (`title_legend`), not over the data
            p.disableAutoRange()  # framed by hand in render (see `frame`)
            p.setMouseEnabled(x=False, y=False)  # computed charts: nothing to pan or zoom
            return p

        # 1 decode vs batch
        self.p_batch = new_plot(0, 0, "Decode speed vs batch", "batch (concurrent users)", "tok/s")
        self.batch_user = Band(self.p_batch, col["a"], "per user")
        self.batch_total = Band(self.p_batch, col["b"], "aggregate")
        self.batch_ceiling = Series(self.p_batch, pen=pg.mkPen(col["muted"], style=dash), name="at 100 %")
        self.kv_limit = pg.InfiniteLine(angle=90, pen=pg.mkPen(col["d"], width=1.5), label="KV limit",
                                        labelOpts={"position": 0.12, "color": col["d"]})
        self.knee = pg.InfiniteLine(angle=90, pen=pg.mkPen(col["muted"], style=dash), label="knee",
                                    labelOpts={"position": 0.22, "color": col["muted"]})
        self.p_batch.addItem(self.kv_limit, ignoreBounds=True)
        self.p_batch.addItem(self.knee, ignoreBounds=True)
        self.batch_now = _marker(self.p_batch, col["a"])

        # 2 TTFT vs prompt
        self.p_prompt = new_plot(0, 1, "Time to first token vs prompt", "prompt (tokens)", "TTFT (ms)")
        self.ttft = Band(self.p_prompt, col["b"], "TTFT")
        self.ttft_ceiling = Series(self.p_prompt, pen=pg.mkPen(col["muted"], style=dash), name="at 100 %")
        self.ttft_now = _marker(self.p_prompt, col["b"])

        # 3 decode vs context
        self.p_ctx = new_plot(0, 2, "Decode speed vs context", "context (tokens)", "tok/s per user")
        self.ctx_speed = Band(self.p_ctx, col["a"], "per user")
        self.ctx_ceiling = Series(self.p_ctx, pen=pg.mkPen(col["muted"], style=dash), name="at 100 %")
        self.ctx_now = _marker(self.p_ctx, col["a"])

        # 4/5 memory plans (per GPU), stacked
        self.p_mem_ctx = new_plot(1, 0, "Memory per GPU vs context", "context (tokens)", "GB", logy=False)
        self.p_mem_batch = new_plot(1, 1, "Memory per GPU vs batch", "batch", "GB", logy=False)
        self.mem_ctx = self._stack(self.p_mem_ctx)
        self.mem_batch = self._stack(self.p_mem_batch)
        # 6 prefill speed vs prompt
        self.p_prefill = new_plot(1, 2, "Prefill speed vs prompt", "prompt (tokens)", "prompt tok/s")
        self.prefill = Band(self.p_prefill, col["b"], "prefill")
        self.prefill_ceiling = Series(self.p_prefill, pen=pg.mkPen(col["muted"], style=dash), name="at 100 %")
        self.plots = [self.p_batch, self.p_prompt, self.p_ctx, self.p_mem_ctx, self.p_mem_batch, self.p_prefill]
        for p in self.plots:
            title_legend(p)
        self.readout = HoverReadout(self.glw, self.plots, self.hover, "hover a chart for its values")
        self.columns = 3
        self.glw.setMinimumHeight(2 * 230)
        self.data: dict[str, object] = {}
        #: the inputs each chart was last drawn from: a chart whose inputs did not change keeps its
        #: curves (TTFT vs prompt does not move with the prompt: only its marker does)
        self._drawn: dict[str, tuple] = {}
        #: how often each chart's curves were drawn (tests check that an unchanged one is not)
        self.draws = {"batch": 0, "prompt": 0, "depth": 0}

    def chart(self):
        return self.glw.scene(), self.glw

    def resizeEvent(self, event) -> None:  # noqa: N802
        super().resizeEvent(event)
        self.arrange(3 if event.size().width() >= 1000 else 2)

    def arrange(self, columns: int) -> None:
        """Lay the six charts out in ``columns`` columns (3 on a wide window, 2 on a narrow one)."""
        if columns == self.columns:
            return
        self.columns = columns
        ci = self.glw.ci
        for p in self.plots:
            ci.removeItem(p)
        for i, p in enumerate(self.plots):
            ci.addItem(p, row=i // columns, col=i % columns)
        rows = -(-len(self.plots) // columns)
        self.glw.setMinimumHeight(rows * 230)

    def _stack(self, plot: pg.PlotItem) -> dict[str, object]:
        col = self.colors
        tops, fills = [], []
        for _, label, ck in MEMORY_LAYERS:
            fills.append(area(plot, blend(col[ck], col["bg"], 110)))
            tops.append(Series(plot, pen=pg.mkPen(col[ck], width=1), name=label))
        usable = Series(plot, pen=pg.mkPen(col["d"], width=2, style=Qt.PenStyle.DashLine), name="usable")
        free = area(plot, blend(col["muted"], col["bg"], 35))
        now = pg.InfiniteLine(angle=90, pen=pg.mkPen(col["muted"], style=Qt.PenStyle.DotLine))
        plot.addItem(now, ignoreBounds=True)
        return {"tops": tops, "usable": usable, "now": now, "fills": fills, "free": free}

    def _fill_stack(self, stack, c, x) -> None:
        acc = np.zeros_like(x, dtype=float)
        for (attr, _, _), top, area in zip(MEMORY_LAYERS, stack["tops"], stack["fills"]):
            below = acc
            layer = np.nan_to_num(np.asarray(getattr(c, attr), dtype=float))
            acc = acc + layer
            top.setData(x, acc)
            top.readout_y = layer   # the hover reads each layer's own GB, not the running total
            area.set_area(x, below, acc)
        usable = np.asarray(c.usable_gb, dtype=float)
        stack["usable"].setData(x, usable)
        stack["free"].set_area(x, acc, np.maximum(acc, usable))

    def _changed(self, vary: str, values: np.ndarray) -> bool:
        """Whether the curve along ``vary`` must be drawn again: its x values or any input besides
        ``vary`` itself changed since it was drawn."""
        cfg = self.session.cfg
        wl = cfg.workload
        others = {"batch": wl.batch, "prompt": wl.prompt_tokens, "depth": wl.depth_tokens}
        others.pop(vary)
        key = (id(self.session.cat), cfg.hardware, cfg.model.key, cfg.quant.key, cfg.kv_dtype.key, cfg.runtime.key,
               cfg.gpus, cfg.split, wl.output_tokens, tuple(others.values()), values.tobytes())
        if self._drawn.get(vary) == key and self.data.get(vary) is not None:
            return False
        self._drawn[vary] = key
        self.draws[vary] += 1
        return True

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
        cb = self.data.get("batch")
        if self._changed("batch", b):
            cb = s.curve("batch", b)
            if cb is not None:
                self.batch_user.set(cb.x, cb.decode_tok_s, cb.decode_low_tok_s, cb.decode_high_tok_s)
                self.batch_total.set(cb.x, cb.throughput_tok_s, cb.throughput_low_tok_s, cb.throughput_high_tok_s)
                self.batch_ceiling.setData(cb.x, cb.decode_ceiling_tok_s)
                self.kv_limit.setVisible(p.max_batch >= 1)
                _place(self.kv_limit, math.log10(max(p.max_batch, 1)), f"KV limit {p.max_batch:,}")
                kb = cb.knee_batch
                ok = kb is not None and math.isfinite(kb) and kb > 0
                self.knee.setVisible(ok)
                if ok:
                    _place(self.knee, math.log10(kb), f"knee ≈ {kb:,.0f}")
                self.mem_batch_x = cb.x
                self._fill_stack(self.mem_batch, cb, cb.x)
                frame(self.p_batch, [cb.x], [cb.decode_low_tok_s, cb.throughput_high_tok_s, cb.decode_ceiling_tok_s])
                frame(self.p_mem_batch, [cb.x], [_clip_memory(self.mem_batch["tops"][-1].yData, cb.usable_gb)],
                      logy=False, y0=0.0)
        if cb is not None:
            _move(self.batch_now, wl.batch, p.decode_tok_s)
            _place(self.mem_batch["now"], math.log10(max(wl.batch, 1)))
        # TTFT vs prompt
        room = max(2, ctx - wl.depth_tokens - wl.output_tokens)
        prompts = log_points(16 if room > 32 else 1, room)
        cp = self.data.get("prompt")
        if self._changed("prompt", prompts):
            cp = s.curve("prompt", prompts)
            if cp is not None:
                self.ttft.set(cp.x, cp.ttft_ms, cp.ttft_low_ms, cp.ttft_high_ms)
                with np.errstate(divide="ignore", invalid="ignore"):
                    ceiling = cp.ttft_ms * cp.prefill_tok_s / cp.prefill_ceiling_tok_s
                self.ttft_ceiling.setData(cp.x, ceiling)
                self.prefill.set(cp.x, cp.prefill_tok_s, cp.prefill_low_tok_s, cp.prefill_high_tok_s)
                self.prefill_ceiling.setData(cp.x, cp.prefill_ceiling_tok_s)
                frame(self.p_prompt, [cp.x], [cp.ttft_low_ms, cp.ttft_high_ms, ceiling])
                frame(self.p_prefill, [cp.x], [cp.prefill_low_tok_s, cp.prefill_high_tok_s, cp.prefill_ceiling_tok_s])
        if cp is not None:
            _move(self.ttft_now, wl.prompt_tokens, p.ttft_ms)
        # decode vs context (depth varies; x = the whole context)
        room = max(2, ctx - wl.prompt_tokens - wl.output_tokens)
        depths = np.concatenate([[0], log_points(16, room)]) if room > 32 else np.arange(0, room)
        cd = self.data.get("depth")
        now_ctx = wl.depth_tokens + wl.prompt_tokens + wl.output_tokens
        if self._changed("depth", depths):
            cd = s.curve("depth", depths)
            if cd is not None:
                x = cd.x + wl.prompt_tokens + wl.output_tokens
                self.ctx_speed.set(x, cd.decode_tok_s, cd.decode_low_tok_s, cd.decode_high_tok_s)
                self.ctx_ceiling.setData(x, cd.decode_ceiling_tok_s)
                self._fill_stack(self.mem_ctx, cd, x)
                # the context axis spans CONTEXT_AXIS_FROM to the model's context whatever the prompt:
                # the curve starts at the prompt, and the axis stays still while it moves
                span = [x, [CONTEXT_AXIS_FROM, ctx]]
                frame(self.p_ctx, span, [cd.decode_low_tok_s, cd.decode_ceiling_tok_s])
                frame(self.p_mem_ctx, span, [_clip_memory(self.mem_ctx["tops"][-1].yData, cd.usable_gb)],
                      logy=False, y0=0.0)
        if cd is not None:
            _move(self.ctx_now, now_ctx, p.decode_tok_s)
            _place(self.mem_ctx["now"], math.log10(max(now_ctx, 1)))
        self.data = {"batch": cb, "prompt": cp, "depth": cd}


def title_legend(plot: pg.PlotItem) -> None:
    """The chart's title with its legend on a line below it, as coloured text: a legend inside the
    chart hides the data under it, and is repainted with every curve that passes beneath it."""
    entries = []
    for item in plot.listDataItems():
        name = item.opts.get("name")
        if not name or not item.isVisible():
            continue
        pen = pg.mkPen(item.opts.get("pen"))
        dashed = pen.style() != Qt.PenStyle.SolidLine
        colour = pen.color().name()
        if item.opts.get("fillLevel") is not None and item.opts.get("fillBrush") is not None:
            colour, mark = pg.mkBrush(item.opts["fillBrush"]).color().name(), "■"
        elif item.opts.get("pen") is None and item.opts.get("symbol"):   # points only
            colour, mark = pg.mkBrush(item.opts.get("symbolBrush")).color().name(), "●"
        else:
            mark = "┄" if dashed else "━"
        entries.append(f"<span style='color:{colour}'>{mark}</span>&nbsp;{name}")
    muted = plot_colors()["muted"]
    label = plot.titleLabel
    if not getattr(label, "narrowable", False):
        # the label asks for its text's width as its minimum and preferred width (again on every
        # resize): let the layout narrow it instead, or three charts would not fit a laptop's width
        size_to_text = label.updateMin

        def update_min() -> None:
            size_to_text()
            height = label._sizeHint[Qt.SizeHint.MinimumSize][1]
            label.setMinimumWidth(0)
            label._sizeHint[Qt.SizeHint.MinimumSize] = label._sizeHint[Qt.SizeHint.PreferredSize] = (0, height)

        label.updateMin = update_min
        label.narrowable = True
    plot.setTitle(f"{plot.chart_title}<br><span style='font-size:7pt; color:{muted}'>"
                  + " &nbsp; ".join(entries) + "</span>")
    plot.titleLabel.setMaximumHeight(TITLE_HEIGHT)   # two lines: the title and its legend
    plot.layout.setRowFixedHeight(0, TITLE_HEIGHT)


def _marker(plot: pg.PlotItem, colour: str) -> Dot:
    """The inputs' own point on a chart, moved with `_move`."""
    item = Dot(plot, colour)
    item.setVisible(False)
    return item


def _place(line: pg.InfiniteLine, x: float, text: str | None = None) -> None:
    """Put a labelled vertical line at ``x``; one already there keeps its label (moving a line and
    setting its label's text each re-lay the label out, even to the same place)."""
    if line.value() != x:
        line.setPos(x)
    if text is not None and line.label.format != text:
        line.label.setFormat(text)


def _move(item: Dot, x: float, y: float) -> None:
    ok = x > 0 and y > 0 and math.isfinite(x) and math.isfinite(y)
    item.setVisible(ok)
    if ok:
        item.setPos(math.log10(x), math.log10(y))
