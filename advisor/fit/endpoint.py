"""Measure a live OpenAI-compatible server (llama-server, vLLM, SGLang, TensorRT-LLM's trtllm-serve,
Ollama, LM Studio, mlx_lm.server): a short, bounded benchmark at a few concurrencies.

Each level sends ``requests`` streamed completions, ``concurrency`` at a time (a closed loop: a
client sends its next request when the last is answered), with a synthetic prompt and a fixed
number of output tokens (``ignore_eos``, where the server honours it). Every request's prompt
differs from its first word on: a server's prefix cache (llama-server's slot reuse, vLLM's and
SGLang's prefix caching) would otherwise skip all but one token of each repeated prompt, and the
TTFT measured would be no prefill at all (`vllm bench serve`'s random prompts avoid it the same
way). The definitions are vLLM's (`vllm bench serve`), stated in the output:
- TTFT: from sending the request to the first streamed token;
- ITL: the gaps between successive streamed chunks that carry tokens;
- TPOT: per request, (end − first token) / (output tokens − 1);
- output throughput: output tokens of the level's completed requests / the level's wall time.
Token counts are the server's own (``usage``) where it reports them, else the streamed chunks.
Where the server describes itself (llama-server's ``/props``: its slots, model file and type,
build), the measurement keeps that, so a comparison knows the runtime, the weight format and how
many sequences ran at once without being told.

Bounds: a hard time budget for the whole run and a per-request timeout; a level stops early when
the budget runs out or ``cancel()`` says so, and keeps what it measured. A server that is down,
answers with an HTTP error, or does not stream OpenAI-style events gets one clear line.

The HTTP client is httpx (imported here only: the rest of the core does not need it).
"""

from __future__ import annotations

import asyncio
import datetime as _dt
import json
import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

from advisor.data.errors import AdvisorError
from advisor.fit.bench_records import BenchRecord

TOOL = "advisor measure"
DEFINITIONS = ("TTFT: request sent → first streamed token; ITL: gaps between streamed chunks carrying tokens; "
               "TPOT: (last − first token) / (output tokens − 1) per request; throughput: output tokens / wall time "
               "of the level (vLLM's definitions)")
MAX_REQUESTS = 1000
MAX_CONCURRENCY = 256


@dataclass
class RequestResult:
    ok: bool
    ttft_s: float = math.nan
    e2e_s: float = math.nan
    gaps_s: list[float] = field(default_factory=list)
    prompt_tokens: int | None = None
    output_tokens: int = 0
    error: str = ""


@dataclass
class LevelResult:
    concurrency: int
    requests: list[RequestResult]
    wall_s: float
    stopped: str = ""          # why the level ended early ("time budget", "cancelled"), else ""

    @property
    def completed(self) -> list[RequestResult]:
        return [r for r in self.requests if r.ok]

    @property
    def failed(self) -> int:
        return sum(1 for r in self.requests if not r.ok)

    def stats(self) -> dict:
        ok = self.completed
        out_tokens = sum(r.output_tokens for r in ok)
        tpot = [(r.e2e_s - r.ttft_s) / (r.output_tokens - 1) for r in ok if r.output_tokens > 1]
        prompts = [r.prompt_tokens for r in ok if r.prompt_tokens]
        return {
            "concurrency": self.concurrency, "completed": len(ok), "failed": self.failed,
            "ttft_ms": _dist([r.ttft_s * 1e3 for r in ok]),
            "itl_ms": _dist([g * 1e3 for r in ok for g in r.gaps_s]),
            "tpot_ms": _dist([t * 1e3 for t in tpot]),
            "e2e_ms": _dist([r.e2e_s * 1e3 for r in ok]),
            "output_throughput_tok_s": out_tokens / self.wall_s if self.wall_s > 0 and ok else None,
            "mean_prompt_tokens": float(np.mean(prompts)) if prompts else None,
            "mean_output_tokens": float(np.mean([r.output_tokens for r in ok])) if ok else None,
            "wall_s": self.wall_s, "stopped_early": self.stopped or None,
            "errors": sorted({r.error for r in self.requests if r.error})[:5],
        }


def _dist(values: list[float]) -> dict | None:
    if not values:
        return None
    a = np.asarray(values, dtype=float)
    return {"mean": float(a.mean()), "p50": float(np.percentile(a, 50)), "p90": float(np.percentile(a, 90)),
            "p99": float(np.percentile(a, 99))}


