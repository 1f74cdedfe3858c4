"""Public measurements (the calibration CSV format) mapped onto catalog configurations.

Each row becomes a `Case` — hardware, model, quantization, runtime, GPUs, workload, which metric,
the measured value — or an `Unmapped` with the reason. Nothing is dropped silently: rows the model
does not cover (serving under Poisson load, theoretical figures, unknown names) are listed.

Columns (as in catalog/measured/calibration.csv): hardware, hardware_detail, model, params_b,
quant, test, batch, input_len, output_len, value, unit, framework, source_url, note,
bw_gbps_stated, n_gpus, retrieval, file.
"""

from __future__ import annotations

import csv
import dataclasses
import io
import re
from pathlib import Path

from advisor.data.catalog import CATALOG_DIR, Catalog, with_threads
from advisor.data.errors import AdvisorError, UnknownName
from advisor.model.config import Config
from advisor.model.predict import predict
from advisor.fit.calibration import fit_profiles
from advisor.fit.cases import Case, Unmapped
from advisor.fit.serving_cases import decode_cases, load_serving_cases, prefill_cases
from advisor.model.roofline import Workload
from advisor.data.specs import Hardware, Model, Quant, Runtime

DEFAULT_DATA = CATALOG_DIR / "measured" / "calibration.csv"
#: llama-batched-bench's S_TG: the aggregate generation speed of `batch` sequences, each generating
#: output_len tokens after an input_len-token prompt
BATCHED_DECODE_TEST = "tg_batched_tok_s"
REQUIRED_COLUMNS = ("hardware", "model", "quant", "test", "value", "framework")
METRICS = ("decode", "prefill", "ttft", "e2e")


