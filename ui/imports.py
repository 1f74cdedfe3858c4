"""The models imported in this session (File → Import model…, drag-and-drop, a sizing or the last
session that used one): what was imported and from where, adding one to the session's catalog (and
making it the model in use), saving it to the user catalog. Reading a file is plain data in and out
(`read_import`), so the window runs it on a worker; everything else runs on the GUI thread."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING

from PySide6.QtCore import QObject

from advisor import api

if TYPE_CHECKING:
    from ui.session import Session


class ImportedModels(QObject):
    """``models``: the imported models, the newest last; ``sources``: what each (by key) was imported
    from, a file, a folder or ``hf:org/name``, kept across catalog reloads and saved with a sizing."""

    def __init__(self, session: "Session"):
        super().__init__(session)
        self.session = session
        self.models: list[api.ImportedModel] = []
        self.sources: dict[str, str] = {}
        #: the names the user gave imports (by key), saved with a sizing and the session, so that a
        #: model read again from its source comes back under them
        self.names: dict[str, str] = {}

    def import_source(self, source: str, save: bool = False) -> "api.ImportedModel | None":
        """Import a model (a config.json, a folder, a .gguf, ``hf:org/name``), add it to the session's
        catalog and make it the model in use, everything recomputed (undoable). With ``save`` it is
        also written to the user catalog. A bad source is refused with `sig_error` and nothing changes."""
        try:
            imported = read_import(source)
        except api.AdvisorError as exc:
            self.session.refuse(str(exc))
            return None
        return self.add(imported, save, source)

    def add(self, imported: "api.ImportedModel", save: bool = False, source: str = "",
            name: str = "") -> "api.ImportedModel | None":
        """Make an already imported model (read from ``source``) the one in use (see `import_source`),
        under ``name`` where the user gave it another."""
        s = self.session
        old_cat = s.cat
        try:
            if name and name.strip() != imported.model.name:
                imported = api.renamed_import(imported, name)
            cat, imported = api.catalog_with_imported(old_cat, imported)
            s.cat = cat
            w = s.cfg.workload
            # its own weight format and a runtime that loads it (a GGUF file: llama.cpp), as on the CLI
            base = api.configure(cat, hardware=s.cfg.hardware.key, model=imported.model.key, gpus=s.cfg.gpus,
                                 parallelism=s.cfg.parallelism or None)
            base = base.replace(hardware=s.cfg.hardware)  # the memory size in use stays
            cfg = s.build(base, {"batch": w.batch, "prompt": w.prompt_tokens, "output": w.output_tokens,
                                 "depth": w.depth_tokens})
        except api.AdvisorError as exc:
            s.cat = old_cat
            s.refuse(f"{imported.model.name}: {exc}")
            return None
        if not s.switch_to(cfg):
            s.cat = old_cat
            return None
        self._remember(imported, source, name)
        s.sig_catalog_changed.emit()
        s.sig_inputs_changed.emit()
        message = f"Imported {imported.model.name} ({imported.kind}, {imported.model.params_total_b:.3g} B params)"
        if save:
            saved = self.save(imported)
            if saved is None:
                return imported
            message += f"; saved to {saved}"
        s.sig_message.emit(message)
        return imported

    def restore(self, source: str, key: str = "", name: str = "") -> str:
        """Import ``source`` into the session's catalog without changing the inputs (a sizing or the
        last session that used an imported model); the model's key, or `api.AdvisorError`."""
        return self.adopt(read_import(source), source, key, name)

    def adopt(self, imported: "api.ImportedModel", source: str, key: str = "", name: str = "") -> str:
        """Add a model read (on a worker) from ``source`` to the session's catalog without changing
        the inputs; its key. ``key`` and ``name``: what a sizing or the last session called it, where
        the user had renamed it."""
        s = self.session
        if key and key != imported.model.key:
            imported = api.renamed_import(imported, name or key, key)
        s.cat, imported = api.catalog_with_imported(s.cat, imported)
        self._remember(imported, source, name)
        s.sig_catalog_changed.emit()
        return imported.model.key

    def readd(self, cat: "api.Catalog") -> "api.Catalog":
        """``cat`` (a reloaded catalog) with this session's imports in it again."""
        for imported in self.models:
            if imported.model.key not in cat.models:
                cat, _ = api.catalog_with_imported(cat, imported)
        return cat

    def in_use(self) -> "api.ImportedModel | None":
        """The imported model the inputs use, if they use one."""
        key = self.session.cfg.model.key
        return next((m for m in reversed(self.models) if m.model.key == key), None)

    def _remember(self, imported: "api.ImportedModel", source: str, name: str = "") -> None:
        self.models = [m for m in self.models if m.model.key != imported.model.key] + [imported]
        if source:
            self.sources[imported.model.key] = _absolute(source)
        if name:
            self.names[imported.model.key] = imported.model.name

    def save(self, imported: "api.ImportedModel | None" = None):
        """Write an imported model (default: the one in use) to the user catalog; the path, or None
        with `sig_error` when it is not an imported model or cannot be written."""
        s = self.session
        if imported is None:
            imported = self.in_use()
            if imported is None:
                s.sig_error.emit(f"{s.cfg.model.name} is not an imported model; import one first")
                return None
        try:
            _, path = api.save_imported_model(s.cat, imported)
        except (api.AdvisorError, OSError) as exc:
            s.last_error = f"could not save {imported.model.name}: {exc}"
            s.sig_error.emit(s.last_error)
            return None
        s.sig_message.emit(f"Saved {imported.model.name} to {path}")
        return path


def read_import(source: str) -> "api.ImportedModel":
    """`api.import_model`, with an unreadable file or folder as an `api.AdvisorError` too. Plain data in
    and out: the window calls it on a worker thread."""
    try:
        return api.import_model(source)
    except OSError as exc:
        raise api.AdvisorError(f"{source}: {exc.strerror or exc}") from None


def _absolute(source: str) -> str:
    """A local source as an absolute path (so a saved sizing finds it from any folder); ``hf:`` as is."""
    text = str(source).strip()
    return text if text.startswith("hf:") else str(Path(text).expanduser().resolve())



def missing_local(source: str) -> str:
    """Why a local import source cannot be read, found without opening it ("" when it may be): checked
    on the GUI thread so that a plainly missing file answers at once."""
    if source.startswith("hf:") or not source.strip():
        return ""
    p = Path(source).expanduser()
    if not p.exists():
        return f"{source}: no such file or folder"
    if not (p.is_dir() or p.is_file()):
        return f"{source}: not a regular file (a pipe, socket or device); give a model file or folder"
    return ""
