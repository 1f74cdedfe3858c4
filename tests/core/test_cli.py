"""The command line contract: output, JSON, exit codes, one-line errors, --cases CSV."""

import csv
import json
import subprocess
import sys

import pytest

from advisor.cli.main import PREDICT_CSV_OUTPUTS, main


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def test_list_hardware_json_has_every_field_and_a_source(capsys):
    code, out, _ = run(capsys, "list", "hardware", "--json")
    rows = json.loads(out)
    assert code == 0 and len(rows) >= 80
    assert all(r["source"] and r["memory_gib"] > 0 and r["bandwidth_gb_s"] > 0 for r in rows)
    assert "usable_memory_gb" in rows[0]


def test_list_models_json(capsys):
    code, out, _ = run(capsys, "list", "models", "--json")
    rows = json.loads(out)
    assert code == 0 and len(rows) >= 40 and all(r["source"] for r in rows)


def test_list_filter_and_table(capsys):
    code, out, _ = run(capsys, "list", "hardware", "--filter", "4090")
    assert code == 0 and "GeForce RTX 4090" in out and "H100" not in out


@pytest.mark.parametrize("what", ["quants", "runtimes", "kv-dtypes"])
def test_list_other_sections(capsys, what):
    code, out, _ = run(capsys, "list", what)
    assert code == 0 and out.count("\n") > 3


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_predict_text_and_json(capsys):
    code, out, _ = run(capsys, "predict", "--hardware", "rtx 4090", "--model", "llama 3.1 8b", "--quant", "q4_k_m")
    assert code == 0 and "Decode:" in out and "TTFT" in out and "fits" in out
    code, out, _ = run(capsys, "predict", "--hardware", "rtx 4090", "--model", "llama 3.1 8b", "--json")
    d = json.loads(out)
    for key in ("ttft_ms", "decode_tok_s", "decode_low_tok_s", "decode_high_tok_s", "decode_ceiling_tok_s",
                "prefill_tok_s", "weights_gb", "kv_gb", "usable_gb", "fits", "max_batch", "max_context", "bound"):
        assert key in d
    assert d["decode_low_tok_s"] <= d["decode_tok_s"] <= d["decode_high_tok_s"] <= d["decode_ceiling_tok_s"]


def test_predict_does_not_fit_exits_1_and_says_by_how_much(capsys):
    code, out, err = run(capsys, "predict", "--hardware", "H100", "--model", "Llama 3.1 405B", "--quant", "bf16")
    assert code == 1
    assert "DOES NOT FIT" in out and "short by" in err and err.count("\n") == 1


@pytest.mark.parametrize("argv,needle", [
    (["predict", "--hardware", "rtx 4099", "--model", "llama 3.1 8b"], "unknown hardware"),
    (["predict", "--hardware", "rtx 6000", "--model", "llama 3.1 8b"], "several"),
    (["predict", "--hardware", "rtx 4090", "--model", "llama 3.1 8b", "--batch", "0"], "batch must be at least 1"),
    (["predict", "--hardware", "rtx 4090", "--model", "llama 3.1 8b", "--prompt", "-3"], "prompt must be at least 0"),
    (["predict", "--hardware", "rtx 4090", "--model", "llama 3.1 8b", "--prompt", "1e9"], "beyond any model"),
    (["predict", "--hardware", "rtx 4090", "--model", "llama 2 7b", "--prompt", "20000"], "native context"),
    (["predict", "--hardware", "rtx 4090", "--model", "llama 3.1 8b", "--batch", "many"], "whole number"),
    (["predict", "--hardware", "rtx 4090"], "needs --hardware and --model"),
    (["predict", "--bogus"], "unrecognized arguments"),
    (["list", "gpus"], "invalid choice"),
])
@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_bad_input_is_one_line_exit_2(capsys, argv, needle):
    code, out, err = run(capsys, *argv)
    assert code == 2
    assert needle in err and err.startswith("advisor: error:") and err.count("\n") == 1
    assert "Traceback" not in err


