"""Tiered-memory accelerators (issue 18): weights, then KV, fill the fastest tier with room; decode
reads each tier's bytes at that tier's bandwidth. Golden arithmetic on hand-made entries, physical
properties, byte-identity for one-tier hardware, and the shipped dataflow entries from the CLI."""

import dataclasses

import numpy as np
import pytest

from advisor.cli.main import main
from advisor.model.config import configure
from advisor.model.efficiency import Efficiency
from advisor.model.predict import evaluate_config, predict
from advisor.model.sweep import sweep
from advisor.plan.recommend import Requirements, recommend

GIB = 2**30


def setup(cat, model="Llama 3.1 8B", **hw_changes):
    """A configuration on a hand-made tiered machine (the SN40L entry with its tiers replaced), and
    the dataflow runtime's own efficiencies (η_bw = 0.75, no profile)."""
    hw = dataclasses.replace(cat.hardware["sambanova-sn40l"], **hw_changes)
    cfg = configure(cat, hardware="SN40L", model=model, prompt=0, output=1).replace(hardware=hw)
    return cfg, Efficiency.of_runtime(cfg.runtime)


def memory_s(cfg, eff):
    r = evaluate_config(cfg, eff)
    return r, float(r.decode_memory_s)


def test_a_model_that_fits_in_sram_reads_at_sram_speed(cat):
    cfg, eff = setup(cat, sram_gib=100.0, sram_bandwidth_gb_s=10_000.0, memory_gib=64, bandwidth_gb_s=1000.0,
                     ddr_gib=None, ddr_bandwidth_gb_s=None)
    r, t = memory_s(cfg, eff)
    eta = 0.75
    # all 16 GB of weights and the KV cache sit in the 107 GB of SRAM: every byte at 10 TB/s
    assert float(r.sram_gpu_bytes) == pytest.approx(float(r.weights_gpu_bytes) + float(r.kv_gpu_bytes))
    assert float(r.ddr_gpu_bytes) == 0.0
    assert t == pytest.approx(float(r.decode_bytes) / (10_000e9 * eta), rel=1e-12)


def test_a_model_split_over_sram_and_hbm_reads_by_the_weighted_sum(cat):
    cfg, eff = setup(cat, sram_gib=1.0, sram_bandwidth_gb_s=10_000.0, memory_gib=64, bandwidth_gb_s=1000.0,
                     ddr_gib=None, ddr_bandwidth_gb_s=None)
    r, t = memory_s(cfg, eff)
    W = float(r.weights_gpu_bytes)            # resident weights
    w_read = float(r.decode_weight_bytes)     # read per step (no embedding table)
    kv = float(r.decode_kv_bytes)
    f_sram = GIB / W                          # the first 1 GiB of the weights is in SRAM
    eta = 0.75
    expected = (w_read * f_sram / 10_000e9 + (w_read * (1 - f_sram) + kv) / 1000e9) / eta
    assert float(r.sram_gpu_bytes) == pytest.approx(GIB)
    assert t == pytest.approx(expected, rel=1e-12)


def test_a_model_that_spills_to_ddr_slows_accordingly(cat):
    # 8 GiB of HBM for 16 GB of weights: HBM takes what it has room for (capacity − the runtime's
    # workspace; overhead and reserve are 0), the rest of the weights and all the KV go to DDR
    cfg, eff = setup(cat, sram_gib=None, sram_bandwidth_gb_s=None, memory_gib=8, bandwidth_gb_s=1000.0,
                     ddr_gib=1536, ddr_bandwidth_gb_s=125.0)
    r, t = memory_s(cfg, eff)
    W, w_read, kv = float(r.weights_gpu_bytes), float(r.decode_weight_bytes), float(r.decode_kv_bytes)
    hbm_room = 8 * GIB - float(r.workspace_gpu_bytes)
    w_ddr = W - hbm_room
    eta = 0.75
    expected = (w_read * (hbm_room / W) / 1000e9 + (w_read * (w_ddr / W) + kv) / 125e9) / eta
    assert float(r.ddr_gpu_bytes) == pytest.approx(w_ddr + float(r.kv_gpu_bytes))
    assert t == pytest.approx(expected, rel=1e-12)
    assert bool(r.fits)
    # the same machine with HBM for all of it is faster by the DDR share's bandwidth ratio
    roomy, _ = setup(cat, sram_gib=None, sram_bandwidth_gb_s=None, memory_gib=64, bandwidth_gb_s=1000.0,
                     ddr_gib=1536, ddr_bandwidth_gb_s=125.0)
    _, t_roomy = memory_s(roomy, eff)
    assert t_roomy == pytest.approx((w_read + kv) / (1000e9 * eta), rel=1e-12)
    assert t > 3 * t_roomy


def test_without_the_ddr_tier_a_spilling_model_does_not_fit(cat):
    cfg, eff = setup(cat, sram_gib=None, sram_bandwidth_gb_s=None, memory_gib=8, bandwidth_gb_s=1000.0,
                     ddr_gib=None, ddr_bandwidth_gb_s=None)
    assert not bool(evaluate_config(cfg, eff).fits)


