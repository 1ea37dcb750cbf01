"""fueltensor's data types, their FKC codes, and the type-promotion rules.

A `DType` pairs the array-API name (`float32`) with the code the contracts use (`F32`) and the
NumPy dtype that stores it. It reads as that NumPy dtype to NumPy (`np.dtype(ft.float32)`, via
`.dtype`), compares equal to it and to its scalar type, and has NumPy's `.kind`/`.itemsize`/
`.name`; the standard's category (`"real floating"`...) is `.category`.

Promotion follows the array API standard's lattice, extended with the narrow floating formats
(`bfloat16`, `float16` and the OCP 8-bit `float8_e4m3fn`, `float8_e5m2`: a narrow format with
float32 or float64 takes the wider one; two different narrow formats meet in float32, which holds
every value of each) and, outside the standard, PyTorch's category rule for mixed kinds (an
integer or bool with a float takes the float).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import cache
from typing import Final

import ml_dtypes
import numpy as np

CATEGORIES: Final = (
    "bool",
    "signed integer",
    "unsigned integer",
    "real floating",
    "complex floating",
)


class DType:
    """One element type: array-API name, FKC code, NumPy storage dtype and standard category."""

    __slots__ = ("category", "dtype", "fkc", "itemsize", "kind", "name", "np", "type")

    def __init__(self, name: str, fkc: str, np_dtype: np.dtype, category: str) -> None:
        self.name = name
        self.fkc = fkc
        self.np: np.dtype = np.dtype(np_dtype)
        self.dtype = self.np
        """What `np.dtype(x)` reads from an arbitrary object: the storage dtype."""
        self.type: type = self.np.type
        self.itemsize = self.np.itemsize
        self.category = category
        self.kind = _NUMPY_KINDS[category]
        """NumPy's one-letter kind ('f' for bfloat16 too, whose NumPy dtype says 'V')."""

    def __repr__(self) -> str:
        return f"fueltensor.{self.name}"

    def __reduce__(self) -> tuple[Callable[[object], DType], tuple[str]]:
        """Pickle by name; unpickling gives back this same object (`as_dtype` of the name), so
        `pickle.loads(pickle.dumps(ft.bool)) is ft.bool` (the module attribute is `bool_`)."""
        return as_dtype, (self.name,)

    def __eq__(self, other: object) -> bool:
        """Equal to itself, to the NumPy dtype it stores as and to that dtype's scalar type;
        two fueltensor dtypes are equal only if they are the same one."""
        if isinstance(other, DType):
            return other is self
        if isinstance(other, np.dtype):
            return bool(other == self.np)
        if isinstance(other, type) and other is not object:
            return other is self.np.type or (other is bool and self.np.type is np.bool_)
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self.np)

    @property
    def is_float(self) -> bool:
        """True for the real floating types (the ones the contracts admit)."""
        return self.category == "real floating"

    @property
    def numpy_own(self) -> bool:
        """False for ml_dtypes' formats (bfloat16, the 8-bit floats): dtypes registered with
        NumPy from outside (`isbuiltin == 2`), which NumPy's DLPack and buffer protocol refuse."""
        return self.np.isbuiltin != 2

    @property
    def narrow(self) -> bool:
        """True for the floating formats narrower than float32 (bfloat16, float16, the 8-bit
        ones): functions NumPy has no loop of their own for compute them in float32."""
        return self.category == "real floating" and self.itemsize < 4


_NUMPY_KINDS: Final = {
    "bool": "b",
    "signed integer": "i",
    "unsigned integer": "u",
    "real floating": "f",
    "complex floating": "c",
}


bool_ = DType("bool", "BOOL", np.dtype(np.bool_), "bool")
int8 = DType("int8", "I8", np.dtype(np.int8), "signed integer")
int16 = DType("int16", "I16", np.dtype(np.int16), "signed integer")
int32 = DType("int32", "I32", np.dtype(np.int32), "signed integer")
int64 = DType("int64", "I64", np.dtype(np.int64), "signed integer")
uint8 = DType("uint8", "U8", np.dtype(np.uint8), "unsigned integer")
uint16 = DType("uint16", "U16", np.dtype(np.uint16), "unsigned integer")
uint32 = DType("uint32", "U32", np.dtype(np.uint32), "unsigned integer")
uint64 = DType("uint64", "U64", np.dtype(np.uint64), "unsigned integer")
float16 = DType("float16", "F16", np.dtype(np.float16), "real floating")
bfloat16 = DType("bfloat16", "BF16", np.dtype(ml_dtypes.bfloat16), "real floating")
float8_e4m3fn = DType(
    "float8_e4m3fn", "F8_E4M3FN", np.dtype(ml_dtypes.float8_e4m3fn), "real floating"
)
float8_e5m2 = DType("float8_e5m2", "F8_E5M2", np.dtype(ml_dtypes.float8_e5m2), "real floating")
float32 = DType("float32", "F32", np.dtype(np.float32), "real floating")
float64 = DType("float64", "F64", np.dtype(np.float64), "real floating")
complex64 = DType("complex64", "C64", np.dtype(np.complex64), "complex floating")
complex128 = DType("complex128", "C128", np.dtype(np.complex128), "complex floating")

