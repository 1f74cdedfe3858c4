"""Sizing files and settings: round trips, and bad files that fall back with a notice."""

from __future__ import annotations

import pytest
from PySide6.QtCore import QByteArray

from ui import sizing_file
from ui.settings import Settings


@pytest.mark.parametrize("name", ["sizing.yaml", "sizing.json"])
def test_save_then_open_round_trips(window, tmp_path, name):
    s = window.session
    s.set_inputs(hardware="h100 sxm", model="llama 3.1 70b", gpus=2, batch=16, prompt=2000, output=300,
                 depth=1000, ttft_target_ms=800, tok_s_target=20, prompt_spread=1.25, prompt_cache=False)
    saved = s.state
    path = tmp_path / name
    assert window.save_file(path)
    assert not list(tmp_path.glob(".*.tmp"))  # the temporary file was renamed into place
    s.new()
    assert s.state != saved
    assert window.open_file(path)
    assert s.state == saved
    assert name in window.windowTitle()


@pytest.mark.parametrize("text", ["inputs: [unclosed", "just a string", "inputs: {hardware: rtx-4090}",
                                  "inputs: {hardware: rtx-4090, model: no-such-model-xyz}",
                                  "inputs: {hardware: rtx-4090, model: llama-3.1-8b, batch: -3}",
                                  "inputs: {hardware: rtx-4090, model: llama-3.1-8b, prompt_spread: 40}",
                                  "inputs: {hardware: rtx-4090, model: llama-3.1-8b, prompt_cache: sometimes}"])
def test_a_bad_sizing_file_gives_a_message_and_keeps_the_inputs(window, tmp_path, text):
    path = tmp_path / "bad.yaml"
    path.write_text(text)
    before = window.session.state
    assert not window.open_file(path)
    assert window.session.state == before
    assert "bad.yaml" in window.statusBar().currentMessage()


def test_missing_sizing_file(tmp_path):
    with pytest.raises(sizing_file.SizingFileError, match="cannot read"):
        sizing_file.read(tmp_path / "nope.json")


def test_settings_round_trip(tmp_path):
    path = tmp_path / "s.ini"
    st = Settings(path)
    st.set("window/tab", 3)
    st.set("window/splitter", [300, 900])
    st.set("window/geometry", QByteArray(b"\x01\x02\x03"))
    st.set("session/inputs", {"inputs": {"hardware": "rtx-4090"}, "targets": {"tok_s": 5}})
    st.set("files/last_dir", "/tmp")
    st.sync()
    again = Settings(path)
    assert again.get("window/tab") == 3
    assert again.get("window/splitter") == [300, 900]
    assert bytes(again.get("window/geometry")) == b"\x01\x02\x03"
    assert again.get("session/inputs")["targets"] == {"tok_s": 5}
    assert again.get("files/last_dir") == "/tmp"
    assert again.notices == []


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_window_restores_inputs_tab_and_splitters(make_window, settings_path):
    w = make_window()
    w.session.set_inputs(model="qwen2.5 7b", batch=6)
    w.show_view("curves")
    w.splitter.setSizes([420, 880])
    cfg = w.session.cfg
    w.close()
    w2 = make_window()
    assert w2.session.cfg == cfg
    assert w2.current_view_name() == "curves"
    assert abs(w2.splitter.sizes()[0] - 420) < 40
    assert not w2.session.can_undo()  # restoring is not an undoable edit


def test_corrupt_settings_fall_back_with_a_notice(make_window, settings_path):
    settings_path.write_text("[window]\ntab=abc\nsplitter=x,y\ngeometry=not bytes\n"
                             "[session]\ninputs={not json\n[files]\nlast_dir=@Variant(garbage\n")
    w = make_window()
    assert w.current_view_name() == "roofline"  # tab fell back to 0
    notices = " ".join(w.settings.notices)
    assert "window/tab" in notices and "session/inputs" in notices
    assert "⚠" in w.statusBar().currentMessage()
    assert w.session.prediction is not None


def test_foreign_inputs_in_settings_fall_back(make_window, settings_path):
    st = Settings(settings_path)
    st.set("session/inputs", {"inputs": {"hardware": "no-such-gpu", "model": "llama-3.1-8b"}})
    st.sync()
    w = make_window()
    assert w.session.cfg.hardware.key == "rtx-4090"
    assert any("could not be restored" in n for n in w.settings.notices)


