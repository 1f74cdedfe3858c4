"""Late-2023 llama.cpp split every matrix by rows over the GPUs and waited on each GPU in turn:
its synchronisation cost grows with the GPU count (`Runtime.allreduce_per_device`)."""

from dataclasses import replace

from advisor.model.config import configure
from advisor.model.predict import predict


def decode(cat, gpus):
    cfg = configure(cat, hardware="rtx 3090", model="llama 2 7b", quant="q4_0", runtime="llama.cpp-2023",
                    gpus=gpus, prompt=512)
    return predict(cat, cfg).decode_tok_s


def test_more_gpus_slow_a_small_model_under_the_2023_row_split(cat):
    assert cat.runtime_named("llama.cpp-2023").allreduce_per_device
    one, two, three, six = (decode(cat, n) for n in (1, 2, 3, 6))
    assert one > two > three > six
    # as measured (xiongjiedai's 3090 rows, Llama 2 7B Q4_0): six GPUs decode at a quarter of one
    assert six < 0.5 * one


def test_an_exchange_costs_one_latency_per_gpu_only_where_the_runtime_says_so(cat):
    cfg = configure(cat, hardware="H100 SXM", model="llama 3.1 70b", runtime="vllm", gpus=4)
    assert not cfg.runtime.allreduce_per_device
    per_device = replace(cfg, runtime=replace(cfg.runtime, allreduce_per_device=True))
    assert predict(cat, per_device).decode_tok_s < predict(cat, cfg).decode_tok_s
