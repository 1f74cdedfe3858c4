"""Measured beside predicted: each `BenchRecord` of a user's benchmark file against the prediction for
the configuration it was measured on, with the prediction's band and the error.

A record names its hardware, model, format and runtime as its file does ("NVIDIA GeForce RTX 4090",
"meta-llama/Llama-3.1-8B-Instruct", "Q4_K_M"). Those names are resolved against the catalog; what
the file lacks or the catalog cannot resolve must be given (``hardware=``, ``model=`` …: the CLI's
flags, the app's fields) and is never guessed. A record that still cannot be predicted is kept,
with the reason, so the user sees every row of their file.

Metrics and what they are compared with:
- ``prefill_tok_s``: the prompt pass's tokens per second at the record's batch, prompt and depth;
- ``decode_tok_s``: one sequence's generation speed at the record's batch and depth;
- ``batch_decode_tok_s``: the same times the batch;
- serving figures (TTFT, ITL, TPOT, end-to-end, throughput, request rate) at the record's
  concurrency (closed loop, a finite run of N requests when the file says N) or arrival rate (open
  loop; all at once as a closed loop of as many clients as requests): `model.serving.serve`.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path, PurePosixPath, PureWindowsPath
from statistics import median
from typing import Sequence

from advisor.data.errors import AdvisorError
from advisor.fit.bench_records import BenchRecord
from advisor.model.config import Config, configure
from advisor.model.predict import predict
from advisor.model.roofline import Workload
from advisor.model.serving import BATCH_MIX_POINTS, Load, ServeReport, output_mix, prompt_mix, serve

#: how a metric is shown to people, and its unit
METRIC_LABELS = {"prefill_tok_s": "prefill", "decode_tok_s": "decode", "batch_decode_tok_s": "decode (batch)",
                 "ttft_ms": "TTFT", "itl_ms": "ITL", "tpot_ms": "TPOT", "e2e_ms": "end to end",
                 "throughput_tok_s": "throughput", "request_throughput_rps": "requests/s"}
METRIC_UNITS = {"prefill_tok_s": "tok/s", "decode_tok_s": "tok/s", "batch_decode_tok_s": "tok/s", "ttft_ms": "ms",
                "itl_ms": "ms", "tpot_ms": "ms", "e2e_ms": "ms", "throughput_tok_s": "tok/s",
                "request_throughput_rps": "req/s"}
SERVING_METRICS = ("ttft_ms", "itl_ms", "tpot_ms", "e2e_ms", "throughput_tok_s", "request_throughput_rps")
#: runtime names as benchmark files write them → the catalog's runtime keys
RUNTIME_NAMES = {"llama.cpp": "llama.cpp", "llamacpp": "llama.cpp", "llama-cpp": "llama.cpp", "vllm": "vllm",
                 "openai": None, "openai-chat": None, "sglang": "sglang", "sglang-oai": "sglang",
                 "tensorrt-llm": "tensorrt-llm", "trt-llm": "tensorrt-llm", "trtllm": "tensorrt-llm", "mlx": "mlx"}
_GGUF_QUANT_RE = re.compile(r"[.-](I?Q\d_[A-Z0-9_]+|I?Q\d_\d|F16|BF16|F32|Q8_0|MXFP4)$", re.I)


@dataclass(frozen=True)
class Overrides:
    """What the user states for records whose file lacks it (or names it in a way that does not resolve)."""
    hardware: str | None = None
    model: str | None = None
    quant: str | None = None
    runtime: str | None = None
    gpus: int | None = None
    #: sequences the server ran at once (vLLM --max-num-seqs, SGLang --max-running-requests,
    #: llama-server -np), where the file does not say
    max_seqs: int | None = None
    #: the server ran with its host-memory prompt cache (llama-server's default; --cache-ram 0 is
    #: off), which no result file records
    prompt_cache: bool = True


@dataclass(frozen=True)
class Comparison:
    record: BenchRecord
    configuration: str = ""          # what was predicted: "Llama 3.1 8B · Q4_K_M · llama.cpp on RTX 4090"
    predicted: float | None = None
    low: float | None = None
    high: float | None = None
    skipped: str = ""                # why there is no prediction

    @property
    def error(self) -> float | None:
        """predicted / measured − 1 (+0.25: the prediction is 25 % above what was measured)."""
        if self.predicted is None or not self.record.value > 0:
            return None
        return self.predicted / self.record.value - 1.0

    @property
    def within_band(self) -> bool | None:
        if self.low is None or self.high is None or math.isnan(self.low) or math.isnan(self.high):
            return None
        return self.low <= self.record.value <= self.high

    def to_dict(self) -> dict:
        r = self.record
        return {"metric": r.metric, "stat": r.stat, "measured": r.value, "predicted": self.predicted,
                "low": self.low, "high": self.high, "error": self.error, "within_band": self.within_band,
                "configuration": self.configuration, "skipped": self.skipped or None,
                "batch": r.batch, "concurrency": r.concurrency, "request_rate_rps": _finite_or_text(r.request_rate_rps),
                "prompt_tokens": r.prompt_tokens, "output_tokens": r.output_tokens, "depth_tokens": r.depth_tokens,
                "tool": r.tool, "source": r.source}


def metric_text(r: BenchRecord) -> str:
    """"TTFT", "ITL p99", "decode (batch) median"."""
    return METRIC_LABELS.get(r.metric, r.metric) + ("" if r.stat == "mean" else f" {r.stat}")


def load_text(r: BenchRecord) -> str:
    """The conditions of a record, short: "batch 1 · pp512", "32 clients · 1,024/256", "2 req/s · …"."""
    lengths = (f"{r.prompt_tokens:,}/{r.output_tokens:,}" if r.prompt_tokens and r.output_tokens
               else f"pp{r.prompt_tokens}" if r.prompt_tokens else f"tg{r.output_tokens}" if r.output_tokens else "")
    depth = f" @ d{r.depth_tokens:,}" if r.depth_tokens else ""
    if r.concurrency:
        who = f"{r.concurrency:g} clients"
    elif r.request_rate_rps is not None:
        who = ((f"{r.requests_completed:,} at once" if r.requests_completed else "all at once")
               if math.isinf(r.request_rate_rps) else f"{r.request_rate_rps:g} req/s")
    else:
        who = f"batch {r.batch or 1}"
    return f"{who} · {lengths}{depth}".strip(" ·")


def _finite_or_text(v: float | None):
    return "inf" if v is not None and math.isinf(v) else v


def model_name(text: str) -> str:
    """A model name from what a file holds: a path or repository id loses its folders, a GGUF file
    name its extension and quantization suffix ("models/Llama-3.1-8B-Instruct-Q4_K_M.gguf" →
    "Llama-3.1-8B-Instruct")."""
    name = PureWindowsPath(str(text)).name if "\\" in str(text) else PurePosixPath(str(text)).name
    name = re.sub(r"(-\d{5}-of-\d{5})?\.gguf$", "", name, flags=re.I)
    return _GGUF_QUANT_RE.sub("", name)


def gguf_quant(text: str) -> str | None:
    """The quantization a GGUF file name states ("…-Q4_K_M.gguf" → "Q4_K_M"), or None."""
    name = PurePosixPath(str(text)).name
    name = re.sub(r"(-\d{5}-of-\d{5})?\.gguf$", "", name, flags=re.I)
    m = _GGUF_QUANT_RE.search(name)
    return m.group(1).upper() if m else None


def _named(o: Overrides) -> str:
    """" (with --hardware 'h100', --quant 'fp8')": the flags the user gave, for a message; "" if none."""
    flags = [f"--{k} {v!r}" for k, v in (("hardware", o.hardware), ("model", o.model), ("quant", o.quant),
                                          ("runtime", o.runtime)) if v]
    return f" (with {', '.join(flags)})" if flags else ""


def config_for(cat, r: BenchRecord, o: Overrides) -> Config:
    """The configuration a record was measured on: its names resolved, the user's overrides first."""
    hardware = o.hardware or r.hardware
    if not hardware:
        raise AdvisorError("the file does not say which hardware: give it (--hardware)")
    model = o.model
    if not model and r.model:
        # a local llama-bench names the file it ran: where it is still there, it is the model itself
        local = Path(r.model).expanduser()
        model = str(local) if local.suffix.lower() == ".gguf" and local.is_file() else model_name(r.model)
    if not model:
        raise AdvisorError("the file does not say which model: give it (--model)")
    runtime = o.runtime
    if runtime is None and r.runtime:
        runtime = RUNTIME_NAMES.get(r.runtime.strip().lower(), r.runtime)
    quant = _stated_quant(r, o)
    gpus = o.gpus or r.gpus
    try:
        return configure(cat, hardware=hardware, model=model, quant=quant, runtime=runtime, gpus=gpus)
    except AdvisorError as exc:
        msg = str(exc).splitlines()[0]
        if _named(o):   # the user's own inputs are part of what failed: name them
            raise AdvisorError(f"{msg}{_named(o)}") from None
        which = ("--hardware" if "hardware" in msg.lower() else "--model" if "model" in msg.lower()
                 else "--quant" if "format" in msg.lower() or "quant" in msg.lower() else "")
        hint = f" (give {which} to say what it was)" if which else ""
        raise AdvisorError(f"{msg}{hint}") from None


