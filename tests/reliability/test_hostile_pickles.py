"""A tensor built by unpickling is checked like any other (issue 35, item 6): pickles written
opcode by opcode that build a FuelTensor through the generic paths (NEWOBJ, or
`copyreg._reconstructor` then BUILD with a slot state) either give a tensor inside its buffer or
are refused; a tensor left without its slots raises on use and never crashes the process."""

from __future__ import annotations

import pickle
import subprocess
import sys
import textwrap
from typing import Any

import numpy as np
import pytest

import fueltensor as ft
from fueltensor.core.layout import Layout

TENSOR = b"cfueltensor.core.tensor\nFuelTensor\n"


def _body(obj: Any) -> bytes:
    """`obj` pickled (protocol 2) without its PROTO and STOP opcodes, to splice into a stream."""
    data = pickle.dumps(obj, protocol=2)
    assert data[:2] == b"\x80\x02" and data[-1:] == b"."
    return data[2:-1]


def _reconstructed(state: Any | None, cls: bytes = TENSOR) -> bytes:
    """A pickle of `copyreg._reconstructor(cls, object, None)`, then BUILD with `state` (an
    object, or opcodes as bytes; none when None): what `object.__reduce_ex__(1)` would write."""
    build = b"" if state is None else (state if isinstance(state, bytes) else _body(state)) + b"b"
    return b"\x80\x02ccopyreg\n_reconstructor\n(" + cls + b"cbuiltins\nobject\nNtR" + build + b"."


def _slots(**pieces: bytes) -> bytes:
    """The opcodes of a `(None, {slot: value})` state from each value's opcodes."""
    items = b"".join(_body(k) + v for k, v in pieces.items())
    return b"N}(" + items + b"u\x86"


def _newobj() -> bytes:
    """A pickle of `FuelTensor.__new__(FuelTensor)` (the NEWOBJ opcode)."""
    return b"\x80\x02" + TENSOR + b")\x81."


def _storage(n: int = 3, dtype: Any = np.float32) -> np.ndarray:
    return np.arange(n, dtype=dtype)


def _state(**slots: Any) -> tuple[None, dict[str, Any]]:
    base = {"_storage": _storage(), "_layout": Layout((3,), (1,), 0), "_dtype": ft.float32}
    return None, {**base, **slots}


def test_a_valid_slot_state_gives_the_tensor_it_describes() -> None:
    stale = np.arange(100, dtype=np.float32)  # a `_np` that disagrees is made again
    state = _state(_storage=_storage(6), _layout=Layout((2, 2), (-3, 2), 3), _np=stale)
    t = pickle.loads(_reconstructed(state))
    np.testing.assert_array_equal(np.asarray(t), [[3.0, 5.0], [0.0, 2.0]])
    np.testing.assert_array_equal(np.asarray(t + 1.0), [[4.0, 6.0], [1.0, 3.0]])


@pytest.mark.parametrize(
    ("slots", "error", "words"),
    [
        ({"_layout": Layout((10**7,), (1,), 0)}, ValueError, "storage"),
        ({"_layout": Layout((3,), (1,), 1)}, ValueError, "storage"),
        ({"_layout": Layout((3,), (-1,), 0)}, ValueError, "storage"),
        ({"_layout": Layout((2, 2), (2**62, 1), 0)}, ValueError, "outside the storage"),
        ({"_layout": Layout((3,), (1,), -1)}, ValueError, "negative"),
        ({"_layout": Layout((-3,), (1,), 0)}, ValueError, "negative"),
        ({"_layout": Layout((3,), (1.0,), 0)}, TypeError, "strides"),  # type: ignore[arg-type]
        ({"_layout": ((3,), (1,))}, TypeError, "layout"),
        ({"_layout": "(3,), (1,), 0"}, TypeError, "layout"),
        ({"_storage": _storage(3, np.uint8)}, TypeError, "storage must be a 1-D ndarray"),
        ({"_storage": _storage(6).reshape(2, 3)}, TypeError, "storage must be a 1-D ndarray"),
        ({"_storage": [0.0, 1.0, 2.0]}, TypeError, "storage must be a 1-D ndarray"),
        ({"_storage": np.ma.masked_array(_storage())}, TypeError, "storage must be a 1-D"),
        ({"_dtype": "float32"}, TypeError, "not a fueltensor dtype"),
        ({"_dtype": np.dtype(np.float32)}, TypeError, "not a fueltensor dtype"),
        ({"_extra": 1}, TypeError, "unknown slots"),
    ],
    ids=[
        "beyond-storage",
        "offset-past-end",
        "walks-before-start",
        "huge-stride",
        "negative-offset",
        "negative-extent",
        "float-stride",
        "short-layout",
        "string-layout",
        "storage-of-another-dtype",
        "2d-storage",
        "list-storage",
        "storage-subclass",
        "dtype-by-name",
        "numpy-dtype",
        "unknown-slot",
    ],
)
def test_a_slot_state_outside_its_buffer_is_refused(
    slots: dict[str, Any], error: type[Exception], words: str
) -> None:
    with pytest.raises(error, match=words):
        pickle.loads(_reconstructed(_state(**slots)))


