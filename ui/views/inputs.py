"""The inputs panel: model, hardware, runtime, formats, workload and targets. Every change goes
straight to `Session.set_inputs` (no Calculate button); `sig_inputs_changed` brings the widgets back
in line with the inputs in force (after undo, a refused change, a loaded file)."""

from __future__ import annotations

from PySide6.QtCore import QStringListModel, Qt
from PySide6.QtWidgets import (QComboBox, QCompleter, QDoubleSpinBox, QFormLayout, QGroupBox, QHBoxLayout, QLabel,
                               QLineEdit, QScrollArea, QSpinBox, QVBoxLayout, QWidget)

from advisor import api
from advisor.text.format import num
from ui.widgets import LogSlider, fill_choices, memory_gib, set_quietly

ALL = "All"
#: what the first entry of each filter says, and how a value is shown
FILTER_ALL = {"family": "All families", "is_moe": "Dense and MoE", "vendor": "All vendors", "kind": "All kinds"}
FILTER_VALUE = {"is_moe": {"False": "Dense", "True": "MoE"}}
PARALLELISM = (("", "runtime default"), ("tp", "tensor parallel (tp)"), ("pp", "layer split (pp)"))
#: GPUs of one node, where a split in pipeline stages across nodes starts (the combo offers TP 8 × PP n)
NODE_TP = 8


def _split_choices(cfg: "api.Config") -> list[tuple[str, str]]:
    """The splits the combo offers for this configuration: the runtime's own, tensor parallel, layer
    split, and the layouts past one tensor-parallel group that the runtime runs (data key "layout:…")."""
    out = [(key, label) for key, label in PARALLELISM]
    rt, g, m = cfg.runtime, cfg.gpus, cfg.model
    if rt.parallelism == "tp" and g > 1:
        if m.experts and rt.expert_parallel and g <= m.experts:
            out.append((f"layout:dp{g}+ep{g}", f"attention DP {g} + EP {g}"))
        if rt.multi_node and g > NODE_TP and g % NODE_TP == 0:
            out.append((f"layout:tp{NODE_TP}+pp{g // NODE_TP}", f"TP {NODE_TP} + PP {g // NODE_TP}"))
    if cfg.layout is not None and not any(k == f"layout:{cfg.layout.key()}" for k, _ in out):
        out.append((f"layout:{cfg.layout.key()}", cfg.layout.text()))
    return out


def _fill_splits(combo: QComboBox, cfg: "api.Config") -> None:
    """Refill the split combo for ``cfg`` and select what is in force (signals blocked: no input change);
    a combo that already offers these choices only has its selection set."""
    choices = _split_choices(cfg)
    combo.blockSignals(True)
    if [(combo.itemData(i), combo.itemText(i)) for i in range(combo.count())] != choices:
        combo.clear()
        for key, label in choices:
            combo.addItem(label, key)
    current = f"layout:{cfg.layout.key()}" if cfg.layout is not None else cfg.parallelism
    index = max(0, combo.findData(current))
    if combo.currentIndex() != index:
        combo.setCurrentIndex(index)
    combo.blockSignals(False)


def _split_change(data: str) -> dict:
    """The session change a split choice makes: a layout, or the plain split with no layout."""
    if data.startswith("layout:"):
        return {"layout": data[len("layout:"):]}
    return {"parallelism": data, "layout": ""}


def _norm(text: str) -> str:
    return "".join(ch for ch in text.lower() if ch.isalnum())


def suggest(cat, prefix: str, section: str, limit: int = 15) -> list[tuple[str, str]]:
    """api.suggest, or (while the core's NameIndex lacks it) a local match on name, key and aliases."""
    try:
        return api.suggest(cat, prefix, section, limit=limit)
    except AttributeError:
        pass
    q = _norm(prefix)
    words = [_norm(w) for w in prefix.split() if _norm(w)]
    scored = []
    for e in getattr(cat, section).values():
        names = [e.name, e.key, *getattr(e, "aliases", ())]
        normed = [_norm(n) for n in names]
        if any(n.startswith(q) for n in normed):
            rank = 0
        elif any(q in n for n in normed):
            rank = 1
        elif words and any(all(w in n for w in words) for n in normed):
            rank = 2
        else:
            continue
        scored.append((rank, len(e.name), e.name.lower(), e.key, e.name))
    scored.sort()
    return [(key, name) for *_, key, name in scored[:limit]]


