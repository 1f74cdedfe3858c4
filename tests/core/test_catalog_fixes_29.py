"""Issue 29, "Wrong or stale entries": each corrected catalog figure, with the source it came from.

The sources are repeated in each entry's ``source``/``notes``; the comments here name them so a
failing assertion says where to look.
"""

from __future__ import annotations

import pytest

from advisor.data.catalog import load_catalog


@pytest.fixture(scope="module")
def cat():
    return load_catalog(user=None)


def test_deepseek_v2_lite_context_is_the_model_cards_32k(cat):
    # https://github.com/deepseek-ai/DeepSeek-V2 README / the DeepSeek-V2-Lite(-Chat) model card,
    # table "Model Downloads": DeepSeek-V2-Lite 16B / 2.4B / Context Length 32k. The config's
    # max_position_embeddings 163840 (YaRN x40 over 4096) is not an advertised context.
    m = cat.models["deepseek-v2-lite"]
    assert m.native_context == 32768
    assert "issue 29" in m.notes


def test_qwen3_30b_a3b_instruct_2507_has_its_own_256k_entry(cat):
    # https://huggingface.co/Qwen/Qwen3-30B-A3B-Instruct-2507 model card: "Context Length: 262,144 natively".
    m = cat.models["qwen3-30b-a3b-instruct-2507"]
    assert m.native_context == 262144
    assert "Qwen/Qwen3-30B-A3B-Instruct-2507" in m.aliases
    # same architecture as the April release, which keeps its 32K + YaRN 131072
    base = cat.models["qwen3-30b-a3b"]
    assert base.native_context == 131072
    assert "Qwen/Qwen3-30B-A3B-Instruct-2507" not in base.aliases
    for field in ("layers", "hidden", "heads", "kv_heads", "head_dim", "vocab", "experts",
                  "experts_per_token", "moe_intermediate", "params_total_b", "params_active_b"):
        assert getattr(m, field) == getattr(base, field), field


def test_kimi_k2_instruct_0905_has_its_own_256k_entry(cat):
    # https://huggingface.co/moonshotai/Kimi-K2-Instruct-0905 model card: context window "increased
    # from 128k to 256k tokens", Context Length 256K (= 262,144).
    m = cat.models["kimi-k2-instruct-0905"]
    assert m.native_context == 262144
    assert "moonshotai/Kimi-K2-Instruct-0905" in m.aliases
    base = cat.models["kimi-k2-instruct"]
    assert base.native_context == 131072  # the 0711 release: 128K
    assert "moonshotai/Kimi-K2-Instruct-0905" not in base.aliases
    for field in ("layers", "hidden", "heads", "kv_lora_rank", "q_lora_rank", "experts",
                  "moe_intermediate", "native_quant"):
        assert getattr(m, field) == getattr(base, field), field


def test_gptq_int8_bits_per_weight_counts_an_8_bit_zero(cat):
    # AutoGPTQ auto_gptq/nn_modules/qlinear/qlinear_cuda.py: per 128-weight group and column one FP16
    # scale and one zero packed at the quant width -> 8 + (16 + 8) / 128 = 8.1875.
    q = cat.quants["gptq-int8"]
    assert q.bits_per_weight == pytest.approx(8 + (16 + 8) / 128)
    # the same rule gives the INT4 entry's 4.156
    assert cat.quants["awq-int4"].bits_per_weight == pytest.approx(4 + (16 + 4) / 128, abs=5e-4)


@pytest.mark.parametrize("typed,picked,also", [
    ("A100", "A100 80GB SXM4", "A100 40GB PCIe"),
    ("V100", "Tesla V100 SXM2 32GB", "Tesla V100 PCIe 16GB"),
    ("P100", "Tesla P100 PCIe 16GB", "Tesla P100 PCIe 12GB"),
    ("MI50", "Radeon Instinct MI50 (32GB)", "Radeon Instinct MI50 (16GB)"),
    ("A770", "Arc A770 16GB", "Arc A770 8GB"),
    ("H100", "H100 SXM5 80GB", "H100 PCIe 80GB"),
])
def test_a_name_several_models_share_says_which_it_assumed(cat, typed, picked, also):
    """Issue 29: "A100" picks the 80 GB SXM4 (what most buyers have) and says so, naming the others."""
    hw = cat.hardware_named(typed)
    assert hw.name == picked
    assert any(a.startswith(f"assumed the {picked};") and also in a for a in hw.assumed), hw.assumed
    # another product is not a size of this one: the 4090 D and the laptop 4090 are not named
    assert cat.hardware_named("rtx 4090").assumed == ()
    assert cat.hardware_named(f"{picked}").assumed == ()
