"""Servers and racks sold as one unit (catalog/systems.yaml, issue 29): they load, name GPUs the
catalog has, and set what a deployment of their GPUs draws (issue 31's power figure)."""

import json

import pytest

from advisor.cli.main import main
from advisor.data.catalog import CATALOG_DIR, load_catalog
from advisor.plan import pricing
from advisor.plan.recommend import Requirements, recommend


def test_shipped_systems_load_and_name_catalog_gpus(cat):
    assert len(cat.systems) >= 10
    for s in cat.systems.values():
        assert s.hardware in cat.hardware, s.key
        assert len(s.source) > 20, s.key
    dgx = cat.systems["dgx-h100"]
    assert dgx.gpus == 8 and dgx.power_kw == pytest.approx(10.2)
    assert cat.systems["gb200-nvl72"].gpus == 72


def test_a_system_naming_unknown_hardware_is_reported_and_skipped(tmp_path):
    (tmp_path / "mine.yaml").write_text(
        "systems:\n- key: my-box\n  name: My box\n  hardware: no-such-gpu\n  gpus: 8\n  power_kw: 5\n  source: my notes\n")
    cat = load_catalog(CATALOG_DIR, user=tmp_path)
    assert "my-box" not in cat.systems
    assert any(i.entry == "my-box" and "no-such-gpu" in str(i) for i in cat.issues)


def test_power_is_the_systems_share_where_one_holds_the_gpus(cat):
    h100 = cat.hardware["h100-sxm5-80gb"]
    kw, basis = pricing.deployment_power(cat, h100, 16)
    assert kw == pytest.approx(2 * 10.2) and "DGX H100" in basis
    # four GPUs: half the server's maximum, more than four boards at 700 W
    half = pricing.deployment_power(cat, h100, 4)[0]
    assert half == pytest.approx(5.1) and half > 4 * h100.tdp_w / 1e3
    # a card no system in the catalog holds: its board power
    l40s = cat.hardware["l40s-48gb"]
    kw, basis = pricing.deployment_power(cat, l40s, 2)
    assert kw == pytest.approx(2 * l40s.tdp_w / 1e3) and basis == "the GPUs' board power"


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_recommend_states_the_power_basis(capsys):
    assert main(["recommend", "--model", "llama 3.3 70b", "--users", "50", "--hardware", "h100 sxm", "--top", "1",
                 "--json"]) == 0
    best = json.loads(capsys.readouterr().out)["candidates"][0]
    assert "DGX H100" in best["power_basis"]
    assert best["power_kw"] == pytest.approx(10.2 * best["gpus"] * best["replicas"] / 8, rel=1e-6)


def test_bought_servers_pay_electricity_at_the_systems_power(cat):
    h100 = cat.hardware["h100-sxm5-80gb"]
    p = pricing.buy(cat, h100, 8)
    assert p is not None and "DGX H100" in p.power_note and "10,200 W" in p.power_note


def test_list_systems(capsys):
    assert main(["list", "systems", "--filter", "dgx"]) == 0
    out = capsys.readouterr().out
    assert "dgx-b200" in out and "14.3" in out and "8 × B200" in out


def test_recommend_with_the_catalog_power_in_the_report_text(cat):
    req = Requirements(model=cat.models["llama-3.3-70b"], users=50, context_tokens=8192, hardware=("h100-sxm5-80gb",))
    best = recommend(cat, req).top(1)[0]
    assert best.power_kw and "maximum system power" in best.power_basis
