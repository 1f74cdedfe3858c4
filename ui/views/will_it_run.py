"""Will it run: for the chosen hardware (runtime, GPU count, context), every catalog model with its best
fitting weight format, decode speed and longest context. Computed in a worker; double-click loads it."""

from __future__ import annotations

from PySide6.QtCore import QTimer
from PySide6.QtWidgets import QCheckBox, QHBoxLayout, QLabel, QLineEdit, QPushButton, QSpinBox, QVBoxLayout, QWidget

from advisor import api
from advisor.text.format import num
from ui.views.table import Column, RowsModel, RowsTab, fit_columns, make_table, selected_row

GRADE_COLOURS = {"fast": "#2e9d3a", "usable": "#2e9d3a", "too slow": "#c98a1a", "needs more RAM": "#c98a1a",
                 "does not fit": "#d23c3c"}
COLUMNS = [
    Column("Model", lambda r: r.model.name),
    Column("Params B", lambda r: float(r.model.params_total_b), "Total parameters (billions)"),
    Column("Grade", lambda r: r.grade, "fast (≥ 3 × the usable speed), usable (≥ the usable speed), too slow, "
           "needs more RAM than the machine has, or does not fit", colour=lambda r: GRADE_COLOURS.get(r.grade)),
    Column("Weights", lambda r: r.quant.name if r.quant is not None else "—",
           "The best weights that run usably (at least the 4-bit class; a model's own release format always counts)"),
    Column("Runs as", lambda r: api.WILL_IT_RUN_MODES.get(r.mode, "—") + (f": {r.how}" if r.how else ""),
           "All on the GPU, the MoE experts in system RAM (llama.cpp --n-cpu-moe), or partial offload (-ngl)"),
    Column("Decode tok/s", lambda r: float(r.decode_tok_s), "Single-user decode speed"),
    Column("GPU GB", lambda r: float(r.needs_gb), "Memory the GPU holds in this mode, per GPU"),
    Column("System RAM GB", lambda r: float(r.host_ram_gb) if r.mode in ("experts", "offload") else float("nan"),
           "System RAM the offloaded weights take"),
    Column("Longest context", lambda r: int(r.max_context), "Longest context that fits (one user)"),
]


class WillItRunView(QWidget, RowsTab):
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
        self.spin_ram = QSpinBox()
        self.spin_ram.setRange(0, 16384)
        self.spin_ram.setSuffix(" GB RAM")
        self.spin_ram.setSpecialValueText("RAM unknown")
        self.spin_ram.setValue(self._this_machine_ram())
        self.spin_ram.setToolTip("System RAM of the machine the GPU sits in: MoE experts or layers kept off the GPU "
                                 "must fit in it (this machine's RAM by default; 0 = unknown, rows say what they need)")
        # the Weights input: every model in that format, or (off) the best format per model
        self.check_quant = QCheckBox()
        self.check_quant.setObjectName("will_it_run_quant")
        self.check_quant.setToolTip("Check every model in the weight format chosen in the inputs (--quant); off: "
                                    "the best format that runs usably per model, at least the 4-bit class")
        bar.addWidget(self.heading, 3)
        bar.addWidget(self.check_quant)
        bar.addWidget(self.spin_ram)
        bar.addWidget(self.filter, 2)
        bar.addWidget(self.btn_load)
        lay.addLayout(bar)
        self.model = RowsModel(COLUMNS, self)
        self.table, self.proxy = make_table(self.model)
        self.table.setObjectName("will_it_run_table")
        for i, w in enumerate((230, 70, 90, 120, 260, 90, 70, 100, 100)):
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
        self.spin_ram.valueChanged.connect(self._on_inputs_changed)
        self.check_quant.toggled.connect(self._on_inputs_changed)
        self._label_quant()

    @staticmethod
    def _this_machine_ram() -> int:
        try:
            from probes.cpu import describe

            return int(round(describe().ram_gb or 0))
        except Exception:  # noqa: BLE001 - no RAM figure on this platform: unknown
            return 0

    def _request(self):
        cfg = self.session.cfg
        wl = cfg.workload
        # at least the CLI's 4,096 tokens: a chat's context, not one prompt and answer
        ctx = max(wl.prompt_tokens + wl.output_tokens + wl.depth_tokens, 4096)
        quant = cfg.quant if self.check_quant.isChecked() else None
        return (cfg.hardware, cfg.runtime, cfg.gpus, ctx, self.spin_ram.value(), quant)

    def _label_quant(self) -> None:
        self.check_quant.setText(f"Only {self.session.cfg.quant.name}")

    def _on_inputs_changed(self) -> None:
        self._label_quant()
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
        hw, rt, gpus, ctx, ram, quant = self._key = self._request()
        cat = self.session.cat
        self.heading.setText(f"Checking every model on {gpus}× {hw.name} ({rt.name}) at {ctx:,} tokens…")
        self.workers.run("will_it_run", lambda: api.will_it_run(cat, hw, runtime=rt, gpus=gpus, context=ctx,
                                                                host_ram_gb=ram or None, quant=quant),
                         self._on_done, self._on_error)

    def _on_done(self, w) -> None:
        self.result = w
        rows = list(w.rows)   # the core's order: what runs usably, most capable first
        self.model.set_rows(rows)
        fit_columns(self.table)
        n = sum(r.runs_usably for r in rows)
        g = f"{w.gpus}× " if w.gpus > 1 else ""
        quant = self._key[-1] if self._key else None
        if quant is not None and not rows:
            self.heading.setText(f"No model loads in {quant.name} in {w.runtime.name}: choose another weight "
                                 f"format or runtime, or untick “Only {quant.name}”")
            return
        weights = f" in {quant.name}" if quant is not None else ""
        left_out = (f"; {len(w.unsplit)} left out: {w.runtime.name} cannot split their attention heads over "
                    f"{w.gpus} GPUs" if w.unsplit else "")
        self.heading.setText(f"<b>{n} of {len(rows)}</b> models run usably{weights} (≥ {num(w.min_tok_s)} tok/s) "
                             f"on {g}{w.hardware.name} at {num(w.context_tokens)} tokens of context{left_out}")
        self.heading.setToolTip("Left out: " + ", ".join(w.unsplit) if w.unsplit else "")

    def _on_error(self, exc, tb) -> None:
        msg = str(exc) if isinstance(exc, api.AdvisorError) else f"{type(exc).__name__}: {exc}"
        self.heading.setText(f"Could not check: {msg}")
        self.model.set_rows([])

    def load_selected(self) -> None:
        r = selected_row(self.table)
        if r is None:
            return
        changes = {"model": r.model}
        before = self.session.cfg.quant
        if r.quant is not None:
            changes["quant"] = r.quant
        if self.session.set_inputs(**changes) and r.quant is not None and r.quant.key != before.key:
            # the row's own format replaces the one in the inputs: say so, never silently
            self.session.sig_message.emit(f"{r.model.name} in {r.quant.name}, the format this row runs "
                                          f"(the inputs had {before.name})")

    @property
    def busy(self) -> bool:
        return self.workers.running("will_it_run")
