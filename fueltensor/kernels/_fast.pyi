"""Type stub of dispatch's compiled fast path built from `_fast.c`."""

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any

ALIGNMENT: int
"""The byte alignment of every buffer `empty` and `binary` allocate."""

def binary(op: str, a: Any, b: Any, /) -> Any:
    """dispatch.binary's result for two tensors, or a tensor and a Python float / int / bool,
    when the cached plan has an entry and nothing traces or observes; else None."""

def inplace(op: str, target: Any, other: Any, /) -> Any:
    """dispatch.binary_inplace's result (the target, written through its strides) when `binary`
    would serve `op(target, other)`; else None. A result the target cannot hold raises
    `check_inplace`'s error with the target untouched."""

def adopt(array: Any, dtype: Any, /) -> Any:
    """`FuelTensor._from_dense(array, dtype)` for an exact ndarray of `dtype` that owns its
    memory, row-major and writable; else None."""

def scalar(value: Any, like: Any, /) -> Any:
    """`dispatch._scalar(value, like)`, cached (its arrays read-only), for an exact Python
    float / int / bool beside tensor `like`; else None."""

def operator(op: str, form: int, fallback: Callable[[str, Any, Any], Any], /) -> Any:
    """A callable (a, b) that runs `binary(op, a, b)`'s fast path, else `fallback(op, a, b)`
    (form 1: operands swapped; form 2: `inplace(op, a, b)`'s fast path); it binds as a method
    and takes attributes."""

def entry(
    kop: int,
    kdtype: int,
    out_dtype: Any,
    out_layout: Any,
    np_dtype: Any,
    shape: tuple[int, ...],
    modes: tuple[int, ...],
    offsets: tuple[int, ...],
    needs: tuple[int, ...],
    ufunc: Any,
    steps: tuple[tuple[int, ...], ...] | None,
    casts: tuple[tuple[Any, Any, Any] | None, ...],
    /,
) -> object | None:
    """What `binary` runs for a cached plan (an opaque object; see `dispatch._fast_entry`), or
    None for an oracle plan where NumPy's error state cannot be set from C."""

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
    dtype: type,
    make_scalar: Callable[[Any, Any], Any],
    errstate: tuple[ContextVar[Any], Any] | None,
    check_inplace: Callable[[Any, Any, tuple[int, ...], str], None],
    /,
) -> None:
    """Tell `binary` and the views what they read: the tensor, layout and dtype types, the
    policy / trace / observer vars, engine.backends' globals (its `_DEFAULT` policy), how a
    Python scalar becomes a 0-d tensor, and NumPy's error-state var with its all-ignore value
    (None: no oracle entries), and `tensor.check_inplace` (what `inplace` refuses)."""

def getitem(t: Any, key: Any, /) -> Any:
    """The view t[key] for a key of ints and slices (alone or in a tuple), else None."""

def transpose(t: Any, /) -> Any:
    """The view of t with its axes reversed, else None."""
