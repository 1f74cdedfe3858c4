"""DeepSeek Sparse Attention (issue 29): DeepSeek-V3.2 and GLM-5 cache an indexer key per token per
layer beside the MLA latent, and attend to at most top-k 2048 cached tokens; the indexer scores all."""

import dataclasses

import pytest

from advisor.model.config import configure
from advisor.model.geometry import geometry
from advisor.model.predict import predict


def _pair(cat, **workload):
    sparse = configure(cat, hardware="h200", gpus=8, model="deepseek v3.2", runtime="vllm", **workload)
    dense_model = dataclasses.replace(sparse.model, sparse_topk=None, indexer_heads=None, indexer_head_dim=None,
                                      indexer_key_bytes=None)
    return predict(cat, sparse), predict(cat, sparse.replace(model=dense_model))


def test_the_cache_holds_the_latent_and_the_indexer_key(cat):
    m = cat.models["deepseek-v3.2"]
    assert (m.qk_rope_head_dim, m.sparse_topk, m.indexer_key_bytes) == (64, 2048, 132)
    g = geometry(m)
    assert g.kv_bytes_per_token(16) == (512 + 64) * 2 * 61 + 132 * 61 == 78_324
    # the indexer key keeps its FP8 precision when the cache is FP8
    assert g.kv_bytes_per_token(8) == (512 + 64) * 61 + 132 * 61
    assert geometry(cat.models["glm-5"]).kv_bytes_per_token(16) == 100_152


def test_attention_is_dense_up_to_top_k_and_sparse_beyond(cat):
    short, short_dense = _pair(cat, prompt=1024, output=64)
    long, long_dense = _pair(cat, prompt=65536, output=64)
    # below 2048 tokens every token is picked: only the indexer's extra work differs
    assert short.prefill_tok_s == pytest.approx(short_dense.prefill_tok_s, rel=0.1)
    assert short.prefill_tok_s <= short_dense.prefill_tok_s
    # at 64k each query attends to 2048 tokens, not 32k on average
    assert long.prefill_tok_s > 1.5 * long_dense.prefill_tok_s
    assert long.kv_gb > long_dense.kv_gb           # the indexer keys are held for every token


def test_decode_reads_the_picked_latents_and_every_indexer_key(cat):
    deep, deep_dense = _pair(cat, prompt=1, output=64, depth=120_000, batch=16)
    assert deep.decode_tok_s > deep_dense.decode_tok_s
    shallow, shallow_dense = _pair(cat, prompt=1, output=64, depth=512, batch=16)
    assert shallow.decode_tok_s == pytest.approx(shallow_dense.decode_tok_s, rel=0.02)
