"""NumPy's ndarray methods on FuelTensor (`x.sum()`, `x.reshape(2, 3)`, `x.astype(...)`), as
CuPy, JAX and PyTorch arrays have them: Dask's chunk functions, xarray, scikit-learn and SciPy
call them on arrays they did not create, and they are a NumPy user's first lines.

Each method is the namespace function of the same meaning, reached through `HOOKS.namespace`
(core imports no layer above it), so contract operations plan as before and host work is traced
as host; bad input raises what the function raises. `x.sum()`, `x.astype(dtype)` and the other
`_ruled` methods run that function's compiled call where it takes their arguments.
Signatures and meaning are NumPy's (axis, keepdims, dtype, ddof, order, copy). `out=` writes the
result into the tensor given, with assignment's rules (`out[...] = result`: same shape, no dtype
change), and returns it.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import numpy as np

from fueltensor.core import dtypes as _dtypes
from fueltensor.core.dtypes import DType
from fueltensor.core.hooks import HOOKS
from fueltensor.core.layout import Shape, normalize_axis
from fueltensor.core.operators import compiled
from fueltensor.core.shared import FAST

if TYPE_CHECKING:
    from fueltensor.core.tensor import FuelTensor

Axis = int | tuple[int, ...] | None
Order = Literal["C", "F", "A", "K"]
Casting = Literal["no", "equiv", "safe", "same_kind", "unsafe"]
M = TypeVar("M", bound=Callable[..., Any])


def _ruled(method: M) -> M:
    """`method`, which is the namespace function of its name on its positional arguments and
    its `axis=` / `keepdims=` (`x.sum()` is `sum(x)`, `x.max(axis=0)` is `max(x, axis=0)`), as
    one compiled callable where `_fast` is built: that function's compiled call (`_fast.ruled`)
    when it takes the call, else `method`."""
    if FAST is None:
        return method
    made: M = compiled(method, method.__name__, "METHOD", method, HOOKS)  # type: ignore[assignment]
    return made


class NdarrayMethods:
    """The ndarray methods clients call on FuelTensor; every one a namespace function."""

    __slots__ = ()

    __array_priority__ = 1.0
    """Above NumPy's ndarray (0.0): where Dask picks the chunk type of a mixed operation by
    this number (dot, tensordot, linalg.solve/lstsq), a FuelTensor operand wins over NumPy."""

    if TYPE_CHECKING:

        @property
        def shape(self) -> Shape: ...
        @property
        def ndim(self) -> int: ...
        @property
        def size(self) -> int: ...
        @property
        def strides(self) -> Shape: ...
        @property
        def dtype(self) -> DType: ...
        @property
        def _array(self) -> np.ndarray: ...

    # -- reductions ---------------------------------------------------------------------------

    @_ruled
    def sum(
        self,
        axis: Axis = None,
        dtype: Any = None,
        out: FuelTensor | None = None,
        keepdims: bool = False,
    ) -> FuelTensor:
        """The sum of the elements (along `axis`), as `fueltensor.sum`."""
        return _done(HOOKS.namespace.sum(self, axis=axis, dtype=dtype, keepdims=keepdims), out)

    def prod(
        self,
        axis: Axis = None,
        dtype: Any = None,
        out: FuelTensor | None = None,
        keepdims: bool = False,
    ) -> FuelTensor:
        """The product of the elements (along `axis`), as `fueltensor.prod`."""
        return _done(HOOKS.namespace.prod(self, axis=axis, dtype=dtype, keepdims=keepdims), out)

    @_ruled
    def mean(
        self,
        axis: Axis = None,
        dtype: Any = None,
        out: FuelTensor | None = None,
        keepdims: bool = False,
    ) -> FuelTensor:
        """The mean (along `axis`), computed in `dtype` when given, as `fueltensor.mean`."""
        x = _cast(self, dtype)
        return _done(HOOKS.namespace.mean(x, axis=axis, keepdims=keepdims), out)

    def var(
        self,
        axis: Axis = None,
        dtype: Any = None,
        out: FuelTensor | None = None,
        ddof: float = 0,
        keepdims: bool = False,
        *,
        correction: float | None = None,
    ) -> FuelTensor:
        """The variance (along `axis`), dividing by N - ddof, as `fueltensor.var`."""
        fix = _correction(ddof, correction)
        x = _cast(self, dtype)
        return _done(HOOKS.namespace.var(x, axis=axis, correction=fix, keepdims=keepdims), out)

    def std(
        self,
        axis: Axis = None,
        dtype: Any = None,
        out: FuelTensor | None = None,
        ddof: float = 0,
        keepdims: bool = False,
        *,
        correction: float | None = None,
    ) -> FuelTensor:
        """The standard deviation (along `axis`), dividing by N - ddof, as `fueltensor.std`."""
        fix = _correction(ddof, correction)
        x = _cast(self, dtype)
        return _done(HOOKS.namespace.std(x, axis=axis, correction=fix, keepdims=keepdims), out)

    @_ruled
    def max(
        self, axis: Axis = None, out: FuelTensor | None = None, keepdims: bool = False
    ) -> FuelTensor:
        """The largest element (along `axis`), as `fueltensor.max`."""
        return _done(HOOKS.namespace.max(self, axis=axis, keepdims=keepdims), out)

    @_ruled
    def min(
        self, axis: Axis = None, out: FuelTensor | None = None, keepdims: bool = False
    ) -> FuelTensor:
        """The smallest element (along `axis`), as `fueltensor.min`."""
        return _done(HOOKS.namespace.min(self, axis=axis, keepdims=keepdims), out)

    @_ruled
    def any(
        self, axis: Axis = None, out: FuelTensor | None = None, keepdims: bool = False
    ) -> FuelTensor:
        """Whether some element (along `axis`) is nonzero, as `fueltensor.any`."""
        return _done(HOOKS.namespace.any(self, axis=axis, keepdims=keepdims), out)

    @_ruled
    def all(
        self, axis: Axis = None, out: FuelTensor | None = None, keepdims: bool = False
    ) -> FuelTensor:
        """Whether every element (along `axis`) is nonzero, as `fueltensor.all`."""
        return _done(HOOKS.namespace.all(self, axis=axis, keepdims=keepdims), out)

    def argmax(
        self, axis: int | None = None, out: FuelTensor | None = None, *, keepdims: bool = False
    ) -> FuelTensor:
        """The index of the first maximum (of the flattened tensor when axis is None)."""
        return _done(HOOKS.namespace.argmax(self, axis=axis, keepdims=keepdims), out)

    def argmin(
        self, axis: int | None = None, out: FuelTensor | None = None, *, keepdims: bool = False
    ) -> FuelTensor:
        """The index of the first minimum (of the flattened tensor when axis is None)."""
        return _done(HOOKS.namespace.argmin(self, axis=axis, keepdims=keepdims), out)

    def cumsum(
        self, axis: int | None = None, dtype: Any = None, out: FuelTensor | None = None
    ) -> FuelTensor:
        """Running sums along `axis` (of the flattened tensor when None), as
        `fueltensor.cumulative_sum`."""
        x, at = _flat(self, axis)
        return _done(HOOKS.namespace.cumulative_sum(x, axis=at, dtype=dtype), out)

    def cumprod(
        self, axis: int | None = None, dtype: Any = None, out: FuelTensor | None = None
    ) -> FuelTensor:
        """Running products along `axis` (of the flattened tensor when None), as
        `fueltensor.cumulative_prod`."""
        x, at = _flat(self, axis)
        return _done(HOOKS.namespace.cumulative_prod(x, axis=at, dtype=dtype), out)

    # -- shape and order ----------------------------------------------------------------------

    def reshape(self, *shape: Any, order: Order = "C", copy: bool | None = None) -> FuelTensor:
        """The elements under a new shape, given as one sequence or as separate extents (one
        may be -1), read and written in C (row-major) or F (column-major) order."""
        if not shape:
            raise TypeError("reshape() needs a shape: x.reshape(2, 3) or x.reshape((2, 3))")
        dims = shape[0] if len(shape) == 1 else shape
        dims = (dims,) if hasattr(dims, "__index__") else tuple(dims)
        if order == "K":
            raise ValueError("order='K' is not permitted for reshaping; use 'C', 'F' or 'A'")
        if _fortran(self, order):
            flipped = HOOKS.namespace.reshape(_reversed(self), dims[::-1], copy=copy)
            return _reversed(flipped)
        result: FuelTensor = HOOKS.namespace.reshape(self, dims, copy=copy)
        return result

    def ravel(self, order: Order = "C") -> FuelTensor:
        """The elements as a 1-D tensor (a view when the strides allow it), in `order`: C, F,
        A (F for a Fortran-contiguous tensor) or K (the order they lie in memory)."""
        result: FuelTensor = HOOKS.namespace.reshape(_in_order(self, order), (-1,))
        return result

    def flatten(self, order: Order = "C") -> FuelTensor:
        """A 1-D copy of the elements, in `order` (as `ravel`, but never a view)."""
        result: FuelTensor = HOOKS.namespace.reshape(_in_order(self, order), (-1,), copy=True)
        return result

    def squeeze(self, axis: Axis = None) -> FuelTensor:
        """The tensor without the given axes of extent 1 (all of them when None); a view."""
        if axis is None:
            axis = tuple(i for i, n in enumerate(self.shape) if n == 1)
        result: FuelTensor = HOOKS.namespace.squeeze(self, axis=axis)
        return result

    def transpose(self, *axes: Any) -> FuelTensor:
        """The axes reordered: reversed when none are given, else as listed (one sequence or
        separate ints); a view."""
        if not axes or axes == (None,):
            return _reversed(self)
        order = tuple(axes[0]) if len(axes) == 1 and not hasattr(axes[0], "__index__") else axes
        result: FuelTensor = HOOKS.namespace.permute_dims(self, tuple(order))
        return result

    def swapaxes(self, axis1: int, axis2: int) -> FuelTensor:
        """The tensor with two axes exchanged; a view."""
        order = list(range(self.ndim))
        a, b = normalize_axis(axis1, self.ndim), normalize_axis(axis2, self.ndim)
        order[a], order[b] = b, a
        result: FuelTensor = HOOKS.namespace.permute_dims(self, tuple(order))
        return result

    def repeat(self, repeats: Any, axis: int | None = None) -> FuelTensor:
        """Each element repeated (along `axis`, or over the flattened tensor when None)."""
        result: FuelTensor = HOOKS.namespace.repeat(self, repeats, axis=axis)
        return result

    # -- values -------------------------------------------------------------------------------

    @_ruled
    def astype(
        self,
        dtype: Any,
        order: Order = "K",
        casting: Casting = "unsafe",
        subok: bool = True,
        copy: bool = True,
    ) -> FuelTensor:
        """The elements cast to `dtype`, as `fueltensor.astype` (complex to real refused);
        `casting` other than 'unsafe' refuses a cast NumPy's rule of that name forbids. The
        result is dense row-major whatever `order` (a layout choice, never the values);
        `subok` is accepted and moot (there are no FuelTensor subclasses)."""
        _fortran(self, order)  # only checks that `order` is one of NumPy's four
        _check_casting(self.dtype, dtype, casting)
        result: FuelTensor = HOOKS.namespace.astype(self, dtype, copy=copy)
        return result

    def copy(self, order: Order = "C") -> FuelTensor:
        """A dense, independent copy (row-major whatever `order`: the values are the same)."""
        _fortran(self, order)  # only checks that `order` is one of NumPy's four
        result: FuelTensor = HOOKS.namespace.asarray(self, copy=True)
        return result

    def clip(self, min: Any = None, max: Any = None, out: FuelTensor | None = None) -> FuelTensor:
        """The elements limited to [min, max], as `fueltensor.clip`."""
        return _done(HOOKS.namespace.clip(self, min, max), out)

    def round(self, decimals: int = 0, out: FuelTensor | None = None) -> FuelTensor:
        """The elements rounded to `decimals` places (ties to even), as `fueltensor.round`."""
        return _done(HOOKS.namespace.round(self, decimals=decimals), out)

    def conj(self) -> FuelTensor:
        """The complex conjugate, as `fueltensor.conj`."""
        result: FuelTensor = HOOKS.namespace.conj(self)
        return result

    conjugate = conj

    @property
    def real(self) -> FuelTensor:
        """The real part (a copy), as `fueltensor.real`; NumPy's attribute, read by xarray."""
        result: FuelTensor = HOOKS.namespace.real(self)
        return result

    @property
    def imag(self) -> FuelTensor:
        """The imaginary part (a copy), as `fueltensor.imag`."""
        result: FuelTensor = HOOKS.namespace.imag(self)
        return result

    def dot(self, other: Any, out: FuelTensor | None = None) -> FuelTensor:
        """NumPy's dot: a product with a 0-d operand, `matmul` for 1-D and 2-D operands, else
        the sum over this tensor's last axis and `other`'s second-to-last (its only one if 1-D)."""
        ns = HOOKS.namespace
        b = ns.asarray(other)
        if not self.ndim or not b.ndim:
            return _done(ns.multiply(self, b), out)
        if self.ndim <= 2 and b.ndim <= 2:
            return _done(ns.matmul(self, b), out)
        inner = ([self.ndim - 1], [max(b.ndim - 2, 0)])
        return _done(ns.tensordot(self, b, axes=inner), out)

    def take(
        self,
        indices: Any,
        axis: int | None = None,
        out: FuelTensor | None = None,
        mode: Literal["raise", "wrap", "clip"] = "raise",
    ) -> FuelTensor:
        """The elements at integer `indices` along `axis` (of the flattened tensor when None);
        out-of-range indices raise, wrap around or clip to the ends, as `mode` says."""
        ns = HOOKS.namespace
        x, at = _flat(self, axis)
        idx = ns.asarray(indices)
        extent = x.shape[normalize_axis(at, x.ndim)]
        if mode == "wrap":  # in 64 bits, as NumPy wraps: an int8 index wraps on 200 elements
            if (
                idx.dtype.category in ("signed integer", "unsigned integer")
                and idx.dtype.itemsize < 8
            ):
                idx = ns.astype(idx, ns.int64)
            idx = ns.remainder(idx, extent)
        elif mode == "clip":
            idx = ns.clip(idx, 0, extent - 1)
        elif mode != "raise":
            raise ValueError(f"take: mode must be 'raise', 'wrap' or 'clip', got {mode!r}")
        return _done(ns.take(x, idx, axis=at), out)

    def diagonal(self, offset: int = 0, axis1: int = 0, axis2: int = 1) -> FuelTensor:
        """The `offset`-th diagonal of the matrices on axes (axis1, axis2), as a last axis
        after the others (NumPy's layout), through `fueltensor.linalg.diagonal`."""
        result: FuelTensor = HOOKS.namespace.linalg.diagonal(
            _matrices_last(self, axis1, axis2), offset=offset
        )
        return result

    def trace(
        self,
        offset: int = 0,
        axis1: int = 0,
        axis2: int = 1,
        dtype: Any = None,
        out: FuelTensor | None = None,
    ) -> FuelTensor:
        """The sums of the `offset`-th diagonals on axes (axis1, axis2), accumulated as `sum`
        does, through `fueltensor.linalg.trace`."""
        matrices = _matrices_last(self, axis1, axis2)
        return _done(HOOKS.namespace.linalg.trace(matrices, offset=offset, dtype=dtype), out)

    @property
    def nbytes(self) -> int:
        """The bytes these elements occupy (size times itemsize; a view counts its own), as
        NumPy's attribute: what Dask's `sizeof` and xarray's reprs read."""
        return self.size * self.dtype.itemsize

    def nonzero(self) -> tuple[FuelTensor, ...]:
        """The indices of the nonzero elements, one int64 tensor per axis."""
        result: tuple[FuelTensor, ...] = HOOKS.namespace.nonzero(self)
        return result


