"""The array API's data type functions: astype, can_cast, finfo, iinfo, isdtype, result_type.

Promotion is `_dtypes.result_type`: the standard's lattice, plus bfloat16/float16 and a mixed
integer/float rule (the float wins) as documented extensions. `can_cast` keeps to the standard's
lattice: it never casts across kinds.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cache
from typing import Any, Final

import ml_dtypes
import numpy as np

from fueltensor.array_api._host import Rule, fresh, host, ruled_host, tensor
from fueltensor.core import dtypes as _dtypes
from fueltensor.core.dtypes import DType
from fueltensor.core.tensor import FuelTensor
from fueltensor.engine import cast as _cast
from fueltensor.ops import CAST_OP

KIND_GROUPS = {
    "bool": ("bool",),
    "signed integer": ("signed integer",),
    "unsigned integer": ("unsigned integer",),
    "integral": ("signed integer", "unsigned integer"),
    "real floating": ("real floating",),
    "complex floating": ("complex floating",),
    "numeric": ("signed integer", "unsigned integer", "real floating", "complex floating"),
}
"""The standard's dtype kinds, each as the `DType.category` values it covers."""

_CASTS_TO = {
    "bool": ("bool",),
    "signed integer": ("signed integer",),
    "unsigned integer": ("unsigned integer", "signed integer"),
    "real floating": ("real floating", "complex floating"),
    "complex floating": ("complex floating",),
}
"""Which kinds a kind may be cast to under the standard's lattice."""


