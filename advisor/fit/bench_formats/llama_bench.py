"""llama-bench (llama.cpp's single-sequence benchmark): its JSON, JSON Lines, CSV and markdown output.

What the tool writes (read in ggml-org/llama.cpp, tools/llama-bench/llama-bench.cpp at 050fc7f3, and
examples/llama-bench/llama-bench.cpp at ggerganov/llama.cpp 0068da7f for the 2023 schema; examples in
tools/llama-bench/README.md at 5a32f10a):

- ``-o json``: an array of test objects; ``-o jsonl``: the same objects, one a line. Each has
  ``build_commit``, ``build_number``, ``cpu_info``, ``gpu_info``, ``model_filename``, ``model_type``,
  ``n_threads``, ``n_gpu_layers``, ``split_mode``, ``n_prompt``, ``n_gen``, ``test_time``, ``avg_ns``,
  ``avg_ts`` … and ``samples_ns``/``samples_ts``. Newer builds add ``backends``, ``n_ubatch``,
  ``n_depth`` (the KV cache is filled with that many tokens first) and ``devices``; the 2023 schema has
  ``cuda``/``opencl``/``metal`` flags instead of ``backends`` and no ``n_depth`` (taken as 0).
- ``-o csv``: a header row of the same field names, then every value quoted, one row a test.
- ``-o md`` (the default): a table whose columns depend on the options (model | size | params |
  backend | ngl | threads | n_ubatch | fa | … | test | t/s), the t/s cell "123.45 ± 1.23", the test
  cell "pp512", "tg128", "pp512+tg128", with " @ d4096" for a depth (2023 builds: "pp 512"), then
  "build: <commit> (<number>)". The table names no hardware; when the user pasted the backend's
  start-up lines with it (CUDA/ROCm "Device 0: <name>, compute capability …", Vulkan
  "ggml_vulkan: 0 = <name> (<driver>) | uma: …"), the device is read from them.

Every test is one sequence (batch 1), timed over ``-r`` repetitions; ``avg_ts`` is the mean over
them of (n_prompt + n_gen) / time. So:
- n_prompt > 0, n_gen = 0 ("pp512") → ``prefill_tok_s``, prompt_tokens = n_prompt;
- n_gen > 0, n_prompt = 0 ("tg128") → ``decode_tok_s``, output_tokens = n_gen;
- both ("pp512+tg128", ``-pg``): the t/s mixes prompt and generation tokens over the total time, which
  is no rate this tool predicts; what it does measure is one request's end-to-end time, so it becomes
  ``e2e_ms`` (avg_ns, or (n_prompt + n_gen) / t/s from a markdown table) for one client at a time.
"""

from __future__ import annotations

import csv
import io
import json
import math
import re
from typing import Any, Iterator, Mapping

from advisor.data.errors import AdvisorError
from advisor.fit.bench_records import BenchRecord

TOOL = "llama-bench"
RUNTIME = "llama.cpp"

#: keys every llama-bench test object has had since the first JSON printer
_SIGNATURE = ("n_prompt", "n_gen", "avg_ts")

# --- names shared with batched_bench (the same llama.cpp logs and model descriptions) -------------

#: llama.cpp's file-type names (llama_model_ftype_name) whose size suffix the GGUF file names spell
#: as a letter: "Q4_K - Medium" is a Q4_K_M file; "Q2_K - Medium" is plain Q2_K.
_SIZE_SUFFIX = {"small": "S", "medium": "M", "large": "L", "extra small": "XS"}
_QUANT_RE = re.compile(r"^(?:mostly\s+|all\s+)?([A-Z][A-Z0-9_]*\d[A-Z0-9_]*)"
                       r"(?:\s+-\s+(?i:(extra small|small|medium|large))\b)?(?:\s|,|$)")
_CUDA_DEVICE_RE = re.compile(r"^\s*Device (\d+): (.+?), compute capability \d+\.\d+", re.M)
_VULKAN_DEVICE_RE = re.compile(r"ggml_vulkan: (\d+) = (.+) \([^()]*\) \| uma:", re.M)


def quant_from_ftype(ftype: str) -> str | None:
    """The GGUF file-type name of llama.cpp's description of it ("Q4_K - Medium" → "Q4_K_M",
    "IQ2_XXS - 2.0625 bpw" → "IQ2_XXS", "mostly Q4_0" → "Q4_0", "MXFP4 MoE" → "MXFP4"), or None."""
    text = ftype.replace("(guessed)", "").strip()
    m = _QUANT_RE.match(text)
    if not m:
        return None
    name, size = m.group(1), (m.group(2) or "").strip().lower()
    if name == "Q2_K" and size == "medium":
        return name
    suffix = _SIZE_SUFFIX.get(size)
    return f"{name}_{suffix}" if suffix else name


