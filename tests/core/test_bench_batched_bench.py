"""llama-batched-bench's table (with or without its log) and JSON Lines read into records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.data.errors import AdvisorError
from advisor.fit.bench_formats import batched_bench
from advisor.fit.bench_results import read_results, structured

DATA = Path(__file__).resolve().parents[1] / "data" / "bench_results"


def _read(name: str):
    tool, records = read_results(DATA / name)
    assert tool == "llama-batched-bench"
    return records


def _by_row(records):
    rows: dict = {}
    for r in records:
        rows.setdefault(r.source, {})[r.metric] = r
    return list(rows.values())


def test_readme_table():
    records = _read("batched_bench.txt")
    rows = _by_row(records)
    assert len(rows) == 12
    # B = 1: the batch total and the per-sequence speed are one figure, kept once
    assert sorted(rows[0]) == ["decode_tok_s", "prefill_tok_s"]
    assert len(records) == 2 * 2 + 10 * 3
    b2 = rows[1]     # | 128 | 128 | 2 | 512 | 0.198 | 1295.19 | 5.029 | 50.90 | ...
    pp = b2["prefill_tok_s"]
    assert (pp.value, pp.batch, pp.prompt_tokens) == (1295.19, 2, 128)
    assert (b2["batch_decode_tok_s"].value, b2["batch_decode_tok_s"].batch) == (50.90, 2)
    assert b2["decode_tok_s"].value == pytest.approx(25.45) and b2["decode_tok_s"].batch == 2
    assert (b2["decode_tok_s"].prompt_tokens, b2["decode_tok_s"].output_tokens) == (128, 128)
    last = rows[-1]  # | 128 | 256 | 32 | ... | 426.15 |
    assert last["batch_decode_tok_s"].output_tokens == 256 and last["batch_decode_tok_s"].batch == 32
    assert last["decode_tok_s"].value == pytest.approx(426.15 / 32)
    r = records[0]
    assert (r.tool, r.runtime, r.stat, r.depth_tokens) == ("llama-batched-bench", "llama.cpp", "mean", 0)
    # no main: line, no log: the prompt was not shared (S_PP·T_PP = B·PP), and nothing names the machine
    assert r.hardware is r.model is r.quant is r.build is r.threads is r.gpu_layers is None
    assert r.missing == ("hardware", "gpus", "model", "quant", "build")
    assert r.source == "batched_bench.txt, line 3"


def test_readme_jsonl():
    records = _read("batched_bench.jsonl")
    assert [(r.metric, r.value, r.batch) for r in records] == [
        ("prefill_tok_s", 547.453064, 1), ("decode_tok_s", 36.532974, 1),
        ("prefill_tok_s", 605.770935, 2), ("batch_decode_tok_s", 23.050371, 2),
        ("decode_tok_s", pytest.approx(23.050371 / 2), 2)]
    assert {(r.threads, r.gpu_layers, r.prompt_tokens) for r in records} == {(8, 99, 128)}
    assert records[-1].source == "batched_bench.jsonl, line 2"


def test_log_with_shared_prompt():
    records = _read("batched_bench_log.txt")
    rows = _by_row(records)
    assert len(rows) == 5
    for r in records:
        assert r.hardware == "NVIDIA GeForce RTX 4090" and r.gpus == 1
        assert r.model == "models/Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf" and r.quant == "Q4_K_M"
        assert (r.build, r.threads, r.gpu_layers, r.missing) == ("b6500 (2fb62f8f)", 16, 99, ())
    b16 = rows[-1]   # | 512 | 128 | 16 | 2560 | 0.106 | 4817.60 | 1.840 | 1113.12 | ...
    # is_pp_shared = 1: one prompt pass, so the prefill figure is one sequence's
    assert (b16["prefill_tok_s"].value, b16["prefill_tok_s"].batch) == (4817.60, 1)
    assert (b16["batch_decode_tok_s"].value, b16["batch_decode_tok_s"].batch) == (1113.12, 16)
    assert b16["decode_tok_s"].value == pytest.approx(1113.12 / 16)


def _table(settings: str, row: str) -> str:
    return (f"main: n_kv_max = 4096, {settings}n_gpu_layers = 99, n_threads = 8, n_threads_batch = 8\n\n"
            "|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |\n"
            "|-------|--------|------|--------|----------|----------|----------|----------|----------|----------|\n"
            f"{row}\n")


def test_shared_prompt_read_from_the_numbers_and_separate_generation():
    # no is_pp_shared in the settings (older builds): S_PP·T_PP = 512 = PP, so the prompt was shared
    row = "|   512 |    128 |    4 |   1024 |    0.105 |  4876.19 |    1.195 |   428.45 |    1.300 |   787.69 |"
    shared = batched_bench.parse(_table("", row), None, "t.txt")
    assert [(r.metric, r.batch) for r in shared][0] == ("prefill_tok_s", 1)
    # is_tg_separate = 1: the 4 sequences were generated one after another
    separate = batched_bench.parse(_table("is_pp_shared = 0, is_tg_separate = 1, ", row), None, "t.txt")
    assert [(r.metric, r.value, r.batch) for r in separate] == [("prefill_tok_s", 4876.19, 4),
                                                                 ("decode_tok_s", 428.45, 1)]
    # -npp 0: no prompt pass, its S_PP is nan, and no prefill record
    no_pp = "|     0 |    128 |    2 |    256 |    0.000 |     -nan |    1.102 |   232.40 |    1.102 |   232.40 |"
    assert [r.metric for r in batched_bench.parse(_table("", no_pp), None, "t.txt")] == [
        "batch_decode_tok_s", "decode_tok_s"]


# --- malformed files ------------------------------------------------------------------------------

def _fails(tmp_path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    with pytest.raises(AdvisorError) as exc:
        read_results(p)
    msg = str(exc.value)
    assert "\n" not in msg and name in msg
    return msg


def test_malformed_table(tmp_path):
    text = (DATA / "batched_bench_log.txt").read_text()
    assert "cells" in _fails(tmp_path, "cut.txt", text[: text.index("1113.12") + 3])
    assert "'S_TG t/s'" in _fails(tmp_path, "nan.txt", text.replace("   428.54 |", "      nan |"))
    assert "'S_PP t/s'" in _fails(tmp_path, "word.txt", text.replace("  4888.71 |", "     fast |"))
    assert "'B'" in _fails(tmp_path, "b0.txt", text.replace("|    4 |   1024 |", "|    0 |   1024 |"))
    assert "'PP'" in _fails(tmp_path, "frac.txt", text.replace("|   512 |    128 |    8 |",
                                                                "|  51.2 |    128 |    8 |"))
    assert "'S_TG t/s'" in _fails(tmp_path, "neg.txt", text.replace("|    1.195 |   428.54 |",
                                                                    "|    1.195 |  -428.54 |"))
    assert "'T_TG s'" in _fails(tmp_path, "time.txt", text.replace("|    1.195 |   428.54 |",
                                                                   "|     -nan |   428.54 |"))
    head = "\n".join(ln for ln in text.splitlines() if not ln.startswith("|   512"))
    assert "no rows" in _fails(tmp_path, "empty.txt", head)
    no_col = (DATA / "batched_bench.txt").read_text().replace("T_TG s", "T_XX s")
    assert "'T_TG s'" in _fails(tmp_path, "col.txt", no_col)


def test_malformed_jsonl(tmp_path):
    lines = (DATA / "batched_bench.jsonl").read_text().splitlines()
    assert "line 2" in _fails(tmp_path, "cut.jsonl", lines[0] + "\n" + lines[1][:150] + "\n")
    assert "'speed_tg'" in _fails(tmp_path, "nan.jsonl", lines[0] + "\n" + lines[1].replace(
        '"speed_tg": 23.050371', '"speed_tg": NaN') + "\n")
    assert "'t_pp'" in _fails(tmp_path, "miss.jsonl", lines[0] + "\n" + lines[1].replace(
        '"t_pp": 0.422602, ', '') + "\n")
    assert "'pp'" in _fails(tmp_path, "type.jsonl", lines[0] + "\n" + lines[1].replace('"pp": 128', '"pp": "a"') + "\n")
    assert "'pl'" in _fails(tmp_path, "bool.jsonl", lines[0].replace('"pl": 1', '"pl": true') + "\n" + lines[1] + "\n")
    obj = json.loads(lines[0])
    assert "line 2 is list" in _fails(tmp_path, "list.jsonl", lines[0] + "\n" + json.dumps([obj]) + "\n")


def test_llama_sweep_bench_tables_are_not_claimed():
    # llama-sweep-bench (ik_llama.cpp) prints S_TG without a B column: a different tool
    sweep = ("|    PP |     TG |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |\n"
             "|-------|--------|--------|----------|----------|----------|----------|\n"
             "|   512 |    128 |      0 |    1.000 |   512.00 |    2.000 |    64.00 |\n")
    assert not batched_bench.sniff(sweep, None)
    assert not batched_bench.sniff("", None) and not batched_bench.sniff("[]", []) and not batched_bench.sniff("{}", {})
