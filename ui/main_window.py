"""The main window: inputs on the left; results at a glance above the tabs that `ui.tabs.TABS`
declares (each view a `ui.tabs.TabView`). Menus, shortcuts, status bar, files, exports, settings.
"""

from __future__ import annotations

import logging
from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence
from PySide6.QtWidgets import (QFileDialog, QLabel, QLineEdit, QMainWindow, QMessageBox, QSplitter, QTabWidget,
                               QVBoxLayout, QWidget)

import advisor
from advisor import api
from advisor.text.format import num
from ui import ranking, sizing_file
from ui.import_dialog import ImportDialog, dropped_paths, import_path
from ui.imports import missing_local, read_import
from ui.memory import release_free_memory
from ui.session import Session
from ui.state import describe
from ui.settings import Settings
from ui.tabs import TABS
from ui.views.inputs import InputsPanel
from ui.views.results import ResultsView
from ui.views.table import to_csv
from ui.workers import Workers

log = logging.getLogger(__name__)
#: quiet time (no input change, no job running) after which freed memory is given back
IDLE_TRIM_MS = 1500

DATA_SOURCES = ("vendor datasheets and whitepapers (each hardware entry cites its own)",
                "model config.json files on Hugging Face (each model entry cites its own)",
                "llama.cpp, vLLM, SGLang and TensorRT-LLM sources for formats and runtime defaults",
                "public measured results (llama.cpp scoreboards, vendor tables) for the efficiency fit",
                "dated list and cloud prices (each with its source)")


def _render_svg(widget: QWidget, path: str) -> None:
    from PySide6.QtGui import QPainter
    from PySide6.QtSvg import QSvgGenerator

    gen = QSvgGenerator()
    gen.setFileName(path)
    gen.setSize(widget.size())
    gen.setViewBox(widget.rect())
    gen.setTitle("advisor chart")
    gen.setDescription("exported by advisor-gui")
    painter = QPainter(gen)
    try:
        widget.render(painter)
    finally:
        painter.end()


def _no_text_drops(widget: QWidget) -> None:
    """A file dropped on a text field (a picker's search, a spin box) imports it as anywhere else in
    the window, instead of pasting its path as text."""
    for edit in widget.findChildren(QLineEdit):
        edit.setAcceptDrops(False)


