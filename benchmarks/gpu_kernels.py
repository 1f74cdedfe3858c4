"""Time the kernels a serving step is made of on this machine's GPU, with PyTorch.

The model charges a step as weights / attained bandwidth and FLOPs / attained compute, with one
attained fraction per runtime and hardware. Whether one fraction can hold is a question about
kernels: how a dense product's rate grows with the tokens in the step, how a grouped-expert
product's rate grows with the tokens each expert gets, how causal attention's rate grows with the
prompt, and what FP8 adds over BF16. This script measures those curves (first-party, the
granularity the serving issue asks for) on one GPU:

- dense GEMM, BF16 and FP8 (per-tensor scales), tokens M = 1 … 16k, on Llama shapes;
- grouped-expert GEMM (``torch._grouped_mm``; FP8 ``torch._scaled_grouped_mm`` where it runs), tokens
  per expert 1 … 2k, on DeepSeek-V3, Qwen3-30B-A3B and Mixtral expert shapes;
- causal prefill attention (flash and cuDNN backends), 512 … 128k tokens, and a 2k-token chunk
  attending to a 4k … 128k cache;
- device memory bandwidth (copy, read).

Weights rotate over copies larger than the L2 cache, as in a real step, where each layer's
weights come from memory. Each case is timed with CUDA events over a CUDA graph of repeats where
capture works (launch gaps would otherwise count for the smallest products), else a plain loop.
Results go to --out as JSON lines as each case finishes, so a run cut short keeps what it measured.

    python benchmarks/gpu_kernels.py --out OUT [--quick]
    python benchmarks/gpu_kernels.py --summary OUT/kernels.jsonl [--hardware NAME]
        (tables of a run, as shares of the catalog's roofs for the GPU it ran on, or for NAME)
"""

from __future__ import annotations

import argparse
import itertools
import json
import math
import subprocess
import sys
import time
from pathlib import Path

START = time.time()
L2_FLUSH_BYTES = 512 * 2**20   # rotate weights over at least this much (H200's L2 is 60 MB)


def log(out: Path, msg: str) -> None:
    line = f"[{time.time() - START:6.1f} s] {msg}"
    print(line, flush=True)
    with open(out / "kernels.log", "a") as f:
        f.write(line + "\n")


def record(out: Path, row: dict) -> None:
    with open(out / "kernels.jsonl", "a") as f:
        f.write(json.dumps(row) + "\n")


def timed(torch, fn, reps: int, graph: bool = True) -> tuple[float, str]:
    """Seconds per call of fn (median of 3 timed batches of reps calls) and how it was timed."""
    fn()
    torch.cuda.synchronize()
    how = "loop"
    run = None
    if graph:
        try:
            s = torch.cuda.Stream()
            s.wait_stream(torch.cuda.current_stream())
            with torch.cuda.stream(s):
                fn()
            torch.cuda.current_stream().wait_stream(s)
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g):
                for _ in range(reps):
                    fn()
            run = g.replay
            how = "graph"
        except Exception:   # noqa: BLE001 - not capturable: time a plain loop
            try:
                torch.cuda.synchronize()
            except Exception:   # noqa: BLE001
                pass
            run = None
    if run is None:
        def run():
            for _ in range(reps):
                fn()
    run()
    torch.cuda.synchronize()
    times = []
    for _ in range(3):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        run()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1e3 / reps)
    times.sort()
    return times[1], how


def copies_for(bytes_each: float) -> int:
    return max(2, min(64, math.ceil(L2_FLUSH_BYTES / max(bytes_each, 1.0))))


