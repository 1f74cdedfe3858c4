"""The recommender's ranked table for the current workload, computed in a worker (stale answers are
dropped). Grouped by hardware as ``advisor recommend`` prints it (the best configuration per hardware,
its alternatives below), with the core's "Why #1" line, the cost basis it ranked by, the recommender's
options as controls, reasons, Pareto marks and a copyable launch line (button, Ctrl+Shift+C or the
context menu); choosing a row (double-click, Enter or "Load into inputs") makes it the current inputs."""

from __future__ import annotations

import dataclasses
import logging
import math

from PySide6.QtCore import Qt, QTimer
from PySide6.QtGui import QAction, QGuiApplication, QKeySequence, QShortcut
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDoubleSpinBox, QHBoxLayout, QLabel, QLineEdit, QPushButton,
                               QSpinBox, QVBoxLayout, QWidget)

from advisor import api
from advisor.text.format import duration_ms, num
from ui import ranking
from ui.views.table import Column, RowsModel, RowsTab, fit_columns, make_table, selected_row

log = logging.getLogger(__name__)

#: --cost-basis: "" lets the core choose by the hardware's kind
COST_BASES = (("", "Cost: auto"), ("buy", "Cost: buy"), ("rent", "Cost: rent"))
#: how the status line states the basis the core ranked by (as ``advisor recommend`` does)
BASIS_TEXT = {"hour": "rent: on-demand $/GPU-hour × GPUs, and $/million output tokens",
              "purchase": "buy: purchase price (typical street price where sourced, else launch MSRP)",
              "headroom": "quality and headroom (no prices known for these)"}
SHOW = (("passing", "Passing, best first"), ("misses", "Closest misses"), ("all", "All candidates"))
MAX_ROWS = 300


#: hardware groups listed when grouped (each its best configuration and alternatives)
MAX_GROUPS = 60
#: devices ranked in the first look, beside the whole catalog (its rows in ~50 ms where 16 took ~90:
#: the two rankings share the memory system)
FIRST_LOOK = 8


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
    """The core's verdict (with margin / if the estimate holds / the first miss), with headroom on a pass."""
    if c.ok:
        extra = f" · headroom ×{c.headroom:.2f}" if c.headroom and math.isfinite(c.headroom) else ""
        return api.candidate_verdict(c) + extra
    return sep.join(reason_text(r) for r in c.failures) or "misses a requirement"


#: The verdict in a cell, and its colour (a pass at the band's edge, a pass only at the estimate, a miss).
VERDICT_CELL = {"margin": ("meets, with margin", "#2e9d3a"), "estimate": ("if the estimate holds", "#c98a1a"),
                "miss": ("misses", "#d23c3c")}


def _money(v):
    return None if v is None or (isinstance(v, float) and not math.isfinite(v)) else v


def columns(rank_of) -> list[Column]:
    """The table's columns; ``rank_of(candidate)`` is its place ("1", "1 ↳" for an alternative on the
    same hardware), given by the view that ranked it."""
    return [Column("#", rank_of, "Rank of the hardware; ↳ marks another configuration on the same hardware"),
            *COLUMNS]


