"""Long prompts on this machine's NVIDIA GPU: llama.cpp's prompt rate from 4k to 32k tokens.

The quadratic part of a prompt (each token attends to every one before it) is what a long prompt
adds; how fast the runtime's attention kernel does it at 16k and 32k is what the model's attention
fraction has to price. One bounded run on the device machine some sessions are lent (no network:
the llama.cpp source comes as a local archive):

1. llama-bench and llama-quantize built with CUDA for the GPU's architecture, while a random-weight
   model of Llama 3.1 8B's shape is written with ``gguf`` in F16 (then Q4_K_M by llama-quantize);
2. llama-bench ``-p 4096,16384,32768 -n 0`` with flash attention on, at micro-batches of 512 and
   2,048 tokens, on both formats (``-o json``);
3. ``advisor compare-measured`` on the result.

Every step writes into --out as it finishes, so a run cut short keeps what it measured.

    python benchmarks/gpu_long_prompts.py --src .device/llama-src.tar.xz --out OUT [--arch 90]
    python benchmarks/gpu_long_prompts.py --cpu-only --bin BIN --src SRC --out OUT   (a rehearsal)
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from gpu_llama_cpp import (DENSE, build, build_beside, compare, device_args, folders, log, log_gpu, sh,  # noqa: E402
                           unpack, use_tree_gguf, write_models)

PROMPTS = "4096,16384,32768"
UBATCHES = "512,2048"


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    device_args(ap)
    args = ap.parse_args()
    out, work = folders(args, "gpu-long")
    log_gpu(out)

    tree = unpack(args.src, work) if args.src.exists() else None
    use_tree_gguf(tree)
    done = build_beside(out, lambda: args.bin or build(tree, work, out, args.arch, args.cpu_only,
                                                       targets=("llama-bench", "llama-quantize")),
                        lambda: write_models(work, out, args.cpu_only))
    if done is None:
        return 1
    bin_dir, f16 = done
    models = [f16]
    q4 = f16.with_name(f16.name.replace("F16", "Q4_K_M"))
    t0 = time.time()
    q = sh(out, [str(bin_dir / "llama-quantize"), str(f16), str(q4), "Q4_K_M", str(os.cpu_count())], 600)
    if q.returncode == 0:
        models.append(q4)
        log(out, f"quantized Q4_K_M in {time.time() - t0:.0f} s ({q4.stat().st_size / 1e9:.2f} GB)")
    else:
        log(out, f"quantize Q4_K_M failed: {q.stderr[-500:]}")

    ngl = [] if args.cpu_only else ["-ngl", "99"]
    prompts = "256,1024" if args.cpu_only else PROMPTS
    b = sh(out, [str(bin_dir / "llama-bench"), "-m", ",".join(map(str, models)), *ngl, "-fa", "1",
                 "-p", prompts, "-n", "0", "-ub", UBATCHES, "-b", "2048", "-r", "2", "-o", "json"], 900)
    (out / "llama-bench.json").write_text(b.stdout)
    (out / "llama-bench.stderr.txt").write_text(b.stderr[-20000:])
    log(out, f"llama-bench: rc {b.returncode} {b.stderr[-300:] if b.returncode else ''}")
    if b.returncode == 0:
        compare(out, "long prompts", [out / "llama-bench.json"],
                DENSE + (["--hardware", args.hardware] if args.hardware else []))
    log(out, "done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
