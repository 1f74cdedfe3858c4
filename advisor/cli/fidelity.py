"""`advisor calibrate` and `advisor validate`: fit the profiles, and state the accuracy."""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

from advisor.data.catalog import Catalog, user_catalog
from advisor.data.errors import AdvisorError
from advisor.text.format import json_text, num, table
from advisor.cli.exit_codes import EXIT_OK


def _summary_rows(summaries):
    return [[s.label, s.rows, f"{100 * s.mdape:.1f}%", f"{100 * s.p90:.1f}%", f"{100 * s.bias:+.1f}%",
             f"{100 * s.coverage:.0f}%", f"{100 * s.ceiling_mdape:.0f}%"] for s in summaries]


HEADERS = ["group", "rows", "median |err|", "P90 |err|", "bias", "in band", "100 % roofline |err|"]


def cmd_validate(args: argparse.Namespace) -> int:
    from advisor.fit.validation import batch_label, family_label, validate

    cat = user_catalog()
    if args.holdout:
        return _validate_held_out(cat, args)
    if args.profiles:
        return _print_profiles(cat)
    report = validate(cat, args.data)
    if not report.checked and not report.unmapped:
        raise AdvisorError(f"{args.data} has no measurement rows")
    if args.json:

        doc = {
            "data": report.data,
            "rows_compared": len(report.checked), "rows_not_mapped": len(report.unmapped),
            "metrics": [s.as_dict() for s in report.metrics()],
            "by": {metric: {
                "source": [s.as_dict() for s in report.by(metric, lambda c: c.source)],
                "runtime": [s.as_dict() for s in report.by(metric, lambda c: c.runtime.key)],
                "hardware_family": [s.as_dict() for s in report.by(metric, family_label)],
                "batch": [s.as_dict() for s in report.by(metric, batch_label)],
            } for metric in ("decode", "prefill", "ttft", "e2e")},
            "worst": [{"line": c.case.row, "metric": c.case.metric, "hardware": c.case.hardware.name,
                       "model": c.case.model.name, "quant": c.case.quant.name, "runtime": c.case.runtime.key,
                       "gpus": c.case.gpus, "measured": c.case.measured, "predicted": c.predicted,
                       "low": c.low, "high": c.high, "error_pct": round(100 * c.error, 1)} for c in report.worst(25)],
            "not_mapped": [{"line": u.row, "row": u.text, "reason": u.reason} for u in report.unmapped],
        }
        print(json_text(doc))
        return EXIT_OK
    print(f"Measured rows in {report.data}: {len(report.checked)} compared, {len(report.unmapped)} not mapped\n")
    print("In-sample accuracy per metric: the profiles on the rows they were fitted to (--holdout source or era for "
          "out of sample)\n(err = predicted / measured − 1; decode/prefill in tokens/s, TTFT/e2e in ms)")
    print(table(HEADERS, _summary_rows(report.metrics())))
    for metric in ("decode", "prefill", "ttft", "e2e"):
        if not any(c.case.metric == metric for c in report.checked):
            continue
        for title, key in (("source", lambda c: c.source), ("runtime", lambda c: c.runtime.key),
                           ("hardware family", family_label), ("batch", batch_label)):
            rows = report.by(metric, key)
            if len(rows) > 1 or title == "runtime":
                print(f"\n{metric} by {title}")
                print(table(HEADERS, _summary_rows(rows)))
    print("\nWorst rows")
    print(table(["line", "metric", "hardware", "model", "quant", "runtime", "GPUs", "measured", "predicted", "band", "err"],
                [[str(c.case.row), c.case.metric, c.case.hardware.name, c.case.model.name, c.case.quant.name,
                  c.case.runtime.key, c.case.gpus, c.case.measured, c.predicted, f"{num(c.low)}–{num(c.high)}",
                  f"{100 * c.error:+.0f}%"] for c in report.worst(args.worst)]))
    if report.unmapped:
        print(f"\nNot mapped ({len(report.unmapped)} rows)")
        for reason, n in Counter(u.reason for u in report.unmapped).most_common():
            print(f"  {n:4d} × {reason}")
        if args.list_unmapped:
            for u in report.unmapped:
                print(f"  line {u.row}: {u.text}: {u.reason}")
        else:
            print("  (--list-unmapped shows every row)")
    return EXIT_OK


