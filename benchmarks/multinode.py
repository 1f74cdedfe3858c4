"""Multi-node and wide-EP predictions against published multi-node results (checks, not calibration).

`benchmarks/multinode_cases.csv` (sources and quotes in multinode_cases.md) holds figures of
DeepSeek-V3/R1 and Kimi K2 with large-scale expert parallelism and prefill/decode disaggregation
(DeepSeek's own report, LMSYS/SGLang, Ant Group, AMD) and MLPerf v5.1 NVL72 results. None of them is
in the calibration. Each row is predicted by the kernel with the row's layout:

- a disaggregated decode pool: decode steps alone at the row's batch, or where the source states the
  per-user speed instead (DeepSeek's 20-22 tok/s, LMSYS's ~100 ms ITL, MLPerf's median TPOT), at the
  batch where the prediction reaches that speed: the throughput "at the same per-user speed";
- a disaggregated prefill pool: prompts in every attention group at once (two per group), tokens per
  second over the pool;
- an MLPerf Offline run: a static batch as large as the KV cache holds, its prompts then its outputs,
  at the mean prompt of MLPerf's dataset (`MLPERF_PROMPT`);
- an MLPerf Server or Interactive run of Llama 3.1 405B, whose ~9,400-token prompts share the steps with
  the decode: the serving model (`advisor serve`) at the run's arrival rate per instance, its TPOT
  against MLPerf's median TPOT.

Where a source states that its decode drafted with DeepSeek's MTP module (Ant Group), the per-user
speed is the tool's speculative round at the accepted length the source states (`MTP`); where it ran
attention in FP8 over an FP8 cache, so does the check (`FP8_ATTENTION`).

Each hardware runs on its catalog reference network (`scale_out_gbit_s`): 400 Gb/s per H800 and H100,
as DeepEP states for DeepSeek's H800 cluster; 200 Gb/s per H20, the 4 × 400 Gb/s per 8-GPU node Ant
Group's table states. Printed: predicted, measured, error; and the median, then the two-batch-overlap
share LMSYS's ablation implies.

Run: python benchmarks/multinode.py [--markdown]
"""

from __future__ import annotations

import argparse
import csv
import math
import statistics
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from advisor.data.catalog import user_catalog  # noqa: E402
from advisor.model.config import Config  # noqa: E402
from advisor.model.efficiency import efficiency_for  # noqa: E402
from advisor.model.geometry import geometry  # noqa: E402
from advisor.model.layout import Layout  # noqa: E402
from advisor.model.predict import evaluate_config  # noqa: E402
from advisor.model.techniques import head_model  # noqa: E402
from advisor.model.roofline import Workload  # noqa: E402
from advisor.model.sweep import Layouts, sweep  # noqa: E402
from advisor.text.format import markdown_table, table  # noqa: E402

CASES = Path(__file__).with_name("multinode_cases.csv")
BATCHES = np.unique(np.round(np.geomspace(1, 65536, 160)).astype(int))
#: a row without a prompt length of its own (none left: each states one, or a KV length, or is MLPerf's)
ASSUMED_PROMPT = 1000
#: rows whose batch is per GPU (LMSYS's table: 'batch size 128' per device; Kimi K2's 'Decode Batch
#: Size 480', which 288k tok/s over 96 GPUs rules out as a total: 600 tok/s a user)
#: rows that state the mean KV length during decode instead of a prompt: (KV length, output assumed)
KV_LENGTH = {"deepseek-day6-decode-per-node": 4989, "lmsys-96xh100-decode-simulated-mtp": 4000}
DECODE_OUTPUT = 1000
#: DeepSeek's prefill figure counts cached tokens: 56.3 % of input tokens hit its on-disk cache; its
#: prompt length is not stated (4,000 assumed: its decode's mean KV length is 4,989)
PREFIX_HIT = {"deepseek-day6-prefill-per-node": (0.563, 4000)}
PER_DEVICE_BATCH = {"lmsys-96xh100-decode-simulated-mtp", "lmsys-k2-128xh200-decode-per-node"}
#: rows whose source runs attention in FP8 over an FP8 cache: Ant Group's headline and tiers ("FP8 MLA",
#: "Fa3-FP8: By introducing FP8 quantization in the attention module", among the optimizations measured)
FP8_ATTENTION = {"antgroup-h20-prefill-per-node", "antgroup-h20-decode-per-node", "antgroup-h20-decode-sla-base",
                 "antgroup-h20-decode-sla-pro", "antgroup-h20-decode-sla-max", "antgroup-h20-decode-ep32-bs32"}
