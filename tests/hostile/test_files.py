"""Issue 30, the hostile-input suite for files (slow tier): every kind of file the tool reads, made
from random structures and from real files with random bytes changed or cut. The contract: a clear
`AdvisorError` (or the reader's own one-line error type) or a result, never another exception, and
never longer than a bound (a hang or an expansion bomb trips the alarm)."""

from __future__ import annotations

import json
import math
import signal
from contextlib import contextmanager
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor import api
from advisor.cli.main import main

pytestmark = pytest.mark.slow

FIXTURES = Path(__file__).resolve().parents[1] / "data" / "hf_configs"
BOUND_S = 20
SETTINGS = settings(max_examples=60, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])

# JSON-like values, nested: what a hand-edited or foreign file may hold anywhere
scalars = st.one_of(st.none(), st.booleans(), st.integers(-2**70, 2**70), st.floats(allow_nan=True),
                    st.text(max_size=30))
values = st.recursive(scalars, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=12), inner, max_size=4)),
                      max_leaves=12)


class _Hung(Exception):
    pass


@contextmanager
def bounded(seconds: int = BOUND_S):
    """Fail the example (not the run) when the reader takes longer than ``seconds``."""
    def ring(*_):
        raise _Hung(f"took longer than {seconds} s")

    old = signal.signal(signal.SIGALRM, ring)
    signal.alarm(seconds)
    try:
        yield
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, old)


def _one_line(err: str) -> bool:
    return err.count("\n") <= 1 and "Traceback" not in err and "internal error" not in err


@SETTINGS
@given(doc=st.dictionaries(st.sampled_from(["advisor_sizing", "inputs", "targets", "model_source", "technique",
                                            "prompt_spread", "x"]), values, max_size=6),
       as_yaml=st.booleans())
def test_sizing_files_of_any_shape(tmp_path_factory, doc, as_yaml, qapp):
    from ui import sizing_file
    from ui.session import Session

    path = tmp_path_factory.mktemp("s") / ("s.yaml" if as_yaml else "s.json")
    path.write_text(yaml.safe_dump(doc) if as_yaml else json.dumps(doc, allow_nan=True))
    with bounded():
        try:
            inputs, targets, _source, technique = sizing_file.read_all(path)
        except sizing_file.SizingFileError as exc:
            assert str(exc) and "\n" not in str(exc)
            return
        session = Session(api.load_catalog(user=False))
        assert session.load_keys(inputs, targets) in (True, False)
        if technique:
            assert session.whatif.load_keys(technique) in (True, False)


@SETTINGS
@given(doc=st.dictionaries(st.sampled_from(["hardware", "models", "quants", "runtimes", "kv_dtypes", "other"]),
                           values, max_size=3))
def test_the_user_overlay_of_any_shape(tmp_path_factory, doc, capsys):
    """A user catalog file of any structure: loaded with issues listed, and commands still answer."""
    folder = tmp_path_factory.mktemp("u")
    (folder / "mine.yaml").write_text(yaml.safe_dump(doc))
    with bounded():
        cat = api.load_catalog(user=folder)
        assert cat.hardware and cat.models
        for issue in cat.issues:
            assert "\n" not in str(issue)
        code = main(["predict", "--hardware", "rtx 4090", "--model", "llama 3.1 8b"])
    assert code in (0, 1, 2) and _one_line(capsys.readouterr().err)


@SETTINGS
@given(cuts=st.lists(st.tuples(st.integers(0, 4000), st.integers(0, 255)), min_size=1, max_size=8),
       truncate=st.one_of(st.none(), st.integers(0, 5000)))
def test_gguf_files_with_changed_or_missing_bytes(tmp_path_factory, write_gguf, cuts, truncate):
    path = tmp_path_factory.mktemp("g") / "m.gguf"
    write_gguf(path, moe=True, tokens=50)
    raw = bytearray(path.read_bytes())
    for at, byte in cuts:
        raw[at % len(raw)] = byte
    path.write_bytes(bytes(raw[:truncate] if truncate is not None else raw))
    with bounded():
        try:
            imported = api.import_model(str(path))
        except api.AdvisorError as exc:
            assert str(exc) and "\n" not in str(exc)
        else:
            assert imported.model.layers >= 1 and imported.model.params_total_b > 0


CONFIGS = sorted(FIXTURES.glob("*.json"))


@SETTINGS
@given(which=st.sampled_from(CONFIGS), changes=st.dictionaries(st.text(max_size=30), values, max_size=4),
       replace=st.lists(st.tuples(st.integers(0, 200), values), max_size=4))
def test_model_configs_with_foreign_values(tmp_path_factory, which, changes, replace):
    """A real config.json with random keys added and random existing fields replaced by any value."""
    cfg = json.loads(which.read_text())
    keys = sorted(cfg)
    for i, v in replace:
        cfg[keys[i % len(keys)]] = v
    cfg.update(changes)
    path = tmp_path_factory.mktemp("c") / "config.json"
    path.write_text(json.dumps(cfg, allow_nan=True))
    with bounded():
        try:
            imported = api.import_model(str(path))
        except api.AdvisorError as exc:
            assert str(exc) and "\n" not in str(exc)
        else:
            assert imported.model.layers >= 1 and imported.model.params_total_b > 0


@SETTINGS
@given(text=st.text(max_size=400), header=st.sampled_from(["", "hardware,model\n", "hardware,model,batch,prompt\n",
                                                           "prompt,output\n"]))
def test_cases_and_length_traces_of_any_text(tmp_path_factory, text, header, capsys):
    folder = tmp_path_factory.mktemp("c")
    cases = folder / "cases.csv"
    cases.write_text(header + text)
    with bounded():
        code = main(["predict", "--cases", str(cases)])
        _out, err = capsys.readouterr()
        assert code in (0, 1, 2) and _one_line(err), err
        code = main(["serve", "--hardware", "rtx 4090", "--model", "llama 3.1 8b", "--lengths", str(cases)])
        _out, err = capsys.readouterr()
        assert code in (0, 1, 2) and _one_line(err), err


RESULTS = sorted(p for p in (Path(__file__).resolve().parents[1] / "data" / "bench_results").iterdir()
                 if p.suffix in (".json", ".jsonl", ".csv", ".txt") or (p.suffix == ".md" and "_" in p.stem
                                                                         and p.stem.count("_") > 1))


@SETTINGS
@given(which=st.sampled_from(RESULTS), cuts=st.lists(st.tuples(st.integers(0, 10**6), st.integers(0, 255)), max_size=6),
       truncate=st.one_of(st.none(), st.integers(0, 20000)))
def test_benchmark_result_files_with_changed_or_missing_bytes(tmp_path_factory, which, cuts, truncate):
    """Issue 30's new surface: every supported result format, with bytes changed or cut. Read, it
    gives records with finite positive values, or one clear line."""
    from advisor.fit.bench_results import read_results

    raw = bytearray(which.read_bytes())
    for at, byte in cuts:
        raw[at % len(raw)] = byte
    path = tmp_path_factory.mktemp("r") / which.name
    path.write_bytes(bytes(raw[:truncate] if truncate is not None else raw))
    with bounded():
        try:
            _tool, records = read_results(path)
        except api.AdvisorError as exc:
            assert str(exc) and "\n" not in str(exc)
        else:
            assert records and all(math.isfinite(r.value) and r.value > 0 for r in records)
