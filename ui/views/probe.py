"""Probe this machine: runs `probes.probe` in the background with progress, shows what it measured next
to the catalog entry it matched, and saves "this machine" to the user catalog (then the hardware picker
offers it)."""

from __future__ import annotations

from PySide6.QtWidgets import (QCheckBox, QHBoxLayout, QLabel, QPlainTextEdit, QProgressBar, QPushButton, QTableWidget,
                               QTableWidgetItem, QVBoxLayout, QWidget, QHeaderView)

from advisor import api
from advisor.text.format import num
from ui.tabs import TabView
from ui.widgets import memory_gib


def _probe(quick: bool, progress):
    import probes

    return probes.probe(quick=quick, progress=progress)


class ProbeView(QWidget, TabView):
    def __init__(self, session, workers, parent=None):
        super().__init__(parent)
        self.session, self.workers = session, workers
        lay = QVBoxLayout(self)
        lay.setContentsMargins(4, 4, 4, 4)
        bar = QHBoxLayout()
        self.btn_probe = QPushButton("&Probe this machine")
        self.btn_probe.setToolTip("Read the GPUs (NVML, Apple, AMD) and measure CPU memory bandwidth and FLOP/s; "
                                  "takes a few seconds")
        self.check_quick = QCheckBox("Quick (no micro-benchmarks)")
        self.btn_use = QPushButton("Use \"this machine\"")
        self.btn_use.setEnabled(False)
        self.progress = QProgressBar()
        self.progress.setRange(0, 1)
        self.progress.setValue(0)
        self.progress.setTextVisible(False)
        self.progress.setMaximumWidth(180)
        bar.addWidget(self.btn_probe)
        bar.addWidget(self.check_quick)
        bar.addWidget(self.progress)
        bar.addWidget(self.btn_use)
        bar.addStretch(1)
        lay.addLayout(bar)
        self.status = QLabel("Not probed yet. The probe never needs a GPU: without one it measures the CPU.")
        self.status.setWordWrap(True)
        lay.addWidget(self.status)
        self.table = QTableWidget(0, 3)
        self.table.setObjectName("probe_table")
        self.table.setHorizontalHeaderLabels(["", "Measured here", "Catalog entry matched"])
        self.table.horizontalHeader().setSectionResizeMode(QHeaderView.ResizeMode.Stretch)
        self.table.verticalHeader().setVisible(False)
        self.table.setEditTriggers(QTableWidget.EditTrigger.NoEditTriggers)
        lay.addWidget(self.table, 2)
        self.log = QPlainTextEdit()
        self.log.setReadOnly(True)
        self.log.setMaximumBlockCount(500)
        self.log.setPlaceholderText("Progress appears here")
        lay.addWidget(self.log, 1)
        self.btn_probe.clicked.connect(self.start)
        self.btn_use.clicked.connect(self.use)
        self.result = None
        self.matches = []
        self.running = False
        self.saved_key = ""

    def start(self) -> None:
        if self.running:
            return
        self.running = True
        self.btn_probe.setEnabled(False)
        self.progress.setRange(0, 0)  # busy
        self.log.clear()
        self.status.setText("Probing…")
        quick = self.check_quick.isChecked()
        self.workers.run("probe", lambda progress: _probe(quick, progress), self._on_done, self._on_error,
                         on_progress=self._on_progress)

    def _on_progress(self, msg: str) -> None:
        self.log.appendPlainText(msg)
        self.status.setText(f"Probing: {msg}…")

    def _finish(self) -> None:
        self.running = False
        self.btn_probe.setEnabled(True)
        self.progress.setRange(0, 1)
        self.progress.setValue(1)

    def _on_error(self, exc, tb) -> None:
        self._finish()
        self.status.setText(f"The probe failed: {type(exc).__name__}: {exc}")
        self.log.appendPlainText(tb)
        self.session.sig_error.emit(f"Probe failed: {exc}")

    def _on_done(self, result) -> None:
        self._finish()
        from advisor.plan.machine import match_devices, save_this_machine

        self.result = result
        s = self.session
        try:
            self.matches = match_devices(s.cat, result)
        except Exception as exc:  # noqa: BLE001 - show, keep running
            self.matches = []
            self.log.appendPlainText(f"matching failed: {exc}")
        self._show(result)
        for n in result.notes:
            self.log.appendPlainText(f"note: {n}")
        try:
            path = save_this_machine(s.cat, result, self.matches)
        except api.AdvisorError as exc:
            self.status.setText(f"Probed in {result.seconds:.1f} s, but could not add \"this machine\": {exc}")
            return
        s.reload_catalog()
        key = next((k for k in s.cat.hardware if k.startswith("this-machine")), "")
        self.saved_key = key
        self.btn_use.setEnabled(bool(key))
        self.status.setText(f"Probed in {result.seconds:.1f} s. \"This machine\" is now in the hardware picker "
                            f"(saved to {path}).")
        s.sig_message.emit("\"This machine\" added to the hardware picker")

    def use(self) -> None:
        if self.saved_key:
            self.session.set_inputs(hardware=self.saved_key)

    def _show(self, r) -> None:
        rows: list[tuple[str, str, str]] = []
        c = r.cpu
        rows.append(("CPU", f"{c.model} · {c.cores_logical} threads", ""))
        rows.append(("RAM", f"{num(c.ram_gb)} GB" if c.ram_gb else "—", ""))
        rows.append(("CPU bandwidth", f"{num(c.bandwidth_gb_s)} GB/s" if c.bandwidth_gb_s else "not measured",
                     f"read, {c.threads_used} threads; one thread {num(c.read_1t_gb_s)} GB/s" if c.read_gb_s else ""))
        rows.append(("CPU fp32", f"{num(c.fp32_gflops)} GFLOP/s" if c.fp32_gflops else "not measured", ""))
        for gpu in r.nvidia.gpus:
            m = next((m for m in self.matches if m.device.startswith(f"GPU {gpu.index}:")), None)
            hw = m.hardware if m else None
            rows.append((f"GPU {gpu.index}", gpu.name, f"{hw.name} ({m.confidence})" if hw else "no match"))
            rows.append(("  memory", f"{num(gpu.memory_total_gb)} GB", f"{num(memory_gib(hw))} GiB" if hw else ""))
            rows.append(("  bandwidth", f"{num(gpu.bandwidth_gb_s)} GB/s" if gpu.bandwidth_gb_s else "—",
                         f"{num(hw.bandwidth_gb_s)} GB/s" if hw else ""))
        for m in self.matches:
            if not m.device.startswith("GPU "):
                rows.append((m.device, "", f"{m.hardware.name} ({m.confidence})" if m.hardware else "no match"))
            for d in m.differences:
                rows.append(("  differs", d, ""))
        for b in r.benchmarks:
            rows.append((f"{b.framework} {b.dtype}", f"copy {num(b.copy_gb_s)} GB/s, matmul {num(b.matmul_tflops)} "
                         f"TFLOP/s", b.device))
        if not r.accelerator_found:
            rows.append(("Accelerator", "none found", "\"this machine\" will be the CPU"))
        self.table.setRowCount(len(rows))
        for i, row in enumerate(rows):
            for j, text in enumerate(row):
                self.table.setItem(i, j, QTableWidgetItem(text))

    @property
    def busy(self) -> bool:
        return self.workers.running("probe")

    def table_rows(self) -> list[list[str]]:
        header = [self.table.horizontalHeaderItem(j).text() for j in range(self.table.columnCount())]
        return [header] + [[self.table.item(i, j).text() if self.table.item(i, j) else ""
                            for j in range(self.table.columnCount())] for i in range(self.table.rowCount())]
