"""Hardware facts the model needs beyond the raw spec: usable memory, links, peaks, GPU counts."""

from __future__ import annotations

import math

import numpy as np

from advisor.data.specs import Hardware

# macOS lets the GPU wire only part of unified memory (Metal's recommendedMaxWorkingSetSize).
# Measured defaults up to macOS 15: 2/3 of RAM up to 32 GB, 3/4 above (llama.cpp #1870, PR #2011,
# llama-cpp-python #687, ollama #434; collected with sources in catalog/hardware/apple.yaml).
# Used only where the entry does not state gpu_wired_limit_gb itself.
APPLE_WIRED_SMALL_RAM_GB = 32
APPLE_WIRED_FRACTION_SMALL = 2 / 3
APPLE_WIRED_FRACTION_LARGE = 3 / 4
# Strix Halo (Ryzen AI Max): the GPU's share of the unified memory. AMD's Variable Graphics Memory
# gives the GPU 96 GB of the 128 GB Ryzen AI Max+ 395 ("AMD Ryzen AI Max+ 395 (128GB) processor with
# 96GB of Variable Graphics Memory", AMD blog "FAQs: AMD Variable Graphics Memory, VRAM, AI Model
# Sizes…", 2025-07-29); on Linux the GTT limit defaults to ~50 % of RAM and AMD recommends raising it
# (amd-ttm; ROCm docs "AMD Strix Halo system optimization", 2026-02-20). 96/128 is applied to the
# other sizes of the family too (an assumption: AMD states the 128 GB figure).
AMD_VGM_FRACTION = 96 / 128

# PCIe per-lane bandwidth per direction after line encoding, GB/s (PCI-SIG: Gen 3/4/5 run 8/16/32
# GT/s with 128b/130b encoding; Gen 6 runs 64 GT/s in FLIT mode, 242 of 256 bytes payload).
PCIE_GB_S_PER_LANE = {3: 8 * 128 / 130 / 8, 4: 16 * 128 / 130 / 8, 5: 32 * 128 / 130 / 8, 6: 64 / 8 * 242 / 256}
DEFAULT_PCIE = (4, 16)

#: Most GPUs of one kind we consider in one node, by hardware kind.
#: Dataflow machines count chips (Groq LPUs: hundreds for a 70B model), sockets (SN40L) or wafers.
MAX_GPUS_BY_KIND = {"datacenter": 8, "workstation": 8, "consumer": 8, "laptop": 1, "apple": 1, "soc": 1, "cpu": 1,
                    "dataflow": 1024}

#: Order in which to fall back when hardware lacks the requested compute dtype.
DTYPE_FALLBACK = {
    "fp4": ("fp4", "fp8", "fp16", "bf16", "fp32"),
    "fp8": ("fp8", "fp16", "bf16", "fp32"),
    "int8": ("int8", "fp16", "bf16", "fp32"),
    "bf16": ("bf16", "fp16", "fp32"),
    "fp16": ("fp16", "bf16", "fp32"),
    "fp32": ("fp32",),
}
#: CPUs: a 16-bit float without its own rate is widened to FP32 and multiplied there (x86's F16C
#: conversions in llama.cpp's F16 kernels), so FP16 never borrows the BF16 dot-product rate; an
#: entry with FP16 vector arithmetic (Arm) states it as ``fp16_dense_tflops``.
DTYPE_FALLBACK_CPU = {**DTYPE_FALLBACK, "fp16": ("fp16", "fp32"), "int8": ("int8", "fp32"), "fp8": ("fp32",),
                      "fp4": ("fp32",)}


def usable_memory_gb(hw: Hardware) -> float:
    """Memory the accelerator may use, GB (decimal). Apple: the GPU wired limit, not total RAM."""
    if hw.gpu_wired_limit_gb:
        return hw.gpu_wired_limit_gb * 2**30 / 1e9
    total = hw.memory_bytes / 1e9
    if hw.kind == "apple":
        frac = APPLE_WIRED_FRACTION_SMALL if hw.memory_gib <= APPLE_WIRED_SMALL_RAM_GB else APPLE_WIRED_FRACTION_LARGE
        return total * frac
    if hw.vendor == "AMD" and hw.unified_memory and hw.key.startswith("ryzen-ai-max"):
        return total * AMD_VGM_FRACTION
    return total


