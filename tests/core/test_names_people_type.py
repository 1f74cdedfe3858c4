"""Issue 29, "Names that resolve silently wrong": names people type, through the functions the CLI uses
(`Catalog.hardware_named`, `Catalog.model_named`), each with the catalog entry it must give, or for an
ambiguous or unknown name the assumption stated or the refusal and what it suggests.

Rules under test (advisor/data/names.py, catalog/hardware/apple.yaml):
- a bare Apple chip name is its base bin, what most buyers have, and the resolver says which bin it
  assumed ("M4 Max" → 32-core GPU, 36 GB; "Mac mini M4 Pro" → 16-core GPU); a size only the other bin
  ships in, or its cores, choose the other;
- a model name's version and size are read whole: "gemma 4" is not Gemma 3 4B, "llama 3.3 8b" is not
  Llama 3 8B; a name without a version that several versions fit is ambiguous ("llama 8b");
- a bare name two products share is refused, listing both ("qwen3-coder": the 30B and the 480B;
  "Tesla M40": 12 and 24 GB, asking for the size);
- nvidia-smi strings, Ollama tags (their quantization dropped) and Hugging Face ids resolve.
"""

import pytest

from advisor.data.errors import UnknownName

# --- hardware: (typed, key) -------------------------------------------------------------------------
HARDWARE = [
    # nvidia-smi / rocm-smi strings
    ("NVIDIA GeForce RTX 4090", "rtx-4090"),
    ("NVIDIA GeForce RTX 3090", "rtx-3090"),
    ("NVIDIA GeForce RTX 5090", "rtx-5090"),
    ("NVIDIA GeForce RTX 3080 Laptop GPU", "rtx-3080-laptop-16gb"),
    ("NVIDIA GeForce RTX 4060 Ti 16GB", "rtx-4060-ti-16gb"),
    ("NVIDIA H100 80GB HBM3", "h100-sxm5-80gb"),
    ("NVIDIA H100 PCIe", "h100-pcie-80gb"),
    ("NVIDIA H100 NVL", "h100-nvl-94gb"),
    ("NVIDIA A100-SXM4-80GB", "a100-sxm4-80gb"),
    ("NVIDIA A100-SXM4-40GB", "a100-sxm4-40gb"),
    ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb"),
    ("Tesla T4", "t4-16gb"),
    ("Tesla P40", "p40-24gb"),
    ("Tesla V100-SXM2-32GB", "v100-sxm2-32gb"),
    ("Tesla M40 24GB", "m40-24gb"),
    ("NVIDIA L4", "l4-24gb"),
    ("NVIDIA L40S", "l40s-48gb"),
    ("NVIDIA A10G", "a10g-24gb"),
    ("NVIDIA RTX A6000", "rtx-a6000"),
    ("Quadro RTX 8000", "quadro-rtx-8000"),
    ("AMD Instinct MI300X", "mi300x"),
    # typed product names
    ("rtx 5090", "rtx-5090"),
    ("4090", "rtx-4090"),
    ("3090", "rtx-3090"),  # not the 3090 Ti: a Ti is a different product
    ("3090 ti", "rtx-3090-ti"),
    ("rtx 4090 laptop", "rtx-4090-laptop"),
    ("h100", "h100-sxm5-80gb"),  # the SXM part, as before (issue 29 leaves H100's choice alone)
    ("h100 sxm", "h100-sxm5-80gb"),
    ("a100 40gb", "a100-sxm4-40gb"),
    ("mi300x", "mi300x"),
    ("rx 7900 xtx", "rx-7900-xtx"),
    ("m40 12gb", "m40-12gb"),
    # Apple: product names dropped, the chip decides; a bare chip is its base bin
    ("m4 max", "apple-m4-max-32c"),
    ("macbook pro m4 max", "apple-m4-max-32c"),
    ("Mac Studio M4 Max", "apple-m4-max-32c"),
    ("M4 Max 36GB", "apple-m4-max-32c"),
    ("M4 Max 128GB", "apple-m4-max-40c"),  # only the 40-core bin ships with 128 GB
    ("m4 max 40-core", "apple-m4-max-40c"),
    ("mac mini m4 pro", "apple-m4-pro-16c"),
    ("m4 pro", "apple-m4-pro-16c"),
    ("Mac mini M4 Pro 24GB", "apple-m4-pro-16c"),
    ("m4 pro 20c", "apple-m4-pro-20c"),
    ("m2 max 38-core", "apple-m2-max-38c"),
]


