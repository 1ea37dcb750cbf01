"""The compiled kernels and the pure-NumPy chassis each give the scalar reference's bits.

`test_kernels_cpu` holds both implementations to the scalar contract reference (`_oracle`) on
chosen values; here every implementation is held to the same reference (never to each other:
that would hide a shared error, and np.power's bits depend on the machine) on many random bit
patterns, with NaNs, ±0 ties and equal operands mixed in, at every vector-tail size, on each
instruction set compiled for.
"""

from __future__ import annotations

import array
import os
import platform
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from _impls import IMPLS, thunk, using
from _oracle import FORMATS, Fmt, cpu_expected
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy._core import _multiarray_umath as umath

import fueltensor as ft
from fueltensor.fingerprint import machine
from fueltensor.kernels._chassis import IMPLEMENTATIONS, NATIVE
from fueltensor.testing import special_values

_native: Any = NATIVE

OPS = ("add", "sub", "mul", "div", "maximum", "minimum", "pow", "mod", "rem")
KERNELS = [(op, fmt) for op in OPS for fmt in ("f32", "f64", "bf16", "f16")]
NATIVE = [impl for impl in IMPLS if impl != "pure"]
AVAILABLE = [impl for impl in IMPLS if impl.partition("-")[0] in IMPLEMENTATIONS]
"""Every implementation built here: pure, and the compiled one per instruction set."""
SIZES = (0, 1, 7, 8, 15, 16, 17, 31, 33, 63, 65, 1000, 8193)
"""Every vector tail: past 4, 8 and 16 lanes (SSE2, AVX2, AVX-512 f32) and their unrolled blocks."""

pytestmark = pytest.mark.skipif(
    "native" not in IMPLEMENTATIONS, reason="the compiled kernels are not built here"
)


def operands(fmt: Fmt, n: int, seed: int) -> tuple[Any, Any]:
    """Random bit patterns, about a quarter replaced by `fueltensor.testing`'s special values, an
    eighth of the rhs equal to the lhs and an eighth its negation (so ±0 ties and NaN pairs
    occur)."""
    rng = np.random.default_rng(seed)
    top = (1 << fmt.width) - 1
    pool = special_values(fmt.np_dtype).array.view(fmt.uint)
    lhs, rhs = (rng.integers(0, top, n, dtype=fmt.uint, endpoint=True) for _ in range(2))
    for side in (lhs, rhs):
        pick = rng.random(n) < 0.25
        side[pick] = rng.choice(pool, int(pick.sum()))
    lane = rng.random(n)
    rhs[lane < 0.125] = lhs[lane < 0.125]
    flip = (lane >= 0.125) & (lane < 0.25)
    rhs[flip] = lhs[flip] ^ fmt.uint(fmt.sign)
    return lhs.view(fmt.np_dtype), rhs.view(fmt.np_dtype)


def result_bits(impl: str, op: str, fmt: Fmt, lhs: Any, rhs: Any) -> Any:
    """The bits one implementation writes into a fresh output."""
    out = np.empty_like(lhs)
    with using(impl):
        thunk(impl, op, fmt.name)(lhs, rhs, out=out)
    return out.view(fmt.uint)


def assert_every_implementation_matches_oracle(op: str, fmt: Fmt, lhs: Any, rhs: Any) -> None:
    """Each available implementation writes the scalar reference's bits (computed once), with
    a readable first mismatch; none is taken as the reference for another."""
    want = cpu_expected(op, lhs, rhs, fmt)
    for impl in AVAILABLE:
        got = result_bits(impl, op, fmt, lhs, rhs)
        bad = np.flatnonzero(got != want)
        if bad.size:
            i = int(bad[0])
            a, b = int(lhs.view(fmt.uint)[i]), int(rhs.view(fmt.uint)[i])
            pytest.fail(
                f"{impl} {op}_{fmt.name}: {bad.size} lanes differ from the scalar reference; "
                f"first (lane {i}) {a:#x} op {b:#x}: got {int(got[i]):#x}, want {int(want[i]):#x}"
            )


@pytest.mark.parametrize(("op", "fmt"), KERNELS)
@settings(max_examples=12, deadline=None)
@given(n=st.sampled_from(SIZES), seed=st.integers(0, 2**32 - 1))
def test_every_implementation_matches_the_oracle_bit_for_bit(
    op: str, fmt: str, n: int, seed: int
) -> None:
    f = FORMATS[fmt]
    assert_every_implementation_matches_oracle(op, f, *operands(f, n, seed))


