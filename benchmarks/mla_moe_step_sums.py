"""A DeepSeek-R1 decode step at TensorRT-LLM's max-throughput settings, added up from aiconfigurator's
published kernel timings, beside the model's step: where the large-batch MLA + MoE gap comes from.

The step of one GPU with attention data-parallel over 8 and the experts over all 8 (EP8), at a batch
per GPU and a context: per layer the attention projections (q_a with kv_a, q_b, o_proj: GEMMs of the
batch's tokens), the latent attention's two batched products (`mla_bmm`: into and out of the latent
space), the MLA generation kernel (all 128 heads on the GPU), and per MoE layer the whole MoE flow
(routing, the grouped expert products, combine; its tokens: every GPU's, as the layer sees them) and
the shared expert; the three dense layers' MLP and the output head once. TensorRT-LLM 1.3.0rc20's
tables, FP8 block-scaled GEMMs (the attention and shared weights of NVIDIA's FP4 checkpoint stay FP8),
the experts in FP8 (H200) or NVFP4 (B200), the cache in FP8. The expert routing is printed balanced
and power-law (aiconfigurator's two distributions); the all-to-all and the element-wise kernels are
left out (both would add).

Table sizes between the grid's points: the batch and the context interpolated (log), a GEMM's other
two sides at the nearest grid point and scaled by their product.

    python benchmarks/mla_moe_step_sums.py --data DIR

DIR: aiconfigurator-core's `systems/data` folder (the `aiconfigurator-core` wheel from PyPI, unzipped,
or its repository). Needs pandas and pyarrow (not dependencies of advisor: install them beside it).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

VERSION = "1.3.0rc20"
#: (aiconfigurator system, catalog key, expert dtype, the catalog's quant, sequences per GPU): the
#: batches TensorRT-LLM's DeepSeek-R1 guide states for its max-throughput runs (8 × B200: 3,072; 8 ×
#: H200: 1,024; `catalog/measured/vendor_max.csv`) over 8 attention groups
SYSTEMS = (("h200_sxm", "h200-sxm-141gb", "fp8_block", "fp8", 128), ("b200_sxm", "b200-hgx", "nvfp4", "nvfp4", 384))
CONTEXT = 2048   # a 1,024-token prompt half-way through its 2,048-token output
HIDDEN, LATENT_Q, LATENT_KV, HEADS, EXPERT_FFN, SHARED_FFN, DENSE_FFN, VOCAB = (7168, 1536, 576, 128, 2048,
                                                                                2048, 18432, 129280)
LAYERS, MOE_LAYERS = 61, 58


def gemm_ms(g, m, n, k) -> float:
    """A GEMM of m tokens, n outputs, k inputs: the nearest (n, k) grid point's time at m, scaled."""
    ns, ks = np.array(sorted(g.n.unique())), np.array(sorted(g.k.unique()))
    n0, k0 = ns[np.argmin(abs(np.log(ns / n)))], ks[np.argmin(abs(np.log(ks / k)))]
    row = g[(g.n == n0) & (g.k == k0)].sort_values("m")
    return float(np.interp(m, row.m.values, row.latency.values)) * n * k / (n0 * k0)


def log_interp(x, xs, ys) -> float:
    return float(np.interp(np.log(x), np.log(np.asarray(xs, float)), np.asarray(ys, float)))