def test_predict_cases_csv_roundtrip(capsys, tmp_path):
    src = tmp_path / "in.csv"
    src.write_text("label,hardware,model,quant,runtime,gpus,batch,prompt,output,depth\n"
                   "a,rtx 4090,llama 3.1 8b,q4_k_m,,,,,,\n"
                   "b,H100,Llama 3.1 405B,bf16,vllm,1,1,512,128,0\n"
                   "c,rtx 4099,llama 3.1 8b,,,,,,,\n")
    out = tmp_path / "out.csv"
    code, _, err = run(capsys, "predict", "--cases", str(src), "--out", str(out))
    assert code == 1 and "1 of 3" in err
    rows = list(csv.DictReader(out.open()))
    assert [r["label"] for r in rows] == ["a", "b", "c"]  # extra columns carried, order kept
    assert list(rows[0])[:10] == ["label", "hardware", "model", "quant", "runtime", "gpus", "batch", "prompt",
                                  "output", "depth"]
    assert set(PREDICT_CSV_OUTPUTS) <= set(rows[0])
    assert float(rows[0]["decode_tok_s"]) > 0 and rows[0]["fits"] == "true" and rows[0]["error"] == ""
    assert rows[1]["fits"] == "false" and "do not fit" in rows[1]["error"]
    assert "unknown hardware" in rows[2]["error"] and rows[2]["decode_tok_s"] == ""


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_predict_cases_errors(capsys, tmp_path):
    empty = tmp_path / "empty.csv"
    empty.write_text("")
    code, _, err = run(capsys, "predict", "--cases", str(empty))
    assert code == 2 and "empty" in err
    nocol = tmp_path / "nocol.csv"
    nocol.write_text("gpu,llm\nx,y\n")
    code, _, err = run(capsys, "predict", "--cases", str(nocol))
    assert code == 2 and "lacks the column" in err
    code, _, err = run(capsys, "predict", "--cases", str(tmp_path / "missing.csv"))
    assert code == 2 and "cannot read" in err


def test_unwritable_output_is_a_clear_error(capsys, tmp_path):
    src = tmp_path / "in.csv"
    src.write_text("hardware,model\nrtx 4090,llama 3.1 8b\n")
    blocker = tmp_path / "blocker"
    blocker.write_text("")
    code, _, err = run(capsys, "predict", "--cases", str(src), "--out", str(blocker / "out.csv"))
    assert code == 2 and "cannot write" in err


def test_console_script_runs_in_a_subprocess():
    out = subprocess.run([sys.executable, "-m", "advisor.cli.main", "list", "runtimes"], capture_output=True, text=True)
    assert out.returncode == 0 and "vLLM" in out.stdout


@pytest.mark.parametrize("argv,says", [
    (["recommend", "--model", "llama-3.1-8b", "--users", "2", "--top", "-1"], "--top"),
    (["recommend", "--model", "llama-3.1-8b", "--users", "2", "--top", "0"], "--top"),
    (["recommend", "--model", "llama-3.1-8b", "--users", "2", "--rps", "3"], "not both"),
    (["recommend", "--model", "llama-3.1-8b", "--burst", "--rps", "3"], "--burst"),
    (["recommend", "--model", "llama-3.1-8b", "--users", "2", "--max-gpus", "0"], "--max-gpus"),
    (["predict", "--hardware", "rtx 4090", "--model", "llama 3.1 8b", "--gpu-layers", "20", "--host-bandwidth", "0"],
     "host bandwidth"),
    (["predict", "--hardware", "rtx 4090", "--model", "llama 3.1 8b", "--draft-head", "nan"], "draft head"),
    (["predict", "--hardware", "rtx 4090", "--model", "llama 3.1 8b", "--accept", "inf"], "acceptance"),
    (["predict", "--hardware", "rtx 4090", "--model", "llama 3.1 8b", "--out", "x.csv"], "--out"),
    (["predict", "--cases", "CASES", "--hardware", "rtx 4090"], "--hardware"),
    (["predict", "--cases", "CASES", "--json"], "--json"),
    (["serve", "--cases", "CASES", "--concurrency", "4"], "--concurrency"),
    (["serve", "--hardware", "rtx 4090", "--model", "llama 3.1 8b", "--out", "x.csv"], "--out"),
])
@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_contradictory_or_absurd_flags_are_errors_that_name_them(capsys, tmp_path, argv, says):
    """Issue 30 (10): zero, NaN and contradictory flags used to mean "default" or drop one of the
    pair silently; each is now an error (exit 2, one line) that names the flag."""
    cases = tmp_path / "cases.csv"
    cases.write_text("hardware,model,prompt,output,concurrency\nrtx 4090,llama 3.1 8b,500,100,2\n")
    argv = [str(cases) if a == "CASES" else a for a in argv]
    code, out, err = run(capsys, *argv)
    lines = err.strip().splitlines()
    assert code == 2 and len(lines) == 1 and says in lines[0], (code, err)
    assert not (tmp_path / "x.csv").exists()


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_cases_stream_through_in_bounded_memory(tmp_path, capsys):
    """Issue 30 (8): `--cases` held every row (829 MB at 300 s for a million) and wrote nothing until
    the end. Rows now stream: peak memory does not grow with the table, and the output appears only
    complete (an interrupt half-way leaves no file, not even a temporary one)."""
    import tracemalloc

    from advisor.cli.csvio import run_cases

    def table(n):
        path = tmp_path / f"in{n}.csv"
        with path.open("w") as f:
            f.write("hardware,model,prompt\n")
            for i in range(n):
                f.write(f"rtx 4090,llama 3.1 8b,{100 + i % 500}\n")
        return path

    def fill(cells, result):
        result["echo"] = int(cells["prompt"]) * 2
        return ""

    peaks = []
    for n in (2_000, 40_000):
        tracemalloc.start()
        assert run_cases(str(table(n)), str(tmp_path / f"out{n}.csv"), ["hardware", "model"],
                         lambda cols: ["echo", "error"], fill) == 0
        peaks.append(tracemalloc.get_traced_memory()[1])
        tracemalloc.stop()
        rows = (tmp_path / f"out{n}.csv").read_text().splitlines()
        assert len(rows) == n + 1 and rows[1] == "rtx 4090,llama 3.1 8b,100,200,"
    assert peaks[1] < 2 * peaks[0] + 2**20          # 20× the rows, not 20× the memory

    def stop_half_way(cells, result):
        if cells["prompt"] == "150":
            raise KeyboardInterrupt
        return ""

    with pytest.raises(KeyboardInterrupt):
        run_cases(str(table(2_000)), str(tmp_path / "never.csv"), ["hardware", "model"],
                  lambda cols: ["error"], stop_half_way)
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(("never", ".never"))]


