"""The file `advisor measure --out` writes (``{"advisor_measure": 1, "levels": [...]}``), so a
measurement can be compared and calibrated on later like any benchmark client's result."""

from __future__ import annotations

from advisor.data.errors import AdvisorError
from advisor.fit.bench_records import BenchRecord

TOOL = "advisor measure"


def sniff(text: str, data) -> bool:
    return isinstance(data, dict) and data.get("advisor_measure") == 1


def parse(text: str, data, source: str) -> list[BenchRecord]:
    from advisor.fit.endpoint import records_from

    levels = data.get("levels")
    if not isinstance(levels, list) or not all(isinstance(lv, dict) and isinstance(lv.get("concurrency"), int)
                                               for lv in levels):
        raise AdvisorError(f"{source}: an advisor measure file whose 'levels' are not a list of levels")
    try:
        return records_from(data, source)
    except (KeyError, TypeError, ValueError) as exc:
        raise AdvisorError(f"{source}: a malformed advisor measure level ({type(exc).__name__}: {exc})") from None
