"""Small reusable widgets and chart helpers: a log-scale slider tied to a spin box, a view that redraws
only when seen, choice combos, the theme and plot colours, moving a chart item, and the hover readout
under a chart."""

from __future__ import annotations

import math
from typing import Iterable

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import QEvent, Qt, Signal
from PySide6.QtGui import QColor, QPalette, QStandardItem, QStandardItemModel
from PySide6.QtWidgets import (QApplication, QComboBox, QHBoxLayout, QLabel, QSlider, QSpinBox, QVBoxLayout,
                               QWidget)

from advisor.text.format import num

SLIDER_STEPS = 1000


class Steady(QWidget):
    """Holds one widget whose content changes on every input change (a card's value, a summary line)
    and passes a size change up to the layouts only when its size really changed.

    Qt re-lays out every ancestor when a label's text is set (QLabel asks for a new geometry, and each
    layout that activates asks its parent in turn), and the splitters on the way repaint all they hold:
    the whole What-ifs tab repainted on each input change for its two labels. A child of a widget
    without a layout only posts a layout request to that widget, which stops it here unless the child's
    size hints changed."""

    def __init__(self, child: QWidget, parent=None):
        super().__init__(parent)
        self.child = child
        child.setParent(self)
        self.setSizePolicy(child.sizePolicy())
        self._hints = self._measure()
        self.setVisible(not child.isHidden())
        child.installEventFilter(self)   # hiding or showing the child hides or shows the box

    def eventFilter(self, obj, event) -> bool:  # noqa: N802
        if obj is self.child and event.type() in (QEvent.Type.HideToParent, QEvent.Type.ShowToParent):
            self.setVisible(event.type() == QEvent.Type.ShowToParent)
        return False

    def _measure(self) -> tuple:
        c = self.child
        return (c.sizeHint(), c.minimumSizeHint(), c.heightForWidth(self.width()) if c.hasHeightForWidth() else -1)

    def sizeHint(self):  # noqa: N802 (Qt's names)
        return self.child.sizeHint()

    def minimumSizeHint(self):  # noqa: N802
        return self.child.minimumSizeHint()

    def hasHeightForWidth(self) -> bool:  # noqa: N802
        return self.child.hasHeightForWidth()

    def heightForWidth(self, width: int) -> int:  # noqa: N802
        return self.child.heightForWidth(width)

    def resizeEvent(self, event) -> None:  # noqa: N802
        self.child.setGeometry(self.rect())
        self._hints = self._measure()

    def event(self, event) -> bool:
        if event.type() == QEvent.Type.LayoutRequest:
            hints = self._measure()
            if hints != self._hints:
                self._hints = hints
                self.updateGeometry()
            return True
        return super().event(event)


def set_quietly(widget, value) -> None:
    """Show ``value`` in a spin box or slider without emitting; one already showing it is not touched
    (setting a spin box repaints it even when the value is the same, and views re-show their inputs
    after every change)."""
    if widget.value() != value:
        widget.blockSignals(True)
        widget.setValue(value)
        widget.blockSignals(False)