@pytest.mark.slow   # over a second here: three recommendations
def test_recommend_past_one_machine_exports_and_names_its_network(capsys, tmp_path):
    """DeepSeek-R1 for 2,000 users on H100s: instances of two nodes or more, their layout, nodes and
    power in the JSON; --export launch writes one script per node of the first instances, each with
    the predicted figures and the benchmark command; compose refuses a plan across machines in one
    line, before printing anything; --network names the link between nodes."""
    args = ("recommend", "--model", "deepseek-r1", "--users", "2000", "--hardware", "h100-sxm5-80gb",
            "--runtime", "sglang", "--tok-s", "15", "--min-bits", "8")
    code, out, _ = run(capsys, *args, "--json", "--top", "3", "--export", "launch", str(tmp_path / "launch"))
    doc = json.loads(out)
    best = doc["candidates"][0]
    assert code == 0 and best["nodes_per_replica"] >= 2 and best["power_kw"] > 0 and best["layout"]
    assert best["joules_per_output_token"] == pytest.approx(best["power_kw"] * 1e3 / best["throughput_tok_s"])
    assert best["network_gbit_s_per_gpu"] == 400   # HGX H100's ConnectX-7 per GPU
    scripts = sorted((tmp_path / "launch").iterdir())
    assert [p.name for p in scripts][:2] == ["node0.sh", "node1.sh"] and doc["exported"]
    text = scripts[0].read_text()
    assert "vllm bench serve" in text and "predicted at 2000 concurrent users" in text and "--nnodes" in text
    assert subprocess.run(["bash", "-n", str(scripts[0])]).returncode == 0
    code, out, err = run(capsys, *args, "--export", "compose", str(tmp_path / "c"))
    assert code == 2 and out == "" and "one machine" in err and len(err.strip().splitlines()) == 1
    code, out, err = run(capsys, *args, "--network", "eth-25", "--json", "--top", "1", "--export", "launch",
                         str(tmp_path / "eth"))
    slow = json.loads(out)["candidates"][0]
    # 25 Gb/s Ethernet is never faster (here the all-to-all still hides behind the other half-batch)
    assert code == 0 and slow["ttft_ms"] >= best["ttft_ms"] and slow["tok_s_per_user"] <= best["tok_s_per_user"]
    assert "network between nodes: eth-25: 25 Gb/s per GPU" in (tmp_path / "eth" / "node0.sh").read_text()


def test_recommend_rejects_an_unknown_network_and_export_kind(capsys, tmp_path):
    code, out, err = run(capsys, "recommend", "--model", "llama-3.1-8b", "--users", "4", "--network", "carrier-pigeon")
    assert code == 2 and "--network" in err and out == ""
    code, out, err = run(capsys, "recommend", "--model", "llama-3.1-8b", "--users", "4", "--export", "helm",
                         str(tmp_path))
    assert code == 2 and "unknown kind 'helm'" in err and out == ""


@pytest.mark.slow   # over a second here: a recommendation and a disaggregated split
def test_recommend_sizes_its_first_answer_as_prefill_and_decode_pools_too(capsys):
    args = ("recommend", "--model", "llama-3.3-70b", "--users", "200", "--prompt", "8000", "--output", "300",
            "--ttft-ms", "1500", "--tok-s", "25", "--hardware", "h100-sxm5-80gb", "--disaggregate", "--top", "2")
    code, out, _ = run(capsys, *args)
    assert code == 0 and "Disaggregated alternative for #1:" in out and "prefill instance(s) of" in out
    code, out, _ = run(capsys, *args, "--json")
    split = json.loads(out)["disaggregated"]
    assert split["meets"] and split["gpus"] == split["prefill_instances"] * split["prefill_gpus_per_instance"] \
        + split["decode_instances"] * split["gpus_per_instance"]
