"""llama-batched-bench (llama.cpp's static-batch benchmark): its table, pasted with or without the log
around it, and its JSON Lines (``--output-format jsonl``).

What the tool writes (read in ggml-org/llama.cpp, tools/batched-bench/batched-bench.cpp at 2fb62f8f;
the README beside it, as carried by the fork ye-NX/llama.cpp at b354d7c9, has the example table and
JSON Lines):

- a line ``main: n_kv_max = 2048, n_batch = 2048, n_ubatch = 512, flash_attn = 0, is_pp_shared = 0,
  is_tg_separate = 0, n_gpu_layers = 99, n_threads = 8, n_threads_batch = 8`` (older builds have fewer
  of these; they are read by name), then a table, one row per (PP, TG, B):
  ``|    PP |     TG |    B |   N_KV |   T_PP s | S_PP t/s |   T_TG s | S_TG t/s |      T s |    S t/s |``;
- with ``--output-format jsonl``, one object a row instead: ``n_kv_max``, ``n_batch``, ``n_ubatch``,
  ``flash_attn``, ``is_pp_shared``, ``n_gpu_layers``, ``n_threads``, ``n_threads_batch``, ``pp``,
  ``tg``, ``pl`` (B), ``n_kv``, ``t_pp``, ``speed_pp``, ``t_tg``, ``speed_tg``, ``t``, ``speed``.

B sequences each get a PP-token prompt and generate TG tokens together. S_PP is the prompt pass's
tokens per second: B·PP / T_PP, or PP / T_PP when the prompt is shared (``-pps``: processed once and
copied to every sequence, so that pass is one sequence's). S_TG is B·TG / T_TG, the batch's total.
Each row gives three records: ``prefill_tok_s`` (S_PP; batch B, or 1 with a shared prompt),
``batch_decode_tok_s`` (S_TG, batch B) and ``decode_tok_s`` (S_TG / B: each sequence's own speed).
At B = 1 the last two are the same figure and only ``decode_tok_s`` is kept. With
``is_tg_separate = 1`` the sequences are generated one after another, not together, so S_TG is one
sequence's speed: one ``decode_tok_s`` record at batch 1. A row with PP = 0 (or TG = 0) ran no prompt
pass (no generation) and gives no record for it.

A table pasted without its ``main:`` line does not say whether the prompt was shared; the row's own
numbers do (S_PP · T_PP is PP when shared, B·PP when not). The log around a table, when pasted too,
names the build ("build: 5163 (8cf427ff) with …"), the model file (llama_model_loader), its file type
(print_info / llm_load_print_meta) and the GPUs (the backend's device lines); JSON Lines names none of
these.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

from advisor.data.errors import AdvisorError
from advisor.fit.bench_formats.llama_bench import (devices_in_log, hardware_of, missing_of,
                                                   quant_from_ftype)
from advisor.fit.bench_records import BenchRecord

TOOL = "llama-batched-bench"
RUNTIME = "llama.cpp"

#: the table's columns as printed → the JSON Lines keys they are read as
_COLUMNS = {"PP": "pp", "TG": "tg", "B": "pl", "N_KV": "n_kv", "T_PP s": "t_pp", "S_PP t/s": "speed_pp",
            "T_TG s": "t_tg", "S_TG t/s": "speed_tg", "T s": "t", "S t/s": "speed"}
_TITLES = {k: title for title, k in _COLUMNS.items()}
#: JSON Lines keys no other tool writes together
_SIGNATURE = ("pl", "speed_pp", "speed_tg")
_NEEDED = ("pp", "tg", "pl", "t_pp", "speed_pp", "t_tg", "speed_tg")

_MAIN_RE = re.compile(r"^\s*main: (n_kv_max = .*)$", re.M)
_SETTING_RE = re.compile(r"(\w+) = (-?\d+)")
_BUILD_RE = re.compile(r"^\s*build: (\d+) \(([0-9a-f]{6,40})\)", re.M)
_MODEL_RE = re.compile(r"llama_model_loader: loaded meta data with \d+ key-value pairs and \d+ tensors "
                       r"from (.+?) \(version", re.M)
_FTYPE_RE = re.compile(r"(?:print_info: file type|llm_load_print_meta: model ftype)\s*=\s*(.+)$", re.M)


# --- sniffing --------------------------------------------------------------------------------------

def _cells(line: str) -> list[str]:
    s = line.strip()
    if not s.startswith("|"):
        return []
    s = s[1:-1] if s.endswith("|") and len(s) > 1 else s[1:]
    return [c.strip() for c in s.split("|")]


def _is_header(cells: list[str]) -> bool:
    # "B" and "S_TG t/s" together: llama-sweep-bench's table has S_TG but no B column
    return "S_TG t/s" in cells and "B" in cells and "PP" in cells


def _is_row(obj: Any) -> bool:
    return isinstance(obj, dict) and all(k in obj for k in _SIGNATURE)


def sniff(text: str, data: Any) -> bool:
    if data is not None:
        items = data if isinstance(data, list) else [data]
        return bool(items) and _is_row(items[0])
    if text.lstrip()[:1] == "{":
        # JSON Lines that did not parse (cut short, or nan where a number goes): ours if it has our keys
        return all(f'"{k}"' in text for k in _SIGNATURE)
    return any(_is_header(_cells(line)) for line in text.splitlines())


# --- reading values --------------------------------------------------------------------------------

class _Row:
    """One row's values (JSON numbers, or the table's cells) read with checks that name the field
    as the file does: the JSON key, or the table's column."""

    def __init__(self, values: dict, where: str, names: dict[str, str]):
        self.values, self.where, self.names = values, where, names

    def number(self, key: str, *, whole: bool = False) -> float:
        name, v = self.names.get(key, key), self.values.get(key)
        if v is None:
            raise AdvisorError(f"{self.where} has no '{name}'")
        if isinstance(v, str):
            try:
                v = float(v)
            except ValueError:
                raise AdvisorError(f"{self.where}: '{name}' is '{self.values[key]}', not a number") from None
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise AdvisorError(f"{self.where}: '{name}' is {v!r}, not a number")
        if not math.isfinite(v) or v < 0:
            raise AdvisorError(f"{self.where}: '{name}' is {v}, not a finite number of at least 0")
        if whole and not float(v).is_integer():
            raise AdvisorError(f"{self.where}: '{name}' is {v}, not a whole number")
        return float(v)

    def rate(self, key: str) -> float:
        v = self.number(key)
        if v <= 0:
            raise AdvisorError(f"{self.where}: '{self.names.get(key, key)}' is {v}, not a positive speed")
        return v