def _stated_quant(r: BenchRecord, o: Overrides) -> str | None:
    """The weight format the user or the file states (a GGUF file name counts), else None."""
    return o.quant or r.quant or (gguf_quant(r.model) if r.model and r.model.lower().endswith(".gguf") else None)


def _load(r: BenchRecord, max_seqs: int | None = None, prompt_cache: bool = True) -> Load:
    # the sequences the server ran at once, as the user or the file says (llama-server's slots): else
    # the runtime's default
    given = max_seqs or r.max_seqs
    seqs = {"max_seqs": given} if given else {}
    seqs["prompt_cache"] = prompt_cache
    prompt = max(int(r.prompt_tokens or 0), 1)
    output = max(int(r.output_tokens or 0), 2)
    if not r.prompt_tokens or not r.output_tokens:
        raise AdvisorError("the file does not give the mean prompt and output lengths")
    n = r.requests_completed
    # the run's own lengths where the client saved them per request (vLLM's --save-detailed, SGLang's
    # --output-details): its prompts' spread sets their wait for the step budget, its outputs' how the
    # run drains at its end through the longest (`Load.lengths_vary`); else every request at the means
    if len(set(r.prompt_lengths)) > 1:
        seqs.update({k: v for k, v in prompt_mix(0, samples=r.prompt_lengths).items() if k != "prompt_tokens"})
    if len(set(r.output_lengths)) > 1:
        seqs.update({k: v for k, v in output_mix(0, samples=[max(x, 2) for x in r.output_lengths],
                                                 points=BATCH_MIX_POINTS).items() if k != "output_tokens"})
    if r.concurrency and r.concurrency >= 1:
        return Load(kind="closed", concurrency=float(r.concurrency), prompt_tokens=prompt, output_tokens=output,
                    requests=n if n and n >= r.concurrency else None, **seqs)
    rate = r.request_rate_rps
    if rate is not None and math.isinf(rate):
        # every request at once: a batch of them, timed to the last answer (`serving.batch_run`); without
        # a count, the server at capacity
        return Load(kind="offline", prompt_tokens=prompt, output_tokens=output,
                    requests=min(n, 100_000_000) if n else None, **seqs)
    if rate and rate > 0:
        return Load(kind="open", rate_rps=float(rate), prompt_tokens=prompt, output_tokens=output, **seqs)
    raise AdvisorError("the file gives neither a concurrency nor a request rate")


