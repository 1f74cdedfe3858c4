"""Command-line options that several commands share, spelled and explained once."""

from __future__ import annotations

import argparse


def add_memory(p: argparse.ArgumentParser) -> None:
    """--memory-gb: one of the memory sizes the hardware ships in (Apple chips come in several)."""
    p.add_argument("--memory-gb", dest="memory_gb",
                   help="memory size of the hardware, GB, where it ships in several (e.g. 36 for a 36 GB M3 Max; "
                        "a size in the name works too: 'M3 Max 36GB'); default: the catalog entry's size")


def add_threads(p: argparse.ArgumentParser) -> None:
    """--threads: the CPU threads of CPU inference (llama.cpp -t)."""
    p.add_argument("--threads", help="CPU threads for CPU inference, as llama.cpp's -t (CPU entries such as "
                                     "'this machine' only; default: every core)")


def add_configuration(p: argparse.ArgumentParser) -> None:
    """The options that name one configuration: hardware, model, formats, runtime and GPUs."""
    p.add_argument("--hardware", help="accelerator name, e.g. 'rtx 4090', 'H100 SXM', 'M2 Max 38-core'")
    p.add_argument("--model", help="model name, e.g. 'Llama 3.1 8B', a config.json/.gguf path or hf:org/name")
    p.add_argument("--quant", help="weight format in the runtime's own spelling too, e.g. q4_k_m, fp8, awq, 4bit (default: Q4_K_M for llama.cpp, else the model's native format, BF16, or FP16 before Ampere)")
    p.add_argument("--kv-dtype", dest="kv_dtype", help="KV-cache element type (default f16)")
    p.add_argument("--runtime", help="llama.cpp, vllm, sglang, tensorrt-llm, mlx (default by hardware); an older build: llama.cpp@2024-06 or "
                                    "llama.cpp@b4000, vllm@0.7.3, sglang@0.4.3, tensorrt-llm@0.9.0")
    p.add_argument("--gpus", help="number of GPUs (default 1)")
    add_memory(p)
    add_threads(p)
    p.add_argument("--parallel", help="multi-GPU split: tp (tensor) or pp (layers); default by runtime")
    p.add_argument("--layout", help="how the GPUs split the model past one tensor-parallel group: parts joined by +, "
                                    "e.g. tp8+pp2 (two nodes), dp16+ep16 (attention data-parallel, experts spread "
                                    "whole); --gpus defaults to their product")
    p.add_argument("--network", help="the network between nodes, per GPU: ib-hdr, ib-ndr, ib-xdr, roce-200, roce-400, "
                                     "roce-800, eth-25, eth-100, eth-200, eth-400 (default: the hardware's reference "
                                     "system)")
