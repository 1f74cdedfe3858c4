"""The `advisor` command line (README.md, "Command line"). A public contract: keep flags and JSON stable.

Exit status: 0 success; 1 the request cannot be met (does not fit, no configuration meets the
targets, some CSV rows failed); 2 bad input or usage; 3 `--probe` found no accelerator (the CPU
figures are still printed); 70 an internal error. Errors are one line on stderr, no traceback
(set ADVISOR_DEBUG=1 to see one).
"""

from __future__ import annotations

import argparse

import os
import signal
import sys
from dataclasses import asdict
from typing import Any, Sequence

from advisor import __version__
from advisor.data.catalog import Catalog, user_catalog
from advisor.model.devices import usable_memory_gb
from advisor.data.errors import AdvisorError
from advisor.model.config import configure
from advisor.model.predict import predict
from advisor.model.techniques import techniques_from, what_if
from advisor.model.geometry import kv_bytes_per_token
from advisor.cli.csvio import csv_value, run_cases
from advisor.cli.options import add_configuration
from advisor.text.format import json_text, table
from advisor.text.summary import prediction_summary
from advisor.cli.exit_codes import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_OK, EXIT_UNMET, EXIT_USAGE, does_not_fit


LIST_SECTIONS = {"hardware": "hardware", "models": "models", "quants": "quants", "quantizations": "quants",
                 "runtimes": "runtimes", "kv-dtypes": "kv_dtypes", "kv_dtypes": "kv_dtypes", "profiles": "profiles",
                 "systems": "systems"}


class UsageError(AdvisorError):
    pass


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors in one line instead of printing the usage block."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise UsageError(f"{message} (see '{self.prog} --help')")


def _catalog() -> Catalog:
    return user_catalog()


# ---- list ----------------------------------------------------------------------------------------

def _matches(entry: Any, text: str | None) -> bool:
    if not text:
        return True
    hay = " ".join(str(x) for x in (entry.key, getattr(entry, "name", ""), getattr(entry, "vendor", ""),
                                    getattr(entry, "kind", ""), getattr(entry, "family", ""),
                                    *getattr(entry, "aliases", ()))).lower()
    return all(word in hay for word in text.lower().split())


def _entry_json(section: str, e: Any) -> dict[str, Any]:
    d = asdict(e)
    d.pop("origin", None)
    if section == "hardware":
        d["usable_memory_gb"] = round(usable_memory_gb(e), 3)
    if section == "models":
        d["kv_bytes_per_token_f16"] = kv_bytes_per_token(e, 16)
    if section == "quants":
        d["compute_dtype"] = dict(e.compute_dtype)
    return d


