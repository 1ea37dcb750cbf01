"""Host operations: the array-API functions outside the eight contract operations, on NumPy.

`host` is the one decorator every such function goes through: it silences NumPy's IEEE
warnings (results are IEEE values, as the kernels' are), records the call as a `host` Plan in
every active `trace`, and marks the function so `explain` can show it. `fresh` turns a NumPy
result into a new tensor that never aliases an input. `ufunc_host` makes a ufunc function one
compiled call where `_fast` is built (the same ufunc, arrays, error state and adoption);
`ruled_host` does so for a reduction, cast or matmul, whose dtypes follow a `Rule`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterable
from typing import Any, Final, Literal, NamedTuple, TypeVar, cast

import numpy as np

from fueltensor.core import dtypes as _dtypes
from fueltensor.core.dtypes import DType
from fueltensor.core.errstate import restore, silence
from fueltensor.core.layout import normalize_axis
from fueltensor.core.scalars import coerce
from fueltensor.core.tensor import FuelTensor
from fueltensor.engine import fast
from fueltensor.engine.backends import tracing
from fueltensor.engine.dispatch import host_operation, record_host

F = TypeVar("F", bound=Callable[..., Any])


_FAST: Final = fast.compiled()
"""`ext._fast` (configured by dispatch), or None where it is not built."""
_ADOPT: Final[Callable[[np.ndarray, DType], FuelTensor | None] | None] = (
    _FAST.adopt if _FAST is not None else None
)
"""`ext._fast.adopt` (`FuelTensor._from_dense` of a fresh result), or None."""


def host(fn: F) -> F:
    """Make `fn` (NumPy inside, fresh FuelTensors out) a labelled host operation."""
    name = fn.__name__

    @functools.wraps(fn)
    def operation(*args: Any, **kwargs: Any) -> Any:
        # NumPy's all-ignore error state set through its contextvar, as np.errstate(all="ignore")
        # sets it, at a tenth of the context manager's cost (the caller's state comes back).
        token = silence()
        try:
            out = fn(*args, **kwargs)
        finally:
            restore(token)
        if tracing():
            outputs = _tensors((out,))
            if outputs:
                record_host(name, _tensors((*args, *kwargs.values())), outputs[0])
        return out

    return cast(F, host_operation(operation))


def ufunc_host(fn: F, ufunc: Callable[..., Any], arity: int) -> F:
    """`fn`, a host function (`host`) that returns `fresh(ufunc(*arrays))` of its `arity` (1 or
    2) operands of one DType, as one compiled call where
    `_fast` is built (`_fast.host`): the same call on the same arrays, silenced, adopted as
    `fresh` adopts; the Python `fn` for every other call (a trace records it). It carries
    `fn`'s name, docstring, signature and marks."""
    if _FAST is None:
        return fn
    return _dressed(_FAST.host(fn, ufunc, fresh, arity), fn)


def _dressed(made: Any, fn: F) -> F:
    """The compiled callable `made`, carrying `fn`'s name, docstring, signature and marks."""
    for attr in ("__name__", "__qualname__", "__doc__", "__module__"):
        setattr(made, attr, getattr(fn, attr))
    vars(made).update(vars(fn))
    made.__signature__ = inspect.signature(fn)
    return cast(F, made)


class Rule(NamedTuple):
    """How a host reduction, cast or matmul treats operands of one DType: the single place the
    Python function reads it, and the table its compiled call reads (`ruled_host`)."""

    pre: np.dtype | None
    """The NumPy dtype the operands are cast to first (None: used as they are)."""
    work: np.dtype | None
    """NumPy's `dtype=` argument (None: not passed)."""
    out: DType | None
    """The result's DType (None: NumPy's)."""


Kind = Literal["REDUCE", "CAST", "MATMUL"]


