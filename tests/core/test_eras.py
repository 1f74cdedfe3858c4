"""Runtime builds as an ordered axis (advisor.data.eras): `llama.cpp@DATE` between the calibrated eras."""

import subprocess
import sys

import numpy as np
import pytest

from datetime import date

from advisor.data.eras import build_date, parse_date
from advisor.data.errors import AdvisorError
from advisor.model.config import configure
from advisor.model.predict import predict

ARGS = dict(hardware="rtx 4090", model="llama 2 7b", quant="q4_0", prompt=512)


def at(cat, runtime):
    return predict(cat, configure(cat, runtime=runtime, **ARGS))


def test_dates_parse_and_bad_ones_say_why():
    assert parse_date("2024").isoformat() == "2024-01-01"
    assert parse_date("2024-06").isoformat() == "2024-06-01"
    assert parse_date("2024-06-15").isoformat() == "2024-06-15"
    with pytest.raises(AdvisorError, match="build number"):
        parse_date("b4000")  # a build is placed by the runtime's table, not read as a date
    with pytest.raises(AdvisorError, match="not a valid date"):
        parse_date("2024-13")
    with pytest.raises(AdvisorError, match="neither a date nor a build"):
        parse_date("last spring")


def test_the_ends_are_the_eras_themselves(cat):
    old, new = at(cat, "llama.cpp-2023"), at(cat, "llama.cpp")
    before, after = at(cat, "llama.cpp@2023-01"), at(cat, "llama.cpp@2026-01")
    assert before.decode_tok_s == pytest.approx(old.decode_tok_s) and before.prefill_tok_s == pytest.approx(old.prefill_tok_s)
    assert after.decode_tok_s == pytest.approx(new.decode_tok_s) and after.prefill_tok_s == pytest.approx(new.prefill_tok_s)
    assert "@2026-01-01" in after.runtime


def test_decode_drifts_smoothly_between_the_eras(cat):
    old, new = at(cat, "llama.cpp-2023").decode_tok_s, at(cat, "llama.cpp").decode_tok_s
    dates = ["2023-12", "2024-03", "2024-06", "2024-09", "2024-12", "2025-03", "2025-06", "2025-09"]
    speeds = np.array([at(cat, f"llama.cpp@{d}").decode_tok_s for d in dates])
    lo, hi = min(old, new), max(old, new)
    assert np.all((speeds >= lo * (1 - 1e-9)) & (speeds <= hi * (1 + 1e-9)))
    steps = np.diff(speeds) * np.sign(new - old)
    assert np.all(steps >= -1e-9)          # monotone from the old era to the new


def test_midway_band_holds_both_eras(cat):
    old, new, mid = at(cat, "llama.cpp-2023"), at(cat, "llama.cpp"), at(cat, "llama.cpp@2024-11")
    assert mid.decode_low_tok_s <= mid.decode_tok_s <= mid.decode_high_tok_s
    assert "builds of 2024-11-01" in mid.efficiency_basis
    # the blended band is at least as wide, relative to its speed, as either era's
    width = lambda p: (p.decode_high_tok_s - p.decode_low_tok_s) / p.decode_tok_s
    assert width(mid) >= min(width(old), width(new)) - 1e-9


def test_a_future_date_and_an_undated_engine_are_refused(cat):
    with pytest.raises(AdvisorError, match="future"):
        configure(cat, runtime="llama.cpp@2099-01", **ARGS)
    with pytest.raises(AdvisorError, match="no dated builds"):
        configure(cat, hardware="M2 Ultra", model="llama 3.1 8b", runtime="mlx@2025-01")


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_cli():
    ok = subprocess.run([sys.executable, "-m", "advisor.cli.main", "predict", "--hardware", "rtx 4090", "--model",
                         "llama 2 7b", "--runtime", "llama.cpp@2024-06"], capture_output=True, text=True)
    assert ok.returncode == 0 and "@2024-06-01" in ok.stdout and "builds of 2024-06-01" in ok.stdout
    bad = subprocess.run([sys.executable, "-m", "advisor.cli.main", "predict", "--hardware", "rtx 4090", "--model",
                          "llama 2 7b", "--runtime", "llama.cpp@4000"], capture_output=True, text=True)
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    assert "write b4000 for a build" in bad.stderr


def test_the_build_table_is_ordered_and_sourced(cat):
    builds = cat.runtime_named("llama.cpp").builds
    assert len(builds) >= 20
    assert [b.build for b in builds] == sorted({b.build for b in builds})
    dates = [parse_date(b.date) for b in builds]
    assert dates == sorted(dates)  # a later build was never released earlier
    assert all(b.source for b in builds)


