"""Forgiving name resolution: "NVIDIA GeForce RTX 4090", "rtx4090", "4090 24GB" → one entry.

Names are compared as token sets after normalising case and punctuation, splitting letters from
digits ("rtx4090" → "rtx 4090") and dropping vendor words. Resolution goes in stages and stops
at the first that decides:

1. exact: the normalised query equals a normalised key, name or alias;
2. subset: every query token appears in one of an entry's names (for hardware, "24 gb" may name
   its memory size); among several, the only entry whose name adds nothing significant wins
   ("3090" → RTX 3090, not RTX 3090 Ti), otherwise it is ambiguous;
3. the same after dropping memory sizes and decorations ("Instruct", "GGUF", "it").

An unknown or ambiguous name raises `UnknownName` listing the nearest candidates.
"""

from __future__ import annotations

import difflib
import re
from typing import Any, Iterable

from advisor.data.errors import UnknownName

#: Words that never distinguish entries: dropped from queries and names alike.
VENDOR_WORDS = frozenset({"nvidia", "geforce", "amd", "apple", "intel", "meta", "tesla", "google",
                          "microsoft", "mistralai", "openai", "the"})
#: Words an entry's name may carry without the query saying them ("RTX 4090" ⊃ "4090").
GENERIC_WORDS = frozenset({"rtx", "gpu", "core", "graphics", "edition", "desktop", "radeon", "instinct",
                           "model", "card"})
#: Words a query may carry that no entry needs to match (stage 3).
DECORATIONS = frozenset({"instruct", "chat", "it", "hf", "base", "gguf", "ai", "qat", "mostly", "version",
                         "v0", "with", "mix", "ftype"})
SYNONYMS = {"c": "core", "cores": "core", "gib": "gb", "gigabytes": "gb", "ultra": "ultra", "plus": "plus"}

_SPLIT_RE = re.compile(r"(?<=[a-z])(?=\d)|(?<=\d)(?=[a-z])")
_NONWORD_RE = re.compile(r"[^a-z0-9]+")


def words(text: str) -> list[str]:
    """Lower-case words of a name without punctuation or vendor words ("RTX-4090" → ["rtx", "4090"])."""
    t = _NONWORD_RE.sub(" ", str(text).lower().replace("+", " plus "))
    return [w for w in t.split() if w not in VENDOR_WORDS]


def tokens(text: str) -> list[str]:
    """Normalised tokens of a name, in order: words split between letters and digits."""
    out = []
    for w in words(text):
        for tok in _SPLIT_RE.sub(" ", w).split():
            tok = SYNONYMS.get(tok, tok)
            if tok not in VENDOR_WORDS:
                out.append(tok)
    return out


_MEMORY_WORD_RE = re.compile(r"^\d+(gb|gib)$")


def normalise(text: str) -> str:
    return " ".join(tokens(text))


def _drop_decorations(toks: list[str]) -> list[str]:
    out: list[str] = []
    skip_next = False
    for i, tok in enumerate(toks):
        if skip_next:
            skip_next = False
            continue
        if tok.isdigit() and i + 1 < len(toks) and toks[i + 1] == "gb":
            skip_next = True  # a memory size: "32 gb"
            continue
        if tok in DECORATIONS or tok == "gb":
            continue
        out.append(tok)
    return out


