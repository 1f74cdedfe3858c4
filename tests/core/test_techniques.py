"""Serving techniques as what-ifs (advisor.model.techniques): golden numbers with the arithmetic in
each test, physical properties, and the command line's flags, --cases columns and JSON."""

import csv
import json

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.cli.main import PREDICT_CSV_OUTPUTS, TECHNIQUE_CSV_OUTPUTS, main
from advisor.data.errors import AdvisorError
from advisor.model.config import configure
from advisor.model.efficiency import efficiency_for
from advisor.model.predict import evaluate_config, predict
from advisor.model.techniques import (HOST_BW_FRACTION, PCIE_READ_FRACTION, Techniques, attention,
                                      attention_variant, eager_attention, expected_tokens, offload,
                                      offload_curve, pcie_gb_s, speculative, speculative_curve,
                                      techniques_from, tokenizer_refusal, what_if)


def eff_of(cat, cfg):
    return efficiency_for(cat.profiles, cfg.runtime, cfg.hardware)


# ---- speculative decoding ------------------------------------------------------------------------

def test_expected_tokens_per_round():
    # E = 1 + α + α² + … + α^k = (1 − α^(k+1)) / (1 − α)
    assert expected_tokens(0.7, 4) == pytest.approx(1 + 0.7 + 0.49 + 0.343 + 0.2401)  # 2.7731
    assert expected_tokens(0.7, 4) == pytest.approx((1 - 0.7 ** 5) / 0.3)
    assert expected_tokens(0.8, 3) == pytest.approx(2.952)
    assert expected_tokens(0.0, 7) == 1.0          # nothing accepted: the target's own token only
    assert expected_tokens(1.0, 4) == 5.0          # everything accepted: k + 1


def test_70b_with_a_1b_draft_doubles_batch_1_decode_and_stops_paying_past_the_knee(cat):
    cfg = configure(cat, hardware="H100 SXM", model="Llama 3.1 70B", runtime="vllm", quant="fp8")
    draft = cat.model_named("Llama 3.2 1B")
    e = speculative(cat, cfg, Techniques(draft=draft, draft_k=4, accept=0.7))
    d = e.details
    # the plain step of each model, priced by the kernel on its own
    t_plain = 1 / predict(cat, cfg).decode_tok_s
    t_draft = 1 / predict(cat, cfg.replace(model=draft)).decode_tok_s
    # at batch 1 the verification pass of 5 tokens is still memory-bound: it reads the same
    # ≈70 GB of FP8 weights as a plain step, so it costs exactly a plain step
    assert d["verify_step_ms"] == pytest.approx(t_plain * 1e3, rel=1e-12)
    assert d["draft_step_ms"] == pytest.approx(t_draft * 1e3, rel=1e-12)
    # speed-up = E · t_plain / (k · t_draft + t_verify) = 2.7731 · 26.63 / (4 · 2.565 + 26.63) ms ≈ 2.0
    E = (1 - 0.7 ** 5) / (1 - 0.7)
    assert e.speedup == pytest.approx(E * t_plain / (4 * t_draft + t_plain), rel=1e-9)
    assert 1.9 < e.speedup < 2.1
    assert e.after.decode_tok_s == pytest.approx(E / (4 * t_draft + t_plain))
    # memory: the draft's 1.24B FP8 weights (≈1.5 GB) and its KV come on top
    assert d["draft_weights_gb"] == pytest.approx(1.5, abs=0.05)
    assert e.after.memory_gb > e.before.memory_gb and e.after.max_batch <= e.before.max_batch
    # the crossover: the first batch where a round's tokens no longer pay for it, checked one
    # batch either side with scalar evaluations of the three steps
    cross = d["crossover_batch"]
    eff = eff_of(cat, cfg)

    def speedup_at(b):
        c = cfg.replace(batch=b)
        tp = 1 / float(evaluate_config(c, eff).decode_tok_s)
        tv = 1 / float(evaluate_config(c, eff, query_tokens=5.0).decode_tok_s)
        td = 1 / float(evaluate_config(c.replace(model=draft), eff).decode_tok_s)
        return E * tp / (4 * td + tv)

    assert cross is not None and speedup_at(cross - 1) >= 1.0 > speedup_at(cross)
    # …and it lies where the verification pass of B·(k+1) tokens has passed the knee at the roofs
    # the step attains (the ideal knee, where the step's FLOPs meet its weight reads, is ≈ 1 B/weight
    # · 1979 TFLOP/s / (3.35 TB/s · 2) ≈ 300; at the fractions of each roof the profile reaches it
    # comes earlier when compute is reached less well than bandwidth), while the plain step is not
    knee = predict(cat, cfg).knee_batch
    assert 250 < knee < 350
    attained_knee = knee * float(eff.prefill_compute_fraction) / float(eff.decode_bw_fraction)
    assert cross * 5 > attained_knee and cross < attained_knee


