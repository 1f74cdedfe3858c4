"""GPUs that ship in several memory sizes as separate products (issue 16): each typed name reaches
its own catalog entry, with that card's memory and bandwidth, and `advisor predict` runs on it.

Unlike an Apple chip (one entry, several `memory_options_gib`), these variants differ in more than
the size (a narrower bus, fewer SMs, other clocks), so each is an entry of its own; the size in the
name (parsed by advisor/data/names.py) picks among them.
"""

import json

import pytest

from advisor.cli.main import main
from advisor.data.errors import UnknownName

# (typed name, key, memory GiB, bandwidth GB/s): the bandwidth shows the right card was reached,
# not just the right size applied to a sibling
VARIANTS = [
    ("RTX 3060 8GB", "rtx-3060-8gb", 8, 240),
    ("3060 8gb", "rtx-3060-8gb", 8, 240),
    ("NVIDIA GeForce RTX 3060 8GB", "rtx-3060-8gb", 8, 240),
    ("RTX 3060 12GB", "rtx-3060-12gb", 12, 360),
    ("3060 12gb", "rtx-3060-12gb", 12, 360),
    ("RTX 3060", "rtx-3060-12gb", 12, 360),  # the original card; nvidia-smi prints this for it
    ("RTX 3050", "rtx-3050-8gb", 8, 224),  # the original desktop card
    ("RTX 3050 8GB", "rtx-3050-8gb", 8, 224),
    ("3050 8gb", "rtx-3050-8gb", 8, 224),
    ("RTX 3050 6GB", "rtx-3050-6gb", 6, 168),
    ("3050 6gb", "rtx-3050-6gb", 6, 168),
    ("RTX 3050 Laptop", "rtx-3050-laptop-6gb", 6, 168),
    ("RTX 3050 6GB Laptop", "rtx-3050-laptop-6gb", 6, 168),
    ("RTX 2060", "rtx-2060", 6, 336),  # the original (2019) card
    ("RTX 2060 6GB", "rtx-2060", 6, 336),
    ("2060 6gb", "rtx-2060", 6, 336),
    ("RTX 2060 12GB", "rtx-2060-12gb", 12, 336),
    ("RTX 4060 Ti 8GB", "rtx-4060-ti-8gb", 8, 288),
    ("4060 Ti 16GB", "rtx-4060-ti-16gb", 16, 288),
    ("RTX 3080", "rtx-3080", 10, 760.3),
    ("RTX 3080 10GB", "rtx-3080", 10, 760.3),
    ("RTX 3080 12GB", "rtx-3080-12gb", 12, 912.4),
    ("RTX 4070 Ti", "rtx-4070-ti", 12, 504.2),
    ("RTX 4070 Ti SUPER", "rtx-4070-ti-super", 16, 672.3),
    ("RX 7600", "rx-7600", 8, 288),
    ("RX 7600 8GB", "rx-7600", 8, 288),
    ("Radeon RX 7600", "rx-7600", 8, 288),
    ("RX 7600 XT", "rx-7600-xt", 16, 288),
    ("RX 6800", "rx-6800", 16, 512),
    ("RX 6800 XT", "rx-6800-xt", 16, 512),
]


@pytest.mark.parametrize("query,key,memory_gib,bandwidth_gb_s", VARIANTS)
def test_each_typed_name_reaches_its_own_entry(cat, query, key, memory_gib, bandwidth_gb_s):
    hw = cat.hardware_named(query)
    assert (hw.key, hw.memory_gib, hw.bandwidth_gb_s) == (key, memory_gib, bandwidth_gb_s)
    if query in SHARED_NAMES:
        # issue 29: a name that also names the product's other sizes says which one it assumed
        assert len(hw.assumed) == 1 and hw.assumed[0].startswith(f"assumed the {hw.name};"), hw.assumed
        assert "also names" in hw.assumed[0]
    else:
        assert hw.assumed == ()  # the size or the model is in the name: nothing left open to say


#: names without a size that the product's other memory sizes share
SHARED_NAMES = {"RTX 3060", "RTX 3050", "RTX 2060", "RTX 3080"}


@pytest.mark.parametrize("query,message,candidates", [
    ("4060 Ti", "several", {"GeForce RTX 4060 Ti 8GB", "GeForce RTX 4060 Ti 16GB"}),  # no original
    ("RX 7600 16GB", "different product", {"Radeon RX 7600 XT"}),  # the 16 GB card is the XT
    ("RTX 3060 6GB", "different product", {"GeForce RTX 3060 Laptop GPU"}),  # the 6 GB RTX 3060 is the laptop part
])
def test_a_name_that_does_not_decide_says_why(cat, query, message, candidates):
    with pytest.raises(UnknownName, match=message) as err:
        cat.hardware_named(query)
    if candidates:
        assert candidates <= set(err.value.candidates)


