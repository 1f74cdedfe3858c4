"""Instance layouts past one tensor-parallel group: pipeline stages of TP groups, data-parallel
attention, expert parallel with all-to-all, and the network past a scale-up domain (issue 31)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from advisor.data.errors import AdvisorError
from advisor.model import compat
from advisor.model.devices import domain_gpus, network_gb_s
from advisor.model.geometry import geometry
from advisor.model.roofline import COMBINE_BYTES, DISPATCH_BYTES, LINK_EFFICIENCY, Workload
from advisor.model.sweep import Layouts, sweep
from advisor.model.layout import Layout, parse_layout
from advisor.plan.recommend import Requirements, recommend


def _one(cat, model, hw, layout, *, rt="sglang", q="fp8", kv="fp8", batch=(1,), prompt=1000, output=1000,
         network=None):
    r = sweep(cat, cat.models[model], Workload(batch=1, prompt_tokens=prompt, output_tokens=output), hardware=[hw],
              runtimes=[rt], quants=[q], kv_dtypes=[kv], layouts=Layouts([layout]), batch=list(batch), network=network)
    assert len(r) == len(batch), "the layout was not swept"
    return r.values


def test_a_plain_tp_group_predicts_the_same_through_the_layout_path(cat):
    """TP 8 written as a layout (one stage, no attention DP, no EP) runs the layout arithmetic; it
    must give what the plain path gives, figure for figure."""
    plain = sweep(cat, cat.models["deepseek-r1"], Workload(batch=1, prompt_tokens=1000, output_tokens=500),
                  hardware=["h200-sxm-141gb"], runtimes=["sglang"], quants=["fp8"], kv_dtypes=["fp8"], gpus=(8,),
                  batch=[1, 64, 512]).values
    wide = _one(cat, "deepseek-r1", "h200-sxm-141gb", (8, 1, 1, False), batch=(1, 64, 512), output=500)
    wide_stage = sweep(cat, cat.models["deepseek-r1"], Workload(batch=1, prompt_tokens=1000, output_tokens=500),
                       hardware=["h200-sxm-141gb"], runtimes=["sglang"], quants=["fp8"], kv_dtypes=["fp8"],
                       layouts=Layouts([(8, 1, 1, False), (16, 2, 1, False)]), batch=[1, 64, 512]).values
    for key in ("decode_tok_s", "ttft_s", "max_batch", "weights_gpu_bytes", "decode_transfer_s"):
        np.testing.assert_allclose(wide[key], plain[key], rtol=1e-4, err_msg=key)
    # a forced layout path (two layouts, one of them past a node) still prices TP 8 the same
    np.testing.assert_allclose(wide_stage["decode_tok_s"][0::2], plain["decode_tok_s"], rtol=1e-4)


def test_attention_dp_holds_the_non_expert_weights_whole_and_splits_the_sequences(cat):
    """MLA's latent is replicated under tensor parallel: TP 8 holds each sequence's cache on every GPU.
    Data-parallel attention holds it once, on its group's GPU: the instance holds about 8 × the
    sequences, less what the replicated non-expert weights take."""
    m = cat.models["deepseek-r1"]
    g = geometry(m)
    tp = _one(cat, "deepseek-r1", "h200-sxm-141gb", (8, 1, 1, False))
    dp = _one(cat, "deepseek-r1", "h200-sxm-141gb", (8, 1, 8, True))
    bits = 8.0   # FP8 weights
    experts = g.routed_expert_params * bits / 8
    total = float(tp["weights_bytes"][0])
    assert dp["weights_gpu_bytes"][0] == pytest.approx((total - experts) + experts / 8, rel=1e-6)
    assert tp["weights_gpu_bytes"][0] == pytest.approx(total / 8, rel=1e-6)
    # per GPU, a sequence costs an eighth of TP's (its cache lives on one GPU of eight)
    assert dp["kv_seq_bytes"][0] == pytest.approx(tp["kv_seq_bytes"][0] / 8, rel=1e-6)
    assert dp["max_batch"][0] > 4 * tp["max_batch"][0]


def test_expert_parallel_all_to_all_crosses_the_network_past_the_node(cat):
    """EP 16 over two HGX H100 nodes: each token goes to min(k, EP − 1) GPUs at FP8 and comes back at
    16-bit; of a GPU's 15 peers 8 are past its node, so that share crosses the network (400 Gb/s per
    GPU at LINK_EFFICIENCY), the rest NVLink, both at once. Worked by hand for 1,024 tokens a step."""
    m = cat.models["deepseek-r1"]
    g = geometry(m)
    hw = cat.hardware["h100-sxm5-80gb"]
    B = 1024
    v = _one(cat, "deepseek-r1", "h100-sxm5-80gb", (16, 1, 16, True), batch=(B,))
    G = 16
    sent = B / G * min(g.experts_per_token, G - 1) * g.hidden * (DISPATCH_BYTES + COMBINE_BYTES)
    beyond = (G - domain_gpus(hw)) / (G - 1)
    net = network_gb_s(hw) * 1e9 * LINK_EFFICIENCY
    link = hw.interconnect_gb_s / 2 * 1e9 * LINK_EFFICIENCY
    a2a = g.moe_layers * max(sent * (1 - beyond) / link, sent * beyond / net)
    # attention is data-parallel (tp 1) and the dense layers too: the all-to-all is all the traffic
    assert v["decode_transfer_s"][0] == pytest.approx(a2a, rel=1e-3)
    assert network_gb_s(hw) == hw.scale_out_gbit_s / 8


def test_a_prompt_pass_sends_each_token_once_to_each_other_node(cat):
    """A prompt pass runs the throughput all-to-all (DeepEP's normal kernels): a token crosses the
    network once to each other node holding one of its 8 experts and is forwarded there over
    NVLink. EP 32 over four HGX H100 nodes: of 4 nodes a token's experts reach 4·(1 − (3/4)^8) = 3.6,
    2.7 of them others, where the decode step's low-latency kernels send to 8 × 24/31 = 6.2 GPUs past
    its node. Worked by hand for 2 prompts of 2,000 tokens in each attention group."""
    m = cat.models["deepseek-r1"]
    g = geometry(m)
    hw = cat.hardware["h100-sxm5-80gb"]
    G, s = 32, 2000
    v = _one(cat, "deepseek-r1", "h100-sxm5-80gb", (G, 1, G, True), batch=(2 * G,), prompt=s, output=1)
    tokens = 2 * G * s
    per_token = g.hidden * (DISPATCH_BYTES + COMBINE_BYTES)
    reached = 3 * (1 - (3 / 4) ** g.experts_per_token)
    net = network_gb_s(hw) * 1e9 * LINK_EFFICIENCY
    link = hw.interconnect_gb_s / 2 * 1e9 * LINK_EFFICIENCY
    a2a = g.moe_layers * max(tokens / G * min(g.experts_per_token, G - 1) * per_token / link,
                             tokens / G * reached * per_token / net)
    # the pass's transfers: the all-to-all and nothing else (attention and dense layers data-parallel)
    assert v["prefill_transfer_s"][0] == pytest.approx(a2a, rel=1e-3)
    assert reached == pytest.approx(2.70, abs=0.01)
    # one domain: nothing crosses the network, the scale-up link carries what it did
    one = _one(cat, "deepseek-r1", "h100-sxm5-80gb", (8, 1, 8, True), batch=(16,), prompt=s, output=1)
    assert one["prefill_transfer_s"][0] == pytest.approx(
        g.moe_layers * 16 * s / 8 * min(g.experts_per_token, 7) * per_token / link, rel=1e-3)


def test_two_batch_overlap_leaves_a_share_of_the_shorter_part_exposed(cat, monkeypatch):
    """Two-batch overlap hides the all-to-all behind the other half-batch's kernels, but not all of it:
    LMSYS's ablation (TBO on and off, decode and prefill) leaves about 0.3 of the shorter part exposed,
    so a pass takes max(kernels, all-to-all) + TBO_EXPOSED × min(...), between perfect overlap and none."""
    from advisor.model import roofline

    shipped = roofline.TBO_EXPOSED

    def step_and_pass(exposed):
        monkeypatch.setattr(roofline, "TBO_EXPOSED", exposed)
        d = _one(cat, "deepseek-r1", "h100-sxm5-80gb", (32, 1, 32, True), batch=(4096,))
        p = _one(cat, "deepseek-r1", "h100-sxm5-80gb", (32, 1, 32, True), batch=(64,), prompt=4096, output=1)
        return 1.0 / float(d["decode_tok_s"][0]), float(p["prefill_s"][0])

    (d0, p0), (d1, p1) = step_and_pass(0.0), step_and_pass(1.0)
    assert d1 > d0 and p1 > p0                         # no overlap costs the shorter part in full
    assert shipped == pytest.approx(0.3)
    d, p = step_and_pass(shipped)
    assert d == pytest.approx(d0 + 0.3 * (d1 - d0), rel=1e-4)
    assert p == pytest.approx(p0 + 0.3 * (p1 - p0), rel=1e-4)


def test_an_nvl72_rack_keeps_expert_parallel_on_nvlink(cat):
    """EP 64 on GB200 NVL72 stays in one NVLink domain of 72; on HGX H100 it crosses the network:
    the rack's all-to-all takes a fraction of the time."""
    rack = _one(cat, "deepseek-r1", "gb200-nvl72-gpu", (64, 1, 64, True), batch=(4096,))
    hgx = _one(cat, "deepseek-r1", "h100-sxm5-80gb", (64, 1, 64, True), batch=(4096,))
    assert domain_gpus(cat.hardware["gb200-nvl72-gpu"]) == 72
    assert rack["decode_transfer_s"][0] < hgx["decode_transfer_s"][0] / 5


def test_a_network_named_replaces_the_reference_one(cat):
    slow = _one(cat, "deepseek-r1", "h100-sxm5-80gb", (16, 1, 16, True), batch=(2048,), network="eth-100")
    fast = _one(cat, "deepseek-r1", "h100-sxm5-80gb", (16, 1, 16, True), batch=(2048,), network="ib-xdr")
    assert slow["decode_transfer_s"][0] > 6 * fast["decode_transfer_s"][0]


def test_pipeline_stages_across_nodes_split_the_weights(cat):
    """Llama 3.1 405B at 16-bit (810 GB) does not fit one HGX H100 node; TP 8 × PP 2 holds half of the
    layers on each node."""
    one = _one(cat, "llama-3.1-405b", "h100-sxm5-80gb", (8, 1, 1, False), rt="vllm", q="bf16", kv="f16")
    two = _one(cat, "llama-3.1-405b", "h100-sxm5-80gb", (16, 2, 1, False), rt="vllm", q="bf16", kv="f16")
    assert not one["fits"][0] and two["fits"][0]
    assert two["weights_gpu_bytes"][0] == pytest.approx(one["weights_gpu_bytes"][0] / 2, rel=1e-6)


def test_layouts_the_sweep_will_not_try(cat):
    """EP larger than the model's experts; a runtime that stays on one machine; PCIe cards with no
    network past a node (unless one is named); a dense model gets no EP layouts at all."""
    mixtral = cat.models["mixtral-8x7b-v0.1"]
    r = sweep(cat, mixtral, Workload(batch=1, prompt_tokens=100, output_tokens=100), hardware=["h100-sxm5-80gb"],
              runtimes=["vllm"], quants=["bf16"], layouts=Layouts.for_instances((8, 16), moe=True))
    eps = {(int(g), bool(e)) for g, e in zip(r.gpus, r.layouts.ep[r.layout])}
    assert (8, True) in eps and (16, True) not in eps            # 8 experts: EP 16 is impossible
    r = sweep(cat, mixtral, Workload(batch=1, prompt_tokens=100, output_tokens=100), hardware=["h100-sxm5-80gb"],
              runtimes=["llama.cpp"], quants=["q4_k_m"], layouts=Layouts.for_instances((8, 16), moe=True))
    assert set(r.gpus.tolist()) <= {8}                             # llama.cpp runs one machine
    llama = cat.models["llama-3.1-8b"]
    pcie = sweep(cat, llama, Workload(batch=1, prompt_tokens=100, output_tokens=100), hardware=["l40s-48gb"],
                 runtimes=["vllm"], quants=["bf16"], layouts=Layouts.for_instances((8, 16), moe=False))
    assert set(pcie.gpus.tolist()) == {8}
    named = sweep(cat, llama, Workload(batch=1, prompt_tokens=100, output_tokens=100), hardware=["l40s-48gb"],
                  runtimes=["vllm"], quants=["bf16"], layouts=Layouts.for_instances((8, 16), moe=False),
                  network="roce-200")
    assert set(named.gpus.tolist()) == {8, 16}
    assert not Layouts.for_instances((8, 16), moe=False).ep.any()


def test_bad_topology_gets_one_clear_line(cat):
    l40s, h100 = cat.hardware["l40s-48gb"], cat.hardware["h100-sxm5-80gb"]
    vllm, llama_cpp = cat.runtimes["vllm"], cat.runtimes["llama.cpp"]
    why = compat.gpus_refusal(l40s, 72, vllm)
    assert "--network" in why and "\n" not in why
    assert compat.gpus_refusal(l40s, 72, vllm, "roce-400") is None
    assert "spans nodes" in compat.gpus_refusal(h100, 16, llama_cpp) or "one machine" in compat.gpus_refusal(h100, 16, llama_cpp)
    assert compat.gpus_refusal(cat.hardware["rtx-4090"], 16, vllm)   # a consumer card is never clustered
    assert compat.gpus_refusal(h100, 16, vllm) is None
    with pytest.raises(AdvisorError, match="experts"):
        Layout(tp=1, dp_attention=16, ep=16).check(experts=8)
    with pytest.raises(AdvisorError, match="dense"):
        Layout(tp=1, dp_attention=8, ep=8).check(experts=0)
    with pytest.raises(AdvisorError, match="network"):
        Requirements(model=cat.models["llama-3.1-8b"], users=10, network="carrier-pigeon").check()


@pytest.mark.slow   # over a second here: three recommendations over the catalog's datacenter GPUs
def test_recommend_answers_thousands_of_users_with_multi_node_instances(cat):
    """DeepSeek-R1 for 5,000 users on H100s: one node does not hold its FP8 weights with room for the
    cache, so the answers are instances of two nodes or more, with their layout, nodes, power and a
    launch line that says how the other nodes join."""
    req = Requirements(model=cat.models["deepseek-r1"], users=5000, tok_s=20, ttft_ms=3000,
                       hardware=("h100-sxm5-80gb",), runtimes=("sglang",), kv_dtypes=("fp8",), min_bits=8)
    rec = recommend(cat, req)
    best = rec.passing[0]
    assert best.nodes >= 2 and best.gpus >= 16
    assert "nodes" in best.label
    # at the DGX H100's maximum system power (10.2 kW per 8 GPUs), hosts and NICs included
    assert best.power_kw == pytest.approx(cat.systems["dgx-h100"].power_kw * best.gpus * best.replicas / 8)
    assert "DGX H100" in best.power_basis
    assert best.joules_per_token == pytest.approx(best.power_kw * 1e3 / best.throughput_tok_s)
    assert "--nnodes" in best.launch and "--node-rank 0" in best.launch
    if best.layout.ep > 1:
        assert f"--ep-size {best.layout.ep}" in best.launch and "--enable-dp-attention" in best.launch
    # a small model for a few users stays on one machine: no instance past a node is even tried
    small = recommend(cat, Requirements(model=cat.models["llama-3.1-8b"], users=10, hardware=("h100-sxm5-80gb",)))
    assert max(c.gpus for c in small.all()) <= 8
    # asked for (the CLI asks when --max-gpus passes a node), or not at all
    assert not Requirements(model=cat.models["llama-3.1-8b"], users=10).cluster_sizes()
    assert Requirements(model=cat.models["llama-3.1-8b"], users=10, across_nodes=True).cluster_sizes()
    assert not Requirements(model=cat.models["deepseek-r1"], users=10, across_nodes=False).cluster_sizes()
    assert math.isfinite(best.ttft_ms)


def test_layout_text_reads_what_people_write():
    assert parse_layout("TP8+PP2") == Layout(tp=8, pp=2)
    assert parse_layout("dp16+ep16", 16, experts=256) == Layout(tp=1, dp_attention=16, ep=16)
    assert parse_layout("ep32", experts=256) == Layout(tp=1, dp_attention=32, ep=32)
    assert parse_layout("tp8 pp2").key() == "tp8+pp2" and parse_layout("dp16+ep16", experts=256).key() == "dp16+ep16"
    for bad, why in (("tp8+tp2", "twice"), ("zz4", "not a part"), ("", "empty"), ("tp0", "not a part"),
                     ("ep16", "experts")):
        with pytest.raises(AdvisorError, match=why):
            parse_layout(bad, experts=8)
    with pytest.raises(AdvisorError, match="not the 8"):
        parse_layout("tp8+pp2", 8)


def _predict_refuses(capsys, argv, why):
    """`predict` ARGV exits 2 with one line on stderr that says ``why``."""
    from advisor.cli.main import main

    assert main(["predict", *argv]) == 2
    err = capsys.readouterr().err
    assert why in err and len(err.strip().splitlines()) == 1, err


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_predict_takes_a_layout_and_a_network_and_refuses_bad_topology(cat, capsys):
    from advisor.model.config import configure
    from advisor.model.predict import predict

    cfg = configure(cat, hardware="h100-sxm5-80gb", model="deepseek-r1", runtime="sglang", layout="dp16+ep16",
                    batch=256)
    assert cfg.gpus == 16 and cfg.layout.ep == 16
    p = predict(cat, cfg)
    assert p.fits and "EP 16" in p.parallelism
    slow = predict(cat, configure(cat, hardware="h100-sxm5-80gb", model="deepseek-r1", runtime="sglang",
                                  layout="dp16+ep16", batch=256, network="eth-25"))
    assert slow.ttft_ms > p.ttft_ms
    for argv, why in ((["--model", "mixtral-8x7b", "--hardware", "h100-sxm5-80gb", "--layout", "ep16"], "experts"),
                      (["--model", "llama-3.1-8b", "--hardware", "l40s", "--gpus", "72"], "--network"),
                      (["--model", "llama-3.1-8b", "--hardware", "rtx-4090", "--network", "ib-ndr"], "clusters"),
                      (["--model", "llama-3.1-8b", "--hardware", "h100-sxm5-80gb", "--network", "ib-zzz"], "unknown network"),
                      (["--model", "llama-3.1-8b", "--hardware", "h100-sxm5-80gb", "--layout", "tp8+pp2", "--gpus", "8"],
                       "not the 8"),
                      (["--model", "llama-3.1-8b", "--hardware", "h100-sxm5-80gb", "--runtime", "llama.cpp", "--gpus",
                        "16"], "one machine")):
        _predict_refuses(capsys, argv, why)


def test_reconfigure_keeps_a_layout_while_it_fits_and_says_when_it_clears_it(cat):
    from advisor.model.config import configure
    from advisor.model.reconfigure import reconfigure

    base = configure(cat, hardware="h100-sxm5-80gb", model="deepseek-r1", runtime="sglang", layout="dp16+ep16")
    kept = reconfigure(cat, base, batch=64)
    assert kept.config.layout == base.layout and not kept.notices
    dense = reconfigure(cat, base, model="llama-3.1-405b")
    assert dense.config.layout is None and any("cleared" in n for n in dense.notices)
    loaded = reconfigure(cat, configure(cat, hardware="h100-sxm5-80gb", model="deepseek-r1", runtime="sglang"),
                         layout="tp8+pp2")
    assert loaded.config.gpus == 16 and loaded.config.layout.pp == 2
    assert loaded.config.keys()["layout"] == "tp8+pp2"


def test_a_prefill_pool_on_another_gpu_type_hands_the_cache_over_the_network(cat):
    """Prefill on B200s, decode on H100s: two GPU types are two machines, so the prompt's KV cache
    crosses the network (the slower of the two, at LINK_EFFICIENCY), not NVLink; one GPU type whose
    node holds both instances keeps it on NVLink."""
    from advisor.model.config import configure
    from advisor.model.disaggregation import disaggregate, handover_gb_s
    from advisor.model.serving import Load

    cfg = configure(cat, hardware="h100-sxm5-80gb", model="llama-3.3-70b", quant="fp8", gpus=4, runtime="vllm")
    b200 = cat.hardware["b200-hgx"]
    split = disaggregate(cat, cfg, Load(kind="closed", concurrency=64, prompt_tokens=1024, output_tokens=256),
                         ttft_ms=1000, tok_s=20, prefill_hardware=b200)
    assert split.prefill_hardware == b200.name and split.gpus == \
        split.prefill_instances * split.prefill_gpus + split.decode_instances * 4
    pcfg = cfg.replace(hardware=b200, gpus=split.prefill_gpus, layout=None)
    net = min(network_gb_s(cfg.hardware), network_gb_s(b200)) * LINK_EFFICIENCY
    assert handover_gb_s(cfg, pcfg) == pytest.approx(net) and split.link_gb_s == pytest.approx(net)
    assert handover_gb_s(cfg, cfg.replace(gpus=2)) == pytest.approx(cfg.hardware.interconnect_gb_s / 2)
    assert handover_gb_s(cfg, cfg.replace(gpus=8)) == pytest.approx(network_gb_s(cfg.hardware) * LINK_EFFICIENCY)
    mac = next(h for h in cat.hardware.values() if h.kind == "apple")   # vLLM does not run there
    with pytest.raises(AdvisorError, match="prefill on"):
        disaggregate(cat, cfg, Load(kind="closed", concurrency=8), prefill_hardware=mac)


def test_servers_parallel_columns_read_as_layouts():
    """catalog/measured/serving.csv's parallel column: data-parallel attention and expert parallel over
    every GPU become layouts; an EP smaller than the instance stays tensor parallel."""
    from advisor.fit.serving_cases import layout_text

    assert layout_text("TP8 dp-attention", 8) == "dp8"
    assert layout_text("TP8 DP4 dp-attention", 8) == "tp2+dp4"
    assert layout_text("TP8 DP8 EP8 dp-attention", 8) == "dp8+ep8"
    assert layout_text("TP4 EP (--enable-expert-parallel)", 4) == "tp4+ep4"
    assert layout_text("TP8 EP2", 8) is None and layout_text("TP8", 8) is None
    assert parse_layout(layout_text("TP4 EP4", 4), 4, experts=128) == Layout(tp=4, ep=4)


def test_tensor_parallel_gives_each_gpu_whole_attention_heads(cat):
    """vLLM and SGLang split query heads evenly and KV heads evenly or into equal copies; TensorRT-LLM
    only the query heads; MLA's latent cache has no KV-head rule; llama.cpp's layer split none."""
    vllm, trt, llama_cpp = cat.runtimes["vllm"], cat.runtimes["tensorrt-llm"], cat.runtimes["llama.cpp"]
    qwen7, phi4, r1 = cat.models["qwen2.5-7b"], cat.models["phi-4"], cat.models["deepseek-r1"]
    assert (qwen7.heads, qwen7.kv_heads, phi4.heads, phi4.kv_heads) == (28, 4, 40, 10)
    assert compat.tp_sizes(qwen7, vllm) == [1, 2, 4]
    assert "28 attention heads" in compat.tp_refusal(qwen7, vllm, 8)
    assert "10 KV heads" in compat.tp_refusal(phi4, vllm, 4)        # 40 heads divide by 4, 10 KV heads do not
    assert compat.tp_refusal(phi4, trt, 4) is None                   # TensorRT-LLM copies KV heads (ceil)
    assert compat.tp_refusal(r1, vllm, 8) is None and "128 attention heads" in compat.tp_refusal(r1, vllm, 72)
    assert compat.tp_refusal(qwen7, llama_cpp, 3) is None
    why = compat.tp_refusal(qwen7, vllm, 8)
    assert "TP 1, 2 or 4 can" in why and "\n" not in why
    r = sweep(cat, qwen7, Workload(batch=1, prompt_tokens=100, output_tokens=100), hardware=["h100-sxm5-80gb"],
              runtimes=["vllm", "llama.cpp"], quants=["bf16"], gpus=(1, 2, 4, 8))
    pairs = {(r.tables.runtimes[int(i)].key, int(g)) for i, g in zip(r.rt, r.gpus)}
    assert ("vllm", 4) in pairs and ("vllm", 8) not in pairs and ("llama.cpp", 8) in pairs


def test_predict_refuses_a_tensor_parallel_split_the_engine_refuses(cat, capsys):
    for argv, why in ((["--model", "qwen2.5-7b", "--hardware", "h100-sxm5-80gb", "--runtime", "vllm", "--gpus", "8"],
                       "28 attention heads"),
                      (["--model", "deepseek-r1", "--hardware", "h100-pcie-80gb", "--layout", "tp72", "--network",
                        "ib-ndr"], "128 attention heads")):
        _predict_refuses(capsys, argv, why)


def test_a_tensor_parallel_group_past_a_node_says_so_and_names_the_usual_layouts(cat):
    """TP 16 over two 8-GPU H100 nodes is priced (its all-reduces cross the network) and accepted,
    but deployments split across nodes by layers or experts: the prediction and `serve` say so and
    name the layouts; within a node, or with stages per node, or in one NVL72 rack, they do not."""
    from advisor.model.config import configure
    from advisor.model.predict import predict
    from advisor.model.serving import Load, serve

    dense = configure(cat, hardware="h100-sxm5-80gb", model="llama-3.1-405b", runtime="vllm", gpus=16)
    note = next(n for n in predict(cat, dense).notes if "spans" in n)
    assert "tensor parallel 16 spans 2 nodes of 8 GPUs" in note and "--layout tp8+pp2" in note
    assert "ep" not in note.split("(")[-1]                    # a dense model: no expert layout offered
    moe = configure(cat, hardware="h100-sxm5-80gb", model="deepseek-r1", runtime="sglang", gpus=16)
    assert any("--layout dp16+ep16" in n for n in predict(cat, moe).notes)
    report = serve(cat, dense, Load(kind="closed", concurrency=4, prompt_tokens=1000, output_tokens=200))
    assert any("spans 2 nodes" in n for n in report.notes)
    for quiet in (configure(cat, hardware="h100-sxm5-80gb", model="llama-3.1-405b", runtime="vllm", layout="tp8+pp2"),
                  configure(cat, hardware="h100-sxm5-80gb", model="llama-3.1-70b", runtime="vllm", gpus=8),
                  configure(cat, hardware="gb200-nvl72-gpu", model="llama-3.1-405b", runtime="vllm", gpus=16)):
        assert not any("spans" in n for n in predict(cat, quiet).notes), quiet.hardware.key


def test_pipeline_stages_work_on_different_micro_batches_at_once():
    """m micro-batches through pp stages take (m + pp − 1) stage-times, not m·pp, when enough are in
    flight: llama.cpp keeps 4 of one batch (its pipeline parallelism), a server one per request."""
    from advisor.model.roofline import pipeline_share

    assert pipeline_share(1.0, 8.0, 1.0, 4.0) == 1.0                       # no stages
    assert pipeline_share(2.0, 4.0, 1.0, 4.0) == pytest.approx(5 / 8)      # one prompt, llama.cpp
    assert pipeline_share(2.0, 4.0, 1.0, 0.0) == 1.0                       # one prompt, a server: no overlap
    assert pipeline_share(2.0, 4.0, 8.0, 0.0) == pytest.approx(5 / 8)      # eight prompts, a server
    assert pipeline_share(8.0, 8.0, 1.0, 4.0) == pytest.approx(1 / 4)      # at most 4 in flight
    assert pipeline_share(2.0, 1.0, 1.0, 4.0) == 1.0                       # one micro-batch cannot overlap
    # unequal micro-batches: 513 tokens are 512 + 1, which overlap by the 1 alone (hypothesis found a
    # 513-token prompt's TTFT below a 430-token one's when m equal ones were assumed)
    assert pipeline_share(2.0, 2.0, 1.0, 4.0, 512 / 513) == pytest.approx(0.5 + 0.5 * 512 / 513)
    assert pipeline_share(2.0, 2.0, 1.0, 4.0, 0.5) == pytest.approx(3 / 4)


def test_a_prompt_one_token_longer_never_comes_sooner_through_a_layer_split(cat):
    from advisor.model.config import configure
    from advisor.model.predict import predict
    from advisor.model.roofline import Workload

    cfg = configure(cat, hardware="a10-24gb", model="command-a-03-2025", quant="bf16", runtime="llama.cpp", gpus=2,
                    parallelism="pp")
    ttft = [predict(cat, cfg.replace(workload=Workload(1, s, 1, 0)), check_context=False).ttft_ms
            for s in (430, 512, 513, 600, 1024, 1025)]
    assert ttft == sorted(ttft)


def test_a_layer_split_pipelines_a_long_prompt_on_llama_cpp_builds_that_do(cat):
    """llama.cpp since its pipeline parallelism (March 2024) cuts a 2,048-token prompt into four
    512-token micro-batches that two GPUs work on at once: (4 + 1) / (4 · 2) of the stages' work one
    after another. A 512-token prompt (one micro-batch) and an older build do not gain; the prompt's
    FLOPs and the decode step do not change."""
    import dataclasses

    from advisor import api
    from advisor.model.config import configure
    from advisor.model.inputs import prompt_pipeline_copies

    def pf(gpus, prompt, runtime="llama.cpp", copies=None):
        cfg = configure(cat, hardware="rtx-3090", model="llama-3.1-8b", quant="q4_k_m", runtime=runtime, gpus=gpus)
        if copies is not None:
            cfg = cfg.replace(runtime=dataclasses.replace(cfg.runtime, prompt_pipeline_copies=copies))
        return api.predict(cat, cfg.replace(prompt=prompt, output=16))

    one, two, serial = pf(1, 2048), pf(2, 2048), pf(2, 2048, copies=0)
    assert two.prefill_tok_s / serial.prefill_tok_s == pytest.approx(8 / 5, rel=1e-6)
    assert two.prefill_tok_s > 1.5 * one.prefill_tok_s
    assert pf(2, 512).prefill_tok_s < 1.05 * pf(1, 512).prefill_tok_s
    assert two.decode_tok_s == pytest.approx(serial.decode_tok_s, rel=1e-9)
    assert two.prefill_tok_s <= two.prefill_ceiling_tok_s
    # a build from before the feature runs the stages one after another
    assert prompt_pipeline_copies(cat.runtimes["llama.cpp"]) == 4
    old = configure(cat, hardware="rtx-3090", model="llama-3.1-8b", quant="q4_k_m", runtime="llama.cpp@2024-01", gpus=2)
    assert prompt_pipeline_copies(old.runtime) == 0


def test_pipeline_stages_of_a_server_overlap_different_prompts_only(cat):
    """Llama 3.1 405B in TP2 × PP2 on GB200s (MLPerf's offline layout): a batch of prompts keeps both
    stages busy, a lone prompt crosses them one after another."""
    def ttft(batch):
        v = _one(cat, "llama-3.1-405b", "gb200-nvl72-gpu", (4, 2, 1, False), rt="tensorrt-llm", q="nvfp4", kv="fp8",
                 batch=(batch,), prompt=9000, output=100)
        return float(v["ttft_s"][0])

    lone, eight = ttft(1), ttft(8)
    # eight prompts of 9,000 tokens are ~9 micro-batches of 8,192: (9 + 1) / (9 · 2) of sequential
    assert eight / (8 * lone) == pytest.approx(10 / 18, rel=0.08)


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_recommend_and_serve_agree_on_a_data_parallel_attention_server(cat):
    """The recommender's serving model charges a data-parallel attention step its busiest group as
    `serve` does (`serving.busiest_group_tokens`): DeepSeek-R1 on eight H200s with SGLang, attention
    DP 8 + EP 8, 64 users — the same per-user speed from both; at this light load slower than plain
    tensor parallel (a prompt every few steps holds up all eight groups)."""
    import dataclasses

    from advisor.model.config import configure
    from advisor.model.serving import Load, serve

    req = Requirements(model=cat.models["deepseek-r1"], users=64, hardware=("h200-sxm-141gb",), runtimes=("sglang",),
                       kv_dtypes=("fp8",), min_bits=8, prompt_tokens=1000, output_tokens=300)
    rows = [c for c in recommend(cat, req).all() if c.gpus == 8 and c.layout.dp_attention == 8]
    assert rows
    row = rows[0]
    cfg = configure(cat, hardware="h200-sxm-141gb", model="deepseek-r1", quant=row.quant.key, runtime="sglang",
                    kv_dtype="fp8", layout="dp8+ep8")
    report = serve(cat, cfg, Load(kind="closed", concurrency=64, prompt_tokens=1000, output_tokens=300))
    assert row.tok_s == pytest.approx(1e3 / report.itl_ms, rel=0.02)
    assert report.itl_ms > 1.03 * serve(cat, dataclasses.replace(cfg, layout=None),
                                        Load(kind="closed", concurrency=64, prompt_tokens=1000, output_tokens=300)).itl_ms


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_recommend_and_serve_agree_under_a_vendors_maximum(cat):
    """Where a vendor's published maximum binds (DeepSeek-R1 on 8 × B200 at NVIDIA's own max-throughput
    lengths, 1,042/2,048), the recommender's serving model holds the served step to it as `serve` does
    (`StepCosts.ceiling_tok_s`, read through `serving.PASS_FIELDS`): the same per-user speed from both, and
    neither above NVIDIA's 43,146 output tok/s."""
    from advisor.model.config import configure
    from advisor.model.serving import Load, serve

    users = 3072
    req = Requirements(model=cat.models["deepseek-r1"], users=users, hardware=("b200-hgx",),
                       runtimes=("tensorrt-llm",), kv_dtypes=("fp8",), min_bits=4, prompt_tokens=1042,
                       output_tokens=2048, tok_s=1.0)
    rows = [c for c in recommend(cat, req).all() if c.quant.key == "nvfp4" and c.gpus == 8
            and c.layout is not None and c.layout.dp_attention == 8 and c.replicas == 1]
    assert rows
    row = rows[0]
    cfg = configure(cat, hardware="b200-hgx", model="deepseek-r1", quant="nvfp4", runtime="tensorrt-llm",
                    kv_dtype="fp8", layout="dp8+ep8")
    report = serve(cat, cfg, Load(kind="closed", concurrency=users, prompt_tokens=1042, output_tokens=2048,
                                  max_seqs=users))
    assert report.throughput_tok_s <= 43146.3 and row.throughput_tok_s <= 43146.3
    assert report.throughput_tok_s > 0.95 * 43146.2          # it binds: the kernel alone gives more
    assert row.tok_s == pytest.approx(1e3 / report.itl_ms, rel=0.02)
