"""Out-of-sample validation: whole sources (or build eras) left out of the fit and predicted."""

import dataclasses
import json
import math

import pytest

from advisor.cli.main import main
from advisor.data.catalog import Catalog
from advisor.fit.calibration import predictions
from advisor.fit.measurements import Case, load_cases
from advisor.fit.calibration import MIN_BAND, bands_from, calibrate, predict_held_out
from advisor.fit.validation import holdout
from advisor.model.efficiency import (SIBLING_BAND_WIDENING, UNCALIBRATED_DECODE_BAND, UNCALIBRATED_PREFILL_BAND,
                                      Efficiency)
from advisor.model.roofline import Workload


def _bare(cat):
    return Catalog(hardware=cat.hardware, models=cat.models, quants=cat.quants, kv_dtypes=cat.kv_dtypes,
                   runtimes=cat.runtimes, profiles={})


TRUTH = Efficiency(decode_bw_fraction=0.8, layer_overhead_us=20.0, step_overhead_us=300.0,
                   prefill_compute_fraction=0.3, attention_compute_fraction=0.3, allreduce_latency_us=30.0)


def _cases(cat, source: str, speedup: float, devices=("rtx-4090", "rtx-4080")):
    """'Measurements' the model makes with TRUTH, then sped up by ``speedup``: one source."""
    rt, kv = cat.runtimes["llama.cpp"], cat.kv_dtypes["f16"]
    cases = []
    for hw in devices:
        for model, quant in (("llama-2-7b", "q4_0"), ("llama-2-13b", "q4_0"), ("llama-3.2-3b", "q8_0")):
            for metric, wl in (("decode", Workload(1, 0, 128, 0)), ("prefill", Workload(1, 512, 0, 0)),
                               ("prefill", Workload(1, 2048, 0, 4096))):
                cases.append(Case(len(cases) + 2, cat.hardware[hw], cat.models[model], cat.quants[quant], kv, rt, 1,
                                  wl, metric, 1.0, source))
    values = predictions(cases, [TRUTH] * len(cases))
    return [dataclasses.replace(c, measured=float(v) * speedup) for c, v in zip(cases, values)]


def test_a_source_left_out_is_predicted_from_the_others_only(cat):
    bare = _bare(cat)
    # source b measured everything 20 % slower than source a, on the same devices
    cases = _cases(bare, "a.csv", 1.0) + _cases(bare, "b.csv", 0.8)
    held = predict_held_out(bare, cases, "source")
    assert len(held) == len(cases)
    for h in held:
        # b's rows are predicted from a's fit alone (and the reverse): off by the whole factor,
        # which a fit that had seen b (in-sample) would have split between the two
        want = 1 / 0.8 - 1 if h.unit == "b.csv" else 0.8 - 1
        assert h.error == pytest.approx(want, abs=0.02), (h.unit, h.case.metric, h.error)
        assert h.level == "family"   # two devices of one family remain in the other source


def test_an_unseen_runtime_era_falls_back_to_a_sibling_then_defaults(cat):
    bare = _bare(cat)
    cases = _cases(bare, "a.csv", 1.0)
    old = [dataclasses.replace(c, runtime=bare.runtimes["llama.cpp-2023"], source="old.csv")
           for c in _cases(bare, "old.csv", 1.0)]
    held = predict_held_out(bare, cases + old, "era")
    levels = {(h.unit, h.level) for h in held}
    # the 2023 build borrows the current build's profile (a sibling), and the reverse
    assert levels == {("llama.cpp", "sibling-family"), ("llama.cpp-2023", "sibling-family")}
    # a lone runtime left out has nothing to borrow: its defaults predict it
    held = predict_held_out(bare, cases, "era")
    assert {h.level for h in held} == {"none"}


