"""Where `advisor.model.devices.MLA_DECODE_ATTENTION_FRACTION` and `MLA_DECODE_BANDWIDTH_FRACTION` come
from: the share of its dtype's dense peak a latent-attention (MLA, DeepSeek's absorbed form) decode kernel
reaches at a server's batch, and the share of the bandwidth it reads a 16-bit cache at where its reads
bind it (fewer than 128 heads on a GPU, at least 64 × 4,096 cached tokens: the 90th percentile of bytes
per second over the datasheet bandwidth, the median per family over tables), from aiconfigurator's
published kernel measurements (`generation_mla_perf`, per GPU, engine and version).

FLOPs are counted as FlashMLA counts them (and the kernel, `Geometry.decode_attention_coeff`): 2 ·
heads · (576 + 512) per query per cached token and layer. Per table and KV dtype, over the shapes with
all 128 heads on the GPU and at least 256 × 2,048 cached tokens in the batch: the 90th percentile of
TFLOP/s over the peak of the dtype the tool prices the products in (`inputs.attention_dtype`: 16-bit,
FP8 over an FP8 cache), and the bytes read per second beside it (under the bandwidth: these shapes are
bound by compute). Then the median per (hardware family, dtype) over tables. Left out: SGLang 0.5.14's
FP8 cache on Hopper, 0.07 of the FP8 peak (a tenth of its own 16-bit path: a fallback, not the kernel
its FP8 cache gets elsewhere).

    python benchmarks/mla_decode_shares.py --data DIR

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
SYSTEMS = {"h100_sxm": "h100-sxm5-80gb", "h200_sxm": "h200-sxm-141gb", "b200_sxm": "b200-hgx", "b300_sxm": "b300-hgx",
           "gb200": "gb200-nvl72-gpu", "gb300": "gb300-nvl72-gpu"}
LATENT_ELEMENTS = 576   # a cached token's latent (512) and RoPE key (64) per layer


def main() -> None:
    import pandas as pd

    from advisor.data.catalog import load_catalog
    from advisor.text.format import table

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="aiconfigurator-core's systems/data folder")
    args = ap.parse_args()
    cat = load_catalog(user=None)
    rows, by_family, bw_rows, bw_family = [], {}, [], {}
    for system, key in SYSTEMS.items():
        hw = cat.hardware[key]
        for path in sorted(Path(args.data, system, "mla").glob("*/*/generation_mla_perf.parquet")):
            engine, version = path.parts[-3], path.parts[-2]
            df = pd.read_parquet(path)
            heads = df.num_heads / df.tp_size
            ctx = df.isl + df.step
            seconds = df.latency * 1e-3
            df = df.assign(heads=heads, ctx=ctx, tflops=df.batch_size * 2 * heads * (576 + 512) * ctx / seconds / 1e12,
                           tb_s=df.batch_size * ctx * LATENT_ELEMENTS / seconds / 1e12)
            # the reads of a 16-bit cache where they bind: fewer heads per GPU (a tensor-parallel split)
            reads = df[(df.heads < 128) & (df.batch_size * df.ctx >= 64 * 4096) & (df.kv_cache_dtype != "fp8")]
            if len(reads):
                bw_share = float(reads.tb_s.quantile(0.9)) * 2 * 1e3 / hw.bandwidth_gb_s
                bw_rows.append([system, f"{engine} {version}", f"{bw_share:.3f}", len(reads)])
                bw_family.setdefault(hw.family, []).append(bw_share)
            for kv, g in df[(df.heads == 128) & (df.batch_size * df.ctx >= 256 * 2048)].groupby("kv_cache_dtype"):
                dtype = "fp8" if kv == "fp8" else "fp16"
                share = float(g.tflops.quantile(0.9)) / hw.peak_tflops("fp8" if kv == "fp8" else "bf16")
                tb_s = g.tb_s * (1 if kv == "fp8" else 2)   # bytes per element of the cache
                fallback = engine == "sglang" and dtype == "fp8" and hw.family == "nvidia-hopper"
                rows.append([system, f"{engine} {version}", kv, dtype, f"{share:.3f}" + (" (left out)" if fallback else ""),
                             f"{tb_s.quantile(0.9):.2f} of {hw.bandwidth_gb_s / 1e3:.1f}", len(g)])
                if not fallback:
                    by_family.setdefault((hw.family, dtype), []).append(share)
    print(table(["system", "engine", "KV cache", "priced in", "p90 share of that peak", "TB/s read", "shapes"], rows))
    print()
    print(table(["family", "computed in", "median share", "tables"],
                [[f, d, f"{statistics.median(v):.3f}", len(v)] for (f, d), v in sorted(by_family.items())]))
    print("\n16-bit cache reads where they bind (fewer than 128 heads a GPU, 64 × 4,096 cached tokens or more)\n")
    print(table(["system", "engine", "p90 share of the bandwidth", "shapes"], bw_rows))
    print()
    print(table(["family", "median share of the bandwidth", "tables"],
                [[f, f"{statistics.median(v):.3f}", len(v)] for f, v in sorted(bw_family.items())]))


if __name__ == "__main__":
    main()
