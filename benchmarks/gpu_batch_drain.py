"""A batch job on llama-server: N requests sent at once, fixed against varied output lengths.

The question it answers: does a batch of requests whose output lengths vary take longer than one
whose lengths are all the mean, as the batch model says (`advisor.model.serving.batch_run`: the
server runs at most S sequences; once the queue is empty the batch drains, and the longest outputs
finish at a small batch whose steps cost nearly as much as a full one's)? The steady-state model gives
both the same throughput.

One llama-server (S slots, ``--cache-ram 0``) on a random-weight model of Llama 3.1 8B's shape in
F16; for each (N, spread) a batch of N requests of 128 prompt tokens, their output lengths the
quantile points of a log-normal of mean 128 and the given coefficient of variation, shuffled with a
fixed seed, sent at once (``/completion`` with ``n_predict`` and ``ignore_eos``: every request
decodes exactly its length). Each request's send and receive times, and the server's own timings,
go to ``batches.json``; the makespan and output throughput to run.log.

    python benchmarks/gpu_batch_drain.py --src .device/llama-src.tar.xz --out OUT
    python benchmarks/gpu_batch_drain.py --compare OUT/batches.json[.gz]   (beside the predictions)
"""

from __future__ import annotations

import argparse
import gzip
import json
import shutil
import subprocess
import sys
import time
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from gpu_llama_cpp import build, build_beside, log, unpack, use_tree_gguf  # noqa: E402
from tests.llama_model import free_port, stop, wait_healthy  # noqa: E402

PROMPT = 128
MEAN_OUTPUT = 128
MAX_OUTPUT = 1024
#: (requests, coefficient of variation of the output lengths)
BATCHES = ((32, 0.0), (32, 1.0), (128, 0.0), (128, 1.0), (512, 0.0), (512, 1.0))


def output_lengths(n: int, cv: float, mean: float = MEAN_OUTPUT, top: int = MAX_OUTPUT, seed: int = 0) -> list[int]:
    """``n`` output lengths: equal-probability quantile points of a log-normal of this mean and
    coefficient of variation (cut at ``top``, rescaled to the mean), in a shuffled order."""
    import numpy as np

    from advisor.model.serving import output_mix

    mix = output_mix(mean, cv, points=n, top=top)
    pts = np.round(np.asarray(mix["output_points"], float)) if mix["output_points"] else np.full(n, float(mean))
    np.random.default_rng(seed).shuffle(pts)
    return [int(max(x, 2)) for x in pts]


def one(url: str, prompt: list[int], n_predict: int) -> dict:
    body = json.dumps({"prompt": prompt, "n_predict": n_predict, "ignore_eos": True, "cache_prompt": False,
                       "temperature": 0.0, "stream": False}).encode()
    req = urllib.request.Request(url + "/completion", data=body, headers={"Content-Type": "application/json"})
    t0 = time.time()
    try:
        with urllib.request.urlopen(req, timeout=600) as r:
            reply = json.loads(r.read())
        t1 = time.time()
        return {"sent": t0, "done": t1, "asked": n_predict, "predicted": reply.get("tokens_predicted"),
                "timings": reply.get("timings", {})}
    except Exception as exc:  # noqa: BLE001 - a failed request is recorded, not fatal
        return {"sent": t0, "done": time.time(), "asked": n_predict, "error": str(exc)[:200]}


def batch(url: str, n: int, cv: float, vocab: int) -> dict:
    import random

    rng = random.Random(1)
    lengths = output_lengths(n, cv)
    prompts = [[rng.randrange(100, vocab - 1) for _ in range(PROMPT)] for _ in range(n)]
    with ThreadPoolExecutor(n) as pool:
        results = list(pool.map(lambda i: one(url, prompts[i], lengths[i]), range(n)))
    start = min(r["sent"] for r in results)
    ok = [r for r in results if "error" not in r]
    makespan = max(r["done"] for r in results) - start
    tokens = sum(r.get("predicted") or 0 for r in ok)
    return {"requests": n, "cv": cv, "prompt": PROMPT, "mean_output": sum(lengths) / n, "max_output": max(lengths),
            "completed": len(ok), "failed": n - len(ok), "makespan_s": makespan,
            "output_tok_s": tokens / makespan if makespan > 0 else 0.0,
            "mean_e2e_s": sum(r["done"] - start for r in ok) / max(len(ok), 1),
            "per_request": [{**r, "sent": r["sent"] - start, "done": r["done"] - start} for r in results]}


