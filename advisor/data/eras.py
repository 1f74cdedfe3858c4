"""Runtime builds as an ordered axis: `llama.cpp@2024-06` between the calibrated eras.

An engine's efficiency changes build by build (llama.cpp's prompt processing doubled between late
2023 and 2025). The catalog keeps one runtime per calibrated era (`llama.cpp-2023`, `llama.cpp`),
each with the date of the builds its rows were measured on (`Runtime.era`). Asked for a date,
the prediction runs the kernels of the era nearest in time (their compute path: llama.cpp's
prompt processing moved from dequantise + cuBLAS to int8 MMQ between its eras) with its prefill
efficiency, and the decode efficiencies (bandwidth fraction, fixed costs) of the two eras around
the date blended linearly in time (assumed smooth: nothing was measured in between), with a band
that holds both. Before the oldest era or after the newest, that era as it is.
A build number (`@b4000`) is placed in time by the runtime's table of numbered builds, each with
the date a downstream project moved to it (so the build existed by then), interpolated linearly
in the build number between the two around it: llama.cpp numbers its releases by commits on
master, which come at a steady enough pace for a few days' error between neighbours.

Engines released as versions (`vllm@0.7.3`, `sglang@v0.4.3`, `tensorrt-llm@0.9.0`) are placed in
time by the day each release reached PyPI (`catalog/releases.csv`). One profile spans the builds
their calibration rows were measured on (`Runtime.era_from` to `Runtime.era`); a release outside
that span is predicted from it with a band widened as for a borrowed build, and says so.
"""

from __future__ import annotations

import bisect
import csv
import dataclasses
import re
from datetime import date
from pathlib import Path

from advisor.data.errors import AdvisorError

_DATE = re.compile(r"^(\d{4})(?:-(\d{1,2}))?(?:-(\d{1,2}))?$")
_BUILD = re.compile(r"^b?(\d{1,7})$", re.I)
#: a release version: 0.7.3, v0.4.3, 0.5.6.post1, 1.2.0rc1
_VERSION = re.compile(r"^v?(\d+\.\d+(?:\.\d+)?(?:[.-]?(?:post|rc|dev)\d+)*)$", re.I)
#: the day each release of the engines released as versions reached PyPI
RELEASES_FILE = Path(__file__).resolve().parents[2] / "catalog" / "releases.csv"
_releases: dict[str, dict[str, str]] | None = None


def releases() -> dict[str, dict[str, str]]:
    """{runtime key: {version: YYYY-MM-DD}} from `catalog/releases.csv`, read once."""
    global _releases
    if _releases is None:
        table: dict[str, dict[str, str]] = {}
        try:
            with open(RELEASES_FILE, newline="", encoding="utf-8") as f:
                for row in csv.DictReader(f):
                    table.setdefault(row["runtime"].strip(), {})[row["version"].strip().lower()] = row["date"].strip()
        except (OSError, KeyError, csv.Error) as exc:
            raise AdvisorError(f"{RELEASES_FILE.name} could not be read: {exc}") from None
        _releases = table
    return _releases


def _version_order(v: str) -> list:
    """A release's sort key, its numbers as numbers: 0.10.0 after 0.9.2."""
    return [int(x) if x.isdigit() else x for x in re.split(r"(\d+)", v)]


def release_date(keys, version: str) -> tuple[date, str] | None:
    """The day release ``version`` of the runtime(s) ``keys`` reached PyPI, with the text to show;
    None where ``version`` does not read as a version. Unknown releases get one line naming the
    nearest known ones."""
    m = _VERSION.match(version.strip())
    if not m:
        return None
    wanted = m.group(1).lower().replace("-", "")
    spellings = (wanted, wanted + ".0") if wanted.count(".") == 1 else (wanted,)   # 0.7 is 0.7.0
    for key in keys:
        known = releases().get(key)
        if not known:
            continue
        for v in spellings:
            if v in known:
                d = parse_date(known[v])
                return d, f"{v} (released {d.isoformat()})"
        near = sorted((v for v in known if v.split(".")[:2] == wanted.split(".")[:2]), key=_version_order)[:6] \
            or sorted(known, key=_version_order)[-3:]
        raise AdvisorError(f"{key} {wanted} is not a release on PyPI (catalog/{RELEASES_FILE.name}); "
                           f"releases near it: {', '.join(near)}")
    return None


