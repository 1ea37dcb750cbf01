"""`FuelTensor`: a 1-D storage buffer plus a checked `Layout`; its operators go through dispatch.

The tensor holds no values of its own: `shape`, `strides` and `offset` (in elements) say which
storage elements it means. Views share the storage; every view is bounds-checked when made.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np

from fueltensor.core import dtypes as _dtypes
from fueltensor.core.dtypes import DType
from fueltensor.core.layout import Layout, LayoutFlags, Shape, as_shape
from fueltensor.core.storage import aligned_empty

Index = Any
"""An index: ints, slices, `...`, None, integer tensors or a boolean tensor (or a tuple)."""

_OPERANDS = (bool, int, float, complex, np.ndarray, np.generic)


def _namespace_function(name: str) -> Callable[..., Any]:
    import fueltensor

    fn: Callable[..., Any] = getattr(fueltensor, name)
    return fn


def _operator(
    name: str, *, reflected: bool = False, inplace: bool = False
) -> Callable[[FuelTensor, Any], FuelTensor]:
    """The operator method that calls the namespace's `name(self, other)` (`name(other, self)`
    when reflected); in place, the result is written through `self`'s strides."""

    def method(self: FuelTensor, other: Any, /) -> FuelTensor:
        if not isinstance(other, (FuelTensor, *_OPERANDS)):
            refused: FuelTensor = NotImplemented
            return refused
        fn = _namespace_function(name)
        if reflected:
            result: FuelTensor = fn(other, self)
            return result
        result = fn(self, other)
        return _store(self, result, name) if inplace else result

    method.__name__ = f"__{'i' if inplace else 'r' if reflected else ''}{name}__"
    method.__doc__ = f"The array API's {name} as an operator."
    return method


def _unary_operator(name: str) -> Callable[[FuelTensor], FuelTensor]:
    def method(self: FuelTensor, /) -> FuelTensor:
        result: FuelTensor = _namespace_function(name)(self)
        return result

    method.__name__ = f"__{name}__"
    method.__doc__ = f"The array API's {name} as an operator."
    return method


def _store(target: FuelTensor, result: FuelTensor, what: str) -> FuelTensor:
    """Write an in-place operation's `result` through `target`'s strides; refused (target
    untouched) when the result's dtype or shape is not the target's."""
    check_inplace(target, result.dtype, result.shape, what)
    target._array[...] = result._array
    return target


def check_inplace(target: FuelTensor, dtype: DType, shape: Shape, what: str) -> None:
    """Refuse an in-place operation whose result (`dtype`, `shape`) cannot be stored in
    `target` as it is, before anything is written."""
    if dtype is not target.dtype:
        raise TypeError(
            f"in-place {what} would store a {dtype.name} result in a "
            f"{target.dtype.name} tensor; use the out-of-place form"
        )
    if shape != target.shape:
        raise ValueError(
            f"in-place {what}: the result has shape {shape}, the target "
            f"{target.shape}; the operands must broadcast to the target's shape"
        )
    check_writable(target, f"in-place {what}")


def check_writable(target: FuelTensor, what: str) -> None:
    """Refuse to write through a read-only view (`broadcast_to`, read-only memory), as NumPy
    does, and through a view whose elements may share storage (stride 0, or an `as_strided`
    view failing `Layout.may_self_overlap`): one element would be written many times."""
    if not target._storage.flags.writeable:
        raise ValueError(
            f"{what}: assignment destination is read-only (a broadcast_to view or read-only "
            "memory); copy the target first"
        )
    flags = target.layout
    if flags.broadcast_stride0:
        raise ValueError(
            f"{what} into a stride-0 (broadcast) view would write one element "
            "many times; copy the target first"
        )
    if not flags.contiguous and target._layout.may_self_overlap:
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
    return FuelTensor._make(storage, x._layout, x._dtype)


def _byte_strides(layout: Layout, itemsize: int) -> list[int]:
    """Strides in bytes for NumPy; 0 where a stride never moves (extent <= 1, or no elements),
    so an arbitrary stride there cannot overflow NumPy's byte arithmetic."""
    empty = layout.size == 0
    pairs = zip(layout.shape, layout.strides, strict=True)
    return [0 if n <= 1 or empty else s * itemsize for n, s in pairs]