def _worst_held(report, n: int) -> list:
    return sorted(zip(report.held, report.checked), key=lambda hc: -abs(hc[1].error))[:n]


def _validate_held_out(cat: Catalog, args: argparse.Namespace) -> int:
    """`advisor validate --holdout source|era`: refit without each whole source (or build era),
    predict what was left out, and print the errors and band coverage out of sample."""
    from advisor.fit.measurements import load_cases
    from advisor.fit.validation import holdout

    cases, unmapped = load_cases(cat, args.data)
    if not cases:
        raise AdvisorError(f"no row of {args.data or 'the calibration data'} maps onto the catalog")
    report = holdout(cat, cases, args.holdout)
    metrics = [m for m in ("decode", "prefill", "ttft", "e2e") if any(c.case.metric == m for c in report.checked)]
    if args.json:
        print(json_text({
            "holdout": args.holdout, "rows_compared": len(report.checked), "rows_not_mapped": len(unmapped),
            "seconds": round(report.seconds, 2),
            "metrics": [s.as_dict() for s in report.metrics()],
            "by": {m: {args.holdout: [s.as_dict() for s in report.per_unit(m)],
                       "level": [s.as_dict() for s in report.per_level(m)],
                       "batch": [s.as_dict() for s in report.per_batch(m)]} for m in metrics},
            "worst": [{"line": c.case.row, "metric": c.case.metric, "hardware": c.case.hardware.name,
                       "model": c.case.model.name, "runtime": c.case.runtime.key, "gpus": c.case.gpus,
                       "measured": c.case.measured, "predicted": c.predicted, "low": c.low, "high": c.high,
                       "error_pct": round(100 * c.error, 1), "left_out": h.unit, "predicted_by": h.basis}
                      for h, c in _worst_held(report, 25)],
        }))
        return EXIT_OK
    unit = "source file" if args.holdout == "source" else "build era (runtime build)"
    print(f"Out of sample: each {unit} left out of the fit entirely, its rows predicted by the profiles the other "
          f"data gives\n({len(report.checked)} rows; bands sized from the other {args.holdout}s' held-out errors; "
          f"{report.seconds:.1f} s)\n")
    print(table(HEADERS, _summary_rows(report.metrics())))
    for m in metrics:
        print(f"\n{m}, by the {args.holdout} left out")
        print(table(HEADERS, _summary_rows(report.per_unit(m))))
        print(f"\n{m}, by the level of profile that predicted it (sibling = borrowed from another build, none = defaults)")
        print(table(HEADERS, _summary_rows(report.per_level(m))))
        if len(report.per_batch(m)) > 1:
            print(f"\n{m}, single sequence and batched")
            print(table(HEADERS, _summary_rows(report.per_batch(m))))
    worst = _worst_held(report, args.worst)
    print("\nWorst left-out rows")
    print(table(["line", "metric", "hardware", "model", "runtime", "GPUs", "measured", "predicted", "band", "err",
                 f"{args.holdout} left out", "predicted by"],
                [[str(c.case.row), c.case.metric, c.case.hardware.name, c.case.model.name, c.case.runtime.key,
                  c.case.gpus, c.case.measured, c.predicted, f"{num(c.low)}–{num(c.high)}", f"{100 * c.error:+.0f}%",
                  h.unit, h.basis] for h, c in worst]))
    return EXIT_OK


def _with_sd(value: float, sd: tuple[float, str] | None, digits: int) -> str:
    if sd is None:
        return f"{value:.{digits}f} –"
    return f"{value:.{digits}f} ±{sd[0]:.{digits}f}" + ("" if sd[1] == "fitted" else f" ({sd[1]})")


