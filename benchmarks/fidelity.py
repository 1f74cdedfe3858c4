"""How right the model is: predictions against every measured row, next to a plain
100 %-of-roofline estimate on the same rows. Prints tables (Markdown with --markdown).

Run: python benchmarks/fidelity.py [--data FILE.csv] [--markdown]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from advisor.data.catalog import user_catalog  # noqa: E402
from advisor.text.format import table  # noqa: E402
from advisor.fit.validation import family_label, validate  # noqa: E402


def markdown(headers, rows) -> str:
    out = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    out += ["| " + " | ".join(str(c) for c in r) + " |" for r in rows]
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data")
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    report = validate(user_catalog(), args.data)
    fmt = markdown if args.markdown else table
    headers = ["metric / group", "rows", "median abs err", "P90 abs err", "bias", "in band", "100 % roofline median abs err"]

    def rows(summaries):
        return [[s.label, s.rows, f"{100 * s.mdape:.1f} %", f"{100 * s.p90:.1f} %", f"{100 * s.bias:+.1f} %",
                 f"{100 * s.coverage:.0f} %", f"{100 * s.ceiling_mdape:.0f} %"] for s in summaries]

    print(f"{len(report.checked)} measured rows compared, {len(report.unmapped)} not mapped ({report.data})\n")
    print(fmt(headers, rows(report.metrics())))
    for metric in ("decode", "prefill"):
        for title, key in (("runtime", lambda c: c.runtime.key), ("hardware family", family_label),
                           ("source", lambda c: c.source)):
            print(f"\n{metric} by {title}\n")
            print(fmt(headers, rows(report.by(metric, key))))


if __name__ == "__main__":
    main()
