"""The report's what-if section (issue 18 in the report): the chosen technique's before → after is
the core's `techniques` output, as text."""

from __future__ import annotations

import pytest

from advisor import api


@pytest.fixture(scope="module")
def cfg(cat):
    return api.configure(cat, hardware="rtx 4090", model="llama 3.1 70b", runtime="llama.cpp", batch=1,
                         prompt=1024, output=256)


def test_no_technique_no_section(cat, cfg):
    assert api.report_from_config(cat, cfg).what_ifs == ()
    assert api.report_from_config(cat, cfg, techniques=api.Techniques()).what_ifs == ()


def test_offload_table_is_the_cores_before_and_after(cat, cfg):
    tech = api.Techniques(gpu_layers=40)
    content = api.report_from_config(cat, cfg, techniques=tech)
    [table] = content.what_ifs
    [effect] = api.techniques(cat, cfg, tech)
    assert table.title == f"What if: {effect.label}" and "-ngl 40" in table.title
    assert table.rows == api.technique_rows(effect)
    rows = {r[0]: r[1:] for r in table.rows}
    # 70B at Q4_K_M does not fit a 24 GB card; with 40 of 80 layers on it, it does, and decodes slower
    assert rows["Fits"] == ("no", "yes", "no → yes")
    assert effect.after.decode_tok_s < effect.before.decode_tok_s
    assert rows["Decode speed per user"][2].startswith("×0.")
    assert "host RAM" in table.note and "GB in host memory" in table.note
    # the method section no longer says offload is not modelled at all
    assert not any(n.startswith("Speculative decoding, disaggregated") for n in content.not_modelled)


def test_speculative_and_eager_together(cat):
    cfg = api.configure(cat, hardware="rtx 4090", model="llama 3.1 8b")
    tech = api.techniques_from(cat, draft="llama 3.2 1b", flash_attention="off")
    tables = api.report_from_config(cat, cfg, techniques=tech).what_ifs
    assert [t.title.split(":")[1].strip().split()[0] for t in tables] == ["speculative", "flash"]
    assert "crossover" not in tables[0].note and "slows decoding from batch" in tables[0].note
    assert "-fa off" in tables[1].note


def test_a_technique_that_does_not_apply_is_an_error(cat, cfg):
    with pytest.raises(api.AdvisorError, match="cannot draft"):
        api.report_from_config(cat, cfg, techniques=api.techniques_from(cat, draft="qwen3 0.6b"))