def run(args) -> int:
    out, work = args.out, args.work or Path("/dev/shm/gpu-batch" if Path("/dev/shm").is_dir() else "/tmp/gpu-batch")
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    if shutil.which("nvidia-smi"):
        q = subprocess.run(["nvidia-smi", "--query-gpu=name,memory.total,driver_version", "--format=csv"],
                           capture_output=True, text=True, timeout=30)
        log(out, q.stdout.strip())
    tree = unpack(args.src, work) if not args.bin else None
    use_tree_gguf(tree)

    def model() -> Path:
        from tests.llama_model import LLAMA_8B, TINY, write_llama

        t0 = time.time()
        path = write_llama(work / "llama-3.1-8b-random-F16.gguf", TINY if args.cpu_only else LLAMA_8B, "F16",
                           name="Llama 3.1 8B (random weights)", tiled=True)
        log(out, f"wrote {path.name} ({path.stat().st_size / 1e9:.2f} GB) in {time.time() - t0:.0f} s")
        return path

    done = build_beside(out, lambda: args.bin or build(tree, work, out, args.arch, args.cpu_only, ["llama-server"]), model)
    if done is None:
        return 1
    bin_dir, gguf = done
    slots = args.slots
    ctx = slots * (PROMPT + MAX_OUTPUT + 16)
    port = free_port()
    cmd = [str(bin_dir / "llama-server"), "-m", str(gguf), *([] if args.cpu_only else ["-ngl", "99"]),
           "--host", "127.0.0.1", "--port", str(port), "-c", str(ctx), "-np", str(slots), "--no-webui",
           "--cache-ram", "0"]
    log(out, "$ " + " ".join(cmd))
    batches = BATCHES if not args.cpu_only else ((8, 0.0), (8, 1.0))
    vocab = 4096 if args.cpu_only else 128256
    results = []
    with open(work / "server.log", "w") as server_log:
        server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=server_log)
        try:
            url = f"http://127.0.0.1:{port}"
            up = wait_healthy(url, server, 120)
            log(out, f"llama-server up after {up:.0f} s" if up is not None else
                f"llama-server not up within 120 s (exit code {server.poll()})")
            if up is None:
                return 1
            one(url, list(range(100, 100 + PROMPT)), 16)  # warm-up: the first pass's set-up is not the batch's
            for n, cv in batches:
                r = batch(url, n, cv, vocab)
                results.append(r)
                (out / "batches.json").write_text(json.dumps({"slots": slots, "context": ctx, "command": cmd,
                                                              "batches": results}, indent=1))
                log(out, f"batch of {n}, output spread {cv:g} (mean {r['mean_output']:.0f}, max {r['max_output']}): "
                    f"{r['completed']} done, {r['failed']} failed, {r['makespan_s']:.2f} s, "
                    f"{r['output_tok_s']:.0f} output tok/s")
        finally:
            stop(server, 15)
    return 0


def compare(path: Path, hardware: str) -> None:
    """Each batch beside the batch model's prediction and the steady state's."""
    from advisor.data.catalog import user_catalog
    from advisor.model.config import configure
    from advisor.model.serving import BATCH_MIX_POINTS, Load, output_mix, serve

    opener = gzip.open if path.suffix == ".gz" else open
    with opener(path, "rt") as f:
        data = json.load(f)
    cat = user_catalog()
    cfg = configure(cat, hardware=hardware, model="llama-3.1-8b", quant="F16", runtime="llama.cpp")
    print(f"{'requests':>8} {'spread':>6} {'measured tok/s':>14} {'batch model':>12} {'error':>6} "
          f"{'steady state':>12} {'error':>6}")
    for b in data["batches"]:
        # the batch's own lengths (what each request was asked to decode)
        mix = output_mix(0, samples=[r["asked"] for r in b["per_request"]], points=BATCH_MIX_POINTS) \
            if b["cv"] else output_mix(b["mean_output"])
        common = dict(prompt_tokens=b["prompt"], output_tokens=int(round(b["mean_output"])), max_seqs=data["slots"],
                      prompt_cache=False, **{k: v for k, v in mix.items() if k != "output_tokens"})
        batch_rep = serve(cat, cfg, Load(kind="offline", requests=b["requests"], **common))
        steady = serve(cat, cfg, Load(kind="offline", **common))
        m = b["output_tok_s"]
        print(f"{b['requests']:8d} {b['cv']:6g} {m:14.0f} {batch_rep.throughput_tok_s:12.0f} "
              f"{batch_rep.throughput_tok_s / m - 1:+6.0%} {steady.throughput_tok_s:12.0f} {steady.throughput_tok_s / m - 1:+6.0%}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, help="llama.cpp source: an archive or a folder")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--work", type=Path, help="build and model files (default: /dev/shm/gpu-batch)")
    ap.add_argument("--arch", default="90", help="CUDA architecture (90: Hopper)")
    ap.add_argument("--slots", type=int, default=32, help="llama-server slots (-np): the running sequences at most")
    ap.add_argument("--cpu-only", action="store_true", help="a rehearsal on a machine without a GPU (tiny model)")
    ap.add_argument("--bin", type=Path, help="already built llama.cpp binaries (skips the build)")
    ap.add_argument("--compare", type=Path, help="only set a run's batches.json beside the predictions")
    ap.add_argument("--hardware", default="h100-sxm5-80gb", help="with --compare: the catalog hardware")
    args = ap.parse_args()
    if args.compare:
        compare(args.compare, args.hardware)
        return 0
    if not args.out or not (args.src or args.bin):
        ap.error("--out and --src (or --bin) are needed for a run")
    return run(args)


if __name__ == "__main__":
    sys.exit(main())
