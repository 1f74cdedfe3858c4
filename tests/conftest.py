"""Test set-up shared by all suites: headless Qt, and a private user-data folder per test."""

import os

import pytest

os.environ.setdefault("QT_QPA_PLATFORM", "offscreen")


@pytest.fixture(autouse=True)
def private_user_data(tmp_path, monkeypatch):
    """Every test gets an empty user-data folder, so nothing leaks between tests or from the machine."""
    folder = tmp_path / "userdata"
    monkeypatch.setenv("ADVISOR_DATA_DIR", str(folder))
    yield folder


@pytest.fixture(scope="session")
def cat():
    """The shipped catalog without any user overlay."""
    from advisor.data.catalog import load_catalog

    return load_catalog(user=None)


def _write_gguf(path, moe: bool = False, name: str | None = None, tokens: int = 0) -> int:
    """A small llama GGUF (dense or MoE) with mixed tensor types, written with the `gguf` package;
    returns the sum of its tensors' bytes (what an importer must find)."""
    import gguf
    import numpy as np
    from gguf import GGML_QUANT_SIZES, GGMLQuantizationType as T

    w = gguf.GGUFWriter(str(path), "llama")
    h, L, V, ff, H, kv, hd, E, mi = 512, 2, 16384, 1024, 8, 2, 64, 4, 256
    w.add_name(name or ("tiny-moe" if moe else "tiny"))
    if tokens:   # a tokenizer vocabulary of that many (one-letter) strings
        w.add_token_list(["a"] * tokens)
    w.add_block_count(L)
    w.add_embedding_length(h)
    w.add_feed_forward_length(ff)
    w.add_head_count(H)
    w.add_head_count_kv(kv)
    w.add_context_length(4096)
    w.add_key_length(hd)
    w.add_value_length(hd)
    w.add_file_type(15)
    if moe:
        w.add_expert_count(E)
        w.add_expert_used_count(2)
        w.add_expert_feed_forward_length(mi)
    total = 0

    def add(name, shape, t):
        nonlocal total
        block, size = GGML_QUANT_SIZES[t]
        nbytes = int(np.prod(shape)) // block * size
        total += nbytes
        if t == T.F32:
            w.add_tensor(name, np.zeros(shape[::-1], dtype=np.float32))
        elif t == T.F16:
            w.add_tensor(name, np.zeros(shape[::-1], dtype=np.float16))
        else:
            raw = list(shape[::-1])
            raw[-1] = shape[0] // block * size
            w.add_tensor(name, np.zeros(raw, dtype=np.uint8), raw_dtype=t)

    add("token_embd.weight", (h, V), T.Q4_K)
    add("output_norm.weight", (h,), T.F32)
    add("output.weight", (h, V), T.Q6_K)
    for i in range(L):
        add(f"blk.{i}.attn_norm.weight", (h,), T.F32)
        add(f"blk.{i}.attn_q.weight", (h, H * hd), T.Q4_K)
        add(f"blk.{i}.attn_k.weight", (h, kv * hd), T.Q4_K)
        add(f"blk.{i}.attn_v.weight", (h, kv * hd), T.Q6_K)
        add(f"blk.{i}.attn_output.weight", (H * hd, h), T.F16)
        add(f"blk.{i}.ffn_norm.weight", (h,), T.F32)
        if moe:
            add(f"blk.{i}.ffn_gate_inp.weight", (h, E), T.F32)
            add(f"blk.{i}.ffn_gate_exps.weight", (h, mi, E), T.Q4_K)
            add(f"blk.{i}.ffn_up_exps.weight", (h, mi, E), T.Q4_K)
            add(f"blk.{i}.ffn_down_exps.weight", (mi, h, E), T.Q8_0)
        else:
            add(f"blk.{i}.ffn_gate.weight", (h, ff), T.Q4_K)
            add(f"blk.{i}.ffn_up.weight", (h, ff), T.Q5_K)
            add(f"blk.{i}.ffn_down.weight", (ff, h), T.Q8_0)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return total


@pytest.fixture
def write_gguf():
    """The small-GGUF writer: write_gguf(path, moe=False, name=None, tokens=0) -> bytes of its tensors."""
    return _write_gguf


# ---- the app: a real MainWindow on a private settings file (tests/ui, tests/real) -------------------

@pytest.fixture(scope="session")
def app_catalog():
    """The catalog, loaded once for the UI tests (it is immutable)."""
    from advisor import api

    return api.load_catalog(user=False)


@pytest.fixture
def settings_path(tmp_path):
    return tmp_path / "settings.ini"


@pytest.fixture
def make_window(qtbot, app_catalog, settings_path):
    """Build a shown MainWindow; its worker threads are drained at teardown."""
    from ui.main_window import MainWindow
    from ui.session import Session
    from ui.settings import Settings

    made = []

    def make(restore: bool = True, path=None):
        w = MainWindow(session=Session(app_catalog), settings=Settings(path or settings_path), restore=restore)
        qtbot.addWidget(w)
        w.resize(1300, 850)
        w.show()
        made.append(w)
        return w

    yield make
    for w in made:
        w.workers.wait(10000)


@pytest.fixture
def window(make_window):
    return make_window()


@pytest.fixture
def settle(qtbot):
    """settle(window_or_dialog): wait until its background jobs (imports are read on a worker) have
    delivered their results on the GUI thread."""
    def wait(owner, timeout: int = 20000) -> None:
        qtbot.waitUntil(lambda: owner.workers.busy == 0, timeout=timeout)

    return wait
