"""Forgiving name resolution: "NVIDIA GeForce RTX 4090", "rtx4090", "4090 24GB" → one entry.

Names are compared as token sets after normalising case and punctuation, splitting letters from
digits ("rtx4090" → "rtx 4090") and dropping vendor words. Resolution goes in stages and stops
at the first that decides:

1. exact: the normalised query equals a normalised key, name or alias;
2. subset: every query token appears in one of an entry's names (for hardware, "24 gb" may name
   its memory size); among several, the only entry whose name adds nothing significant wins
   ("3090" → RTX 3090, not RTX 3090 Ti), otherwise it is ambiguous;
3. the same after dropping memory sizes and decorations ("Instruct", "GGUF", "it").

Model names also carry numbers that tokens alone would blur: a version ("3.1", "2.5", "4") and a
size ("8b", "70b", "a3b"). Tokens split "3.3" into "3", "3" and "8b" into "8", "b", so as token
sets "llama 3.3 8b" ⊂ "Llama 3 8B" and "gemma 4" ⊂ "Gemma 3 4B". Each number a model query states is
therefore read whole (`numbers`) and must be one of the entry name's own numbers: a version never
matches another version or a size, and a query whose numbers no entry has is unknown, its message
naming the entries that differ only in those numbers. Among several matches, one whose name adds a
number the others do not ("llama 8b": Llama 3 8B vs Llama 3.1 8B) is not preferred for being
shorter: it is ambiguous. An Ollama tag's quantization or ":latest" ("qwen2.5:7b-instruct-q4_K_M")
and a Hugging Face owner ("bartowski/…") are dropped when the name as typed matches nothing; the
weight format is chosen apart (--quant), so the tag's quantization is not applied.

Hardware names may carry a memory size ("M3 Max 40-core 64GB", "RTX 3060 12GB"): only entries that
ship in that size (``memory_gib`` or one of ``memory_options_gib``; a unified-memory entry without
``memory_options_gib``: any size up to ``memory_gib``) match, and `match_sized` returns
the size for `Catalog.hardware_named` to apply; a size no matching entry has is an error listing
the sizes there are. A Mac's product name before its chip ("Mac mini M4 Pro", "MacBook Pro 16-inch
M3 Max", "Mac Studio M2 Ultra 192GB") is dropped: the chip decides. A name that matches only
entries adding a variant word ("RX 7900" → "RX 7900 XT", "RTX 4090" → "RTX 4090 Laptop") does not
resolve: a Ti, XT or laptop part is a different product.

An unknown or ambiguous name raises `UnknownName` listing the nearest candidates. An unknown name's
candidates are only worked out when the error is shown (`UnknownName` describes itself lazily), and
`NameIndex.nearest` scores only the entries a cheap upper bound cannot rule out, so a miss that is
caught and dropped costs about as much as a hit. `NameIndex.suggest` serves a type-ahead box.
"""

from __future__ import annotations

import difflib
import re
from bisect import insort
from collections import Counter
from heapq import heapify, heappop, heappush
from functools import cached_property, lru_cache
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
#: Words that make a different product of the same number: a query must say them to match them.
VARIANT_WORDS = frozenset({"ti", "xt", "xtx", "super", "gre", "laptop", "mobile"})
#: Mac product names as tokens, longest first; dropped from the front of a hardware query that goes
#: on to name a chip ("Mac mini M4 Pro" → "M4 Pro"); "14 inch" or a year may follow them.
MAC_PRODUCTS = (("macbook", "pro"), ("macbook", "air"), ("mac", "mini"), ("mac", "studio"), ("mac", "pro"),
                ("macbook",), ("imac",))
SYNONYMS = {"c": "core", "cores": "core", "gib": "gb", "gigabytes": "gb", "ultra": "ultra", "plus": "plus"}

_SPLIT_RE = re.compile(r"(?<=[a-z])(?=\d)|(?<=\d)(?=[a-z])")
_NONWORD_RE = re.compile(r"[^a-z0-9]+")


def words(text: str) -> list[str]:
    """Lower-case words of a name without punctuation or vendor words ("RTX-4090" → ["rtx", "4090"])."""
    t = _NONWORD_RE.sub(" ", str(text).lower().replace("+", " plus "))
    return [w for w in t.split() if w not in VENDOR_WORDS]