def cmd_list(args: argparse.Namespace) -> int:
    cat = _catalog()
    section = LIST_SECTIONS[args.what]
    entries = [e for e in cat.section(section).values() if _matches(e, args.filter)]
    if args.json:
        print(json_text([_entry_json(section, e) for e in entries]))
        return EXIT_OK
    if not entries:
        print(f"no {args.what} match {args.filter!r}")
        return EXIT_OK
    if section == "hardware":
        from advisor.plan import pricing

        def money(f, unit=""):
            return f"${f.usd:,.2f}{unit} ({f.count_text})" if f and f.sampled else (f"${f.usd:,.0f} (list)" if f else None)

        rows = [[e.key, e.vendor, e.name, e.kind, e.memory_gib, round(usable_memory_gb(e), 1), e.bandwidth_gb_s,
                 e.fp16_dense_tflops or e.fp32_tflops, e.fp8_dense_tflops, str(e.year or "—"),
                 money(pricing.device_buy(cat, e)[0]), money(pricing.rent(cat, e))]
                for e in sorted(entries, key=lambda e: (e.vendor, e.kind, e.name))]
        print(table(["key", "vendor", "name", "kind", "mem GiB", "usable GB", "BW GB/s", "FP16 TFLOPS",
                     "FP8 TFLOPS", "year", "buy $ (each)", "rent $/GPU-h"], rows))
        print("FP16 = dense matrix rate (GeForce: FP32 accumulate, half its FP16-accumulate rate, which llama.cpp's "
              "FP16 products reach; Apple and cards without matrix units: vector FP32)")
    elif section == "models":
        rows = []
        for e in sorted(entries, key=lambda e: (e.family, e.params_total_b)):
            rows.append([e.key, e.name, e.params_total_b, e.params_active_b, e.layers, e.attention.upper(),
                         e.kv_heads, e.native_context, kv_bytes_per_token(e, 16) / 1024,
                         "MoE" if e.is_moe else ("hybrid" if e.linear_layers else "dense")])
        print(table(["key", "name", "params B", "active B", "layers", "attention", "KV heads", "context",
                     "KV KiB/token (f16)", "kind"], rows))
    elif section == "quants":
        rows = [[e.key, e.name, e.kind, e.bits_per_weight, e.head_bits_per_weight, e.ppl_delta, e.quality_rank,
                 ", ".join(e.runtimes)] for e in sorted(entries, key=lambda e: -e.quality_rank)]
        print(table(["key", "name", "kind", "bits/weight", "head bits", "+ppl (L3-8B)", "quality rank", "runtimes"], rows))
    elif section == "kv_dtypes":
        rows = [[e.key, e.name, e.bits, ", ".join(e.runtimes)] for e in entries]
        print(table(["key", "name", "bits", "runtimes"], rows))
    elif section == "systems":
        # (a system naming unknown hardware is dropped while loading)
        rows = [[e.key, e.name, f"{e.gpus} × {cat.hardware[e.hardware].name}", e.power_kw, e.network or "—",
                 str(e.year or "—")] for e in entries]
        print(table(["key", "name", "GPUs", "max power kW", "network", "year"], rows))
    elif section == "runtimes":
        rows = [[e.key, e.name, ", ".join(e.vendors), e.parallelism, e.memory_fraction, e.reserve_gb,
                 e.decode_bw_fraction, e.prefill_compute_fraction] for e in entries]
        print(table(["key", "name", "vendors", "multi-GPU", "memory fraction", "reserve GB",
                     "decode BW frac (default)", "prefill frac (default)"], rows))
    else:
        rows = [[e.key, e.runtime, e.hardware or (f"{e.family} {e.tier}".strip() if e.family else "") or e.vendor or "(any)",
                 e.decode_bw_fraction,
                 e.layer_overhead_us, e.prefill_compute_fraction, f"{e.decode_low:.2f}–{e.decode_high:.2f}",
                 f"{e.prefill_low:.2f}–{e.prefill_high:.2f}", e.decode_rows, e.prefill_rows] for e in entries]
        print(table(["key", "runtime", "applies to", "decode BW frac", "µs/layer", "prefill frac", "decode band",
                     "prefill band", "decode rows", "prefill rows"], rows))
    if cat.issues and not args.json:
        print(f"\n{len(cat.issues)} catalog problem(s) were skipped while loading (run 'advisor check-catalog'):",
              file=sys.stderr)
        for issue in cat.issues[:5]:
            print(f"  {issue}", file=sys.stderr)
    return EXIT_OK


def cmd_check_catalog(args: argparse.Namespace) -> int:
    cat = _catalog()
    counts = ", ".join(f"{len(cat.section(s))} {s}" for s in ("hardware", "models", "quants", "kv_dtypes", "runtimes",
                                                               "profiles", "systems"))
    print(f"loaded {counts}")
    for section, keys in cat.overridden.items():
        print(f"user overlay replaced {len(keys)} {section}: {', '.join(keys)}")
    for issue in cat.issues:
        print(f"problem: {issue}")
    priced_bad = _check_prices(cat, args) if getattr(args, "prices", False) else False
    return EXIT_UNMET if cat.issues or priced_bad else EXIT_OK


