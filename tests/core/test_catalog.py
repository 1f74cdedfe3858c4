"""The shipped catalog loads cleanly; every kind of bad entry is reported and skipped."""

from pathlib import Path

import pytest

from advisor.data.catalog import load_catalog, parse_file
from advisor.data.errors import UnknownName

DATA = Path(__file__).resolve().parents[1] / "data"


def test_shipped_catalog_loads_without_problems(cat):
    assert cat.issues == ()
    assert len(cat.hardware) >= 80
    assert len(cat.models) >= 40
    assert len(cat.quants) >= 20 and len(cat.kv_dtypes) >= 4 and len(cat.runtimes) >= 5


def test_every_entry_cites_a_source(cat):
    for section in ("hardware", "models", "quants", "kv_dtypes", "runtimes"):
        for e in cat.section(section).values():
            assert len(e.source) > 10, f"{section} {e.key} has no real source"


def test_catalog_covers_the_families_people_run(cat):
    kinds = {h.kind for h in cat.hardware.values()}
    assert {"datacenter", "workstation", "consumer", "laptop", "apple", "soc"} <= kinds
    vendors = {h.vendor for h in cat.hardware.values()}
    assert {"NVIDIA", "AMD", "Intel", "Apple"} <= vendors
    models = cat.models.values()
    assert any(m.attention == "mla" and m.is_moe for m in models)          # DeepSeek-V3 family
    assert any(m.sliding_layers for m in models)                           # sliding window
    assert any(m.linear_layers for m in models)                            # hybrid
    assert any(m.is_moe and m.attention == "gqa" for m in models)          # Mixtral / Qwen3 MoE


def test_apple_bins_differ(cat):
    m3max30 = cat.hardware_named("M3 Max 30-core")
    m3max40 = cat.hardware_named("M3 Max 40-core")
    assert m3max30.gpu_cores == 30 and m3max40.gpu_cores == 40
    assert m3max30.bandwidth_gb_s < m3max40.bandwidth_gb_s


@pytest.mark.parametrize("table,section", [("reference_devices_names.txt", "hardware"),
                                           ("reference_models_names.txt", "models")])
def test_every_reference_row_resolves_by_name(cat, table, section):
    lines = (DATA / table).read_text().splitlines()
    names = [n for n in lines if n and not n.startswith("#")]
    assert len(names) > 20
    for name in names:
        cat.resolve(section, name)  # raises UnknownName if not


GOOD = """
hardware:
  - key: test-gpu
    vendor: NVIDIA
    name: Test GPU
    kind: consumer
    family: nvidia-ada
    memory_gib: 24
    bandwidth_gb_s: 1000
    fp16_dense_tflops: 100
    source: https://example.com/datasheet
"""


def _write(tmp_path, text, name="x.yaml"):
    p = tmp_path / name
    p.write_text(text)
    return p


def _issues_for(tmp_path, text):
    parsed, issues = parse_file(_write(tmp_path, text))
    return parsed, issues


def test_a_good_entry_parses(tmp_path):
    parsed, issues = _issues_for(tmp_path, GOOD)
    assert issues == []
    (hw,) = parsed["hardware"]
    assert hw.memory_gib == 24.0 and hw.fp16_dense_tflops == 100.0


@pytest.mark.parametrize("change,field,message", [
    (("bandwidth_gb_s: 1000", "bandwidth_gb_s: -5"), "bandwidth_gb_s", "below the minimum"),
    (("bandwidth_gb_s: 1000", "bandwidth_gb_s: fast"), "bandwidth_gb_s", "must be a number"),
    (("bandwidth_gb_s: 1000", "bandwidth_gb_s: 3.35e12"), "bandwidth_gb_s", "above the maximum"),
    (("    source: https://example.com/datasheet\n", ""), "source", "required"),
    (("kind: consumer", "kind: gaming"), "kind", "not one of"),
    (("memory_gib: 24", "memory_gib: true"), "memory_gib", "must be a number"),
    (("fp16_dense_tflops: 100", "fp16_tflops: 100"), "fp16_tflops", "not a known field"),
    (("key: test-gpu", "key: Test GPU!"), "key", "lower case"),
])
def test_each_validation_error_names_file_entry_and_field(tmp_path, change, field, message):
    parsed, issues = _issues_for(tmp_path, GOOD.replace(*change))
    assert parsed["hardware"] == []
    (issue,) = issues
    assert issue.field == field and message in issue.message
    assert issue.file.endswith("x.yaml") and issue.entry
    assert field in str(issue) and "x.yaml" in str(issue)