def _serving_figure(r: BenchRecord, rep: ServeReport, load: Load) -> tuple[float, float, float]:
    """(prediction, low, high) of a serving record's metric and statistic from a `ServeReport`."""
    if r.metric in ("ttft_ms", "itl_ms", "tpot_ms", "e2e_ms"):
        return rep.latency(r.metric.removesuffix("_ms"), r.stat)
    scale = 1.0 if r.metric == "throughput_tok_s" else 1.0 / load.output_tokens
    return rep.throughput_tok_s * scale, rep.throughput_low_tok_s * scale, rep.throughput_high_tok_s * scale


#: statistics a prediction stands for: means, and the percentiles the serving model gives
_COMPARABLE_STATS = {"mean", "median", "p90", "p95", "p99"}


def compare(cat, records: Sequence[BenchRecord], overrides: Overrides | None = None) -> list[Comparison]:
    """One `Comparison` per record, in the file's order; identical loads are solved once."""
    o = overrides or Overrides()
    given = _named(o)   # the user's inputs are part of what failed
    out: list[Comparison] = []
    configs: dict[tuple, Config | str] = {}
    served: dict[tuple, ServeReport] = {}
    for r in records:
        key = (r.hardware, r.model, r.quant, r.runtime, r.gpus)
        if key not in configs:
            try:
                configs[key] = config_for(cat, r, o)
            except AdvisorError as exc:
                configs[key] = str(exc)
        cfg = configs[key]
        if isinstance(cfg, str):
            out.append(Comparison(r, skipped=cfg))
            continue
        # a format neither the file nor the user names is the runtime's default for the model: say
        # so where the reader looks, since a Q4_K_M prediction for an F16 run is off by 2× (seen)
        quant = cfg.quant.name if _stated_quant(r, o) else f"{cfg.quant.name} (assumed: give --quant)"
        label = (f"{cfg.model.name} · {quant} · {cfg.runtime.name} on "
                 f"{cfg.gpus} × {cfg.hardware.name}" if cfg.gpus > 1 else
                 f"{cfg.model.name} · {quant} · {cfg.runtime.name} on {cfg.hardware.name}")
        if r.stat not in _COMPARABLE_STATS:
            out.append(Comparison(r, label, skipped=f"a {r.stat} is not predicted (means and percentiles are)"))
            continue
        try:
            if r.metric in ("prefill_tok_s", "decode_tok_s", "batch_decode_tok_s"):
                out.append(_single(cat, cfg, r, label))
                continue
            if r.metric not in SERVING_METRICS:
                out.append(Comparison(r, label, skipped=f"the metric {r.metric} is not predicted"))
                continue
            load = _load(r, o.max_seqs, o.prompt_cache)
            skey = (id(cfg), load)
            if skey not in served:
                served[skey] = serve(cat, cfg, load)
            rep = served[skey]
            if not rep.fits:
                out.append(Comparison(r, label, skipped="does not fit in the predicted memory"))
                continue
            mid, low, high = _serving_figure(r, rep, load)
            out.append(Comparison(r, label, mid, low, high))
        except AdvisorError as exc:
            out.append(Comparison(r, label, skipped=str(exc).splitlines()[0] + given))
    return out


