"""The hardware's memory size: a combo beside the picker for entries that ship in several sizes (Apple
bins), recomputed on change, kept in the settings and in sizing files; old files still open."""

from __future__ import annotations

import pytest
from PySide6.QtCore import Qt

from ui import sizing_file
from ui.session import MEMORY_SIZE_HINT

M3_MAX = "apple-m3-max-40c"  # ships with 48, 64 and 128 GB (catalog/hardware/apple.yaml)


def _pick_memory(window, gb: float) -> None:
    combo = window.inputs.combo_memory
    i = combo.findData(float(gb))
    assert i >= 0, [combo.itemText(k) for k in range(combo.count())]
    combo.setCurrentIndex(i)
    combo.activated.emit(i)  # what a click on the item sends


def test_size_combo_shows_only_for_an_entry_with_sizes(window):
    s = window.session
    assert s.set_inputs(hardware="rtx 4090")
    assert window.inputs.memory_row.isHidden()
    assert s.set_inputs(hardware=M3_MAX)
    assert not window.inputs.memory_row.isHidden()
    combo = window.inputs.combo_memory
    assert [combo.itemData(i) for i in range(combo.count())] == [48.0, 64.0, 128.0]
    # the entry's default size is selected and said to be the default
    assert combo.currentData() == 128.0 and "default" in combo.currentText()


def test_choosing_a_size_changes_usable_memory_and_what_fits(window):
    s = window.session
    assert s.set_inputs(hardware=M3_MAX, model="llama 3.1 70b", runtime="llama.cpp", quant="q8_0")
    big = s.prediction
    assert big.fits
    # the default size is an assumption: the note says so in the app's words, not the CLI's flag
    note = next(n for n in big.notes if "assumed 128 GB" in n)
    assert MEMORY_SIZE_HINT in note and "--memory-gb" not in note
    _pick_memory(window, 48)
    small = s.prediction
    assert s.cfg.hardware.memory_gib == 48.0 and s.cfg.hardware.key == M3_MAX
    # 48 GB: macOS's default wired limit of 3/4 above 32 GB (catalog/hardware/apple.yaml header) = 36 GiB
    assert small.per_gpu_usable_gb < big.per_gpu_usable_gb
    assert not small.fits and small.shortfall_gb > 0
    assert not any("assumed 128 GB" in n for n in small.notes)  # chosen, not assumed
    assert window.results.cards["fits"].value.text() == "No"
    # the runtime and format stay (only the size changed), and undo brings the size back
    assert (s.cfg.runtime.key, s.cfg.quant.key) == ("llama.cpp", "q8_0")
    s.undo()
    assert s.cfg.hardware.memory_gib == 128.0 and window.inputs.combo_memory.currentData() == 128.0


def test_another_hardware_starts_at_its_default_size(window):
    s = window.session
    assert s.set_inputs(hardware=M3_MAX)
    _pick_memory(window, 64)
    assert s.set_inputs(hardware="apple-m4-max-40c")
    assert s.cfg.hardware.memory_gib == s.cat.hardware["apple-m4-max-40c"].memory_gib


def test_a_size_typed_in_the_name_is_the_size_chosen(window, qtbot):
    s = window.session
    picker = window.inputs.hw_picker
    qtbot.keyClicks(picker.search, "M3 Max 40-core 64GB")
    qtbot.keyClick(picker.search, Qt.Key.Key_Return)
    assert s.cfg.hardware.key == M3_MAX and s.cfg.hardware.memory_gib == 64.0
    assert window.inputs.combo_memory.currentData() == 64.0


def test_sizing_file_round_trips_the_size(window, make_window, tmp_path):
    s = window.session
    assert s.set_inputs(hardware=M3_MAX, model="llama 3.1 8b")
    _pick_memory(window, 64)
    path = tmp_path / "mac.yaml"
    assert window.save_file(path)
    inputs, _ = sizing_file.read(path)
    assert inputs["memory_gb"] == 64.0
    other = make_window(restore=False, path=tmp_path / "other.ini")
    assert other.open_file(path)
    assert other.session.cfg.hardware.memory_gib == 64.0
    assert other.inputs.combo_memory.currentData() == 64.0


def test_old_sizing_file_without_a_size_opens_at_the_default(window, tmp_path):
    path = tmp_path / "old.yaml"  # as written before memory sizes: no memory_gb
    path.write_text("advisor_sizing: 1\ninputs: {hardware: apple-m3-max-40c, model: llama-3.1-8b, quant: q4_k_m, "
                    "kv_dtype: f16, runtime: llama.cpp, gpus: 1, parallelism: '', batch: 1, prompt: 512, "
                    "output: 128, depth: 0}\ntargets: {ttft_ms: 0, tok_s: 0}\n")
    assert window.open_file(path)
    assert window.session.cfg.hardware.memory_gib == 128.0


@pytest.mark.parametrize("value", ["64", -1, True])
def test_bad_size_in_a_sizing_file_is_one_line(tmp_path, value):
    path = tmp_path / "bad.json"
    import json

    path.write_text(json.dumps({"advisor_sizing": 1, "inputs": {"hardware": M3_MAX, "model": "llama-3.1-8b",
                                                                 "memory_gb": value}}))
    with pytest.raises(sizing_file.SizingFileError, match="memory_gb"):
        sizing_file.read(path)


def test_a_size_the_hardware_lacks_is_refused_by_the_session(window):
    s = window.session
    assert s.set_inputs(hardware=M3_MAX)
    assert not s.set_inputs(memory_gb=96)
    assert "48, 64, 128" in s.last_error and s.cfg.hardware.memory_gib == 128.0


def test_settings_keep_the_size(make_window, tmp_path):
    w = make_window()
    assert w.session.set_inputs(hardware=M3_MAX)
    _pick_memory(w, 48)
    w.save_settings()
    again = make_window()
    assert again.session.cfg.hardware.key == M3_MAX and again.session.cfg.hardware.memory_gib == 48.0
