"""Servers' own measurements as cases (`advisor.fit.serving_cases`) and the prompt pass's eager
launch costs fitted on them (`advisor.fit.serving_fit`), and what those costs do to predictions."""

from __future__ import annotations

import math

import numpy as np
import pytest

from advisor import api
from advisor.fit.serving_cases import ServingCase, Skipped, load_serving_cases, map_row
from advisor.fit.serving_fit import (POOLED, EagerTerms, fit_eager_terms, fit_from_design, floor_cases,
                                     with_terms, without_terms)
from advisor.model.geometry import geometry


@pytest.fixture(scope="module")
def cat():
    return api.load_catalog()


@pytest.fixture(scope="module")
def cases(cat):
    return load_serving_cases(cat)


def row(**kw):
    base = dict(source_id="s", hardware="H100 SXM", n_gpus="1", model="Qwen3-8B", quant="bf16", kv_dtype="",
                runtime="vllm", runtime_version="", parallel="TP1", load="closed", concurrency="4", rate_rps="",
                prompt_tokens="233.4", output_tokens="221", length_dist="sharegpt", metric="ttft", stat="median",
                value="27.3", unit="ms", source_url="", date="", notes="")
    base.update(kw)
    return base


def test_rows_map_to_a_configuration_and_a_load(cat):
    c = map_row(cat, row())
    assert isinstance(c, ServingCase)
    assert c.cfg.model.key == "qwen3-8b" and c.cfg.hardware.key == "h100-sxm5-80gb" and c.cfg.runtime.key == "vllm"
    assert c.load.kind == "closed" and c.load.concurrency == 4 and c.load.prompt_tokens == 233
    assert (c.metric, c.stat, c.value) == ("ttft", "p50", 27.3)
    # all at once: a batch of as many requests as the notes say were sent, its latencies compared too
    off = map_row(cat, row(load="offline", concurrency="", metric="output_throughput", stat="mean", value="3000",
                           unit="tok/s", notes="vllm bench serve, ShareGPT dataset, 1000 requests, all at once."))
    assert off.load.kind == "offline" and off.load.requests == 1000 and off.metric == "throughput"
    assert off.load.output_points and max(off.load.output_points) <= 2044
    late = map_row(cat, row(load="offline", concurrency="", notes="1000 requests, all at once."))
    assert isinstance(late, ServingCase) and late.metric == "ttft" and late.load.requests == 1000
    for kw, why in ((dict(load="offline", concurrency=""), "all-at-once"),
                    (dict(parallel="TP1 + EAGLE3 spec decode"), "speculative"),
                    (dict(prompt_tokens=""), "length not stated"),
                    (dict(unit="tok/s/gpu", metric="output_throughput"), "multi-node"),
                    (dict(runtime="other"), "not in the catalog"),
                    (dict(model="no-such-model-xyz"), "not expressible"),
                    (dict(notes="Lengths = totals / requests. Not compared: this page repeats another's figures."),
                     "Not compared")):
        out = map_row(cat, row(**kw))
        assert isinstance(out, Skipped) and why in out.reason, (kw, out)


def test_rows_a_note_marks_not_compared_stay_out_of_every_comparison(cases):
    """GPUStack's GLM-4.5-Air H100 page repeats its A100 page's "Other Benchmark Cases" to the last
    digit: those rows are kept as printed, never compared, and the A100 originals still are."""
    mapped, skipped = cases
    copied = [s for s in skipped if s.source == "gpustack-perflab-glm-4.5-air-h100" and "Not compared" in s.reason]
    assert len(copied) == 72
    assert any(c.source == "gpustack-perflab-glm-4.5-air-a100" and c.load.prompt_tokens == 32000 for c in mapped)
    assert not any(c.source == "gpustack-perflab-glm-4.5-air-h100" and c.load.prompt_tokens == 32000 for c in mapped)


