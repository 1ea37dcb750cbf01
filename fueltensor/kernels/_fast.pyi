"""Type stub of dispatch's compiled fast path built from `_fast.c`."""

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

ALIGNMENT: int
"""The byte alignment of every buffer `empty` and `binary` allocate."""

def binary(op: str, a: Any, b: Any, /) -> Any:
    """dispatch.binary's result when the cached plan runs a compiled kernel with no preparation
    and nothing traces or observes; else None."""

def empty(count: int, dtype: Any, /) -> Any:
    """An uninitialized 1-D array of `count` elements whose first byte is 64-byte aligned."""

def configure(
    tensor: type,
    policy_var: ContextVar[Any],
    trace_var: ContextVar[Any],
    observers_var: ContextVar[Any],
    current_policy: Callable[[], Any],
    layout: type,
    backends_globals: dict[str, Any],
    /,
) -> None:
    """Tell `binary` and the views what they read: the tensor and layout types, the policy /
    trace / observer vars, and engine.backends' globals (its `_DEFAULT` policy)."""

def getitem(t: Any, key: Any, /) -> Any:
    """The view t[key] for a key of ints and slices (alone or in a tuple), else None."""

def transpose(t: Any, /) -> Any:
    """The view of t with its axes reversed, else None."""