@pytest.mark.parametrize("query,key", HARDWARE)
def test_hardware_names_people_type(cat, query, key):
    assert cat.hardware_named(query).key == key


@pytest.mark.parametrize("query,memory_gib", [
    ("m4 max", 36), ("M4 Max 128GB", 128), ("Mac mini M4 Pro 24GB", 24), ("M4 Max 64GB", 64),
])
def test_apple_sizes(cat, query, memory_gib):
    assert cat.hardware_named(query).memory_gib == memory_gib


@pytest.mark.parametrize("query,assumed,other", [
    ("m4 max", "M4 Max (32-core GPU)", "M4 Max (40-core GPU)"),
    ("macbook pro m4 max", "M4 Max (32-core GPU)", "M4 Max (40-core GPU)"),
    ("mac mini m4 pro", "M4 Pro (16-core GPU)", "M4 Pro (20-core GPU)"),
])
def test_a_bare_apple_chip_says_which_bin_it_assumed(cat, query, assumed, other):
    """The base bin, said in a note that names the other bin and how to choose it."""
    notes = cat.hardware_named(query).assumed
    bin_note = next(n for n in notes if n.startswith("assumed the "))
    assert bin_note.startswith(f"assumed the {assumed};") and other in bin_note and "GPU cores" in bin_note


def test_a_named_bin_or_size_states_no_bin_assumption(cat):
    assert not any(n.startswith("assumed the ") for n in cat.hardware_named("m4 max 40-core").assumed)
    assert not any(n.startswith("assumed the ") for n in cat.hardware_named("m4 pro 20c").assumed)


@pytest.mark.parametrize("query,listed,hint", [
    # the same card in two memory sizes: asked for, as for the RTX 4060 Ti
    ("Tesla M40", ("Tesla M40 12GB", "Tesla M40 24GB"), "name the memory size (12, 24 GB)"),
    ("m40", ("Tesla M40 12GB", "Tesla M40 24GB"), "name the memory size"),
    ("NVIDIA GeForce RTX 4060 Ti", ("GeForce RTX 4060 Ti 16GB", "GeForce RTX 4060 Ti 8GB"), "name the memory size (8, 16 GB)"),
])
def test_hardware_names_that_ask(cat, query, listed, hint):
    with pytest.raises(UnknownName) as e:
        cat.hardware_named(query)
    assert set(listed) <= set(e.value.candidates) and hint in str(e.value)


def test_a_family_name_with_several_sizes_asks_which(cat):
    # "gemma 4" is a family of five sizes (issue 29): never Gemma 3 4B, and never one size chosen silently
    with pytest.raises(UnknownName) as e:
        cat.model_named("gemma 4")
    assert "several model entries" in str(e.value)
    assert e.value.candidates and all(c.startswith("Gemma 4") for c in e.value.candidates)


@pytest.mark.parametrize("query,near", [("rtx 509", "GeForce RTX 5090"), ("h100 sxm6", None)])
def test_hardware_names_that_are_unknown(cat, query, near):
    with pytest.raises(UnknownName) as e:
        cat.hardware_named(query)
    assert "unknown hardware" in str(e.value)
    if near:
        assert near in e.value.candidates


@pytest.mark.parametrize("query", ["1", "-1", "70"])
def test_a_bare_short_number_is_refused(cat, query):
    with pytest.raises(UnknownName, match="too short"):
        cat.hardware_named(query)
    with pytest.raises(UnknownName, match="too short"):
        cat.model_named(query)


