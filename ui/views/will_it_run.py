"""Will it run: for the chosen hardware (runtime, GPU count, context), every catalog model with its best
fitting weight format, decode speed and longest context. Computed in a worker; double-click loads it."""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QHBoxLayout, QLabel, QLineEdit, QPushButton, QVBoxLayout, QWidget

from advisor import api
from advisor.text.format import num
from ui.views.table import Column, RowsModel, make_table, selected_row, selected_text

COLUMNS = [
    Column("Model", lambda r: r.model.name),
    Column("Family", lambda r: r.model.family),
    Column("Params B", lambda r: float(r.model.params_total_b), "Total parameters (billions)"),
    Column("Runs", lambda r: "yes" if r.fits else "no", "Fits in memory at this context",
           colour=lambda r: "#2e9d3a" if r.fits else "#d23c3c"),
    Column("Best format", lambda r: r.quant.name if r.quant is not None else "—",
           "Highest-quality weight format that fits"),
    Column("Weights GB", lambda r: float(r.weights_gb)),
    Column("Needs GB", lambda r: float(r.needs_gb), "Memory needed at this context, all GPUs"),
    Column("Decode tok/s", lambda r: float(r.decode_tok_s), "Single-user decode speed"),
    Column("Longest context", lambda r: int(r.max_context), "Longest context that fits (one user)"),
]


class WillItRunView(QWidget):
    def __init__(self, session, workers, parent=None):
        super().__init__(parent)
        self.session, self.workers = session, workers
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        bar = QHBoxLayout()
        self.heading = QLabel()
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter models…")
        self.filter.setClearButtonEnabled(True)
        self.btn_load = QPushButton("&Use this model")
        self.btn_load.setToolTip("Make the selected model (and its format) the current inputs (or double-click)")
        bar.addWidget(self.heading, 3)
        bar.addWidget(self.filter, 2)
        bar.addWidget(self.btn_load)
        lay.addLayout(bar)
        self.model = RowsModel(COLUMNS, self)
        self.table, self.proxy = make_table(self.model)
        self.table.setObjectName("will_it_run_table")
        for i, w in enumerate((230, 90, 70, 50, 100, 90, 80, 90)):
            self.table.setColumnWidth(i, w)
        lay.addWidget(self.table, 1)
        self.filter.textChanged.connect(self.proxy.setFilterFixedString)
        self.table.doubleClicked.connect(lambda _i: self.load_selected())
        self.btn_load.clicked.connect(self.load_selected)
        self.result: api.WillItRun | None = None
        self._key = None
        self._dirty = True
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(60)
        self._timer.timeout.connect(self.compute)
        session.sig_inputs_changed.connect(self._on_inputs_changed)

    def _request(self):
        cfg = self.session.cfg
        wl = cfg.workload
        return (cfg.hardware, cfg.runtime, cfg.gpus, wl.prompt_tokens + wl.output_tokens + wl.depth_tokens)

    def _on_inputs_changed(self) -> None:
        if self._request() == self._key:
            return
        if self.isVisible():
            self._timer.start()
        else:
            self._dirty = True

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        if self._dirty or self._request() != self._key:
            self._dirty = False
            self._timer.start()

    def compute(self) -> None:
        hw, rt, gpus, ctx = self._key = self._request()
        cat = self.session.cat
        self.heading.setText(f"Checking every model on {gpus}× {hw.name} ({rt.name}) at {ctx:,} tokens…")
        self.workers.run("will_it_run", lambda: api.will_it_run(cat, hw, runtime=rt, gpus=gpus, context=ctx),
                         self._on_done, self._on_error)

    def _on_done(self, w) -> None:
        self.result = w
        rows = sorted(w.rows, key=lambda r: (not r.fits, -r.model.params_total_b))
        self.model.set_rows(rows)
        n = sum(r.fits for r in rows)
        g = f"{w.gpus}× " if w.gpus > 1 else ""
        self.heading.setText(f"<b>{n} of {len(rows)}</b> models run on {g}{w.hardware.name if hasattr(w.hardware, 'name') else w.hardware} "
                             f"at {num(w.context_tokens)} tokens of context")

    def _on_error(self, exc, tb) -> None:
        msg = str(exc) if isinstance(exc, api.AdvisorError) else f"{type(exc).__name__}: {exc}"
        self.heading.setText(f"Could not check: {msg}")
        self.model.set_rows([])

    def load_selected(self) -> None:
        r = selected_row(self.table)
        if r is None:
            return
        changes = {"model": r.model}
        if r.quant is not None:
            changes["quant"] = r.quant
        self.session.set_inputs(**changes)

    def copy_text(self) -> str:
        return selected_text(self.table)
