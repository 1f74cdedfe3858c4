"""The core's public face for the desktop app and the report: names in, typed answers out.

Everything a caller outside the command line needs goes through here, so that the app never
reaches into the physics modules and those can change without breaking it:

- `load_catalog()`: the shipped catalog with the user's overlay (a fresh object each call);
- `configure(...)` → `Config`: names resolved forgivingly, defaults filled in one place
  (``memory_gb=`` picks one of the sizes the hardware ships in);
- `memory_options(hw)`: the memory sizes a hardware entry ships in (GiB, its default among them);
  `with_memory(hw, memory_gib)`: that entry in another of them (`AdvisorError` listing them);
  `hardware_named(cat, name, memory_gib=None)`: a typed name ("M3 Max 64GB") → `Hardware`;
  `hardware_sized(cat, key, memory_gib=None, size_hint=...)`: a catalog entry in a size, or in its
  default with the "assumed … GB" note ending in the caller's own words (the app's memory combo);
- `predict(cat, config)` → `Prediction` (the fields of ``advisor predict --json``);
- `curve(cat, config, vary, values)` → `Curve`: one vectorised call along batch, prompt, depth
  or output, with bands and ceilings (the app's charts, the report's figures);
- `roofline(cat, config)` → `Roofline`: the device's roofs and the operating points of prefill,
  decode and each operator class;
- `suggest(cat, prefix, section)`, `runtimes_for`, `formats_for`, `kv_dtypes_for`,
  `with_defaults`, `will_it_run`, `recommend`; `by_hardware(passing, n)` (best configuration per
  hardware with its alternatives, as the CLI lists them) and `why_first(first, second, basis)`;
  `Recommendation.shortlist(rows, groups)` → `Shortlist`: what a table shows of it, small enough to
  send between processes;
- `serve(cat, config, Load(...))` → `ServeReport` and `concurrency_sweep` (a server under load);
- `techniques(cat, config, Techniques(...))` → a `TechniqueEffect` (before/after `TechniqueFigures`)
  per serving technique asked for: speculative decoding, eager attention, an MHA/GQA/MQA layout,
  partial offload; `techniques_from(cat, draft=..., ...)` builds the record from typed text;
  `speculative_curve` and `offload_curve` trace them along the batch or the GPU layers;
  `draft_refusal(draft, target)` says why a model cannot draft for another (empty when it can);
  `technique_rows(effect)` and `technique_details(effect)` say it in text (the app and the report);
- `report_from_config` / `report_from_requirements` → `ReportContent`: the PDF report as data
  (rendered by ``ui/report.py``);
- `import_model(source)` → `ImportedModel` (a config.json, a folder, a .gguf file, ``hf:org/name``),
  `add_imported(cat, imported)` (usable by name in that catalog), `catalog_with_imported(cat, imported)`
  (a new catalog holding it, for callers such as the app that keep sweeps on the old one),
  `save_imported_model(cat, imported)` (into the user catalog), `imported_weight_bytes(cat, imported)`
  (bytes per weight format).
"""

from __future__ import annotations

__all__ = [
    "AdvisorError", "UnknownName", "Catalog", "LoadIssue", "load_catalog", "suggest",
    "Config", "Defaults", "Workload", "configure", "with_defaults", "reconfigure", "Reconfigured", "sized_hardware",
    "memory_options", "with_memory", "with_threads", "hardware_named", "hardware_sized", "MEMORY_SIZE_HINT",
    "Choice", "runtimes_for", "formats_for", "kv_dtypes_for",
    "Prediction", "predict", "Curve", "CURVE_AXES", "curve", "Roofline", "RooflinePoint", "roofline",
    "Requirements", "Recommendation", "Candidate", "recommend", "DEFAULT_MIN_BITS", "DEFAULT_CHAT_CONTEXT", "HardwareGroup", "by_hardware", "Shortlist",
    "Costs", "costs", "why_first", "candidate_record", "candidate_verdict", "reason_text", "VERDICTS", "EVIDENCE_WORDS", "EVIDENCE_TEXT",
    "WillItRun", "FitRow", "will_it_run", "WILL_IT_RUN_MODES", "Explanation", "explain",
    "Load", "ServeReport", "serve", "concurrency_sweep", "prompt_mix", "output_mix", "BATCH_MIX_POINTS",
    "prompt_cache_gb_s",
    "ReportContent", "ReportTable", "SourceEntry", "report_from_config", "report_from_requirements",
    "catalog_data_date",
    "Techniques", "TechniqueEffect", "TechniqueFigures", "techniques", "techniques_from", "speculative_curve",
    "SpeculativeCurve", "offload_curve", "OffloadCurve", "attention_variant", "expected_tokens",
    "ImportedModel", "import_model", "is_import_source", "add_imported", "catalog_with_imported", "renamed_import",
    "save_imported_model", "imported_weight_bytes", "draft_refusal", "technique_rows",
    "technique_details", "load_json", "load_yaml", "output_target",
    "BenchRecord", "read_results", "MeasuredComparison", "MeasuredOverrides", "compare_measured", "summarise_measured",
    "measure_endpoint", "measured_records", "MEASURED_LABELS", "MEASURED_UNITS", "measured_load_text",
    "measured_metric_text", "measured_report_section", "PersonalFit", "fit_mine", "save_mine", "reset_mine",
    "EXPORT_KINDS", "export_deployment",
]

