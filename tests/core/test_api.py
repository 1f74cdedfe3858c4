"""The core's public face: configurations, curves, roofline points, compatibility, will-it-run, "why?"."""

import math

import numpy as np
import pytest

from advisor import api
from advisor.model.inputs import tables_for
from advisor.model.geometry import geometry
from advisor.text.format import num


def h100_70b(cat, **over):
    names = dict(hardware="H100 SXM5 80GB", model="Llama-3.1-70B", quant="fp8", runtime="vllm", gpus=2, batch=8,
                 prompt=2048, output=256)
    return api.configure(cat, **{**names, **over})


def test_configure_fills_defaults_in_one_place(cat):
    cfg = api.configure(cat, hardware="rtx 4090", model="llama 3.1 8b")
    assert (cfg.runtime.key, cfg.quant.key, cfg.kv_dtype.key) == ("llama.cpp", "q4_k_m", "f16")
    d = api.with_defaults(cat, cat.hardware_named("H100"), cat.model_named("Llama-3.1-8B"))
    assert (d.runtime.key, d.quant.key) == ("vllm", "bf16")
    # a sizing file holds keys; configuring from them gives the same configuration back
    again = api.configure(cat, **{k: v for k, v in cfg.keys().items() if k != "parallelism"})
    assert again == cfg


def test_replace_changes_one_input_and_keeps_the_rest(cat):
    cfg = h100_70b(cat)
    longer = cfg.replace(prompt=4096, gpus=4)
    assert longer.workload.prompt_tokens == 4096 and longer.gpus == 4
    assert longer.workload.output_tokens == cfg.workload.output_tokens and longer.model == cfg.model
    assert cfg.workload.prompt_tokens == 2048  # frozen: the original is untouched


@pytest.mark.parametrize("vary,values", [("batch", [1, 2, 8, 64, 300]), ("prompt", [1, 512, 4096, 30000]),
                                         ("depth", [0, 1000, 60000]), ("output", [1, 128, 2000])])
def test_a_curve_is_predict_at_every_point(cat, vary, values):
    cfg = h100_70b(cat)
    c = api.curve(cat, cfg, vary, values)
    assert c.x.tolist() == values
    for i, v in enumerate(values):
        p = api.predict(cat, cfg.replace(**{vary: v}))
        assert c.decode_tok_s[i] == pytest.approx(p.decode_tok_s, rel=1e-9)
        assert c.decode_low_tok_s[i] == pytest.approx(p.decode_low_tok_s, rel=1e-9)
        assert c.ttft_ms[i] == pytest.approx(p.ttft_ms, rel=1e-9)
        assert c.ttft_high_ms[i] == pytest.approx(p.ttft_high_ms, rel=1e-9)
        assert c.max_batch[i] == p.max_batch and bool(c.fits[i]) == p.fits
        per_gpu = c.weights_gb[i] + c.kv_gb[i] + c.workspace_gb[i] + c.overhead_gb[i]
        assert per_gpu == pytest.approx(p.per_gpu_total_gb, rel=1e-9)
        assert c.free_gb[i] == pytest.approx(max(p.per_gpu_usable_gb - p.per_gpu_total_gb, 0), abs=1e-9)


def test_curves_move_the_way_the_physics_says(cat):
    cfg = h100_70b(cat)
    b = api.curve(cat, cfg, "batch", np.arange(1, 257))
    assert np.all(np.diff(b.decode_tok_s) <= 1e-9)          # per user: never faster with more company
    assert b.throughput_tok_s[-1] > 20 * b.throughput_tok_s[0]
    assert np.array_equal(b.fits, b.x <= b.max_batch)       # the KV limit is where fitting stops
    t = api.curve(cat, cfg, "prompt", [128, 1024, 8192])
    assert np.all(np.diff(t.ttft_ms) > 0)
    assert np.all(t.ttft_low_ms <= t.ttft_ms) and np.all(t.ttft_ms <= t.ttft_high_ms)


def test_curve_input_errors_are_clear(cat):
    cfg = h100_70b(cat)
    with pytest.raises(api.AdvisorError, match="varies one of"):
        api.curve(cat, cfg, "gpus", [1, 2])
    with pytest.raises(api.AdvisorError, match="batch must be at least 1"):
        api.curve(cat, cfg, "batch", [0, 1])
    with pytest.raises(api.AdvisorError, match="whole numbers"):
        api.curve(cat, cfg, "prompt", [1.5])


def test_roofline_points_sit_under_the_roofs(cat):
    cfg = h100_70b(cat)
    r = api.roofline(cat, cfg)
    p = api.predict(cat, cfg)
    points = {x.name: x for x in r.points}
    assert set(points) == {"prefill", "decode", "attention", "mlp", "lm-head", "all-reduce"}
    assert points["decode"].intensity == pytest.approx(p.arithmetic_intensity, rel=1e-9)
    assert r.ridge_intensity == pytest.approx(r.peak_tflops * 1e12 / (r.bandwidth_gb_s * 1e9))
    for x in r.points:
        roof = min(r.peak_tflops, r.bandwidth_gb_s * x.intensity / 1e3)
        assert 0 < x.attained_tflops <= roof * (1 + 1e-9), x.name
        assert x.low_tflops <= x.attained_tflops <= x.high_tflops
    # prefill of 8 × 2048 tokens is far right of the ridge; decode at batch 8 far left
    assert points["prefill"].intensity > r.ridge_intensity > points["decode"].intensity
    assert points["prefill"].bound == "compute" and points["decode"].bound == "memory"
    # a single GPU has nothing to all-reduce
    assert "all-reduce" not in {x.name for x in api.roofline(cat, cfg.replace(gpus=1)).points}
    assert "fp8" in r.roofs and r.roofs["bf16"] < r.roofs["fp8"]