ALL: Final[tuple[DType, ...]] = (
    bool_,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
    float8_e4m3fn,
    float8_e5m2,
    float16,
    bfloat16,
    float32,
    float64,
    complex64,
    complex128,
)
BY_FKC: Final[dict[str, DType]] = {d.fkc: d for d in ALL}
"""The FKC dtype vocabulary: every code a contract's `dtypes` list may name."""
_BY_NAME: Final[dict[str, DType]] = {d.name: d for d in ALL}
_BY_NP: Final[dict[np.dtype, DType]] = {d.np: d for d in ALL}

default_float: Final = float64
default_int: Final = int64


def from_numpy(dt: np.dtype) -> DType:
    """The fueltensor dtype stored as NumPy dtype `dt`; TypeError for one we do not support."""
    try:
        return _BY_NP[dt]
    except KeyError:
        supported = ", ".join(d.name for d in ALL)
        raise TypeError(f"unsupported NumPy dtype {dt}; fueltensor supports {supported}") from None


def as_dtype(obj: object) -> DType:
    """Accept a DType, a dtype name, a NumPy dtype or scalar type; TypeError otherwise."""
    if isinstance(obj, DType):
        return obj
    if isinstance(obj, str) and obj in _BY_NAME:
        return _BY_NAME[obj]
    if obj is bool:
        return bool_
    try:
        return from_numpy(np.dtype(obj))  # type: ignore[call-overload]
    except TypeError:
        pass
    supported = ", ".join(d.name for d in ALL)
    raise TypeError(f"{obj!r} is not a fueltensor dtype; use one of {supported}")


_INT_ORDER: Final = {int8: 0, int16: 1, int32: 2, int64: 3}
_UINT_ORDER: Final = {uint8: 0, uint16: 1, uint32: 2, uint64: 3}
_SIGNED_BY_BITS: Final = {8: int8, 16: int16, 32: int32, 64: int64}


def _float_rank(d: DType) -> int:
    """0 for the narrow formats (two different ones meet in float32), 1 float32, 2 float64."""
    return 0 if d.narrow else {float32: 1, float64: 2}[d]


def _promote_ints(a: DType, b: DType) -> DType:
    if a.category == b.category:
        order = _INT_ORDER if a.category == "signed integer" else _UINT_ORDER
        return a if order[a] >= order[b] else b
    signed, unsigned = (a, b) if a.category == "signed integer" else (b, a)
    need = unsigned.itemsize * 8 * 2
    if signed.itemsize * 8 >= need:
        return signed
    if need > 64:
        raise TypeError(f"no integer type holds both {a.name} and {b.name}; cast one explicitly")
    return _SIGNED_BY_BITS[need]


def _promote_floats(a: DType, b: DType) -> DType:
    if a is b:
        return a
    ra, rb = _float_rank(a), _float_rank(b)
    if ra == rb == 0:
        return float32
    return a if ra > rb else b


@cache
def result_type(a: DType, b: DType) -> DType:
    """The promoted dtype of a binary operation on tensors of dtypes `a` and `b`."""
    if a is b:
        return a
    order = {k: i for i, k in enumerate(CATEGORIES)}
    if order[a.category] < order[b.category]:
        a, b = b, a
    if a.category == "complex floating":
        if b.category == "complex floating":
            return a if a.itemsize >= b.itemsize else b
        if b.category == "real floating":
            return complex128 if b is float64 or a is complex128 else complex64
        return a
    if a.category == "real floating":
        return _promote_floats(a, b) if b.category == "real floating" else a
    if a.category in ("signed integer", "unsigned integer"):
        return _promote_ints(a, b) if b.category != "bool" else a
    return a


def scalar_dtype(value: bool | int | float | complex, other: DType) -> DType:
    """The dtype a Python scalar takes next to a tensor of dtype `other` (scalars are weak)."""
    if isinstance(value, bool):
        return other
    if isinstance(value, int):
        return other if other.category != "bool" else default_int
    if isinstance(value, float):
        return other if other.category in ("real floating", "complex floating") else default_float
    if isinstance(value, complex):
        if other.category == "complex floating":
            return other
        return complex128 if other is float64 else complex64 if other.is_float else complex128
    raise TypeError(f"expected a Python bool, int, float or complex, got {type(value).__name__}")
