#!/usr/bin/env python
"""Run aiconfigurator 0.12.0 agg (IFB) single-point estimates for every deduped
deployment+load in cases.csv (beside this script) and write predictions-0.12.0.csv.

Usage: python3.11 -m venv /tmp/aicvenv && /tmp/aicvenv/bin/pip install aiconfigurator==0.12.0
       /tmp/aicvenv/bin/python benchmarks/aiconfigurator/run_aic.py [--database-mode SILICON|HYBRID] [--out PATH]
"""
import argparse, csv, json, logging, os, re, signal, sys, time, traceback

from aiconfigurator.cli.api import cli_estimate
from aiconfigurator.sdk import common as aic_common
import aiconfigurator

from pathlib import Path
HERE = Path(__file__).resolve().parent

ap = argparse.ArgumentParser()
ap.add_argument("--database-mode", default="SILICON")
ap.add_argument("--out", default=str(HERE / "predictions-0.12.0.csv"))
ap.add_argument("--only-failed-from", default=None, help="only re-run keys whose status != ok in this csv")
ap.add_argument("--timeout", type=int, default=300)
args = ap.parse_args()

logging.getLogger("aiconfigurator").setLevel(logging.ERROR)
LOCAL = str(HERE / "model_configs") + "/"

# ---------------- mapping: our keys -> aiconfigurator ----------------
SYSTEM = {"b200-hgx": "b200_sxm", "h100-sxm5-80gb": "h100_sxm",
          "h200-sxm-141gb": "h200_sxm", "a100-sxm4-80gb": "a100_sxm"}
BACKEND = {"vllm": "vllm", "sglang": "sglang", "tensorrt-llm": "trtllm"}

# (our model name, quant) -> (aic model_path, is_moe, unsupported_arch or None, note)
def map_model(model, quant):
    if model == "DeepSeek-R1-0528":
        return "deepseek-ai/DeepSeek-R1", True, None, "bundled DeepSeek-R1 config (same DeepseekV3 arch/FP8-block ckpt as R1-0528)"
    if model == "Kimi-K2-Instruct":
        return LOCAL + "moonshotai--Kimi-K2-Instruct", True, None, "local dir = aiconfigurator_core/model_configs/moonshotai--Kimi-K2-Instruct_config.json (bundled, but not in offline default list)"
    if model == "Llama-3.1-70B":
        return "meta-llama/Meta-Llama-3.1-70B", False, None, ""
    if model == "Llama-3.1-8B":
        return "meta-llama/Meta-Llama-3.1-8B", False, None, ""
    if model == "NVIDIA-Nemotron-3-Nano-30B-A3B-BF16":
        return "nvidia/NVIDIA-Nemotron-3-Nano-30B-A3B-BF16", True, None, ""
    if model == "NVIDIA-Nemotron-3-Nano-30B-A3B-FP8":
        return LOCAL + "nvidia--NVIDIA-Nemotron-3-Nano-30B-A3B-FP8", True, None, "local dir = bundled BF16 config + ModelOpt hf_quant_config {quant_algo: FP8, kv_cache_quant_algo: FP8} (pattern of bundled Nemotron-3-Super/Ultra-FP8)"
    if model == "Qwen3-235B-A22B-Instruct-2507":
        return "Qwen/Qwen3-235B-A22B", True, None, "Qwen3-235B-A22B config (same arch as Instruct-2507)"
    if model == "Qwen3-8B":
        if quant == "fp8":
            return LOCAL + "Qwen--Qwen3-8B-FP8", False, None, "local dir = bundled Qwen3-8B config + quantization_config of bundled Qwen3-32B-FP8 (fp8 e4m3, 128x128 block, dynamic) = Qwen/Qwen3-8B-FP8"
        return "Qwen/Qwen3-8B", False, None, ""
    if model == "gpt-oss-120b":
        return "openai/gpt-oss-120b", True, None, ""
    if model == "gpt-oss-20b":
        return "openai/gpt-oss-20b", True, None, ""
    if model == "GLM-4.6":
        return "zai-org/GLM-4.6", True, "Glm4MoeForCausalLM", ""
    if model == "GLM-4.7-Flash":
        return "zai-org/GLM-4.7-Flash", True, "Glm4MoeLiteForCausalLM", ""
    if model == "Qwen3-Next-80B-A3B-Instruct":
        return "Qwen/Qwen3-Next-80B-A3B-Instruct", True, "Qwen3NextForCausalLM", ""
    raise KeyError(model)


