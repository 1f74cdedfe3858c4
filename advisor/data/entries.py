"""Catalog entries from their raw YAML fields: each field coerced by its metadata in `specs` (kind,
range, unit, choices), earlier field names read as the current ones, and the cross-field rules a
single field cannot express. Used by the catalog loader, the importers and the probe's "this
machine" entry alike."""

from __future__ import annotations

import dataclasses
import math
import re
from typing import Any, Mapping

from advisor.data import specs

_KEY_RE = re.compile(r"^[a-z0-9][a-z0-9._+-]*$")
# YAML 1.1 reads "3.35e12" (no sign in the exponent) as a string; accept such plain numerals.
_NUMERAL_RE = re.compile(r"^[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?$")


class EntryError(ValueError):
    def __init__(self, field_name: str | None, message: str):
        super().__init__(message)
        self.field = field_name


#: Fields holding a list of sub-entries: kind → (their spec, what the error calls them).
_ENTRY_LISTS = {"support": (specs.Support, "rules (vendor, families, reason, source)"),
                "model_support": (specs.ModelSupport, "rules (quants, architectures, reason, source)"),
                "builds": (specs.Build, "builds (build, date, source)"),
                "scheduler_tiers": (specs.SchedulerTier, "scheduler tiers (min_gib, not_names, max_seqs, chunk_tokens)")}


def _coerce(name: str, value: Any, meta: Mapping[str, Any]) -> Any:
    """Check one field's value against its metadata; return the value in its stored form."""
    kind = meta["kind"]
    if value is None:
        if meta.get("required"):
            raise EntryError(name, "is required")
        return _empty(kind) if kind in ("strlist", "numlist", "map", "str", "bool", *_ENTRY_LISTS) else None
    if kind in ("num", "int"):
        if isinstance(value, bool):
            raise EntryError(name, f"must be a number, got {value!r}")
        if isinstance(value, str):
            if not _NUMERAL_RE.match(value.strip()):
                raise EntryError(name, f"must be a number, got the text {value!r}")
            value = float(value)
        if not isinstance(value, (int, float)) or not math.isfinite(value):
            raise EntryError(name, f"must be a finite number, got {value!r}")
        if kind == "int":
            if float(value) != int(value):
                raise EntryError(name, f"must be a whole number, got {value!r}")
            value = int(value)
        else:
            value = float(value)
        lo, hi = meta.get("min"), meta.get("max")
        if lo is not None and value < lo:
            raise EntryError(name, f"{value:g} is below the minimum {lo:g}")
        if hi is not None and value > hi:
            raise EntryError(name, f"{value:g} is above the maximum {hi:g}")
        return value
    if kind == "str":
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            value = str(value)  # dates such as 2024-10 or years are fine as text
        if not isinstance(value, str):
            raise EntryError(name, f"must be text, got {type(value).__name__}")
        value = value.strip()
        if meta.get("required") and not value:
            raise EntryError(name, "is required and may not be empty")
        choices = meta.get("choices")
        if choices and value not in choices:
            raise EntryError(name, f"{value!r} is not one of {', '.join(c or '(empty)' for c in choices)}")
        return value
    if kind == "bool":
        if not isinstance(value, bool):
            raise EntryError(name, f"must be true or false, got {value!r}")
        return value
    if kind == "strlist":
        if isinstance(value, str):
            value = [value]
        if not isinstance(value, list) or not all(isinstance(v, (str, int, float)) for v in value):
            raise EntryError(name, "must be a list of text")
        return tuple(str(v).strip() for v in value if str(v).strip())
    if kind == "numlist":  # sizes a part ships in: distinct numbers, kept sorted
        if not isinstance(value, list):
            value = [value]
        return tuple(sorted({_coerce(name, v, {**meta, "kind": "num", "required": True}) for v in value}))
    if kind == "map":
        if not isinstance(value, dict):
            raise EntryError(name, "must be a mapping")
        choices = meta.get("choices")
        pairs = []
        for k, v in value.items():
            if not isinstance(v, str) or (choices and v not in choices):
                raise EntryError(name, f"{k}: {v!r} is not one of {', '.join(choices or ())}")
            pairs.append((str(k), v))
        return tuple(sorted(pairs))
    if kind in _ENTRY_LISTS:
        spec, what = _ENTRY_LISTS[kind]
        if not isinstance(value, list) or not all(isinstance(v, dict) for v in value):
            raise EntryError(name, f"must be a list of {what}")
        return tuple(build_entry(spec, v, prefix=f"{name}[{i}].") for i, v in enumerate(value))
    if kind == "price":
        if not isinstance(value, dict):
            raise EntryError(name, "must be a mapping")
        return build_entry(specs.Price, value, prefix=f"{name}.")
    raise AssertionError(f"unknown field kind {kind}")  # pragma: no cover


