"""How fast llama.cpp's GPU kernels run each weight format: one model shape, every format at once.

One bounded run, for a machine with an NVIDIA GPU (the device machine some sessions are lent; it
reaches no network, so the llama.cpp source comes as a local archive):

1. llama.cpp built with CUDA for the GPU's architecture (llama-bench, llama-batched-bench), while
   Llama 3.1 8B's shape is written in each format with `tests.llama_model.write_llama_blocks`
   (every matrix in the one format, as llama-quantize --pure writes it, from random blocks: no
   quantizer, seconds a file);
2. for each format, in the order below: ``llama-bench -p 512 -n 128 -r 3`` (prompt and one-sequence
   decode rates) and ``llama-batched-bench -npl 1,2,4,8,16`` (decode of several sequences: up to 8
   the quantized products run llama.cpp's vector kernels, MMVQ, which unpack every weight again per
   sequence; past 8 its int8 matrix kernels, MMQ). The file is deleted once measured.

What it answers: at one sequence a fast GPU's bandwidth reads a compressed format's bytes quickly,
so what bounds its decode may be the unpacking (the H200 decoded Q4_K_M at 269 tok/s, the H100 at
262, against 4.8 and 3.35 TB/s), and how much that costs depends on the format.

Results go into --out as each format finishes (a run cut short keeps what it measured): run.log,
build.log, llama-bench.json (every format's records in one list) and batched-bench.txt (one
``=== FORMAT`` section each).

    python benchmarks/gpu_formats.py --src .device/llama-src.tar.xz --out OUT [--deadline-s 540]
    python benchmarks/gpu_formats.py --src … --out OUT --cpu-only --dims tinyllama   (the CPU, every format)
"""

from __future__ import annotations

import argparse
import json
import queue
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from gpu_llama_cpp import START, build, device_args, folders, log, log_gpu, sh, unpack, use_tree_gguf  # noqa: E402
from tests.llama_model import LLAMA_8B, TINY, TINYLLAMA, write_llama_blocks  # noqa: E402

TARGETS = ("llama-bench", "llama-batched-bench")
#: most used first, so that a run cut short has measured those
FORMATS = ("Q4_K", "Q8_0", "Q6_K", "Q5_K", "Q4_0", "IQ4_XS", "MXFP4", "Q3_K", "Q2_K", "IQ3_S", "IQ2_XXS", "BF16",
           "IQ1_S", "Q5_0")
#: the model shapes --dims names
SHAPES = {"tiny": TINY, "tinyllama": TINYLLAMA, "llama-3.1-8b": LLAMA_8B}


def writer(work: Path, out: Path, formats: list[str], shape: str, ready: queue.Queue, stop: threading.Event) -> None:
    """Write each format's file of model shape ``shape`` (a `SHAPES` name) in turn and hand it to the
    measuring loop; wait while the work folder has no room for the next (the loop deletes each file
    once measured)."""
    import gguf   # here: the llama.cpp tree's gguf-py where none is installed (`use_tree_gguf`)

    dims = SHAPES[shape]
    for q in formats:
        block, type_bytes = gguf.GGML_QUANT_SIZES[gguf.GGMLQuantizationType[q]]
        size = dims.params * type_bytes / block   # the file, near enough, for the free-space check
        need = size + (4e9 if size > 1e9 else 1e8)   # room left beside it
        while shutil.disk_usage(work).free < need and not stop.is_set():
            time.sleep(1)
        if stop.is_set():
            break
        t0 = time.time()
        path = work / f"{shape}-random-{q}.gguf"
        try:
            write_llama_blocks(path, dims, q, name=f"{shape} (random weights)")
        except Exception as e:   # noqa: BLE001 - one format's failure must not end the others
            log(out, f"writing {q} failed: {e!r}")
            continue
        log(out, f"wrote {path.name} ({path.stat().st_size / 1e9:.2f} GB) in {time.time() - t0:.0f} s")
        ready.put((q, path))
    ready.put(None)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    device_args(ap)
    ap.add_argument("--deadline-s", type=float, default=540,
                    help="no format is started after this many seconds less the time one took")
    ap.add_argument("--formats", default=",".join(FORMATS), help="comma-separated ggml types, in the order to measure")
    ap.add_argument("--dims", choices=tuple(SHAPES),
                    help="the model shape (default: Llama 3.1 8B's on a GPU, a 4-layer toy with --cpu-only)")
    args = ap.parse_args()
    shape = args.dims or ("tiny" if args.cpu_only else "llama-3.1-8b")
    out, work = folders(args, "gpu-formats")
    formats = [f for f in args.formats.split(",") if f]
    log_gpu(out)

    tree = unpack(args.src, work) if args.src.exists() else None
    use_tree_gguf(tree)
    ready: queue.Queue = queue.Queue()
    stop = threading.Event()
    t = threading.Thread(target=writer, args=(work, out, formats, shape, ready, stop), daemon=True)
    t.start()
    try:
        bin_dir = args.bin or build(tree, work, out, args.arch, args.cpu_only, TARGETS)
    except subprocess.CalledProcessError as e:
        log(out, f"build failed: {e}; the end of build.log says why")
        stop.set()
        return 1

    ngl = [] if args.cpu_only else ["-ngl", "99"]
    toy = shape == "tiny"    # the 4-layer rehearsal model: short runs
    records: list = []
    longest = 0.0
    while (item := ready.get()) is not None:
        q, path = item
        elapsed = time.time() - START
        if elapsed + 1.5 * longest > args.deadline_s:
            log(out, f"deadline: {q} and what follows not measured")
            path.unlink(missing_ok=True)
            break
        t0 = time.time()
        b = sh(out, [str(bin_dir / "llama-bench"), "-m", str(path), *ngl, "-p", "64" if toy else "512",
                     "-n", "16" if toy else "128", "-r", "3", "-o", "json"], 120)
        if b.returncode == 0:
            try:
                records += json.loads(b.stdout)
            except ValueError:
                log(out, f"llama-bench {q}: output not JSON: {b.stdout[-300:]}")
            (out / "llama-bench.json").write_text(json.dumps(records, indent=1))
        log(out, f"llama-bench {q}: rc {b.returncode} {b.stderr[-400:] if b.returncode else ''}")
        bb = sh(out, [str(bin_dir / "llama-batched-bench"), "-m", str(path), *ngl, "-c", "4096", "-b", "2048",
                      "-ub", "512", "-npp", "128", "-ntg", "16" if toy else "64",
                      "-npl", "1,2" if toy else "1,2,4,8,16"], 120)
        with open(out / "batched-bench.txt", "a") as f:
            # the backend's start-up lines name the device (stderr); the table is stdout
            err = bb.stderr if len(bb.stderr) < 6000 else bb.stderr[:2000] + "\n[…]\n" + bb.stderr[-3000:]
            f.write(f"=== {q}\n{err}\n{bb.stdout}\n")
        log(out, f"llama-batched-bench {q}: rc {bb.returncode}")
        path.unlink(missing_ok=True)
        longest = max(longest, time.time() - t0)
    stop.set()
    log(out, "done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