def test_compatibility_is_one_definition(cat):
    apple = cat.hardware_named("M2 Max 38-core")
    choices = {c.key: c for c in api.runtimes_for(cat, apple)}
    assert choices["llama.cpp"].ok and choices["mlx"].ok
    assert not choices["vllm"].ok and "does not run on Apple" in choices["vllm"].reason
    vllm = cat.runtimes["vllm"]
    formats = {c.key: c for c in api.formats_for(cat, vllm, cat.model_named("Llama-3.1-8B"))}
    assert formats["fp8"].ok and not formats["q4_k_m"].ok and "cannot load" in formats["q4_k_m"].reason
    expert_only = [q.key for q in cat.quants.values() if q.non_expert_bits_per_weight is not None]
    assert expert_only and all("only the experts" in formats[k].reason for k in expert_only)
    kvs = {c.key: c for c in api.kv_dtypes_for(cat, vllm)}
    assert kvs["fp8"].ok and not kvs["q4_0"].ok
    # the sweep's boolean grids say exactly what the pickers say
    t = tables_for(cat)
    for i, h in enumerate(t.hardware):
        ok = {c.key: c.ok for c in api.runtimes_for(cat, h)}
        assert [ok[r.key] for r in t.runtimes] == t.ok_hw_rt[i].tolist()
    for j, r in enumerate(t.runtimes):
        ok = {c.key: c.ok for c in api.formats_for(cat, r)}
        assert [ok[q.key] for q in t.quants] == t.ok_rt_q[j].tolist()


def test_predict_refuses_what_no_runtime_runs(cat):
    cfg = api.configure(cat, hardware="H100", model="Llama-3.1-8B", runtime="vllm")
    with pytest.raises(api.AdvisorError, match="cannot load"):
        api.predict(cat, cfg.replace(quant=cat.quants["q4_k_m"]))


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_will_it_run_lists_every_model_with_its_best_fitting_format(cat):
    hw = cat.hardware_named("rtx 4090")
    answer = api.will_it_run(cat, hw, context=4096)
    assert answer.runtime.key == "llama.cpp" and len(answer.rows) == len(cat.models)
    by = {row.model.key: row for row in answer.rows}
    small, huge = by["llama-3.1-8b"], by["llama-3.1-405b"]
    # its best fitting format is BF16 (16 GB read per token at ~1 TB/s: about 50 tok/s)
    assert small.fits and small.quant is not None and small.max_context >= 4096 and 40 < small.decode_tok_s < 63
    # the 405B: only with almost every layer in system RAM, far below a usable speed
    assert not huge.runs_usably and (huge.mode == "offload" or not huge.fits) and huge.grade != "fast"
    one = api.will_it_run(cat, hw, model=cat.model_named("Llama-3.1-70B"))
    assert not one.per_model and len(one.rows) > 5
    # on one 24 GB card no 4-bit or wider 70B runs on the GPU alone: each format says how it runs
    assert all(r.mode in ("offload", "") for r in one.rows) and any(r.mode == "offload" for r in one.rows)


def test_why_shows_the_formula_with_this_workloads_numbers(cat):
    cfg = h100_70b(cat)
    p = api.predict(cat, cfg)
    why = api.explain(cat, cfg, p)
    assert set(why) >= {"ttft", "decode", "throughput", "memory", "max_batch", "max_context", "bound"}
    assert num(p.decode_tok_s) in why["decode"].text and p.efficiency_basis in why["decode"].text
    assert f"{p.max_batch:,}" in why["max_batch"].text
    assert "FLOPs" in why["ttft"].formula and num(p.prefill_tok_s) in why["ttft"].text
    borrowed = api.configure(cat, hardware="MI300X", model="Llama-3.1-8B", runtime="sglang")
    assert any(w in api.explain(cat, borrowed, api.predict(cat, borrowed))["decode"].text
               for w in ("uncalibrated", "extrapolated", "another build"))


@pytest.mark.parametrize("model", ["DeepSeek-V2-Lite", "Qwen3-30B-A3B"])
def test_why_a_mixture_of_experts_step_adds_up(cat, model):
    """On one GPU a decode step is its bytes at η_bw plus its fixed costs (its FLOPs are far under
    the roof). The fixed costs count the layers as the kernel charges them (an MLA layer 2 more
    plain layers' worth: DeepSeek-V2-Lite's 27 are 81) and each expert a token visits at the
    profile's cost per visit (DeepSeek-V2-Lite: 6 routed + 2 shared in 26 MoE layers; Qwen3-30B-A3B:
    8 in 48). The explanation's parts sum to the step it states."""
    import re

    cfg = api.configure(cat, hardware="H100 SXM5 80GB", model=model, runtime="vllm", quant="bf16", gpus=1, batch=1,
                        prompt=500, output=200)
    text = api.explain(cat, cfg, api.predict(cat, cfg))["decode"].text
    bytes_ms = float(re.search(r"the bytes take ([\d.]+) ms", text).group(1))
    fixed_ms = float(re.search(r"µs per sequence = ([\d.]+) ms", text).group(1))
    step_ms = float(re.search(r"Averaged over the output: ([\d.]+) ms per step", text).group(1))
    g = geometry(cfg.model)
    assert f"{g.expert_visits:,} expert visits" in text
    assert ("plain layers' worth" in text) == bool(g.latent_rank)
    assert bytes_ms + fixed_ms == pytest.approx(step_ms, rel=0.03)


def test_the_prediction_record_has_no_nan_in_json(cat):
    cfg = api.configure(cat, hardware="rtx 4090", model="llama 3.1 8b", prompt=0, output=16)
    d = api.predict(cat, cfg).to_dict()
    assert all(not (isinstance(v, float) and not math.isfinite(v)) for v in d.values())
