"""The app's side of issue 19: File → Import model… and drag-and-drop of a config.json, a .gguf or a
folder; the imported model joins the picker, is selected and everything recomputes; bad files leave
the window as it was."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import pytest
from PySide6.QtCore import QMimeData, QPoint, QPointF, Qt, QUrl
from PySide6.QtGui import QDragEnterEvent, QDropEvent
from PySide6.QtWidgets import QApplication, QDialogButtonBox

from advisor import api

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "hf_configs"


def drop(window, paths) -> bool:
    """Drag ``paths`` over the window and drop them, as a file manager would; True if accepted."""
    mime = QMimeData()
    mime.setUrls([QUrl.fromLocalFile(str(p)) for p in paths])
    enter = QDragEnterEvent(QPoint(600, 400), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                            Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(window, enter)
    if not enter.isAccepted():
        return False
    ev = QDropEvent(QPointF(600, 400), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                    Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(window, ev)
    return ev.isAccepted()


def picker_keys(window) -> list[str]:
    combo = window.inputs.model_picker.combo
    return [combo.itemData(i) for i in range(combo.count())]


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_import_config_json_joins_the_picker_and_recomputes(window, tmp_path, settle):
    s = window.session
    before = s.prediction
    path = tmp_path / "my-finetune" / "config.json"
    path.parent.mkdir()
    shutil.copy(FIXTURES / "qwen3-8b.json", path)
    assert window.import_source(str(path))
    settle(window)
    im = s.imports.models[-1]
    m = s.cfg.model
    # the import (named after its folder) is the model in use, in the picker and selected there
    assert m.key == im.model.key == "my-finetune" and m.name == "my-finetune"
    assert m.key in picker_keys(window)
    assert window.inputs.model_picker.combo.currentData() == m.key
    assert (m.layers, m.hidden, m.kv_heads, m.head_dim, m.vocab) == (36, 4096, 8, 128, 151936)
    # everything recomputed: the prediction is the core's for the imported model on the same inputs
    p = s.prediction
    assert p is not before and p.model == "my-finetune"
    cat, _ = api.catalog_with_imported(api.load_catalog(user=False), im)
    ref = api.predict(cat, api.configure(cat, hardware=s.cfg.hardware.key, model="my-finetune",
                                         runtime=s.cfg.runtime.key, quant=s.cfg.quant.key))
    assert p.decode_tok_s == pytest.approx(ref.decode_tok_s) and p.weights_gb == pytest.approx(ref.weights_gb)
    assert "my-finetune" in window.inputs.model_facts.toolTip()
    # the shared catalog the window started from is untouched (the session holds a copy)
    assert "my-finetune" not in api.load_catalog(user=False).models
    # undo goes back to the model before; the import stays in the picker
    s.undo()
    assert s.cfg.model.key == "llama-3.1-8b" and "my-finetune" in picker_keys(window)


def test_drop_a_gguf_file_imports_its_own_weight_mix(window, tmp_path, write_gguf, settle):
    s = window.session
    path = tmp_path / "tiny.gguf"
    total = write_gguf(path, name="tiny-dropped")
    assert drop(window, [path])
    settle(window)
    cfg = s.cfg
    assert cfg.model.name == "tiny-dropped" and cfg.model.layers == 2
    # the memory plan prices the file's own tensors: its format, on a runtime that loads GGUF
    assert cfg.runtime.key == "llama.cpp" and cfg.quant.kind == "gguf"
    assert s.prediction.weights_gb * 1e9 == pytest.approx(total, rel=1e-6)
    assert window.inputs.combo_quant.currentData() == cfg.quant.key
    assert "Imported tiny-dropped" in window.statusBar().currentMessage()


def test_drop_a_folder_and_a_safetensors_index(window, tmp_path, settle):
    s = window.session
    folder = tmp_path / "gemma-local"
    folder.mkdir()
    shutil.copy(FIXTURES / "gemma-2-9b.json", folder / "config.json")
    (folder / "model.safetensors.index.json").write_text(json.dumps({"metadata": {"total_size": 18_483_000_000},
                                                                     "weight_map": {}}))
    assert drop(window, [folder])
    settle(window)
    assert s.cfg.model.key == "gemma-local" and s.cfg.model.sliding_window == 4096
    s.set_inputs(model="llama 3.1 8b")
    # the dialog's File… may pick the index: it stands for its folder
    assert window.import_source(str(folder / "model.safetensors.index.json"))
    settle(window)
    assert s.cfg.model.key == "gemma-local"


@pytest.mark.parametrize("name, content, words", [
    ("config.json", "[1, 2, 3]", "must be a json object"),
    ("broken.gguf", "half", "truncated"),
    ("zero.json", json.dumps({"architectures": ["LlamaForCausalLM"], "hidden_size": 4096,
                              "num_hidden_layers": 0, "num_attention_heads": 32, "vocab_size": 32000}), "layers"),
])
def test_a_bad_file_leaves_the_window_usable_and_the_model_as_it_was(window, tmp_path, name, content, words, write_gguf, settle):
    s = window.session
    s.set_inputs(model="qwen3 8b")
    before_cfg, before_pred = s.cfg, s.prediction
    path = tmp_path / name
    if content == "half":  # a real GGUF cut in the middle of its tensor infos
        write_gguf(path, name="tiny-dropped")
        path.write_bytes(path.read_bytes()[:600])
    else:
        path.write_text(content)
    assert drop(window, [path])             # a file is accepted for dropping; its import is refused
    settle(window)
    assert s.cfg is before_cfg and s.prediction is before_pred and not s.imports.models
    assert window.inputs.model_picker.combo.currentData() == "qwen3-8b"
    msg = window.statusBar().currentMessage()
    assert msg.startswith("⚠") and words in msg.lower() and "\n" not in msg
    # still usable: an input change recomputes
    window.inputs.spin_batch.setValue(4)
    assert s.cfg.workload.batch == 4 and s.prediction is not before_pred


def test_drop_of_something_that_is_not_a_file_is_refused(window):
    mime = QMimeData()
    mime.setText("llama 3.1 8b")
    enter = QDragEnterEvent(QPoint(10, 10), Qt.DropAction.CopyAction, mime, Qt.MouseButton.LeftButton,
                            Qt.KeyboardModifier.NoModifier)
    QApplication.sendEvent(window, enter)
    assert not enter.isAccepted()


def test_dropping_a_sizing_file_opens_it(window, tmp_path, settle):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"advisor_sizing": 1, "inputs": {"hardware": "rtx-4090", "model": "qwen3-8b",
                                                                "batch": 3}}))
    assert drop(window, [path])
    settle(window)
    assert window.session.cfg.model.key == "qwen3-8b" and window.session.cfg.workload.batch == 3
    assert window.file_path == path


def test_import_dialog_previews_and_saves_to_the_user_catalog(window, tmp_path, private_user_data, settle):
    from ui.import_dialog import ImportDialog

    dlg = ImportDialog(window, start_dir=str(tmp_path))
    ok = dlg.buttons.button(QDialogButtonBox.StandardButton.Ok)
    assert not ok.isEnabled()
    dlg.path.setText(str(tmp_path / "nothing-here.gguf"))
    dlg.read_source()
    settle(dlg)
    assert not ok.isEnabled() and "no such file" in dlg.preview.text()
    dlg.path.setText(str(FIXTURES / "mixtral-8x7b-v0.1.json"))
    dlg.read_source()
    settle(dlg)
    assert ok.isEnabled() and dlg.imported is not None
    text = dlg.preview.text()
    assert "46.7 B params" in text and "8 experts" in text and "head_dim is not in the config" in text
    dlg.save.setChecked(True)
    assert window.import_source(dlg.source(), save=dlg.save.isChecked(), imported=dlg.imported)
    settle(window)
    key = window.session.cfg.model.key
    saved = private_user_data / "imported-models.yaml"
    assert saved.is_file() and key in saved.read_text()
    # a fresh catalog with the user's overlay has it: it is there in later sessions
    assert key in api.load_catalog().models
    assert "saved to" in window.statusBar().currentMessage()


def test_save_imported_model_action(window, tmp_path, private_user_data, settle):
    assert not window.act_save_model.isEnabled()        # a catalog model is not an import
    assert window.import_source(str(FIXTURES / "phi-3-mini-4k.json"))
    settle(window)
    assert window.act_save_model.isEnabled()
    window.act_save_model.trigger()
    assert window.session.cfg.model.key in (private_user_data / "imported-models.yaml").read_text()


def test_imports_survive_a_catalog_reload(window, settle):
    s = window.session
    assert window.import_source(str(FIXTURES / "qwen3-4b.json"))
    settle(window)
    key = s.cfg.model.key
    s.reload_catalog()
    assert key in s.cat.models and s.cfg.model.key == key


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_a_sizing_of_an_imported_model_opens_in_a_fresh_window(make_window, tmp_path, write_gguf, settle):
    w1 = make_window(restore=False)
    gguf = tmp_path / "models" / "tiny.gguf"
    gguf.parent.mkdir()
    write_gguf(gguf, name="tiny-dropped")
    assert drop(w1, [gguf])
    settle(w1)
    w1.session.set_inputs(batch=3)
    sizing = tmp_path / "tiny.yaml"
    assert w1.save_file(sizing)
    assert str(gguf.resolve()) in sizing.read_text()
    # another window, whose session never imported it: opening the sizing imports it again
    w2 = make_window(restore=False, path=tmp_path / "other.ini")
    assert "tiny-dropped" not in {m.name for m in w2.session.cat.models.values()}
    assert w2.open_file(sizing)
    settle(w2)
    cfg = w2.session.cfg
    assert cfg.model.name == "tiny-dropped" and cfg.workload.batch == 3 and cfg.quant == w1.session.cfg.quant
    assert w2.session.prediction.weights_gb == pytest.approx(w1.session.prediction.weights_gb)
    # the file is gone: the sizing is refused with the reason, the window keeps its inputs
    gguf.unlink()
    w3 = make_window(restore=False, path=tmp_path / "third.ini")
    before = w3.session.cfg
    assert not w3.open_file(sizing)
    settle(w3)
    assert w3.session.cfg is before
    assert "could not be imported again" in w3.statusBar().currentMessage()


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_the_last_session_s_import_is_restored_at_start(make_window, tmp_path, settings_path, settle):
    w1 = make_window()
    assert w1.import_source(str(FIXTURES / "gemma-2-2b.json"))
    settle(w1)
    key = w1.session.cfg.model.key
    w1.close()                                           # saves the settings
    w2 = make_window()
    settle(w2)
    assert w2.session.cfg.model.key == key and key in w2.session.cat.models
    assert not w2.settings.notices


def test_a_hub_id_is_fetched_in_the_background_offline_from_the_cache(window, qtbot, tmp_path, monkeypatch):
    import huggingface_hub.constants as hc

    commit = "0123456789abcdef0123456789abcdef01234567"
    base = tmp_path / "hub" / "models--Qwen--Qwen2.5-7B"
    (base / "snapshots" / commit).mkdir(parents=True)
    (base / "refs").mkdir()
    (base / "refs" / "main").write_text(commit)
    shutil.copy(FIXTURES / "qwen2.5-7b.json", base / "snapshots" / commit / "config.json")
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setattr(hc, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(hc, "HF_HUB_CACHE", str(tmp_path / "hub"))
    s = window.session
    assert window.import_source("hf:Qwen/Qwen2.5-7B")
    # the catalog has its own Qwen2.5 7B: the import sits beside it, named as imported
    qtbot.waitUntil(lambda: s.cfg.model.name == "Qwen2.5-7B (imported)", timeout=10000)
    assert s.cfg.model.key != "qwen2.5-7b" and "qwen2.5-7b" in s.cat.models
    assert s.imports.sources[s.cfg.model.key] == "hf:Qwen/Qwen2.5-7B"
    before = s.cfg
    window.import_source("hf:Qwen/Not-There")
    qtbot.waitUntil(lambda: "not in the local cache" in window.statusBar().currentMessage(), timeout=10000)
    assert s.cfg is before


def test_text_fields_leave_file_drops_to_the_window(window):
    from PySide6.QtWidgets import QLineEdit

    window.show_view("whatifs")
    edits = window.findChildren(QLineEdit)
    assert window.inputs.model_picker.search in edits and window.whatifs.spin_k.lineEdit() in edits
    assert not any(e.acceptDrops() for e in edits)


def test_file_menu_import_model_runs_the_dialog(window, monkeypatch, settle):
    from ui import import_dialog

    def accept(dlg):
        dlg.path.setText(str(FIXTURES / "gpt-oss-20b.json"))
        dlg.read_source()
        settle(dlg)
        return 1

    monkeypatch.setattr(import_dialog.ImportDialog, "exec", accept)
    action = next(a for a in window.menuBar().actions()[0].menu().actions() if a.text() == "&Import model…")
    assert action.shortcut().toString() == "Ctrl+I"
    action.trigger()
    settle(window)
    s = window.session
    m = s.cfg.model
    assert m.name.startswith("gpt-oss-20b") and m.is_moe and s.cfg.runtime.key == "llama.cpp"
    # on a runtime that loads it, its own MXFP4 checkpoint is the format, as on the command line
    window.inputs.hw_picker._choose("h100 sxm5")
    assert s.cfg.hardware.key == "h100-sxm5-80gb" and s.cfg.runtime.key == "vllm" and s.cfg.quant.key == "mxfp4"


def test_choosing_an_imported_gguf_again_brings_back_its_own_mix(window, tmp_path, write_gguf, settle):
    s = window.session
    path = tmp_path / "tiny.gguf"
    write_gguf(path, name="tiny-dropped")
    assert drop(window, [path])
    settle(window)
    key, mix = s.cfg.model.key, s.cfg.quant.key
    assert s.cfg.quant.kind == "gguf" and mix != "q4_k_m"
    window.inputs.model_picker._choose("llama 3.1 8b")
    assert s.cfg.quant.key == "q4_k_m"                      # the file's mix is for its own model only
    combo = window.inputs.model_picker.combo
    combo.setCurrentIndex(combo.findData(key))
    combo.activated.emit(combo.currentIndex())
    assert s.cfg.model.key == key and s.cfg.quant.key == mix


def test_drop_several_files_imports_each_and_says_which_failed(window, tmp_path, write_gguf, settle):
    s = window.session
    first, second, bad = tmp_path / "one.gguf", tmp_path / "two.gguf", tmp_path / "broken.gguf"
    write_gguf(first, name="dropped-one")
    write_gguf(second, name="dropped-two")
    bad.write_bytes(b"GGUF not really")
    assert drop(window, [first, bad, second])
    settle(window)
    names = {s.cat.models[k].name for k in picker_keys(window) if k in s.cat.models}
    assert {"dropped-one", "dropped-two"} <= names
    assert s.cfg.model.name == "dropped-two"  # the last that imports is the one in use
    message = window.statusBar().currentMessage()
    assert "Imported 2 of 3 models" in message and "broken.gguf (" in message


def test_start_up_never_waits_for_a_referenced_file(make_window, settle, monkeypatch):
    """Issue 30 (6): the last session's imported model is read again on a worker. While the file is
    still being read (here: a reader held until the test lets it go, as a hung network disk would),
    the window is built, shown and answers input; the last inputs follow once the file is read."""
    import threading

    import ui.main_window as mw

    w1 = make_window()
    assert w1.import_source(str(FIXTURES / "gemma-2-2b.json"))
    settle(w1)
    w1.session.set_inputs(batch=5)
    key = w1.session.cfg.model.key
    w1.close()

    release, started = threading.Event(), threading.Event()
    real = mw.read_import

    def held(source):
        started.set()
        assert release.wait(20)
        return real(source)

    monkeypatch.setattr(mw, "read_import", held)
    w2 = make_window()                       # returns although the file is not read yet
    assert started.wait(10) and key not in w2.session.cat.models
    assert "Reading the last session" in w2.statusBar().currentMessage()
    release.set()
    settle(w2)
    assert w2.session.cfg.model.key == key and w2.session.cfg.workload.batch == 5


def test_inputs_changed_while_the_import_is_read_are_kept(make_window, settle, monkeypatch):
    import threading

    import ui.main_window as mw

    w1 = make_window()
    assert w1.import_source(str(FIXTURES / "gemma-2-2b.json"))
    settle(w1)
    key = w1.session.cfg.model.key
    w1.close()
    release = threading.Event()
    real = mw.read_import
    monkeypatch.setattr(mw, "read_import", lambda source: release.wait(20) and real(source))
    w2 = make_window()
    w2.session.set_inputs(model="qwen3 8b")  # the user goes on while the file is read
    release.set()
    settle(w2)
    assert key in w2.session.cat.models and w2.session.cfg.model.key == "qwen3-8b"
    assert "were changed while" in w2.statusBar().currentMessage()


def test_a_pipe_is_refused_without_opening_it(window, tmp_path, settle):
    """Opening a named pipe for reading blocks until a writer comes: it is refused before that."""
    fifo = tmp_path / "model.gguf"
    os.mkfifo(fifo)
    assert not window.import_source(str(fifo))
    assert "not a regular file" in window.statusBar().currentMessage()
    with pytest.raises(api.AdvisorError, match="not a regular file"):
        api.import_model(str(fifo))
    folder = tmp_path / "folder"
    folder.mkdir()
    os.mkfifo(folder / "only.gguf")
    with pytest.raises(api.AdvisorError, match="not a regular file"):
        api.import_model(str(folder))


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_an_import_takes_the_name_given_and_keeps_it_in_sizings_and_sessions(make_window, tmp_path, qtbot,
                                                                             settle):
    from ui.import_dialog import ImportDialog

    w1 = make_window()
    dlg = ImportDialog(w1, start_dir=str(tmp_path))
    qtbot.addWidget(dlg)
    dlg.path.setText(str(FIXTURES / "gemma-2-2b.json"))
    dlg.read_source()
    settle(dlg)
    own = dlg.imported.model.name
    assert dlg.name.text() == own and dlg.chosen_name() == ""       # its own name unless changed
    dlg.name.setText("Our Gemma 2B")
    assert dlg.chosen_name() == "Our Gemma 2B"
    assert w1.import_source(dlg.source(), imported=dlg.imported, name=dlg.chosen_name())
    s = w1.session
    assert s.cfg.model.name == "Our Gemma 2B" and s.cfg.model.key == "our-gemma-2b"
    assert [m.name for m in s.cat.models.values()].count("Our Gemma 2B") == 1
    s.set_inputs(batch=3)
    sizing = tmp_path / "ours.yaml"
    assert w1.save_file(sizing)
    assert "model_name: Our Gemma 2B" in sizing.read_text()
    # a fresh window reads the file again, under the name given
    w2 = make_window(restore=False, path=tmp_path / "other.ini")
    assert w2.open_file(sizing)
    settle(w2)
    assert w2.session.cfg.model.name == "Our Gemma 2B" and w2.session.cfg.workload.batch == 3
    # and so does the next session
    w1.close()
    w3 = make_window()
    settle(w3)
    assert w3.session.cfg.model.key == "our-gemma-2b" and w3.session.cfg.model.name == "Our Gemma 2B"
    assert not w3.settings.notices
