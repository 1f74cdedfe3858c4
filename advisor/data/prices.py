"""Dated price quotes (catalog/prices.csv): one row per quote, each with its basis, provider, date
and source, so that a figure is only ever a median of quotes of one basis (catalog/prices.md says
what each basis means and how the rows were mapped to catalog keys).

This module reads and checks the rows; `advisor.plan.pricing` turns them into the figures the
recommender ranks by (a median of at least three quotes, or the quotes themselves, marked thin).
"""

from __future__ import annotations

import csv
import math
import re
from dataclasses import dataclass, field
from datetime import date
from pathlib import Path
from typing import Mapping


#: What a quote prices (catalog/prices.md). Rent bases are per GPU-hour (or per instance-hour for a
#: whole VM), buy bases per card or per system; ``tariff`` is electricity per kWh.
BASES = ("rent-on-demand", "rent-whole-vm", "rent-marketplace", "rent-spot", "rent-reserved",
         "buy-msrp", "buy-street-new", "buy-street-used", "buy-reported", "buy-server", "tariff")
UNITS = ("gpu-hour", "instance-hour", "card", "system", "kwh")
#: Keys that price something other than an accelerator: machines without GPUs, and electricity.
HOST_KEYS = ("host-desktop", "host-workstation", "host-server-8pcie")
ELECTRICITY_KEY = "electricity"
#: Tags (catalog/prices.md) that take a quote out of every current figure.
STALE_TAGS = ("HISTORICAL", "WITHDRAWN", "FORECAST")
COLUMNS = ("hardware", "basis", "usd", "unit", "gpus", "memory_gib", "configuration", "provider", "date",
           "source", "notes")
_DATE = re.compile(r"^(\d{4})(?:-(\d{2})(?:-(\d{2}))?|-Q([1-4]))?$")


@dataclass(frozen=True)
class Quote:
    """One dated price. ``usd`` is as quoted: per GPU-hour, per instance-hour (``gpus`` GPUs), per
    card, or per system (``gpus`` GPUs, or none for a host machine); ``per_gpu_usd`` divides."""

    hardware: str
    basis: str
    usd: float
    unit: str
    gpus: int
    memory_gib: float | None
    configuration: str
    provider: str
    date: str
    source: str
    notes: str = ""
    #: the date as a day (a month's, quarter's or year's middle where that is all it gives); the
    #: tags in the notes ([HISTORICAL], [WITHDRAWN] …): both worked out once
    day: date = field(default=None, compare=False)   # type: ignore[assignment]
    tags: frozenset[str] = field(default=frozenset(), compare=False)

    def __post_init__(self) -> None:
        if self.day is None:
            object.__setattr__(self, "day", parse_date(self.date))
        if not self.tags:
            object.__setattr__(self, "tags", frozenset(re.findall(r"\[([A-Z-]+)\]", self.notes)))

    @property
    def stale(self) -> bool:
        """Superseded, withdrawn from sale, or a forecast: never part of a current figure."""
        return any(t in self.tags for t in STALE_TAGS)

    @property
    def per_gpu_usd(self) -> float:
        """The price of one GPU's share: an instance or a system divided by its GPUs."""
        return self.usd / self.gpus if self.unit in ("instance-hour", "system") and self.gpus > 1 else self.usd


def parse_date(text: str) -> date:
    m = _DATE.match(text.strip())
    if not m:
        raise ValueError(f"not a date: {text!r}")
    year, month, day, quarter = m.groups()
    if quarter:
        return date(int(year), 3 * int(quarter) - 1, 15)
    return date(int(year), int(month or 7), int(day or (15 if month else 1)))


def load_quotes(path: Path, hardware_keys: Mapping[str, object] | None = None
                ) -> tuple[dict[str, tuple[Quote, ...]], list[tuple[str, str, str, str]]]:
    """The quotes of ``path`` by hardware key, and (where, key, field, message) for each row that
    is not usable (an unknown basis, unit or key, a bad number or date, no source); the other rows
    still load."""
    issues: list[tuple[str, str, str, str]] = []
    by_key: dict[str, list[Quote]] = {}
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as e:
        return {}, [(str(path), "", "", f"cannot read the price quotes: {e.strerror or e}")]
    reader = csv.DictReader(text.splitlines())
    missing = [c for c in COLUMNS if c not in (reader.fieldnames or ())]
    if missing:
        return {}, [(str(path), "", "", f"missing columns: {', '.join(missing)}")]
    for line, row in enumerate(reader, start=2):
        key = (row.get("hardware") or "").strip()

        def bad(field: str, why: str) -> None:
            issues.append((f"{path}:{line}", key, field, why))

        basis, unit = (row.get("basis") or "").strip(), (row.get("unit") or "").strip()
        if basis not in BASES:
            bad("basis", f"unknown basis {basis!r}; choose one of {', '.join(BASES)}")
            continue
        if unit not in UNITS:
            bad("unit", f"unknown unit {unit!r}; choose one of {', '.join(UNITS)}")
            continue
        known = key in HOST_KEYS or key == ELECTRICITY_KEY or hardware_keys is None or key in hardware_keys
        if not key or not known:
            bad("hardware", f"no hardware entry {key!r}")
            continue
        try:
            usd = float(row.get("usd") or "nan")
            gpus = int(row.get("gpus") or 1)
            memory = float(row["memory_gib"]) if (row.get("memory_gib") or "").strip() else None
        except ValueError:
            bad("usd", "usd, gpus and memory_gib must be numbers")
            continue
        if not (math.isfinite(usd) and 0 < usd < 1e8) or gpus < 1 or (memory is not None and memory <= 0):
            bad("usd", f"out of range: usd {usd}, gpus {gpus}, memory_gib {memory}")
            continue
        try:
            parse_date(row.get("date") or "")
        except ValueError:
            bad("date", f"not a date: {row.get('date')!r} (YYYY-MM-DD, YYYY-MM, YYYY-Qn or YYYY)")
            continue
        if not (row.get("source") or "").strip():
            bad("source", "a quote needs its source")
            continue
        by_key.setdefault(key, []).append(Quote(
            hardware=key, basis=basis, usd=usd, unit=unit, gpus=gpus, memory_gib=memory,
            configuration=(row.get("configuration") or "").strip(), provider=(row.get("provider") or "").strip(),
            date=row["date"].strip(), source=row["source"].strip(), notes=(row.get("notes") or "").strip()))
    return {k: tuple(v) for k, v in by_key.items()}, issues
