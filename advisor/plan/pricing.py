"""Prices the recommender ranks by, from the dated quotes of catalog/prices.csv.

A figure is a median only over at least `MIN_QUOTES` current quotes of one basis (the newest quote
per provider); with fewer it is the quotes themselves, marked thin ("1 quote"), and the ranking
charges it the spread that well-quoted devices show between their typical and their dearer quotes
(`thin_quote_factor`), so that one cheap quote does not decide the answer.

- **Rent**, per GPU-hour: a provider's own on-demand rate, else a whole VM's rate divided by its
  GPUs (a hyperscaler's price also pays for CPUs, RAM and network, so it is kept apart), else
  marketplace rates. Never a median over two of these.
- **Buy**, a whole machine: a system's own price (Macs, Strix Halo boxes, DGX Spark); GPUs that
  come in 8-GPU servers (SXM/OAM modules) at the server's price per GPU; cards at their street
  (else launch) price plus the host machine they need (a desktop for 1–2, a workstation for 3–4;
  no sourced figure exists for an 8-card server host, which the note then says). Electricity for
  the GPUs' board power over a stated life is added to what the ranking compares, and stated.
- **Rent per month** (24/7) beside buy, and the month at which buying breaks even.

A user's own quote (a ``price:`` block on their hardware entry) replaces the catalog's figures.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from datetime import date, timedelta
from functools import lru_cache
from typing import Iterable, Sequence

from advisor.data.errors import AdvisorError
from advisor.data.prices import ELECTRICITY_KEY, Quote, parse_date
from advisor.data.specs import Hardware

#: A median needs at least this many quotes of one basis; fewer is a thin figure.
MIN_QUOTES = 3
#: Quotes older than this (before the newest quote of the table) are not current.
RENT_WINDOW = timedelta(days=365)
BUY_WINDOW = timedelta(days=730)       # datacenter hardware is rarely quoted: two years
HOURS_PER_MONTH = 730.0                # 24/7: 8,760 hours a year over 12 months
DEFAULT_LIFE_YEARS = 3.0               # the life over which bought hardware's electricity is counted
DEFAULT_HOURS_PER_DAY = 24.0           # a server runs around the clock (a stated assumption)
#: Rent bases in order of preference: each is a different thing and never mixed in one figure.
RENT_BASES = (("rent-on-demand", "on-demand"), ("rent-whole-vm", "whole-VM rate per GPU"),
              ("rent-marketplace", "marketplace"))
#: Form factors sold in 8-GPU servers rather than as cards.
SERVER_FORMS = ("sxm", "oam", "superchip", "nvl")


@dataclass(frozen=True)
class Figure:
    """One price: ``usd`` (a median of ``quotes`` ≥ MIN_QUOTES, else the mean of the few there are)
    with its basis in words, the range of the quotes, their dates and where they are from."""

    usd: float
    basis: str
    quotes: int
    low: float
    high: float
    oldest: str
    newest: str
    providers: tuple[str, ...] = ()
    own: bool = False          # the user's own quote
    #: quotes sampled from a market (rent rates, street prices): a median needs several; a list
    #: price is the vendor's one figure, not a sample
    sampled: bool = True
    sources: tuple[str, ...] = ()   # each quote's source, as catalog/prices.csv gives it

    @property
    def thin(self) -> bool:
        return self.sampled and not self.own and self.quotes < MIN_QUOTES

    @property
    def count_text(self) -> str:
        if self.own:
            return "your quote"
        if not self.sampled:
            return "list price"
        if self.thin:
            return f"{self.quotes} quote{'s' if self.quotes > 1 else ''}"
        return f"median of {self.quotes}"

    @property
    def label(self) -> str:
        """What the figure is, in words: "street price, 1 quote", "list price", "on-demand, median of 8"."""
        if self.own:
            return "your quote"
        return f"{self.basis}, {self.count_text}" if self.sampled else self.basis

    def text(self, unit: str) -> str:
        when = self.newest if self.oldest == self.newest else f"{self.oldest} to {self.newest}"
        spread = f", ${self.low:,.2f}–${self.high:,.2f}" if self.quotes > 1 and self.high > self.low else ""
        who = f" ({', '.join(self.providers[:3])}{' …' if len(self.providers) > 3 else ''})" if self.providers else ""
        if self.own:
            return f"${self.usd:,.2f}{unit}, your quote ({when})"
        return f"${self.usd:,.2f}{unit} {self.basis}, {self.count_text}{spread}{who}, {when}"


def _current(quotes: Iterable[Quote], basis: str, window: timedelta, newest: date,
             memory_gib: float | None = None, withdrawn: bool = False) -> list[Quote]:
    """Current quotes of one basis (not stale, within ``window`` of the table's newest), for the
    memory size asked where the quotes name one; the newest per provider and configuration.
    ``withdrawn``: the list prices of configurations no longer sold instead (the last they sold at)."""
    out: dict[tuple[str, str], Quote] = {}
    for q in quotes:
        stale = ("WITHDRAWN" not in q.tags or "HISTORICAL" in q.tags) if withdrawn else q.stale
        if q.basis != basis or stale or q.day < newest - window:
            continue
        if q.memory_gib is not None and memory_gib is not None and abs(q.memory_gib - memory_gib) > 0.5:
            continue
        k = (q.provider.lower(), "" if q.unit == "gpu-hour" else q.configuration.lower())
        if k not in out or q.day > out[k].day:
            out[k] = q
    if basis == "buy-msrp":
        return sorted(out.values(), key=lambda q: q.per_gpu_usd)
    # one provider quoting one thing several ways (Lambda's 1x and 8x per-GPU rates) counts once
    by_provider: dict[str, Quote] = {}
    for q in out.values():
        p = q.provider.lower()
        if p not in by_provider or q.day > by_provider[p].day:
            by_provider[p] = q
    return sorted(by_provider.values(), key=lambda q: q.per_gpu_usd)


def figure(quotes: Sequence[Quote], basis: str, sampled: bool = True) -> Figure | None:
    """Market quotes: their median (≥ MIN_QUOTES) or their mean (thin). List prices (``sampled``
    False): the lowest, the cheapest way to buy the device (a Mac Studio rather than a MacBook Pro)."""
    if not quotes:
        return None
    bases = sorted({q.basis for q in quotes})
    if len(bases) > 1:
        # a figure is one kind of price: a median of on-demand and marketplace rents (or of
        # street and list prices) describes no price anyone pays
        raise AdvisorError(f"{quotes[0].hardware}: a {basis} figure over quotes of several bases "
                           f"({', '.join(bases)}); prices are only combined within one basis")
    values = [q.per_gpu_usd for q in quotes]
    if not sampled:
        usd = min(values)
    else:
        usd = statistics.median(values) if len(values) >= MIN_QUOTES else sum(values) / len(values)
    days = sorted(q.date for q in quotes)
    return Figure(usd, basis, len(values), min(values), max(values), days[0], days[-1],
                  tuple(sorted({q.provider for q in quotes if q.provider})), sampled=sampled,
                  sources=tuple(dict.fromkeys(f"{q.provider} {q.date}: {q.source}" for q in quotes)))


_NEWEST: dict[int, tuple[object, date]] = {}


@dataclass(frozen=True)
class PriceCheck:
    """What one device is priced at, for `advisor check-catalog --prices`."""

    hardware: str
    buy: Figure | None
    rent: Figure | None
    buy_age_days: int | None    # the newest quote behind the figure, days before the table's newest quote
    rent_age_days: int | None
    flags: tuple[str, ...]      # "thin buy" (< MIN_QUOTES), "thin rent", "old buy"/"old rent" (> 365 days), "unpriced"
    problem: str = ""           # a figure that could not be formed (quotes of several bases)


def check_prices(cat) -> list[PriceCheck]:
    """Every device's buy and rent figure with its basis, quote count and age."""
    newest = _newest(cat)
    out = []
    for hw in cat.hardware.values():
        try:
            buy_figure, rent_figure, problem = device_buy(cat, hw)[0], rent(cat, hw), ""
        except AdvisorError as exc:
            buy_figure, rent_figure, problem = None, None, str(exc)
        ages = {name: (newest - parse_date(f.newest)).days if f is not None and not f.own and f.newest != "undated"
                else None for name, f in (("buy", buy_figure), ("rent", rent_figure))}
        flags = []
        if buy_figure is None and rent_figure is None:
            flags.append("unpriced")
        for name, f in (("buy", buy_figure), ("rent", rent_figure)):
            if f is not None and f.sampled and not f.own and f.quotes < MIN_QUOTES:
                flags.append(f"thin {name}")
            if ages[name] is not None and ages[name] > RENT_WINDOW.days:
                flags.append(f"old {name}")
        out.append(PriceCheck(hw.key, buy_figure, rent_figure, ages["buy"], ages["rent"], tuple(flags), problem))
    return out


def _newest(cat) -> date:
    """The newest quote's day: "current" is measured back from it (once per quote table)."""
    hit = _NEWEST.get(id(cat.quotes))
    if hit is None or hit[0] is not cat.quotes:
        hit = (cat.quotes, max((q.day for qs in cat.quotes.values() for q in qs), default=date.today()))
        if len(_NEWEST) > 16:
            _NEWEST.clear()
        _NEWEST[id(cat.quotes)] = hit
    return hit[1]


def rent(cat, hw: Hardware) -> Figure | None:
    """On-demand rent per GPU-hour (a user's own quote first)."""
    own = hw.price.cloud_usd_hour if hw.price and hw.origin else None
    if own:
        return Figure(own, "your quote", 1, own, own, hw.price.cloud_date or "undated", hw.price.cloud_date or "undated",
                      own=True)
    quotes = cat.quotes.get(hw.variant_of or hw.key, ())
    newest = _newest(cat)
    for basis, words in RENT_BASES:
        f = figure(_current(quotes, basis, RENT_WINDOW, newest), words)
        if f is not None:
            return f
    return None


@dataclass(frozen=True)
class Purchase:
    """Buying a machine with ``gpus`` of a device: what it costs up front, its parts in words,
    and the electricity of its GPUs per month at the stated hours per day."""

    capex_usd: float
    parts: str                 # "8 × $31,905 (server price per GPU, 2 quotes) …"
    thin: bool                 # any part rests on fewer than MIN_QUOTES quotes
    power_usd_month: float     # 0 where the board power or the tariff is unknown
    power_note: str
    host_missing: bool = False  # cards that need a host machine no figure prices
    device_label: str = ""      # what the device's price is: "street price, 2 quotes", "list price" …
    with_host: bool = False     # the price includes the host machine the cards go in

    def total_usd(self, life_years: float = DEFAULT_LIFE_YEARS) -> float:
        """Up-front cost plus the electricity over ``life_years``: what "buy" ranks by."""
        return self.capex_usd + self.power_usd_month * 12 * life_years


def is_system(hw: Hardware) -> bool:
    """A whole machine sold as one (a Mac, a Strix Halo box, a DGX Spark): its price is the system's."""
    return hw.kind in ("apple", "soc") or (hw.price is not None and hw.price.unit == "system")


def sold_in_servers(hw: Hardware) -> bool:
    return hw.kind == "datacenter" and any(w in (hw.form_factor or "").lower() for w in SERVER_FORMS)


def device_buy(cat, hw: Hardware) -> tuple[Figure | None, str]:
    """The price of one device (one GPU's share of a server, one card, one system) and what it includes."""
    p = hw.price
    if p and hw.origin and (p.street_usd or p.msrp_usd):
        usd = p.street_usd or p.msrp_usd
        when = p.street_date if p.street_usd else p.msrp_date
        return Figure(usd, "your quote", 1, usd, usd, when or "undated", when or "undated", own=True), "yours"
    quotes = cat.quotes.get(hw.variant_of or hw.key, ())
    newest = _newest(cat)
    memory = hw.memory_gib if is_system(hw) or hw.variant_of else None
    ever = timedelta(days=365 * 30)
    if sold_in_servers(hw):
        order = (("buy-server", "server price per GPU", BUY_WINDOW, "server", False),
                 ("buy-reported", "reported unit price", BUY_WINDOW, "server", False))
    else:
        # a card no longer sold new is bought used (a 3090 in 2026), never at its 2020 launch price
        order = (("buy-street-new", "street price", RENT_WINDOW, "device", False),
                 ("buy-msrp", "list price", ever, "device", False),
                 ("buy-street-used", "used street price", RENT_WINDOW, "device", False),
                 ("buy-msrp", "last list price (withdrawn from sale)", ever, "device", True))
        if hw.kind == "datacenter":
            # datacenter cards are rarely quoted: two years of street and reseller prices
            order = (("buy-street-new", "street price", BUY_WINDOW, "device", False),
                     ("buy-reported", "reported unit price", BUY_WINDOW, "device", False)) + order[1:]
        elif is_system(hw):
            # a machine several vendors sell (Strix Halo boxes) or one vendor lists: its lowest
            # current list price is what it costs; retail samples come after
            order = (order[1], order[0], order[2], order[3])
        elif hw.kind in ("consumer", "workstation") and (hw.year or 9999) <= newest.year - 3:
            order = (order[0], order[2], order[1], order[3])
    for basis, words, window, includes, withdrawn in order:
        f = figure(_current(quotes, basis, window, newest, memory, withdrawn), words, sampled=basis != "buy-msrp")
        if f is not None:
            return f, includes
    return None, ""


def _host(cat, gpus: int) -> tuple[Figure | None, str]:
    """The machine that holds ``gpus`` cards: a desktop for one or two, a workstation for four, a
    server for eight."""
    key = "host-desktop" if gpus <= 2 else ("host-workstation" if gpus <= 4 else "host-server-8pcie")
    words = {"host-desktop": "desktop host", "host-workstation": "workstation host",
             "host-server-8pcie": "8-card server host"}[key]
    # each row is a different build (a mining frame, a server board, a Threadripper): all count
    quotes = [q for q in cat.quotes.get(key, ()) if not q.stale and q.day >= _newest(cat) - BUY_WINDOW]
    return figure(quotes, words), words


@lru_cache(maxsize=8)
def _tariff_of(quotes: tuple[Quote, ...]) -> Figure | None:
    current = [q for q in quotes if not q.stale]
    if not current:
        return None
    newest = max(current, key=lambda q: q.day)
    return Figure(newest.usd, f"per kWh, {newest.configuration or 'electricity'}", 1, newest.usd, newest.usd,
                  newest.date, newest.date, (newest.provider,))


def tariff(cat, usd_per_kwh: float | None = None) -> Figure | None:
    """Electricity: the user's rate, else the newest sourced tariff."""
    if usd_per_kwh is not None:
        return Figure(usd_per_kwh, "per kWh, your rate", 1, usd_per_kwh, usd_per_kwh, "", "", own=True)
    return _tariff_of(tuple(cat.quotes.get(ELECTRICITY_KEY, ())))


#: `deployment_power`'s basis where no system in the catalog holds the GPUs
BOARD_POWER = "the GPUs' board power"


def deployment_power(cat, hw: Hardware, gpus: int) -> tuple[float | None, str]:
    """What ``gpus`` × ``hw`` draw at most, kW, and on what basis: their share of the smallest
    server or rack sold with these GPUs at its vendor's maximum system power (CPUs, NICs, switches
    and fans included), else the GPUs' board power alone; (None, "") where neither is known."""
    systems = [s for s in (cat.systems_of(hw.variant_of or hw.key) if cat is not None else ()) if s.power_kw]
    if systems:
        s = systems[0]
        return s.power_kw * gpus / s.gpus, f"{s.name}'s maximum system power ({s.power_kw:g} kW per {s.gpus} GPUs)"
    if hw.tdp_w:
        return hw.tdp_w * gpus / 1e3, BOARD_POWER
    return None, ""


def buy(cat, hw: Hardware, gpus: int, *, hours_per_day: float = DEFAULT_HOURS_PER_DAY,
        usd_per_kwh: float | None = None, own_host: bool = False) -> Purchase | None:
    """Buying ``gpus`` of ``hw`` as working machines, or None where the device has no price.
    ``own_host``: the buyer has the machine the cards go in (only the cards are bought)."""
    device, includes = device_buy(cat, hw)
    if device is None:
        return None
    count = 1 if is_system(hw) else gpus      # a system entry is one machine (one "GPU")
    parts = [f"{count} × ${device.usd:,.0f} ({device.label}, {device.newest})"
             if count > 1 else f"${device.usd:,.0f} ({device.label}, {device.newest})"]
    capex, thin, host_missing = device.usd * count, device.thin, False
    if includes == "device" and not is_system(hw) and own_host:
        parts.append("host: yours")
    elif includes == "device" and not is_system(hw):
        host, words = _host(cat, gpus)
        if host is None:
            host_missing = True
            parts.append(f"{words}: no sourced price, not included")
        else:
            capex += host.usd
            thin |= host.thin
            parts.append(f"${host.usd:,.0f} {words} ({host.count_text}, {host.oldest} to {host.newest})"
                         if host.oldest != host.newest else f"${host.usd:,.0f} {words} ({host.count_text}, {host.newest})")
    t = tariff(cat, usd_per_kwh)
    # a server's GPUs draw with their host (CPUs, NICs, fans): its maximum where the catalog has it
    kw, power_basis = deployment_power(cat, hw, count)
    watts = (kw or 0.0) * 1e3
    power_words = "board power" if power_basis == BOARD_POWER else f"at {power_basis}"
    if hours_per_day <= 0:
        month, note = 0.0, "electricity not counted (one user's machine; --hours-per-day counts it)"
    elif t is not None and watts > 0:
        month = watts / 1000 * hours_per_day * 365 / 12 * t.usd
        note = (f"{watts:,.0f} W {power_words} × {hours_per_day:g} h/day at ${t.usd:.3f}/kWh "
                f"({'your rate' if t.own else t.providers[0] + ' ' + t.newest}): ${month:,.0f}/month")
    else:
        month, note = 0.0, "electricity not counted (no board power or tariff in the catalog)"
    with_host = includes == "device" and not is_system(hw) and not own_host and not host_missing
    return Purchase(capex, "; ".join(parts), thin, month, note, host_missing, device.label, with_host)


def break_even_months(purchase: Purchase, rent_usd_hour_total: float) -> float | None:
    """Months after which buying costs less than renting the same GPUs 24/7 (electricity paid by
    the buyer), or None where renting is never dearer."""
    saving = rent_usd_hour_total * HOURS_PER_MONTH - purchase.power_usd_month
    return purchase.capex_usd / saving if saving > 0 else None


def thin_quote_factor(cat) -> float:
    """How far a device's typical rate sits above its cheapest, from the devices with ≥ MIN_QUOTES
    current on-demand quotes: the median over them of (median ÷ cheapest quote); 1.33 on the
    2026-11 table. A thin figure is ranked at its value times this: one quote may be the floor of a
    wider market (a low-cost provider's rate), not where most of it is."""
    return _thin_factor(tuple(tuple(qs) for qs in cat.quotes.values()))


@lru_cache(maxsize=4)
def _thin_factor(all_quotes: tuple[tuple[Quote, ...], ...]) -> float:
    newest = max((q.day for qs in all_quotes for q in qs), default=date.today())
    ratios = []
    for quotes in all_quotes:
        current = _current(quotes, "rent-on-demand", RENT_WINDOW, newest)
        if len(current) >= MIN_QUOTES:
            values = [q.per_gpu_usd for q in current]
            ratios.append(statistics.median(values) / min(values))
    return statistics.median(ratios) if ratios else 1.0


def monthly_rent(hour_total: float | None) -> float | None:
    return hour_total * HOURS_PER_MONTH if hour_total and math.isfinite(hour_total) else None


@dataclass(frozen=True)
class Costs:
    """What one configuration costs to own and to run, for side-by-side views (Compare, the report):
    the machine bought, the GPUs rented, their board power, and the output tokens a rented hour buys.
    None where the catalog has no figure; never a guess."""

    buy_usd: float | None          # the machine(s) up front (device price, plus a host for cards)
    buy_label: str                 # "street price, 2 quotes, with its host", "server price per GPU, median of 5"
    rent_usd_hour: float | None    # every GPU, on-demand (or the basis `rent` names)
    rent_label: str
    power_w: float | None          # board power of every GPU (a system entry: the machine)
    usd_per_million_tokens: float | None   # rent per hour over the output tokens served in that hour
    thin: bool                     # a figure rests on fewer than MIN_QUOTES quotes


def costs(cat, hw: Hardware, gpus: int, throughput_tok_s: float | None = None) -> Costs:
    """`Costs` of ``gpus`` × ``hw`` serving ``throughput_tok_s`` output tokens per second."""
    purchase = buy(cat, hw, gpus)
    r = rent(cat, hw)
    count = 1 if is_system(hw) else gpus
    hour = r.usd * count if r is not None else None
    per_m = (hour / (throughput_tok_s * 3600) * 1e6
             if hour and throughput_tok_s and math.isfinite(throughput_tok_s) and throughput_tok_s > 0 else None)
    label = purchase.device_label if purchase is not None else ""
    if purchase is not None and (purchase.with_host or purchase.host_missing):
        label += ", with its host" if purchase.with_host else ", with no host priced"
    return Costs(purchase.capex_usd if purchase else None, label,
                 hour, r.label if r is not None else "", hw.tdp_w * count if hw.tdp_w else None, per_m,
                 bool((purchase and purchase.thin) or (r is not None and r.thin)))
