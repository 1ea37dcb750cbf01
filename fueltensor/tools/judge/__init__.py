"""The judge: audit every registrable contract against the kernel it is linked to.

For each contract, and each dtype it accepts, the four checks `audit` describes: determinism,
precision against a higher-precision reference, conformance to the `return` clause, and cost
next to the `bytes_moved` formula.

`references` models each op kind's semantics (`REFERENCES`), `calls` calls a kernel (checked
for a compiled one) and times it, `audit` runs the four checks on one contract at one dtype (a
reduction's own audit, `reductions`, for a contract of a reduction row; both record into
`record.Audit`), `report` presents them and `run` audits a registry on this machine; `judge`
here is the public entry, on this machine or across a Dask cluster (`fueltensor.tools.cluster`).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, overload

from fueltensor.registry import Registry
from fueltensor.tools.judge.audit import audit, probes
from fueltensor.tools.judge.record import RUNS, Audit, Settings
from fueltensor.tools.judge.references import REFERENCES, Reference, round_to
from fueltensor.tools.judge.report import (
    COLUMNS,
    LEGEND,
    NARROW_DROPS,
    JudgeReport,
    judge_row,
    write_outputs,
)
from fueltensor.tools.judge.run import judge_here
from fueltensor.tools.timing import copy_bandwidth

if TYPE_CHECKING:
    from distributed import Client

    from fueltensor.tools.cluster import ClusterJudgeReport

__all__ = [
    "COLUMNS",
    "LEGEND",
    "NARROW_DROPS",
    "REFERENCES",
    "RUNS",
    "Audit",
    "JudgeReport",
    "Reference",
    "Settings",
    "audit",
    "copy_bandwidth",
    "judge",
    "judge_row",
    "probes",
    "round_to",
    "write_outputs",
]


@overload
def judge(
    reg: Registry | None = None,
    kernels: Iterable[str] | None = None,
    quick: bool = False,
    seed: int = 0,
    progress: bool | None = None,
    *,
    client: None = None,
    every_worker: bool = False,
    timeout: float | None = None,
    provider: str | None = None,
) -> JudgeReport: ...


@overload
def judge(
    reg: None = None,
    kernels: Iterable[str] | None = None,
    quick: bool = False,
    seed: int = 0,
    progress: bool | None = None,
    *,
    client: Client,
    every_worker: bool = False,
    timeout: float | None = None,
    provider: str | None = None,
) -> ClusterJudgeReport: ...


def judge(
    reg: Registry | None = None,
    kernels: Iterable[str] | None = None,
    quick: bool = False,
    seed: int = 0,
    progress: bool | None = None,
    *,
    client: Client | None = None,
    every_worker: bool = False,
    timeout: float | None = None,
    provider: str | None = None,
) -> JudgeReport | ClusterJudgeReport:
    """Audit the registrable contracts of `reg` (default: the active `use_registry` registry,
    like `explain` and `compare_backends`) whose providers join dispatch by default, or those
    of `provider` (a name or alias: "torch"), or only the named `kernels`; a progress bar goes
    to stderr when it is a terminal.

    With a Dask `client`, the audit runs on one worker per host (every worker when
    `every_worker`) over each worker's own registry, each tagged with its machine's fingerprint,
    and the machines are compared (see `fueltensor.tools.cluster`); `timeout` bounds the wait.
    """
    if client is not None:
        if reg is not None:
            raise ValueError(
                "a judge across a cluster audits each worker's own registry; pass "
                "kernels=[names] instead of a registry"
            )
        from fueltensor.tools.cluster import judge_cluster

        return judge_cluster(client, kernels, quick, seed, every_worker, timeout)
    return judge_here(reg, kernels, quick, seed, progress, provider)
