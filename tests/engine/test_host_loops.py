"""NumPy's trivial loop run by the compiled host functions (`_fast.host`).

Where NumPy's ufunc call would make one inner-loop call (dense operands of one shape, 0-d ones
read with stride 0, a fresh row-major output), the compiled host function makes that call
itself, with the loop NumPy resolves for the operands' dtypes. It must still be the Python host
path in every way a caller can see: result bits (NaN payloads, signalling NaNs, signed zeros,
subnormals, infinities), dtype and layout; no warning and no exception under any error state,
and the caller's error state unchanged; the same floating-point status flags (NumPy clears the
four it checks before its loop and, silenced, leaves what the loop raised; it runs no loop, and
clears nothing, for an empty result). The flags are read through libm (ctypes), as
`test_fp_status.py` reads them.
"""

from __future__ import annotations

import platform
import threading
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from _fastpath import outcome
from _fpstatus import ALL, FE, flags_after
from _oracle import FORMATS, Fmt

import fueltensor as ft
from fueltensor.array_api._host import fresh
from fueltensor.engine import dispatch

pytestmark = pytest.mark.skipif(dispatch._FAST_MODULE is None, reason="no compiled host calls")
FAST: Any = dispatch._FAST_MODULE
HOSTS = sorted(n for n in dir(ft) if hasattr(getattr(ft, n), "trivial_loops"))
"""Every namespace function that is a compiled ufunc call."""
NUMPY = {
    "abs": "absolute",
    "acos": "arccos",
    "acosh": "arccosh",
    "asin": "arcsin",
    "asinh": "arcsinh",
    "atan": "arctan",
    "atanh": "arctanh",
    "atan2": "arctan2",
    "bitwise_invert": "invert",
    "bitwise_left_shift": "left_shift",
    "bitwise_right_shift": "right_shift",
}
"""The NumPy ufunc of each namespace name that differs from it (the array API's names)."""


def arity(name: str) -> int:
    """How many operands the namespace function `name` takes."""
    return len(getattr(ft, name).__signature__.parameters)


def special_bits(fmt: Fmt) -> list[int]:
    """Bit patterns of `fmt` that loops treat specially, both signs: zero, inf, quiet NaNs with
    and without payload, signalling NaNs, the extreme subnormals, the smallest normal, the
    largest finite value (exp overflows on it), one, and a few ordinary values."""
    mantissa = (1 << fmt.man_bits) - 1
    one = fmt.bias << fmt.man_bits
    nan = fmt.exp_mask | fmt.quiet
    patterns = [0, fmt.exp_mask, nan, nan | 5, fmt.exp_mask | 1, fmt.exp_mask | fmt.quiet >> 1 | 3]
    patterns += [1, mantissa, 1 << fmt.man_bits, fmt.exp_mask - 1, one, one | mantissa >> 1]
    patterns += [(fmt.bias + 3) << fmt.man_bits | 5, (fmt.bias - 3) << fmt.man_bits]
    return patterns + [p | fmt.sign for p in patterns]


def specials(fmt: Fmt, shift: int = 0) -> np.ndarray:
    """The special values of `fmt` as an array of it (rotated by `shift`, to pair them up)."""
    return np.roll(np.array(special_bits(fmt), fmt.uint), shift).view(fmt.np_dtype)


def python_path(name: str, *args: Any) -> Any:
    """The namespace function on the Python path (a trace keeps the compiled call aside)."""
    with ft.trace():
        return getattr(ft, name)(*args)


def check(name: str, *args: Any) -> None:
    """The compiled call is the Python path (bits, dtype, layout or error); a result on
    tensors of one dtype is also NumPy's ufunc on their arrays (NaN payloads included)."""
    slow = outcome(lambda: python_path(name, *args))  # first: it makes a view's NumPy array
    fast = outcome(lambda: getattr(ft, name)(*args))
    assert fast == slow, (name, args)
    arrays = [np.asarray(a) for a in args if isinstance(a, ft.FuelTensor)]
    if fast[0] == "ok" and len(arrays) == len(args) and len({a.dtype for a in arrays}) == 1:
        with np.errstate(all="ignore"):
            want = getattr(np, NUMPY.get(name, name))
            assert np.ascontiguousarray(want(*arrays)).tobytes() == fast[1][3], (name, args)