from advisor.model.compat import Choice, formats_for, kv_dtypes_for, runtimes_for
from advisor.model.config import Config, Defaults, configure, with_defaults
from advisor.model.reconfigure import Reconfigured, reconfigure, sized_hardware
from advisor.model.predict import CURVE_AXES, Curve, Prediction, Roofline, RooflinePoint, curve, predict, roofline
from advisor.data.catalog import (MEMORY_SIZE_HINT, Catalog, LoadIssue, load_catalog as _load,
                                  memory_options, hardware_sized, with_memory, with_threads)
from advisor.data.errors import AdvisorError, UnknownName
from advisor.data.safe_load import load_json, load_yaml
from advisor.data.userdata import output_target

#: the measured-vs-predicted names, loaded on first use (asyncio, the HTTP client and the calibration
#: fit are not wanted on the app's start-up path): api name -> (module, name there)
_LAZY = {
    "BenchRecord": ("advisor.fit.bench_records", "BenchRecord"),
    "read_results": ("advisor.fit.bench_results", "read_results"),
    "measure_endpoint": ("advisor.fit.endpoint", "measure"),
    "measured_records": ("advisor.fit.endpoint", "records_from"),
    "PersonalFit": ("advisor.fit.personal", "PersonalFit"),
    "MEASURED_LABELS": ("advisor.fit.compare", "METRIC_LABELS"),
    "MEASURED_UNITS": ("advisor.fit.compare", "METRIC_UNITS"),
    "MeasuredComparison": ("advisor.fit.compare", "Comparison"),
    "MeasuredOverrides": ("advisor.fit.compare", "Overrides"),
    "compare_measured": ("advisor.fit.compare", "compare"),
    "measured_load_text": ("advisor.fit.compare", "load_text"),
    "measured_metric_text": ("advisor.fit.compare", "metric_text"),
    "summarise_measured": ("advisor.fit.compare", "summarise"),
}


def __getattr__(name: str):
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(module), attr)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
from advisor.data.importers import ImportedModel, import_model, is_import_source, renamed as renamed_import
from advisor.model.geometry import geometry as _geometry, weight_bits as _weight_bits, weight_bytes as _weight_bytes
from advisor.model.roofline import Workload
from advisor.plan.recommend import (DEFAULT_CHAT_CONTEXT, DEFAULT_MIN_BITS, Candidate, HardwareGroup, Recommendation, Requirements,
                                   Shortlist, by_hardware, recommend)
from advisor.plan.pricing import Costs, costs
from advisor.plan.will_it_run import MODES as WILL_IT_RUN_MODES, FitRow, WillItRun, will_it_run
from advisor.text.explain import Explanation, explain
from advisor.text.verdicts import (EVIDENCE_TEXT, EVIDENCE_WORDS, VERDICTS, candidate_record, candidate_verdict,
                                   reason_text, why_first)
from advisor.model.inputs import prompt_cache_gb_s
from advisor.model.serving import BATCH_MIX_POINTS, Load, ServeReport, concurrency_sweep, output_mix, prompt_mix, serve
from advisor.model.techniques import (Effect as TechniqueEffect, Figures as TechniqueFigures, OffloadCurve,
                                      SpeculativeCurve, Techniques, attention_variant, expected_tokens, offload_curve,
                                      speculative_curve, techniques_from, tokenizer_refusal as draft_refusal,
                                      what_if as techniques)
from advisor.text.techniques import technique_details, technique_rows
from advisor.text.report import measured_section as _measured_section
from advisor.text.report import (ReportContent, SourceEntry, Table as ReportTable, catalog_data_date,
                                 report_from_config, report_from_requirements)


#: the files a recommended configuration can be written as (`export_deployment`)
EXPORT_KINDS = ("compose", "llm-d", "launch")