def test_the_serving_commands_scheduler_limits_reach_the_load(cat):
    """A row whose notes quote its serving command is simulated with that command's limits: vLLM's
    --max-num-seqs and --max-num-batched-tokens (Google's v6e recipe runs a 512-token budget)."""
    c = map_row(cat, row(notes="Serving: vllm serve Qwen/Qwen3-8B --max-num-batched-tokens 512 --max-num-seqs 256."))
    assert (c.load.max_seqs, c.load.chunk_tokens) == (256, 512)
    sgl = map_row(cat, row(runtime="sglang", notes="python -m sglang.launch_server --max-running-requests 1024 "
                                                   "--chunked-prefill-size 4096"))
    assert (sgl.load.max_seqs, sgl.load.chunk_tokens) == (1024, 4096)
    # unstated, or two runs' values quoted in one note: the runtime's defaults
    assert (map_row(cat, row()).load.max_seqs, map_row(cat, row()).load.chunk_tokens) == (None, None)
    two = map_row(cat, row(notes="--max-num-batched-tokens 2048 for prefill heavy, --max-num-batched-tokens 512 else"))
    assert two.load.chunk_tokens is None


def test_sglang_random_lengths_carry_their_spread(cat):
    """SGLang's bench_serving draws random lengths evenly from 1 to L by default (--random-range-ratio
    0): the row's mean is about L/2, and the load carries that spread as its prompt distribution, with
    the mean kept. A stated range ratio, vLLM's fixed random lengths and ShareGPT (no stated spread)
    carry none."""
    base = dict(runtime="sglang", length_dist="random", prompt_tokens="500", notes="python -m sglang.bench_serving")
    c = map_row(cat, row(**base))
    pts = np.array(c.load.prompt_points)
    assert c.load.prompt_tokens == 500 and c.load.varied_lengths
    assert pts.min() < 100 and pts.max() > 900 and abs(np.average(pts, weights=c.load.prompt_weights) - 500) < 5
    assert not map_row(cat, row(**base | {"notes": "bench_serving --random-range-ratio 0.5"})).load.prompt_points
    assert not map_row(cat, row(runtime="vllm", length_dist="random", notes="vllm bench serve")).load.prompt_points
    assert not map_row(cat, row()).load.prompt_points                                   # ShareGPT


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_the_shipped_data_maps_and_says_why_not(cases):
    mapped, skipped = cases
    assert len(mapped) > 1000
    assert {c.cfg.runtime.key for c in mapped} == {"vllm", "sglang", "tensorrt-llm", "vllm-tpu", "vllm-neuron"}
    assert {c.generation for c in mapped} >= {"NVIDIA nvidia-hopper", "NVIDIA nvidia-blackwell", "AMD amd-cdna3"}
    assert all(s.reason for s in skipped)


def test_eager_layers_are_moe_and_mla_or_linear_attention(cat):
    assert geometry(cat.model_named("llama-3.1-70b")).eager_layers == (0, 0)
    assert geometry(cat.model_named("qwen3-235b-a22b")).eager_layers == (94, 0)
    moe, cplx = geometry(cat.model_named("deepseek-r1")).eager_layers
    assert (moe, cplx) == (0, 61)                        # every layer is MLA (three of them dense)
    moe, cplx = geometry(cat.model_named("qwen3-next-80b-a3b")).eager_layers
    assert cplx == 36 and moe == 12                      # linear-attention layers; the rest MoE


def test_the_fit_recovers_known_terms_and_pools_for_thin_runtimes():
    a, c = 700.0, 2100.0
    design = []
    for i, (moe, cplx) in enumerate([(94, 0), (0, 61), (36, 0), (12, 36), (48, 0), (0, 47)]):
        pred = 20.0 + i
        meas = pred + (moe * a + cplx * c) * 1e-3
        design.append(("sglang", f"src{i}", meas, pred, moe, cplx))
    design.append(("vllm", "v0", 30.0 + 48 * a * 1e-3, 30.0, 48, 0))   # one source: pooled
    terms = fit_from_design(design)
    assert math.isclose(terms["sglang"].moe_us, a, rel_tol=1e-6)
    assert math.isclose(terms["sglang"].complex_us, c, rel_tol=1e-6)
    assert "vllm" not in terms and math.isclose(terms[POOLED].moe_us, a, rel_tol=1e-6)


