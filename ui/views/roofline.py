"""The live roofline: the device's compute roofs per dtype and its bandwidth slope (log-log), the
operating points of prefill, decode and each operator class with their bands, and the ridge where
decode turns compute-bound. Items are created once and updated with `setData`."""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import QLabel, QVBoxLayout

from advisor.text.format import duration_ms, num
from ui.views.curves import frame
from ui.tabs import TabView
from ui.widgets import LazyView, move_item, plot_colors

POINT_STYLE = {  # name: (label, colour key, symbol)
    "prefill": ("prefill", "b", "s"),
    "decode": ("decode", "a", "o"),
    "attention": ("attention", "e", "t"),
    "mlp": ("MLP / experts", "c", "d"),
    "lm-head": ("lm-head", "f", "h"),
    "all-reduce": ("all-reduce", "d", "star"),
}
X_MIN, X_MAX = 0.1, 1e5


class RooflineView(LazyView, TabView):
    def __init__(self, session, parent=None):
        super().__init__(session, parent)
        col = plot_colors()
        self.colors = col
        lay = QVBoxLayout(self)
        lay.setContentsMargins(2, 2, 2, 2)
        self.plot = pg.PlotWidget()
        self.plot.setObjectName("roofline_plot")
        pi = self.plot.getPlotItem()
        self.plot_item = pi
        pi.setLogMode(True, True)
        pi.showGrid(x=True, y=True, alpha=0.25)
        pi.setLabel("bottom", "Arithmetic intensity (FLOP/byte)")
        pi.setLabel("left", "Attained (TFLOP/s)")
        for ax in ("bottom", "left"):
            pi.getAxis(ax).enableAutoSIPrefix(False)
        pi.setMenuEnabled(False)
        pi.disableAutoRange()
        pi.setMouseEnabled(x=False, y=False)
        self.legend = pi.addLegend(offset=(10, 10), labelTextSize="8pt")
        self.roofs: dict[str, pg.PlotDataItem] = {}
        self.roof_labels: dict[str, pg.TextItem] = {}
        self.bandwidth = pi.plot([], [], pen=pg.mkPen(col["fg"], width=2))
        self.ridge = pg.InfiniteLine(angle=90, movable=False, pen=pg.mkPen(col["muted"], style=Qt.PenStyle.DashLine),
                                     label="", labelOpts={"position": 0.08, "color": col["muted"]})
        pi.addItem(self.ridge, ignoreBounds=True)
        self.bands = pi.plot([], [], pen=pg.mkPen(col["muted"], width=3), connect="pairs")
        self.points: dict[str, pg.PlotDataItem] = {}
        self.labels: dict[str, pg.TextItem] = {}
        for name, (label, ck, sym) in POINT_STYLE.items():
            size = 13 if name in ("prefill", "decode") else 10
            # one point at the origin of log space (1, 1), moved with setPos: moving an item costs a
            # repaint, re-setting its data rebuilds its scatter (most of a redraw's time)
            self.points[name] = pi.plot([1.0], [1.0], pen=None, symbol=sym, symbolSize=size, symbolBrush=col[ck],
                                        symbolPen=pg.mkPen(col["fg"], width=0.6))
            self.points[name].setVisible(False)
            # prefill sits under the roofs' labels (right end): its label goes below-left of the point
            t = pg.TextItem("", color=col[ck], anchor=(1.1, -0.1) if name == "prefill" else (0, 1.1))
            pi.addItem(t, ignoreBounds=True)
            self.labels[name] = t
        self.hover = QLabel(" ")
        self.hover.setObjectName("roofline_hover")
        self.hover.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.plot, 1)
        lay.addWidget(self.hover)
        self.plot.scene().sigMouseMoved.connect(self._on_mouse_moved)
        self.current: dict[str, object] = {}
        self._in_legend: set[str] = set()
        self._device: tuple | None = None
        self.xy: dict[str, tuple[float, float]] = {}   # each point's (intensity, TFLOP/s) as drawn
        #: how often the roofs and the points were drawn (a workload change must not redraw the roofs)
        self.draws = {"roofs": 0, "points": 0}

    # ------------------------------------------------------------------
    def render(self) -> None:
        r = self.session.roofline
        if r is None:
            return
        bw = r.bandwidth_gb_s
        roofs = {k: v for k, v in (r.roofs or {}).items() if v and math.isfinite(v)}
        if not roofs and r.peak_tflops and math.isfinite(r.peak_tflops):
            roofs = {r.compute_dtype or "peak": r.peak_tflops}
        # the roofs belong to the device (and the dtype in force): a workload change moves only the points
        device = (bw, tuple(sorted(roofs.items())), r.compute_dtype, r.ridge_intensity, r.knee_batch)
        if device != self._device:
            self._device = device
            self._render_roofs(r, roofs)
            self.draws["roofs"] += 1
        self._render_points(r, roofs)
        self.draws["points"] += 1

    def _render_roofs(self, r, roofs: dict[str, float]) -> None:
        col = self.colors
        bw = r.bandwidth_gb_s
        # one item per dtype, created when a device with that dtype first shows up; hidden otherwise
        # dtypes with the same peak (fp16/bf16, fp8/int8) share one line and one label
        same: dict[float, list[str]] = {}
        for dtype, peak in roofs.items():
            same.setdefault(peak, []).append(dtype)
        for dtype, peak in roofs.items():
            item = self.roofs.get(dtype)
            if item is None:
                item = self.plot_item.plot([], [])
                self.roofs[dtype] = item
                t = pg.TextItem("", anchor=(1, 1.05))  # above the right end of the roof
                self.plot_item.addItem(t, ignoreBounds=True)
                self.roof_labels[dtype] = t
            in_force = dtype == r.compute_dtype
            pen = pg.mkPen(col["d"] if in_force else col["muted"], width=2.5 if in_force else 1,
                           style=Qt.PenStyle.SolidLine if in_force else Qt.PenStyle.DashLine)
            item.setPen(pen)
            ridge = peak * 1000.0 / bw
            item.setData([ridge, X_MAX], [peak, peak])
            item.setVisible(True)
            group = same[peak]
            in_force_group = r.compute_dtype in group
            item.setPen(pg.mkPen(col["d"], width=2.5) if in_force_group else pen)
            label = self.roof_labels[dtype]
            first = dtype == group[0]
            label.setText(f"{'/'.join(group)} {num(peak)} TFLOP/s")  # the roof in force is the red one
            label.setColor(col["d"] if in_force_group else col["muted"])
            label.setPos(math.log10(X_MAX), math.log10(peak))
            label.setVisible(first)
        for dtype, item in self.roofs.items():
            if dtype not in roofs:
                item.setVisible(False)
                self.roof_labels[dtype].setVisible(False)
        top = max(roofs.values()) if roofs else 1e3
        x_top = top * 1000.0 / bw
        self.bandwidth.setData([X_MIN, x_top], [bw * X_MIN / 1000.0, top])
        if r.ridge_intensity and math.isfinite(r.ridge_intensity):
            self.ridge.setPos(math.log10(r.ridge_intensity))
            knee = f"decode turns compute-bound at batch ≈ {num(r.knee_batch)}" if math.isfinite(r.knee_batch) else ""
            self.ridge.label.setFormat(f"ridge {num(r.ridge_intensity)} FLOP/B ({r.compute_dtype} roof, in red)\n{knee}")
            self.ridge.setVisible(True)
        else:
            self.ridge.setVisible(False)

    def _render_points(self, r, roofs: dict[str, float]) -> None:
        bw = r.bandwidth_gb_s
        seen = set()
        bx, by = [], []
        for p in r.points:
            if p.name not in self.points or not (p.intensity > 0 and p.attained_tflops > 0):
                continue
            seen.add(p.name)
            xy = (math.log10(p.intensity), math.log10(p.attained_tflops))
            move_item(self.points[p.name], *xy)
            self.points[p.name].setVisible(True)
            self.xy[p.name] = (p.intensity, p.attained_tflops)
            lab = self.labels[p.name]
            # only the two headline points carry a label; the operators are told apart by the legend
            text = POINT_STYLE[p.name][0] if p.name in ("prefill", "decode") else ""
            if lab.toPlainText() != text:
                lab.setText(text)
            lab.setPos(*xy)
            lab.setVisible(True)
            lo, hi = p.low_tflops, p.high_tflops
            if lo > 0 and hi > 0 and math.isfinite(lo) and math.isfinite(hi):
                bx += [p.intensity, p.intensity]
                by += [lo, hi]
        for name, item in self.points.items():
            if name not in seen:
                item.setVisible(False)
                self.labels[name].setVisible(False)
                self.xy.pop(name, None)
        self.bands.setData(bx, by, connect="pairs")
        if seen != self._in_legend:  # the legend lists only the points on the chart (all-reduce comes and goes)
            self._in_legend = seen
            self.legend.clear()
            for name in POINT_STYLE:
                if name in seen:
                    self.legend.addItem(self.points[name], POINT_STYLE[name][0])
        self.current = {p.name: p for p in r.points}
        # re-frame only when something left the view (or it got much too big), not on every slider step
        pts = [p for p in r.points if p.intensity > 0 and p.attained_tflops > 0]
        xs = [X_MIN, X_MAX] + [p.intensity for p in pts]
        ys = list(roofs.values()) + [bw * X_MIN / 1000.0] + [p.low_tflops for p in pts] + [p.high_tflops for p in pts]
        # decade grid lines only: the minor ones cost more paint time than they add on a chart this busy
        frame(self.plot_item, [xs], [np.asarray(ys) * f for f in (0.5, 2.0)], minor=False)
        self.hover.setText(self.describe("decode") or " ")

    def chart(self):
        return self.plot_item, self.plot

    # ------------------------------------------------------------------
    def describe(self, name: str) -> str:
        """What the hover shows for a point: intensity, attained FLOP/s, band, bound, time."""
        p = self.current.get(name)
        if p is None:
            return ""
        return (f"{POINT_STYLE.get(name, (name,))[0]}: {num(p.intensity)} FLOP/byte · {num(p.attained_tflops)} TFLOP/s "
                f"attained (band {num(p.low_tflops)}–{num(p.high_tflops)}) · {p.bound}-bound · "
                f"{duration_ms(p.time_ms)} per step")

    def _on_mouse_moved(self, pos) -> None:
        vb = self.plot_item.vb
        if not self.plot_item.sceneBoundingRect().contains(pos) or not self.current:
            return
        best, best_d = None, 18.0 ** 2  # pixels
        for name, p in self.current.items():
            if not (p.intensity > 0 and p.attained_tflops > 0):
                continue
            sp = vb.mapViewToScene(pg.Point(math.log10(p.intensity), math.log10(p.attained_tflops)))
            d = (sp.x() - pos.x()) ** 2 + (sp.y() - pos.y()) ** 2
            if d < best_d:
                best, best_d = name, d
        if best:
            text = self.describe(best)
            self.hover.setText(text)
            self.plot.setToolTip(text)
        else:
            v = vb.mapSceneToView(pos)
            x, y = 10 ** v.x(), 10 ** v.y()
            self.plot.setToolTip("")
            self.hover.setText(f"{num(x)} FLOP/byte, {num(y)} TFLOP/s — hover a point for its figures")

    def point_xy(self, name: str) -> tuple[float, float] | None:
        """The raw (not log10) coordinates of a plotted point (for tests and exports)."""
        if not self.points[name].isVisible() or name not in self.xy:
            return None
        return self.xy[name]
