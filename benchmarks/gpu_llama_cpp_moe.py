"""Measure a mixture-of-experts model and llama-server's prompt cache on this machine's NVIDIA GPU.

The second bounded llama.cpp run for a lent GPU (benchmarks/gpu_llama_cpp.py is the first: a dense
Llama 3.1 8B in three formats). Two questions the first left open:

1. **Experts.** A random-weight model of Qwen3-30B-A3B's shape (48 layers, 128 experts of 768, top 8)
   in Q8_0, written straight as random blocks (``tests.llama_model.write_qwen3moe``): llama-bench
   (pp512, pp2048, tg128) and llama-batched-bench (1…64 sequences), where each expert's share of the
   tokens, batch × 8 / 128, is far below what a dense product sees.
2. **llama-server's prompt cache.** Since late 2025 llama-server keeps prompts in host memory
   (``--cache-ram``, 8 GiB by default) and, when a request arrives, copies the KV cache of the slot
   it reuses, and of every idle slot not yet kept, out to it, on the thread that runs every slot.
   The first runs' first tokens came ~70 ms (512 tokens) and ~200 ms (2,000) after llama-bench's
   prompt time. The server runs twice, default and ``--cache-ram 0``, at trace verbosity (each
   save's size and time in its log), with ``advisor measure`` at one and four clients.

Everything goes to --out as it finishes (the device machine returns at most 8 files: run.log,
compare.txt and one archive of the rest).

    python benchmarks/gpu_llama_cpp_moe.py --src .device/llama-src.tar.xz --out OUT [--deadline-s 540]
    python benchmarks/gpu_llama_cpp_moe.py --saves LOG...   (each prompt-cache save's size and time,
        from llama-server logs at -lv 5, plain or .gz; a run's server-events.txt.gz holds their lines)
"""

from __future__ import annotations

import argparse
import gzip
import json
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from gpu_llama_cpp import START, advisor, build, build_beside, compare, log, sh, unpack, use_tree_gguf  # noqa: E402
from tests.llama_model import free_port, save_times, stop, wait_healthy  # noqa: E402

TARGETS = ("llama-bench", "llama-batched-bench", "llama-server")


def print_saves(paths: list[Path]) -> None:
    for path in paths:
        opener = gzip.open if path.suffix == ".gz" else open
        with opener(path, "rt", errors="replace") as f:
            text = f.read()
        # a file of several servers' events: '=== name' heads each
        parts = re.split(r"^=== (.+)$", text, flags=re.M)
        named = [(path.name, parts[0])] + list(zip(parts[1::2], parts[2::2]))
        for name, body in named:
            saves = save_times(body.splitlines())
            if not saves:
                continue
            print(f"{name}: {len(saves)} saves")
            by_size: dict[int, list[float]] = {}
            for mib, s in saves:
                by_size.setdefault(round(mib), []).append(s)
            for mib, times in sorted(by_size.items()):
                med = statistics.median(times)
                print(f"  {mib:6d} MiB  {len(times):3d} saves  median {med * 1e3:7.1f} ms  "
                      f"({min(times) * 1e3:.1f}-{max(times) * 1e3:.1f})  {mib * 2 ** 20 / med / 1e9:5.2f} GB/s")


def left(deadline_s: float) -> float:
    return deadline_s - (time.time() - START)


