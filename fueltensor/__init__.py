"""fueltensor: a strided tensor whose arithmetic is dispatched through kernel contracts.

The namespace follows the Python array API standard (2024.12); `bfloat16` and `float16` are
documented extensions. The eight contract operations (add, subtract, multiply, divide,
remainder, pow, maximum, minimum) are planned from the FKC contract registry; `explain`,
`trace`, `use_backend` and `compare_backends` show and steer that choice.
"""

from __future__ import annotations

from fueltensor._dtypes import (
    bfloat16,
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
from fueltensor._dtypes import bool_ as bool
from fueltensor._errors import ContractError, ContractViolation, NoKernelError
from fueltensor._layout import LayoutFlags
from fueltensor._manipulation import broadcast_to, flip, permute_dims, reshape
from fueltensor._tensor import FuelTensor, as_strided, asarray
from fueltensor.backends import trace, use_backend, use_registry
from fueltensor.dispatch import (
    add,
    divide,
    explain,
    maximum,
    minimum,
    multiply,
    pow,
    remainder,
    subtract,
)
from fueltensor.planner import Plan, Step
from fueltensor.registry import Registry, register_provider, registry

__array_api_version__ = "2024.12"
_SUPPORTED_API_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")

__all__ = [
    "ContractError",
    "ContractViolation",
    "FuelTensor",
    "LayoutFlags",
    "NoKernelError",
    "Plan",
    "Registry",
    "Step",
    "add",
    "as_strided",
    "asarray",
    "bfloat16",
    "bool",
    "broadcast_to",
    "complex64",
    "complex128",
    "divide",
    "explain",
    "flip",
    "float16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "maximum",
    "minimum",
    "multiply",
    "permute_dims",
    "pow",
    "register_provider",
    "registry",
    "remainder",
    "reshape",
    "subtract",
    "trace",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "use_backend",
    "use_registry",
]