def quant_from_model_type(model_type: str) -> str | None:
    """llama_model_desc writes "<arch> <size> <file type>" ("qwen2 7B Q4_K - Medium"); neither the
    architecture nor the size name has a space, so the file type is what follows the second one."""
    parts = model_type.split(" ", 2)
    return quant_from_ftype(parts[2]) if len(parts) == 3 else None


def devices_in_log(text: str) -> list[str]:
    """GPU names from the backend's start-up lines pasted with a result (CUDA/ROCm/MUSA, Vulkan)."""
    for pattern in (_CUDA_DEVICE_RE, _VULKAN_DEVICE_RE):
        found: dict[int, str] = {}
        for m in pattern.finditer(text):
            found.setdefault(int(m.group(1)), m.group(2).strip())
        if found:
            return [found[k] for k in sorted(found)]
    return []


def hardware_of(devices: list[str]) -> tuple[str | None, int | None]:
    """(hardware, gpus) of a device list: the one name and the count when all are alike, else the
    names as listed (a mixed machine the catalog cannot name as one card) and the count."""
    names = [d for d in (x.strip() for x in devices) if d]
    if not names:
        return None, None
    if len(set(names)) == 1:
        return names[0], len(names)
    return ", ".join(names), len(names)


def missing_of(*, hardware: str | None, gpus: int | None, model: str | None, quant: str | None,
               build: str | None) -> tuple[str, ...]:
    """The fields a comparison may need that a record lacks; the GPU count only where the hardware
    is unknown too (a CPU run has none to count)."""
    fields = dict(hardware=hardware, gpus=gpus if hardware is None else 0, model=model, quant=quant, build=build)
    return tuple(k for k, v in fields.items() if v is None)


# --- sniffing --------------------------------------------------------------------------------------

def _is_test(obj: Any) -> bool:
    return isinstance(obj, dict) and all(k in obj for k in _SIGNATURE)


def _csv_header_at(lines: list[str]) -> int | None:
    for i, line in enumerate(lines[:50]):
        cells = [c.strip().strip('"') for c in line.split(",")]
        if len(cells) > 3 and all(k in cells for k in _SIGNATURE):
            return i
    return None


def _md_tables(text: str) -> Iterator[tuple[list[str], list[list[str]], int]]:
    """(header cells, row cells, index of the line after the table) of each table with a "test"
    and a "t/s" column; batched-bench's "S_TG t/s" columns are not "t/s"."""
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        cells = _cells(lines[i])
        if cells and "test" in cells and "t/s" in cells:
            rows, j = [], i + 1
            if j < len(lines) and set("".join(_cells(lines[j]) or ["x"])) <= set("-: "):
                j += 1          # the |---|--:| line
            while j < len(lines) and lines[j].strip().startswith("|"):
                rows.append(_cells(lines[j]))
                j += 1
            yield cells, rows, j
            i = j
        else:
            i += 1


def _cells(line: str) -> list[str]:
    s = line.strip()
    if not s.startswith("|"):
        return []
    s = s[1:-1] if s.endswith("|") and len(s) > 1 else s[1:]
    return [c.strip() for c in s.split("|")]


def sniff(text: str, data: Any) -> bool:
    if data is not None:
        items = data if isinstance(data, list) else [data]
        return bool(items) and _is_test(items[0])
    if text.lstrip()[:1] in ("[", "{"):
        # JSON that did not parse (cut short, or NaN written as nan): still ours if it has our keys
        return all(f'"{k}"' in text for k in _SIGNATURE)
    if _csv_header_at(text[:65536].splitlines()) is not None:
        return True
    return "t/s" in text and next(_md_tables(text), None) is not None


# --- parsing ---------------------------------------------------------------------------------------

class _Fields:
    """One test's fields (JSON values, or CSV strings) read with checks that name the field."""

    def __init__(self, values: Mapping[str, Any], where: str):
        self.values, self.where = values, where

    def _bad(self, key: str, what: str) -> AdvisorError:
        return AdvisorError(f"{self.where}: '{key}' {what}")

    def whole(self, key: str, *, required: bool = False, minimum: int | None = None) -> int | None:
        v = self.values.get(key)
        if v is None or v == "":
            if required:
                raise AdvisorError(f"{self.where} has no '{key}'")
            return None
        if isinstance(v, bool):
            raise self._bad(key, f"is {v!r}, not a whole number")
        if isinstance(v, str) and re.fullmatch(r"\s*[+-]?\d+\s*", v):
            v = int(v)
        elif isinstance(v, float) and math.isfinite(v) and v.is_integer():
            v = int(v)
        if not isinstance(v, int):
            raise self._bad(key, f"is {v!r}, not a whole number")
        if minimum is not None and v < minimum:
            raise self._bad(key, f"is {v}, below {minimum}")
        return v

    def rate(self, key: str, *, required: bool = False) -> float | None:
        """A positive finite number (a rate or a duration)."""
        v = self.values.get(key)
        if v is None or v == "":
            if required:
                raise AdvisorError(f"{self.where} has no '{key}'")
            return None
        if isinstance(v, bool):
            raise self._bad(key, f"is {v!r}, not a number")
        if isinstance(v, str):
            try:
                v = float(v)
            except ValueError:
                raise self._bad(key, f"is {v!r}, not a number") from None
        if not isinstance(v, (int, float)):
            raise self._bad(key, f"is {v!r}, not a number")
        v = float(v)
        if not math.isfinite(v) or v <= 0:
            raise self._bad(key, f"is {v}, not a positive finite number")
        return v

    def text(self, key: str) -> str | None:
        v = self.values.get(key)
        if v is None:
            return None
        if not isinstance(v, str):
            raise self._bad(key, f"is {v!r}, not text")
        return v.strip() or None