def _check_prices(cat: Catalog, args: argparse.Namespace) -> bool:
    """`check-catalog --prices`: each device's buy and rent figure, its basis, quotes and age; True
    when a figure could not be formed (quotes of several bases)."""
    from advisor.plan.pricing import MIN_QUOTES, check_prices

    checks = check_prices(cat)

    def fig(f, unit, age):
        if f is None:
            return "—"
        n = "your quote" if f.own else f"{f.quotes} quote{'s' if f.quotes != 1 else ''}"
        return f"${f.usd:,.2f}{unit} · {f.basis} · {n} · {f.newest}" + ("" if age is None else f" ({age} d old)")

    if getattr(args, "json", False):
        print(json_text([{"hardware": c.hardware, "buy_age_days": c.buy_age_days, "rent_age_days": c.rent_age_days,
                          "flags": list(c.flags), "problem": c.problem,
                          **{f"{k}_{field}": (getattr(f, field) if f is not None else None)
                             for k, f in (("buy", c.buy), ("rent", c.rent))
                             for field in ("usd", "basis", "quotes", "oldest", "newest")}} for c in checks]))
    else:
        print(f"\nPrices: the figure each device is ranked by (a median over ≥ {MIN_QUOTES} current quotes of one "
              "basis, else the few quotes there are, marked thin)")
        print(table(["hardware", "buy", "rent", "flags"],
                    [[c.hardware, fig(c.buy, "", c.buy_age_days), fig(c.rent, "/h", c.rent_age_days),
                      c.problem or ", ".join(c.flags)] for c in checks]))
        priced = [c for c in checks if "unpriced" not in c.flags]
        well = [c for c in priced if not any(f.startswith("thin") for f in c.flags)]
        print(f"{len(priced)} of {len(checks)} devices priced; {len(well)} on ≥ {MIN_QUOTES} quotes of one basis "
              f"for each figure they have; {sum(any(f.startswith('old') for f in c.flags) for c in checks)} have a "
              "figure whose newest quote is over a year old")
    for c in checks:
        if c.problem:
            print(f"problem: {c.problem}", file=sys.stderr)
    return any(c.problem for c in checks)


# ---- predict -------------------------------------------------------------------------------------

PREDICT_CSV_OUTPUTS = ["ttft_ms", "prefill_tok_s", "decode_tok_s", "throughput_tok_s", "decode_low_tok_s",
                       "decode_high_tok_s", "prefill_low_tok_s", "prefill_high_tok_s", "decode_ceiling_tok_s",
                       "prefill_ceiling_tok_s", "weights_gb", "kv_gb", "total_gb", "usable_gb", "fits", "max_batch",
                       "max_context", "bound", "error"]
PREDICT_CSV_INPUTS = ["hardware", "model", "quant", "runtime", "gpus", "batch", "prompt", "output", "depth"]
#: optional --cases columns asking for a technique's what-if (advisor.model.techniques), and the
#: columns of its answer (added to the output only when the input has a technique column)
TECHNIQUE_CSV_INPUTS = ["draft", "draft_k", "accept", "flash_attention", "attention", "gpu_layers", "offload_gb"]
TECHNIQUE_CSV_OUTPUTS = ["technique", "after_ttft_ms", "after_decode_tok_s", "after_throughput_tok_s",
                         "after_max_batch", "after_memory_gb", "after_fits", "decode_speedup", "crossover_batch"]


def _predict_one(cat: Catalog, **names: Any):
    return predict(cat, configure(cat, **names))


def _print_prediction(p) -> None:
    print("\n".join(prediction_summary(p)))


def _print_effects(effects) -> None:
    rows = []
    for e in effects:
        b, a = e.before, e.after
        rows.append([e.label, f"{b.ttft_ms:.4g} → {a.ttft_ms:.4g}", f"{b.decode_tok_s:.4g} → {a.decode_tok_s:.4g}",
                     f"{e.speedup:.2f}×", f"{b.max_batch} → {a.max_batch}", f"{b.memory_gb:.3g} → {a.memory_gb:.3g}",
                     f"{'yes' if b.fits else 'no'} → {'yes' if a.fits else 'no'}"])
    print("\nWhat-ifs (each technique alone against the plain configuration):")
    print(table(["technique", "TTFT ms", "decode tok/s", "speed-up", "max batch", "GB per GPU", "fits"], rows))
    for e in effects:
        if e.technique == "speculative":
            d = e.details
            print(f"  speculative: E = (1 − α^(k+1)) / (1 − α) = {d['expected_tokens']:.3f} tokens per round of "
                  f"{d['round_ms']:.3g} ms (k × {d['draft_step_ms']:.3g} ms draft + {d['verify_step_ms']:.3g} ms "
                  f"verification) vs {d['plain_step_ms']:.3g} ms per plain step")
        for n in e.notes:
            print(f"  {e.technique}: {n}")


def _techniques(cat: Catalog, args: argparse.Namespace):
    return techniques_from(cat, draft=args.draft, head_params_b=args.draft_head, head_layers=args.draft_head_layers,
                           draft_k=args.draft_k, accept=args.accept,
                           flash_attention=False if args.no_flash_attention else None, attention=args.attention,
                           gpu_layers=args.gpu_layers, offload_gb=args.offload_gb,
                           host_bandwidth_gb_s=args.host_bandwidth)


