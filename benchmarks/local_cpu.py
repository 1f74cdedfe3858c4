"""This machine's CPU with llama.cpp: what llama-bench measures against what advisor predicts.

Writes a random-weight llama GGUF of TinyLlama 1.1B's shape (F16; Q8_0 and Q4_K_M by llama.cpp's
own llama-quantize), probes this machine into a private data folder (`advisor --probe --save`),
runs llama-bench (pp512 and tg128, the given threads, 3 repetitions) in rounds with the formats
interleaved, and predicts the same tests for "this machine". Prints one row per format and test:
the median and range measured over the rounds, predicted, band, error against the median, how
many rounds measured above the band's top, and the top the band had on the probe's median read
alone (before the probe kept its best read) with the rounds above that.

    python benchmarks/local_cpu.py [--bin DIR] [--threads 2] [--keep DIR] [--rounds 3]

DIR: llama.cpp's binaries (default: `scripts/llama_cpp.sh`, which builds them the first time).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.llama_model import TINYLLAMA, write_llama, write_llama_blocks  # noqa: E402


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bin", help="folder with llama-bench and llama-quantize")
    ap.add_argument("--threads", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--keep", help="keep the model files here (default: a temporary folder)")
    ap.add_argument("--formats", default="F16,Q8_0,Q4_K_M",
                    help="F16 and llama-quantize's mixes (Q8_0, Q4_K_M …), or with --pure any ggml type")
    ap.add_argument("--pure", action="store_true", help="every matrix in the one format, written from random blocks "
                    "(tests/llama_model.write_llama_blocks: any ggml type, no quantizer; Q4_K, Q3_K, IQ4_XS …)")
    ap.add_argument("--rounds", type=int, default=3, help="rounds of the tests, formats interleaved (default 3)")
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
        out = work / f"tinyllama-shape-{fmt}{'-pure' if args.pure else ''}.gguf"
        if args.pure and not out.exists():
            write_llama_blocks(out, TINYLLAMA, fmt, name="random-tinyllama")
        elif not out.exists():
            subprocess.run([str(bin_dir / "llama-quantize"), str(f16), str(out), fmt], check=True,
                           capture_output=True)
        files[fmt] = out
    if advisor(["--probe", "--save"]) not in (0, 3):
        raise SystemExit("the probe failed")
    cat = user_catalog()
    # A shared or virtual machine's memory speed moves between minutes (on the 2-core VM this was
    # written on, llama.cpp's F16 decode read 30-48 GB/s in runs minutes apart). So the tests run in
    # rounds, the formats interleaved, the read bandwidth is probed again between rounds, and each
    # prediction is compared with the median of its rounds, their range printed beside it.
    from probes.cpu import describe, measure_bandwidth

    measured: dict[tuple[str, str], list[float]] = {}
    predicted: dict[tuple[str, str], tuple] = {}
    # the same machine without its best read (the band's top and ceiling on the median read, as
    # before the probe kept the best): how many rounds each rule leaves above the band
    import dataclasses

    here = cat.hardware["this-machine"]
    typical_only = dataclasses.replace(cat, hardware={**cat.hardware, "this-machine": dataclasses.replace(
        here, bandwidth_best_gb_s=None)})
    high_typical: dict[tuple[str, str], float] = {}
    probes = [here.bandwidth_gb_s]
    for rnd in range(args.rounds):
        for fmt, path in files.items():
            print(f"round {rnd + 1}/{args.rounds}: {fmt} …", file=sys.stderr)
            run = subprocess.run([str(bin_dir / "llama-bench"), "-m", str(path), "-p", "512", "-n", "128", "-t",
                                  str(args.threads), "-r", "3", "-o", "json"], check=True, capture_output=True,
                                 text=True)
            result = work / f"bench-{fmt}-round{rnd + 1}.json"
            result.write_text(run.stdout)
            _tool, records = read_results(result)
            overrides = Overrides(hardware="this machine", model=str(path), runtime="llama.cpp")
            for c in compare(cat, records, overrides):
                key = (fmt, c.record.metric)
                measured.setdefault(key, []).append(c.record.value)
                predicted[key] = (c.predicted, c.low, c.high, c.skipped)
            for c in compare(typical_only, records, overrides):
                high_typical[(fmt, c.record.metric)] = c.high
        after = describe()
        measure_bandwidth(after)
        probes.append(after.read_gb_s)
    rows = []
    for (fmt, metric), values in measured.items():
        mid = statistics.median(values)
        spread = f"{num(min(values))}–{num(max(values))}"
        pred, low, high, skipped = predicted[(fmt, metric)]
        if pred is None:
            rows.append([fmt, metric, num(mid), spread, "—", "—", "—", skipped])
            continue
        above = sum(v > high for v in values)
        old_high = high_typical.get((fmt, metric))
        above_old = sum(v > old_high for v in values) if old_high is not None else 0
        rows.append([fmt, metric, num(mid), spread, num(pred), f"{num(low)}–{num(high)}",
                     f"{100 * (pred / mid - 1):+.0f} %",
                     f"{above} of {len(values)} rounds above the band" if above else "",
                     f"{num(old_high)} ({above_old} above)" if old_high is not None else "—"])
    print(f"llama.cpp on this machine, {args.threads} threads; model: random weights, TinyLlama 1.1B's shape; "
          f"{args.rounds} rounds of llama-bench (3 repetitions each)")
    print("probed read bandwidth, GB/s: " + ", ".join(f"{b:.1f}" for b in probes)
          + f" (the first is the prediction's, best {here.bandwidth_best_gb_s or probes[0]:.1f}; "
          "the others after each round)")
    print(table(["format", "test", "measured tok/s (median)", "range over rounds", "predicted", "band",
                 "error vs median", "note", "band's top on the median read alone"], rows))
    print(json.dumps({"work": str(work)}))


if __name__ == "__main__":
    main()
