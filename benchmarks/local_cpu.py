"""This machine's CPU with llama.cpp: what llama-bench measures against what advisor predicts.

Writes a random-weight llama GGUF of TinyLlama 1.1B's shape (F16; Q8_0 and Q4_K_M by llama.cpp's
own llama-quantize), runs llama-bench (pp512 and tg128, the given threads, 3 repetitions), probes
this machine into a private data folder (`advisor --probe --save`) and predicts the same tests
for "this machine". Prints one row per format and test: measured, predicted, band, error, and
whether the measurement is above the ceiling the prediction states.

    python benchmarks/local_cpu.py [--bin DIR] [--threads 2] [--keep DIR]

DIR: llama.cpp's binaries (default: `scripts/llama_cpp.sh`, which builds them the first time).
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.llama_model import TINYLLAMA, write_llama  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", help="folder with llama-bench and llama-quantize")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--keep", help="keep the model files here (default: a temporary folder)")
    ap.add_argument("--formats", default="F16,Q8_0,Q4_K_M")
    args = ap.parse_args()
    bin_dir = Path(args.bin or subprocess.run([str(ROOT / "scripts" / "llama_cpp.sh")], check=True,
                                              capture_output=True, text=True).stdout.strip())
    work = Path(args.keep or tempfile.mkdtemp(prefix="advisor-cpu-"))
    work.mkdir(parents=True, exist_ok=True)
    data_dir = work / "userdata"
    os.environ["ADVISOR_DATA_DIR"] = str(data_dir)

    from advisor.cli.main import main as advisor
    from advisor.data.catalog import user_catalog
    from advisor.fit.bench_results import read_results
    from advisor.fit.compare import Overrides, compare
    from advisor.text.format import num, table

    f16 = work / "tinyllama-shape-F16.gguf"
    if not f16.exists():
        print(f"writing {f16} …", file=sys.stderr)
        write_llama(f16, TINYLLAMA, "F16", name="random-tinyllama")
    files = {"F16": f16}
    for fmt in args.formats.split(","):
        if fmt == "F16":
            continue
        out = work / f"tinyllama-shape-{fmt}.gguf"
        if not out.exists():
            subprocess.run([str(bin_dir / "llama-quantize"), str(f16), str(out), fmt], check=True,
                           capture_output=True)
        files[fmt] = out
    if advisor(["--probe", "--save"]) not in (0, 3):
        raise SystemExit("the probe failed")
    cat = user_catalog()
    rows = []
    for fmt, path in files.items():
        run = subprocess.run([str(bin_dir / "llama-bench"), "-m", str(path), "-p", "512", "-n", "128", "-t",
                              str(args.threads), "-r", "3", "-o", "json"], check=True, capture_output=True, text=True)
        result = work / f"bench-{fmt}.json"
        result.write_text(run.stdout)
        _tool, records = read_results(result)
        for c in compare(cat, records, Overrides(hardware="this machine", model=str(path), runtime="llama.cpp")):
            r = c.record
            if c.predicted is None:
                rows.append([fmt, r.metric, num(r.value), "—", "—", "—", c.skipped])
                continue
            rows.append([fmt, r.metric, num(r.value), num(c.predicted), f"{num(c.low)}–{num(c.high)}",
                         f"{100 * c.error:+.0f} %", "measured above the band" if r.value > c.high else ""])
    # a shared or virtual machine's memory speed moves between minutes: measure it again after the
    # benchmarks, so that a drift is visible beside the errors rather than hidden in them
    from probes.cpu import describe, measure_bandwidth

    after = describe()
    measure_bandwidth(after)
    before = cat.hardware["this-machine"].bandwidth_gb_s
    print(f"llama.cpp on this machine, {args.threads} threads; model: random weights, TinyLlama 1.1B's shape")
    print(f"probed read bandwidth: {before:.1f} GB/s before the benchmarks (the prediction's), "
          f"{after.read_gb_s:.1f} GB/s after")
    print(table(["format", "test", "measured tok/s", "predicted", "band", "error", "note"], rows))
    print(json.dumps({"work": str(work)}))


if __name__ == "__main__":
    main()
