"""What a decode step's matrix products cost per weight format, from aiconfigurator's published
kernel measurements (per GPU, engine and version; NVIDIA's own collection).

A decode step at a small batch multiplies a few rows of activations by every weight matrix: the time
is a fixed part plus the weights' bytes over the bandwidth the kernel reaches. For layer-sized
products (both weight sides 4,096 or more) at m = 1 and m = 8 rows this prints, per dtype:

- the median share of the datasheet bandwidth its kernels reach (bytes of the weights over latency),
  and that share over BF16's on the same system, engine and shapes;
- the slope of a straight-line fit of latency on bytes, over BF16's slope (1: the format streams its
  weights as fast as BF16 does);
- the extra fixed part per product: the median over shapes of (latency − the bytes at BF16's fitted
  bandwidth − BF16's fitted fixed part), µs.

A second table gathers the extra fixed part at one row per (dtype, hardware family, engine): the
median over GPUs and versions, as `advisor.model.devices.LOW_PRECISION_GEMM_FIXED_US` holds it for
per-tensor FP8 and NVFP4; block-scaled FP8 printed beside it (vLLM's on B200, at 7 % of BF16's
bandwidth, left out).

    python benchmarks/decode_gemm_shares.py --data DIR

DIR: aiconfigurator-core's `systems/data` folder (the `aiconfigurator-core` 0.12.0 wheel from PyPI,
unzipped). Needs pandas and pyarrow (not dependencies of advisor: install them beside it to run this).
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

import numpy as np

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
#: aiconfigurator's dtypes → `advisor.model.devices.LOW_PRECISION_GEMM_FIXED_US`'s keys: per-tensor
#: scaled FP8 (the catalog's FP8 W8A8); block-scaled FP8 (the models released in FP8) is printed
#: beside it, not used (the devices module says why)
DTYPE_CLASS = {"fp8": "fp8", "fp8_block": "fp8 (block)", "nvfp4": "fp4"}
#: a path this far below BF16's bandwidth share is not what a served model runs (vLLM's block FP8 on B200)
BROKEN_SHARE = 0.25


def _line(bytes_, latency_s):
    """(fixed part s, s per byte) of a least-squares line through (bytes, latency)."""
    A = np.column_stack([np.ones(len(bytes_)), bytes_])
    (fixed, per_byte), *_ = np.linalg.lstsq(A, latency_s, rcond=None)
    return fixed, per_byte


def main() -> None:
    from advisor.model.devices import LOW_PRECISION_GEMM_FIXED_US
    from advisor.text.format import table

    out, extra = [], {}
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
            share, line, fixed_us = {}, {}, {}
            for dtype, g in q.groupby("gemm_dtype"):
                g = g[[nk in shapes for nk in zip(g.n, g.k)]]
                nbytes = (g.n * g.k * WEIGHT_BYTES[dtype]).to_numpy(float)
                latency_s = g.latency.to_numpy(float) * 1e-3
                share[dtype] = statistics.median(nbytes / latency_s / 1e9) / hw.bandwidth_gb_s
                line[dtype] = (_line(nbytes, latency_s), nbytes, latency_s)
            (fixed16, per_byte16), _, _ = line["bfloat16"]
            for dtype, (_, nbytes, latency_s) in line.items():
                fixed_us[dtype] = statistics.median(latency_s - nbytes * per_byte16 - fixed16) * 1e6
            for dtype, s in sorted(share.items(), key=lambda kv: -WEIGHT_BYTES[kv[0]]):
                bf16 = dtype == "bfloat16"
                out.append([system, f"{engine} {version}", m, len(shapes), dtype, f"{s:.2f}",
                            "–" if bf16 else f"{s / share['bfloat16']:.2f}",
                            "–" if bf16 else f"{line[dtype][0][1] / per_byte16:.2f}",
                            "–" if bf16 else f"{fixed_us[dtype]:+.1f}"])
                if m == 1 and dtype in DTYPE_CLASS and s / share["bfloat16"] >= BROKEN_SHARE:
                    extra.setdefault((DTYPE_CLASS[dtype], hw.family, engine), []).append(fixed_us[dtype])
    print(table(["system", "engine", "rows (m)", "shapes", "dtype", "share of bandwidth", "over BF16's share",
                 "time per byte over BF16's", "extra fixed µs per product"], out))
    print()
    summary = []
    for (dtype, family) in sorted({(d, f) for d, f, _ in extra}):
        pooled = [v for (d, f, _), vs in extra.items() if (d, f) == (dtype, family) for v in vs]
        engines = {e: statistics.median(vs) for (d, f, e), vs in extra.items() if (d, f) == (dtype, family)}
        held = LOW_PRECISION_GEMM_FIXED_US.get((dtype, family), {})
        for engine, v in sorted(engines.items()) + [("(every engine)", statistics.median(pooled))]:
            key = {"trtllm": "tensorrt-llm", "(every engine)": None}.get(engine, engine)
            summary.append([dtype, family, engine, f"{v:.1f}", "–" if key not in held else f"{held[key]:.1f}"])
    print(table(["dtype", "family", "engine", "extra fixed µs per product at 1 row (median)",
                 "LOW_PRECISION_GEMM_FIXED_US"], summary))


if __name__ == "__main__":
    main()
