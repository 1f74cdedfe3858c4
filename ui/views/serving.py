"""Serving under load: the current configuration as a server with continuous batching.

The steady state for the users on screen (closed loop with think time, or a Poisson rate), or a
batch of requests sent at once (its time to the last answer, its outputs' lengths spread), and the
throughput–latency curve over concurrency 1, 2, 4 … until past saturation: aggregate throughput,
per-user decode speed and TTFT p90 against concurrency, with the point where the KV cache or the
max-sequences setting starts to queue users. One `api.concurrency_sweep` per input change (~1 ms a
point), so it is computed on the GUI thread.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pyqtgraph as pg
from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QCheckBox, QComboBox, QDoubleSpinBox, QHBoxLayout, QLabel, QSpinBox, QSplitter,
                               QVBoxLayout)

from advisor import api
from advisor.text.format import duration_ms, num
from ui.series import Dot, Dots, Series
from ui.views.curves import frame, title_legend
from ui.views.table import Column, RowsModel, RowsTab, make_table
from ui.widgets import LazyView, Steady, plot_colors, set_quietly, with_readout

COLUMNS = [
    Column("Users", lambda r: int(r.load.concurrency), "Concurrent clients (closed loop)"),
    Column("TTFT", lambda r: duration_ms(r.ttft_ms), "Mean time to first token"),
    Column("TTFT p90", lambda r: duration_ms(r.ttft_p90_ms), "90th percentile time to first token"),
    Column("ITL", lambda r: duration_ms(r.itl_ms), "Mean inter-token latency (one engine step)"),
    Column("tok/s per user", lambda r: float(r.tok_s_per_user), "Decode speed one user sees"),
    Column("Total tok/s", lambda r: float(r.throughput_tok_s), "Output tokens per second, all users"),
    Column("Requests/s", lambda r: float(r.request_rate_rps)),
    Column("Running", lambda r: float(r.running_batch), "Sequences decoding together"),
    Column("Waiting", lambda r: float(r.queue) if math.isfinite(r.queue) else float("inf"), "Users in the queue"),
    Column("Limited by", lambda r: r.bound, "What sets the pace: compute, memory bandwidth, KV capacity, "
                                            "max sequences, the prompts' share of each step (prefill "
                                            "budget), or the queue"),
]


def _band(low: float, high: float, fmt) -> str:
    """' (a–b)' in grey: the figure again at the profile's optimistic and pessimistic edges."""
    if not (math.isfinite(low) and math.isfinite(high)):
        return ""
    return f" <span style='color:#888'>({fmt(low)}–{fmt(high)})</span>"


def _spread_box(name: str, prefix: str, tip: str) -> QDoubleSpinBox:
    """A length distribution's spread: its coefficient of variation, 0 to 10 in quarters."""
    box = QDoubleSpinBox()
    box.setObjectName(name)
    box.setRange(0.0, 10.0)
    box.setDecimals(2)
    box.setSingleStep(0.25)
    box.setPrefix(prefix)
    box.setToolTip(tip)
    return box