def wired_limit_is_default_rule(hw: Hardware) -> bool:
    return hw.kind == "apple" and not hw.gpu_wired_limit_gb


def link_gb_s(hw: Hardware) -> float:
    """GPU-to-GPU bandwidth per direction, GB/s: the vendor link, else the PCIe host link."""
    if hw.interconnect_gb_s:
        return hw.interconnect_gb_s / 2.0  # vendors print bidirectional totals
    gen, lanes = hw.pcie_gen or DEFAULT_PCIE[0], hw.pcie_lanes or DEFAULT_PCIE[1]
    return PCIE_GB_S_PER_LANE.get(gen, PCIE_GB_S_PER_LANE[DEFAULT_PCIE[0]]) * lanes


def tier(hw: Hardware) -> str:
    """Consumer or professional SKU: they differ in tensor rates (GeForce halves FP16 with FP32
    accumulation), clocks, power limits and ECC, so runtimes reach different fractions of spec."""
    if hw.kind == "apple":
        return ""  # one line of chips: nothing to tell apart
    return "consumer" if hw.kind in ("consumer", "laptop") else "pro"


def max_gpus(hw: Hardware) -> int:
    """GPUs one machine holds (the largest group on one node): the entry's ``node_gpus`` (an NVL72
    compute tray's 4), else its kind's usual count."""
    return hw.node_gpus or MAX_GPUS_BY_KIND.get(hw.kind, 1)


#: Networks between nodes a user may name (--network): Gbit/s per GPU and direction, as sold.
#: InfiniBand HDR/NDR/XDR are 200/400/800 Gb/s per port (NVIDIA ConnectX-6/7/8 product pages);
#: RoCE and Ethernet at their port speeds.
NETWORKS_GBIT_S = {"ib-hdr": 200, "ib-ndr": 400, "ib-xdr": 800, "roce-200": 200, "roce-400": 400, "roce-800": 800,
                   "eth-25": 25, "eth-100": 100, "eth-200": 200, "eth-400": 400}
#: Hardware kinds that go in multi-node clusters (server GPUs on a network); the rest stop at one machine.
CLUSTER_KINDS = ("datacenter",)


def domain_gpus(hw: Hardware) -> int:
    """GPUs that reach each other without the network: one node's, or a rack's NVLink domain (NVL72)."""
    return max(hw.scale_up_gpus or 0, max_gpus(hw))


def network_gb_s(hw: Hardware, network: str | None = None) -> float:
    """The network between nodes per GPU and direction, GB/s: the one named (``network``, a key of
    `NETWORKS_GBIT_S`), else the reference system's (``scale_out_gbit_s``); nan where the hardware
    does not go in clusters or no network is known."""
    if hw.kind not in CLUSTER_KINDS:
        return math.nan
    gbit = NETWORKS_GBIT_S[network] if network else hw.scale_out_gbit_s
    return gbit / 8.0 if gbit else math.nan


#: The share of its datasheet peak a low-precision format's matrix products reach, relative to the
#: share 16-bit products reach of theirs, per (compute dtype, hardware family) of the datacenter parts
#: it was measured on, per engine (key None: over every engine, for the others). From aiconfigurator
#: 0.12's published kernel measurements (NVIDIA's per-GPU, per-engine collection: vLLM 0.24.0, SGLang
#: 0.5.6 and 0.5.14, TensorRT-LLM 1.3.0rc20 on H100, H200 and B200), as `benchmarks/gemm_shares.py`
#: prints them: the median TFLOP/s over prompt-sized GEMMs (2,048-8,192 tokens, both other sides 4,096
#: or more) as a share of the dtype's dense peak, over BF16's, the median over GPUs, versions and FP8
#: scalings (per-tensor and block). BF16 reaches 0.65-0.81 of its peak; FP8 0.48-0.67 of its (Hopper
#: vLLM 0.61-0.72 of BF16's share, SGLang 0.68-0.87, TensorRT-LLM 0.69-0.80); NVFP4 on B200 only
#: 0.39-0.45 of the FP4 peak. So an FP8 prompt runs ~1.5× a BF16 one on Hopper, not 2×, and an NVFP4
#: one ~2.5× on B200, not 4×. (cuBLASLt's per-tensor FP8 alone, on our own H100 and H200 runs,
#: benchmarks/device_runs/2026-11-27-h1*0-kernels, reached 0.88 of BF16's share at 2,048+ tokens: the
#: engines scale per token or per block and quantize activations on the fly.) Elsewhere (other vendors
#: and tiers, nothing measured) 1: the fitted fraction applies as it is.
LOW_PRECISION_GEMM_SHARE = {
    ("fp8", "nvidia-hopper"): {"vllm": 0.70, "sglang": 0.81, "tensorrt-llm": 0.75, None: 0.74},
    ("fp8", "nvidia-blackwell"): {"vllm": 0.69, "sglang": 0.81, "tensorrt-llm": 0.83, None: 0.76},
    ("fp4", "nvidia-blackwell"): {"vllm": 0.63, "sglang": 0.69, "tensorrt-llm": 0.60, None: 0.63},
}


