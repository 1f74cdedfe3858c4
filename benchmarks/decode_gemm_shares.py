"""How much of the memory bandwidth a decode step's matrix products reach, per weight format, from
aiconfigurator's published kernel measurements (per GPU, engine and version; NVIDIA's own collection).

A decode step at a small batch multiplies a few rows of activations by every weight matrix: the time
is the weights' bytes over the bandwidth the kernel reaches. The model prices every format at one
bandwidth fraction per profile, so a 4-bit format reads its half of FP8's bytes as fast. This prints,
for layer-sized products (both weight sides 4,096 or more) at m = 1 and m = 8 rows, the median share of
the datasheet bandwidth each dtype's kernels reach (bytes of the weights over latency), and that share
over BF16's on the same system, engine and shapes. Groundwork for a per-format decode share, which
the model does not have yet: no figure here feeds a prediction.

    python benchmarks/decode_gemm_shares.py --data DIR

DIR: aiconfigurator-core's `systems/data` folder (the `aiconfigurator-core` 0.12.0 wheel from PyPI,
unzipped). Needs pandas and pyarrow (not dependencies of advisor: install them beside it to run this).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemm_shares import SYSTEMS as PREFILL_SYSTEMS, gemm_tables  # noqa: E402

#: aiconfigurator's system folder → the catalog's hardware key (the A100's table has the weight-only formats)
SYSTEMS = {"a100_sxm": "a100-sxm4-80gb", **PREFILL_SYSTEMS}
#: bytes a weight takes in each of aiconfigurator's GEMM dtypes (NVFP4: 4 bits and an FP8 scale per
#: 16 weights; the block and per-channel scales of the 8-bit and 4-bit integer formats are left out)
WEIGHT_BYTES = {"bfloat16": 2.0, "float16": 2.0, "fp8": 1.0, "fp8_block": 1.0, "sq": 1.0, "int8_wo": 1.0,
                "int4_wo": 0.5, "nvfp4": 4.5 / 8}
ROWS = (1, 8)


def main() -> None:
    from advisor.text.format import table

    out = []
    for system, hw, engine, version, df in gemm_tables(__doc__, SYSTEMS):
        for m in ROWS:
            q = df[(df.m == m) & (df.n >= 4096) & (df.k >= 4096) & df.gemm_dtype.isin(list(WEIGHT_BYTES))]
            # the shapes every dtype of this table was measured at, so the ratios compare like with like
            shapes = None
            for _, g in q.groupby("gemm_dtype"):
                s = set(zip(g.n, g.k))
                shapes = s if shapes is None else shapes & s
            if not shapes or "bfloat16" not in set(q.gemm_dtype):
                continue
            share = {}
            for dtype, g in q.groupby("gemm_dtype"):
                g = g[[nk in shapes for nk in zip(g.n, g.k)]]
                gb_s = g.n * g.k * WEIGHT_BYTES[dtype] / (g.latency * 1e-3) / 1e9
                share[dtype] = statistics.median(gb_s) / hw.bandwidth_gb_s
            for dtype, s in sorted(share.items(), key=lambda kv: -WEIGHT_BYTES[kv[0]]):
                out.append([system, f"{engine} {version}", m, len(shapes), dtype, f"{s:.2f}",
                            "–" if dtype == "bfloat16" else f"{s / share['bfloat16']:.2f}"])
    print(table(["system", "engine", "rows (m)", "shapes", "dtype", "share of bandwidth", "over BF16's share"], out))


if __name__ == "__main__":
    main()
