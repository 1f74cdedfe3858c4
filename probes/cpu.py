"""The CPU and main memory: what they are, and what they measure (numpy micro-benchmarks).

Bandwidth is measured with several threads working on disjoint slices of large arrays (numpy
releases the GIL for reductions, copies and additions, and one thread alone cannot saturate a
modern memory system). The figure inference uses is the read bandwidth: LLM decode streams the
weights and KV cache and writes almost nothing, and a copy or an addition also pays for the writes
(and on most CPUs for reading each written line first). Copy and add follow the STREAM convention
(bytes read plus bytes written) and are kept for comparison with STREAM results. Compute is a
float32 matrix product through numpy's BLAS, which is multi-threaded. Each figure is the median of
several repeats, so that one lucky or unlucky pass does not set it; the read pass also keeps its
best run over a few seconds (STREAM's own figure), the most the memory system gave: predictions use
the median, and their band's top and ceiling reach the best.
"""

from __future__ import annotations

import os
import platform
import statistics
import re
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

#: Bytes per array for the bandwidth test: far beyond any CPU cache, small enough for 4 GB machines.
BANDWIDTH_ARRAY_BYTES = 256 * 2**20
MATMUL_N = 2048
#: Repeats per figure (the median is kept); the bandwidth passes take ~10 ms each on a desktop.
REPEATS = 7
#: Seconds over which the read pass is repeated for its best run. STREAM reports each kernel's best
#: time of its runs ("the *best* time for each kernel (excluding the first iteration) will be used",
#: stream.c 5.10): what the memory system gives at best. On a shared or virtual machine that moves
#: between moments (a C read loop read 31 GB/s and 43-51 GB/s seconds apart on the 2-core VM this was
#: written on), so the best run is sought over a few seconds; the median stays the typical figure.
BEST_READ_SPAN_S = 2.0


@dataclass
class CpuInfo:
    model: str = ""
    architecture: str = ""
    cores_logical: int = 0
    cores_physical: int | None = None
    ram_gb: float | None = None            # total RAM, GB (1e9 bytes)
    copy_gb_s: float | None = None         # measured copy bandwidth (read + write)
    add_gb_s: float | None = None          # measured a = b + c bandwidth (2 reads + 1 write)
    read_gb_s: float | None = None         # measured read-only bandwidth, all threads (a streaming reduction)
    read_1t_gb_s: float | None = None      # the same with one thread: what one core can pull from memory
    read_best_gb_s: float | None = None    # the best read pass over BEST_READ_SPAN_S (STREAM's figure)
    fp32_gflops: float | None = None       # measured float32 matrix product
    fp64_gflops: float | None = None
    #: instruction-set features that set the int8 dot-product rate (x86: avx2, avx512_vnni, avx_vnni;
    #: Arm: asimddp, i8mm), read from /proc/cpuinfo or sysctl
    features: tuple[str, ...] = ()
    threads_used: int = 0
    notes: list[str] = field(default_factory=list)

    @property
    def int8_per_fp32(self) -> int:
        """How many int8 multiply-adds one vector instruction does per float32 multiply-add of the same
        width: 4 with dot-product instructions (x86 VNNI's VPDPBUSD and Arm's SDOT sum four byte
        products into each 32-bit lane), 2 with AVX2's byte multiply-adds (VPMADDUBSW pairs), else 1.
        llama.cpp's quantized CPU kernels are built on these (ggml-cpu's quants)."""
        f = set(self.features)
        if f & {"avx512_vnni", "avx_vnni", "asimddp", "i8mm", "dotprod"}:
            return 4
        if "avx2" in f:
            return 2
        return 1

    @property
    def bf16_per_fp32(self) -> int:
        """BF16 dot-product instructions (AVX512_BF16's VDPBF16PS, Arm's BFDOT) do two BF16 multiply-adds
        per float32 lane: llama.cpp's BF16 CPU kernels use them (ggml-cpu's vec_dot_bf16)."""
        return 2 if set(self.features) & {"avx512_bf16", "bf16"} else 1

    @property
    def bandwidth_gb_s(self) -> float | None:
        """The bandwidth inference can use: the read figure where measured (older results: the best of
        copy and add)."""
        if self.read_gb_s:
            return self.read_gb_s
        vals = [v for v in (self.copy_gb_s, self.add_gb_s) if v]
        return max(vals) if vals else None


