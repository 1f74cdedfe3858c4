"""Prices from dated quotes (issue 26): a median only over three or more quotes of one basis, thin
figures marked and ranked at the spread well-quoted devices show, bases never mixed, buying priced
as a whole machine with its electricity, rent per month and the break-even month beside it."""

from __future__ import annotations

import dataclasses
import json
import statistics

import pytest

from advisor.data.catalog import load_catalog, with_memory
from advisor.data.prices import Quote, load_quotes
from advisor.data.specs import Price
from advisor.plan import pricing
from advisor.plan.recommend import Requirements, recommend


def q(key, basis, usd, provider, date="2026-09-01", unit="gpu-hour", gpus=1, notes="", memory=None, config=""):
    return Quote(key, basis, usd, unit, gpus, memory, config, provider, date, "https://example.test/price", notes)


def with_quotes(cat, **quotes):
    return dataclasses.replace(cat, quotes={**cat.quotes, **quotes})


def test_a_median_needs_three_quotes_of_one_basis(cat):
    hw = cat.hardware["h100-sxm5-80gb"]
    three = with_quotes(cat, **{hw.key: (q(hw.key, "rent-on-demand", 2.0, "A"), q(hw.key, "rent-on-demand", 3.0, "B"),
                                         q(hw.key, "rent-on-demand", 7.0, "C"),
                                         # another basis is never part of the figure
                                         q(hw.key, "rent-marketplace", 0.5, "Vast"),
                                         q(hw.key, "rent-whole-vm", 80.0, "AWS", unit="instance-hour", gpus=8))})
    f = pricing.rent(three, hw)
    assert (f.usd, f.quotes, f.thin, f.basis) == (3.0, 3, False, "on-demand")
    assert "median of 3" in f.text("/GPU-hour") and "$2.00–$7.00" in f.text("/GPU-hour")
    one = with_quotes(cat, **{hw.key: (q(hw.key, "rent-on-demand", 1.95, "TensorWave"),)})
    f = pricing.rent(one, hw)
    assert (f.usd, f.quotes, f.thin) == (1.95, 1, True) and "1 quote" in f.text("/GPU-hour")


def test_one_provider_counts_once_and_superseded_quotes_never(cat):
    hw = cat.hardware["h100-sxm5-80gb"]
    c = with_quotes(cat, **{hw.key: (q(hw.key, "rent-on-demand", 4.29, "Lambda", config="1x"),
                                     q(hw.key, "rent-on-demand", 4.09, "Lambda", config="8x", date="2026-08-01"),
                                     q(hw.key, "rent-on-demand", 9.99, "Old", notes="[HISTORICAL] superseded"),
                                     q(hw.key, "rent-on-demand", 1.00, "Ancient", date="2023-01-01"))})
    f = pricing.rent(c, hw)
    assert (f.quotes, f.usd, f.providers) == (1, 4.29, ("Lambda",))


def test_a_whole_vm_is_divided_per_gpu_and_used_only_without_on_demand_rates(cat):
    hw = cat.hardware["a10-24gb"]
    c = with_quotes(cat, **{hw.key: (q(hw.key, "rent-whole-vm", 16.29, "AWS", unit="instance-hour", gpus=4),)})
    f = pricing.rent(c, hw)
    assert f.usd == pytest.approx(16.29 / 4) and f.basis == "whole-VM rate per GPU"


def test_thin_factor_is_measured_on_the_well_quoted_devices(cat):
    """median over devices with >= 3 current on-demand quotes of (median / cheapest)."""
    newest = pricing._newest(cat)
    ratios = []
    for quotes in cat.quotes.values():
        cur = pricing._current(quotes, "rent-on-demand", pricing.RENT_WINDOW, newest)
        if len(cur) >= 3:
            v = [x.per_gpu_usd for x in cur]
            ratios.append(statistics.median(v) / min(v))
    assert len(ratios) >= 5
    assert pricing.thin_quote_factor(cat) == pytest.approx(statistics.median(ratios))
    assert 1.1 < pricing.thin_quote_factor(cat) < 2.0


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_one_quote_no_longer_decides_the_datacenter_answer(cat):
    """MI325X has one on-demand rate ($1.95/h, TensorWave): it is printed as one quote and ranked at
    its spread, so a well-quoted device of the same per-user cost ranks above it."""
    f = pricing.rent(cat, cat.hardware["mi325x"])
    assert f.thin and f.quotes == 1
    rec = recommend(cat, Requirements(model=cat.models["llama-3.1-70b"], users=50, prompt_tokens=2048,
                                      output_tokens=512, ttft_ms=1000, tok_s=20, hardware_kinds=("datacenter",)))
    mi = [c for c in rec.passing if c.hardware.key == "mi325x"]
    assert mi and all(c.price_thin_rent for c in mi)
    factor = pricing.thin_quote_factor(cat)
    ranked = [c for c in rec.passing if c.tier == "margin" and c.cost_usd_hour]
    # in the ranked order, rank cost (thin × factor) never decreases within the margin tier
    keys = [c.cost_usd_hour * (factor if c.price_thin_rent else 1.0) for c in ranked]
    assert all(b >= a - 1e-9 for a, b in zip(keys, keys[1:]))


