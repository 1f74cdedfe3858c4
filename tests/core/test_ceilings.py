"""Vendors' published maxima bound the predictions (catalog/measured/vendor_max.csv, issue 25):
a Blackwell NVFP4 or MoE prediction never exceeds what the hardware's own vendor publishes."""

from __future__ import annotations

import math

import pytest

from advisor.data.errors import AdvisorError
from advisor.data.vendor_max import read_vendor_max, shipped_vendor_max
from advisor.model.ceilings import ceiling_row, ceiling_tok_s, config_ceiling, sibling_scale
from advisor.model.config import configure
from advisor.model.predict import predict
from advisor.model.serving import Load, serve


def _row(model="deepseek-r1", hardware="b200-hgx", quant="nvfp4"):
    return [r for r in shipped_vendor_max() if (r.model, r.hardware, r.quant) == (model, hardware, quant)]


def test_every_shipped_maximum_is_sourced_and_names_catalog_entries(cat):
    rows = shipped_vendor_max()
    assert rows
    for r in rows:
        assert r.source.startswith("http") and r.quote
        assert r.hardware in cat.hardware and r.quant in cat.quants, r
        assert r.model in cat.models, r


def test_deepseek_r1_on_eight_b200s_never_exceeds_nvidias_published_maximum(cat):
    best = max(r.per_gpu_tok_s for r in _row())
    cfg = configure(cat, hardware="b200-hgx", model="deepseek-r1", runtime="tensorrt-llm", quant="nvfp4",
                    kv_dtype="fp8", layout="dp8+ep8", batch=4096, prompt=1024, output=2048)
    p = predict(cat, cfg)
    assert p.throughput_tok_s <= best * 8 * (1 + 1e-6)
    assert p.decode_high_tok_s * cfg.workload.batch <= best * 8 * (1 + 1e-6)   # the band's edge too
    assert any("publishes" in n for n in p.notes)
    rep = serve(cat, cfg, Load(kind="offline", prompt_tokens=1024, output_tokens=2048))
    assert rep.throughput_tok_s <= best * 8 * (1 + 1e-6) and rep.throughput_high_tok_s <= best * 8 * (1 + 1e-6)


def test_what_the_ceiling_bounds_and_what_it_does_not(cat):
    b200, b300, h100 = cat.hardware["b200-hgx"], cat.hardware["b300-hgx"], cat.hardware["h100-sxm5-80gb"]
    m = cat.models["deepseek-r1"]
    nvfp4, fp8, q2 = cat.quants["nvfp4"], cat.quants["fp8"], cat.quants["q2_k"]
    by_key = dict(cat.hardware)
    c = ceiling_row(b200, m, nvfp4, 1024, 2048, hardware=by_key)
    assert c is not None and c.scale == 1.0
    assert ceiling_row(b200, m, fp8, 1024, 2048, hardware=by_key) is not None   # a wider format: bounded
    assert ceiling_row(b200, m, q2, 1024, 2048, hardware=by_key) is None       # narrower: not
    assert ceiling_row(b200, m, nvfp4, 100_000, 2048, hardware=by_key) is None  # lengths far away: not
    assert ceiling_row(b200, cat.models["llama-3.1-8b"], nvfp4, 1024, 2048, hardware=by_key) is None
    # a family sibling: scaled by the lesser of its bandwidth and compute ratios
    sib = ceiling_row(b300, m, nvfp4, 1024, 2048, hardware=by_key)
    assert sib is not None and sib.scale == pytest.approx(
        min(b300.bandwidth_gb_s / b200.bandwidth_gb_s, b300.fp4_dense_tflops / b200.fp4_dense_tflops))
    assert sibling_scale(b200, b200, 4) == 1.0
    # another family has its own figures (H200's FP8), never Blackwell's
    hopper = ceiling_row(h100, m, fp8, 1024, 2048, hardware=by_key)
    assert hopper is None or hopper.reference.family == "nvidia-hopper"
    # an instance wider than the vendor's system (wide EP) is not bounded by a node's figure
    assert math.isinf(ceiling_tok_s(c, c.row.gpus * 2)) and ceiling_tok_s(c, 8) == pytest.approx(c.per_gpu_tok_s * 8)
    assert ceiling_tok_s(None, 8) == math.inf
    cfg = configure(cat, hardware="b200-hgx", model="deepseek-r1", runtime="tensorrt-llm", quant="nvfp4",
                    prompt=1024, output=2048, gpus=8)
    assert config_ceiling(cfg) is not None


