"""Hand-checked recommender scenarios and its invariants."""

import json

import pytest

from advisor.cli.main import main
from advisor.text.verdicts import candidate_verdict
from advisor.plan.recommend import Requirements, recommend


def test_7b_chat_for_one_user_fits_a_16_gb_laptop_gpu_at_q4_k_m(cat):
    laptop = [h.key for h in cat.hardware.values() if h.kind == "laptop" and h.memory_gib == 16]
    assert laptop
    req = Requirements(model=cat.model_named("Llama-2-7B"), prompt_tokens=512, output_tokens=256, users=1,
                       hardware=tuple(laptop), runtimes=("llama.cpp",), tok_s=10)
    rec = recommend(cat, req)
    q4 = [c for c in rec.passing if c.quant.key == "q4_k_m"]
    assert q4, "Q4_K_M on a 16 GB laptop GPU should pass"
    # 6.74e9 params at ~4.8 bits ≈ 4 GB of weights: far inside 16 GB
    assert all(c.memory_needed_gb < 8 for c in q4)
    # a 4-bit 70B (≈ 40 GB) does not, whatever the quantization
    big = recommend(cat, Requirements(model=cat.model_named("Llama-2-70B"), users=1, hardware=tuple(laptop),
                                      runtimes=("llama.cpp",), min_quality_rank=cat.quants["q4_0"].quality_rank,
                                      quality_floor="Q4_0"))
    assert big.n_passing == 0


def test_70b_for_50_users_at_8k_needs_four_h100s_and_says_so(cat, capsys):
    # BF16 weights 141 GB + KV 50 × 8192 × 320 KiB ≈ 134 GB → about 280 GB: 4 × H100 (4 × 76 GB usable)
    req = Requirements(model=cat.model_named("Llama-3.1-70B"), prompt_tokens=2048, output_tokens=512,
                       context_tokens=8192, users=50, hardware=("h100-sxm5-80gb",), runtimes=("vllm",),
                       min_quality_rank=100, quality_floor="BF16")
    rec = recommend(cat, req)
    # fewest GPUs in all: one 4-GPU group (replicas of smaller groups cost more GPUs)
    assert rec.passing and min(c.total_gpus for c in rec.passing) == 4
    assert rec.passing[0].total_gpus == 4 and rec.passing[0].replicas == 1
    code = main(["recommend", "--model", "Llama 3.1 70B", "--users", "50", "--context", "8192", "--prompt", "2048",
                 "--output", "512", "--hardware", "H100 SXM5 80GB", "--runtime", "vllm", "--min-quant", "bf16"])
    out = capsys.readouterr().out
    assert code == 0 and "4 × H100 SXM5 80GB" in out
    assert "--tensor-parallel-size 4" in out and "--max-model-len 8192" in out


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_a_server_for_many_users_is_sized_for_a_usable_speed_unless_told(cat, capsys):
    """Thousands of users and no --tok-s: the cheapest answer would serve each at a token or two a
    second. Several users get a floor of about reading speed (DEFAULT_MIN_TOK_S), which the header
    and the JSON name as a default; one user, a burst and an explicit target are left as asked."""
    from advisor.plan.recommend import DEFAULT_MIN_TOK_S, with_default_speed

    m = cat.model_named("Llama 3.1 8B")
    many = recommend(cat, Requirements(model=m, users=200, hardware=("l4-24gb", "h100-sxm5-80gb"),
                                       runtimes=("vllm",)))
    assert many.requirements.tok_s == DEFAULT_MIN_TOK_S and many.requirements.tok_s_default
    assert many.passing and all(c.tok_s >= DEFAULT_MIN_TOK_S for c in many.passing)
    assert with_default_speed(Requirements(model=m, users=1)).tok_s is None
    assert with_default_speed(Requirements(model=m, users=50, burst=True)).tok_s is None
    assert with_default_speed(Requirements(model=m, users=50, tok_s=3)).tok_s == 3
    open_loop = with_default_speed(Requirements(model=m, rps=5.0))
    assert open_loop.tok_s == DEFAULT_MIN_TOK_S
    # Little's law still turns the rate into users at its own default speed, not the floor
    assert open_loop.concurrency() == Requirements(model=m, rps=5.0).concurrency()
    assert main(["recommend", "--model", "Llama 3.1 8B", "--users", "200", "--hardware", "H100 SXM5 80GB",
                 "--runtime", "vllm", "--top", "1"]) == 0
    out = capsys.readouterr().out
    assert "≥ 10.0 tok/s per user (default for several users" in out.splitlines()[0]
    main(["recommend", "--model", "Llama 3.1 8B", "--users", "200", "--hardware", "H100 SXM5 80GB",
          "--runtime", "vllm", "--json", "--top", "1"])
    doc = json.loads(capsys.readouterr().out)
    assert doc["tok_s_target"] == DEFAULT_MIN_TOK_S and doc["tok_s_target_is_default"] is True


