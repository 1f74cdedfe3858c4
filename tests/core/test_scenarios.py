"""Scenarios from issue 17: questions users ask, each with the answer a public deployment guide
supports and why. They assert the properties a guide supports (what fits, how many GPUs, which
format) rather than one exact row, so that a better efficiency profile does not break them.
"""

import pytest

from advisor.cli.main import main
from advisor.plan.recommend import Requirements, bits_class, by_hardware, is_reference, recommend
from advisor.text.verdicts import candidate_verdict

FP8_FLOOR = dict(min_quality_rank=94, quality_floor="FP8")   # FP8 or better (FP8, Q8_0, 16-bit)


def _rec(cat, model, **kw):
    return recommend(cat, Requirements(model=cat.model_named(model), **kw))


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_8b_for_one_user_on_a_600_dollar_card(cat):
    """Expected: one card of at most $600 for the user's own PC runs Llama 3.1 8B at 4 bits or better,
    ranked by purchase price. Why: Q4_K_M of an 8B model is 4.58 GiB and Q8_0 7.96 GiB (llama.cpp
    tools/perplexity/README.md, LLaMA 3 8b scoreboard), inside any 8-12 GB card; a home user buys, so the
    basis is purchase. A whole machine (the card and a desktop host) costs more than $600: with the
    host priced, nothing passes."""
    rec = _rec(cat, "Llama 3.1 8B", users=1, budget_usd=600, tok_s=15, own_host=True)
    assert rec.cost_basis == "purchase" and rec.passing
    for c in rec.passing[:20]:
        assert c.cost_usd <= 600 and c.total_gpus == 1
        assert bits_class(c.quant) >= 4
    # the floor: no 2- or 3-bit format is offered while 4-bit ones fit
    assert all(bits_class(c.quant) >= 4 for c in rec.passing)
    whole = _rec(cat, "Llama 3.1 8B", users=1, budget_usd=600, tok_s=15)
    card = next(c for c in whole.all() if c.hardware.key == "rtx-3060-12gb" and c.quant.key == "q4_k_m"
                and c.total_gpus == 1)
    assert not whole.passing and "desktop host" in card.price_note
    assert any(r.constraint == "budget_usd" for r in card.failures)


def test_32b_on_one_24_gb_card(cat):
    """Expected: Qwen3 32B on one RTX 3090/4090 with llama.cpp at a 4-5 bit GGUF (Q4_K_M class), not Q8_0 or
    16-bit. Why: Q4_K_M of a 32B model is ~19-20 GB of weights, which leaves room for an 8k context on a 24 GB
    card; Q8_0 (~34 GB) does not fit (https://specpicks.com/reviews/best-gpu-for-qwen-3-32b quantization
    matrix; https://llmgauge.com/run/qwen2-5-32b-on-rtx-4090/)."""
    rec = _rec(cat, "Qwen3 32B", users=1, hardware=("rtx-4090", "rtx-3090"), runtimes=("llama.cpp",), max_gpus=1)
    assert rec.passing and rec.requirements.context >= 8192
    assert {c.quant.key for c in rec.passing} & {"q4_k_m", "q4_k_s", "q5_k_s", "q5_k_m"}
    assert not any(c.quant.key in ("q8_0", "bf16", "f16") for c in rec.passing)
    q8 = next(c for c in rec.all() if c.quant.key == "q8_0")
    assert not q8.ok and any(r.constraint == "memory" for r in q8.failures)


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_70b_at_home_keeps_the_4_bit_floor(cat):
    """Expected: Llama 3.1 70B at home at Q4_K_M-class on two 24 GB cards (or a large unified-memory
    machine), never IQ1/IQ2 on one card. Why: Q4_K_M of a 70B model is 38.5 GiB (llama.cpp
    tools/perplexity/README.md, Llama 2 70B scoreboard); 1-2 bit formats lose 0.8-2.3 nats of KL divergence on
    Llama-3-8B (same README), which is why the recommender's default floor is the 4-bit class."""
    rec = _rec(cat, "Llama 3.1 70B", users=1, tok_s=10, hardware_kinds=("consumer", "workstation", "apple", "soc"))
    assert rec.cost_basis == "purchase" and rec.passing
    assert all(bits_class(c.quant) >= 4 for c in rec.passing)
    two_cards = [c for c in rec.passing if c.hardware.memory_gib == 24 and c.total_gpus == 2]
    assert any(c.quant.key == "q4_k_m" for c in two_cards)
    iq2 = next(c for c in rec.all() if c.quant.key == "iq2_xxs")
    assert not iq2.ok and "below the 4-bit floor" in candidate_verdict(iq2)
    # lowering the floor is explicit, and then 2-bit formats may run on one 24 GB card
    low = _rec(cat, "Llama 3.1 70B", users=1, hardware=("rtx-3090",), max_gpus=1, runtimes=("llama.cpp",),
               min_bits=1, context_tokens=2048)
    assert any(bits_class(c.quant) <= 2 for c in low.passing)


