"""The machine a result was measured on: CPU, the SIMD code NumPy runs, C library, kernels.

Bits can depend on the machine (NumPy picks other loops on AVX-512; pow comes from the platform
C library), so every report names where it was measured. `machine()` reads it once per process.
"""

from __future__ import annotations

import ctypes
import platform
from dataclasses import asdict, dataclass
from functools import cache
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np

from fueltensor.kernels import pow_shortcut
from fueltensor.kernels._chassis import IMPLEMENTATION, NATIVE


@dataclass(frozen=True)
class Fingerprint:
    """What decides a kernel's bits on this machine, as short strings and tuples."""

    cpu: str
    """CPU model name (from /proc/cpuinfo where there is one) and architecture."""
    numpy_baseline: tuple[str, ...]
    """The SIMD targets NumPy was compiled for unconditionally."""
    numpy_dispatch: tuple[str, ...]
    """NumPy's runtime-dispatched SIMD targets this CPU supports (the loops NumPy runs here)."""
    cpu_features: tuple[str, ...]
    """Every CPU feature NumPy detected."""
    libc: str
    """The C library and its version (pow's bits come from its libm)."""
    kernels: str
    """The CPU kernels' implementation in use: "native (<isa>)" or "pure"."""
    python: str
    numpy: str
    ml_dtypes: str
    pow_shortcut: str
    """Whether f32 pow takes the vector powf (glibc's powf recognised here), or why not (the
    bits are powf's either way)."""

    def to_dict(self) -> dict[str, Any]:
        """JSON-ready form (tuples as lists)."""
        return {k: list(v) if isinstance(v, tuple) else v for k, v in asdict(self).items()}

    def __str__(self) -> str:
        dispatch = " ".join(self.numpy_dispatch) or "none"
        return (
            f"{self.cpu}; NumPy SIMD baseline {' '.join(self.numpy_baseline) or 'none'}, "
            f"dispatched {dispatch}; {self.libc}; kernels {self.kernels}; "
            f"Python {self.python}, NumPy {self.numpy}, ml_dtypes {self.ml_dtypes}; "
            f"pow shortcut {self.pow_shortcut}"
        )


def _cpu_model() -> str:
    """'model name' from /proc/cpuinfo (Linux), else platform.processor(); with the arch."""
    model = ""
    cpuinfo = Path("/proc/cpuinfo")
    if cpuinfo.is_file():
        for line in cpuinfo.read_text(errors="replace").splitlines():
            key, _, value = line.partition(":")
            if key.strip() in ("model name", "Model", "Hardware"):
                model = value.strip()
                break
    return f"{model or platform.processor() or 'unknown CPU'} ({platform.machine()})"


def _numpy_simd() -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """NumPy's SIMD baseline, the dispatch targets this CPU runs, and its detected features
    (private attributes of NumPy's core module: empty where this NumPy does not have them)."""
    try:
        from numpy._core import _multiarray_umath as umath
    except ImportError:  # pragma: no cover - NumPy < 2 keeps it in numpy.core
        return (), (), ()
    features: dict[str, bool] = getattr(umath, "__cpu_features__", {})
    baseline = tuple(getattr(umath, "__cpu_baseline__", ()))
    dispatch = tuple(t for t in getattr(umath, "__cpu_dispatch__", ()) if features.get(t))
    return baseline, dispatch, tuple(sorted(k for k, on in features.items() if on))


def _libc() -> str:
    """'glibc 2.36' and the like; glibc's own gnu_get_libc_version where it answers."""
    name, version = platform.libc_ver()
    try:
        get = ctypes.CDLL(None).gnu_get_libc_version
        get.restype = ctypes.c_char_p
        name, version = "glibc", get().decode()
    except (AttributeError, OSError, TypeError):
        pass
    return f"{name} {version}".strip() or f"the C library of {platform.system()}"


def _kernels() -> str:
    """The CPU kernels in use, with the compiled body's instruction set."""
    if IMPLEMENTATION == "native" and NATIVE is not None:
        return f"native ({NATIVE.isa()})"
    return IMPLEMENTATION


@cache
def machine() -> Fingerprint:
    """This process's fingerprint (read once)."""
    baseline, dispatch, features = _numpy_simd()
    return Fingerprint(
        cpu=_cpu_model(),
        numpy_baseline=baseline,
        numpy_dispatch=dispatch,
        cpu_features=features,
        libc=_libc(),
        kernels=_kernels(),
        python=platform.python_version(),
        numpy=np.__version__,
        ml_dtypes=ml_dtypes.__version__,
        pow_shortcut=pow_shortcut.describe(),
    )


def cache_bytes() -> int | None:
    """The size of this CPU's largest cache (Linux sysfs), None where it cannot be read."""
    sizes = []
    for entry in Path("/sys/devices/system/cpu/cpu0/cache").glob("index*/size"):
        text = entry.read_text().strip().upper()
        scale = {"K": 1 << 10, "M": 1 << 20, "G": 1 << 30}.get(text[-1:], 1)
        digits = text.rstrip("KMG")
        if digits.isdigit():
            sizes.append(int(digits) * scale)
    return max(sizes) if sizes else None