def export_deployment(candidate: Candidate, req: Requirements, kind: str, folder) -> list:
    """Write ``candidate`` as deployment files of ``kind`` (docker compose for one machine, llm-d Helm
    values, or the engine's per-node launch scripts) into ``folder``; the paths written.
    `AdvisorError` for a kind that cannot express it or a folder that cannot be written."""
    from advisor.plan import exports
    from advisor.plan.deployment import from_candidate

    return exports.write(from_candidate(candidate, req), kind, folder)


def load_catalog(user: bool = True) -> Catalog:
    """The shipped catalog plus (with ``user``) the user's overlay; bad entries are in ``.issues``."""
    from advisor.data.catalog import CATALOG_DIR
    from advisor.data.userdata import user_data_dir

    return _load(CATALOG_DIR, user_data_dir() if user else None)


def hardware_named(cat: Catalog, name: str, memory_gib: float | None = None):
    """The `Hardware` a typed name designates, in the memory size the name or ``memory_gib`` states
    (else its default, with an ``assumed`` note when it ships in several)."""
    return cat.hardware_named(name, memory_gib)


def suggest(cat: Catalog, prefix: str, section: str = "models", limit: int = 20) -> list[tuple[str, str]]:
    """(key, display name) of entries whose names start with or contain ``prefix``, best first."""
    return cat.index(section).suggest(prefix, limit)


def add_imported(cat: Catalog, imported: ImportedModel) -> ImportedModel:
    """Make ``imported`` usable in ``cat`` (by its key or name in `configure`; a GGUF file's own weight
    mix becomes a format and the default for it). Returns it, re-keyed ``imported-…`` if its key is
    another catalog model's. Call before building sweeps on ``cat`` (or load a fresh catalog)."""
    return cat.add_imported(imported)


def catalog_with_imported(cat: Catalog, imported: ImportedModel) -> tuple[Catalog, ImportedModel]:
    """A new catalog: ``cat``'s entries plus ``imported`` (and the imports ``cat`` already had), with
    fresh caches, so name indexes and sweep tables built on it see the new model and a GGUF file's
    weight mix; ``cat`` itself is left as it was. Returns it and the (possibly re-keyed) import."""
    import dataclasses

    new = dataclasses.replace(cat, models=dict(cat.models), quants=dict(cat.quants))
    for key in cat.models:  # the weight formats of models imported into ``cat`` stay their defaults
        own = cat.imported_quant(cat.models[key])
        if own is not None:
            new._imported_quants[key] = own.key
    return new, new.add_imported(imported)


def save_imported_model(cat: Catalog, imported: ImportedModel, folder=None):
    """Write ``imported`` to the user catalog (``imported-models.yaml`` in the data folder, merged,
    atomically); returns ``(imported, path)``. Reload the catalog (`load_catalog()`) to see it."""
    from advisor.data.importers import save_imported_model as _save

    return _save(cat, imported, folder)


def imported_weight_bytes(cat: Catalog, imported: ImportedModel) -> dict[str, float]:
    """Bytes of ``imported``'s weights under each weight format of the catalog (and its own GGUF mix)."""
    m = imported.model
    g = _geometry(m)
    quants = dict(cat.quants)
    if imported.quant is not None:
        quants[imported.quant.key] = imported.quant
    return {q.key: float(_weight_bytes(g, _weight_bits(q))) for q in quants.values()
            if not (q.non_expert_bits_per_weight is not None and not m.is_moe)}


def measured_report_section(comparisons, files) -> dict:
    """The report's "measured on your machine" fields (`ReportContent.measured`, ``measured_points``)."""
    from advisor.fit.compare import load_text, metric_text

    return _measured_section(comparisons, files, metric_text, load_text)


def fit_mine(cat: Catalog, records, overrides=None) -> "tuple[list[PersonalFit], list]":
    """`calibrate --mine` on records already read: (fits, skipped (record, reason) pairs)."""
    from advisor.fit.personal import cases_from, fit_personal

    cases, skipped = cases_from(cat, records, overrides)
    return (fit_personal(cat, cases) if cases else []), skipped


def save_mine(fits):
    """Write the fits that predict their rows better held out (as `calibrate --mine` does); the path."""
    from advisor.data.userdata import user_data_dir
    from advisor.fit.personal import write_personal

    kept = [f for f in fits if f.improves]
    if not kept:
        raise AdvisorError("no personal profile predicts your rows better than today's: nothing saved")
    return write_personal(kept, user_data_dir())


def reset_mine() -> bool:
    """Remove the personal calibration (`calibrate --mine --reset`); False when there was none."""
    from advisor.data.userdata import user_data_dir
    from advisor.fit.personal import reset

    return reset(user_data_dir())