def parse_date(text: str) -> date:
    """``YYYY``, ``YYYY-MM`` or ``YYYY-MM-DD`` (a year or month means its first day)."""
    t = text.strip()
    m = _DATE.match(t)
    if not m:
        raise AdvisorError(f"{t!r} is neither a date nor a build: use YYYY, YYYY-MM or YYYY-MM-DD (@2024-06) "
                           "or a build number (@b4000)")
    y, mo, d = int(m.group(1)), int(m.group(2) or 1), int(m.group(3) or 1)
    try:
        return date(y, mo, d)
    except ValueError:
        raise AdvisorError(f"{t!r} is not a valid date") from None


def build_date(builds, number: int) -> tuple[date, str]:
    """The date build ``number`` had been released by, from the table ``builds``, and how it is
    known: ``"~"`` interpolated between two numbered builds, ``"by"`` at or before the first one,
    ``"after"`` at or after the newest one (then the nearest end's date)."""
    table = sorted(builds, key=lambda b: b.build)
    if not table:
        raise AdvisorError("no numbered builds in the catalog: give the build's date instead, e.g. @2024-06")
    numbers = [b.build for b in table]
    dates = [parse_date(b.date) for b in table]
    if number <= numbers[0]:
        return dates[0], "by"
    if number >= numbers[-1]:
        return dates[-1], "after"
    i = bisect.bisect_right(numbers, number) - 1  # the last numbered build at or before it
    w = (number - numbers[i]) / (numbers[i + 1] - numbers[i])
    return date.fromordinal(round(dates[i].toordinal() + w * (dates[i + 1] - dates[i]).days)), "~"


def _when(family, text: str) -> tuple[date, str]:
    """The date ``text`` asks for and how the name shows it: a date as it is, a build number
    (``b4000``) placed in time by the family's table of numbered builds."""
    t = text.strip()
    release = release_date([r.key for r in family], t)
    if release is not None:
        return release
    m = _BUILD.match(t)
    if m and t[:1] in "bB":
        d, how = build_date([b for r in family for b in r.builds], int(m.group(1)))
        return d, f"b{int(m.group(1))} ({how}{' ' if how != '~' else ''}{d.isoformat()})"
    if m and not 1900 <= int(m.group(1)) <= 2199:
        raise AdvisorError(f"{t!r} is not a year: write b{t} for a build number")
    d = parse_date(t)
    return d, d.isoformat()


def at_date(runtimes, rt, when: str):
    """``rt`` as of the date ``when`` (or build ``when``): a copy that carries the date and its
    family's eras."""
    family = sorted((r for r in runtimes if r.era and r.format_family == rt.format_family),
                    key=lambda r: parse_date(r.era))
    if not family:
        raise AdvisorError(f"{rt.name} has no dated builds in the catalog: no build date can be chosen")
    d, shown = _when(family, when)
    newest = family[-1]
    if d > date.today():
        raise AdvisorError(f"{d.isoformat()} is in the future")
    dated = dataclasses.replace(newest, at_date=d.isoformat(), eras=tuple(family))
    # the engine as built then: the nearest era's kernels (llama.cpp's prompt path changed from
    # dequantise + cuBLAS to int8 MMQ between its eras), its decode costs blended in time
    near = max(weights(dated), key=lambda pair: pair[1])[0]
    return dataclasses.replace(near, name=f"{rt.name.split(' (')[0]} @{shown}", at_date=d.isoformat(),
                               eras=tuple(family), historic=False)


def weights(rt) -> list[tuple[object, float]]:
    """The eras a dated runtime blends, with their weights (summing to 1)."""
    d = parse_date(rt.at_date)
    eras = list(rt.eras)
    dates = [parse_date(r.era) for r in eras]
    if d <= dates[0]:
        return [(eras[0], 1.0)]
    if d >= dates[-1]:
        return [(eras[-1], 1.0)]
    i = max(k for k in range(len(dates)) if dates[k] <= d)
    span = (dates[i + 1] - dates[i]).days
    w = (d - dates[i]).days / span
    return [(eras[i], 1.0 - w), (eras[i + 1], w)]