def tokens(text: str) -> list[str]:
    """Normalised tokens of a name, in order: words split between letters and digits."""
    return list(_tokens(str(text)))


@lru_cache(maxsize=4096)
def _tokens(text: str) -> tuple[str, ...]:
    # the same as splitting each of words(text) between letters and digits: the split never crosses
    # a space, and a vendor word (all letters, no synonym) is dropped as a token as it is as a word
    t = _NONWORD_RE.sub(" ", text.lower().replace("+", " plus "))
    out = []
    for tok in _SPLIT_RE.sub(" ", t).split():
        tok = SYNONYMS.get(tok, tok)
        if tok not in VENDOR_WORDS:
            out.append(tok)
    return tuple(out)


_MEMORY_WORD_RE = re.compile(r"^\d+(gb|gib)$")


def normalise(text: str) -> str:
    return " ".join(tokens(text))


#: a number as written, with the letters around it: "llama3.1" → ("llama", "3.1", ""), "a3b" → ("a", "3", "b")
_NUMBER_RE = re.compile(r"([a-z]*)(\d+(?:\.\d+)*)([a-z]*)")
#: an Ollama tag's or GGUF file's quantization at the end of a model name ("-q4_K_M", ":latest", ".gguf")
_MODEL_TAIL_RE = re.compile(r"[-_:.](?:latest|gguf|i?q\d(?:_[a-z0-9]+)*|f16|fp16|bf16|f32|fp32|fp8|mxfp4)$")


def numbers(text: str) -> Counter:
    """The numbers a model name states, each whole, as a multiset: a size keeps its unit ("8b", "0.6b",
    "128k"; an active or effective size its letter: "a3b", "e4b"), a version its dots ("3.1");
    a memory size ("24GB") is not one. "Llama-3.1-8B" → {"3.1", "8b"}; "Gemma 3 4B" → {"3", "4b"}."""
    out: Counter = Counter()
    for before, num, after in _NUMBER_RE.findall(str(text).lower()):
        if after in ("gb", "gib"):
            continue
        if after in ("b", "k"):
            out[(before if len(before) == 1 else "") + num + after] += 1
        else:
            out[num] += 1
    return out


def _model_query(text: str) -> str:
    """A model name without a Hugging Face owner or URL ("hf.co/bartowski/…") and without an Ollama
    tag's or GGUF file's quantization ("llama3.1:8b-instruct-q4_K_M" → "llama3.1:8b-instruct").
    An owner has no digits: "DeepSeek-V3/R1" names two models, not R1 by its owner."""
    parts = str(text).strip().split("/")
    while len(parts) > 1 and not any(ch.isdigit() for ch in parts[0]):
        parts.pop(0)
    t = "/".join(parts)
    while True:
        shorter = _MODEL_TAIL_RE.sub("", t.lower())
        if shorter == t.lower():
            return t
        t = t[:len(shorter)]


def memory_sizes(toks: list[str]) -> list[float]:
    """Memory sizes a name's tokens state, GB: each number followed by "gb" ("64GB", "64 GB")."""
    return [float(t) for t, nxt in zip(toks, toks[1:]) if t.isdigit() and nxt == "gb"]


