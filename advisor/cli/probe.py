"""`advisor --probe [--json] [--quick] [--save]`: measure this machine."""

from __future__ import annotations

import argparse
import sys
import time

from advisor.data.catalog import user_catalog
from advisor.text.format import json_text, num
from advisor.cli.exit_codes import EXIT_NO_ACCELERATOR, EXIT_OK, EXIT_USAGE


def _progress(json_mode: bool):
    start = time.perf_counter()

    def say(msg: str) -> None:
        # progress goes to stderr so that --json output stays clean
        print(f"  [{time.perf_counter() - start:5.1f} s] {msg}…", file=sys.stderr, flush=True)

    return say


def cmd_probe(args: argparse.Namespace) -> int:
    import probes
    from advisor.plan.machine import match_devices, save_this_machine

    result = probes.probe(quick=args.quick, progress=_progress(args.json))
    cat = user_catalog()
    matches = match_devices(cat, result)
    saved = None
    save_error = ""
    if args.save:
        from advisor.data.errors import AdvisorError

        try:
            saved = save_this_machine(cat, result, matches)
        except AdvisorError as exc:
            save_error = str(exc)
    if args.json:

        doc = result.to_dict()
        doc["matches"] = [m.to_dict() for m in matches]
        doc["saved_to"] = str(saved) if saved else None
        if save_error:
            doc["save_error"] = save_error
        print(json_text(doc))
    else:
        _print(result, matches)
        if saved:
            print(f"\nSaved as 'this machine' in {saved}: use --hardware \"this machine\" in predict and recommend "
                  "(advisor predict --hardware \"this machine\" --model \"llama 3.1 8b\").")
        elif not args.quick:
            print("\nTo size models for this machine: advisor --probe --save, then --hardware \"this machine\" in "
                  "predict, serve and recommend; compare with your own llama-bench results: advisor "
                  "compare-measured FILE --hardware \"this machine\".")
    if save_error:
        print(f"advisor: error: {save_error}", file=sys.stderr)
        return EXIT_USAGE
    if not result.accelerator_found:
        if not args.json:
            print("\nNo accelerator found: the CPU figures above are what CPU inference can use.", file=sys.stderr)
        return EXIT_NO_ACCELERATOR
    return EXIT_OK


def _print(result, matches) -> None:
    c = result.cpu
    print(f"Probe of this machine ({result.when}, {result.seconds:.1f} s)\n")
    print(f"CPU: {c.model} · {c.cores_logical} logical cores"
          + (f" ({c.cores_physical} physical)" if c.cores_physical else "") + f" · {c.architecture}")
    print(f"RAM: {num(c.ram_gb)} GB")
    if c.copy_gb_s:
        best = f", best {num(c.read_best_gb_s)}" if c.read_best_gb_s else ""
        read = (f"read {num(c.read_gb_s)} GB/s ({num(c.read_1t_gb_s)} with one thread{best}), " if c.read_gb_s else "")
        print(f"  measured memory bandwidth: {read}copy {num(c.copy_gb_s)} GB/s, add {num(c.add_gb_s)} GB/s "
              f"({c.threads_used} threads; medians of repeats)")
        print(f"  measured matrix product: {num(c.fp32_gflops)} GFLOP/s float32, {num(c.fp64_gflops)} GFLOP/s float64")
    nv = result.nvidia
    if nv.gpus:
        print(f"\nNVIDIA driver {nv.driver_version or '?'}, CUDA {nv.cuda_version or '?'}")
        for g in nv.gpus:
            print(f"  GPU {g.index}: {g.name} · {num(g.memory_total_gb)} GB ({num(g.memory_used_gb)} used)"
                  f" · {num(g.bandwidth_gb_s)} GB/s theoretical ({g.bus_width_bits}-bit × {num(g.max_memory_clock_mhz)} MHz)")
            print(f"    SM clock {num(g.max_sm_clock_mhz)} MHz · power limit {num(g.power_limit_w)} W · "
                  f"PCIe gen {g.pcie_gen} x{g.pcie_width} (max gen {g.pcie_gen_max} x{g.pcie_width_max}) · "
                  f"NVLink {g.nvlink_active if g.nvlink_active is not None else 'none'} · compute {g.compute_capability or '?'}")
            for fld, why in g.errors.items():
                print(f"    {fld}: {why}")
    if result.apple:
        a = result.apple
        print(f"\nApple: {a.chip} · {a.gpu_cores or '?'} GPU cores · {num(a.memory_gb)} GB unified · GPU wired limit "
              + (f"{a.wired_limit_mb} MB (set)" if a.wired_limit_mb else "the macOS default"))
    if result.amd:
        for g in result.amd.gpus:
            print(f"\nAMD GPU {g.index}: {g.name} · {num(g.memory_total_gb)} GB ({result.amd.tool})")
    for b in result.benchmarks:
        line = f"\nmeasured on {b.device} with {b.framework}: "
        line += b.error or f"copy {num(b.copy_gb_s)} GB/s · {b.dtype} matmul {num(b.matmul_tflops)} TFLOPS"
        print(line)
    if matches:
        print("\nCatalog matches:")
        for m in matches:
            target = f"{m.hardware.name} ({m.hardware.key})" if m.hardware else "not in the catalog"
            print(f"  {m.device} → {target} · match: {m.confidence}")
            for d in m.differences:
                print(f"    {d}")
            if m.hardware:
                spec = m.hardware
                print(f"    catalog: {num(spec.memory_gib)} GiB, {num(spec.bandwidth_gb_s)} GB/s, "
                      f"{num(spec.fp16_dense_tflops or spec.fp32_tflops)} TFLOPS dense FP16/FP32")
    for note in result.notes:
        print(f"note: {note}")