def read_rows(path: str | Path) -> list[dict[str, str]]:
    """Read a measurement CSV; `AdvisorError` for unreadable, empty or column-less files."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8-sig")
    except OSError as exc:
        raise AdvisorError(f"cannot read {p}: {exc.strerror or exc}") from None
    except UnicodeDecodeError:
        raise AdvisorError(f"{p} is not UTF-8 text") from None
    if not text.strip():
        raise AdvisorError(f"{p} is empty")
    try:
        reader = csv.DictReader(io.StringIO(text), strict=True)
        header = [h.strip() for h in (reader.fieldnames or [])]
        rows = list(reader)
    except csv.Error as exc:
        raise AdvisorError(f"{p} is not valid CSV: {exc}") from None
    missing = [c for c in REQUIRED_COLUMNS if c not in header]
    if missing:
        raise AdvisorError(f"{p} lacks the column(s) {', '.join(missing)}; expected the calibration.csv columns")
    for i, row in enumerate(rows):
        if None in row:  # more cells than header columns
            raise AdvisorError(f"{p} line {i + 2}: more cells than columns in the header")
    return [{(k or "").strip(): (v or "").strip() for k, v in row.items()} for row in rows]


_PAREN_RE = re.compile(r"\s*\([^)]*\)")
_CORES_RE = re.compile(r"(\d+)-core GPU", re.I)
_TEST_RE = re.compile(r"^(pp|tg)(\d+)(?:\s*@\s*d(\d+))?$")


def _strip_parens(text: str) -> str:
    return _PAREN_RE.sub("", text).strip()


def _inside_parens(text: str) -> list[str]:
    return [p.split(";")[0].strip() for p in re.findall(r"\(([^)]*)\)", text)]


def _first_int(text: str) -> int | None:
    m = re.search(r"\d+", text.replace(",", ""))
    return int(m.group()) if m else None


def _resolve_first(cat: Catalog, section: str, names: list[str]):
    last: Exception | None = None
    for n in names:
        if not n:
            continue
        try:
            return cat.resolve(section, n)
        except UnknownName as exc:
            last = exc
    raise last or UnknownName(f"no {section} name")


_RAM_RE = re.compile(r"(\d+)\s*GB\b", re.I)


def _with_machine_memory(hw: Hardware, name: str) -> Hardware:
    """A unified-memory entry configured with the RAM the row names ("M1 Max 24-Core GPU 32GB")."""
    m = _RAM_RE.search(name)
    if not (m and hw.unified_memory):
        return hw
    ram = float(m.group(1))
    if ram >= hw.memory_gib:
        return hw
    return dataclasses.replace(hw, memory_gib=ram, gpu_wired_limit_gb=None)


def _hardware(cat: Catalog, row: dict[str, str]) -> Hardware:
    return _with_machine_memory(_resolve_hardware(cat, row), row.get("hardware", ""))


def _resolve_hardware(cat: Catalog, row: dict[str, str]) -> Hardware:
    name, detail = row.get("hardware", ""), row.get("hardware_detail", "")
    names = []
    cores = _CORES_RE.search(detail)
    if cores:
        names.append(f"{_strip_parens(name)} {cores.group(1)}-core GPU")
    m = re.search(r"\b(H100|A100|H200)\b[^;,)]*\b(SXM\d?|PCIe)\b", detail)
    if m:
        # the memory size where the row states one: an A100-SXM4-40GB is not the 80 GB part
        size = re.search(r"\b(\d+)\s*GB\b", f"{detail} {name}", re.I)
        if size:
            names.append(f"{m.group(1)} {m.group(2)} {size.group(1)}GB")
        names.append(f"{m.group(1)} {m.group(2)}")
    names += [name, _strip_parens(name)]
    return _resolve_first(cat, "hardware", names)


def _model(cat: Catalog, row: dict[str, str]) -> Model:
    name = row.get("model", "")
    names = [name, _strip_parens(name)]
    params = row.get("params_b", "")
    # "LLaMA 7B" with params "7 (Llama-2-7b per doc build section)": the doc's own statement
    names += [p for p in _inside_parens(params) if p]
    names += [re.sub(r"\bper doc.*$", "", p).strip() for p in _inside_parens(params)]
    return _resolve_first(cat, "models", names)


def _runtime(cat: Catalog, row: dict[str, str]) -> Runtime:
    fw = row.get("framework", "")
    text = " ".join(row.get(c, "") for c in ("framework", "hardware_detail", "note", "retrieval"))
    low = fw.lower()
    if "ik_llama" in low:
        raise UnknownName("ik_llama.cpp is a fork of llama.cpp with its own CPU kernels (up to twice mainline's "
                          "prompt speed on the same CPU); the catalog has no runtime for it")
    if "vulkan" in low:
        return cat.runtimes["llama.cpp-vulkan"]
    if "llama.cpp" in low:
        # builds of late 2023 are a different runtime generation (prefill about half as fast)
        return cat.runtimes["llama.cpp-2023" if "2023" in text else "llama.cpp"]
    if "sglang" in low:
        return cat.runtimes["sglang"]
    if "tensorrt" in low:
        return cat.runtimes["tensorrt-llm"]
    if "vllm" in low:
        return cat.runtimes["vllm"]
    if "seed" in low:  # the glossary's "realistic serving engines"
        return cat.runtimes["vllm"]
    return cat.runtime_named(_strip_parens(fw) or fw)


def _quant(cat: Catalog, row: dict[str, str], runtime: Runtime) -> Quant:
    raw = row.get("quant", "")
    names = [raw, _strip_parens(raw)] + _inside_parens(raw)
    if raw.lower().startswith("default"):
        names = _inside_parens(raw) + names
    q = _resolve_first(cat, "quants", names)
    if q.runtimes and runtime.format_family not in q.runtimes:
        # the same name in the runtime's own file format ("MXFP4" in a GGUF file)
        for alt in (f"{_strip_parens(raw)} GGUF", f"{_strip_parens(raw)} MoE GGUF"):
            try:
                q2 = cat.quant_named(alt)
            except UnknownName:
                continue
            if runtime.format_family in q2.runtimes:
                return q2
    return q


def _value(text: str) -> tuple[float, str]:
    t = text.strip().replace(",", "")
    m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*-\s*(\d+(?:\.\d+)?)", t)
    if m:  # a range such as "100-130": its midpoint
        lo, hi = float(m.group(1)), float(m.group(2))
        return (lo + hi) / 2, f"range {lo:g}-{hi:g}, midpoint used"
    return float(t.lstrip("~≈")), ""


_KV_RE = re.compile(r"(?:--kv-cache-dtype|kv[ _-]cache[ _-]dtype|-ctk)[ =]+(fp8(?:_e4m3|_e5m2)?|f16|fp16|bf16|q8_0|q4_0)\b",
                    re.I)


def _run_text(row: dict[str, str]) -> str:
    """Where a row states how its run was set up: the hardware detail and the note."""
    return f"{row.get('hardware_detail', '')} {row.get('note', '')}"


def _kv_key(row: dict[str, str]) -> str:
    """The KV-cache dtype the run's command line states (vLLM --kv-cache-dtype, llama.cpp -ctk),
    else f16: the default of every runtime in the data."""
    m = _KV_RE.search(_run_text(row))
    if not m:
        return "f16"
    name = m.group(1).lower()
    return "fp8" if name.startswith("fp8") else {"fp16": "f16", "bf16": "f16"}.get(name, name)


_THREADS_RE = re.compile(r"(?:^|[;,(\s])(?:-t\s*(\d{1,4})|(\d{1,4})\s+threads\b)", re.I)


def _threads(row: dict[str, str]) -> int | None:
    """The CPU threads a CPU row's run used (llama.cpp -t), if its hardware detail states one."""
    m = _THREADS_RE.search(row.get("hardware_detail", ""))
    return int(m.group(1) or m.group(2)) if m else None