def strip_mac_product(toks: list[str]) -> list[str]:
    """``toks`` without a leading Mac product name when a chip follows ("mac mini m 4 pro" → "m 4 pro");
    works on `tokens` and on `words` alike."""
    for product in MAC_PRODUCTS:
        n = len(product)
        if tuple(toks[:n]) != product:
            continue
        rest = toks[n:]
        while rest and (rest[0] in ("inch", "in") or (rest[0].isdigit() and len(rest) > 1
                                                         and rest[1] in ("inch", "in"))
                        or (rest[0].isdigit() and len(rest[0]) == 4)):
            rest = rest[1:]  # "14 inch", "16-inch", "2023"
        if rest and (rest[0] == "m" or re.fullmatch(r"m\d+", rest[0])):
            return rest
        if not rest:
            raise UnknownName(f"{' '.join(toks)!r} names a Mac, not its chip: add the chip, e.g. "
                              f"'{' '.join(product)} M4 Pro' (the chip decides, see 'advisor list hardware')")
        return toks
    return toks


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
        #: per entry, aligned with its token sets: the numbers of the names that give each (models)
        self._numbers: dict[str, list[list[Counter]]] = {}
        self._extra: dict[str, frozenset[str]] = {}
        #: per entry: the memory sizes it ships in, GiB (hardware only)
        self._sizes: dict[str, frozenset[float]] = {}
        #: unified-memory entries whose sizes are not listed: the largest (any size up to it is offered)
        self._open_sizes: dict[str, float] = {}
        # per entry: (key, display name, its names' distinct token tuples, its names as given)
        self._entries: list[tuple[str, str, list[tuple[str, ...]], list[str]]] = []
        for e in entries:
            names = [str(n) for n in (e.key, e.name, *getattr(e, "aliases", ()))]
            self._display[e.key] = e.name
            self._names[e.key] = []
            self._compact[e.key] = []
            self._numbers[e.key] = []
            distinct: list[tuple[str, ...]] = []
            for n in names:
                toks = _tokens(n)
                # a model name's numbers, without a quantization it names ("gemma-3-12b-it-qat-q4_0-gguf")
                nums = numbers(_model_query(n)) if section == "models" else Counter()
                if toks in distinct:  # names that tokenise alike ("RTX 4090", "rtx4090") match alike
                    alike = self._numbers[e.key][distinct.index(toks)]
                    if nums not in alike:
                        alike.append(nums)  # … whichever way each writes its numbers
                    continue
                if not toks:
                    continue
                distinct.append(toks)
                self._numbers[e.key].append([nums])
                compact = "".join(toks)
                for form in (" ".join(toks), compact):
                    self._exact.setdefault(form, set()).add(e.key)
                self._names[e.key].append(frozenset(toks))
                self._compact[e.key].append(compact)
            extra: set[str] = set()
            mem = getattr(e, "memory_gib", None)
            options = getattr(e, "memory_options_gib", ())
            sizes = frozenset({mem, *options} if mem else ())
            self._sizes[e.key] = sizes
            if mem and getattr(e, "unified_memory", False) and not options:
                self._open_sizes[e.key] = mem  # sizes not listed: any up to the largest (a configuration)
            for size in sizes:
                extra |= {f"{size:g}", "gb"}
            self._extra[e.key] = frozenset(extra)
            self._entries.append((e.key, e.name, distinct, names))

    @cached_property
    def _near(self) -> list[tuple[str, list[_Variant], _Text, _Most]]:
        """For `nearest`, built on first use: per entry, its display name, its distinct token sets
        (sorted and joined, with character counts), its normalised display name, and their bound."""
        out = []
        for _, display, distinct, _ in self._entries:
            variants: dict[frozenset[str], _Variant] = {}
            for toks in distinct:
                tokset = frozenset(toks)
                if tokset not in variants:
                    variants[tokset] = _Variant(" ".join(sorted(tokset)), tokset)
            vs = list(variants.values())
            out.append((display, vs, _Text(" ".join(_tokens(str(display)))), _Most(vs)))
        return out

    @cached_property
    def _typeahead(self) -> list[tuple[str, str, str, str, str]]:
        """For `suggest`, built on first use, in display-name order: per entry (display, key), its
        normalised names (spaced and glued) each after a newline, the glued rest of each name from
        each of its tokens on ("m 2 max" → "m2max", "2max", "max") each after a newline, and its
        names as given, lower-cased."""
        out = []
        for key, display, distinct, names in self._entries:
            forms = "".join(f"\n{' '.join(t)}\n{''.join(t)}" for t in distinct)
            starts = "".join(sorted({"\n" + "".join(t[i:]) for t in distinct for i in range(len(t))}))
            out.append((display, key, forms, starts, "\n".join(n.lower() for n in names)))
        out.sort(key=lambda t: (t[0].casefold(), t[0], t[1]))
        return out

    def display(self, key: str) -> str:
        return self._display[key]

    def resolve(self, query: str) -> str:
        """The key ``query`` designates; raises `UnknownName` if none or several."""
        return self.match(query)[0]

    def match(self, query: str) -> tuple[str, str]:
        """(key, how): how is "exact" (a name or alias, up to case and punctuation) or "partial"."""
        key, how, _ = self.match_sized(query)
        return key, how

    def match_sized(self, query: str) -> tuple[str, str, float | None]:
        """(key, how, size): as `match`, with the memory size the name states, GB (None if none)."""
        q = tokens(query or "")
        if not q:
            raise UnknownName(f"{query!r} is not a {self._label()} name (no letters or digits)"
                              if (query or "").strip() else f"empty {self._label()} name")
        qwords = [SYNONYMS.get(w, w) for w in words(query)]
        size = None
        if self.section == "hardware":
            for form in (" ".join(q), "".join(q)):  # an entry named as typed, product name and all
                hits = self._exact.get(form)
                if hits:
                    sizes = memory_sizes(q)
                    return self._one(query, hits), "exact", sizes[0] if len(set(sizes)) == 1 else None
            q, qwords = strip_mac_product(q), strip_mac_product(qwords)
            sizes = set(memory_sizes(q))
            if len(sizes) > 1:
                raise UnknownName(f"{query!r} states several memory sizes ({', '.join(f'{s:g}' for s in sorted(sizes))} GB)")
            size = sizes.pop() if sizes else None
        # a size typed apart ("96 GB") is a memory size too, not a word the name must contain
        qwords = [w for i, w in enumerate(qwords) if w != "gb"
                  and not (w.isdigit() and i + 1 < len(qwords) and qwords[i + 1] == "gb")]
        if size is not None:
            # nor a token the entry's names must hold: the size is judged against what each entry
            # ships in, so every bin that ships in it stays a candidate ("M3 Ultra 256GB" is the same
            # default bin as "M3 Ultra", not the one whose largest size happens to be 256 GB)
            q = [t for i, t in enumerate(q) if t != "gb" and not (t.isdigit() and i + 1 < len(q) and q[i + 1] == "gb")]
        for form in (" ".join(q), "".join(q)):
            hits = self._exact.get(form)
            if hits and size is not None:
                # the name without its size is exact, but the entry must ship in that size
                # ("M4 Max 36GB": the 32-core bin, not the 40-core that "M4 Max" alone means)
                hits = {k for k in hits if size in self._sizes.get(k, ()) or size <= self._open_sizes.get(k, 0)}
                if hits:   # (matched once the size was read apart: "partial", so the size is kept)
                    return self._one(query, hits), "partial", size
            if hits:
                return self._one(query, hits), "exact", size
        qnums = None  # the numbers a model name states, each to be one of the entry's own
        if self.section == "models":
            plain = _model_query(query)
            if plain != str(query).strip() and tokens(plain):
                # an Ollama tag's quantization or a Hugging Face owner: "qwen2.5:7b-instruct-q4_K_M"
                q, qwords = tokens(plain), [SYNONYMS.get(w, w) for w in words(plain)]
                for form in (" ".join(q), "".join(q)):
                    hits = self._exact.get(form)
                    if hits:
                        return self._one(query, hits), "partial", size
            qnums = numbers(plain)
        if not any(t.isalpha() or len(t) >= 3 for t in q):
            # a bare small number ("1", "-1", "70") is part of too many names to stand for one; a
            # product number ("4090") is long enough
            raise UnknownName(f"{query!r} is too short to name a {self._label()}; give its name "
                              f"(e.g. {next(iter(sorted(self._display.values())))!r})")
        other_numbers: set[str] = set()  # entries the query names but for its numbers ("gemma 4": Gemma 3 4B)
        for stage in (0, 1):
            qt = frozenset(q if stage == 0 else _drop_decorations(q))
            # each typed word must appear unbroken in the name ("m40" is not "M3 Max 40-core")
            ws = [w for w in qwords if not _MEMORY_WORD_RE.match(w)
                  and (stage == 0 or w not in DECORATIONS)]
            if not qt:
                continue
            key = self._subset(query, qt, ws, size, qnums, other_numbers)
            if key:
                return key, "partial", size
        if other_numbers:
            raise UnknownName(explain=lambda: self._explain_numbers(query, qnums, other_numbers))
        raise UnknownName(explain=lambda: self._explain_unknown(query))

    def _subset(self, query: str, q: frozenset[str], qwords: list[str], size: float | None = None,
                qnums: Counter | None = None, other_numbers: set[str] | None = None) -> str | None:
        """The one entry whose names hold every query token (and, with ``qnums``, every number the
        query states, each whole); None if none. Keys that match but for those numbers are added to
        ``other_numbers``."""
        best: dict[str, int] = {}
        variant: dict[str, bool] = {}  # the entry's best name adds a variant word the query lacks
        adds: dict[str, tuple[frozenset[str], Counter]] = {}  # what that name adds: words, numbers
        wrong_size: list[str] = []
        for key, names in self._names.items():
            allowed_extra = self._extra[key]
            scored = []
            for i, (n, compact) in enumerate(zip(names, self._compact[key])):
                if not (q <= (n | allowed_extra) and all(w in compact for w in qwords)):
                    continue
                if qnums is not None:
                    # "3.3" is not "3", "4" is not "4b": a version or size must be the name's own
                    fits = [nums for nums in self._numbers[key][i] if not qnums - nums]
                    if not fits:
                        if other_numbers is not None:
                            other_numbers.add(key)
                        continue
                    added = (frozenset(t for t in n - q - GENERIC_WORDS if t.isalpha() and len(t) > 1),
                             fits[0] - qnums)
                else:
                    added = (frozenset(), Counter())
                scored.append((len(n - q - GENERIC_WORDS), bool((n - q) & VARIANT_WORDS), i, added))
            if not scored:
                continue
            if size is not None and size not in self._sizes.get(key, ()) and not size <= self._open_sizes.get(key, 0):
                wrong_size.append(key)
                continue
            best[key], variant[key], _, adds[key] = min(scored, key=lambda s: s[:3])
        if not best:
            if wrong_size:
                offered = "; ".join(f"{self._display[k]}: {', '.join(f'{s:g}' for s in sorted(self._sizes[k]))} GB"
                                    for k in sorted(wrong_size, key=self._display.get)[:6])
                raise UnknownName(f"no {self._label()} entry matching {query!r} ships with {size:g} GB ({offered})",
                                  tuple(sorted(self._display[k] for k in wrong_size)))
            return None
        clean = [k for k, s in best.items() if s == 0]
        if len(clean) == 1:
            return clean[0]
        if len(clean) > 1:
            return self._one(query, set(clean))
        fewest = min(best.values())
        keys = {k for k, s in best.items() if s == fewest}
        if all(variant[k] for k in keys):
            names = sorted(self._display[k] for k in keys)
            raise UnknownName(f"unknown {self._label()} {query!r}: {', '.join(names)} "
                              f"{'is a different product' if len(names) == 1 else 'are different products'}; "
                              "name it in full if you mean it", tuple(names))
        if qnums is not None:
            # the shortest name wins only over names that add all it adds and more ("qwen 7b": Qwen2.5 7B
            # over Qwen2.5-Coder 7B); a name shorter by another version or size is not the more likely
            # meaning ("llama 8b": Llama 3 8B vs Llama 3.1 8B; "qwen3-coder": the 30B vs the 480B), so
            # those are listed with it
            def covers(a: str, b: str) -> bool:
                return adds[a][0] <= adds[b][0] and not adds[a][1] - adds[b][1]
            keys |= {k for k in best if not any(covers(w, k) for w in keys)}
        return self._one(query, keys)

    def _one(self, query: str, keys: set[str]) -> str:
        if len(keys) == 1:
            return next(iter(keys))
        names = sorted(self._display[k] for k in keys)
        shown = ", ".join(names[:8]) + (" …" if len(names) > 8 else "")
        hint = "be more specific"
        if self.section == "hardware" and len({tuple(_drop_decorations(tokens(n))) for n in names}) == 1:
            # the same card in several memory sizes ("Tesla M40" 12/24 GB, "RTX 4060 Ti" 8/16 GB)
            sizes = sorted({s for k in keys for s in self._sizes.get(k, ())})
            if sizes:
                hint = (f"name the memory size ({', '.join(f'{s:g}' for s in sizes)} GB), "
                        f"e.g. '{str(query).strip()} {sizes[-1]:g}GB'")
        raise UnknownName(f"{query!r} matches several {self._label()} entries: {shown}; {hint}", tuple(names))

    def nearest(self, query: str, n: int = 5) -> tuple[str, ...]:
        """Display names of the entries closest to ``query`` (for error messages).

        An entry scores the best of, over its names, 0.6 × difflib's ratio between the sorted tokens
        plus 0.4 × the token overlap, and 0.9 × the ratio between the normalised query and display
        name; the ``n`` best above 0.3 are returned, ties by name. difflib runs only on entries whose
        upper bound (its `quick_ratio` in place of `ratio`) could still reach the best ``n``.
        """
        qn = _Text(normalise(query))
        qset = set(tokens(query))
        qs = _Text(" ".join(sorted(qset)))
        qn_counts, qn_size = tuple(qn.counts.items()), qn.size
        qs_counts, qs_size = tuple(qs.counts.items()), qs.size
        qlen = max(len(qset), 1)
        # Best first over upper bounds of the score (difflib's quick_ratio ≥ ratio in place of ratio):
        # a coarse one per entry from its display name and, for its names together, the most of each
        # character any has, the shortest length and the query tokens any has over the query's size;
        # popped, a coarse bound is refined per name, a refined one scored exactly. It stops when no
        # bound left can reach the n-th score.
        heap: list[tuple[float, int, int, float]] = []  # (-bound, refined?, entry, display bound)
        for i, (display, variants, dn, most) in enumerate(self._near):
            theirs, size = dn.counts, qn_size + dn.size
            matches = 0
            for ch, k in qn_counts:
                m = theirs.get(ch, 0)
                matches += k if k < m else m
            shown = (2.0 * matches / size if size else 1.0) * 0.9
            theirs, size = most.counts, qs_size + most.size
            matches = 0
            for ch, k in qs_counts:
                m = theirs.get(ch, 0)
                matches += k if k < m else m
            bound = (2.0 * matches / size if size else 1.0) * 0.6 + len(qset & most.tokens) / qlen * 0.4
            if shown > bound:
                bound = shown
            if bound > 0.3:  # the exact score is at most the bound, and must exceed 0.3
                heap.append((-bound, 0, i, shown))
        heapify(heap)
        best: list[tuple[float, str, int]] = []  # (-score, name, entry order), sorted
        while heap:
            neg, refined, i, shown = heappop(heap)
            if len(best) >= n and -neg < -best[-1][0]:
                break  # neither this nor any entry left can reach the n-th score
            display, variants, dn, _ = self._near[i]
            if not refined:
                bound = shown
                for v in variants:
                    toks = v.tokens
                    theirs, size = v.text.counts, qs_size + v.text.size
                    matches = 0
                    for ch, k in qs_counts:
                        m = theirs.get(ch, 0)
                        matches += k if k < m else m
                    b = ((2.0 * matches / size if size else 1.0) * 0.6
                         + len(qset & toks) / max(len(qset | toks), 1) * 0.4)
                    if b > bound:
                        bound = b
                if bound > 0.3:
                    heappush(heap, (-bound, 1, i, shown))
                continue
            score = 0.0
            for v in variants:
                ratio = difflib.SequenceMatcher(None, qs.text, v.text.text).ratio()
                overlap = len(qset & v.tokens) / max(len(qset | v.tokens), 1)
                score = max(score, ratio * 0.6 + overlap * 0.4)
            score = max(score, difflib.SequenceMatcher(None, qn.text, dn.text).ratio() * 0.9)
            if score > 0.3:
                insort(best, (-score, display, i))
                del best[n:]
        return tuple(name for _, name, _ in best)

    def _explain_numbers(self, query: str, qnums: Counter, keys: set[str]) -> tuple[str, tuple[str, ...]]:
        """For a model name that matches entries but for its numbers ("gemma 4", "llama 3.3 8b"): those
        entries first among the nearest, and which numbers no entry has."""
        ranked = self.nearest(query, 10)
        names = sorted((self._display[k] for k in keys),
                       key=lambda n: (ranked.index(n) if n in ranked else len(ranked), n))
        near = tuple(names[:5])
        near += tuple(n for n in ranked if n not in near)[:max(0, 5 - len(near))]
        stated = ", ".join(qnums)  # as typed
        return (f"unknown {self._label()} {query!r}: no entry has its numbers ({stated}) as its own version "
                f"or size; nearest: {', '.join(near)}"), near

    def _explain_unknown(self, query: str) -> tuple[str, tuple[str, ...]]:
        near = self.nearest(query)
        return self._unknown_message(query, near), near

    def _unknown_message(self, query: str, near: tuple[str, ...] | None = None) -> str:
        if near is None:
            near = self.nearest(query)
        hint = f"; nearest: {', '.join(near)}" if near else ""
        return f"unknown {self._label()} {query!r}{hint}"

    def suggest(self, prefix: str, limit: int = 20) -> list[tuple[str, str]]:
        """Up to ``limit`` (key, display name) pairs for a type-ahead box, best first.

        The typed text is normalised and split into tokens as `tokens` does. First come entries
        with a name, alias or key that starts with it ("rtx 40" → "RTX 4090"); then those where
        each typed word starts one of a name's tokens, its letters and digits together as typed
        ("m2 ma" → "M2 Max", but "h1" not → "HGX B200"); then those with a name containing it;
        last, for text that normalises to nothing or is part of a vendor word ("nvid"), the names
        as given that contain it. Ties go by display name; empty text lists the first ``limit``
        entries by display name. The tables it scans are built once, on the first call.
        """
        if limit <= 0:
            return []
        text = str(prefix or "").strip().lower()
        table = self._typeahead
        if not text:
            return [(key, display) for display, key, *_ in table[:limit]]
        q = _tokens(text)
        if not q:
            return [(key, display) for display, key, _, _, names in table if text in names][:limit]
        spaced, compact = " ".join(q), "".join(q)
        nl_spaced, nl_compact = "\n" + spaced, "\n" + compact
        typed = [w for w in ("\n" + "".join(_tokens(w)) for w in words(text)) if w != "\n"]
        starts: list[tuple[str, str]] = []
        tiers: tuple[list[tuple[str, str]], ...] = ([], [], [])
        for display, key, forms, word_starts, names in table:
            if nl_spaced in forms or nl_compact in forms:
                starts.append((key, display))
                if len(starts) >= limit:
                    break  # nothing later can rank before these
            elif all(w in word_starts for w in typed):
                tiers[0].append((key, display))
            elif spaced in forms or compact in forms:
                tiers[1].append((key, display))
            elif text in names:
                tiers[2].append((key, display))
        return (starts + tiers[0] + tiers[1] + tiers[2])[:limit]

    def _label(self) -> str:
        return {"hardware": "hardware", "models": "model", "quants": "quantization",
                "kv_dtypes": "KV-cache dtype", "runtimes": "runtime"}.get(self.section, self.section)