# --- models: (typed, key) ---------------------------------------------------------------------------
MODELS = [
    # Ollama tags, a quantization in the tag dropped (the weight format is --quant's)
    ("llama3.1:8b", "llama-3.1-8b"),
    ("llama3.1:8b-instruct-q4_K_M", "llama-3.1-8b"),
    ("llama3.1:70b", "llama-3.1-70b"),
    ("llama3.2:1b", "llama-3.2-1b"),
    ("llama3.2:3b", "llama-3.2-3b"),
    ("llama3:8b", "llama-3-8b"),
    ("qwen2.5:7b-instruct-q4_K_M", "qwen2.5-7b"),
    ("qwen2.5:14b", "qwen2.5-14b"),
    ("qwen2.5-coder:32b", "qwen2.5-coder-32b"),
    ("qwen3:8b", "qwen3-8b"),
    ("qwen3:32b", "qwen3-32b"),
    ("qwen3:30b-a3b", "qwen3-30b-a3b"),
    ("qwen3:235b", "qwen3-235b-a22b"),
    ("qwen3-coder:30b", "qwen3-coder-30b-a3b-instruct"),
    ("qwen3-coder:480b", "qwen3-coder-480b-a35b-instruct"),
    ("gemma3:27b", "gemma-3-27b"),
    ("gemma3:4b-it-qat", "gemma-3-4b"),
    ("gemma2:9b", "gemma-2-9b"),
    ("phi4-mini:3.8b", "phi-4-mini"),
    ("deepseek-r1:32b", "deepseek-r1-distill-qwen-32b"),
    ("deepseek-r1:70b", "deepseek-r1-distill-llama-70b"),
    ("gpt-oss:20b", "gpt-oss-20b"),
    ("gpt-oss:120b", "gpt-oss-120b"),
    ("llama4:scout", "llama-4-scout-17b-16e"),
    ("mistral:latest", "mistral-7b-v0.3"),
    # Hugging Face ids, with or without an owner that is not the model's
    ("meta-llama/Llama-3.1-8B-Instruct", "llama-3.1-8b"),
    ("Qwen/Qwen2.5-7B-Instruct", "qwen2.5-7b"),
    ("Qwen/Qwen3-30B-A3B", "qwen3-30b-a3b"),
    ("Qwen/Qwen3-Coder-30B-A3B-Instruct", "qwen3-coder-30b-a3b-instruct"),
    ("mistralai/Mistral-7B-Instruct-v0.3", "mistral-7b-v0.3"),
    ("google/gemma-3-27b-it", "gemma-3-27b"),
    ("google/gemma-3-12b-it-qat-q4_0-gguf", "gemma-3-12b"),
    ("deepseek-ai/DeepSeek-R1", "deepseek-r1"),
    ("openai/gpt-oss-120b", "gpt-oss-120b"),
    ("bartowski/Meta-Llama-3.1-8B-Instruct-GGUF", "llama-3.1-8b"),
    ("unsloth/Llama-3.2-1B-Instruct", "llama-3.2-1b"),
    ("hf.co/bartowski/Llama-3.2-3B-Instruct-GGUF:Q4_K_M", "llama-3.2-3b"),
    ("Meta-Llama-3.1-8B-Instruct-Q4_K_M.gguf", "llama-3.1-8b"),
    # typed
    ("llama 3.1 8b", "llama-3.1-8b"),
    ("Llama 3.1 8B Instruct", "llama-3.1-8b"),
    ("llama 3 8b", "llama-3-8b"),  # "3" is not "3.1"
    ("llama 3 70b", "llama-3-70b"),
    ("llama 3.3 70b", "llama-3.3-70b"),
    ("llama 3.3", "llama-3.3-70b"),  # the only Llama 3.3
    ("llama 3.1 405b", "llama-3.1-405b"),
    ("llama 2 7b", "llama-2-7b"),
    ("llama 1b", "llama-3.2-1b"),  # the only 1B Llama
    ("gemma 3 4b", "gemma-3-4b"),
    ("gemma 9b", "gemma-2-9b"),  # the only 9B Gemma
    ("qwen 2.5 7b", "qwen2.5-7b"),
    ("qwen 3b", "qwen2.5-3b"),  # not Qwen3-30B-A3B: "a3b" is its active size, not "3b"
    ("qwen 3 4b", "qwen3-4b"),
    ("qwen3 30b", "qwen3-30b-a3b"),
    ("qwen3 coder 30b", "qwen3-coder-30b-a3b-instruct"),
    ("mixtral 8x7b", "mixtral-8x7b-v0.1"),
    ("mixtral 8x22b", "mixtral-8x22b-v0.1"),
    ("phi 4", "phi-4"),
    ("phi 3.5", "phi-3.5-mini"),
    ("deepseek v3", "deepseek-v3"),
    ("deepseek-v3.1", "deepseek-v3.1"),
    ("gpt-oss 20b", "gpt-oss-20b"),
]


