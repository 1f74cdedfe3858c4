"""catalog/measured/techniques.csv: public measurements of speculative decoding and partial offload.
The file loads and every row resolves its names against the catalog and can be predicted (no accuracy
threshold: benchmarks/techniques.py reports the error)."""

import importlib.util
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


def bench():
    spec = importlib.util.spec_from_file_location("techniques_bench", ROOT / "benchmarks" / "techniques.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def test_the_file_loads_with_every_column_and_a_source():
    b = bench()
    rows = b.load_rows()
    assert len(rows) >= 9
    assert {r["technique"] for r in rows} == {"speculative", "offload"}
    assert all(r["source_url"].startswith("http") and r["note"] for r in rows)


def test_every_row_resolves_its_names_and_predicts(cat):
    b = bench()
    for row in b.load_rows():
        case = b.resolve(cat, row)
        assert case.config.hardware.key and case.config.model.key
        if row["technique"] == "speculative":
            assert case.techniques.speculative
        else:
            assert case.techniques.gpu_layers == int(row["gpu_layers"])
        p = b.predict_row(cat, case)
        assert math.isfinite(p["predicted"]) and p["predicted"] > 0


def test_a_bad_row_is_a_clear_error(tmp_path):
    b = bench()
    bad = tmp_path / "bad.csv"
    bad.write_text("hardware,model\nRTX 4090,Llama 3.1 8B\n")
    with pytest.raises(b.AdvisorError, match="missing columns"):
        b.load_rows(bad)
