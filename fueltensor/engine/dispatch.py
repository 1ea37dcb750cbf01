"""From `a + b` to the kernel that ran: coerce the operands, plan (cached), run, record.

The eight contract operations are looked up by the op_kind the contracts declare; an operation
no contract admits runs as a labelled host operation (NumPy) unless a `use_backend` restriction
forbids it, in which case `NoKernelError` lists every candidate and why it was rejected.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any, Final

import numpy as np

from fueltensor.core import dtypes as _dtypes
from fueltensor.core.errors import NoKernelError
from fueltensor.core.layout import broadcast_shapes
from fueltensor.core.tensor import FuelTensor, asarray, check_inplace
from fueltensor.engine.backends import Policy, current_policy, notify, record, trace, tracing
from fueltensor.engine.execute import run
from fueltensor.engine.planner import Operand, Plan, Planning, Step, plan_contracts, promote

OPS: Final[dict[str, tuple[str, np.ufunc]]] = {
    "add": ("AddElementwise", np.add),
    "subtract": ("SubElementwise", np.subtract),
    "multiply": ("MulElementwise", np.multiply),
    "divide": ("DivElementwise", np.divide),
    "remainder": ("RemElementwise", np.remainder),
    "pow": ("PowElementwise", np.power),
    "maximum": ("MaximumElementwise", np.maximum),
    "minimum": ("MinimumElementwise", np.minimum),
}
"""The operator surface: each of the eight operations and the op_kind its contracts declare,
plus the NumPy ufunc that serves dtypes no contract admits (host operations)."""

Scalar = bool | int | float | complex

DEFERRED: dict[type, Callable[[str, Any, Any], Any]] = {}
"""Array collections that run the eight operations themselves, block by block (a Dask array):
type -> handler(op, a, b). Filled by `fueltensor.dask.register()`."""


def _scalar(value: Scalar, like: FuelTensor) -> FuelTensor:
    """A Python scalar as a 0-d tensor of the dtype it takes next to `like` (scalars are weak)."""
    dt = _dtypes.scalar_dtype(value, like.dtype)
    if dt.category in ("signed integer", "unsigned integer") and not isinstance(value, bool):
        info = np.iinfo(dt.np)
        if not info.min <= value <= info.max:  # type: ignore[operator]
            raise OverflowError(
                f"Python int {value} does not fit {dt.name} ({info.min}..{info.max})"
            )
    with np.errstate(over="ignore"):
        return FuelTensor._from_dense(np.array(value, dtype=dt.np), dt)


def coerce(a: Any, b: Any) -> tuple[FuelTensor, FuelTensor]:
    """Both operands as tensors: Python scalars take the other operand's dtype kind, NumPy
    arrays keep their dtype."""
    if type(a) is FuelTensor and type(b) is FuelTensor:
        return a, b
    if not isinstance(a, FuelTensor) and not isinstance(b, FuelTensor):
        a = asarray(a) if isinstance(a, np.ndarray | np.generic) else a
        b = asarray(b) if isinstance(b, np.ndarray | np.generic) else b
    if isinstance(a, FuelTensor) and isinstance(b, FuelTensor):
        return a, b
    if isinstance(a, FuelTensor):
        return a, _operand(b, a)
    if isinstance(b, FuelTensor):
        return _operand(a, b), b
    raise TypeError(
        f"unsupported operand types {type(a).__name__} and {type(b).__name__}; "
        "an operation needs at least one FuelTensor or NumPy array"
    )


def _operand(value: Any, like: FuelTensor) -> FuelTensor:
    """The non-tensor operand next to tensor `like`: a weak scalar, or a NumPy array adopted."""
    if isinstance(value, bool | int | float | complex):
        return _scalar(value, like)
    if isinstance(value, np.ndarray | np.generic):
        return asarray(value)
    raise TypeError(
        f"unsupported operand type {type(value).__name__}; use a FuelTensor, a "
        "NumPy array or a Python bool, int, float or complex"
    )


def _host_plan(
    op: str,
    op_kind: str | None,
    operands: tuple[Operand, ...],
    fn: Callable[..., np.ndarray],
    rejected: Planning | None,
) -> Plan:
    """A NumPy host operation on the promoted operands, with the contracts it could not use."""
    cast, casts = promote(operands)
    probe = fn(*(np.empty((0,), o.dtype.np) for o in cast))
    out_dtype = _dtypes.from_numpy(probe.dtype)
    shape = broadcast_shapes(*(o.layout.shape for o in operands))
    moved = sum(o.count * o.dtype.itemsize for o in cast) + math.prod(shape) * out_dtype.itemsize
    name = getattr(fn, "__name__", op)
    host = Step(
        "Host",
        None,
        f"numpy.{name}({', '.join(('lhs', 'rhs')[: len(operands)])}) -> "
        f"{out_dtype.name}{list(shape)}",
        moved,
    )
    steps = (*(s for c in casts for s in c), host)
    return Plan(
        op,
        op_kind,
        None,
        steps,
        sum(s.bytes for s in steps),
        rejected.rejected if rejected else {},
        shape,
        out_dtype,
        operands,
        casts,
    )


def choose(
    op: str, tensors: tuple[FuelTensor, FuelTensor], policy: Policy
) -> tuple[Plan, Planning]:
    """The plan an operation runs under `policy` (cached by operand signature), and the
    planning it came from."""
    a, b = tensors
    key = (op, a._dtype, a._layout, b._dtype, b._layout)  # spelled out: the hit path is hot
    cached = policy.plans.get(key)
    if cached is not None:
        return cached  # type: ignore[return-value]
    op_kind, host = OPS[op]
    operands = tuple(Operand(t._dtype, t._layout) for t in tensors)
    planning = plan_contracts(op, op_kind, operands, policy.registry, policy.providers)
    if planning.viable:
        chosen = (planning.viable[0], planning)
    elif policy.allow_host:
        chosen = (_host_plan(op, op_kind, operands, host, planning), planning)
    else:
        args = ", ".join(f"{o.dtype.name}{list(o.layout.shape)}" for o in operands)
        lines = [f"{k}: {'; '.join(v)}" for k, v in planning.rejected.items()]
        raise NoKernelError(
            f"no kernel contract admits {op}({args}) under use_backend({policy.label!r}) "
            f"[{op_kind}]; candidates:\n  " + ("\n  ".join(lines) or "none registered")
        )
    policy.remember(key, chosen)
    return chosen


def _collection(kind: type) -> Callable[[str, Any, Any], Any] | None:
    """The `DEFERRED` handler for operands of type `kind`; Dask's collections are learnt on
    first sight (the `dask` extra registers them), so no import of Dask happens before."""
    handler = DEFERRED.get(kind)
    if handler is None and kind.__module__.partition(".")[0] == "dask":
        from fueltensor import dask as _dask

        _dask.register()
        handler = DEFERRED.get(kind)
    return handler


def binary(op: str, a: Any, b: Any) -> FuelTensor:
    """Run one of the eight contract operations on two operands and return a fresh tensor
    (an operand of a `DEFERRED` collection type hands the operation to that collection)."""
    try:
        tensors = coerce(a, b)
    except TypeError:
        handler = _collection(type(a)) or _collection(type(b))
        if handler is None:
            raise
        result: FuelTensor = handler(op, a, b)
        return result
    plan, planning = choose(op, tensors, current_policy())
    result = run(plan, tensors, OPS[op][1])
    notify(planning, plan, tensors, result)
    return result


def binary_inplace(op: str, target: FuelTensor, other: Any) -> FuelTensor:
    """`target op= other`: computed fresh, then written through `target`'s strides; refused
    (target untouched) when the result's dtype or shape is not the target's."""
    tensors = coerce(target, other)
    plan, planning = choose(op, tensors, current_policy())
    check_inplace(target, plan.out_dtype, plan.out_shape, op)
    result = run(plan, tensors, OPS[op][1])
    notify(planning, plan, tensors, result)
    target._array[...] = result._array
    return target


def record_host(name: str, inputs: Sequence[FuelTensor], output: FuelTensor) -> None:
    """Record a host (NumPy) operation in every active trace, labelled `host`."""
    if not tracing():
        return
    moved = sum(t.size * t.dtype.itemsize for t in (*inputs, output))
    args = ", ".join(f"{t.dtype.name}{list(t.shape)}" for t in inputs)
    step = Step(
        "Host", None, f"numpy {name}({args}) -> {output.dtype.name}{list(output.shape)}", moved
    )
    record(
        Plan(
            name,
            None,
            None,
            (step,),
            moved,
            {},
            output.shape,
            output.dtype,
            tuple(Operand(t.dtype, t._layout) for t in inputs),
            (),
        )
    )


def host_operation(fn: Callable[..., FuelTensor]) -> Callable[..., FuelTensor]:
    """Mark an array-API function that runs on the host (NumPy), so `explain` can show it and
    `trace` records it."""
    fn.__fueltensor_host__ = True  # type: ignore[attr-defined]
    return fn


def explain(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Plan:
    """The Plan `fn(*args)` runs. For the eight contract operations it is planned without
    running anything; a host operation is run (it is pure) and its recorded plan returned."""
    op = getattr(fn, "__fueltensor_op__", None)
    if op not in OPS:
        if getattr(fn, "__fueltensor_host__", False):
            with trace() as plans:
                fn(*args, **kwargs)
            if plans:
                return plans[-1]
        raise TypeError(
            f"explain() takes one of fueltensor's operations, got {getattr(fn, '__name__', fn)!r}"
        )
    if len(args) != 2:
        raise TypeError(f"{op} takes 2 operands, explain() got {len(args)}")
    return choose(op, coerce(*args), current_policy())[0]


def _operation(op: str, doc: str) -> Callable[[Any, Any], FuelTensor]:
    def operation(x1: Any, x2: Any, /) -> FuelTensor:
        return binary(op, x1, x2)

    operation.__name__ = operation.__qualname__ = op
    operation.__doc__ = doc
    operation.__fueltensor_op__ = op  # type: ignore[attr-defined]
    return operation


add = _operation("add", "x1 + x2, element-wise (AddElementwise contracts).")
subtract = _operation("subtract", "x1 - x2, element-wise (SubElementwise contracts).")
multiply = _operation("multiply", "x1 * x2, element-wise (MulElementwise contracts).")
divide = _operation("divide", "x1 / x2, element-wise, IEEE (DivElementwise contracts).")
remainder = _operation(
    "remainder",
    "x1 - floor(x1 / x2) * x2 in the working precision, "
    "element-wise (RemElementwise contracts; sign follows the divisor).",
)
pow = _operation("pow", "x1 ** x2, element-wise via powf (PowElementwise contracts).")
maximum = _operation(
    "maximum",
    "Element-wise maximum: NaN-propagating (lhs NaN first), lhs on a "
    "±0 tie (MaximumElementwise contracts).",
)
minimum = _operation(
    "minimum",
    "Element-wise minimum: NaN-propagating (lhs NaN first), lhs on a "
    "±0 tie (MinimumElementwise contracts).",
)
