"""Issue 27: `calibrate --mine`. A personal profile fitted to the user's own llama-bench rows moves the
predictions for that runtime × hardware toward them (checked on rows left out of the fit), says so,
narrows the band only as far as the rows support, and one command removes it. The shipped
calibration is untouched."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.cli.main import main
from advisor.data.catalog import CATALOG_DIR, load_catalog
from advisor.fit.personal import PERSONAL_FILE
from advisor.model.config import configure
from advisor.model.predict import predict
from advisor.model.roofline import Workload

FIXTURE = Path(__file__).resolve().parents[1] / "data" / "bench_results" / "llama_bench.json"
TESTS = [(512, 0, 0), (1024, 0, 0), (2048, 0, 4096), (0, 128, 0), (0, 128, 4096), (0, 64, 16384), (0, 256, 1024)]


def _machine_that_is_slower(cat, path: Path, decode_k=0.7, prefill_k=1.3) -> list[float]:
    """A llama-bench JSON of an RTX 4080 whose decode runs at 0.7 × today's prediction and prefill at
    1.3 × (what a user's own machine may do); returns the measured values."""
    template = json.loads(FIXTURE.read_text())[0]
    cfg = configure(cat, hardware="rtx 4080", model="qwen2.5 7b", quant="q4_k_m", runtime="llama.cpp")
    rows, values = [], []
    for pp, tg, depth in TESTS:
        p = predict(cat, cfg.replace(workload=Workload(1, pp, tg, depth) if tg else Workload(1, pp, 0, depth)),
                    check_context=False)
        v = p.decode_tok_s * decode_k if tg else p.prefill_tok_s * prefill_k
        rows.append(dict(template, n_prompt=pp, n_gen=tg, n_depth=depth, avg_ts=v, samples_ts=[v], avg_ns=1e9))
        values.append(v)
    path.write_text(json.dumps(rows))
    return values


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_a_personal_profile_moves_predictions_toward_the_users_rows(tmp_path, capsys, private_user_data):
    cat = load_catalog(CATALOG_DIR, user=None)
    path = tmp_path / "mine.json"
    measured = _machine_that_is_slower(cat, path)
    assert main(["calibrate", "--mine", str(path)]) == 0
    out = capsys.readouterr().out
    assert "mine+llama.cpp+rtx-4080" in out and "held out" in out
    row = next(line for line in out.splitlines() if line.startswith("mine+llama.cpp+rtx-4080"))
    before, after, held = (float(x) for x in [c.strip().rstrip(" %") for c in row.split("  ") if "%" in c][:3])
    assert before > 20 and after < 5 and held < before / 2      # left-out rows improve too
    saved = private_user_data / PERSONAL_FILE
    assert saved.is_file()
    # later predictions for that pair use it, and say so; the band holds the user's rows
    mine = load_catalog(CATALOG_DIR, user=private_user_data)
    cfg = configure(mine, hardware="rtx 4080", model="qwen2.5 7b", quant="q4_k_m", runtime="llama.cpp")
    p = predict(mine, cfg.replace(workload=Workload(1, 0, 128, 0)), check_context=False)
    assert "calibrated on your 7 measurements" in p.efficiency_basis
    assert p.decode_low_tok_s <= measured[3] <= p.decode_high_tok_s
    assert p.decode_tok_s == pytest.approx(measured[3], rel=0.08)
    # another card is not affected, nor is the shipped catalog
    other = configure(mine, hardware="rtx 4090", model="qwen2.5 7b", quant="q4_k_m", runtime="llama.cpp")
    assert "mine+" not in predict(mine, other).efficiency_basis
    assert not any(k.startswith("mine+") for k in load_catalog(CATALOG_DIR, user=None).profiles)
    # the CLI shows it; --reset removes it
    assert main(["predict", "--hardware", "rtx 4080", "--model", "qwen2.5 7b", "--quant", "q4_k_m"]) == 0
    assert "calibrated on your 7 measurements" in capsys.readouterr().out
    assert main(["calibrate", "--mine", "--reset"]) == 0
    assert not saved.exists() and "removed" in capsys.readouterr().out


def test_calibrate_mine_refuses_what_it_cannot_fit(tmp_path, capsys):
    serving = Path(__file__).resolve().parents[1] / "data" / "bench_results" / "vllm_serve.json"
    assert main(["calibrate", "--mine", str(serving), "--hardware", "h100 sxm"]) == 2
    assert "serving figure" in capsys.readouterr().err
    assert main(["calibrate", "--mine"]) == 2
    assert "needs result files" in capsys.readouterr().err
    assert main(["calibrate", "--reset"]) == 2
    assert main(["calibrate", "--hardware", "rtx 4090"]) == 2
    assert "--hardware goes with --mine" in capsys.readouterr().err


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_two_calibrations_at_once_both_land(tmp_path, private_user_data):
    """The personal file is read, merged and written under the user-data lock: two processes fitting
    two different cards at the same moment keep both profiles."""
    import subprocess
    import sys

    cat = load_catalog(CATALOG_DIR, user=None)
    a, b = tmp_path / "a.json", tmp_path / "b.json"
    _machine_that_is_slower(cat, a)
    text = a.read_text().replace("NVIDIA GeForce RTX 4080", "NVIDIA GeForce RTX 4090")
    b.write_text(text)
    procs = [subprocess.Popen([sys.executable, "-m", "advisor.cli.entry", "calibrate", "--mine", str(p)],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE) for p in (a, b)]
    for p in procs:
        _out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
    keys = {k for k in load_catalog(CATALOG_DIR, user=private_user_data).profiles if k.startswith("mine+")}
    assert keys == {"mine+llama.cpp+rtx-4080", "mine+llama.cpp+rtx-4090"}


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_a_corrupt_personal_file_is_listed_and_replaced(tmp_path, private_user_data, capsys):
    private_user_data.mkdir(parents=True, exist_ok=True)
    (private_user_data / PERSONAL_FILE).write_text("profiles: [ {key: 'mine+x', decode_bw_fraction: lots} ]\n")
    cat = load_catalog(CATALOG_DIR, user=private_user_data)
    assert cat.issues and not any(k.startswith("mine+") for k in cat.profiles)   # listed, not used, no crash
    path = tmp_path / "mine.json"
    _machine_that_is_slower(load_catalog(CATALOG_DIR, user=None), path)
    assert main(["calibrate", "--mine", str(path)]) == 0
    keys = {k for k in load_catalog(CATALOG_DIR, user=private_user_data).profiles if k.startswith("mine+")}
    assert keys == {"mine+llama.cpp+rtx-4080"}
