"""The PDF sizing report: `ReportContent` (advisor.api, built in the core) rendered with QPdfWriter.

    write_report(content, path, paper=None) -> Path      CLI, tests, scripts (makes a QApplication if none)
    export_report(parent_widget, session)                the app: save dialog, its own process, progress

Layout: A4 or Letter portrait (default from the locale), a running header and "page N of M" footer
drawn per page, one font family throughout; text and table cells are QTextDocuments laid out at the
writer's resolution; tables break only between rows and repeat their header; charts are the
pyqtgraph scenes of `ui.report_charts`, recorded as QPictures and played back as vector paths.
The file is written to a temporary name in the target folder and renamed over the target when
complete, so a failed or unwritable export leaves nothing behind.
"""

from __future__ import annotations

import dataclasses
import html
import os
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import Callable

from PySide6.QtCore import QLocale, QMarginsF, QObject, QRectF, Qt, Signal
from PySide6.QtGui import (QColor, QFont, QFontDatabase, QPageLayout, QPageSize, QPainter, QPdfWriter, QPen,
                           QTextDocument, QTextOption)

from advisor import __version__, api

PAPERS = {"a4": QPageSize.PageSizeId.A4, "letter": QPageSize.PageSizeId.Letter}
#: the writer's coordinate unit: 1/RES inch. Vector output either way; at 120 dpi the charts' one-pixel
#: (cosmetic) pens print at about 0.2 mm, and a scene pixel maps to about one device unit.
RES = 120
MARGIN_MM = (17.0, 18.0, 17.0, 16.0)   # left, top, right, bottom
HEADER_GAP_MM = 7.0
BODY_PT, SMALL_PT, TABLE_PT, H1_PT, H2_PT, TITLE_PT, ANSWER_PT = 9.0, 7.6, 7.4, 13.0, 10.5, 20.0, 12.0
INK, MUTED, RULE, SHADE, ACCENT = "#222222", "#666666", "#b8b8b8", "#eef1f5", "#1f6fd1"
LETTER_TERRITORIES = {"UnitedStates", "Canada", "Mexico", "Chile", "Colombia", "Philippines", "Venezuela",
                      "CostaRica", "Guatemala", "PuertoRico", "Panama", "DominicanRepublic", "ElSalvador"}


class ReportError(api.AdvisorError):
    """A report could not be written (bad path, unwritable folder, bad paper); the message is one line."""


def default_paper(locale: QLocale | None = None) -> str:
    """'letter' where the locale uses US paper (US, Canada, Mexico, …), else 'a4'."""
    loc = locale or QLocale()
    try:
        territory = loc.territory().name
    except AttributeError:  # Qt < 6.2
        territory = loc.country().name
    if territory in LETTER_TERRITORIES or loc.measurementSystem() == QLocale.MeasurementSystem.ImperialUSSystem:
        return "letter"
    return "a4"


