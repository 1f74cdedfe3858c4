"""Issue 27: every result fixture is claimed by exactly one format, the one it was written for (its
file name starts with the module's name), and reads to records through the dispatcher."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from advisor.fit.bench_results import FORMAT_MODULES, read_results, structured

DATA = Path(__file__).resolve().parents[1] / "data" / "bench_results"
MODULES = {name: importlib.import_module(f"advisor.fit.bench_formats.{name}") for name in FORMAT_MODULES}
#: the notes beside the fixtures (one per format module) are not results
FIXTURES = sorted(p for p in DATA.iterdir() if p.is_file() and not (p.suffix == ".md" and p.stem in MODULES))


def _owner(path: Path) -> str:
    return max((m for m in MODULES if path.name.startswith(m)), key=len)


@pytest.mark.parametrize("path", FIXTURES, ids=lambda p: p.name)
def test_each_fixture_is_claimed_by_its_own_format_only(path):
    text = path.read_text(encoding="utf-8-sig")
    data = structured(text, path.name)
    claimed = [name for name, mod in MODULES.items() if mod.sniff(text, data)]
    assert claimed == [_owner(path)]
    tool, records = read_results(path)
    assert tool == MODULES[_owner(path)].TOOL and records


def test_every_format_has_fixtures_and_notes():
    for name in FORMAT_MODULES:
        if name == "advisor_measure":   # written by tests/core/test_measure_endpoint.py through the command
            continue
        assert any(_owner(p) == name for p in FIXTURES), name
        assert (DATA / f"{name}.md").is_file(), name
