"""The report's charts: the same kinds of pyqtgraph plots as the app's views (ui/views/roofline.py,
ui/views/curves.py), built from a `ReportContent` and recorded as vector pictures (`QPicture`) that
the PDF writer plays back at any size, on any thread.

Built on the GUI thread (pyqtgraph items are widgets); each chart is a small off-screen
`GraphicsLayoutWidget` in the app's light palette, rendered once into a `QPicture` and closed.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QRectF, Qt
from PySide6.QtGui import QFont, QPainter, QPicture
from PySide6.QtWidgets import QApplication

from advisor.text.format import duration_ms, num
from ui.views.curves import Band, blend, frame, log_ticks
from ui.views.roofline import POINT_STYLE, X_MAX, X_MIN

#: the app's light palette (ui/widgets.plot_colors): a printed page is white whatever the app's theme
COLORS = {"fg": "#222", "bg": "#ffffff", "grid": "#ccc", "a": "#1f6fd1", "b": "#e07b00", "c": "#2e9d3a",
          "d": "#d23c3c", "e": "#8e44ad", "f": "#00838f", "muted": "#888"}
#: chart size in scene pixels; the PDF scales them to the text width (≈ 0.8 pt per pixel)
WIDTH = 620
FONT_PT = 8.5


@dataclass
class Chart:
    """One recorded chart: a vector picture of ``width`` × ``height`` scene pixels, and its caption."""

    key: str
    title: str
    caption: str
    picture: QPicture
    width: int
    height: int


def _ensure_app() -> None:
    if QApplication.instance() is None:
        raise RuntimeError("the report's charts need a QApplication (ui.report.write_report makes one)")


def _new(height: int, title: str, xlabel: str, ylabel: str, logx: bool = True, logy: bool = True,
         legend: tuple[float, float] | None = (-5, 5)):
    w = pg.GraphicsLayoutWidget()
    w.setAttribute(Qt.WidgetAttribute.WA_DontShowOnScreen, True)
    w.setBackground(COLORS["bg"])
    w.resize(WIDTH, height)
    p = w.addPlot(row=0, col=0)
    p.setTitle(title, color=COLORS["fg"], size=f"{FONT_PT + 1.5}pt")
    p.setLogMode(logx, logy)
    p.showGrid(x=True, y=True, alpha=0.18)
    font = QFont()
    font.setPointSizeF(FONT_PT)
    label_style = {"color": COLORS["fg"], "font-size": f"{FONT_PT}pt"}
    p.setLabel("bottom", xlabel, **label_style)
    p.setLabel("left", ylabel, **label_style)
    for ax in ("bottom", "left"):
        a = p.getAxis(ax)
        a.enableAutoSIPrefix(False)
        a.setPen(pg.mkPen(COLORS["fg"]))
        a.setTextPen(pg.mkPen(COLORS["fg"]))
        a.setTickFont(font)
    p.setMenuEnabled(False)
    p.hideButtons()
    p.disableAutoRange()
    p.setMouseEnabled(x=False, y=False)
    if legend is not None:
        lg = p.addLegend(offset=legend, labelTextSize=f"{FONT_PT - 0.5}pt", labelTextColor=COLORS["fg"],
                         brush=pg.mkBrush(255, 255, 255, 225), pen=pg.mkPen("#bbb"))
        lg.setZValue(1000)
    return w, p


def _record(key: str, title: str, caption: str, w) -> Chart:
    w.show()
    QApplication.processEvents()
    w.resize(WIDTH, w.height())
    QApplication.processEvents()
    pic = QPicture()
    painter = QPainter(pic)
    painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
    painter.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
    rect = QRectF(0, 0, w.width(), w.height())
    w.scene().render(painter, rect, rect)
    painter.end()
    chart = Chart(key, title, caption, pic, w.width(), w.height())
    w.close()
    w.deleteLater()
    return chart


def _text(p, text: str, x: float, y: float, colour: str, anchor=(0, 1)) -> pg.TextItem:
    t = pg.TextItem(text, color=colour, anchor=anchor)
    t.setFont(_font(FONT_PT - 0.5))
    t.setPos(x, y)
    p.addItem(t, ignoreBounds=True)
    return t


def _font(pt: float) -> QFont:
    f = QFont()
    f.setPointSizeF(pt)
    return f


def _vline(p, x_log: float, label: str, colour: str, style=Qt.PenStyle.SolidLine, position: float = 0.9,
           left: bool = False):
    """A vertical line at log10/linear x with its label beside it (right of it, or left with ``left``)."""
    a = (1.05, 0.5) if left else (-0.05, 0.5)
    line = pg.InfiniteLine(pos=x_log, angle=90, movable=False, pen=pg.mkPen(colour, width=1.5, style=style),
                           label=label, labelOpts={"position": position, "color": colour, "anchors": [a, a]})
    line.label.setFont(_font(FONT_PT - 0.5))
    p.addItem(line, ignoreBounds=True)
    return line


# ---- the charts ---------------------------------------------------------------------------------

def memory_chart(content) -> Chart:
    """The memory plan per GPU: weights, KV cache, workspace and overhead stacked against usable memory."""
    p = content.prediction
    g = max(p.gpus, 1)
    parts = [("weights", p.weights_gb / g, COLORS["a"]), ("KV cache", p.kv_gb / g, COLORS["b"]),
             ("workspace", p.workspace_gb / g, COLORS["c"]), ("runtime overhead", p.overhead_gb / g, COLORS["e"])]
    per = " per GPU" if p.gpus > 1 else ""
    w, plot = _new(150, f"Memory plan{per}: {num(p.per_gpu_total_gb)} GB of {num(p.per_gpu_usable_gb)} GB usable",
                   f"GB{per}", "", logx=False, logy=False, legend=None)
    plot.getAxis("left").setTicks([[(0, "")]])
    plot.getAxis("left").setWidth(12)
    x0 = 0.0
    for label, v, colour in parts:
        if not (v > 0 and math.isfinite(v)):
            continue
        bar = pg.BarGraphItem(x0=[x0], y=[0], width=[v], height=[0.6], brush=blend(colour, COLORS["bg"], 170),
                              pen=pg.mkPen(colour, width=1))
        plot.addItem(bar)
        share = v / max(p.per_gpu_usable_gb, 1e-9)
        if share > 0.07:
            _text(plot, f"{label}\n{num(v)} GB", x0 + v / 2, 0, COLORS["fg"], anchor=(0.5, 0.5))
        x0 += v
    usable = p.per_gpu_usable_gb
    physical = content.config.hardware.memory_gib * 2**30 / 1e9
    _vline(plot, usable, f"usable {num(usable)} GB", COLORS["d"], Qt.PenStyle.DashLine, 0.78, left=True)
    _vline(plot, physical, f"memory {num(physical)} GB", COLORS["muted"], Qt.PenStyle.DotLine, 0.22, left=True)
    small = [f"{label} {num(v)} GB" for label, v, _ in parts if 0 < v / max(usable, 1e-9) <= 0.07]
    if small:
        _text(plot, " · ".join(small), 0, -0.42, COLORS["fg"], anchor=(0, 0.5))
    plot.setRange(xRange=(0, max(x0, physical) * 1.03), yRange=(-0.6, 0.5), padding=0)
    cap = (f"Memory per GPU at {p.batch} sequence(s) of {p.prompt_tokens + p.output_tokens + p.depth_tokens:,} tokens "
           f"({content.config.kv_dtype.name} KV cache, {content.config.runtime.name}): "
           + ("fits" if p.fits else f"short by {num(p.shortfall_gb)} GB")
           + f"; the KV budget left holds {p.max_batch:,} such sequences. Dashed: what the runtime may use; dotted: "
           f"the device's memory.")
    return _record("memory", "Memory plan", cap, w)


def roofline_chart(content) -> Chart:
    """Roofs per compute dtype, the bandwidth slope, and the operating points with their bands."""
    r = content.roofline
    w, plot = _new(330, "Roofline", "Arithmetic intensity (FLOP/byte)", "Attained (TFLOP/s)", legend=(-10, -10))
    bw = r.bandwidth_gb_s
    roofs = {k: v for k, v in (r.roofs or {}).items() if v and math.isfinite(v)}
    if not roofs and r.peak_tflops and math.isfinite(r.peak_tflops):
        roofs = {r.compute_dtype or "peak": r.peak_tflops}
    same: dict[float, list[str]] = {}
    for dtype, peak in roofs.items():
        same.setdefault(peak, []).append(dtype)
    for peak, group in same.items():
        in_force = r.compute_dtype in group
        pen = pg.mkPen(COLORS["d"], width=2.5) if in_force else pg.mkPen(COLORS["muted"], width=1,
                                                                           style=Qt.PenStyle.DashLine)
        plot.plot([peak * 1000.0 / bw, X_MAX], [peak, peak], pen=pen)
        _text(plot, f"{' / '.join(group)} {num(peak)} TFLOP/s" + (" (in force)" if in_force else ""),
              math.log10(X_MAX), math.log10(peak), COLORS["d"] if in_force else COLORS["muted"], anchor=(1, 1.05))
    top = max(roofs.values()) if roofs else 1e3
    plot.plot([X_MIN, top * 1000.0 / bw], [bw * X_MIN / 1000.0, top], pen=pg.mkPen(COLORS["fg"], width=2))
    _text(plot, f"{num(bw)} GB/s", math.log10(X_MIN * 1.3), math.log10(bw * X_MIN * 1.3 / 1000.0), COLORS["fg"],
          anchor=(0, 1.1))
    if r.ridge_intensity and math.isfinite(r.ridge_intensity):
        knee = f"\ndecode compute-bound\nbeyond batch ≈ {num(r.knee_batch)}" if math.isfinite(r.knee_batch) else ""
        _vline(plot, math.log10(r.ridge_intensity), f"ridge {num(r.ridge_intensity)} FLOP/B{knee}", COLORS["muted"],
               Qt.PenStyle.DashLine, 0.93, left=True)
    bx, by = [], []
    pts = [q for q in r.points if q.name in POINT_STYLE and q.intensity > 0 and q.attained_tflops > 0]
    for q in pts:
        lo, hi = q.low_tflops, q.high_tflops
        if lo > 0 and hi > 0 and math.isfinite(lo) and math.isfinite(hi):
            bx += [q.intensity, q.intensity]
            by += [lo, hi]
    plot.plot(bx, by, pen=pg.mkPen(COLORS["muted"], width=3), connect="pairs")
    for q in pts:
        label, ck, sym = POINT_STYLE[q.name]
        size = 13 if q.name in ("prefill", "decode") else 10
        plot.plot([q.intensity], [q.attained_tflops], pen=None, symbol=sym, symbolSize=size,
                  symbolBrush=COLORS[ck], symbolPen=pg.mkPen(COLORS["fg"], width=0.6),
                  name=f"{label}: {num(q.attained_tflops)} TFLOP/s, {duration_ms(q.time_ms)}")
        if q.name in ("prefill", "decode"):
            _text(plot, label, math.log10(q.intensity), math.log10(q.attained_tflops), COLORS[ck],
                  anchor=(1.1, -0.1) if q.name == "prefill" else (0, 1.1))
    xs = [X_MIN, X_MAX] + [q.intensity for q in pts]
    ys = list(roofs.values()) + [bw * X_MIN / 1000.0] + [q.low_tflops for q in pts] + [q.high_tflops for q in pts]
    frame(plot, [xs], [np.asarray(ys, dtype=float) * f for f in (0.5, 2.0)])
    cap = (f"{content.config.hardware.name}: {num(bw)} GB/s and the dense compute roofs it lists ("
           f"{r.compute_dtype} in force for {content.config.quant.name}). Points: prefill, decode and each operator "
           f"class of one decode step at batch {content.prediction.batch}; vertical bars are the bands.")
    return _record("roofline", "Roofline", cap, w)


def batch_chart(content) -> Chart:
    """Decode tok/s per user and aggregate vs batch, with the KV limit and the knee."""
    cb, p = content.batch_curve, content.prediction
    w, plot = _new(300, "Decode speed vs batch", "batch (concurrent sequences)", "tok/s", legend=(10, 5))
    Band(plot, COLORS["a"], "per user").set(cb.x, cb.decode_tok_s, cb.decode_low_tok_s, cb.decode_high_tok_s)
    Band(plot, COLORS["b"], "aggregate").set(cb.x, cb.throughput_tok_s, cb.throughput_low_tok_s,
                                             cb.throughput_high_tok_s)
    plot.plot(cb.x, cb.decode_ceiling_tok_s, pen=pg.mkPen(COLORS["muted"], style=Qt.PenStyle.DashLine),
              name="per user at 100 %")
    tok = content.targets.get("tok_s")
    if tok:
        plot.plot([cb.x[0], cb.x[-1]], [tok, tok], pen=pg.mkPen(COLORS["c"], width=1.5, style=Qt.PenStyle.DotLine),
                  name=f"target {num(tok)} tok/s")
    plot.plot([p.batch], [p.decode_tok_s], pen=None, symbol="o", symbolSize=9, symbolBrush=COLORS["a"])
    right = math.log10(cb.x[-1]) - 0.2 * (math.log10(cb.x[-1]) - math.log10(cb.x[0]))
    if p.max_batch >= 1:
        xl = math.log10(max(p.max_batch, 1))
        _vline(plot, xl, f"KV limit {p.max_batch:,}", COLORS["d"], position=0.12, left=xl > right)
    kb = cb.knee_batch
    if kb is not None and math.isfinite(kb) and kb > 0:
        xl = math.log10(kb)
        _vline(plot, xl, f"knee ≈ {kb:,.0f}", COLORS["muted"], Qt.PenStyle.DashLine, 0.3, left=xl > right)
    frame(plot, [cb.x], [cb.decode_low_tok_s, cb.throughput_high_tok_s, cb.decode_ceiling_tok_s])
    cap = (f"Per-user decode speed falls slowly with the batch while the weights are read once per step; aggregate "
           f"throughput rises until the compute roof (knee ≈ batch {num(kb)}) or the KV cache ({p.max_batch:,} "
           f"sequences of {p.prompt_tokens + p.output_tokens + p.depth_tokens:,} tokens) stops it. The dot is batch "
           f"{p.batch}: {num(p.decode_tok_s)} tok/s per user.")
    return _record("batch", "Decode vs batch", cap, w)


def prompt_chart(content) -> Chart:
    """TTFT vs prompt length with its band and the 100 % ceiling."""
    cp, p = content.prompt_curve, content.prediction
    nb = content.prompt_curve_batch
    w, plot = _new(300, "Time to first token vs prompt", "prompt (tokens)", "TTFT (ms)", legend=(10, 5))
    Band(plot, COLORS["b"], "TTFT, one request" if nb == 1 else f"TTFT, {nb} prompts at once").set(
        cp.x, cp.ttft_ms, cp.ttft_low_ms, cp.ttft_high_ms)
    with np.errstate(divide="ignore", invalid="ignore"):
        ceiling = cp.ttft_ms * cp.prefill_tok_s / cp.prefill_ceiling_tok_s
    plot.plot(cp.x, ceiling, pen=pg.mkPen(COLORS["muted"], style=Qt.PenStyle.DashLine), name="at 100 %")
    target = content.targets.get("ttft_ms")
    ys = [cp.ttft_low_ms, cp.ttft_high_ms, ceiling]
    if target:
        plot.plot([cp.x[0], cp.x[-1]], [target, target], pen=pg.mkPen(COLORS["c"], width=1.5,
                                                                       style=Qt.PenStyle.DotLine),
                  name=f"target {duration_ms(target)}")
        ys.append([target])
    at = np.flatnonzero(cp.x == p.prompt_tokens)
    now = float(cp.ttft_ms[at[0]]) if at.size else math.nan
    if p.prompt_tokens and math.isfinite(now):
        plot.plot([p.prompt_tokens], [now], pen=None, symbol="o", symbolSize=9, symbolBrush=COLORS["b"])
    frame(plot, [cp.x], ys)
    who = "one request on an idle server" if nb == 1 else f"{nb} prompts arriving together"
    cap = (f"TTFT of {who}, as the prompt grows to the model's context ({content.config.model.native_context:,} "
           f"tokens); the dot is the workload's {p.prompt_tokens:,}-token prompt: {duration_ms(now)}. Under load "
           f"the server interleaves prompt chunks with decoding and requests may wait (next chart).")
    return _record("prompt", "TTFT vs prompt", cap, w)


def concurrency_chart(content) -> Chart | None:
    """The throughput–latency curve: output tok/s against TTFT p90 and inter-token latency, per concurrency."""
    sweep = [s for s in content.sweep if s.fits and math.isfinite(s.throughput_tok_s) and s.throughput_tok_s > 0]
    if not sweep:
        return None
    w, plot = _new(320, "Throughput vs latency over concurrency", "output tok/s, all users", "latency (ms)",
                   legend=(10, 5))
    x = np.array([s.throughput_tok_s for s in sweep])
    ttft = np.array([s.ttft_p90_ms for s in sweep])
    itl = np.array([s.itl_ms for s in sweep])
    plot.plot(x, ttft, pen=pg.mkPen(COLORS["b"], width=2), symbol="o", symbolSize=7, symbolBrush=COLORS["b"],
              name="TTFT p90")
    plot.plot(x, itl, pen=pg.mkPen(COLORS["a"], width=2), symbol="s", symbolSize=6, symbolBrush=COLORS["a"],
              name="inter-token latency")
    for s in sweep:
        _text(plot, f"{s.load.concurrency:g}", math.log10(s.throughput_tok_s), math.log10(s.ttft_p90_ms),
              COLORS["muted"], anchor=(0.5, 1.2))
    ys = [ttft, itl]
    target = content.targets.get("ttft_ms")
    if target:
        plot.plot([x.min(), x.max()], [target, target], pen=pg.mkPen(COLORS["c"], width=1.5,
                                                                     style=Qt.PenStyle.DotLine),
                  name=f"TTFT target {duration_ms(target)}")
        ys.append([target])
    s = content.serving
    if s is not None and s.fits and math.isfinite(s.throughput_tok_s) and s.throughput_tok_s > 0:
        plot.plot([s.throughput_tok_s], [s.ttft_p90_ms], pen=None, symbol="star", symbolSize=15,
                  symbolBrush=COLORS["d"], name=f"this load ({content.users} users)")
    frame(plot, [x], ys)
    last = sweep[-1]
    cap = (f"{content.config.runtime.name} under closed-loop load of 1, 2, 4 … clients (numbers at the points), "
           f"each with prompts of {last.load.prompt_tokens:,} and outputs of {last.load.output_tokens:,} tokens: "
           f"throughput grows until the server holds {num(last.capacity)} running sequences "
           f"({last.bound}), then only the queue and TTFT grow.")
    return _record("concurrency", "Throughput vs latency", cap, w)


def measured_chart(content) -> Chart | None:
    """The user's measurements against the predictions, log-log, each band as an error bar, with the
    diagonal and ±25 %."""
    pts = content.measured_points
    if not pts:
        return None
    w, plot = _new(300, "Measured on your machine vs predicted", "measured", "predicted", legend=(10, 5))
    x = np.array([m for _, m, _, _, _ in pts])
    y = np.array([p for _, _, p, _, _ in pts])
    lo = np.array([low for *_, low, _ in pts])
    hi = np.array([high for *_, high in pts])
    a, b = float(min(x.min(), lo.min())) / 1.5, float(max(x.max(), hi.max())) * 1.5
    plot.plot([a, b], [a, b], pen=pg.mkPen(COLORS["muted"], width=1.2), name="agreement")
    for k in (0.75, 1.25):
        plot.plot([a, b], [a * k, b * k], pen=pg.mkPen(COLORS["muted"], width=1, style=Qt.PenStyle.DotLine),
                  name="±25 %" if k > 1 else None)
    plot.addItem(pg.ErrorBarItem(x=np.log10(x), y=np.log10(y), top=np.log10(hi / y), bottom=np.log10(y / lo),
                                 beam=0.0, pen=pg.mkPen(COLORS["muted"])))
    palette = [COLORS["a"], COLORS["b"], COLORS["c"], COLORS["d"]]
    for i, label in enumerate(sorted({lbl for lbl, *_ in pts})):
        idx = [j for j, p in enumerate(pts) if p[0] == label]
        plot.plot(x[idx], y[idx], pen=None, symbol="o", symbolSize=8, symbolBrush=palette[i % len(palette)],
                  name=label)
    frame(plot, [np.array([a, b])], [np.array([a, b])])
    within = int(np.sum((lo <= x) & (x <= hi)))
    cap = (f"Each point is one of your measurements (x) against the prediction for the same workload and load (y); "
           f"the bar is the prediction's band, the line is agreement and the dotted lines ±25 %. {within} of "
           f"{len(pts)} measurements lie inside their band.")
    return _record("measured", "Measured vs predicted", cap, w)


def build_charts(content) -> list[Chart]:
    """Every chart of the report, in order (GUI thread)."""
    _ensure_app()
    charts = [memory_chart(content), roofline_chart(content), batch_chart(content), prompt_chart(content)]
    for extra in (concurrency_chart(content), measured_chart(content)):
        if extra is not None:
            charts.append(extra)
    return charts


__all__ = ["Chart", "build_charts", "log_ticks"]