@dataclass
class Measurement:
    url: str
    model: str
    prompt_tokens: int
    output_tokens: int
    levels: list[LevelResult]
    started_at: str
    #: what the server says of itself (`_server_props`), {} where it says nothing
    server: dict = field(default_factory=dict)

    def to_dict(self) -> dict:
        d = {"advisor_measure": 1, "url": self.url, "model": self.model, "started_at": self.started_at,
             "prompt_tokens_requested": self.prompt_tokens, "output_tokens_requested": self.output_tokens,
             "definitions": DEFINITIONS, "levels": [lv.stats() for lv in self.levels]}
        if self.server:
            d["server"] = dict(self.server)
        return d


def records_from(d: dict, source: str = "") -> list[BenchRecord]:
    """The `BenchRecord`s of a measurement (as `Measurement.to_dict` writes it)."""
    out = []
    known = _server_fields(d.get("server"))
    for i, lv in enumerate(d.get("levels") or []):
        common = dict(tool=TOOL, model=known.get("model") or d.get("model") or None,
                      concurrency=float(lv["concurrency"]),
                      prompt_tokens=round(lv["mean_prompt_tokens"]) if lv.get("mean_prompt_tokens") else
                      d.get("prompt_tokens_requested"),
                      output_tokens=round(lv["mean_output_tokens"]) if lv.get("mean_output_tokens") else None,
                      requests_completed=lv.get("completed"), requests_failed=lv.get("failed"),
                      measured_at=d.get("started_at"), source=f"{source} level {i + 1}",
                      runtime=known.get("runtime"), build=known.get("build"), quant=known.get("quant"),
                      max_seqs=known.get("max_seqs"),
                      missing=("hardware",) if known.get("runtime") else ("hardware", "runtime"))
        for metric in ("ttft_ms", "itl_ms", "tpot_ms", "e2e_ms"):
            dist = lv.get(metric) or {}
            for stat, key in (("mean", "mean"), ("median", "p50"), ("p90", "p90"), ("p99", "p99")):
                v = dist.get(key)
                if isinstance(v, (int, float)) and math.isfinite(v) and v > 0:
                    out.append(BenchRecord(metric=metric, value=float(v), stat=stat, **common))
        thr = lv.get("output_throughput_tok_s")
        if isinstance(thr, (int, float)) and math.isfinite(thr) and thr > 0:
            out.append(BenchRecord(metric="throughput_tok_s", value=float(thr), **common))
    return out


def _server_fields(server) -> dict:
    """Record fields from what a server said of itself: llama-server's slots, model file and type and
    build give the runtime, the model (its file), the weight format and the running sequences."""
    if not isinstance(server, dict) or server.get("kind") != "llama-server":
        return {}
    from advisor.fit.bench_formats.llama_bench import quant_from_ftype

    out: dict = {"runtime": "llama.cpp"}
    slots = server.get("slots")
    if isinstance(slots, int) and not isinstance(slots, bool) and slots >= 1:
        out["max_seqs"] = slots
    if isinstance(server.get("build"), str) and server["build"]:
        out["build"] = server["build"]
    if isinstance(server.get("model_path"), str) and server["model_path"]:
        out["model"] = server["model_path"]
    if isinstance(server.get("model_type"), str):
        out["quant"] = quant_from_ftype(server["model_type"])
    return out


async def _server_props(client, base: str) -> dict:
    """What the server says of itself, where it says it: llama-server's ``GET /props`` (beside the
    /v1 routes) gives its slots, model file and type, and build. Any other answer (vLLM, SGLang and
    the rest have no such route) is {}: the measurement goes on without it."""
    import httpx

    root = base[:-3] if base.endswith("/v1") else base
    try:
        r = await client.get(f"{root}/props", timeout=5.0)
        d = r.json() if r.status_code == 200 else None
    except (httpx.HTTPError, ValueError):
        return {}
    if not isinstance(d, dict) or not isinstance(d.get("total_slots"), int):
        return {}
    gen = d.get("default_generation_settings")
    ctx = gen.get("n_ctx") if isinstance(gen, dict) else None
    out = {"kind": "llama-server", "slots": d["total_slots"],
           "model_path": d.get("model_path") if isinstance(d.get("model_path"), str) else "",
           "model_type": d.get("model_ftype") if isinstance(d.get("model_ftype"), str) else "",
           "build": d.get("build_info") if isinstance(d.get("build_info"), str) else ""}
    if isinstance(ctx, int):
        out["context_per_slot"] = ctx
    return out