@pytest.mark.parametrize(("op", "fmt"), KERNELS)
def test_every_vector_tail_size(op: str, fmt: str) -> None:
    f = FORMATS[fmt]
    for n in SIZES:
        assert_every_implementation_matches_oracle(op, f, *operands(f, n, n))


@pytest.mark.parametrize("impl", NATIVE)
@pytest.mark.parametrize("fmt", ["f32", "bf16", "f16"])
def test_output_overlapping_an_input_reads_the_inputs_as_they_were(impl: str, fmt: str) -> None:
    f = FORMATS[fmt]
    n = 1000
    storage, rhs = operands(f, n + 1, 5)
    rhs = rhs[:n]
    lhs = storage[1:]
    want = cpu_expected("rem", lhs.copy(), rhs, f)
    with using(impl):
        thunk(impl, "rem", fmt)(lhs, rhs, out=storage[:n])  # out starts one element before lhs
        assert (storage[:n].view(f.uint) == want).all()
        exact = rhs.copy()
        thunk(impl, "rem", fmt)(exact, rhs, out=exact)  # in place: out is lhs
    assert (exact.view(f.uint) == cpu_expected("rem", rhs, rhs, f)).all()


def test_non_contiguous_and_read_only_buffers_are_refused() -> None:
    add = thunk("native", "add", "f32")
    a = np.ones(8, np.float32)
    with pytest.raises(ValueError, match="lhs must be a C-contiguous array"):
        add(np.ones(16, np.float32)[::2], a, out=np.empty(8, np.float32))
    frozen = np.empty(8, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="out must be a C-contiguous, writable array"):
        add(a, a, out=frozen)


ISA_FEATURES = {
    "avx2": ("AVX2", "F16C", "FMA3"),
    "avx512": ("AVX2", "F16C", "FMA3", "AVX512F", "AVX512VL", "AVX512BW", "AVX512DQ"),
}
"""The CPU features each instruction set's body needs, by NumPy's names for them."""


def test_a_body_for_every_instruction_set_the_cpu_runs_and_the_widest_runs() -> None:
    """ISAS holds the baseline and every body whose features NumPy's own CPU detection finds
    (this machine's AVX-512 included), and the last, the widest, is the one that runs, as
    explain and the fingerprint say; select_isa switches it."""
    found = getattr(umath, "__cpu_features__", {})
    if not found:
        pytest.skip("this NumPy does not report CPU features")
    runs = [isa for isa, need in ISA_FEATURES.items() if all(found.get(f) for f in need)]
    if platform.machine() != "x86_64":
        runs = []
    assert ("baseline", *runs) == _native.ISAS
    assert _native.isa() == _native.ISAS[-1]
    assert machine().kernels in ("pure", f"native ({_native.ISAS[-1]})")
    x = ft.asarray(np.ones(8, np.float32))
    if machine().kernels != "pure":
        assert f"({_native.ISAS[-1]} body)" in str(ft.explain(ft.add, x, x))
    previous = _native.select_isa("baseline")
    try:
        assert _native.isa() == "baseline"
    finally:
        assert _native.select_isa(previous) == "baseline"
    assert _native.isa() == previous


def test_threads_run_the_kernels_concurrently_with_the_same_bits() -> None:
    f = FORMATS["f16"]
    lhs, rhs = operands(f, 50_000, 11)  # long enough that the kernel releases the GIL
    want = cpu_expected("div", lhs, rhs, f)
    with ThreadPoolExecutor(2) as pool:
        runs = list(pool.map(lambda _: result_bits("native", "div", f, lhs, rhs), range(6)))
    assert all((got == want).all() for got in runs)


@pytest.mark.parametrize(("env", "expected"), [("1", "pure"), ("0", "native"), ("", "native")])
def test_fueltensor_pure_numpy_selects_the_implementation(
    env: str, expected: str, tmp_path: Path
) -> None:
    code = (
        "import functools\n"
        "from fueltensor.kernels import _chassis, cpu\n"
        "fn = cpu.ENTRY_POINTS['fuel_cpu_backend::byte_kernels::add_f16']\n"
        "cells = [cell.cell_contents for cell in fn.__closure__]\n"
        "compiled = any(isinstance(c, functools.partial) for c in cells)\n"
        "print(_chassis.IMPLEMENTATION, 'native' if compiled else 'pure')"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        env={**os.environ, "FUELTENSOR_PURE_NUMPY": env},
        cwd=tmp_path,  # not the checkout, whose unbuilt sources would shadow the installed package
        capture_output=True,
        text=True,
        check=True,
    )
    assert run.stdout.split() == [expected, expected]


# -- the module validates what it is called with, whoever calls it (issue 15) ----------------

