"""The compiled kernels and the pure-NumPy chassis each give the scalar reference's bits.

`test_kernels_cpu` holds both implementations to the scalar contract reference (`_oracle`) on
chosen values; here every implementation is held to the same reference (never to each other:
that would hide a shared error, and np.power's bits depend on the machine) on many random bit
patterns, with NaNs, ±0 ties and equal operands mixed in, at every vector-tail size, on each
instruction set compiled for.
"""

from __future__ import annotations

import os
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _impls import IMPLS, thunk, using
from _oracle import FORMATS, Fmt, cpu_expected, encode
from hypothesis import given, settings
from hypothesis import strategies as st

from fueltensor.kernels._chassis import IMPLEMENTATIONS

OPS = ("add", "sub", "mul", "div", "maximum", "minimum", "pow", "rem")
KERNELS = [(op, fmt) for op in OPS for fmt in ("f32", "f64", "bf16", "f16")]
NATIVE = [impl for impl in IMPLS if impl != "pure"]
AVAILABLE = [impl for impl in IMPLS if impl.partition("-")[0] in IMPLEMENTATIONS]
"""Every implementation built here: pure, and the compiled one per instruction set."""
SIZES = (0, 1, 7, 8, 15, 16, 17, 31, 33, 1000, 8193)

pytestmark = pytest.mark.skipif(
    "native" not in IMPLEMENTATIONS, reason="the compiled kernels are not built here"
)


def specials(fmt: Fmt) -> list[int]:
    """Values where the ops' rules bite: ±0, ±inf, quiet and signalling NaNs, subnormals, 1."""
    m, top = fmt.man_bits, fmt.exp_mask
    base = [0, 1, (1 << m) - 1, top - 1, top, top | fmt.quiet, top | fmt.quiet | 5, top | 3]
    return base + [b | fmt.sign for b in base] + [encode(1.0, fmt), encode(-2.0, fmt)]


def operands(fmt: Fmt, n: int, seed: int) -> tuple[Any, Any]:
    """Random bit patterns, about a quarter replaced by special values, an eighth of the rhs
    equal to the lhs and an eighth its negation (so ±0 ties and NaN pairs occur)."""
    rng = np.random.default_rng(seed)
    top = (1 << fmt.width) - 1
    pool = np.array(specials(fmt), dtype=fmt.uint)
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
