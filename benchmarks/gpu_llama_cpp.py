"""Measure llama.cpp on this machine's NVIDIA GPU and set it beside the predictions.

One bounded run, for a machine with a GPU (here: the device machine some sessions are lent; it
reaches no network, so the llama.cpp source comes as a local archive):

1. ``advisor --probe --json`` (what NVML and the CPU probe read) and ``nvidia-smi``;
2. llama.cpp built with CUDA for the GPU's architecture (llama-bench, llama-batched-bench,
   llama-server, llama-quantize);
3. a random-weight model of Llama 3.1 8B's shape written with ``gguf`` in F16, then Q8_0 and
   Q4_K_M by llama-quantize;
4. llama-bench (pp512, pp4096, tg128 on each format), llama-batched-bench on Q4_K_M
   (1/8/32/64 sequences), and llama-server on Q4_K_M measured by ``advisor measure``;
5. ``advisor compare-measured`` on each result file.

Every step writes its output into --out as it finishes, so a run cut short keeps what it measured.

    python benchmarks/gpu_llama_cpp.py --src .device/llama-src.tar.xz --out OUT [--arch 90]
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.llama_model import free_port, stop, wait_healthy  # noqa: E402

TARGETS = ["llama-bench", "llama-batched-bench", "llama-server", "llama-quantize"]
#: the catalog model the random-weight files have the shape of
DENSE = ["--model", "llama-3.1-8b"]
START = time.time()


def log(out: Path, msg: str) -> None:
    line = f"[{time.time() - START:6.1f} s] {msg}"
    print(line, flush=True)
    with open(out / "run.log", "a") as f:
        f.write(line + "\n")


def advisor(*args: str, timeout: float = 300) -> subprocess.CompletedProcess:
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return subprocess.run([sys.executable, "-c", "from advisor.cli.entry import run; run()", *args],
                          capture_output=True, text=True, timeout=timeout, env=env)


def sh(out: Path, cmd: list[str], timeout: float, **kw) -> subprocess.CompletedProcess:
    log(out, "$ " + " ".join(cmd))
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, **kw)


def unpack(src: Path, work: Path) -> Path:
    if src.is_dir():
        return src
    tree = work / "llama.cpp"
    tree.mkdir(parents=True, exist_ok=True)
    with tarfile.open(src) as t:
        t.extractall(tree, filter="data")
    return tree


def use_tree_gguf(tree: Path | None) -> None:
    """Where no `gguf` package is installed (the device machine has none), the llama.cpp source tree's
    own gguf-py: appended after ours, as gguf-py has a `tests` folder of its own."""
    if importlib.util.find_spec("gguf") is None and tree is not None:
        sys.path.append(str(tree / "gguf-py"))


def build(tree: Path, work: Path, out: Path, arch: str, cpu_only: bool, targets=tuple(TARGETS)) -> Path:
    bdir = work / "build"
    flags = ["-DCMAKE_BUILD_TYPE=Release", "-DLLAMA_CURL=OFF", "-DLLAMA_OPENSSL=OFF", "-DGGML_NATIVE=ON",
             "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF", "-DLLAMA_BUILD_SERVER=ON", "-DLLAMA_BUILD_TOOLS=ON"]
    if not cpu_only:
        flags += ["-DGGML_CUDA=ON", f"-DCMAKE_CUDA_ARCHITECTURES={arch}", "-DGGML_CUDA_NCCL=OFF"]
    gen = ["-G", "Ninja"] if shutil.which("ninja") else []
    t0 = time.time()
    with open(out / "build.log", "w") as f:
        subprocess.run(["cmake", "-S", str(tree), "-B", str(bdir), *gen, *flags], stdout=f, stderr=subprocess.STDOUT,
                       check=True, timeout=300)
        subprocess.run(["cmake", "--build", str(bdir), "-j", str(os.cpu_count()), "--target", *targets],
                       stdout=f, stderr=subprocess.STDOUT, check=True, timeout=900)
    log(out, f"built {', '.join(targets)} in {time.time() - t0:.0f} s")
    return bdir / "bin"


def build_beside(out: Path, build_call, write_call):
    """llama.cpp's build and the model files at the same time (the writer is one core; the build the
    rest): (binaries' folder, what ``write_call`` returned), or None where the build failed (logged)."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(2) as pool:
        built, written = pool.submit(build_call), pool.submit(write_call)
        try:
            bin_dir = built.result()
        except subprocess.CalledProcessError as e:
            log(out, f"build failed: {e}; the end of build.log says why")
            return None
        return bin_dir, written.result()


def write_models(work: Path, out: Path, small: bool) -> Path:
    from tests.llama_model import LLAMA_8B, TINY, write_llama

    t0 = time.time()
    path = work / ("llama-3.1-8b-random-F16.gguf" if not small else "tiny-random-F16.gguf")
    write_llama(path, TINY if small else LLAMA_8B, "F16", name="Llama 3.1 8B (random weights)", tiled=True)
    log(out, f"wrote {path.name} ({path.stat().st_size / 1e9:.2f} GB) in {time.time() - t0:.0f} s")
    return path


def compare(out: Path, name: str, files: list[Path], args: list[str]) -> None:
    """`advisor compare-measured` on ``files`` with ``args``, as a table and as JSON; every comparison
    goes into one file (the device machine returns at most 8)."""
    for fmt in ("text", "json"):
        r = advisor("compare-measured", *map(str, files), *args, *(["--json"] if fmt == "json" else []))
        with open(out / "compare.txt", "a") as f:
            f.write(f"### {name} ({fmt}), rc {r.returncode}\n{r.stdout}{r.stderr}\n")
        log(out, f"compare {name} ({fmt}): rc {r.returncode}")


def device_args(ap: argparse.ArgumentParser) -> None:
    """The flags every device script of this kind takes: where the source, results and work go, the
    CUDA architecture, the catalog hardware, a CPU rehearsal, binaries already built."""
    ap.add_argument("--src", type=Path, required=True, help="llama.cpp source: an archive or a folder")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--work", type=Path, help="where the build and the model files go (default: /dev/shm when it "
                    "has 40 GB free, which loads the models from memory, else /tmp)")
    ap.add_argument("--arch", default="90", help="CUDA architecture (90: Hopper)")
    ap.add_argument("--hardware", default="", help="catalog hardware, where the probe's (or the file's) match is not wanted")
    ap.add_argument("--cpu-only", action="store_true", help="a rehearsal on a machine without a GPU (tiny model)")
    ap.add_argument("--bin", type=Path, help="already built llama.cpp binaries (skips the build)")


def log_gpu(out: Path) -> None:
    """What nvidia-smi says of the GPU (name, memory, clocks, power limit, driver), where it runs."""
    if shutil.which("nvidia-smi"):
        q = sh(out, ["nvidia-smi", "--query-gpu=name,memory.total,clocks.max.sm,clocks.max.mem,power.limit,driver_version",
                     "--format=csv"], 30)
        log(out, q.stdout.strip())


def folders(args, name: str) -> tuple[Path, Path]:
    """(results, work) made: the work folder in /dev/shm where it has 40 GB free, else /tmp."""
    work = args.work
    if work is None:
        shm = Path("/dev/shm")
        work = (shm if shm.is_dir() and shutil.disk_usage(shm).free > 40e9 else Path("/tmp")) / name
    args.out.mkdir(parents=True, exist_ok=True)
    work.mkdir(parents=True, exist_ok=True)
    return args.out, work


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    device_args(ap)
    ap.add_argument("--measure-budget-s", type=float, default=150, help="time for advisor measure on the server")
    args = ap.parse_args()
    out, work = folders(args, "gpu-llama")
    hw = ["--hardware", args.hardware] if args.hardware else []

    # 1. what the probe reads
    r = advisor("--probe", "--json")
    (out / "probe.json").write_text(r.stdout)
    log(out, f"probe: rc {r.returncode} {r.stderr[-500:]}")
    if not args.hardware:
        try:
            matches = [m for m in json.loads(r.stdout)["matches"] if m.get("catalog_key")]
        except (ValueError, KeyError, TypeError):
            matches = []
        if matches:
            hw = ["--hardware", matches[0]["catalog_key"]]
        log(out, f"the probe's catalog matches: {matches}")
    log_gpu(out)

    # 2 and 3: the build and the model file at the same time. The `gguf` package is llama.cpp's own
    # gguf-py, where none is installed (the device machine has none)
    tree = unpack(args.src, work) if args.src.exists() else None
    use_tree_gguf(tree)
    done = build_beside(out, lambda: args.bin or build(tree, work, out, args.arch, args.cpu_only),
                        lambda: write_models(work, out, args.cpu_only))
    if done is None:
        return 1
    bin_dir, f16 = done
    ngl = [] if args.cpu_only else ["-ngl", "99"]
    models = {"F16": f16}
    for quant in ("Q8_0", "Q4_K_M"):
        dst = f16.with_name(f16.name.replace("F16", quant))
        t0 = time.time()
        q = sh(out, [str(bin_dir / "llama-quantize"), str(f16), str(dst), quant, str(os.cpu_count())], 600)
        if q.returncode != 0:
            log(out, f"quantize {quant} failed: {q.stderr[-500:]}")
            continue
        models[quant] = dst
        log(out, f"quantized {quant} in {time.time() - t0:.0f} s ({dst.stat().st_size / 1e9:.2f} GB)")

    # 4a. llama-bench, one sequence
    prompts = "128" if args.cpu_only else "512,4096"
    b = sh(out, [str(bin_dir / "llama-bench"), "-m", ",".join(map(str, models.values())), *ngl, "-p", prompts,
                 "-n", "32" if args.cpu_only else "128", "-r", "3", "-o", "json"], 600)
    (out / "llama-bench.json").write_text(b.stdout)
    log(out, f"llama-bench: rc {b.returncode} {b.stderr[-300:] if b.returncode else ''}")
    if b.returncode == 0:
        compare(out, "bench-as-read", [out / "llama-bench.json"], DENSE)   # the file's own gpu_info resolved
        compare(out, "bench", [out / "llama-bench.json"], DENSE + hw)

    # 4b. llama-batched-bench, several sequences at once (its table goes to stdout, the backend's
    # start-up lines with the device name to stderr: both kept, the importer reads the device there)
    q4 = models.get("Q4_K_M", f16)
    npl = "1,2" if args.cpu_only else "1,8,32,64"
    bb = sh(out, [str(bin_dir / "llama-batched-bench"), "-m", str(q4), *ngl, "-c", "4096" if args.cpu_only else "45056",
                  "-b", "2048", "-ub", "512", "-npp", "128" if args.cpu_only else "512", "-ntg", "32" if args.cpu_only else "128",
                  "-npl", npl], 600)
    (out / "batched-bench.txt").write_text(bb.stderr[-20000:] + "\n" + bb.stdout)
    log(out, f"llama-batched-bench: rc {bb.returncode}")
    if bb.returncode == 0:
        compare(out, "batched", [out / "batched-bench.txt"], DENSE + hw + ["--quant", "Q4_K_M"])

    # 4c. llama-server measured by advisor measure
    port = free_port()
    slots = 2 if args.cpu_only else 16
    server_log = open(work / "server.log", "w")
    server = subprocess.Popen([str(bin_dir / "llama-server"), "-m", str(q4), *ngl, "--host", "127.0.0.1", "--port", str(port),
                               "-c", str(slots * 2048), "-np", str(slots), "--no-webui"],
                              stdout=subprocess.DEVNULL, stderr=server_log)
    try:
        up = wait_healthy(f"http://127.0.0.1:{port}", server, 120)
        log(out, f"llama-server up after {up:.0f} s" if up is not None else
            f"llama-server not up within 120 s (exit code {server.poll()})")
        conc = "1,2" if args.cpu_only else "1,4,16"
        m = advisor("measure", "--url", f"http://127.0.0.1:{port}/v1", "--concurrency", conc,
                    "--requests", "4" if args.cpu_only else "32", "--prompt", "128" if args.cpu_only else "512",
                    "--output", "32" if args.cpu_only else "128", "--budget-s", f"{args.measure_budget_s:g}",
                    "--out", str(out / "measure.json"), "--json", timeout=args.measure_budget_s + 50)
        log(out, f"measure: rc {m.returncode} {m.stderr[-300:]}")
    finally:
        stop(server, 15)
        server_log.close()
        log(out, "llama-server's last lines:\n" + (work / "server.log").read_text()[-1500:])
    if (out / "measure.json").is_file():
        compare(out, "measure", [out / "measure.json"], DENSE + hw + ["--quant", "Q4_K_M", "--runtime", "llama.cpp"])
    log(out, "done")
    return 0


if __name__ == "__main__":
    sys.exit(main())