class Picker(QWidget):
    """Type-ahead search (api.suggest over the name resolver) + filters + a combo of the entries."""

    def __init__(self, session, section: str, filters: tuple[tuple[str, str], ...], placeholder: str, parent=None):
        super().__init__(parent)
        self.session, self.section, self.filter_fields = session, section, filters
        lay = QVBoxLayout(self)
        lay.setContentsMargins(0, 0, 0, 0)
        self.search = QLineEdit()
        self.search.setPlaceholderText(placeholder)
        self.search.setClearButtonEnabled(True)
        self.search.setToolTip("Type any part of a name (forgiving: 'rtx 4090', 'llama 3.1 8b'); Enter picks the best match")
        self._names = QStringListModel(self)
        self.completer = QCompleter(self._names, self)
        self.completer.setCaseSensitivity(Qt.CaseSensitivity.CaseInsensitive)
        self.completer.setCompletionMode(QCompleter.CompletionMode.UnfilteredPopupCompletion)
        self.search.setCompleter(self.completer)
        self.search.textEdited.connect(self._on_text_edited)
        self.search.returnPressed.connect(self._on_return)
        self.completer.activated.connect(self._on_completion)
        lay.addWidget(self.search)
        # a name that does not resolve stays marked, with why, until a name that does is chosen or
        # the field is cleared (a status-bar flash is missed, and the old choice stays on screen)
        self.error = QLabel()
        self.error.setObjectName(f"{section}_name_error")
        self.error.setWordWrap(True)
        self.error.setStyleSheet("color: #d23c3c; font-size: 11px;")
        self.error.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.error.hide()
        lay.addWidget(self.error)
        row = QHBoxLayout()
        self.filters: dict[str, QComboBox] = {}
        for field, label in filters:
            c = QComboBox()
            c.setToolTip(f"Show only entries of this {label.lower()}")
            c.currentIndexChanged.connect(self._fill_combo)
            self.filters[field] = c
            row.addWidget(c, 1)
        lay.addLayout(row)
        self.combo = QComboBox()
        self.combo.setMaxVisibleItems(25)
        self.combo.activated.connect(self._on_combo)
        lay.addWidget(self.combo)
        self._suggestions: dict[str, str] = {}
        self.reload()

    def entries(self):
        return getattr(self.session.cat, self.section)

    def reload(self) -> None:
        """Refill the filters from the catalog (after a reload)."""
        for field, c in self.filters.items():
            values = sorted({str(getattr(e, field)) for e in self.entries().values()})
            cur = c.currentData()
            c.blockSignals(True)
            c.clear()
            c.addItem(FILTER_ALL.get(field, ALL), ALL)
            for v in values:
                c.addItem(FILTER_VALUE.get(field, {}).get(v, v), v)
            i = c.findData(cur)
            c.setCurrentIndex(max(i, 0))
            c.blockSignals(False)
        self._fill_combo()

    def current_key(self) -> str:
        return self.session.cfg.hardware.key if self.section == "hardware" else self.session.cfg.model.key

    def _fill_combo(self) -> None:
        want = {f: c.currentData() for f, c in self.filters.items() if c.currentData() not in (None, "", ALL)}
        current = self.current_key()
        items = [e for e in self.entries().values()
                 if all(str(getattr(e, f)) == v for f, v in want.items()) or e.key == current]
        items.sort(key=lambda e: (not e.key.startswith("this-machine"), e.name.lower()))
        self.combo.blockSignals(True)
        self.combo.clear()
        for e in items:
            self.combo.addItem(e.name, e.key)
        i = self.combo.findData(current)
        self.combo.setCurrentIndex(max(i, 0))
        self.combo.blockSignals(False)

    def sync(self) -> None:
        i = self.combo.findData(self.current_key())
        if i < 0:
            self._fill_combo()
            i = self.combo.findData(self.current_key())
        self.combo.blockSignals(True)
        self.combo.setCurrentIndex(max(i, 0))
        self.combo.blockSignals(False)

    def _on_text_edited(self, text: str) -> None:
        if not text.strip():
            self._mark("")
        rows = suggest(self.session.cat, text, self.section, limit=15) if text.strip() else []
        self._suggestions = {name: key for key, name in rows}
        self._names.setStringList([name for _, name in rows])

    def _choose(self, key_or_name: str) -> None:
        field = "hardware" if self.section == "hardware" else "model"
        if self.session.set_inputs(**{field: key_or_name}):
            self.search.clear()
            self._mark("")
        else:
            current = getattr(self.session.cfg, field).name
            self._mark(f"{self.session.last_error} — still using {current}")

    def _mark(self, message: str) -> None:
        """Show why the typed name was refused beside the field (empty: the field is fine)."""
        self.error.setText(message)
        self.error.setVisible(bool(message))
        self.search.setStyleSheet("QLineEdit { border: 1px solid #d23c3c; }" if message else "")
        self.search.setToolTip(message or "Type any part of a name (forgiving: 'rtx 4090', 'llama 3.1 8b'); "
                                          "Enter picks the best match")

    def _on_completion(self, name: str) -> None:
        self._choose(self._suggestions.get(name, name))

    def _on_return(self) -> None:
        text = self.search.text().strip()
        if text:
            self._choose(self._suggestions.get(text, text))

    def _on_combo(self, index: int) -> None:
        key = self.combo.itemData(index)
        if key:
            self._choose(key)