def map_parallel(parallel, n_gpus, is_moe):
    """Return dict(tp_size, attention_dp_size, moe_tp_size, moe_ep_size, attention_backend)."""
    p = parallel
    ab = None
    m = re.search(r"attention backend:\s*(\w+)", p)
    if m:
        ab = m.group(1)
    tp = int(re.search(r"TP(\d+)", p).group(1))
    dp = int(re.search(r"DP(\d+)", p).group(1)) if re.search(r"DP(\d+)", p) else 1
    ep = int(re.search(r"EP(\d+)", p).group(1)) if re.search(r"EP(\d+)", p) else 1
    assert tp == n_gpus, (parallel, n_gpus)
    if "dp-attention" in p:
        # SGLang --tp T --dp D --enable-dp-attention: attention TP = T/D per DP rank,
        # MoE spans all T GPUs: moe_ep = --ep (default 1), moe_tp = T/ep.
        att_tp = tp // dp
        out = dict(tp_size=att_tp, attention_dp_size=dp, moe_tp_size=tp // ep, moe_ep_size=ep)
    else:
        out = dict(tp_size=tp, attention_dp_size=1)
        if is_moe:
            out.update(moe_tp_size=tp // ep, moe_ep_size=ep)
    out["attention_backend"] = ab
    return out


def fnum(x):
    return f"{x:.6g}" if isinstance(x, (int, float)) else ""


class Timeout(Exception):
    pass


def _alarm(signum, frame):
    raise Timeout()


signal.signal(signal.SIGALRM, _alarm)

rows = list(csv.DictReader(open(HERE / "cases.csv")))
print(f"aiconfigurator {getattr(aiconfigurator, '__version__', '?')}; {len(rows)} rows; database_mode={args.database_mode}", flush=True)

only_keys = None
if args.only_failed_from:
    prev = {r["case_id"]: r for r in csv.DictReader(open(args.only_failed_from))}
    only_keys = set()

def key_of(r):
    return (r["model"], r["gpu"], r["n_gpus"], r["parallel"], r["backend"], r["runtime_version"], r["quant"],
            int(round(float(r["isl"]))), int(round(float(r["osl"]))), int(round(float(r["concurrency"]))))

groups = {}
for r in rows:
    groups.setdefault(key_of(r), []).append(r["case_id"])
if args.only_failed_from:
    groups = {k: v for k, v in groups.items() if prev[v[0]]["status"] != "ok"}
print(f"{len(groups)} unique deployment+load keys", flush=True)

results = {}
t_all = time.time()
for i, (k, cids) in enumerate(sorted(groups.items())):
    model, gpu, n_gpus, parallel, backend, rtv, quant, isl, osl, conc = k
    system = SYSTEM.get(gpu)
    be = BACKEND.get(backend)
    model_path, is_moe, bad_arch, model_note = map_model(model, quant)
    par = map_parallel(parallel, int(n_gpus), is_moe)
    dp = par["attention_dp_size"]
    bs = max(1, conc // dp)
    modeled_conc = bs * dp
    res = dict(aic_ttft_ms="", aic_tpot_ms="", aic_throughput_tok_s="", aic_system=system or "", aic_backend=be or "",
               aic_backend_version="", aic_model=model_path.replace(LOCAL, "local:"), aic_mode="", status="",
               aic_modeled_concurrency=str(modeled_conc), aic_parallel="", aic_quant="", aic_notes=model_note)
    mode_desc = (f"cli_estimate(mode='agg', database_mode={args.database_mode}) = `aiconfigurator cli estimate --estimate-mode agg`; "
                 f"IFB steady state, batch_size(per attention-DP rank)={bs}"
                 + (f" x attention_dp={dp}" if dp > 1 else "") + f" = max concurrent requests {modeled_conc} (measured closed-loop concurrency {conc}); "
                 f"ctx_tokens=isl={isl}")
    res["aic_mode"] = mode_desc
    t0 = time.time()
    if bad_arch is not None:
        assert bad_arch not in aic_common.ARCHITECTURE_TO_MODEL_FAMILY
        res["status"] = f"unsupported model: architecture {bad_arch} not supported by aiconfigurator 0.12.0 (no model family / no bundled config)"
    else:
        kw = dict(model_path=model_path, system_name=system, mode="agg", backend_name=be,
                  database_mode=args.database_mode, isl=isl, osl=osl, batch_size=bs,
                  tp_size=par["tp_size"], pp_size=1, attention_dp_size=dp,
                  moe_tp_size=par.get("moe_tp_size"), moe_ep_size=par.get("moe_ep_size"),
                  attention_backend=par["attention_backend"])
        try:
            signal.alarm(args.timeout)
            r = cli_estimate(**kw)
            signal.alarm(0)
            raw = r.raw
            res.update(aic_ttft_ms=fnum(r.ttft), aic_tpot_ms=fnum(r.tpot), aic_throughput_tok_s=fnum(raw["tokens/s"]),
                       aic_backend_version=str(r.backend_version),
                       aic_modeled_concurrency=str(raw.get("concurrency")),
                       aic_parallel=str(raw.get("parallel")) + (f" attention_backend={par['attention_backend']}" if par["attention_backend"] else ""),
                       aic_quant=f"gemm={raw.get('gemm')} moe={raw.get('moe')} kv={raw.get('kvcache')} fmha={raw.get('fmha')} comm={raw.get('comm')}",
                       status="ok")
            notes = [model_note] if model_note else []
            if r.kv_cache_warning:
                notes.append("KV-cache warning: " + r.kv_cache_warning)
            srcs = set()
            for step, d in (r.per_ops_source or {}).items():
                for op, s in d.items():
                    srcs.add(str(s))
            if srcs:
                notes.append("per-op data sources: " + "/".join(sorted(srcs)))
            if getattr(r, "moe_comm_fallbacks", None):
                notes.append(f"moe comm fallbacks: {len(r.moe_comm_fallbacks)}")
            if modeled_conc != conc:
                notes.append(f"modeled concurrency {modeled_conc} != measured {conc} (attention-DP needs >=1 request per DP rank); throughput is for {modeled_conc} concurrent requests")
            res["aic_notes"] = " | ".join(notes)
        except Timeout:
            res["status"] = f"timeout after {args.timeout}s"
        except Exception as e:
            signal.alarm(0)
            msg = f"{type(e).__name__}: {e}".replace("\n", " ")
            res["status"] = "aiconfigurator error: " + msg[:400]
    for c in cids:
        results[c] = res
    print(f"[{i+1}/{len(groups)}] {time.time()-t0:5.1f}s {model} {gpu} {parallel} {backend} {quant} isl={isl} osl={osl} conc={conc} -> "
          f"{res['status'][:90]} ttft={res['aic_ttft_ms']} tpot={res['aic_tpot_ms']} tput={res['aic_throughput_tok_s']}", flush=True)

cols = ["case_id", "aic_ttft_ms", "aic_tpot_ms", "aic_throughput_tok_s", "aic_system", "aic_backend",
        "aic_backend_version", "aic_model", "aic_mode", "status",
        "aic_modeled_concurrency", "aic_parallel", "aic_quant", "aic_notes"]
with open(args.out, "w", newline="") as f:
    w = csv.DictWriter(f, fieldnames=cols)
    w.writeheader()
    for r in rows:
        if r["case_id"] in results:
            w.writerow(dict(case_id=r["case_id"], **results[r["case_id"]]))
print(f"wrote {args.out} in {time.time()-t_all:.1f}s", flush=True)