def test_several_datacenter_gpus_for_70b_at_50_users(cat):
    req = Requirements(model=cat.model_named("Llama-3.1-70B"), context_tokens=8192, users=50, ttft_ms=2000, tok_s=20,
                       hardware_kinds=("datacenter",), min_quality_rank=94, quality_floor="FP8")
    rec = recommend(cat, req)
    assert rec.passing
    best = rec.passing[0]
    assert best.hardware.kind == "datacenter" and best.quant.quality_rank >= 94


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_nothing_recommended_fails_to_fit_or_misses_a_target(cat):
    req = Requirements(model=cat.model_named("Qwen3-30B-A3B"), prompt_tokens=4000, output_tokens=500,
                       context_tokens=16000, users=8, ttft_ms=3000, tok_s=15)
    rec = recommend(cat, req)
    assert rec.n_passing > 10
    for c in rec.passing:
        assert c.memory_needed_gb <= c.memory_usable_gb + 1e-9
        assert c.ttft_ms <= 3000 and c.tok_s >= 15
        assert c.launch


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
@pytest.mark.parametrize("tighter", [dict(ttft_ms=500), dict(tok_s=60), dict(users=64), dict(context_tokens=32000)])
def test_tightening_a_target_never_makes_it_cheaper(cat, tighter):
    base = dict(model=cat.model_named("Llama-3.1-8B"), prompt_tokens=1000, output_tokens=200, users=8,
                ttft_ms=2000, tok_s=20, runtimes=("vllm",))
    loose = recommend(cat, Requirements(**base))
    tight = recommend(cat, Requirements(**{**base, **tighter}))
    assert loose.cost_basis == "hour"
    cheapest = lambda r: min((c.cost_usd_hour for c in r.passing if c.cost_usd_hour), default=float("inf"))  # noqa
    assert cheapest(tight) >= cheapest(loose)
    assert tight.n_passing <= loose.n_passing


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_safe_mode_is_never_more_permissive(cat):
    base = dict(model=cat.model_named("Llama-3.1-8B"), users=4, ttft_ms=800, tok_s=40)
    assert recommend(cat, Requirements(**base, safe=True)).n_passing <= recommend(cat, Requirements(**base)).n_passing


def test_impossible_request_says_why_with_the_closest_miss(cat, capsys):
    code = main(["recommend", "--model", "Llama 3.1 405B", "--users", "10", "--hardware-kind", "laptop"])
    out = capsys.readouterr().out
    assert code == 1
    assert "No configuration meets every requirement" in out and "needs" in out and "GB per GPU" in out


def test_quality_floor_rejects_with_the_perplexity_cost(cat):
    req = Requirements(model=cat.model_named("Llama-3.1-8B"), hardware=("rtx-4090",), runtimes=("llama.cpp",),
                       min_quality_rank=cat.quants["q4_k_m"].quality_rank, quality_floor="Q4_K_M", min_bits=1)
    rec = recommend(cat, req)
    q3 = next(c for c in rec.all() if c.quant.key == "q3_k_m")
    assert not q3.ok and "Q3_K_M (+0.66 ppl) rejected: below the quality floor Q4_K_M" in candidate_verdict(q3)
    assert all(c.quant.quality_rank >= cat.quants["q4_k_m"].quality_rank for c in rec.passing)


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_launch_lines_speak_each_runtime(cat):
    req = Requirements(model=cat.model_named("Llama-3.1-8B"), context_tokens=16384, users=4, kv_dtypes=("fp8", "q8_0"))
    rec = recommend(cat, req)
    by_rt = {}
    for c in rec.passing:
        by_rt.setdefault(c.runtime.key, c)
    assert "--kv-cache-dtype fp8" in by_rt["vllm"].launch and "--max-model-len 16384" in by_rt["vllm"].launch
    # llama-server's -c is the total over its -np slots: 4 users × 16,384 tokens each
    assert "-ctk q8_0" in by_rt["llama.cpp"].launch and "-c 65536 -np 4" in by_rt["llama.cpp"].launch


