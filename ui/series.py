"""A chart's line or filled area as one Qt path item, for charts that redraw on every input change.

pyqtgraph's PlotDataItem runs Python on every paint and bounds query (its bounding rectangle is
recomputed from the data and the pixel size whenever the view moves) and keeps several copies of
the data per setData. On the Curves tab, with ~30 series redrawn per input change, that was half of
an input change's time on a software renderer. A `Series` is a QGraphicsPathItem: the path is built
once per setData (log10 applied here when the plot's axis is logarithmic), and painting and bounds
are Qt's own C++. It answers the few questions the app's legends and hover readouts ask of a data
item (`opts`, `getOriginalDataset`, `xData` / `yData`, `name`), so it can stand in for one.
"""

from __future__ import annotations

import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtGui import QPainter, QPainterPath
from PySide6.QtWidgets import QGraphicsEllipseItem, QGraphicsItem, QGraphicsPathItem

def _path(x: np.ndarray, y: np.ndarray) -> QPainterPath:
    """A polyline through the finite points; a gap where a point is not finite."""
    if len(x) < 2:
        return QPainterPath()
    return pg.arrayToQPath(x, y, connect="finite")


class _DataItemFace:
    """The parts of pyqtgraph's data-item interface the plot, the legends and the readouts use: a
    plot adds a data item to its list and gives it the axes' log mode; legends and readouts read its
    ``opts`` and ``name``."""

    opts: dict

    def is_data_item(self) -> bool:
        return True

    def implements(self, interface=None):
        mine = ["plotData"] if self.is_data_item() else []
        return interface in mine if interface is not None else mine

    def name(self) -> str | None:
        return self.opts["name"]

    def setLogMode(self, x: bool, y: bool) -> None:  # noqa: N802 (pyqtgraph's name)
        self.log_x, self.log_y = bool(x), bool(y)
        self.opts["logMode"] = (self.log_x, self.log_y)


class Series(_DataItemFace, QGraphicsPathItem):
    """A named line (``pen``) or filled area (``brush``; give it the closed outline to `set_area`).

    ``antialias=False`` paints without antialiasing: a translucent fill needs no smooth edge, and
    antialiasing a large area is most of its paint time on a software renderer."""

    def __init__(self, plot: pg.PlotItem, pen=None, brush=None, name: str | None = None, antialias: bool = True):
        super().__init__()
        pen = pg.mkPen(pen) if pen is not None else pg.mkPen(None)
        self.setPen(pen)
        if brush is not None:
            self.setBrush(pg.mkBrush(brush))
        self.antialias = antialias
        self.log_x, self.log_y = False, False
        self.xData: np.ndarray | None = None
        self.yData: np.ndarray | None = None
        # what legends and readouts read of a pyqtgraph data item
        self.opts = {"name": name, "pen": pen if pen.style() != pg.QtCore.Qt.PenStyle.NoPen else None,
                     "fillLevel": "enclosed" if brush is not None else None,
                     "fillBrush": brush, "symbol": None, "logMode": (False, False)}
        plot.addItem(self)   # a data item of the plot (legend, readout); sets the log mode below

    def getOriginalDataset(self):  # noqa: N802
        return self.xData, self.yData

    def dataBounds(self, ax, frac=1.0, orthoRange=None):  # noqa: N802, N803 (autorange asks; charts frame by hand)
        return None, None

    def paint(self, painter: QPainter, option, widget=None) -> None:
        if not self.antialias:
            painter.setRenderHint(QPainter.RenderHint.Antialiasing, False)
        super().paint(painter, option, widget)

    # -- data
    def _view(self, x, y) -> tuple[np.ndarray, np.ndarray]:
        """``x``, ``y`` in view coordinates: log10 on a logarithmic axis (not finite where ≤ 0)."""
        x, y = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        with np.errstate(divide="ignore", invalid="ignore"):
            if self.log_x:
                x = np.where(x > 0, np.log10(x), np.nan)
            if self.log_y:
                y = np.where(y > 0, np.log10(y), np.nan)
        return x, y

    def setData(self, x, y) -> None:  # noqa: N802
        """A line through (x, y) in data units."""
        self.xData, self.yData = np.asarray(x, dtype=float), np.asarray(y, dtype=float)
        self.setPath(_path(*self._view(self.xData, self.yData)))

    def set_area(self, x, low, high) -> None:
        """The region between ``low`` and ``high`` along ``x`` (points where any is not finite are
        left out), as one closed polygon. The readout reads ``high``."""
        x, low, high = (np.asarray(a, dtype=float) for a in (x, low, high))
        vx, vlo = self._view(x, low)
        _, vhi = self._view(x, high)
        ok = np.isfinite(vx) & np.isfinite(vlo) & np.isfinite(vhi)
        self.xData, self.yData = x[ok], high[ok]
        vx, vlo, vhi = vx[ok], vlo[ok], vhi[ok]
        if len(vx) < 2:
            self.setPath(QPainterPath())
            return
        path = pg.arrayToQPath(np.concatenate([vx, vx[::-1]]), np.concatenate([vhi, vlo[::-1]]), connect="all")
        path.closeSubpath()
        self.setPath(path)


