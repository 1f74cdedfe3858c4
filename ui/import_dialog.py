"""File → Import model…: choose a config.json, a model folder, a .gguf file, a safetensors index or a
Hub id (``hf:org/name``), see what the importer reads from it, and import it (optionally saving it to
the user catalog). The importer is the core's (`api.import_model`): local files are read on a worker as
they are chosen (headers only), a Hub id is fetched when the dialog is accepted, in the background."""

from __future__ import annotations

from html import escape
from pathlib import Path

from PySide6.QtCore import Qt, QTimer
from PySide6.QtWidgets import (QCheckBox, QDialog, QDialogButtonBox, QFileDialog, QHBoxLayout, QLabel, QLineEdit,
                               QPushButton, QVBoxLayout)

from advisor import api
from advisor.text.format import num
from ui.imports import missing_local, read_import
from ui.workers import Workers

FILE_FILTER = ("Model files (config.json *.json *.gguf *.safetensors.index.json *.safetensors);;"
               "Hugging Face config (config.json *.json);;GGUF (*.gguf);;"
               "safetensors index (*.safetensors.index.json);;All files (*)")
#: wait this long after the last keystroke before reading a typed path
PREVIEW_DELAY_MS = 250


def describe_import(im: "api.ImportedModel") -> str:
    """What the importer read, as a few lines of rich text (the CLI's ``import-model`` in short)."""
    m = im.model
    active = f" ({num(m.params_active_b)} B active, {m.experts} experts)" if m.is_moe else ""
    weights = (f"{num(im.weight_bytes / 1e9)} GB of weights as stored" if im.weight_bytes
               else "weight bytes from the format")
    lines = [f"<b>{m.name}</b> — {im.kind}, {m.family} family, {m.attention.upper()} attention",
             f"{num(m.params_total_b)} B params{active} · {m.layers} layers · {m.heads} heads, "
             f"{m.kv_heads} KV heads · head {m.head_dim} · context {m.native_context:,}",
             f"own format {im.weight_format or '—'} · {weights}"]
    lines += [f"<span style='color:#888'>note: {n}</span>" for n in im.notes]
    return "<br>".join(lines)


def import_path(source: str) -> str:
    """What to import for a path the user picked: a safetensors index or shard stands for its folder
    (where config.json is); anything else as given."""
    text = str(source).strip()
    name = Path(text).name.lower()
    if name.endswith((".safetensors.index.json", ".safetensors")):
        return str(Path(text).parent)
    return text


def dropped_paths(mime) -> list[Path]:
    """The local files and folders in a drag's data (URLs), or [] when it holds none."""
    if mime is None or not mime.hasUrls():
        return []
    return [Path(u.toLocalFile()) for u in mime.urls() if u.isLocalFile() and u.toLocalFile()]


