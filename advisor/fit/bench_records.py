"""What a benchmark client measured, as plain records: the common shape every result-file format
(`advisor.fit.bench_formats`) is read into, before anything is resolved against the catalog.

A record keeps what the file says, as the file says it (the GPU and model as named there, the
runtime's own format name); resolving those names is `fit.compare`'s job, which asks the user for
what cannot be resolved instead of guessing. A field the file does not have is None and named in
``missing``, so a user sees which fields a comparison needed and did not find.
"""

from __future__ import annotations

from dataclasses import dataclass, field

#: the metrics a record can carry, with their units in the name
METRICS = {
    "prefill_tok_s": "prompt processing, tokens per second (one sequence or the batch's total)",
    "decode_tok_s": "generation, tokens per second per sequence",
    "batch_decode_tok_s": "generation, tokens per second summed over the batch",
    "ttft_ms": "time to first token, ms",
    "itl_ms": "inter-token latency, ms (vLLM's definition: the gaps between streamed tokens)",
    "tpot_ms": "time per output token after the first, ms (per request, then averaged)",
    "e2e_ms": "end-to-end request latency, ms",
    "throughput_tok_s": "output tokens per second over the whole run (all requests)",
    "request_throughput_rps": "completed requests per second over the whole run",
}
#: the statistics a value can be
STATS = ("mean", "median", "p90", "p95", "p99", "std", "min", "max")


@dataclass(frozen=True)
class BenchRecord:
    """One measured value and the conditions it was measured under."""
    tool: str                              # the client that wrote the file: "llama-bench", "vllm bench serve", …
    metric: str                            # a key of METRICS
    value: float
    stat: str = "mean"                     # one of STATS
    runtime: str | None = None             # "llama.cpp", "vllm", "sglang", "tensorrt-llm", … when known
    build: str | None = None               # the runtime's version, build number or commit, as written
    hardware: str | None = None            # as the file names it ("NVIDIA GeForce RTX 4090", "Apple M2 Max")
    model: str | None = None               # as the file names it (a path, a repository id, a type string)
    quant: str | None = None               # the weight format as the file names it ("Q4_K_M", "fp8")
    batch: int | None = None               # sequences decoded together (static batches)
    concurrency: float | None = None       # closed-loop clients (serving benchmarks)
    request_rate_rps: float | None = None  # open-loop arrival rate; inf = all requests at once
    prompt_tokens: int | None = None
    output_tokens: int | None = None
    depth_tokens: int | None = None        # context already in the KV cache (llama-bench -d)
    gpus: int | None = None
    threads: int | None = None
    gpu_layers: int | None = None
    requests_completed: int | None = None
    requests_failed: int | None = None
    #: sequences the server runs at once, where it says (llama-server's slots, read from its /props)
    max_seqs: int | None = None
    measured_at: str | None = None         # ISO date or date-time, when the file says
    source: str = ""                       # file name and the record's place in it
    missing: tuple[str, ...] = field(default=())   # fields a comparison may need that the file lacks
    #: each completed request's prompt and output tokens, where the client saved them (vLLM's
    #: --save-detailed, SGLang's --output-details): the run's length distributions
    prompt_lengths: tuple[int, ...] = field(default=(), repr=False)
    output_lengths: tuple[int, ...] = field(default=(), repr=False)

    def to_dict(self) -> dict:
        # the per-request lists are a run's thousands of lengths: their count stands for them
        d = {k: (list(v) if isinstance(v, tuple) else v) for k, v in self.__dict__.items()
             if k not in ("prompt_lengths", "output_lengths")}
        d["requests_with_lengths"] = len(self.output_lengths)
        return d