class ServingView(LazyView, RowsTab):
    def __init__(self, session, parent=None):
        super().__init__(session, parent)
        #: the inputs the concurrency sweep on screen was computed for (it does not depend on the users)
        self._sweep_key: tuple | None = None
        col = plot_colors()
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        bar = QHBoxLayout()
        bar.addWidget(QLabel("Load:"))
        self.kind = QComboBox()
        self.kind.addItem("Users in a closed loop", "closed")
        self.kind.addItem("Poisson arrivals", "open")
        self.kind.addItem("A batch sent at once", "batch")
        self.kind.setToolTip("Closed loop: each user sends the next request when the last one is answered "
                             "(after the think time). Poisson: requests arrive at random at a fixed rate. A batch: "
                             "that many requests sent together (an offline job, or a benchmark with no rate limit), "
                             "timed to the last answer.")
        self.think = QDoubleSpinBox()
        self.think.setRange(0.0, 3600.0)
        self.think.setDecimals(1)
        self.think.setSuffix(" s think")
        self.think.setToolTip("Closed loop: seconds a user waits before sending the next request")
        self.rate = QDoubleSpinBox()
        self.rate.setRange(0.01, 100000.0)
        self.rate.setDecimals(2)
        self.rate.setValue(1.0)
        self.rate.setSuffix(" req/s")
        self.rate.setToolTip("Poisson arrivals: requests per second")
        self.requests = QSpinBox()
        self.requests.setObjectName("batch_requests")
        self.requests.setRange(1, 10_000_000)
        self.requests.setValue(1000)
        self.requests.setGroupSeparatorShown(True)
        self.requests.setSuffix(" requests")
        self.requests.setToolTip("A batch: how many requests are sent at once")
        self.out_spread = _spread_box(
            "output_spread", "output spread ",
            "A batch: how much the answers' lengths vary around the output input (the coefficient of variation "
            "of a log-normal; 0 = all the same, 1 = a reply that ends at any token with the same chance). The "
            "batch ends with its longest answers running at a small batch: the more they vary, the longer it takes.")
        self.spread = _spread_box(
            "prompt_spread", "prompt spread ",
            "How much prompt lengths vary around the prompt input: the coefficient of variation of a log-normal "
            "(0 = every prompt the same length; ~1 is typical of chat traces). A few long prompts set TTFT's "
            "tail and stall the queue.")
        # llama-server's host-memory prompt cache (--cache-ram): shown for runtimes that have one
        self.cache = QCheckBox("prompt cache")
        self.cache.setObjectName("prompt_cache")
        self.cache.setToolTip("The server keeps prompts in host memory (llama-server's default; off with "
                              "--cache-ram 0): before each new prompt it copies a finished request's whole KV "
                              "cache out to it, at about 1.3 GB/s, and every running sequence waits. It pays back "
                              "only where requests share long prefixes. A recommendation's launch line turns it "
                              "off unless they do.")
        self.kind.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToContents)
        for box, widest in ((self.out_spread, "output spread 10.00"), (self.spread, "prompt spread 10.00"),
                            (self.requests, "1,000,000 requests")):
            # room for the prefix and the widest value: a crowded bar squeezes them to their first letters
            box.setMinimumWidth(box.fontMetrics().horizontalAdvance(widest) + 36)
        for w in (self.kind, self.think, self.rate, self.requests, self.out_spread, self.spread, self.cache):
            bar.addWidget(w)
        bar.addStretch(1)
        lay.addLayout(bar)
        self.summary = QLabel()
        self.summary.setObjectName("serving_summary")
        self.summary.setWordWrap(True)
        self.summary.setTextFormat(Qt.TextFormat.RichText)
        lay.addWidget(Steady(self.summary))

        split = QSplitter(Qt.Orientation.Vertical)
        self.glw = pg.GraphicsLayoutWidget()
        self.glw.setObjectName("serving_plots")

        def new_plot(column, title, ylabel):
            p = self.glw.addPlot(row=0, col=column)
            p.chart_title = title   # its legend goes under it (`title_legend`), off the data
            p.setLogMode(True, True)
            p.setLabel("bottom", "concurrent users")
            p.setLabel("left", ylabel)
            for ax in ("bottom", "left"):
                p.getAxis(ax).enableAutoSIPrefix(False)
            p.setMenuEnabled(False)
            p.setMouseEnabled(x=False, y=False)
            p.disableAutoRange()
            return p

        self.p_speed = new_plot(0, "Throughput vs users", "tok/s")
        self.p_ttft = new_plot(1, "Time to first token vs users", "ms")
        # each line with a dot at every concurrency of the sweep (path items: see ui/series.py)
        self.total, self.per_user, self.ttft, self.itl = (
            Series(p, pen=pg.mkPen(col[c], width=2), name=name) for p, c, name in (
                (self.p_speed, "b", "all users"), (self.p_speed, "a", "per user"),
                (self.p_ttft, "b", "TTFT p90"), (self.p_ttft, "a", "inter-token latency")))
        self.dots = [Dots(p, col[c]) for p, c in ((self.p_speed, "b"), (self.p_speed, "a"), (self.p_ttft, "b"),
                                                  (self.p_ttft, "a"))]
        self.saturation = [pg.InfiniteLine(angle=90, pen=pg.mkPen(col["d"], width=1.5), label="queue starts",
                                           labelOpts={"position": 0.15, "color": col["d"]}) for _ in range(2)]
        self.now = [Dot(p, col["d"], size_px=10, name="now") for p in (self.p_speed, self.p_ttft)]
        for p, line in zip((self.p_speed, self.p_ttft), self.saturation):
            p.addItem(line, ignoreBounds=True)
            title_legend(p)
        self.charts = with_readout(self.glw, (self.p_speed, self.p_ttft))
        split.addWidget(self.charts)
        self.model = RowsModel(COLUMNS, self)
        self.table, self.proxy = make_table(self.model)
        self.table.setObjectName("serving_table")
        split.addWidget(self.table)
        split.setSizes([330, 200])
        lay.addWidget(split, 1)
        self.report: api.ServeReport | None = None
        self.sweep: list[api.ServeReport] = []
        for w in (self.kind, self.think, self.rate, self.requests, self.out_spread):
            (w.currentIndexChanged if w is self.kind else w.valueChanged).connect(lambda *_: self.refresh())
        # the spread is an input of the sizing (undoable, saved, seen by the result cards)
        self.spread.valueChanged.connect(
            lambda v: self.session.set_inputs(merge="prompt_spread", prompt_spread=float(v)))
        self.cache.toggled.connect(lambda on: self.session.set_inputs(prompt_cache=bool(on)))
        self._sync_enabled()

    def _sync_enabled(self) -> None:
        kind = self.kind.currentData()
        # the inputs of the load kind on screen, the others out of the way (the bar has little room)
        for w, own in ((self.think, "closed"), (self.rate, "open"), (self.requests, "batch"), (self.out_spread, "batch")):
            w.setEnabled(kind == own)
            w.setVisible(kind == own)

    def load(self) -> "api.Load":
        """The load on screen: the users input as clients, the rate, or a batch of requests sent at
        once; prompts of the input's mean length, spread as the session has it."""
        kind = self.kind.currentData()
        if kind == "open":
            return self.session.load("open", rate_rps=self.rate.value())
        if kind == "batch":
            load = self.session.load("offline", requests=int(self.requests.value()))
            mix = api.output_mix(load.output_tokens, float(self.out_spread.value()), points=api.BATCH_MIX_POINTS)
            return dataclasses.replace(load, **mix)
        return self.session.load(concurrency=float(self.session.cfg.workload.batch), think_s=self.think.value())

    def render(self) -> None:
        self._sync_enabled()
        set_quietly(self.spread, self.session.state.prompt_spread)   # undo, open, reload
        s = self.session
        self.cache.setVisible(api.prompt_cache_gb_s(s.cfg.runtime) > 0)
        if self.cache.isChecked() != s.state.prompt_cache:
            self.cache.blockSignals(True)
            self.cache.setChecked(s.state.prompt_cache)
            self.cache.blockSignals(False)
        cat, cfg = s.cat, s.cfg
        try:
            load = self.load()
            closed = s.load(think_s=load.think_s)
            # the sweep over 1, 2, 4 … users, only when an input other than the users changed: moving
            # the users moves the marker alone. It runs here, on the GUI thread: 3-4 ms (one kernel
            # call and one solve for every client count), where a worker cost a second paint and a
            # thread hand-off that together took longer than the sweep
            key = (id(cat), cfg.replace(workload=dataclasses.replace(cfg.workload, batch=1)), closed)
            new_sweep = key != self._sweep_key
            if new_sweep:
                self._sweep_key, self.sweep = None, []
                self.sweep = api.concurrency_sweep(cat, cfg, closed)
                self._sweep_key = key
            # the cards' server, or the sweep's point, is this one when the load is the same: solved once
            self.report = next((r for r in (s.serving, *self.sweep) if r is not None and r.load == load), None) \
                or api.serve(cat, cfg, load)
        except api.AdvisorError as exc:
            self.summary.setText(f"<span style='color:#d23c3c'>{exc}</span>")
            self.report, self.sweep, self._sweep_key = None, [], None
            self._draw([])
            return
        self.summary.setText(self._summary(self.report))
        if new_sweep:
            self._on_sweep(self.sweep)   # draws the curves and the marker
        else:
            self._mark_now()

    def _on_sweep(self, sweep) -> None:
        self.sweep = sweep
        self._draw([r for r in sweep if r.fits])

    @property
    def busy(self) -> bool:
        return False   # the sweep is computed in render (see there)

    def _mark_now(self) -> None:
        r = self.report
        if r is not None and r.fits and r.load.kind == "closed":
            self.now[0].set_point(r.load.concurrency, r.throughput_tok_s)
            self.now[1].set_point(r.load.concurrency, r.ttft_p90_ms)
        else:
            for item in self.now:
                item.set_point(None)

    def _summary(self, r: "api.ServeReport") -> str:
        if not r.fits:
            return f"<b>Does not fit.</b> {r.notes[0] if r.notes else ''}"
        load = r.load
        if load.kind == "offline" and load.requests:
            return self._batch_summary(r)
        who = (f"{load.concurrency:g} users" + (f" ({num(load.think_s)} s think)" if load.think_s else "")
               if load.kind == "closed" else f"{num(load.rate_rps)} requests/s")
        queue = "" if not r.queue else (" · <b>the queue grows without bound</b>" if math.isinf(r.queue)
                                         else f" · {num(r.queue)} waiting")
        notes = "".join(f"<br><span style='color:#888'>{n}</span>" for n in r.notes)
        if load.prompt_points:
            who += f", prompts {num(min(load.prompt_points))}–{num(max(load.prompt_points))} tokens"
        return (f"<b>{who}</b>: TTFT {duration_ms(r.ttft_ms)}{_band(r.ttft_low_ms, r.ttft_high_ms, duration_ms)} "
                f"(p90 {duration_ms(r.ttft_p90_ms)}) · ITL {duration_ms(r.itl_ms)}"
                f"{_band(r.itl_low_ms, r.itl_high_ms, duration_ms)} · "
                f"{num(r.tok_s_per_user)} tok/s per user · {num(r.throughput_tok_s)} tok/s in all"
                f"{_band(r.throughput_low_tok_s, r.throughput_high_tok_s, num)} · "
                f"{num(r.running_batch)} of {num(r.capacity)} running{queue} · limited by <b>{r.bound}</b>"
                f"<br>scheduler: up to {r.max_seqs:,} sequences, {r.chunk_tokens:,} tokens per step; the KV cache "
                f"holds {num(r.kv_capacity)} sequences at this length{notes}")

    def _batch_summary(self, r: "api.ServeReport") -> str:
        """A batch: when its last answer comes, with the band, and what its requests see meanwhile."""
        load = r.load
        done_s, fast, slow = r.batch_seconds()
        spread = (f", answers {num(min(load.output_points))}–{num(max(load.output_points))} tokens"
                  if load.output_points else "")
        notes = "".join(f"<br><span style='color:#888'>{n}</span>" for n in r.notes)
        return (f"<b>{load.requests:,} requests at once{spread}</b>: all answered in "
                f"<b>{duration_ms(done_s * 1e3)}</b>{_band(fast * 1e3, slow * 1e3, duration_ms)} · "
                f"{num(r.throughput_tok_s)} tok/s{_band(r.throughput_low_tok_s, r.throughput_high_tok_s, num)} · "
                f"TTFT {duration_ms(r.ttft_ms)} mean (p90 {duration_ms(r.ttft_p90_ms)}) · TPOT "
                f"{duration_ms(r.tpot_ms)} per request · between tokens {duration_ms(r.itl_ms)} mean, "
                f"{duration_ms(r.itl_p50_ms)} median · {r.capacity:,.0f} run at once, limited by <b>{r.bound}</b>"
                f"<br>scheduler: up to {r.max_seqs:,} sequences, {r.chunk_tokens:,} tokens per step; the KV cache "
                f"holds {num(r.kv_capacity)} sequences at this length. The chart is the same server under "
                f"users in a closed loop.{notes}")

    def _draw(self, rows: list) -> None:
        self.model.set_rows(rows)
        if not rows:
            for item in (self.total, self.per_user, self.ttft, self.itl):
                item.setData([], [])
            for dots in self.dots:
                dots.set_points([], [])
            for item in self.now:
                item.set_point(None)
            for line in self.saturation:
                line.hide()
            return
        users = np.array([r.load.concurrency for r in rows])
        total = np.array([r.throughput_tok_s for r in rows])
        per_user = np.array([r.tok_s_per_user for r in rows])
        ttft = np.array([r.ttft_p90_ms for r in rows])
        itl = np.array([r.itl_ms for r in rows])
        for line, dots, y in zip((self.total, self.per_user, self.ttft, self.itl), self.dots,
                                 (total, per_user, ttft, itl)):
            line.setData(users, y)
            dots.set_points(users, y)
        frame(self.p_speed, [users], [total, per_user])
        frame(self.p_ttft, [users], [ttft[np.isfinite(ttft)], itl])
        sat = next((r for r in rows if r.saturated), None)
        for line in self.saturation:
            if sat is None:
                line.hide()
            else:
                line.setValue(math.log10(max(sat.capacity, 1.0)))
                line.show()
        self._mark_now()

    def chart(self):
        return self.glw.scene(), self.glw