def _print_profiles(cat: Catalog) -> int:
    """`advisor validate --profiles`: the profiles in use, with the uncertainty the fit recorded."""
    rows = []
    for p in sorted(cat.profiles.values(), key=lambda p: p.key):
        sd = p.notes.split("; devices:")[0].removeprefix("posterior sd: ") if p.notes.startswith("posterior sd") else "—"
        rows.append([p.key, p.decode_rows + p.prefill_rows, f"{p.decode_bw_fraction:.3f}", f"{p.layer_overhead_us:.1f}",
                     f"{p.step_overhead_us:.0f}", f"{p.prefill_compute_fraction:.3f}", f"{p.attention_compute_fraction:.3f}",
                     f"{p.decode_low:.2f}–{p.decode_high:.2f}", f"{p.prefill_low:.2f}–{p.prefill_high:.2f}", sd])
    print(table(["profile", "rows", "decode BW frac", "µs/layer", "µs/step", "prefill frac", "attention frac",
                 "decode band", "prefill band", "posterior sd"], rows))
    return EXIT_OK


def _print_bands(bands) -> None:
    """The bands as sized from whole sources and eras left out, and the constants a prediction
    uses where no profile of its own applies (advisor/model/efficiency.py), to compare."""
    from advisor.model.efficiency import SIBLING_BAND_WIDENING, UNCALIBRATED_DECODE_BAND, UNCALIBRATED_PREFILL_BAND

    if bands is None:
        return
    from advisor.fit.calibration import BAND_QUANTILES

    lo_q, hi_q = (round(100 * q) for q in BAND_QUANTILES)
    print(f"\nbands: {lo_q}th–{hi_q}th percentile of ln(measured/predicted) with whole sources and build eras left out")
    rows = [[f"{kind}, {level}", bands.errors.get((kind, level), 0), f"{lo:.2f}–{hi:.2f}"]
            for (kind, level), (lo, hi) in sorted(bands.own.items())]
    constants = {"decode": UNCALIBRATED_DECODE_BAND, "prefill": UNCALIBRATED_PREFILL_BAND}
    rows += [[f"{kind}, defaults (uncalibrated)", bands.errors.get((kind, "none"), 0),
              f"{lo:.2f}–{hi:.2f} (efficiency.py uses {constants[kind][0]:.2f}–{constants[kind][1]:.2f})"]
             for kind, (lo, hi) in sorted(bands.uncalibrated.items())]
    print(table(["band, profile level", "held-out errors", "band"], rows))
    from advisor.model.efficiency import EXTRAPOLATION_BAND_WIDENING

    for kind, factor in sorted(bands.extrapolation_widening.items()):
        print(f"{kind}: an own profile predicting a hardware generation or format class it never saw needs its band "
              f"widened by ×{factor:.2f} on each side (efficiency.py uses ×{EXTRAPOLATION_BAND_WIDENING[kind]:.2f})")
    for kind, factor in sorted(bands.sibling_widening.items()):
        print(f"{kind}: a borrowed (sibling-build) profile's band needs widening by ×{factor:.2f} on each side to hold "
              f"the same share (efficiency.py uses ×{SIBLING_BAND_WIDENING[kind]:.2f})")