def _setting(settings: dict, key: str) -> int | None:
    v = settings.get(key)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _shared_prompt(settings: dict, row: _Row, pp: int, b: int) -> bool:
    """Whether the prompt was processed once for the batch: ``is_pp_shared`` when the file says it,
    else what S_PP · T_PP tells (PP tokens processed when shared, B·PP when not)."""
    flag = settings.get("is_pp_shared")
    if isinstance(flag, (int, bool)):
        return bool(flag)
    if b == 1:
        return False
    processed = row.rate("speed_pp") * row.number("t_pp")
    return abs(processed - pp) < abs(processed - b * pp)


# --- records ---------------------------------------------------------------------------------------

def _records(row: _Row, settings: dict, context: dict, source: str, place: str) -> list[BenchRecord]:
    pp = int(row.number("pp", whole=True))
    tg = int(row.number("tg", whole=True))
    b = int(row.number("pl", whole=True))
    if b < 1:
        raise AdvisorError(f"{row.where}: '{row.names.get('pl', 'pl')}' is {b}, not a number of sequences")
    for key in ("t_pp", "t_tg"):    # durations: read even where no speed needs them, so a broken row fails
        row.number(key)
    ngl = _setting(settings, "n_gpu_layers")
    threads = _setting(settings, "n_threads")
    common = dict(tool=TOOL, stat="mean", runtime=RUNTIME, prompt_tokens=pp, depth_tokens=0,
                  threads=threads if threads and threads > 0 else None,
                  gpu_layers=ngl if ngl is not None and ngl >= 0 else None,
                  source=f"{source}, {place}", **context)
    out = []
    if pp > 0:      # -npp 0 runs no prompt pass (its S_PP is 0/0)
        shared = _shared_prompt(settings, row, pp, b)
        out.append(BenchRecord(metric="prefill_tok_s", value=row.rate("speed_pp"),
                               batch=1 if shared else b, **common))
    if tg > 0:
        s_tg = row.rate("speed_tg")
        if _setting(settings, "is_tg_separate") or b == 1:
            # one sequence at a time: S_TG is that sequence's speed (a batch total would repeat it)
            out.append(BenchRecord(metric="decode_tok_s", value=s_tg, batch=1, output_tokens=tg, **common))
        else:
            out.append(BenchRecord(metric="batch_decode_tok_s", value=s_tg, batch=b, output_tokens=tg, **common))
            # each of the B sequences advances at the batch's total over B
            out.append(BenchRecord(metric="decode_tok_s", value=s_tg / b, batch=b, output_tokens=tg, **common))
    return out