@pytest.mark.parametrize("query,key", MODELS)
def test_model_names_people_type(cat, query, key):
    assert cat.model_named(query).key == key


@pytest.mark.parametrize("query,listed", [
    # two products share the bare name: both are listed (Ollama's qwen3-coder is the 30B)
    ("qwen3-coder", ("Qwen3-Coder-30B-A3B-Instruct", "Qwen3-Coder-480B-A35B-Instruct")),
    ("Qwen3-Coder", ("Qwen3-Coder-30B-A3B-Instruct", "Qwen3-Coder-480B-A35B-Instruct")),
    ("qwen3-coder:latest", ("Qwen3-Coder-30B-A3B-Instruct", "Qwen3-Coder-480B-A35B-Instruct")),
    # no version: every version that fits, not the one with the shortest name
    ("llama 8b", ("Llama 3.1 8B", "Meta Llama 3 8B")),
    ("llama 70b", ("Llama 2 70B", "Meta Llama 3 70B", "Llama 3.1 70B")),
    ("llama 3.1", ("Llama 3.1 8B", "Llama 3.1 70B", "Llama 3.1 405B")),
    ("qwen3", ("Qwen3 8B", "Qwen3-30B-A3B", "Qwen3 0.6B")),
    # no version: Qwen2.5's 7B and DeepSeek's distill of it share "Qwen" and "7B"
    ("qwen 7b", ("Qwen2.5 7B", "DeepSeek-R1-Distill-Qwen-7B")),
    # a family of two sizes: both, never Gemma 3
    ("gemma 3n", ("Gemma 3n E2B", "Gemma 3n E4B")),
])
def test_ambiguous_model_names_list_the_candidates(cat, query, listed):
    with pytest.raises(UnknownName, match="matches several model entries") as e:
        cat.model_named(query)
    assert set(listed) <= set(e.value.candidates)


def test_llama_3_1_is_not_llama_3_2(cat):
    with pytest.raises(UnknownName) as e:
        cat.model_named("llama 3.1")
    assert not any("3.2" in c for c in e.value.candidates)


@pytest.mark.parametrize("query,first,numbers", [
    # a version or size no entry has: unknown, the entries it would otherwise have taken first
    ("gemma 3 2b", "Gemma 3n E2B", "(3, 2b)"),
    ("gemma 4 27b", "Gemma 3 27B", "(4, 27b)"),
    ("llama 3.3 8b", "Meta Llama 3 8B", "(3.3, 8b)"),
])
def test_a_version_or_size_no_entry_has_is_unknown(cat, query, first, numbers):
    with pytest.raises(UnknownName) as e:
        cat.model_named(query)
    msg = str(e.value)
    assert msg.startswith(f"unknown model {query!r}") and numbers in msg and "version or size" in msg
    assert e.value.candidates[0] == first


@pytest.mark.parametrize("query,near", [
    ("qwen 3.5 7b", "Qwen2.5 7B"), ("llama 3.2 8b", "Llama 3.2 3B"), ("qwen2.5 8b", "Qwen2.5 7B"),
    ("llama 3.1 80b", "Llama 3.1 70B"), ("gpt-oss 121b", "gpt-oss-120b"), ("gemma 5", "Gemma 3 4B"),
])
def test_unknown_versions_suggest_what_is_close(cat, query, near):
    with pytest.raises(UnknownName, match="unknown model") as e:
        cat.model_named(query)
    assert near in e.value.candidates


def test_predict_says_which_m4_max_bin_it_assumed(capsys):
    from advisor.cli.main import main

    code = main(["predict", "--hardware", "m4 max", "--model", "llama 3.1 8b"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "M4 Max (32-core GPU)" in out
    assert "assumed the M4 Max (32-core GPU); the M4 Max also comes as M4 Max (40-core GPU)" in out + err


def test_cli_refuses_an_ambiguous_model_listing_both(capsys):
    from advisor.cli.main import main

    code = main(["predict", "--hardware", "rtx 4090", "--model", "qwen3-coder"])
    out, err = capsys.readouterr()
    assert code != 0
    assert "Qwen3-Coder-30B-A3B-Instruct" in err and "Qwen3-Coder-480B-A35B-Instruct" in err


def test_count_of_names_people_type():
    """At least 60 typed names with their expected entry (issue 29's bar)."""
    assert len(HARDWARE) + len(MODELS) >= 60
