"""Price many configurations of one model in one vectorised call.

The catalog is turned once into lookup tables (`advisor.model.inputs.Tables`). A sweep is then a
flat list of index tuples (hardware, runtime, quant, kv, gpus), filtered to the combinations that
can run at all (`advisor.model.compat`), gathered into the kernel's `Inputs` as a column against
a row of batch sizes and handed to `advisor.model.roofline.evaluate` in one go.
"""

from __future__ import annotations

from collections.abc import Mapping
from functools import cached_property
from typing import Iterator, Sequence

import numpy as np

from advisor.data.catalog import Catalog
from advisor.data.specs import Model
from advisor.model import compat
from advisor.model.geometry import geometry
from advisor.model.inputs import Tables, tables_for
from advisor.model.layout import Layout
from advisor.model.roofline import Result, Workload, evaluate


#: Elements (configurations × batch sizes) evaluated together: each temporary array of a chunk
#: stays in the CPU's cache, which makes a large sweep ~1.5× faster than one pass over everything.
CHUNK_ELEMENTS = 16384


class FlatValues(Mapping):
    """`Result`s of (batches, configurations) arrays, one per chunk of configurations, read as
    flat arrays with one element per batch × configuration (batch-major). A field is joined on
    first access only: a caller that reads five of the fifty fields does not pay for the rest."""

    def __init__(self, results: list[Result], batches: int, sizes: list[int]):
        self._results, self._batches, self._sizes = results, batches, sizes
        self._names = results[0].names() if results else []
        self._flat: dict[str, np.ndarray] = {}
        # joined tables and first rows, kept: the recommender reads the same fields once per replica count
        self._tables: dict[str, np.ndarray] = {}
        self._first: dict[str, np.ndarray] = {}

    def __getitem__(self, key: str) -> np.ndarray:
        v = self._flat.get(key)
        if v is None:
            if key not in self._names:
                raise KeyError(key)
            parts = [np.broadcast_to(getattr(r, key), (self._batches, n)) for r, n in zip(self._results, self._sizes)]
            v = np.concatenate(parts, axis=1).ravel() if parts else np.empty(0)
            self._flat[key] = v
        return v

    def table(self, key: str) -> np.ndarray:
        """Field ``key`` as a (batches, configurations) array, without flattening."""
        v = self._tables.get(key)
        if v is None:
            if key not in self._names:
                raise KeyError(key)
            parts = [np.broadcast_to(getattr(r, key), (self._batches, n)) for r, n in zip(self._results, self._sizes)]
            v = np.concatenate(parts, axis=1) if parts else np.empty((self._batches, 0))
            v.flags.writeable = False   # shared by every reader
            self._tables[key] = v
        return v

    def first_row(self, key: str) -> np.ndarray:
        """Field ``key`` at the first batch size, one element per configuration."""
        v = self._first.get(key)
        if v is None:
            if key not in self._names:
                raise KeyError(key)
            parts = [np.broadcast_to(getattr(r, key), (self._batches, n))[0] for r, n in zip(self._results, self._sizes)]
            v = np.concatenate(parts) if parts else np.empty(0)
            v.flags.writeable = False   # shared by every reader
            self._first[key] = v
        return v

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)


class SweepResult:
    """Flat arrays, one element per configuration that can run × batch (batch-major): the index
    arrays into the tables (``hw``, ``rt``, ``q``, ``kv``), ``gpus``, ``batch`` and the ``values``."""

    def __init__(self, model: Model, tables: Tables, configs: tuple[np.ndarray, ...], batches: np.ndarray,
                 values: FlatValues, layouts: "Layouts | None" = None, layout_index: np.ndarray | None = None):
        self.model, self.tables, self.values = model, tables, values
        self._configs, self._batches = configs, batches
        self.layouts = layouts or Layouts.plain((1,))
        self._layout_index = np.zeros(configs[0].size, int) if layout_index is None else layout_index

    def _flat(self, i: int) -> np.ndarray:
        # built on first use: one configuration column repeated for every batch size
        return np.tile(self._configs[i], self._batches.size)

    hw = cached_property(lambda self: self._flat(0))
    rt = cached_property(lambda self: self._flat(1))
    q = cached_property(lambda self: self._flat(2))
    kv = cached_property(lambda self: self._flat(3))
    gpus = cached_property(lambda self: self._flat(4))
    batch = cached_property(lambda self: np.repeat(self._batches, self._configs[0].size))
    #: index into ``layouts`` of each configuration's layout (`Layouts`), one per flat element
    layout = cached_property(lambda self: np.tile(self._layout_index, self._batches.size))

    def __len__(self) -> int:
        return int(self._configs[0].size * self._batches.size)

    @property
    def configurations(self) -> tuple[np.ndarray, ...]:
        """(hardware, runtime, quant, kv, gpus) index arrays, one element per configuration."""
        return self._configs

    def row(self, i: int) -> dict:
        """Configuration ``i`` with every value the sweep computed for it."""
        t = self.tables
        out = {"hardware": t.hardware[self.hw[i]], "runtime": t.runtimes[self.rt[i]], "quant": t.quants[self.q[i]],
               "kv_dtype": t.kv_dtypes[self.kv[i]], "gpus": int(self.gpus[i]), "batch": int(self.batch[i]),
               "layout": self.layouts.layout(int(self.layout[i]))}
        out.update({k: v[i] for k, v in self.values.items()})
        return out