def test_a_forged_dtype_is_refused() -> None:
    dtypes = b"cfueltensor.core.dtypes\nDType\n"
    forged = _reconstructed((None, {"name": "float32", "np": np.dtype(np.uint8)}), dtypes)[2:-1]
    assert pickle.loads(b"\x80\x02" + forged + b".").name == "float32"  # a stray DType
    state = _slots(
        _storage=_body(_storage(3, np.uint8)), _layout=_body(Layout((3,), (1,), 0)), _dtype=forged
    )
    with pytest.raises(TypeError, match="not a fueltensor dtype"):
        pickle.loads(_reconstructed(state))


def test_a_strided_storage_is_refused() -> None:
    # numpy.ndarray called by REDUCE over 24 bytes with an 8-byte stride: 1-D, not one run
    strided = b"cnumpy\nndarray\n" + _body(((3,), np.dtype(np.float32), bytes(24), 0, (8,)))
    layout, dtype = _body(Layout((3,), (1,), 0)), _body(ft.float32)
    state = _slots(_storage=strided + b"R", _layout=layout, _dtype=dtype)
    with pytest.raises(ValueError, match="one contiguous run"):
        pickle.loads(_reconstructed(state))


def test_state_that_is_not_a_slot_map_is_refused() -> None:
    for state in [{"a": 1}, (None, None), [1, 2], "x", (None, {"_storage": _storage()})]:
        with pytest.raises(TypeError, match="pickled FuelTensor state"):
            pickle.loads(_reconstructed(state))


def test_newobj_is_refused() -> None:
    with pytest.raises(TypeError, match=r"create tensors with fueltensor\.asarray"):
        pickle.loads(_newobj())


def test_a_built_tensor_takes_no_new_state() -> None:
    t = ft.asarray([1.0, 2.0], dtype=ft.float32)
    cached = ft.zeros(3, dtype=ft.float32) + 2.5  # warms the fast path's scalar cache
    for victim in (t, cached):
        with pytest.raises(TypeError, match="set once"):
            victim.__setstate__(_state(_layout=Layout((10**6,), (1,), 0)))
    np.testing.assert_array_equal(np.asarray(t), [1.0, 2.0])
    np.testing.assert_array_equal(np.asarray(ft.zeros(3, dtype=ft.float32) + 2.5), [2.5] * 3)


def test_the_ordinary_pickle_of_a_view_still_round_trips() -> None:
    x = ft.reshape(ft.arange(12, dtype=ft.float32), (3, 4))[::-1, 1::2]
    y = pickle.loads(pickle.dumps(x))
    np.testing.assert_array_equal(np.asarray(y), np.asarray(x))


HALF_BUILT = """
import copy, pickle, numpy as np, fueltensor as ft
half = pickle.loads({stream!r})
t = ft.asarray([1.0, 2.0], dtype=ft.float32)
uses = [
    lambda: half + t, lambda: t + half, lambda: half + 1.0, lambda: half[0], lambda: half[::2],
    lambda: half.T, lambda: t.__iadd__(half), lambda: half.__iadd__(t),
    lambda: t.__setitem__(0, half),
    lambda: half.__setitem__(0, 1.0), lambda: np.asarray(half), lambda: repr(half),
    lambda: copy.copy(half), lambda: pickle.dumps(half), lambda: half ** 2, lambda: ft.sum(half),
    lambda: half @ t, lambda: -half, lambda: ft.reshape(half, (2,)), lambda: np.add(half, 1),
    lambda: ft.judge(half, t), lambda: len(half), lambda: half.__dlpack__(),
]
for use in uses:
    try:
        use()
    except Exception:
        pass
    else:
        raise SystemExit(f"a tensor without slots was used: {{use}}")
print("every use raised")
"""


def test_a_tensor_without_slots_raises_on_every_use_and_never_crashes() -> None:
    code = textwrap.dedent(HALF_BUILT.format(stream=_reconstructed(None)))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, (done.returncode, done.stderr[-2000:])
    assert done.stdout.strip() == "every use raised"
