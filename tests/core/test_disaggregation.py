"""Disaggregated prefill/decode (advisor.model.disaggregation): the arithmetic on hand-made costs,
properties over pool sizes, and the command line."""

import json
import math
import subprocess
import sys

import numpy as np
import pytest

from advisor.api import load_catalog
from advisor.data.errors import AdvisorError
from advisor.model.config import configure
from advisor.model.devices import link_gb_s
from advisor.model.disaggregation import PoolCosts, disaggregate, pool_costs, solve_pools
from advisor.model.serving import STEP_GRID, Load

# a flat 20 ms decode step (memory-bound, batch-independent), 0.5 s per prompt, 1 ms hand-over
FLAT = PoolCosts(prefill_s=0.5, transfer_s=0.001, step_s=np.full(STEP_GRID.size, 0.020), kv_capacity=100.0,
                 max_seqs=1000)


@pytest.fixture(scope="module")
def cat():
    return load_catalog()


def test_open_loop_arithmetic():
    # Little's law on the decode pool: b = R · D · τ / d = 2 · 100 · 0.02 / 1 = 4 per instance
    load = Load(kind="open", rate_rps=2.0, prompt_tokens=1000, output_tokens=101)
    one = solve_pools(FLAT, load, 1, 1)
    # one prefill instance at ρ = 2 · 0.5 = 1: unstable, the prompts cannot be served
    assert bool(one.saturated) and str(one.bound) == "prefill"
    two = solve_pools(FLAT, load, 2, 1)
    assert float(two.running_batch) == pytest.approx(4.0, rel=1e-6)
    assert float(two.prefill_utilisation) == pytest.approx(0.5)
    # M/D/2 by the G/G/m approximation: 0.5 · ρ^(√(2·3) − 1) / (2 (1 − ρ)) · t_p
    wait = 0.5 * 0.5 ** (math.sqrt(6) - 1) / (2 * 0.5) * 0.5
    assert float(two.ttft_ms) == pytest.approx((wait + 0.5 + 0.001) * 1e3, rel=1e-7)   # the solver is exact to ~1e-7 (bisect_rising)
    assert float(two.itl_ms) == pytest.approx(20.0)
    assert float(two.throughput_tok_s) == pytest.approx(2.0 * 101)


def test_one_prefill_instance_is_md1():
    load = Load(kind="open", rate_rps=1.0, prompt_tokens=1000, output_tokens=101)
    r = solve_pools(FLAT, load, 1, 1)
    rho = 0.5
    assert float(r.ttft_ms) == pytest.approx((rho / (2 * (1 - rho)) * 0.5 + 0.501) * 1e3, rel=1e-7)   # the solver: ~1e-7


def test_closed_loop_balances_the_clients():
    # no think time: C = d · b + X · (t_p + t_kv), X = d · b / (D · τ)
    load = Load(kind="closed", concurrency=10, prompt_tokens=1000, output_tokens=101)
    r = solve_pools(FLAT, load, 4, 1)
    b, X = float(r.running_batch), float(r.request_rate_rps)
    assert X == pytest.approx(b / (100 * 0.020), rel=1e-6)
    assert b + X * 0.501 == pytest.approx(10, rel=1e-6)
    assert float(r.ttft_ms) == pytest.approx(501, rel=1e-9)


def test_closed_loop_beyond_the_prefill_pool_queues():
    # 1,000 clients, one prefill instance: at most 2 requests/s get their prompt done
    load = Load(kind="closed", concurrency=1000, prompt_tokens=1000, output_tokens=101)
    r = solve_pools(FLAT, load, 1, 8)
    assert str(r.bound) == "prefill"
    assert float(r.request_rate_rps) <= 2.0 * (1 + 1e-6)
    assert float(r.ttft_ms) > 100 * 501   # most clients wait for the prefill pool


def test_offline_takes_the_slower_pool():
    load = Load(kind="offline", prompt_tokens=1000, output_tokens=101)
    r = solve_pools(FLAT, load, 1, 4)
    # decode could finish 4 · 100 / (100 · 0.02) = 200 requests/s; one prefill instance does 2
    assert float(r.request_rate_rps) == pytest.approx(2.0)


def test_pool_size_properties():
    p, d = np.arange(1, 9)[:, None], np.arange(1, 9)[None, :]
    for load in (Load(kind="open", rate_rps=3.0, prompt_tokens=1000, output_tokens=101),
                 Load(kind="closed", concurrency=60, think_s=2.0, prompt_tokens=1000, output_tokens=101)):
        r = solve_pools(FLAT, load, p, d)
        ttft = np.where(np.isfinite(r.ttft_ms), r.ttft_ms, 1e30)
        # more prefill instances never raise TTFT; more decode instances never slow a user's tokens
        assert np.all(np.diff(ttft, axis=0) <= 1e-6 * ttft[1:])
        assert np.all(np.diff(r.itl_ms, axis=1) <= 1e-9)


