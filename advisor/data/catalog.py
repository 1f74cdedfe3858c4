"""Load the shipped catalog and the user's overlay into validated, frozen specs.

A bad entry never stops the load: it is reported as a `LoadIssue` naming the file, the entry
and the field, and skipped; the rest of the catalog loads. The user's data folder (see
`advisor.data.userdata`) is read after the shipped files, and an entry with the same ``key``
replaces the shipped one.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any, Iterable, Mapping

import yaml

from advisor.data import specs
from advisor.data.entries import EntryError, build_entry, check_entry
from advisor.data.importers import import_model, is_import_source, with_key
from advisor.data.prices import Quote, load_quotes
from advisor.data.eras import at_date
from advisor.data.errors import AdvisorError, UnknownName
from advisor.data.names import NameIndex
from advisor.data.names import tokens as names_tokens

try:  # the C loader is ~10x faster; fall back to pure Python where libyaml is missing
    _Loader: Any = yaml.CSafeLoader
except AttributeError:  # pragma: no cover - depends on the PyYAML build
    _Loader = yaml.SafeLoader

CATALOG_DIR = Path(__file__).resolve().parents[2] / "catalog"
#: the dated price quotes beside the YAML (a CSV: one row per quote)
PRICES_FILE = "prices.csv"
SECTIONS = tuple(specs.ENTRY_TYPES)
#: the entry `advisor --probe --save` writes to the user's catalog, and the names it answers to
THIS_MACHINE_KEY = "this-machine"
THIS_MACHINE_ALIASES = ("this machine", "local", "localhost", "my machine")
@dataclass(frozen=True)
class LoadIssue:
    """One problem found while loading: where it is and what is wrong."""

    file: str
    entry: str | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = self.file
        if self.entry:
            where += f": {self.entry}"
        if self.field:
            where += f".{self.field}"
        return f"{where}: {self.message}"


def _shipped_doc(path: Path, text: str) -> Any:
    """A file of the shipped catalog parsed, from the per-user cache when this exact text was parsed before
    (turning the YAML into Python objects is about a third of the app's start-up). Keyed by the text's
    hash, so an edited file is parsed again; an unreadable or unwritable cache is parsed around."""
    import hashlib
    import os
    import pickle

    from advisor.data.userdata import user_cache_dir

    folder = user_cache_dir()
    if folder is None or CATALOG_DIR.resolve() not in path.resolve().parents:
        # only the shipped files: a test's or a tool's own files would pile up in the cache
        return yaml.load(text, Loader=_Loader)
    stem = hashlib.sha1(str(path.resolve()).encode()).hexdigest()[:16]
    digest = hashlib.sha1(text.encode("utf-8")).hexdigest()
    cache = folder / "catalog" / f"{stem}-{digest}.pickle"
    try:
        with open(cache, "rb") as f:
            return pickle.load(f)
    except Exception:  # noqa: BLE001 - missing, truncated or foreign: parse the text instead
        pass
    doc = yaml.load(text, Loader=_Loader)
    try:
        cache.parent.mkdir(parents=True, exist_ok=True)
        for old in cache.parent.glob(f"{stem}-*.pickle"):   # this file's earlier versions
            old.unlink(missing_ok=True)
        tmp = cache.with_suffix(f".{os.getpid()}.tmp")
        with open(tmp, "wb") as f:
            pickle.dump(doc, f, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, cache)
    except OSError:
        pass
    return doc


def parse_file(path: Path, trusted: bool = True) -> tuple[dict[str, list[Any]], list[LoadIssue]]:
    """Parse one YAML file into specs per section, with the issues found. An untrusted file (the
    user's overlay) is bounded first: no alias bombs, no absurd nesting (`advisor.data.safe_load`)."""
    from advisor.data.safe_load import check_yaml

    out: dict[str, list[Any]] = {s: [] for s in SECTIONS}
    issues: list[LoadIssue] = []
    label = str(path)
    try:
        text = path.read_text(encoding="utf-8")
        if not trusted:
            check_yaml(text, label)
            doc = yaml.load(text, Loader=_Loader)
        else:
            doc = _shipped_doc(path, text)
    except (OSError, UnicodeDecodeError) as exc:
        return out, [LoadIssue(label, None, None, f"cannot be read: {exc}")]
    except AdvisorError as exc:
        return out, [LoadIssue(label, None, None, str(exc).removeprefix(f"{label}: "))]
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return out, [LoadIssue(label, None, None, f"is not valid YAML{where}: {problem}")]
    if doc is None:
        return out, []
    if not isinstance(doc, dict):
        return out, [LoadIssue(label, None, None, "must be a mapping with sections such as 'hardware:' or 'models:'")]
    for section, raw_entries in doc.items():
        if section not in specs.ENTRY_TYPES:
            issues.append(LoadIssue(label, None, None, f"unknown section {section!r} (expected one of {', '.join(SECTIONS)})"))
            continue
        if not isinstance(raw_entries, list):
            issues.append(LoadIssue(label, section, None, "must be a list of entries"))
            continue
        cls = specs.ENTRY_TYPES[section]
        for i, raw in enumerate(raw_entries):
            name = f"{section}[{i}]"
            if isinstance(raw, dict) and raw.get("key"):
                name = str(raw["key"])
            if not isinstance(raw, dict):
                issues.append(LoadIssue(label, name, None, "must be a mapping of fields"))
                continue
            try:
                entry = build_entry(cls, raw, origin=label)
                check_entry(entry)
            except EntryError as exc:
                issues.append(LoadIssue(label, name, exc.field, str(exc)))
                continue
            out[section].append(entry)
    return out, issues


def yaml_files(folder: Path) -> list[Path]:
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.rglob("*.yaml") if p.is_file())


@lru_cache(maxsize=1)
def shipped_hardware() -> Mapping[str, specs.Hardware]:
    """catalog/hardware as shipped, by key (for callers that hold no catalog: a vendor's published
    maximum names its part, a deployment plan its GPUs by key)."""
    out: dict[str, specs.Hardware] = {}
    for path in yaml_files(CATALOG_DIR / "hardware"):
        parsed, _ = parse_file(path)
        out.update({h.key: h for h in parsed.get("hardware", [])})
    return out


@dataclass(frozen=True, eq=False)  # compared and hashed by identity: caches key on the object
class Catalog:
    """Everything the core knows, keyed by ``key``, plus what went wrong while loading."""

    hardware: Mapping[str, specs.Hardware]
    models: Mapping[str, specs.Model]
    quants: Mapping[str, specs.Quant]
    kv_dtypes: Mapping[str, specs.KvDtype]
    runtimes: Mapping[str, specs.Runtime]
    profiles: Mapping[str, specs.Profile]
    issues: tuple[LoadIssue, ...] = ()
    #: published checkpoints per model and format (launch lines); empty in a hand-built catalog
    checkpoints: Mapping[str, specs.Checkpoint] = field(default_factory=dict)
    #: keys whose shipped entry was replaced by a user entry, per section
    overridden: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    #: dated price quotes per hardware key (catalog/prices.csv; `advisor.plan.pricing` reads them)
    quotes: Mapping[str, tuple[Quote, ...]] = field(default_factory=dict)
    #: servers and racks sold as one unit (catalog/systems.yaml): their power and fabric
    systems: Mapping[str, specs.System] = field(default_factory=dict)
    #: how far past `serve`'s band edges servers were measured, by load and metric
    #: (catalog/serving_bands.yaml, `advisor.model.serving.widen_band`)
    serving_bands: Mapping[str, specs.ServingBand] = field(default_factory=dict)

    def systems_of(self, hardware_key: str) -> tuple[specs.System, ...]:
        """The systems built of this hardware, the smallest first."""
        return tuple(sorted((s for s in self.systems.values() if s.hardware == hardware_key),
                            key=lambda s: (s.gpus, s.key)))

    def section(self, name: str) -> Mapping[str, Any]:
        if name not in SECTIONS:
            raise AdvisorError(f"unknown catalog section {name!r}; choose one of {', '.join(SECTIONS)}")
        return getattr(self, name)

    @cached_property
    def _indexes(self) -> dict[str, NameIndex]:
        return {}

    def index(self, section: str) -> NameIndex:
        idx = self._indexes.get(section)
        if idx is None:
            idx = NameIndex(section, self.section(section).values())
            self._indexes[section] = idx
        return idx

    def resolve(self, section: str, name: str) -> Any:
        """The entry that ``name`` designates; `AdvisorError` listing candidates otherwise."""
        return self.section(section)[self.index(section).resolve(name)]

    def hardware_named(self, name: str, memory_gib: float | None = None) -> specs.Hardware:
        """The hardware ``name`` designates, in the memory size the name states ("M3 Max 64GB") or
        ``memory_gib`` (--memory-gb), else its default size; its ``assumed`` notes say what the name
        left open (the size of a chip that ships in several, the GPU-core bin of an Apple chip)."""
        try:
            key, how, stated = self.index("hardware").match_sized(name)
        except UnknownName:
            if " ".join(str(name).lower().split()) in THIS_MACHINE_ALIASES:
                raise UnknownName(f"{name!r} is not measured yet: run 'advisor --probe --save' first (it measures "
                                  "this computer and saves it to your catalog as 'this machine')") from None
            raise
        hw = self.hardware[key]
        if how == "exact" and stated is not None and stated not in memory_options(hw):
            stated = None  # a size inside an exact alias that is not this memory ("NVIDIA GH200 480GB": CPU + GPU)
        if memory_gib is not None and stated is not None and memory_gib != stated:
            raise AdvisorError(f"{name!r} says {stated:g} GB but --memory-gb says {memory_gib:g}")
        size = memory_gib if memory_gib is not None else stated
        assumed = []
        bins = [h for h in self.hardware.values() if h.key != key and h.kind == "apple" == hw.kind
                and _chip(h.name) == _chip(hw.name)]
        if bins and "core" not in names_tokens(name):
            assumed.append(f"assumed the {hw.name}; the {_chip(hw.name)} also comes as "
                           f"{', '.join(h.name for h in bins)} (name the GPU cores to choose)")
        if not bins and hw.kind != "apple":
            others = self._also_named(name, key)
            if others:
                assumed.append(f"assumed the {hw.name}; {name.strip()!r} also names the {', '.join(others)} "
                               "(name one to choose)")
        if size is None and len(memory_options(hw)) > 1:
            assumed.append(memory_assumption(hw))
        if size is not None:
            hw = with_memory(hw, size)
        return dataclasses.replace(hw, assumed=tuple(assumed)) if assumed else hw

    def _also_named(self, name: str, key: str) -> list[str]:
        """Other models of the same product that ``name`` names too: entries whose own name holds
        every token of it and adds only a memory size, a form factor or a brand ("A100" → the 40 GB
        and PCIe A100s beside the 80 GB SXM4 the alias picks; "RTX 4090" is not the 4090 D)."""
        typed = [t for t in names_tokens(name) if t != "gb"]
        if not typed:
            return []
        out = []
        for h in self.hardware.values():
            if h.key == key or h.variant_of or h.key == THIS_MACHINE_KEY:
                continue
            own = names_tokens(h.name)
            extra = [t for t in own if t not in typed]
            if all(t in own for t in typed) and all(t.isdigit() or t in VARIANT_WORDS for t in extra):
                out.append(h.name)
        return out

    def with_hardware(self, *entries: specs.Hardware) -> "Catalog":
        """A copy of this catalog with these hardware entries in place of those with their keys (a
        chosen memory size, for sweeps that read the catalog's tables)."""
        return dataclasses.replace(self, hardware={**self.hardware, **{h.key: h for h in entries}})

    def model_named(self, name: str) -> specs.Model:
        """The model ``name`` designates: a catalog name, or something to import (``hf:org/name``, a
        config.json, a folder, a .gguf file: see `advisor.data.importers`), imported once per catalog
        and added to it (with a GGUF file's own weight mix as a format, see `imported_quant`)."""
        if is_import_source(name):
            return self.add_imported(self._import(name)).model
        return self.resolve("models", name)

    @cached_property
    def _imports(self) -> dict[str, Any]:
        return {}

    def _import(self, source: str) -> Any:
        text = str(source).strip()
        key = text
        if not text.startswith("hf:"):
            p = Path(text).expanduser()
            try:
                st = p.stat()
                key = f"{p.resolve()}|{st.st_mtime_ns}|{st.st_size}"
            except OSError:
                pass
        hit = self._imports.get(key)
        if hit is None:
            hit = import_model(text)
            self._imports[key] = hit
        return hit

    def add_imported(self, imported: Any) -> Any:
        """Add an `ImportedModel` to this catalog (in place, before sweeps use it: the CLI's hook) and
        return it, re-keyed ``imported-…`` if its key is a different catalog model's."""
        current = self.models.get(imported.model.key)
        if current is not None and current != imported.model:
            alt = f"imported-{imported.model.key}"
            name = f"{imported.model.name} (imported)"
            if self.models.get(alt) not in (None, dataclasses.replace(imported.model, key=alt, name=name)):
                alt = f"imported-{abs(hash(imported.source)) % 10**6}-{imported.model.key}"
                name = f"{imported.model.name} (imported from {imported.source})"
            imported = with_key(imported, alt, name)
        self.models[imported.model.key] = imported.model  # type: ignore[index]
        if imported.quant is not None:
            self.quants[imported.quant.key] = imported.quant  # type: ignore[index]
            self._indexes.pop("quants", None)
            self._imported_quants[imported.model.key] = imported.quant.key
        elif imported.weight_format in self.quants and self.quants[imported.weight_format].kind != "float":
            # a quantized checkpoint (FP8, AWQ, MXFP4 …): its own format is the default
            self._imported_quants[imported.model.key] = imported.weight_format
        self._indexes.pop("models", None)
        return imported

    @cached_property
    def _imported_quants(self) -> dict[str, str]:
        return {}

    def imported_quant(self, model: specs.Model) -> specs.Quant | None:
        """The weight format of an imported GGUF file (its own mix), for ``model``; None otherwise."""
        key = self._imported_quants.get(model.key)
        return self.quants.get(key) if key else None

    def is_file_mix(self, quant: specs.Quant) -> bool:
        """Whether ``quant`` is an imported GGUF file's own mix (it describes that file only)."""
        return quant.key in self._imported_quants.values()

    def quant_named(self, name: str) -> specs.Quant:
        return self.resolve("quants", name)

    def kv_dtype_named(self, name: str) -> specs.KvDtype:
        return self.resolve("kv_dtypes", name)

    def runtime_named(self, name: str) -> specs.Runtime:
        """A runtime by name; ``name@DATE`` (llama.cpp@2024-06) is that engine as of a build date,
        between its calibrated eras (`advisor.data.eras`)."""
        base, at, when = name.partition("@")
        if not at:
            return self.resolve("runtimes", name)
        return at_date(self.runtimes.values(), self.resolve("runtimes", base), when)


#: how the command line asks for another memory size; the app passes its own words to `memory_assumption`
MEMORY_SIZE_HINT = "pass --memory-gb or put the size in the name"


#: Words that tell models of one product apart without making another product: a memory size
#: ("40 GB"), a form factor, the brand printed before it
VARIANT_WORDS = frozenset({"gb", "pcie", "sxm", "oam", "tesla", "radeon", "instinct", "geforce", "arc", "nvidia",
                           "amd", "intel"})


def memory_assumption(hw: specs.Hardware, hint: str = MEMORY_SIZE_HINT) -> str:
    """The note for a name that left the memory size of ``hw`` open (its default assumed), ending
    in ``hint``: how the caller's user chooses another size; empty when it ships in one size only."""
    if len(memory_options(hw)) <= 1:
        return ""
    others = ", ".join(f"{m:g}" for m in memory_options(hw) if m != hw.memory_gib)
    return f"assumed {hw.memory_gib:g} GB; the {hw.name} also ships with {others} GB ({hint})"


def memory_options(hw: specs.Hardware) -> tuple[float, ...]:
    """The memory sizes ``hw`` ships in, GiB, ascending (its ``memory_gib`` among them)."""
    return tuple(sorted({hw.memory_gib, *hw.memory_options_gib}))


def offers_memory(hw: specs.Hardware, memory_gib: float) -> bool:
    """Whether ``hw`` ships with ``memory_gib``: one of its listed sizes, or, for a unified-memory
    entry whose sizes are not listed (no source found), any size up to its largest."""
    if memory_gib in memory_options(hw):
        return True
    return bool(hw.unified_memory and not hw.memory_options_gib and 0 < memory_gib <= hw.memory_gib)


def hardware_sized(cat: "Catalog", key: str, memory_gib: float | None = None,
                   size_hint: str = MEMORY_SIZE_HINT) -> specs.Hardware:
    """The catalog entry ``key`` in ``memory_gib`` (`AdvisorError` listing the sizes it ships in), or,
    with none, in its default size carrying the note that it was assumed, which ends in ``size_hint``
    (how the caller's user picks another: the command line's flag, the app's combo)."""
    hw = cat.hardware[key]
    if memory_gib is not None:
        return with_memory(hw, memory_gib)
    note = memory_assumption(hw, size_hint)
    return dataclasses.replace(hw, assumed=(note,)) if note else hw


def with_memory(hw: specs.Hardware, memory_gib: float) -> specs.Hardware:
    """``hw`` in one of the memory sizes it ships in; `AdvisorError` listing them for any other.

    Another size than the entry's own is named with it ("M3 Max (40-core GPU) 64GB") and drops the
    GPU wired limit stated for the entry's own size (Apple: the default rule then applies, which
    reproduces every per-size measurement in catalog/hardware/apple.yaml's header for macOS <= 15:
    16 GB 10.67, 24 GB 16, 32 GB 21.33, 64 GB 48, 128 GB 96 GiB). The price keeps the size it was
    quoted for (``Price.memory_gib``), so it prices only that configuration (plan/recommend.py).
    Bandwidth and compute stay: the sizes of one bin share them (binned chips with other
    bandwidths are separate entries, e.g. M3 Max 30-core 300 GB/s vs 40-core 400 GB/s).
    """
    offered = memory_options(hw)
    if isinstance(memory_gib, bool) or not isinstance(memory_gib, (int, float)) or not offers_memory(hw, memory_gib):
        listed = ", ".join(f"{m:g}" for m in offered)
        raise AdvisorError(f"{hw.name} ships with {listed} GB, not {memory_gib:g} GB" if isinstance(memory_gib, (int, float))
                           else f"memory size must be a number of GB, got {memory_gib!r}")
    if memory_gib == hw.memory_gib:
        return hw
    # the name says the size, so that every table and note shows which configuration this is
    price = hw.price and dataclasses.replace(hw.price, memory_gib=hw.price.memory_gib or hw.memory_gib)
    return dataclasses.replace(hw, name=f"{hw.name} {memory_gib:g}GB", memory_gib=float(memory_gib),
                               gpu_wired_limit_gb=None, price=price)


def with_threads(hw: specs.Hardware, threads: int) -> specs.Hardware:
    """A CPU running inference on ``threads`` threads (llama.cpp ``-t``); `AdvisorError` for other hardware.

    Compute scales with the cores in use (the vector units are per core; a second hardware thread
    on a core adds no FMA units, so threads beyond the cores count as the cores). Bandwidth is what
    that many cores can pull: at most threads × the one-core read bandwidth (``core_bandwidth_gb_s``,
    which the probe measures), never more than the whole memory system. An entry without the
    one-core figure keeps its bandwidth, and the returned entry says so in ``assumed``."""
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 1 or threads > 4096:
        raise AdvisorError(f"--threads must be a whole number from 1 to 4096, got {threads!r}")
    if hw.kind != "cpu":
        raise AdvisorError(f"--threads sets the CPU threads of CPU inference; {hw.name} is not a CPU entry")
    if not hw.cpu_cores:
        raise AdvisorError(f"{hw.name} does not state its core count (cpu_cores), so --threads cannot scale it")
    used = min(threads, hw.cpu_cores)
    share = used / hw.cpu_cores
    assumed = list(hw.assumed)
    if threads > hw.cpu_cores:
        assumed.append(f"{threads} threads on {hw.cpu_cores} cores: counted as {hw.cpu_cores} (a core's second "
                       "thread adds no vector units)")
    bandwidth = hw.bandwidth_gb_s
    if hw.core_bandwidth_gb_s:
        bandwidth = min(bandwidth, used * hw.core_bandwidth_gb_s)
    elif share < 1:
        assumed.append(f"{hw.name} states no one-core bandwidth: {threads} threads assumed to reach all of "
                       f"{hw.bandwidth_gb_s:g} GB/s")
    scaled = {f: getattr(hw, f) * share for f in ("fp32_tflops", "fp16_dense_tflops", "bf16_dense_tflops",
                                                   "fp8_dense_tflops", "int8_dense_tops", "fp4_dense_tflops")
              if getattr(hw, f)}
    if share == 1 and bandwidth == hw.bandwidth_gb_s:
        return dataclasses.replace(hw, assumed=tuple(assumed), threads=threads)
    if hw.bandwidth_best_gb_s:   # the best reading moves with the typical one
        scaled["bandwidth_best_gb_s"] = hw.bandwidth_best_gb_s * bandwidth / hw.bandwidth_gb_s
    return dataclasses.replace(hw, name=f"{hw.name}, {threads} threads", bandwidth_gb_s=bandwidth,
                               assumed=tuple(assumed), threads=threads, **scaled)


def _chip(name: str) -> str:
    """An Apple entry's chip without its bin: "M3 Max (40-core GPU)" → "M3 Max"."""
    return name.split(" (")[0]


def load_catalog(shipped: Path | None = CATALOG_DIR, user: Path | None = None,
                 extra_files: Iterable[Path] = ()) -> Catalog:
    """Load the shipped catalog, then overlay the user's folder (``None``: no overlay)."""
    merged: dict[str, dict[str, Any]] = {s: {} for s in SECTIONS}
    issues: list[LoadIssue] = []
    overridden: dict[str, list[str]] = {s: [] for s in SECTIONS}

    def add(paths: Iterable[Path], is_user: bool) -> None:
        seen_here: dict[str, set[str]] = {s: set() for s in SECTIONS}
        for path in paths:
            parsed, found = parse_file(path, trusted=not is_user)
            issues.extend(found)
            for section, entries in parsed.items():
                for entry in entries:
                    if entry.key in seen_here[section]:
                        issues.append(LoadIssue(str(path), entry.key, "key",
                                                f"duplicate key; the first {section} entry with it is kept"))
                        continue
                    seen_here[section].add(entry.key)
                    if is_user and entry.key in merged[section]:
                        overridden[section].append(entry.key)
                    merged[section][entry.key] = entry

    if shipped is not None:
        add(yaml_files(shipped), is_user=False)
    if user is not None:
        add(yaml_files(user), is_user=True)
    if extra_files:
        add(list(extra_files), is_user=True)
    for key, system in list(merged["systems"].items()):
        if system.hardware not in merged["hardware"]:
            issues.append(LoadIssue(system.origin, key, "hardware",
                                    f"unknown hardware {system.hardware!r} (a hardware entry's key)"))
            del merged["systems"][key]
    quotes: dict[str, tuple[Quote, ...]] = {}
    if shipped is not None and (shipped / PRICES_FILE).exists():
        quotes, found = load_quotes(shipped / PRICES_FILE, merged["hardware"])
        issues.extend(LoadIssue(*x) for x in found)
    return Catalog(
        **{s: dict(sorted(merged[s].items())) for s in SECTIONS},
        issues=tuple(issues),
        overridden={s: tuple(v) for s, v in overridden.items() if v},
        quotes=quotes,
    )


def user_catalog() -> Catalog:
    """The shipped catalog with the user's overlay, loaded afresh (callers keep what they load:
    the CLI one per command, the app one per session, reloaded after the overlay changes)."""
    from advisor.data.userdata import user_data_dir

    return load_catalog(CATALOG_DIR, user_data_dir())