#: decode rows run with DeepSeek's MTP module drafting (SGLang NEXTN): (drafted tokens per round, the
#: accepted length the source states, tokens a round yields). Ant Group: "(steps=1, topK=1,
#: draft-tokens=2) → Accept length ≈ 1.8–1.9", "(steps=2, topK=1, draft-tokens=3) → Accept length ≈
#: 2.4–2.7" (midpoints); the EP32 comparison's setting is not stated (the base one assumed)
MTP = {"antgroup-h20-decode-per-node": (1, 1.85), "antgroup-h20-decode-sla-base": (1, 1.85),
       "antgroup-h20-decode-sla-pro": (1, 1.85), "antgroup-h20-decode-sla-max": (2, 2.55),
       "antgroup-h20-decode-ep32-bs32": (1, 1.85)}
#: MLPerf's mean prompt per model: the tokenized input lengths of its dataset files, as summarised in
#: openshift-psap/performance-dashboard mlperf-data/summaries/{deepseek-r1,llama3-1-405b}.csv @7100702
#: (from the pickles' tok_input_len): DeepSeek-R1's 4,388 samples average 803.8 tokens (the longest 3,140,
#: the submissions' max_input_len), Llama 3.1 405B's 8,313 average 9,428.6
MLPERF_PROMPT = {"deepseek-r1": 804, "llama-3.1-405b": 9429}
#: MLPerf runs the check does not express: a disaggregated interactive run (14 × TP4 prefill instances
#: beside 4 × TP4 decode ones)
NOT_EXPRESSED = ("mlperf51-gb200nvl72-l405b-interactive-dynamo-disagg",)


@dataclass
class Check:
    """How one row is predicted: catalog keys, the pool's layout, the workload, and what is compared."""

    case: str
    model: str
    hardware: str
    runtime: str
    quant: str
    kv: str
    gpus: int
    stages: int
    dp: int
    ep: bool
    prompt: int
    output: int
    how: str                      # decode-batch | decode-speed | prefill | offline
    per: str                      # node | gpu | total | user | itl
    batch: int = 0                # decode-batch: sequences in the pool
    speed_tok_s: float = 0.0      # decode-speed: the per-user speed the source states
    replicas: int = 1             # offline: independent instances in the system
    mtp: tuple[int, float] | None = None   # (drafted tokens per round, tokens a round yields)
    rate_rps: float = 0.0         # rate-itl: Poisson arrivals per instance
    network: str | None = None
    gpus_per_node: int = 8
    prefix_hit: float = 0.0       # prefill: the share of each prompt the cache already holds
    note: str = ""


def _layout(text: str, gpus: int) -> tuple[int, int, bool]:
    """(stages, attention DP, EP) of a source's layout: 'DP32+EP32', 'EP96', 'TP8', 'TP2+PP2'."""
    t = text.upper()
    if "EP" in t:
        return 1, gpus, True
    if "PP" in t:
        pp = int(t.split("PP")[1].split("+")[0])
        return pp, 1, False
    return 1, 1, False


skipped: list[str] = []