def test_bands_are_quantiles_of_held_out_errors_per_level(cat):
    import numpy as np

    bare = _bare(cat)
    cases = _cases(bare, "a.csv", 1.0) + _cases(bare, "b.csv", 1.25) + _cases(bare, "c.csv", 0.8)
    held = predict_held_out(bare, cases, "source")
    bands = bands_from(held, (0.10, 0.90))
    r = [h.log_speed_ratio for h in held if h.case.metric == "decode"]   # all at the family level
    lo, hi = bands.own[("decode", "device")]
    assert (lo, hi) == pytest.approx((math.exp(np.quantile(r, 0.1)), math.exp(np.quantile(r, 0.9))))
    assert lo < 0.9 and hi > 1.1
    # no vendor- or runtime-level errors here: those levels take the band of the coarser level,
    # and with none at all the uncalibrated band of efficiency.py (nothing measured backs them)
    assert bands.own[("decode", "vendor")] == UNCALIBRATED_DECODE_BAND
    assert bands.band_for("decode", "sibling-family") == pytest.approx(
        (lo / SIBLING_BAND_WIDENING["decode"], hi * SIBLING_BAND_WIDENING["decode"]))
    assert bands.band_for("prefill", "none") == UNCALIBRATED_PREFILL_BAND


def test_consistent_sources_give_the_narrowest_band(cat):
    bare = _bare(cat)
    result = calibrate(bare, _cases(bare, "a.csv", 1.0) + _cases(bare, "b.csv", 1.0))
    family = next(g for g in result.groups if g.level == "family")
    assert family.band_decode == pytest.approx(MIN_BAND, abs=0.01)
    assert family.band_prefill == pytest.approx(MIN_BAND, abs=0.01)


def test_sibling_widening_is_measured_where_siblings_predicted_rows(cat):
    bare = _bare(cat)
    cur = _cases(bare, "a.csv", 1.0) + _cases(bare, "b.csv", 1.1)
    # the old build is 30 % slower on decode: only a widened band of the current build holds it
    old = [dataclasses.replace(c, runtime=bare.runtimes["llama.cpp-2023"], source="old.csv",
                               measured=c.measured * (0.7 if c.metric == "decode" else 1.0)) for c in cur]
    held = [h for by in ("source", "era") for h in predict_held_out(bare, cur + old, by)]
    bands = bands_from(held)
    assert bands.sibling_widening["decode"] > 1.2
    lo, _ = bands.band_for("decode", "sibling-family")
    assert lo <= 0.7 * 1.01   # the 30 % slower rows are inside


def test_holdout_coverage_uses_bands_from_the_other_sources(cat):
    bare = _bare(cat)
    # three consistent sources and one 2x slower: its band (sized on the other three) cannot cover it
    cases = (_cases(bare, "a.csv", 1.0) + _cases(bare, "b.csv", 1.05) + _cases(bare, "c.csv", 0.95)
             + _cases(bare, "odd.csv", 0.5))
    report = holdout(bare, cases, "source")
    by_unit = {s.label: s for s in report.per_unit("decode")}
    assert by_unit["odd.csv"].coverage == 0.0
    assert by_unit["odd.csv"].bias == pytest.approx(1.0, abs=0.1)
    assert report.seconds > 0


@pytest.mark.slow   # held out by source, era and family: ~30-50 s each
def test_validate_holdout_cli(capsys):
    assert main(["validate", "--holdout", "source", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["holdout"] == "source" and doc["rows_compared"] > 500
    units = {s["group"] for s in doc["by"]["decode"]["source"]}
    assert "xiongjiedai_gpu_benchmarks_llamacpp.csv" in units and len(units) >= 5
    metrics = {m["group"]: m for m in doc["metrics"]}
    # the figures the README states, out of sample (guards against a fit or band regression):
    # errors well below the plain roofline's, and bands that hold 80 ± 10 % of left-out rows
    for name in ("decode", "prefill"):
        assert metrics[name]["mdape_pct"] < 30 and metrics[name]["mdape_pct"] < metrics[name]["roofline_mdape_pct"]
        assert 70 <= metrics[name]["coverage_pct"] <= 90
    worst = doc["worst"][0]
    assert worst["left_out"] in units and worst["predicted_by"] and abs(worst["error_pct"]) > 50
    assert main(["validate", "--holdout", "era"]) == 0
    out = capsys.readouterr().out
    assert "llama.cpp-2023" in out and "by the era left out" in out


@pytest.mark.slow   # held out by source, era and family: ~30-50 s each
def test_holdout_covers_every_mapped_row(cat):
    cases, _ = load_cases(_bare(cat))
    report = holdout(_bare(cat), cases, "era")
    assert len(report.checked) == len(report.held) == len(cases)