@pytest.mark.parametrize("argv,needle", [
    (["recommend", "--model", "llama 3.1 8b", "--users", "0"], "users must be at least 1"),
    (["recommend", "--model", "llama 2 7b", "--context", "100000"], "native context of 4,096"),
    (["recommend", "--model", "llama 3.1 8b", "--hardware-kind", "mainframe"], "unknown hardware kind"),
    (["recommend", "--model", "llama 3.1 8b", "--ttft-ms", "-5"], "positive"),
    (["recommend", "--model", "llama 3.1 8b", "--tok-s", "fast"], "must be a number"),
])
def test_bad_recommend_input(capsys, argv, needle):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert needle in err and err.count("\n") == 1


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_recommend_json_lists_every_candidate_with_a_verdict(capsys):
    code = main(["recommend", "--model", "llama 3.1 8b", "--hardware", "rtx 4090,rtx 3090", "--json"])
    doc = json.loads(capsys.readouterr().out)
    assert code == 0 and doc["configurations"] == len(doc["candidates"]) > 20
    assert all(c["verdict"] for c in doc["candidates"])
    assert doc["candidates"][0]["ok"] and doc["candidates"][0]["launch"]


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_will_it_run(capsys):
    assert main(["will-it-run", "--hardware", "rtx 4090", "--context", "8192", "--json"]) == 0
    rows = {r["model"]: r for r in json.loads(capsys.readouterr().out)["rows"]}
    assert rows["Llama 3.1 8B"]["quant"] == "BF16" and rows["Llama 3.1 8B"]["mode"] == "gpu"
    # no 1-2 bit weights by default: the 70B runs at 4 bits with layers on the CPU, too slowly
    seventy = rows["Llama 3.1 70B"]
    assert seventy["quant"].startswith(("Q4", "IQ4")) and seventy["mode"] == "offload" and seventy["grade"] == "too slow"
    assert rows["Llama 3.1 405B"]["grade"] in ("too slow", "needs more RAM", "does not fit")
    assert main(["will-it-run", "--hardware", "M2 Max 38-core", "--model", "llama 3.1 70b"]) == 0
    out = capsys.readouterr().out
    assert "Q4_K_M" in out and "max context" in out


def test_unknown_hardware_in_will_it_run(capsys):
    assert main(["will-it-run", "--hardware", "gpu 9999"]) == 2


def test_max_ppl_rejects_unmeasured_formats_and_says_so(cat):
    req = Requirements(model=cat.model_named("Llama-3.1-8B"), hardware=("rtx-4090",), max_ppl_delta=0.2)
    rec = recommend(cat, req)
    assert rec.passing
    # every pass has a published figure within the limit, or is the 16-bit reference
    assert all(c.quality.startswith("reference") or (c.quant.ppl_delta is not None and c.quant.ppl_delta <= 0.2)
               for c in rec.passing)
    awq = next(c for c in rec.all() if c.quant.key == "awq-int4")
    assert not awq.ok and "no published perplexity figure" in candidate_verdict(awq)