#: The FP4 products' share of their peak over BF16's on the part `LOW_PRECISION_GEMM_SHARE`'s FP4
#: figures were measured on (B200: 4,676 of 9,000 TFLOP/s over 1,607 of 2,250, the 90th percentiles
#: `fp4_achievable_tflops` and `bf16_achievable_tflops` of its catalog entry), per (dtype, family).
LOW_PRECISION_REFERENCE_SHARE = {("fp4", "nvidia-blackwell"): 0.7274}


def part_low_precision_share(hw: Hardware, dtype: str) -> float:
    """How a part's own FP4 products compare with the family's reference part, from its measured rates:
    (FP4 achievable / FP4 peak) / (BF16 achievable / BF16 peak), over `LOW_PRECISION_REFERENCE_SHARE`
    (1 where either rate is unpublished). Blackwell Ultra (B300, GB300) has 1.5× B200's FP4 peak with
    the same memory, clocks and power, and aiconfigurator's NVFP4 GEMM timings give it 5,100-5,500
    TFLOP/s against B200's and GB200's 4,700-5,100: 0.47 of its BF16 share, not 0.73, so its FP4
    products take 0.65 of the family's share (MLPerf v5.1's Llama 3.1 405B Offline: GB300 9 % faster
    per GPU than GB200, not the 1.5× the peaks say)."""
    ref = LOW_PRECISION_REFERENCE_SHARE.get((dtype, hw.family))
    peak16 = hw.bf16_dense_tflops or hw.fp16_dense_tflops
    if dtype != "fp4" or not ref or not (hw.fp4_achievable_tflops and hw.fp4_dense_tflops
                                         and hw.bf16_achievable_tflops and peak16):
        return 1.0
    return (hw.fp4_achievable_tflops / hw.fp4_dense_tflops) / (hw.bf16_achievable_tflops / peak16) / ref


def gemm_share(hw: Hardware, runtime_key: str, dtype: str) -> float:
    """`LOW_PRECISION_GEMM_SHARE` for runtime ``runtime_key`` on ``hw`` computing in ``dtype`` (1 where
    nothing was measured), times the part's own measured FP4 rate against the family's reference
    (`part_low_precision_share`)."""
    by_engine = LOW_PRECISION_GEMM_SHARE.get((dtype, hw.family)) if hw.kind == "datacenter" else None
    if not by_engine:
        return 1.0
    return by_engine.get(runtime_key, by_engine[None]) * part_low_precision_share(hw, dtype)