_UBATCH_RE = re.compile(r"(?:n_ubatch\s*=?\s*|-ub\s+)(\d{2,6})\b")


def _ubatch(row: dict[str, str]) -> int | None:
    """The micro-batch a row's run used, if its detail or note states exactly one (a note that
    names another run's -ub as well says nothing certain about this one)."""
    found = {int(v) for v in _UBATCH_RE.findall(_run_text(row))}
    return found.pop() if len(found) == 1 else None


def _metric(row: dict[str, str]) -> tuple[str, Workload] | str:
    """The metric and workload of a row, or the reason it cannot be modelled."""
    test = row.get("test", "").strip()
    batch_text = row.get("batch", "1") or "1"
    if "poisson" in batch_text.lower() or "rps" in batch_text.lower():
        return ("serving under Poisson load with ShareGPT's variable request lengths: `advisor serve` models such a "
                "load, but no source we found states the dataset's mean prompt and output lengths, so the rows "
                "cannot be given a workload")
    batch = _first_int(batch_text) or 1
    in_len, out_len = row.get("input_len", ""), row.get("output_len", "")
    if "sharegpt" in (in_len + out_len).lower():
        return "variable ShareGPT request lengths are not a fixed workload"
    m = _TEST_RE.match(test.replace(" ", ""))
    if m:
        kind, n, depth = m.group(1), int(m.group(2)), int(m.group(3) or 0)
        if kind == "pp":
            return "prefill", Workload(batch, n, 0, depth)
        return "decode", Workload(batch, 0, n, depth)
    prompt = _first_int(in_len) or 0
    output = _first_int(out_len) or 0
    if test == "prefill_tok_s":
        return "prefill", Workload(batch, prompt or 512, 0, 0)
    if test in ("decode_tok_s", BATCHED_DECODE_TEST):
        return "decode", Workload(batch, prompt, output or 128, 0)
    if test == "ttft_ms":
        return "ttft", Workload(batch, prompt or 1, max(output, 1), 0)
    if test == "e2e_latency_ms":
        return "e2e", Workload(batch, prompt or 1, max(output, 1), 0)
    return f"the test {test!r} is not one the model predicts"


