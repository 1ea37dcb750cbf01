"""NumPy's `__array_ufunc__` and `__array_function__` for FuelTensor: NumPy calls on tensors
stay on fueltensor.

The contract operations' ufuncs called plainly go through dispatch (`np.add(x, y)`,
`np.exp(x)`: the trace shows the kernel);
every other ufunc call, method (`reduce`, `accumulate`...) or `out=` runs on the host and
returns FuelTensors (`out=` tensors are written in place). NumPy functions map to fueltensor's
own where one exists (concatenate, stack, transpose, where, matmul, reshape, einsum, pad),
otherwise run on the host with array results wrapped back. Code that
asks for NumPy (`np.asarray`) still gets NumPy.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from fueltensor.array_api._host import fresh
from fueltensor.core import dtypes as _dtypes
from fueltensor.core.hooks import HOOKS
from fueltensor.core.tensor import FuelTensor, check_writable
from fueltensor.engine import dispatch, unary
from fueltensor.engine.dispatch import record_host
from fueltensor.families import Family
from fueltensor.ops import CONTRACT_OPS

_CONTRACT_UFUNCS: dict[np.ufunc, str] = {
    op.host: op.name
    for op in CONTRACT_OPS
    if isinstance(op.host, np.ufunc) and op.family is not Family.CONTRACTION
}
"""The elementwise contract operations by their NumPy ufunc (read from the op table): `np.exp(x)`
of a tensor is `ft.exp(x)`. np.matmul, a generalized ufunc, is not elementwise: it takes the
host path below, as it did before matmul had contracts."""

_SUPPORTED = frozenset(d.np for d in _dtypes.ALL)

_FUNCTIONS: dict[Callable[..., Any], Callable[..., Any]] = {}
"""NumPy functions with a fueltensor counterpart of the same meaning for the call forms that
the counterpart accepts; filled lazily (the namespace imports this module's importers)."""


def _to_numpy(value: Any) -> Any:
    if isinstance(value, FuelTensor):
        return value._array
    if isinstance(value, list | tuple):
        return type(value)(_to_numpy(v) for v in value)
    if isinstance(value, dict):
        return {k: _to_numpy(v) for k, v in value.items()}
    return value


def _wrap(value: Any) -> Any:
    """NumPy results as FuelTensors (arrays and NumPy scalars); tuples element-wise, a named
    tuple (`np.linalg.qr`'s `QRResult`...) as the same named-tuple type."""
    if isinstance(value, np.ndarray | np.generic) and value.dtype in _SUPPORTED:
        return fresh(value)
    if isinstance(value, tuple):
        items = [_wrap(v) for v in value]
        return type(value)(*items) if hasattr(value, "_fields") else tuple(items)
    if isinstance(value, list):
        return [_wrap(v) for v in value]
    return value


def _tensors(values: Any) -> list[FuelTensor]:
    found: list[FuelTensor] = []
    for v in values:
        if isinstance(v, FuelTensor):
            found.append(v)
        elif isinstance(v, list | tuple):
            found.extend(_tensors(v))
    return found


def _on_host(name: str, fn: Callable[..., Any], args: Any, kwargs: dict[str, Any]) -> Any:
    """Run `fn` on the NumPy views of the arguments; array results come back as tensors and
    the call is recorded as a `host` operation.

    A result whose dtype no tensor holds (structured, string, object...) is refused with a
    TypeError, as CuPy refuses it: clients such as Dask (argmax along an axis, unique) then
    take their path for array types without structured arrays, and nothing leaves fueltensor
    unnoticed."""
    with np.errstate(all="ignore"):
        result = fn(*_to_numpy(args), **_to_numpy(kwargs))
    if isinstance(result, np.ndarray) and result.dtype not in _SUPPORTED:
        raise TypeError(
            f"{name} on tensors gave a {result.dtype} array, which no FuelTensor holds "
            "(bool, integer, float and complex dtypes only); call it on np.asarray(x)"
        )
    wrapped = _wrap(result)
    outputs = _tensors((wrapped,))
    if outputs:
        record_host(name, _tensors((*args, *kwargs.values())), outputs[0])
    return wrapped


def array_ufunc(ufunc: np.ufunc, method: str, *inputs: Any, **kwargs: Any) -> Any:
    """A NumPy ufunc call on operands among which is a FuelTensor (FuelTensor wins)."""
    op = _CONTRACT_UFUNCS.get(ufunc)
    if op is not None and method == "__call__" and not kwargs:
        if len(inputs) == 2:
            return dispatch.binary(op, *inputs)
        if len(inputs) == 1:
            return unary.unary(op, *inputs)
    out = kwargs.get("out")
    if out is not None:
        targets = out if isinstance(out, tuple) else (out,)
        kwargs["out"] = tuple(t._array if isinstance(t, FuelTensor) else t for t in targets)
        for t in targets:
            if isinstance(t, FuelTensor):
                check_writable(t, f"numpy.{ufunc.__name__}(out=...)")
        with np.errstate(all="ignore"):
            getattr(ufunc, method)(*_to_numpy(inputs), **kwargs)
        results = _tensors(targets)
        if results:
            record_host(f"numpy.{ufunc.__name__}.{method}", _tensors(inputs), results[0])
        return targets[0] if len(targets) == 1 else targets
    name = ufunc.__name__ if method == "__call__" else f"{ufunc.__name__}.{method}"
    return _on_host(f"numpy.{name}", getattr(ufunc, method), inputs, kwargs)


def _namespace_functions() -> dict[Callable[..., Any], Callable[..., Any]]:
    if not _FUNCTIONS:
        ft = HOOKS.namespace
        _FUNCTIONS.update(
            {
                np.concatenate: ft.concat,
                np.stack: ft.stack,
                np.transpose: lambda x, axes=None: ft.permute_dims(
                    x, tuple(range(x.ndim))[::-1] if axes is None else tuple(axes)
                ),
                np.where: ft.where,
                np.matmul: ft.matmul,
                np.reshape: lambda a, shape=None, **kw: ft.reshape(a, shape, **kw),
                np.einsum: ft.einsum,
                np.pad: ft.pad,
            }
        )
    return _FUNCTIONS


def array_function(func: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """A NumPy function called with FuelTensor arguments: fueltensor's own function where one
    exists and accepts the call, otherwise NumPy on the host with results wrapped back."""
    own = _namespace_functions().get(func)
    if own is not None:
        try:
            return own(*args, **kwargs)
        except (TypeError, ValueError):
            pass
    name = getattr(func, "__name__", "function")
    return _on_host(f"numpy.{name}", func, args, kwargs)
