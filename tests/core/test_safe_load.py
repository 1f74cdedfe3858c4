"""Issue 30 (5, 7): YAML alias bombs and deep nesting in files a user hands us are refused in one
line before anything is built from them; every reader of such files goes through
`advisor.data.safe_load`."""

from __future__ import annotations

import json
import time
import tracemalloc

import pytest

from advisor.data.errors import AdvisorError
from advisor.data.safe_load import MAX_DEPTH, check_depth, load_json, load_yaml

#: 9 levels of 9 aliases: ~400 bytes that expand to 9^9 ≈ 387 million strings
BOMB = "a: &a [" + ",".join(['"lol"'] * 9) + "]\n" + "".join(
    f"{b}: &{b} [" + ",".join([f"*{a}"] * 9) + "]\n" for a, b in zip("abcdefgh", "bcdefghi"))
DEEP_YAML = "[" * (MAX_DEPTH + 5) + "]" * (MAX_DEPTH + 5)
DEEP_JSON = "[" * 100_000 + "]" * 100_000


def test_an_alias_bomb_is_refused_before_it_expands():
    tracemalloc.start()
    t = time.perf_counter()
    with pytest.raises(AdvisorError, match="expands to more than"):
        load_yaml(BOMB, "bomb.yaml")
    _, peak = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    assert peak < 20 * 2**20 and time.perf_counter() - t < 5


def test_aliases_within_reason_still_load():
    doc = load_yaml("base: &b {memory_gib: 80}\nx: *b\ny: [*b, *b]\n", "ok.yaml")
    assert doc["x"] == {"memory_gib": 80} and doc["y"][1]["memory_gib"] == 80


def test_deep_nesting_is_refused_in_yaml_and_json():
    with pytest.raises(AdvisorError, match="nested more than"):
        load_yaml(DEEP_YAML, "deep.yaml")
    with pytest.raises(AdvisorError, match="nested"):
        load_json(DEEP_JSON, "deep.json")
    with pytest.raises(AdvisorError, match="nested more than"):
        load_json("[" * (MAX_DEPTH + 2) + "]" * (MAX_DEPTH + 2), "deep.json")
    assert check_depth({"a": [1, {"b": 2}]}, "fine") == {"a": [1, {"b": 2}]}


def test_a_bombed_user_overlay_is_one_issue_and_the_catalog_loads(private_user_data):
    from advisor.data.catalog import user_catalog

    private_user_data.mkdir(parents=True, exist_ok=True)
    (private_user_data / "hardware.yaml").write_text(BOMB)
    t = time.perf_counter()
    cat = user_catalog()
    assert time.perf_counter() - t < 5
    assert "h100-sxm5-80gb" in cat.hardware
    assert any("expands to more than" in i.message for i in cat.issues)


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_the_cli_says_one_line_for_deep_files(tmp_path, capsys):
    from advisor.cli.main import main

    folder = tmp_path / "model"
    folder.mkdir()
    (folder / "config.json").write_text(DEEP_JSON)
    assert main(["import-model", str(folder)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nested" in err[0]
    trace = tmp_path / "lengths.jsonl"
    trace.write_text(json.dumps({"prompt": 10, "output": 5}) + "\n" + DEEP_JSON + "\n")
    assert main(["serve", "--hardware", "rtx 4090", "--model", "llama 3.1 8b", "--rate", "1",
                 "--lengths", str(trace)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nested" in err[0]
