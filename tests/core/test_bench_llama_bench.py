"""llama-bench's JSON, JSON Lines, CSV and markdown output read into records."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from advisor.data.errors import AdvisorError
from advisor.fit.bench_formats import llama_bench
from advisor.fit.bench_results import read_results, structured

DATA = Path(__file__).resolve().parents[1] / "data" / "bench_results"
README_BUILD = "b5163 (8cf427ff)"


def _read(name: str):
    tool, records = read_results(DATA / name)
    assert tool == "llama-bench"
    return records


def _check_readme_pair(records, pp_value, tg_value, place):
    """The README's two tests (RTX 4080, Qwen2.5-7B Q4_K_M, pp512 then tg128)."""
    pp, tg = records
    assert (pp.metric, pp.value, pp.prompt_tokens, pp.output_tokens) == ("prefill_tok_s", pp_value, 512, None)
    assert (tg.metric, tg.value, tg.prompt_tokens, tg.output_tokens) == ("decode_tok_s", tg_value, None, 128)
    for r in records:
        assert r.tool == "llama-bench" and r.stat == "mean" and r.runtime == "llama.cpp"
        assert r.build == README_BUILD
        assert r.hardware == "NVIDIA GeForce RTX 4080" and r.gpus == 1
        assert r.model == "models/Qwen2.5-7B-Instruct-Q4_K_M.gguf" and r.quant == "Q4_K_M"
        assert (r.batch, r.depth_tokens, r.threads, r.gpu_layers) == (1, 0, 8, 99)
        assert r.concurrency is None and r.missing == ()
    assert [r.source for r in records] == [f"{place} 1", f"{place} 2"]


def test_json():
    records = _read("llama_bench.json")
    _check_readme_pair(records, 7100.002165, 118.881588, "llama_bench.json, test")
    assert records[0].measured_at == "2025-04-24T11:58:50Z"


def test_jsonl():
    records = _read("llama_bench.jsonl")
    _check_readme_pair(records, 7263.609157, 119.844681, "llama_bench.jsonl, line")


def test_csv():
    records = _read("llama_bench.csv")
    _check_readme_pair(records, 7285.676949, 119.915244, "llama_bench.csv, row")
    assert records[1].measured_at == "2025-04-24T11:57:10Z"


def test_markdown_with_depths_and_text_around():
    records = _read("llama_bench_depth.md")
    got = [(r.metric, r.value, r.prompt_tokens, r.output_tokens, r.depth_tokens) for r in records]
    assert got == [("prefill_tok_s", 7340.20, 512, None, 0), ("decode_tok_s", 120.60, None, 128, 0),
                   ("prefill_tok_s", 6425.91, 512, None, 512), ("decode_tok_s", 116.71, None, 128, 512)]
    r = records[0]
    # the table names the model type, not its file, and no hardware; no build footer was pasted
    assert r.model == "qwen2 7B Q4_K - Medium" and r.quant == "Q4_K_M"
    assert (r.gpu_layers, r.batch, r.threads) == (99, 1, None)
    assert r.hardware is None and r.build is None
    assert r.missing == ("hardware", "gpus", "build")
    assert r.source == "llama_bench_depth.md, row 1"


def test_markdown_older_labels():
    records = _read("llama_bench_models.md")
    assert [(r.output_tokens, r.value) for r in records] == [
        (128, 132.19), (256, 129.37), (512, 123.83), (128, 82.17), (256, 80.74), (512, 78.08)]
    assert {r.metric for r in records} == {"decode_tok_s"}
    assert records[3].model == "llama 13B mostly Q4_0" and records[3].quant == "Q4_0"


def test_terminal_paste_names_gpus_build_and_keeps_pp_tg_as_end_to_end():
    records = _read("llama_bench_cuda.txt")
    assert [(r.metric, r.depth_tokens) for r in records] == [
        ("prefill_tok_s", 0), ("decode_tok_s", 0), ("prefill_tok_s", 4096), ("decode_tok_s", 4096), ("e2e_ms", 0)]
    for r in records:
        assert r.hardware == "NVIDIA GeForce RTX 3090" and r.gpus == 2     # from the two Device lines
        assert r.build == "b6500 (050fc7f3)" and r.quant == "Q4_K_M" and r.missing == ()
    pg = records[-1]
    # pp512+tg128 at 539.30 t/s: 640 tokens in 1.187 s, one request end to end
    assert (pg.prompt_tokens, pg.output_tokens, pg.batch, pg.concurrency) == (512, 128, 1, 1.0)
    assert pg.value == pytest.approx(640 / 539.30 * 1000)


def test_2023_schema():
    records = _read("llama_bench_2023.json")
    raw = json.loads((DATA / "llama_bench_2023.json").read_text())
    assert [r.value for r in records] == [t["avg_ts"] for t in raw]
    r = records[0]
    # gpu_info joined with "/" then; no n_depth field (0), no backends
    assert r.hardware == "NVIDIA GeForce RTX 3090" and r.gpus == 2
    assert r.model == "models/llama-2-13b.Q5_K_M.gguf" and r.quant == "Q5_K_M"
    assert (r.build, r.threads, r.depth_tokens) == ("b1700 (0068da7f)", 16, 0)


# --- what the file says about the machine ---------------------------------------------------------

def _one(test: dict) -> list:
    return llama_bench.parse(json.dumps([test]), [test], "t.json")


def _readme_test(**changes) -> dict:
    test = json.loads((DATA / "llama_bench.json").read_text())[0]
    test.update(changes)
    return {k: v for k, v in test.items() if v is not None}


