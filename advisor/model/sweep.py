"""Price many configurations of one model in one vectorised call.

The catalog is turned once into lookup tables (one row per hardware, runtime, quantization, KV
dtype; efficiency and peak tables per pair). A sweep is then a flat list of index tuples
(hardware, runtime, quant, kv, gpus, batch), filtered to the combinations that can run at all,
gathered from the tables and handed to `advisor.model.roofline.evaluate` in one go.
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from advisor.data.catalog import Catalog
from advisor.model.devices import link_gb_s, max_gpus, peak_for, usable_memory_gb
from advisor.model.efficiency import efficiency_for
from advisor.model.geometry import geometry, weight_bits
from advisor.model.roofline import Workload, evaluate
from advisor.data.specs import COMPUTE_DTYPES, Model

_EFF_FIELDS = ("decode_bw_fraction", "layer_overhead_us", "step_overhead_us", "prefill_compute_fraction",
               "attention_compute_fraction", "allreduce_latency_us", "decode_low", "decode_high", "prefill_low", "prefill_high")


class _Flat(dict):
    """Result arrays shaped (configurations, batches), flattened on first access only: a caller
    that reads five of the fifty outputs should not pay for copying the other forty-five."""

    def __init__(self, raw: dict, shape: tuple[int, int]):
        super().__init__()
        self._raw, self._shape = raw, shape

    def __getitem__(self, key):
        if not super().__contains__(key):
            super().__setitem__(key, np.broadcast_to(self._raw[key], self._shape).ravel())
        return super().__getitem__(key)

    def __contains__(self, key):
        return key in self._raw or super().__contains__(key)

    def keys(self):
        return self._raw.keys()

    def items(self):
        return ((k, self[k]) for k in self._raw)

    def __iter__(self):
        return iter(self._raw)

    def __len__(self):
        return len(self._raw)


class Tables:
    """The catalog as numpy arrays, built once per catalog object."""

    def __init__(self, cat: Catalog):
        self.hardware = list(cat.hardware.values())
        self.runtimes = list(cat.runtimes.values())
        self.quants = list(cat.quants.values())
        self.kv_dtypes = list(cat.kv_dtypes.values())
        hw, rt, q, kv = self.hardware, self.runtimes, self.quants, self.kv_dtypes
        self.hw_index = {h.key: i for i, h in enumerate(hw)}
        self.rt_index = {r.key: i for i, r in enumerate(rt)}
        self.q_index = {x.key: i for i, x in enumerate(q)}
        self.kv_index = {x.key: i for i, x in enumerate(kv)}

        self.bw = np.array([h.bandwidth_gb_s for h in hw])
        self.capacity = np.array([usable_memory_gb(h) for h in hw])
        self.link = np.array([link_gb_s(h) for h in hw])
        self.max_gpus = np.array([max_gpus(h) for h in hw])

        self.mem_fraction = np.array([r.memory_fraction for r in rt])
        self.mem_of_free = np.array([r.memory_fraction_of == "free" for r in rt])
        self.reserve = np.array([r.reserve_gb for r in rt])
        self.overhead = np.array([r.overhead_gb for r in rt])
        self.ws_tokens = np.array([r.workspace_tokens for r in rt], dtype=float)
        self.tensor_parallel = np.array([r.parallelism == "tp" for r in rt])

        bits = [weight_bits(x) for x in q]
        self.b_non_expert = np.array([b.non_expert for b in bits])
        self.b_expert = np.array([b.expert for b in bits])
        self.b_embedding = np.array([b.embedding for b in bits])
        self.b_head = np.array([b.head for b in bits])
        self.kv_bits = np.array([x.bits for x in kv])

        # peak per (hardware, runtime, quant): the runtime may run a format at another dtype. The
        # dtype depends on (runtime, quant, vendor) only, so look up per-hardware peaks by dtype.
        dtypes = list(COMPUTE_DTYPES)
        peak_by_dtype = np.array([[peak_for(h, d_)[0] for d_ in dtypes] for h in hw])
        vendors = sorted({h.vendor for h in hw})
        dtype_idx = {v_: np.array([[dtypes.index(r.compute_for(x, v_)) for x in q] for r in rt]) for v_ in vendors}
        self.peak = np.empty((len(hw), len(rt), len(q)))
        for i, h in enumerate(hw):
            self.peak[i] = peak_by_dtype[i][dtype_idx[h.vendor]]
        effs = [[efficiency_for(cat.profiles, r, h) for r in rt] for h in hw]
        self.eff = {f: np.array([[getattr(e, f) for e in row] for row in effs]) for f in _EFF_FIELDS}
        self.eff_level = np.array([[e.level for e in row] for row in effs])

        self.ok_hw_rt = np.array([[not r.vendors or h.vendor in r.vendors for r in rt] for h in hw])
        self.ok_rt_q = np.array([[not x.runtimes or r.format_family in x.runtimes for x in q] for r in rt])
        self.ok_rt_kv = np.array([[not x.runtimes or r.format_family in x.runtimes for x in kv] for r in rt])


_tables: "weakref.WeakKeyDictionary[Catalog, Tables]" = weakref.WeakKeyDictionary()


def tables_for(cat: Catalog) -> Tables:
    t = _tables.get(cat)
    if t is None:
        t = Tables(cat)
        _tables[cat] = t
    return t


@dataclass(frozen=True)
class SweepResult:
    """Flat arrays, one element per configuration that can run."""

    model: Model
    tables: Tables
    hw: np.ndarray
    rt: np.ndarray
    q: np.ndarray
    kv: np.ndarray
    gpus: np.ndarray
    batch: np.ndarray
    values: dict[str, np.ndarray]

    def __len__(self) -> int:
        return int(self.hw.size)

    def row(self, i: int) -> dict:
        t = self.tables
        out = {"hardware": t.hardware[self.hw[i]], "runtime": t.runtimes[self.rt[i]], "quant": t.quants[self.q[i]],
               "kv_dtype": t.kv_dtypes[self.kv[i]], "gpus": int(self.gpus[i]), "batch": int(self.batch[i])}
        out.update({k: v[i] for k, v in self.values.items()})
        return out


def _indices(keys: Sequence[str] | None, index: dict[str, int]) -> np.ndarray:
    if keys is None:
        return np.arange(len(index))
    return np.array([index[k] for k in keys], dtype=int)


def sweep(cat: Catalog, model: Model, workload: Workload, *, hardware: Sequence[str] | None = None,
          runtimes: Sequence[str] | None = None, quants: Sequence[str] | None = None,
          kv_dtypes: Sequence[str] | None = ("f16",), gpus: Sequence[int] = (1,),
          batch: Sequence[int] | None = None, memory_only: bool = False) -> SweepResult:
    """Evaluate every runnable combination of the given keys (None = all) for ``model``.

    ``batch`` defaults to the workload's batch. Combinations a runtime cannot run (vendor, weight
    format, KV dtype, more GPUs than the hardware is used with) are dropped, not evaluated.
    """
    t = tables_for(cat)
    hi, ri, qi, ki = (_indices(hardware, t.hw_index), _indices(runtimes, t.rt_index), _indices(quants, t.q_index),
                      _indices(kv_dtypes, t.kv_index))
    # which (hardware, runtime, quant, kv) combinations can run at all: a small 4-D boolean grid
    ok = (t.ok_hw_rt[np.ix_(hi, ri)][:, :, None, None] & t.ok_rt_q[np.ix_(ri, qi)][None, :, :, None]
          & t.ok_rt_kv[np.ix_(ri, ki)][None, :, None, :])
    if not model.is_moe:  # formats that quantize only the routed experts do not apply to dense models
        ok &= np.array([t.quants[x].non_expert_bits_per_weight is None for x in qi])[None, None, :, None]
    a, b_, c, d = np.nonzero(ok)
    h, r, q, k = hi[a], ri[b_], qi[c], ki[d]
    g_axis = np.asarray(gpus, dtype=int)
    g = np.repeat(g_axis[None, :], h.size, axis=0).ravel()
    h, r, q, k = (np.repeat(x, g_axis.size) for x in (h, r, q, k))
    fits_count = g <= t.max_gpus[h]
    h, r, q, k, g = h[fits_count], r[fits_count], q[fits_count], k[fits_count], g[fits_count]
    batches = np.asarray(batch if batch is not None else (workload.batch,), dtype=int)
    # per-configuration inputs are columns (N, 1) and batch is a row (1, B): terms that do not
    # depend on the batch are computed once per configuration
    col = (lambda x: x[:, None])
    geo = geometry(model)
    values = evaluate(
        geo, bw_gb_s=col(t.bw[h]), capacity_gb=col(t.capacity[h]), peak_tflops=col(t.peak[h, r, q]),
        link_gb_s_=col(t.link[h]), b_non_expert=col(t.b_non_expert[q]), b_expert=col(t.b_expert[q]),
        b_embedding=col(t.b_embedding[q]), b_head=col(t.b_head[q]), kv_bits=col(t.kv_bits[k]),
        memory_fraction=col(t.mem_fraction[r]), memory_of_free=col(t.mem_of_free[r]), reserve_gb=col(t.reserve[r]),
        overhead_gb=col(t.overhead[r]), workspace_tokens=col(t.ws_tokens[r]), allreduce_us=col(t.eff["allreduce_latency_us"][h, r]),
        tensor_parallel=col(t.tensor_parallel[r]), eta_bw=col(t.eff["decode_bw_fraction"][h, r]),
        tau_layer_us=col(t.eff["layer_overhead_us"][h, r]), tau_step_us=col(t.eff["step_overhead_us"][h, r]),
        eta_compute=col(t.eff["prefill_compute_fraction"][h, r]),
        eta_attention=col(t.eff["attention_compute_fraction"][h, r]), gpus=col(g), batch=batches[None, :],
        prompt=workload.prompt_tokens, output=workload.output_tokens, depth=workload.depth_tokens,
        memory_only=memory_only, dtype=np.float32,
    )
    shape = (h.size, batches.size)
    values = _Flat(values, shape)
    nb = batches.size
    h, r, q, k, g = (np.repeat(x, nb) for x in (h, r, q, k, g))
    b = np.tile(batches, shape[0])
    for band in ("decode_low", "decode_high", "prefill_low", "prefill_high"):
        values[band] = t.eff[band][h, r]
    return SweepResult(model, t, h, r, q, k, g, b, values)