def test_with_terms_falls_back_to_the_pooled_fit_and_spares_other_engines(cat):
    terms = {POOLED: EagerTerms(500.0, 1500.0, 10, 5), "sglang": EagerTerms(700.0, 2100.0, 9, 4)}
    for rt, expect in (("sglang", (700.0, 2100.0)), ("vllm", (500.0, 1500.0)), ("tensorrt-llm", (0.0, 0.0)),
                       ("llama.cpp", (0.0, 0.0))):
        cfg = api.configure(cat, hardware="H100 SXM5 80GB", model="qwen3-30b-a3b", runtime=rt)
        r = with_terms(cfg, terms).runtime
        assert (r.prefill_moe_layer_us, r.prefill_complex_layer_us) == expect, rt


def test_a_lone_users_ttft_carries_one_eager_pass_per_chunk(cat):
    """DeepSeek-R1 on 8 × B200 under SGLang, one user: the shipped terms add 61 MLA layers' launches
    to the prompt pass; a dense model's TTFT carries none."""
    load = api.Load(kind="closed", concurrency=1, prompt_tokens=600, output_tokens=400)
    cfg = api.configure(cat, hardware="B200", model="DeepSeek-R1", runtime="sglang", quant="fp8", gpus=8)
    with_t, without = api.serve(cat, cfg, load), api.serve(cat, without_terms(cfg), load)
    rt = cfg.runtime
    assert rt.prefill_complex_layer_us > 0
    assert math.isclose(with_t.ttft_ms - without.ttft_ms, 61 * rt.prefill_complex_layer_us * 1e-3, rel_tol=1e-6)
    # the single-stream prediction carries the same pass
    p1 = api.predict(cat, cfg.replace(workload=api.Workload(batch=1, prompt_tokens=600, output_tokens=400)))
    p0 = api.predict(cat, without_terms(cfg).replace(workload=api.Workload(batch=1, prompt_tokens=600,
                                                                            output_tokens=400)))
    assert math.isclose(p1.ttft_ms - p0.ttft_ms, 61 * rt.prefill_complex_layer_us * 1e-3, rel_tol=1e-6)
    dense = api.configure(cat, hardware="H100 SXM5 80GB", model="llama-3.1-8b", runtime="sglang")
    assert api.serve(cat, dense, load).ttft_ms == api.serve(cat, without_terms(dense), load).ttft_ms


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_shipped_terms_are_the_fit_on_the_shipped_data(cat, cases):
    """runtimes.yaml holds what `benchmarks/serving.py --fit` prints on catalog/measured/serving.csv
    (within 10 %: a recalibration of the profiles moves the base it is fitted over a little)."""
    terms = fit_eager_terms(cat, cases[0])
    for rt in ("sglang", "vllm"):
        fitted = terms.get(rt, terms[POOLED])
        shipped = cat.runtimes[rt]
        assert math.isclose(shipped.prefill_moe_layer_us, fitted.moe_us, rel_tol=0.10), rt
        assert math.isclose(shipped.prefill_complex_layer_us, fitted.complex_us, rel_tol=0.10), rt
    # and with terms the lone-user TTFT rows are predicted much better than without
    lone = floor_cases(cases[0])
    err = {True: [], False: []}
    for c in lone:
        if sum(geometry(c.cfg.model).eager_layers) == 0:
            continue
        for on in (True, False):
            rep = api.serve(cat, c.cfg if on else without_terms(c.cfg), c.load)
            pred = rep.ttft_p50_ms if c.stat == "p50" else rep.ttft_ms
            err[on].append(abs(math.log(pred / c.value)))
    import statistics
    assert statistics.median(err[True]) < 0.5 * statistics.median(err[False])


