"""Price many configurations of one model in one vectorised call.

The catalog is turned once into lookup tables (`advisor.model.inputs.Tables`). A sweep is then a
flat list of index tuples (hardware, runtime, quant, kv, gpus), filtered to the combinations that
can run at all (`advisor.model.compat`), gathered into the kernel's `Inputs` as a column against
a row of batch sizes and handed to `advisor.model.roofline.evaluate` in one go.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Iterator, Sequence

import numpy as np

from advisor.data.catalog import Catalog
from advisor.data.specs import Model
from advisor.model.geometry import geometry
from advisor.model.inputs import Tables, tables_for
from advisor.model.roofline import Result, Workload, evaluate


class FlatValues(Mapping):
    """A `Result` of (batches, configurations) arrays read as flat arrays, one element per
    batch × configuration. Flattened on first access only: a caller that reads five of the
    fifty fields does not pay for copying the other forty-five."""

    def __init__(self, result: Result, shape: tuple[int, int]):
        self._result, self._shape = result, shape
        self._names = result.names()
        self._flat: dict[str, np.ndarray] = {}

    def __getitem__(self, key: str) -> np.ndarray:
        v = self._flat.get(key)
        if v is None:
            if key not in self._names:
                raise KeyError(key)
            v = np.broadcast_to(getattr(self._result, key), self._shape).ravel()
            self._flat[key] = v
        return v

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


@dataclass(frozen=True)
class SweepResult:
    """Flat arrays, one element per configuration that can run × batch (batch-major)."""

    model: Model
    tables: Tables
    hw: np.ndarray
    rt: np.ndarray
    q: np.ndarray
    kv: np.ndarray
    gpus: np.ndarray
    batch: np.ndarray
    values: FlatValues

    def __len__(self) -> int:
        return int(self.hw.size)

    def row(self, i: int) -> dict:
        """Configuration ``i`` with every value the sweep computed for it."""
        t = self.tables
        out = {"hardware": t.hardware[self.hw[i]], "runtime": t.runtimes[self.rt[i]], "quant": t.quants[self.q[i]],
               "kv_dtype": t.kv_dtypes[self.kv[i]], "gpus": int(self.gpus[i]), "batch": int(self.batch[i])}
        out.update({k: v[i] for k, v in self.values.items()})
        return out


def sweep(cat: Catalog, model: Model, workload: Workload, *, hardware: Sequence[str] | None = None,
          runtimes: Sequence[str] | None = None, quants: Sequence[str] | None = None,
          kv_dtypes: Sequence[str] | None = ("f16",), gpus: Sequence[int] = (1,),
          batch: Sequence[int] | None = None, memory_only: bool = False) -> SweepResult:
    """Evaluate every runnable combination of the given keys (None = all) for ``model``.

    ``batch`` defaults to the workload's batch. Combinations a runtime cannot run (vendor, weight
    format, KV dtype, more GPUs than the hardware is used with) are dropped, not evaluated.
    """
    t = tables_for(cat)
    hi, ri, qi, ki = (t.indices("hardware", hardware), t.indices("runtimes", runtimes), t.indices("quants", quants),
                      t.indices("kv_dtypes", kv_dtypes))
    # which (hardware, runtime, quant, kv) combinations can run at all: a small 4-D boolean grid
    ok = (t.ok_hw_rt[np.ix_(hi, ri)][:, :, None, None] & t.ok_rt_q[np.ix_(ri, qi)][None, :, :, None]
          & t.ok_rt_kv[np.ix_(ri, ki)][None, :, None, :])
    if not model.is_moe:  # formats that quantize only the routed experts do not apply to dense models
        ok &= ~t.expert_only[qi][None, None, :, None]
    a, b_, c, d = np.nonzero(ok)
    h, r, q, k = hi[a], ri[b_], qi[c], ki[d]
    g_axis = np.asarray(gpus, dtype=int)
    g = np.repeat(g_axis[None, :], h.size, axis=0).ravel()
    h, r, q, k = (np.repeat(x, g_axis.size) for x in (h, r, q, k))
    fits_count = g <= t.max_gpus[h]
    h, r, q, k, g = h[fits_count], r[fits_count], q[fits_count], k[fits_count], g[fits_count]
    batches = np.asarray(batch if batch is not None else (workload.batch,), dtype=int)
    # per-configuration inputs are a row (1, N) and batch is a column (B, 1): terms that do not
    # depend on the batch are computed once per configuration, and the long axis is the last
    # one, so numpy's inner loops run over configurations (a short last axis is ~20× slower)
    row = (lambda x: x[None, :])
    x = t.gather(row(h), row(r), row(q), row(k), row(g).astype(np.float32), batch=batches[:, None],
                 prompt=workload.prompt_tokens, output=workload.output_tokens, depth=workload.depth_tokens)
    result = evaluate(geometry(model), x, memory_only=memory_only, dtype=np.float32)
    shape = (batches.size, h.size)
    h, r, q, k, g = (np.tile(v, batches.size) for v in (h, r, q, k, g))
    b = np.repeat(batches, shape[1])
    return SweepResult(model, t, h, r, q, k, g, b, FlatValues(result, shape))