def operands(fmt: Fmt) -> list[ft.FuelTensor]:
    """The special values of `fmt` dense (1-D, 2-D), as 0-d tensors, empty, and as views the
    trivial loop must leave to the ufunc call (strided, flipped, transposed)."""
    x = ft.asarray(specials(fmt))
    grid = ft.reshape(x, (2, -1))
    return [x, grid, x[3], x[4], x[:0], grid[:, :0], x[::3], ft.flip(x, axis=0), grid.T, grid[1]]


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("name", [n for n in HOSTS if arity(n) == 1])
def test_unary_special_values_are_the_python_paths(name: str, fmt: str) -> None:
    for x in operands(FORMATS[fmt]):
        check(name, x)


@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("name", [n for n in HOSTS if arity(n) == 2])
def test_binary_special_values_are_the_python_paths(name: str, fmt: str) -> None:
    """Tensors paired with the other specials, with 0-d tensors either side, with Python
    scalars (their cached 0-d tensors), and with operands NumPy broadcasts."""
    f = FORMATS[fmt]
    xs, ys = operands(f), [ft.asarray(specials(f, k)) for k in (5, 11)]
    pairs = [(xs[0], ys[0]), (xs[0], ys[1]), (xs[1], ft.reshape(ys[0], (2, -1))), (xs[2], xs[3])]
    pairs += [(xs[0], xs[3]), (xs[3], ys[1]), (xs[4], xs[4]), (xs[6], xs[6]), (xs[8], xs[8])]
    pairs += [(xs[1][:1], ft.reshape(ys[0], (-1, 1))[:2])]
    pairs += [(xs[0], s) for s in (0.0, -0.0, float("nan"), float("inf"), 5e-324, -1, True)]
    for x, y in pairs:
        check(name, x, y)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.uint16, np.int64, np.bool_])
@pytest.mark.parametrize("name", HOSTS)
def test_integer_and_bool_operands_are_the_python_paths(name: str, dtype: Any) -> None:
    """Integer and bool operands (some functions cast them first, some have no loop: the
    Python path's error)."""
    x = ft.asarray(np.array([0, 1, 2, 3, 5, 7, 100, 127], dtype=np.int64).astype(dtype))
    args = [(x,)] if arity(name) == 1 else [(x, ft.flip(x, axis=0)), (x, 3), (x, x[2])]
    for a in args:
        check(name, *a)


@pytest.mark.parametrize("fmt", ["f32", "f64"])
@pytest.mark.parametrize("name", HOSTS)
def test_complex_operands_are_the_python_paths(name: str, fmt: str) -> None:
    """Complex operands whose parts are the special values (in every pairing the rotation
    gives): some functions have complex loops, some raise the Python path's error."""
    f = FORMATS[fmt]
    pairs = np.stack([specials(f), specials(f, 7)], axis=-1)
    z = ft.asarray(pairs.view(np.complex64 if fmt == "f32" else np.complex128)[:, 0])
    check(name, *(z,) * arity(name))
    check(name, *(ft.reshape(z, (2, -1)),) * arity(name))


def test_dense_operands_run_numpys_trivial_loop() -> None:
    """A signature is kept once per function; dense operands run NumPy's loop here, views
    NumPy would iterate never look one up, and a signature NumPy casts for runs the ufunc."""
    sqrt = FAST.host(ft.log2, np.log2, fresh, 1)
    greater = FAST.host(ft.greater, np.greater, fresh, 2)
    x = ft.asarray(np.array([4.0, -1.0, 9.0, 2.0], np.float32))
    sqrt(x[::2]), sqrt(ft.flip(x, axis=0)), sqrt(ft.reshape(x, (2, 2)).T)
    assert sqrt.trivial_loops == ()
    f32, i32 = np.dtype(np.float32), np.dtype(np.int32)
    element = x[1]
    sqrt(x), sqrt(x), sqrt(element), sqrt(element), sqrt(ft.asarray(np.arange(3, dtype=i32)))
    assert sqrt.trivial_loops == (
        ((f32,), (False,), True),
        ((f32,), (True,), True),
        ((i32,), (False,), False),
    )
    greater(x, 0), greater(x, x), greater(element, x)
    assert greater.trivial_loops == (
        ((f32, f32), (False, True), True),
        ((f32, f32), (False, False), True),
        ((f32, f32), (True, False), True),
    )
    bf16 = ft.asarray(np.ones(3, ml_dtypes.bfloat16))
    sqrt(bf16)
    assert sqrt.trivial_loops[-1] == ((bf16.dtype.np,), (False,), True)