def ensure_app():
    """The running QApplication, or a new one (offscreen where there is no display)."""
    from PySide6.QtWidgets import QApplication

    app = QApplication.instance()
    if app is None:
        if sys.platform.startswith("linux") and not (os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")):
            os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
        app = QApplication([sys.argv[0] if sys.argv else "advisor"])
    return app


# ---- paths ----------------------------------------------------------------------------------------

def _check_target(path) -> Path:
    """The absolute target path, or `ReportError` saying why it cannot be written."""
    if path is None or not str(path).strip():
        raise ReportError("no output file given for the report")
    p = Path(os.path.expanduser(str(path)))
    if p.is_dir():
        raise ReportError(f"{p} is a folder; give a file name such as {p / 'report.pdf'}")
    from advisor import api

    try:
        p = api.output_target(p)   # a link written through; a device, pipe or socket refused
    except api.AdvisorError as exc:
        raise ReportError(str(exc)) from None
    folder = p.parent if str(p.parent) else Path(".")
    if not folder.is_dir():
        raise ReportError(f"cannot write the report to {p}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ReportError(f"cannot write the report to {p}: folder {folder} is not writable")
    if p.exists() and not os.access(p, os.W_OK):
        raise ReportError(f"cannot write the report to {p}: the file is read-only")
    return p.absolute()


# ---- layout items ---------------------------------------------------------------------------------

@dataclass
class _Item:
    """Something placed on a page: its height, how it draws at (x, y), and pagination hints."""

    height: float
    draw: Callable[[QPainter, float, float], None]
    space_before: float = 0.0
    keep_with_next: bool = False
    page_break: bool = False
    repeat: "list[_Item]" = field(default_factory=list)   # a table row: the header to repeat on a new page
    is_header: bool = False


class _Doc:
    """Builds QTextDocuments at the writer's resolution, in the report's fonts."""

    def __init__(self, device: QPdfWriter, width: float):
        self.device = device
        self.width = width
        self.u = RES / 72.0                       # device units per point
        families = QFontDatabase.families()
        self.family = "DejaVu Sans" if "DejaVu Sans" in families else QFont().family()
        fixed = QFontDatabase.systemFont(QFontDatabase.SystemFont.FixedFont).family()
        self.mono = "DejaVu Sans Mono" if "DejaVu Sans Mono" in families else fixed

    def doc(self, html_text: str, width: float | None = None, pt: float = BODY_PT, mono: bool = False,
            wrap_anywhere: bool = True) -> QTextDocument:
        d = QTextDocument()
        d.documentLayout().setPaintDevice(self.device)
        d.setUseDesignMetrics(True)
        f = QFont(self.mono if mono else self.family)
        f.setPointSizeF(pt)
        d.setDefaultFont(f)
        d.setDocumentMargin(0)
        opt = QTextOption()
        opt.setWrapMode(QTextOption.WrapMode.WrapAtWordBoundaryOrAnywhere if wrap_anywhere
                        else QTextOption.WrapMode.WordWrap)
        d.setDefaultTextOption(opt)
        d.setDefaultStyleSheet(f"body, p, li, td {{ color: {INK}; }} .muted {{ color: {MUTED}; }} "
                               f"code {{ font-family: '{self.mono}'; }}")
        d.setHtml(html_text)
        d.setTextWidth(self.width if width is None else width)
        return d

    def ideal_width(self, html_text: str, pt: float, bold: bool = False) -> float:
        d = self.doc(f"<b>{html_text}</b>" if bold else html_text, width=-1, pt=pt)
        return d.idealWidth()


def _draw_doc(d: QTextDocument):
    def draw(p: QPainter, x: float, y: float) -> None:
        p.save()
        p.translate(x, y)
        d.drawContents(p)
        p.restore()
    return draw


def _e(text) -> str:
    return html.escape(str(text))


class _Builder:
    """The report as a flat list of `_Item`s, in order."""

    def __init__(self, docs: _Doc):
        self.d = docs
        self.items: list[_Item] = []
        self.u = docs.u

    # text
    def para(self, html_text: str, pt: float = BODY_PT, before: float = 4.0, keep: bool = False, mono=False,
             indent: float = 0.0) -> None:
        d = self.d.doc(html_text, width=self.d.width - indent * self.u, pt=pt, mono=mono)
        draw = _draw_doc(d)
        self.items.append(_Item(d.size().height(), (lambda p, x, y: draw(p, x + indent * self.u, y)),
                                before * self.u, keep))

    def heading(self, text: str, level: int = 1) -> None:
        pt = H1_PT if level == 1 else H2_PT
        colour = ACCENT if level == 1 else INK
        self.para(f"<b style='color:{colour}'>{_e(text)}</b>", pt=pt, before=14 if level == 1 else 9, keep=True)

    def bullets(self, lines, pt: float = BODY_PT) -> None:
        for line in lines:
            d = self.d.doc(_e(line), width=self.d.width - 12 * self.u, pt=pt)
            bullet = self.d.doc("•", width=10 * self.u, pt=pt)
            draw, bdraw = _draw_doc(d), _draw_doc(bullet)

            def both(p, x, y, draw=draw, bdraw=bdraw):
                bdraw(p, x + 2 * self.u, y)
                draw(p, x + 12 * self.u, y)
            self.items.append(_Item(d.size().height(), both, 2.5 * self.u))

    def boxed(self, html_text: str, pt: float = ANSWER_PT) -> None:
        pad = 7 * self.u
        d = self.d.doc(html_text, width=self.d.width - 2 * pad, pt=pt)
        draw = _draw_doc(d)
        h = d.size().height() + 2 * pad

        def box(p, x, y):
            p.save()
            p.setPen(QPen(QColor(ACCENT), 0.8 * self.u))
            p.setBrush(QColor("#eaf2fc"))
            p.drawRoundedRect(QRectF(x, y, self.d.width, h), 3 * self.u, 3 * self.u)
            p.restore()
            draw(p, x + pad, y + pad)
        self.items.append(_Item(h, box, 8 * self.u))

    def page_break(self) -> None:
        self.items.append(_Item(0, lambda p, x, y: None, page_break=True))

    def space(self, pt: float) -> None:
        self.items.append(_Item(pt * self.u, lambda p, x, y: None))

    # tables
    def table(self, t, widths: list[float] | None = None, pt: float = TABLE_PT, zebra: bool = True,
              header: bool = True, first_bold: bool = False) -> None:
        """A table that breaks only between rows; its header repeats on each page it spans."""
        if t.title:
            self.para(f"<b>{_e(t.title)}</b>", pt=BODY_PT, before=8, keep=True)
        pad_x, pad_y = 3.0 * self.u, 2.2 * self.u
        n = len(t.header)
        W = self.d.width
        if widths is None:
            widths = self._fit_widths(t, pt, pad_x)
        else:
            total = sum(widths)
            widths = [w / total * W for w in widths]

        def row_item(cells, is_header=False, shade=False) -> _Item:
            docs = []
            for i, c in enumerate(cells):
                text = _e(c)
                if is_header:
                    text = f"<b>{text}</b>"
                elif first_bold and i == 0:
                    text = f"<b>{text}</b>"
                docs.append(self.d.doc(text, width=max(widths[i] - 2 * pad_x, 4), pt=pt))
            h = max(d.size().height() for d in docs) + 2 * pad_y

            def draw(p, x, y, docs=docs, h=h):
                p.save()
                if is_header or shade:
                    p.fillRect(QRectF(x, y, W, h), QColor("#dde3ea" if is_header else SHADE))
                p.setPen(QPen(QColor(RULE), 0.5 * self.u))
                p.drawLine(x, y + h, x + W, y + h)
                p.restore()
                cx = x
                for d, w in zip(docs, widths):
                    _draw_doc(d)(p, cx + pad_x, y + pad_y)
                    cx += w
            return _Item(h, draw, is_header=is_header)

        head = [row_item(t.header, is_header=True)] if header else []
        if head:
            head[0].keep_with_next = True
            self.items.append(head[0])
        for k, r in enumerate(t.rows):
            cells = list(r) + [""] * (n - len(r))
            it = row_item(cells, shade=zebra and k % 2 == 1)
            it.repeat = head
            self.items.append(it)
        if t.note:
            self.para(f"<span class='muted'>{_e(t.note)}</span>", pt=SMALL_PT, before=3)

    def _fit_widths(self, t, pt: float, pad_x: float) -> list[float]:
        """Column widths: each column's natural width, the widest ones capped so the table fits."""
        W = self.d.width
        n = len(t.header)
        ideal = []
        for i in range(n):
            texts = [str(r[i]) for r in t.rows if i < len(r)]
            words = max([self.d.ideal_width(_e(w), pt) for c in texts + [t.header[i]] for w in c.split()[:40]] or [0])
            cells = max([self.d.ideal_width(_e(c), pt) for c in texts] or [0])
            headw = self.d.ideal_width(_e(t.header[i]), pt, bold=True)
            ideal.append((max(cells, min(headw, 70 * self.u)) + 2 * pad_x + 1, min(words, 90 * self.u) + 2 * pad_x))
        want = [a for a, _ in ideal]
        floor = [max(b, 28 * self.u) for _, b in ideal]
        if sum(want) <= W:
            return [w * W / sum(want) for w in want]
        # water-fill: cap the widest columns at a common width, never below a column's longest word
        lo, hi = 0.0, max(want)
        for _ in range(40):
            cap = (lo + hi) / 2
            if sum(max(min(w, cap), f) for w, f in zip(want, floor)) > W:
                hi = cap
            else:
                lo = cap
        out = [max(min(w, lo), f) for w, f in zip(want, floor)]
        return [w * W / sum(out) for w in out]

    # charts
    def chart(self, chart) -> None:
        scale = self.d.width / chart.width
        h = chart.height * scale

        def draw(p, x, y, chart=chart, scale=scale):
            p.save()
            p.translate(x, y)
            p.scale(scale, scale)
            p.setClipRect(QRectF(0, 0, chart.width, chart.height))
            # a QPicture plays back scaled by the device's resolution over its own (screen) one: undo that
            k = chart.picture.logicalDpiX() / float(p.device().logicalDpiX() or RES)
            p.scale(k, k)
            p.drawPicture(0, 0, chart.picture)
            p.restore()
        self.items.append(_Item(h, draw, 6 * self.u, keep_with_next=True))
        self.para(f"<span class='muted'>{_e(chart.caption)}</span>", pt=SMALL_PT, before=2)


# ---- the report's sections ------------------------------------------------------------------------

def _build(b: _Builder, content, charts) -> None:
    c = content
    b.para(f"<span style='color:{MUTED}'>LLM hardware sizing report</span>", pt=BODY_PT, before=0)
    b.para(f"<b>{_e(c.title)}</b>", pt=TITLE_PT, before=2)
    b.heading("The question", 2)
    b.table(api.ReportTable("", ("", ""), tuple(c.question)), widths=[1, 4.2], zebra=False, header=False,
            first_bold=True, pt=BODY_PT - 0.5)
    b.heading("The answer", 2)
    b.boxed(_e(c.answer))
    b.table(c.figures, widths=[2.3, 1.1, 1.6, 3.4], pt=TABLE_PT + 0.3)
    b.space(6)
    meta = (("report made", c.created), ("tool", f"advisor {c.version}"),
            ("catalog data", f"{c.data_date}: {c.data_date_note}"),
            ("chosen configuration", f"{c.label}, {c.config.kv_dtype.name} KV cache"))
    b.table(api.ReportTable("", ("", ""), meta), widths=[1, 4.2], zebra=False, header=False, first_bold=True,
            pt=SMALL_PT)

    if c.recommendations is not None or c.rejected is not None:
        b.page_break()
        b.heading("Recommendations")
        if c.recommendations is not None:
            t = c.recommendations
            # #, configuration, TTFT, tok/s per user, total tok/s, GB per GPU, room, headroom, cost, quality,
            # verdict, data: the configuration gets the room its names need (fitted widths squeeze it into
            # one word per line and the table runs a page longer)
            b.table(t, widths=[0.25, 1.8, 1.0, 1.0, 0.62, 0.85, 0.66, 0.98, 0.85, 1.13, 0.8, 1.2]
                    if len(t.header) == 12 else None, pt=TABLE_PT - 0.6)
        if c.rejected is not None:
            t = c.rejected
            b.table(t, widths=[2.7, 0.85, 0.85, 1.05, 0.8, 3.4] if len(t.header) == 6 else None)

    b.page_break()
    b.heading(f"The chosen configuration: {c.label}")
    for ch in charts:
        if ch.key != "measured":
            b.chart(ch)

    if c.measured is not None:
        b.heading("Measured on your machine")
        b.para("Your own benchmark results beside the predictions for the same workload and load "
               "(advisor compare-measured; the app's Measured tab).", before=2)
        mc = next((ch for ch in charts if ch.key == "measured"), None)
        if mc is not None:
            b.chart(mc)
        b.table(c.measured, widths=[1.0, 1.5, 0.8, 0.8, 1.1, 0.6, 2.2], pt=TABLE_PT)

    if c.what_ifs:
        b.heading("What if")
        b.para("A serving technique applied to the chosen configuration, at the same workload "
               "(chosen on the app's What-ifs tab).", before=2)
        for t in c.what_ifs:
            b.table(t, widths=[2.3, 1.3, 1.3, 1.3], pt=TABLE_PT + 0.3, first_bold=True)

    b.heading("Launch command")
    b.para(_e(c.launch) if c.launch else "<i>this runtime has no launch template in the catalog</i>",
           pt=BODY_PT - 0.8, mono=True, before=4)
    b.para(f"<span class='muted'>{_e(c.launch_note)}</span>", pt=SMALL_PT, before=3)

    b.heading("Method and assumptions")
    b.para("Each figure comes from a roofline of the device with efficiencies fitted to public measurements. "
           "The formulas below carry this workload's numbers.", before=2)
    for ex in c.explanations:
        b.heading(ex.title, 2)
        b.para(_e(ex.formula), pt=BODY_PT - 1.0, mono=True, before=2, keep=True)
        for k, part in enumerate(ex.text.split("\n")):
            b.para(_e(part), before=3)
    b.table(c.profile, widths=[1.3, 4], pt=TABLE_PT + 0.3, first_bold=True)
    b.heading("What the bands mean", 2)
    b.para(_e(c.bands))
    b.heading("Not modelled", 2)
    b.bullets(c.not_modelled)
    b.heading("Notes on this prediction", 2)
    b.bullets(c.notes or ("none: the profile is measured on this hardware group and the configuration fits",))

    b.heading("Sources")
    b.para("Every catalog figure the report uses, with where it comes from (as recorded in the catalog).", before=2)
    rows = tuple((s.section, s.name, s.figures, s.source) for s in c.sources)
    b.table(api.ReportTable("", ("kind", "entry", "figures used", "source"), rows), widths=[0.9, 1.3, 2.4, 4.2],
            pt=SMALL_PT - 0.4)


def _paginate(items: list[_Item], top: float, bottom: float) -> list[list[tuple[float, _Item]]]:
    pages: list[list[tuple[float, _Item]]] = [[]]
    y = top
    for i, it in enumerate(items):
        if it.page_break:
            if pages[-1]:
                pages.append([])
                y = top
            continue
        before = it.space_before if pages[-1] else 0.0
        need = before + it.height
        j = i
        while items[j].keep_with_next and j + 1 < len(items) and not items[j + 1].page_break:
            j += 1
            need += items[j].space_before + items[j].height
            if need > bottom - top:
                break
        if y + need > bottom and pages[-1]:
            pages.append([])
            y = top
            before = 0.0
            if it.repeat and not it.is_header:
                for h in it.repeat:
                    pages[-1].append((y, h))
                    y += h.height
        y += before
        pages[-1].append((y, it))
        y += it.height
    return [p for p in pages if p]


def _decorate(p: QPainter, docs: _Doc, content, page: int, pages: int, width: float, height: float,
              margins: tuple[float, float, float, float]) -> None:
    """The running header and the footer with the page number, drawn on every page."""
    u = docs.u
    left, top, right, bottom = margins
    head_l = docs.doc(f"<span style='color:{MUTED}'>{_e(content.title)} — {_e(content.label)}</span>",
                      width=(width - left - right) * 0.75, pt=SMALL_PT)
    head_r = docs.doc(f"<div align='right' style='color:{MUTED}'>{_e(content.created)}</div>",
                      width=(width - left - right) * 0.25, pt=SMALL_PT)
    y = top - HEADER_GAP_MM / 25.4 * RES - head_l.size().height()
    _draw_doc(head_l)(p, left, y)
    _draw_doc(head_r)(p, left + (width - left - right) * 0.75, y)
    p.save()
    p.setPen(QPen(QColor(RULE), 0.6 * u))
    line_y = top - HEADER_GAP_MM / 25.4 * RES + 2.5 * u
    p.drawLine(left, line_y, width - right, line_y)
    p.restore()
    foot = docs.doc(f"<table width='100%'><tr><td style='color:{MUTED}'>advisor {_e(content.version)} · catalog data "
                    f"{_e(content.data_date)}</td><td align='right' style='color:{MUTED}'>Page {page} of {pages}"
                    f"</td></tr></table>", width=width - left - right, pt=SMALL_PT)
    _draw_doc(foot)(p, left, height - bottom + 6 * u)


# ---- writing --------------------------------------------------------------------------------------

def write_pdf(content, charts, path, paper: str | None = None,
              progress: Callable[[str], None] | None = None) -> Path:
    """Render ``content`` with pre-built ``charts`` (see `ui.report_charts.build_charts`) into ``path``.
    Touches no widget. Atomic: a temporary file renamed over ``path``."""
    return _drive(_pdf_steps(content, charts, path, paper), progress)


def _drive(steps, progress: Callable[[str], None] | None):
    """Run a generator of progress lines to its end, handing each line to ``progress``; its return value."""
    say = progress or (lambda msg: None)
    while True:
        try:
            say(next(steps))
        except StopIteration as finished:
            return finished.value


def _pdf_steps(content, charts, path, paper: str | None):
    """`write_pdf` as a generator: yields what it is doing, returns the path written."""
    paper = (paper or default_paper()).lower()
    if paper not in PAPERS:
        raise ReportError(f"paper must be one of {', '.join(PAPERS)}, got {paper!r}")
    target = _check_target(path)
    try:
        fd, tmp = tempfile.mkstemp(prefix=f".{target.stem}-", suffix=".pdf.part", dir=str(target.parent))
        os.close(fd)
    except OSError as exc:
        raise ReportError(f"cannot write the report to {target}: {exc.strerror or exc}") from None
    try:
        writer = QPdfWriter(tmp)
        writer.setResolution(RES)
        writer.setPageLayout(QPageLayout(QPageSize(PAPERS[paper]), QPageLayout.Orientation.Portrait,
                                         QMarginsF(0, 0, 0, 0), QPageLayout.Unit.Millimeter))
        writer.setTitle(content.title)
        writer.setCreator(f"advisor {__version__}")
        writer.setAuthor("advisor")
        full = writer.pageLayout().fullRectPixels(RES)
        width, height = float(full.width()), float(full.height())
        mm = RES / 25.4
        margins = tuple(m * mm for m in MARGIN_MM)
        left, top, right, bottom = margins
        docs = _Doc(writer, width - left - right)
        yield "laying out the text and tables"
        b = _Builder(docs)
        _build(b, content, charts)
        pages = _paginate(b.items, top, height - bottom)
        yield f"drawing {len(pages)} pages"
        painter = QPainter()
        if not painter.begin(writer):
            raise ReportError(f"cannot write the report to {target}: the PDF writer did not start")
        painter.setRenderHint(QPainter.RenderHint.Antialiasing, True)
        painter.setRenderHint(QPainter.RenderHint.TextAntialiasing, True)
        try:
            for n, page in enumerate(pages, 1):
                if n > 1:
                    writer.newPage()
                yield f"page {n} of {len(pages)}"
                _decorate(painter, docs, content, n, len(pages), width, height, margins)
                for y, it in page:
                    it.draw(painter, left, y)
        finally:
            painter.end()
        del painter, writer
        with open(tmp, "rb") as fh:
            head = fh.read(5)
        if head != b"%PDF-" or os.path.getsize(tmp) < 1000:
            raise ReportError(f"cannot write the report to {target}: the PDF writer produced no document")
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        yield "writing the file"    # the last moment a stop request leaves nothing behind
        os.replace(tmp, target)
        yield f"saved {target}"
        return target
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


#: the progress line that follows the charts (the app's dialog moves on a step there)
CHARTS_DRAWN = "charts drawn"


def write_report(content, path, paper: str | None = None, progress: Callable[[str], None] | None = None) -> Path:
    """Build the charts and write the PDF (the calling thread must be the GUI thread, or there must be no
    QApplication yet: one is made, offscreen without a display). ``paper``: 'a4' or 'letter'; None = the
    locale's. Returns the absolute path written; raises `ReportError` (one line) when it cannot."""
    return _drive(_report_steps(content, path, paper), progress)


def _report_steps(content, path, paper: str | None):
    """`write_report` as a generator: yields what it is doing, returns the path written."""
    from ui.report_charts import build_charts

    if paper is not None and str(paper).lower() not in PAPERS:
        raise ReportError(f"paper must be one of {', '.join(PAPERS)}, got {paper!r}")
    _check_target(path)
    ensure_app()
    yield "drawing the charts"
    charts = build_charts(content)
    yield CHARTS_DRAWN
    return (yield from _pdf_steps(content, charts, path, paper))


def write_in_process(content, path: str, paper: str | None):
    """The app's export, run in a process of its own (`Workers.run_in_process`): `write_report` on its
    own QApplication (offscreen), yielding what it is doing and at last the `Path` written. On a worker
    thread of the window, Qt objects made for the PDF while the window's thread deleted others
    deadlocked (the worker held Python's lock and waited for Qt's, the window the other way round); a
    process shares neither lock."""
    from PySide6.QtWidgets import QApplication

    if QApplication.instance() is None:
        os.environ["QT_QPA_PLATFORM"] = "offscreen"   # nothing here is shown
    yield Path((yield from _report_steps(content, path, paper)))


# ---- the app ----------------------------------------------------------------------------------------

class ReportExport(QObject):
    """One export in flight: `done` with the path written, or `failed` with a one-line reason."""

    done = Signal(str)
    failed = Signal(str)
    progress = Signal(str)


def content_for_session(session) -> "api.ReportContent":
    """The report for what the app shows: ``session.cat``, ``session.cfg`` and ``session.targets``."""
    t = getattr(session, "targets", None)
    # the What-ifs tab's technique, when one is chosen and applies to this configuration
    whatif = getattr(session, "whatif", None)
    tech = whatif.techniques if whatif is not None and whatif.effects else None
    state = getattr(session, "state", None)
    return api.report_from_config(session.cat, session.cfg, ttft_ms=(getattr(t, "ttft_ms", 0) or None),
                                  tok_s=(getattr(t, "tok_s", 0) or None), techniques=tech,
                                  prompt_cache=getattr(state, "prompt_cache", True))


def export_report(parent, session, path: str | None = None, paper: str | None = None,
                  workers=None) -> ReportExport | None:
    """File → Export report…: ask where to save (unless ``path``), then build the content on a worker
    thread and draw the charts and the PDF in a process of its own (`write_in_process`), with a progress
    dialog. The app's
    status bar / error signal get the outcome (``session.sig_message`` / ``session.sig_error`` if present).
    Returns the `ReportExport` (its ``done``/``failed`` signals), or None when the dialog was cancelled."""
    from PySide6.QtWidgets import QFileDialog, QProgressDialog

    from ui.workers import Workers

    if path is None:
        cfg = session.cfg
        name = f"sizing-{cfg.model.key}-{cfg.hardware.key}.pdf".replace("/", "-")
        path, _ = QFileDialog.getSaveFileName(parent, "Export report", str(Path.home() / name), "PDF (*.pdf)")
        if not path:
            return None
        if not path.lower().endswith(".pdf"):
            path += ".pdf"
    job = ReportExport(parent)
    pool = workers or getattr(parent, "workers", None)
    if pool is None:
        pool = Workers(job)
    job._pool = pool  # keep a private pool alive with the job
    dlg = QProgressDialog("Building the report…", "", 0, 3, parent)
    dlg.setWindowTitle("Export report")
    dlg.setCancelButton(None)
    dlg.setMinimumDuration(300)
    dlg.setAutoClose(True)
    dlg.setWindowModality(Qt.WindowModality.WindowModal)   # one export at a time: a second would supersede it
    dlg.setValue(0)

    def fail(exc, tb="") -> None:
        dlg.reset()
        msg = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
        if hasattr(session, "sig_error"):
            session.sig_error.emit(f"report not saved: {msg}")
        job.failed.emit(msg)

    def step(msg: str) -> None:
        dlg.setLabelText(msg[:1].upper() + msg[1:] + "…")
        job.progress.emit(msg)

    def written(out) -> None:
        dlg.setValue(3)
        if hasattr(session, "sig_message"):
            session.sig_message.emit(f"Report saved: {out}")
        job.done.emit(str(out))

    def drawn(item) -> None:
        if isinstance(item, Path):
            written(str(item))
            return
        if item == CHARTS_DRAWN:
            dlg.setValue(2)
        step(item)

    def have_content(content) -> None:
        dlg.setValue(1)
        try:
            # the process ends with the export: its Qt widgets and charts would hold ~135 MB all session
            pool.run_in_process("report-pdf", write_in_process, (content, str(path), paper), on_item=drawn,
                                on_error=fail, stay=False)
        except Exception as exc:  # noqa: BLE001 - a process that cannot start: reported to the user
            fail(exc)

    try:
        _check_target(path)
    except ReportError as exc:
        fail(exc)
        return job
    step("computing the figures")
    # the Measured tab's comparisons, when it holds some, become the report's "measured" page
    view = getattr(parent, "_built", {}).get("measured")
    measured = list(getattr(view, "comparisons", None) or [])
    files = [Path(p).name for p in getattr(view, "paths", [])] or ["a live server"]

    def content():
        c = content_for_session(session)
        if measured:
            c = dataclasses.replace(c, **api.measured_report_section(measured, files))
        return c

    pool.run("report", content, have_content, fail)
    return job


__all__ = ["PAPERS", "ReportError", "ReportExport", "content_for_session", "default_paper", "ensure_app",
           "export_report", "write_in_process", "write_pdf", "write_report"]