def _done(result: FuelTensor, out: FuelTensor | None) -> FuelTensor:
    """`result`, or `out` with the result written into it (same shape; assignment's dtype rule:
    a result that would change `out`'s dtype is refused)."""
    if out is None:
        return result
    if not isinstance(out, NdarrayMethods):
        raise TypeError(f"out= must be a FuelTensor, got {type(out).__name__}")
    if out.shape != result.shape:
        raise ValueError(
            f"out= has shape {out.shape}, the result {result.shape}; pass an out of the "
            "result's shape"
        )
    out[...] = result
    return out


def _cast(x: NdarrayMethods, dtype: Any) -> Any:
    """`x` cast to `dtype` (NumPy's dtype= of mean/var/std: the type to compute in), or `x`."""
    return x if dtype is None else HOOKS.namespace.astype(x, dtype)


def _correction(ddof: float, correction: float | None) -> float:
    """NumPy's `ddof` or its array-API alias `correction` (not both)."""
    if correction is None:
        return ddof
    if ddof != 0:
        raise ValueError(f"give ddof or correction, not both (got ddof={ddof}, {correction=})")
    return correction


def _flat(x: NdarrayMethods, axis: int | None) -> tuple[Any, int]:
    """`x` and `axis`, or the flattened `x` and axis 0 when axis is None (NumPy's rule for
    cumsum, cumprod and take)."""
    if axis is None:
        return x.reshape(-1), 0
    return x, operator.index(axis)


