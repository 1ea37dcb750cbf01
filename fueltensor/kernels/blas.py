"""fuel-blas-backend: fueltensor's provider of the host BLAS (contracts/fuel-blas-backend-matmul.md)

The F32 and F64 matrix products as NumPy's `matmul` computes them, through the BLAS its wheel
ships (OpenBLAS in the PyPI wheels): `blas_matmul_f32(a, b, *, out)` and `blas_matmul_f64`, the
thunks of `kernels.contractions` (a and b of any strides, their stacks broadcast, out dense). A
provider of its own, not documents of fuel-cpu-backend's, because a document's `kernel_source`
is its provider's and these kernels are not portable-cpu code: their bits are the BLAS build's
and its thread count's. Unlike the frameworks' providers (`dispatch: when_named`) it joins
dispatch by default: `ft.matmul` of float32 and float64 plans it, as it ran NumPy's matmul
before.
"""

from __future__ import annotations

from pathlib import Path
from typing import Final

import numpy as np

from fueltensor.kernels import KernelFn, contractions

PROVIDER: Final = "fuel-blas-backend"
_PREFIX: Final = "fuel_blas_backend::host::"

ENTRY_POINTS: Final[dict[str, KernelFn]] = contractions.blas_entries(_PREFIX)
"""The provider's link registry: full `entry_point` string -> thunk."""


def binary() -> tuple[Path | None, str, str]:
    """The BLAS library NumPy's matmul calls here (None where NumPy does not say), its version,
    and how the kernels reach it."""
    config = np.show_config(mode="dicts") or {}
    blas = config.get("Build Dependencies", {}).get("blas", {})
    name, version = blas.get("name", "unknown BLAS"), blas.get("version", "unknown")
    where = Path(np.__file__).parent.parent / "numpy.libs"
    found = sorted(where.glob("*blas*")) if where.is_dir() else []
    return (
        found[0] if found else None,
        f"{name} {version}",
        f"numpy {np.__version__} matmul",
    )


BINARY: Final = binary
