"""Results at a glance: one card per figure (value, band, 100 % ceiling) with a "why?" that shows the
formula with this workload's numbers (api.explain) and the efficiency profile it used."""

from __future__ import annotations

import html
import math

from PySide6.QtCore import Qt
from PySide6.QtWidgets import (QFrame, QGridLayout, QHBoxLayout, QLabel, QTextBrowser, QToolButton, QVBoxLayout,
                               QWidget)

from advisor.text.format import duration_ms, num
from ui.widgets import Steady, plot_colors

CARDS = (  # name, title, explanation key
    ("fits", "Fits in memory", "memory"),
    ("ttft", "First token", "ttft"),
    ("decode", "Speed per user", "decode"),
    ("throughput", "All users", "throughput"),
    ("max_batch", "Max batch", "max_batch"),
    ("max_context", "Max context", "max_context"),
    ("bound", "Bound by", "bound"),
)


class Card(QFrame):
    def __init__(self, name: str, title: str, on_why, parent=None):
        super().__init__(parent)
        self.name = name
        self.setFrameShape(QFrame.Shape.StyledPanel)
        self.setObjectName(f"card_{name}")
        lay = QVBoxLayout(self)
        lay.setContentsMargins(8, 6, 8, 6)
        lay.setSpacing(1)
        top = QHBoxLayout()
        t = QLabel(title)
        t.setStyleSheet("font-size: 11px;")
        top.addWidget(t, 1)
        self.why = QToolButton()
        self.why.setText("why?")
        self.why.setAutoRaise(True)
        self.why.setToolTip(f"Show how {title.lower()} is computed, with this workload's numbers")
        self.why.clicked.connect(lambda: on_why(name))
        top.addWidget(self.why)
        lay.addLayout(top)
        self.value = QLabel("—")
        f = self.value.font()
        f.setPointSizeF(f.pointSizeF() * 1.45)
        f.setBold(True)
        self.value.setFont(f)
        self.value.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(Steady(self.value))
        self.detail = QLabel("")
        self.detail.setWordWrap(True)
        self.detail.setStyleSheet("font-size: 11px;")
        lay.addWidget(Steady(self.detail))

    def show_values(self, value: str, detail: str, colour: str = "", tooltip: str = "") -> None:
        if value != self.value.text():
            self.value.setText(value)
        style = f"color: {colour};" if colour else ""
        if style != self.value.styleSheet():
            self.value.setStyleSheet(style)
        if detail != self.detail.text():
            self.detail.setText(detail)
        self.setToolTip(tooltip or detail)