def checks() -> list[tuple[Check, float, str]]:
    """Every row of the CSV with a prediction recipe, and its measured value and unit."""
    out = []
    skipped.clear()
    hw_keys = {"H800": "h800-sxm5-80gb", "H100": "h100-sxm5-80gb", "H200": "h200-sxm-141gb", "H20-96G": "h20-96gb",
               "MI300X": "mi300x", "GB200 NVL72": "gb200-nvl72-gpu", "GB300 NVL72": "gb300-nvl72-gpu"}
    for r in csv.DictReader(CASES.open()):
        case, metric, value = r["case"], r["metric"], float(r["value"])
        model = ("kimi-k2-instruct" if "Kimi" in r["model"] else "llama-3.1-405b" if "405B" in r["model"]
                 else "deepseek-r1")
        hw = hw_keys[r["hardware"]]
        rt = "tensorrt-llm" if "TensorRT" in r["runtime"] else "vllm" if r["runtime"].startswith("vllm") else "sglang"
        quant = "nvfp4" if r["weights_format"].startswith("nvfp4") else "fp8"
        kv = "fp8" if rt == "tensorrt-llm" or case in FP8_ATTENTION else "f16"
        net = None   # each hardware's reference network (catalog: scale_out_gbit_s, with its source)
        node = int(r["gpus_per_node"] or 8)
        prompt = int(float(r["prompt_tokens"] or 0)) or ASSUMED_PROMPT
        output = int(float(r["output_tokens"] or 0)) or 1000
        common = dict(case=case, model=model, hardware=hw, runtime=rt, quant=quant, kv=kv, network=net,
                      gpus_per_node=node, prompt=prompt, mtp=MTP.get(case))
        if "tpot" in case or "ttft" in case or case.endswith("-itl") or "speed-per-user" in case:
            continue   # latency rows: the same runs' per-user speed, used as the input of their throughput rows
        if case.startswith(NOT_EXPRESSED):
            skipped.append(case)
            continue
        if case.startswith("mlperf"):
            common["prompt"] = MLPERF_PROMPT[model]
        if r["mode"] == "disaggregated" and metric.startswith("input"):
            g = int(r["prefill_gpus"])
            st, dp, ep = _layout(r["prefill_layout"], g)
            hit, length = PREFIX_HIT.get(case, (0.0, prompt))
            out.append((Check(**{**common, "prompt": length}, gpus=g, stages=st, dp=dp, ep=ep, output=1,
                              how="prefill", per="node" if "node" in metric else "gpu", prefix_hit=hit,
                              note=f"{hit:.1%} of {length:,} tokens cached (assumed length)" if hit else ""),
                        value, r["unit"]))
            continue
        if case in KV_LENGTH:
            output = DECODE_OUTPUT
            common["prompt"] = KV_LENGTH[case] - output // 2
        if r["mode"] == "disaggregated":
            g = int(r["decode_gpus"])
            st, dp, ep = _layout(r["decode_layout"], g)
            conc = int(float(r["concurrency"] or 0))
            if case in PER_DEVICE_BATCH:
                conc *= g
            if conc:
                c = Check(**common, gpus=g, stages=st, dp=dp, ep=ep, output=output, how="decode-batch",
                          per="node" if "node" in metric else "gpu", batch=conc)
            else:
                # the source's per-user speed of the same run: DeepSeek 20-22 tok/s, LMSYS ITL ~100 ms
                speed = 21.0 if case.startswith("deepseek") else 10.0
                c = Check(**common, gpus=g, stages=st, dp=dp, ep=ep, output=output, how="decode-speed",
                          per="node" if "node" in metric else "gpu", speed_tok_s=speed)
            out.append((c, value, r["unit"]))
            continue
        # MLPerf colocated: replicas of one layout in the rack
        g = int(r["decode_gpus"])
        st, dp, ep = _layout(r["decode_layout"], g)
        replicas = int(r["gpus_total"]) // g
        out_len = int(float(r["output_tokens"] or 1000))
        if "offline" in case:
            out.append((Check(**common, gpus=g, stages=st, dp=dp, ep=ep, output=out_len, how="offline",
                              per="total", replicas=replicas), value, r["unit"]))
            continue
        tpot = {"mlperf51-gb200nvl72-dsr1-server": 61.29, "mlperf51-gb300nvl72-dsr1-server": 66.14,
                "mlperf51-gb200nvl72-l405b-server": 104.77, "mlperf51-gb200nvl72-l405b-interactive": 66.62}[case]
        if model == "llama-3.1-405b":
            # long prompts share every step with the decode: the serving model at the run's arrival
            # rate per instance, its median inter-token latency against the measured TPOT
            out.append((Check(**common, gpus=g, stages=st, dp=dp, ep=ep, output=out_len, how="rate-itl",
                              per="ms", replicas=replicas, rate_rps=value / out_len / replicas,
                              note=f"{value / out_len:.2f} samples/s over {replicas} instances"), tpot, "ms TPOT p50"))
        else:
            out.append((Check(**common, gpus=g, stages=st, dp=dp, ep=ep, output=out_len, how="decode-speed",
                              per="total", replicas=replicas, speed_tok_s=1e3 / tpot,
                              note=f"at the median TPOT {tpot} ms"), value, r["unit"]))
    return out


