"""The recommender's ranked table for the current workload, computed in a worker (stale answers are
dropped). Sortable, filterable, with reasons, Pareto marks and a copyable launch line; choosing a row
(double-click, Enter or "Load into inputs") makes it the current inputs."""

from __future__ import annotations

import math

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import (QCheckBox, QComboBox, QHBoxLayout, QLabel, QLineEdit, QPushButton, QSpinBox,
                               QVBoxLayout, QWidget)

from advisor import api
from advisor.text.format import duration_ms, num
from ui.views.table import Column, RowsModel, make_table, selected_row, selected_text

SHOW = (("passing", "Passing, best first"), ("misses", "Closest misses"), ("all", "All candidates"))
MAX_ROWS = 300


def reason_text(r) -> str:
    """One unmet requirement in words: api.reason_text where the core has it, else a plain rendering."""
    core = getattr(api, "reason_text", None)
    if core is not None:
        try:
            return str(core(r))
        except Exception:  # noqa: BLE001 - fall back to the plain rendering below
            pass
    what = {"quality": "quality", "memory": "memory", "ttft": "TTFT", "tok_s": "speed", "budget_usd": "budget",
            "budget_usd_hour": "hourly budget"}.get(getattr(r, "constraint", ""), getattr(r, "constraint", "?"))
    req, got, unit = getattr(r, "required", None), getattr(r, "achieved", None), getattr(r, "unit", "")
    if req is None and got is None:
        return str(what)
    return f"{what}: needs {num(req)} {unit}, gets {num(got)}".strip()


def reasons(c, sep: str = "; ") -> str:
    if c.ok:
        extra = f" (headroom ×{c.headroom:.2f})" if c.headroom and math.isfinite(c.headroom) else ""
        return f"meets every requirement{extra}"
    return sep.join(reason_text(r) for r in c.failures) or "misses a requirement"


def _money(v):
    return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else v


COLUMNS = [
    Column("★", lambda c: "★" if c.pareto else "", "Pareto-optimal: nothing else is both cheaper and faster"),
    Column("Hardware", lambda c: c.hardware.name),
    Column("GPUs", lambda c: int(c.gpus * c.replicas), "All GPUs: replicas × GPUs per replica",
           row_tip=lambda c: c.label),
    Column("Quality", lambda c: c.quality, "The release format is the reference; else llama.cpp's KL divergence "
                                           "on Llama-3-8B, or unmeasured"),
    Column("Runtime", lambda c: c.runtime.name),
    Column("Weights", lambda c: c.quant.name),
    Column("KV", lambda c: c.kv_dtype.name),
    Column("TTFT", lambda c: float(c.ttft_ms), "Time to first token at this load", fmt=duration_ms),
    Column("tok/s/user", lambda c: float(c.tok_s), "Decode speed per user"),
    Column("Aggregate tok/s", lambda c: float(c.throughput_tok_s), "Decode tokens per second, all users"),
    Column("$/hour", lambda c: _money(c.cost_usd_hour), "On-demand rent for all GPUs (basis and date in the row tip)", row_tip=lambda c: c.price_note),
    Column("Purchase $", lambda c: _money(c.cost_usd), "Purchase price for all GPUs (basis and date in the row tip)", row_tip=lambda c: c.price_note),
    Column("Reason", lambda c: reasons(c), "Why it passes or fails", row_tip=lambda c: reasons(c, "\n"),
           colour=lambda c: None if c.ok else "#d23c3c"),
    Column("Max users", lambda c: int(c.max_batch), "Users that fit in memory at the full context"),
    Column("Memory GB", lambda c: float(c.memory_needed_gb), "Needed per GPU (of usable)",
           row_tip=lambda c: f"{num(c.memory_needed_gb)} of {num(c.memory_usable_gb)} GB usable per GPU"),
    Column("Launch", lambda c: c.launch, "Command line to start it (select the row and press Ctrl+Shift+C)"),
]