def test_buying_cards_prices_the_host_and_the_electricity(cat):
    hw = cat.hardware["rtx-4090"]
    one = pricing.buy(cat, hw, 1, hours_per_day=24)
    four = pricing.buy(cat, hw, 4, hours_per_day=24)
    desktop = pricing._host(cat, 1)[0].usd
    workstation = pricing._host(cat, 4)[0].usd
    card = pricing.device_buy(cat, hw)[0].usd
    assert one.capex_usd == pytest.approx(card + desktop)
    assert four.capex_usd == pytest.approx(4 * card + workstation)
    tariff = pricing.tariff(cat).usd
    # 450 W board power, 24 h a day, 365/12 days a month
    assert one.power_usd_month == pytest.approx(hw.tdp_w / 1000 * 24 * 365 / 12 * tariff)
    assert one.total_usd(3) == pytest.approx(one.capex_usd + one.power_usd_month * 36)
    assert pricing.buy(cat, hw, 1, hours_per_day=0).power_usd_month == 0
    # eight cards need a server host no quote prices: said, not invented
    eight = pricing.buy(cat, hw, 8, hours_per_day=24)
    assert eight.host_missing and "no sourced price" in eight.parts


def test_datacenter_modules_are_bought_at_the_server_price_per_gpu(cat):
    hw = cat.hardware["h100-sxm5-80gb"]
    b = pricing.buy(cat, hw, 8, hours_per_day=24)
    assert "server price per GPU" in b.parts or "reported unit price" in b.parts
    assert "host" not in b.parts          # the server price includes the host


def test_a_system_price_counts_only_for_its_memory_size(cat):
    """Macs and Strix Halo boxes are priced per memory configuration: a 64 GB Mac's price never
    prices the 192 GB one."""
    m2 = cat.hardware["apple-m2-ultra-60c"]
    assert pricing.buy(cat, m2, 1) is None                      # 192 GB: no quote
    assert pricing.buy(cat, with_memory(m2, 64), 1).capex_usd == 3999
    for hw in cat.hardware.values():
        quotes = [x for x in cat.quotes.get(hw.key, ()) if x.memory_gib]
        for x in quotes:
            if x.stale or x.basis != "buy-msrp":
                continue
            sized = with_memory(hw, x.memory_gib) if x.memory_gib != hw.memory_gib else hw
            b = pricing.buy(cat, sized, 1)
            assert b is not None and b.capex_usd <= x.usd + 1e-9, (hw.key, x.memory_gib)


def test_a_card_out_of_production_is_bought_used_not_at_its_launch_price(cat):
    b = pricing.buy(cat, cat.hardware["rtx-3090"], 2)
    assert "used street price" in b.parts and "$1,499" not in b.parts


def test_the_users_own_quote_replaces_the_catalogs(cat):
    hw = dataclasses.replace(cat.hardware["mi325x"], price=Price(cloud_usd_hour=2.5, cloud_date="2026-11-01",
                                                                  street_usd=20000, street_date="2026-11-01"),
                             origin="/home/me/.local/share/advisor/hardware.yaml")
    f = pricing.rent(cat, hw)
    assert f.own and f.usd == 2.5 and not f.thin and "your quote" in f.text("/GPU-hour")
    assert pricing.buy(cat, hw, 2, hours_per_day=0).capex_usd == 40000