@pytest.mark.parametrize("value", [
    {"inputs": "rtx-4090"}, {"inputs": ["a"]}, {"inputs": {"hardware": 5, "model": []}},
    {"inputs": {"hardware": "rtx-4090", "model": "llama-3.1-8b", "batch": "lots"}},
    {"inputs": {"hardware": "rtx-4090", "model": "llama-3.1-8b"}, "targets": "fast"},
    {"inputs": {"hardware": "rtx-4090", "model": "llama-3.1-8b"}, "targets": {"ttft_ms": "x"}},
    {"inputs": {"hardware": "rtx-4090", "model": "llama-3.1-8b"}, "technique": "spec"},
    {"inputs": {"hardware": "rtx-4090", "model": "llama-3.1-8b"}, "technique": {"draft": 5}},
    {"imported": ["x"]}, {"imported": {"m": 5}}, {"imported": {"m": "/no/such/file.gguf"}},
    {"inputs": {"hardware": "rtx-4090", "model": "llama-3.1-8b", "prompt_spread": "wide"}},
    {"inputs": {"hardware": "rtx-4090", "model": "llama-3.1-8b", "prompt_cache": "off"}},
    {"inputs": {"hardware": "rtx-4090", "model": "llama-3.1-8b", "memory_gb": "big"}},
])
def test_stored_inputs_of_any_shape_never_stop_the_app(make_window, settings_path, value):
    """Issue 30 (1): a stored `session/inputs` of the wrong shape used to raise at every start."""
    st = Settings(settings_path)
    st.set("session/inputs", value)
    st.sync()
    w = make_window()
    assert w.session.prediction is not None and w.session.cfg.hardware.key == "rtx-4090"


def test_an_unexpected_failure_while_restoring_drops_the_inputs_once(make_window, settings_path, monkeypatch):
    """Whatever goes wrong restoring the last inputs, the app starts from the defaults, says so, and
    forgets the value, so the next start is clean."""
    st = Settings(settings_path)
    st.set("session/inputs", {"inputs": {"hardware": "h100 sxm", "model": "llama-3.1-8b"}})
    st.sync()
    from ui.session import Session

    def boom(*_a, **_k):
        raise RuntimeError("simulated")

    monkeypatch.setattr(Session, "load_keys", boom)
    w = make_window()
    assert w.session.prediction is not None and w.session.cfg.hardware.key == "rtx-4090"
    assert any("dropped" in n for n in w.settings.notices)
    assert w.settings.get("session/inputs") == {}
    assert not w.session.can_undo()


@pytest.mark.parametrize("name,text", [("deep.json", "[" * 100_000 + "]" * 100_000),
                                       ("bomb.yaml", "a: &a [1,1,1,1,1,1,1,1,1]\n" + "".join(
                                           f"{b}: &{b} [" + ",".join([f"*{a}"] * 9) + "]\n"
                                           for a, b in zip("abcdefgh", "bcdefghi")))])
def test_deep_or_bombed_sizing_files_are_refused_in_one_line(window, tmp_path, name, text):
    """Issue 30 (7, 5): `advisor-gui deep.json` crashed with a RecursionError; an alias bomb would
    expand to hundreds of millions of values. Both are refused; the inputs stay."""
    path = tmp_path / name
    path.write_text(text)
    before = window.session.state
    assert not window.open_file(path)
    assert window.session.state == before
    assert name in window.statusBar().currentMessage()


def test_a_deeply_nested_stored_setting_falls_back(make_window, settings_path):
    settings_path.write_text("[session]\ninputs=" + "[" * 5000 + "]" * 5000 + "\n")
    w = make_window()
    assert w.session.prediction is not None
    assert any("session/inputs" in n for n in w.settings.notices)


def test_a_layout_across_nodes_and_its_network_round_trip_through_a_sizing_file(tmp_path):
    """A sizing of DeepSeek-R1 on two H100 nodes with attention DP 16 + EP 16 over RoCE opens as it was saved."""
    from ui import sizing_file
    from ui.session import Session

    s = Session()
    assert s.set_inputs(model="deepseek-r1", hardware="h100-sxm5-80gb", runtime="sglang", layout="dp16+ep16",
                        network="roce-400", batch=256)
    assert s.cfg.gpus == 16 and s.cfg.layout.ep == 16 and s.cfg.network == "roce-400"
    path = sizing_file.write(tmp_path / "wide.yaml", s.to_file_dict())
    inputs, targets = sizing_file.read(path)
    again = Session()
    assert again.load_keys(inputs, targets)
    assert (again.cfg.gpus, again.cfg.layout, again.cfg.network) == (16, s.cfg.layout, "roce-400")
    assert again.prediction.parallelism == s.prediction.parallelism == "attention DP 16 + EP 16"
