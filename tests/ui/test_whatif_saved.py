"""The What-ifs tab's chosen technique is kept in sizing files and in the settings, and the tab
shows it when it comes back; files written before it still open."""

from __future__ import annotations

import json

import pytest

from advisor import api
from ui import sizing_file


def _choose(window, kind):
    window.show_view("whatifs")
    view = window.whatifs
    view.kind.setCurrentIndex(view.kind.findData(kind))
    return view


def test_sizing_file_round_trips_the_technique(window, make_window, tmp_path):
    view = _choose(window, "speculative")
    view.spin_k.setValue(6)          # a draft length and acceptance of the user's own
    view.spin_accept.setValue(0.55)
    tech = window.session.whatif.techniques
    assert (tech.draft.key, tech.draft_k, tech.accept) == ("llama-3.2-1b", 6, 0.55)
    path = tmp_path / "spec.yaml"
    assert window.save_file(path)
    *_, saved = sizing_file.read_all(path)
    assert saved == {"draft": "llama-3.2-1b", "draft_k": 6, "accept": 0.55}
    other = make_window(restore=False, path=tmp_path / "other.ini")
    assert other.open_file(path)
    assert other.session.whatif.techniques == tech
    # the other window's What-ifs tab shows it (and does not push its own defaults over it)
    other.show_view("whatifs")
    v = other.whatifs
    assert v.kind.currentData() == "speculative" and v.spin_k.value() == 6 and v.spin_accept.value() == 0.55
    assert other.session.whatif.techniques == tech
    [e] = other.session.whatif.effects
    assert e.after.decode_tok_s != e.before.decode_tok_s


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_offload_layers_round_trip_and_show(window, make_window, tmp_path):
    s = window.session
    assert s.set_inputs(hardware="rtx 3060", model="qwen2.5 32b", runtime="llama.cpp", quant="q4_k_m")
    view = _choose(window, "offload")
    view.spin_layers.setValue(20)
    assert s.whatif.techniques.gpu_layers == 20
    path = tmp_path / "offload.json"
    assert window.save_file(path)
    assert json.loads(path.read_text())["technique"] == {"gpu_layers": 20}
    other = make_window(restore=False, path=tmp_path / "other.ini")
    assert other.open_file(path)
    other.show_view("whatifs")
    assert other.whatifs.kind.currentData() == "offload" and other.whatifs.spin_layers.value() == 20
    assert other.session.whatif.techniques.gpu_layers == 20


def test_settings_keep_the_technique(make_window):
    w = make_window()
    view = _choose(w, "eager")
    assert w.session.whatif.techniques == api.Techniques(flash_attention=False)
    w.save_settings()
    again = make_window()
    assert again.session.whatif.techniques == api.Techniques(flash_attention=False)
    again.show_view("whatifs")
    assert again.whatifs.kind.currentData() == "eager"


def test_old_sizing_file_opens_without_a_technique(window, tmp_path):
    path = tmp_path / "old.json"  # written before techniques (and memory sizes) were saved
    path.write_text(json.dumps({"advisor_sizing": 1, "inputs": {
        "hardware": "rtx-4090", "model": "llama-3.1-8b", "quant": "q4_k_m", "kv_dtype": "f16", "runtime": "llama.cpp",
        "gpus": 1, "parallelism": "", "batch": 1, "prompt": 512, "output": 128, "depth": 0},
        "targets": {"ttft_ms": 0, "tok_s": 0}}))
    assert window.open_file(path)
    assert window.session.cfg.hardware.key == "rtx-4090" and window.session.whatif.techniques is None


@pytest.mark.parametrize("technique, message", [
    ({"speed": 2}, "unknown technique field"),
    ("fast", "must be a mapping"),
])
def test_malformed_technique_is_one_line(tmp_path, technique, message):
    path = tmp_path / "bad.json"
    path.write_text(json.dumps({"advisor_sizing": 1, "inputs": {"hardware": "rtx-4090", "model": "llama-3.1-8b"},
                                "technique": technique}))
    with pytest.raises(sizing_file.SizingFileError, match=message):
        sizing_file.read_all(path)


def test_a_technique_the_core_refuses_leaves_the_inputs_opened(window, tmp_path):
    path = tmp_path / "badk.json"
    path.write_text(json.dumps({"advisor_sizing": 1, "inputs": {"hardware": "rtx-4090", "model": "llama-3.1-8b"},
                                "technique": {"draft": "llama-3.2-1b", "draft_k": 500}}))
    assert window.open_file(path)
    assert "draft length k" in window.session.last_error and "\n" not in window.session.last_error
