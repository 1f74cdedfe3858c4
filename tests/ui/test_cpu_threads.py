"""The app offers --threads for CPU hardware (issue 27): a Threads field shown for CPU entries only,
which rescales the prediction, survives a memory-size change, undo, and a saved sizing."""

from ui.session import Session
from ui.views.inputs import InputsPanel


def test_threads_field_for_cpus_only(qtbot, cat, tmp_path):
    s = Session(cat)
    view = InputsPanel(s)
    qtbot.addWidget(view)
    view.show()
    assert s.set_inputs(hardware="rtx-4090", model="llama-3.1-8b")
    view.sync()
    assert not view.threads_row.isVisible()
    assert s.set_inputs(hardware="ryzen-9-7950x", runtime="llama.cpp")
    view.sync()
    assert view.threads_row.isVisible() and view.spin_threads.value() == 0
    full = s.prediction.prefill_tok_s
    view.spin_threads.setValue(4)              # the user types 4 threads
    assert s.cfg.hardware.threads == 4 and s.cfg.hardware.name.endswith("4 threads")
    assert s.prediction.prefill_tok_s < full / 2
    assert s.set_inputs(memory_gb=64)          # another memory size keeps the threads
    assert s.cfg.hardware.threads == 4 and s.cfg.hardware.memory_gib == 64
    keys = s.input_keys()
    assert keys["threads"] == 4
    again = Session(cat)
    assert again.load_keys(keys) and again.cfg.hardware.threads == 4
    assert not again.load_keys({**keys, "threads": "many"})
    s.undo()
    s.undo()
    assert s.cfg.hardware.threads == 0
