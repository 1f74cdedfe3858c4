"""The local machine as the catalog sees it: probe results matched to catalog entries, and the
"this machine" entry that `advisor --probe --save` writes to the user's catalog."""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path

from advisor.data.catalog import THIS_MACHINE_ALIASES, THIS_MACHINE_KEY, Catalog
from advisor.data.entries import EntryError, build_entry, check_entry
from advisor.data.errors import AdvisorError, UnknownName
from advisor.data.specs import Hardware
from advisor.data.userdata import save_entries

THIS_MACHINE_FILE = "this-machine.yaml"
#: a probed figure further than this from the catalog's is shown next to it
DIFFERENCE_SHOWN = 0.05
#: NVML compute capability → architecture family
CC_FAMILY = {"6": "nvidia-pascal", "7.0": "nvidia-volta", "7.2": "nvidia-volta", "7.5": "nvidia-turing",
             "8.0": "nvidia-ampere", "8.6": "nvidia-ampere", "8.7": "nvidia-ampere", "8.9": "nvidia-ada",
             "9.0": "nvidia-hopper", "10": "nvidia-blackwell", "12": "nvidia-blackwell"}


@dataclass
class Match:
    device: str                      # what the probe saw
    hardware: Hardware | None        # the catalog entry, if any
    confidence: str                  # exact | likely | partial | none
    differences: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {"device": self.device, "catalog_key": self.hardware.key if self.hardware else None,
                "catalog_name": self.hardware.name if self.hardware else None, "confidence": self.confidence,
                "differences": self.differences}


def _compare(label: str, probed: float | None, catalog: float | None, unit: str, out: list[str]) -> bool:
    """Record a difference; True when the figures agree within DIFFERENCE_SHOWN."""
    if not probed or not catalog:
        return True
    if abs(probed / catalog - 1) <= DIFFERENCE_SHOWN:
        return True
    out.append(f"{label}: probed {probed:,.1f} {unit}, catalog {catalog:,.1f} {unit}")
    return False


def _lookup(cat: Catalog, name: str, memory_gb: float | None = None) -> tuple[Hardware | None, str]:
    """The catalog entry a device name designates; where the name is shared by several sizes (the
    driver prints "Tesla M40" for the 12 GB card), the one whose memory is what the driver reported."""
    try:
        key, how = cat.index("hardware").match(name)
    except UnknownName as exc:
        sized = [h for h in cat.hardware.values() if h.name in getattr(exc, "candidates", ())
                 and memory_gb and abs(h.memory_bytes / 1e9 / memory_gb - 1) <= DIFFERENCE_SHOWN]
        return (sized[0], "likely") if len(sized) == 1 else (None, "none")
    return cat.hardware[key], how


def match_devices(cat: Catalog, result) -> list[Match]:
    """Match every accelerator the probe found to the catalog, and say how sure the match is."""
    matches: list[Match] = []
    for gpu in result.nvidia.gpus:
        hw, how = _lookup(cat, gpu.name, gpu.memory_total_gb)
        diffs: list[str] = []
        agree = True
        if hw:
            agree &= _compare("memory", gpu.memory_total_gb, hw.memory_bytes / 1e9, "GB", diffs)
            agree &= _compare("bandwidth", gpu.bandwidth_gb_s, hw.bandwidth_gb_s, "GB/s", diffs)
        conf = "none" if not hw else ("exact" if how == "exact" and agree else "likely" if agree else "partial")
        matches.append(Match(f"GPU {gpu.index}: {gpu.name}", hw, conf, diffs))
    if result.apple and result.apple.chip.startswith("Apple"):
        a = result.apple
        query = f"{a.chip} {a.gpu_cores}-core GPU" if a.gpu_cores else a.chip
        hw, how = _lookup(cat, query)
        diffs: list[str] = []
        if hw and a.memory_gb and a.memory_gb > hw.memory_bytes / 1e9 * (1 + DIFFERENCE_SHOWN):
            diffs.append(f"memory: probed {a.memory_gb:.1f} GB, more than the catalog's largest option")
        conf = "none" if not hw else ("exact" if how == "exact" and not diffs else "likely")
        matches.append(Match(query, hw, conf, diffs))
    if result.amd:
        for gpu in result.amd.gpus:
            hw, how = _lookup(cat, gpu.name, gpu.memory_total_gb)
            diffs = []
            agree = _compare("memory", gpu.memory_total_gb, hw.memory_bytes / 1e9 if hw else None, "GB", diffs)
            conf = "none" if not hw else ("exact" if how == "exact" and agree else "likely" if agree else "partial")
            matches.append(Match(f"GPU {gpu.index}: {gpu.name}", hw, conf, diffs))
    return matches


