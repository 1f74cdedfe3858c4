"""The app's tabs, declared once. The window builds its tab bar, the View menu and its Ctrl+N
shortcuts, and the smoke run from `TABS`; `advisor-gui --view` takes its choices from it.

Every view implements `TabView`: the chart File → Export chart writes, the rows File → Export CSV
writes, the text Edit → Copy copies, and whether it is busy. The window asks through these four and
nothing else, so a new tab is its view (a `TabView`), one `Tab` line here, and its test.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Tab:
    name: str            # the key: settings, `MainWindow.view(name)`, `--view` (with "-" for "_")
    title: str           # the tab's label, with its Alt+ mnemonic
    view: str            # "module:Class" of the view, imported when the tab is first shown
    workers: bool = False   # the view runs jobs on the window's `Workers` (its second argument)

    @property
    def option(self) -> str:
        """The name ``advisor-gui --view`` takes."""
        return self.name.replace("_", "-")

    def build(self, session, workers):
        module, cls = self.view.split(":")
        view_class = getattr(importlib.import_module(module), cls)
        return view_class(session, workers) if self.workers else view_class(session)


TABS = (
    Tab("roofline", "&Roofline", "ui.views.roofline:RooflineView"),
    Tab("curves", "C&urves", "ui.views.curves:CurvesView"),
    Tab("serving", "&Serving", "ui.views.serving:ServingView"),
    Tab("whatifs", "&What-ifs", "ui.views.techniques:TechniquesView"),
    Tab("recommend", "Reco&mmendations", "ui.views.recommend:RecommendView", workers=True),
    Tab("compare", "Com&pare", "ui.views.compare:CompareView"),
    Tab("will_it_run", "W&ill it run", "ui.views.will_it_run:WillItRunView", workers=True),
    Tab("probe", "Pro&be this machine", "ui.views.probe:ProbeView", workers=True),
    Tab("measured", "Measure&d", "ui.views.measured:MeasuredView", workers=True),
)
BY_NAME = {t.name: t for t in TABS}


class TabView:
    """What the window asks of a tab's view; the defaults are a view without a chart or a table."""

    def chart(self) -> tuple[Any, Any] | None:
        """(what pyqtgraph's exporters take, the widget that shows it), or None: no chart."""
        return None

    def table_rows(self) -> list[list[str]]:
        """The table as shown (header first) for File → Export CSV; [] when the tab has none (the
        window then exports the figures of the sizing)."""
        return []

    def copy_text(self) -> str:
        """What Edit → Copy copies (the selected rows); "" copies the sizing's summary."""
        return ""

    @property
    def busy(self) -> bool:
        """A job of this view is running (its answer is not on screen yet)."""
        return False
