"""A llama-architecture GGUF with random weights, written with the `gguf` package: a model llama.cpp
loads and runs (llama-bench, llama-server) so the real measuring path can be tried without
downloading one. Its tokenizer is SentencePiece-style with byte fallback (every text tokenizes);
its output is noise, which a speed benchmark does not mind.

`write_llama(path, dims, dtype)` with ``dtype`` F16 or Q8_0 (quantized by gguf-py); other formats
come from llama.cpp's own llama-quantize run on the F16 file. `write_qwen3moe(path, dims)` writes a
mixture-of-experts model of Qwen3-MoE's architecture in Q8_0 (random blocks, no quantizer: a 30B
model in seconds). `free_port`, `wait_healthy` and `stop`
run llama-server on it (the real tests and benchmarks/gpu_llama_cpp.py).
"""

from __future__ import annotations

import re
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
    back to bytes. Without the words, a prompt word was ~8 byte tokens (and --prompt 512 overflowed a
    2,048-token slot on the first H100 run: catalog/measured/llamacpp_h100_device.md)."""
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


def _finish(w, path: Path) -> Path:
    """Write a filled `gguf.GGUFWriter` out: header, metadata, tensors."""
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()
    return path


def _llama_writer(path: Path, dims: Dims, name: str, file_type: int | None):
    """A `gguf.GGUFWriter` for a llama model of ``dims`` with its metadata and tokenizer written."""
    import gguf

    w = gguf.GGUFWriter(str(path), "llama")
    w.add_name(name)
    w.add_context_length(dims.context)
    w.add_embedding_length(dims.hidden)
    w.add_block_count(dims.layers)
    w.add_feed_forward_length(dims.ffn)
    w.add_head_count(dims.heads)
    w.add_head_count_kv(dims.kv_heads)
    w.add_rope_dimension_count(dims.hidden // dims.heads)
    w.add_layer_norm_rms_eps(1e-5)
    if file_type is not None:
        w.add_file_type(file_type)
    _tokenizer(w, dims.vocab)
    return w


def _llama_tensors(w, dims: Dims, matrix) -> None:
    """A llama model's tensors in llama.cpp's names and order: ``matrix(name, rows, cols)`` adds each
    weight matrix, the norms are float32 ones."""
    kv = dims.kv_heads * (dims.hidden // dims.heads)

    def norm(name: str) -> None:
        w.add_tensor(name, np.ones(dims.hidden, dtype=np.float32))

    matrix("token_embd.weight", dims.vocab, dims.hidden)
    for i in range(dims.layers):
        norm(f"blk.{i}.attn_norm.weight")
        matrix(f"blk.{i}.attn_q.weight", dims.hidden, dims.hidden)
        matrix(f"blk.{i}.attn_k.weight", kv, dims.hidden)
        matrix(f"blk.{i}.attn_v.weight", kv, dims.hidden)
        matrix(f"blk.{i}.attn_output.weight", dims.hidden, dims.hidden)
        norm(f"blk.{i}.ffn_norm.weight")
        matrix(f"blk.{i}.ffn_gate.weight", dims.ffn, dims.hidden)
        matrix(f"blk.{i}.ffn_up.weight", dims.ffn, dims.hidden)
        matrix(f"blk.{i}.ffn_down.weight", dims.hidden, dims.ffn)
    norm("output_norm.weight")
    matrix("output.weight", dims.vocab, dims.hidden)


def write_llama(path: str | Path, dims: Dims = TINY, dtype: str = "F16", seed: int = 0, name: str = "random-llama",
                tiled: bool = False) -> Path:
    """``tiled``: every matrix repeats one block of 16M random values instead of drawing its own,
    which writes an 8B model in seconds rather than minutes (a speed benchmark reads the bytes, it
    does not mind that they repeat)."""
    from gguf import GGMLQuantizationType as T
    from gguf.quants import quantize

    rng = np.random.default_rng(seed)
    path = Path(path)
    w = _llama_writer(path, dims, name, {"F16": 1, "Q8_0": 7}[dtype])

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

    _llama_tensors(w, dims, matrix)
    return _finish(w, path)


def write_llama_blocks(path: str | Path, dims: Dims, qtype: str, seed: int = 0, name: str = "random-llama") -> Path:
    """Every matrix of a llama model in one ggml type ``qtype`` (any name of gguf's
    `GGMLQuantizationType`: Q4_0, Q4_K, IQ4_XS, MXFP4 …; llama-quantize's ``--pure``), cut from one
    tile of random bytes instead of quantized values: any format in seconds, for speed benchmarks
    only (a kernel's time does not depend on the values it unpacks).

    Every byte is below 0x20, so each 16-bit scale a block holds is a finite float under 0.008
    (its exponent bits are never all ones), an E8M0 scale is below 2^-96 and an int8 scale is
    small: the activations stay finite whichever field of the block a byte lands in."""
    import gguf
    from gguf import GGMLQuantizationType as T

    qt = T[qtype]
    block, type_bytes = gguf.GGML_QUANT_SIZES[qt]
    rng = np.random.default_rng(seed)
    path = Path(path)
    # the file type llama-quantize would write (its names: MOSTLY_Q4_K_S for Q4_K …), so that
    # llama-bench's model type names the format; MXFP4 has only the MoE one
    ftype = next((gguf.LlamaFileType[n] for n in (f"MOSTLY_{qtype}", f"MOSTLY_{qtype}_S", f"MOSTLY_{qtype}_MOE")
                  if n in gguf.LlamaFileType.__members__), None)
    w = _llama_writer(path, dims, name, None if ftype is None else int(ftype))
    tile = rng.integers(0, 0x20, 1 << 25, dtype=np.uint8)   # 32 MB

    def matrix(name: str, rows: int, cols: int) -> None:
        if cols % block:
            raise ValueError(f"{name}: {cols} columns is not a whole number of {qtype} blocks of {block}")
        w.add_tensor(name, np.resize(tile, (rows, cols // block * type_bytes)), raw_dtype=qt)

    _llama_tensors(w, dims, matrix)
    return _finish(w, path)


@dataclass(frozen=True)
class MoEDims:
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    experts: int
    experts_used: int
    expert_ffn: int
    vocab: int
    context: int = 4096


#: seconds-scale for tests
TINY_MOE = MoEDims(layers=2, hidden=512, heads=8, kv_heads=2, head_dim=64, experts=8, experts_used=2, expert_ffn=512,
                   vocab=8192, context=2048)
#: Qwen3-30B-A3B's shape (48 layers, 2048 wide, 32 heads of 128, 4 KV heads, 128 experts of 768, top 8,
#: 151,936 tokens: catalog/models/moe.yaml), for GPUs
QWEN3_30B_A3B = MoEDims(layers=48, hidden=2048, heads=32, kv_heads=4, head_dim=128, experts=128, experts_used=8,
                        expert_ffn=768, vocab=151936, context=40960)


def _q8_0_tile(rng, blocks: int):
    """``blocks`` random Q8_0 blocks as bytes (a float16 scale, then 32 int8 values): weights spread
    evenly over about ±0.035 (standard deviation 0.02), so activations stay finite and the router
    spreads the tokens over the experts as a trained one roughly does."""
    tile = np.empty((blocks, 34), np.uint8)
    tile[:, :2] = np.full(blocks, 0.02 * 3 ** 0.5 / 127, np.float16).view(np.uint8).reshape(blocks, 2)
    tile[:, 2:] = rng.integers(-127, 128, (blocks, 32), dtype=np.int8).view(np.uint8)
    return tile.reshape(-1)


def write_qwen3moe(path: str | Path, dims: MoEDims = TINY_MOE, seed: int = 0, name: str = "random-qwen3moe") -> Path:
    """A Qwen3-MoE GGUF (llama.cpp's ``qwen3moe``: q/k norms, a router and stacked expert tensors,
    no shared expert) in Q8_0, every matrix cut from one tile of random blocks; the norms and the
    router in float32, as llama-quantize leaves them."""
    import gguf
    from gguf import GGMLQuantizationType as T

    rng = np.random.default_rng(seed)
    path = Path(path)
    w = gguf.GGUFWriter(str(path), "qwen3moe")
    w.add_name(name)
    w.add_context_length(dims.context)
    w.add_embedding_length(dims.hidden)
    w.add_block_count(dims.layers)
    w.add_feed_forward_length(dims.expert_ffn * dims.experts_used)
    w.add_head_count(dims.heads)
    w.add_head_count_kv(dims.kv_heads)
    w.add_key_length(dims.head_dim)
    w.add_value_length(dims.head_dim)
    w.add_rope_dimension_count(dims.head_dim)
    w.add_rope_freq_base(1e6)
    w.add_layer_norm_rms_eps(1e-6)
    w.add_expert_count(dims.experts)
    w.add_expert_used_count(dims.experts_used)
    w.add_expert_feed_forward_length(dims.expert_ffn)
    w.add_file_type(7)   # Q8_0
    _tokenizer(w, dims.vocab)
    largest = max(dims.vocab * dims.hidden, dims.experts * dims.expert_ffn * dims.hidden)
    tile = _q8_0_tile(rng, min(1 << 20, largest // 32))   # 34 MB of blocks at most

    def matrix(name: str, *shape: int) -> None:
        # ggml's ne0 (the row length, in blocks of 32) is the last numpy axis
        *outer, cols = shape
        w.add_tensor(name, np.resize(tile, (*outer, cols // 32 * 34)), raw_dtype=T.Q8_0)

    def norm(name: str, n: int) -> None:
        w.add_tensor(name, np.ones(n, dtype=np.float32))

    q_dim, kv_dim = dims.heads * dims.head_dim, dims.kv_heads * dims.head_dim
    matrix("token_embd.weight", dims.vocab, dims.hidden)
    for i in range(dims.layers):
        norm(f"blk.{i}.attn_norm.weight", dims.hidden)
        matrix(f"blk.{i}.attn_q.weight", q_dim, dims.hidden)
        matrix(f"blk.{i}.attn_k.weight", kv_dim, dims.hidden)
        matrix(f"blk.{i}.attn_v.weight", kv_dim, dims.hidden)
        matrix(f"blk.{i}.attn_output.weight", dims.hidden, q_dim)
        norm(f"blk.{i}.attn_q_norm.weight", dims.head_dim)
        norm(f"blk.{i}.attn_k_norm.weight", dims.head_dim)
        norm(f"blk.{i}.ffn_norm.weight", dims.hidden)
        w.add_tensor(f"blk.{i}.ffn_gate_inp.weight",
                     rng.standard_normal((dims.experts, dims.hidden), dtype=np.float32) * 0.02)
        matrix(f"blk.{i}.ffn_gate_exps.weight", dims.experts, dims.expert_ffn, dims.hidden)
        matrix(f"blk.{i}.ffn_up_exps.weight", dims.experts, dims.expert_ffn, dims.hidden)
        matrix(f"blk.{i}.ffn_down_exps.weight", dims.experts, dims.hidden, dims.expert_ffn)
    norm("output_norm.weight", dims.hidden)
    matrix("output.weight", dims.vocab, dims.hidden)
    return _finish(w, path)


def _log_time_s(line: str) -> float | None:
    # llama.cpp's log prefix: minutes.seconds.milliseconds.microseconds since start
    m = re.match(r"(\d+)\.(\d+)\.(\d+)\.(\d+) ", line)
    return int(m[1]) * 60 + int(m[2]) + int(m[3]) / 1e3 + int(m[4]) / 1e6 if m else None


def saved_states(lines: list[str]) -> list[tuple[int, float]]:
    """(tokens, MiB) of each 'saving prompt with length N, total state size = X MiB' line of a
    llama-server log at trace verbosity (-lv 5): what its prompt cache copied, or was asked to
    copy (a prompt the cache holds already is logged the same way, then skipped)."""
    out = []
    for line in lines:
        m = re.search(r"saving prompt with length (\d+), total state size = ([\d.]+) MiB", line)
        if m:
            out.append((int(m[1]), float(m[2])))
    return out


def save_times(lines: list[str]) -> list[tuple[float, float]]:
    """(MiB, seconds) of each prompt-cache save in a llama-server log at trace verbosity: from its
    'saving prompt with length …, total state size = X MiB' line to the next timed line. A save the
    cache skips (the prompt is kept already) logs the same line and returns at once: under half a
    millisecond, left out."""
    out = []
    for i, line in enumerate(lines):
        size = re.search(r"saving prompt with length \d+, total state size = ([\d.]+) MiB", line)
        t0 = _log_time_s(line) if size else None
        if t0 is None:
            continue
        later = (_log_time_s(x) for x in lines[i + 1:])
        t1 = next((t for t in later if t is not None), None)
        if t1 is not None and t1 - t0 > 5e-4:
            out.append((float(size[1]), t1 - t0))
    return out


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
