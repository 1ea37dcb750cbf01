"""The contractions planned from contracts (`ops.CONTRACTION_OPS`: matmul; issue 46):
`ft.matmul(x1, x2)` and `x1 @ x2`, as docs/matmul.md designs them.

The namespace checks the operands (0-d refused, inner dimensions and stacks that do not chain
refused in today's words, before anything is allocated); here a 1-D x1 becomes a (1, K) view and
a 1-D x2 a (K, 1) one, both stacks are broadcast to one shape as stride-0 views, and the planner
promotes the dtypes and admits the contracts that take the operands' layouts
(`shape_rule: matmul(a, b)`); the unit axis of a 1-D operand is dropped from the result. An
empty result (M = 0 or N = 0) or no products (K = 0: zeros) calls no kernel, and dtypes no
contract takes (integers, bool, complex, FP8) run on the host as before, labelled host.

**An oracle serves only where a provider is named.** The oracle's exact matmul is slow, so a
plan of a correctness oracle (`planner.ORACLE_SOURCES`) is run only under a policy that names
providers (`use_backend("reference")`); with none named a production contract runs
(fuel-cpu-backend's BF16 and F16 matmul, fuel-blas-backend's F32 and F64: the host BLAS), else
the host's matmul. One some production contract takes but a `use_backend` restriction refuses
raises `NoKernelError` with every candidate (an F32 matmul under `use_backend("cpu")`); one
only the oracle takes runs on the host there (in a registry holding no production contract
for its dtypes), as it did before the oracle came.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fueltensor.core.errors import NoKernelError
from fueltensor.core.layout import Layout, broadcast_shapes
from fueltensor.core.tensor import FuelTensor
from fueltensor.engine.backends import Policy, current_policy, notify
from fueltensor.engine.execute import run
from fueltensor.engine.planner import (
    ORACLE_SOURCES,
    Operand,
    Plan,
    Planning,
    plan_contracts,
    promote,
)
from fueltensor.ops import CONTRACTION_OPS, ContractOp

Host = Callable[[], FuelTensor]
(_MATMUL,) = CONTRACTION_OPS

OPERATIONS: dict[str, Callable[..., FuelTensor]] = {}
"""The namespace's matmul by name, added where the array API module defines it:
`dispatch.functions()` reads it with the others."""


def _matrix(x: FuelTensor, row: bool) -> FuelTensor:
    """A 1-D x as the (1, K) view (`row`) or the (K, 1) one; a matrix or a stack as it is."""
    if x.ndim != 1:
        return x
    (k,), (s,), offset = x._layout
    layout = Layout((1, k), (k * s, s), offset) if row else Layout((k, 1), (s, s), offset)
    return x._view(layout)


def operands(x1: FuelTensor, x2: FuelTensor) -> tuple[FuelTensor, FuelTensor]:
    """x1 and x2 as (..., M, K) and (..., K, N) views of one broadcast stack shape (the shapes
    already checked to chain)."""
    a, b = _matrix(x1, True), _matrix(x2, False)
    stack = broadcast_shapes(a.shape[:-2], b.shape[:-2])
    a = a if a.shape[:-2] == stack else a._view(a._layout.broadcast_to((*stack, *a.shape[-2:])))
    b = b if b.shape[:-2] == stack else b._view(b._layout.broadcast_to((*stack, *b.shape[-2:])))
    return a, b


def choose(
    row: ContractOp, a: FuelTensor, b: FuelTensor, policy: Policy
) -> tuple[Plan, Planning] | None:
    """The contract plan a @ b runs under `policy` (cached by dtypes and layouts) and its
    planning; None where the host runs it (no contract takes it, or only an oracle does and no
    provider is named)."""
    key = (row.name, a._dtype.np, a._layout, b._dtype.np, b._layout)
    if key in policy.plans:
        return policy.plans[key]  # type: ignore[return-value]
    ops = (Operand(a._dtype, a._layout), Operand(b._dtype, b._layout))
    shape = (*a.shape[:-1], b.shape[-1])
    planning = plan_contracts(
        row.name, row.op_kind, ops, policy.registry, policy.providers, out_shape=shape
    )
    named = policy.providers is not None or not policy.allow_host
    viable = [p for p in planning.viable if named or _production(p)]
    chosen: tuple[Plan, Planning] | None = None
    if viable:
        chosen = (viable[0], planning)
    elif not policy.allow_host and _produced(row, ops, policy):
        lines = [f"{k}: {'; '.join(v)}" for k, v in planning.rejected.items()]
        raise NoKernelError(
            f"no kernel contract admits {row.name}({a._dtype.name}{list(a.shape)}, "
            f"{b._dtype.name}{list(b.shape)}) under use_backend({policy.label!r}) "
            f"[{row.op_kind}]; candidates:\n  " + "\n  ".join(lines)
        )
    policy.remember(key, chosen)
    return chosen


def _produced(row: ContractOp, ops: tuple[Operand, ...], policy: Policy) -> bool:
    """Whether a production contract (not an oracle's) of any provider takes the promoted
    dtypes: only then does a `use_backend` restriction refuse the call (NoKernelError); one
    only the oracle takes runs on the host where the oracle is not allowed, as before it came."""
    dtypes = [o.dtype.fkc for o in promote(ops, None, frozenset())[0]]
    return any(
        c.kernel_source not in ORACLE_SOURCES
        and all(d in spec.dtypes for d, spec in zip(dtypes, c.inputs, strict=False))
        for c in policy.registry.for_op(row.op_kind)
    )


def _production(plan: Plan) -> bool:
    """Whether `plan` runs a production kernel (not a correctness oracle's)."""
    return plan.kernel is not None and plan.kernel.kernel_source not in ORACLE_SOURCES


def _planned(x1: FuelTensor, x2: FuelTensor, policy: Policy) -> tuple[Any, ...] | None:
    """(plan, planning, a, b) for a non-empty x1 @ x2 some contract serves, else None."""
    a, b = operands(x1, x2)
    if 0 in (a.shape[-2], a.shape[-1], b.shape[-1]) or 0 in a.shape[:-2]:
        return None  # no products, or no outputs: the host's zeros or empty result
    chosen = choose(_MATMUL, a, b, policy)
    return None if chosen is None else (*chosen, a, b)


def matmul(x1: FuelTensor, x2: FuelTensor, host: Host) -> FuelTensor:
    """x1 @ x2 through its contracts (their shapes checked already), trace and observers
    notified; `host()` where no contract serves it."""
    found = _planned(x1, x2, current_policy())
    if found is None:
        return host()
    plan, planning, a, b = found
    result = run(plan, (a, b))
    notify(planning, plan, (a, b), result)
    if x1.ndim == 1 or x2.ndim == 1:
        drop = {result.ndim - 2} if x1.ndim == 1 else set()
        drop |= {result.ndim - 1} if x2.ndim == 1 else set()
        return result.reshape(tuple(n for i, n in enumerate(result.shape) if i not in drop))
    return result


def explained(policy: Policy, x1: object, x2: object, /) -> Plan | None:
    """The contract plan `matmul(x1, x2)` runs under `policy`, None where the host runs it
    (`explain` then runs it and records the host plan)."""
    if not isinstance(x1, FuelTensor) or not isinstance(x2, FuelTensor):
        return None
    if x1.ndim == 0 or x2.ndim == 0:
        return None  # the namespace's refusal, raised when explain runs it
    k2 = x2.shape[0] if x2.ndim == 1 else x2.shape[-2]
    if x1.shape[-1] != k2:
        return None
    try:
        found = _planned(x1, x2, policy)
    except ValueError:  # stacks that do not broadcast: the namespace's refusal
        return None
    return None if found is None else found[0]
