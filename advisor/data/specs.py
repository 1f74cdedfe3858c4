"""Frozen spec types for everything the catalog holds.

Each field's `metadata` says how the loader validates it (see `advisor.data.catalog`):
``kind`` is one of ``num``, ``int``, ``str``, ``bool``, ``strlist``, ``map``, ``price``; ``required``;
``min``/``max`` for numbers; ``choices`` for strings. Units are in the field names.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


def _f(kind: str, required: bool = False, default: Any = None, **rules: Any) -> Any:
    meta = {"kind": kind, "required": required, **rules}
    if kind in ("strlist", "numlist"):
        return field(default=(), metadata=meta)
    if kind in ("map", "price"):
        # mappings are stored as sorted (key, value) pairs so that specs stay hashable
        return field(default=None if kind == "price" else (), metadata=meta)
    if kind == "bool":
        return field(default=bool(default), metadata=meta)
    if kind == "str" and not required:
        return field(default="" if default is None else default, metadata=meta)
    if required:
        return field(metadata=meta)
    return field(default=default, metadata=meta)


HARDWARE_KINDS = ("datacenter", "workstation", "consumer", "laptop", "apple", "soc", "cpu", "dataflow")
VENDORS = ("NVIDIA", "AMD", "Intel", "Apple", "CPU", "SambaNova", "Groq", "Cerebras", "Google", "AWS")
#: Compute dtypes a hardware entry can list a peak for, and the field that holds it.
PEAK_FIELDS = {
    "fp32": "fp32_tflops",
    "fp16": "fp16_dense_tflops",
    "bf16": "bf16_dense_tflops",
    "fp8": "fp8_dense_tflops",
    "int8": "int8_dense_tops",
    "fp4": "fp4_dense_tflops",
}
COMPUTE_DTYPES = tuple(PEAK_FIELDS)


@dataclass(frozen=True, kw_only=True)
class Price:
    """Prices, each with its own source and date (dates as the source gives them).

    Purchase prices are per ``unit`` ("card": one GPU, times the GPU count; "system": the whole
    machine, which counts as one device) for the memory configuration ``memory_gib`` (empty = the
    entry's ``memory_gib``); a price for another configuration is not used to price this one.
    ``msrp_usd`` is the launch list price, ``street_usd`` a typical retail price of its date.
    ``cloud_usd_hour`` is per GPU-hour on demand; ``cloud_basis`` says how it was chosen.
    """

    msrp_usd: float | None = _f("num", min=1, max=10_000_000)
    msrp_date: str = _f("str")
    msrp_source: str = _f("str")
    street_usd: float | None = _f("num", min=1, max=10_000_000)
    street_date: str = _f("str")
    street_source: str = _f("str")
    unit: str = _f("str", default="card", choices=("card", "system"))
    memory_gib: float | None = _f("num", min=0.5, max=4096)
    cloud_usd_hour: float | None = _f("num", min=0.001, max=1000)
    cloud_basis: str = _f("str")
    cloud_date: str = _f("str")
    cloud_source: str = _f("str")


@dataclass(frozen=True, kw_only=True)
class Hardware:
    """One accelerator (or unified-memory system). Tensor peaks are dense."""

    key: str = _f("str", True)
    vendor: str = _f("str", True, choices=VENDORS)
    name: str = _f("str", True)
    kind: str = _f("str", True, choices=HARDWARE_KINDS)
    family: str = _f("str", True)
    #: as vendors print it: "80 GB" HBM and "24 GB" GDDR are binary gigabytes (GiB)
    #: (dataflow chips keep their weights in on-chip SRAM: a Groq LPU has 230 MB)
    memory_gib: float = _f("num", True, min=0.1, max=4096)
    #: (wafer-scale SRAM reaches petabytes per second: Cerebras WSE-3 21 PB/s)
    bandwidth_gb_s: float = _f("num", True, min=1, max=100_000_000)
    source: str = _f("str", True)
    aliases: tuple[str, ...] = _f("strlist")
    memory_type: str = _f("str")
    fp32_tflops: float | None = _f("num", min=0.01, max=10_000)
    fp16_dense_tflops: float | None = _f("num", min=0.01, max=100_000)
    bf16_dense_tflops: float | None = _f("num", min=0.01, max=100_000)
    fp8_dense_tflops: float | None = _f("num", min=0.01, max=100_000)
    int8_dense_tops: float | None = _f("num", min=0.01, max=100_000)
    fp4_dense_tflops: float | None = _f("num", min=0.01, max=100_000)
    #: The BF16 matrix rate measured under sustained load, TFLOP/s: the vendor's max-achievable figure
    #: (AMD's, its best library GEMM at an optimal shape) or the 90th percentile of published
    #: prompt-sized GEMM timings (aiconfigurator's, NVIDIA parts). A power-limited chip clocks well below
    #: the boost clock its datasheet peak assumes under dense load
    #: (`advisor.model.devices.matrix_share`). Empty = none published
    bf16_achievable_tflops: float | None = _f("num", min=0.01, max=100_000)
    #: The NVFP4 matrix rate measured the same way (the 90th percentile of published prompt-sized NVFP4
    #: GEMM timings): a part whose FP4 peak grew without its clocks, power or memory (Blackwell Ultra)
    #: reaches a smaller share of it (`advisor.model.devices.gemm_share`). Empty = none published
    fp4_achievable_tflops: float | None = _f("num", min=0.01, max=100_000)
    #: The dense FP16 matrix rate with FP16 accumulate, TFLOP/s, where it is not fp16_dense_tflops (the
    #: FP32-accumulate rate): GeForce dies run FP32 accumulate at half their FP16-accumulate rate
    #: (NVIDIA's Turing, GA102, Ada and Blackwell GeForce tables). A runtime whose 16-bit products
    #: accumulate in FP16 (`Runtime.fp16_accumulate`) reaches this one. Empty = the same rate
    fp16_fp16acc_dense_tflops: float | None = _f("num", min=0.01, max=100_000)
    tdp_w: float | None = _f("num", min=1, max=10_000)
    interconnect: str = _f("str")
    interconnect_gb_s: float | None = _f("num", min=1, max=100_000)
    #: Topology (multi-node sizing). GPUs that share the scale-up link (``interconnect_gb_s``): 8 on
    #: an HGX/DGX or MI300X platform board, 72 in an NVL72 rack, 2 or 4 for bridged PCIe cards; empty
    #: = no GPU-to-GPU link beyond PCIe (one node's GPUs then talk over PCIe)
    scale_up_gpus: int | None = _f("int", min=1, max=16384)
    #: The reference system's network per GPU, Gbit/s per direction as NICs are sold (ConnectX-7: 400,
    #: ConnectX-8: 800); the link between nodes unless the user names another (--network)
    scale_out_gbit_s: float | None = _f("num", min=1, max=3200)
    #: GPUs one machine (node, server, compute tray) holds where it is not the kind's usual 8 (an NVL72
    #: compute tray: 4); the largest instance on one machine, and the unit multi-node layouts count
    node_gpus: int | None = _f("int", min=1, max=72)
    #: What a runtime's tensor-parallel size counts per chip where it is not 1: TPU7x shows software
    #: two devices (one per chiplet), Inferentia2 and Trainium two NeuronCores, Trainium2 four logical
    #: NeuronCores (LNC=2). Launch lines ask for tp × this; the sizing counts chips
    devices_per_gpu: int = _f("int", default=1, min=1, max=16)
    pcie_gen: int | None = _f("int", min=1, max=7)
    pcie_lanes: int | None = _f("int", min=1, max=32)
    form_factor: str = _f("str")
    year: int | None = _f("int", min=2010, max=2035)
    unified_memory: bool = _f("bool")
    gpu_cores: int | None = _f("int", min=1, max=100_000)
    cpu_cores: int | None = _f("int", min=1, max=1024)
    #: CPUs: the read bandwidth one core reaches, GB/s (`advisor --probe` measures it). With fewer
    #: threads than cores (--threads), a CPU reads at most threads × this (`with_threads`).
    core_bandwidth_gb_s: float | None = _f("num", min=0.1, max=10_000)
    #: CPUs: the best read pass `advisor --probe` saw over a few seconds, GB/s, where ``bandwidth_gb_s``
    #: is the median one: a shared or virtual machine's memory speed moves, and predictions use the
    #: typical figure while their band's top and ceiling reach this one
    bandwidth_best_gb_s: float | None = _f("num", min=0.1, max=100_000_000)
    #: CPUs: the bandwidth and compute figures are what this machine reached in `advisor --probe`
    #: (a streaming read, a float GEMM), not datasheet peaks (`efficiency_for` then reads the
    #: profile's fractions relative to those)
    rates_measured: bool = _f("bool")
    gpu_wired_limit_gb: float | None = _f("num", min=0.5, max=4096)
    #: Every memory size this part ships in, GiB (Apple: its tech-specs pages); ``memory_gib`` is
    #: the default. Empty = ``memory_gib`` only. A size is chosen by name or --memory-gb
    #: (`Catalog.hardware_named`, `with_memory`).
    memory_options_gib: tuple[float, ...] = _f("numlist", min=0.5, max=4096)
    #: Tiered memory (dataflow machines; advisor.model.roofline places weights, then KV, in the
    #: fastest tier with room): an on-chip SRAM tier in front of ``memory_gib``, and a large DDR
    #: tier behind it (SambaNova SN40L). A tier counts only with both its size and its bandwidth.
    sram_gib: float | None = _f("num", min=0.001, max=100_000)
    sram_bandwidth_gb_s: float | None = _f("num", min=1, max=100_000_000)
    ddr_gib: float | None = _f("num", min=0.5, max=100_000)
    ddr_bandwidth_gb_s: float | None = _f("num", min=1, max=100_000)
    #: The user's own quote (their overlay's entries only): it replaces the catalog's dated quotes
    #: (catalog/prices.csv, `advisor.plan.pricing`), which are kept apart from the spec sheet
    price: Price | None = _f("price")
    notes: str = _f("str")
    #: Where the entry came from (file path); set by the loader, not read from YAML.
    origin: str = field(default="", compare=False, metadata={"kind": "internal"})
    #: The catalog key of the entry this one is a memory size of ("" for the entry itself): a
    #: variant keyed apart (so two sizes of one chip are two rows) keeps its parent's profiles and quotes.
    variant_of: str = field(default="", compare=False, metadata={"kind": "internal"})
    #: What resolving a typed name assumed that the name left open (a memory size, a GPU-core
    #: bin), in English; set by `Catalog.hardware_named`, shown among a prediction's notes.
    assumed: tuple[str, ...] = field(default=(), compare=False, metadata={"kind": "internal"})
    #: CPUs: the threads this entry was scaled to (`with_threads`); 0 = every core
    threads: int = field(default=0, compare=False, metadata={"kind": "internal"})

    def peak_tflops(self, dtype: str) -> float | None:
        """Dense peak for a compute dtype, TFLOP/s, or None when the hardware lacks it."""
        return getattr(self, PEAK_FIELDS[dtype])

    @property
    def memory_bytes(self) -> float:
        # GPU and unified-memory "GB" are binary: an "80 GB" A100 has 81920 MiB.
        return self.memory_gib * 2**30


@dataclass(frozen=True, kw_only=True)
class Model:
    """A transformer's architecture, from its config.json."""

    key: str = _f("str", True)
    name: str = _f("str", True)
    family: str = _f("str", True)
    #: config.json's ``architectures[0]`` (LlamaForCausalLM, DeepseekV3ForCausalLM …): what a
    #: runtime's model × format support list names (TensorRT-LLM's support matrix is per architecture)
    architecture: str = _f("str")
    params_total_b: float = _f("num", True, min=0.01, max=20_000)
    params_active_b: float = _f("num", True, min=0.01, max=20_000)
    layers: int = _f("int", True, min=1, max=1000)
    hidden: int = _f("int", True, min=64, max=200_000)
    intermediate: int = _f("int", True, min=64, max=1_000_000)
    heads: int = _f("int", True, min=1, max=1024)
    kv_heads: int = _f("int", True, min=1, max=1024)
    head_dim: int = _f("int", True, min=8, max=2048)
    vocab: int = _f("int", True, min=100, max=2_000_000)
    native_context: int = _f("int", True, min=128, max=100_000_000)
    #: The weight format the model is released in (a quant key); empty = 16-bit (BF16/F16).
    native_quant: str = _f("str")
    tie_embeddings: bool = _f("bool")
    attention: str = _f("str", True, choices=("mha", "gqa", "mqa", "mla"))
    source: str = _f("str", True)
    aliases: tuple[str, ...] = _f("strlist")
    ffn: str = _f("str", default="gated", choices=("gated", "plain"))
    v_head_dim: int | None = _f("int", min=8, max=2048)
    sliding_window: int | None = _f("int", min=1, max=10_000_000)
    sliding_layers: int | None = _f("int", min=0, max=1000)
    linear_layers: int | None = _f("int", min=0, max=1000)
    #: Layers that hold a KV cache (full + sliding attention). Default: layers - linear_layers;
    #: set it for hybrids with layers that hold neither KV nor state (Nemotron-H MoE-only layers).
    attention_layers: int | None = _f("int", min=0, max=1000)
    linear_state_bytes_per_layer: int | None = _f("int", min=0, max=10**12)
    experts: int | None = _f("int", min=1, max=10_000)
    experts_per_token: int | None = _f("int", min=1, max=10_000)
    shared_experts: int | None = _f("int", min=0, max=1000)
    moe_intermediate: int | None = _f("int", min=16, max=1_000_000)
    shared_expert_intermediate: int | None = _f("int", min=16, max=1_000_000)
    first_dense_layers: int | None = _f("int", min=0, max=1000)
    #: Layers with routed experts. Default: layers - first_dense_layers; set it when dense and
    #: MoE layers interleave (Llama-4-Maverick).
    moe_layers: int | None = _f("int", min=0, max=1000)
    kv_lora_rank: int | None = _f("int", min=1, max=100_000)
    qk_rope_head_dim: int | None = _f("int", min=0, max=10_000)
    q_lora_rank: int | None = _f("int", min=1, max=100_000)
    #: DeepSeek Sparse Attention (DeepSeek-V3.2, GLM-5): each query attends to the ``sparse_topk``
    #: tokens a lightning indexer picks (config ``index_topk``); the indexer scores every cached token
    #: with ``indexer_heads`` × ``indexer_head_dim`` (``index_n_heads``, ``index_head_dim``) and caches
    #: ``indexer_key_bytes`` per token per layer at its own precision, whatever the KV dtype
    sparse_topk: int | None = _f("int", min=1, max=10_000_000)
    indexer_heads: int | None = _f("int", min=1, max=10_000)
    indexer_head_dim: int | None = _f("int", min=1, max=100_000)
    indexer_key_bytes: float | None = _f("num", min=1, max=1_000_000)
    notes: str = _f("str")
    origin: str = field(default="", compare=False, metadata={"kind": "internal"})

    @property
    def is_moe(self) -> bool:
        return bool(self.experts and self.experts_per_token)


QUANT_KINDS = ("float", "gguf", "int", "fp8", "fp4")


@dataclass(frozen=True, kw_only=True)
class Quant:
    """A weight format. ``bits_per_weight`` is the effective body precision.

    ``head_bits_per_weight`` / ``embedding_bits_per_weight``: precision of the output head and of
    the token embedding when the format stores them differently (GGUF mixes keep the head at
    Q6_K); empty = same as the body. ``compute_dtype`` maps a vendor (or ``default``) to the
    dtype its matrix units run this format at (``fp8`` weights run fp8 on Hopper, fp16 elsewhere).
    """

    key: str = _f("str", True)
    name: str = _f("str", True)
    kind: str = _f("str", True, choices=QUANT_KINDS)
    bits_per_weight: float = _f("num", True, min=1, max=32)
    source: str = _f("str", True)
    aliases: tuple[str, ...] = _f("strlist")
    head_bits_per_weight: float | None = _f("num", min=1, max=32)
    embedding_bits_per_weight: float | None = _f("num", min=1, max=32)
    #: For formats that quantize only the routed experts (MXFP4 MoE): everything else is stored
    #: at this precision (attention, dense layers, shared experts, embedding and head).
    non_expert_bits_per_weight: float | None = _f("num", min=1, max=32)
    #: the bits a runtime dequantizes every routed expert a GPU holds to at each forward pass, before the
    #: products (vLLM's bitsandbytes MoE method: all of them, not only those the tokens route to); empty: none
    expert_dequant_bits: float | None = _f("num", min=1, max=32)
    expert_dequant_source: str = _f("str")
    compute_dtype: tuple[tuple[str, str], ...] = _f("map", choices=COMPUTE_DTYPES)
    #: What llama.cpp's own GPU kernels pay to unpack this format, where a runtime lists the vendor in
    #: its ``format_cost_vendors`` (measured on NVIDIA): ``mmq_cost``, the prompt's quantized matrix
    #: products (MMQ) in time relative to Q4_K_M's on the same shape (their int8 rate is divided by
    #: it); ``mmvq_ops_per_weight``, the vector kernel (MMVQ) over one sequence, in FP32 operations a
    #: weight read (a decode step's products take weights × this ÷ the GPU's vector rate when that
    #: exceeds their bytes' time); ``mmvq_seq_ops_per_weight``, what each further sequence adds, up to
    #: the runtime's ``vector_batch_max`` (`advisor.model.inputs.format_costs`). Empty: no cost of its
    #: own (the plain int8 and vector rates)
    mmq_cost: float | None = _f("num", min=0.1, max=10)
    mmvq_ops_per_weight: float | None = _f("num", min=0.1, max=1000)
    mmvq_seq_ops_per_weight: float | None = _f("num", min=0.1, max=1000)
    kernel_cost_source: str = _f("str")
    #: Perplexity increase on Llama-3-8B from llama.cpp's quantize table (lower = better).
    ppl_delta: float | None = _f("num", min=0, max=1000)
    #: Mean KL divergence from FP16 on Llama-3-8B (llama.cpp tools/perplexity README scoreboard).
    kld: float | None = _f("num", min=0, max=100)
    #: The bit class for "at least N bits" floors (Q3_K_L is 3-bit class at 4.2 bpw); empty = int(bits_per_weight).
    bits_class: int | None = _f("int", min=1, max=32)
    #: Rank for "at least this good" filters: higher keeps more quality. F16/BF16 = 100.
    quality_rank: int = _f("int", True, min=0, max=100)
    #: Runtime families able to load this format.
    runtimes: tuple[str, ...] = _f("strlist")
    #: Oldest hardware families that can run it natively (empty = any); e.g. fp8 needs fp8 units.
    requires_dtype: str = _f("str", choices=("",) + COMPUTE_DTYPES)
    notes: str = _f("str")
    origin: str = field(default="", compare=False, metadata={"kind": "internal"})

    def compute_for(self, vendor: str) -> str:
        table = dict(self.compute_dtype)
        return table.get(vendor, table.get("default", "fp16"))


@dataclass(frozen=True, kw_only=True)
class KvDtype:
    """A KV-cache element type."""

    key: str = _f("str", True)
    name: str = _f("str", True)
    bits: float = _f("num", True, min=1, max=32)
    source: str = _f("str", True)
    aliases: tuple[str, ...] = _f("strlist")
    runtimes: tuple[str, ...] = _f("strlist")
    requires_dtype: str = _f("str", choices=("",) + COMPUTE_DTYPES)
    notes: str = _f("str")
    origin: str = field(default="", compare=False, metadata={"kind": "internal"})


@dataclass(frozen=True, kw_only=True)
class Support:
    """One rule of the support matrix (`advisor.model.compat`): on ``vendor``'s hardware, the
    runtime (no ``quants``/``kv_dtypes``), or these weight formats, or these KV dtypes, run only
    on the hardware ``families`` listed (an allow-list: a family not named is refused, with
    ``reason``). Rules are per runtime, in its ``support`` list."""

    vendor: str = _f("str", True, choices=VENDORS)
    families: tuple[str, ...] = _f("strlist")
    quants: tuple[str, ...] = _f("strlist")
    kv_dtypes: tuple[str, ...] = _f("strlist")
    reason: str = _f("str", True)
    source: str = _f("str", True)


@dataclass(frozen=True, kw_only=True)
class ModelSupport:
    """One rule of the model × format axis (`advisor.model.compat.model_refusal`): the runtime runs
    these weight formats (``quants``; empty = any) only for the model ``architectures`` listed
    (config.json's architectures[0]; empty = any), never for those in ``excluded``, and with
    ``dense_only`` not for MoE models; on ``vendor``'s hardware ``families`` only, where they are
    given (empty = on every hardware). A model whose architecture the catalog does not state is
    judged by ``dense_only`` alone (nothing confirms or refuses it). A rule with ``kv_dtypes`` is about
    the KV cache instead (`advisor.model.compat.model_cache_refusal`): the runtime has no cache of those
    dtypes for the models it names (``latent_attention``: those with a latent attention, MLA)."""

    quants: tuple[str, ...] = _f("strlist")
    architectures: tuple[str, ...] = _f("strlist")
    excluded: tuple[str, ...] = _f("strlist")
    dense_only: bool = _f("bool")
    kv_dtypes: tuple[str, ...] = _f("strlist")
    latent_attention: bool = _f("bool")
    vendor: str = _f("str", choices=("",) + VENDORS)
    families: tuple[str, ...] = _f("strlist")
    reason: str = _f("str", True)
    source: str = _f("str", True)


@dataclass(frozen=True, kw_only=True)
class Build:
    """A numbered build of a runtime and a date by which it had been released (`name@b4000`)."""

    build: int = _f("int", True, min=1, max=10_000_000)
    date: str = _f("str", True)
    source: str = _f("str", True)


@dataclass(frozen=True, kw_only=True)
class SchedulerTier:
    """A runtime's scheduler defaults on some GPUs (`Runtime.scheduler_on`): the first tier a GPU
    matches applies, one of at least ``min_gib`` of memory whose name contains none of ``not_names``;
    an empty figure keeps the runtime's own."""

    min_gib: float = _f("num", default=0.0, min=0, max=100_000)
    not_names: tuple[str, ...] = _f("strlist")
    max_seqs: int | None = _f("int", min=1, max=1_000_000)
    chunk_tokens: int | None = _f("int", min=1, max=10_000_000)


@dataclass(frozen=True, kw_only=True)
class Runtime:
    """An inference engine and its memory behaviour and default efficiencies.

    Memory: the engine claims ``memory_fraction`` of device memory (vLLM's
    ``gpu_memory_utilization``; 1.0 for engines that allocate as they go), keeps ``reserve_gb``
    free, and spends ``overhead_gb`` on its context (CUDA/driver context, graphs). The activation
    workspace is sized for ``workspace_tokens`` tokens in flight per forward pass.

    Efficiency defaults (used until a calibrated profile exists, see ``advisor.fit.calibration``):
    ``decode_bw_fraction`` of spec bandwidth reached by decode; ``prefill_compute_fraction`` of
    dense peak reached by prefill; ``layer_overhead_us`` fixed cost per layer per forward pass;
    ``step_overhead_us`` fixed cost per forward pass.
    """

    key: str = _f("str", True)
    name: str = _f("str", True)
    source: str = _f("str", True)
    aliases: tuple[str, ...] = _f("strlist")
    vendors: tuple[str, ...] = _f("strlist")
    quant_kinds: tuple[str, ...] = _f("strlist")
    parallelism: str = _f("str", True, choices=("tp", "pp"))
    memory_fraction: float = _f("num", True, min=0.05, max=1.0)
    #: ``total``: the fraction is of device memory (vLLM); ``free``: of what is free after the
    #: weights are loaded (TensorRT-LLM's free_gpu_memory_fraction).
    memory_fraction_of: str = _f("str", default="total", choices=("total", "free"))
    #: Latency of one all-reduce between GPUs, microseconds (tensor parallel adds two per layer).
    allreduce_latency_us: float = _f("num", default=10.0, min=0, max=10_000)
    #: Fixed cost per running sequence per decode step, microseconds (a fitted profile overrides it)
    seq_overhead_us: float = _f("num", default=0.0, min=0, max=100_000)
    #: Fixed cost once per request before its first token, microseconds (a fitted profile overrides it)
    request_overhead_us: float = _f("num", default=0.0, min=0, max=1_000_000)
    #: Extra fixed cost of a prompt (prefill) pass beyond a decode step's, microseconds per MoE layer
    #: with plain attention and per MLA or linear-attention layer (`prefill_complex_layer_us`):
    #: engines that replay decode steps from CUDA graphs run prompt passes eagerly, and these layers
    #: launch many small kernels (routing, top-k, permutation, grouped products; latent down- and
    #: up-projections, split RoPE, state updates) with host synchronisation between some. Fitted on
    #: servers' lone-user TTFT (`benchmarks/serving.py --fit`); 0 where the engine has no such split
    #: (llama.cpp, MLX) or its C++ runtime shows none (TensorRT-LLM's own TTFT tables)
    prefill_moe_layer_us: float = _f("num", default=0.0, min=0, max=100_000)
    prefill_complex_layer_us: float = _f("num", default=0.0, min=0, max=100_000)
    #: True: a tensor-parallel exchange costs one latency per GPU taking part, not one (each split
    #: product is launched on every GPU in turn and the main GPU waits on each, as llama.cpp's
    #: 2023 row split did)
    allreduce_per_device: bool = _f("bool")
    reserve_gb: float = _f("num", True, min=0, max=64)
    overhead_gb: float = _f("num", True, min=0, max=64)
    workspace_tokens: int = _f("int", True, min=1, max=1_000_000)
    #: How many micro-batches of one batch a layer split keeps in flight across its GPUs, one prompt's
    #: among them (llama.cpp's pipeline parallelism: a batch is cut into micro-batches of
    #: workspace_tokens, each GPU starts the next as it hands one on, at most this many at once);
    #: 0: only different requests' batches overlap across the stages (a request is in one batch at a
    #: time), so one prompt crosses the stages one after another (`advisor.model.roofline.prefill`)
    prompt_pipeline_copies: int = _f("int", default=0, min=0, max=64)
    #: the date (YYYY-MM-DD) builds first had it: an older build (``name@DATE``) runs the stages one
    #: after another
    prompt_pipeline_from: str = _f("str")
    prompt_pipeline_source: str = _f("str")
    decode_bw_fraction: float = _f("num", True, min=0.01, max=1.0)
    prefill_compute_fraction: float = _f("num", True, min=0.01, max=1.0)
    layer_overhead_us: float = _f("num", True, min=0, max=100_000)
    step_overhead_us: float = _f("num", True, min=0, max=10_000_000)
    #: fraction of dense peak reached by the attention (score and value) products in prefill
    attention_compute_fraction: float = _f("num", default=0.3, min=0.01, max=1.0)
    #: Continuous batching: running sequences at most by default (vLLM --max-num-seqs, SGLang
    #: --max-running-requests, TensorRT-LLM max_batch_size, llama-server -np slots)
    max_seqs: int = _f("int", default=256, min=1, max=1_000_000)
    #: Tokens one engine step processes at most, decode and prompt chunks together (vLLM
    #: max_num_batched_tokens, SGLang chunked_prefill_size, TensorRT-LLM max_num_tokens,
    #: llama-server -b); empty = workspace_tokens
    chunk_tokens: int | None = _f("int", min=1, max=10_000_000)
    #: True: the KV cache is paged, a sequence holds only the blocks of its current length;
    #: False: each slot reserves its whole context up front (llama-server)
    paged_kv: bool = _f("bool", default=True)
    #: The scheduler defaults by GPU, where the runtime sizes them by the GPU's memory or name (vLLM,
    #: SGLang): ordered, the first that matches applies (`scheduler_on`); none: ``max_seqs`` and
    #: ``chunk_tokens`` everywhere
    scheduler_tiers: tuple[SchedulerTier, ...] = field(default=(), metadata={"kind": "scheduler_tiers"})
    #: where the three scheduler figures come from; without it they are the spec's defaults
    scheduler_source: str = _f("str")
    launch: str = _f("str")
    # ---- what its command line and features are (read by the launch lines, the what-ifs, the
    # recommender's techniques and the sweep; each runtime's own, so a new runtime is its entry)
    #: our KV-cache dtype key -> the value of its KV flag, where they differ (vLLM: f16 -> auto)
    kv_cache_flags: tuple[tuple[str, str], ...] = _f("map")
    #: our weight-format key -> the method it quantizes BF16 weights with while loading (--quantization)
    online_quantization: tuple[tuple[str, str], ...] = _f("map")
    #: our weight-format key -> the pip package the engine serves that format through, where it is
    #: out of tree (vLLM 0.28+: bitsandbytes in vllm-bnb-plugin); the launch line installs it first
    format_plugins: tuple[tuple[str, str], ...] = _f("map")
    #: the tool that makes a checkpoint of a format nobody published (a comment on the launch line)
    quantize_with: str = _f("str")
    #: it loads Hugging Face safetensors checkpoints (and reads their quantization_config)
    loads_hf_checkpoints: bool = _f("bool")
    #: each user gets a slot of its own with its whole context reserved up front (llama-server -np)
    fixed_slots: bool = _f("bool")
    #: how it keeps part of the weights off the GPU: by layers (llama.cpp -ngl, --n-cpu-moe), by GB
    #: read over PCIe (vLLM/SGLang --cpu-offload-gb), or not at all
    partial_offload: str = _f("str", choices=("", "layers", "gb"))
    #: how it turns flash attention off (unfused attention); empty: it has no unfused path on GPUs
    eager_attention_flag: str = _f("str")
    #: it runs a draft model or speculative head (the recommender's --allow-spec tries it)
    speculative_decoding: bool = _f("bool")
    #: with an FP8 KV cache, its attention kernels compute in FP8 where the GPU has FP8 tensor cores
    fp8_attention: bool = _f("bool")
    #: its 16-bit matrix products accumulate in FP16 (llama.cpp's cuBLAS path, CUBLAS_COMPUTE_16F; its
    #: Vulkan f16acc pipelines): on a GeForce die they run at its FP16-accumulate rate
    #: (`Hardware.fp16_fp16acc_dense_tflops`), twice the FP32-accumulate one
    fp16_accumulate: bool = _f("bool")
    #: its scheduler runs waiting prompts as prefill batches of their own, ahead of the decode, rather
    #: than inside the decode steps (SGLang without --enable-mixed-chunk): a batch job's decoders see
    #: few, long gaps (`advisor.model.serving.batch_schedule`)
    prefill_first: bool = _f("bool")
    #: where its int8 matrix kernels reach no more than this many times the GPU's FP32 rate,
    #: whatever the datasheet's int8 peak (`advisor.model.inputs.compute_peak`; empty: the peak)
    int8_peak_per_fp32: float | None = _f("num", min=1, max=64)
    #: where its quantized matrix products over at most ``vector_batch_max`` sequences run vector
    #: kernels that unpack every weight again for each sequence (llama.cpp's CUDA/HIP MMVQ), on the
    #: vendors listed: those products reach no more than ``vector_peak_per_fp32`` times the GPU's
    #: FP32 rate (`advisor.model.inputs.vector_peak`); empty: the matrix kernels' peak at any batch
    vector_batch_max: int | None = _f("int", min=1, max=64)
    vector_peak_per_fp32: float | None = _f("num", min=0.1, max=16)
    vector_vendors: tuple[str, ...] = _f("strlist")
    vector_source: str = _f("str")
    #: vendors on which its GPU kernels' per-format costs apply (each format's ``mmq_cost`` and
    #: ``mmvq_*_per_weight``, measured on those vendors' parts); empty: one cost for every format
    format_cost_vendors: tuple[str, ...] = _f("strlist")
    #: its server's own work per running sequence and step, ns per vocabulary entry: the sampler
    #: scans every token's logit for each sequence (llama-server), added to a served step
    #: (`advisor.model.serving.costs_from_result`), not to a benchmark tool's figures
    server_sample_ns_per_vocab: float | None = _f("num", min=0, max=1000)
    server_sample_source: str = _f("str")
    #: its server copies each finished request's KV cache out to a prompt cache in host memory when
    #: the next request arrives, on the thread that runs every sequence: GB/s of that copy (a
    #: request's whole KV, up to ``server_prompt_cache_max_gb``), server time before the new prompt
    #: (`advisor.model.serving.prompt_cache_save_s`); empty: no such cache
    server_prompt_cache_gb_s: float | None = _f("num", min=0.01, max=10_000)
    server_prompt_cache_max_gb: float | None = _f("num", min=0, max=100_000)
    #: the date (YYYY-MM-DD) builds first had that cache: an older build (``name@DATE``) pays nothing
    server_prompt_cache_from: str = _f("str")
    #: the flag that turns it off on the launch line (recommendations leave it on only for loads with
    #: prefix hits, where it pays back)
    server_prompt_cache_off_flag: str = _f("str")
    server_prompt_cache_source: str = _f("str")
    #: fixed cost of a decode step per expert a token visits, in plain layers' worth
    #: (`advisor.model.geometry.Geometry.fixed_layers_at`): the prior of each profile's fitted
    #: ``expert_overhead_us`` and the cost where none is fitted; 0 holds it at none (one kernel takes
    #: every expert at once); empty: the default, for servers that run each expert's products on their own
    decode_expert_weight: float | None = _f("num", min=0, max=10)
    decode_expert_weight_source: str = _f("str")
    #: how much slower than the model a mixture of experts decodes several sequences at once on
    #: this runtime's GPU kernels (``vector_vendors``), per doubling of the batch (1 + k·log2 B, to
    #: 64): measured, not modelled, so it widens the band's slow edge only
    batched_experts_slow_per_doubling: float | None = _f("num", min=0, max=2)
    batched_experts_source: str = _f("str")
    #: the layouts past one tensor-parallel group it runs (advisor.plan.deployment.Layout): the routed
    #: experts spread whole over the GPUs with data-parallel attention (EP + attention DP); one
    #: instance across nodes (TP within a node, pipeline stages or EP across them); with their source
    expert_parallel: bool = _f("bool")
    multi_node: bool = _f("bool")
    layouts_source: str = _f("str")
    #: what its tensor parallel splits (`advisor.model.compat.tp_refusal`): "heads" = whole attention
    #: heads, so TP must divide them; "heads+kv" = also whole KV heads, or an equal number of copies
    #: of each (TP a multiple of the KV heads); empty = no such rule known; with its source
    tp_shards: str = _f("str", choices=("", "heads", "heads+kv"))
    tp_shards_source: str = _f("str")
    #: Loads the weight formats and KV types of this runtime (a backend or an older build of it).
    formats_of: str = _f("str")
    #: Overrides the quantization's compute dtype (vendor or ``default`` → dtype) where this
    #: runtime's kernels run at another rate than the format's native one.
    compute_dtype: tuple[tuple[str, str], ...] = _f("map", choices=COMPUTE_DTYPES)
    #: An old build kept for comparing with measurements of its time; never recommended.
    historic: bool = _f("bool")
    #: The date (YYYY-MM-DD) of the builds its calibration rows were measured on: runtimes of one
    #: format family with an era form an ordered axis, and `name@DATE` interpolates between them
    #: (`advisor.data.eras`); ``era_source`` says where the date comes from.
    era: str = _f("str")
    #: Where one profile spans many releases (vLLM, SGLang, TensorRT-LLM): the date of the oldest
    #: build among its calibration rows (``era`` is then the newest's). A build asked for outside
    #: that span is predicted with a band widened as for a borrowed build.
    era_from: str = _f("str")
    era_source: str = _f("str")
    #: Numbered builds with the date each had been released by, increasing: `name@b4000` is placed
    #: in time between the two around it (`advisor.data.eras.build_date`).
    builds: tuple[Build, ...] = field(default=(), metadata={"kind": "builds"})
    #: Where it runs what, by hardware family: rules of the support matrix (`Support`)
    support: tuple[Support, ...] = field(default=(), metadata={"kind": "support"})
    #: What it runs per model architecture: rules of the model × format axis (`ModelSupport`)
    model_support: tuple[ModelSupport, ...] = field(default=(), metadata={"kind": "model_support"})
    notes: str = _f("str")
    origin: str = field(default="", compare=False, metadata={"kind": "internal"})
    #: Set by `name@DATE`: the build date asked for, and the runtimes of the family's eras
    #: (oldest first) whose profiles are interpolated at it. Not read from YAML.
    at_date: str = field(default="", compare=False, metadata={"kind": "internal"})
    eras: tuple["Runtime", ...] = field(default=(), compare=False, repr=False, metadata={"kind": "internal"})

    @property
    def format_family(self) -> str:
        return self.formats_of or self.key

    def scheduler_on(self, hw: "Hardware | None" = None) -> tuple[int, int]:
        """(running sequences at most, tokens per step) by default on ``hw``: the first of
        ``scheduler_tiers`` it matches (None: ``max_seqs`` and ``chunk_tokens``)."""
        seqs, chunk = self.max_seqs, self.chunk_tokens or self.workspace_tokens
        if hw is None:
            return seqs, chunk
        names = f"{hw.key} {hw.name}".lower()
        for t in self.scheduler_tiers:
            if hw.memory_gib >= t.min_gib and not any(n.lower() in names for n in t.not_names):
                return t.max_seqs or seqs, t.chunk_tokens or chunk
        return seqs, chunk

    def compute_for(self, quant: "Quant", vendor: str) -> str:
        """The dtype whose peak bounds this runtime's matrix products for ``quant`` on ``vendor``."""
        table = dict(self.compute_dtype)
        return table.get(vendor) or table.get("default") or quant.compute_for(vendor)


@dataclass(frozen=True, kw_only=True)
class Profile:
    """Efficiencies of one runtime on a group of hardware, fitted by `advisor.fit.calibration`.

    The group is the most specific of ``hardware`` (a key), ``family`` or ``vendor``; empty
    fields match anything. Bands are multipliers on the predicted speed that held ~80 % of the
    measured rows when whole devices were left out of the fit.
    """

    key: str = _f("str", True)
    runtime: str = _f("str", True)
    #: the runtime's format family: a sibling runtime (another backend or build) may borrow this
    #: profile, with a wider band, where it has none of its own for the vendor
    formats_of: str = _f("str")
    vendor: str = _f("str")
    family: str = _f("str")
    #: with ``family``: only consumer cards (GeForce, Radeon RX, Arc, laptops) or only
    #: professional ones (workstation, datacenter, SoC); empty = both
    tier: str = _f("str", choices=("", "consumer", "pro"))
    hardware: str = _f("str")
    decode_bw_fraction: float = _f("num", True, min=0.01, max=1.0)
    layer_overhead_us: float = _f("num", True, min=0, max=100_000)
    step_overhead_us: float = _f("num", True, min=0, max=10_000_000)
    prefill_compute_fraction: float = _f("num", True, min=0.005, max=1.0)
    attention_compute_fraction: float = _f("num", True, min=0.005, max=1.0)
    #: fitted where MoE prompt rows exist: the routed experts' products; empty = prefill_compute_fraction
    expert_compute_fraction: float | None = _f("num", min=0.005, max=1.0)
    #: fitted where int8 prompt rows exist (llama.cpp's quantized kernels on NVIDIA and CPUs): the
    #: linear layers' products in int8, as a fraction of the int8 peak; empty = prefill_compute_fraction
    int8_compute_fraction: float | None = _f("num", min=0.005, max=1.0)
    #: fitted where multi-GPU rows exist; empty = the runtime's value
    allreduce_latency_us: float | None = _f("num", min=0, max=100_000)
    #: fitted where batched decode rows exist: cost per running sequence per decode step, µs;
    #: empty = the runtime's value
    seq_overhead_us: float | None = _f("num", min=0, max=100_000)
    #: fitted where TTFT rows exist: cost once per request before its first token, µs;
    #: empty = the runtime's value
    request_overhead_us: float | None = _f("num", min=0, max=1_000_000)
    #: fitted where MoE decode rows exist: fixed cost of a decode step per expert a token visits per
    #: MoE layer (routed top-k plus shared), µs; empty = the runtime's ``decode_expert_weight`` ×
    #: ``layer_overhead_us``
    expert_overhead_us: float | None = _f("num", min=0, max=100_000)
    decode_low: float = _f("num", True, min=0.05, max=1.0)
    decode_high: float = _f("num", True, min=1.0, max=20.0)
    prefill_low: float = _f("num", True, min=0.05, max=1.0)
    prefill_high: float = _f("num", True, min=1.0, max=20.0)
    decode_rows: int = _f("int", default=0, min=0)
    prefill_rows: int = _f("int", default=0, min=0)
    #: what the fitted rows measured: the hardware families and the weight formats (quant keys) seen;
    #: a configuration outside them is extrapolated (`advisor.model.efficiency.evidence`)
    measured_families: tuple[str, ...] = _f("strlist")
    measured_formats: tuple[str, ...] = _f("strlist")
    source: str = _f("str", True)
    notes: str = _f("str")
    origin: str = field(default="", compare=False, metadata={"kind": "internal"})


@dataclass(frozen=True, kw_only=True)
class Checkpoint:
    """A published checkpoint of a catalog model in one or more weight formats: what a launch
    line downloads. GGUF repositories hold one file (or a split set) per format: ``files``."""

    key: str = _f("str", True)
    model: str = _f("str", True)
    quants: tuple[str, ...] = _f("strlist")
    repo: str = _f("str", True)
    #: exact file names in the repository (GGUF: per format, the first of a split set first)
    files: tuple[str, ...] = _f("strlist")
    source: str = _f("str", True)
    notes: str = _f("str")
    origin: str = field(default="", compare=False, metadata={"kind": "internal"})


@dataclass(frozen=True, kw_only=True)
class System:
    """A server or rack sold as one unit (a DGX B200, a GB200 NVL72 rack): which GPUs and how many,
    and what the whole machine draws, its network and scale-up fabric, as its vendor states them.
    The recommender counts a deployment's power at these machines' maximum draw (CPUs, NICs,
    switches and fans included) where one holds the deployment's GPUs, else at the GPUs' board power."""

    key: str = _f("str", True)
    name: str = _f("str", True)
    aliases: tuple[str, ...] = _f("strlist")
    hardware: str = _f("str", True)           # the catalog key of its GPUs
    gpus: int = _f("int", True, min=1, max=1024)
    cpu: str = _f("str")
    system_memory_gib: float | None = _f("num", min=1, max=1_000_000)
    power_kw: float | None = _f("num", min=0.1, max=10_000)   # the vendor's maximum system power
    network: str = _f("str")
    scale_up: str = _f("str")
    rack_units: float | None = _f("num", min=1, max=100)
    year: int | None = _f("int", min=2000, max=2100)
    source: str = _f("str", True)
    notes: str = _f("str")
    origin: str = field(default="", compare=False, metadata={"kind": "internal"})


#: the loads a serving band's widening is fitted for: a steady state (closed or open loop) and a
#: batch of requests sent at once (`advisor.model.serving.batch_run`)
SERVING_MODES = ("steady", "batch")
SERVING_BAND_METRICS = ("ttft", "itl", "throughput")


@dataclass(frozen=True, kw_only=True)
class ServingBand:
    """How far past a `serve` band's edges servers were measured, by load and metric: the band
    (the load solved at the efficiency profile's edges) is widened by these factors, fitted on the
    scheduling model's own error with each source held out (GENERATED by `benchmarks/serving.py
    --write-bands`: the tenth of the held-out rows furthest past each edge)."""

    key: str = _f("str", True)
    mode: str = _f("str", True, choices=SERVING_MODES)
    metric: str = _f("str", True, choices=SERVING_BAND_METRICS)
    below: float = _f("num", True, min=1, max=10)   # the low edge is divided by it
    above: float = _f("num", True, min=1, max=10)   # the high edge is multiplied by it
    rows: int = _f("int", True, min=1, max=1_000_000)
    sources: int = _f("int", True, min=1, max=10_000)
    source: str = _f("str", True)
    notes: str = _f("str")
    origin: str = field(default="", compare=False, metadata={"kind": "internal"})


ENTRY_TYPES: dict[str, type] = {
    "hardware": Hardware,
    "models": Model,
    "quants": Quant,
    "kv_dtypes": KvDtype,
    "runtimes": Runtime,
    "profiles": Profile,
    "checkpoints": Checkpoint,
    "systems": System,
    "serving_bands": ServingBand,
}
