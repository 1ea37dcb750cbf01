"""The judge's audit of an argmax or argmin contract (docs/reductions.md; issue 48): a contract
whose op kind is one of `ops.INDEX_REDUCTIONS`, entered from `judge.audit` beside the other
reductions' audit (`judge.reductions`, whose calling, conformance, determinism, invariance and
cost machinery it shares).

Exact, one rule for every contract, as docs/reductions.md decided: each output is the index, in
row-major order of the reduced axes, of the first NaN if the reduced elements hold one (any NaN,
whatever its payload or sign), else of the first element equal to the extreme, -0 equal to +0.
The reference (`first_indices`) is the judge's own: the first element equal to the judge's
selection (`orders.selected`), a NaN matching a NaN. Every output of every case is checked
index for index on the reductions' cases (`reduction_cases`, no empty rows: the namespace
refuses them) and on the adversarial ones here (`index_cases`): ties of the extreme, ±0 ties,
±inf ties, all-equal rows, subnormals, NaNs first, in the middle and last. The invariance claims
(`threads`, `layout`, `batch`) are audited on the ties, where an index that follows the memory,
the thread split or the batch shows. Failures name the case, the output, got and expected.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any, Final

import numpy as np

from fueltensor.core.dtypes import DType
from fueltensor.fkc.schema import KernelContract
from fueltensor.kernels import KernelFn
from fueltensor.kernels.casting import bits_of
from fueltensor.kernels.exact_sums import rows
from fueltensor.ops import INDEX_REDUCTIONS, REDUCTION_BY_KIND, OpKind
from fueltensor.tools.judge.orders import Declared, selected
from fueltensor.tools.judge.record import Audit, Settings
from fueltensor.tools.judge.reduction_cases import Case, cases
from fueltensor.tools.judge.reduction_checks import Findings, index, summary
from fueltensor.tools.judge.reductions import (
    admitted,
    audit_claims,
    audit_cost,
    run,
)
from fueltensor.tools.judge.references import Array

REFERENCE: Final = "the first index of the extreme (the first NaN's), exact"
TIES: Final = "ties of the extreme"
"""The case the invariance claims are audited on."""
LENGTH: Final = 41
"""The adversarial rows' length."""


def is_index(op_kind: str) -> bool:
    """Whether `op_kind` is an index reduction's (argmax, argmin), audited here."""
    return op_kind in INDEX_REDUCTIONS


def first_indices(table: Array, largest: bool) -> Array:
    """Each row's index of the first element equal to its maximum (`largest`) or minimum, a NaN
    the extreme (matching any NaN), -0 equal to +0."""
    wide = table.astype(np.float64)
    target = selected(table, np.dtype(np.float64), largest)[:, None]
    with np.errstate(invalid="ignore"):
        match = (wide == target) | (np.isnan(wide) & np.isnan(target))
    found: Array = np.argmax(match, axis=1)
    return found


def index_cases(dtype: np.dtype[Any], rng: np.random.Generator) -> Iterator[Case]:
    """The adversarial rows of LENGTH values, each case of several rows (a 2-D x reduced over
    its last axis): ties of the extreme, ±0 ties, ±inf ties, all equal, subnormals, NaNs."""
    m = LENGTH

    def uniform(count: int) -> Array:
        return rng.uniform(-1, 1, (count, m))

    ties = uniform(6)
    ties[:, [4, 17, 33]], ties[:, [6, 25, 39]] = 2.0, -2.0
    ties[3:, [0, m - 1]], ties[4:, [1, m - 2]] = 3.0, -3.0  # the extremes at both ends
    yield Case(TIES, ties.astype(dtype), (1,))
    zeros = rng.choice([0.0, -0.0], (4, m))
    zeros[[0, 2], 0], zeros[[1, 3], 0] = -0.0, 0.0
    zeros[2:] -= np.where(np.arange(m) % 5 == 4, 1.0, 0.0)  # below the zeros: min is -1
    yield Case("±0 ties", zeros.astype(dtype), (1,))
    inf = uniform(4)
    inf[:, [5, 30]], inf[:, [8, 21]] = np.inf, -np.inf
    yield Case("±inf ties", inf.astype(dtype), (1,))
    yield Case("all equal", np.full((3, m), [[0.5], [-0.0], [np.inf]]).astype(dtype), (1,))
    info = bits_of(dtype)
    tiny = 2.0 ** (info.min_exp - info.mantissa)  # the smallest subnormal
    subnormals = rng.choice([tiny, -tiny, 3 * tiny, -3 * tiny], (4, m))
    yield Case("subnormals", subnormals.astype(dtype), (1,))
    nans = uniform(5).astype(dtype)
    negative = -np.array(np.nan, dtype)
    nans[0, 0], nans[1, m // 2], nans[2, m - 1] = np.nan, np.nan, np.nan
    nans[3, [7, 30]], nans[4, [12, 13]] = (negative, np.nan), (np.nan, negative)
    yield Case("NaN first, middle, last", nans, (1,))


def check(case: Case, got: Array, largest: bool, f: Findings, a: Audit) -> None:
    """Every output of `case` against the reference, index for index."""
    got = np.ascontiguousarray(got).reshape(-1)
    table = rows(case.x, case.axes)
    want = first_indices(table, largest)
    a.probes += got.size
    differ = np.flatnonzero(got != want)
    if differ.size:
        r, which = int(differ[0]), "largest" if largest else "smallest"
        f.add(
            "index",
            case,
            f"output {index(case, r)} of case '{case.name}' is {got[r]}, the first {which} "
            f"element's index (the first NaN's) is {want[r]}; {differ.size} of {got.size} outputs "
            f"differ ({summary(table[r])}; at {got[r]}: "
            f"{table[r, got[r]] if 0 <= got[r] < table.shape[1] else 'out of range'})",
        )
    f.outputs += 0 if differ.size else got.size


def audit_index(
    a: Audit,
    contract: KernelContract,
    fn: KernelFn,
    dtype: DType,
    settings: Settings,
    copy_bps: float,
    rng: np.random.Generator,
) -> None:
    """The index audit of one argmax or argmin contract at one dtype, recorded into `a`."""
    row = REDUCTION_BY_KIND[contract.op_kind]
    largest = row.op_kind is OpKind.ARGMAX
    a.reference = REFERENCE

    def call_case(case: Case, fill: int = 0xA5) -> Array:
        return run(fn, contract, dtype, case, fill)

    d = Declared(dtype.fkc, None, 128, 1, "lhs")  # the reductions' cases' block and lanes
    inputs = (*index_cases(dtype.np, rng), *cases(dtype.np, d, rng, empty=False))
    every = admitted(a, contract, fn, dtype, inputs, call_case)
    if not every:
        return
    f = Findings()
    for case in every:
        check(case, call_case(case), largest, f, a)
    a.failures += f.failures()
    audit_claims(a, contract, call_case, every, d.block, TIES)
    a.semantics.append(
        f"reduction: {row.name}, exact: {f.outputs} outputs of {len(every)} cases the first "
        "extreme's index"
    )
    audit_cost(a, contract, fn, dtype, settings, copy_bps)