def test_quality_scale_reference_kld_or_unmeasured(cat):
    from advisor.plan.recommend import is_reference, is_upcast, quality_text

    llama, oss, r1 = (cat.model_named(n) for n in ("Llama-3.1-8B", "gpt-oss-120b", "DeepSeek-R1"))
    q = cat.quants
    assert quality_text(q["bf16"], llama) == "reference (16-bit)"
    assert quality_text(q["q4_k_m"], llama) == "KLD 0.031 (Llama-3-8B)"
    assert quality_text(q["fp8"], llama) == "unmeasured"
    assert is_reference(q["mxfp4"], oss) and is_reference(q["mxfp4-moe-gguf"], oss)
    assert is_upcast(q["bf16"], oss) and is_upcast(q["q8_0"], oss) and is_upcast(q["q4_k_m"], oss)
    assert is_reference(q["fp8"], r1) and is_upcast(q["bf16"], r1) and is_upcast(q["int8-w8a8"], r1)
    assert not is_upcast(q["awq-int4"], r1) and quality_text(q["awq-int4"], r1) == "unmeasured (vs native FP8)"


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_cost_basis_follows_the_hardware_and_the_flag(cat):
    m = cat.model_named("Llama-3.1-8B")
    assert recommend(cat, Requirements(model=m, hardware_kinds=("datacenter",))).cost_basis == "hour"
    assert recommend(cat, Requirements(model=m, hardware_kinds=("consumer",))).cost_basis == "purchase"
    assert recommend(cat, Requirements(model=m, hardware_kinds=("apple",))).cost_basis == "purchase"
    rent = recommend(cat, Requirements(model=m, hardware_kinds=("consumer",), cost_basis="rent"))
    assert rent.cost_basis == "hour" and rent.cost_basis_why == "--cost-basis rent"
    first = rent.passing[0]
    # $/M output tokens at the predicted throughput
    assert first.usd_per_million_tokens == pytest.approx(first.cost_usd_hour / (first.throughput_tok_s * 3600) * 1e6)


def test_a_base_configuration_price_does_not_price_the_largest_memory(cat):
    from advisor.plan import pricing

    assert pricing.buy(cat, cat.hardware["apple-m2-ultra-60c"], 1) is None   # 192 GB; $3,999 is the 64 GB Mac
    spark = pricing.buy(cat, cat.hardware["dgx-spark-gb10"], 1)
    assert spark.capex_usd == 4699 and "list price" in spark.parts   # the February 2026 list price, not $3,999
    rent = pricing.rent(cat, cat.hardware["mi300x"])
    assert rent.quotes >= 3 and "median of" in rent.text("/h")         # not TensorWave's $1.50 listing alone


def test_pareto_front_matches_brute_force():
    import numpy as np
    from advisor.plan.recommend import _pareto, _pareto_blocks
    rng = np.random.default_rng(7)
    for trial in range(40):
        pts = rng.integers(0, 6, size=(int(rng.integers(1, 300)), 3)).astype(float)
        if trial % 3 == 0:
            pts[rng.random(len(pts)) < 0.1, 0] = np.inf   # unpriced configurations
        if trial % 4 == 1:
            pts[:, 1] += rng.random(len(pts))             # continuous speeds, few ties
        brute = np.array([not (np.all(pts <= p, axis=1) & np.any(pts < p, axis=1)).any() for p in pts])
        assert np.array_equal(_pareto(pts), brute)
        assert np.array_equal(_pareto_blocks(pts, block=16), brute)   # the path for many last-column values
    # a last column of many values takes the block path and gives the same front
    pts = rng.random((400, 3))
    brute = np.array([not (np.all(pts <= p, axis=1) & np.any(pts < p, axis=1)).any() for p in pts])
    assert np.array_equal(_pareto(pts), brute)


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_a_server_with_a_slot_per_user_gets_the_fewest_copies_whose_slots_fit(cat):
    """llama-server reserves each user's whole context: with 40 users on consumer cards, each passing
    configuration's copies hold their share of the users, and one copy fewer (the previous count
    tried) would not, either for lack of slots or because it would not serve the load."""
    import dataclasses

    from advisor.plan.recommend import REPLICAS

    req = Requirements(model=cat.model_named("Llama-3.1-8B"), prompt_tokens=512, output_tokens=256, users=40,
                       runtimes=("llama.cpp",), hardware_kinds=("consumer",), tok_s=5)
    rec = recommend(cat, req)
    rows = rec.passing
    assert rows and any(c.replicas > 1 for c in rows)
    for c in rows[:200]:
        share = -(-req.users // c.replicas)
        assert c.max_batch >= share, (c.label, c.replicas, c.max_batch)
        if c.replicas > 1:
            fewer = REPLICAS[REPLICAS.index(c.replicas) - 1]
            one_less = recommend(cat, dataclasses.replace(req, hardware=(c.hardware.key,), max_gpus=c.gpus * fewer))
            same = [d for d in one_less.passing if (d.gpus, d.runtime.key, d.quant.key, d.kv_dtype.key, d.layout)
                    == (c.gpus, c.runtime.key, c.quant.key, c.kv_dtype.key, c.layout)]
            assert not same, (c.label, c.replicas)
            break   # one such check is enough: each is a full ranking
