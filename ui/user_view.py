"""What the users on screen see: several users are clients of a server (continuous batching, a queue
when it is full), one user is the static prediction; each figure with the prediction's band."""

from __future__ import annotations

import logging
import math

from advisor import api

log = logging.getLogger(__name__)


def load_of(cfg: "api.Config", prompt_spread: float, kind: str = "closed", **fields) -> "api.Load":
    """The workload on screen as a load on a server: its prompt (spread as set) and output lengths."""
    w = cfg.workload
    return api.Load(kind=kind, output_tokens=max(w.output_tokens, 2),
                    **api.prompt_mix(max(w.prompt_tokens, 1), prompt_spread), **fields)


def serve_users(cat: "api.Catalog", cfg: "api.Config", prompt_spread: float,
                prompt_cache: bool = True) -> "api.ServeReport | None":
    """The batch on screen as that many clients of a server; None for one user or where it cannot serve."""
    w = cfg.workload
    if w.batch <= 1 or w.prompt_tokens < 1 or w.output_tokens < 2:
        return None
    try:
        rep = api.serve(cat, cfg, load_of(cfg, prompt_spread, concurrency=float(w.batch), prompt_cache=prompt_cache))
    except api.AdvisorError as exc:
        log.info("serving refused: %s", exc)
        return None
    return rep if rep.fits else None


def user_view(p: "api.Prediction", s: "api.ServeReport | None") -> dict[str, float]:
    """TTFT (ms) and per-user and total tok/s as the users see them: under load for several users
    (TTFT at its 90th percentile), the static prediction for one; with the prediction's bands."""
    if s is None:
        return {"ttft_ms": p.ttft_ms, "ttft_low_ms": p.ttft_low_ms, "ttft_high_ms": p.ttft_high_ms,
                "tok_s": p.decode_tok_s, "tok_s_low": p.decode_low_tok_s, "tok_s_high": p.decode_high_tok_s,
                "total_tok_s": p.throughput_tok_s, "under_load": False}
    f_lo = p.ttft_low_ms / p.ttft_ms if p.ttft_ms else 1.0
    f_hi = p.ttft_high_ms / p.ttft_ms if p.ttft_ms else 1.0
    d_lo = p.decode_low_tok_s / p.decode_tok_s if p.decode_tok_s else 1.0
    d_hi = p.decode_high_tok_s / p.decode_tok_s if p.decode_tok_s else 1.0
    return {"ttft_ms": s.ttft_p90_ms, "ttft_low_ms": s.ttft_p90_ms * f_lo, "ttft_high_ms": s.ttft_p90_ms * f_hi,
            "tok_s": s.tok_s_per_user, "tok_s_low": s.tok_s_per_user * d_lo, "tok_s_high": s.tok_s_per_user * d_hi,
            "total_tok_s": s.throughput_tok_s, "under_load": True}


def meets_targets(view: dict[str, float] | None, ttft_ms: float, tok_s: float) -> dict[str, bool | None]:
    """Each target met or not by what the users see (None: no target, or nothing to judge)."""
    out: dict[str, bool | None] = {"ttft": None, "tok_s": None}
    if view is None:
        return out
    if ttft_ms > 0 and math.isfinite(view["ttft_ms"]):
        out["ttft"] = view["ttft_ms"] <= ttft_ms
    if tok_s > 0 and math.isfinite(view["tok_s"]):
        out["tok_s"] = view["tok_s"] >= tok_s
    return out