class Dot(_DataItemFace, QGraphicsEllipseItem):
    """A marker of fixed size in pixels at one point of a chart (the inputs' own point), moved with
    `set_point` (data units) or ``setPos`` (view coordinates: log10 on a logarithmic axis): a C++ item,
    where a one-point scatter of pyqtgraph rebuilt its spot on every move and ran Python on every
    paint. With a ``name`` it is a data item that legends list (readouts skip a single point)."""

    def __init__(self, plot: pg.PlotItem, colour, size_px: float = 9.0, name: str | None = None):
        r = size_px / 2.0
        super().__init__(-r, -r, size_px, size_px)
        self.setFlag(QGraphicsItem.GraphicsItemFlag.ItemIgnoresTransformations)
        self.setBrush(pg.mkBrush(colour))
        self.setPen(pg.mkPen(None))
        self.log_x, self.log_y = False, False
        self.point: tuple[float, float] | None = None
        self.opts = {"name": name, "pen": None, "symbol": "o", "symbolBrush": colour, "fillLevel": None,
                     "logMode": (False, False)}
        plot.addItem(self, ignoreBounds=True)
        self.setZValue(self.zValue() + 10)   # above the lines and bands

    def is_data_item(self) -> bool:
        return self.opts["name"] is not None   # a named marker is listed in legends

    def getOriginalDataset(self):  # noqa: N802
        return ([], []) if self.point is None else ([self.point[0]], [self.point[1]])

    def set_point(self, x: float | None, y: float | None = None) -> None:
        """Show the marker at (x, y) in data units; hide it for None or a point a log axis cannot show."""
        ok = bool(x is not None and y is not None and math.isfinite(x) and math.isfinite(y)
                  and (x > 0 or not self.log_x) and (y > 0 or not self.log_y))
        self.point = (float(x), float(y)) if ok else None
        self.setVisible(ok)
        if ok:
            self.setPos(math.log10(x) if self.log_x else x, math.log10(y) if self.log_y else y)


class Dots:
    """Markers at a line's few points (a sweep over 1, 2, 4 … users): one `Dot` each, made once and
    moved. Not data items: the line beside them is what legends and readouts read."""

    def __init__(self, plot: pg.PlotItem, colour, size_px: float = 5.0, most: int = 16):
        self.plot, self.colour, self.size_px = plot, colour, size_px
        self.dots: list[Dot] = []
        self._grow(most)

    def _grow(self, n: int) -> None:
        while len(self.dots) < n:
            d = Dot(self.plot, self.colour, self.size_px)
            d.setVisible(False)
            self.dots.append(d)

    def set_points(self, xs, ys) -> None:
        xs, ys = list(xs), list(ys)
        self._grow(len(xs))
        for i, d in enumerate(self.dots):
            if i < len(xs):
                d.set_point(xs[i], ys[i])
            elif d.isVisible():
                d.set_point(None)