class _Text:
    """A string with its character counts, for difflib's `quick_ratio` bound without difflib."""

    __slots__ = ("text", "counts", "size")

    def __init__(self, text: str):
        self.text = text
        self.size = len(text)
        self.counts: dict[str, int] = dict(Counter(text))

    def quick_ratio(self, other: _Text) -> float:
        """`difflib.SequenceMatcher(None, self.text, other.text).quick_ratio()`: ≥ its `ratio()`."""
        size = self.size + other.size
        if not size:
            return 1.0
        theirs = other.counts
        matches = 0
        for ch, k in self.counts.items():
            m = theirs.get(ch)
            if m:
                matches += k if k < m else m
        return 2.0 * matches / size


class _Variant:
    """One of an entry's distinct token sets: the set, and its tokens sorted and space-joined."""

    __slots__ = ("text", "tokens")

    def __init__(self, text: str, toks: frozenset[str]):
        self.text = _Text(text)
        self.tokens = toks


class _Most:
    """Over an entry's variants: each character's highest count, the shortest length, all tokens."""

    __slots__ = ("counts", "size", "tokens")

    def __init__(self, variants: list[_Variant]):
        counts: dict[str, int] = {}
        for v in variants:
            for ch, k in v.text.counts.items():
                if k > counts.get(ch, 0):
                    counts[ch] = k
        self.counts = counts
        self.size = min((v.text.size for v in variants), default=0)
        self.tokens = frozenset().union(*(v.tokens for v in variants))
