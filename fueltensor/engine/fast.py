"""The compiled fast path's interface (`kernels._fast`): its configuration, and the plan-cache
key both dispatch paths use.

Every decision the fast path shares with dispatch's Python path has one definition. The
plan-cache key is `_fast.key` where the module is built (its C lookup packs the same parts), and
`python_key` only where it is not; the two are tested equal. The fast path's mode and form codes
are `_fast`'s constants (dispatch reads them there), and its kernel op / dtype numbers are
`_native`'s (read by `kernels._chassis`).
"""

from __future__ import annotations

from collections.abc import Callable
from contextvars import ContextVar
from types import ModuleType
from typing import TYPE_CHECKING, Any, NamedTuple

if TYPE_CHECKING:
    from fueltensor.core.tensor import FuelTensor

PlanKey = tuple[object, ...]


class FastConfig(NamedTuple):
    """What `_fast.configure` reads, by field name (see `kernels/_fast.pyi`)."""

    tensor: type
    """FuelTensor: the type the fast path serves and builds (its four slots)."""
    layout: type
    """Layout (a tuple subclass), and its memoized `dense`."""
    dtype: type
    """DType (its `np` slot is the NumPy dtype in the plan-cache key)."""
    policy_var: ContextVar[Any]
    """The active `use_backend` / `use_registry` policy (None: the default)."""
    trace_var: ContextVar[Any]
    """The active traces: while any, the Python path runs (it records plans)."""
    observers_var: ContextVar[Any]
    """The active observers: while any, the Python path runs (it notifies them)."""
    current_policy: Callable[[], Any]
    """Makes the default policy the first time."""
    backends_globals: dict[str, Any]
    """`engine.backends`' globals: its `_DEFAULT` policy, read per call without a Python call."""
    make_scalar: Callable[[Any, Any], Any]
    """A Python scalar as the 0-d tensor beside a tensor (`dispatch._scalar`)."""
    errstate: tuple[ContextVar[Any], Any] | None
    """NumPy's error-state var and its all-ignore value (None: no oracle entries)."""
    check_inplace: Callable[[Any, Any, tuple[int, ...], str], None]
    """`tensor.check_inplace`: what an in-place operation refuses, and its error."""
    integer_forms: frozenset[str]
    """Operations with an integer-scalar form (`engine.scalar_forms.FORMS`): the compiled path
    declines `x op k` for an exact int k, which dispatch plans in that form."""


def load(config: FastConfig) -> ModuleType | None:
    """`kernels._fast`, configured with `config`, or None where it is not built."""
    try:
        from fueltensor.kernels import _fast
    except ImportError:
        return None
    _fast.configure(config)
    return _fast


def python_key(op: str, a: FuelTensor, b: FuelTensor) -> PlanKey:
    """The plan-cache key of `op(a, b)` where `_fast` is not built: `_fast.key`'s parts
    (the operation, then each operand's NumPy dtype and Layout)."""
    return (op, a._dtype.np, a._layout, b._dtype.np, b._layout)


def key_function(fast: ModuleType | None) -> Callable[[str, FuelTensor, FuelTensor], PlanKey]:
    """The plan-cache key's one definition in this build: `_fast.key`, else `python_key`."""
    if fast is None:
        return python_key
    made: Callable[[str, FuelTensor, FuelTensor], PlanKey] = fast.key
    return made