_BF16 = np.dtype(ml_dtypes.bfloat16)
_DTYPES = {"float32": np.float32, "float64": np.float64, "bfloat16": _BF16, "float16": np.float16}


def _objects(n: int) -> np.ndarray:
    out = np.empty(n, object)
    out[:] = [float(i) for i in range(n)]
    return out


ARITHMETIC = ("binary",)


@pytest.mark.parametrize("entry", ARITHMETIC)
@pytest.mark.parametrize("dtype", list(_DTYPES))
def test_arithmetic_entry_points_refuse_other_element_types(entry: str, dtype: str) -> None:
    fn = getattr(_native, entry)
    code, want = _native.DTYPES.index(dtype), np.dtype(_DTYPES[dtype])
    good = np.ones(4, want)
    others = [np.dtype(d) for d in (np.float32, np.float64, np.float16, np.int16, np.int32)]
    others += [np.dtype(np.int64), np.dtype(np.uint16), np.dtype(np.complex64), _BF16]
    for other in (d for d in others if d != want):
        bad = np.ones(4, other)
        for args in ((bad, good, np.empty(4, want)), (good, bad, np.empty(4, want))):
            with pytest.raises(TypeError, match=dtype):
                fn(0, code, *args)
        with pytest.raises(TypeError, match=dtype):
            fn(0, code, good, good, np.empty(4, other))
    for args in (
        (_objects(4), good, np.empty(4, want)),
        (good, good, _objects(4)),
        (_objects(4), _objects(4), _objects(4)),
    ):
        with pytest.raises(TypeError):
            fn(0, code, *args)


@pytest.mark.parametrize("entry", ARITHMETIC)
def test_arithmetic_entry_points_refuse_bad_layouts_and_arguments(entry: str) -> None:
    fn = getattr(_native, entry)
    a = np.ones(4, np.float32)
    frozen = np.empty(4, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="C-contiguous"):
        fn(0, 0, np.ones(8, np.float32)[::2], a, np.empty(4, np.float32))
    with pytest.raises(ValueError, match="writable"):
        fn(0, 0, a, a, frozen)
    with pytest.raises(ValueError, match="writable"):
        fn(0, 0, a, a, b"\0" * 16)
    with pytest.raises(ValueError):
        fn(0, 0, a, a, np.empty(3, np.float32))
    with pytest.raises(ValueError, match="op must be"):
        fn(99, 0, a, a, np.empty(4, np.float32))
    with pytest.raises(ValueError, match="op must be"):
        fn(0, -1, a, a, np.empty(4, np.float32))
    with pytest.raises(TypeError):
        fn(0, 0, a, a)
    with pytest.raises(ValueError):
        fn(0, 0, None, a, np.empty(4, np.float32))


@pytest.mark.parametrize("entry", ARITHMETIC)
@pytest.mark.parametrize("dtype", list(_DTYPES))
def test_zero_length_buffers_are_accepted(entry: str, dtype: str) -> None:
    fn = getattr(_native, entry)
    empty = np.empty(0, _DTYPES[dtype])
    assert fn(0, _native.DTYPES.index(dtype), empty, empty, np.empty(0, _DTYPES[dtype])) is None
    if dtype == "float32":
        assert fn(0, 0, array.array("f"), array.array("f"), array.array("f")) is None


def test_copy_strided_refuses_objects_and_mismatched_types() -> None:
    with pytest.raises(TypeError, match="object"):
        _native.copy_strided(_objects(6)[::2], np.empty(3, object))
    with pytest.raises(TypeError, match="object"):
        _native.copy_strided(np.ones(3, np.int64), _objects(3))
    with pytest.raises(TypeError, match="same element type"):
        _native.copy_strided(np.ones(3, np.float64), np.empty(3, np.int64))
    with pytest.raises(TypeError, match="same element type"):
        _native.copy_strided(np.ones(3, np.float16), np.empty(3, _BF16))
    frozen = np.empty(3, np.float32)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match="writable"):
        _native.copy_strided(np.ones(6, np.float32)[::2], frozen)
    assert _native.copy_strided(np.empty(0, np.float32), np.empty(0, np.float32)) is None
    src = np.arange(12, dtype=np.float32).view(_BF16).reshape(4, 6).T  # bfloat16 states no format
    dst = np.empty((6, 4), _BF16)
    _native.copy_strided(src, dst)
    assert dst.view(np.uint16).tolist() == src.view(np.uint16).tolist()
    pairs = np.zeros(4, dtype=[("Oddly", np.float32), ("named", np.int32)])  # 'O' in a name only
    out = np.empty(2, pairs.dtype)
    _native.copy_strided(pairs[::2], out)
