"""The parsed shipped catalog is cached per user (advisor.data.catalog._shipped_doc): the same catalog
either way, reused only for the exact text it was parsed from, and never in the way when the cache is
corrupt, unwritable or switched off."""

from __future__ import annotations

import yaml

from advisor.data import catalog as catalog_module
from advisor.data.catalog import CATALOG_DIR, load_catalog


def _counting_yaml(monkeypatch) -> list[int]:
    calls: list[int] = []
    real = yaml.load

    def load(text, Loader):  # noqa: N803 - yaml's own name
        calls.append(1)
        return real(text, Loader=Loader)

    monkeypatch.setattr(catalog_module.yaml, "load", load)
    return calls


def test_a_second_load_reads_the_cache_and_gives_the_same_catalog(tmp_path, monkeypatch):
    monkeypatch.setenv("ADVISOR_CACHE_DIR", str(tmp_path))
    calls = _counting_yaml(monkeypatch)
    first = load_catalog(CATALOG_DIR)
    parsed = len(calls)
    assert parsed > 10 and len(list((tmp_path / "catalog").glob("*.pickle"))) == parsed
    second = load_catalog(CATALOG_DIR)
    assert len(calls) == parsed            # nothing parsed again
    assert first.hardware == second.hardware and first.models == second.models
    assert first.runtimes == second.runtimes and first.quants == second.quants


def test_an_edited_file_is_parsed_again_and_replaces_its_old_entry(tmp_path, monkeypatch):
    monkeypatch.setenv("ADVISOR_CACHE_DIR", str(tmp_path / "cache"))
    shipped = tmp_path / "catalog"
    monkeypatch.setattr(catalog_module, "CATALOG_DIR", shipped)
    (shipped / "models").mkdir(parents=True)
    source = next(CATALOG_DIR.glob("models/*.yaml"))
    target = shipped / "models" / source.name
    target.write_text(source.read_text(encoding="utf-8"), encoding="utf-8")
    doc = catalog_module._shipped_doc(target, target.read_text(encoding="utf-8"))
    target.write_text(target.read_text(encoding="utf-8") + "\n# edited\n", encoding="utf-8")
    calls = _counting_yaml(monkeypatch)
    again = catalog_module._shipped_doc(target, target.read_text(encoding="utf-8"))
    assert calls == [1] and again == doc
    assert len(list((tmp_path / "cache" / "catalog").glob("*.pickle"))) == 1
    # a file outside the shipped catalog is never cached
    monkeypatch.setattr(catalog_module, "CATALOG_DIR", CATALOG_DIR)
    catalog_module._shipped_doc(target, target.read_text(encoding="utf-8"))
    assert calls == [1, 1]


def test_a_corrupt_unwritable_or_switched_off_cache_is_parsed_around(tmp_path, monkeypatch):
    source = next(CATALOG_DIR.glob("models/*.yaml"))
    text = source.read_text(encoding="utf-8")
    expected = yaml.safe_load(text)
    monkeypatch.setenv("ADVISOR_CACHE_DIR", str(tmp_path))
    catalog_module._shipped_doc(source, text)
    for entry in (tmp_path / "catalog").glob("*.pickle"):
        entry.write_bytes(b"\x80\x05 not a pickle")
    assert catalog_module._shipped_doc(source, text) == expected
    blocked = tmp_path / "a file, not a folder"
    blocked.write_text("x")
    monkeypatch.setenv("ADVISOR_CACHE_DIR", str(blocked))
    assert catalog_module._shipped_doc(source, text) == expected
    monkeypatch.setenv("ADVISOR_CACHE_DIR", "")
    calls = _counting_yaml(monkeypatch)
    assert catalog_module._shipped_doc(source, text) == expected and calls == [1]