COLUMNS = [
    Column("★", lambda c: "★" if c.pareto else "", "Pareto-optimal: nothing else is both cheaper and faster"),
    Column("Hardware", lambda c: c.hardware.name),
    Column("GPUs", lambda c: int(c.gpus * c.replicas), "All GPUs: replicas × GPUs per replica",
           row_tip=lambda c: c.label),
    Column("Layout", lambda c: c.split_text if c.gpus > 1 else "", "How one replica's GPUs split the model: tensor "
           "parallel (TP), pipeline stages (PP), data-parallel attention with experts spread whole (EP), and the "
           "nodes it spans"),
    Column("Power kW", lambda c: float(c.power_kw) if c.power_kw else None,
           "The deployment's maximum draw: its share of the server or rack these GPUs are sold in, at the "
           "vendor's maximum system power, else every GPU at its board power (hosts and network not counted)",
           row_tip=lambda c: f"{num(c.joules_per_token)} J per output token at the predicted throughput, at "
           f"{c.power_basis}" if c.joules_per_token else ""),
    Column("Quality", lambda c: c.quality, "The release format is the reference; else llama.cpp's KL divergence "
                                           "on Llama-3-8B, or unmeasured"),
    Column("Verdict", lambda c: VERDICT_CELL[c.tier][0], "Meets with margin: every target met at the pessimistic "
           "edge of its band. If the estimate holds: met at the prediction only (ranked after). Misses: see Reason",
           colour=lambda c: VERDICT_CELL[c.tier][1], row_tip=lambda c: reasons(c, "\n")),
    Column("Data", lambda c: api.EVIDENCE_WORDS.get(c.evidence, c.evidence),
           "measured: the runtime's calibration has rows of this hardware generation and format class; "
           "extrapolated: it has not; no data: the runtime's defaults (wide band)",
           row_tip=lambda c: api.EVIDENCE_TEXT.get(c.evidence, "")),
    Column("Runtime", lambda c: c.runtime.name),
    Column("Weights", lambda c: c.quant.name),
    Column("KV", lambda c: c.kv_dtype.name),
    Column("TTFT", lambda c: float(c.ttft_ms), "Time to first token at this load", fmt=duration_ms),
    Column("tok/s/user", lambda c: float(c.tok_s), "Decode speed per user"),
    Column("Aggregate tok/s", lambda c: float(c.throughput_tok_s), "Decode tokens per second, all users"),
    Column("$/hour", lambda c: _money(c.cost_usd_hour), "On-demand rent for all GPUs (basis and date in the row tip)", row_tip=lambda c: c.price_note),
    Column("$/M tok", lambda c: _money(c.usd_per_million_tokens),
           "Rent per million output tokens at the predicted throughput (how teams compare)",
           row_tip=lambda c: c.price_note),
    Column("Purchase $", lambda c: _money(c.cost_usd), "Purchase price for all GPUs (basis and date in the row tip)", row_tip=lambda c: c.price_note),
    Column("Price basis", lambda c: c.price_note or "no price", "Which price each figure is (street, MSRP, on-demand "
                                                                  "rate) and its date"),
    Column("Replicas", lambda c: int(c.replicas), "Data-parallel copies of the GPU group behind one endpoint"),
    Column("Technique", lambda c: c.technique, "What makes it pass when allowed: speculative decoding or "
                                               "partial offload"),
    Column("Reason", lambda c: reasons(c), "Why it passes or fails", row_tip=lambda c: reasons(c, "\n"),
           colour=lambda c: None if c.ok else "#d23c3c"),
    Column("Max users", lambda c: int(c.max_batch), "Users that fit in memory at the full context"),
    Column("Memory GB", lambda c: float(c.memory_needed_gb), "Needed per GPU (of usable)",
           row_tip=lambda c: f"{num(c.memory_needed_gb)} of {num(c.memory_usable_gb)} GB usable per GPU"),
    Column("Launch", lambda c: c.launch, "Command line to start it (select the row and press Ctrl+Shift+C)"),
]