def ruled_host(
    kind: Kind, call: Callable[..., Any], rule: Callable[[DType], Rule | None]
) -> Callable[[F], F]:
    """A decorator (over `host`) making `fn` one compiled call where `_fast` is built
    (`_fast.ruled`) for the operand DTypes `rule` gives a Rule (None: not served). A REDUCE
    `fn(x)` (or with `axis=` None or one int, `keepdims=`) is `call(a, axis=<axes>,
    keepdims=...[, dtype=work])` of a ufunc's reduce, a CAST `fn(x, dtype)` is
    `a.astype(dtype.np)`, a MATMUL `fn(x1, x2)` (one DType) `call(a1, a2)`: the call `fn`
    makes, its result cast to `out` and adopted as `fresh` adopts it. Every other call runs
    `fn` (a trace records it)."""

    def wrap(fn: F) -> F:
        if _FAST is None:
            return fn
        table = {d: r for d in _dtypes.ALL if (r := rule(d)) is not None}
        return _dressed(_FAST.ruled(fn, getattr(_FAST, kind), call, fresh, table), fn)

    return wrap


def _tensors(values: Iterable[Any]) -> list[FuelTensor]:
    """The tensors among `values`, looking one level into tuples and lists."""
    found: list[FuelTensor] = []
    for v in values:
        if isinstance(v, FuelTensor):
            found.append(v)
        elif isinstance(v, tuple | list):
            found.extend(t for t in v if isinstance(t, FuelTensor))
    return found


def fresh(result: Any, dtype: DType | None = None) -> FuelTensor:
    """A NumPy result (array or scalar) as a new dense tensor of `dtype` (default: its own).

    A result that does not own its memory (a view, possibly of an input) is copied.
    """
    if _ADOPT is not None and type(result) is np.ndarray:  # a ufunc's output, in one C call
        adopted = _ADOPT(result, dtype or _dtypes.from_numpy(result.dtype))
        if adopted is not None:
            return adopted
    a = result if type(result) is np.ndarray else np.asarray(result)
    if dtype is not None and a.dtype != dtype.np:
        a = a.astype(dtype.np)
    else:
        flags = a.flags
        if not (flags.owndata and flags.c_contiguous and flags.writeable):
            a = np.array(a, order="C", copy=True)
    return FuelTensor._from_dense(a, dtype or _dtypes.from_numpy(a.dtype))


def tensor(x: Any, name: str = "x") -> FuelTensor:
    """`x` if it is a tensor; TypeError naming the argument otherwise."""
    if not isinstance(x, FuelTensor):
        raise TypeError(
            f"{name} must be a FuelTensor, got {type(x).__name__}; "
            "convert it with fueltensor.asarray"
        )
    return x


def promoted(*operands: Any) -> tuple[list[np.ndarray], DType]:
    """The operands' NumPy arrays cast to their promoted dtype (Python scalars are weak), and
    that dtype."""
    if len(operands) == 2:
        tensors: tuple[FuelTensor, ...] = coerce(*operands)
    else:
        tensors = tuple(tensor(t, f"operand {i}") for i, t in enumerate(operands))
    dt = tensors[0]._dtype  # the slot, not the property: this runs on every host call
    for t in tensors[1:]:
        if t._dtype is not dt:  # the common case skips the cache's key hashing
            dt = _dtypes.result_type(dt, t._dtype)
    arrays = [t._array if t._dtype is dt else t._array.astype(dt.np) for t in tensors]
    return arrays, dt


def axes(axis: int | tuple[int, ...] | None, ndim: int) -> tuple[int, ...]:
    """`axis` (None: all) normalized to non-negative axes by `normalize_axis` (AxisError names
    a bad one)."""
    if axis is None:
        return tuple(range(ndim))
    items = (axis,) if isinstance(axis, int) else tuple(axis)
    out = [normalize_axis(a, ndim) for a in items]
    if len(set(out)) != len(out):
        raise ValueError(f"axis {axis} repeats an axis")
    return tuple(out)
