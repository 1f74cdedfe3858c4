"""`advisor report`: the PDF sizing report (README "Command line").

    advisor report --model M [recommend's options] -o REPORT.pdf [--paper a4|letter]
    advisor report --hardware H --model M [--gpus N --quant Q --runtime R --users U …] -o REPORT.pdf

With ``--hardware`` naming one device (and none of the recommender's search options) the report is
about that one configuration; otherwise the recommender chooses, and the report shows its top
candidates and the closest rejected ones. The content is built in the core
(`advisor.text.report`); the PDF is drawn by Qt (`ui.report`, imported only here, lazily).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import threading
import time

from advisor.cli.options import add_memory, add_threads
from advisor.cli.recommend import _csv_list, _number, requirements_from_args, sized_catalog
from advisor.data.catalog import user_catalog
from advisor.data.errors import AdvisorError
from advisor.cli.exit_codes import EXIT_OK

#: options that only make sense when the recommender searches
SEARCH_OPTIONS = ("hardware_kind", "vendor", "budget_usd", "budget_usd_hour", "max_gpus", "min_quant", "max_ppl",
                  "rps", "burst", "safe", "top", "think_s")


def _one_configuration(args: argparse.Namespace) -> bool:
    names = _csv_list(args.hardware)
    if len(names) != 1:
        return False
    return not any(getattr(args, k) for k in SEARCH_OPTIONS)


@contextlib.contextmanager
def deferred_interrupt():
    """Ctrl+C while Qt loads or draws the report: an exception raised inside Qt's C++ (a paint or export
    callback) can crash the process or be swallowed, which left PDFs written after an interrupt and
    an occasional segfault. Inside this block SIGINT only sets a flag; the writer's progress calls
    ``check()`` between its steps, which raises `KeyboardInterrupt` there, in plain Python, before
    the file is renamed into place: the temporary file is removed and the CLI exits 130."""
    if threading.current_thread() is not threading.main_thread():
        yield lambda: None
        return
    hits = []
    previous = signal.signal(signal.SIGINT, lambda *_: hits.append(1))

    def check() -> None:
        if hits:
            raise KeyboardInterrupt

    try:
        yield check   # a stop after the rename is too late to undo: the report is written, exit 0
    finally:
        signal.signal(signal.SIGINT, previous)


def cmd_report(args: argparse.Namespace) -> int:
    t0 = time.perf_counter()
    if not args.out or not str(args.out).strip():
        raise AdvisorError("report needs an output file: -o REPORT.pdf")
    out = os.path.expanduser(str(args.out))
    folder = os.path.dirname(os.path.abspath(out))
    if os.path.isdir(out):
        raise AdvisorError(f"{out} is a folder; give a file name such as {os.path.join(out, 'report.pdf')}")
    if not os.path.isdir(folder):
        raise AdvisorError(f"cannot write the report to {out}: folder {folder} does not exist")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise AdvisorError(f"cannot write the report to {out}: folder {folder} is not writable")
    cat = user_catalog()
    if not _one_configuration(args):
        if args.threads:
            raise AdvisorError("--threads sizes one CPU configuration: give one --hardware and no search options")
        cat = sized_catalog(cat, args)
    if _one_configuration(args):
        from advisor.model.config import configure
        from advisor.text.report import report_from_config

        if args.users and args.batch:
            raise AdvisorError("give --users or --batch, not both")
        cfg = configure(cat, hardware=args.hardware, model=args.model, quant=args.quant, kv_dtype=args.kv_dtype,
                        runtime=args.runtime, gpus=args.gpus, batch=args.users or args.batch,
                        prompt=args.prompt, output=args.output, depth=args.depth, parallelism=args.parallel,
                        memory_gb=args.memory_gb, threads=args.threads)
        content = report_from_config(cat, cfg, ttft_ms=_number("ttft-ms", args.ttft_ms),
                                     tok_s=_number("tok-s", args.tok_s))
    else:
        from advisor.text.report import report_from_requirements

        for flag, v in (("--quant", args.quant), ("--gpus", args.gpus), ("--batch", args.batch),
                        ("--depth", args.depth), ("--parallel", args.parallel)):
            if v:
                raise AdvisorError(f"{flag} describes one configuration: give --hardware with one device name "
                                   "(and no search options such as --hardware-kind)")
        req = requirements_from_args(cat, args)
        content = report_from_requirements(cat, req, top=args.top or 5)
    if args.measured:
        content = _with_measured(cat, content, args.measured)
    # the report is drawn, never shown: no display needed (a stale DISPLAY would make Qt abort)
    os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")
    with deferred_interrupt() as check:
        # importing Qt runs shiboken's bootstrap, which aborts the process on a KeyboardInterrupt
        # raised inside it: the import is covered too
        from ui.report import write_report

        check()
        path = write_report(content, out, paper=args.paper, progress=lambda _msg: check())
    print(f"wrote {path} in {time.perf_counter() - t0:.1f} s")
    print(content.answer)
    return EXIT_OK


def _with_measured(cat, content, paths):
    """The content with the user's results beside their predictions. A row whose file does not say its
    hardware, model or format is taken as measured on the report's configuration (and says so)."""
    import dataclasses

    from advisor.fit.bench_results import read_results
    from advisor.fit.compare import compare, load_text, metric_text
    from advisor.text.report import measured_section

    cfg = content.config
    rows, files = [], []
    for path in paths:
        _tool, records = read_results(path)
        files.append(os.path.basename(path))
        rows += [dataclasses.replace(r, hardware=r.hardware or cfg.hardware.key, model=r.model or cfg.model.key,
                                     quant=r.quant or (cfg.quant.key if not r.model else None),
                                     runtime=r.runtime or cfg.runtime.key) for r in records]
    comparisons = compare(cat, rows)
    section = measured_section(comparisons, files + [f"rows without hardware: {cfg.hardware.name}"], metric_text,
                               load_text)
    return dataclasses.replace(content, **section)


