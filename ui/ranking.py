"""The Recommendations tab's jobs, run in child processes (`ui.process`): no widgets here, so a child
imports only the core, and what it sends back is a `Shortlist`."""

from __future__ import annotations

from advisor import api

#: the workers' channels, a process each: a first look at a few devices, and the whole catalog side by
#: side with it (on two cores, against one process doing both in turn: the first rows in 48 ms
#: against 65, the whole ranking in 396 against 453)
FIRST, ALL = "recommend-first", "recommend"


def shortlist(req: "api.Requirements", rows: int, groups: int, catalog: "api.Catalog") -> "api.Shortlist":
    """``req`` ranked on ``catalog``: its first ``rows`` rows and ``groups`` hardware groups."""
    return api.recommend(catalog, req).shortlist(rows, groups)


def first_look(req: "api.Requirements", rows: int, groups: int, catalog: "api.Catalog") -> "api.Shortlist | None":
    """`shortlist` on the few devices ``req`` names; None when none of them passes its filters (the
    whole ranking says why)."""
    try:
        return shortlist(req, rows, groups, catalog)
    except api.AdvisorError:
        return None


def warm(req: "api.Requirements", catalog: "api.Catalog") -> None:
    """Rank ``req`` once and keep nothing: builds the catalog's sweep tables in this process, which
    the first ranking would otherwise wait for (~0.3 s)."""
    try:
        api.recommend(catalog, req)
    except api.AdvisorError:   # nothing passes the filters: the tables are built all the same
        pass