def _read(path: str) -> str:
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            return fh.read()
    except OSError:
        return ""


def _sysctl(name: str) -> str:
    try:
        out = subprocess.run(["sysctl", "-n", name], capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.SubprocessError):
        return ""
    return out.stdout.strip() if out.returncode == 0 else ""


def describe() -> CpuInfo:
    """Model name, cores and RAM, from /proc (Linux), sysctl (macOS) or the Windows API."""
    info = CpuInfo(architecture=platform.machine(), cores_logical=os.cpu_count() or 0)
    if sys.platform.startswith("linux"):
        cpuinfo = _read("/proc/cpuinfo")
        m = re.search(r"^model name\s*:\s*(.+)$", cpuinfo, re.M) or re.search(r"^Hardware\s*:\s*(.+)$", cpuinfo, re.M)
        info.model = m.group(1).strip() if m else ""
        flags = re.search(r"^(?:flags|Features)\s*:\s*(.+)$", cpuinfo, re.M)
        if flags:
            wanted = {"avx2", "avx512_vnni", "avx_vnni", "avx512_bf16", "asimddp", "i8mm", "bf16"}
            info.features = tuple(sorted(set(flags.group(1).split()) & wanted))
        cores = {(p, c) for p, c in re.findall(r"physical id\s*:\s*(\d+).*?core id\s*:\s*(\d+)", cpuinfo, re.S)}
        info.cores_physical = len(cores) or None
        mem = re.search(r"^MemTotal:\s*(\d+)\s*kB", _read("/proc/meminfo"), re.M)
        if mem:
            info.ram_gb = int(mem.group(1)) * 1024 / 1e9
    elif sys.platform == "darwin":
        info.model = _sysctl("machdep.cpu.brand_string")
        if _sysctl("hw.optional.arm.FEAT_DotProd") == "1":
            info.features = ("asimddp",) + (("i8mm",) if _sysctl("hw.optional.arm.FEAT_I8MM") == "1" else ()) \
                + (("bf16",) if _sysctl("hw.optional.arm.FEAT_BF16") == "1" else ())
        phys = _sysctl("hw.physicalcpu")
        info.cores_physical = int(phys) if phys.isdigit() else None
        mem = _sysctl("hw.memsize")
        info.ram_gb = int(mem) / 1e9 if mem.isdigit() else None
    elif sys.platform.startswith("win"):
        info.model = platform.processor()
        info.ram_gb = _windows_ram_gb()
    if not info.model:
        info.model = platform.processor() or "unknown CPU"
    if info.ram_gb is None:
        info.notes.append("RAM size could not be read on this platform")
    return info


def _windows_ram_gb() -> float | None:  # pragma: no cover - Windows only
    try:
        import ctypes

        class MemoryStatus(ctypes.Structure):
            _fields_ = [("dwLength", ctypes.c_ulong), ("dwMemoryLoad", ctypes.c_ulong),
                        ("ullTotalPhys", ctypes.c_ulonglong), ("ullAvailPhys", ctypes.c_ulonglong),
                        ("ullTotalPageFile", ctypes.c_ulonglong), ("ullAvailPageFile", ctypes.c_ulonglong),
                        ("ullTotalVirtual", ctypes.c_ulonglong), ("ullAvailVirtual", ctypes.c_ulonglong),
                        ("sullAvailExtendedVirtual", ctypes.c_ulonglong)]

        stat = MemoryStatus()
        stat.dwLength = ctypes.sizeof(MemoryStatus)
        ctypes.windll.kernel32.GlobalMemoryStatusEx(ctypes.byref(stat))
        return stat.ullTotalPhys / 1e9
    except Exception:  # noqa: BLE001 - best effort
        return None