def test_verification_step_has_k_plus_1_times_the_flops_and_the_same_kv(cat):
    cfg = configure(cat, hardware="H100 SXM", model="Llama 3.1 8B", runtime="vllm", quant="bf16", batch=64)
    eff = eff_of(cat, cfg)
    plain, verify = evaluate_config(cfg, eff), evaluate_config(cfg, eff, query_tokens=5.0)
    assert float(verify.decode_flops) == pytest.approx(5 * float(plain.decode_flops))
    assert float(verify.decode_kv_bytes) == float(plain.decode_kv_bytes)
    assert float(verify.decode_weight_bytes) == float(plain.decode_weight_bytes)  # dense: all weights either way


def test_a_draft_must_share_the_tokenizer(cat):
    target = cat.model_named("Qwen2.5 32B")
    # Qwen2.5 0.5B pads its vocabulary to 151,936, the 32B to 152,064: 128 apart, within llama.cpp's limit
    assert tokenizer_refusal(cat.model_named("Qwen2.5 0.5B"), target) == ""
    assert "tokenizer" in tokenizer_refusal(cat.model_named("Llama 3.2 1B"), target)
    # same family, different tokenizer: Llama 2's 32,000 tokens against Llama 3's 128,256
    assert "vocabulary" in tokenizer_refusal(cat.model_named("Llama 2 7B"), cat.model_named("Llama 3.1 70B"))
    cfg = configure(cat, hardware="rtx 4090", model="Qwen2.5 32B")
    with pytest.raises(AdvisorError, match="tokenizer"):
        speculative(cat, cfg, Techniques(draft=cat.model_named("Llama 3.2 1B")))
    with pytest.raises(AdvisorError, match="smaller"):
        speculative(cat, configure(cat, hardware="H100 SXM", model="Llama 3.2 1B"),
                    Techniques(draft=cat.model_named("Llama 3.1 8B")))


def test_a_draft_head_adds_only_its_own_layers(cat):
    cfg = configure(cat, hardware="H100 SXM", model="Llama 3.1 70B", runtime="vllm", quant="fp8")
    e = speculative(cat, cfg, Techniques(head_params_b=0.8, head_layers=1))
    d = e.details
    assert d["k"] == 3 and d["accept"] == 0.8            # the head's defaults
    assert d["draft_weights_gb"] == pytest.approx(0.8, rel=0.02)  # 0.8B at 1 byte; embedding and head shared
    assert e.speedup > 1.5


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(model=st.sampled_from(["Llama 3.1 8B", "Llama 3.1 70B", "Qwen2.5 32B"]),
       hw=st.sampled_from(["H100 SXM", "rtx 4090", "A100 80GB"]), k=st.integers(1, 8))