class MainWindow(QMainWindow):
    def __init__(self, session: Session | None = None, settings: Settings | None = None,
                 restore: bool = True, parent=None):
        super().__init__(parent)
        self.settings = settings or Settings()
        self.session = session or Session()
        self.workers = Workers(self)
        self.file_path: Path | None = None
        self.saved_state = None
        self.setWindowTitle("advisor")
        self.setMinimumSize(1000, 640)
        self.setAcceptDrops(True)
        s = self.session

        self.inputs = InputsPanel(s)
        self.results = ResultsView(s)
        self.tabs = QTabWidget()
        self.tabs.setDocumentMode(True)
        self.pages: dict[str, QWidget] = {}
        self._built: dict[str, QWidget] = {}
        self._factories = {}
        for tab in TABS:
            self.add_panel(tab.name, tab.title, lambda tab=tab: tab.build(s, self.workers))
        self.tabs.currentChanged.connect(lambda _i: self.view(self.current_view_name()))
        self.view(self.current_view_name())

        right = QSplitter(Qt.Orientation.Vertical)
        right.addWidget(self.results)
        right.addWidget(self.tabs)
        right.setStretchFactor(1, 1)
        right.setChildrenCollapsible(False)
        self.right_splitter = right
        split = QSplitter(Qt.Orientation.Horizontal)
        split.addWidget(self.inputs)
        split.addWidget(right)
        split.setStretchFactor(1, 1)
        split.setSizes([390, 1010])
        split.setChildrenCollapsible(False)
        self.splitter = split
        self.setCentralWidget(split)

        self.catalog_label = QLabel()
        self.statusBar().addPermanentWidget(self.catalog_label)
        self.busy_label = QLabel()
        self.statusBar().addPermanentWidget(self.busy_label)
        self._build_menus()
        self._update_catalog_label()
        _no_text_drops(self)

        # freed sweep memory goes back to the system once the window is idle (ui/memory.py)
        self._idle_trim = QTimer(self)
        self._idle_trim.setSingleShot(True)
        self._idle_trim.setInterval(IDLE_TRIM_MS)
        self._idle_trim.timeout.connect(self._release_memory)
        self.workers.sig_busy_changed.connect(lambda n: n == 0 and self._idle_trim.start())
        s.sig_results_changed.connect(self._idle_trim.start)

        s.sig_error.connect(self.show_error)
        s.sig_message.connect(lambda m: self.statusBar().showMessage(m, 6000))
        s.sig_undo_changed.connect(self._update_actions)
        s.sig_inputs_changed.connect(self._update_title)
        s.sig_inputs_changed.connect(self._update_actions)
        s.sig_catalog_changed.connect(self._update_catalog_label)
        self.workers.sig_busy_changed.connect(lambda n: self.busy_label.setText(f"working… ({n})" if n else ""))
        self.tabs.currentChanged.connect(lambda _i: self._update_actions())
        try:  # follow the system's light/dark switch while running (Qt ≥ 6.5)
            QGuiApplication.styleHints().colorSchemeChanged.connect(self._on_color_scheme_changed)
        except AttributeError:
            pass
        if restore:
            self.restore_settings()
        self._update_actions()
        self._update_title()
        for n in self.settings.notices:
            self.show_error(n)

    # ------------------------------------------------------------------ layout
    def add_panel(self, name: str, title: str, factory) -> None:
        """Add a tab. ``factory()`` builds its view (a `TabView`) the first time the tab is shown (or
        asked for through `view`), which keeps start-up short."""
        page = QWidget()
        lay = QVBoxLayout(page)
        lay.setContentsMargins(0, 0, 0, 0)
        self.pages[name] = page
        self._factories[name] = factory
        self.tabs.addTab(page, title)

    def view(self, name: str) -> QWidget | None:
        """The view of a tab, built on first use."""
        if name not in self._built and name in self._factories:
            w = self._factories[name]()
            _no_text_drops(w)
            self._built[name] = w
            self.pages[name].layout().addWidget(w)
        return self._built.get(name)

    @property
    def views(self) -> dict[str, QWidget]:
        return {name: self.view(name) for name in self.pages}

    def show_view(self, name: str) -> bool:
        name = name.replace("-", "_")
        if name not in self.pages:
            return False
        self.view(name)
        self.tabs.setCurrentWidget(self.pages[name])
        return True

    def current_view_name(self) -> str:
        w = self.tabs.currentWidget()
        return next((k for k, v in self.pages.items() if v is w), "")

    def current_view(self) -> QWidget | None:
        return self.view(self.current_view_name())

    # ------------------------------------------------------------------ menus
    def _action(self, menu, text, slot, shortcut=None, tip="") -> QAction:
        a = QAction(text, self)
        if shortcut is not None:
            a.setShortcut(QKeySequence(shortcut))
        if tip:
            a.setStatusTip(tip)
            a.setToolTip(tip)
        a.triggered.connect(slot)
        menu.addAction(a)
        return a

    def _build_menus(self) -> None:
        mb = self.menuBar()
        f = mb.addMenu("&File")
        self._action(f, "&New sizing", self.file_new, QKeySequence.StandardKey.New, "Start from the default inputs")
        self._action(f, "&Open sizing…", self.file_open, QKeySequence.StandardKey.Open, "Open a saved sizing file")
        self._action(f, "&Save sizing", self.file_save, QKeySequence.StandardKey.Save)
        self._action(f, "Save sizing &as…", self.file_save_as, QKeySequence.StandardKey.SaveAs)
        f.addSeparator()
        self._action(f, "Compare &measurements…", self.open_measurements, "Ctrl+Shift+M",
                     "Your benchmark results (llama-bench, vllm bench serve, SGLang, GenAI-Perf/AIPerf, GuideLLM) "
                     "beside the predictions")
        self._action(f, "&Import model…", self.import_dialog, "Ctrl+I",
                     "Size your own model: a config.json, a model folder, a .gguf file or hf:org/name "
                     "(or drop one on the window)")
        self.act_save_model = self._action(f, "Save imported model to my &catalog", self.save_imported_model, None,
                                           "Keep the imported model in use for later sessions (the user catalog)")
        f.addSeparator()
        self.act_csv = self._action(f, "Export table as &CSV…", self.export_csv, "Ctrl+E",
                                    "The table of the current tab (or the figures of this sizing)")
        self.act_chart = self._action(f, "Export c&hart as PNG/SVG…", self.export_chart, "Ctrl+Shift+E",
                                      "The chart of the current tab")
        self.act_report = self._action(f, "Export &report (PDF)…", self.export_report, "Ctrl+R",
                                       "A PDF sizing report of the configuration and targets on screen")
        f.addSeparator()
        self._action(f, "&Quit", self.close, QKeySequence.StandardKey.Quit)
        e = mb.addMenu("&Edit")
        self.act_undo = self._action(e, "&Undo", self.session.undo, QKeySequence.StandardKey.Undo,
                                     "Undo the last input change")
        self.act_redo = self._action(e, "&Redo", self.session.redo, QKeySequence.StandardKey.Redo)
        e.addSeparator()
        self.act_copy = self._action(e, "&Copy", self.copy, QKeySequence.StandardKey.Copy,
                                     "Copy the selected rows, or this sizing's figures")
        self._action(e, "&Pin to Compare", lambda: self.session.compare.pin(), "Ctrl+P",
                     "Add the current configuration to the Compare tab")
        e.addSeparator()
        self._action(e, "Find &model…", lambda: self._focus(self.inputs.model_picker.search), "Ctrl+F")
        self._action(e, "Find &hardware…", lambda: self._focus(self.inputs.hw_picker.search), "Ctrl+Shift+F")
        self._action(e, "Edit p&rompt length", lambda: self._focus(self.inputs.spin_prompt), "Ctrl+Shift+P")
        self._action(e, "Edit &users (batch)", lambda: self._focus(self.inputs.spin_batch), "Ctrl+Shift+B")
        v = mb.addMenu("&View")
        for i, tab in enumerate(TABS):
            self._action(v, tab.title.replace("&", ""), lambda _=False, n=tab.name: self.show_view(n),
                         f"Ctrl+{i + 1}" if i < 9 else None)
        v.addSeparator()
        self._action(v, "Hide the explanation", self.results.hide_why, "Esc")
        h = mb.addMenu("&Help")
        self._action(h, "&About advisor", self.about)

    def _focus(self, w) -> None:
        w.setFocus(Qt.FocusReason.ShortcutFocusReason)
        if hasattr(w, "selectAll"):
            w.selectAll()

    def _update_actions(self) -> None:
        self.act_undo.setEnabled(self.session.can_undo())
        self.act_redo.setEnabled(self.session.can_redo())
        self.act_chart.setEnabled(self._chart_target() is not None)
        self.act_save_model.setEnabled(self.session.imports.in_use() is not None)

    def _update_title(self) -> None:
        name = self.file_path.name if self.file_path else "untitled sizing"
        modified = self.saved_state is not None and self.session.state != self.saved_state
        self.setWindowTitle(f"{name}{' *' if modified else ''} — advisor")

    def _update_catalog_label(self) -> None:
        cat = self.session.cat
        issues = cat.issues
        text = f"catalog: {len(cat.hardware)} devices, {len(cat.models)} models"
        if issues:
            text += f" · {len(issues)} entr{'y' if len(issues) == 1 else 'ies'} skipped"
            self.catalog_label.setStyleSheet("color: #d23c3c;")
            self.catalog_label.setToolTip("Entries that failed validation (the rest loaded):\n"
                                          + "\n".join(str(i) for i in issues[:40]))
        else:
            self.catalog_label.setStyleSheet("")
            self.catalog_label.setToolTip("Shipped catalog plus your own additions")
        self.catalog_label.setText(text)

    def _on_color_scheme_changed(self, *_args) -> None:
        """Re-apply the palette and recolour the charts' backgrounds, axes and text."""
        import pyqtgraph as pg
        from PySide6.QtWidgets import QApplication

        from ui.widgets import apply_theme, plot_colors

        apply_theme(QApplication.instance())
        c = plot_colors()
        for w in self.findChildren(pg.GraphicsView):
            w.setBackground(c["bg"])
            for item in w.scene().items():
                if isinstance(item, pg.AxisItem):
                    item.setPen(c["fg"])
                    item.setTextPen(c["fg"])

    def _release_memory(self) -> None:
        if self.workers.busy:   # a job started since: after it
            self._idle_trim.start()
            return
        ms = release_free_memory()
        if ms is not None:
            log.debug("returned free memory to the system in %.1f ms", ms)

    # ------------------------------------------------------------------ messages
    def show_error(self, message: str) -> None:
        log.info("notice: %s", message)
        self.statusBar().showMessage(f"⚠ {message}", 10000)

    # ------------------------------------------------------------------ files
    def file_new(self) -> None:
        self.session.new()
        self.file_path = None
        self.saved_state = None
        self._update_title()

    def _dir(self) -> str:
        return self.settings.get("files/last_dir") or str(Path.home())

    def file_open(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Open sizing", self._dir(), sizing_file.FILE_FILTER)
        if path:
            self.open_file(path)

    def open_file(self, path) -> bool:
        """Load a sizing file; a bad one leaves the inputs as they were and says why in the status bar.
        A sizing of an imported model reads that model again from where it came from, on a worker (a
        file on a slow or hung disk never freezes the window); the inputs load when it is read."""
        try:
            sizing = sizing_file.read_sizing(path)
        except sizing_file.SizingFileError as exc:
            self.show_error(str(exc))
            return False
        inputs, targets, source, technique = sizing.inputs, sizing.targets, sizing.source, sizing.technique
        if not (source and inputs["model"] not in self.session.cat.models):
            return self._finish_open(path, inputs, targets, technique)
        missing = missing_local(source)
        if missing:
            self.show_error(f"{Path(path).name}: its model could not be imported again ({missing})")
            return False

        def read(results) -> None:
            imported = results[0][1]
            if isinstance(imported, str):
                self.show_error(f"{Path(path).name}: its model could not be imported again ({imported})")
                return
            self.session.imports.adopt(imported, source, inputs["model"], sizing.model_name)
            self._finish_open(path, inputs, targets, technique)

        self._read_imports("open", [source], read, f"Reading the model of {Path(path).name} ({source})…")
        return True

    def _finish_open(self, path, inputs, targets, technique) -> bool:
        if not self.session.load_keys(inputs, targets):
            self.show_error(f"{Path(path).name}: {self.session.last_error}")
            return False
        if technique and not self.session.whatif.load_keys(technique):
            self.show_error(f"{Path(path).name}: {self.session.last_error}")  # the inputs opened; the what-if did not
        self.file_path = Path(path)
        self.saved_state = self.session.state
        self.settings.set("files/last_dir", str(Path(path).parent))
        self._update_title()
        self.statusBar().showMessage(f"Opened {path}", 5000)
        return True

    def file_save(self) -> None:
        if self.file_path is None:
            self.file_save_as()
        else:
            self.save_file(self.file_path)

    def file_save_as(self) -> None:
        default = str(Path(self._dir()) / f"{self.session.cfg.model.key}-on-{self.session.cfg.hardware.key}.yaml")
        path, _ = QFileDialog.getSaveFileName(self, "Save sizing", default, sizing_file.FILE_FILTER)
        if path:
            self.save_file(path)

    def save_file(self, path) -> bool:
        try:
            sizing_file.write(path, self.session.to_file_dict())
        except OSError as exc:
            self.show_error(f"could not save {path}: {exc}")
            return False
        self.file_path = Path(path)
        self.saved_state = self.session.state
        self.settings.set("files/last_dir", str(Path(path).parent))
        self._update_title()
        self.statusBar().showMessage(f"Saved {path}", 5000)
        return True

    def open_measurements(self, paths=None) -> None:
        """File → Compare measurements…: the Measured tab, reading the chosen result files."""
        self.show_view("measured")
        if paths:
            self.measured.open_files(paths)
        else:
            self.measured.pick_files()

    # ------------------------------------------------------------------ imported models
    def import_dialog(self) -> None:
        """File → Import model…: pick a source, see what it holds, import it (and maybe save it)."""
        dlg = ImportDialog(self, start_dir=self._dir())
        if dlg.exec():
            self.import_source(dlg.source(), save=dlg.save.isChecked(), imported=dlg.imported, name=dlg.chosen_name())

    def import_source(self, source: str, save: bool = False, imported=None, name: str = "") -> bool:
        """Import a model file, folder or ``hf:org/name`` and make it the model in use. It is read on a
        worker (a Hub id may need the network; a file may sit on a slow disk), so this returns at once:
        True when the reading started, False when the source is plainly missing. A source that cannot
        be imported leaves everything as it was and says why in the status bar. ``name``: the name the
        user gave it (empty: its own)."""
        source = import_path(source)
        if imported is not None:
            return self.session.imports.add(imported, save, source, name) is not None
        missing = missing_local(source)
        if missing:
            self.session.last_error = missing
            self.show_error(missing)
            return False

        def read(results) -> None:
            imported = results[0][1]
            if isinstance(imported, str):
                self.show_error(imported)
            elif self.session.imports.add(imported, save, source, name) is not None and not source.startswith("hf:"):
                p = Path(source)
                self.settings.set("files/last_dir", str(p if p.is_dir() else p.parent))

        self._read_imports("import", [source], read, f"{'Fetching' if source.startswith('hf:') else 'Reading'} {source}…")
        return True

    def _read_imports(self, channel: str, sources: list[str], on_done, message: str) -> None:
        """Read import sources on the worker pool; ``on_done`` gets ``[(source, ImportedModel or the
        reason it failed)]`` on the GUI thread. A newer read on the same channel makes an older one stale."""
        def job():
            out = []
            for source in sources:
                try:
                    out.append((source, read_import(source)))
                except api.AdvisorError as exc:
                    out.append((source, str(exc)))
            return out

        self.statusBar().showMessage(message)
        self.workers.run(channel, job, on_done,
                         lambda exc, _tb: self.show_error(f"{', '.join(sources)}: {type(exc).__name__}: {exc}"))

    def save_imported_model(self) -> bool:
        return self.session.imports.save() is not None

    # drag-and-drop: a config.json, a .gguf or a model folder imports it; a sizing file opens it
    def dragEnterEvent(self, event) -> None:  # noqa: N802 - Qt name
        if dropped_paths(event.mimeData()):
            event.acceptProposedAction()
        else:
            event.ignore()

    def dragMoveEvent(self, event) -> None:  # noqa: N802 - Qt name
        self.dragEnterEvent(event)

    def dropEvent(self, event) -> None:  # noqa: N802 - Qt name
        paths = dropped_paths(event.mimeData())
        if not paths:
            event.ignore()
            return
        event.acceptProposedAction()
        models = [p for p in paths if not sizing_file.looks_like_sizing(p)]
        if not models:  # one sizing file opens; the window holds one sizing at a time
            self.open_file(paths[0])
            if len(paths) > 1:
                self.statusBar().showMessage(f"Opened {paths[0].name}; one sizing file is opened at a time, "
                                             f"{len(paths) - 1} other(s) left alone")
            return
        # every model file, folder or GGUF joins the picker; the last that imports is the one in use.
        # They are read together on a worker and applied here in the order dropped.
        sources = [import_path(str(p)) for p in models]

        def read(results) -> None:
            done, failed = [], []
            for p, (source, imported) in zip(models, results):
                self.session.last_error = ""
                if not isinstance(imported, str) and self.session.imports.add(imported, False, source) is not None:
                    done.append(p.name)
                else:
                    failed.append(f"{p.name} ({imported if isinstance(imported, str) else self.session.last_error})")
            if len(models) > 1:
                text = f"Imported {len(done)} of {len(models)} models" + (f"; {done[-1]} is in use" if done else "")
                if failed:
                    text += f"; not imported: {'; '.join(failed)}"
                self.statusBar().showMessage(("⚠ " if failed else "") + text)
            elif failed:
                self.show_error(failed[0].split(" (", 1)[1][:-1])
            elif done:
                p = models[0]
                self.settings.set("files/last_dir", str(p if p.is_dir() else p.parent))

        self._read_imports("drop", sources, read, f"Reading {', '.join(p.name for p in models)}…")

    # ------------------------------------------------------------------ export / copy
    def current_table_rows(self) -> list[list[str]]:
        w = self.current_view()
        rows = w.table_rows() if w is not None else []
        if rows:
            return rows
        p = self.session.prediction
        return [["field", "value"]] + [[k, "" if v is None else str(v)] for k, v in p.to_dict().items()]

    def export_csv(self, path=None) -> bool:
        if not path:
            path, _ = QFileDialog.getSaveFileName(self, "Export CSV", str(Path(self._dir()) /
                                                  f"advisor-{self.current_view_name() or 'figures'}.csv"),
                                                  "CSV files (*.csv)")
            if not path:
                return False
        try:
            sizing_file.write_text_atomic(Path(path), to_csv(self.current_table_rows()))
        except OSError as exc:
            self.show_error(f"could not write {path}: {exc}")
            return False
        self.statusBar().showMessage(f"Exported {path}", 5000)
        return True

    def export_report(self):
        """File → Export report: a save dialog, then the report built and written in the background."""
        from ui.report import export_report

        return export_report(self, self.session)

    def _chart_target(self):
        """(what pyqtgraph's exporters take, the widget that shows it) for the current tab, or None."""
        w = self.current_view()
        return w.chart() if w is not None else None

    def export_chart(self, path=None) -> bool:
        import pyqtgraph.exporters as ex

        chart = self._chart_target()
        if chart is None:
            self.show_error("this tab has no chart; choose Roofline, Curves, Serving, Compare or Measured")
            return False
        if not path:
            path, _ = QFileDialog.getSaveFileName(self, "Export chart", str(Path(self._dir()) /
                                                  f"advisor-{self.current_view_name()}.png"),
                                                  "PNG image (*.png);;SVG drawing (*.svg)")
            if not path:
                return False
        target, widget = chart
        try:
            if str(path).lower().endswith(".svg"):
                try:
                    ex.SVGExporter(target).export(str(path))
                except ValueError:
                    # pyqtgraph 0.14's SVG exporter cannot parse Qt 6.12's SVG paths; paint the chart instead
                    _render_svg(widget, str(path))
            else:
                e = ex.ImageExporter(target)
                e.parameters()["width"] = 1800
                e.export(str(path))
        except Exception as exc:  # noqa: BLE001 - exporter failures are reported, not fatal
            self.show_error(f"could not export the chart: {exc}")
            return False
        self.statusBar().showMessage(f"Exported {path}", 5000)
        return True

    def summary_text(self) -> str:
        p = self.session.prediction
        return (f"{describe(self.session.cfg)}\n"
                f"fits: {'yes' if p.fits else 'no, short by ' + num(p.shortfall_gb) + ' GB'} · "
                f"TTFT {num(p.ttft_ms)} ms · decode {num(p.decode_tok_s)} tok/s per user, "
                f"{num(p.throughput_tok_s)} aggregate · max batch {p.max_batch:,} · max context {p.max_context:,} · "
                f"{p.bound}-bound")

    def copy(self) -> None:
        w = self.current_view()
        text = w.copy_text() if w is not None else ""
        if not text:
            text = self.summary_text()
        QGuiApplication.clipboard().setText(text)
        self.statusBar().showMessage("Copied", 3000)

    def about(self) -> None:
        QMessageBox.about(self, "About advisor", self.about_text())

    def about_text(self) -> str:
        cat = self.session.cat
        cat_date = api.catalog_data_date(cat) or "unknown"
        sources = "".join(f"<li>{s}</li>" for s in DATA_SOURCES)
        return (f"<h3>advisor {advisor.__version__}</h3>"
                f"<p>What hardware, at which quantization, runs this model this fast — an LLM hardware-sizing "
                f"advisor.</p><p>Catalog: {len(cat.hardware)} devices, {len(cat.models)} models, "
                f"{len(cat.quants)} weight formats, {len(cat.runtimes)} runtimes; data as of {cat_date} "
                f"(the newest dated price or source).</p><p>Data sources:</p><ul>{sources}</ul>"
                f"<p>Command line: <code>advisor --help</code></p>")

    # ------------------------------------------------------------------ settings
    def restore_settings(self) -> None:
        st = self.settings
        geo = st.get("window/geometry")
        if not geo.isEmpty() and self.restoreGeometry(geo):
            self._clamp_to_screen()
        else:  # first start: most of the screen, at most 1400 × 900
            screen = QGuiApplication.primaryScreen()
            avail = screen.availableGeometry() if screen is not None else None
            if avail is not None and avail.width() > 0:
                self.resize(min(1400, int(avail.width() * 0.9)), min(900, int(avail.height() * 0.9)))
            else:
                self.resize(1400, 900)
        state = st.get("window/state")
        if not state.isEmpty():
            self.restoreState(state)
        sizes = st.get("window/splitter")
        if len(sizes) == 2 and all(x > 50 for x in sizes):
            self.splitter.setSizes(sizes)
        sizes = st.get("window/right_splitter")
        if len(sizes) == 2 and all(x > 30 for x in sizes):
            self.right_splitter.setSizes(sizes)
        else:  # the figures as tall as they need, the tabs the rest
            self.right_splitter.setSizes([self.results.sizeHint().height(), 10_000])
        tab = st.get("window/tab")
        if 0 <= tab < self.tabs.count():
            self.tabs.setCurrentIndex(tab)
        try:
            self._restore_session(st)
        except Exception as exc:  # noqa: BLE001 - a stored value of any shape must not stop the app
            log.warning("stored inputs dropped: %r", exc)
            st.set("session/inputs", {})
            st.notices.append(f"the last inputs were unreadable ({exc.__class__.__name__}) and were dropped; "
                              "starting from the defaults")
            self.session.new()
            self.session.clear_history()

    def _restore_session(self, st) -> None:
        """The last session's imports, inputs and what-if, from the settings. Imported models are read
        again from their files on a worker, so a referenced file on a slow or hung disk never holds up
        the start: the window opens on the defaults and the last inputs follow when the files are read
        (unless the user has changed something by then)."""
        inputs = st.get("session/inputs")
        imported = inputs.get("imported") if isinstance(inputs.get("imported"), dict) else {}
        names = inputs.get("imported_names") if isinstance(inputs.get("imported_names"), dict) else {}
        pending = [(key, source) for key, source in imported.items()
                   # a Hub id is not fetched at start-up
                   if key not in self.session.cat.models and isinstance(source, str) and not source.startswith("hf:")]
        if not pending:
            self._restore_inputs(inputs, st.notices)
            return
        start = self.session.state

        def read(results) -> None:
            notices: list[str] = []
            for (key, _), (source, model) in zip(pending, results):
                if isinstance(model, str):
                    notices.append(f"the imported model {key} could not be read again: {model}")
                else:
                    try:
                        self.session.imports.adopt(model, source, key, names.get(key, ""))
                    except api.AdvisorError as exc:
                        notices.append(f"the imported model {key} could not be read again: {exc}")
            if self.session.state == start:
                self._restore_inputs(inputs, notices)
            else:
                notices.append("the last inputs were not restored: they were changed while the imported "
                               "models were read")
            if notices:
                self.show_error("; ".join(notices))
            else:
                self.statusBar().showMessage("Restored the last session", 5000)

        self._read_imports("restore", [source for _, source in pending], read,
                           "Reading the last session's imported models…")

    def _restore_inputs(self, inputs: dict, notices: list[str]) -> None:
        if not inputs:
            return
        if self.session.load_keys(inputs.get("inputs", {}), inputs.get("targets")):
            self.session.clear_history()
            technique = inputs.get("technique")
            if isinstance(technique, dict) and technique and not self.session.whatif.load_keys(technique):
                notices.append(f"the last what-if could not be restored ({self.session.last_error})")
        else:
            notices.append(f"the last inputs could not be restored ({self.session.last_error}); "
                           "starting from the defaults")

    def _clamp_to_screen(self) -> None:
        screen = QGuiApplication.screenAt(self.frameGeometry().center())
        if screen is None:
            prim = QGuiApplication.primaryScreen()
            if prim is not None:
                self.move(prim.availableGeometry().topLeft())

    def save_settings(self) -> None:
        st = self.settings
        st.set("window/geometry", self.saveGeometry())
        st.set("window/state", self.saveState())
        st.set("window/splitter", self.splitter.sizes())
        st.set("window/right_splitter", self.right_splitter.sizes())
        st.set("window/tab", self.tabs.currentIndex())
        st.set("session/inputs", {"inputs": self.session.input_keys(), "targets": self.session.targets.to_dict(),
                                  "imported": dict(self.session.imports.sources),
                                  "imported_names": dict(self.session.imports.names),
                                  "technique": self.session.whatif.keys()})
        st.sync()

    def warm_ranking(self) -> None:
        """Start the ranking processes and build their sweep tables while the user reads the first tab
        (the app calls this a moment after the window shows); nothing once a ranking has begun."""
        if self.workers.running(ranking.FIRST, ranking.ALL):
            return
        s = self.session
        req = api.Requirements(model=s.cfg.model, hardware=(s.cfg.hardware.key,))
        try:
            for channel in (ranking.FIRST, ranking.ALL):
                self.workers.run_in_process(channel, ranking.warm, (req,), {"catalog": s.cat},
                                            on_error=lambda exc, _tb: log.info("warming a ranking process failed: %s", exc))
        except Exception as exc:  # noqa: BLE001 - the tab says so when it ranks
            log.warning("the ranking processes cannot start: %s", exc)

    def closeEvent(self, event) -> None:  # noqa: N802
        try:
            self.save_settings()
        except Exception as exc:  # noqa: BLE001 - closing must always work
            log.warning("could not save settings: %s", exc)
        self.workers.wait(3000)
        self.workers.close()   # its child processes stay for the next window, or stop at exit
        super().closeEvent(event)


# each tab's view as an attribute (``window.roofline``), built on first use
for _tab in TABS:
    if hasattr(MainWindow, _tab.name):
        raise TypeError(f"tab name {_tab.name!r} hides a MainWindow attribute")
    setattr(MainWindow, _tab.name, property(lambda self, name=_tab.name: self.view(name)))