def cmd_calibrate_mine(args: argparse.Namespace) -> int:
    """`calibrate --mine FILE…` (a personal profile per runtime × hardware) and `--mine --reset`."""
    from advisor.data.userdata import user_data_dir
    from advisor.fit.bench_results import read_results
    from advisor.fit.compare import Overrides
    from advisor.fit.personal import PERSONAL_FILE, cases_from, fit_personal, reset, write_personal
    from advisor.model.efficiency import PERSONAL_PREFIX

    folder = user_data_dir()
    if args.reset:
        if args.mine:
            raise AdvisorError("--reset removes your personal calibration: give it without files")
        print(f"removed your personal calibration ({folder / PERSONAL_FILE})" if reset(folder)
              else "there was no personal calibration to remove")
        return EXIT_OK
    if not args.mine:
        raise AdvisorError("--mine needs result files (llama-bench, llama-batched-bench or bench_one_batch output), "
                           "or --reset")
    for flag in ("data", "out"):
        if getattr(args, flag):
            raise AdvisorError(f"--{flag} is for the shipped calibration, not --mine")
    cat = user_catalog()    # the user's hardware ("this machine") and imported models resolve too
    overrides = Overrides(hardware=args.hardware, model=args.model, quant=args.quant, runtime=args.runtime)
    cases, skipped = [], []
    for path in args.mine:
        _tool, records = read_results(path)
        c, s = cases_from(cat, records, overrides)
        cases += c
        skipped += s
    if not cases:
        reasons = sorted({why for _, why in skipped})
        raise AdvisorError("nothing to fit: " + ("; ".join(reasons[:3]) if reasons else "no rows"))
    fits = fit_personal(cat, cases)
    rows = []
    for f in fits:
        p = f.profile
        held = f"{100 * f.error_held_out:.1f} %" if f.error_held_out is not None else "— (< 3 rows)"
        rows.append([p.key, f"{p.decode_rows} / {p.prefill_rows}", f"{100 * f.error_before:.1f} %",
                     f"{100 * f.error_after:.1f} %", held, f"{p.decode_low:.2f}–{p.decode_high:.2f}",
                     f"{p.prefill_low:.2f}–{p.prefill_high:.2f}"])
    print(table(["profile", "decode / prefill rows", "|err| before", "|err| after", "|err| held out",
                 "decode band", "prefill band"], rows))
    print("|err| = median |predicted / measured − 1| on your rows: before = today's profiles; after = fitted on all "
          "of them; held out = each row predicted by a fit on the others")
    if skipped:
        print(f"{len(skipped)} rows not fitted: " + "; ".join(sorted({why for _, why in skipped})[:3]))
    # a profile is kept only where it predicts the user's rows better than today's (`PersonalFit.improves`)
    better = [f for f in fits if f.improves]
    for f in fits:
        if f not in better:
            print(f"{f.profile.key}: not kept: it does not predict your rows better than today's profile "
                  f"({100 * f.error_before:.1f} % before); fit one weight format at a time to see which differs")
    if args.dry_run or not better:
        return EXIT_OK
    fits = better
    path = write_personal(fits, folder)
    print(f"wrote {path}: predictions for {', '.join(f.profile.key[len(PERSONAL_PREFIX):] for f in fits)} now use it "
          "(undo: advisor calibrate --mine --reset)")
    return EXIT_OK