def test_moe_and_mla_layers_weigh_more_in_the_fixed_cost(cat):
    """A layer's fixed per-pass cost in plain layers' worth: an MoE layer 1 + 0.2 per expert a token
    visits (routed and shared), an MLA or linear-attention layer 2 more (`DECODE_EXPERT_WEIGHT`,
    `DECODE_COMPLEX_LAYER_WEIGHT`), so a DeepSeek step pays 287 layers' overhead where a dense
    80-layer model pays 80 and gpt-oss (4 experts a token) 65; the decode step grows by exactly that.
    A profile with a cost per expert visit of its own (`Efficiency.expert_overhead_us`, fitted per
    runtime and vendor) charges the visits at it and the rest at τ_layer."""
    from advisor.model import geometry as geo

    assert geometry(cat.model_named("llama-3.1-70b")).fixed_layers == 80
    w = geo.DECODE_EXPERT_WEIGHT
    assert geometry(cat.model_named("qwen3-235b-a22b")).fixed_layers == pytest.approx(94 * (1 + 8 * w))
    assert geometry(cat.model_named("gpt-oss-120b")).fixed_layers == pytest.approx(36 * (1 + 4 * w))
    # DeepSeek: 58 MoE layers of 8 routed + 1 shared experts, all 61 with MLA
    fixed = 61 * (1 + geo.DECODE_COMPLEX_LAYER_WEIGHT) + 58 * 9 * w
    assert geometry(cat.model_named("deepseek-r1")).fixed_layers == pytest.approx(fixed)
    cfg = api.configure(cat, hardware="B200", model="DeepSeek-R1", runtime="sglang", quant="fp8", gpus=8)
    from advisor.model.efficiency import efficiency_for
    from advisor.model.predict import evaluate_config

    # the kernel charges the plain layers' worth at τ_layer and each expert visit at the profile's own
    # cost (its weight × τ_layer where the profile has none)
    eff = efficiency_for(cat.profiles, cfg.runtime, cfg.hardware)
    g = geometry(cfg.model)
    assert g.expert_visits == 58 * 9 and g.fixed_layers_at(0.0) == pytest.approx(61 * (1 + geo.DECODE_COMPLEX_LAYER_WEIGHT))

    def step_s(**costs):
        r = evaluate_config(cfg, eff.replace(**costs), batch=1, prompt=100, depth=0, output=100)
        return 1 / float(r.decode_tok_s)

    base = step_s(layer_overhead_us=0.0, expert_overhead_us=0.0)
    assert math.isclose(step_s(layer_overhead_us=10.0, expert_overhead_us=0.0) - base,
                        g.fixed_layers_at(0.0) * 10e-6, rel_tol=1e-6)
    assert math.isclose(step_s(layer_overhead_us=0.0, expert_overhead_us=10.0) - base, 58 * 9 * 10e-6, rel_tol=1e-6)
    # without a cost of its own an expert visit is the weight's share of a plain layer: `fixed_layers`
    assert math.isclose(step_s(layer_overhead_us=10.0, expert_overhead_us=math.nan) - base, fixed * 10e-6,
                        rel_tol=1e-6)


def test_vllm_starts_smaller_on_an_a100_and_on_gpus_under_70_gib(cat):
    """`vllm serve` defaults to 1,024 sequences and 8,192 tokens a step on a GPU of 70 GiB or more,
    but 256 and 2,048 on an A100 (by name) and on smaller GPUs (vllm/engine/arg_utils.py): serve,
    the recommender's tables and the report's sources all use the GPU's own."""
    from advisor.model.config import configure
    from advisor.model.inputs import Tables
    from advisor.model.serving import Load, serve

    rt = cat.runtimes["vllm"]
    assert rt.scheduler_on(cat.hardware["h100-sxm5-80gb"]) == (1024, 8192)
    assert rt.scheduler_on(cat.hardware["a100-sxm4-80gb"]) == (256, 2048)
    assert rt.scheduler_on(cat.hardware["rtx-4090"]) == (256, 2048)
    assert cat.runtimes["sglang"].scheduler_on(cat.hardware["a100-sxm4-80gb"]) == cat.runtimes["sglang"].scheduler_on()
    a100 = serve(cat, configure(cat, hardware="a100-sxm4-80gb", model="qwen3-8b", runtime="vllm"),
                 Load(concurrency=8, prompt_tokens=512, output_tokens=128))
    assert (a100.max_seqs, a100.chunk_tokens) == (256, 2048)
    t = Tables(cat)
    h, r = t.hw_index["a100-sxm4-80gb"], t.rt_index["vllm"]
    assert (t.max_seqs[h, r], t.chunk_tokens[h, r]) == (256, 2048)
    assert t.chunk_tokens[t.hw_index["h100-sxm5-80gb"], r] == 8192