@pytest.mark.parametrize("model", ["Llama 3.1 8B", "Qwen3 30B A3B", "Gemma 2 9B"])
@pytest.mark.parametrize("batch", [1, 16])
def test_more_fast_memory_never_slows_decode(cat, model, batch):
    """Growing the SRAM tier, or main memory in front of DDR, never lowers decode speed."""
    sizes = [0.001, 0.5, 2, 4, 8, 16, 32, 64, 128]
    sram = []
    for s in sizes:
        cfg, eff = setup(cat, model, sram_gib=s, sram_bandwidth_gb_s=20_000.0, memory_gib=4, bandwidth_gb_s=1000.0,
                         ddr_gib=1536, ddr_bandwidth_gb_s=125.0)
        sram.append(float(evaluate_config(cfg.replace(batch=batch), eff).decode_tok_s))
    main_tier = []
    for s in sizes:
        cfg, eff = setup(cat, model, sram_gib=None, sram_bandwidth_gb_s=None, memory_gib=max(s, 0.5),
                         bandwidth_gb_s=1000.0, ddr_gib=1536, ddr_bandwidth_gb_s=125.0)
        main_tier.append(float(evaluate_config(cfg.replace(batch=batch), eff).decode_tok_s))
    for speeds in (sram, main_tier):
        assert np.all(np.diff(speeds) >= -1e-9 * np.abs(speeds[:-1])), speeds
        assert speeds[-1] > speeds[0]


def test_a_tier_without_its_bandwidth_changes_nothing(cat):
    base = cat.hardware["h100-sxm5-80gb"]
    cfg = configure(cat, hardware="h100-sxm5-80gb", model="Llama 3.1 8B")
    eff = Efficiency.of_runtime(cfg.runtime)
    plain = evaluate_config(cfg, eff)
    odd = evaluate_config(cfg.replace(hardware=dataclasses.replace(base, ddr_gib=512.0, sram_gib=1.0)), eff)
    assert odd.sram_gpu_bytes is None and float(odd.decode_tok_s) == float(plain.decode_tok_s)


def test_one_tier_hardware_is_byte_identical_in_a_sweep_with_tiered_entries(cat):
    """The tier terms of a one-tier column are exact zeros: sweeping H100 beside the SN40L gives the
    same bits as sweeping it alone."""
    from advisor.model.roofline import Workload
    model = cat.model_named("Llama 3.1 8B")
    wl = Workload(batch=4, prompt_tokens=512, output_tokens=128)
    alone = sweep(cat, model, wl, hardware=["h100-sxm5-80gb"], runtimes=["vllm"], quants=["bf16"])
    mixed = sweep(cat, model, wl, hardware=["h100-sxm5-80gb", "sambanova-sn40l"], runtimes=["vllm", "dataflow"],
                  quants=["bf16"])
    h100 = mixed.hw == mixed.tables.hw_index["h100-sxm5-80gb"]
    assert len(alone) == 1 and h100.sum() == 1 and len(mixed) == 2
    for name in ("decode_tok_s", "ttft_s", "max_batch", "kv_budget_gpu_bytes"):
        assert mixed.values[name][h100].tobytes() == alone.values[name].tobytes(), name


def test_shipped_entries_are_sourced_and_marked_extrapolated(cat):
    keys = ["sambanova-sn40l", "groq-lpu", "cerebras-wse-3"]
    for k in keys:
        h = cat.hardware[k]
        assert h.kind == "dataflow" and h.source and "EXTRAPOLATED" in h.notes
    sn = cat.hardware["sambanova-sn40l"]
    assert sn.memory_gib == 64 and sn.ddr_gib == 1536 and sn.ddr_bandwidth_gb_s == 125
    assert cat.hardware["groq-lpu"].bandwidth_gb_s == 80_000
    assert cat.hardware["cerebras-wse-3"].bandwidth_gb_s == 21_000_000


def test_sn40l_70b_prediction_says_extrapolated_and_where_the_bytes_sit(cat):
    cfg = configure(cat, hardware="SN40L", model="Llama 3.1 70B")
    p = predict(cat, cfg)
    assert cfg.runtime.key == "dataflow" and p.fits
    assert any(n.startswith("extrapolated") for n in p.notes)
    assert any("spilled to DDR" in n for n in p.notes)
    eight = predict(cat, cfg.replace(gpus=8))     # a node: 17.7 GB per socket, all in HBM
    assert not any("spilled" in n for n in eight.notes) and eight.decode_tok_s > 20 * p.decode_tok_s


def test_groq_needs_hundreds_of_chips_for_a_70b_model(cat):
    cfg = configure(cat, hardware="Groq LPU", model="Llama 3.1 70B")
    assert not predict(cat, cfg.replace(gpus=64)).fits
    assert predict(cat, cfg.replace(gpus=1024)).fits


def test_cli_predict_sn40l_llama_70b(capsys):
    code = main(["predict", "--hardware", "SN40L", "--model", "Llama 3.1 70B"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "SambaNova SN40L" in out and "extrapolated" in out and "DDR" in out


@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_recommend_leaves_dataflow_machines_out_unless_asked(cat):
    model = cat.model_named("Llama 3.1 8B")
    plain = recommend(cat, Requirements(model=model, users=1))
    assert all(c.hardware.kind != "dataflow" for c in plain.all())
    asked = recommend(cat, Requirements(model=model, users=1, hardware_kinds=("dataflow",)))
    assert {c.hardware.kind for c in asked.all()} == {"dataflow"}


def test_throughput_falls_once_added_sequences_spill_to_ddr():
    # Gemma 3 12B BF16 on one SN40L: at batch 37 everything sits in HBM; by batch 592 part of the KV
    # cache is in DDR at 125 GB/s, and each added sequence's KV read costs more than the average
    # time per token, so the aggregate falls — why a server would cap its batch there
    from advisor.api import load_catalog
    from advisor.model.config import configure
    from advisor.model.predict import predict
    cat = load_catalog()
    small = predict(cat, configure(cat, hardware="SN40L", model="Gemma 3 12B", quant="bf16", batch=37))
    big = predict(cat, configure(cat, hardware="SN40L", model="Gemma 3 12B", quant="bf16", batch=592))
    assert not any("spilled to DDR" in n for n in small.notes) and any("spilled to DDR" in n for n in big.notes)
    assert big.throughput_tok_s < small.throughput_tok_s