def register(sub) -> None:
    p = sub.add_parser("report", help="a PDF sizing report: the recommendation (or one configuration), charts, "
                                      "method and sources")
    p.add_argument("-o", "--out", required=True, metavar="REPORT.pdf", help="the PDF file to write")
    p.add_argument("--measured", nargs="+", metavar="FILE",
                   help="your benchmark results (the files compare-measured reads): a page of them beside the "
                        "predictions; rows that do not name their hardware are taken as the report's")
    p.add_argument("--paper", type=str.lower, choices=("a4", "letter"),
                   help="paper size (default: your locale's, Letter in the US and Canada, else A4)")
    p.add_argument("--model", required=True, help="model name")
    p.add_argument("--hardware", help="one device: a report on that configuration; a comma list: choose among them")
    add_memory(p)
    add_threads(p)
    p.add_argument("--quant", help="one configuration: weight format (default by runtime)")
    p.add_argument("--kv-dtype", dest="kv_dtype", help="KV-cache dtype (one configuration: one; otherwise a comma "
                                                       "list allowed, default f16,fp8,q8_0)")
    p.add_argument("--runtime", help="runtime (one configuration: one; otherwise a comma list allowed)")
    p.add_argument("--gpus", help="one configuration: number of GPUs (default 1)")
    p.add_argument("--parallel", help="one configuration: tp or pp (default: the runtime's)")
    p.add_argument("--batch", help="one configuration: sequences decoding together (default 1)")
    p.add_argument("--depth", help="one configuration: tokens already cached before the prompt (default 0)")
    p.add_argument("--prompt", help="typical prompt tokens (default 1024)")
    p.add_argument("--output", help="typical output tokens (default 256)")
    p.add_argument("--context", help="longest context every user must reach (default prompt + output)")
    p.add_argument("--users", help="concurrent users (clients of a server); one configuration: the batch")
    p.add_argument("--rps", help="or Poisson arrivals, requests per second")
    p.add_argument("--think-s", dest="think_s", help="with --users: seconds a user waits before the next request")
    p.add_argument("--burst", action="store_true", help="judge all users' prompts arriving at once")
    p.add_argument("--ttft-ms", dest="ttft_ms", help="time-to-first-token target, ms")
    p.add_argument("--tok-s", dest="tok_s", help="per-user decode speed target, tokens/s")
    p.add_argument("--hardware-kind", dest="hardware_kind",
                   help="comma list of datacenter, workstation, consumer, laptop, apple, soc")
    p.add_argument("--vendor", help="comma list of NVIDIA, AMD, Intel, Apple, CPU, Google, AWS …")
    p.add_argument("--max-gpus", dest="max_gpus",
                   help="GPUs in all at most, replicas included (default: as many as the load needs)")
    p.add_argument("--budget-usd", dest="budget_usd", help="purchase budget, USD")
    p.add_argument("--budget-usd-hour", dest="budget_usd_hour", help="cloud budget, USD per hour")
    p.add_argument("--min-quant", dest="min_quant", help="worst acceptable weight format (e.g. q4_k_m)")
    p.add_argument("--max-ppl", dest="max_ppl", help="largest acceptable perplexity increase")
    p.add_argument("--safe", action="store_true", help="judge by the pessimistic edge of each band")
    p.add_argument("--top", type=int, help="candidates in the recommendation table (default 5)")
    p.set_defaults(func=cmd_report)
