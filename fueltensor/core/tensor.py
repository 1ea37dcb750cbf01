"""`FuelTensor`: a 1-D storage buffer plus a checked `Layout`; its operators go through dispatch.

Its operators come with the class (`core.operators`); what it needs from the layers above (the
engine, the array API, the displays) it reaches through `core.hooks`, so core imports none.

The tensor holds no values of its own: `shape`, `strides` and `offset` (in elements) say which
storage elements it means. Views share the storage; every view is bounds-checked when made.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any, Final

import numpy as np

from fueltensor.core import dtypes as _dtypes
from fueltensor.core import interchange
from fueltensor.core.dtypes import DType
from fueltensor.core.errors import with_article
from fueltensor.core.hooks import HOOKS, present
from fueltensor.core.layout import (
    MAX_DIMS,
    Layout,
    LayoutFlags,
    Shape,
    as_shape,
    as_shape_like,
    byte_strides,
    row_major_strides,
)
from fueltensor.core.methods import NdarrayMethods
from fueltensor.core.operators import Operators
from fueltensor.core.pickled import restore
from fueltensor.core.pydata import from_python
from fueltensor.core.shared import CoreConfig, basic_view, bind, new_tensor, refusal, transpose
from fueltensor.core.storage import aligned_empty

Index = Any
"""An index: ints, slices, `...`, None, integer tensors or a boolean tensor (or a tuple)."""
SUPPORTED_API_VERSIONS: Final = ("2021.12", "2022.12", "2023.12", "2024.12")
"""The array API versions `__array_namespace__` accepts (the namespace serves them all)."""


def check_inplace(target: FuelTensor, dtype: DType, shape: Shape, what: str) -> None:
    """Refuse an in-place operation whose result (`dtype`, `shape`) cannot be stored in
    `target` as it is, before anything is written."""
    reason = refusal(target, dtype, shape)
    if reason == "dtype":
        raise TypeError(
            f"in-place {what} would store {with_article(dtype.name)} result in "
            f"{with_article(target.dtype.name)} tensor; use the out-of-place form"
        )
    if reason == "shape":
        raise ValueError(
            f"in-place {what}: the result has shape {shape}, the target "
            f"{target.shape}; the operands must broadcast to the target's shape"
        )
    _refuse_write(target, reason, f"in-place {what}")


def check_writable(target: FuelTensor, what: str) -> None:
    """Refuse to write through a read-only view (`broadcast_to`, read-only memory), as NumPy
    does, and through a view whose elements may share storage (stride 0, or an `as_strided`
    view failing `Layout.may_self_overlap`): one element would be written many times."""
    _refuse_write(target, refusal(target, None, None), what)


def _refuse_write(target: FuelTensor, reason: str | None, what: str) -> None:
    """Raise the error for a write refused for `reason` (`core.shared.refusal`); None: allowed."""
    if reason == "read-only":
        raise ValueError(
            f"{what}: assignment destination is read-only (a broadcast_to view or read-only "
            "memory); copy the target first"
        )
    if reason == "stride0":
        raise ValueError(
            f"{what} into a stride-0 (broadcast) view would write one element "
            "many times; copy the target first"
        )
    if reason == "overlap":
        raise ValueError(
            f"{what} into a view whose elements may overlap (shape {target.shape}, strides "
            f"{target.strides}) would write some elements many times; copy the target first"
        )


def read_only(x: FuelTensor) -> FuelTensor:
    """`x` as a read-only view: it and every view made from it refuse writes, as NumPy's
    read-only arrays do."""
    source = x._storage
    # Through a read-only buffer, not a flag on a view: no array handed out can be set
    # writable again (NumPy's own broadcast_to refuses that too).
    frozen = source.view(np.uint8).data.toreadonly()
    storage = np.frombuffer(frozen, source.dtype)
    # The same elements of a storage of the same length: x's layout was checked against it.
    return new_tensor(FuelTensor, storage, x._layout, x._dtype, None)


class FuelTensor(Operators, NdarrayMethods):
    """A strided view on a storage buffer; arithmetic is planned from the kernel contracts."""

    __slots__ = ("__weakref__", "_dtype", "_layout", "_np", "_storage")

    _storage: np.ndarray
    _layout: Layout
    _dtype: DType
    _np: np.ndarray | None

    def __new__(cls, *_: object, **__: object) -> FuelTensor:
        """Refused: tensors are built by fueltensor's functions (and a pickle's NEWOBJ with it)."""
        raise TypeError("create tensors with fueltensor.asarray(...) or another creation function")

    def __setstate__(self, state: object) -> None:
        """A pickle's slot state (its BUILD opcode), checked as a view is, taken once."""
        restore(self, state)

    @classmethod
    def _make(cls, storage: np.ndarray, layout: Layout, dtype: DType) -> FuelTensor:
        """Wrap `storage` (1-D, dtype's NumPy dtype) in a view; the layout is bounds-checked."""
        layout.check(storage.shape[0], storage.itemsize)
        return new_tensor(cls, storage, layout, dtype, None)

    @classmethod
    def _from_dense(cls, array: np.ndarray, dtype: DType | None = None) -> FuelTensor:
        """Adopt a C-contiguous NumPy array (no copy) as a dense, zero-offset tensor."""
        storage = array if array.ndim == 1 else array.reshape(-1)
        dtype = dtype if dtype is not None else _dtypes.from_numpy(array.dtype)
        return new_tensor(cls, storage, Layout.dense(array.shape), dtype, array)

    def _view(self, layout: Layout) -> FuelTensor:
        """A view on this tensor's storage; an empty view keeps this tensor's (valid) offset."""
        if layout.size == 0 and layout.offset != self.offset:
            layout = Layout(layout.shape, layout.strides, self.offset)
        return FuelTensor._make(self._storage, layout, self._dtype)

    def _rearranged(self, layout: Layout) -> FuelTensor:
        """A view of exactly this tensor's elements under `layout`, which only reorders its axes
        or drops axes of extent 1 (permute_dims, moveaxis, squeeze): the span is this tensor's,
        checked already, so no bounds check is repeated."""
        return new_tensor(FuelTensor, self._storage, layout, self._dtype, None)

    def _dense_reshape(self, shape: Shape) -> FuelTensor | None:
        """This tensor's elements under `shape` as a view, when it is dense row-major (its NumPy
        view is C-contiguous) and not empty and `shape` holds its count in at most MAX_DIMS
        axes; else None, and the general path decides (and says why it refuses). The row-major
        layout at the same offset spans the same storage elements, so the bounds check is not
        repeated. An empty tensor takes the general path: its check also bounds the bytes the
        new extents claim."""
        a = self._array
        if not (a.flags.c_contiguous and a.size and len(shape) <= MAX_DIMS):
            return None
        if math.prod(shape) != a.size:
            return None
        dense = Layout.dense(shape)
        offset = self._layout.offset
        layout = Layout(shape, dense.strides, offset) if offset else dense
        return new_tensor(FuelTensor, self._storage, layout, self._dtype, a.reshape(shape))

    @property
    def _array(self) -> np.ndarray:
        """The NumPy view of exactly these elements (cached; shares the storage)."""
        a = self._np
        if a is None:
            lay = self._layout
            size = self._storage.itemsize
            a = np.ndarray(
                lay.shape,
                self._storage.dtype,
                buffer=self._storage,
                offset=lay.offset * size,
                strides=byte_strides(lay, size),
            )
            self._np = a
        return a

    # -- attributes ---------------------------------------------------------------------------

    @property
    def dtype(self) -> DType:
        """The element type."""
        return self._dtype

    @property
    def shape(self) -> Shape:
        """The extent of each axis."""
        return self._layout.shape

    @property
    def strides(self) -> Shape:
        """Strides in elements (not bytes)."""
        return self._layout.strides

    @property
    def offset(self) -> int:
        """Index of the first element in the storage buffer, in elements."""
        return self._layout.offset

    @property
    def ndim(self) -> int:
        """The number of axes."""
        return self._layout.ndim

    @property
    def size(self) -> int:
        """The number of elements."""
        return self._layout.size

    @property
    def device(self) -> str:
        """Always "cpu": fueltensor has one device."""
        return "cpu"

    @property
    def layout(self) -> LayoutFlags:
        """The five FKC layout flags: contiguous, strided, broadcast_stride0, start_offset,
        reverse_strides."""
        return self._layout.flags

    @property
    def T(self) -> FuelTensor:
        """The transpose of a tensor of at most two dimensions (a view)."""
        if len(self._layout.shape) > 2:
            raise ValueError(
                f".T needs at most 2 dimensions, this tensor has {self.ndim}; "
                "use .mT or permute_dims"
            )
        if transpose is not None:
            view: FuelTensor | None = transpose(self)
            if view is not None:
                return view
        return self._view(self._layout.permute(tuple(reversed(range(self.ndim)))))

    @property
    def mT(self) -> FuelTensor:
        """Transpose of the last two axes (a view)."""
        if self.ndim < 2:
            raise ValueError(f".mT needs at least 2 dimensions, this tensor has {self.ndim}")
        axes = (*range(self.ndim - 2), self.ndim - 1, self.ndim - 2)
        return self._view(self._layout.permute(axes))

    # -- conversion ---------------------------------------------------------------------------

    def __array__(self, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
        """NumPy 2's protocol: a fresh view of these elements (changing its flags or dtype
        cannot change this tensor), a copy when `copy` is True or a cast is needed; a needed
        copy with copy=False raises ValueError."""
        a = self._array
        if dtype is not None and np.dtype(dtype) != a.dtype:
            if copy is False:
                raise ValueError(
                    f"converting a {self._dtype.name} tensor to {np.dtype(dtype)} needs a "
                    "copy, but copy=False was given"
                )
            return a.astype(dtype)
        view: np.ndarray = a.copy() if copy else a.view()
        return view

    def __reduce__(self) -> tuple[Callable[..., FuelTensor], tuple[str, Shape, bytes]]:
        """Pickle only the visible elements, row-major: a view pickles as a dense copy."""
        return _unpickle, (self._dtype.name, self.shape, self._array.tobytes())

    def __copy__(self) -> FuelTensor:
        """A dense, independent copy (as `copy.copy` of a NumPy array)."""
        return copy_tensor(self)

    def __deepcopy__(self, memo: dict[int, Any]) -> FuelTensor:
        """A dense, independent copy: storage and NumPy view made together, never apart."""
        return copy_tensor(self)

    def __repr__(self) -> str:
        """The values, dtype and shape; strides and offset too when they are not the dense
        row-major layout (a view)."""
        lay = self._layout
        prefix = "FuelTensor("
        body = np.array2string(self._array, separator=", ", prefix=prefix)
        layout = f"shape={lay.shape}"
        if lay.strides != row_major_strides(lay.shape) or lay.offset:
            layout += f", strides={lay.strides}, offset={lay.offset}"
        return f"{prefix}{body}, dtype={self._dtype.name}, {layout})"

    def __str__(self) -> str:
        """The values only, as NumPy prints an array."""
        return str(self._array)

    def __format__(self, spec: str) -> str:
        """A 0-d tensor formats as its Python scalar (`f"{t:.2f}"`); an n-d one only with an
        empty spec, as in NumPy."""
        if not spec:
            return str(self)
        if self.ndim:
            raise TypeError(
                f"unsupported format string {spec!r} for a tensor of shape {self.shape}; "
                "format its elements (e.g. [f'{v:.2f}' for v in t.tolist()]) or a 0-d tensor"
            )
        return format(self._array[()].item(), spec)

    def item(self) -> bool | int | float | complex:
        """The one element of a size-1 tensor (any rank) as a Python scalar, as NumPy's item()."""
        if self.size != 1:
            raise ValueError(
                f"item() needs a tensor of exactly one element, this one has shape {self.shape} "
                f"({self.size} elements); index it first or use tolist()"
            )
        value: bool | int | float | complex = self._array.reshape(()).item()
        return value

    def tolist(self) -> Any:
        """The values as nested Python lists of Python scalars (a scalar for a 0-d tensor)."""
        return self._array.tolist()

    def _repr_html_(self) -> str:
        """The notebook display (registered by `fueltensor.tools.display`)."""
        return present(self, "html")

    def __len__(self) -> int:
        if not self.ndim:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self) -> Any:
        if not self.ndim:
            raise TypeError("iteration over a 0-d tensor")
        return (self[i] for i in range(self.shape[0]))

    def __getitem__(self, key: Index, /) -> FuelTensor:
        """Basic indexing (ints, slices, `...`, None) is a view; integer-array and boolean-mask
        indexing are host operations that copy."""
        view = basic_view(self, key)
        if view is not None:
            return view
        return HOOKS.getitem(self, key)

    def __setitem__(self, key: Index, value: Any, /) -> None:
        """Write `value` (broadcast, cast to this dtype) through this tensor's strides."""
        HOOKS.setitem(self, key, value)

    __hash__ = None  # type: ignore[assignment]

    def _assign(self, result: FuelTensor, what: str) -> FuelTensor:
        """Store in-place operation `what`'s `result` through this tensor and return it;
        refused (this tensor untouched) when `check_inplace` refuses."""
        check_inplace(self, result.dtype, result.shape, what)
        self._array[...] = result._array
        return self

    # -- Python scalars and interchange (`core.interchange`) ----------------------------------

    __bool__ = interchange.to_bool
    __int__ = interchange.to_int
    __float__ = interchange.to_float
    __complex__ = interchange.to_complex
    __index__ = interchange.to_index
    __dlpack__ = interchange.dlpack
    __dlpack_device__ = interchange.dlpack_device

    def to_device(self, device: Any, /, *, stream: Any = None) -> FuelTensor:
        """This tensor on `device`; fueltensor has one device, 'cpu', so it is this tensor."""
        _check_device(device)
        if stream is not None:
            raise ValueError("fueltensor's 'cpu' device has no streams; pass stream=None")
        return self

    def __array_namespace__(self, /, *, api_version: str | None = None) -> Any:
        """The `fueltensor` namespace (one namespace serves every supported version)."""
        if api_version not in (None, *SUPPORTED_API_VERSIONS):
            raise ValueError(
                f"api_version {api_version!r} is not supported; use one of {SUPPORTED_API_VERSIONS}"
            )
        return HOOKS.namespace

    # -- NumPy's protocols (issue 13): NumPy calls on tensors stay on fueltensor -------------

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """np.add & co. through the contracts; other ufuncs, methods and out= on the host."""
        return HOOKS.array_ufunc(ufunc, method, *inputs, **kwargs)

    def __array_function__(
        self, func: Any, types: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """NumPy functions on tensors: fueltensor's own where it has one, else NumPy on the
        host, results returned as tensors."""
        return HOOKS.array_function(func, args, kwargs)


_OWN = vars(FuelTensor)  # its slots' member descriptors, and the `_array` property
CORE: Final = CoreConfig(
    tensor=FuelTensor,
    slots=(_OWN["_storage"], _OWN["_layout"], _OWN["_dtype"], _OWN["_np"]),
    layout=Layout,
    dtype=DType,
    dtype_np=vars(DType)["np"],
    array=_OWN["_array"].fget,
)
"""Core's types and FuelTensor's slots as the compiled floor reads them (`_fast.bind_core`)."""
bind(CORE)  # the compiled floor builds FuelTensors from here on (nothing where not built)


# -- creation ---------------------------------------------------------------------------------


def _adopt_numpy(array: np.ndarray, dtype: DType) -> FuelTensor:
    """Share a NumPy array's memory as a FuelTensor (any strides that are whole elements)."""
    size = array.itemsize
    if array.flags.c_contiguous:
        return FuelTensor._from_dense(array, dtype)
    if array.size == 0 or any(s % size for s in array.strides):
        return FuelTensor._from_dense(np.array(array, order="C"), dtype)
    strides = tuple(s // size for s in array.strides)
    low = tuple(n - 1 if s < 0 else 0 for n, s in zip(array.shape, strides, strict=True))
    lay = Layout(array.shape, strides, 0)
    lo, hi = lay.span()
    first = array[tuple(slice(i, i + 1) for i in low)]
    storage = np.lib.stride_tricks.as_strided(first, shape=(hi - lo + 1,), strides=(size,))
    return FuelTensor._make(storage, Layout(array.shape, strides, -lo), dtype)


def asarray(
    obj: Any, /, *, dtype: Any = None, device: Any = None, copy: bool | None = None
) -> FuelTensor:
    """Convert Python data, a NumPy array or a FuelTensor into a FuelTensor.

    NumPy arrays keep their dtype and share memory unless a copy or cast is needed; Python
    floats default to float64 and ints to int64, as in NumPy.
    """
    _check_device(device)
    want = None if dtype is None else _dtypes.as_dtype(dtype)
    plain = _PLAIN_SCALARS.get(type(obj)) if want is None and copy is not False else None
    if plain is not None and (plain is not _dtypes.int64 or _INT64_MIN <= obj <= _INT64_MAX):
        # `from_python`'s result for a Python bool, int64-sized int or float, without its
        # checks (scipy makes one of `n > 1` on every statistic)
        return FuelTensor._from_dense(np.array(obj, plain.np), plain)
    if isinstance(obj, FuelTensor):
        if want is None or want is obj.dtype:
            return copy_tensor(obj) if copy else obj
        if copy is False:
            raise ValueError(
                f"casting {obj.dtype.name} to {want.name} needs a copy, but copy=False was given"
            )
        return FuelTensor._from_dense(obj._array.astype(want.np), want)
    if isinstance(obj, np.ndarray | np.generic):
        array = np.asarray(obj)
        have = _dtypes.from_numpy(array.dtype)
        if want is not None and want is not have:
            if copy is False:
                raise ValueError(
                    f"casting {have.name} to {want.name} needs a copy, but copy=False was given"
                )
            return FuelTensor._from_dense(array.astype(want.np), want)
        t = _adopt_numpy(array, have)
        return copy_tensor(t) if copy else t
    if copy is False:
        raise ValueError(
            f"converting a {type(obj).__name__} to a tensor needs a copy, but copy=False was given"
        )
    array = from_python(obj, want)
    return FuelTensor._from_dense(array, want or _dtypes.from_numpy(array.dtype))


_PLAIN_SCALARS: Final = {bool: _dtypes.bool_, int: _dtypes.int64, float: _dtypes.float64}
"""The DType `asarray` gives a Python scalar of exactly these types (as NumPy does)."""
_INT64_MIN: Final = -(2**63)
_INT64_MAX: Final = 2**63 - 1


def _check_device(device: Any) -> None:
    if device not in (None, "cpu"):
        raise ValueError(f"device {device!r} is not available; fueltensor has one device, 'cpu'")


def _unpickle(dtype: str, shape: Shape, data: bytes) -> FuelTensor:
    """The dense tensor `__reduce__` pickled: its bytes, copied into a fresh aligned buffer."""
    dt = _dtypes.as_dtype(dtype)
    shape = as_shape(shape)
    count = math.prod(shape)
    if len(data) != count * dt.itemsize:
        raise ValueError(
            f"pickled {dt.name} tensor of shape {shape} holds {len(data)} bytes, "
            f"expected {count * dt.itemsize}"
        )
    storage = aligned_empty(count, dt.np)
    storage[...] = np.frombuffer(data, dt.np)
    return FuelTensor._from_dense(storage.reshape(shape), dt)


def copy_tensor(x: FuelTensor) -> FuelTensor:
    """A fresh dense copy of `x` (row-major, zero offset)."""
    return FuelTensor._from_dense(np.array(x._array, order="C", copy=True), x.dtype)


def as_strided(x: FuelTensor, shape: Any, strides: Any, offset: int | None = None) -> FuelTensor:
    """A view on `x`'s storage with the given shape, strides and offset (elements), checked to
    lie inside the storage; offset defaults to `x.offset`."""
    shape_t = as_shape(shape)
    strides_t = tuple(int(s) for s in as_shape_like(strides, "strides"))
    off = x.offset if offset is None else int(offset)
    return FuelTensor._make(x._storage, Layout(shape_t, strides_t, off), x.dtype)
