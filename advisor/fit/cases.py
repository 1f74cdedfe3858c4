"""A measured row resolved against the catalog (`Case`), or why it could not be (`Unmapped`): what the
calibration, the validation and the serving checks read, whichever file the row came from."""

from __future__ import annotations

from dataclasses import dataclass

from advisor.data.specs import Hardware, KvDtype, Model, Quant, Runtime
from advisor.model.roofline import Workload


@dataclass(frozen=True)
class Case:
    """One measured row, resolved."""

    row: int                 # 1-based line number in the CSV (header = line 1)
    hardware: Hardware
    model: Model
    quant: Quant
    kv: KvDtype
    runtime: Runtime
    gpus: int
    workload: Workload
    metric: str              # decode | prefill | ttft | e2e
    measured: float          # tokens/s for decode/prefill, ms for ttft/e2e
    source: str              # the file / source label
    note: str = ""
    #: the prompt micro-batch the run used (llama.cpp -ub / n_ubatch), where the source states one;
    #: None = the runtime's default (`Runtime.workspace_tokens`)
    ubatch_tokens: int | None = None
    #: a figure about its hardware family alone (derived from one source's servers, numerous enough to
    #: outweigh every other family's rows): the runtime's and vendor's profiles, which speak for
    #: families without data, do not fit it
    family_only: bool = False

    @property
    def device(self) -> str:
        return self.hardware.key


@dataclass(frozen=True)
class Unmapped:
    row: int
    text: str                # a short description of the row
    reason: str