def test_a_runtimes_scheduler_tiers_are_checked_as_they_are_read():
    """`scheduler_tiers` in a runtime entry: a list of tiers, each figure in range; one line otherwise."""
    import yaml

    from advisor.data import specs
    from advisor.data.entries import EntryError, build_entry
    from advisor.data.catalog import CATALOG_DIR

    raw = next(r for r in yaml.safe_load((CATALOG_DIR / "runtimes.yaml").read_text())["runtimes"] if r["key"] == "vllm")
    rt = build_entry(specs.Runtime, raw)
    assert rt.scheduler_tiers[0].not_names == ("a100",) and rt.scheduler_tiers[1].max_seqs == 256
    for bad, why in (([{"max_seqs": 0}], "max_seqs"), ({"max_seqs": 8}, "scheduler tiers"),
                     ([{"min_gib": "lots"}], "min_gib")):
        with pytest.raises(EntryError) as e:
            build_entry(specs.Runtime, {**raw, "scheduler_tiers": bad})
        assert why in f"{e.value.field} {e.value}"


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_a_batchs_prompt_rate_is_recovered_from_its_makespan(cat, cases):
    """`prefill_cases` reads a long-prompt batch's prompt rate off its makespan: a batch measured at
    what the model predicts with every prompt fraction at 0.6× gives back the prompt rate `predict`
    gives at 0.6× (the makespan is linear in the prompt cost), labelled with its source and its family
    only; short-prompt batches and steady loads give none."""
    from dataclasses import replace

    from advisor.fit.serving_cases import _prompt_rates_scaled, prefill_cases
    from advisor.model.predict import predict
    from advisor.model.roofline import Workload

    long_batch = next(c for c in cases[0] if c.row.get("load") == "offline" and c.metric == "request_rate"
                      and c.load.prompt_tokens >= 30000 and c.cfg.layout is None and c.cfg.runtime.key == "vllm")
    slower = _prompt_rates_scaled(cat, 0.6)
    measured = float(api.serve(slower, long_batch.cfg, long_batch.load).request_rate_rps)
    derived = prefill_cases([replace(long_batch, value=measured)], cat)
    assert len(derived) == 1 and derived[0].family_only and derived[0].source == long_batch.source
    wl = Workload(batch=1, prompt_tokens=long_batch.load.prompt_tokens, output_tokens=2)
    expected = float(predict(slower, long_batch.cfg.replace(workload=wl)).prefill_tok_s)
    assert derived[0].metric == "prefill" and derived[0].measured == pytest.approx(expected, rel=0.02)
    # a batch measured at the model's own figure gives back the model's own prompt rate
    same = prefill_cases([replace(long_batch, value=float(api.serve(cat, long_batch.cfg, long_batch.load)
                                                            .request_rate_rps))], cat)
    assert same[0].measured == pytest.approx(float(predict(cat, long_batch.cfg.replace(workload=wl)).prefill_tok_s),
                                             rel=0.02)
    others = [c for c in cases[0] if c.metric == "request_rate" and (c.row.get("load") != "offline"
                                                                      or c.load.prompt_tokens < 1000)][:20]
    assert others and prefill_cases(others, cat) == []


# ---- the serving bands: how far past `serve`'s band edges servers were measured --------------------


def _figures(source_count=4, per_source=10, mode="steady", metric="ttft"):
    """Figures whose band is [90, 110]: per source, one in ten below it (measured 60), one in ten above
    (measured 200) and the rest inside."""
    from advisor.fit.serving_fit import BandFigure

    out = []
    for s in range(source_count):
        for i in range(per_source):
            measured = 60.0 if i == 0 else 200.0 if i == 1 else 100.0
            out.append(BandFigure(f"src{s}", mode, metric, measured, 90.0, 110.0))
    return out


