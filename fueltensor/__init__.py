"""fueltensor: a strided tensor whose arithmetic is dispatched through kernel contracts."""

from __future__ import annotations

from fueltensor._dtypes import (
    bfloat16,
    bool_ as bool,
    complex64,
    complex128,
    float16,
    float32,
    float64,
    int8,
    int16,
    int32,
    int64,
    uint8,
    uint16,
    uint32,
    uint64,
)
from fueltensor._errors import ContractError, ContractViolation, NoKernelError

__all__ = [
    "ContractError", "ContractViolation", "NoKernelError",
    "bfloat16", "bool", "complex64", "complex128", "float16", "float32", "float64",
    "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64",
]
