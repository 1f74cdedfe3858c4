"""Where `advisor.model.devices.LOW_PRECISION_GEMM_SHARE` and the NVIDIA parts' ``bf16_achievable_tflops``
(`advisor.model.devices.matrix_share`) and ``fp4_achievable_tflops`` (`part_low_precision_share`) come
from: the share of its dense peak a low-precision format's matrix products reach, over the share BF16
products reach of theirs, and the share BF16 and NVFP4 products reach on each GPU, from aiconfigurator's
published kernel measurements (per GPU, engine and version; NVIDIA's own collection).

For each system and engine: the median TFLOP/s over prompt-sized GEMMs (2,048-8,192 tokens, both
other sides 4,096 or more) per dtype, as a share of that dtype's dense peak (the catalog's figures),
and each low-precision dtype's share over BF16's. Then, per GPU, the 90th percentile of BF16 TFLOP/s
over the same GEMMs (what the best-placed products sustain), the median over the engines' tables, as
a share of the peak and over the Hopper parts' share (H100 and H200 SXM, what the fitted fractions
mostly stand for).

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
#: every system with GEMM tables → the catalog's hardware key (the sustained BF16 share)
BF16_SYSTEMS = SYSTEMS | {"b300_sxm": "b300-hgx", "gb200": "gb200-nvl72-gpu", "gb300": "gb300-nvl72-gpu",
                          "a100_sxm": "a100-sxm4-80gb", "l40s": "l40s-48gb",
                          "rtx_pro_6000_server": "rtx-pro-6000-blackwell-server"}
#: the reference the fitted fractions stand for
HOPPER = ("h100_sxm", "h200_sxm")
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


def prompt_sized(df):
    return df[(df.m >= 2048) & (df.m <= 8192) & (df.n >= 4096) & (df.k >= 4096)]


def tflops(g):
    """Each GEMM's TFLOP/s (its latency in ms)."""
    return 2 * g.m * g.n * g.k / (g.latency * 1e-3) / 1e12


def main() -> None:
    from advisor.text.format import table

    rows, family, bf16_p90, fp4_p90 = [], {}, {}, {}
    for system, hw, engine, version, df in gemm_tables(__doc__, BF16_SYSTEMS):
        bf = prompt_sized(df)
        fp4 = bf[bf.gemm_dtype == "nvfp4"]
        bf = bf[bf.gemm_dtype == "bfloat16"]
        if len(bf):
            bf16_p90.setdefault((system, hw.key, hw.bf16_dense_tflops), []).append(float(tflops(bf).quantile(0.9)))
        if len(fp4) and hw.fp4_dense_tflops:
            fp4_p90.setdefault((system, hw.key, hw.fp4_dense_tflops), []).append(float(tflops(fp4).quantile(0.9)))
        if system not in SYSTEMS:
            continue
        family[system] = hw.family
        q = prompt_sized(df)
        share = {}
        for dtype, g in q.groupby("gemm_dtype"):
            if dtype not in DTYPES:
                continue
            share[dtype] = statistics.median(tflops(g)) / hw.peak_tflops(DTYPES[dtype])
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
    # what each GPU's BF16 products sustain: the catalog's bf16_achievable_tflops
    sustained = {k: statistics.median(v) for k, v in bf16_p90.items()}
    hopper = statistics.mean(v / k[2] for k, v in sustained.items() if k[0] in HOPPER)
    print()
    print(table(["system", "catalog key", "tables", "BF16 TFLOP/s (p90)", "share of its peak", "over Hopper's"],
                [[k[0], k[1], len(bf16_p90[k]), f"{v:.0f}", f"{v / k[2]:.3f}", f"{v / k[2] / hopper:.3f}"]
                 for k, v in sorted(sustained.items())]))
    print(f"\nHopper's share (the reference, devices.REFERENCE_BF16_SHARE): {hopper:.3f}")
    # what each Blackwell part's NVFP4 products sustain, over its BF16 share: the catalog's
    # fp4_achievable_tflops, and the part's FP4 share against B200's (devices.part_low_precision_share)
    by_key = {k[0]: (v, k[2]) for k, v in sustained.items()}
    fp4 = {k: statistics.median(v) for k, v in fp4_p90.items()}
    ratio = {k[0]: (v / k[2]) / (by_key[k[0]][0] / by_key[k[0]][1]) for k, v in fp4.items() if k[0] in by_key}
    print()
    print(table(["system", "catalog key", "tables", "NVFP4 TFLOP/s (p90)", "share of its peak", "over BF16's share",
                 "over B200's"],
                [[k[0], k[1], len(fp4_p90[k]), f"{v:.0f}", f"{v / k[2]:.3f}", f"{ratio[k[0]]:.3f}",
                  f"{ratio[k[0]] / ratio['b200_sxm']:.3f}" if "b200_sxm" in ratio else "–"]
                 for k, v in sorted(fp4.items()) if k[0] in ratio]))


if __name__ == "__main__":
    main()