def test_a_build_number_is_placed_between_its_neighbours(cat):
    builds = cat.runtime_named("llama.cpp").builds
    # builds the table does not hold, against public dated bumps to them (janhq/cortex.llamacpp
    # pulls #277 and #424: the latest release on those days)
    for number, known in [(3998, date(2024, 10, 31)), (4872, date(2025, 3, 11))]:
        assert number not in {b.build for b in builds}
        d, how = build_date(builds, number)
        assert how == "~" and abs((d - known).days) <= 7
    first, last = builds[0], builds[-1]
    assert build_date(builds, first.build - 500) == (parse_date(first.date), "by")
    assert build_date(builds, last.build + 500) == (parse_date(last.date), "after")


def test_a_build_runs_as_its_date(cat):
    by_build = at(cat, "llama.cpp@b4000")
    d, _ = build_date(cat.runtime_named("llama.cpp").builds, 4000)
    by_date = at(cat, f"llama.cpp@{d.isoformat()}")
    assert by_build.decode_tok_s == pytest.approx(by_date.decode_tok_s)
    assert f"@b4000 (~{d.isoformat()})" in by_build.runtime
    ok = subprocess.run([sys.executable, "-m", "advisor.cli.main", "predict", "--hardware", "rtx 4090", "--model",
                         "llama 2 7b", "--runtime", "llama.cpp@b4000"], capture_output=True, text=True)
    assert ok.returncode == 0 and "@b4000 (~2024-1" in ok.stdout


# ---- engines released as versions: vLLM, SGLang, TensorRT-LLM ------------------------------------------

H100 = dict(hardware="H100 SXM", model="llama 3.1 8b", prompt=512)


def test_a_release_is_placed_by_its_pypi_day_and_one_profile_spans_the_measured_builds(cat):
    """`vllm@0.7.3` is vLLM as released to PyPI on 2025-02-20: inside the span of builds its
    calibration rows were measured on (0.3.3 to 0.23.0), so the one profile as it is, and it says so."""
    dated = configure(cat, runtime="vllm@0.7.3", **H100)
    assert dated.runtime.at_date == "2025-02-20" and "0.7.3" in dated.runtime.name
    p, plain = predict(cat, dated), predict(cat, configure(cat, runtime="vllm", **H100))
    assert (p.decode_tok_s, p.decode_low_tok_s, p.decode_high_tok_s) == \
        (plain.decode_tok_s, plain.decode_low_tok_s, plain.decode_high_tok_s)
    assert "measured on builds of 2024-03-01 to 2026-06-13" in p.efficiency_basis
    # the other spellings of a release, and the other engines released as versions
    assert configure(cat, runtime="vllm@v0.7.3", **H100).runtime.at_date == "2025-02-20"
    assert configure(cat, runtime="sglang@v0.4.3", **H100).runtime.at_date == "2025-02-14"
    assert configure(cat, runtime="tensorrt-llm@1.2.0rc1", **H100).runtime.at_date == "2025-10-22"


def test_a_release_older_than_every_measured_build_widens_its_band(cat):
    """vLLM 0.1.0 (2023-06-20) is 255 days before the oldest measured build: the same estimate, its band
    widened as for a borrowed build, and the basis says how far the nearest measured builds are."""
    from advisor.model.efficiency import SIBLING_BAND_WIDENING

    old = predict(cat, configure(cat, runtime="vllm@0.1.0", **H100))
    plain = predict(cat, configure(cat, runtime="vllm", **H100))
    assert old.decode_tok_s == pytest.approx(plain.decode_tok_s)
    assert old.decode_low_tok_s == pytest.approx(plain.decode_low_tok_s / SIBLING_BAND_WIDENING["decode"])
    assert old.decode_high_tok_s >= plain.decode_high_tok_s
    assert "nearest measured builds are 255 days from 2023-06-20" in old.efficiency_basis


def test_an_unknown_release_gets_one_line_naming_the_near_ones(cat):
    with pytest.raises(AdvisorError, match=r"vllm 0\.7\.9 is not a release on PyPI.*0\.7\.3"):
        configure(cat, runtime="vllm@0.7.9", **H100)
    with pytest.raises(AdvisorError, match="neither a date nor a build"):
        configure(cat, runtime="llama.cpp@0.7.3", **ARGS)   # llama.cpp has builds, not versions


def test_the_release_table_is_sourced_and_holds_every_span_end(cat):
    import csv

    from advisor.data.eras import RELEASES_FILE, releases

    with open(RELEASES_FILE, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f))
    assert rows and all(r["source"].startswith("https://pypi.org/pypi/") for r in rows)
    for r in rows:
        parse_date(r["date"])
    for rt in cat.runtimes.values():
        if rt.era_from:
            days = set(releases()[rt.key].values())
            # each end of the span is the release day of a build the calibration rows name
            assert rt.era in days and rt.era_from in days and rt.era_from < rt.era