class ResultsView(QWidget):
    """Always visible above the tabs, so it redraws on every change (seven labels: cheap)."""

    def __init__(self, session, parent=None):
        super().__init__(parent)
        self.session = session
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 0)
        self.title = QLabel()
        self.title.setWordWrap(True)
        self.title.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(Steady(self.title))
        grid = QGridLayout()
        grid.setSpacing(6)
        self.cards: dict[str, Card] = {}
        for i, (name, title, _) in enumerate(CARDS):
            c = Card(name, title, self.show_why)
            self.cards[name] = c
            grid.addWidget(c, i // 4, i % 4)
        self.targets_card = Card("targets", "Targets", self.show_why)
        self.targets_card.why.hide()
        grid.addWidget(self.targets_card, 1, 3)
        lay.addLayout(grid)
        self.notes = QLabel()
        self.notes.setWordWrap(True)
        self.notes.setTextFormat(Qt.TextFormat.RichText)
        self.notes.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(Steady(self.notes))
        self.why_frame = QFrame()
        wl = QHBoxLayout(self.why_frame)
        wl.setContentsMargins(0, 0, 0, 0)
        self.why_box = QTextBrowser()
        self.why_box.setObjectName("why_box")
        self.why_box.setMinimumHeight(150)
        self.why_box.setMaximumHeight(240)
        self.why_box.setOpenLinks(False)
        wl.addWidget(self.why_box, 1)
        close = QToolButton()
        close.setText("✕")
        close.setAutoRaise(True)
        close.setToolTip("Hide the explanation (Esc)")
        close.clicked.connect(self.hide_why)
        wl.addWidget(close, 0, Qt.AlignmentFlag.AlignTop)
        self.why_frame.hide()
        lay.addWidget(self.why_frame)
        lay.addStretch(1)  # spare height goes below the figures, not between them
        self.why_shown = ""
        session.sig_results_changed.connect(self.render)
        self.render()

    def render(self) -> None:
        s = self.session
        p = s.prediction
        if p is None:
            return
        cfg = s.cfg
        gp = f"{p.gpus}× " if p.gpus > 1 else ""
        split = f" ({cfg.split})" if p.gpus > 1 else ""
        self.title.setText(f"<b>{html.escape(p.model)}</b> on {gp}<b>{html.escape(p.hardware)}</b>{split} · "
                           f"{html.escape(p.quant)} weights · {html.escape(p.kv_dtype)} KV · {html.escape(p.runtime)} · "
                           f"{p.batch} user{'s' if p.batch != 1 else ''}, {p.prompt_tokens:,} in / "
                           f"{p.output_tokens:,} out" + (f", depth {p.depth_tokens:,}" if p.depth_tokens else ""))
        meet = s.meets_targets()
        good, bad = "#2e9d3a", "#d23c3c"
        c = self.cards
        # each card: the value, one short line (band · 100 % ceiling), and the long version as tooltip
        if p.fits:
            c["fits"].show_values("Yes", f"{num(p.total_gb)} of {num(p.usable_gb)} GB · {num(p.usable_gb - p.total_gb)} "
                                  f"spare", good, f"Needs {num(p.total_gb)} GB of the {num(p.usable_gb)} GB usable "
                                  f"({num(p.per_gpu_total_gb)} of {num(p.per_gpu_usable_gb)} GB per GPU)")
        else:
            c["fits"].show_values("No", f"short by {num(p.shortfall_gb)} GB", bad,
                                  f"Needs {num(p.total_gb)} GB but only {num(p.usable_gb)} GB are usable: short by "
                                  f"{num(p.shortfall_gb)} GB")
        view = s.user_view()
        srv = s.serving
        ttft_col = {True: good, False: bad}.get(meet["ttft"], "")
        target = f"; target ≤ {duration_ms(s.targets.ttft_ms)}" if s.targets.ttft_ms > 0 else ""
        if srv is None:
            c["ttft"].show_values(duration_ms(p.ttft_ms), f"{_band_ms(p.ttft_low_ms, p.ttft_high_ms)} · 100 %: "
                                  f"{duration_ms(_ceiling_ttft(p))}", ttft_col,
                                  f"Band {_band_ms(p.ttft_low_ms, p.ttft_high_ms)}; at 100 % of the roofline "
                                  f"{duration_ms(_ceiling_ttft(p))}; prefill {num(p.prefill_tok_s)} tok/s, "
                                  f"{p.prefill_bound}-bound{target}")
        else:
            queue = f", {num(srv.queue)} waiting" if srv.queue else ""
            c["ttft"].show_values(duration_ms(view["ttft_ms"]), f"p90 under load · all at once: {duration_ms(p.ttft_ms)}",
                                  ttft_col,
                                  f"{p.batch} users as clients of the server (closed loop): TTFT p90 "
                                  f"{duration_ms(view['ttft_ms'])}, band {_band_ms(view['ttft_low_ms'], view['ttft_high_ms'])}; "
                                  f"{num(srv.running_batch)} of {num(srv.capacity)} running{queue}, limited by {srv.bound}. "
                                  f"If all {p.batch} prompts arrived at the same instant: {duration_ms(p.ttft_ms)}{target}")
        tok_col = {True: good, False: bad}.get(meet["tok_s"], "")
        target = f"; target ≥ {num(s.targets.tok_s)} tok/s" if s.targets.tok_s > 0 else ""
        c["decode"].show_values(f"{num(view['tok_s'])} tok/s", f"{_band(view['tok_s_low'], view['tok_s_high'])} · "
                                f"100 %: {num(p.decode_ceiling_tok_s)}", tok_col,
                                f"Band {_band(view['tok_s_low'], view['tok_s_high'])} tok/s; at 100 % of the "
                                f"roofline {num(p.decode_ceiling_tok_s)} tok/s"
                                + (" (one token per engine step under load)" if srv is not None else "") + target)
        if srv is None:
            lo, hi = p.decode_low_tok_s * p.batch, p.decode_high_tok_s * p.batch
            c["throughput"].show_values(f"{num(p.throughput_tok_s)} tok/s", f"{_band(lo, hi)} · {p.batch} user{'s' if p.batch != 1 else ''}",
                                        tooltip=f"{p.batch} users × {num(p.decode_tok_s)} tok/s each; band {_band(lo, hi)}")
        else:
            c["throughput"].show_values(f"{num(srv.throughput_tok_s)} tok/s", f"{p.batch} users · {num(srv.request_rate_rps)} req/s",
                                        tooltip=f"Output tokens per second of the server with {p.batch} users in a closed "
                                                f"loop ({num(srv.request_rate_rps)} requests/s)")
        c["max_batch"].show_values(num(int(p.max_batch)) if p.max_batch >= 1 else "—", f"knee ≈ {num(p.knee_batch)}",
                                   "" if p.max_batch >= 1 else bad,
                                   f"{p.max_batch:,} users fit at this context before the KV cache is full; decode "
                                   f"turns compute-bound from a batch of about {num(p.knee_batch)}")
        c["max_context"].show_values(f"{num(int(p.max_context))} tok" if p.max_context >= 1 else "—",
                                     f"native {cfg.model.native_context:,}",
                                     "" if p.max_context >= 1 else bad,
                                     tooltip=f"The longest context one user can have in the memory left; the model "
                                             f"was trained for {cfg.model.native_context:,} tokens")
        if not p.fits:
            # the speeds of a configuration that does not fit are what it would reach if it did: greyed,
            # and said so first, never read as an answer
            muted = plot_colors()["muted"]
            for name in ("ttft", "decode", "throughput"):
                card = c[name]
                card.show_values(card.value.text(), f"does not fit — if it did: {card.detail.text()}", muted,
                                 f"Does not fit in memory (short by {num(p.shortfall_gb)} GB): this is the figure it "
                                 f"would reach if it did. {card.toolTip()}")
        dtype = p.compute_dtype or "?"
        c["bound"].show_values(p.bound.capitalize(), f"decode · prefill: {p.prefill_bound}", tooltip=(
            f"Decode is {p.bound}-bound, prefill {p.prefill_bound}-bound; the device gives {num(p.bandwidth_gb_s)} GB/s "
            f"and {num(p.peak_tflops)} TFLOP/s at {dtype}"))
        t = s.targets
        if t.ttft_ms <= 0 and t.tok_s <= 0:
            self.targets_card.show_values("None set", "set them in the inputs")
        elif not p.fits:
            self.targets_card.show_values("Missed", "does not fit in memory", bad)
        else:
            missed = [k for k, v in meet.items() if v is False]
            self.targets_card.show_values("Missed" if missed else "Met", ", ".join(
                ({"ttft": "TTFT", "tok_s": "speed per user"}[k] for k in missed)) or "every target met",
                bad if missed else good)
        notes = list(p.notes)
        self.notes.setText(" · ".join(html.escape(n, quote=False) for n in notes) if notes else "")
        self.notes.setVisible(bool(notes))
        if self.why_shown:
            self.show_why(self.why_shown)

    def show_why(self, name: str) -> None:
        """Show the explanation behind a card (the formula with this workload's numbers)."""
        s = self.session
        key = dict((n, k) for n, _, k in CARDS).get(name, name)
        ex = s.explanations().get(key)
        p = s.prediction
        self.why_shown = name
        parts = []
        if ex is not None:
            parts.append(f"<b>{html.escape(ex.title)}</b>")
            if ex.formula:
                parts.append(f"<code>{html.escape(ex.formula)}</code>")
            if ex.text:
                parts.append(html.escape(ex.text).replace("\n", "<br>"))
        else:
            parts.append(f"<b>{html.escape(name)}</b>: no explanation available")
        if p is not None:
            said = (ex.text or "") if ex is not None else ""
            if "Efficiency profile" not in said:
                basis = html.escape(p.efficiency_basis or "default efficiency profile")
                cal = "calibrated against measurements" if p.calibrated else "not calibrated against measurements"
                parts.append(f"<i>Efficiency profile: {basis} ({cal}).</i>")
            # the notes say when the profile is borrowed from other hardware or extrapolated
            for n in p.notes:
                if n not in said:
                    parts.append(f"<i>Note: {html.escape(n, quote=False)}</i>")
        self.why_box.setHtml("<br>".join(parts))
        self.why_frame.show()

    def hide_why(self) -> None:
        self.why_shown = ""
        self.why_frame.hide()


def _band(lo: float, hi: float) -> str:
    return f"{num(lo)}–{num(hi)}"


def _band_ms(lo: float, hi: float) -> str:
    return f"{duration_ms(lo)}–{duration_ms(hi)}"


def _ceiling_ttft(p) -> float:
    """TTFT at 100 % of the roof: the prompt at the prefill ceiling."""
    if not p.prefill_ceiling_tok_s or not math.isfinite(p.prefill_ceiling_tok_s):
        return math.nan
    return p.ttft_ms * p.prefill_tok_s / p.prefill_ceiling_tok_s