def serve(out: Path, work: Path, bin_dir: Path, model: Path, tag: str, ngl: list[str], cache_ram: str | None,
          levels: list[tuple[str, int, int, int]], budget_s: float) -> None:
    """One llama-server (4 slots of 4,096 tokens, trace logs) measured at each (name, clients, prompt,
    output) level; its log kept whole."""
    port = free_port()
    log_path = work / f"server-{tag}.log"
    cmd = [str(bin_dir / "llama-server"), "-m", str(model), *ngl, "--host", "127.0.0.1", "--port", str(port),
           "-c", str(4 * 4096), "-np", "4", "--no-webui", "-lv", "5"]
    if cache_ram is not None:
        cmd += ["--cache-ram", cache_ram]
    log(out, "$ " + " ".join(cmd))
    with open(log_path, "w") as server_log:
        server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=server_log)
        try:
            up = wait_healthy(f"http://127.0.0.1:{port}", server, 90)
            log(out, f"llama-server ({tag}) up after {up:.0f} s" if up is not None else
                f"llama-server ({tag}) not up within 90 s (exit code {server.poll()})")
            if up is None:
                return
            t_end = time.time() + budget_s
            for name, clients, prompt, output in levels:
                b = t_end - time.time()
                if b < 10:
                    log(out, f"measure {tag} {name}: skipped, {b:.0f} s left of its budget")
                    continue
                dst = work / f"measure-{tag}-{name}.json"
                m = advisor("measure", "--url", f"http://127.0.0.1:{port}/v1", "--concurrency", str(clients),
                            "--requests", str(max(8, 2 * clients)), "--prompt", str(prompt), "--output", str(output),
                            "--budget-s", f"{b:.0f}", "--out", str(dst), "--json", timeout=b + 30)
                try:
                    lv = json.loads(m.stdout)["levels"][0]
                    log(out, f"measure {tag} {name}: TTFT p50 {lv['ttft_ms']['p50']:.1f} ms, "
                        f"ITL mean {lv['itl_ms']['mean']:.2f} ms, {lv.get('output_throughput_tok_s', 0):.0f} tok/s")
                except (ValueError, KeyError, TypeError, IndexError):
                    log(out, f"measure {tag} {name}: rc {m.returncode} {m.stderr[-300:]}")
        finally:
            stop(server, 15)
    text = log_path.read_text(errors="replace")
    saves = [ln for ln in text.splitlines() if "saving prompt with length" in ln or "prompt eval time" in ln]
    log(out, f"llama-server ({tag}): {len(saves)} save/prompt lines; the last:\n" + "\n".join(saves[-6:]))


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--src", type=Path, help="llama.cpp source: an archive or a folder")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--saves", type=Path, nargs="+", help="only print the prompt-cache saves of these logs")
    ap.add_argument("--work", type=Path, help="build and model files (default: /dev/shm/gpu-llama-moe)")
    ap.add_argument("--arch", default="90", help="CUDA architecture (90: Hopper)")
    ap.add_argument("--hardware", default="h100-sxm5-80gb", help="catalog hardware the comparisons use")
    ap.add_argument("--cpu-only", action="store_true", help="a rehearsal on a machine without a GPU (tiny models)")
    ap.add_argument("--bin", type=Path, help="already built llama.cpp binaries (skips the build)")
    ap.add_argument("--deadline-s", type=float, default=540, help="stop starting steps after this many seconds")
    args = ap.parse_args()
    if args.saves:
        print_saves(args.saves)
        return 0
    if not args.src or not args.out:
        ap.error("--src and --out are needed for a run")
    out = args.out
    work = args.work or Path("/dev/shm/gpu-llama-moe" if Path("/dev/shm").is_dir() else "/tmp/gpu-llama-moe")
    out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    hw = ["--hardware", args.hardware]
    if shutil.which("nvidia-smi"):
        q = sh(out, ["nvidia-smi", "--query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem,power.limit,driver_version",
                     "--format=csv"], 30)
        log(out, q.stdout.strip())

    tree = unpack(args.src, work) if not args.bin else None
    use_tree_gguf(tree)

    def models() -> tuple[Path, Path]:
        from tests.llama_model import LLAMA_8B, QWEN3_30B_A3B, TINY, TINY_MOE, write_llama, write_qwen3moe

        t0 = time.time()
        moe = write_qwen3moe(work / "qwen3-30b-a3b-random-Q8_0.gguf", TINY_MOE if args.cpu_only else QWEN3_30B_A3B,
                             name="Qwen3-30B-A3B (random weights)")
        log(out, f"wrote {moe.name} ({moe.stat().st_size / 1e9:.2f} GB) in {time.time() - t0:.0f} s")
        t0 = time.time()
        dense = write_llama(work / "llama-3.1-8b-random-F16.gguf", TINY if args.cpu_only else LLAMA_8B, "F16",
                            name="Llama 3.1 8B (random weights)", tiled=True)
        log(out, f"wrote {dense.name} ({dense.stat().st_size / 1e9:.2f} GB) in {time.time() - t0:.0f} s")
        return moe, dense

    done = build_beside(out, lambda: args.bin or build(tree, work, out, args.arch, args.cpu_only, TARGETS), models)
    if done is None:
        return 1
    bin_dir, (moe, dense) = done
    ngl = [] if args.cpu_only else ["-ngl", "99"]
    small = args.cpu_only
    moe_args = ["--model", "qwen3-30b-a3b", "--quant", "Q8_0", *hw]

    # 1. llama-server's prompt cache, on and off, on the MoE model (KV 96 KiB a token)
    p_long, p_short, o = (256, 64, 16) if small else (2000, 512, 64)
    levels = [("c1-long", 1, p_long, o), ("c1-short", 1, p_short, o), ("c4-long", 4, p_long, o)]
    for tag, cram in (("moe-cache", None), ("moe-nocache", "0")):
        if left(args.deadline_s) > 60:
            serve(out, work, bin_dir, moe, tag, ngl, cram, levels, min(70.0, left(args.deadline_s) - 40))
    measured = sorted(work.glob("measure-moe-*.json"))
    if measured:
        compare(out, "server (MoE)", measured, [*moe_args, "--runtime", "llama.cpp"])

    # 2. llama-bench on the MoE model
    if left(args.deadline_s) > 50:
        b = sh(out, [str(bin_dir / "llama-bench"), "-m", str(moe), *ngl, "-p", "64" if small else "512,2048",
                     "-n", "16" if small else "128", "-r", "2", "-o", "json"], max(30.0, left(args.deadline_s) - 20))
        (work / "llama-bench-moe.json").write_text(b.stdout)
        log(out, f"llama-bench (MoE): rc {b.returncode} {b.stderr[-300:] if b.returncode else ''}")
        if b.returncode == 0:
            compare(out, "llama-bench (MoE)", [work / "llama-bench-moe.json"], moe_args)

    # 3. llama-batched-bench on the MoE model: the experts' share of the tokens grows with the batch
    if left(args.deadline_s) > 50:
        bb = sh(out, [str(bin_dir / "llama-batched-bench"), "-m", str(moe), *ngl, "-c", "4096" if small else "45056",
                      "-b", "2048", "-ub", "512", "-npp", "64" if small else "512", "-ntg", "16" if small else "128",
                      "-npl", "1,2" if small else "1,4,16,64"], max(30.0, left(args.deadline_s) - 20))
        (work / "batched-bench-moe.txt").write_text(bb.stderr[-20000:] + "\n" + bb.stdout)
        log(out, f"llama-batched-bench (MoE): rc {bb.returncode}")
        if bb.returncode == 0:
            compare(out, "batched (MoE)", [work / "batched-bench-moe.txt"], moe_args)

    # 4. the prompt cache on the dense 8B (KV 128 KiB a token), the first runs' model, as time allows
    dense_levels = [("c1-long", 1, p_long, o), ("c1-short", 1, p_short, o)]
    for tag, cram in (("dense-cache", None), ("dense-nocache", "0")):
        if left(args.deadline_s) > 45:
            serve(out, work, bin_dir, dense, tag, ngl, cram, dense_levels, min(40.0, left(args.deadline_s) - 25))

    with tarfile.open(out / "results.tgz", "w:gz") as t:
        for p in sorted(work.glob("*.json")) + sorted(work.glob("*.txt")) + sorted(work.glob("server-*.log")):
            t.add(p, arcname=p.name)
        if (out / "build.log").is_file():
            t.add(out / "build.log", arcname="build.log")
    (out / "build.log").unlink(missing_ok=True)
    log(out, "done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