def test_kv_hand_over_is_the_prompt_kv_over_the_link(cat):
    cfg = configure(cat, hardware="H100 SXM", model="Llama 3.1 70B", quant="fp8", gpus=2)
    load = Load(kind="closed", concurrency=8, prompt_tokens=4000, output_tokens=200)
    costs = pool_costs(cat, cfg, load)
    # Llama 3.1 70B: 80 layers · 8 KV heads · 128 · 2 (K and V) · 2 bytes = 327,680 B per token, half per GPU under TP 2
    per_gpu = 4000 * 80 * 8 * 128 * 2 * 2 / 2
    assert costs.transfer_s == pytest.approx(per_gpu / (link_gb_s(cfg.hardware) * 1e9), rel=1e-6)


def test_disaggregated_decode_is_not_slowed_by_prompts(cat):
    # decode-only steps carry no prompt chunks: a user's tokens come at least as fast as colocated
    cfg = configure(cat, hardware="H100 SXM", model="Llama 3.1 70B", quant="fp8", kv_dtype="fp8", gpus=2)
    load = Load(kind="closed", concurrency=50, prompt_tokens=5000, output_tokens=500)
    s = disaggregate(cat, cfg, load, prefill_gpus=2)   # the same instance in both pools, as colocated
    assert s.meets and not s.saturated
    assert s.prefill_utilisation <= 0.8
    assert s.colocated is not None and s.itl_ms < s.colocated.itl_ms
    fixed = disaggregate(cat, cfg, load, prefill_instances=1, decode_instances=1)
    assert (fixed.prefill_instances, fixed.decode_instances) == (1, 1)


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_targets_choose_the_split(cat):
    cfg = configure(cat, hardware="H100 SXM", model="Llama 3.1 70B", quant="fp8", gpus=2)
    load = Load(kind="open", rate_rps=4, prompt_tokens=8000, output_tokens=300)
    s = disaggregate(cat, cfg, load, ttft_ms=800, tok_s=40)
    assert s.meets and s.ttft_p90_ms <= 800 and 1e3 / s.itl_ms >= 40
    # one instance fewer in either pool misses a target
    for p, d in ((s.prefill_instances - 1, s.decode_instances), (s.prefill_instances, s.decode_instances - 1)):
        if p and d:
            other = disaggregate(cat, cfg, load, prefill_instances=p, decode_instances=d, ttft_ms=800, tok_s=40,
                                 prefill_gpus=s.prefill_gpus)
            assert not other.meets
    impossible = disaggregate(cat, cfg, load, tok_s=10_000)
    assert not impossible.meets and "no split" in impossible.notes[0]


def test_bad_counts(cat):
    cfg = configure(cat, hardware="H100 SXM", model="Llama 3.1 8B")
    with pytest.raises(AdvisorError, match="prefill instances"):
        disaggregate(cat, cfg, Load(), prefill_instances=0)


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "advisor.cli.main", "serve", *args], capture_output=True, text=True)


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_cli_disaggregate():
    args = ["--hardware", "H100 SXM", "--model", "Llama 3.1 70B", "--quant", "fp8", "--gpus", "2",
            "--concurrency", "50", "--prompt", "5000", "--output", "500", "--disaggregate"]
    r = _cli(*args)
    assert r.returncode == 0, r.stderr
    assert "prefill +" in r.stdout and "colocated" in r.stdout and "KV hand-over" in r.stdout
    j = json.loads(_cli(*args, "--json").stdout)
    assert j["prefill_instances"] >= 1 and j["decode_instances"] >= 1 and j["colocated"]["itl_ms"] > 0
    bad = _cli(*args, "--prefill-instances", "0")
    assert bad.returncode == 2 and "Traceback" not in bad.stderr and len(bad.stderr.strip().splitlines()) == 1


def test_the_pools_are_sized_independently(cat):
    """Issue 26: prefill and decode instances need not share a shape. Chosen for you, the prefill
    instance size (1-8 GPUs) is the one that meets the same targets with the fewest GPUs in all; a
    size the model does not fit is never chosen, and one can be asked for."""
    cfg = configure(cat, hardware="H100 SXM", model="Llama 3.1 70B", quant="fp8", kv_dtype="fp8", gpus=2)
    load = Load(kind="open", rate_rps=4, prompt_tokens=8000, output_tokens=300)
    free = disaggregate(cat, cfg, load, ttft_ms=1500, tok_s=20)
    same = disaggregate(cat, cfg, load, ttft_ms=1500, tok_s=20, prefill_gpus=2)
    assert free.meets and same.meets and free.gpus <= same.gpus
    assert free.gpus == free.prefill_instances * free.prefill_gpus + free.decode_instances * free.gpus_per_instance
    eight = disaggregate(cat, cfg, load, ttft_ms=1500, tok_s=20, prefill_gpus=8)
    assert eight.prefill_gpus == 8 and eight.prefill_s < same.prefill_s     # a wider group computes a prompt faster
    assert "prefill instances of 8 × H100 SXM5 80GB" in " ".join(eight.notes)
    big = configure(cat, hardware="H100 SXM", model="Llama 3.1 405B", quant="fp8", gpus=8)
    with pytest.raises(AdvisorError, match="does not fit a prefill instance"):
        disaggregate(cat, big, Load(kind="open", rate_rps=1, prompt_tokens=4000, output_tokens=200), prefill_gpus=1)