@pytest.mark.parametrize("hardware", [
    ("apple-m4-max-40c",),        # a 128 GB Mac
    ("ryzen-ai-max-plus-395",),   # Strix Halo, 128 GB
    ("dgx-spark-gb10",),          # DGX Spark, 128 GB
    ("h100-sxm5-80gb",),          # one H100
])
def test_gpt_oss_120b_runs_in_its_native_mxfp4_on_one_device(cat, hardware):
    """Expected: gpt-oss-120b on one 128 GB Mac, Strix Halo, DGX Spark or one H100, in MXFP4 as released, never
    upcast to BF16 or re-quantized to a "better" format. Why: "gpt-oss-120b ... Best with >=60GB VRAM, can fit on
    a single H100 ... MXFP4 quantized out of the box" (https://cookbook.openai.com/articles/gpt-oss/run-vllm);
    "MXFP4 is a native quant ... I don't see any reason to re-quantize it ... better speeds on both Spark and
    Strix Halo" (https://github.com/geerlingguy/ai-benchmarks/issues/34); it fits one Spark's ~120 GB
    (https://github.com/mark-ramsey-ri/vllm-dgx-spark/issues/8)."""
    rec = _rec(cat, "gpt-oss-120b", users=1, hardware=hardware, max_gpus=1)
    model = rec.requirements.model
    assert rec.passing, f"gpt-oss-120b should run on {hardware[0]}"
    best = rec.passing[0]
    assert best.total_gpus == 1 and is_reference(best.quant, model) and best.quality.startswith("reference")
    assert all(bits_class(c.quant) <= 4 for c in rec.passing)   # never upcast
    bf16 = [c for c in rec.all() if c.quant.key == "bf16"]
    assert bf16 and all(not c.ok and "not considered" in candidate_verdict(c) for c in bf16)


@pytest.mark.parametrize("users,fewest,most", [(20, 1, 2), (50, 2, 4), (200, 4, 16)])
def test_70b_fp8_for_a_team_scales_with_users(cat, users, fewest, most):
    """Expected: Llama 3.1 70B at FP8 (or better) on H100s: 1-2 GPUs for 20 users, 2-4 for 50 (not 8), 4 or
    more for 200, spread as tensor-parallel groups or data-parallel replicas. Why: FP8 weights are ~70 GB, so one
    H100 holds the model with a small KV cache (a 70B FP8 checkpoint on one H100 needs --max-model-len ~9000:
    https://huggingface.co/cortecs/Llama-3.3-70B-Instruct-FP8-Dynamic/discussions/1); each user at 8k tokens needs
    8192 x 320 KiB = 2.5 GiB of BF16 KV (80 layers x 8 KV heads x 128 x 2 x 2 bytes per token, the model's
    config.json), so 50 users' caches need a second to fourth GPU and 200 users several groups."""
    rec = _rec(cat, "Llama 3.1 70B", users=users, hardware=("h100-sxm5-80gb",), ttft_ms=2000, tok_s=20, **FP8_FLOOR)
    assert rec.cost_basis == "hour" and rec.passing
    best = rec.passing[0]
    assert fewest <= best.total_gpus <= most, best.label
    assert best.quant.quality_rank >= 94
    assert best.usd_per_million_tokens and best.usd_per_million_tokens > 0


def test_replicas_are_priced_and_printed_as_groups(cat, capsys):
    """200 users on H100s: where the best answer is several groups, the label says "2 × (4 × H100, TP 4)"
    and the cost counts every GPU of every replica."""
    rec = _rec(cat, "Llama 3.1 70B", users=200, hardware=("h100-sxm5-80gb",), ttft_ms=2000, tok_s=20,
               max_gpus=16, **FP8_FLOOR)
    replicated = [c for c in rec.passing if c.replicas > 1]
    assert replicated
    c = replicated[0]
    assert (c.label.startswith(f"{c.replicas} × (") and f"TP {c.gpus}" in c.label) or \
        (c.gpus == 1 and c.label.endswith("(a replica each)"))
    from advisor.plan import pricing

    assert c.cost_usd_hour == pytest.approx(pricing.rent(cat, c.hardware).usd * c.gpus * c.replicas)
    assert c.users == 200 and f"{c.replicas} replicas" in c.launch   # each replica serves its share


def test_405b_for_20_users_needs_a_full_h100_node_at_fp8(cat):
    """Expected: Llama 3.1 405B for 20 users: at FP8 on H100 a full 8-GPU node (never 4), on H200 a node too.
    Why: FP8 halves the 16-bit memory (https://huggingface.co/nvidia/Llama-3.1-405B-Instruct-FP8), ~405 GB of
    weights: more than 4 x 80 GB, less than 8 x 80 GB."""
    rec = _rec(cat, "Llama 3.1 405B", users=20, hardware=("h100-sxm5-80gb",), ttft_ms=3000, tok_s=15,
               runtimes=("vllm", "sglang", "tensorrt-llm"), **FP8_FLOOR)
    assert rec.passing
    # (instances past a node are tried for a model this large: none is smaller than a node)
    assert min(c.gpus for c in rec.passing) == 8 and rec.passing[0].gpus == 8
    four = [c for c in rec.all() if c.gpus == 4 and c.quant.key == "fp8"]
    assert four and all(not c.ok for c in four)