class RecommendView(QWidget, RowsTab):
    def __init__(self, session, workers, parent=None):
        super().__init__(parent)
        self.session, self.workers = session, workers
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        bar = QHBoxLayout()
        self.filter = QLineEdit()
        self.filter.setPlaceholderText("Filter rows (any column)…")
        self.filter.setClearButtonEnabled(True)
        self.filter.setMinimumWidth(140)
        self.combo_show = QComboBox()
        for k, label in SHOW:
            self.combo_show.addItem(label, k)
        self.spin_max_gpus = QSpinBox()
        self.spin_max_gpus.setRange(1, 4096)
        self.spin_max_gpus.setValue(64)
        self.spin_max_gpus.setPrefix("≤ ")
        self.spin_max_gpus.setSuffix(" GPUs")
        self.spin_max_gpus.setToolTip("Most GPUs a candidate may use in all, replicas included (--max-gpus)")
        self.check_pareto = QCheckBox("Pareto only")
        self.check_pareto.setToolTip("Show only rows that nothing else beats on both cost and speed (★)")
        self.check_group = QCheckBox("By hardware")
        self.check_group.setChecked(True)
        self.check_group.setToolTip("The best configuration on each hardware, its alternatives (↳) below it, as "
                                    "advisor recommend lists them; off: every configuration in rank order")
        self.check_safe = QCheckBox("Safe margins")
        self.check_safe.setToolTip("Rank by the pessimistic end of each band")
        self.btn_load = QPushButton("&Load into inputs")
        self.btn_load.setToolTip("Make the selected row the current configuration (or double-click it)")
        self.btn_copy = QPushButton("Copy launch line")
        bar.addWidget(self.filter, 2)
        bar.addWidget(self.combo_show)
        bar.addWidget(self.spin_max_gpus)
        bar.addWidget(self.check_group)
        bar.addWidget(self.check_pareto)
        bar.addWidget(self.btn_load)
        bar.addWidget(self.btn_copy)
        lay.addLayout(bar)
        lay.addLayout(self._options_bar())
        self.status = QLabel("")
        self.status.setWordWrap(True)
        lay.addWidget(self.status)
        self.why_first = QLabel("")
        self.why_first.setObjectName("recommend_why_first")
        self.why_first.setWordWrap(True)
        self.why_first.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.why_first)
        #: place of each row shown (by id): "1" for the best on the first hardware, "1 ↳" for its alternatives
        self._rank: dict[int, str] = {}
        self.groups: list = []
        self.model = RowsModel(columns(lambda c: self._rank.get(id(c), "")), self)
        self.table, self.proxy = make_table(self.model)
        self.table.setObjectName("recommend_table")
        lay.addWidget(self.table, 1)
        self.rec: api.Shortlist | None = None   # what the table shows of the last ranking
        self.computing = False
        self.first_look = False   # the rows on screen are the first look, the whole ranking still coming
        self._dirty = True
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(120)
        self._timer.timeout.connect(self.compute)
        self.filter.textChanged.connect(self.proxy.setFilterFixedString)
        self.combo_show.currentIndexChanged.connect(self._fill)
        self.check_pareto.toggled.connect(self._fill)
        self.check_group.toggled.connect(self._fill)
        self.table.setContextMenuPolicy(Qt.ContextMenuPolicy.ActionsContextMenu)
        self.act_copy_launch = QAction("Copy launch line", self.table)
        self.act_copy_launch.triggered.connect(self.copy_launch)
        self.act_load = QAction("Load into inputs", self.table)
        self.act_load.triggered.connect(self.load_selected)
        self.act_export = QAction("Export deployment…", self.table)
        self.act_export.setToolTip("Write the selected row as a docker compose file, llm-d Helm values or the "
                                   "engine's per-node launch scripts")
        self.act_export.triggered.connect(self.export_selected)
        self.table.addAction(self.act_copy_launch)
        self.table.addAction(self.act_load)
        self.table.addAction(self.act_export)
        self.spin_max_gpus.valueChanged.connect(self.schedule)
        self.check_safe.toggled.connect(self.schedule)
        for w in (self.combo_cost_basis, self.combo_kind, self.combo_vendor):
            w.currentIndexChanged.connect(self.schedule)
        for w in (self.spin_context, self.spin_min_bits, self.spin_budget_usd, self.spin_budget_usd_hour, self.spin_think_s):
            w.valueChanged.connect(self.schedule)
        for w in (self.check_spec, self.check_offload, self.check_burst, self.check_nodes):
            w.toggled.connect(self.schedule)
        self.btn_load.clicked.connect(self.load_selected)
        self.btn_copy.clicked.connect(self.copy_launch)
        self.table.doubleClicked.connect(lambda _i: self.load_selected())
        for keys, slot in (("Ctrl+Shift+C", self.copy_launch), (Qt.Key.Key_Return, self.load_selected),
                           (Qt.Key.Key_Enter, self.load_selected)):
            sc = QShortcut(QKeySequence(keys), self.table, slot)
            sc.setContext(Qt.ShortcutContext.WidgetShortcut)  # only while the table has the focus
        session.sig_inputs_changed.connect(self._on_inputs_changed)
        self._last_req = None

    def _options_bar(self) -> QVBoxLayout:
        """The recommender's options (those of ``advisor recommend``) that the inputs panel does not hold."""
        self.combo_cost_basis = QComboBox()
        for key, label in COST_BASES:
            self.combo_cost_basis.addItem(label, key)
        self.combo_cost_basis.setToolTip("Rank by purchase price (buy) or on-demand rent (rent); automatic: rent for "
                                         "datacenter hardware, buy for consumer and Apple (--cost-basis)")
        self.combo_cost_basis.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        self.spin_min_bits = QSpinBox()
        self.spin_min_bits.setRange(1, 16)
        self.spin_min_bits.setValue(int(api.DEFAULT_MIN_BITS))
        self.spin_min_bits.setPrefix("≥ ")
        self.spin_min_bits.setSuffix("-bit")
        self.spin_min_bits.setToolTip("Quality floor: the lowest bit class of weight format accepted (the model's "
                                      "own release format always passes; --min-bits)")
        self.check_spec = QCheckBox("Speculative")
        self.check_spec.setToolTip("Allow speculative decoding: try a draft model on configurations too slow without it (--allow-spec)")
        self.check_offload = QCheckBox("Offload")
        self.check_offload.setToolTip("Allow offload: try partial offload to host RAM (llama.cpp --n-cpu-moe / -ngl) on "
                                      "configurations that do not fit (--allow-offload)")
        self.check_burst = QCheckBox("Burst")
        self.check_burst.setToolTip("Judge all users' prompts arriving at once (a static batch) instead of clients "
                                    "of a server (--burst)")
        self.spin_think_s = QDoubleSpinBox()
        self.spin_think_s.setRange(0, 3600)
        self.spin_think_s.setDecimals(0)
        self.spin_think_s.setSuffix(" s think")
        self.spin_think_s.setSpecialValueText("no think")
        self.spin_think_s.setToolTip("Seconds a user waits between a response and the next request (--think-s)")
        self.check_nodes = QCheckBox("Across nodes")
        self.check_nodes.setObjectName("recommend_across_nodes")
        self.check_nodes.setToolTip("Also try instances of 16–72 GPUs across nodes (TP 8 in pipeline stages; MoE: "
                                    "wide expert parallel). Tried anyway for models of 150B+ parameters and loads "
                                    "of 1,000+ users")
        self.spin_context = QSpinBox()
        self.spin_context.setRange(0, 10_000_000)
        self.spin_context.setSingleStep(1024)
        self.spin_context.setPrefix("context ")
        self.spin_context.setSuffix(" tok")
        self.spin_context.setSpecialValueText("context: default")
        self.spin_context.setGroupSeparatorShown(True)
        self.spin_context.setKeyboardTracking(False)
        self.spin_context.setObjectName("recommend_context")
        self.spin_context.setToolTip("The longest context every user must be able to reach: the KV cache and the "
                                     "launch line's context are sized for it (--context). Default: the CLI's, "
                                     f"{api.DEFAULT_CHAT_CONTEXT:,} tokens for chat (or the model's own, if shorter), or "
                                     "prompt + output + depth when a depth is set")
        self.combo_kind = QComboBox()
        self.combo_kind.addItem("All kinds", "")
        for kind in sorted({h.kind for h in self.session.cat.hardware.values()}):
            self.combo_kind.addItem(kind, kind)
        self.combo_kind.setToolTip("Only this kind of hardware (--hardware-kind)")
        self.combo_vendor = QComboBox()
        self.combo_vendor.addItem("All vendors", "")
        for vendor in sorted({h.vendor for h in self.session.cat.hardware.values()}):
            self.combo_vendor.addItem(vendor, vendor)
        self.combo_vendor.setToolTip("Only this vendor's hardware (--vendor)")
        self.spin_budget_usd = QDoubleSpinBox()
        self.spin_budget_usd.setRange(0, 1e8)
        self.spin_budget_usd.setDecimals(0)
        self.spin_budget_usd.setPrefix("≤ $")
        self.spin_budget_usd.setSpecialValueText("no $ cap")
        self.spin_budget_usd.setKeyboardTracking(False)
        self.spin_budget_usd.setToolTip("Purchase budget for all GPUs, USD (--budget-usd; 0 = none)")
        self.spin_budget_usd_hour = QDoubleSpinBox()
        self.spin_budget_usd_hour.setRange(0, 1e5)
        self.spin_budget_usd_hour.setDecimals(2)
        self.spin_budget_usd_hour.setPrefix("≤ $")
        self.spin_budget_usd_hour.setSuffix("/h")
        self.spin_budget_usd_hour.setSpecialValueText("no $/h cap")
        self.spin_budget_usd_hour.setKeyboardTracking(False)
        self.spin_budget_usd_hour.setToolTip("Rent budget for all GPUs, USD per hour (--budget-usd-hour; 0 = none)")
        # two rows, so that nothing is cut at a laptop's width: what is asked, then what is allowed
        asked, allowed = QHBoxLayout(), QHBoxLayout()
        for w in (self.spin_context, self.combo_cost_basis, self.spin_min_bits, self.combo_kind, self.combo_vendor,
                  self.check_safe):
            asked.addWidget(w)
        for w in (self.spin_budget_usd, self.spin_budget_usd_hour, self.check_spec, self.check_offload,
                  self.check_burst, self.check_nodes, self.spin_think_s):
            allowed.addWidget(w)
        asked.addStretch(1)
        allowed.addStretch(1)
        bar = QVBoxLayout()
        bar.setSpacing(2)
        bar.addLayout(asked)
        bar.addLayout(allowed)
        return bar

    def options(self) -> dict:
        """The options as `api.Requirements` fields (what the controls say)."""
        kind, vendor = self.combo_kind.currentData(), self.combo_vendor.currentData()
        return {"cost_basis": self.combo_cost_basis.currentData() or "",
                "min_bits": float(self.spin_min_bits.value()),
                "allow_spec": self.check_spec.isChecked(), "allow_offload": self.check_offload.isChecked(),
                "burst": self.check_burst.isChecked(), "think_s": float(self.spin_think_s.value()),
                "hardware_kinds": (kind,) if kind else (), "vendors": (vendor,) if vendor else (),
                "budget_usd": self.spin_budget_usd.value() or None,
                "budget_usd_hour": self.spin_budget_usd_hour.value() or None,
                "max_gpus": self.spin_max_gpus.value(), "safe": self.check_safe.isChecked(),
                "across_nodes": True if self.check_nodes.isChecked() else None}

    # ------------------------------------------------------------------
    def requirements(self) -> "api.Requirements":
        s = self.session
        cfg, t = s.cfg, s.targets
        wl = cfg.workload
        # the context asked for, else the CLI's default for chat (8k, or the model's own) unless a depth
        # says how long conversations grow
        context = self.spin_context.value() or ((wl.prompt_tokens + wl.output_tokens + wl.depth_tokens)
                                                if wl.depth_tokens else None)
        return api.Requirements(model=cfg.model, prompt_tokens=wl.prompt_tokens, output_tokens=wl.output_tokens,
                                context_tokens=context,
                                users=wl.batch, ttft_ms=t.ttft_ms or None, tok_s=t.tok_s or None, **self.options())

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
                tuple(sorted(self.options().items())), self.spin_context.value(), id(s.cat))

    def showEvent(self, event) -> None:  # noqa: N802
        super().showEvent(event)
        if self._dirty:
            self.schedule()

    def schedule(self) -> None:
        self._dirty = False
        self._timer.start()

    def compute(self) -> None:
        """Rank in the ranking processes (`ui.process`); a newer request makes this one stale. A first
        look at a few devices (those ranked best last time) comes in about a tenth of the time, and the
        whole catalog, ranked side by side in a process of its own, replaces it."""
        self._last_req = self._req_key()
        cat, req = self.session.cat, self.requirements()
        self.computing = True
        self.first_look = False
        self.status.setText(f"Ranking every configuration for {req.model.name}, {req.users} users…")
        first = self._first_look(req)
        kept = {"catalog": cat}
        try:
            if first is not None:
                # grouped (the default), the table shows only the groups: the first look builds no other rows
                rows = 0 if self.combo_show.currentData() == "passing" and self.check_group.isChecked() else MAX_ROWS
                self.workers.run_in_process(ranking.FIRST, ranking.first_look, (first, rows, MAX_GROUPS), kept,
                                            lambda result: self._on_first(result, first),
                                            on_error=lambda exc, _tb: log.info("first look failed: %s", exc))
            self.workers.run_in_process(ranking.ALL, ranking.shortlist, (req, MAX_ROWS, MAX_GROUPS), kept,
                                        self._on_done, on_error=self._on_error)
        except Exception as exc:  # noqa: BLE001 - a process that cannot start: said in the status line
            self._on_error(RuntimeError(f"the ranking process cannot start ({exc})"), "")

    def _first_look(self, req: "api.Requirements") -> "api.Requirements | None":
        """The request on a few devices: those ranked best last time, else the hardware on screen and
        the newest of its kind; None when the request names its hardware already."""
        if req.hardware:
            return None
        cat, on_screen = self.session.cat, self.session.cfg.hardware
        keys = [g.best.hardware.key for g in self.groups][:FIRST_LOOK]
        if not keys:
            kin = sorted((h for h in cat.hardware.values() if h.kind == on_screen.kind and h.key != on_screen.key),
                         key=lambda h: -(h.year or 0))
            keys = [on_screen.key] + [h.key for h in kin][:FIRST_LOOK - 1]
        keys = [k for k in dict.fromkeys(keys) if k in cat.hardware]
        return dataclasses.replace(req, hardware=tuple(keys)) if keys else None

    def _on_first(self, result: "api.Shortlist | None", first: "api.Requirements") -> None:
        if result is None or not self.computing:   # none of the few passes, or everything came first
            return
        self.rec, self.groups = result, result.groups
        self.first_look = True
        self._fill()
        self.status.setText(f"A first look at {len(first.hardware)} of {len(self.session.cat.hardware)} devices "
                            f"(those ranked best last time); ranking every configuration…")

    def _on_done(self, result: "api.Shortlist") -> None:
        self.computing = False
        self.first_look = False
        self.rec, self.groups = result, result.groups
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
        self._rank = {}
        grouped = mode == "passing" and self.check_group.isChecked()
        if mode == "misses":
            rows = rec.closest_misses(MAX_ROWS)
        elif mode == "all":
            rows = rec.top(MAX_ROWS) + rec.closest_misses(MAX_ROWS)
        elif grouped:
            rows = []
            for i, g in enumerate(self.groups, 1):
                self._rank[id(g.best)] = str(i)
                rows.append(g.best)
                for alt in g.alternatives:
                    self._rank[id(alt)] = f"{i} ↳"
                    rows.append(alt)
        else:
            rows = rec.top(MAX_ROWS)
        if not grouped:
            self._rank = {id(c): str(i) for i, c in enumerate(rows, 1) if c.ok}
        if self.check_pareto.isChecked():
            rows = [c for c in rows if c.pareto]
        self.model.set_rows(rows)
        fit_columns(self.table)
        self.why_first.setText(self.why_text())
        self.why_first.setVisible(bool(self.why_first.text()))
        basis = BASIS_TEXT.get(rec.cost_basis, rec.cost_basis)
        if rec.cost_basis_why and rec.cost_basis != "headroom":
            basis += f" ({rec.cost_basis_why})"
        what = "closest misses" if mode == "misses" else "rows"
        shown = f"showing {len(rows):,} {what}" + (" (the first)" if len(rows) >= MAX_ROWS else "")
        req = rec.requirements
        context = f"context {req.context:,} tokens" + (" (the default for chat; set the context to change)"
                                                       if req.context_is_default else "")
        if req.tok_s_default:
            context += f" · ≥ {req.tok_s:g} tok/s per user (the default for several users; set a speed to change)"
        self.status.setText(f"{context} · {rec.n_margin:,} of {len(rec):,} configurations meet the requirements with margin, "
                            f"{rec.n_passing - rec.n_margin:,} more only if the estimate holds · ranked by "
                            f"{basis} · {shown} · {rec.elapsed_ms:,.0f} ms")
        if rec.n_passing == 0 and mode == "passing":
            self.status.setText(self.status.text() + " — nothing passes: see Closest misses")

    def why_text(self) -> str:
        """The core's "Why #1" line: why the best hardware's configuration beats the next hardware's."""
        if len(self.groups) < 2 or self.rec is None:
            return ""
        return "Why #1: " + api.why_first(self.groups[0].best, self.groups[1].best, self.rec.cost_basis)

    def selected(self):
        return selected_row(self.table)

    def load_selected(self) -> None:
        c = self.selected()
        if c is not None and self.session.load_candidate(c):
            self.session.sig_message.emit(f"Loaded {c.label} · {c.runtime.name} · {c.quant.name}")

    def copy_launch(self) -> None:
        c = self.selected()
        if c is None:
            return
        if not c.launch:  # a hosted service or vendor appliance has no command line
            self.session.sig_message.emit(f"No launch line: {c.runtime.name} is a hosted service or vendor appliance")
            return
        QGuiApplication.clipboard().setText(c.launch)
        each = f" (on each of the {c.replicas} replicas, behind one load balancer)" if c.replicas > 1 else ""
        self.session.sig_message.emit(f"Launch line copied to the clipboard{each}")

    def export_selected(self, kind: str | None = None, folder: str | None = None) -> list:
        """Write the selected row as deployment files (asks for the kind and folder unless given);
        what cannot be written (a compose file for a plan across machines, a folder not writable) is
        said in the status bar and nothing else happens."""
        c = self.selected()
        if c is None or self.rec is None:
            return []
        if not c.launch:
            self.session.sig_message.emit(f"Nothing to export: {c.runtime.name} is a hosted service or vendor appliance")
            return []
        if kind is None:
            from PySide6.QtWidgets import QInputDialog

            kinds = list(api.EXPORT_KINDS)
            # a compose file where the whole plan fits one machine, else the engine's own launch scripts
            default = 0 if c.one_machine else 2
            kind, ok = QInputDialog.getItem(self, "Export deployment", "Files to write:", kinds, default, False)
            if not ok:
                return []
        if folder is None:
            from PySide6.QtWidgets import QFileDialog

            folder = QFileDialog.getExistingDirectory(self, f"Folder for the {kind} files")
            if not folder:
                return []
        try:
            written = api.export_deployment(c, self.rec.requirements, kind, folder)
        except api.AdvisorError as exc:
            self.session.sig_message.emit(f"Not exported: {exc}")
            return []
        self.session.sig_message.emit(f"Wrote {', '.join(p.name for p in written)} to {folder}")
        return written

    @property
    def busy(self) -> bool:
        return self.computing