def _is_basic(key: Any) -> bool:
    """True for a basic index: ints, slices, `...` and None (alone or in a tuple)."""
    items = key if type(key) is tuple else (key,)
    return all(
        k is None
        or k is Ellipsis
        or type(k) is slice
        or (isinstance(k, int | np.integer) and not isinstance(k, bool | np.bool_))
        for k in items
    )


class FuelTensor:
    """A strided view on a storage buffer; arithmetic is planned from the kernel contracts."""

    __slots__ = ("__weakref__", "_dtype", "_layout", "_np", "_storage")

    _storage: np.ndarray
    _layout: Layout
    _dtype: DType
    _np: np.ndarray | None

    def __init__(self, *_: object, **__: object) -> None:
        raise TypeError("create tensors with fueltensor.asarray(...) or another creation function")

    @classmethod
    def _make(cls, storage: np.ndarray, layout: Layout, dtype: DType) -> FuelTensor:
        """Wrap `storage` (1-D, dtype's NumPy dtype) in a view; the layout is bounds-checked."""
        layout.check(storage.shape[0], storage.itemsize)
        t = object.__new__(cls)
        t._storage = storage
        t._layout = layout
        t._dtype = dtype
        t._np = None
        return t

    @classmethod
    def _from_dense(cls, array: np.ndarray, dtype: DType | None = None) -> FuelTensor:
        """Adopt a C-contiguous NumPy array (no copy) as a dense, zero-offset tensor."""
        t = object.__new__(cls)
        t._storage = array if array.ndim == 1 else array.reshape(-1)
        t._layout = Layout.dense(array.shape)
        t._dtype = dtype if dtype is not None else _dtypes.from_numpy(array.dtype)
        t._np = array
        return t

    def _view(self, layout: Layout) -> FuelTensor:
        """A view on this tensor's storage; an empty view keeps this tensor's (valid) offset."""
        if layout.size == 0 and layout.offset != self.offset:
            layout = Layout(layout.shape, layout.strides, self.offset)
        return FuelTensor._make(self._storage, layout, self._dtype)

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
                strides=_byte_strides(lay, size),
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
        if self.ndim > 2:
            raise ValueError(
                f".T needs at most 2 dimensions, this tensor has {self.ndim}; "
                "use .mT or permute_dims"
            )
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
        lay = self._layout
        prefix = "FuelTensor("
        body = np.array2string(self._array, separator=", ", prefix=prefix)
        return (
            f"{prefix}{body}, dtype={self._dtype.name}, shape={lay.shape}, "
            f"strides={lay.strides}, offset={lay.offset})"
        )

    __str__ = __repr__

    def _repr_html_(self) -> str:
        from fueltensor.tools.display import tensor_html

        return tensor_html(self)

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
        if _is_basic(key):
            return self._view(self._layout.select(key))
        from fueltensor.array_api.indexing import getitem

        return getitem(self, key)

    def __setitem__(self, key: Index, value: Any, /) -> None:
        """Write `value` (broadcast, cast to this dtype) through this tensor's strides."""
        from fueltensor.array_api.indexing import setitem

        setitem(self, key, value)

    __hash__ = None  # type: ignore[assignment]

    # -- Python scalars and interchange -------------------------------------------------------

    def _item(self, kind: str) -> Any:
        if self.ndim:
            raise TypeError(
                f"{kind}() needs a 0-d tensor, this one has shape {self.shape}; "
                "index or reduce it first"
            )
        return self._array[()].item()

    def __bool__(self, /) -> bool:
        return bool(self._item("bool"))

    def __int__(self, /) -> int:
        self._refuse_complex("int")
        return int(self._item("int"))

    def __float__(self, /) -> float:
        self._refuse_complex("float")
        return float(self._item("float"))

    def __complex__(self, /) -> complex:
        return complex(self._item("complex"))

    def __index__(self, /) -> int:
        if self._dtype.category not in ("signed integer", "unsigned integer"):
            raise TypeError(
                f"only integer tensors can be used as an index, this one is {self._dtype.name}"
            )
        return int(self._item("index"))

    def _refuse_complex(self, kind: str) -> None:
        if self._dtype.category == "complex floating":
            raise TypeError(f"{kind}() of a {self._dtype.name} tensor; take real() or abs() first")

    def __dlpack__(
        self,
        /,
        *,
        stream: Any = None,
        max_version: tuple[int, int] | None = None,
        dl_device: tuple[int, int] | None = None,
        copy: bool | None = None,
    ) -> Any:
        """A DLPack capsule of these elements (NumPy exports it; bfloat16 has no NumPy export)."""
        if self._dtype is _dtypes.bfloat16:
            raise BufferError(
                "NumPy cannot export bfloat16 through DLPack; export "
                "astype(x, float32), or the bits as uint16"
            )
        return self._array.__dlpack__(
            stream=stream, max_version=max_version, dl_device=dl_device, copy=copy
        )

    def __dlpack_device__(self, /) -> tuple[int, int]:
        device: tuple[int, int] = self._array.__dlpack_device__()
        return device

    def to_device(self, device: Any, /, *, stream: Any = None) -> FuelTensor:
        """This tensor on `device`; fueltensor has one device, 'cpu', so it is this tensor."""
        _check_device(device)
        if stream is not None:
            raise ValueError("fueltensor's 'cpu' device has no streams; pass stream=None")
        return self

    def __array_namespace__(self, /, *, api_version: str | None = None) -> Any:
        import fueltensor

        if api_version not in (None, *fueltensor._SUPPORTED_API_VERSIONS):
            raise ValueError(
                f"api_version {api_version!r} is not supported; use one of "
                f"{fueltensor._SUPPORTED_API_VERSIONS}"
            )
        return fueltensor

    # -- NumPy's protocols (issue 13): NumPy calls on tensors stay on fueltensor -------------

    def __array_ufunc__(self, ufunc: Any, method: str, *inputs: Any, **kwargs: Any) -> Any:
        """np.add & co. through the contracts; other ufuncs, methods and out= on the host."""
        from fueltensor.array_api.numpy_protocols import array_ufunc

        return array_ufunc(ufunc, method, *inputs, **kwargs)

    def __array_function__(
        self, func: Any, types: Any, args: tuple[Any, ...], kwargs: dict[str, Any]
    ) -> Any:
        """NumPy functions on tensors: fueltensor's own where it has one, else NumPy on the
        host, results returned as tensors."""
        from fueltensor.array_api.numpy_protocols import array_function

        return array_function(func, args, kwargs)

    # -- the eight contract operations --------------------------------------------------------

    def __add__(self, other: Any, /) -> FuelTensor:
        return _dispatch.binary("add", self, other)

    def __radd__(self, other: Any, /) -> FuelTensor:
        return _dispatch.binary("add", other, self)

    def __iadd__(self, other: Any, /) -> FuelTensor:
        return _dispatch.binary_inplace("add", self, other)

    def __sub__(self, other: Any, /) -> FuelTensor:
        return _dispatch.binary("subtract", self, other)

    def __rsub__(self, other: Any, /) -> FuelTensor:
        return _dispatch.binary("subtract", other, self)

    def __isub__(self, other: Any, /) -> FuelTensor:
        return _dispatch.binary_inplace("subtract", self, other)

    def __mul__(self, other: Any, /) -> FuelTensor:
        return _dispatch.binary("multiply", self, other)

    def __rmul__(self, other: Any, /) -> FuelTensor:
        return _dispatch.binary("multiply", other, self)

    def __imul__(self, other: Any, /) -> FuelTensor:
        return _dispatch.binary_inplace("multiply", self, other)

    def __truediv__(self, other: Any, /) -> FuelTensor:
        return _dispatch.binary("divide", self, other)

    def __rtruediv__(self, other: Any, /) -> FuelTensor:
        return _dispatch.binary("divide", other, self)

    def __itruediv__(self, other: Any, /) -> FuelTensor:
        return _dispatch.binary_inplace("divide", self, other)

    def __mod__(self, other: Any, /) -> FuelTensor:
        return _dispatch.binary("remainder", self, other)

    def __rmod__(self, other: Any, /) -> FuelTensor:
        return _dispatch.binary("remainder", other, self)

    def __imod__(self, other: Any, /) -> FuelTensor:
        return _dispatch.binary_inplace("remainder", self, other)

    def __pow__(self, other: Any, /) -> FuelTensor:
        return _dispatch.binary("pow", self, other)

    def __rpow__(self, other: Any, /) -> FuelTensor:
        return _dispatch.binary("pow", other, self)

    def __ipow__(self, other: Any, /) -> FuelTensor:
        return _dispatch.binary_inplace("pow", self, other)

    # -- every other operator: a host operation of the array-API namespace -------------------

    __eq__ = _operator("equal")  # type: ignore[assignment]
    __ne__ = _operator("not_equal")  # type: ignore[assignment]
    __lt__ = _operator("less")
    __le__ = _operator("less_equal")
    __gt__ = _operator("greater")
    __ge__ = _operator("greater_equal")
    __floordiv__ = _operator("floor_divide")
    __rfloordiv__ = _operator("floor_divide", reflected=True)
    __ifloordiv__ = _operator("floor_divide", inplace=True)
    __matmul__ = _operator("matmul")
    __rmatmul__ = _operator("matmul", reflected=True)
    __imatmul__ = _operator("matmul", inplace=True)
    __and__ = _operator("bitwise_and")
    __rand__ = _operator("bitwise_and", reflected=True)
    __iand__ = _operator("bitwise_and", inplace=True)
    __or__ = _operator("bitwise_or")
    __ror__ = _operator("bitwise_or", reflected=True)
    __ior__ = _operator("bitwise_or", inplace=True)
    __xor__ = _operator("bitwise_xor")
    __rxor__ = _operator("bitwise_xor", reflected=True)
    __ixor__ = _operator("bitwise_xor", inplace=True)
    __lshift__ = _operator("bitwise_left_shift")
    __rlshift__ = _operator("bitwise_left_shift", reflected=True)
    __ilshift__ = _operator("bitwise_left_shift", inplace=True)
    __rshift__ = _operator("bitwise_right_shift")
    __rrshift__ = _operator("bitwise_right_shift", reflected=True)
    __irshift__ = _operator("bitwise_right_shift", inplace=True)
    __neg__ = _unary_operator("negative")
    __pos__ = _unary_operator("positive")
    __abs__ = _unary_operator("abs")
    __invert__ = _unary_operator("bitwise_invert")


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
    array = _from_python(obj, want)
    return FuelTensor._from_dense(array, want or _dtypes.from_numpy(array.dtype))