#: predict's flags that --cases would ignore (its file names every configuration)
PREDICT_CASES_IGNORE = ("hardware", "model", "quant", "kv_dtype", "runtime", "gpus", "parallel", "memory_gb", "threads", "batch",
                        "prompt", "output", "depth", "json", "draft", "draft_head", "draft_head_layers", "draft_k",
                        "accept", "no_flash_attention", "attention", "gpu_layers", "offload_gb", "host_bandwidth")


def cmd_predict(args: argparse.Namespace) -> int:
    cat = _catalog()
    if args.cases:
        from advisor.cli.csvio import refuse_flags_with_cases

        refuse_flags_with_cases(args, PREDICT_CASES_IGNORE)
        return _predict_cases(cat, args)
    if args.out:
        raise UsageError("--out writes the table of --cases: give --cases FILE.csv, or drop --out")
    if not args.hardware or not args.model:
        raise UsageError("predict needs --hardware and --model (or --cases FILE.csv)")
    cfg = configure(cat, hardware=args.hardware, model=args.model, quant=args.quant, kv_dtype=args.kv_dtype,
                    runtime=args.runtime, gpus=args.gpus, batch=args.batch, prompt=args.prompt, output=args.output,
                    depth=args.depth, parallelism=args.parallel, memory_gb=args.memory_gb, threads=args.threads,
                    layout=args.layout, network=args.network)
    tech = _techniques(cat, args)
    p = predict(cat, cfg)
    effects = what_if(cat, cfg, tech) if tech.any else []
    if args.json:
        d = p.to_dict()
        if effects:
            d["techniques"] = [e.to_dict() for e in effects]
        print(json_text(d))
    else:
        _print_prediction(p)
        if effects:
            _print_effects(effects)
    if not p.fits:
        if effects and all(e.after.fits for e in effects):
            # the what-if is the answer (say, partial offload of a model too large for the card)
            print("advisor: the plain configuration does not fit; with the technique it does", file=sys.stderr)
            return EXIT_OK
        return does_not_fit(p.notes[0] if p.notes else "")
    return EXIT_OK


def _predict_cases(cat: Catalog, args: argparse.Namespace) -> int:
    def outputs(columns: set[str]) -> list[str]:
        if not columns & set(TECHNIQUE_CSV_INPUTS):
            return list(PREDICT_CSV_OUTPUTS)
        return list(PREDICT_CSV_OUTPUTS[:-1]) + [c for c in TECHNIQUE_CSV_OUTPUTS if c not in columns] + ["error"]

    def fill(cells: dict[str, str], result: dict) -> str:
        cfg = configure(cat, hardware=cells.get("hardware"), model=cells.get("model"),
                        quant=cells.get("quant") or None, kv_dtype=cells.get("kv_dtype") or None,
                        runtime=cells.get("runtime") or None, gpus=cells.get("gpus"), batch=cells.get("batch"),
                        prompt=cells.get("prompt"), output=cells.get("output"), depth=cells.get("depth"),
                        memory_gb=cells.get("memory_gb") or None, threads=cells.get("threads") or None)
        p = predict(cat, cfg)
        d = p.to_dict()
        for c in PREDICT_CSV_OUTPUTS[:-1]:
            result[c] = csv_value(d[c])
        if set(cells) & set(TECHNIQUE_CSV_INPUTS):
            _technique_cells(cat, cfg, cells, result)
        # a configuration that does not fit is a result (fits=false), not a failed row
        return "" if p.fits else (p.notes[0] if p.notes else "does not fit")

    failed = run_cases(args.cases, args.out, PREDICT_CSV_INPUTS, outputs, fill)
    return EXIT_UNMET if failed else EXIT_OK


def _technique_cells(cat: Catalog, cfg, cells: dict, result: dict) -> None:
    """The what-if a --cases row asks for (one technique per row) into its output cells."""
    tech = techniques_from(cat, draft=cells.get("draft"), draft_k=cells.get("draft_k"), accept=cells.get("accept"),
                           flash_attention=cells.get("flash_attention"), attention=cells.get("attention"),
                           gpu_layers=cells.get("gpu_layers"), offload_gb=cells.get("offload_gb"))
    if not tech.any:
        return
    effects = what_if(cat, cfg, tech)
    if len(effects) != 1:
        raise AdvisorError("one technique per row: " + ", ".join(e.technique for e in effects))
    e = effects[0]
    a = e.after
    for c, v in (("technique", e.technique), ("after_ttft_ms", a.ttft_ms), ("after_decode_tok_s", a.decode_tok_s),
                 ("after_throughput_tok_s", a.throughput_tok_s), ("after_max_batch", a.max_batch),
                 ("after_memory_gb", a.memory_gb), ("after_fits", a.fits), ("decode_speedup", e.speedup),
                 ("crossover_batch", e.details.get("crossover_batch") or "")):
        result[c] = csv_value(v)