def _times(fn, repeats: int, span_s: float = 0.0) -> list[float]:
    """Wall times of calls of ``fn`` (after the caller's warm-up): ``repeats`` of them, and more
    until ``span_s`` seconds have passed."""
    times: list[float] = []
    start = time.perf_counter()
    while len(times) < repeats or time.perf_counter() - start < span_s:
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return times


def _median_time(fn, repeats: int) -> float:
    """The median wall time of ``repeats`` calls of ``fn`` (after the caller's warm-up)."""
    return statistics.median(_times(fn, repeats))


def measure_bandwidth(info: CpuInfo, array_bytes: int = BANDWIDTH_ARRAY_BYTES, repeats: int = REPEATS,
                      best_span_s: float = BEST_READ_SPAN_S) -> None:
    """Fill ``read_gb_s`` (all threads; the median pass), ``read_best_gb_s`` (the best pass over
    ``best_span_s``), ``read_1t_gb_s`` (one thread), ``copy_gb_s`` and ``add_gb_s``.

    The read pass is a maximum over float32 slices: a reduction that numpy vectorises and runs
    without the GIL, so each thread streams its slice at what the memory system gives one core.
    The arrays are written first: untouched pages of a fresh allocation all map to one zero page,
    which would be read from cache."""
    import numpy as np

    threads = max(1, min(info.cores_logical or 1, 16))
    n = array_bytes // 8
    a = np.ones(n)
    b = np.full(n, 2.0)
    c = np.full(n, 3.0)
    bounds = np.linspace(0, n, threads + 1).astype(int)
    parts = list(zip(bounds[:-1], bounds[1:]))
    with ThreadPoolExecutor(max_workers=threads) as pool:
        def run(op):
            list(pool.map(op, parts))

        def read_part(p):
            return np.max(b[p[0]:p[1]])

        def copy_part(p):
            np.copyto(a[p[0]:p[1]], b[p[0]:p[1]])

        def add_part(p):
            np.add(b[p[0]:p[1]], c[p[0]:p[1]], out=a[p[0]:p[1]])

        run(read_part)  # warm up: page in every array
        run(copy_part)
        run(add_part)
        reads = _times(lambda: run(read_part), repeats, best_span_s)
        t_read, t_best = statistics.median(reads), min(reads)
        t_copy = _median_time(lambda: run(copy_part), repeats)
        t_add = _median_time(lambda: run(add_part), repeats)
    t_read_1t = _median_time(lambda: np.max(b), max(3, repeats // 2))
    info.read_gb_s = array_bytes / t_read / 1e9
    info.read_best_gb_s = array_bytes / t_best / 1e9
    info.read_1t_gb_s = array_bytes / t_read_1t / 1e9
    info.copy_gb_s = 2 * array_bytes / t_copy / 1e9
    info.add_gb_s = 3 * array_bytes / t_add / 1e9
    info.threads_used = threads
    if float(a[0]) != 5.0 or float(np.max(b)) != 2.0:  # the passes really ran
        info.notes.append("bandwidth check produced an unexpected value; treat the figure with care")


def measure_flops(info: CpuInfo, n: int = MATMUL_N, repeats: int = 3) -> None:
    """Fill ``fp32_gflops`` / ``fp64_gflops`` from an n × n matrix product (2·n³ FLOPs; median of repeats)."""
    import numpy as np

    rng = np.random.default_rng(0)
    for dtype, attr in ((np.float32, "fp32_gflops"), (np.float64, "fp64_gflops")):
        x = rng.standard_normal((n, n)).astype(dtype)
        y = rng.standard_normal((n, n)).astype(dtype)
        x @ y  # warm up (thread pool, page faults)
        t = _median_time(lambda: x @ y, repeats)
        setattr(info, attr, 2 * n**3 / t / 1e9)