def config_of(cat, c: Check, prompt: int) -> Config:
    """The check's deployment as one `Config` (its layout where it has one past a plain split)."""
    plain = (c.stages, c.dp, c.ep) == (1, 1, False)
    layout = None if plain else Layout(tp=c.gpus // (c.stages * c.dp), pp=c.stages, ep=c.gpus if c.ep else 1,
                                       dp_attention=c.dp)
    return Config(cat.hardware[c.hardware], cat.models[c.model], cat.quants[c.quant], cat.kv_dtypes[c.kv],
                  cat.runtimes[c.runtime], c.gpus, "tp", Workload(batch=1, prompt_tokens=prompt, output_tokens=c.output),
                  layout, c.network or "")


def predict(cat, c: Check, prompt: int | None = None) -> float:
    m = cat.models[c.model]
    lay = Layouts([(c.gpus, c.stages, c.dp, c.ep)])
    s = prompt or c.prompt
    nodes = max(1, math.ceil(c.gpus / c.gpus_per_node))
    if c.how == "prefill":
        b = 2 * c.dp
        cached = int(s * c.prefix_hit)
        r = sweep(cat, m, Workload(batch=b, prompt_tokens=s - cached, output_tokens=1, depth_tokens=cached),
                  hardware=[c.hardware], runtimes=[c.runtime], quants=[c.quant], kv_dtypes=[c.kv], layouts=lay,
                  network=c.network)
        # input tokens per second, the cached ones counted as the source counts them
        tok_s = float(r.values["prefill_tok_s"][0]) * s / (s - cached)
        return tok_s / nodes if c.per == "node" else tok_s / c.gpus
    if c.how == "rate-itl":
        from advisor.model.serving import Load, serve

        report = serve(cat, config_of(cat, c, s), Load(kind="open", rate_rps=c.rate_rps, prompt_tokens=s, output_tokens=c.output))
        return float(report.tpot_ms)   # MLPerf's TPOT: (latency − TTFT) / (tokens − 1) per request
    r = sweep(cat, m, Workload(batch=1, prompt_tokens=s, output_tokens=c.output), hardware=[c.hardware],
              runtimes=[c.runtime], quants=[c.quant], kv_dtypes=[c.kv], layouts=lay, network=c.network,
              batch=BATCHES)
    v = r.values
    if len(r) == 0:
        return math.nan
    per_user, fits_b = v["decode_tok_s"], np.asarray(v["max_batch"])
    if c.mtp:
        per_user = mtp_speed(cat, c, s)
    total = BATCHES * per_user
    room = int(fits_b[0])
    if c.how == "decode-batch":
        tok_s = float(np.interp(c.batch, BATCHES, total))
    elif c.how == "decode-speed":
        ok = (per_user >= c.speed_tok_s) & (BATCHES <= room)
        tok_s = float(total[ok].max()) if ok.any() else math.nan
        tok_s *= c.replicas
    else:   # offline: a static batch as large as the cache holds, prompts first then the outputs
        b = min(room, int(BATCHES[-1]))
        w = sweep(cat, m, Workload(batch=max(b, 1), prompt_tokens=s, output_tokens=c.output), hardware=[c.hardware],
                  runtimes=[c.runtime], quants=[c.quant], kv_dtypes=[c.kv], layouts=lay, network=c.network)
        t = float(w.values["prefill_s"][0]) + c.output / float(w.values["decode_tok_s"][0])
        tok_s = b * c.output / t * c.replicas
    if c.per == "node":
        return tok_s / nodes
    if c.per == "gpu":
        return tok_s / c.gpus
    return tok_s