def test_yaml_scientific_notation_string_is_read_as_a_number(tmp_path):
    # PyYAML reads 1.0e3 (no sign in the exponent) as text; we accept it as the number it is.
    parsed, issues = _issues_for(tmp_path, GOOD.replace("bandwidth_gb_s: 1000", "bandwidth_gb_s: 1.0e3"))
    assert issues == [] and parsed["hardware"][0].bandwidth_gb_s == 1000.0


def test_unknown_compute_dtype_in_a_quant_is_rejected(tmp_path):
    text = """
quants:
  - key: weird
    name: Weird
    kind: int
    bits_per_weight: 4
    quality_rank: 50
    compute_dtype: {default: fp12}
    source: nowhere in particular
"""
    parsed, issues = _issues_for(tmp_path, text)
    assert parsed["quants"] == [] and issues[0].field == "compute_dtype"


def test_model_cross_field_rules(tmp_path):
    text = """
models:
  - key: broken-moe
    name: Broken MoE
    family: test
    params_total_b: 10
    params_active_b: 2
    layers: 10
    hidden: 1024
    intermediate: 4096
    heads: 8
    kv_heads: 16
    head_dim: 128
    vocab: 32000
    native_context: 4096
    attention: gqa
    source: made up for the test
"""
    parsed, issues = _issues_for(tmp_path, text)
    assert parsed["models"] == [] and issues[0].field == "kv_heads"


@pytest.mark.parametrize("text,message", [
    ("hardware: [\n  - key: a\n", "not valid YAML"),
    ("- just\n- a list\n", "must be a mapping"),
    ("gpus:\n  - key: a\n", "unknown section"),
    ("hardware:\n  key: a\n", "must be a list"),
    ("hardware:\n  - just text\n", "must be a mapping of fields"),
])
def test_malformed_files_are_reported(tmp_path, text, message):
    parsed, issues = _issues_for(tmp_path, text)
    assert all(v == [] for v in parsed.values())
    assert message in issues[0].message


def test_a_bad_entry_does_not_stop_the_rest(tmp_path):
    good = GOOD
    bad = GOOD.replace("test-gpu", "bad-gpu").replace("bandwidth_gb_s: 1000", "bandwidth_gb_s: -1")
    _write(tmp_path, good, "a.yaml")
    _write(tmp_path, bad, "b.yaml")
    _write(tmp_path, "hardware: [oops", "c.yaml")
    cat = load_catalog(tmp_path, user=None)
    assert list(cat.hardware) == ["test-gpu"]
    assert {Path(i.file).name for i in cat.issues} == {"b.yaml", "c.yaml"}


def test_duplicate_keys_keep_the_first(tmp_path):
    _write(tmp_path, GOOD + GOOD.split("hardware:\n")[1], "dup.yaml")
    cat = load_catalog(tmp_path, user=None)
    assert len(cat.hardware) == 1
    assert "duplicate key" in cat.issues[0].message


def test_unknown_name_lists_nearest(cat):
    with pytest.raises(UnknownName) as err:
        cat.hardware_named("rtx 4099")
    assert "4090" in str(err.value)


def test_a_best_reading_below_the_typical_bandwidth_is_refused_with_its_field(tmp_path):
    slower = GOOD.replace("bandwidth_gb_s: 1000", "bandwidth_gb_s: 1000\n    bandwidth_best_gb_s: 900")
    assert slower != GOOD
    _write(tmp_path, slower, "a.yaml")
    cat = load_catalog(tmp_path, user=None)
    assert not cat.hardware and cat.issues[0].field == "bandwidth_best_gb_s" and "below" in cat.issues[0].message
