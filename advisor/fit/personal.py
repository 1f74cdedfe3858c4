"""A personal calibration: efficiency profiles fitted to the user's own measurements (`calibrate --mine`).

The measurements are benchmark result files (`fit.bench_results`). Their single-stream and static
batch figures (llama-bench, llama-batched-bench, bench_one_batch: prefill and decode tok/s) become
calibration cases on the configuration each was measured on. Serving figures are compared
(`compare-measured`), not fitted. For each runtime × hardware with data, the same fit the shipped
calibration uses (`calibration.fit_group`) runs from a prior that is today's prediction for that pair
(the shipped profile it would use), so a few rows move the prediction only as far as they support.

The band is narrowed to what the rows support: the largest error left on them, plus a margin,
never wider than the prior's band and never narrower than `MIN_BAND` (with fewer than
`MIN_ROWS_FOR_BAND` rows of a phase, that phase keeps the prior's band).

The profiles live in the user's data folder (`PERSONAL_FILE`), at the hardware level with the key
prefix `PERSONAL_PREFIX`, which ranks them first (`model.efficiency.ranked_profiles`); predictions
that use one say so. `reset` removes the file; the shipped calibration never changes.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Sequence

import numpy as np
import yaml

from advisor.data.errors import AdvisorError
from advisor.data.specs import Profile
from advisor.data.safe_load import load_yaml
from advisor.data.userdata import file_lock, write_atomic
from advisor.fit.bench_records import BenchRecord
from advisor.fit.calibration import MIN_BAND, fit_group, predictions
from advisor.fit.compare import Overrides, config_for
from advisor.fit.measurements import Case
from advisor.model.efficiency import PERSONAL_PREFIX, Efficiency, efficiency_for
from advisor.model.inputs import compute_peak
from advisor.model.roofline import Workload

PERSONAL_FILE = "my-calibration.yaml"
MIN_ROWS_FOR_BAND = 3
#: the margin on the largest error left: a few rows show less spread than more would
BAND_MARGIN = 1.25
FITTED = {"prefill_tok_s": "prefill", "decode_tok_s": "decode", "batch_decode_tok_s": "decode"}


@dataclass(frozen=True)
class PersonalFit:
    profile: Profile
    cases: tuple[Case, ...]
    error_before: float        # median |predicted/measured − 1| with today's profiles, on these rows
    error_after: float         # the same with the personal profile fitted on all of them
    error_held_out: float | None   # each row predicted by a fit on the others (None: too few rows)

    @property
    def improves(self) -> bool:
        """Whether it predicts the user's rows better than today's profile: held out, or with fewer
        than 3 rows in the fit. One efficiency per phase cannot always hold every format at once, so a
        fit that does not is not kept."""
        err = self.error_held_out if self.error_held_out is not None else self.error_after
        return err < self.error_before


def cases_from(cat, records: Sequence[BenchRecord], overrides: Overrides | None = None
               ) -> tuple[list[Case], list[tuple[BenchRecord, str]]]:
    """Calibration cases of the static figures among ``records``; the others with the reason."""
    o = overrides or Overrides()
    cases: list[Case] = []
    skipped: list[tuple[BenchRecord, str]] = []
    for i, r in enumerate(records):
        metric = FITTED.get(r.metric)
        if metric is None:
            skipped.append((r, f"{r.metric} is a serving figure: compared (compare-measured), not fitted"))
            continue
        if r.stat not in ("mean", "median"):
            skipped.append((r, f"a {r.stat} is not fitted (means and medians are)"))
            continue
        try:
            cfg = config_for(cat, r, o)
        except AdvisorError as exc:
            skipped.append((r, str(exc)))
            continue
        batch = max(int(r.batch or 1), 1)
        depth = int(r.depth_tokens or 0)
        if metric == "prefill":
            wl = Workload(batch, int(r.prompt_tokens or 512), 0, depth)
        else:
            wl = Workload(batch, int(r.prompt_tokens or 0), int(r.output_tokens or 128), depth)
        value = r.value / batch if r.metric == "batch_decode_tok_s" else r.value
        cases.append(Case(row=i + 1, hardware=cfg.hardware, model=cfg.model, quant=cfg.quant, kv=cfg.kv_dtype,
                          runtime=cfg.runtime, gpus=cfg.gpus, workload=wl, metric=metric, measured=value,
                          source=r.source or r.tool))
    return cases, skipped


def _errors(cases: Sequence[Case], effs: Sequence[Efficiency]) -> np.ndarray:
    pred = predictions(cases, effs)
    return pred / np.array([c.measured for c in cases]) - 1.0


def _band(log_resid: np.ndarray, prior: tuple[float, float]) -> tuple[float, float]:
    if log_resid.size < MIN_ROWS_FOR_BAND:
        return prior
    half = BAND_MARGIN * float(np.max(np.abs(log_resid)))
    low = max(min(math.exp(-half), MIN_BAND[0]), prior[0])
    high = min(max(math.exp(half), MIN_BAND[1]), prior[1])
    return round(low, 3), round(high, 3)


def _int8(c: Case) -> bool:
    """Whether the case's linear layers compute in int8 (its format's compute dtype on its hardware)."""
    return compute_peak(c.hardware, c.runtime, c.quant)[1] == "int8"


def fit_personal(cat, cases: Sequence[Case]) -> list[PersonalFit]:
    """One personal profile per runtime × hardware with cases."""
    out = []
    pairs = sorted({(c.runtime.key, c.hardware.key) for c in cases})
    for rt_key, hw_key in pairs:
        sub = [c for c in cases if c.runtime.key == rt_key and c.hardware.key == hw_key]
        rt, hw = sub[0].runtime, sub[0].hardware
        prior = efficiency_for(cat.profiles, rt, hw)
        params, _sd = fit_group(sub, np.arange(len(sub)), prior)
        before = _errors(sub, [prior] * len(sub))
        after = _errors(sub, [params] * len(sub))
        held = None
        if len(sub) >= 3:
            loo = []
            for i in range(len(sub)):
                rest = np.array([j for j in range(len(sub)) if j != i])
                p_i, _ = fit_group(sub, rest, prior)
                loo.append(_errors([sub[i]], [p_i])[0])
            held = float(np.median(np.abs(loo)))
        phase = np.array([c.metric for c in sub])
        resid = np.log1p(after)
        band_decode = _band(resid[phase == "decode"], (prior.decode_low, prior.decode_high))
        band_prefill = _band(resid[phase == "prefill"], (prior.prefill_low, prior.prefill_high))
        n_dec, n_pre = int((phase == "decode").sum()), int((phase == "prefill").sum())
        sources = sorted({re.split(r"[ ,#]", c.source, maxsplit=1)[0] for c in sub})
        profile = Profile(
            key=f"{PERSONAL_PREFIX}{rt_key}+{hw_key}", runtime=rt_key, formats_of=rt.format_family,
            vendor=hw.vendor, family=hw.family, hardware=hw_key,
            decode_bw_fraction=round(params.decode_bw_fraction, 4), layer_overhead_us=round(params.layer_overhead_us, 2),
            step_overhead_us=round(params.step_overhead_us, 1),
            prefill_compute_fraction=round(params.prefill_compute_fraction, 4),
            attention_compute_fraction=round(params.attention_compute_fraction, 4),
            # the int8 kernels' own fraction where the rows had int8 prompts (quantized GGUF on a CPU)
            int8_compute_fraction=(round(float(params.int8_compute_fraction), 4)
                                   if any(c.metric == "prefill" and _int8(c) for c in sub)
                                   and math.isfinite(float(params.int8_compute_fraction)) else None),
            # the cost of an expert visit at the prior profile's ratio to the per-layer cost
            expert_overhead_us=(round(float(params.expert_overhead_us), 2)
                                if math.isfinite(float(params.expert_overhead_us)) else None),
            decode_low=band_decode[0], decode_high=band_decode[1],
            prefill_low=band_prefill[0], prefill_high=band_prefill[1],
            decode_rows=n_dec, prefill_rows=n_pre,
            measured_families=(hw.family,), measured_formats=tuple(sorted({c.quant.key for c in sub})),
            source=f"advisor calibrate --mine on your {len(sub)} measurements ({', '.join(sources)[:200]})",
            notes=f"prior: {prior.basis}")
        out.append(PersonalFit(profile, tuple(sub), float(np.median(np.abs(before))),
                               float(np.median(np.abs(after))), held))
    return out


_FIELDS = ("key", "runtime", "formats_of", "vendor", "family", "hardware", "decode_bw_fraction", "layer_overhead_us",
           "step_overhead_us", "prefill_compute_fraction", "attention_compute_fraction", "int8_compute_fraction",
           "expert_overhead_us", "decode_low", "decode_high",
           "prefill_low", "prefill_high", "decode_rows", "prefill_rows", "measured_families", "measured_formats",
           "source", "notes")


def write_personal(fits: Sequence[PersonalFit], folder: Path) -> Path:
    """Write the personal profiles to ``folder/PERSONAL_FILE``, replacing those of the same runtime ×
    hardware and keeping the others. The file is read, merged and written under the user-data lock,
    atomically, so two calibrations at once both land."""
    path = Path(folder) / PERSONAL_FILE
    path.parent.mkdir(parents=True, exist_ok=True)
    with file_lock(path):
        mine: dict[str, dict] = {}
        if path.is_file():
            try:
                doc = load_yaml(path.read_text(encoding="utf-8"), str(path))
            except (OSError, AdvisorError):
                doc = None   # unreadable: replaced by what this fit knows (the catalog listed it as an issue)
            entries = doc.get("profiles") if isinstance(doc, dict) else None
            for entry in entries if isinstance(entries, list) else []:
                if isinstance(entry, dict) and isinstance(entry.get("key"), str):
                    mine[entry["key"]] = entry
        for f in fits:
            d = {}
            for k in _FIELDS:
                v = getattr(f.profile, k)
                if v is not None:
                    d[k] = list(v) if isinstance(v, tuple) else v
            mine[f.profile.key] = d
        text = ("# Your personal calibration: written by `advisor calibrate --mine`, removed by `--mine --reset`.\n"
                "# Fitted to your own measurements; it applies to your predictions only.\n"
                + yaml.safe_dump({"profiles": list(mine.values())}, sort_keys=False, allow_unicode=True))
        write_atomic(path, text)
    return path


def reset(folder: Path) -> bool:
    """Remove the personal calibration; False when there was none."""
    path = Path(folder) / PERSONAL_FILE
    try:
        path.unlink()
    except FileNotFoundError:
        return False
    except OSError as exc:
        raise AdvisorError(f"cannot remove {path}: {exc.strerror or exc}") from None
    return True
