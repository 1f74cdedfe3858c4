"""The PDF report's content as data (advisor.text.report, no Qt): the answer sentence quotes the chosen
configuration's numbers, the sources cover every catalog entry used, the notes are carried."""

from __future__ import annotations

import re

import pytest

from advisor import api
from advisor.plan.recommend import Requirements
from advisor.text.format import duration_ms, num


@pytest.fixture(scope="module")
def cat():
    return api.load_catalog(user=False)


@pytest.fixture(scope="module")
def rec_report(cat):
    req = Requirements(model=cat.model_named("llama 3.1 70b"), prompt_tokens=2048, output_tokens=512, users=50,
                       ttft_ms=1000, tok_s=20, hardware_kinds=("datacenter",))
    rec = api.recommend(cat, req)
    return req, rec, api.report_from_requirements(cat, req, rec=rec)


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_answer_quotes_the_chosen_candidate(rec_report):
    req, rec, r = rec_report
    best = rec.passing[0]
    assert r.config.hardware.key == best.hardware.key and r.config.gpus == best.gpus
    assert r.config.quant.key == best.quant.key and r.config.runtime.key == best.runtime.key
    for text in (best.hardware.name, best.quant.name, best.runtime.name, duration_ms(best.ttft_ms), num(best.tok_s),
                 f"room for {best.max_batch:,} users at {req.context:,} tokens"):
        assert text in r.answer, text
    assert r.recommendations is not None and r.recommendations.rows[0][1].startswith(best.label)
    assert r.rejected is not None and all(row[-1] for row in r.rejected.rows)   # each says why not
    assert r.launch == best.launch and r.launch


def test_sources_cover_every_entry_used(rec_report, cat):
    req, rec, r = rec_report
    names = {(s.section, s.name) for s in r.sources}
    cfg = r.config
    assert ("model", cfg.model.name) in names and ("hardware", cfg.hardware.name) in names
    assert ("weight format", cfg.quant.name) in names and ("KV cache", cfg.kv_dtype.name) in names
    assert ("runtime", cfg.runtime.name) in names
    assert any(s.section == "efficiency profile" for s in r.sources)
    from advisor.plan import pricing

    rent = pricing.rent(cat, cfg.hardware)
    if rent is not None:   # the rent's figure, its newest quote's date and every quote's source
        price = [s for s in r.sources if s.section == "price" and s.name == cfg.hardware.name and "rent" in s.figures]
        assert price and rent.newest in price[0].figures
        assert all(src.split(": ", 1)[1] in price[0].source for src in rent.sources)
    # every configuration in the tables has its hardware, format and runtime listed
    labels = [row[1] for row in r.recommendations.rows] + [row[0] for row in r.rejected.rows]
    for label in labels:
        assert any(s.section == "hardware" and s.name in label for s in r.sources), label
    assert all(s.source for s in r.sources)
    assert re.fullmatch(r"20\d\d-\d\d(-\d\d)?", r.data_date) and "price" in r.data_date_note + "price"


def test_notes_and_method_are_included(rec_report):
    req, rec, r = rec_report
    for note in r.prediction.notes:
        assert note in r.notes
    if r.serving is not None:
        for note in r.serving.notes:
            assert note in r.notes
    titles = [e.title for e in r.explanations]
    assert "Time to first token" in titles and "Decode tok/s per user" in titles and "Memory plan" in titles
    assert any(num(r.prediction.decode_tok_s) in e.text for e in r.explanations)
    assert r.bands and r.not_modelled
    from advisor import __version__

    assert r.version == __version__


def test_one_configuration(cat):
    cfg = api.configure(cat, hardware="h100 sxm", model="llama 3.1 70b", quant="fp8", gpus=2, batch=16,
                        prompt=2048, output=512)
    r = api.report_from_config(cat, cfg, ttft_ms=1000, tok_s=20)
    p = api.predict(cat, cfg)
    assert "2 × H100 SXM5 80GB" in r.answer
    for text in (duration_ms(p.ttft_ms), duration_ms(p.ttft_low_ms), duration_ms(p.ttft_high_ms), num(p.decode_tok_s),
                 f"room for {p.max_batch:,} users at {2048 + 512:,} tokens"):
        assert text in r.answer, text
    assert r.recommendations is None and r.rejected is None
    assert "--tensor-parallel-size 2" in r.launch
    assert len(r.sweep) >= 3 and r.sweep[0].load.concurrency == 1
    assert r.batch_curve.x.size > 10 and r.prompt_curve.x.size > 10
    assert {p_.name for p_ in r.roofline.points} >= {"prefill", "decode", "all-reduce"}
    assert r.notes == tuple(dict.fromkeys(p.notes + r.serving.notes))
    # the profile table's fixed costs carry the FP8 products' own (vLLM on Hopper: 3.4 µs each)
    fixed = dict(r.profile.rows)["fixed costs"]
    assert cfg.runtime.key == "vllm" and "+ 320 FP8 products × 3.40 µs each (the format's)" in fixed
    bf16 = api.report_from_config(cat, cfg.replace(quant=cat.quants["bf16"]), ttft_ms=1000, tok_s=20)
    assert "products" not in dict(bf16.profile.rows)["fixed costs"]


def test_the_report_prints_verdicts_that_agree_with_the_bands(rec_report):
    """Issue 26: every verdict in the report is one of the three and matches the row's band; the data
    column says where measurements back the row; the answer says buy against rent."""
    req, rec, r = rec_report
    head = list(r.recommendations.header)
    iv, idata = head.index("verdict"), head.index("data")
    for row in r.recommendations.rows:
        assert row[iv] in ("meets, with margin", "meets if the estimate holds")
        assert row[idata] in ("measured", "extrapolated", "no data")
    assert "with margin" in r.recommendations.title and "only if the estimate holds" in r.recommendations.title
    first = rec.passing[0]
    assert "pessimistic edge" in r.answer
    if first.cost_usd and first.rent_usd_month:
        assert "breaks even" in r.answer


def test_the_figures_under_load_carry_the_servers_bands(cat):
    """The report's throughput under load has the band `serve` solves at the profile's edges."""
    cfg = api.configure(cat, hardware="h100 sxm", model="llama 3.1 70b", quant="fp8", gpus=2, batch=16,
                        prompt=2048, output=512)
    r = api.report_from_config(cat, cfg, ttft_ms=1000, tok_s=20)
    s = r.serving
    row = next(row for row in r.figures.rows if row[0] == "output tok/s, all users")
    assert row[1] == num(s.throughput_tok_s)
    assert row[2] == f"{num(s.throughput_low_tok_s)} – {num(s.throughput_high_tok_s)}"
    assert s.throughput_low_tok_s < s.throughput_tok_s < s.throughput_high_tok_s


def test_one_llama_server_as_the_app_holds_it_agrees_with_its_launch_line(cat):
    """The report of a configuration says how its llama-server runs: with the host-memory prompt cache
    (no flag, the save counted under load) or without it (--cache-ram 0, none counted), as the app's
    switch is set."""
    cfg = api.configure(cat, hardware="h100 sxm", model="llama 3.1 8b", quant="f16", runtime="llama.cpp", batch=4,
                        prompt=2000, output=128)
    on = api.report_from_config(cat, cfg)
    off = api.report_from_config(cat, cfg, prompt_cache=False)
    assert "--cache-ram" not in on.launch and off.launch.split("  #")[0].endswith("--cache-ram 0")
    assert off.serving.ttft_ms < on.serving.ttft_ms
    assert any("prompt cache" in n for n in on.serving.notes) and not any("prompt cache" in n for n in off.serving.notes)
