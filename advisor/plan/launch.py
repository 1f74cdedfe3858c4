"""The command that starts a recommended configuration, per runtime.

Each runtime's `launch` template in catalog/runtimes.yaml has {placeholders}; this module fills
them with the configuration's values and the runtime's own spelling of each option.
"""

from __future__ import annotations

import re

from advisor.data.specs import Model, Quant

#: KV dtype spellings per runtime family (our key → the runtime's flag value)
KV_FLAG = {
    "vllm": {"f16": "auto", "bf16": "auto", "fp8": "fp8"},
    "sglang": {"f16": "auto", "bf16": "auto", "fp8": "fp8_e5m2"},
    "llama.cpp": {},  # llama.cpp's -ctk/-ctv take our keys as they are (f16, q8_0, q4_0 …)
}
#: Families whose launch line gives each user a slot of its own with the whole context reserved up
#: front (llama-server with an explicit -np: -c is the total over the slots, c / np each).
FIXED_SLOTS = frozenset({"llama.cpp"})
#: vLLM/SGLang --quantization for checkpoints that need it (an FP8 or AWQ checkpoint declares it itself)
QUANT_FLAG = {"fp8": "fp8", "awq-int4": "awq", "gptq-int8": "gptq", "nf4": "bitsandbytes"}


def model_repo(m: Model) -> str:
    """The Hugging Face repository id people pass to serving engines, if the catalog knows one."""
    for alias in m.aliases:
        if re.fullmatch(r"[\w.-]+/[\w.-]+", alias):
            return alias
    return m.name


def gguf_file(m: Model, q: Quant) -> str:
    return f"{m.key}-{q.name.split()[0]}.gguf"


def launch_line(c, req) -> str:
    """Fill the runtime's template for candidate ``c`` (an `advisor.plan.recommend.Candidate`)."""
    rt = c.runtime
    if not rt.launch:
        return ""
    family = rt.format_family
    kv = KV_FLAG.get(family, {}).get(c.kv_dtype.key, c.kv_dtype.key)
    quant_flag = ""
    if family in ("vllm", "sglang") and c.quant.key in QUANT_FLAG:
        quant_flag = f" --quantization {QUANT_FLAG[c.quant.key]}"
    split = ""
    if family == "llama.cpp" and c.gpus > 1:
        split = " -sm layer -ts " + ",".join(["1"] * c.gpus)
    # llama-server divides -c among its -np slots: ask for every user's whole context
    context = req.context * c.users if family in FIXED_SLOTS else req.context
    values = {
        "model_repo": model_repo(req.model), "model_file": gguf_file(req.model, c.quant), "context": context,
        "parallel": c.users, "kv": kv, "tp": c.gpus, "memory_fraction": rt.memory_fraction, "quant_flag": quant_flag,
        "split": split, "output": req.output_tokens,
    }
    line = rt.launch
    for k, v in values.items():
        line = line.replace("{" + k + "}", str(v))
    return line
