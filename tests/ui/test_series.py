"""The Curves tab's chart parts: a `Series` is a data item the plot, the legend and the readout see;
`frame` changes an axis only when its data left it or shrank under half of it."""

from __future__ import annotations

import numpy as np
import pyqtgraph as pg

from ui.series import Dot, Series
from ui.views.curves import frame, title_legend
from ui.widgets import HoverReadout


def _plot(qtbot, logx=True, logy=True):
    w = pg.PlotWidget()
    qtbot.addWidget(w)
    p = w.getPlotItem()
    p.setLogMode(logx, logy)
    p.disableAutoRange()
    return w, p


def test_a_line_is_drawn_in_log_space_and_read_in_data_units(qtbot):
    w, p = _plot(qtbot)
    s = Series(p, pen=pg.mkPen("#1f6fd1", width=2), name="per user")
    s.setData([1, 10, 100, 0], [5.0, 50.0, 500.0, 7.0])   # 0 has no logarithm: a gap, not a crash
    assert s in p.listDataItems() and s.name() == "per user"
    x, y = s.getOriginalDataset()
    assert list(x) == [1, 10, 100, 0] and list(y) == [5.0, 50.0, 500.0, 7.0]
    r = s.path().controlPointRect()   # the path runs through log10 of the finite points
    assert np.isclose(r.left(), 0) and np.isclose(r.right(), 2)
    assert np.isclose(r.top(), np.log10(5)) and np.isclose(r.bottom(), np.log10(500))
    # the readout finds the value under the pointer, in data units
    label = pg.QtWidgets.QLabel()
    text = HoverReadout(w, [p], label).text_at(p, 1.02)
    assert "per user 50" in text
    # the legend names it with its colour
    p.chart_title = "chart"
    title_legend(p)
    assert "per user" in p.titleLabel.text and "#1f6fd1" in p.titleLabel.text


def test_an_area_is_one_closed_polygon_between_its_edges(qtbot):
    _w, p = _plot(qtbot, logy=False)
    a = Series(p, brush=(200, 100, 0, 50), antialias=False)
    a.set_area([1, 10, 100], [1.0, 2.0, np.nan], [3.0, 4.0, 5.0])   # the nan point is left out
    path = a.path()
    assert path.elementCount() == 5   # 2 points along the top, 2 back along the bottom, closed
    r = path.controlPointRect()
    assert np.isclose(r.left(), 0) and np.isclose(r.right(), 1) and np.isclose(r.top(), 1) and np.isclose(r.bottom(), 4)
    assert a.opts["fillBrush"] is not None and a.opts["pen"] is None
    a.set_area([1], [1.0], [2.0])   # under two points: nothing to fill
    assert a.path().isEmpty()


def test_a_dot_moves_without_rebuilding(qtbot):
    _w, p = _plot(qtbot)
    d = Dot(p, "#e07b00")
    d.setPos(np.log10(300), 1.0)
    assert np.isclose(d.pos().x(), np.log10(300)) and d not in p.listDataItems()


def test_frame_changes_only_the_axis_that_needs_it(qtbot):
    _w, p = _plot(qtbot)
    assert frame(p, [[1, 100]], [[10, 1000]])            # first call frames both axes
    (x0, x1), (y0, y1) = p.vb.viewRange()
    assert not frame(p, [[1, 50]], [[20, 900]])          # inside and more than half: nothing moves
    assert frame(p, [[1, 1000]], [[20, 900]])            # x grew past its range: x changes ...
    (nx0, nx1), (ny0, ny1) = p.vb.viewRange()
    assert nx1 > x1 and np.isclose(nx1, 3 + 0.04 * 3)
    assert (ny0, ny1) == (y0, y1)                         # ... and y keeps its range
    assert frame(p, [[1, 1000]], [[20, 30]])             # y shrank under half: y changes
    assert p.vb.viewRange()[0] == [nx0, nx1]


def test_a_steady_box_follows_its_child_and_passes_only_real_size_changes(qtbot):
    from PySide6.QtWidgets import QLabel, QVBoxLayout, QWidget

    from ui.widgets import Steady

    top = QWidget()
    qtbot.addWidget(top)
    lay = QVBoxLayout(top)
    label = QLabel("one line")
    label.setWordWrap(True)
    box = Steady(label)
    lay.addWidget(box)
    lay.addStretch(1)
    top.resize(300, 200)
    top.show()
    qtbot.waitExposed(top)
    h = box.height()
    label.setText("another line")            # same size: the layout is not asked again
    qtbot.wait(10)
    assert box.height() == h
    label.setText("a longer text that wraps onto a second and a third line in a box this narrow " * 2)
    qtbot.waitUntil(lambda: box.height() > h)  # a real size change reaches the layout
    label.hide()                               # the box hides with its child: no blank space
    assert box.isHidden()
    label.show()
    assert not box.isHidden() and label.isVisible()
