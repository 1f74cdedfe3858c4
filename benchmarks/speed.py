"""How fast the model is: one prediction, and a sweep of the whole catalog. Prints a table.

Run: python benchmarks/speed.py   (goals: a prediction and a 256-point curve under 1 ms each,
the full sweep of ~145k configurations in 10 ms, a cluster-scale sweep of a million or more in 2 s)
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

from advisor import api  # noqa: E402
from advisor.data.catalog import load_catalog  # noqa: E402
from advisor.model.predict import predict_entries as predict  # noqa: E402
from advisor.model.roofline import Workload  # noqa: E402
from advisor.model.sweep import Layouts, sweep, tables_for  # noqa: E402
from advisor.text.format import table  # noqa: E402


def timed(fn, repeat: int) -> tuple[float, float]:
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times) * 1e3, min(times) * 1e3


def main() -> None:
    t0 = time.perf_counter()
    cat = load_catalog(user=None)
    load_ms = (time.perf_counter() - t0) * 1e3
    hw = cat.hardware_named("H100 SXM5 80GB")
    model = cat.model_named("Llama-3.1-70B")
    wl = Workload(batch=8, prompt_tokens=2048, output_tokens=256)
    rows = [["load the catalog (YAML, validate)", 1, f"{load_ms:.1f}", "—"]]

    def one():
        predict(hw, model, cat.quants["fp8"], cat.runtimes["vllm"], wl, cat.kv_dtypes["f16"], 2, cat.profiles)

    med, best = timed(one, 300)
    rows.append(["one prediction (predict)", 1, f"{med:.3f}", f"{best:.3f}"])
    cfg = api.configure(cat, hardware="H100 SXM5 80GB", model="Llama-3.1-70B", quant="fp8", runtime="vllm", gpus=2,
                        batch=8, prompt=2048, output=256)
    batches = np.arange(1, 257)
    med, best = timed(lambda: api.curve(cat, cfg, "batch", batches), 300)
    rows.append(["a curve: 256 batch sizes with bands and memory plan (api.curve)", 256, f"{med:.3f}", f"{best:.3f}"])
    med, best = timed(lambda: api.roofline(cat, cfg), 300)
    rows.append(["roofline operating points (api.roofline)", 6, f"{med:.3f}", f"{best:.3f}"])
    t0 = time.perf_counter()
    tables_for(cat)
    rows.append(["build the catalog tables (once per catalog)", 1, f"{(time.perf_counter() - t0) * 1e3:.1f}", "—"])

    configs = {}

    current = [r.key for r in cat.runtimes.values() if not r.historic]

    def catalog_sweep():
        r = sweep(cat, model, wl, runtimes=current, kv_dtypes=("f16",), gpus=(1, 2, 4, 8), batch=(1, 4, 16, 64))
        configs["catalog"] = len(r)

    def all_runtimes():
        r = sweep(cat, model, wl, kv_dtypes=("f16",), gpus=(1, 2, 4, 8), batch=(1, 4, 16, 64))
        configs["runtimes"] = len(r)

    def everything():
        r = sweep(cat, model, wl, kv_dtypes=None, gpus=(1, 2, 4, 8), batch=(1, 4, 16, 64))
        configs["all"] = len(r)

    med, best = timed(catalog_sweep, 15)
    rows.append(["sweep: all hardware × current runtimes × quants × 4 GPU counts × 4 batches (f16 KV)",
                 configs["catalog"], f"{med:.1f}", f"{best:.1f}"])
    med, best = timed(all_runtimes, 10)
    rows.append(["same with the historic and Vulkan runtimes too", configs["runtimes"], f"{med:.1f}", f"{best:.1f}"])
    med, best = timed(everything, 5)
    rows.append(["same × every KV-cache dtype", configs["all"], f"{med:.1f}", f"{best:.1f}"])

    # the cluster-scale space `recommend` searches for a frontier MoE: every hardware × current runtime ×
    # format × KV dtype × instance layout from 1 GPU to a 72-GPU NVLink domain (tensor parallel, pipeline
    # stages past a node, wide EP with data-parallel attention) × a dozen decode batch sizes
    from advisor.plan.recommend import CLUSTER_GPU_COUNTS, GPU_COUNTS

    moe = cat.model_named("DeepSeek-R1")
    layouts = Layouts.for_instances(GPU_COUNTS + CLUSTER_GPU_COUNTS, moe=True)
    step_batches = tuple(2 ** k for k in range(12))

    def cluster():
        r = sweep(cat, moe, Workload(batch=1, prompt_tokens=1024, output_tokens=256), runtimes=current, kv_dtypes=None,
                  layouts=layouts, batch=step_batches)
        configs["cluster"] = len(r)

    med, best = timed(cluster, 5)
    rows.append([f"cluster-scale sweep: DeepSeek-R1, all hardware × current runtimes × quants × KV dtypes × "
                 f"{len(layouts)} layouts (1-72 GPUs) × {len(step_batches)} batches", configs["cluster"], f"{med:.1f}",
                 f"{best:.1f}"])

    def per_model():
        for m in cat.models.values():
            sweep(cat, m, Workload(), gpus=(1,), kv_dtypes=("f16",))

    med, best = timed(per_model, 3)
    rows.append([f"every model × whole catalog at 1 GPU ({len(cat.models)} sweeps)", "—", f"{med:.1f}", f"{best:.1f}"])
    from advisor.plan.recommend import Requirements, recommend

    n = {}
    for label, burst in (("as servers under load (closed loop, TTFT p90)", False), ("--burst (all prompts at once)", True)):
        req = Requirements(model=model, prompt_tokens=2048, output_tokens=512, context_tokens=8192, users=50,
                           ttft_ms=2000, tok_s=20, burst=burst)

        def rec():
            n["rec"] = len(recommend(cat, req))

        med, best = timed(rec, 10)
        rows.append([f"recommend: Llama-3.1-70B, 50 users, 8k context, targets, {label}", n["rec"], f"{med:.1f}",
                     f"{best:.1f}"])
    from advisor.model.serving import Load, serve

    cfg = api.configure(cat, hardware="H100 SXM5 80GB", model="Llama-3.1-70B", quant="fp8", runtime="vllm", gpus=2)
    med, best = timed(lambda: serve(cat, cfg, Load(kind="closed", concurrency=50, prompt_tokens=5000,
                                                    output_tokens=500)), 100)
    rows.append(["serve: one configuration under a closed-loop load (advisor serve)", 1, f"{med:.2f}", f"{best:.2f}"])
    print(table(["what", "configurations", "median ms", "best ms"], rows))


if __name__ == "__main__":
    main()