def test_break_even_and_rent_per_month(cat):
    hw = cat.hardware["h100-sxm5-80gb"]
    b = pricing.buy(cat, hw, 8, hours_per_day=24)
    hour = pricing.rent(cat, hw).usd * 8
    months = pricing.break_even_months(b, hour)
    assert months == pytest.approx(b.capex_usd / (hour * 730 - b.power_usd_month))
    assert pricing.monthly_rent(hour) == pytest.approx(hour * 730)
    cheap = dataclasses.replace(b, power_usd_month=hour * 730 + 1)
    assert pricing.break_even_months(cheap, hour) is None


@pytest.mark.slow   # over half a second here: the slow tier (CI runs it)
def test_recommend_prints_quote_counts_and_buy_beside_rent(capsys):
    from advisor.cli.main import main

    assert main(["recommend", "--model", "llama 3.1 70b", "--users", "50", "--hardware-kind", "datacenter",
                 "--top", "8", "--ttft-ms", "1000", "--tok-s", "20"]) == 0
    out = capsys.readouterr().out
    assert "1 quote" in out and "median of" in out
    assert "buy vs rent 24/7" in out and "even at" in out
    assert "ranked at ×1.3" in out


def test_bad_price_rows_are_reported_and_the_rest_load(tmp_path):
    path = tmp_path / "prices.csv"
    header = "hardware,basis,usd,unit,gpus,memory_gib,configuration,provider,date,source,notes\n"
    path.write_text(header
                    + "rtx-4090,rent-on-demand,0.5,gpu-hour,1,,,A,2026-01-01,https://a,\n"
                    + "rtx-4090,rent-typical,0.5,gpu-hour,1,,,A,2026-01-01,https://a,\n"
                    + "rtx-4090,rent-on-demand,-3,gpu-hour,1,,,A,2026-01-01,https://a,\n"
                    + "rtx-4090,rent-on-demand,0.5,gpu-hour,1,,,A,last week,https://a,\n"
                    + "no-such-gpu,rent-on-demand,0.5,gpu-hour,1,,,A,2026-01-01,https://a,\n"
                    + "rtx-4090,rent-on-demand,0.5,gpu-hour,1,,,A,2026-01-01,,\n")
    quotes, issues = load_quotes(path, {"rtx-4090": object()})
    assert len(quotes["rtx-4090"]) == 1 and len(issues) == 5
    assert {i[2] for i in issues} == {"basis", "usd", "date", "hardware", "source"}
    broken = tmp_path / "broken.csv"
    broken.write_text("hardware,usd\nx,1\n")
    assert load_quotes(broken)[1][0][3].startswith("missing columns")


def test_every_shipped_quote_loads_and_names_a_catalog_entry():
    cat = load_catalog()
    assert not [i for i in cat.issues if "prices" in str(i)]
    assert sum(len(v) for v in cat.quotes.values()) > 300


def test_a_figure_never_combines_two_bases():
    """Issue 29: a median of on-demand and marketplace rents describes no price anyone pays."""
    from advisor.data.errors import AdvisorError
    from advisor.data.prices import Quote
    from advisor.plan.pricing import figure

    def q(basis, usd, provider):
        return Quote("h100-sxm5-80gb", basis, usd, "gpu-hour", 1, None, "1x", provider, "2026-11-01", "https://x")

    same = [q("rent-on-demand", 3.0, "A"), q("rent-on-demand", 4.0, "B"), q("rent-on-demand", 5.0, "C")]
    assert figure(same, "on-demand").usd == 4.0
    with pytest.raises(AdvisorError, match="several bases"):
        figure(same[:2] + [q("rent-marketplace", 2.0, "D")], "on-demand")


def test_check_catalog_lists_each_price_with_its_basis_quotes_and_age(capsys):
    from advisor.cli.main import main

    assert main(["check-catalog", "--prices"]) == 0
    out = capsys.readouterr().out
    row = next(line for line in out.splitlines() if line.startswith("h100-sxm5-80gb "))
    assert "on-demand" in row and "quotes" in row and "/h" in row
    assert "devices priced" in out
    assert main(["check-catalog", "--prices", "--json"]) == 0
    rows = json.loads(capsys.readouterr().out.split("\n", 1)[1])
    h100 = next(r for r in rows if r["hardware"] == "h100-sxm5-80gb")
    assert h100["rent_basis"] == "on-demand" and h100["rent_quotes"] >= 1 and h100["rent_age_days"] is not None