def _matrices_last(x: Any, axis1: int, axis2: int) -> Any:
    """`x` with axes (axis1, axis2) moved last, in that order (a view); AxisError for an axis
    out of range, ValueError when they are the same axis."""
    a, b = normalize_axis(axis1, x.ndim), normalize_axis(axis2, x.ndim)
    if a == b:
        raise ValueError(f"axis1 and axis2 are both axis {a}; a diagonal needs two axes")
    return HOOKS.namespace.moveaxis(x, (a, b), (-2, -1))


def _reversed(x: Any) -> FuelTensor:
    """`x` with its axes in reverse order (a view)."""
    result: FuelTensor = HOOKS.namespace.permute_dims(x, tuple(range(x.ndim))[::-1])
    return result


def _fortran(x: NdarrayMethods, order: str) -> bool:
    """Whether `order` reads the elements column-major: 'F', or 'A' on a tensor that is
    Fortran-contiguous but not C-contiguous; ValueError for an unknown order."""
    if order not in ("C", "F", "A", "K"):
        raise ValueError(f"order must be 'C', 'F', 'A' or 'K', got {order!r}")
    flags = x._array.flags
    return order == "F" or (order == "A" and flags.f_contiguous and not flags.c_contiguous)


def _in_order(x: NdarrayMethods, order: str) -> Any:
    """A view of `x` whose row-major order is `order`'s reading order; 'K' is memory order:
    the axes by decreasing |stride|, each read in its own direction (as NumPy's ravel)."""
    if order == "K":
        ranked = sorted(range(x.ndim), key=lambda i: -abs(x.strides[i]) if x.shape[i] > 1 else 0)
        return HOOKS.namespace.permute_dims(x, tuple(ranked))
    return _reversed(x) if _fortran(x, order) else x


def _check_casting(have: DType, dtype: Any, casting: Casting) -> None:
    """Refuse a cast that NumPy's `casting` rule forbids (TypeError in fueltensor's words)."""
    want = _dtypes.as_dtype(dtype)
    if casting not in ("no", "equiv", "safe", "same_kind", "unsafe"):
        raise ValueError(
            f"casting must be 'no', 'equiv', 'safe', 'same_kind' or 'unsafe', got {casting!r}"
        )
    if casting != "unsafe" and not np.can_cast(have.np, want.np, casting):
        raise TypeError(
            f"cannot cast {have.name} to {want.name} under casting={casting!r}; "
            "pass casting='unsafe' to allow it"
        )