#: the words the synthetic prompts are made of: common English words, each one token in the common
#: tokenizers (tests/llama_model.py gives its random-weight model the same words as tokens)
PROMPT_WORDS = ("the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "while", "river", "stone",
          "light", "green", "house", "paper", "small", "water", "cloud", "north", "table", "music", "field",
          "glass", "under", "early", "sound", "heavy", "plain", "bright", "order", "garden")


def _prompt(tokens: int, index: int = 0) -> str:
    """Request ``index``'s prompt: about one token per word for the common tokenizers (the server's
    usage count says how many it was), the words in an order of its own from the first on, so no
    two requests share a prefix a cache could reuse."""
    import random

    pick = random.Random(index).choice
    return " ".join(pick(PROMPT_WORDS) for _ in range(max(tokens - 1, 1)))


def _base(url: str) -> str:
    u = url.strip().rstrip("/")
    if not u.startswith(("http://", "https://")):
        raise AdvisorError(f"--url must start with http:// or https://, got {url!r}")
    return u if u.endswith("/v1") else u + "/v1"


def _http_error(exc: Exception, url: str) -> AdvisorError:
    import httpx

    if isinstance(exc, httpx.ConnectError):
        return AdvisorError(f"cannot reach {url}: connection refused or no route (is the server running, on that port?)")
    if isinstance(exc, httpx.TimeoutException):
        return AdvisorError(f"{url}: no answer within the timeout")
    if isinstance(exc, httpx.HTTPStatusError):
        return AdvisorError(f"{url}: the server answered HTTP {exc.response.status_code}")
    return AdvisorError(f"{url}: {type(exc).__name__}: {str(exc).splitlines()[0] if str(exc) else ''}")


def _error_text(body: bytes) -> str:
    """": <the server's own message>" from an OpenAI-style error body (llama-server and vLLM say
    why: a prompt longer than the context, an unknown model …), or "" when it has none."""
    try:
        d = json.loads(body[:65536])
    except ValueError:
        return ""
    err = d.get("error") if isinstance(d, dict) else None
    msg = err.get("message") if isinstance(err, dict) else err if isinstance(err, str) else None
    if not isinstance(msg, str) or not msg.strip():
        msg = d.get("message") if isinstance(d, dict) and isinstance(d.get("message"), str) else None
    return f": {' '.join(msg.split())[:200]}" if msg else ""


async def _model_id(client, base: str) -> str:
    import httpx

    try:
        r = await client.get(f"{base}/models")
        r.raise_for_status()
        data = r.json()
    except (httpx.HTTPError, ValueError) as exc:
        raise AdvisorError(f"{base}/models did not list a model ({_http_error(exc, base) if isinstance(exc, httpx.HTTPError) else 'not JSON'}); "
                           "give --model") from None
    models = data.get("data") if isinstance(data, dict) else None
    if not models or not isinstance(models, list) or not isinstance(models[0], dict) or not models[0].get("id"):
        raise AdvisorError(f"{base}/models lists no model; give --model")
    return str(models[0]["id"])


async def _one(client, base: str, model: str, prompt: str, output_tokens: int, timeout_s: float) -> RequestResult:
    import httpx

    body = {"model": model, "prompt": prompt, "max_tokens": output_tokens, "stream": True, "temperature": 0,
            "ignore_eos": True, "stream_options": {"include_usage": True}}
    t0 = time.perf_counter()
    first = last = None
    gaps: list[float] = []
    chunks = 0
    usage: dict = {}

    async def stream() -> str:
        """Read the event stream; "" when it ended well, else what was wrong."""
        nonlocal first, last, chunks, usage
        async with client.stream("POST", f"{base}/completions", json=body) as resp:
            if resp.status_code >= 400:
                return f"HTTP {resp.status_code}{_error_text(await resp.aread())}"
            async for line in resp.aiter_lines():
                line = line.strip()
                if not line or line.startswith(":"):
                    continue
                if not line.startswith("data:"):
                    return "not an OpenAI-style event stream"
                payload = line[5:].strip()
                if payload == "[DONE]":
                    break
                try:
                    event = json.loads(payload)
                except ValueError:
                    return "a malformed stream event"
                if not isinstance(event, dict):
                    return "a malformed stream event"
                if isinstance(event.get("usage"), dict):
                    usage = event["usage"]
                choices = event.get("choices") or []
                text = choices[0].get("text") if choices and isinstance(choices[0], dict) else None
                if text:
                    now = time.perf_counter()
                    if first is None:
                        first = now
                    else:
                        gaps.append(now - last)
                    last = now
                    chunks += 1
        return ""

    try:
        problem = await asyncio.wait_for(stream(), timeout_s)
    except asyncio.TimeoutError:
        return RequestResult(False, error=f"no complete answer within {timeout_s:g} s")
    except httpx.HTTPError as exc:
        return RequestResult(False, error=str(_http_error(exc, base)))
    if problem:
        return RequestResult(False, error=problem)
    if first is None:
        return RequestResult(False, error="the server streamed no tokens")
    n_out = usage.get("completion_tokens") if isinstance(usage.get("completion_tokens"), int) else chunks
    n_in = usage.get("prompt_tokens") if isinstance(usage.get("prompt_tokens"), int) else None
    return RequestResult(True, ttft_s=first - t0, e2e_s=last - t0, gaps_s=gaps, prompt_tokens=n_in,
                         output_tokens=max(int(n_out), chunks))