def test_devices_and_split_mode_decide_the_gpu_count():
    assert _one(_readme_test(gpu_info="NVIDIA A100-SXM4-80GB, NVIDIA A100-SXM4-80GB"))[0].gpus == 2
    assert _one(_readme_test(gpu_info="NVIDIA A100-SXM4-80GB, NVIDIA A100-SXM4-80GB", split_mode="none"))[0].gpus == 1
    assert _one(_readme_test(gpu_info="A, A, A", devices="CUDA0/CUDA1"))[0].gpus == 2
    mixed = _one(_readme_test(gpu_info="NVIDIA GeForce RTX 4090, NVIDIA GeForce RTX 3090"))[0]
    assert (mixed.hardware, mixed.gpus) == ("NVIDIA GeForce RTX 4090, NVIDIA GeForce RTX 3090", 2)
    cpu = _one(_readme_test(gpu_info=""))[0]
    assert (cpu.hardware, cpu.gpus, cpu.missing) == ("AMD Ryzen 7 7800X3D 8-Core Processor", None, ())
    assert _one(_readme_test(devices="none"))[0].hardware == "AMD Ryzen 7 7800X3D 8-Core Processor"
    assert _one(_readme_test(n_gpu_layers=-1))[0].gpu_layers is None       # "auto", not a count


def test_file_type_names():
    q = llama_bench.quant_from_model_type
    assert q("qwen2 7B Q4_K - Medium") == "Q4_K_M"
    assert q("llama 7B Q2_K - Medium") == "Q2_K"
    assert q("llama 7B Q3_K - Extra small") == "Q3_K_XS"
    assert q("llama 8B IQ2_XXS - 2.0625 bpw") == "IQ2_XXS"
    assert q("gpt-oss 20B MXFP4 MoE") == "MXFP4"
    assert q("llama 7B all F32") == "F32"
    assert q("llama 7B BF16 (guessed)") == "BF16"
    assert q("llama 7B unknown, may not work") is None


# --- malformed files ------------------------------------------------------------------------------

def _fails(tmp_path, name: str, text: str) -> str:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    with pytest.raises(AdvisorError) as exc:
        read_results(p)
    msg = str(exc.value)
    assert "\n" not in msg and name in msg
    return msg


def _json_with(**changes) -> str:
    tests = json.loads((DATA / "llama_bench.json").read_text())
    tests[1].update(changes)
    tests[1] = {k: v for k, v in tests[1].items() if v is not None}
    return json.dumps(tests, indent=2)


def test_malformed_json(tmp_path):
    text = (DATA / "llama_bench.json").read_text()
    assert "complete" in _fails(tmp_path, "cut.json", text[: len(text) // 2])
    assert "'avg_ts'" in _fails(tmp_path, "noavg.json", _json_with(avg_ts=None))
    assert "'avg_ts'" in _fails(tmp_path, "type.json", _json_with(avg_ts="fast"))
    assert "'avg_ts'" in _fails(tmp_path, "nan.json", _json_with(avg_ts=float("nan")))
    assert "'avg_ts'" in _fails(tmp_path, "neg.json", _json_with(avg_ts=-3.5))
    assert "'avg_ts'" in _fails(tmp_path, "zero.json", _json_with(avg_ts=0))
    assert "'n_gen'" in _fails(tmp_path, "ngen.json", _json_with(n_gen=None))
    assert "'n_prompt'" in _fails(tmp_path, "np.json", _json_with(n_prompt=-512))
    assert "'n_prompt'" in _fails(tmp_path, "npb.json", _json_with(n_prompt=True))
    assert "'n_threads'" in _fails(tmp_path, "thr.json", _json_with(n_threads=[8]))
    assert "'gpu_info'" in _fails(tmp_path, "gi.json", _json_with(gpu_info=7))
    assert "both 0" in _fails(tmp_path, "none.json", _json_with(n_gen=0))
    assert "test 3 is int" in _fails(tmp_path, "elem.json", json.dumps(json.loads(text) + [5]))
    _fails(tmp_path, "empty.json", "[]")


def test_malformed_jsonl_csv_and_markdown(tmp_path):
    lines = (DATA / "llama_bench.jsonl").read_text().splitlines()
    assert "line 2" in _fails(tmp_path, "cut.jsonl", lines[0] + "\n" + lines[1][:300] + "\n")
    assert "'avg_ts'" in _fails(tmp_path, "nan.jsonl", lines[0] + "\n" + lines[1].replace(
        '"avg_ts": 119.844681', '"avg_ts": NaN') + "\n")
    csv_text = (DATA / "llama_bench.csv").read_text()
    assert "row 2" in _fails(tmp_path, "cut.csv", csv_text[: len(csv_text) - 40])
    assert "'avg_ts'" in _fails(tmp_path, "nan.csv", csv_text.replace('"7285.676949"', '"nan"'))
    header = csv_text.splitlines()[0]
    assert "no rows" in _fails(tmp_path, "head.csv", header + "\n")
    md = (DATA / "llama_bench_depth.md").read_text()
    assert "'t/s'" in _fails(tmp_path, "ts.md", md.replace("7340.20 ± 23.45", "fast"))
    assert "'avg_ts'" in _fails(tmp_path, "nan.md", md.replace("7340.20 ± 23.45", "nan ± nan"))
    assert "'pp5x12'" in _fails(tmp_path, "test.md", md.replace("          pp512 |", "         pp5x12 |", 1))
    assert "cells" in _fails(tmp_path, "cells.md", md.replace("|      6425.91 ± 18.88 |", ""))
    assert "'n_gpu_layers'" in _fails(tmp_path, "ngl.md", md.replace("|  99 |", "| all |", 1))
