"""Issue 30, the hostile-input suite (slow tier): every value-taking flag of the computing commands,
fed numbers and text a careless or hostile user types. The contract: exit 0, 1 (does not fit) or 2, never the
"internal error" of a bug; a refusal is one line on standard error that names the flag or the value;
a non-finite number is always refused, never read as "default"."""

from __future__ import annotations

import argparse
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from advisor.cli.main import build_parser, main

pytestmark = pytest.mark.slow

#: a valid call of each command that a hostile flag is added to (replacing the same flag if present)
BASE = {
    "predict": ["predict", "--hardware", "rtx 4090", "--model", "llama 3.1 8b"],
    "serve": ["serve", "--hardware", "h100 sxm", "--model", "llama 3.1 8b", "--concurrency", "8"],
    "will-it-run": ["will-it-run", "--hardware", "rtx 4090", "--model", "llama 3.1 8b"],
    "recommend": ["recommend", "--model", "llama 3.1 8b", "--users", "4", "--hardware", "rtx 4090,l40s"],
    "compare-measured": ["compare-measured", str(Path(__file__).resolve().parents[1] / "data" / "bench_results"
                                                 / "vllm_serve.json"), "--hardware", "h100 sxm"],
}
NON_FINITE = ["nan", "NaN", "inf", "-inf", "Infinity", "1e999", "-1e999"]
HOSTILE_TEXT = NON_FINITE + ["0", "-0", "-1", "1e308", "1e-308", "0.0000001", "", " ", "abc", "9" * 40,
                             "0x10", "½", "1,2", "1;2", "1 2", "--", "-", "..", "/", "/dev/null",
                             "llama' OR 1=1", "🦙", "x" * 300, "%s%n", "${HOME}", "1_000"]


def _flags(command: str) -> list[str]:
    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    out = []
    for a in sub.choices[command]._actions:
        if (a.option_strings and a.nargs != 0 and not isinstance(a, argparse._HelpAction)
                and a.option_strings[-1] not in ("--cases", "--out", "-o")):  # files: the file suite's
            out.append(a.option_strings[-1])
    return out


FLAGS = {c: _flags(c) for c in BASE}


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    return code, out, err


def _with(command: str, flag: str, value: str) -> list[str]:
    argv = list(BASE[command])
    if flag in argv:
        i = argv.index(flag)
        del argv[i:i + 2]
    return argv + [flag, value]


def _check(argv, flag, value, code, err):
    assert code in (0, 1, 2), f"{argv}: exit {code}: {err}"
    if code == 1:   # a valid question whose answer is "it does not fit"
        assert err.startswith("advisor: does not fit") and err.count("\n") == 1, f"{argv}: {err!r}"
    assert "internal error" not in err and "Traceback" not in err, f"{argv}: {err}"
    if code == 2:
        lines = [ln for ln in err.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("advisor: error:"), f"{argv}: {err!r}"
        named = {flag, flag.lstrip("-"), flag.lstrip("-").replace("-", " "), flag.lstrip("-").replace("-", "_")}
        shown = {value.strip()[:40], repr(value.strip())[1:-1][:40]} - {""}
        try:
            x = float(value)
            shown |= {f"{x:g}", f"{x:.3g}", f"{x:,.0f}", f"{x:.0f}"} if abs(x) < 1e300 else {f"{x:g}", f"{x:.3g}"}
        except ValueError:
            pass
        assert (any(n in lines[0] for n in named | shown)
                or (not value.strip() and "empty" in lines[0])), \
            f"{argv}: the message names neither the flag nor the value: {lines[0]}"
    if value in NON_FINITE:
        assert code == 2, f"{argv}: a non-finite {flag} was accepted"


@pytest.mark.parametrize("command", ["predict", "serve", "will-it-run", "compare-measured"])
# derandomized: CI explores the same 120 examples each run (a new failure is found by running with
# HYPOTHESIS_SEED / derandomize off locally, not by chance in someone's CI)
@settings(max_examples=120, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_every_flag_refuses_hostile_values_in_one_line(command, data, capsys):
    flag = data.draw(st.sampled_from(FLAGS[command]), label="flag")
    value = data.draw(st.one_of(st.sampled_from(HOSTILE_TEXT),
                                st.floats(allow_nan=True, allow_infinity=True).map(repr),
                                st.integers(min_value=-10**30, max_value=10**30).map(str),
                                st.text(max_size=20).filter(lambda t: "\x00" not in t)), label="value")
    argv = _with(command, flag, value)
    code, _out, err = _run(argv, capsys)
    _check(argv, flag, value, code, err)


@pytest.mark.parametrize("flag", FLAGS["recommend"])
def test_recommend_flags_refuse_non_finite_and_negative(flag, capsys):
    """The sweep is slower, so each of its flags gets the sharpest values rather than random ones."""
    for value in ("nan", "-1", "abc"):
        argv = _with("recommend", flag, value)
        code, _out, err = _run(argv, capsys)
        _check(argv, flag, value, code, err)