class LogSlider(QWidget):
    """A slider on a log scale (log(v+1), so 0 is allowed) and a spin box showing the exact value."""

    sig_value_changed = Signal(int)

    def __init__(self, lo: int, hi: int, value: int, suffix: str = "", tooltip: str = "", parent=None):
        super().__init__(parent)
        self.lo, self.hi = lo, hi
        lay = QHBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.slider = QSlider(Qt.Orientation.Horizontal)
        self.slider.setRange(0, SLIDER_STEPS)
        self.slider.setPageStep(SLIDER_STEPS // 20)
        self.spin = QSpinBox()
        self.spin.setRange(lo, hi)
        self.spin.setKeyboardTracking(False)
        self.spin.setGroupSeparatorShown(True)
        self.spin.setAccelerated(True)
        self.spin.setMinimumWidth(92)
        if suffix:
            self.spin.setSuffix(suffix)
        if tooltip:
            self.slider.setToolTip(tooltip + " (log scale)")
            self.spin.setToolTip(tooltip)
        lay.addWidget(self.slider, 1)
        lay.addWidget(self.spin)
        self.set_value(value)
        self.slider.valueChanged.connect(self._on_slider)
        self.spin.valueChanged.connect(self._on_spin)

    def set_range(self, lo: int, hi: int) -> None:
        v = self.value()
        self.lo, self.hi = lo, max(hi, lo + 1)
        self.spin.blockSignals(True)
        self.spin.setRange(self.lo, self.hi)
        self.spin.blockSignals(False)
        self.set_value(min(max(v, self.lo), self.hi))

    def _to_pos(self, v: int) -> int:
        a, b = math.log(self.lo + 1), math.log(self.hi + 1)
        return round((math.log(max(v, self.lo) + 1) - a) / (b - a) * SLIDER_STEPS)

    def _to_value(self, pos: int) -> int:
        a, b = math.log(self.lo + 1), math.log(self.hi + 1)
        v = round(math.exp(a + (b - a) * pos / SLIDER_STEPS) - 1)
        # round to 2 significant figures so dragging lands on friendly numbers
        if v >= 100:
            mag = 10 ** (int(math.log10(v)) - 1)
            v = round(v / mag) * mag
        return int(min(max(v, self.lo), self.hi))

    def value(self) -> int:
        return self.spin.value()

    def set_value(self, v: int) -> None:
        """Show ``v`` without emitting (the session is the source of truth). A widget already showing
        its value is left alone: setting a spin box repaints it even when the value is the same, and
        the inputs panel re-shows every input after each change."""
        set_quietly(self.spin, int(v))
        set_quietly(self.slider, self._to_pos(int(v)))

    def _on_slider(self, pos: int) -> None:
        v = self._to_value(pos)
        self.spin.blockSignals(True)
        self.spin.setValue(v)
        self.spin.blockSignals(False)
        self.sig_value_changed.emit(v)

    def _on_spin(self, v: int) -> None:
        self.slider.blockSignals(True)
        self.slider.setValue(self._to_pos(v))
        self.slider.blockSignals(False)
        self.sig_value_changed.emit(v)


class LazyView(QWidget):
    """A view that redraws on `sig_results_changed` only while visible; a hidden one redraws when shown."""

    def __init__(self, session, parent=None):
        super().__init__(parent)
        self.session = session
        self._dirty = True
        session.sig_results_changed.connect(self._on_results_changed)

    def _on_results_changed(self) -> None:
        if self.isVisible():
            self.refresh()
        else:
            self._dirty = True

    def showEvent(self, event) -> None:  # noqa: N802 - Qt name
        super().showEvent(event)
        if self._dirty:
            self.refresh()

    def refresh(self) -> None:
        self._dirty = False
        self.render()

    def render(self) -> None:  # pragma: no cover - overridden
        pass


def fill_choices(combo: QComboBox, choices: Iterable, current: str) -> None:
    """Fill a combo from api.Choice rows: not-ok ones greyed out with the reason as tooltip."""
    model = QStandardItemModel(combo)
    index = 0
    for i, c in enumerate(choices):
        item = QStandardItem(c.name)
        item.setData(c.key, Qt.ItemDataRole.UserRole)
        if not c.ok:
            item.setFlags(item.flags() & ~Qt.ItemFlag.ItemIsEnabled & ~Qt.ItemFlag.ItemIsSelectable)
            item.setToolTip(c.reason or "not available with the chosen runtime")
        elif c.reason:
            item.setToolTip(c.reason)
        if c.key == current:
            index = i
        model.appendRow(item)
    combo.blockSignals(True)
    combo.setModel(model)
    combo.setCurrentIndex(index)
    combo.blockSignals(False)


def is_dark() -> bool:
    app = QApplication.instance()
    if app is None:
        return False
    return app.palette().color(QPalette.ColorRole.Window).lightness() < 128


def plot_colors() -> dict[str, str]:
    """Series colours readable on the current (light or dark) background."""
    if is_dark():
        return {"fg": "#d8d8d8", "bg": "#1e1f22", "grid": "#555", "a": "#5fa8ff", "b": "#ffb454", "c": "#7ee07e",
                "d": "#ff7a7a", "e": "#c792ea", "f": "#4dd0e1", "muted": "#9a9a9a"}
    return {"fg": "#222", "bg": "#ffffff", "grid": "#ccc", "a": "#1f6fd1", "b": "#e07b00", "c": "#2e9d3a",
            "d": "#d23c3c", "e": "#8e44ad", "f": "#00838f", "muted": "#888"}


def memory_gib(hw) -> float:
    """A device's memory in GiB (the catalog field was renamed memory_gb → memory_gib; read either)."""
    v = getattr(hw, "memory_gib", None)
    return v if v is not None else getattr(hw, "memory_gb", float("nan"))


def with_readout(view: pg.GraphicsView, plots, idle: str = "hover a chart for its values") -> QWidget:
    """``view`` with a `HoverReadout` line under it, as one widget (the readout kept on ``.readout``)."""
    box = QWidget()
    lay = QVBoxLayout(box)
    lay.setContentsMargins(0, 0, 0, 0)
    lay.setSpacing(2)
    lay.addWidget(view, 1)
    label = QLabel()
    label.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
    lay.addWidget(label)
    box.readout = HoverReadout(view, plots, label, idle)
    return box


def move_item(item, x: float, y: float) -> None:
    """Move a chart item in view coordinates. A PlotDataItem's own setPos also rebuilds its display
    data (a scatter's spots: ~0.5 ms a point); a point drawn once at the origin only needs moving."""
    pg.GraphicsObject.setPos(item, x, y)


class HoverReadout:
    """What the pointer is over on a chart, in words: the x under it and, at that x, the value of
    every named line of that plot ("batch 16 · per user 49.5 · aggregate 792"), shown in ``label``
    (a line under the charts) and as the chart's tooltip. Works for every plot of one scene."""

    def __init__(self, view: pg.GraphicsView, plots, label: QLabel, idle: str = " "):
        self.view, self.plots, self.label, self.idle = view, list(plots), label, idle
        label.setText(idle)
        view.scene().sigMouseMoved.connect(self._moved)

    def text_at(self, plot: pg.PlotItem, x_view: float) -> str:
        """The readout for view x coordinate ``x_view`` (log10 of x on a log axis) of ``plot``."""
        parts, x_shown = [], None
        for item in plot.listDataItems():
            name = item.opts.get("name")
            if not name or not item.isVisible():
                continue
            xs, ys = item.getOriginalDataset()
            if xs is None or len(xs) < 2:   # a marker, not a line
                continue
            # a stacked layer is drawn at its running total but read as its own value
            ys = getattr(item, "readout_y", ys)
            xs, ys = np.asarray(xs, dtype=float), np.asarray(ys, dtype=float)
            if ys.shape != xs.shape:
                continue
            log_x = bool(item.opts.get("logMode", (False, False))[0])
            with np.errstate(divide="ignore", invalid="ignore"):
                where = np.log10(xs) if log_x else xs
            ok = np.isfinite(where) & np.isfinite(ys)
            if not ok.any():
                continue
            i = int(np.flatnonzero(ok)[np.argmin(np.abs(where[ok] - x_view))])
            x_shown = xs[i] if x_shown is None else x_shown
            parts.append(f"{name} {num(ys[i])}")
        if not parts:
            return ""
        axis = plot.getAxis("bottom").labelText or "x"
        unit = plot.getAxis("left").labelText
        return f"{axis} {num(x_shown)} · " + " · ".join(parts) + (f" — {unit}" if unit else "")

    def _moved(self, pos) -> None:
        for plot in self.plots:
            if plot.isVisible() and plot.vb.sceneBoundingRect().contains(pos):
                text = self.text_at(plot, plot.vb.mapSceneToView(pos).x())
                self.label.setText(text or self.idle)
                self.view.setToolTip(text)
                return
        self.label.setText(self.idle)
        self.view.setToolTip("")


def apply_theme(app, theme: str = "system") -> None:
    """Fusion style, dark palette when the system (or ``theme``) asks for it; plots follow the palette."""
    app.setStyle("Fusion")
    dark = False
    try:
        dark = app.styleHints().colorScheme() == Qt.ColorScheme.Dark
    except AttributeError:  # Qt < 6.5
        pass
    if theme != "system":
        dark = theme == "dark"
    if dark:
        pal = QPalette()
        for role, colour in ((QPalette.ColorRole.Window, "#2b2d30"), (QPalette.ColorRole.WindowText, "#dfe1e5"),
                             (QPalette.ColorRole.Base, "#1e1f22"), (QPalette.ColorRole.AlternateBase, "#26282b"),
                             (QPalette.ColorRole.Text, "#dfe1e5"), (QPalette.ColorRole.Button, "#3c3f41"),
                             (QPalette.ColorRole.ButtonText, "#dfe1e5"), (QPalette.ColorRole.Highlight, "#2f65ca"),
                             (QPalette.ColorRole.HighlightedText, "#ffffff"), (QPalette.ColorRole.ToolTipBase, "#3c3f41"),
                             (QPalette.ColorRole.ToolTipText, "#dfe1e5"), (QPalette.ColorRole.PlaceholderText, "#8c8c8c")):
            pal.setColor(role, QColor(colour))
        pal.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.Text, QColor("#6f737a"))
        pal.setColor(QPalette.ColorGroup.Disabled, QPalette.ColorRole.ButtonText, QColor("#6f737a"))
        app.setPalette(pal)
    c = plot_colors()
    pg.setConfigOptions(antialias=True, background=c["bg"], foreground=c["fg"])