def map_rows(cat: Catalog, rows: list[dict[str, str]]) -> tuple[list[Case], list[Unmapped]]:
    cases: list[Case] = []
    unmapped: list[Unmapped] = []
    for i, row in enumerate(rows):
        line = i + 2
        text = f"{row.get('hardware', '')} · {row.get('model', '')} · {row.get('quant', '')} · {row.get('test', '')}"
        note = row.get("note", "")
        if "THEORETICAL" in note.upper() or "not a measurement" in note.lower():
            unmapped.append(Unmapped(line, text, "a theoretical bound, not a measurement"))
            continue
        metric = _metric(row)
        if isinstance(metric, str):
            unmapped.append(Unmapped(line, text, metric))
            continue
        kind, workload = metric
        try:
            value, value_note = _value(row.get("value", ""))
        except ValueError:
            unmapped.append(Unmapped(line, text, f"value {row.get('value')!r} is not a number"))
            continue
        if kind in ("ttft", "e2e") and re.match(r"\s*(s|sec|secs|seconds?)\b", row.get("unit", ""), re.I):
            # a latency printed in seconds (vLLM's benchmark_latency tables): compared in ms
            value *= 1e3
            value_note = "; ".join(x for x in (value_note, "seconds as printed, × 1000") if x)
        if row.get("test", "").strip() == BATCHED_DECODE_TEST:
            # the batch's aggregate generation speed; the model predicts each sequence's
            value /= workload.batch
            value_note = "; ".join(x for x in (value_note, f"aggregate ÷ batch {workload.batch}") if x)
        try:
            hw = _hardware(cat, row)
            threads = _threads(row) if hw.kind == "cpu" else None
            if threads:
                hw = with_threads(hw, threads)
            model = _model(cat, row)
            runtime = _runtime(cat, row)
            quant = _quant(cat, row, runtime)
        except AdvisorError as exc:  # an unknown name, or --threads on an entry without its core count
            unmapped.append(Unmapped(line, text, str(exc)))
            continue
        gpus = _first_int(row.get("n_gpus", "") or "1") or 1
        if runtime.key == "llama.cpp-2023" and workload.batch > 1 and kind == "decode":
            unmapped.append(Unmapped(line, text, "late-2023 llama.cpp batched decode (B > 1) ran the matrix-matrix path "
                                                 "(cuBLAS on 16-bit weights) at about a third of the bandwidth its "
                                                 "batch-1 kernel reached (PR #3545's V100 rows): not modelled"))
            continue
        if runtime.key == "llama.cpp-2023" and gpus > 1 and kind == "prefill":
            unmapped.append(Unmapped(line, text, "late-2023 llama.cpp multi-GPU prefill (up to 10× slower than one GPU, "
                                                 "9× apart between machines of the same source) is not modelled"))
            continue
        kv = cat.kv_dtypes[_kv_key(row)]
        try:
            plan = predict(None, Config(hw, model, quant, kv, runtime, gpus, "", workload), check_context=False)
        except AdvisorError as exc:
            unmapped.append(Unmapped(line, text, str(exc)))
            continue
        if not plan.fits:
            unmapped.append(Unmapped(line, text, f"does not fit the machine's usable memory ({plan.notes[0]}); "
                                                 "the measurement reflects swapping or CPU offload"))
            continue
        cases.append(Case(line, hw, model, quant, kv, runtime, gpus, workload, kind, value,
                          row.get("file", "") or row.get("source_url", ""), value_note, _ubatch(row)))
    return cases, unmapped


def load_cases(cat: Catalog, path: str | Path | None = None) -> tuple[list[Case], list[Unmapped]]:
    """The rows of ``path`` (default: the shipped calibration data) as cases; with the shipped data
    also the decode steps servers were measured at (`advisor.fit.serving_cases.decode_cases`:
    lone or lightly loaded vLLM and SGLang servers' inter-token latency) and their prompt rates in
    batches of long prompts (`advisor.fit.serving_cases.prefill_cases`), derived with profiles
    fitted to the rest first (never the catalog's own, so a refit does not feed on itself)."""
    cases, unmapped = map_rows(cat, read_rows(path or DEFAULT_DATA))
    if Path(path or DEFAULT_DATA).resolve() == DEFAULT_DATA.resolve():
        serving = load_serving_cases(cat)[0]
        cases += decode_cases(serving)
        cases += prefill_cases(serving, dataclasses.replace(cat, profiles=fit_profiles(cat, cases)))
    return cases, unmapped