def test_nothing_accepted_never_speeds_up(cat, model, hw, k):
    cfg = configure(cat, hardware=hw, model=model)
    draft = "Llama 3.2 1B" if model.startswith("Llama") else "Qwen2.5 0.5B"
    c = speculative_curve(cat, cfg, Techniques(draft=cat.model_named(draft), draft_k=k, accept=0.0),
                          batches=[1, 2, 8, 64, 512])
    assert np.all(c.speedup <= 1.0)


# ---- flash attention off -------------------------------------------------------------------------

def test_eager_attention_at_a_32k_prompt(cat):
    cfg = configure(cat, hardware="rtx 4090", model="Llama 3.1 8B", runtime="llama.cpp", prompt=32768)
    e = eager_attention(cat, cfg)
    # llama.cpp prefills in chunks of u = 512 tokens; the last chunk's fp32 scores, one layer at a
    # time: 4 B × 32 heads × 512 × 32,768 = 2,147,483,648 B of workspace
    assert e.details["score_workspace_gpu_gb"] * 1e9 == pytest.approx(4 * 32 * 512 * 32768)
    assert e.after.memory_gb - e.before.memory_gb == pytest.approx(2.147483648)
    # bytes moved: 4 passes × 4 B × 32 heads × 32 layers × s·(d + (s + u)/2)
    extra = 4 * 4 * 32 * 32 * 32768 * (0 + (32768 + 512) / 2)
    assert extra == 8_933_531_975_680
    assert e.details["prefill_extra_gb_per_gpu"] * 1e9 == pytest.approx(extra)
    # at the attained bandwidth (1008 GB/s × η) that is several seconds on top of the prefill
    eta = float(eff_of(cat, cfg).decode_bw_fraction)
    assert e.after.ttft_ms - e.before.ttft_ms == pytest.approx(extra / (1008e9 * eta) * 1e3)
    assert e.after.ttft_ms > 2 * e.before.ttft_ms
    # decode barely moves (the scores of one token are 1/8 of its KV reads at most)
    assert 0.9 < e.speedup <= 1.0
    assert "-fa off" in e.details["switch"]


def test_eager_attention_can_stop_a_long_prompt_fitting(cat):
    # 7.3 GB of weights and 16 GB of KV for 128k tokens fit a 24 GB card only just; the scores do not
    cfg = configure(cat, hardware="rtx 4090", model="Llama 3.1 8B", runtime="llama.cpp", prompt=100_000,
                    kv_dtype="q8_0")
    e = eager_attention(cat, cfg)
    assert e.after.memory_gb - e.before.memory_gb == pytest.approx(4 * 32 * 512 * 100_000 / 1e9)
    assert e.after.max_batch <= e.before.max_batch


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(model=st.sampled_from(["Llama 3.1 8B", "Gemma 2 9B", "Qwen3 30B A3B", "Mistral 7B v0.1", "Phi-3 mini 4k"]),
       runtime=st.sampled_from(["llama.cpp", "vllm", "mlx"]), prompt=st.integers(0, 20000),
       depth=st.integers(0, 4000), batch=st.integers(1, 16))
def test_eager_attention_never_lowers_ttft(cat, model, runtime, prompt, depth, batch):
    hw = "M2 Max" if runtime == "mlx" else "H100 SXM"
    try:
        cfg = configure(cat, hardware=hw, model=model, runtime=runtime, prompt=prompt, depth=depth, batch=batch,
                        output=16)
        e = eager_attention(cat, cfg)
    except AdvisorError:
        return
    assert e.after.ttft_ms >= e.before.ttft_ms
    assert e.after.decode_tok_s <= e.before.decode_tok_s
    assert e.after.memory_gb >= e.before.memory_gb


# ---- attention layout ----------------------------------------------------------------------------