def _build(number: int | None, commit: str | None) -> str | None:
    if number is not None and commit:
        return f"b{number} ({commit})"
    if commit:
        return commit
    return f"b{number}" if number is not None else None


def _gpu_list(gpu_info: str) -> list[str]:
    # newer builds join the device descriptions with ", ", the 2023 ones with "/"
    sep = ", " if ", " in gpu_info else "/"
    return [g.strip() for g in gpu_info.split(sep) if g.strip()]


def _hardware(f: _Fields) -> tuple[str | None, int | None]:
    """The GPU(s) the test ran on, else the CPU. ``devices`` (newer builds) says which GPUs were
    used: "auto" (all), "none" (the CPU only) or "CUDA0/CUDA1"; ``split_mode`` none uses one."""
    gpu_info, cpu_info = f.text("gpu_info"), f.text("cpu_info")
    devices = (f.text("devices") or "auto").lower()
    if not gpu_info or devices == "none":
        return cpu_info, None
    hardware, gpus = hardware_of(_gpu_list(gpu_info))
    if devices != "auto":
        gpus = len([d for d in devices.split("/") if d])
    if (f.text("split_mode") or "").lower() == "none":
        gpus = 1
    return hardware, gpus


def _record(f: _Fields, source: str, place: str) -> BenchRecord:
    n_prompt = f.whole("n_prompt", required=True, minimum=0)
    n_gen = f.whole("n_gen", required=True, minimum=0)
    if n_prompt == 0 and n_gen == 0:
        raise AdvisorError(f"{f.where}: 'n_prompt' and 'n_gen' are both 0, so it measured nothing")
    avg_ts = f.rate("avg_ts", required=True)
    depth = f.whole("n_depth", minimum=0)
    model_type = f.text("model_type")
    model = f.text("model_filename") or model_type
    quant = quant_from_model_type(model_type) if model_type else None
    hardware, gpus = _hardware(f)
    build = _build(f.whole("build_number"), f.text("build_commit"))
    ngl = f.whole("n_gpu_layers")
    common = dict(tool=TOOL, stat="mean", runtime=RUNTIME, build=build, hardware=hardware, model=model,
                  quant=quant, batch=1, gpus=gpus, threads=f.whole("n_threads", minimum=1),
                  # newer builds write -1 for "as many as fit": not a layer count
                  gpu_layers=ngl if ngl is not None and ngl >= 0 else None,
                  depth_tokens=depth if depth is not None else 0, measured_at=f.text("test_time"),
                  source=f"{source}, {place}",
                  missing=missing_of(hardware=hardware, gpus=gpus, model=model, quant=quant, build=build))
    if n_gen == 0:
        return BenchRecord(metric="prefill_tok_s", value=avg_ts, prompt_tokens=n_prompt, **common)
    if n_prompt == 0:
        return BenchRecord(metric="decode_tok_s", value=avg_ts, output_tokens=n_gen, **common)
    avg_ns = f.rate("avg_ns")
    e2e_ms = avg_ns / 1e6 if avg_ns is not None else (n_prompt + n_gen) / avg_ts * 1e3
    return BenchRecord(metric="e2e_ms", value=e2e_ms, prompt_tokens=n_prompt, output_tokens=n_gen,
                       concurrency=1.0, **common)


def _from_objects(objs: list[Any], source: str, unit: str) -> list[BenchRecord]:
    if not objs:
        raise AdvisorError(f"{source}: a llama-bench result with no tests in it")
    out = []
    for i, obj in enumerate(objs, 1):
        where = f"{source}: {unit} {i}"
        if not isinstance(obj, dict):
            raise AdvisorError(f"{where} is {type(obj).__name__}, not a llama-bench test object")
        out.append(_record(_Fields(obj, f"{source}, {unit} {i}"), source, f"{unit} {i}"))
    return out


