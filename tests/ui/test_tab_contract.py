"""One contract over every tab the registry declares (ui/tabs.py): each builds on a bare session,
keeps up with input changes (device, model, workload, undo) without an error, exports its chart when
it has one, gives its table and copy text, and comes to rest. A new tab gets these checks by its
registry line alone."""

from __future__ import annotations

import pytest

from ui.tabs import BY_NAME, TABS, TabView

CHANGES = ({"hardware": "rtx 3090"}, {"prompt": 2048}, {"batch": 8}, {"model": "qwen3 8b"},
           {"hardware": "h100 sxm", "runtime": "vllm"}, {"output": 300})


@pytest.mark.parametrize("name", [t.name for t in TABS])
def test_every_tab_keeps_the_contract(window, qtbot, tmp_path, name):
    errors: list[str] = []
    window.session.sig_error.connect(errors.append)
    assert window.show_view(name)
    view = window.view(name)
    assert isinstance(view, TabView) and getattr(window, name) is view
    for change in CHANGES:
        assert window.session.set_inputs(**change), change
        qtbot.wait(1)
    window.session.undo()
    qtbot.waitUntil(lambda: not view.busy, timeout=30000)
    assert not errors, errors
    assert window.current_view_name() == name
    rows = view.table_rows()
    assert isinstance(rows, list) and all(isinstance(r, list) for r in rows)
    assert isinstance(view.copy_text(), str)
    if view.chart() is not None:
        path = tmp_path / f"{name}.png"
        assert window.export_chart(path)
        assert path.stat().st_size > 1000
    else:
        assert not window.act_chart.isEnabled() or window._chart_target() is None


def test_the_registry_names_each_tab_once_and_the_cli_offers_every_one():
    from ui.app import VIEW_NAMES

    names = [t.name for t in TABS]
    assert len(set(names)) == len(names) == len(BY_NAME)
    assert VIEW_NAMES == tuple(n.replace("_", "-") for n in names)
    titles = [t.title.replace("&", "") for t in TABS]
    assert len(set(titles)) == len(titles)
    # each title's Alt+ mnemonic is its own
    keys = [t.title[t.title.index("&") + 1].lower() for t in TABS]
    assert len(set(keys)) == len(keys)
    assert not set(keys) & {"f", "e", "v", "h"}   # the menus' own: File, Edit, View, Help


def test_a_workload_change_moves_the_roofline_points_without_redrawing_its_roofs(window):
    window.show_view("roofline")
    view = window.roofline
    drawn = dict(view.draws)
    for prompt in (256, 1024, 4096):
        assert window.session.set_inputs(prompt=prompt)
    assert window.session.set_inputs(batch=16)
    assert view.draws["points"] == drawn["points"] + 4
    assert view.draws["roofs"] == drawn["roofs"]
    assert window.session.set_inputs(hardware="h100 sxm")
    assert view.draws["roofs"] == drawn["roofs"] + 1
    decode = next(p for p in window.session.roofline.points if p.name == "decode")
    assert view.point_xy("decode") == (decode.intensity, decode.attained_tflops)