def test_mha_gqa_mqa_kv_ratios(cat):
    cfg = configure(cat, hardware="rtx 4090", model="Llama 3.1 8B", prompt=8192)
    m = cfg.model
    assert (m.heads, m.kv_heads, m.head_dim) == (32, 8, 128)
    # KV per token = 2 · 32 layers · G · 128 · 2 B: 131,072 B for G = 8
    ratios = {spec: attention(cat, cfg, spec).details["kv_ratio"] for spec in ("mha", "gqa:4", "gqa:8", "mqa")}
    assert ratios == {"mha": 4.0, "gqa:4": 0.5, "gqa:8": 1.0, "mqa": 0.125}
    # weights change by the K and V projections only: 32 layers × 4096 × (128 + 128) × ΔG parameters
    mha = attention_variant(m, "mha")
    assert (mha.params_total_b - m.params_total_b) * 1e9 == pytest.approx(32 * 4096 * 256 * 24)
    assert mha.kv_heads == 32 and mha.attention == "mha"
    e = attention(cat, cfg, "mqa")
    assert e.after.max_batch > 4 * e.before.max_batch     # 8× less KV per sequence
    assert e.after.decode_tok_s > e.before.decode_tok_s
    e = attention(cat, cfg, "mha")
    assert e.after.max_batch < e.before.max_batch and e.after.decode_tok_s < e.before.decode_tok_s


def test_attention_layout_refusals(cat):
    with pytest.raises(AdvisorError, match="divide"):
        attention_variant(cat.model_named("Llama 3.1 8B"), "gqa:5")
    with pytest.raises(AdvisorError, match="mha, mqa or gqa"):
        attention_variant(cat.model_named("Llama 3.1 8B"), "mla")
    with pytest.raises(AdvisorError, match="MLA"):
        attention_variant(cat.model_named("DeepSeek V3"), "gqa:8")


# ---- partial offload -----------------------------------------------------------------------------

def test_32b_q4_on_a_12gb_card_with_partial_offload(cat):
    cfg = configure(cat, hardware="rtx 3060 12gb", model="Qwen2.5 32B", runtime="llama.cpp", quant="q4_k_m")
    assert not predict(cat, cfg).fits            # ≈18.5 GB of Q4_K_M weights on a 12 GB card
    curve = offload_curve(cat, cfg)
    fit = np.nonzero(curve.fits)[0]
    N = int(curve.gpu_layers[fit.max()])         # the most layers that fit
    assert 30 <= N < 64
    # By hand: a batch-1 step on the GPU reads the body (weights + KV) at 360 GB/s × η; each of the
    # L − N host layers is read instead from RAM at 89.6 GB/s × 0.7 = 62.7 GB/s, and the output
    # head (on the CPU unless all layers are offloaded) too.
    eff = eff_of(cat, cfg)
    r = evaluate_config(cfg, eff)
    gpu_bw, host_bw = 360e9 * float(eff.decode_bw_fraction), 89.6e9 * HOST_BW_FRACTION
    assert host_bw == pytest.approx(62.72e9)
    head = float(r.decode_head_bytes)
    body = float(r.decode_weight_bytes) - head + float(r.decode_kv_bytes)
    t_all_gpu = 1 / float(r.decode_tok_s)
    f = (64 - N) / 64
    t = t_all_gpu + f * (body / host_bw - body / gpu_bw) + (head / host_bw - head / gpu_bw)
    assert curve.decode_tok_s[N] == pytest.approx(1 / t)
    e = offload(cat, cfg, Techniques(gpu_layers=N))
    assert e.after.fits and e.after.decode_tok_s == pytest.approx(1 / t)
    # slower than the all-GPU figure by that arithmetic: about a third of it here
    assert 0.2 < e.speedup < 0.5
    assert e.after.decode_tok_s < e.details["all_gpu_ceiling_tok_s"]
    # everything on the CPU: the whole model at RAM speed, ≈ 62.7 GB/s / 18.5 GB ≈ 3.4 tok/s
    assert curve.decode_tok_s[0] == pytest.approx(1 / (t_all_gpu + (body + head) * (1 / host_bw - 1 / gpu_bw)))
    assert 2.5 < curve.decode_tok_s[0] < 4
    # prompts copy the host layers' weights to the GPU over PCIe 4.0 x16 (31.5 GB/s × 0.8) per 512-token chunk
    assert pcie_gb_s(cfg.hardware) == pytest.approx(16 * 128 / 130 * 16 / 8)
    assert e.after.ttft_ms > e.before.ttft_ms