def _context(text: str) -> dict:
    """What the log pasted around a table says of the build, the model and the GPUs."""
    build_m = _BUILD_RE.search(text)
    model_m = _MODEL_RE.search(text)
    ftype_m = _FTYPE_RE.search(text)
    build = f"b{build_m.group(1)} ({build_m.group(2)})" if build_m else None
    model = model_m.group(1).strip() if model_m else None
    quant = quant_from_ftype(ftype_m.group(1).strip()) if ftype_m else None
    hardware, gpus = hardware_of(devices_in_log(text))
    return dict(build=build, model=model, quant=quant, hardware=hardware, gpus=gpus,
                missing=missing_of(hardware=hardware, gpus=gpus, model=model, quant=quant, build=build))


# --- JSON Lines ------------------------------------------------------------------------------------

def _jsonl_rows(text: str, data: Any, source: str) -> list[tuple[int, Any]]:
    if isinstance(data, list):
        return list(enumerate(data, 1))
    if isinstance(data, dict):
        return [(1, data)]
    rows = []
    for n, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            rows.append((n, json.loads(line)))
        except ValueError:
            raise AdvisorError(f"{source}: line {n} is not complete JSON (cut short, or nan written "
                               "where a number goes)") from None
    return rows


def _parse_jsonl(text: str, data: Any, source: str) -> list[BenchRecord]:
    rows = _jsonl_rows(text, data, source)
    if not rows:
        raise AdvisorError(f"{source}: a llama-batched-bench result with no rows")
    context = dict(build=None, model=None, quant=None, hardware=None, gpus=None,
                   missing=missing_of(hardware=None, gpus=None, model=None, quant=None, build=None))
    out = []
    for n, obj in rows:
        if not isinstance(obj, dict):
            raise AdvisorError(f"{source}: line {n} is {type(obj).__name__}, not a llama-batched-bench row")
        settings = {k: obj.get(k) for k in ("is_pp_shared", "is_tg_separate", "n_gpu_layers", "n_threads")}
        out.extend(_records(_Row(obj, f"{source}, line {n}", {}), settings, context, source, f"line {n}"))
    return out


# --- the table -------------------------------------------------------------------------------------

def _settings(line: str) -> dict:
    return {k: int(v) for k, v in _SETTING_RE.findall(line)}


def _parse_table(text: str, source: str) -> list[BenchRecord]:
    context = _context(text)
    lines = text.splitlines()
    settings: dict = {}
    header: list[str] | None = None
    out: list[BenchRecord] = []
    rows_seen = 0
    for n, line in enumerate(lines, 1):
        m = _MAIN_RE.match(line)
        if m:                         # a new run: its settings hold for the table after it
            settings, header = _settings(m.group(1)), None
            continue
        cells = _cells(line)
        if not cells:
            continue
        if _is_header(cells):
            header = cells
            continue
        if header is None or set("".join(cells)) <= set("-: "):
            continue
        if len(cells) != len(header):
            raise AdvisorError(f"{source}, line {n} has {len(cells)} cells for {len(header)} columns (cut short?)")
        row = {_COLUMNS.get(h, h): c for h, c in zip(header, cells)}
        missing = [h for h, k in _COLUMNS.items() if k in _NEEDED and k not in row]
        if missing:
            raise AdvisorError(f"{source}: the table has no '{missing[0]}' column")
        rows_seen += 1
        out.extend(_records(_Row(row, f"{source}, line {n}", _TITLES), settings, context, source, f"line {n}"))
    if not rows_seen:
        raise AdvisorError(f"{source}: a llama-batched-bench table with no rows")
    return out


def parse(text: str, data: Any, source: str) -> list[BenchRecord]:
    if data is not None or text.lstrip()[:1] == "{":
        return _parse_jsonl(text, data, source)
    return _parse_table(text, source)
