"""The Recommendations tab's options (those of ``advisor recommend``) change what the core ranks,
and the table shows the core's newer columns: quality, price basis, $/M tokens, replicas, technique."""

from __future__ import annotations

import pytest

from advisor import api


@pytest.fixture
def rec_view(window, qtbot):
    view = window.recommend
    view.spin_max_gpus.setValue(1)  # a small sweep keeps the tests quick
    window.show_view("recommend")
    qtbot.waitUntil(lambda: view.rec is not None and not view.computing, timeout=15000)
    return view


def _recompute(view, qtbot, change) -> None:
    old = view.rec
    change()
    qtbot.waitUntil(lambda: view.rec is not old and not view.computing, timeout=15000)


def _column(view, title):
    cols = [c.title for c in view.model.columns]
    i = cols.index(title)
    return [view.model.cell_text(r, i) for r in range(view.model.rowCount())]


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_cost_basis_control_changes_the_ranking_basis(rec_view, qtbot):
    view = rec_view
    _recompute(view, qtbot, lambda: view.combo_cost_basis.setCurrentIndex(view.combo_cost_basis.findData("rent")))
    assert view.rec.cost_basis == "hour" and view.requirements().cost_basis == "rent"
    assert "ranked by rent" in view.status.text()
    # rent: $/million output tokens at the predicted throughput is shown for the priced rows
    assert any(t not in ("—", "") for t in _column(view, "$/M tok"))
    _recompute(view, qtbot, lambda: view.combo_cost_basis.setCurrentIndex(view.combo_cost_basis.findData("buy")))
    assert view.rec.cost_basis == "purchase" and "ranked by buy" in view.status.text()


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_quality_floor_control_changes_what_passes(rec_view, qtbot):
    view = rec_view
    _recompute(view, qtbot, lambda: view.spin_min_bits.setValue(8))
    strict = view.rec.n_passing
    assert all(c.quant.bits_per_weight >= 8 or c.quality.startswith("reference") for c in view.rec.top(200))
    _recompute(view, qtbot, lambda: view.spin_min_bits.setValue(2))
    assert view.rec.n_passing > strict
    # one quality scale in the table: reference, a published KLD / ppl figure, or "unmeasured"
    assert all(t.startswith(("reference", "KLD", "+", "unmeasured")) for t in _column(view, "Quality"))


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_vendor_and_budget_controls_filter_the_candidates(rec_view, qtbot):
    view = rec_view
    _recompute(view, qtbot, lambda: view.combo_vendor.setCurrentIndex(view.combo_vendor.findData("Apple")))
    assert view.rec.n_passing > 0 and all(c.hardware.vendor == "Apple" for c in view.rec.top(100))
    _recompute(view, qtbot, lambda: view.combo_vendor.setCurrentIndex(0))
    _recompute(view, qtbot, lambda: view.combo_cost_basis.setCurrentIndex(view.combo_cost_basis.findData("buy")))
    _recompute(view, qtbot, lambda: view.spin_budget_usd.setValue(1000))
    assert view.rec.n_passing > 0
    assert all(c.cost_usd is not None and c.cost_usd <= 1000 for c in view.rec.top(100))


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_allow_offload_makes_a_moe_model_pass_on_one_consumer_card(window, rec_view, qtbot):
    view = rec_view
    s = window.session
    _recompute(view, qtbot, lambda: view.combo_kind.setCurrentIndex(view.combo_kind.findData("consumer")))
    _recompute(view, qtbot, lambda: s.set_inputs(model="gpt-oss-120b", batch=1))
    assert view.rec.n_passing == 0  # 120B does not fit in one consumer card's memory
    _recompute(view, qtbot, view.check_offload.click)
    assert view.rec.n_passing > 0
    best = view.rec.top(1)[0]
    assert "offload" in best.technique
    assert any("offload" in t for t in _column(view, "Technique"))
    assert all(t == "1" for t in _column(view, "Replicas"))


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_rows_grouped_by_hardware_with_why_first_and_copyable_launch(window, rec_view, qtbot):
    view = rec_view
    rec = view.rec
    groups = view.groups
    assert len(groups) >= 2
    rows, ranks = view.model.rows, _column(view, "#")
    # each hardware once as a numbered row, its alternatives (↳) right below it, on the same hardware
    numbered = [c for c, r in zip(rows, ranks) if "↳" not in r]
    assert [c.hardware.key for c in numbered] == [g.best.hardware.key for g in groups]
    assert len({c.hardware.key for c in numbered}) == len(numbered)
    for i, (c, r) in enumerate(zip(rows, ranks)):
        if "↳" in r:
            assert r.split()[0] == ranks[i - 1].split()[0] and c.hardware.key == rows[i - 1].hardware.key
    # the first row is the core's best configuration
    assert rows[0] is groups[0].best and rows[0].hardware.key == rec.top(1)[0].hardware.key
    # the core's "Why #1" line, on the basis it ranked by, which the status line states
    assert view.why_first.text() == "Why #1: " + api.why_first(groups[0].best, groups[1].best, rec.cost_basis)
    assert groups[1].best.label in view.why_first.text()
    assert "ranked by" in view.status.text()
    # ungrouped: every configuration in rank order, as before
    view.check_group.setChecked(False)
    assert [c.hardware.key for c in view.model.rows[:5]] == [c.hardware.key for c in rec.top(5)]
    view.check_group.setChecked(True)
    # the launch line from the context menu's action
    view.table.selectRow(0)
    from PySide6.QtGui import QGuiApplication

    QGuiApplication.clipboard().setText("")
    assert view.act_copy_launch in view.table.actions()
    view.act_copy_launch.trigger()
    assert QGuiApplication.clipboard().text() == rows[0].launch != ""


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_verdict_and_data_columns_agree_with_the_core(window, rec_view, qtbot):
    """Issue 26: the app prints one of the three verdicts, the one the row's own band gives, and says
    where no measurement backs the runtime × hardware × format."""
    view = rec_view
    _recompute(view, qtbot, lambda: window.session.set_inputs(tok_s_target=30))
    rows = [view.model.rows[r] for r in range(view.model.rowCount())]
    verdicts, data = _column(view, "Verdict"), _column(view, "Data")
    assert rows and set(verdicts) <= {"meets, with margin", "if the estimate holds", "misses"}
    for c, v, d in zip(rows, verdicts, data):
        assert v == {"margin": "meets, with margin", "estimate": "if the estimate holds", "miss": "misses"}[c.tier]
        assert (c.tier == "margin") == (c.ok and c.tok_s_safe >= 30)
        assert d == api.EVIDENCE_WORDS[c.evidence]
    assert "with margin" in view.status.text() and "only if the estimate holds" in view.status.text()


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_the_table_is_ranked_in_another_process_as_the_core_ranks_here(window, rec_view):
    """The rows the tab shows came from the ranking process (ui/process.py) as a Shortlist, and are the
    rows the core ranks in this process for the same request."""
    import os

    from ui import ranking

    view = rec_view
    child = window.workers._children[ranking.ALL]
    assert child.alive and child.process.pid != os.getpid()
    assert isinstance(view.rec, api.Shortlist) and view.rec.n_passing > 0
    here = api.recommend(window.session.cat, view.requirements())
    assert (view.rec.n_passing, view.rec.n_margin, len(view.rec)) == (here.n_passing, here.n_margin, len(here))
    shown = [(c.hardware.key, c.gpus, c.runtime.key, c.quant.key, c.kv_dtype.key, round(c.tok_s, 6))
             for c in view.rec.top(50)]
    assert shown == [(c.hardware.key, c.gpus, c.runtime.key, c.quant.key, c.kv_dtype.key, round(c.tok_s, 6))
                     for c in here.top(50)]
    assert [g.best.hardware.key for g in view.groups] == [g.best.hardware.key for g in api.by_hardware(here, 60)]


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_several_users_without_a_speed_target_are_sized_for_the_default_speed(window, rec_view, qtbot):
    """The Inputs tab's users with no tok/s target: the ranking holds each user to the default usable
    speed, and the status line says it is a default (the CLI's header and the report say the same)."""
    view = rec_view
    window.inputs.spin_toks_target.setValue(0)
    _recompute(view, qtbot, lambda: window.inputs.spin_batch.setValue(8))
    assert view.rec.requirements.tok_s_default and view.rec.requirements.tok_s == 10
    assert "tok/s per user (the default for several users" in view.status.text()
    assert view.rec.passing_rows and all(float(c.tok_s) >= 10 for c in view.rec.passing_rows)
    _recompute(view, qtbot, lambda: window.inputs.spin_toks_target.setValue(25))
    assert not view.rec.requirements.tok_s_default and "the default for several users" not in view.status.text()