class NameIndex:
    """Resolves user-typed names to entry keys for one catalog section."""

    def __init__(self, section: str, entries: Iterable[Any]):
        self.section = section
        self._display: dict[str, str] = {}
        self._exact: dict[str, set[str]] = {}
        # per entry: list of token sets (one per name) and the extra tokens it may be called by
        self._names: dict[str, list[frozenset[str]]] = {}
        self._compact: dict[str, list[str]] = {}
        self._extra: dict[str, frozenset[str]] = {}
        for e in entries:
            names = [e.key, e.name, *getattr(e, "aliases", ())]
            self._display[e.key] = e.name
            self._names[e.key] = []
            self._compact[e.key] = []
            for n in names:
                toks = tokens(n)
                if not toks:
                    continue
                for form in (" ".join(toks), "".join(toks)):
                    self._exact.setdefault(form, set()).add(e.key)
                self._names[e.key].append(frozenset(toks))
                self._compact[e.key].append("".join(toks))
            extra: set[str] = set()
            mem = getattr(e, "memory_gib", None)
            if mem:
                extra |= {f"{mem:g}", "gb"}
            self._extra[e.key] = frozenset(extra)

    def display(self, key: str) -> str:
        return self._display[key]

    def resolve(self, query: str) -> str:
        """The key ``query`` designates; raises `UnknownName` if none or several."""
        return self.match(query)[0]

    def match(self, query: str) -> tuple[str, str]:
        """(key, how): how is "exact" (a name or alias, up to case and punctuation) or "partial"."""
        q = tokens(query or "")
        if not q:
            raise UnknownName(f"empty {self._label()} name")
        for form in (" ".join(q), "".join(q)):
            hits = self._exact.get(form)
            if hits:
                return self._one(query, hits), "exact"
        qwords = [SYNONYMS.get(w, w) for w in words(query)]
        for stage in (0, 1):
            qt = frozenset(q if stage == 0 else _drop_decorations(q))
            # each typed word must appear unbroken in the name ("m40" is not "M3 Max 40-core")
            ws = [w for w in qwords if not _MEMORY_WORD_RE.match(w)
                  and (stage == 0 or w not in DECORATIONS)]
            if not qt:
                continue
            key = self._subset(query, qt, ws)
            if key:
                return key, "partial"
        raise UnknownName(self._unknown_message(query), self.nearest(query))

    def _subset(self, query: str, q: frozenset[str], qwords: list[str]) -> str | None:
        best: dict[str, int] = {}
        for key, names in self._names.items():
            allowed_extra = self._extra[key]
            scores = [len(n - q - GENERIC_WORDS) for n, compact in zip(names, self._compact[key])
                      if q <= (n | allowed_extra) and all(w in compact for w in qwords)]
            if scores:
                best[key] = min(scores)
        if not best:
            return None
        clean = [k for k, s in best.items() if s == 0]
        if len(clean) == 1:
            return clean[0]
        if len(clean) > 1:
            return self._one(query, set(clean))
        fewest = min(best.values())
        return self._one(query, {k for k, s in best.items() if s == fewest})

    def _one(self, query: str, keys: set[str]) -> str:
        if len(keys) == 1:
            return next(iter(keys))
        names = sorted(self._display[k] for k in keys)
        shown = ", ".join(names[:8]) + (" …" if len(names) > 8 else "")
        raise UnknownName(f"{query!r} matches several {self._label()} entries: {shown}; be more specific",
                          tuple(names))

    def nearest(self, query: str, n: int = 5) -> tuple[str, ...]:
        """Display names of the entries closest to ``query`` (for error messages)."""
        qn = normalise(query)
        qset = set(tokens(query))
        scored = []
        for key, names in self._names.items():
            score = 0.0
            for toks in names:
                joined = " ".join(sorted(toks))
                ratio = difflib.SequenceMatcher(None, " ".join(sorted(qset)), joined).ratio()
                overlap = len(qset & toks) / max(len(qset | toks), 1)
                score = max(score, ratio * 0.6 + overlap * 0.4)
            score = max(score, difflib.SequenceMatcher(None, qn, normalise(self._display[key])).ratio() * 0.9)
            scored.append((score, self._display[key]))
        scored.sort(key=lambda s: (-s[0], s[1]))
        return tuple(name for score, name in scored[:n] if score > 0.3)

    def _unknown_message(self, query: str) -> str:
        near = self.nearest(query)
        hint = f"; nearest: {', '.join(near)}" if near else ""
        return f"unknown {self._label()} {query!r}{hint}"

    def _label(self) -> str:
        return {"hardware": "hardware", "models": "model", "quants": "quantization",
                "kv_dtypes": "KV-cache dtype", "runtimes": "runtime"}.get(self.section, self.section)
