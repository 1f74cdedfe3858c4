"""How fast names resolve: a hit, a miss nobody reads, a miss shown with its nearest candidates, and
type-ahead suggestions for 1-, 3- and 8-character prefixes, over hardware and models. Prints a table.

Run: python benchmarks/names.py   (goals: a hit, an unread miss and a suggestion under 1 ms each)

The index of a section is built on first use (`Catalog.index`) and its nearest-candidate and
type-ahead tables on the first `nearest` and `suggest`: those one-off costs have their own rows and
stay out of the per-call timings.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from advisor.data.catalog import load_catalog  # noqa: E402
from advisor.data.errors import UnknownName  # noqa: E402
from advisor.data.names import NameIndex, _tokens  # noqa: E402
from advisor.text.format import table  # noqa: E402

QUERIES = {
    "hardware": {
        "hit": ["NVIDIA GeForce RTX 4090", "rtx4090", "4090 24GB", "A100 80GB PCIe", "M2 Max 38-core", "3090"],
        "miss": ["rtx 4099", "h100 sxm6", "m2 maxx", "radeon 7900 xtxx", "tesla v101", "l40z", "zzzz-9999"],
        "1": ["a", "r", "m", "h", "4", "g"],
        "3": ["rtx", "409", "h10", "m2 ", "a10", "rad"],
        "8": ["rtx 4090", "h100 sxm", "m2 max 3", "a100 80g", "radeon r", "geforce "],
    },
    "models": {
        "hit": ["LLaMA 2 7B", "Meta Llama 3 8B", "meta-llama/Llama-3.1-8B-Instruct", "gpt-oss-20b", "qwen2.5 7b"],
        "miss": ["llama 3.1 80b", "mistral 8b", "qwen 2.5 73b", "gpt-oss 121b", "deepseek v4", "gemma 3 28b"],
        "1": ["l", "q", "g", "m", "d", "p"],
        "3": ["lla", "qwe", "gem", "mis", "dee", "gpt"],
        "8": ["llama 3.", "qwen2.5 ", "gemma 3 ", "mistral ", "deepseek", "gpt-oss-"],
    },
}


def timed(fn, args: list, rounds: int) -> tuple[float, float]:
    """Median and 95th percentile, in ms, of one call, over ``rounds`` passes through ``args``."""
    times = []
    for _ in range(rounds):
        for a in args:
            t0 = time.perf_counter()
            fn(a)
            times.append(time.perf_counter() - t0)
    times.sort()
    return statistics.median(times) * 1e3, times[min(len(times) - 1, int(len(times) * 0.95))] * 1e3


def main(rounds: int = 30) -> None:
    cat = load_catalog(user=None)
    rows = []
    for section, queries in QUERIES.items():
        entries = list(cat.section(section).values())
        builds, nears, sugs = [], [], []
        for _ in range(7):
            _tokens.cache_clear()
            t0 = time.perf_counter()
            idx = NameIndex(section, entries)
            builds.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            idx.nearest("x")
            nears.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            idx.suggest("x")
            sugs.append(time.perf_counter() - t0)
        n = len(entries)
        rows.append([section, f"build the index ({n} entries), once", "—",
                     f"{statistics.median(builds) * 1e3:.3f}", "—"])
        rows.append([section, "first nearest() builds its table, once", "—",
                     f"{statistics.median(nears) * 1e3:.3f}", "—"])
        rows.append([section, "first suggest() builds its table, once", "—",
                     f"{statistics.median(sugs) * 1e3:.3f}", "—"])

        idx = cat.index(section)
        for q in queries["hit"]:
            idx.resolve(q)  # every "hit" must resolve

        def miss(q: str) -> None:
            try:
                idx.resolve(q)
            except UnknownName:
                pass
            else:
                raise AssertionError(f"{q!r} resolved")

        def miss_shown(q: str) -> None:
            try:
                idx.resolve(q)
            except UnknownName as exc:
                str(exc), exc.candidates
            else:
                raise AssertionError(f"{q!r} resolved")

        cases = [("hit", idx.resolve, queries["hit"]),
                 ("unknown name, error not read", miss, queries["miss"]),
                 ("unknown name, message + nearest read", miss_shown, queries["miss"]),
                 ("suggest(), 1-character prefix", idx.suggest, queries["1"]),
                 ("suggest(), 3-character prefix", idx.suggest, queries["3"]),
                 ("suggest(), 8-character prefix", idx.suggest, queries["8"])]
        for what, fn, args in cases:
            med, p95 = timed(fn, args, rounds)
            rows.append([section, what, str(len(args)), f"{med:.3f}", f"{p95:.3f}"])
    print(table(["section", "operation", "queries", "median ms", "p95 ms"], rows,
                right=[False, False, True, True, True]))


if __name__ == "__main__":
    main()
