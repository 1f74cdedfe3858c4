"""The PDF report from the app carries the What-ifs tab's technique, when one is chosen and applies."""

from __future__ import annotations

import re
import shutil
import subprocess
import unicodedata

import pytest

from advisor import api
from ui.report import content_for_session, write_report

pytestmark = pytest.mark.skipif(not shutil.which("pdftotext"), reason="needs poppler-utils (pdftotext)")


def _text(pdf) -> str:
    out = subprocess.run(["pdftotext", "-layout", str(pdf), "-"], capture_output=True, text=True, check=True).stdout
    return " ".join(unicodedata.normalize("NFKC", out).split())


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_report_has_the_chosen_what_if(window, tmp_path):
    s = window.session
    assert content_for_session(s).what_ifs == ()                 # nothing chosen yet
    window.show_view("whatifs")
    view = window.whatifs
    view.spin_accept.setValue(0.6)
    content = content_for_session(s)
    [table] = content.what_ifs
    [effect] = api.techniques(s.cat, s.cfg, s.whatif.techniques)
    assert "α=0.6" in table.title and table.rows == api.technique_rows(effect)
    out = write_report(content, tmp_path / "whatif.pdf", paper="a4")
    text = _text(out)
    assert "What if: speculative decoding with Llama 3.2 1B, k=4, α=0.6" in text
    after = dict((r[0], r[2]) for r in table.rows)
    assert re.search(r"Decode speed per user \S+ tok/s " + re.escape(after["Decode speed per user"]), text)
    assert "slows decoding from batch" in text


def test_a_what_if_that_does_not_apply_is_left_out(window):
    s = window.session
    window.show_view("whatifs")
    view = window.whatifs
    view.kind.setCurrentIndex(view.kind.findData("attention"))
    assert content_for_session(s).what_ifs                          # applies: in the report
    s.set_inputs(model="deepseek v2 lite")                          # MLA: no MHA/GQA/MQA what-if
    assert s.whatif.error and "MLA" in s.whatif.error
    assert content_for_session(s).what_ifs == ()