def test_deepseek_r1_for_100_users_on_a_node_in_native_fp8(cat):
    """Expected: DeepSeek-R1 for 100 users in its native FP8 on one 8-GPU H200 (or MI300X) node; an 8 x H100
    node does not hold it, and BF16 (an upcast) is never offered. Why: SGLang's DeepSeek guide lists FP8 on
    8 x H200, 8 x MI300X or 2 x 8 x H100, BF16 only "upcast from original FP8" on twice the GPUs, and says not to
    pass --quantization fp8 since the model already is FP8 (https://docs.sglang.io/docs/basic_usage/deepseek_v3.md);
    vLLM's recipe: 8 x H200 with native FP8
    (https://docs.vllm.ai/projects/recipes/en/latest/DeepSeek/DeepSeek-V3.html)."""
    rec = _rec(cat, "DeepSeek-R1", users=100, hardware=("h200-sxm-141gb", "h100-sxm5-80gb"), ttft_ms=3000, tok_s=15,
               runtimes=("vllm", "sglang"))
    model = rec.requirements.model
    fp8_h200 = [c for c in rec.passing if c.hardware.key == "h200-sxm-141gb" and c.quant.key == "fp8"]
    assert fp8_h200 and min(c.gpus for c in fp8_h200) == 8
    assert fp8_h200[0].quality.startswith("reference")
    assert not [c for c in rec.passing if c.hardware.key == "h100-sxm5-80gb" and c.quant.key == "fp8" and c.gpus <= 8]
    # the guide's 2 x 8 x H100: two nodes hold it
    assert [c for c in rec.passing if c.hardware.key == "h100-sxm5-80gb" and c.quant.key == "fp8" and c.nodes == 2]
    bf16 = [c for c in rec.all() if c.quant.key == "bf16"]
    assert bf16 and all(not c.ok for c in bf16)
    assert all(is_reference(c.quant, model) or bits_class(c.quant) < 8 for c in rec.passing)


def test_128k_context_sizes_the_kv_cache(cat):
    """Expected: Llama 3.1 8B for 4 users who may each reach 128k tokens: one 80 GB GPU holds it, one 24 GB card
    does not at 16-bit KV. Why: 32 layers x 8 KV heads x 128 x 2 (K, V) x 2 bytes = 128 KiB per token
    (config.json of meta-llama/Llama-3.1-8B), 16 GiB per user at 131,072 tokens; llama-server reserves a
    full-context slot per user (-c is the total over -np slots)."""
    common = dict(users=4, context_tokens=131072, prompt_tokens=32000, output_tokens=1000, kv_dtypes=("f16",))
    big = _rec(cat, "Llama 3.1 8B", hardware=("h100-sxm5-80gb",), max_gpus=1, **common)
    assert big.passing and big.requirements.context == 131072
    assert big.passing[0].total_gpus == 1
    small = _rec(cat, "Llama 3.1 8B", hardware=("rtx-4090",), max_gpus=4, runtimes=("llama.cpp",), **common)
    # one card cannot hold four 16 GiB caches: only more cards (a card per user or two) serve them
    assert small.passing and all(c.total_gpus >= 2 for c in small.passing)
    one_card = [c for c in small.all() if c.total_gpus == 1]
    assert one_card and all(any(r.constraint == "memory" for r in c.failures) for c in one_card)


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_output_states_context_basis_quality_and_why(capsys):
    assert main(["recommend", "--model", "llama 3.1 8b", "--users", "1", "--hardware-kind", "consumer",
                 "--top", "4"]) == 0
    out = capsys.readouterr().out
    assert "context 8,192 (default for chat" in out
    assert "ranked by buy" in out and "Why #1:" in out
    assert "rank " not in out and "Best configuration per hardware" in out
    assert main(["recommend", "--model", "llama 3.1 70b", "--users", "50", "--hardware-kind", "datacenter",
                 "--top", "3", "--cost-basis", "rent"]) == 0
    out = capsys.readouterr().out
    assert "ranked by rent" in out and "/M tok" in out and "(--cost-basis rent)" in out


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_rows_are_grouped_by_hardware(cat):
    rec = _rec(cat, "Llama 3.1 8B", users=4, hardware_kinds=("datacenter",))
    groups = by_hardware(rec.passing, 5)
    keys = [g.best.hardware.key for g in groups]
    assert len(keys) == len(set(keys)) == 5
    for g in groups:
        assert all(a.hardware.key == g.best.hardware.key for a in g.alternatives)