def test_band_widening_leaves_a_tenth_of_the_figures_past_each_edge():
    """Each edge is widened until no more than `BAND_TAIL_SHARE` of the figures lie past it; a band
    that already holds them is not widened; a group with too few figures or sources gets nothing."""
    from advisor.fit.serving_fit import BAND_TAIL_SHARE, MIN_BAND_ROWS, band_widening

    assert BAND_TAIL_SHARE == pytest.approx(0.10)
    figs = _figures()                         # 40 figures from 4 sources, 10 % below and 10 % above
    w = band_widening(figs)[("steady", "ttft")]
    assert (w.rows, w.sources) == (40, 4)
    # exactly a tenth is outside already: no widening needed on either side
    assert w.below == pytest.approx(1.0) and w.above == pytest.approx(1.0)
    # a fifth past each edge: widened to the 90th percentile of how far past they are
    from advisor.fit.serving_fit import BandFigure
    more = figs + [BandFigure(f"src{s}", "steady", "ttft", m, 90.0, 110.0) for s in range(4) for m in (45.0, 330.0)]
    w = band_widening(more)[("steady", "ttft")]
    lo = np.quantile([max(90 / f.measured, 1) for f in more], 0.9)
    hi = np.quantile([max(f.measured / 110, 1) for f in more], 0.9)
    assert w.below == pytest.approx(lo, abs=1e-3) and w.above == pytest.approx(hi, abs=1e-3)
    assert w.below >= lo and w.above >= hi                                   # rounded outwards
    assert w.below > 1.0 and w.above > 1.0
    inside = sum(90 / w.below <= f.measured <= 110 * w.above for f in more) / len(more)
    assert 0.78 <= inside <= 0.9
    # a throughput printed three ways is one band; a band given high-to-low is read low-to-high
    tp = [BandFigure(f.source, "batch", "request_rate", f.measured, 110.0, 90.0) for f in more]
    assert set(band_widening(tp)) == {("batch", "throughput")}
    # too few sources or figures: none; a source left out is not counted
    assert band_widening(_figures(source_count=2, per_source=MIN_BAND_ROWS)) == {}
    assert band_widening(_figures(source_count=4, per_source=5)) == {}
    assert band_widening(_figures(source_count=4, per_source=12), leave_out="src0")[("steady", "ttft")].sources == 3


def test_the_written_serving_bands_load_as_catalog_entries(tmp_path):
    """`serving_bands_yaml` writes what the catalog reads back (the shipped file is made by it)."""
    from advisor.data.catalog import load_catalog
    from advisor.fit.serving_fit import Widening, serving_bands_yaml

    text = serving_bands_yaml({("batch", "itl"): Widening(1.4, 1.17, 788, 17),
                               ("steady", "ttft"): Widening(1.0, 1.19, 227, 21)}, "test data")
    (tmp_path / "serving_bands.yaml").write_text(text)
    c = load_catalog(tmp_path, user=None)
    assert not c.issues
    assert {(b.mode, b.metric, b.below, b.above) for b in c.serving_bands.values()} == {
        ("batch", "itl", 1.4, 1.17), ("steady", "ttft", 1.0, 1.19)}
    # a factor below 1 (a band narrowed) or an unknown load is refused with a clear issue
    (tmp_path / "serving_bands.yaml").write_text(text.replace("below: 1.4", "below: 0.5").replace("mode: steady",
                                                                                                 "mode: bursty"))
    c = load_catalog(tmp_path, user=None)
    assert c.serving_bands == {} and len(c.issues) == 2


def test_the_shipped_serving_bands_cover_each_load_and_metric(cat):
    """catalog/serving_bands.yaml has a widening for the steady state and for a batch, for TTFT, ITL
    and throughput, none of them narrowing a band."""
    got = {(b.mode, b.metric): b for b in cat.serving_bands.values()}
    assert set(got) == {(m, k) for m in ("steady", "batch") for k in ("ttft", "itl", "throughput")}
    assert all(b.below >= 1 and b.above >= 1 and b.rows >= 30 and b.sources >= 3 for b in got.values())
