"""The format, KV and runtime pickers follow the hardware's generation (the core's support matrix):
what the chosen GPU cannot run is greyed out with the core's reason on hover."""

from __future__ import annotations

from PySide6.QtCore import Qt


def _item(combo, key):
    model = combo.model()
    for row in range(model.rowCount()):
        item = model.item(row)
        if item.data(Qt.ItemDataRole.UserRole) == key:
            return item
    raise AssertionError(f"{key} not in the combo")


def _enabled(item) -> bool:
    return bool(item.flags() & Qt.ItemFlag.ItemIsEnabled)


def test_nvfp4_greyed_on_a100_with_the_reason(window):
    s = window.session
    assert s.set_inputs(hardware="a100 80gb", model="llama 3.1 8b", runtime="vllm")
    item = _item(window.inputs.combo_quant, "nvfp4")
    assert not _enabled(item)
    assert "Blackwell" in item.toolTip() and s.cfg.hardware.name in item.toolTip()
    # FP8 loads on vLLM and is not refused on Ampere by the matrix: offered
    assert _enabled(_item(window.inputs.combo_quant, "fp8"))
    # choosing it anyway is refused with the same reason, and the inputs stay
    before = s.cfg.quant.key
    assert not s.set_inputs(quant="nvfp4")
    assert "Blackwell" in s.last_error and s.cfg.quant.key == before
    # on a Blackwell GPU the same runtime offers it
    assert s.set_inputs(hardware="b200")
    assert _enabled(_item(window.inputs.combo_quant, "nvfp4"))


def test_format_refused_by_the_generation_is_dropped_on_a_hardware_change(window):
    s = window.session
    assert s.set_inputs(hardware="b200", model="llama 3.1 8b", runtime="vllm", quant="nvfp4")
    assert s.set_inputs(hardware="a100 80gb")
    # the session does not keep a format the new GPU cannot run: it falls back to a default
    assert s.cfg.quant.key != "nvfp4" and s.cfg.hardware.key.startswith("a100")


def test_vllm_greyed_on_p40(window):
    s = window.session
    assert s.set_inputs(hardware="tesla p40", model="llama 3.1 8b")
    item = _item(window.inputs.combo_runtime, "vllm")
    assert not _enabled(item)
    assert "compute capability" in item.toolTip()
    assert s.cfg.runtime.key != "vllm"
    assert not s.set_inputs(runtime="vllm")  # refused by the core, inputs unchanged
    assert s.cfg.runtime.key != "vllm"