class ImportDialog(QDialog):
    def __init__(self, parent=None, start_dir: str = ""):
        super().__init__(parent)
        self.setWindowTitle("Import model")
        self.start_dir = start_dir or str(Path.home())
        self.imported: api.ImportedModel | None = None
        self.workers = Workers(self, max_threads=1)
        lay = QVBoxLayout(self)
        lay.addWidget(QLabel("A model's <b>config.json</b>, its folder, a <b>.gguf</b> file, a "
                             "<b>model.safetensors.index.json</b>, or a Hub id such as <b>hf:Qwen/Qwen3-8B</b>:"))
        row = QHBoxLayout()
        self.path = QLineEdit()
        self.path.setObjectName("import_source")
        self.path.setPlaceholderText("path or hf:org/name")
        self.path.setClearButtonEnabled(True)
        self.path.setMinimumWidth(460)
        row.addWidget(self.path, 1)
        self.btn_file = QPushButton("File…")
        self.btn_folder = QPushButton("Folder…")
        row.addWidget(self.btn_file)
        row.addWidget(self.btn_folder)
        lay.addLayout(row)
        self.preview = QLabel()
        self.preview.setObjectName("import_preview")
        self.preview.setWordWrap(True)
        self.preview.setTextFormat(Qt.TextFormat.RichText)
        self.preview.setTextInteractionFlags(Qt.TextInteractionFlag.TextSelectableByMouse)
        self.preview.setMinimumHeight(80)
        self.preview.setAlignment(Qt.AlignmentFlag.AlignTop)
        lay.addWidget(self.preview, 1)
        name_row = QHBoxLayout()
        name_row.addWidget(QLabel("Name:"))
        self.name = QLineEdit()
        self.name.setObjectName("import_name")
        self.name.setPlaceholderText("the model's own name (from its config or file)")
        self.name.setToolTip("The name it has in the pickers, the sizing and the report; empty: its own")
        name_row.addWidget(self.name, 1)
        lay.addLayout(name_row)
        self.save = QCheckBox("Also save it to my catalog (available in later sessions and on the command line)")
        self.save.setObjectName("import_save")
        lay.addWidget(self.save)
        self.buttons = QDialogButtonBox(QDialogButtonBox.StandardButton.Ok | QDialogButtonBox.StandardButton.Cancel)
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setText("Import")
        self.buttons.accepted.connect(self.accept)
        self.buttons.rejected.connect(self.reject)
        lay.addWidget(self.buttons)
        self._timer = QTimer(self)
        self._timer.setSingleShot(True)
        self._timer.setInterval(PREVIEW_DELAY_MS)
        self._timer.timeout.connect(self.read_source)
        self.path.textChanged.connect(lambda _t: self._timer.start())
        self.btn_file.clicked.connect(self.pick_file)
        self.btn_folder.clicked.connect(self.pick_folder)
        self.read_source()

    def source(self) -> str:
        return import_path(self.path.text())

    def pick_file(self) -> None:
        path, _ = QFileDialog.getOpenFileName(self, "Import model", self.start_dir, FILE_FILTER)
        if path:
            self.path.setText(path)
            self.read_source()

    def pick_folder(self) -> None:
        path = QFileDialog.getExistingDirectory(self, "Import model folder", self.start_dir)
        if path:
            self.path.setText(path)
            self.read_source()

    def read_source(self) -> None:
        """Read a local source (on a worker) and show what it holds, or why it cannot be imported."""
        self._timer.stop()
        ok = self.buttons.button(QDialogButtonBox.StandardButton.Ok)
        text = self.source()
        self.imported = None
        if not text:
            self.preview.setText("<span style='color:#888'>Nothing chosen yet.</span>")
            ok.setEnabled(False)
            return
        if text.startswith("hf:"):
            self.preview.setText("A Hub id: config.json (and the safetensors index) are fetched when you press "
                                 "Import, from the local Hugging Face cache or the network.")
            ok.setEnabled(True)
            return
        missing = missing_local(text)
        if missing:
            self.preview.setText(f"<span style='color:#d23c3c'>{escape(missing)}</span>")
            ok.setEnabled(False)
            return
        # read on a worker: a file on a slow or hung disk must not freeze the dialog
        self.preview.setText("<span style='color:#888'>Reading…</span>")
        ok.setEnabled(True)   # Import while reading imports it in the background, as a drop does
        self.workers.run("preview", lambda: read_import(text), self._show, self._show_error)

    def chosen_name(self) -> str:
        """The name typed for the model, or "" to keep its own."""
        text = self.name.text().strip()
        return "" if self.imported is not None and text == self.imported.model.name else text

    def _show(self, imported: "api.ImportedModel") -> None:
        self.imported = imported
        if not self.name.isModified():   # a name the user typed stays
            self.name.setText(imported.model.name)
        self.preview.setText(describe_import(imported))
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(True)

    def _show_error(self, exc: BaseException, _tb: str) -> None:
        self.imported = None
        self.preview.setText(f"<span style='color:#d23c3c'>{escape(str(exc))}</span>")
        self.buttons.button(QDialogButtonBox.StandardButton.Ok).setEnabled(False)
