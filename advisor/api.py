"""The core's public face for the desktop app and the report: names in, typed answers out.

Everything a caller outside the command line needs goes through here, so that the app never
reaches into the physics modules and those can change without breaking it:

- `load_catalog()`: the shipped catalog with the user's overlay (a fresh object each call);
- `configure(...)` → `Config`: names resolved forgivingly, defaults filled in one place;
- `predict(cat, config)` → `Prediction` (the fields of ``advisor predict --json``);
- `curve(cat, config, vary, values)` → `Curve`: one vectorised call along batch, prompt, depth
  or output, with bands and ceilings (the app's charts, the report's figures);
- `roofline(cat, config)` → `Roofline`: the device's roofs and the operating points of prefill,
  decode and each operator class;
- `suggest(cat, prefix, section)`, `runtimes_for`, `formats_for`, `kv_dtypes_for`,
  `with_defaults`, `will_it_run`, `recommend`;
- `serve(cat, config, Load(...))` → `ServeReport` and `concurrency_sweep` (a server under load);
- `report_from_config` / `report_from_requirements` → `ReportContent`: the PDF report as data
  (rendered by ``ui/report.py``).
"""

from __future__ import annotations

__all__ = [
    "AdvisorError", "UnknownName", "Catalog", "LoadIssue", "load_catalog", "suggest",
    "Config", "Defaults", "Workload", "configure", "with_defaults",
    "Choice", "runtimes_for", "formats_for", "kv_dtypes_for",
    "Prediction", "predict", "Curve", "CURVE_AXES", "curve", "Roofline", "RooflinePoint", "roofline",
    "Requirements", "Recommendation", "Candidate", "recommend", "candidate_record", "candidate_verdict", "reason_text",
    "WillItRun", "FitRow", "will_it_run", "Explanation", "explain",
    "Load", "ServeReport", "serve", "concurrency_sweep",
    "ReportContent", "ReportTable", "SourceEntry", "report_from_config", "report_from_requirements",
    "catalog_data_date",
]

from advisor.model.compat import Choice, formats_for, kv_dtypes_for, runtimes_for
from advisor.model.config import Config, Defaults, configure, with_defaults
from advisor.model.predict import CURVE_AXES, Curve, Prediction, Roofline, RooflinePoint, curve, predict, roofline
from advisor.data.catalog import Catalog, LoadIssue, load_catalog as _load
from advisor.data.errors import AdvisorError, UnknownName
from advisor.model.roofline import Workload
from advisor.plan.recommend import Candidate, Recommendation, Requirements, recommend
from advisor.plan.will_it_run import FitRow, WillItRun, will_it_run
from advisor.text.explain import Explanation, explain
from advisor.text.verdicts import candidate_record, candidate_verdict, reason_text
from advisor.model.serving import Load, ServeReport, concurrency_sweep, serve
from advisor.text.report import (ReportContent, SourceEntry, Table as ReportTable, catalog_data_date,
                                 report_from_config, report_from_requirements)


def load_catalog(user: bool = True) -> Catalog:
    """The shipped catalog plus (with ``user``) the user's overlay; bad entries are in ``.issues``."""
    from advisor.data.catalog import CATALOG_DIR
    from advisor.data.userdata import user_data_dir

    return _load(CATALOG_DIR, user_data_dir() if user else None)


def suggest(cat: Catalog, prefix: str, section: str = "models", limit: int = 20) -> list[tuple[str, str]]:
    """(key, display name) of entries whose names start with or contain ``prefix``, best first."""
    return cat.index(section).suggest(prefix, limit)