@dataclass(frozen=True, eq=False)
class finfo_object:
    """Machine limits of a floating-point dtype (a complex dtype reports its real component)."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: DType


@dataclass(frozen=True, eq=False)
class iinfo_object:
    """Machine limits of an integer dtype."""

    bits: int
    max: int
    min: int
    dtype: DType


_WEAK: Final = (bool, int, float, complex)
"""Python scalar types, weak in promotion."""


def _dtype_of(value: Any) -> DType:
    return value.dtype if isinstance(value, FuelTensor) else _dtypes.as_dtype(value)


def finfo(type: DType | FuelTensor, /) -> finfo_object:
    """The limits of a floating-point dtype (or of a tensor's dtype)."""
    dt = _dtype_of(type)
    if dt.category not in ("real floating", "complex floating"):
        raise TypeError(f"finfo needs a floating-point dtype, got {dt.name}; use iinfo")
    return _finfo(dt.name)


@cache
def _finfo(name: str) -> finfo_object:
    """finfo of the floating dtype `name`, built once (clients ask for it on every call, and
    ml_dtypes.finfo takes microseconds); the object is frozen, so one can be shared."""
    info = ml_dtypes.finfo(_dtypes.as_dtype(name).np)  # type: ignore[no-untyped-call]
    real = _dtypes.from_numpy(np.dtype(info.dtype))
    return finfo_object(
        int(info.bits),
        float(info.eps),
        float(info.max),
        float(info.min),
        float(info.smallest_normal),
        real,
    )


def iinfo(type: DType | FuelTensor, /) -> iinfo_object:
    """The limits of an integer dtype (or of a tensor's dtype)."""
    dt = _dtype_of(type)
    if dt.category not in ("signed integer", "unsigned integer"):
        raise TypeError(f"iinfo needs an integer dtype, got {dt.name}; use finfo")
    info = np.iinfo(dt.np)
    return iinfo_object(int(info.bits), int(info.max), int(info.min), dt)


def isdtype(dtype: Any, kind: Any) -> bool:
    """True if `dtype` is `kind`: a dtype, one of the standard's kind names, or a tuple of
    those (any match). NumPy dtypes and scalar types are accepted as dtypes (clients such as
    scikit-learn pass them)."""
    dt = _dtypes.as_dtype(dtype)
    if isinstance(kind, tuple):
        return any(isdtype(dt, k) for k in kind)
    if isinstance(kind, str) and kind in KIND_GROUPS:
        return dt.category in KIND_GROUPS[kind]
    if isinstance(kind, str):
        raise ValueError(
            f"unknown dtype kind {kind!r}; use a dtype or one of {', '.join(sorted(KIND_GROUPS))}"
        )
    return dt is _dtypes.as_dtype(kind)


def result_type(*arrays_and_dtypes: Any) -> DType:
    """The dtype the standard's promotion gives the arguments: tensors, dtypes (fueltensor's or
    NumPy's) and Python scalars, which are weak (they take the kind of the rest)."""
    dt: DType | None = None
    for a in arrays_and_dtypes:
        if not isinstance(a, _WEAK):
            this = _dtype_of(a)
            dt = this if dt is None else _dtypes.result_type(dt, this)
    if dt is None:
        raise ValueError(
            "result_type needs at least one tensor or dtype (Python scalars alone have no dtype)"
        )
    for s in arrays_and_dtypes:
        if isinstance(s, _WEAK):
            dt = _dtypes.result_type(dt, _dtypes.scalar_dtype(s, dt))
    return dt


def can_cast(from_: DType | FuelTensor, to: DType, /) -> bool:
    """True if the standard's promotion lattice casts `from_` to `to` (never across kinds,
    except real to complex floating)."""
    src, dst = _dtype_of(from_), _dtypes.as_dtype(to)
    if dst.category not in _CASTS_TO[src.category]:
        return False
    try:
        return _dtypes.result_type(src, dst) is dst
    except TypeError:
        return False


def _castable(dtype: DType) -> Rule | None:
    """`astype`'s rule for the dtypes its compiled call serves: a cast from a complex dtype is
    left to the Python function (which refuses one to a real dtype), and one from a float format
    too (which plans a cast to another float format through the cast contracts)."""
    return None if dtype.category.endswith("floating") else Rule(None, None, None)


def _host_astype(x: FuelTensor, dt: DType) -> FuelTensor:
    """The casts no contract family covers (integers, bools, complex, a float's own dtype), on
    the host, labelled so (as `astype`: the name a trace records)."""
    return fresh(x._array.astype(dt.np), dt)


_host_astype.__name__ = "astype"
_host_astype = host(_host_astype)


@ruled_host("CAST", np.ndarray.astype, _castable)
def astype(
    x: FuelTensor,
    dtype: DType,
    /,
    *,
    copy: bool = True,
    device: Any = None,
    saturate: bool = False,
) -> FuelTensor:
    """x cast to `dtype` (x itself when no cast is needed and copy=False). A cast between two
    float formats is planned from the cast contracts (`fueltensor contracts --op
    CastElementwise`): rounded once to nearest even; a value beyond the target's range goes to
    inf (float8_e4m3fn: NaN) or, with `saturate=True` (a fueltensor extension), to the largest
    finite value of its sign. A complex to real cast is refused: take real() or abs() first."""
    x, dt = tensor(x), _dtypes.as_dtype(dtype)
    if device not in (None, "cpu"):
        raise ValueError(f"device {device!r} is not available; fueltensor has one device, 'cpu'")
    if dt is x.dtype and not copy:
        return x
    if x.dtype.category == "complex floating" and dt.category != "complex floating":
        raise TypeError(
            f"casting {x.dtype.name} to {dt.name} would drop the imaginary part; "
            "take real() or abs() first"
        )
    if x.dtype.is_float and dt.is_float and dt is not x.dtype:
        return _cast.cast(x, dt, saturate)
    if saturate:
        raise ValueError(
            f"saturate=True applies to a cast between two float formats; {x.dtype.name} to "
            f"{dt.name} is not one"
        )
    return _host_astype(x, dt)


astype.__fueltensor_op__ = CAST_OP.name  # type: ignore[attr-defined]
_cast.OPERATIONS[CAST_OP.name] = astype
