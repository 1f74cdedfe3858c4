"""Forgiving resolution of the names people type, and honest ambiguity."""

import difflib
import pickle
import re

import pytest

from advisor.data.errors import UnknownName
from advisor.data.names import SYNONYMS, VENDOR_WORDS, normalise, tokens, words


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
    # "m30" must not be read as "M3 Max 30-core" (the Tesla M40 is a real card, so "m40" resolves)
    with pytest.raises(UnknownName) as err:
        cat.hardware_named("m30")
    assert "unknown" in str(err.value)


@pytest.mark.parametrize("query", ["", "   ", "zzzz-9999"])
def test_unknown_or_empty(cat, query):
    with pytest.raises(UnknownName):
        cat.hardware_named(query)


# --- type-ahead -------------------------------------------------------------------------------

def _suggested(cat, section, text, limit=20):
    return [name for _, name in cat.index(section).suggest(text, limit)]


def test_suggest_puts_the_rtx_4090_family_first(cat):
    names = _suggested(cat, "hardware", "4090")
    assert names[0] == cat.hardware["rtx-4090"].name
    assert names and all("4090" in n for n in names)
    assert all(key in cat.hardware for key, _ in cat.index("hardware").suggest("4090"))


def test_suggest_llama_3_lists_llama_3_models_first(cat):
    names = _suggested(cat, "models", "llama 3", 20)
    assert all(re.match(r"Llama 3\.\d ", n) for n in names[:5]), names
    assert "Meta Llama 3 8B" in names


def test_suggest_q4_lists_q4_formats_first(cat):
    names = _suggested(cat, "quants", "q4")
    q4 = [q.name for q in cat.quants.values() if q.name.upper().startswith("Q4_")]
    assert len(q4) >= 2 and sorted(names[:len(q4)]) == sorted(q4)
    assert names.index("IQ4_XS") > len(q4) - 1  # contains "q4", does not start with it


def test_suggest_ranks_prefix_then_word_starts_then_substrings(cat):
    names = _suggested(cat, "runtimes", "ll")
    assert names[0] == "llama.cpp" and names.index("vLLM") > names.index("llama.cpp (Vulkan)")
    # typed words in any order, each at the start of a name's token: "max m2" → M2 Max
    m2_max = _suggested(cat, "hardware", "max m2")
    assert m2_max and all(n.startswith("M2 Max") for n in m2_max)
    # a glued word stays glued: "h1" is H100…, not "HGX B200 … 1000 W"
    assert all(n.startswith("H1") for n in _suggested(cat, "hardware", "h1"))


def test_suggest_empty_and_limit(cat):
    idx = cat.index("hardware")
    by_name = sorted(cat.hardware.values(), key=lambda e: (e.name.casefold(), e.name, e.key))
    assert idx.suggest("", 5) == [(e.key, e.name) for e in by_name[:5]]
    assert len(idx.suggest("r", 3)) == 3 and idx.suggest("rtx", 0) == []
    assert idx.suggest("zzzz-9999") == []
    assert _suggested(cat, "hardware", "nvid")  # a vendor word being typed still finds names


# --- unknown names: described lazily, exactly as before ---------------------------------------

def _eager_nearest(idx, query, n=5):
    """What `NameIndex.nearest` computed before it pruned with bounds: every entry through difflib."""
    qn, qset = normalise(query), set(tokens(query))
    scored = []
    for key, names in idx._names.items():
        score = 0.0
        for toks in names:
            ratio = difflib.SequenceMatcher(None, " ".join(sorted(qset)), " ".join(sorted(toks))).ratio()
            overlap = len(qset & toks) / max(len(qset | toks), 1)
            score = max(score, ratio * 0.6 + overlap * 0.4)
        score = max(score, difflib.SequenceMatcher(None, qn, normalise(idx.display(key))).ratio() * 0.9)
        scored.append((score, idx.display(key)))
    scored.sort(key=lambda s: (-s[0], s[1]))
    return tuple(name for score, name in scored[:n] if score > 0.3)


@pytest.mark.parametrize("section,label,query", [
    ("hardware", "hardware", "rtx 4099"), ("hardware", "hardware", "h100 sxm6"),
    ("hardware", "hardware", "m2 maxx"), ("hardware", "hardware", "m30"),
    ("models", "model", "llama 3.1 80b"), ("models", "model", "gpt-oss 121b"),
    ("quants", "quantization", "q4_k_x"), ("runtimes", "runtime", "vllmm"),
])
def test_unknown_name_message_and_candidates_are_the_eager_ones(cat, section, label, query):
    idx = cat.index(section)
    with pytest.raises(UnknownName) as err:
        idx.resolve(query)
    near = _eager_nearest(idx, query)
    assert near and err.value.candidates == near
    assert str(err.value) == f"unknown {label} {query!r}; nearest: {', '.join(near)}"
    assert err.value.args == (str(err.value),) and idx.nearest(query, 2) == _eager_nearest(idx, query, 2)


def test_a_miss_that_is_not_shown_runs_no_difflib(cat, monkeypatch):
    def no_difflib(*args, **kwargs):
        raise AssertionError("difflib ran")

    monkeypatch.setattr(difflib, "SequenceMatcher", no_difflib)
    try:
        cat.hardware_named("rtx 4099")
    except UnknownName as exc:
        caught = exc  # caught, not read: nothing computed
    with pytest.raises(AssertionError, match="difflib ran"):
        str(caught)  # reading it is what works the candidates out
    monkeypatch.undo()
    assert str(caught).startswith("unknown hardware 'rtx 4099'; nearest: ")
    assert caught.candidates[0] == cat.hardware["rtx-4090"].name


def test_a_lazy_error_pickles_and_prints_described(cat):
    with pytest.raises(UnknownName) as err:
        cat.model_named("llama 3.1 80b")
    copy = pickle.loads(pickle.dumps(err.value))
    assert str(copy) == str(err.value) and copy.candidates == err.value.candidates
    assert repr(err.value) == f"UnknownName({str(err.value)!r})"
    plain = UnknownName("no hardware name")
    assert str(plain) == "no hardware name" and plain.candidates == () and plain.args == ("no hardware name",)


def test_tokens_are_the_per_word_split(cat):
    def per_word(text):  # the definition: each of words() split between letters and digits
        out = []
        for w in words(text):
            for tok in re.sub(r"(?<=[a-z])(?=\d)|(?<=\d)(?=[a-z])", " ", w).split():
                tok = SYNONYMS.get(tok, tok)
                if tok not in VENDOR_WORDS:
                    out.append(tok)
        return out

    for section in ("hardware", "models", "quants", "kv_dtypes", "runtimes"):
        for e in cat.section(section).values():
            for n in (e.key, e.name, *getattr(e, "aliases", ())):
                assert tokens(n) == per_word(n), n
