"""`__array_namespace_info__`: what the fueltensor namespace supports, as the standard asks
(the `linalg` and `fft` extensions are provided as `fueltensor.linalg` and `fueltensor.fft`)."""

from __future__ import annotations

from functools import cache
from typing import Any

from fueltensor.array_api.data_type_functions import KIND_GROUPS
from fueltensor.core import dtypes as _dtypes
from fueltensor.core.dtypes import DType
from fueltensor.core.tensor import _check_device

_STANDARD = (
    "bool",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "float32",
    "float64",
    "complex64",
    "complex128",
)
"""The standard's dtypes; bfloat16 and float16 are extensions and are not listed here."""


class __array_namespace_info__:
    """Capabilities, devices and dtypes of the fueltensor namespace."""

    def capabilities(self) -> dict[str, Any]:
        """Boolean indexing and data-dependent shapes are supported, up to 64 dimensions."""
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self) -> str:
        return "cpu"

    def devices(self) -> list[str]:
        return ["cpu"]

    def default_dtypes(self, *, device: Any = None) -> dict[str, DType]:
        _check_device(device)
        return {
            "real floating": _dtypes.default_float,
            "complex floating": _dtypes.complex128,
            "integral": _dtypes.default_int,
            "indexing": _dtypes.int64,
        }

    def dtypes(
        self, *, device: Any = None, kind: str | tuple[str, ...] | None = None
    ) -> dict[str, DType]:
        """The standard's dtypes, all or of the given kind(s) (a new dict each call)."""
        _check_device(device)
        kinds = None if kind is None else (kind,) if isinstance(kind, str) else tuple(kind)
        return dict(_dtypes_of(kinds))


@cache
def _dtypes_of(kinds: tuple[str, ...] | None) -> dict[str, DType]:
    """`dtypes(kind=kinds)`, built once per kinds (scikit-learn asks on every call)."""
    all_types = {name: _dtypes.as_dtype(name) for name in _STANDARD}
    if kinds is None:
        return all_types
    unknown = [k for k in kinds if k not in KIND_GROUPS]
    if unknown:
        raise ValueError(f"unknown dtype kind(s) {unknown}; use {', '.join(KIND_GROUPS)}")
    wanted = {k2 for k in kinds for k2 in KIND_GROUPS[k]}
    return {n: d for n, d in all_types.items() if d.category in wanted}
