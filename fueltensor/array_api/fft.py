"""The array API's `fft` extension (2024.12), as `fueltensor.fft`: host operations on NumPy.

Dtype rules are the standard's: the complex transforms (`fft`, `ifft`, `fftn`, `ifftn`,
`irfft`, `irfftn`, `hfft`) take complex tensors, the real ones (`rfft`, `rfftn`, `ihfft`) real
floating tensors, and the precision is kept (complex64 <-> float32, complex128 <-> float64).
A bfloat16/float16 input to a real transform is computed in float32 and gives complex64 (there
is no complex half type). `fftshift`/`ifftshift` take any floating tensor.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Literal

import numpy as np

from fueltensor.array_api._host import fresh, host, tensor
from fueltensor.core import dtypes as _dtypes
from fueltensor.core.dtypes import DType
from fueltensor.core.tensor import FuelTensor, _check_device

Norm = Literal["backward", "ortho", "forward"]

_COMPLEX_OF = {_dtypes.float64: _dtypes.complex128}
_REAL_OF = {_dtypes.complex64: _dtypes.float32, _dtypes.complex128: _dtypes.float64}


def _input(x: FuelTensor, fn: str, category: str) -> np.ndarray:
    """x's array; TypeError unless x's dtype is of `category`."""
    dt = tensor(x).dtype
    if dt.category != category:
        raise TypeError(f"fft.{fn} needs a {category} tensor, got {dt.name}")
    return x._array.astype(np.float32) if dt.narrow else x._array


def _complex_to_complex(fn: Callable[..., np.ndarray], x: FuelTensor, **kw: Any) -> FuelTensor:
    return fresh(fn(_input(x, fn.__name__, "complex floating"), **kw), x.dtype)


def _complex_to_real(fn: Callable[..., np.ndarray], x: FuelTensor, **kw: Any) -> FuelTensor:
    return fresh(fn(_input(x, fn.__name__, "complex floating"), **kw), _REAL_OF[x.dtype])


def _real_to_complex(fn: Callable[..., np.ndarray], x: FuelTensor, **kw: Any) -> FuelTensor:
    a = _input(x, fn.__name__, "real floating")
    return fresh(fn(a, **kw), _COMPLEX_OF.get(x.dtype, _dtypes.complex64))


@host
def fft(
    x: FuelTensor, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward"
) -> FuelTensor:
    """The one-dimensional discrete Fourier transform along `axis`."""
    return _complex_to_complex(np.fft.fft, x, n=n, axis=axis, norm=norm)


@host
def ifft(
    x: FuelTensor, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward"
) -> FuelTensor:
    """The one-dimensional inverse discrete Fourier transform along `axis`."""
    return _complex_to_complex(np.fft.ifft, x, n=n, axis=axis, norm=norm)


@host
def fftn(
    x: FuelTensor,
    /,
    *,
    s: Sequence[int] | None = None,
    axes: Sequence[int] | None = None,
    norm: Norm = "backward",
) -> FuelTensor:
    """The n-dimensional discrete Fourier transform over `axes` (default: all)."""
    return _complex_to_complex(np.fft.fftn, x, s=s, axes=axes, norm=norm)


@host
def ifftn(
    x: FuelTensor,
    /,
    *,
    s: Sequence[int] | None = None,
    axes: Sequence[int] | None = None,
    norm: Norm = "backward",
) -> FuelTensor:
    """The n-dimensional inverse discrete Fourier transform over `axes` (default: all)."""
    return _complex_to_complex(np.fft.ifftn, x, s=s, axes=axes, norm=norm)


@host
def rfft(
    x: FuelTensor, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward"
) -> FuelTensor:
    """The one-dimensional transform of a real signal (the non-negative frequencies)."""
    return _real_to_complex(np.fft.rfft, x, n=n, axis=axis, norm=norm)


@host
def irfft(
    x: FuelTensor, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward"
) -> FuelTensor:
    """The inverse of rfft: a real signal of length n (default 2 * (m - 1))."""
    return _complex_to_real(np.fft.irfft, x, n=n, axis=axis, norm=norm)


@host
def rfftn(
    x: FuelTensor,
    /,
    *,
    s: Sequence[int] | None = None,
    axes: Sequence[int] | None = None,
    norm: Norm = "backward",
) -> FuelTensor:
    """The n-dimensional transform of a real signal (last axis halved)."""
    return _real_to_complex(np.fft.rfftn, x, s=s, axes=axes, norm=norm)


@host
def irfftn(
    x: FuelTensor,
    /,
    *,
    s: Sequence[int] | None = None,
    axes: Sequence[int] | None = None,
    norm: Norm = "backward",
) -> FuelTensor:
    """The inverse of rfftn."""
    return _complex_to_real(np.fft.irfftn, x, s=s, axes=axes, norm=norm)


@host
def hfft(
    x: FuelTensor, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward"
) -> FuelTensor:
    """The transform of a signal with Hermitian symmetry (a real spectrum)."""
    return _complex_to_real(np.fft.hfft, x, n=n, axis=axis, norm=norm)


@host
def ihfft(
    x: FuelTensor, /, *, n: int | None = None, axis: int = -1, norm: Norm = "backward"
) -> FuelTensor:
    """The inverse of hfft, from a real signal."""
    return _real_to_complex(np.fft.ihfft, x, n=n, axis=axis, norm=norm)


def _frequencies(values: np.ndarray, dtype: Any, device: Any) -> FuelTensor:
    _check_device(device)
    dt: DType = _dtypes.default_float if dtype is None else _dtypes.as_dtype(dtype)
    if dt.category != "real floating":
        raise ValueError(f"the frequencies' dtype must be real floating, got {dt.name}")
    return fresh(values, dt)


@host
def fftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> FuelTensor:
    """The sample frequencies of an n-point fft with sample spacing d."""
    return _frequencies(np.fft.fftfreq(n, d=d), dtype, device)


@host
def rfftfreq(n: int, /, *, d: float = 1.0, dtype: Any = None, device: Any = None) -> FuelTensor:
    """The sample frequencies of an n-point rfft with sample spacing d."""
    return _frequencies(np.fft.rfftfreq(n, d=d), dtype, device)


def _shift(fn: Callable[..., np.ndarray], x: FuelTensor, axes: Any) -> FuelTensor:
    if tensor(x).dtype.category not in ("real floating", "complex floating"):
        raise TypeError(f"fft.{fn.__name__} needs a floating-point tensor, got {x.dtype.name}")
    return fresh(fn(x._array, axes=axes), x.dtype)


@host
def fftshift(x: FuelTensor, /, *, axes: int | Sequence[int] | None = None) -> FuelTensor:
    """x with the zero frequency moved to the centre of `axes` (default: all)."""
    return _shift(np.fft.fftshift, x, axes)


@host
def ifftshift(x: FuelTensor, /, *, axes: int | Sequence[int] | None = None) -> FuelTensor:
    """The inverse of fftshift."""
    return _shift(np.fft.ifftshift, x, axes)


__all__ = [
    "fft",
    "fftfreq",
    "fftn",
    "fftshift",
    "hfft",
    "ifft",
    "ifftn",
    "ifftshift",
    "ihfft",
    "irfft",
    "irfftn",
    "rfft",
    "rfftfreq",
    "rfftn",
]