#: The extra fixed time one matrix product of a decode step takes in a low-precision format over a
#: 16-bit product of the same shape, µs, per (compute dtype, hardware family) and engine (key None: over
#: every engine, for the others). At one to eight rows a product's time is a fixed part plus the
#: weights' bytes over the bandwidth, and aiconfigurator 0.12's kernel measurements (as
#: `benchmarks/decode_gemm_shares.py` prints them) give FP8 and NVFP4 products the bandwidth BF16's
#: reach (0.9-1.2 of its time per byte; TensorRT-LLM's NVFP4 1.7) but a larger fixed part: quantizing
#: the activations is a kernel of its own, and the scaled kernels' tiles fill a small product worse. The
#: figure is the median over layer-sized shapes (both weight sides 4,096 or more) at one row of (latency
#: − the bytes at BF16's bandwidth − BF16's fixed part), then over GPUs and versions. FP8 is the
#: per-tensor scaled path (the catalog's FP8 W8A8). The block-scaled path of the models released in FP8
#: (DeepSeek's, Kimi's) is not priced apart: its figures (Hopper: SGLang 6.6 µs, TensorRT-LLM 2.0, vLLM
#: 28.5) put GPUStack's DeepSeek-R1 on 8 × H200 with vLLM 23 % slower than measured under load, held out
#: (9 % with these), so vLLM's served path is not the one measured at one row. So an FP8 model does not
#: decode twice as fast as BF16 where its layers are small (a large tensor-parallel split): each of its
#: dense products (`Geometry.dense_products`) costs this much more. Elsewhere (other vendors and tiers,
#: weight-only formats computed in 16 bits, nothing measured) 0.
LOW_PRECISION_GEMM_FIXED_US = {
    ("fp8", "nvidia-hopper"): {"vllm": 3.4, "sglang": 5.3, "tensorrt-llm": 8.8, None: 5.3},
    ("fp8", "nvidia-blackwell"): {"vllm": 22.5, "sglang": 8.2, "tensorrt-llm": 10.8, None: 10.8},
    ("fp4", "nvidia-blackwell"): {"vllm": 8.9, "sglang": 8.6, "tensorrt-llm": 12.7, None: 8.9},
}


def format_gemm_us(hw: Hardware, runtime_key: str, dtype: str) -> float:
    """`LOW_PRECISION_GEMM_FIXED_US` for runtime ``runtime_key`` on ``hw`` computing in ``dtype``, µs
    per product (0 where nothing was measured)."""
    by_engine = LOW_PRECISION_GEMM_FIXED_US.get((dtype, hw.family)) if hw.kind == "datacenter" else None
    if not by_engine:
        return 0.0
    return by_engine.get(runtime_key, by_engine[None])


#: The share of its dtype's dense peak a latent-attention (MLA) decode kernel reaches where it is
#: compute-bound, per (hardware family, the dtype its products run in: `inputs.attention_dtype`).
#: DeepSeek's absorbed MLA decode does 2·heads·(576 + 512) FLOPs per cached token and layer (278,528 at
#: 128 heads) on 1,152 bytes of latent: ~240 FLOPs a byte, past the 16-bit roof of an H20 (37 FLOPs a
#: byte) and near an H200's (206), so at a server's batch the attention kernel's own compute rate
#: decides much of the step, not the linear layers' fitted fraction (0.35-0.46 on Hopper), which
#: prompt rows of small dense models set. aiconfigurator 0.12's kernel measurements
#: (`benchmarks/mla_decode_shares.py`: the 90th percentile over batches of 256 × 2,048 cached tokens or
#: more, all 128 heads on the GPU, reading well under the bandwidth), median over tables:
#: - Hopper, 16-bit cache: 0.636 (SGLang 0.60-0.61, TensorRT-LLM 0.66-0.67 on H100 and H200). FlashMLA's
#:   own figure agrees: "660 TFLOPS in computation-bound configuration on H800 SXM5" (deepseek-ai/FlashMLA
#:   README, 2025-04-22), 0.667 of 989.4;
#: - Hopper, FP8 cache: 0.381 of the FP8 peak (TensorRT-LLM; about its 16-bit speed: the products run
#:   in 16 bits after the cache is read). SGLang 0.5.14's 0.07 is a fallback path, left out;
#: - Blackwell: 0.561 (16-bit), 0.537 of the FP8 peak (FP8 cache; SGLang 0.44-0.55, TensorRT-LLM
#:   0.56-0.63 on B200, B300, GB200, GB300).
#: Elsewhere (nothing published: AMD's, older NVIDIA's) the linear layers' own fraction, as before.
MLA_DECODE_ATTENTION_FRACTION = {("nvidia-hopper", "fp16"): 0.636, ("nvidia-hopper", "fp8"): 0.381,
                                 ("nvidia-blackwell", "fp16"): 0.561, ("nvidia-blackwell", "fp8"): 0.537}


