"""How right the model is: predictions against every measured row, next to a plain
100 %-of-roofline estimate on the same rows, in sample and with whole sources and build eras left
out of the fit. Prints tables (Markdown with --markdown).

Run: python benchmarks/fidelity.py [--data FILE.csv] [--markdown] [--no-holdout]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from advisor.data.catalog import user_catalog  # noqa: E402
from advisor.text.format import markdown_table as markdown, table  # noqa: E402
from advisor.fit.measurements import load_cases  # noqa: E402
from advisor.fit.validation import family_label, holdout, validate  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data")
    ap.add_argument("--markdown", action="store_true")
    ap.add_argument("--no-holdout", action="store_true", help="skip the out-of-sample tables (a few seconds)")
    args = ap.parse_args()
    cat = user_catalog()
    report = validate(cat, args.data)
    fmt = markdown if args.markdown else table
    headers = ["metric / group", "rows", "median abs err", "P90 abs err", "bias", "in band", "100 % roofline median abs err"]

    def rows(summaries):
        return [[s.label, s.rows, f"{100 * s.mdape:.1f} %", f"{100 * s.p90:.1f} %", f"{100 * s.bias:+.1f} %",
                 f"{100 * s.coverage:.0f} %", f"{100 * s.ceiling_mdape:.0f} %"] for s in summaries]

    print(f"{len(report.checked)} measured rows compared, {len(report.unmapped)} not mapped ({report.data})\n")
    print("in sample (the shipped profiles on the rows they were fitted to)\n")
    print(fmt(headers, rows(report.metrics())))
    if not args.no_holdout:
        cases, _ = load_cases(cat, args.data)
        for by in ("source", "era"):
            out = holdout(cat, cases, by)
            print(f"\nout of sample: each {by} left out of the fit ({out.seconds:.1f} s)\n")
            print(fmt(headers, rows(out.metrics())))
            for metric in ("decode", "prefill"):
                print(f"\n{metric}, by the {by} left out\n")
                print(fmt(headers, rows(out.per_unit(metric))))
    for metric in ("decode", "prefill"):
        for title, key in (("runtime", lambda c: c.runtime.key), ("hardware family", family_label),
                           ("source", lambda c: c.source)):
            print(f"\n{metric} by {title}\n")
            print(fmt(headers, rows(report.by(metric, key))))


if __name__ == "__main__":
    main()