def test_vllm_cpu_offload_gb_reads_over_pcie_every_step(cat):
    cfg = configure(cat, hardware="rtx 4090", model="Llama 3.1 8B", runtime="vllm", quant="bf16")
    e = offload(cat, cfg, Techniques(offload_gb=4))
    eff = eff_of(cat, cfg)
    pcie = 31.5077e9 * PCIE_READ_FRACTION
    dt = 4e9 * (1 / pcie - 1 / (1008e9 * float(eff.decode_bw_fraction)))   # ≈ 0.155 s per step
    assert 1 / e.after.decode_tok_s - 1 / e.before.decode_tok_s == pytest.approx(dt, rel=1e-4)
    assert e.after.max_batch > e.before.max_batch   # 4 GB more for the KV cache
    with pytest.raises(AdvisorError, match="gpu-layers"):
        offload(cat, configure(cat, hardware="rtx 4090", model="Llama 3.1 8B"), Techniques(offload_gb=4))
    with pytest.raises(AdvisorError, match="offload-gb"):
        offload(cat, cfg, Techniques(gpu_layers=20))


@pytest.mark.parametrize("hw,model,rt", [("rtx 3060 12gb", "Qwen2.5 32B", "llama.cpp"),
                                         ("rtx 4090", "Llama 3.1 70B", "llama.cpp"),
                                         ("rtx 4090", "Qwen3 30B A3B", "llama.cpp"),
                                         ("rtx 4090", "Llama 3.1 8B", "vllm")])
@pytest.mark.parametrize("batch", [1, 16])
def test_more_gpu_layers_never_slow_decode(cat, hw, model, rt, batch):
    curve = offload_curve(cat, configure(cat, hardware=hw, model=model, runtime=rt, batch=batch))
    tok = curve.decode_tok_s
    if rt == "vllm":
        tok = tok[::-1]       # more GB offloaded = fewer on the GPU
    assert np.all(np.diff(tok) >= -1e-9 * tok[1:])


# ---- no technique, many techniques, the command line ---------------------------------------------

def test_no_technique_asks_for_nothing(cat):
    cfg = configure(cat, hardware="rtx 4090", model="Llama 3.1 8B")
    assert not Techniques().any and what_if(cat, cfg, Techniques()) == []
    eff = eff_of(cat, cfg)
    a, b = evaluate_config(cfg, eff), evaluate_config(cfg, eff, query_tokens=1.0, score_bytes=0.0)
    for name in a.names():
        assert np.array_equal(getattr(a, name), getattr(b, name)), name


def test_techniques_from_text(cat):
    t = techniques_from(cat, draft="llama 3.2 1b", draft_k="5", accept="0.6", flash_attention="off",
                        attention="gqa:4", gpu_layers="20")
    assert t.draft.key == "llama-3.2-1b" and (t.k, t.alpha) == (5, 0.6) and not t.flash_attention
    for bad in (dict(accept="1.2"), dict(draft_k="0"), dict(gpu_layers="-1"), dict(flash_attention="maybe"),
                dict(gpu_layers="2", offload_gb="3"), dict(draft_k="2.5")):
        with pytest.raises(AdvisorError):
            techniques_from(cat, **bad)


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_predict_json_has_a_techniques_section(capsys):
    code, out, _ = run(capsys, "predict", "--hardware", "H100 SXM", "--model", "Llama 3.1 70B", "--quant", "fp8",
                       "--draft", "Llama 3.2 1B", "--accept", "0.7", "--draft-k", "4", "--no-flash-attention",
                       "--attention", "mqa", "--json")
    assert code == 0
    d = json.loads(out)
    assert [t["technique"] for t in d["techniques"]] == ["speculative", "eager-attention", "attention"]
    spec = d["techniques"][0]
    assert set(spec["before"]) == {"ttft_ms", "decode_tok_s", "throughput_tok_s", "max_batch", "memory_gb", "fits"}
    assert spec["decode_speedup"] > 1.5 and spec["details"]["crossover_batch"] > 1
    code, out, _ = run(capsys, "predict", "--hardware", "rtx 4090", "--model", "Llama 3.1 8B", "--json")
    assert "techniques" not in json.loads(out)
    code, out, _ = run(capsys, "predict", "--hardware", "rtx 3060 12gb", "--model", "Qwen2.5 32B",
                       "--gpu-layers", "30")
    assert "What-ifs" in out and "-ngl 30" in out
    code, _, err = run(capsys, "predict", "--hardware", "rtx 4090", "--model", "Qwen2.5 32B", "--draft",
                       "Llama 3.2 1B")
    assert code == 2 and "tokenizer" in err