def _from_python(obj: Any, want: DType | None) -> np.ndarray:
    """Nested Python sequences and scalars (or anything NumPy reads) as a fresh dense array."""
    if hasattr(obj, "__dlpack__"):
        array = np.from_dlpack(obj)
        return np.array(array, dtype=None if want is None else want.np, copy=True)
    if want is not None:
        return np.array(obj, dtype=want.np, copy=True)
    array = np.array(obj, copy=True)
    if array.dtype == np.float32 and not _holds_numpy_values(obj):
        array = array.astype(np.float64)
    if array.dtype.kind == "i" and array.dtype != np.int64:
        array = array.astype(np.int64)
    if array.dtype.kind in "OUS":
        raise TypeError(
            f"cannot make a tensor from {type(obj).__name__} data "
            f"(NumPy reads it as {array.dtype}); pass numbers or tensors"
        )
    _dtypes.from_numpy(array.dtype)
    return array


def _holds_numpy_values(obj: Any) -> bool:
    return isinstance(obj, np.generic | np.ndarray) or (
        isinstance(obj, list | tuple) and bool(obj) and _holds_numpy_values(obj[0])
    )


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


def as_shape_like(values: Any, what: str) -> tuple[int, ...]:
    """A tuple of ints (negative allowed) from an int or a sequence; TypeError names `what`."""
    import operator

    if isinstance(values, int):
        return (values,)
    try:
        return tuple(operator.index(v) for v in values)
    except TypeError:
        raise TypeError(f"{what} must be a sequence of integers, got {values!r}") from None


# Imported last: dispatch builds on FuelTensor, and the operators above call into it.
from fueltensor.engine import dispatch as _dispatch  # noqa: E402