# ---- the GUI entry -------------------------------------------------------------------------------

def gui_main(argv: Sequence[str] | None = None) -> int:
    """`advisor-gui`: the desktop app. Imports Qt only here, so the core never does."""
    try:
        from ui.app import main as app_main  # noqa: PLC0415 - lazy on purpose
    except ImportError as exc:
        print(f"advisor: the desktop app is not available in this build ({exc}); use the command line: "
              "advisor --help", file=sys.stderr)
        return EXIT_USAGE
    return app_main(list(argv) if argv is not None else sys.argv[1:])


# ---- parser and main -------------------------------------------------------------------------------

def _add_workload(p: argparse.ArgumentParser) -> None:
    p.add_argument("--batch", help="sequences that start together and decode as one static batch (default 1); "
                                   "for users of a server under load see 'advisor serve'")
    p.add_argument("--prompt", help="prompt tokens per sequence (default 512)")
    p.add_argument("--output", help="output tokens per sequence (default 128)")
    p.add_argument("--depth", help="tokens already in the KV cache before the prompt (default 0)")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="advisor", description="What hardware, at which quantization, runs this LLM how fast.",
                     epilog="Without arguments, advisor opens the desktop app where the build includes it.")
    parser.add_argument("--version", action="version", version=f"advisor {__version__}")
    parser.add_argument("--probe", action="store_true", help="measure this machine")
    parser.add_argument("--quick", action="store_true", help="with --probe: skip the micro-benchmarks")
    parser.add_argument("--save", action="store_true", help="with --probe: store the result as 'this machine'")
    parser.add_argument("--json", action="store_true", help="with --probe: print JSON")
    sub = parser.add_subparsers(dest="command", parser_class=_Parser)

    p = sub.add_parser("list", help="list catalog entries")
    p.add_argument("what", choices=sorted(LIST_SECTIONS), help="which catalog section")
    p.add_argument("--filter", help="only entries whose names contain all these words")
    p.add_argument("--json", action="store_true", help="every field as JSON")
    p.set_defaults(func=cmd_list)

    p = sub.add_parser("check-catalog", help="load the catalog and the user overlay and report every problem")
    p.add_argument("--prices", action="store_true",
                   help="also list each device's buy and rent figure: its basis, quote count and age")
    p.add_argument("--json", action="store_true", help="with --prices: the price rows as JSON")
    p.set_defaults(func=cmd_check_catalog)

    p = sub.add_parser("predict", help="predict TTFT, decode speed and memory for one configuration and a static batch")
    add_configuration(p)
    _add_workload(p)
    t = p.add_argument_group("techniques (what-ifs: each alone, before → after)")
    t.add_argument("--draft", help="speculative decoding with this draft model (same tokenizer family as the model)")
    t.add_argument("--draft-head", dest="draft_head",
                   help="speculative decoding with an MTP/EAGLE-style head of this many billion parameters")
    t.add_argument("--draft-head-layers", dest="draft_head_layers", help="the head's depth in layers (default 1)")
    t.add_argument("--draft-k", dest="draft_k", help="drafted tokens per round (default 4 for a draft, 3 for a head)")
    t.add_argument("--accept", help="per-token acceptance rate α (default 0.7 for a draft, 0.8 for a head)")
    t.add_argument("--no-flash-attention", dest="no_flash_attention", action="store_true",
                   help="eager attention: the score matrix is materialised (llama.cpp -fa off)")
    t.add_argument("--attention", help="the same model with another attention layout: mha, gqa:G or mqa")
    t.add_argument("--gpu-layers", dest="gpu_layers", help="llama.cpp -ngl N: layers on the GPU, the rest on the CPU")
    t.add_argument("--offload-gb", dest="offload_gb", help="vLLM/SGLang --cpu-offload-gb X: GB of weights in host memory")
    t.add_argument("--host-bandwidth", dest="host_bandwidth",
                   help="host RAM bandwidth for --gpu-layers, GB/s peak (default 89.6: dual-channel DDR5-5600)")
    p.add_argument("--json", action="store_true", help="print JSON (fields documented in the README)")
    p.add_argument("--cases", help="CSV of configurations to predict (columns: " + ",".join(PREDICT_CSV_INPUTS)
                   + "; optional technique columns: " + ",".join(TECHNIQUE_CSV_INPUTS) + ")")
    p.add_argument("--out", help="with --cases: write the CSV here (default: standard output)")
    p.set_defaults(func=cmd_predict)

    for register in _extra_commands():
        register(sub)
    return parser