async def _run(url: str, model: str | None, concurrencies: list[int], requests: int, prompt_tokens: int,
               output_tokens: int, timeout_s: float, budget_s: float, progress, cancel) -> Measurement:
    import httpx

    base = _base(url)
    deadline = time.perf_counter() + budget_s
    limits = httpx.Limits(max_connections=max(concurrencies) + 2)
    async with httpx.AsyncClient(timeout=httpx.Timeout(timeout_s), limits=limits) as client:
        try:
            model = model or await _model_id(client, base)
        except httpx.HTTPError as exc:
            raise _http_error(exc, base) from None
        server = await _server_props(client, base)
        sent = 0

        def next_prompt() -> str:
            nonlocal sent
            sent += 1
            return _prompt(prompt_tokens, sent)

        # one request first: a server that is down, refuses or does not stream answers in one line
        probe = await _one(client, base, model, next_prompt(), min(output_tokens, 8), timeout_s)
        if not probe.ok:
            raise AdvisorError(f"{base}/completions: {probe.error}")
        levels = []
        done_total, total = 0, requests * len(concurrencies)
        for c in concurrencies:
            results: list[RequestResult] = []
            queue = list(range(requests))
            stopped = ""
            t0 = time.perf_counter()

            async def client_loop() -> None:
                nonlocal done_total, stopped
                while queue:
                    if cancel is not None and cancel():
                        stopped = "cancelled"
                        return
                    left = deadline - time.perf_counter()
                    if left <= 0:
                        stopped = "time budget"
                        return
                    queue.pop()
                    results.append(await _one(client, base, model, next_prompt(), output_tokens, min(timeout_s, left)))
                    done_total += 1
                    if progress is not None:
                        progress(done_total, total, f"concurrency {c}: {len(results)} of {requests} requests")

            await asyncio.gather(*(client_loop() for _ in range(c)))
            levels.append(LevelResult(c, results, time.perf_counter() - t0, stopped))
            if stopped:
                break
    return Measurement(url, model, prompt_tokens, output_tokens, levels,
                       _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"), server)


def measure(url: str, *, model: str | None = None, concurrencies=(1, 4), requests: int = 8, prompt_tokens: int = 256,
            output_tokens: int = 64, timeout_s: float = 60.0, budget_s: float = 300.0,
            progress: Callable[[int, int, str], None] | None = None,
            cancel: Callable[[], bool] | None = None) -> Measurement:
    """Run the bounded benchmark (see the module's docstring); `AdvisorError` for a server that is down,
    refuses, or is not OpenAI-compatible."""
    levels = sorted({int(c) for c in concurrencies})
    if not levels or levels[0] < 1 or levels[-1] > MAX_CONCURRENCY:
        raise AdvisorError(f"--concurrency must be between 1 and {MAX_CONCURRENCY}")
    if not 1 <= requests <= MAX_REQUESTS:
        raise AdvisorError(f"--requests must be between 1 and {MAX_REQUESTS} per concurrency")
    if not 1 <= prompt_tokens <= 200_000 or not 2 <= output_tokens <= 100_000:
        raise AdvisorError("--prompt must be 1–200,000 tokens and --output 2–100,000")
    if not (0 < timeout_s <= 3600 and 0 < budget_s <= 24 * 3600):
        raise AdvisorError("--timeout-s must be at most an hour")
    return asyncio.run(_run(url, model, levels, requests, prompt_tokens, output_tokens, timeout_s, budget_s,
                            progress, cancel))