def test_variants_differ_in_more_than_memory(cat):
    """Why they are entries and not memory options: the bus, the SMs or the clocks differ."""
    hw = cat.hardware
    assert hw["rtx-3060-8gb"].bandwidth_gb_s / hw["rtx-3060-12gb"].bandwidth_gb_s == pytest.approx(128 / 192)
    assert hw["rtx-3060-8gb"].fp16_dense_tflops == hw["rtx-3060-12gb"].fp16_dense_tflops  # same GA106 config
    assert hw["rtx-3050-6gb"].fp16_dense_tflops < hw["rtx-3050-8gb"].fp16_dense_tflops  # 18 SM at 1.47 GHz
    assert hw["rtx-2060"].fp16_dense_tflops < hw["rtx-2060-12gb"].fp16_dense_tflops  # 30 SM vs 34
    assert hw["rx-7600"].fp16_dense_tflops < hw["rx-7600-xt"].fp16_dense_tflops  # 2655 vs 2755 MHz
    assert hw["rx-6800"].fp16_dense_tflops < hw["rx-6800-xt"].fp16_dense_tflops  # 60 CU vs 72
    for key in ("rtx-3060-8gb", "rtx-3050-8gb", "rtx-3050-6gb", "rtx-2060", "rx-7600", "rx-6800"):
        assert "techpowerup.com/gpu-specs" in hw[key].source and hw[key].price is None


def _predict(capsys, hardware, model):
    code = main(["predict", "--hardware", hardware, "--model", model, "--json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    return json.loads(out)


@pytest.mark.parametrize("query,model", [
    ("RTX 3060 8GB", "llama 3.1 8b"),
    ("RTX 3050 8GB", "llama 3.1 8b"),
    ("RTX 3050 6GB", "qwen2.5 3b"),
    ("RTX 2060", "qwen2.5 3b"),
    ("RX 7600", "llama 3.1 8b"),
    ("RX 6800", "llama 3.1 8b"),
])
@pytest.mark.slow   # over a second here: the slow tier (CI runs it)
def test_predict_runs_on_each_new_variant(capsys, cat, query, model):
    d = _predict(capsys, query, model)
    hw = cat.hardware_named(query)
    assert d["fits"] and d["decode_tok_s"] > 0 and d["prefill_tok_s"] > 0
    assert d["usable_gb"] < hw.memory_gib * 1.074  # never more than the card's own memory (GiB → GB)


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_the_narrower_bus_decodes_slower(capsys):
    """Batch-1 decode reads the weights once per token: the 8 GB RTX 3060 (240 GB/s) decodes at
    about 240/360 of the 12 GB card's speed, which a size applied to one entry would miss."""
    slow = _predict(capsys, "RTX 3060 8GB", "llama 3.1 8b")
    fast = _predict(capsys, "RTX 3060 12GB", "llama 3.1 8b")
    ratio = slow["decode_tok_s"] / fast["decode_tok_s"]
    assert 0.6 < ratio < 0.75
    assert slow["usable_gb"] < fast["usable_gb"]


def test_vllm_bitsandbytes_dequantizes_every_expert_at_each_pass(cat):
    """vLLM's bitsandbytes MoE method dequantizes the whole expert weights of a layer to 16-bit before
    its fused products (`Quant.expert_dequant_bits`): a decode step reads every expert a GPU holds at
    4 bits, writes it at 16 and reads the routed ones back at 16. A dense model in NF4 is as before."""
    from advisor import api
    from advisor.model.geometry import expert_pass_bytes, geometry, weight_bits

    nf4 = cat.quants["nf4"]
    bits = weight_bits(nf4)
    assert bits.expert_dequant == 16
    g = geometry(cat.models["deepseek-r1"])
    one_token = g.expert_fraction(1.0)
    moved = expert_pass_bytes(g, bits, one_token)
    assert moved == pytest.approx(g.routed_expert_params * (one_token * 16 + nf4.bits_per_weight + 16) / 8)
    cfg = api.configure(cat, hardware="H200", model="DeepSeek-R1", runtime="vllm", quant="nf4", kv_dtype="fp8",
                        layout="dp4+ep4", batch=16, prompt=1000, output=200)
    awq = api.predict(cat, cfg.replace(quant=cat.quants["awq-int4"]))
    p = api.predict(cat, cfg)
    assert p.decode_tok_s < 0.3 * awq.decode_tok_s
    assert any("dequantizes every expert" in n for n in p.notes)
    # while it multiplies, each GPU holds one layer's 16-bit copy of its experts (a quarter of them at EP 4)
    one_layer_gb = 16 / 8 * g.routed_expert_params / g.moe_layers / 4 / 1e9
    nf4_ws = p.workspace_gb / 4
    awq_ws = awq.workspace_gb / 4
    assert nf4_ws - awq_ws == pytest.approx(one_layer_gb, rel=0.02)
    # a dense model has no experts to dequantize: the decode step reads its 4-bit weights as before
    dense = api.configure(cat, hardware="rtx 4090", model="llama 3.1 8b", runtime="vllm", quant="nf4")
    assert expert_pass_bytes(geometry(dense.model), bits, 1.0) == 0
    assert not any("dequantizes every expert" in n for n in api.predict(cat, dense).notes)
