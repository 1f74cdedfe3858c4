"""Where `advisor.model.devices.LOW_PRECISION_GEMM_SHARE` comes from: the share of its dense peak a
low-precision format's matrix products reach, over the share BF16 products reach of theirs, from
aiconfigurator's published kernel measurements (per GPU, engine and version; NVIDIA's own collection).

For each system and engine: the median TFLOP/s over prompt-sized GEMMs (2,048-8,192 tokens, both
other sides 4,096 or more) per dtype, as a share of that dtype's dense peak (the catalog's figures),
and each low-precision dtype's share over BF16's. Prints one table.

    python benchmarks/gemm_shares.py --data DIR

DIR: aiconfigurator-core's `systems/data` folder (the `aiconfigurator-core` 0.12.0 wheel from PyPI,
unzipped). Needs pandas and pyarrow (not dependencies of advisor: install them beside it to run this).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

#: aiconfigurator's system folder → the catalog's hardware key
SYSTEMS = {"h100_sxm": "h100-sxm5-80gb", "h200_sxm": "h200-sxm-141gb", "b200_sxm": "b200-hgx"}
#: aiconfigurator's GEMM dtype → the catalog's compute dtype
DTYPES = {"bfloat16": "bf16", "fp8": "fp8", "fp8_block": "fp8", "nvfp4": "fp4"}


def gemm_tables(doc: str, systems: dict[str, str]):
    """Read ``--data`` from the command line (``doc``: the script's docstring, for --help) and yield
    (system, catalog hardware, engine, version, GEMM table) for every table aiconfigurator ships for
    ``systems`` (its folder → the catalog's hardware key)."""
    import pandas as pd

    from advisor.data.catalog import load_catalog

    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--data", required=True, help="aiconfigurator-core's systems/data folder")
    args = ap.parse_args()
    cat = load_catalog(user=None)
    for system, key in systems.items():
        for path in sorted(Path(args.data, system, "gemm").glob("*/*/gemm_perf.parquet")):
            yield system, cat.hardware[key], path.parts[-3], path.parts[-2], pd.read_parquet(path)


def main() -> None:
    from advisor.text.format import table

    rows, family = [], {}
    for system, hw, engine, version, df in gemm_tables(__doc__, SYSTEMS):
        family[system] = hw.family
        q = df[(df.m >= 2048) & (df.m <= 8192) & (df.n >= 4096) & (df.k >= 4096)]
        share = {}
        for dtype, g in q.groupby("gemm_dtype"):
            if dtype not in DTYPES:
                continue
            tflops = 2 * g.m * g.n * g.k / (g.latency * 1e-3) / 1e12
            share[dtype] = statistics.median(tflops) / hw.peak_tflops(DTYPES[dtype])
        if "bfloat16" not in share:
            continue
        for dtype, s in share.items():
            rows.append([system, f"{engine} {version}", dtype, f"{s:.2f}",
                         "–" if dtype == "bfloat16" else f"{s / share['bfloat16']:.2f}"])
    print(table(["system", "engine", "dtype", "share of its peak", "over BF16's share"], rows))
    # the medians the catalog's table holds: per (dtype, hardware family, engine) over versions, GPUs and
    # FP8 scalings (per-tensor and block), and over engines too
    pooled: dict[tuple, list[float]] = {}
    for system, engine_version, dtype, _, over in rows:
        if over == "–":
            continue
        key = (DTYPES[dtype], family[system])
        for k in (key + (engine_version.split()[0],), key + ("every engine",)):
            pooled.setdefault(k, []).append(float(over))
    print()
    print(table(["dtype", "family", "engine", "median over BF16's share", "figures"],
                [[*k, f"{statistics.median(v):.3f}", len(v)] for k, v in sorted(pooled.items())]))


if __name__ == "__main__":
    main()