def _json_lines(text: str, source: str) -> list[Any]:
    """The objects of a JSON Lines text the dispatcher could not read, or the line that is broken."""
    objs = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            objs.append(json.loads(line))
        except ValueError:
            raise AdvisorError(f"{source}: line {n} is not complete JSON (cut short, or nan written "
                               "where a number goes)") from None
    return objs


def _parse_json_text(text: str, source: str) -> list[BenchRecord]:
    stripped = text.strip()
    if stripped.startswith("["):
        raise AdvisorError(f"{source}: the llama-bench JSON is not complete (cut short, or nan written "
                           "where a number goes)")
    return _from_objects(_json_lines(stripped, source), source, "line")


def _parse_csv(text: str, source: str) -> list[BenchRecord]:
    lines = text.splitlines()
    at = _csv_header_at(lines)
    assert at is not None
    rows = list(csv.reader(io.StringIO("\n".join(ln for ln in lines[at:] if ln.strip()))))
    header = [h.strip() for h in rows[0]]
    if len(rows) == 1:
        raise AdvisorError(f"{source}: a llama-bench CSV with a header and no rows")
    out = []
    for n, row in enumerate(rows[1:], 1):
        where = f"{source}, row {n}"
        if len(row) != len(header):
            raise AdvisorError(f"{where} has {len(row)} values for {len(header)} columns (cut short?)")
        out.append(_record(_Fields(dict(zip(header, row)), where), source, f"row {n}"))
    return out


# markdown ------------------------------------------------------------------------------------------

_TEST_RE = re.compile(r"^(?:pp\s*(\d+)(?:\s*\+\s*tg\s*(\d+))?|tg\s*(\d+))(?:\s*@\s*d\s*(\d+))?$")
_TS_RE = re.compile(r"^([-+]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|[-+]?nan|[-+]?inf)\s*(?:±\s*\S+)?$", re.I)
_MD_BUILD_RE = re.compile(r"^build: ([0-9a-f]{6,40}) \((\d+)\)$")
#: markdown column titles → the JSON field names the row dictionary is read with
_MD_COLUMNS = {"model": "model_type", "ngl": "n_gpu_layers", "threads": "n_threads", "sm": "split_mode",
               "dev": "devices"}


def _md_values(header: list[str], row: list[str], where: str) -> dict[str, Any]:
    if len(row) != len(header):
        raise AdvisorError(f"{where} has {len(row)} cells for {len(header)} columns")
    cells = dict(zip(header, row))
    m = _TEST_RE.match(cells["test"].strip())
    if not m:
        raise AdvisorError(f"{where}: the test '{cells['test']}' is not pp<N>, tg<N> or pp<N>+tg<N>")
    pp, pg_tg, tg, depth = m.groups()
    ts = _TS_RE.match(cells["t/s"].strip())
    if not ts:
        raise AdvisorError(f"{where}: 't/s' is '{cells['t/s']}', not '<mean> ± <std>'")
    values: dict[str, Any] = {_MD_COLUMNS.get(k, k): v for k, v in cells.items() if k not in ("test", "t/s")}
    values.update(n_prompt=pp or "0", n_gen=pg_tg or tg or "0", n_depth=depth or "0", avg_ts=ts.group(1))
    return values


def _parse_markdown(text: str, source: str) -> list[BenchRecord]:
    devices = devices_in_log(text)
    lines = text.splitlines()
    out: list[BenchRecord] = []
    for t, (header, rows, end) in enumerate(_md_tables(text), 1):
        # the footer llama-bench prints after its table ("build: 8cf427ff (5163)")
        build = next((m for ln in lines[end:] if (m := _MD_BUILD_RE.match(ln.strip()))), None)
        for n, row in enumerate(rows, 1):
            place = f"table {t}, row {n}" if t > 1 else f"row {n}"
            values = _md_values(header, row, f"{source}, {place}")
            if build:
                values.update(build_commit=build.group(1), build_number=build.group(2))
            if devices:
                values["gpu_info"] = ", ".join(devices)
            out.append(_record(_Fields(values, f"{source}, {place}"), source, place))
    if not out:
        raise AdvisorError(f"{source}: a llama-bench table with no rows")
    return out


def parse(text: str, data: Any, source: str) -> list[BenchRecord]:
    if isinstance(data, list):
        return _from_objects(data, source, "line" if _is_jsonl(text) else "test")
    if isinstance(data, dict):
        return _from_objects([data], source, "test")
    if text.lstrip()[:1] in ("[", "{"):
        return _parse_json_text(text, source)
    if _csv_header_at(text.splitlines()) is not None:
        return _parse_csv(text, source)
    return _parse_markdown(text, source)


def _is_jsonl(text: str) -> bool:
    return text.lstrip().startswith("{")