def test_a_bad_maximum_file_is_one_clear_error(tmp_path):
    f = tmp_path / "vendor_max.csv"
    f.write_text("model,hardware\nx,y\n")
    with pytest.raises(AdvisorError, match="missing column"):
        read_vendor_max(f)
    head = "model,hardware,gpus,quant,runtime,prompt_tokens,output_tokens,max_output_tok_s,date,source,quote\n"
    f.write_text(head + "m,h,eight,fp8,vllm,1,1,1,,http://x,q\n")
    with pytest.raises(AdvisorError, match="line 2"):
        read_vendor_max(f)
    f.write_text(head + "m,h,8,fp8,vllm,1,1,1,,,q\n")
    with pytest.raises(AdvisorError, match="source"):
        read_vendor_max(f)
    with pytest.raises(AdvisorError, match="cannot read"):
        read_vendor_max(tmp_path / "absent.csv")


def test_a_served_step_holds_to_the_maximum_with_its_prompts_inside(cat):
    """A vendor measures its maximum with the run's prompts computed in it: the serving model holds the
    whole served step (the decode and the prompt work it carries) to that figure, not the decode alone
    with the prompts charged on top, which left TensorRT-LLM's own max-throughput configuration of
    DeepSeek-R1 on 8 × B200 at 35k output tok/s, 18 % under the 43k NVIDIA publishes for it: the
    steady state, a batch sent at once and a closed loop reach it (SGLang's steady state, slower, stays
    below); a light load is the kernel's own."""
    row = max(_row(), key=lambda r: r.max_output_tok_s)
    cap, P, O = row.max_output_tok_s, row.prompt_tokens, row.output_tokens
    loads = (Load(kind="offline", prompt_tokens=P, output_tokens=O, max_seqs=3072),
             Load(kind="offline", prompt_tokens=P, output_tokens=O, max_seqs=3072, requests=6144),
             Load(kind="closed", concurrency=4096, prompt_tokens=P, output_tokens=O, max_seqs=3072))
    for runtime, reaches in (("tensorrt-llm", True), ("sglang", False)):   # SGLang: at most
        cfg = configure(cat, hardware="b200-hgx", model="deepseek-r1", runtime=runtime, quant="nvfp4",
                        kv_dtype="fp8", layout="dp8+ep8", prompt=P, output=O)
        for load in loads:
            rep = serve(cat, cfg, load)
            assert rep.throughput_tok_s <= cap * (1 + 1e-6) and rep.throughput_high_tok_s <= cap * (1 + 1e-6)
            if reaches:
                assert rep.throughput_tok_s >= 0.97 * cap, (runtime, load, rep.throughput_tok_s)
    light = serve(cat, cfg, Load(kind="closed", concurrency=8, prompt_tokens=P, output_tokens=O))
    assert light.throughput_tok_s < 0.5 * cap and not any("publishes" in n for n in light.notes)


@pytest.mark.parametrize("prefill_first", [False, True])
def test_each_scheduler_holds_its_served_steps_to_a_ceiling(cat, prefill_first):
    """The solver and both batch clocks (mixed steps; prefill batches first, SGLang's) hold the served
    throughput to a ceiling set at half of what the configuration gives without one, and reach it (a
    closed loop within 6 %: its clients' prompts wait in the lengthened steps too, and fewer decode)."""
    import dataclasses

    from advisor.model.serving import _kernel, costs_from_result, runtime_scheduler, solve

    cfg = configure(cat, hardware="h200-sxm-141gb", model="qwen3-30b-a3b", runtime="vllm", prompt=1000, output=200)
    for load in (Load(kind="offline", prompt_tokens=1000, output_tokens=200),
                 Load(kind="offline", prompt_tokens=1000, output_tokens=200, requests=2000),
                 # past the requests scheduled one by one (`BATCH_SCHEDULE_MAX`): the rest at the full batch
                 Load(kind="offline", prompt_tokens=1000, output_tokens=200, requests=30_000),
                 Load(kind="closed", concurrency=512, prompt_tokens=1000, output_tokens=200)):
        _, _, r = _kernel(cat, cfg, load)
        seqs, chunk, paged = runtime_scheduler(cfg.runtime, cfg.hardware)
        costs = dataclasses.replace(costs_from_result(r, load, paged, seqs, chunk), prefill_first=prefill_first)
        assert math.isinf(float(costs.ceiling_tok_s))
        free = float(solve(costs, load).throughput_tok_s)
        held = float(solve(dataclasses.replace(costs, ceiling_tok_s=0.5 * free * 199 / 200), load).throughput_tok_s)
        assert 0.94 * 0.5 * free <= held <= 0.5 * free * (1 + 1e-6), (load, free, held)