def step_parts(data: Path, system: str, expert_dtype: str, batch: int, routing: str) -> dict[str, float]:
    """Milliseconds per decode step on one GPU, by kernel family."""
    import pandas as pd

    base = data / system
    g = pd.read_parquet(base / "gemm" / "trtllm" / VERSION / "gemm_perf.parquet")
    g = g[g.gemm_dtype == "fp8_block"]
    mla = pd.read_parquet(base / "mla" / "trtllm" / VERSION / "generation_mla_perf.parquet")
    bmm = pd.read_parquet(base / "mla_bmm" / "trtllm" / VERSION / "mla_bmm_perf.parquet")
    moe = pd.read_parquet(base / "moe" / "trtllm" / VERSION / "moe_perf.parquet")

    projections = (gemm_ms(g, batch, LATENT_Q + LATENT_KV, HIDDEN) + gemm_ms(g, batch, HEADS * 192, LATENT_Q)
                   + gemm_ms(g, batch, HIDDEN, HEADS * 128))
    b = bmm[(bmm.num_heads == HEADS) & (bmm.bmm_dtype == "fp8")]
    latent = sum(float(np.interp(batch, *zip(*sorted(b[b.op_name == op][["num_tokens", "latency"]].values.tolist()))))
                 for op in ("mla_gen_pre", "mla_gen_post"))
    m = mla[(mla.num_heads == HEADS) & (mla.tp_size == 1) & (mla.kv_cache_dtype == "fp8") & (mla.mla_dtype == "bfloat16")]
    grid = m.pivot_table(index="batch_size", columns="step", values="latency")
    by_batch = [log_interp(CONTEXT, grid.columns, grid.loc[bb].values) for bb in grid.index]
    attention = log_interp(batch, grid.index, by_batch)
    e = moe[(moe.hidden_size == HIDDEN) & (moe.inter_size == EXPERT_FFN) & (moe.topk == 8) & (moe.num_experts == 256)
            & (moe.moe_ep_size == 8) & (moe.moe_tp_size == 1) & (moe.moe_dtype == expert_dtype)
            & (moe.distribution == routing)]
    fastest = e.groupby("num_tokens").latency.min()   # the best of the engine's MoE back-ends
    experts = log_interp(8 * batch, fastest.index, fastest.values)
    shared = gemm_ms(g, batch, 2 * SHARED_FFN, HIDDEN) + gemm_ms(g, batch, HIDDEN, SHARED_FFN)
    dense = gemm_ms(g, batch, 2 * DENSE_FFN, HIDDEN) + gemm_ms(g, batch, HIDDEN, DENSE_FFN)
    return {"attention GEMMs": LAYERS * projections, "latent BMMs": LAYERS * latent, "MLA": LAYERS * attention,
            "MoE": MOE_LAYERS * experts, "shared expert": MOE_LAYERS * shared,
            "dense MLP + head": (LAYERS - MOE_LAYERS) * dense + gemm_ms(g, batch, VOCAB, HIDDEN)}


def model_step_ms(key: str, quant: str, batch: int) -> float:
    """The model's decode step at 8 × ``batch`` sequences, the same layout and lengths, no ceiling."""
    from unittest import mock

    from advisor.data.catalog import user_catalog
    from advisor.model.config import configure
    from advisor.model.efficiency import efficiency_for
    from advisor.model.predict import evaluate_config

    cat = user_catalog()
    cfg = configure(cat, hardware=key, model="deepseek-r1", quant=quant, runtime="tensorrt-llm", gpus=8,
                    layout="dp8+ep8", kv_dtype="fp8")
    cfg = cfg.replace(prompt=1024, output=2048, batch=8 * batch)
    with mock.patch("advisor.model.predict.ceiling_at", return_value=None):
        r = evaluate_config(cfg, efficiency_for(cat.profiles, cfg.runtime, cfg.hardware))
    return 1e3 / float(np.asarray(r.decode_tok_s))


def main() -> None:
    from advisor.text.format import table

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True, type=Path, help="aiconfigurator-core's systems/data folder")
    args = ap.parse_args()
    rows = []
    for system, key, dtype, quant, batch in SYSTEMS:
        ours = model_step_ms(key, quant, batch)
        for routing in ("balanced", "power_law_1.2"):
            parts = step_parts(args.data, system, dtype, batch, routing)
            total = sum(parts.values())
            rows.append([system, f"{batch}", routing, *(f"{v:.1f}" for v in parts.values()), f"{total:.1f}",
                         f"{ours:.1f}", f"{total / ours:.2f}"])
    head = ["system", "seqs/GPU", "routing", "attention GEMMs", "latent BMMs", "MLA", "MoE", "shared expert",
            "dense MLP + head", "kernels' sum ms", "model's step ms", "sum ÷ model"]
    print(table(head, rows))


if __name__ == "__main__":
    main()