#: The share of the datasheet bandwidth a latent-attention (MLA) decode kernel reads a 16-bit cache at
#: where it is bound by its reads, per hardware family: aiconfigurator 0.12's MLA decode tables
#: (`benchmarks/mla_decode_shares.py`: the 90th percentile over the shapes with fewer than 128 heads
#: on a GPU and at least 64 × 4,096 cached tokens, the median over the engines' tables): Hopper 0.90
#: (SGLang, TensorRT-LLM and vLLM on H100 and H200; FlashMLA's own README: "3000 GB/s in memory-bound
#: configuration" on an H800, 0.90 of 3.35 TB/s), Blackwell 0.73 (B200, B300, GB200, GB300). A
#: runtime's fitted bandwidth fraction also holds everything else a small decode step loses (SGLang's
#: Hopper profile: 0.46), which a server's long latent cache does not: the cache's reads run at the
#: kernel's own share. An FP8 cache's reads depend on the engine's path (0.06-0.84 in the same tables),
#: so they keep the runtime's fraction, as do llama.cpp and the other engines not measured.
MLA_DECODE_BANDWIDTH_FRACTION = {"nvidia-hopper": 0.904, "nvidia-blackwell": 0.733}
#: the engines whose MLA decode kernels those tables time
MLA_KERNEL_RUNTIMES = ("vllm", "sglang", "tensorrt-llm")


def mla_decode_bw_fraction(hw: Hardware, runtime_key: str, kv_bits: float) -> float:
    """`MLA_DECODE_BANDWIDTH_FRACTION` for a 16-bit latent cache read by ``runtime_key`` on ``hw`` (nan
    elsewhere: the runtime's fitted fraction applies)."""
    if hw.kind != "datacenter" or runtime_key not in MLA_KERNEL_RUNTIMES or kv_bits < 16:
        return math.nan
    return MLA_DECODE_BANDWIDTH_FRACTION.get(hw.family, math.nan)


#: Where a cache dtype's MLA decode computes its products in another dtype (Hopper's FP8 cache: read
#: in FP8, multiplied in 16 bits), the dtype whose matrix units do the work
MLA_PRODUCTS_DTYPE = {("nvidia-hopper", "fp8"): "fp16"}


def mla_decode_fraction(hw: Hardware, dtype: str) -> float:
    """`MLA_DECODE_ATTENTION_FRACTION` for ``hw`` with the attention's products in ``dtype`` (nan where
    none is published), on the part's own side work (`side_work_scale`): taken on the peak of the
    dtype that does the products (`MLA_PRODUCTS_DTYPE`), then back to ``dtype``'s."""
    if hw.kind != "datacenter":
        return math.nan
    fraction = MLA_DECODE_ATTENTION_FRACTION.get((hw.family, dtype), math.nan)
    side = side_work_scale(hw)
    if side == 1.0 or not math.isfinite(fraction):
        return fraction
    own = peak_for(hw, dtype)[0]
    products = peak_for(hw, MLA_PRODUCTS_DTYPE.get((hw.family, dtype), dtype))[0]
    return with_side_work(fraction * own / products, side) * products / own


#: The share of its BF16 datasheet peak the Hopper parts' products sustain (`matrix_share`'s reference:
#: the parts most fitted compute fractions were measured on): H100 SXM 0.804 and H200 SXM 0.819 in
#: aiconfigurator 0.12's prompt-sized GEMM tables (`benchmarks/gemm_shares.py`, the mean 0.812); our
#: own runs agree (benchmarks/device_runs/2026-11-27-h1*0-kernels, PyTorch on cuBLASLt, the fastest
#: Llama-shaped product at 2,048+ tokens: 800 and 810 of 989.4 TFLOP/s, 0.809 and 0.819).
REFERENCE_BF16_SHARE = 0.812


def matrix_share(hw: Hardware) -> float:
    """How much of its datasheet peak ``hw``'s matrix units sustain under dense load, relative to the
    Hopper parts' share (`REFERENCE_BF16_SHARE`), from its ``bf16_achievable_tflops``: 1 where none is
    published (the fitted fractions as they are). A power-limited chip clocks down under dense matrix
    load: an MI300X runs its BF16 GEMM at a 1,207 MHz median clock against the 2,100 MHz its 1,307
    TFLOPS assume and reaches 708 TFLOP/s (AMD's published max-achievable rate), 0.54 of its peak
    where an H100 reaches 0.80; so a fraction fitted on Hopper rows applies to it at 0.67 (MI325X 0.79,
    B200 0.88, GB200 0.86, L40S 0.81, A100 1.08). One figure per part, for every dtype: the FP8 and FP4
    products' own share relative to BF16's is `gemm_share` (AMD's FP8 max-achievable is 0.90 of its
    BF16 share, as cuBLASLt's per-tensor FP8 is on H100 and H200: 0.88-0.91)."""
    peak = hw.bf16_dense_tflops or hw.fp16_dense_tflops
    if not hw.bf16_achievable_tflops or not peak:
        return 1.0
    return hw.bf16_achievable_tflops / peak / REFERENCE_BF16_SHARE


