"""Saved sizings: a small JSON or YAML file of the inputs (catalog keys + numbers) and the targets.

```yaml
advisor_sizing: 1
inputs: {hardware: rtx-4090, model: llama-3.1-8b, quant: q4_k_m, kv_dtype: f16, runtime: llama.cpp,
         gpus: 1, parallelism: '', batch: 1, prompt: 512, output: 128, depth: 0}
# optional: inputs.memory_gb (a hardware that ships in several sizes; absent = its default size),
# inputs.threads (a CPU entry run on fewer threads than its cores, llama.cpp's -t; absent = every core),
# technique: {draft: llama-3.2-1b, draft_k: 4, accept: 0.7} (the What-ifs tab's choice; the fields of
# api.Techniques, a draft by its catalog key)
targets: {ttft_ms: 0, tok_s: 0}
```
Written atomically (a temporary file in the same folder, then `os.replace`), so a crash never leaves
half a file. Reading raises `SizingFileError` with a one-line message for anything malformed.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml


from advisor import api
from advisor.api import AdvisorError, load_json, load_yaml
from advisor.data.userdata import write_atomic

FORMAT_VERSION = 1
INPUT_KEYS = ("hardware", "model", "quant", "kv_dtype", "runtime", "gpus", "parallelism", "batch", "prompt",
              "output", "depth", "memory_gb", "threads", "prompt_spread", "prompt_cache", "layout", "network")
#: the fields of a what-if (`api.Techniques`) a sizing file and the settings keep; their values are
#: checked by the core on loading
TECHNIQUE_FIELDS = ("draft", "head_params_b", "head_layers", "draft_k", "accept", "flash_attention", "attention",
                    "gpu_layers", "offload_gb", "host_bandwidth_gb_s")
FILE_FILTER = "Sizing files (*.yaml *.yml *.json);;All files (*)"


def looks_like_sizing(path: str | os.PathLike) -> bool:
    """Whether a dropped file is a sizing (YAML, or JSON that says ``advisor_sizing``) rather than a
    model's config.json: its suffix and, for JSON, a look at its first 64 KiB."""
    path = Path(path)
    suffix = path.suffix.lower()
    if suffix in (".yaml", ".yml"):
        return True
    if suffix != ".json" or not path.is_file():
        return False
    try:
        with open(path, "rb") as fh:
            return b'"advisor_sizing"' in fh.read(65536)
    except OSError:
        return False


class SizingFileError(Exception):
    """A sizing file that cannot be read; the message names the file and the problem."""


def write(path: str | os.PathLike, data: dict[str, Any]) -> Path:
    path = Path(path)
    if path.suffix.lower() == ".json":
        text = json.dumps(data, indent=2, sort_keys=False) + "\n"
    else:
        text = "# advisor sizing — open with advisor-gui (File → Open)\n" + yaml.safe_dump(data, sort_keys=False)
    write_text_atomic(path, text)
    return path


def write_text_atomic(path: Path, text: str) -> None:
    """The core's atomic write (temporary file in the same folder, then a rename); `OSError` on failure."""
    try:
        write_atomic(Path(path), text)
    except AdvisorError as exc:
        raise OSError(str(exc)) from None


def read(path: str | os.PathLike) -> tuple[dict[str, Any], dict[str, float]]:
    """(inputs, targets) from a sizing file; `SizingFileError` for a missing, unreadable or malformed one."""
    inputs, targets, _source = read_with_source(path)
    return inputs, targets


def read_with_source(path: str | os.PathLike) -> tuple[dict[str, Any], dict[str, float], str]:
    """(inputs, targets, model_source): ``model_source`` is where an imported model came from (a file,
    a folder or ``hf:org/name``; empty for a catalog model), written by the app so that the sizing
    opens in a session that has not imported it."""
    inputs, targets, source, _technique = read_all(path)
    return inputs, targets, source


@dataclass(frozen=True)
class Sizing:
    """A sizing file as read: the inputs, targets, where an imported model came from (``source``) and
    the name the user gave it (``model_name``, empty unless renamed), and the What-ifs tab's choice."""

    inputs: dict[str, Any]
    targets: dict[str, float]
    source: str = ""
    technique: dict[str, Any] = field(default_factory=dict)
    model_name: str = ""


def read_all(path: str | os.PathLike) -> tuple[dict[str, Any], dict[str, float], str, dict[str, Any]]:
    """(inputs, targets, model_source, technique): ``technique`` is the What-ifs tab's choice (empty
    when the file has none, as files written before it)."""
    s = read_sizing(path)
    return s.inputs, s.targets, s.source, s.technique