def _empty(kind: str) -> Any:
    return {"str": "", "bool": False}.get(kind, ())


#: Field names of earlier versions, still read from user files: old name → current name.
RENAMED_FIELDS = {"memory_gb": "memory_gib"}


def build_entry(cls: type, raw: Mapping[str, Any], prefix: str = "", origin: str = "") -> Any:
    # an old name is read as the new one unless the entry has both (then it is an unknown field)
    raw = {(RENAMED_FIELDS[k] if k in RENAMED_FIELDS and RENAMED_FIELDS[k] not in raw else k): v
           for k, v in raw.items()}
    fields = {f.name: f for f in dataclasses.fields(cls) if f.metadata.get("kind") != "internal"}
    unknown = sorted(set(raw) - set(fields))
    if unknown:
        raise EntryError(prefix + str(unknown[0]), f"is not a known field of {cls.__name__.lower()} entries")
    values: dict[str, Any] = {}
    for name, f in fields.items():
        if name in raw:
            values[name] = _coerce(prefix + name, raw[name], f.metadata)
        elif f.metadata.get("required"):
            raise EntryError(prefix + name, "is required")
    if "origin" in {f.name for f in dataclasses.fields(cls)}:
        values["origin"] = origin
    return cls(**values)


def check_entry(entry: Any) -> None:
    """Cross-field rules that a single field's metadata cannot express."""
    if not _KEY_RE.match(entry.key):
        raise EntryError("key", f"{entry.key!r} must be lower case letters, digits, '.', '_', '+' or '-'")
    if isinstance(entry, specs.Model):
        if entry.kv_heads > entry.heads:
            raise EntryError("kv_heads", f"{entry.kv_heads} is more than heads ({entry.heads})")
        if entry.params_active_b > entry.params_total_b * 1.0001:
            raise EntryError("params_active_b", "is larger than params_total_b")
        moe = (entry.experts, entry.experts_per_token, entry.moe_intermediate)
        if any(moe) and not all(moe):
            raise EntryError("experts", "MoE models need experts, experts_per_token and moe_intermediate")
        if entry.experts and entry.experts_per_token > entry.experts:
            raise EntryError("experts_per_token", "is more than experts")
        if entry.attention == "mla" and not (entry.kv_lora_rank and entry.qk_rope_head_dim is not None):
            raise EntryError("kv_lora_rank", "MLA models need kv_lora_rank and qk_rope_head_dim")
        kinds = (entry.sliding_layers or 0) + (entry.linear_layers or 0)
        if kinds > entry.layers:
            raise EntryError("sliding_layers", "sliding_layers + linear_layers exceed layers")
        if entry.sliding_layers and not entry.sliding_window:
            raise EntryError("sliding_window", "is required when sliding_layers is set")
        if (entry.first_dense_layers or 0) > entry.layers:
            raise EntryError("first_dense_layers", "exceeds layers")
    if isinstance(entry, specs.Runtime):
        bad = [k for k in entry.quant_kinds if k not in specs.QUANT_KINDS]
        if bad:
            raise EntryError("quant_kinds", f"unknown quantization kind {bad[0]!r}")
    if isinstance(entry, specs.Hardware) and entry.kind == "apple" and not entry.gpu_cores:
        raise EntryError("gpu_cores", "is required for Apple silicon")
    if isinstance(entry, specs.Hardware) and entry.bandwidth_best_gb_s and entry.bandwidth_best_gb_s < entry.bandwidth_gb_s:
        raise EntryError("bandwidth_best_gb_s", f"{entry.bandwidth_best_gb_s:g} is below bandwidth_gb_s "
                                                f"({entry.bandwidth_gb_s:g}): the best reading cannot be slower than the typical one")