def mtp_speed(cat, c: Check, prompt: int) -> np.ndarray:
    """Per-sequence decode speed over BATCHES with DeepSeek's MTP module drafting: a round is k steps
    of the module (one decoder layer with the target's output head: its active parameters as the
    tool's draft head) and one verification step of k + 1 tokens per sequence, and yields the
    source's accepted length."""
    k, tokens = c.mtp
    m = cat.models[c.model]
    g = geometry(m)
    layer_b = (g.flops_params_per_token - g.output_params) / m.layers / 1e9
    cfg = config_of(cat, c, prompt)
    eff = efficiency_for(cat.profiles, cfg.runtime, cfg.hardware)
    verify = evaluate_config(cfg, eff, batch=BATCHES.astype(float), query_tokens=float(k + 1))
    head = head_model(m, layer_b, 1)
    draft = evaluate_config(cfg.replace(model=head), eff, batch=BATCHES.astype(float))
    return tokens / (k / np.asarray(draft.decode_tok_s) + 1.0 / np.asarray(verify.decode_tok_s))


#: LMSYS's two-batch-overlap ablation on H100s (lmsys.org 2025-05-05, "Ablation Study: Two-batch
#: Overlap"): decode at 128 sequences per GPU with 4,000 tokens of cache (EP72 over 9 nodes), 17,552
#: tok/s per node with it and 12,929 without; prefill at the same tokens per GPU (8,192: two 4,096-token
#: prompts; EP32 over 4 nodes) "a 27% to 35% throughput increase"
TBO_ABLATION = {"decode": (17552 / 12929,), "prefill": (1.27, 1.35)}


def overlap_shares(cat) -> dict[str, list[float]]:
    """The share of the shorter of (kernels, all-to-all) that LMSYS's measured TBO gains leave exposed,
    with this kernel's times for those runs: the pass with perfect overlap (t0) and with none (t1);
    measured t1 / t = gain, t = t0 + x·(t1 − t0)."""
    from advisor.model import roofline

    m = cat.models["deepseek-v3"]
    runs = {"decode": (Layouts([(72, 1, 72, True)]), Workload(batch=1, prompt_tokens=3500, output_tokens=1000),
                       dict(batch=[128 * 72])),
            "prefill": (Layouts([(32, 1, 32, True)]), Workload(batch=64, prompt_tokens=4096, output_tokens=1), {})}
    saved, out = roofline.TBO_EXPOSED, {}
    try:
        for what, (lay, w, extra) in runs.items():
            times = []
            for exposed in (0.0, 1.0):
                roofline.TBO_EXPOSED = exposed
                v = sweep(cat, m, w, hardware=["h100-sxm5-80gb"], runtimes=["sglang"], quants=["fp8"],
                          kv_dtypes=["f16"], layouts=lay, **extra).values
                times.append(1.0 / float(v["decode_tok_s"][0]) if what == "decode" else float(v["prefill_s"][0]))
            t0, t1 = times
            out[what] = [(t1 / gain - t0) / (t1 - t0) for gain in TBO_ABLATION[what]]
    finally:
        roofline.TBO_EXPOSED = saved
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--markdown", action="store_true")
    args = ap.parse_args()
    cat = user_catalog()
    rows, errors = [], []
    for c, measured, unit in checks():
        p = predict(cat, c)
        err = p / measured - 1.0 if math.isfinite(p) else math.nan
        if math.isfinite(err):
            errors.append(abs(err))
        layout = f"{c.gpus} GPUs " + ("DP+EP" if c.ep else f"TP{c.gpus // c.stages}+PP{c.stages}" if c.stages > 1
                                      else f"TP{c.gpus}")
        rows.append([c.case, c.hardware, layout, c.how, f"{measured:,.0f}", f"{p:,.0f}",
                     f"{err:+.0%}" if math.isfinite(err) else "—", unit, c.note])
    head = ["case", "hardware", "pool", "how", "measured", "predicted", "error", "unit", "note"]
    print((markdown_table if args.markdown else table)(head, rows))
    if errors:
        within = sum(e <= 0.25 for e in errors)
        print(f"\n{len(errors)} checks: median |error| {statistics.median(errors):.0%}; "
              f"{within} within 25 %")
    if skipped:
        print(f"not checked (a deployment the check does not express): {', '.join(skipped)}")
    from advisor.model.roofline import TBO_EXPOSED
    shares = overlap_shares(cat)
    print(f"two-batch overlap: LMSYS's measured gains leave {shares['decode'][0]:.2f} of the shorter part exposed "
          f"in decode, {min(shares['prefill']):.2f}–{max(shares['prefill']):.2f} in prefill (the kernel uses "
          f"{TBO_EXPOSED})")


if __name__ == "__main__":
    main()