@pytest.mark.skipif(not FE, reason=f"FE_* bits of {platform.machine()} not listed")
@pytest.mark.parametrize("before", ["none", "all", "inexact"])
@pytest.mark.parametrize("fmt", sorted(FORMATS))
@pytest.mark.parametrize("name", ["log2", "log10", "expm1", "reciprocal", "copysign", "hypot"])
def test_the_status_flags_are_the_python_paths(name: str, fmt: str, before: str) -> None:
    """After a compiled call the flags are the Python path's and NumPy's (silenced): the four
    NumPy checks cleared, then what the loop raised; an empty call leaves them as they were."""
    want = {"none": 0, "all": ALL, "inexact": FE["inexact"]}[before]
    f = FORMATS[fmt]
    x, y, empty = ft.asarray(specials(f)), ft.asarray(specials(f, 5)), ft.asarray(specials(f)[:0])
    fn = getattr(ft, name)
    for args in ((x,), (empty,)) if arity(name) == 1 else ((x, y), (empty, 0.0)):
        fn(*args)
        fast = flags_after(want, lambda a=args: fn(*a))
        arrays = [np.asarray(a) for a in args[:1]] + [np.asarray(a, f.np_dtype) for a in args[1:]]
        with np.errstate(all="ignore"):
            numpy = flags_after(want, lambda a=arrays: getattr(np, name)(*a))
            if args[0].size and arity(name) == 1:  # the loop does raise flags here
                assert flags_after(0, lambda a=arrays: getattr(np, name)(*a)) & ~FE["inexact"]
        assert fast == flags_after(want, lambda a=args: python_path(name, *a)) == numpy
        signature = tuple(a.dtype for a in arrays)
        assert any(r[0] == signature and r[2] for r in fn.trivial_loops)  # it ran here


def test_no_error_state_reaches_the_trivial_loop() -> None:
    """Under `raise` and `call` error states no exception and no call: the Python path's
    silence; the caller's error state is unchanged after."""
    x = ft.asarray(specials(FORMATS["f32"]))
    called: list[Any] = []
    for state in ({"all": "raise"}, {"all": "call", "call": lambda *a: called.append(a)}):
        with np.errstate(**state):
            before = np.geterr(), np.geterrcall()
            for name in ("log2", "log10", "expm1", "reciprocal", "acos"):
                got = outcome(lambda n=name: getattr(ft, n)(x))
                assert got == outcome(lambda n=name: python_path(n, x)) and got[0] == "ok"
            assert outcome(lambda: ft.less(x, x)) == outcome(lambda: python_path("less", x, x))
            assert (np.geterr(), np.geterrcall()) == before
    assert called == []
    with pytest.raises(FloatingPointError), np.errstate(all="raise"):
        np.log2(np.asarray(x))  # the values do raise outside fueltensor


def test_threads_share_the_kept_loops() -> None:
    """Four threads cycling through more signatures than a function keeps, on operands long
    enough that the loop runs without the GIL (NumPy's threshold): a signature replaced while
    another thread runs its loop must not be freed under it."""
    equal = FAST.host(ft.equal, np.equal, fresh, 2)
    kinds = [np.float32, np.float64, np.float16, ml_dtypes.bfloat16, np.int8, np.int16]
    kinds += [np.int32, np.int64, np.uint8, np.uint16, np.uint32, np.uint64, np.bool_]
    cases = []
    for k in kinds:
        a = (np.arange(2000) % 7).astype(k)
        x, y = ft.asarray(a), ft.asarray(a[::-1].copy())
        cases += [((x, y), np.equal(a, a[::-1])), ((x, 3), np.asarray(python_path("equal", x, 3)))]
    wrong: list[int] = []

    def work(seed: int) -> None:
        order = np.random.default_rng(seed).permutation(len(cases) * 6) % len(cases)
        for i in order:
            (x, y), want = cases[i]
            if np.asarray(equal(x, y)).tobytes() != want.tobytes():
                wrong.append(int(i))

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert wrong == []