class Layouts:
    """The instance layouts a sweep tries, as parallel arrays (one element per layout): GPUs, pipeline
    stages, data-parallel attention groups, expert parallel. Plain layouts (stages 1, dp 1, no EP) are
    the runtime's own split of ``gpus`` GPUs: tensor parallel, or llama.cpp's layer split."""

    def __init__(self, rows: Sequence[tuple[int, int, int, bool]]):
        self.rows = tuple(rows)
        self.gpus = np.array([r[0] for r in self.rows], dtype=np.int32)
        self.stages = np.array([r[1] for r in self.rows], dtype=np.float32)
        self.dp = np.array([r[2] for r in self.rows], dtype=np.float32)
        self.ep = np.array([r[3] for r in self.rows], dtype=bool)
        self.is_plain = (self.stages == 1) & (self.dp == 1) & ~self.ep

    @classmethod
    def plain(cls, gpus: Sequence[int]) -> "Layouts":
        return cls([(int(g), 1, 1, False) for g in gpus])

    @classmethod
    def for_instances(cls, gpus: Sequence[int], moe: bool) -> "Layouts":
        """What serving engines run at each instance size: up to a node, tensor parallel (and for an
        MoE model experts spread whole with data-parallel attention); past a node, tensor-parallel
        groups of 8 in pipeline stages (and for MoE, wide EP with data-parallel attention)."""
        rows = []
        for g in gpus:
            g = int(g)
            if g <= 8:
                rows.append((g, 1, 1, False))
            else:
                rows.append((g, g // 8, 1, False))
            if moe and g > 1:
                rows.append((g, 1, g, True))
        return cls(rows)

    def layout(self, i: int) -> Layout:
        """Layout ``i`` (for a plain row, tensor parallel over its GPUs)."""
        g, st, dp, ep = self.rows[i]
        return Layout(tp=g // (st * dp), pp=st, dp_attention=dp, ep=g // st if ep else 1)

    def __len__(self) -> int:
        return len(self.rows)


def sweep(cat: Catalog, model: Model, workload: Workload, *, hardware: Sequence[str] | None = None,
          runtimes: Sequence[str] | None = None, quants: Sequence[str] | None = None,
          kv_dtypes: Sequence[str] | None = ("f16",), gpus: Sequence[int] = (1,),
          batch: Sequence[int] | None = None, memory_only: bool = False,
          layouts: Layouts | None = None, network: str | None = None) -> SweepResult:
    """Evaluate every runnable combination of the given keys (None = all) for ``model``.

    ``batch`` defaults to the workload's batch. Combinations a runtime cannot run (vendor, weight
    format, KV dtype, more GPUs than the hardware is used with) are dropped, not evaluated.
    ``layouts`` (instead of ``gpus``): instance layouts past one tensor-parallel group, each tried
    where the runtime runs it (expert parallel, multi-node), the model has the experts, and the
    hardware has the scale-up domain or a network for it; ``network``: the network between nodes
    (a key of `advisor.model.devices.NETWORKS_GBIT_S`) instead of each hardware's own.
    """
    t = tables_for(cat)
    hi, ri, qi, ki = (t.indices("hardware", hardware), t.indices("runtimes", runtimes), t.indices("quants", quants),
                      t.indices("kv_dtypes", kv_dtypes))
    # which (hardware, runtime, quant, kv) combinations can run at all: a small 4-D boolean grid
    ok = (t.ok_hw_rt[np.ix_(hi, ri)][:, :, None, None] & t.ok_rt_q[np.ix_(ri, qi)][None, :, :, None]
          & t.ok_rt_kv[np.ix_(ri, ki)][None, :, None, :]
          & t.ok_hw_rt_q[np.ix_(hi, ri, qi)][:, :, :, None] & t.ok_hw_rt_kv[np.ix_(hi, ri, ki)][:, :, None, :])
    if not model.is_moe:  # formats that quantize only the routed experts do not apply to dense models
        ok &= ~t.expert_only[qi][None, None, :, None]
    by_model = t.model_grid(model)   # the model × format axis (TensorRT-LLM's matrix per architecture)
    if by_model is not None:
        ok &= by_model[np.ix_(hi, ri, qi)][:, :, :, None]
    by_cache = t.model_cache_grid(model)   # the model × KV axis (vLLM's latent attention before Hopper)
    if by_cache is not None:
        ok &= by_cache[np.ix_(hi, ri, ki)][:, :, None, :]
    a, b_, c, d = np.nonzero(ok)
    h, r, q, k = hi[a], ri[b_], qi[c], ki[d]
    # every combination at every layout the hardware and runtime are used with
    lay = layouts or Layouts.plain(gpus)
    g_axis = lay.gpus
    net = t.hw_cols["network_gb_s"] if network is None else t.network_for(network)
    usable = (g_axis[None, :] <= t.max_gpus[h][:, None]) & lay.is_plain[None, :]
    if not lay.is_plain.all():
        # past one node: a runtime that spans nodes, on hardware whose domain holds the instance or
        # that has a network; EP: a runtime that runs it, and no more GPUs than the model has experts
        beyond = g_axis[None, :] > t.max_gpus[h][:, None]
        reach = (g_axis[None, :] <= t.hw_cols["domain_gpus"][h][:, None]) | np.isfinite(net[h])[:, None]
        wide = ~lay.is_plain[None, :] | beyond
        ok_wide = wide & t.tensor_parallel[r][:, None] & (~beyond | (t.multi_node[r][:, None] & reach)) \
            & (~lay.ep[None, :] | (t.expert_parallel[r][:, None] & (g_axis[None, :] <= max(model.experts or 0, 1))))
        usable = (usable & ~beyond) | ok_wide
    # a tensor-parallel group the engine cannot split the model's attention heads over (TP 8 of a
    # 28-head model); runtimes without such a rule (llama.cpp's layer split) pass every size
    tp_of = [lay.layout(i).tp for i in range(len(lay))]
    splits = np.array([[compat.tp_misfit(model, rt, tp) == "" for tp in tp_of] for rt in t.runtimes], dtype=bool)
    usable &= splits[r]
    pick, which = np.nonzero(usable)
    h, r, q, k, g, li = h[pick], r[pick], q[pick], k[pick], g_axis[which], which
    batches = np.asarray(batch if batch is not None else (workload.batch,), dtype=int)
    # per-configuration inputs are a row (1, N) and batch is a column (B, 1): terms that do not
    # depend on the batch are computed once per configuration, and the long axis is the last
    # one, so numpy's inner loops run over configurations (a short last axis is ~20× slower)
    geo = geometry(model)
    g_f = g.astype(np.float32)
    # vendors' published maxima per GPU (None: none for this model; a memory plan has no speeds to bound)
    caps = None if memory_only else t.ceilings(model, workload)
    results, sizes = [], []
    chunk = max(CHUNK_ELEMENTS // batches.size, 1)
    for start in range(0, max(h.size, 1), chunk):
        part = slice(start, start + chunk)
        x = t.gather(h[None, part], r[None, part], q[None, part], k[None, part], g_f[None, part],
                     batch=batches[:, None], prompt=workload.prompt_tokens, output=workload.output_tokens,
                     depth=workload.depth_tokens)
        if not lay.is_plain.all():
            lp = li[None, part]
            x = x.replace(stages=lay.stages[lp], attention_dp=lay.dp[lp], expert_parallel=lay.ep[lp],
                          network_gb_s=net[h[None, part]])
        if caps is not None:
            per_gpu, widest = caps[0][h[None, part], q[None, part]], caps[1][h[None, part], q[None, part]]
            x = x.replace(throughput_cap_tok_s=np.where(g_f[None, part] <= widest, per_gpu * g_f[None, part], np.inf))
        results.append(evaluate(geo, x, memory_only=memory_only, dtype=np.float32))
        sizes.append(int(h[part].size))
    return SweepResult(model, t, (h, r, q, k, g), batches, FlatValues(results, batches.size, sizes), lay, li)