def test_predict_cases_with_technique_columns(capsys, tmp_path):
    src = tmp_path / "in.csv"
    src.write_text("hardware,model,quant,runtime,draft,draft_k,accept,flash_attention,attention,gpu_layers\n"
                   "H100 SXM,Llama 3.1 70B,fp8,vllm,Llama 3.2 1B,4,0.7,,,\n"
                   "rtx 4090,Llama 3.1 8B,,,,,,off,,\n"
                   "rtx 4090,Llama 3.1 8B,,,,,,,mqa,\n"
                   "rtx 3060 12gb,Qwen2.5 32B,,,,,,,,30\n"
                   "rtx 4090,Llama 3.1 8B,,,,,,,,\n"
                   "rtx 4090,Llama 3.1 8B,,,,,,off,mqa,\n")
    out = tmp_path / "out.csv"
    code, _, err = run(capsys, "predict", "--cases", str(src), "--out", str(out))
    rows = list(csv.DictReader(out.open()))
    assert set(PREDICT_CSV_OUTPUTS) | set(TECHNIQUE_CSV_OUTPUTS) <= set(rows[0])
    assert list(rows[0])[-1] == "error"
    assert [r["technique"] for r in rows[:5]] == ["speculative", "eager-attention", "attention", "offload", ""]
    assert float(rows[0]["decode_speedup"]) > 1.5 and int(rows[0]["crossover_batch"]) > 1
    assert rows[3]["after_fits"] == "true" and rows[3]["fits"] == "false"
    assert "one technique per row" in rows[5]["error"]
    assert code == 1 and "1 of 6" in err


def test_moe_target_speculation_loses_at_batch_one_and_pays_between(cat):
    # k+1 = 5 tokens per sequence wake more of Qwen3-30B-A3B's experts than one token: at a few
    # sequences verification reads more weights, so speculation gains nothing (about break-even at
    # batch 1, where the step's fixed cost is spread over the accepted tokens) or loses; from a few
    # sequences on the experts are read anyway and it pays, until the verification pass nears the
    # compute roof
    from advisor.model.techniques import speculative_curve, techniques_from
    cfg = configure(cat, hardware="rtx 4090", model="Qwen3 30B A3B")
    c = speculative_curve(cat, cfg, techniques_from(cat, draft="Qwen3 0.6B"))
    assert c.speedup[0] < 1.05 and c.speedup[c.batch <= 4].min() < 1
    assert c.pays_from_batch is not None and c.pays_from_batch > 1
    assert np.all(c.speedup[c.batch < c.pays_from_batch][1:] < 1.0)
    assert c.crossover_batch is not None and c.crossover_batch > c.pays_from_batch
    between = (c.batch >= c.pays_from_batch) & (c.batch < c.crossover_batch)
    assert np.all(c.speedup[between] >= 1.0) and np.all(c.speedup[c.batch >= c.crossover_batch] < 1.0)