def this_machine_entry(cat: Catalog, result, matches: list[Match]) -> dict:
    """The catalog entry (as YAML-ready fields) that describes this machine."""
    when = result.when
    base = next((m.hardware for m in matches if m.hardware), None)
    notes = []
    if base is not None:
        internal = {f.name for f in dataclasses.fields(base) if f.metadata.get("kind") == "internal"}
        entry = {k: list(v) if isinstance(v, tuple) else v for k, v in dataclasses.asdict(base).items()
                 if k not in internal and v not in (None, "", (), [])}
        entry.pop("price", None)
        entry["aliases"] = list(THIS_MACHINE_ALIASES)
        entry["name"] = f"This machine ({base.name})"
        entry["source"] = f"advisor --probe on {when}; spec figures from the catalog entry {base.key} ({base.source})"
        if result.nvidia.gpus:
            gpu = result.nvidia.gpus[0]
            if gpu.memory_total_gb:
                entry["memory_gib"] = round(gpu.memory_total_gb * 1e9 / 2**30, 3)
            n = len(result.nvidia.gpus)
            if n > 1:
                notes.append(f"{n} NVIDIA GPUs found (use --gpus {n})")
        if result.apple and result.apple.memory_gb:
            entry["memory_gib"] = round(result.apple.memory_gb * 1e9 / 2**30, 3)
            wired = result.apple.wired_limit_mb
            entry.pop("gpu_wired_limit_gb", None)
            if wired:
                entry["gpu_wired_limit_gb"] = round(wired / 1024, 3)
            notes.append("GPU wired limit: " + (f"iogpu.wired_limit_mb = {wired}" if wired else "the macOS default"))
        for b in result.benchmarks:
            if b.copy_gb_s:
                notes.append(f"measured {b.framework} copy {b.copy_gb_s:,.0f} GB/s, {b.dtype} matmul "
                             f"{b.matmul_tflops or 0:,.1f} TFLOPS on {b.device}")
    elif result.nvidia.gpus:
        gpu = result.nvidia.gpus[0]
        if not (gpu.memory_total_gb and gpu.bandwidth_gb_s):
            raise AdvisorError(f"{gpu.name} is not in the catalog and NVML did not report its memory and bandwidth; "
                               "add it to your catalog by hand (see catalog/README.md)")
        cc = gpu.compute_capability
        entry = {
            "key": THIS_MACHINE_KEY, "vendor": "NVIDIA", "name": f"This machine ({gpu.name})",
            "aliases": list(THIS_MACHINE_ALIASES), "kind": "consumer" if "GeForce" in gpu.name else "workstation",
            "family": CC_FAMILY.get(cc, CC_FAMILY.get(cc.split(".")[0], "nvidia-unknown")),
            "memory_gib": round(gpu.memory_total_gb * 1e9 / 2**30, 3), "bandwidth_gb_s": round(gpu.bandwidth_gb_s, 1),
            "source": f"advisor --probe on {when}: NVML (memory, bus width × memory clock)",
        }
        bench = next((b for b in result.benchmarks if b.matmul_tflops), None)
        if bench:
            entry["fp16_dense_tflops"] = round(bench.matmul_tflops, 2)
            notes.append(f"fp16_dense_tflops is the measured {bench.dtype} matmul rate, not the datasheet peak")
        else:
            notes.append("no compute peak: prefill cannot be predicted until one is added")
    else:
        c = result.cpu
        if not c.bandwidth_gb_s or not c.fp32_gflops or not c.ram_gb:
            raise AdvisorError("no accelerator found, and the CPU was not measured: run 'advisor --probe --save' "
                               "without --quick")
        entry = {
            "key": THIS_MACHINE_KEY, "vendor": "CPU", "name": f"This machine ({c.model})", "aliases": list(THIS_MACHINE_ALIASES),
            "kind": "cpu", "family": f"cpu-{c.architecture or 'unknown'}".lower(),
            "memory_gib": round(c.ram_gb * 1e9 / 2**30, 3), "bandwidth_gb_s": round(c.bandwidth_gb_s, 2),
            "fp32_tflops": round(c.fp32_gflops / 1000, 4), "unified_memory": True, "rates_measured": True,
            # quantized weights run on int8 dot products: the same vector width does more of them
            **({"int8_dense_tops": round(c.fp32_gflops / 1000 * c.int8_per_fp32, 4)} if c.int8_per_fp32 > 1 else {}),
            **({"bf16_dense_tflops": round(c.fp32_gflops / 1000 * c.bf16_per_fp32, 4)} if c.bf16_per_fp32 > 1 else {}),
            **({"cpu_cores": c.cores_physical or c.cores_logical} if (c.cores_physical or c.cores_logical) else {}),
            **({"core_bandwidth_gb_s": round(c.read_1t_gb_s, 2)} if c.read_1t_gb_s else {}),
            **({"bandwidth_best_gb_s": round(c.read_best_gb_s, 2)}
               if c.read_best_gb_s and c.bandwidth_gb_s and c.read_best_gb_s > c.bandwidth_gb_s else {}),
            "source": f"measured by advisor --probe on {when} (numpy: {c.threads_used}-thread "
                      f"{'read' if c.read_gb_s else 'copy/add'} bandwidth, float32 matrix product; medians of repeats"
                      + ("; the best read pass as bandwidth_best_gb_s" if c.read_best_gb_s else "") + ")",
        }
        notes.append("CPU inference: bandwidth and FLOP/s are measured, not datasheet peaks")
        if c.int8_per_fp32 > 1:
            notes.append(f"int8_dense_tops = the measured float32 rate × {c.int8_per_fp32} "
                         f"({', '.join(c.features)}: int8 multiply-adds per float32 one of the same width)")
        if c.bf16_per_fp32 > 1:
            notes.append("bf16_dense_tflops = the measured float32 rate × 2 (BF16 dot products: two per float32 lane)")
    entry["key"] = THIS_MACHINE_KEY
    entry["notes"] = "; ".join(notes)
    try:  # validate exactly as the loader will
        check_entry(build_entry(Hardware, entry))
    except EntryError as exc:
        raise AdvisorError(f"the probed machine does not make a valid catalog entry ({exc.field}: {exc})") from None
    return entry


def save_this_machine(cat: Catalog, result, matches: list[Match], folder: Path | None = None) -> Path:

    entry = this_machine_entry(cat, result, matches)
    path = save_entries("hardware", [entry], THIS_MACHINE_FILE, folder)
    return path