#: The reference parts' matrix peak over their vector (FP32) rate: H100 SXM's 989.4 BF16 TFLOPS over
#: 66.9 FP32 TFLOPS (both at its 1.83 GHz boost clock: 132 SMs × 4,096 and × 256 FLOPs a clock).
REFERENCE_MATRIX_TO_VECTOR = 989.4 / 66.9
#: The family whose SMs the reference parts' are: within it, the FP32 rate measures what the SMs do
#: beside their matrix products (every part has the same 128 FP32 lanes per SM), so the ratio says how
#: far a part's matrix rate is capped below its SMs'.
SIDE_WORK_FAMILY = "nvidia-hopper"


def side_work_scale(hw: Hardware) -> float:
    """How long the work beside its matrix products takes on ``hw``, per matrix FLOP at its peak,
    relative to the reference parts (H100/H200 SXM, which the fitted compute fractions stand for).

    A fitted fraction η is time at the matrix peak plus everything the SMs do beside the products
    (tile loads and epilogues, softmax, norms, quantizing activations, launches): 1/η = 1 + o, o the
    side work per unit of matrix time. That side work runs at the SMs' own rate, not at the matrix
    units': on a part whose matrix rate is capped below its SMs' (the H20: a GH100 with 78 SMs, about
    a quarter of the matrix rate its SMs would have), o shrinks by the ratio of the two parts' matrix
    peak to FP32 rate, and its products reach a far larger share of its peak:
    1/η' = 1 + o × this scale (`with_side_work`). Checked on public kernel measurements:
    - PyTorch BF16 matmul at 8,192-10,240 (zzc0721/torch-performance-test-data database.md and issue
      #77, one script on every GPU): H20 141.86 and 142.25 of 148 TFLOP/s (0.96); H100 SXM 789.24 and
      783.66, H200 790.29 of 989.4 (0.79-0.80). From the H100's 0.796 this gives the H20 0.945;
    - FlashMLA decode (deepseek-ai/FlashMLA issue #30, on an H20, 64 heads, 2-8 queries each, 8,192
      cached): 120-130 TFLOP/s, 0.81-0.88 of 148. From the H800's 0.586 at that release (~580 TFLOP/s,
      before the 660 of its 2025-04-22 update) this gives 0.86.
    1 outside `SIDE_WORK_FAMILY` (another SM design: its FP32 rate does not measure the same work) and
    where the part lacks either figure. Rounded to two decimals: the datasheets' own rounding moves the
    ratio by a few thousandths (H100 PCIe 756/51, GH200 989/67)."""
    peak = hw.bf16_dense_tflops or hw.fp16_dense_tflops
    if hw.family != SIDE_WORK_FAMILY or not peak or not hw.fp32_tflops:
        return 1.0
    return round(peak / hw.fp32_tflops / REFERENCE_MATRIX_TO_VECTOR, 2)


def with_side_work(fraction, scale):
    """A fitted compute ``fraction`` (η, the reference parts') on a part whose side work takes
    ``scale`` times as long per matrix FLOP (`side_work_scale`): 1 / (1 + (1/η − 1) × scale); exactly
    ``fraction`` where the scale is 1. Works on numbers and numpy arrays."""
    f = np.asarray(fraction, float)
    s = np.asarray(scale, float)
    with np.errstate(divide="ignore", invalid="ignore"):
        out = np.where(s == 1.0, f, 1.0 / (1.0 + (1.0 / f - 1.0) * s))
    return out if out.ndim else float(out)


def peak_for(hw: Hardware, dtype: str) -> tuple[float, str]:
    """Dense peak in TFLOP/s for ``dtype``, falling back to what the hardware has; (nan, '') if none."""
    fallback = DTYPE_FALLBACK_CPU if hw.kind == "cpu" else DTYPE_FALLBACK
    for d in fallback.get(dtype, (dtype, "fp16", "fp32")):
        v = hw.peak_tflops(d)
        if v:
            return float(v), d
    return math.nan, ""