def dense(torch, out: Path, quick: bool) -> None:
    shapes = {"llama-70b gate_up (8192 x 28672)": (8192, 28672), "llama-70b down (28672 x 8192)": (28672, 8192),
              "llama-8b gate_up (4096 x 14336)": (4096, 14336)}
    ms = [1, 4, 16, 64, 256, 1024, 4096, 16384] if quick else \
        [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048, 4096, 8192, 16384]
    fp8 = getattr(torch, "float8_e4m3fn", None)
    for name, (K, N) in shapes.items():
        for dtype in ("bf16", "fp8"):
            if dtype == "fp8" and fp8 is None:
                continue
            elem = 2 if dtype == "bf16" else 1
            n_w = copies_for(K * N * elem)
            try:
                ws = [torch.randn(N, K, device="cuda", dtype=torch.bfloat16) for _ in range(n_w)]
                if dtype == "fp8":
                    ws = [w.to(fp8) for w in ws]
                one = torch.ones((), device="cuda", dtype=torch.float32)
            except Exception as e:   # noqa: BLE001 - record and go on
                record(out, {"kind": "dense", "shape": name, "dtype": dtype, "error": repr(e)[:300]})
                continue
            for M in ms:
                try:
                    # FP8 products want rows in multiples of 16 in some builds: pad, as runtimes do
                    pad = 16 * math.ceil(M / 16) if dtype == "fp8" else M
                    x = torch.randn(pad, K, device="cuda", dtype=torch.bfloat16)
                    if dtype == "fp8":
                        x = x.to(fp8)
                    weights = itertools.cycle(ws).__next__

                    def fn():
                        w = weights()
                        if dtype == "bf16":
                            return x @ w.t()
                        return torch._scaled_mm(x, w.t(), scale_a=one, scale_b=one, out_dtype=torch.bfloat16)
                    t, how = timed(torch, fn, reps=n_w * max(1, 8 // n_w))
                    flops = 2.0 * M * K * N
                    record(out, {"kind": "dense", "shape": name, "dtype": dtype, "M": M, "rows_run": pad, "K": K, "N": N, "s": t,
                                 "tflops": flops / t / 1e12, "weight_gb_s": K * N * elem / t / 1e9, "timed": how})
                except Exception as e:   # noqa: BLE001
                    record(out, {"kind": "dense", "shape": name, "dtype": dtype, "M": M, "error": repr(e)[:300]})
            ws = None
            torch.cuda.empty_cache()
        log(out, f"dense {name} done")


def grouped(torch, out: Path, quick: bool) -> None:
    # (experts on this GPU, hidden, expert FFN width): gate+up fused (N = 2·I) and down (K = I)
    models = {"deepseek-v3 (32 of 256 experts per GPU, EP8)": (32, 7168, 2048),
              "qwen3-30b-a3b (128 experts)": (128, 2048, 768),
              "mixtral-8x7b (8 experts)": (8, 4096, 14336)}
    ts = [1, 4, 16, 64, 256, 1024] if quick else [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024, 2048]
    fp8 = getattr(torch, "float8_e4m3fn", None)
    for name, (E, H, I) in models.items():
        for part, (K, N) in (("gate_up", (H, 2 * I)), ("down", (I, H))):
            for dtype in ("bf16", "fp8"):
                elem = 2 if dtype == "bf16" else 1
                n_w = copies_for(E * K * N * elem)
                try:
                    ws = [torch.randn(E, N, K, device="cuda", dtype=torch.bfloat16) for _ in range(n_w)]
                    if dtype == "fp8":
                        ws = [w.to(fp8) for w in ws]
                        scale_b = torch.ones(E, N, device="cuda", dtype=torch.float32)
                except Exception as e:   # noqa: BLE001
                    record(out, {"kind": "grouped", "model": name, "part": part, "dtype": dtype,
                                 "error": repr(e)[:300]})
                    continue
                for t_e in ts:
                    if E * t_e > 65536:
                        continue
                    try:
                        M = E * t_e
                        x = torch.randn(M, K, device="cuda", dtype=torch.bfloat16)
                        offs = torch.arange(1, E + 1, device="cuda", dtype=torch.int32) * t_e
                        if dtype == "fp8":
                            x = x.to(fp8)
                            scale_a = torch.ones(M, device="cuda", dtype=torch.float32)
                        weights = itertools.cycle(ws).__next__

                        def fn():
                            w = weights()
                            if dtype == "bf16":
                                return torch._grouped_mm(x, w.transpose(-2, -1), offs=offs)
                            return torch._scaled_grouped_mm(x, w.transpose(-2, -1), scale_a, scale_b, offs=offs,
                                                            out_dtype=torch.bfloat16)
                        t, how = timed(torch, fn, reps=n_w * max(1, 8 // n_w))
                        flops = 2.0 * M * K * N
                        record(out, {"kind": "grouped", "model": name, "part": part, "dtype": dtype, "experts": E,
                                     "tokens_per_expert": t_e, "K": K, "N": N, "s": t, "tflops": flops / t / 1e12,
                                     "weight_gb_s": E * K * N * elem / t / 1e9, "timed": how})
                    except Exception as e:   # noqa: BLE001
                        record(out, {"kind": "grouped", "model": name, "part": part, "dtype": dtype,
                                     "tokens_per_expert": t_e, "error": repr(e)[:300]})
                ws = None
                torch.cuda.empty_cache()
        log(out, f"grouped {name} done")


def attention(torch, out: Path, quick: bool) -> None:
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    backends = {"flash": SDPBackend.FLASH_ATTENTION, "cudnn": getattr(SDPBackend, "CUDNN_ATTENTION", None)}
    # query heads on one GPU (the KV heads expanded: the work is the query heads')
    heads = {"llama-70b TP8 (8 heads)": 8, "llama-8b (32 heads)": 32}
    lengths = [1024, 8192, 65536] if quick else [512, 1024, 2048, 4096, 8192, 16384, 32768, 65536, 131072]
    D = 128
    for hname, h in heads.items():
        for bname, be in backends.items():
            if be is None:
                continue
            for s in lengths:
                try:
                    q, k, v = (torch.randn(1, h, s, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))

                    def fn():
                        with sdpa_kernel([be]):
                            return F.scaled_dot_product_attention(q, k, v, is_causal=True)
                    reps = max(1, min(20, int(2**33 / (h * s * s))))
                    t, how = timed(torch, fn, reps=reps)
                    flops = 4.0 * h * D * s * s / 2.0   # QK^T and PV, half the square (causal)
                    record(out, {"kind": "attention_causal", "heads": h, "head_dim": D, "backend": bname, "tokens": s,
                                 "s": t, "tflops": flops / t / 1e12, "timed": how, "case": hname})
                    del q, k, v
                except Exception as e:   # noqa: BLE001
                    record(out, {"kind": "attention_causal", "heads": h, "backend": bname, "tokens": s,
                                 "error": repr(e)[:300]})
                    torch.cuda.empty_cache()
            log(out, f"attention {hname} {bname} done")
    # a chunk of a long prompt attending to the cache before it (chunked prefill's big part)
    chunk, h = 2048, 8
    for bname, be in backends.items():
        if be is None:
            continue
        for cache in ([8192, 65536] if quick else [4096, 16384, 65536, 131072]):
            try:
                q = torch.randn(1, h, chunk, D, device="cuda", dtype=torch.bfloat16)
                k, v = (torch.randn(1, h, cache, D, device="cuda", dtype=torch.bfloat16) for _ in range(2))

                def fn():
                    with sdpa_kernel([be]):
                        return F.scaled_dot_product_attention(q, k, v)
                t, how = timed(torch, fn, reps=10)
                flops = 4.0 * h * D * chunk * cache
                record(out, {"kind": "attention_chunk", "heads": h, "head_dim": D, "backend": bname, "chunk": chunk,
                             "cache": cache, "s": t, "tflops": flops / t / 1e12, "timed": how})
            except Exception as e:   # noqa: BLE001
                record(out, {"kind": "attention_chunk", "backend": bname, "cache": cache, "error": repr(e)[:300]})
    log(out, "attention chunks done")


def bandwidth(torch, out: Path) -> None:
    n = 4 * 2**30 // 2
    a = torch.empty(n, device="cuda", dtype=torch.bfloat16).normal_()
    b = torch.empty_like(a)
    t, how = timed(torch, lambda: b.copy_(a), reps=10, graph=False)
    record(out, {"kind": "bandwidth", "op": "copy", "bytes": 2 * a.nbytes, "s": t, "gb_s": 2 * a.nbytes / t / 1e9})
    t, how = timed(torch, lambda: a.sum(dtype=torch.float32), reps=10, graph=False)
    record(out, {"kind": "bandwidth", "op": "read (sum)", "bytes": a.nbytes, "s": t, "gb_s": a.nbytes / t / 1e9})
    log(out, "bandwidth done")


def summary(path: Path, peak_bf16: float, peak_fp8: float, bw_gb_s: float) -> None:
    """Markdown tables of one run: each kernel's attained rate as a share of the datasheet roofs."""
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    rows = [r for r in rows if "error" not in r]
    peak = {"bf16": peak_bf16, "fp8": peak_fp8}
    machine = next((r for r in rows if r["kind"] == "machine"), {})
    print(f"{machine.get('device', '?')}: torch {machine.get('torch')}, CUDA {machine.get('cuda')}, "
          f"cuDNN {machine.get('cudnn')}; roofs {peak_bf16:g} / {peak_fp8:g} TFLOP/s (BF16 / FP8 dense), "
          f"{bw_gb_s:g} GB/s\n")
    for r in rows:
        if r["kind"] == "bandwidth":
            print(f"- {r['op']}: {r['gb_s']:,.0f} GB/s ({r['gb_s'] / bw_gb_s:.2f} of the datasheet)")

    def grid(kind, key, label, cols, col_key, cell):
        groups = {}
        for r in rows:
            if r["kind"] == kind:
                groups.setdefault(key(r), {})[r[col_key]] = r
        if not groups:
            return
        print(f"\n| {label} | " + " | ".join(str(c) for c in cols) + " |")
        print("|---|" + "---|" * len(cols))
        for k, by in groups.items():
            print(f"| {k} | " + " | ".join(cell(by[c]) if c in by else "" for c in cols) + " |")

    def share(r):
        return f"{r['tflops'] / peak[r.get('dtype', 'bf16')]:.2f}"

    ms = sorted({r["M"] for r in rows if r["kind"] == "dense"})
    print("\nDense GEMM, share of the dense peak by tokens M (weights streamed from memory at small M):")
    grid("dense", lambda r: f"{r['shape']} {r['dtype']}", "shape, dtype", ms, "M", share)
    print("\nDense GEMM, weight bytes per second as a share of the datasheet bandwidth:")
    grid("dense", lambda r: f"{r['shape']} {r['dtype']}", "shape, dtype", ms, "M",
         lambda r: f"{r['weight_gb_s'] / bw_gb_s:.2f}")
    ts = sorted({r["tokens_per_expert"] for r in rows if r["kind"] == "grouped"})
    print("\nGrouped-expert GEMM, share of the dense peak by tokens per expert:")
    grid("grouped", lambda r: f"{r['model']} {r['part']} {r['dtype']}", "experts, part, dtype", ts,
         "tokens_per_expert", share)
    print("\nGrouped-expert GEMM, expert-weight bytes per second as a share of the datasheet bandwidth:")
    grid("grouped", lambda r: f"{r['model']} {r['part']} {r['dtype']}", "experts, part, dtype", ts,
         "tokens_per_expert", lambda r: f"{r['weight_gb_s'] / bw_gb_s:.2f}")
    ls = sorted({r["tokens"] for r in rows if r["kind"] == "attention_causal"})
    print("\nCausal prefill attention (BF16, head dim 128), share of the BF16 dense peak by prompt tokens:")
    grid("attention_causal", lambda r: f"{r['heads']} heads, {r['backend']}", "heads, kernel", ls, "tokens", share)
    cs = sorted({r["cache"] for r in rows if r["kind"] == "attention_chunk"})
    print("\nA 2,048-token chunk attending to a cache (8 heads), share of the BF16 dense peak by cache tokens:")
    grid("attention_chunk", lambda r: r["backend"], "kernel", cs, "cache", share)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--summary", type=Path, help="print the tables of a run's kernels.jsonl and stop")
    ap.add_argument("--hardware", help="with --summary: the catalog hardware whose roofs the shares are of "
                    "(default: the GPU the run recorded)")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--quick", action="store_true", help="fewer points (a rehearsal)")
    ap.add_argument("--only", default="dense,grouped,attention,bandwidth")
    args = ap.parse_args()
    if args.summary:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
        from advisor.api import load_catalog

        first = json.loads(args.summary.read_text().splitlines()[0])
        hw = load_catalog().hardware_named(args.hardware or first.get("device", ""))
        summary(args.summary, hw.bf16_dense_tflops, hw.fp8_dense_tflops, hw.bandwidth_gb_s)
        return 0
    if args.out is None:
        ap.error("--out is required (or --summary FILE)")
    args.out.mkdir(parents=True, exist_ok=True)
    import torch
    if not torch.cuda.is_available():
        print("gpu_kernels: no CUDA device", file=sys.stderr)
        return 2
    p = torch.cuda.get_device_properties(0)
    env = {"kind": "machine", "device": p.name, "sms": p.multi_processor_count, "memory_gib": p.total_memory / 2**30,
           "torch": torch.__version__, "cuda": torch.version.cuda,
           "cudnn": torch.backends.cudnn.version() if torch.backends.cudnn.is_available() else None,
           }
    try:
        env["nvidia_smi"] = subprocess.run(
            ["nvidia-smi", "--query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem,power.limit,driver_version",
             "--format=csv,noheader"], capture_output=True, text=True, timeout=20).stdout.strip()
    except Exception as e:   # noqa: BLE001
        env["nvidia_smi"] = repr(e)
    record(args.out, env)
    log(args.out, json.dumps(env))
    steps = {"bandwidth": lambda: bandwidth(torch, args.out), "dense": lambda: dense(torch, args.out, args.quick),
             "grouped": lambda: grouped(torch, args.out, args.quick),
             "attention": lambda: attention(torch, args.out, args.quick)}
    for name in args.only.split(","):
        try:
            steps[name]()
        except Exception as e:   # noqa: BLE001 - one step's failure leaves the others' results
            log(args.out, f"{name} failed: {e!r}")
        torch.cuda.empty_cache()
    log(args.out, "done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
