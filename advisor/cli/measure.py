"""`advisor measure --url URL`: a short, bounded benchmark of a live OpenAI-compatible server.

TTFT, ITL and TPOT (mean, p50, p90, p99, ms) and output throughput per concurrency, with the
number of requests that completed and failed. ``--out FILE`` keeps the result in a file that
`compare-measured` reads (and a later `calibrate --mine`). Ctrl+C stops it and keeps what was
measured.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading

from advisor.data.errors import AdvisorError
from advisor.data.userdata import write_atomic
from advisor.model.config import whole_number
from advisor.text.format import json_text, num, table
from advisor.cli.exit_codes import EXIT_OK


def _levels(text) -> list[int]:
    if text is None:
        return [1, 4]
    out = []
    for part in str(text).split(","):
        out.append(whole_number("concurrency", part, 0))
    return out


def _seconds(name: str, text, default: float) -> float:
    if text is None:
        return default
    try:
        v = float(str(text).strip())
    except ValueError:
        raise AdvisorError(f"--{name} must be a number of seconds, got {text!r}") from None
    if not 0 < v < float("inf"):
        raise AdvisorError(f"--{name} must be a positive number of seconds, got {text!r}")
    return v


def _ms(dist) -> str:
    if not dist:
        return "—"
    return f"{num(dist['mean'])} / {num(dist['p50'])} / {num(dist['p90'])} / {num(dist['p99'])}"


def cmd_measure(args: argparse.Namespace) -> int:
    from advisor.fit.endpoint import DEFINITIONS, measure

    stopping = []
    tty = sys.stderr.isatty()

    def progress(done: int, total: int, what: str) -> None:
        if tty:
            sys.stderr.write(f"\r{done}/{total} requests · {what}   ")
            sys.stderr.flush()

    # Ctrl+C stops sending (the requests in flight finish within their timeout) and keeps what was
    # measured; a second one interrupts at once
    previous = signal.getsignal(signal.SIGINT)

    def stop(*_):
        if stopping:
            signal.signal(signal.SIGINT, previous)
            raise KeyboardInterrupt
        stopping.append(1)
        sys.stderr.write("\nstopping: finishing the requests in flight (Ctrl+C again to quit now)\n")

    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGINT, stop)
    try:
        result = measure(args.url, model=args.model, concurrencies=_levels(args.concurrency),
                         requests=whole_number("requests", args.requests, 8),
                         prompt_tokens=whole_number("prompt", args.prompt, 256),
                         output_tokens=whole_number("output", args.output, 64),
                         timeout_s=_seconds("timeout-s", args.timeout_s, 60.0),
                         budget_s=_seconds("budget-s", args.budget_s, 300.0),
                         progress=progress, cancel=lambda: bool(stopping))
    finally:
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGINT, previous)
        if tty:
            sys.stderr.write("\r" + " " * 70 + "\r")
    d = result.to_dict()
    if args.out:
        write_atomic(args.out, json_text(d) + "\n")
    if args.json:
        print(json_text(d))
        return EXIT_OK
    counted = next((lv["mean_prompt_tokens"] for lv in d["levels"] if lv["mean_prompt_tokens"]), None)
    prompt = (f"prompt {num(counted)} tokens (the server's count; {result.prompt_tokens:,} asked)" if counted
              else f"prompt ≈ {result.prompt_tokens:,} tokens")
    print(f"{result.url} · model {result.model} · {prompt}, {result.output_tokens:,} out")
    srv = result.server
    if srv:
        model_type = f" ({srv['model_type']})" if srv.get("model_type") else ""
        model_file = os.path.basename(srv.get("model_path") or "") or "model file not stated"
        build = f" · build {srv['build']}" if srv.get("build") else ""
        print(f"server: {srv['kind']}, {srv['slots']} slots · {model_file}{model_type}{build}")
    rows = []
    for lv in d["levels"]:
        rows.append([lv["concurrency"], f"{lv['completed']}/{lv['completed'] + lv['failed']}", _ms(lv["ttft_ms"]),
                     _ms(lv["itl_ms"]), _ms(lv["tpot_ms"]), num(lv["output_throughput_tok_s"]),
                     lv["stopped_early"] or "; ".join(lv["errors"]) or ""])
    print(table(["clients", "completed", "TTFT ms mean/p50/p90/p99", "ITL ms", "TPOT ms", "output tok/s", "note"],
                rows, right=[True, True, True, True, True, True, False]))
    print(DEFINITIONS)
    if args.out:
        print(f"saved to {args.out} (compare it: advisor compare-measured {args.out} --hardware …)")
    return EXIT_OK


def register(sub) -> None:
    p = sub.add_parser("measure", help="a short, bounded benchmark of a live OpenAI-compatible server (TTFT, ITL, "
                                       "throughput per concurrency)")
    p.add_argument("--url", required=True, help="the server, e.g. http://127.0.0.1:8080/v1")
    p.add_argument("--model", help="the model name the server serves (default: the first it lists)")
    p.add_argument("--concurrency", help="comma list of concurrent clients (default 1,4)")
    p.add_argument("--requests", help="requests per concurrency (default 8)")
    p.add_argument("--prompt", help="prompt tokens, about (default 256; the server's count is reported)")
    p.add_argument("--output", help="output tokens per request (default 64)")
    p.add_argument("--timeout-s", dest="timeout_s", help="per-request timeout, s (default 60)")
    p.add_argument("--budget-s", dest="budget_s", help="the whole run's time budget, s (default 300)")
    p.add_argument("--out", help="also write the result here (JSON that compare-measured reads)")
    p.add_argument("--json", action="store_true", help="print JSON")
    p.set_defaults(func=cmd_measure)