def _labelled_row(label: str, field: QWidget) -> QWidget:
    """A label and its field on one line, as one widget (shown or hidden together)."""
    row = QWidget()
    lay = QHBoxLayout(row)
    lay.setContentsMargins(0, 0, 0, 0)
    lay.addWidget(QLabel(label))
    lay.addWidget(field, 1)
    return row


class InputsPanel(QScrollArea):
    """The left-hand column. Widgets are named (``spin_prompt`` …) so tests and shortcuts can find them."""

    def __init__(self, session, parent=None):
        super().__init__(parent)
        self.session = session
        self.setWidgetResizable(True)
        self.setHorizontalScrollBarPolicy(Qt.ScrollBarPolicy.ScrollBarAlwaysOff)
        inner = QWidget()
        col = QVBoxLayout(inner)
        col.setContentsMargins(6, 6, 6, 6)

        # model
        g = QGroupBox("&Model")
        lay = QVBoxLayout(g)
        self.model_picker = Picker(session, "models", (("family", "Family"), ("is_moe", "Dense/MoE")),
                                   "Search models…")
        self.model_picker.filters["is_moe"].setToolTip("Dense models or mixtures of experts (MoE)")
        lay.addWidget(self.model_picker)
        self.model_facts = QLabel()
        self.model_facts.setWordWrap(True)
        self.model_facts.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.model_facts)
        col.addWidget(g)

        # hardware
        g = QGroupBox("&Hardware")
        lay = QVBoxLayout(g)
        self.hw_picker = Picker(session, "hardware", (("vendor", "Vendor"), ("kind", "Kind")), "Search hardware…")
        lay.addWidget(self.hw_picker)
        # the memory sizes the entry ships in (Apple bins, some GPUs); hidden when it ships in one
        self.combo_memory = QComboBox()
        self.combo_memory.setObjectName("combo_memory")
        self.combo_memory.setToolTip("Memory size of this hardware: it ships in several; usable memory, the "
                                     "GPU wired limit (Apple) and what fits follow the size")
        self.memory_row = _labelled_row("Memory", self.combo_memory)
        lay.addWidget(self.memory_row)
        # CPUs: the threads llama.cpp runs on (-t); hidden for accelerators
        self.spin_threads = QSpinBox()
        self.spin_threads.setObjectName("spin_threads")
        self.spin_threads.setRange(0, 1024)
        self.spin_threads.setSpecialValueText("every core")
        self.spin_threads.setToolTip("CPU threads for inference, as llama.cpp's -t: compute scales with the cores "
                                     "in use, bandwidth with what they can pull from memory")
        self.threads_row = _labelled_row("Threads", self.spin_threads)
        lay.addWidget(self.threads_row)
        form = QFormLayout()
        self.spin_gpus = QSpinBox()
        self.spin_gpus.setRange(1, 1024)
        self.spin_gpus.setToolTip("How many of these devices serve the model together")
        self.combo_par = QComboBox()
        self.combo_par.setObjectName("inputs_split")
        for key, label in PARALLELISM:
            self.combo_par.addItem(label, key)
        self.combo_par.setToolTip("How the model is split over several GPUs: tensor parallel (every layer on every "
                                  "GPU, all-reduce per layer), layer split (pipeline), and where the runtime runs "
                                  "them, attention data-parallel with the experts spread whole (MoE) or tensor-"
                                  "parallel groups of a node in pipeline stages across nodes")
        row = QHBoxLayout()
        row.addWidget(self.spin_gpus)
        row.addWidget(self.combo_par, 1)
        form.addRow("GPUs", row)
        lay.addLayout(form)
        self.hw_facts = QLabel()
        self.hw_facts.setWordWrap(True)
        self.hw_facts.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        lay.addWidget(self.hw_facts)
        col.addWidget(g)

        # software
        g = QGroupBox("Runtime and &formats")
        form = QFormLayout(g)
        self.combo_runtime = QComboBox()
        self.combo_runtime.setToolTip("The inference engine; greyed-out ones do not run on this hardware")
        self.combo_quant = QComboBox()
        self.combo_quant.setToolTip("Weight format; greyed-out ones cannot be loaded by this runtime or run on this "
                                    "hardware generation (hover for why)")
        self.combo_kv = QComboBox()
        self.combo_kv.setToolTip("KV-cache dtype; greyed-out ones are not offered by this runtime (hover for why)")
        form.addRow("Runtime", self.combo_runtime)
        form.addRow("Weights", self.combo_quant)
        form.addRow("KV cache", self.combo_kv)
        col.addWidget(g)

        # workload
        g = QGroupBox("&Workload")
        form = QFormLayout(g)
        self.prompt = LogSlider(1, 131072, 512, " tok", "Prompt length: tokens read before the first output token")
        self.output = LogSlider(1, 32768, 128, " tok", "Output length: tokens generated per request")
        self.depth = LogSlider(0, 131072, 0, " tok",
                               "Conversation depth: tokens already in the KV cache before this prompt")
        self.batch = LogSlider(1, 1024, 1, "", "Batch = concurrent users decoding at the same time")
        self.spin_prompt, self.spin_output, self.spin_depth, self.spin_batch = (
            self.prompt.spin, self.output.spin, self.depth.spin, self.batch.spin)
        form.addRow("Prompt", self.prompt)
        form.addRow("Output", self.output)
        form.addRow("Depth", self.depth)
        form.addRow("Users (batch)", self.batch)
        col.addWidget(g)

        # targets
        g = QGroupBox("&Targets")
        form = QFormLayout(g)
        self.spin_ttft_target = QDoubleSpinBox()
        self.spin_ttft_target.setRange(0, 600_000)
        self.spin_ttft_target.setDecimals(0)
        self.spin_ttft_target.setSuffix(" ms")
        self.spin_ttft_target.setSpecialValueText("none")
        self.spin_ttft_target.setKeyboardTracking(False)
        self.spin_ttft_target.setToolTip("Longest acceptable time to first token (0 = no target)")
        self.spin_toks_target = QDoubleSpinBox()
        self.spin_toks_target.setRange(0, 100_000)
        self.spin_toks_target.setDecimals(1)
        self.spin_toks_target.setSuffix(" tok/s")
        self.spin_toks_target.setSpecialValueText("none")
        self.spin_toks_target.setKeyboardTracking(False)
        self.spin_toks_target.setToolTip("Slowest acceptable decode speed per user (0 = no target)")
        form.addRow("TTFT ≤", self.spin_ttft_target)
        form.addRow("Speed per user ≥", self.spin_toks_target)
        col.addWidget(g)
        col.addStretch(1)
        self.setWidget(inner)
        for combo in inner.findChildren(QComboBox):  # long names must not widen the panel past the window
            combo.setSizeAdjustPolicy(QComboBox.SizeAdjustPolicy.AdjustToMinimumContentsLengthWithIcon)
            combo.setMinimumContentsLength(6)
        # wide enough for the content and a vertical scroll bar, so nothing is clipped at the right
        bar = self.style().pixelMetric(self.style().PixelMetric.PM_ScrollBarExtent)
        self.setMinimumWidth(max(340, inner.minimumSizeHint().width() + bar + 6))

        # wiring: widget → session
        s = session
        self.spin_gpus.valueChanged.connect(lambda v: s.set_inputs(merge="gpus", gpus=v))
        self.combo_par.activated.connect(lambda i: s.set_inputs(**_split_change(self.combo_par.itemData(i))))
        self.combo_memory.activated.connect(lambda i: s.set_inputs(memory_gb=self.combo_memory.itemData(i)))
        self.spin_threads.valueChanged.connect(lambda v: s.set_inputs(merge="threads", threads=v))
        self.combo_runtime.activated.connect(lambda i: s.set_inputs(runtime=self.combo_runtime.itemData(i)))
        self.combo_quant.activated.connect(lambda i: s.set_inputs(quant=self.combo_quant.itemData(i)))
        self.combo_kv.activated.connect(lambda i: s.set_inputs(kv_dtype=self.combo_kv.itemData(i)))
        self.prompt.sig_value_changed.connect(lambda v: s.set_inputs(merge="prompt", prompt=v))
        self.output.sig_value_changed.connect(lambda v: s.set_inputs(merge="output", output=v))
        self.depth.sig_value_changed.connect(lambda v: s.set_inputs(merge="depth", depth=v))
        self.batch.sig_value_changed.connect(lambda v: s.set_inputs(merge="batch", batch=v))
        self.spin_ttft_target.valueChanged.connect(lambda v: s.set_inputs(merge="ttft_t", ttft_target_ms=v))
        self.spin_toks_target.valueChanged.connect(lambda v: s.set_inputs(merge="toks_t", tok_s_target=v))
        # session → widgets
        s.sig_inputs_changed.connect(self.sync)
        s.sig_catalog_changed.connect(self._on_catalog_changed)
        self._shown = None
        self.sync()

    def _on_catalog_changed(self) -> None:
        self.model_picker.reload()
        self.hw_picker.reload()
        self._shown = None
        self.sync()

    def sync(self) -> None:
        """Show the inputs in force (cheap; the combos refill only when what they depend on changed)."""
        s = self.session
        cfg, t = s.cfg, s.targets
        self.model_picker.sync()
        self.hw_picker.sync()
        shown = (cfg.hardware.key, cfg.hardware.memory_gib, cfg.model.key, cfg.runtime.key, cfg.quant.key,
                 cfg.kv_dtype.key)
        if shown != self._shown:
            self._shown = shown
            self._fill_memory()
            fill_choices(self.combo_runtime, api.runtimes_for(s.cat, cfg.hardware), cfg.runtime.key)
            # greyed with the core's reason: what the runtime cannot load, and what this hardware
            # generation cannot run (NVFP4 before Blackwell, FP8 before Ada on TensorRT-LLM)
            fill_choices(self.combo_quant, api.formats_for(s.cat, cfg.runtime, cfg.model, hardware=cfg.hardware),
                         cfg.quant.key)
            fill_choices(self.combo_kv, api.kv_dtypes_for(s.cat, cfg.runtime, hardware=cfg.hardware, model=cfg.model),
                         cfg.kv_dtype.key)
            self._facts()
            ctx = int(cfg.model.native_context)
            self.prompt.set_range(1, ctx)
            self.depth.set_range(0, ctx)
            self.output.set_range(1, min(ctx, 131072))
        self.threads_row.setVisible(cfg.hardware.kind == "cpu")
        if cfg.hardware.kind == "cpu":
            self.spin_threads.setMaximum(max(1, cfg.hardware.cpu_cores or 1024) * 2)
        for w, v in ((self.spin_gpus, cfg.gpus), (self.spin_threads, cfg.hardware.threads)):
            set_quietly(w, v)
        _fill_splits(self.combo_par, cfg)
        wl = cfg.workload
        self.prompt.set_value(wl.prompt_tokens)
        self.output.set_value(wl.output_tokens)
        self.depth.set_value(wl.depth_tokens)
        self.batch.set_value(wl.batch)
        for w, v in ((self.spin_ttft_target, t.ttft_ms), (self.spin_toks_target, t.tok_s)):
            set_quietly(w, v)

    def _fill_memory(self) -> None:
        """The sizes the hardware ships in, the one in use selected; the row only when there is a choice."""
        sizes = self.session.memory_options()
        default = self.session.cat.hardware.get(self.session.cfg.hardware.key, self.session.cfg.hardware).memory_gib
        c = self.combo_memory
        c.blockSignals(True)
        c.clear()
        for gb in sizes:
            c.addItem(f"{gb:g} GB" + (" (default)" if gb == default else ""), float(gb))
        c.setCurrentIndex(max(0, c.findData(float(self.session.cfg.hardware.memory_gib))))
        c.blockSignals(False)
        self.memory_row.setVisible(len(sizes) > 1)

    def _facts(self) -> None:
        s = self.session
        m, h = s.cfg.model, s.cfg.hardware
        active = f" ({num(m.params_active_b)} B active)" if m.is_moe else ""
        kvb = s.prediction.kv_bytes_per_token if s.prediction else float("nan")
        self.model_facts.setText(
            f"{num(m.params_total_b)} B params{active} · {m.layers} layers · "
            f"KV {num(kvb / 1024)} KiB/token · context {m.native_context:,}")
        self.model_facts.setToolTip(f"{m.name}\nfamily {m.family}, attention {m.attention}\nsource: {m.source}")
        fp16 = getattr(h, "fp16_dense_tflops", None)
        fp16_txt = f" · {num(fp16)} TFLOP/s fp16" if fp16 else ""
        self.hw_facts.setText(f"{h.vendor} {h.kind} · {num(memory_gib(h))} GiB · {num(h.bandwidth_gb_s)} GB/s{fp16_txt}")
        self.hw_facts.setToolTip(f"{h.name}\nsource: {h.source}")
