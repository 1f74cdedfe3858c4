"""What a mixture of experts costs at a decode step, from aiconfigurator's published MoE kernel timings
(per GPU, engine and version; NVIDIA's own collection): the evidence behind the decode model's MoE terms.

Four tables, per system × engine × expert dtype (balanced routing; 1 and 2 tensor-parallel layouts, 3 and 4
expert-parallel):

1. **The floor.** One token through a whole MoE layer (router, sort, the grouped products, combine)
   against the time its expert reads take at the spec bandwidth: what is left is a fixed cost per MoE
   layer, printed by the experts a token visits (top-k), to show whether it grows with them.
2. **The reads.** At decode-sized batches (8-256 tokens), the layer's expert bytes (the experts the
   batch touches, `E·(1−(1−k/E)^n)`, split over the tensor-parallel GPUs) over its time, as a share of
   the spec bandwidth; and the same share for dense BF16 products of those token counts (GEMM tables,
   both other sides 2,048 or more; what a profile's bandwidth fraction is mostly fitted on): whether
   grouped expert reads run slower than dense weight reads. Layers whose reads take under 20 µs are
   left out (their floor decides).
3. **Expert parallel, by tokens per expert.** DeepSeek-V3/R1's layer (256 experts, top-8, 7,168 ×
   2,048) over 8 GPUs (EP8: 32 whole experts each), balanced routing, the fastest of the engine's MoE
   back-ends: the share of the spec bandwidth at which the GPU's 32 experts are read, by the tokens in
   the layer (tokens per expert = tokens × 8 / 256): it falls with tokens per expert well before the
   products' FLOPs would bind under a dense GEMM's roofline (table 4 says why).
4. **Reads and products: added or overlapped?** The same layers' times against two forms, each with
   the read share at 64 tokens (2 an expert) as its bandwidth and one fitted fraction of the experts'
   dtype peak (the median over 1,024-8,192 tokens): reads + products (the model's form for the routed
   experts, a prompt pass's and, past each expert's first token, a decode step's:
   `advisor.model.roofline.decode_step`) and the larger of the two (a dense GEMM's roofline). Printed:
   the fitted fractions and the largest miss over the five token counts.

    python benchmarks/moe_kernels.py --data DIR

DIR: aiconfigurator-core's `systems/data` folder (the `aiconfigurator-core` 0.12.0 wheel from PyPI,
unzipped). Needs pandas and pyarrow (not dependencies of advisor: install them beside it to run this).
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gemm_shares import SYSTEMS  # noqa: E402  (aiconfigurator's system folders → the catalog's keys)

#: bytes per weight of aiconfigurator's MoE and GEMM dtypes (NVFP4: 4 bits and an FP8 scale per 16)
WEIGHT_BYTES = {"bfloat16": 2.0, "fp8": 1.0, "fp8_block": 1.0, "nvfp4": 0.5625}
DECODE_TOKENS = (8, 16, 32, 64, 128, 256)
MIN_READ_S = 20e-6
#: tokens in an MoE layer for table 3 (tokens per expert: × 8 / 256)
EP_TOKENS = (64, 256, 1024, 3072, 8192)


def main() -> None:
    import pandas as pd

    from advisor.data.catalog import load_catalog
    from advisor.text.format import table

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, help="aiconfigurator-core's systems/data folder")
    args = ap.parse_args()
    cat = load_catalog(user=None)
    floors, reads, expert_parallel, forms = [], [], [], []
    per_engine: dict[str, list[float]] = {}   # every layer's floor, every version and system
    for system, key in SYSTEMS.items():
        bw = cat.hardware[key].bandwidth_gb_s * 1e9
        for path in sorted(Path(args.data, system, "moe").glob("*/*/moe_perf.parquet")):
            engine, version = path.parts[-3], path.parts[-2]
            moe = pd.read_parquet(path)
            expert_parallel.extend(expert_parallel_shares(moe, bw, [system, f"{engine} {version}"]))
            forms.extend(added_or_overlapped(moe, cat.hardware[key], [system, f"{engine} {version}"]))
            moe = moe[(moe.distribution == "balanced") & (moe.moe_ep_size == 1)]
            gemm_path = sorted(Path(args.data, system, "gemm", engine).glob("*/gemm_perf.parquet"))
            gemm = pd.read_parquet(gemm_path[-1]) if gemm_path else None
            for dtype, m in moe.groupby("moe_dtype"):
                if dtype not in WEIGHT_BYTES:
                    continue
                b = WEIGHT_BYTES[dtype]
                expert = 3 * m.hidden_size * m.inter_size / m.moe_tp_size * b
                one = m[m.num_tokens == 1]
                floor_us = (one.latency * 1e-3 - one.topk * expert[one.index] / bw) * 1e6
                by_k = {int(k): statistics.median(v) for k, v in floor_us.groupby(one.topk)}
                per_engine.setdefault(engine, []).extend(floor_us.tolist())
                if by_k:
                    floors.append([system, f"{engine} {version}", dtype, len(one),
                                   ", ".join(f"top-{k}: {v:.0f}" for k, v in sorted(by_k.items()))])
                dec = m[m.num_tokens.isin(DECODE_TOKENS)]
                touched = dec.num_experts * (1 - (1 - dec.topk / dec.num_experts) ** dec.num_tokens)
                read_s = touched * expert[dec.index] / bw
                big = read_s > MIN_READ_S
                if not big.any():
                    continue
                moe_share = statistics.median(read_s[big] / (dec.latency[big] * 1e-3))
                dense = "–"
                if gemm is not None:
                    g = gemm[(gemm.gemm_dtype == "bfloat16") & gemm.m.isin(DECODE_TOKENS) & (gemm.n >= 2048)
                             & (gemm.k >= 2048)]
                    if len(g):
                        dense_share = statistics.median(g.n * g.k * 2.0 / bw / (g.latency * 1e-3))
                        dense = f"{dense_share:.2f} (MoE {moe_share / dense_share:.2f}× it)"
                reads.append([system, f"{engine} {version}", dtype, int(big.sum()), f"{moe_share:.2f}", dense])
    print("1. one token through an MoE layer: µs above its expert reads at the spec bandwidth (median by top-k)\n")
    print(table(["system", "engine", "experts' dtype", "layers", "floor µs by experts visited"], floors))
    print("\nthe floor per engine: median over every layer, dtype, top-k, version and system\n")
    print(table(["engine", "layers", "floor µs (median)", "25th-75th percentile"],
                [[e, len(v), f"{statistics.median(v):.0f}",
                  f"{statistics.quantiles(v, n=4)[0]:.0f}-{statistics.quantiles(v, n=4)[2]:.0f}"]
                 for e, v in sorted(per_engine.items())]))
    print("\n2. decode batches of 8-256 tokens: the share of the spec bandwidth the expert reads reach, against "
          "dense products of those token counts\n")
    print(table(["system", "engine", "experts' dtype", "layers × batches", "MoE reads' share",
                 "dense BF16 products' share"], reads))
    print("\n3. expert parallel over 8 GPUs (DeepSeek's layer, balanced): the share of the spec bandwidth at which "
          "a GPU's 32 experts are read, by tokens in the layer (tokens per expert in brackets)\n")
    print(table(["system", "engine", "experts' dtype", *(f"{t:,} ({t * 8 // 256})" for t in EP_TOKENS)],
                expert_parallel))
    print("\n4. the same layers: reads + products against the larger of the two, each with the read share at 64 "
          "tokens and one fitted fraction of the dtype's peak (largest miss over the five token counts)\n")
    print(table(["system", "engine", "experts' dtype", "read share", "fraction (added)", "largest miss (added)",
                 "fraction (larger)", "largest miss (larger)"],
                [[*label, f"{share:.2f}", f"{eta_a:.2f}", f"{100 * miss_a:.0f} %", f"{eta_l:.2f}", f"{100 * miss_l:.0f} %"]
                 for *label, share, eta_a, miss_a, eta_l, miss_l in forms]))
    added, larger = ([100 * r[i] for r in forms] for i in (-3, -1))
    print(f"\nmedian of the largest misses over {len(forms)} tables: added {statistics.median(added):.0f} %, "
          f"larger of the two {statistics.median(larger):.0f} %")


def deepseek_ep8(moe):
    """The rows of an MoE table for DeepSeek-V3/R1's layer over 8 GPUs (256 experts, top-8, 7,168 × 2,048,
    EP8, balanced routing)."""
    return moe[(moe.hidden_size == 7168) & (moe.inter_size == 2048) & (moe.topk == 8) & (moe.num_experts == 256)
               & (moe.moe_ep_size == 8) & (moe.moe_tp_size == 1) & (moe.distribution == "balanced")]


def expert_parallel_shares(moe, bw: float, label: list[str]) -> list[list[str]]:
    """Table 3's rows of one MoE table (every row of it, as read), one per experts' dtype: DeepSeek's
    layer over 8 GPUs, the read share at each of `EP_TOKENS` (``bw``: the GPU's spec bandwidth, B/s)."""
    ds = deepseek_ep8(moe)
    rows = []
    for dtype, m in ds.groupby("moe_dtype"):
        if dtype not in WEIGHT_BYTES:
            continue
        fastest = m.groupby("num_tokens").latency.min()
        experts_bytes = 32 * 3 * 7168 * 2048 * WEIGHT_BYTES[dtype]
        rows.append([*label, dtype, *(f"{experts_bytes / (fastest[t] * 1e-3) / bw:.2f}" if t in fastest.index else "–"
                                      for t in EP_TOKENS)])
    return rows


#: the experts' dtype → the catalog's dense peak it multiplies at
PEAK_FIELD = {"bfloat16": "bf16_dense_tflops", "fp8": "fp8_dense_tflops", "fp8_block": "fp8_dense_tflops",
              "nvfp4": "fp4_dense_tflops"}


def added_or_overlapped(moe, hw, label: list[str]) -> list[list]:
    """Table 4's rows of one MoE table: DeepSeek's layer over 8 GPUs (as table 3), its time at each of
    `EP_TOKENS` against reads + products and against the larger of the two; ``hw``: the catalog's
    entry for the GPU (spec bandwidth and dense peaks). Each row: the label, the experts' dtype, the
    read share, then each form's fitted fraction and largest miss (fractions of 1)."""
    ds = deepseek_ep8(moe)
    rows = []
    for dtype, m in ds.groupby("moe_dtype"):
        peak = getattr(hw, PEAK_FIELD.get(dtype, ""), None)
        if dtype not in WEIGHT_BYTES or not peak:
            continue
        seconds = m.groupby("num_tokens").latency.min() * 1e-3
        if not all(t in seconds.index for t in EP_TOKENS):
            continue
        # the reads at the share they reach at 64 tokens (2 an expert: the products next to nothing)
        read_s = seconds[EP_TOKENS[0]]
        # the products' seconds at the peak: tokens × 8 routed / 256 experts, 32 experts, three matrices
        products_s = {t: t * 8 / 256 * 32 * 2 * 3 * 7168 * 2048 / (peak * 1e12) for t in EP_TOKENS}
        big = EP_TOKENS[2:]
        eta_added = statistics.median(products_s[t] / max(seconds[t] - read_s, 1e-12) for t in big)
        eta_larger = statistics.median(products_s[t] / seconds[t] for t in big)
        miss_added = max(abs((read_s + products_s[t] / eta_added) / seconds[t] - 1) for t in EP_TOKENS)
        miss_larger = max(abs(max(read_s, products_s[t] / eta_larger) / seconds[t] - 1) for t in EP_TOKENS)
        share = 32 * 3 * 7168 * 2048 * WEIGHT_BYTES[dtype] / (hw.bandwidth_gb_s * 1e9) / read_s   # of the spec
        rows.append([*label, dtype, share, eta_added, miss_added, eta_larger, miss_larger])
    return rows


if __name__ == "__main__":
    main()