class RecommendView(QWidget):
    def __init__(self, session, workers, parent=None):
        super().__init__(parent)
        self.session, self.workers = session, workers
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        bar = QHBoxLayout()
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter rows (any column)…")
        self.filter.setClearButtonEnabled(True)
        self.combo_show = QComboBox()
        for k, label in SHOW:
            self.combo_show.addItem(label, k)
        self.spin_max_gpus = QSpinBox()
        self.spin_max_gpus.setRange(1, 64)
        self.spin_max_gpus.setValue(8)
        self.spin_max_gpus.setPrefix("≤ ")
        self.spin_max_gpus.setSuffix(" GPUs")
        self.spin_max_gpus.setToolTip("Largest number of GPUs a candidate may use")
        self.check_pareto = QCheckBox("Pareto only")
        self.check_pareto.setToolTip("Show only rows that nothing else beats on both cost and speed (★)")
        self.check_safe = QCheckBox("Safe margins")
        self.check_safe.setToolTip("Rank by the pessimistic end of each band")
        self.btn_load = QPushButton("&Load into inputs")
        self.btn_load.setToolTip("Make the selected row the current configuration (or double-click it)")
        self.btn_copy = QPushButton("Copy launch line")
        bar.addWidget(self.filter, 2)
        bar.addWidget(self.combo_show)
        bar.addWidget(self.spin_max_gpus)
        bar.addWidget(self.check_pareto)
        bar.addWidget(self.check_safe)
        bar.addWidget(self.btn_load)
        bar.addWidget(self.btn_copy)
        lay.addLayout(bar)
        self.status = QLabel("")
        lay.addWidget(self.status)
        self.model = RowsModel(COLUMNS, self)
        self.table, self.proxy = make_table(self.model)
        self.table.setObjectName("recommend_table")
        lay.addWidget(self.table, 1)
        for i, w in enumerate((24, 200, 42, 95, 85, 60, 70, 70, 95, 60, 80, 300, 70, 80, 260)):
            self.table.setColumnWidth(i, w)
        self.rec: api.Recommendation | None = None
        self.computing = False
        self._dirty = True
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(120)
        self._timer.timeout.connect(self.compute)
        self.filter.textChanged.connect(self.proxy.setFilterFixedString)
        self.combo_show.currentIndexChanged.connect(self._fill)
        self.check_pareto.toggled.connect(self._fill)
        self.spin_max_gpus.valueChanged.connect(self.schedule)
        self.check_safe.toggled.connect(self.schedule)
        self.btn_load.clicked.connect(self.load_selected)
        self.btn_copy.clicked.connect(self.copy_launch)
        self.table.doubleClicked.connect(lambda _i: self.load_selected())
        for keys, slot in (("Ctrl+Shift+C", self.copy_launch), (Qt.Key.Key_Return, self.load_selected),
                           (Qt.Key.Key_Enter, self.load_selected)):
            sc = QShortcut(QKeySequence(keys), self.table, slot)
            sc.setContext(Qt.ShortcutContext.WidgetShortcut)  # only while the table has the focus
        session.sig_inputs_changed.connect(self._on_inputs_changed)
        self._last_req = None

    # ------------------------------------------------------------------
    def requirements(self) -> "api.Requirements":
        s = self.session
        cfg, t = s.cfg, s.targets
        wl = cfg.workload
        return api.Requirements(model=cfg.model, prompt_tokens=wl.prompt_tokens, output_tokens=wl.output_tokens,
                                context_tokens=wl.prompt_tokens + wl.output_tokens + wl.depth_tokens,
                                users=wl.batch, ttft_ms=t.ttft_ms or None, tok_s=t.tok_s or None,
                                max_gpus=self.spin_max_gpus.value(), safe=self.check_safe.isChecked())

    def _on_inputs_changed(self) -> None:
        req = self._req_key()
        if req == self._last_req:
            return
        if self.isVisible():
            self.schedule()
        else:
            self._dirty = True

    def _req_key(self):
        s = self.session
        w = s.cfg.workload
        return (s.cfg.model.key, w.prompt_tokens, w.output_tokens, w.depth_tokens, w.batch, s.targets,
                self.spin_max_gpus.value(), self.check_safe.isChecked(), id(s.cat))

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        if self._dirty:
            self.schedule()

    def schedule(self) -> None:
        self._dirty = False
        self._timer.start()

    def compute(self) -> None:
        """Start the recommender in the worker; a newer request makes this one stale."""
        self._last_req = self._req_key()
        cat, req = self.session.cat, self.requirements()
        self.computing = True
        self.status.setText(f"Ranking every configuration for {req.model.name}, {req.users} users…")
        self.workers.run("recommend", lambda: api.recommend(cat, req), self._on_done, self._on_error)

    def _on_done(self, rec) -> None:
        self.computing = False
        self.rec = rec
        self._fill()

    def _on_error(self, exc, tb) -> None:
        self.computing = False
        self.rec = None
        self.model.set_rows([])
        msg = str(exc) if isinstance(exc, api.AdvisorError) else f"{type(exc).__name__}: {exc}"
        self.status.setText(f"Could not rank: {msg}")
        self.session.sig_error.emit(f"Recommendations: {msg}")

    def _fill(self) -> None:
        rec = self.rec
        if rec is None:
            return
        mode = self.combo_show.currentData()
        if mode == "misses":
            rows = rec.closest_misses(MAX_ROWS)
        elif mode == "all":
            rows = rec.top(MAX_ROWS) + rec.closest_misses(MAX_ROWS)
        else:
            rows = rec.top(MAX_ROWS)
        if self.check_pareto.isChecked():
            rows = [c for c in rows if c.pareto]
        self.model.set_rows(rows)
        basis = {"hour": "cloud $/hour", "purchase": "purchase price", "headroom": "headroom"}.get(rec.cost_basis,
                                                                                                  rec.cost_basis)
        what = "closest misses" if mode == "misses" else "rows"
        shown = f"showing {len(rows):,} {what}" + (" (the first)" if len(rows) >= MAX_ROWS else "")
        self.status.setText(f"{rec.n_passing:,} of {len(rec):,} configurations meet the requirements · ranked by "
                            f"{basis} · {shown} · {rec.elapsed_ms:,.0f} ms")
        if rec.n_passing == 0 and mode == "passing":
            self.status.setText(self.status.text() + " — nothing passes: see Closest misses")

    def selected(self):
        return selected_row(self.table)

    def load_selected(self) -> None:
        c = self.selected()
        if c is not None and self.session.load_candidate(c):
            self.session.sig_message.emit(f"Loaded {c.label} · {c.runtime.name} · {c.quant.name}")

    def copy_launch(self) -> None:
        c = self.selected()
        if c is not None and c.launch:
            QGuiApplication.clipboard().setText(c.launch)
            self.session.sig_message.emit("Launch line copied to the clipboard")

    def copy_text(self) -> str:
        return selected_text(self.table)
