"""A 0-d tensor as a Python scalar, and any tensor through DLPack: FuelTensor's protocol methods.

The class binds these as its methods (`__bool__ = interchange.to_bool` ...), so their tensor
parameter is `self`, as the array API names it; they read only the tensor's NumPy view and dtype.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from fueltensor.core.errors import with_article

if TYPE_CHECKING:
    from fueltensor.core.tensor import FuelTensor


def _item(t: FuelTensor, kind: str) -> Any:
    """The one element of a 0-d tensor as a Python scalar; `kind()` of anything else refused."""
    lay = t._layout
    if lay.shape:
        raise TypeError(
            f"{kind}() needs a 0-d tensor, this one has shape {t.shape}; index or reduce it first"
        )
    return t._storage[lay.offset].item()


def _refuse_complex(t: FuelTensor, kind: str) -> None:
    if t.dtype.category == "complex floating":
        raise TypeError(
            f"{kind}() of {with_article(t.dtype.name)} tensor; take real() or abs() first"
        )


def to_bool(self: FuelTensor, /) -> bool:
    """`bool(t)` of a 0-d tensor."""
    return bool(_item(self, "bool"))


def to_int(self: FuelTensor, /) -> int:
    """`int(t)` of a real 0-d tensor."""
    _refuse_complex(self, "int")
    return int(_item(self, "int"))


def to_float(self: FuelTensor, /) -> float:
    """`float(t)` of a real 0-d tensor."""
    _refuse_complex(self, "float")
    return float(_item(self, "float"))


def to_complex(self: FuelTensor, /) -> complex:
    """`complex(t)` of a 0-d tensor."""
    return complex(_item(self, "complex"))


def to_index(self: FuelTensor, /) -> int:
    """`operator.index(t)` of an integer 0-d tensor."""
    if self.dtype.category not in ("signed integer", "unsigned integer"):
        raise TypeError(
            f"only integer tensors can be used as an index, this one is {self.dtype.name}"
        )
    return int(_item(self, "index"))


def dlpack(
    self: FuelTensor,
    /,
    *,
    stream: Any = None,
    max_version: tuple[int, int] | None = None,
    dl_device: tuple[int, int] | None = None,
    copy: bool | None = None,
) -> Any:
    """A DLPack capsule of these elements (NumPy exports it; ml_dtypes' formats, bfloat16 and
    the 8-bit floats, have no NumPy export)."""
    if not self.dtype.numpy_own:
        bits = f"uint{8 * self.dtype.itemsize}"
        raise BufferError(
            f"NumPy cannot export {self.dtype.name} through DLPack; export "
            f"astype(x, float32), or its bits as {bits}"
        )
    return self._array.__dlpack__(
        stream=stream, max_version=max_version, dl_device=dl_device, copy=copy
    )


def dlpack_device(self: FuelTensor, /) -> tuple[int, int]:
    """`__dlpack_device__`: NumPy's (kDLCPU, 0)."""
    device: tuple[int, int] = self._array.__dlpack_device__()
    return device