def _single(cat, cfg: Config, r: BenchRecord, label: str) -> Comparison:
    """A static-batch figure (llama-bench, batched-bench, bench_one_batch) against `predict`."""
    batch = max(int(r.batch or 1), 1)
    depth = int(r.depth_tokens or 0)
    if r.metric == "prefill_tok_s":
        wl = Workload(batch, int(r.prompt_tokens or 512), 0, depth)
    else:
        wl = Workload(batch, int(r.prompt_tokens or 0), int(r.output_tokens or 128), depth)
    p = predict(cat, cfg.replace(workload=wl), check_context=False)
    if not p.fits:
        return Comparison(r, label, skipped="does not fit in the predicted memory")
    if r.metric == "prefill_tok_s":
        return Comparison(r, label, p.prefill_tok_s, p.prefill_low_tok_s, p.prefill_high_tok_s)
    k = batch if r.metric == "batch_decode_tok_s" else 1
    return Comparison(r, label, p.decode_tok_s * k, p.decode_low_tok_s * k, p.decode_high_tok_s * k)


@dataclass(frozen=True)
class Summary:
    rows: int
    compared: int
    median_abs_error: float | None     # over compared rows
    within_band: int                   # compared rows whose measurement lies inside the band

    def to_dict(self) -> dict:
        return self.__dict__.copy()


def summarise(comparisons: Sequence[Comparison]) -> Summary:
    errs = [abs(c.error) for c in comparisons if c.error is not None]
    return Summary(len(comparisons), len(errs), median(errs) if errs else None,
                   sum(1 for c in comparisons if c.within_band))
