"""One engine step of the continuous-batching scheduler the serving model describes, shared by the
step-by-step simulators its tests hold it to (tests/core/test_serving.py, tests/core/test_batch_run.py)."""

from __future__ import annotations


def fill_prompt_budget(prefill, n_decoding: int, step_tokens: int) -> int:
    """Spend what a step's token budget leaves beside ``n_decoding`` decoding sequences (at least one
    token, so prompts always move) on the prompts waiting in ``prefill`` ([request, tokens left]
    lists, first come first served), and return the prompt tokens the step carries."""
    budget, carried = max(step_tokens - n_decoding, 1), 0
    for r in prefill:
        take = min(r[1], budget - carried)
        if take <= 0:
            break
        r[1] -= take
        carried += take
    return carried