def cmd_calibrate(args: argparse.Namespace) -> int:
    from advisor.fit.calibration import calibrate, iter_levels, write_profiles
    from advisor.fit.measurements import DEFAULT_DATA, load_cases

    if args.mine is not None or args.reset:
        if args.mine is None:
            raise AdvisorError("--reset goes with --mine: advisor calibrate --mine --reset")
        return cmd_calibrate_mine(args)
    for flag in ("hardware", "model", "quant", "runtime"):
        if getattr(args, flag):
            raise AdvisorError(f"--{flag} goes with --mine (your own results)")
    data = Path(args.data) if args.data else DEFAULT_DATA
    # fit against the catalog without its current profiles, so results do not feed back; with the
    # user's hardware and models, so rows about "this machine" or an imported model map
    base = user_catalog()
    cat = Catalog(hardware=base.hardware, models=base.models, quants=base.quants, kv_dtypes=base.kv_dtypes,
                  runtimes=base.runtimes, profiles={})
    cases, unmapped = load_cases(cat, data)
    if not cases:
        raise AdvisorError(f"no row of {data} maps onto the catalog; nothing to fit")
    print(f"fitting {len(cases)} rows ({len(unmapped)} not mapped) …", file=sys.stderr)
    result = calibrate(cat, cases)
    rows = []
    for g in iter_levels(result.groups):
        p, sd = g.params, g.uncertainty or {}
        rows.append([g.key, len(g.rows), _with_sd(p.decode_bw_fraction, sd.get("decode_bw_fraction"), 3),
                     _with_sd(p.layer_overhead_us, sd.get("layer_overhead_us"), 1),
                     _with_sd(p.step_overhead_us, sd.get("step_overhead_us"), 0),
                     _with_sd(p.prefill_compute_fraction, sd.get("prefill_compute_fraction"), 3),
                     _with_sd(p.attention_compute_fraction, sd.get("attention_compute_fraction"), 3),
                     f"{g.band_decode[0]:.2f}–{g.band_decode[1]:.2f}", f"{g.band_prefill[0]:.2f}–{g.band_prefill[1]:.2f}"])
    print(table(["profile", "rows", "decode BW frac", "µs/layer", "µs/step", "prefill frac", "attention frac",
                 "decode band", "prefill band"], rows))
    print("± posterior sd (MAP fit with physical priors); (prior) = the data did not pin it down, "
          "(bound) = on a physical bound, – = not fitted here (the parent's value)")
    _print_bands(result.bands)
    if args.held_out:
        from advisor.fit.calibration import held_out_errors
        import numpy as np

        print("\nwhole devices held out of the fit (what to expect on hardware the calibration has not seen):")
        errs = held_out_errors(cat, cases)
        print(table(["metric", "rows", "median |err|", "P90 |err|", "bias"],
                    [[m, len(e), f"{100 * np.median(np.abs(e)):.1f}%", f"{100 * np.quantile(np.abs(e), 0.9):.1f}%",
                      f"{100 * np.median(e):+.1f}%"] for m, e in sorted(errs.items())]))
    if args.dry_run:
        return EXIT_OK
    # by default into the user's data folder, where they overlay the shipped profiles: the
    # installed package is not ours to write (--out catalog/profiles.yaml refreshes the shipped file)
    from advisor.data.userdata import user_data_dir

    path = write_profiles(result, data, Path(args.out) if args.out else user_data_dir() / "profiles.yaml")
    print(f"wrote {len(result.profiles)} profiles to {path}")
    return EXIT_OK


def register(sub) -> None:
    p = sub.add_parser("validate", help="compare predictions with measured results and print the accuracy")
    p.add_argument("--data", help="a CSV in the calibration columns (default: the shipped calibration data)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.add_argument("--worst", type=int, default=15, help="how many worst rows to list (default 15)")
    p.add_argument("--list-unmapped", action="store_true", help="list every row that could not be mapped")
    p.add_argument("--holdout", choices=("source", "era"),
                   help="out of sample: refit with each source file (or build era) left out and predict it")
    p.add_argument("--profiles", action="store_true",
                   help="list the efficiency profiles in use with each parameter's posterior sd")
    p.set_defaults(func=cmd_validate)
    p = sub.add_parser("calibrate", help="fit the runtime efficiency profiles to measured data")
    p.add_argument("--data", help="a CSV in the calibration columns (default: catalog/measured/calibration.csv)")
    p.add_argument("--out", help="where to write the profiles (default: profiles.yaml in your data folder, overlaying the shipped ones)")
    p.add_argument("--dry-run", action="store_true", help="fit and print, write nothing")
    p.add_argument("--held-out", action="store_true",
                   help="also refit with each device left out and print the error on it (slower)")
    p.add_argument("--mine", nargs="*", metavar="FILE",
                   help="fit a personal profile to your own benchmark results (llama-bench, llama-batched-bench, "
                        "bench_one_batch files): later predictions for that runtime and hardware use it")
    p.add_argument("--reset", action="store_true", help="with --mine: remove your personal calibration")
    p.add_argument("--hardware", help="with --mine: the hardware the results were measured on, where the file "
                                      "does not say")
    p.add_argument("--model", help="with --mine: the model, where the file's name for it does not resolve")
    p.add_argument("--quant", help="with --mine: the weight format, where the file does not say")
    p.add_argument("--runtime", help="with --mine: the runtime, where the file does not say")
    p.set_defaults(func=cmd_calibrate)
