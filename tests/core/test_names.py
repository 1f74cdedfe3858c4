"""Forgiving resolution of the names people type, and honest ambiguity."""

import pytest

from advisor.data.errors import UnknownName


@pytest.mark.parametrize("query,expected_key", [
    ("NVIDIA GeForce RTX 4090", "rtx-4090"),
    ("rtx4090", "rtx-4090"),
    ("RTX 4090", "rtx-4090"),
    ("4090 24GB", "rtx-4090"),
    ("3090", "rtx-3090"),
    ("Apple M1 Max 32-core GPU", "apple-m1-max-32c"),
    ("M2 Max 38-core", "apple-m2-max-38c"),
    ("M3 Max 30c", "apple-m3-max-30c"),
    ("M2 Ultra 76-Core GPU 192GB", "apple-m2-ultra-76c"),
    ("A100 80GB PCIe", "a100-pcie-80gb"),
])
def test_hardware_names(cat, query, expected_key):
    assert cat.hardware_named(query).key == expected_key


@pytest.mark.parametrize("query,expected_name_part", [
    ("LLaMA 2 7B", "2 7B"),
    ("Meta Llama 3 8B", "3 8B"),
    ("meta-llama/Llama-3.1-8B-Instruct", "3.1 8B"),
    ("Llama 3.1 8B Instruct", "3.1 8B"),
    ("gpt-oss-20b", "gpt-oss-20b"),
])
def test_model_names(cat, query, expected_name_part):
    assert expected_name_part.lower() in cat.model_named(query).name.lower()


@pytest.mark.parametrize("query,key", [("q4_k_m", "q4_k_m"), ("Q4_K_M", "q4_k_m"), ("bf16", "bf16"), ("FP8", "fp8")])
def test_quant_names(cat, query, key):
    assert cat.quant_named(query).key == key


def test_ambiguous_name_lists_the_candidates(cat):
    with pytest.raises(UnknownName) as err:
        cat.hardware_named("rtx 6000")
    msg = str(err.value)
    assert "several" in msg and "RTX 6000 Ada" in msg and "A6000" in msg
    assert len(err.value.candidates) >= 3


def test_a_glued_word_does_not_match_scattered_tokens(cat):
    # "m40" must not be read as "M3 Max 40-core"
    with pytest.raises(UnknownName) as err:
        cat.hardware_named("m40")
    assert "unknown" in str(err.value)


@pytest.mark.parametrize("query", ["", "   ", "zzzz-9999"])
def test_unknown_or_empty(cat, query):
    with pytest.raises(UnknownName):
        cat.hardware_named(query)
