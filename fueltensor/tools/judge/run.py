"""The judge on this machine: every registrable contract of a registry, at each dtype."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterable

from fueltensor.core import dtypes as _dtypes
from fueltensor.core.dtypes import DType
from fueltensor.engine.backends import current_policy
from fueltensor.fkc.schema import KernelContract
from fueltensor.registry import Registry, require
from fueltensor.tools import checked
from fueltensor.tools.judge.audit import audit
from fueltensor.tools.judge.calls import audited_dtypes
from fueltensor.tools.judge.record import Settings
from fueltensor.tools.judge.report import JudgeReport
from fueltensor.tools.timing import copy_bandwidth


def _progress(done: int, total: int, label: str) -> None:
    width = 30
    filled = width * done // max(total, 1)
    sys.stderr.write(f"\r[{'#' * filled}{'.' * (width - filled)}] {done}/{total} {label:<24}")
    if done == total:
        sys.stderr.write("\n")
    sys.stderr.flush()


def judge_here(
    reg: Registry | None,
    kernels: Iterable[str] | None,
    quick: bool = False,
    seed: int = 0,
    progress: bool | None = None,
    provider: str | None = None,
) -> JudgeReport:
    """`judge` on this machine (see `fueltensor.tools.judge.judge`)."""
    reg = reg if reg is not None else current_policy().registry
    jobs = _jobs(reg, kernels, provider)
    show = sys.stderr.isatty() if progress is None else progress
    settings = Settings.of(quick)
    start = time.perf_counter()
    copy_n = 3 * settings.large  # f32 elements: the working set of an f64 kernel's cost probe
    copy_bps = copy_bandwidth(copy_n)
    rows = []
    try:
        for i, (contract, dtype) in enumerate(jobs):
            if show:
                _progress(i, len(jobs), contract.name)
            rows.append(audit(contract, reg.kernel(contract.name), dtype, settings, copy_bps, seed))
    finally:
        checked.finish()  # nothing a judged kernel started outlives the judge
    for (contract, _), row in zip(jobs, rows, strict=False):
        fault = checked.late(reg.kernel(contract.name), contract)
        if fault is not None:  # its death was found in a later kernel's call
            row.failures.append(f"the kernel raised during the audit: KernelFault: {fault}")
    if show:
        _progress(len(jobs), len(jobs), "done")
    return JudgeReport(
        rows,
        quick,
        copy_bps / 1e9,
        time.perf_counter() - start,
        copy_working_set=8 * copy_n,
    )


def _jobs(
    reg: Registry, kernels: Iterable[str] | None, provider: str | None = None
) -> list[tuple[KernelContract, DType]]:
    """(contract, dtype) for every dtype its first input accepts, of the registrable contracts
    of `provider` (default: of the providers that join dispatch by default) or the named
    `kernels` (a describe-only one refused)."""
    names = reg.provider_names(provider) if provider is not None else None
    require(names or ())
    if kernels is None:
        chosen = [
            c
            for c in reg
            if c.registrable
            and (reg.joins(c.provider) if names is None else c.provider.name in names)
        ]
    else:
        chosen = [reg[name] for name in kernels]
        for c in chosen:
            if not c.registrable:
                raise ValueError(
                    f"{c.name} is describe-only (registrable: false); the judge "
                    "audits contracts that link a kernel"
                )
    return [(c, _dtypes.BY_FKC[d]) for c in chosen for d in audited_dtypes(c)]
