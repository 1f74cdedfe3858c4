"""A llama-architecture GGUF with random weights, written with the `gguf` package: a model llama.cpp
loads and runs (llama-bench, llama-server) so the real measuring path can be tried without
downloading one. Its tokenizer is SentencePiece-style with byte fallback (every text tokenizes);
its output is noise, which a speed benchmark does not mind.

`write_llama(path, dims, dtype)` with ``dtype`` F16 or Q8_0 (quantized by gguf-py); other formats
come from llama.cpp's own llama-quantize run on the F16 file. `free_port`, `wait_healthy` and `stop`
run llama-server on it (the real tests and benchmarks/gpu_llama_cpp.py).
"""

from __future__ import annotations

import socket
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np


@dataclass(frozen=True)
class Dims:
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    ffn: int
    vocab: int
    context: int = 4096

    @property
    def params(self) -> int:
        hd = self.hidden // self.heads
        attn = self.hidden * self.hidden * 2 + self.hidden * hd * self.kv_heads * 2
        return self.layers * (attn + 3 * self.hidden * self.ffn + 2 * self.hidden) + 2 * self.vocab * self.hidden + self.hidden


#: seconds-scale for tests
TINY = Dims(layers=4, hidden=512, heads=8, kv_heads=2, ffn=1536, vocab=4096, context=2048)
#: TinyLlama 1.1B's shape (22 layers, 2048 wide, 32 heads, 4 KV heads, 5632 FFN, 32000 tokens)
TINYLLAMA = Dims(layers=22, hidden=2048, heads=32, kv_heads=4, ffn=5632, vocab=32000, context=2048)
#: Llama 3.1 8B's shape (32 layers, 4096 wide, 32 heads, 8 KV heads, 14336 FFN, 128256 tokens), for GPUs
LLAMA_8B = Dims(layers=32, hidden=4096, heads=32, kv_heads=8, ffn=14336, vocab=128256, context=131072)


def _tokenizer(w, vocab: int) -> None:
    """SentencePiece-style: the words `advisor measure` writes its prompts with are one token each
    (with every prefix of "▁word" in the vocabulary, so the merges can build them), anything else falls
    back to bytes. Without the words, a prompt word was ~8 byte tokens, and llama-server spent ~0.1 ms a
    token tokenizing them (seen on the H100 run: catalog/measured/llamacpp_h100_device.md)."""
    from advisor.fit.endpoint import PROMPT_WORDS

    specials = ["<unk>", "<s>", "</s>"]
    byte_tokens = [f"<0x{b:02X}>" for b in range(256)]
    pieces = sorted({p for word in PROMPT_WORDS for p in (("\u2581" + word)[:k] for k in range(1, len(word) + 2))}
                    | {c for word in PROMPT_WORDS for c in word})
    filler = pieces + [f"\u2581t{i}" for i in range(vocab - len(specials) - len(byte_tokens) - len(pieces))]
    tokens = specials + byte_tokens + filler
    types = [2, 3, 3] + [6] * 256 + [1] * len(filler)   # unknown, control, byte, normal
    w.add_tokenizer_model("llama")
    w.add_token_list(tokens)
    # the longer a word piece, the likelier its merge; the filler below every piece
    w.add_token_scores([0.0] * 3 + [0.0] * 256 + [float(len(p)) for p in pieces]
                       + [-float(i) for i in range(len(filler) - len(pieces))])
    w.add_token_types(types)
    w.add_bos_token_id(1)
    w.add_eos_token_id(2)
    w.add_unk_token_id(0)
    w.add_add_bos_token(True)


def write_llama(path: str | Path, dims: Dims = TINY, dtype: str = "F16", seed: int = 0, name: str = "random-llama",
                tiled: bool = False) -> Path:
    """``tiled``: every matrix repeats one block of 16M random values instead of drawing its own,
    which writes an 8B model in seconds rather than minutes (a speed benchmark reads the bytes, it
    does not mind that they repeat)."""
    import gguf
    from gguf import GGMLQuantizationType as T
    from gguf.quants import quantize

    rng = np.random.default_rng(seed)
    path = Path(path)
    w = gguf.GGUFWriter(str(path), "llama")
    hd = dims.hidden // dims.heads
    w.add_name(name)
    w.add_context_length(dims.context)
    w.add_embedding_length(dims.hidden)
    w.add_block_count(dims.layers)
    w.add_feed_forward_length(dims.ffn)
    w.add_head_count(dims.heads)
    w.add_head_count_kv(dims.kv_heads)
    w.add_rope_dimension_count(hd)
    w.add_layer_norm_rms_eps(1e-5)
    w.add_file_type({"F16": 1, "Q8_0": 7}[dtype])
    _tokenizer(w, dims.vocab)

    block = rng.standard_normal(1 << 24, dtype=np.float32) * 0.02 if tiled else None
    if block is not None and dtype == "F16":
        block = block.astype(np.float16)   # tiled straight into the stored type: no float32 copy per matrix

    def matrix(name: str, rows: int, cols: int) -> None:
        # small values: activations stay finite through the layers; stored as the row-major
        # (rows, cols) array gguf expects, ne0 = cols
        if block is not None:
            a = np.resize(block, (rows, cols))
        else:
            a = (rng.standard_normal((rows, cols), dtype=np.float32) * 0.02)
        if dtype == "Q8_0":
            w.add_tensor(name, quantize(a, T.Q8_0), raw_dtype=T.Q8_0)
        else:
            w.add_tensor(name, a.astype(np.float16, copy=False))

    def norm(name: str) -> None:
        w.add_tensor(name, np.ones(dims.hidden, dtype=np.float32))

    matrix("token_embd.weight", dims.vocab, dims.hidden)
    for i in range(dims.layers):
        norm(f"blk.{i}.attn_norm.weight")
        matrix(f"blk.{i}.attn_q.weight", dims.hidden, dims.hidden)
        matrix(f"blk.{i}.attn_k.weight", dims.kv_heads * hd, dims.hidden)
        matrix(f"blk.{i}.attn_v.weight", dims.kv_heads * hd, dims.hidden)
        matrix(f"blk.{i}.attn_output.weight", dims.hidden, dims.hidden)
        norm(f"blk.{i}.ffn_norm.weight")
        matrix(f"blk.{i}.ffn_gate.weight", dims.ffn, dims.hidden)
        matrix(f"blk.{i}.ffn_up.weight", dims.ffn, dims.hidden)
        matrix(f"blk.{i}.ffn_down.weight", dims.hidden, dims.ffn)
    norm("output_norm.weight")
    matrix("output.weight", dims.vocab, dims.hidden)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on (at the moment of asking)."""
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_healthy(root_url: str, proc, timeout_s: float) -> float | None:
    """Seconds until the llama-server at ``root_url`` (process ``proc``) answers /health; None when
    it exited or ``timeout_s`` passed first."""
    import httpx

    t0 = time.time()
    while time.time() - t0 < timeout_s and proc.poll() is None:
        try:
            if httpx.get(f"{root_url}/health", timeout=2).status_code == 200:
                return time.time() - t0
        except httpx.HTTPError:
            pass
        time.sleep(0.5)
    return None


def stop(proc, wait_s: float) -> None:
    """End a server process: terminated, killed if it has not gone within ``wait_s``."""
    import subprocess

    proc.terminate()
    try:
        proc.wait(wait_s)
    except subprocess.TimeoutExpired:
        proc.kill()