def _extra_commands():
    """Subcommands that live in their own modules, each with a ``register(subparsers)``."""
    from advisor.cli import fidelity as cli_fidelity, recommend as cli_recommend, serve as cli_serve
    from advisor.cli import report as cli_report

    from advisor.cli import compare as cli_compare, import_model as cli_import_model, measure as cli_measure

    return [cli_recommend.register, cli_serve.register, cli_fidelity.register, cli_report.register,
            cli_import_model.register, cli_compare.register, cli_measure.register]


def _refuse_blank_values(parser: argparse.ArgumentParser, args: argparse.Namespace) -> None:
    """A flag given an empty or blank value (``--batch ""``, ``--gpus " "``) is an error that names it,
    not the flag's default in disguise."""
    command = getattr(args, "command", None)
    sub = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
    actions = list(parser._actions) + (list(sub.choices[command]._actions) if sub and command in sub.choices else [])
    for action in actions:
        value = getattr(args, action.dest, None) if action.option_strings else None
        if isinstance(value, str) and not value.strip() and value != action.default:
            raise UsageError(f"{action.option_strings[-1]} is empty; give a value or leave the flag out")


class _FinishWhatStarted:
    """stdout that, on its first write, makes Ctrl+C wait until the command returns: every command
    computes first and prints its answer last (progress goes to stderr), so an interrupt after the
    answer began would leave half of it with exit 130. From the first write the output is completed
    and the command's own status stands; before it, an interrupt ends the work with no output."""

    def __init__(self, stream):
        self._stream, self.started = stream, False

    def write(self, text: str) -> int:
        if not self.started:
            self.started = True
            try:
                signal.signal(signal.SIGINT, signal.SIG_IGN)
            except ValueError:   # not the main thread: nothing to hold off
                pass
        return self._stream.write(text)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def main(argv: Sequence[str] | None = None, restore_sigint: bool = True) -> int:
    """The `advisor` command. ``restore_sigint``: put Ctrl+C back as it was once the command has
    written its output (a caller in the same process); the CLI's own process ends instead
    (`advisor.cli.entry`), and restoring it would only reopen a moment for an interrupt."""
    argv = list(sys.argv[1:] if argv is None else argv)
    if not argv:
        return _main(argv)   # the desktop app: its own event loop and Ctrl+C
    out, handler = sys.stdout, signal.getsignal(signal.SIGINT)
    sys.stdout = _FinishWhatStarted(out)
    try:
        return _main(argv)
    finally:
        if sys.stdout.started and restore_sigint:
            try:
                signal.signal(signal.SIGINT, handler)
            except (ValueError, TypeError):
                pass
        sys.stdout = out


def _main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    debug = bool(os.environ.get("ADVISOR_DEBUG"))
    try:
        if not argv:
            return gui_main([])
        parser = build_parser()
        args = parser.parse_args(argv)
        _refuse_blank_values(parser, args)
        if args.probe:
            if getattr(args, "command", None):
                raise UsageError("--probe takes no subcommand")
            from advisor.cli.probe import cmd_probe
            return cmd_probe(args)
        if args.quick or args.save:
            raise UsageError("--quick and --save go with --probe")
        if not getattr(args, "func", None):
            parser.print_help()
            return EXIT_USAGE
        return args.func(args)
    except UsageError as exc:
        print(f"advisor: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except AdvisorError as exc:
        if debug:
            raise
        print(f"advisor: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except KeyboardInterrupt:
        print("advisor: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        return EXIT_OK
    except Exception as exc:  # noqa: BLE001 - the CLI promises no tracebacks
        if debug:
            raise
        print(f"advisor: internal error: {type(exc).__name__}: {exc} (set ADVISOR_DEBUG=1 for details)",
              file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
