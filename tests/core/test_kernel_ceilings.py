"""The H200 and H100 kernel timings this project measured (`catalog/measured/kernels_h200_device.md`,
`kernels_h100_device.md`) as ceilings for the shipped calibration: an end-to-end efficiency fitted for
Hopper may not claim more of a roof than the kernels themselves reached there. A refit that does has
absorbed something else into that fraction (a wrong FLOP count, a missing overhead) and should be
looked at."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

from advisor import api

ROOT = Path(__file__).resolve().parents[2]
RUNS = {"h200-sxm-141gb": ROOT / "benchmarks" / "device_runs" / "2026-11-27-h200-kernels" / "kernels.jsonl",
        "h100-sxm5-80gb": ROOT / "benchmarks" / "device_runs" / "2026-11-27-h100-kernels" / "kernels.jsonl"}
RUN = RUNS["h200-sxm-141gb"]
PEAK_TFLOPS = {"bf16": 989.4, "fp8": 1978.9}   # the catalog's H200 SXM and H100 SXM dense roofs (the same die)


def read_run(path: Path) -> list[dict]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def best_share(rows, kind):
    return max(r["tflops"] / PEAK_TFLOPS[r.get("dtype", "bf16")] for r in rows if r["kind"] == kind and "error" not in r)


@pytest.mark.parametrize("key", sorted(RUNS))
def test_the_catalog_roofs_are_the_ones_the_shares_were_taken_of(key):
    hw = api.load_catalog().hardware[key]
    assert (hw.bf16_dense_tflops, hw.fp8_dense_tflops) == (PEAK_TFLOPS["bf16"], PEAK_TFLOPS["fp8"])
    assert read_run(RUNS[key])[0]["device"].startswith("NVIDIA " + hw.name.split()[0])


@pytest.mark.parametrize("key", sorted(RUNS))
def test_hopper_profiles_claim_no_more_of_the_peak_than_the_kernels_reached(key):
    kernels = read_run(RUNS[key])
    dense, grouped = best_share(kernels, "dense"), best_share(kernels, "grouped")
    attention = max(best_share(kernels, "attention_causal"), best_share(kernels, "attention_chunk"))
    assert 0.7 < dense < 0.9 and 0.6 < grouped < 0.9 and 0.6 < attention < 0.8   # the run is the one described
    hopper = [p for p in api.load_catalog().profiles.values() if p.family == "nvidia-hopper"]
    assert len(hopper) >= 5
    for p in hopper:
        assert p.prefill_compute_fraction <= dense, p.key
        assert p.attention_compute_fraction <= attention, p.key
        if p.expert_compute_fraction is not None:
            assert p.expert_compute_fraction <= grouped, p.key


def test_the_summary_prints_every_table_of_a_run(capsys):
    spec = importlib.util.spec_from_file_location("gpu_kernels", ROOT / "benchmarks" / "gpu_kernels.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)        # no torch needed: it is imported only to measure
    mod.summary(RUN, 989.4, 1978.9, 4800)
    out = capsys.readouterr().out
    assert "NVIDIA H200" in out and "copy: 4,281 GB/s (0.89 of the datasheet)" in out
    for title in ("Dense GEMM", "Grouped-expert GEMM", "Causal prefill attention", "A 2,048-token chunk"):
        assert title in out
    # one row per shape × dtype, with the share at 1,024 tokens (llama-70b gate_up BF16: 0.80)
    assert "| llama-70b gate_up (8192 x 28672) bf16 | 0.00 |" in out and "| 0.80 |" in out


def test_low_precision_products_reach_the_share_the_engines_kernels_reached():
    """FP8 and NVFP4 products reach a smaller share of their datasheet peak than BF16 ones of theirs
    (`advisor.model.devices.gemm_share`, from aiconfigurator's kernel measurements): an FP8 prompt on an
    H100 runs ~1.4× a BF16 one with vLLM, not the 2× the peaks differ by, while the 100 % roofline keeps
    the datasheet's 2×; where nothing was measured (a GeForce card, an MI300X) the share is 1."""
    from advisor.model.devices import gemm_share
    from advisor.model.efficiency import IDEAL, efficiency_for
    from advisor.model.inputs import inputs_for
    from advisor.model.predict import predict
    from advisor.model.roofline import Workload

    cat = api.load_catalog()
    h100, b200 = cat.hardware["h100-sxm5-80gb"], cat.hardware["b200-hgx"]
    assert gemm_share(h100, "vllm", "fp8") == pytest.approx(0.70)
    assert gemm_share(b200, "sglang", "fp4") == pytest.approx(0.69, rel=1e-3)
    assert 0.6 < gemm_share(h100, "llama.cpp", "fp8") < 0.9              # an engine not measured: the median
    assert gemm_share(h100, "vllm", "fp16") == gemm_share(h100, "vllm", "bf16") == 1.0
    assert gemm_share(cat.hardware_named("rtx 4090"), "vllm", "fp8") == 1.0
    assert gemm_share(cat.hardware_named("MI300X"), "vllm", "fp8") == 1.0

    def prompt(quant):
        cfg = api.configure(cat, hardware="H100 SXM5 80GB", model="Llama 3.1 8B", quant=quant, runtime="vllm")
        return predict(cat, cfg.replace(workload=Workload(batch=1, prompt_tokens=8000, output_tokens=2)),
                       check_context=False)
    fp8, bf16 = prompt("fp8"), prompt("bf16")
    assert 1.2 < fp8.prefill_tok_s / bf16.prefill_tok_s < 1.45          # 2 × 0.70, less the 16-bit attention
    assert fp8.prefill_ceiling_tok_s / bf16.prefill_ceiling_tok_s > 1.6   # the roofline is the datasheet's
    # the plain 100 % roofline (the calibration's "ceiling" column) takes every peak whole
    cfg = api.configure(cat, hardware="H100 SXM5 80GB", model="Llama 3.1 8B", quant="fp8", runtime="vllm")
    assert inputs_for(h100, cfg.runtime, cfg.quant, cfg.kv_dtype, IDEAL, 1, "tp", cfg.workload).gemm_share == 1.0
    fitted = efficiency_for(cat.profiles, cfg.runtime, h100)
    assert inputs_for(h100, cfg.runtime, cfg.quant, cfg.kv_dtype, fitted, 1, "tp", cfg.workload).gemm_share \
        == pytest.approx(0.70)


def test_blackwell_ultra_fp4_products_reach_the_rate_measured_not_its_larger_peak():
    """B300 and GB300 have 1.5× B200's FP4 peak on the same memory, clocks and power; aiconfigurator's
    NVFP4 GEMM timings give them 5,100-5,500 TFLOP/s against B200's and GB200's 4,700-5,100, so their
    FP4 share is 0.64 of the family's (`part_low_precision_share`), the B200 it was measured on keeps
    its own, FP8 and other parts are as they were, and an NVFP4 prompt on a GB300 runs about as fast as
    on a GB200, not 1.5× (MLPerf v5.1's Llama 3.1 405B Offline: 9 % faster per GPU)."""
    from advisor.model.devices import gemm_share, part_low_precision_share
    from advisor.model.predict import predict
    from advisor.model.roofline import Workload

    cat = api.load_catalog()
    hw = cat.hardware
    assert part_low_precision_share(hw["b200-hgx"], "fp4") == pytest.approx(1.0, abs=1e-3)
    assert part_low_precision_share(hw["gb200-nvl72-gpu"], "fp4") == pytest.approx(1.0, abs=0.01)
    for ultra in ("b300-hgx", "gb300-nvl72-gpu"):
        assert 0.6 < part_low_precision_share(hw[ultra], "fp4") < 0.7
        assert gemm_share(hw[ultra], "vllm", "fp8") == gemm_share(hw["b200-hgx"], "vllm", "fp8")
    assert part_low_precision_share(hw["h100-sxm5-80gb"], "fp4") == 1.0        # nothing measured

    def prompt_tok_s(hardware):
        cfg = api.configure(cat, hardware=hardware, model="Llama-3.1-405B", quant="nvfp4", runtime="tensorrt-llm",
                            gpus=4)
        return predict(cat, cfg.replace(workload=Workload(batch=1, prompt_tokens=8000, output_tokens=2)),
                       check_context=False).prefill_tok_s
    assert 0.95 < prompt_tok_s("gb300-nvl72-gpu") / prompt_tok_s("gb200-nvl72-gpu") < 1.2


def test_a_part_that_clocks_down_under_dense_load_computes_at_its_measured_share():
    """The fitted compute fractions stand for the Hopper parts (their BF16 products sustain 0.81 of
    the peak). An MI300X's reach 708 of 1,307 TFLOP/s (AMD's published max-achievable rate: the clock
    drops to ~1.2 GHz under dense load), a B200's 1,607 of 2,250 (aiconfigurator's GEMM tables), so a
    prompt there runs at 0.67 and 0.88 of what the fraction alone gives; a part with nothing published
    at the fraction as it is; the 100 % roofline at the datasheet's peak; and the sweep and the single
    prediction agree."""
    import numpy as np

    from advisor.model.devices import REFERENCE_BF16_SHARE, matrix_share
    from advisor.model.efficiency import IDEAL, efficiency_for
    from advisor.model.geometry import geometry
    from advisor.model.inputs import Tables, inputs_for
    from advisor.model.roofline import evaluate

    cat = api.load_catalog()
    mi300x, b200, h100 = (cat.hardware[k] for k in ("mi300x", "b200-hgx", "h100-sxm5-80gb"))
    assert matrix_share(mi300x) == pytest.approx(708 / 1307.4 / REFERENCE_BF16_SHARE) == pytest.approx(0.667, abs=0.005)
    assert matrix_share(b200) == pytest.approx(0.88, abs=0.01)
    assert matrix_share(h100) == pytest.approx(1.0, abs=0.02)
    assert matrix_share(cat.hardware_named("rtx 4090")) == 1.0

    cfg = api.configure(cat, hardware="MI300X", model="Llama 3.1 70B", quant="bf16", runtime="vllm", gpus=8,
                        batch=1, prompt=16000, output=2)
    eff = efficiency_for(cat.profiles, cfg.runtime, mi300x)
    x = inputs_for(mi300x, cfg.runtime, cfg.quant, cfg.kv_dtype, eff, 8, "tp", cfg.workload)
    g = geometry(cfg.model)
    held, whole = evaluate(g, x), evaluate(g, x.replace(matrix_share=1.0))
    assert float(x.matrix_share) == pytest.approx(matrix_share(mi300x))
    # a 16k-token prompt is compute-bound: its products take 1 / 0.667 as long
    compute = float(held.prefill_compute_s) / float(whole.prefill_compute_s)
    assert compute == pytest.approx(1 / matrix_share(mi300x), rel=0.02)
    assert float(held.prefill_tok_s) < 0.8 * float(whole.prefill_tok_s)
    assert float(held.prefill_ceiling_tok_s) == float(whole.prefill_ceiling_tok_s)
    assert inputs_for(mi300x, cfg.runtime, cfg.quant, cfg.kv_dtype, IDEAL, 8, "tp", cfg.workload).matrix_share == 1.0
    # the sweep's tables carry the same share per part
    tables = Tables(cat)
    i = [h.key for h in tables.hardware].index("mi300x")
    assert tables.matrix_share[i] == pytest.approx(matrix_share(mi300x))
    assert np.all((tables.matrix_share > 0.5) & (tables.matrix_share < 1.2))
    # the explanation says the part runs below the fraction and why
    text = api.explain(cat, cfg, api.predict(cat, cfg))["ttft"].text
    assert "sustain 0.67 of the share" in text and "measured under dense load, where the chip clocks down" in text


def test_a_part_whose_matrix_rate_is_capped_below_its_sms_does_its_side_work_faster():
    """The H20 (a GH100 whose matrix rate is capped at about a quarter of what its SMs would have)
    does the work beside its products at its SMs' rate (`advisor.model.devices.side_work_scale`): the
    rule reproduces the public measurements it is checked on (PyTorch BF16 matmul 0.96 of its peak
    where an H100 reaches 0.80; FlashMLA 0.81-0.88 where Hopper's table says 0.64), a DeepSeek-R1
    prompt on eight H20s computes far faster than the Hopper fraction alone says, the reference parts
    and other families are untouched, and the calibration's terms add up to the kernel's time."""
    import numpy as np

    from advisor.fit.calibration import _ideal_terms
    from advisor.model.devices import mla_decode_fraction, side_work_scale, with_side_work
    from advisor.model.efficiency import IDEAL, efficiency_for
    from advisor.model.geometry import geometry
    from advisor.model.inputs import Tables, inputs_for
    from advisor.model.roofline import evaluate

    cat = api.load_catalog()
    h20 = cat.hardware["h20-96gb"]
    assert side_work_scale(h20) == pytest.approx(0.23)
    for key in ("h100-sxm5-80gb", "h200-sxm-141gb", "h800-sxm5-80gb", "b200-hgx", "mi300x", "a100-sxm4-80gb"):
        assert side_work_scale(cat.hardware[key]) == 1.0
    assert with_side_work(0.4, 1.0) == 0.4
    # the H100's 789 of 989.4 TFLOP/s in the same script becomes the H20's measured 141.86 of 148
    assert with_side_work(789.24 / 989.4, side_work_scale(h20)) == pytest.approx(141.86 / 148, abs=0.02)
    assert 0.81 <= mla_decode_fraction(h20, "fp16") <= 0.90
    # an FP8 cache's products run in 16 bits: at most half the FP8 peak
    assert mla_decode_fraction(cat.hardware["h100-sxm5-80gb"], "fp8") < mla_decode_fraction(h20, "fp8") < 0.5

    cfg = api.configure(cat, hardware="H20", model="DeepSeek-R1", quant="fp8", runtime="sglang", gpus=8,
                        batch=2, prompt=4096, output=1)
    eff = efficiency_for(cat.profiles, cfg.runtime, h20)
    x = inputs_for(h20, cfg.runtime, cfg.quant, cfg.kv_dtype, eff, 8, "tp", cfg.workload)
    g = geometry(cfg.model)
    assert float(x.side_work_scale) == pytest.approx(0.23)
    held, plain = evaluate(g, x), evaluate(g, x.replace(side_work_scale=1.0))
    assert float(held.prefill_compute_s) < 0.6 * float(plain.prefill_compute_s)
    assert float(held.prefill_ceiling_tok_s) == float(plain.prefill_ceiling_tok_s)
    ideal = inputs_for(h20, cfg.runtime, cfg.quant, cfg.kv_dtype, IDEAL, 8, "tp", cfg.workload)
    assert float(evaluate(g, ideal).prefill_compute_s) == float(evaluate(g, ideal.replace(side_work_scale=1.0)).prefill_compute_s)
    tables = Tables(cat)
    i = [h.key for h in tables.hardware].index("h20-96gb")
    assert tables.hw_cols["side_work_scale"][i] == pytest.approx(0.23)
    assert np.count_nonzero(tables.hw_cols["side_work_scale"] != 1.0) <= 4   # the H20 and the NVL cards

    # one GPU, a dense model: the calibration's known side work plus its ideal terms over the fitted
    # fractions is the kernel's compute time
    one = api.configure(cat, hardware="H20", model="Qwen3-8B", quant="bf16", runtime="sglang", gpus=1,
                        batch=1, prompt=4096, output=1)
    x1 = inputs_for(h20, one.runtime, one.quant, one.kv_dtype, eff, 1, "tp", one.workload)
    r1 = evaluate(geometry(one.model), x1)
    terms = _ideal_terms(r1, x1, geometry(one.model))
    assert float(terms["pf_side_s"]) > 0
    rebuilt = (terms["pf_side_s"] + terms["pf_lin_ideal_s"] / float(eff.prefill_compute_fraction)
               + terms["pf_att_ideal_s"] / float(eff.attention_compute_fraction))
    assert float(rebuilt) == pytest.approx(float(r1.prefill_compute_s), rel=1e-4)
    text = api.explain(cat, one, api.predict(cat, one))["ttft"].text
    assert "capped below its SMs' own rate" in text and "acts as" in text


def test_each_low_precision_product_pays_its_measured_fixed_cost_at_decode():
    """An FP8 product at a decode step streams its weights as fast as a BF16 one but takes longer
    to start (quantizing the activations: `advisor.model.devices.format_gemm_us`, aiconfigurator's
    kernels). Llama 3.1 70B in FP8 on eight H100s with vLLM pays 320 products × 3.4 µs = 1.1 ms more
    per step than its weights' bytes say; gpt-oss's 16-bit attention beside MXFP4 experts pays
    nothing, nor does the plain roofline, nor a card nothing was measured on."""
    from advisor.model.devices import format_gemm_us
    from advisor.model.efficiency import IDEAL, efficiency_for
    from advisor.model.geometry import geometry
    from advisor.model.inputs import inputs_for
    from advisor.model.roofline import evaluate, format_fixed_s

    cat = api.load_catalog()
    h100 = cat.hardware["h100-sxm5-80gb"]
    assert format_gemm_us(h100, "vllm", "fp8") == pytest.approx(3.4)
    assert format_gemm_us(h100, "tensorrt-llm", "fp8") == pytest.approx(8.8)
    assert format_gemm_us(h100, "vllm", "fp16") == 0.0
    assert format_gemm_us(cat.hardware_named("rtx 4090"), "vllm", "fp8") == 0.0
    assert format_gemm_us(cat.hardware_named("MI300X"), "vllm", "fp8") == 0.0
    assert format_gemm_us(cat.hardware["b200-hgx"], "tensorrt-llm", "fp4") > format_gemm_us(
        cat.hardware["b200-hgx"], "sglang", "fp4")

    def step(model, quant, eff=None, hardware=h100):
        cfg = api.configure(cat, hardware=hardware.name, model=model, quant=quant, runtime="vllm", gpus=8)
        eff = eff or efficiency_for(cat.profiles, cfg.runtime, hardware)
        g = geometry(cfg.model)
        x = inputs_for(hardware, cfg.runtime, cfg.quant, cfg.kv_dtype, eff, 8, "tp", cfg.workload)
        return g, x, evaluate(g, x)

    g, x, fp8 = step("Llama 3.1 70B", "fp8")
    assert g.dense_products == 320                           # 80 layers × (QKV, out, gate-up, down)
    assert float(format_fixed_s(g, x)) == pytest.approx(320 * 3.4e-6)
    # the same step with the cost taken out is that much shorter
    plain = evaluate(g, x.replace(format_gemm_us=0.0))
    assert float(fp8.decode_fixed_s - plain.decode_fixed_s) == pytest.approx(320 * 3.4e-6, rel=1e-4)
    # and with it the FP8 model still decodes faster than BF16 at eight GPUs (half the bytes)
    _, _, bf16 = step("Llama 3.1 70B", "bf16")
    assert float(fp8.decode_tok_s) > 1.05 * float(bf16.decode_tok_s)
    g, _, _ = step("DeepSeek-R1", "fp8", hardware=cat.hardware["h200-sxm-141gb"])
    assert g.dense_products == 244                          # 61 layers × (attention's 2 + shared expert's 2)
    g, x, _ = step("gpt-oss-120b", "mxfp4")
    assert float(format_fixed_s(g, x)) == 0.0                # 16-bit attention; the experts' kernels differ
    g, x, _ = step("Llama 3.1 70B", "fp8", eff=IDEAL)
    assert float(format_fixed_s(g, x)) == 0.0


def test_the_explanation_counts_the_formats_products():
    cat = api.load_catalog()
    cfg = api.configure(cat, hardware="H100 SXM5 80GB", model="Llama 3.1 70B", quant="fp8", runtime="vllm", gpus=8)
    text = api.explain(cat, cfg, api.predict(cat, cfg))["decode"].text
    assert "320 FP8 products × 3.40 µs" in text
    cfg = api.configure(cat, hardware="H100 SXM5 80GB", model="Llama 3.1 70B", quant="bf16", runtime="vllm", gpus=8)
    assert "products ×" not in api.explain(cat, cfg, api.predict(cat, cfg))["decode"].text


def test_a_latent_attention_reads_its_cache_at_its_own_kernels_share_of_the_bandwidth():
    """Where its reads bind it, a latent-attention decode kernel reads a 16-bit cache at 0.90 of a Hopper
    part's bandwidth and 0.73 of a Blackwell one's (aiconfigurator's MLA tables, every engine; FlashMLA's
    3,000 GB/s on an H800), not at the runtime's fitted fraction, which also holds what a small step
    loses (SGLang's Hopper profile: 0.46): a server's long cache runs at the kernel's rate, and the
    calibration holds those seconds as it holds compute-bound kernels. An FP8 cache (engine-dependent),
    llama.cpp, a grouped-query model and the plain roofline keep the runtime's fraction."""
    import math

    from advisor.model.devices import mla_decode_bw_fraction
    from advisor.model.efficiency import efficiency_for
    from advisor.model.geometry import geometry
    from advisor.model.inputs import inputs_for
    from advisor.model.roofline import evaluate

    cat = api.load_catalog()
    h100 = cat.hardware["h100-sxm5-80gb"]
    assert mla_decode_bw_fraction(h100, "sglang", 16) == pytest.approx(0.904)
    assert mla_decode_bw_fraction(cat.hardware["b200-hgx"], "tensorrt-llm", 16) == pytest.approx(0.733)
    assert math.isnan(mla_decode_bw_fraction(h100, "sglang", 8))
    assert math.isnan(mla_decode_bw_fraction(h100, "llama.cpp", 16))
    assert math.isnan(mla_decode_bw_fraction(cat.hardware_named("MI300X"), "sglang", 16))

    h200 = cat.hardware["h200-sxm-141gb"]

    def step(model, kv="f16"):
        cfg = api.configure(cat, hardware="h200-sxm-141gb", model=model, quant="fp8", runtime="sglang", gpus=8,
                            batch=64 * 8, prompt=4000, output=1000, kv_dtype=kv)
        eff = efficiency_for(cat.profiles, cfg.runtime, h200)
        # tensor parallel: 16 heads a GPU, each GPU reading every sequence's latent cache
        x = inputs_for(h200, cfg.runtime, cfg.quant, cfg.kv_dtype, eff, 8, "tp", cfg.workload)
        g = geometry(cfg.model)
        return eff, evaluate(g, x), evaluate(g, x.replace(mla_bw_fraction=math.nan))

    eff, own, fitted = step("DeepSeek-R1")
    assert float(eff.decode_bw_fraction) < 0.6
    # 512 sequences with ~4,500 cached tokens, every GPU reading all their latent cache (160 GB a
    # step) beside its 84 GB of weights: the cache at 0.90, not the runtime's fraction
    assert float(own.decode_tok_s) > 1.2 * float(fitted.decode_tok_s)
    # the seconds at the kernel's own share are held by the calibration with the compute-bound ones
    assert float(own.decode_compute_bound_s) > float(fitted.decode_compute_bound_s)
    for model, kv in (("DeepSeek-R1", "fp8"), ("Llama-3.1-70B", "f16")):
        _, a, b = step(model, kv)
        assert float(a.decode_tok_s) == float(b.decode_tok_s)


def test_a_latent_attention_decodes_at_its_own_kernels_share_of_the_peak():
    """DeepSeek's absorbed MLA decode does ~240 FLOPs per byte of cache: on an H20 (a 16-bit roof of
    37 FLOPs a byte) a server's batch is bound by the attention kernel's compute, which reaches 0.636
    of the peak on Hopper (aiconfigurator's MLA kernels; FlashMLA's 660 of 989 TFLOPS), 0.88 on the
    H20's capped matrix units, not the linear layers' fitted fraction. A grouped-query model, a card without a published figure and the plain
    roofline keep the arithmetic they had."""
    import math

    from advisor.model.devices import mla_decode_fraction, side_work_scale, with_side_work
    from advisor.model.efficiency import IDEAL, efficiency_for
    from advisor.model.geometry import geometry
    from advisor.model.inputs import inputs_for
    from advisor.model.layout import Layout
    from advisor.model.roofline import evaluate

    cat = api.load_catalog()
    h20 = cat.hardware["h20-96gb"]
    assert mla_decode_fraction(cat.hardware["h100-sxm5-80gb"], "fp16") == pytest.approx(0.636)
    # the H20 does the kernel's side work at its SMs' rate (`side_work_scale`): 0.88 of its capped peak
    mla16 = mla_decode_fraction(h20, "fp16")
    assert mla16 == pytest.approx(with_side_work(0.636, side_work_scale(h20)))
    # over an FP8 cache Hopper's kernels run about as fast as at 16 bits: 0.381 of the FP8 peak
    assert mla_decode_fraction(h20, "fp8") * 296 == pytest.approx(mla_decode_fraction(h20, "fp16") * 148, rel=0.25)
    assert mla_decode_fraction(cat.hardware["b200-hgx"], "fp16") == pytest.approx(0.561)
    assert math.isnan(mla_decode_fraction(cat.hardware_named("MI300X"), "fp16"))
    assert math.isnan(mla_decode_fraction(cat.hardware_named("rtx 4090"), "fp16"))

    def step(model, hardware=h20, eff=None, batch=256):
        cfg = api.configure(cat, hardware=hardware.name, model=model, quant="fp8", runtime="sglang", gpus=8,
                            batch=batch, prompt=4096, output=512)
        eff = eff or efficiency_for(cat.profiles, cfg.runtime, hardware)
        # attention data-parallel: all 128 heads on each GPU (tensor parallel leaves 16, memory-bound)
        x = inputs_for(hardware, cfg.runtime, cfg.quant, cfg.kv_dtype, eff, 8, "tp", cfg.workload,
                       layout=Layout(dp_attention=8, ep=8) if cfg.model.experts else None)
        g = geometry(cfg.model)
        return x, evaluate(g, x), evaluate(g, x.replace(mla_decode_fraction=math.nan)), eff

    x, r, linear, eff = step("DeepSeek-R1")
    assert float(eff.prefill_compute_fraction) < 0.5            # what the attention ran at before
    # the step's attention takes its FLOPs over 0.88 of the 16-bit peak: faster than at η_c (which the
    # H20's side work lifts to 0.76, so the gap is a few per cent there)
    assert float(r.decode_tok_s) > 1.02 * float(linear.decode_tok_s)
    attn_s = float(r.decode_attention_flops) / (148e12 * mla16)
    linear_fraction = with_side_work(float(eff.prefill_compute_fraction) * float(x.gemm_share), side_work_scale(h20))
    assert float(r.decode_compute_s) == pytest.approx(attn_s + float(r.decode_flops - r.decode_attention_flops)
                                                      / (float(x.peak_tflops) * 1e12 * linear_fraction), rel=0.05)
    # a grouped-query model's decode is unchanged, and so is the 100 % roofline
    _, r, linear, _ = step("Qwen3 32B")
    assert float(r.decode_tok_s) == float(linear.decode_tok_s)
    x, r, _, _ = step("DeepSeek-R1", eff=IDEAL)
    assert math.isnan(float(x.mla_decode_fraction))
    # and the explanation says which share the attention ran at
    cfg = api.configure(cat, hardware="H20", model="DeepSeek-R1", quant="fp8", runtime="sglang", gpus=8, batch=256)
    assert "latent attention (MLA) computes at 0.88" in api.explain(cat, cfg, api.predict(cat, cfg))["decode"].text