def read_sizing(path: str | os.PathLike) -> Sizing:
    """The sizing file at ``path``, checked; `SizingFileError` in one line for anything wrong."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise SizingFileError(f"{path.name}: cannot read it ({exc.__class__.__name__}: {exc})") from None
    try:
        data = load_json(text, path.name) if path.suffix.lower() == ".json" else load_yaml(text, path.name)
    except AdvisorError as exc:
        raise SizingFileError(str(exc)) from None
    except (ValueError, yaml.YAMLError) as exc:
        first = str(exc).strip().splitlines()[0] if str(exc).strip() else exc.__class__.__name__
        raise SizingFileError(f"{path.name}: not a valid {'JSON' if path.suffix.lower() == '.json' else 'YAML'} "
                              f"file ({first})") from None
    if not isinstance(data, dict) or not isinstance(data.get("inputs"), dict):
        raise SizingFileError(f"{path.name}: not an advisor sizing (no 'inputs' section)")
    version = data.get("advisor_sizing", FORMAT_VERSION)
    if not isinstance(version, int) or version > FORMAT_VERSION:
        raise SizingFileError(f"{path.name}: written by a newer advisor (format {version!r})")
    inputs = data["inputs"]
    unknown = sorted(set(inputs) - set(INPUT_KEYS))
    if unknown:
        raise SizingFileError(f"{path.name}: unknown input(s) {', '.join(map(str, unknown))}")
    for k in ("hardware", "model"):
        if not isinstance(inputs.get(k), str) or not inputs[k].strip():
            raise SizingFileError(f"{path.name}: inputs.{k} is missing")
    for k in ("gpus", "batch", "prompt", "output", "depth"):
        v = inputs.get(k)
        if v is not None and (isinstance(v, bool) or not isinstance(v, int) or v < 0):
            raise SizingFileError(f"{path.name}: inputs.{k} must be a whole number, got {v!r}")
    v = inputs.get("memory_gb")
    if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not v > 0):
        raise SizingFileError(f"{path.name}: inputs.memory_gb must be a size in GB such as 64, got {v!r}")
    v = inputs.get("prompt_spread")
    if v is not None and (isinstance(v, bool) or not isinstance(v, (int, float)) or not 0 <= v <= 10):
        raise SizingFileError(f"{path.name}: inputs.prompt_spread must be a number from 0 to 10, got {v!r}")
    v = inputs.get("prompt_cache")
    if v is not None and not isinstance(v, bool):
        raise SizingFileError(f"{path.name}: inputs.prompt_cache must be true or false, got {v!r}")
    targets_raw = data.get("targets") or {}
    if not isinstance(targets_raw, dict):
        raise SizingFileError(f"{path.name}: 'targets' must be a mapping")
    targets: dict[str, float] = {}
    for k in ("ttft_ms", "tok_s"):
        v = targets_raw.get(k, 0) or 0
        if isinstance(v, bool) or not isinstance(v, (int, float)) or v < 0:
            raise SizingFileError(f"{path.name}: targets.{k} must be a number ≥ 0, got {v!r}")
        targets[k] = float(v)
    source = data.get("model_source") or ""
    if not isinstance(source, str):
        raise SizingFileError(f"{path.name}: 'model_source' must be a path or hf:org/name, got {source!r}")
    technique = data.get("technique") or {}
    if not isinstance(technique, dict):
        raise SizingFileError(f"{path.name}: 'technique' must be a mapping of what-if fields")
    unknown = sorted(set(technique) - set(TECHNIQUE_FIELDS))
    if unknown:
        raise SizingFileError(f"{path.name}: unknown technique field(s) {', '.join(map(str, unknown))}")
    name = data.get("model_name") or ""
    if not isinstance(name, str) or len(name) > 200:
        raise SizingFileError(f"{path.name}: 'model_name' must be a short text, got {name!r}")
    return Sizing(dict(inputs), targets, source, dict(technique), name.strip())


def config_from_keys(cat: "api.Catalog", keys: dict[str, Any], sized) -> "api.Config":
    """The configuration a sizing's inputs name (catalog keys or names, and numbers); ``sized(key,
    memory_gb)`` gives the hardware at a memory size as the app sizes it. `api.AdvisorError` if bad."""
    names = {k: keys.get(k) for k in ("hardware", "model", "quant", "kv_dtype", "runtime", "gpus", "batch",
                                      "prompt", "output", "depth", "parallelism", "layout", "network")}
    threads = keys.get("threads") or None
    if not names["hardware"] or not names["model"]:
        raise AdvisorError("a sizing needs at least a hardware and a model")
    memory = keys.get("memory_gb")
    if memory is not None and (isinstance(memory, bool) or not isinstance(memory, (int, float))):
        raise AdvisorError(f"memory_gb must be a size in GB such as 64, got {memory!r}")
    cfg = api.configure(cat, memory_gb=memory, **{k: (str(v) if isinstance(v, str) else v) for k, v in names.items()})
    # the size saved, else the size the name states, else the default with the app's note
    stated = cfg.hardware.memory_gib if cfg.hardware.memory_gib != cat.hardware[cfg.hardware.key].memory_gib else None
    hw = sized(cfg.hardware.key, memory if memory is not None else stated)
    if threads is not None:
        if isinstance(threads, bool) or not isinstance(threads, int):
            raise AdvisorError(f"threads must be a whole number, got {threads!r}")
        hw = api.with_threads(hw, threads)
    cfg = cfg.replace(hardware=hw)
    cfg.check()
    return cfg


def input_keys(cfg: "api.Config", memory_options, prompt_spread: float, prompt_cache: bool = True) -> dict[str, Any]:
    """`Config.keys` plus the memory size (``memory_gb``) of a hardware that ships in several, the CPU
    threads, the prompt spread where set and the server's prompt cache where off: what a sizing file
    and the settings hold."""
    out = cfg.keys()
    if len(memory_options) > 1:
        out["memory_gb"] = cfg.hardware.memory_gib
    if cfg.hardware.threads:
        out["threads"] = cfg.hardware.threads
    if prompt_spread:
        out["prompt_spread"] = prompt_spread
    if not prompt_cache:
        out["prompt_cache"] = False
    return out


def file_dict(inputs: dict[str, Any], targets: dict[str, float], model_source: str | None = None,
              model_name: str | None = None, technique: dict | None = None) -> dict[str, Any]:
    """A sizing as saved: its inputs and targets, an imported model's source (and the name it was given
    on import, so the file opens elsewhere under it) and the what-if in force."""
    out: dict[str, Any] = {"advisor_sizing": 1, "inputs": inputs, "targets": targets}
    if model_source:
        out["model_source"] = model_source
        if model_name:
            out["model_name"] = model_name
    if technique:
        out["technique"] = technique
    return out
