"""f32 pow's vector powf: the C library's `powf` bits, and only where `powf` is recognised.

The compiled kernels run a transcription of glibc's `powf` (`ext/src/native/powf_vector.c`)
where the platform's `powf` is recognised as that algorithm (`powf_recognise.c`). Every kernel
body and every vector pass is held to ctypes libm `powf` (never np.power) on every class of
special value, on the overflow and underflow edges, on random bit patterns, at every length and
alignment, and in the other rounding modes (where `powf` itself runs). The recognition is shown
to refuse a `powf` that is not this one (a perturbed reference, glibc's SSE2 variant, tables
that are not the libm's), the tables to be their definitions, and the proofs' machinery to find
and count what differs.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import io
import json
import math
import os
import platform
import subprocess
import sys
from collections.abc import Callable
from decimal import Decimal, localcontext
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _extras import OUTSIDE
from _oracle import F32, pow_

import fueltensor as ft
from fueltensor.fingerprint import machine
from fueltensor.kernels import pow_shortcut
from fueltensor.kernels._chassis import IMPLEMENTATION, NATIVE

native: Any = NATIVE
pytestmark = pytest.mark.skipif(NATIVE is None, reason="the compiled kernels are not built here")

POW = 6 if NATIVE is None else NATIVE.OPS.index("pow")
F32_CODE = 0 if NATIVE is None else NATIVE.DTYPES.index("float32")
ISAS = () if NATIVE is None else NATIVE.ISAS
STATUS = (False, False, "") if NATIVE is None else NATIVE.pow_status()
PASSES = () if not STATUS[1] else tuple(name for name, *_ in NATIVE.verify_pow(2.0, 0, 0, 1))
"""The vector passes this CPU runs, where the vector powf is recognised here."""
needs_vector = pytest.mark.skipif(not STATUS[1], reason=f"no vector powf here: {STATUS[2]}")
kernels_native = pytest.mark.skipif(
    IMPLEMENTATION != "native", reason="the pure kernels are in use (FUELTENSOR_PURE_NUMPY=1)"
)

SAMPLE_PARTS = {
    "special": (0, 1764),
    "witness": (1764, 1772),
    "midpoint": (1772, 3584),
    "uniform": (3584, 4096),
    "random": (4096, 8192),
}
"""The sample's parts (powf_recognise.c's `powf_sample`): a lane off in any is refused."""

_LIBM = ctypes.CDLL(ctypes.util.find_library("m"))
_LIBM.powf.restype = ctypes.c_float
_LIBM.powf.argtypes = [ctypes.c_float, ctypes.c_float]
_LIBC = ctypes.CDLL(None)
ROUNDING = {"upward": 0x800, "downward": 0x400, "toward zero": 0xC00}
"""x86's <fenv.h> rounding-mode codes (to nearest is 0)."""


def f32(bits: Any) -> np.ndarray[Any, Any]:
    """f32 values from bit patterns."""
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def powf_bits(x: np.ndarray[Any, Any], y: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """libm powf(x[i], y[i]) as uint32 bits (lanes with a NaN operand passed as exact bits)."""
    out = np.fromiter(map(_LIBM.powf, x.tolist(), y.tolist()), np.float32, x.size)
    bits = out.view(np.uint32)
    xb, yb = x.view(np.uint32), y.view(np.uint32)
    for i in np.flatnonzero(np.isnan(x) | np.isnan(y)).tolist():
        bits[i] = pow_(int(xb[i]), int(yb[i]), F32)
    return bits


def body(isa: str) -> Callable[[np.ndarray[Any, Any], np.ndarray[Any, Any]], np.ndarray[Any, Any]]:
    """The compiled f32 pow of one instruction set's kernel body, as uint32 bits."""

    def run(x: np.ndarray[Any, Any], y: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        out = np.empty_like(x)
        previous = native.select_isa(isa)
        try:
            native.binary(POW, F32_CODE, x, y, out)
        finally:
            native.select_isa(previous)
        return out.view(np.uint32)

    return run


def vector_pass(
    name: str,
) -> Callable[[np.ndarray[Any, Any], np.ndarray[Any, Any]], np.ndarray[Any, Any]]:
    """f32 pow through one vector pass (`_native.pow_with`), as uint32 bits."""

    def run(x: np.ndarray[Any, Any], y: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        out = np.empty_like(x)
        native.pow_with(name, np.ascontiguousarray(x), np.ascontiguousarray(y), out)
        return out.view(np.uint32)

    return run


RUNNERS = [pytest.param(body(isa), id=f"body-{isa}") for isa in ISAS] + [
    pytest.param(vector_pass(name), id=f"pass-{name}") for name in PASSES
]
"""Every way f32 pow runs here: each instruction set's kernel body, each vector pass."""


def compiled_environment() -> dict[str, str]:
    """This environment for a child process that runs the compiled kernels (whatever this run's
    FUELTENSOR_PURE_NUMPY: the child tests the compiled kernels' pow)."""
    return {k: v for k, v in os.environ.items() if k != "FUELTENSOR_PURE_NUMPY"}


def special_bits() -> list[int]:
    """Every class glibc's powf tells apart, both signs: ±0, subnormals (smallest, largest,
    between), FLT_MIN and FLT_MAX and their neighbours, ±1 and its neighbours, 2, 0.5, 3, ±inf,
    quiet and signalling NaNs with payloads, integers with low set bits (odd and even)."""
    base = [0, 1, 2, 3, 0x000F0F0F, 0x400000, 0x7FFFFF, 0x800000, 0x800001, 0x00FFFFFF]
    base += [0x3F7FFFFF, 0x3F800000, 0x3F800001, 0x40000000, 0x3F000000, 0x40400000, 0x3FC00000]
    base += [0x7F7FFFFE, 0x7F7FFFFF, 0x7F800000, 0x7FC00000, 0x7FC00005, 0x7FFFFFFF]
    base += [0x7F800001, 0x7FA00000, 0x7F812345, 0x4B000001, 0x4B7FFFFF, 0x4B800001, 0x4F000000]
    base += [0x3E800000, 0x2F800000, 0x5F800000, 0x1AC00000, 0x0000072F]
    return sorted(set(base) | {b | 0x80000000 for b in base})


def special_grid() -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Every special x with every special y (and a few exponents past the integer range)."""
    xs = special_bits()
    ys = [*xs, 0x42FE0000, 0x43000000, 0xC3150000, 0xC3160000, 0x41000001, 0x3F800001]
    x = np.repeat(np.asarray(xs, np.uint32), len(ys))
    y = np.tile(np.asarray(ys, np.uint32), len(xs))
    return f32(x), f32(y)


def assert_powf(
    got: np.ndarray[Any, Any], x: np.ndarray[Any, Any], y: np.ndarray[Any, Any]
) -> None:
    """got is libm powf's bits on every lane (the first few differing lanes shown otherwise)."""
    want = powf_bits(x, y)
    bad = np.flatnonzero(got != want)[:8]
    shown = [
        (hex(int(x.view(np.uint32)[i])), hex(int(y.view(np.uint32)[i])), hex(got[i]), hex(want[i]))
        for i in bad
    ]
    assert bad.size == 0, shown


@pytest.mark.skipif(
    platform.machine() != "x86_64"
    or platform.libc_ver()[0] != "glibc"
    or "hwcaps" in os.environ.get("GLIBC_TUNABLES", ""),
    reason="the vector powf follows glibc's x86-64 FMA powf only",
)
def test_recognised_where_glibc_picks_its_fma_powf() -> None:
    """On glibc 2.28+ with FMA and AVX2 the vector powf must be recognised (its tables found in
    the libm, byte for byte): a table off by one ulp or a pass off anywhere in the sample is
    refused, and would leave powf running here."""
    flags = Path("/proc/cpuinfo").read_text().split("\n\n")[0]
    version = tuple(int(v) for v in platform.libc_ver()[1].split(".")[:2])
    if version < (2, 28) or " fma " not in flags or " avx2 " not in flags:
        pytest.skip("glibc before 2.28 or no FMA and AVX2: glibc runs another powf here")
    _, recognised, reason = native.pow_status()
    assert recognised, reason
    assert "tables found" in reason and "8192 sample lanes equal" in reason


@pytest.mark.parametrize("run", RUNNERS)
def test_special_values_are_powf(run: Callable[..., Any]) -> None:
    x, y = special_grid()
    assert_powf(run(x, y), x, y)


def edge_exponents(x: float) -> list[float]:
    """y putting y log2(x) at, and a few ulps around, the overflow threshold (|x^y| about
    2^128), the last normal (2^-126), the underflow steps at 2^-149 and 2^-150."""
    targets = (
        127.99999,
        128.0,
        float.fromhex("0x1.fffffffd1d571p6"),
        -126.0,
        -149.0,
        -149.5,
        -150.0,
        -151.0,
    )
    ys = []
    for t in targets:
        y = np.float32(t / math.log2(x))
        for step in range(-3, 4):
            ys.append(float(y + np.float32(step) * np.spacing(y)))
    return ys


@pytest.mark.parametrize("run", RUNNERS)
def test_overflow_and_underflow_edges_are_powf(run: Callable[..., Any]) -> None:
    """Results either side of the largest float, the smallest normal and subnormal, both signs
    (a negative base with odd and even integer powers: y integers near the edges)."""
    xs, ys = [], []
    for base in (2.0, 3.0, 10.0, 0.5, 0.1, 1.0001, 0.9999, 2.0**-140, 2.0**100):
        for y in edge_exponents(base):
            xs += [base, -base]
            ys += [y, y]
        for k in (-151, -150, -149, -127, -126, 127, 128, 129):
            n = round(k / math.log2(base))
            xs += [-base] * 4
            ys += [n - 1, n, n + 1, n + 2]
    x, y = np.asarray(xs, np.float32), np.asarray(ys, np.float32)
    assert_powf(run(x, y), x, y)


@pytest.fixture(scope="module")
def random_lanes() -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """2^17 lanes: a quarter any bits, the rest moderate bases (both signs) with exponents in
    [-40, 40] a third of them integers; and powf's bits on them."""
    rng = np.random.default_rng(12)
    n = 1 << 17
    x = rng.integers(0, 1 << 32, n, dtype=np.uint32).view(np.float32)
    y = rng.integers(0, 1 << 32, n, dtype=np.uint32).view(np.float32)
    m = n // 4
    x[m:] = (rng.standard_normal(n - m) * np.exp2(rng.integers(-20, 20, n - m))).astype(np.float32)
    y[m:] = rng.uniform(-40, 40, n - m).astype(np.float32)
    y[m::3] = np.round(y[m::3])
    return x, y, powf_bits(x, y)


@pytest.mark.parametrize("run", RUNNERS)
def test_random_lanes_are_powf(run: Callable[..., Any], random_lanes: Any) -> None:
    x, y, want = random_lanes
    assert np.array_equal(run(x, y), want)


@needs_vector
def test_millions_of_random_pairs_are_powf() -> None:
    """Every pass against the C library's powf, called from C, on 4 million random pairs and
    on 2^22 x for y = 2 and y = 0.5 from 0.5 and among the subnormals (slices of
    benchmarks/pow_proof.py's proof; y uniform: the passes' short way and its band)."""
    for name, mismatches, first_x, first_y in native.verify_pow_pairs(7, 0, 1 << 22, 2):
        assert (mismatches, first_x, first_y) == (0, -1, -1), name
    for y, start in ((2.0, 0x3F000000), (0.5, 0x3F000000), (0.5, 0x00400000), (2.0, 0xB9800000)):
        for name, mismatches, *_ in native.verify_pow(y, start, start + (1 << 22), 2):
            assert mismatches == 0, (name, y, hex(start))


def band_edge_bits(y: float, band: int) -> list[int]:
    """x bit patterns whose exact result (x*x or sqrt(x) in double) lies at, just inside and
    just outside `band` double ulps of a float rounding midpoint, and at the midpoint itself."""
    xs = np.arange(0x3F000000, 0x3F000000 + (1 << 22), dtype=np.uint32)
    x = xs.view(np.float32).astype(np.float64)
    e = x * x if y == 2.0 else np.sqrt(x)
    off = (e.view(np.uint64) & np.uint64(0x1FFFFFFF)).astype(np.int64) - (1 << 28)
    picked: list[int] = []
    for target in (0, band - 2, band - 1, band, band + 1, band + 2, band + 64):
        dist = np.abs(np.abs(off) - target)
        picked += xs[np.argpartition(dist, 16)[:16]].tolist()
    return picked


@pytest.mark.parametrize("run", RUNNERS)
@pytest.mark.parametrize("y", [2.0, 0.5])
def test_the_band_edges_of_the_short_way_are_powf(run: Callable[..., Any], y: float) -> None:
    """y = 2 and y = 0.5 in whole groups take the exact value rounded once outside the band
    around a rounding midpoint, the full algorithm inside it: lanes at its edges, either sign."""
    bits = band_edge_bits(y, native.POW_BAND)
    x = f32(bits + [b | 0x80000000 for b in bits])
    y_lanes = np.full_like(x, y)
    assert_powf(run(x, y_lanes), x, y_lanes)


@pytest.mark.parametrize("run", RUNNERS)
def test_the_fma_witnesses_are_powf(run: Callable[..., Any]) -> None:
    """The inputs where dropping an FMA of glibc's (r = z * invc - 1, q = A4 * r + y0) changes
    powf's result (benchmarks/pow_fma_witnesses.c; the recognition sample carries them)."""
    xb, yb = native.pow_sample()
    lo, hi = SAMPLE_PARTS["witness"]
    x, y = np.frombuffer(xb, np.float32)[lo:hi].copy(), np.frombuffer(yb, np.float32)[lo:hi].copy()
    assert np.all(np.isfinite(x) & (x > 0) & (np.abs(y) > 100))
    assert_powf(run(x, y), x, y)


@pytest.mark.parametrize("run", RUNNERS)
def test_every_length_and_alignment(run: Callable[..., Any]) -> None:
    """Lengths across the 8- and 16-lane groups and the 512-lane tiles, at every 4-byte offset
    of a 64-byte line, specials mixed in, and exponents varying lane to lane (a tile whose
    lanes powf must decide anywhere in it, the padded last group included)."""
    rng = np.random.default_rng(3)
    pool = f32(special_bits())
    for n in (*range(0, 41), 511, 512, 513, 1029):
        for offset in range(16):
            buf = rng.standard_normal(n + offset).astype(np.float32) * 4
            buf[::5] = rng.choice(pool, buf[::5].size)
            x = buf[offset:]
            ybuf = rng.choice(
                np.array([2.0, 0.5, 3.0, -2.0, 0.0, np.nan, 1.5], np.float32), n + offset
            )
            y = ybuf[offset:]
            want = np.array(
                [
                    pow_(int(a), int(b), F32)
                    for a, b in zip(
                        x.view(np.uint32).tolist(), y.view(np.uint32).tolist(), strict=True
                    )
                ],
                dtype=np.uint32,
            )
            assert np.array_equal(run(x, y), want), (n, offset)


@pytest.mark.skipif(platform.machine() != "x86_64", reason="x86 rounding-mode codes")
@pytest.mark.parametrize("mode", sorted(ROUNDING))
@pytest.mark.parametrize("isa", ISAS)
def test_another_rounding_mode_runs_powf(mode: str, isa: str) -> None:
    """In another rounding mode glibc's overflow branch and the short way for y = 2 and 0.5
    (exact value rounded once) give other bits than powf's: the bodies must step aside and give
    powf's bits in that mode (whole arrays of y = 2 and of 0.5, mixed exponents, and results
    just under the float range, where glibc asks the rounding mode)."""
    rng = np.random.default_rng(5)
    x = (np.abs(rng.standard_normal(4096)) * 8).astype(np.float32)
    mixed = rng.choice(np.array([2.0, 0.5, 3.7, -1.25], np.float32), x.size)
    near = rng.uniform(1.1, 3.9, 4096).astype(np.float32)  # y log2 x just under 128
    edge = (127.99999997 / np.log2(near.astype(np.float64))).astype(np.float32)
    cases = [(x, np.full_like(x, 2.0)), (x, np.full_like(x, 0.5)), (x, mixed), (near, edge)]
    assert _LIBC.fesetround(ROUNDING[mode]) == 0
    try:
        got = [body(isa)(a, b) for a, b in cases]
        want = [
            np.fromiter(map(_LIBM.powf, a.tolist(), b.tolist()), np.float32, a.size)
            for a, b in cases
        ]
    finally:
        _LIBC.fesetround(0)
    for g, w in zip(got, want, strict=True):
        assert np.array_equal(g, w.view(np.uint32))


def any_bits_and_specials() -> np.ndarray[Any, Any]:
    """20,000 random bit patterns and every special class (zeros of both signs, subnormals,
    results past the float range, infinities, NaNs)."""
    rng = np.random.default_rng(9)
    return f32(np.concatenate([rng.integers(0, 1 << 32, 20000, dtype=np.uint32), special_bits()]))


@pytest.fixture(scope="module")
def whole_groups() -> dict[float, tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]]:
    """y -> (x, powf's bits) for whole arrays of y = 2 and of y = 0.5."""
    x = any_bits_and_specials()
    return {y: (x, powf_bits(x, np.full_like(x, y))) for y in (2.0, 0.5)}


@pytest.mark.parametrize("run", RUNNERS)
@pytest.mark.parametrize("y", [2.0, 0.5])
def test_whole_groups_of_two_and_half_are_powf(
    run: Callable[..., Any], y: float, whole_groups: Any
) -> None:
    """Every lane of a group is y = 2 (or 0.5), so each body and pass takes its short way: the
    lanes it must leave to glibc's branches (-0, subnormal and overflowing results, negative
    bases, inf, NaN) are powf's too."""
    x, want = whole_groups[y]
    assert np.array_equal(run(x, np.full_like(x, y)), want)


def test_public_operators_give_powf_bits() -> None:
    x = any_bits_and_specials()
    for y in (2.0, 0.5, -1.5):
        got = np.asarray(ft.asarray(x) ** y).view(np.uint32)
        assert np.array_equal(got, powf_bits(x, np.full_like(x, y))), y


# -- the recognition -------------------------------------------------------------------------


@pytest.fixture(scope="module")
def sample() -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """The recognition's inputs and this machine's powf bits on them."""
    xb, yb = native.pow_sample()
    x, y = np.frombuffer(xb, np.float32).copy(), np.frombuffer(yb, np.float32).copy()
    return x, y, powf_bits(x, y)


def recognise(want: np.ndarray[Any, Any]) -> tuple[bool, str]:
    """The recognition with `want` standing for powf's bits on the sample."""
    ok, reason = native.pow_recognise(np.ascontiguousarray(want, np.uint32).tobytes())
    return bool(ok), str(reason)


@needs_vector
def test_the_recognition_takes_this_powf(sample: Any) -> None:
    assert recognise(sample[2]) == (True, native.pow_status()[2])


@needs_vector
@pytest.mark.parametrize("part", sorted(SAMPLE_PARTS))
def test_the_recognition_refuses_a_powf_one_ulp_off_in_one_lane(sample: Any, part: str) -> None:
    x, y, want = sample
    lo, hi = SAMPLE_PARTS[part]
    finite = np.flatnonzero(np.isfinite(want.view(np.float32)[lo:hi]) & (want[lo:hi] != 0))
    lane = lo + int(finite[len(finite) // 2])
    fake = want.copy()
    fake[lane] += 1
    ok, reason = recognise(fake)
    assert not ok
    assert (
        f"x=0x{int(x.view(np.uint32)[lane]):08x} y=0x{int(y.view(np.uint32)[lane]):08x}" in reason
    )


@needs_vector
def test_the_recognition_refuses_other_nan_signs(sample: Any) -> None:
    """A libm whose invalid results are +NaN (not x86's default -NaN) is another powf."""
    fake = sample[2].copy()
    nan = np.isnan(fake.view(np.float32))
    assert nan.sum() > 100
    fake[nan] ^= np.uint32(0x80000000)
    assert not recognise(fake)[0]


@needs_vector
def test_the_recognition_refuses_a_correctly_rounded_powf(sample: Any) -> None:
    """A powf rounded correctly (powf's error is up to 0.82 ULP) differs on the sample's lanes
    next to a rounding midpoint: the lanes whose exact power is finite take the double pow's."""
    x, y, want = sample
    with np.errstate(all="ignore"):
        exact = np.power(x.astype(np.float64), y.astype(np.float64)).astype(np.float32)
    both = np.isfinite(exact) & np.isfinite(want.view(np.float32))
    fake = np.where(both, exact.view(np.uint32), want)
    assert (fake != want).sum() > 0
    ok, reason = recognise(fake)
    assert not ok and "differs from powf" in reason


@needs_vector
def test_glibcs_sse2_powf_is_not_taken_for_its_fma_one() -> None:
    """GLIBC_TUNABLES can mask FMA and AVX2 from glibc, whose ifunc then runs its SSE2 powf: the
    sample's FMA witnesses tell it apart, that process refuses the vector powf and its kernels
    give that powf's bits."""
    code = (
        "import ctypes, ctypes.util, numpy as np\n"
        "from fueltensor.kernels._chassis import NATIVE as n\n"
        "m = ctypes.CDLL(ctypes.util.find_library('m'))\n"
        "m.powf.restype = ctypes.c_float\n"
        "m.powf.argtypes = [ctypes.c_float, ctypes.c_float]\n"
        "r = np.random.default_rng(1)\n"
        "x = (r.standard_normal(20000) * 8).astype(np.float32)\n"
        "y = r.uniform(-9, 9, 20000).astype(np.float32)\n"
        "out = np.empty_like(x)\n"
        "n.binary(n.OPS.index('pow'), 0, x, y, out)\n"
        "want = np.fromiter(map(m.powf, x.tolist(), y.tolist()), np.float32, x.size)\n"
        "print(n.pow_status()[1], np.array_equal(out.view(np.uint32), want.view(np.uint32)))\n"
        "from fueltensor.kernels import pow_shortcut\n"
        "print(pow_shortcut.describe())\n"
    )
    env = {**compiled_environment(), "GLIBC_TUNABLES": "glibc.cpu.hwcaps=-AVX2,-FMA"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=OUTSIDE
    )
    assert done.returncode == 0, done.stderr
    first, reason = done.stdout.splitlines()
    assert first == "False True"
    assert reason.startswith("off: powf for every lane") and "pass differs from powf" in reason


@needs_vector
def test_the_tables_are_their_definitions() -> None:
    """logc = log2(1/invc) and exp2[j] + (j << 47) = 2^(j/32), each rounded to nearest (from
    60-digit decimal logarithms and exponentials), and the shift 1.5 * 2^52 / 32."""
    log, exp = native.pow_tables()
    blocks = np.frombuffer(log, np.float64)
    table = np.frombuffer(exp, np.uint64)
    with localcontext() as ctx:
        ctx.prec = 60
        ln2 = Decimal(2).ln()
        for invc, logc in zip(blocks[0:32:2].tolist(), blocks[1:32:2].tolist(), strict=True):
            exact = -Decimal(invc).ln() / ln2
            assert np.float64(logc).view(np.uint64) == np.float64(float(exact) + 0.0).view(
                np.uint64
            )
        for j in range(32):
            power = np.float64(float((ln2 * j / 32).exp())).view(np.uint64)
            assert int(table[j]) + (j << 47) == int(power), j
    assert table[32] == np.float64(1.5 * 2.0**52 / 32).view(np.uint64)


@needs_vector
@pytest.mark.parametrize(
    ("block", "index"),
    [
        ("log", 0),
        ("log", 1),
        ("log", 18),
        ("log", 34),
        ("exp", 0),
        ("exp", 17),
        ("exp", 32),
        ("exp", 35),
    ],
)
def test_the_libm_scan_refuses_a_table_one_ulp_off(block: str, index: int) -> None:
    """An invc, a logc, a log coefficient, an exp2 entry, the shift, an exp coefficient one ulp
    off: the libm does not hold that table, and the recognition refuses."""
    log, exp = native.pow_tables()
    assert native.pow_libm_holds(log, exp)
    changed = {"log": bytearray(log), "exp": bytearray(exp)}
    words = np.frombuffer(changed[block], np.uint64)
    words[index] += np.uint64(1)
    assert not native.pow_libm_holds(bytes(changed["log"]), bytes(changed["exp"]))


# -- the proofs ------------------------------------------------------------------------------


@needs_vector
def test_the_proof_finds_and_counts_what_differs() -> None:
    """With powf's bits flipped on every lane whose index is a multiple of 2^16, the proof
    counts exactly those lanes for every pass and names the first."""
    lo, hi = 0x3F7F0000, 0x3F7F0000 + (5 << 16) + 3
    flipped = [u for u in range(lo, hi) if u % (1 << 16) == 0]
    two = int(np.float32(2.0).view(np.uint32))
    for name, mismatches, first_x, first_y in native.verify_pow(2.0, lo, hi, 2, 1):
        assert (mismatches, first_x, first_y) == (len(flipped), flipped[0], two), name
    for name, mismatches, *_ in native.verify_pow_pairs(3, lo, hi, 2, 0x80000000):
        assert mismatches == len(flipped), name


@needs_vector
def test_a_check_over_a_slice_proves_nothing() -> None:
    checks = pow_shortcut.check(native, stop=1 << 16)
    assert [c.y for c in checks] == list(pow_shortcut.Y_VALUES)
    assert all(c.inputs == 1 << 16 and c.mismatches == 0 and c.first is None for c in checks)
    assert all(c.passes == PASSES and not c.proven for c in checks)


@needs_vector
def test_a_check_in_chunks_reports_progress(monkeypatch: pytest.MonkeyPatch) -> None:
    lo, hi = 0x3F000000, 0x3F000000 + (1 << 20)
    seen: list[tuple[float, int, int]] = []
    chunk = (hi - lo) // 5 + 1
    monkeypatch.setattr(pow_shortcut, "CHUNK", chunk)
    checks = pow_shortcut.check(native, lo, hi, progress=lambda *a: seen.append(a))
    assert all(c.mismatches == 0 and c.inputs == hi - lo for c in checks)
    assert [done for y, done, _ in seen if y == 2.0] == [chunk * k for k in (1, 2, 3, 4)] + [
        hi - lo
    ]
    assert {total for *_, total in seen} == {hi - lo}


# -- status ----------------------------------------------------------------------------------


def test_off_by_environment() -> None:
    """FUELTENSOR_POW_SHORTCUT=0: powf for every lane, and the status says so."""
    code = (
        "import numpy as np, fueltensor as ft\n"
        "from fueltensor.kernels import pow_shortcut\n"
        "print(pow_shortcut.describe())\n"
        "x = ft.asarray(np.linspace(0.1, 9, 4099, dtype=np.float32))\n"
        "print(np.asarray(x ** 2.5).view(np.uint32).tolist())\n"
        "from fueltensor.kernels._chassis import NATIVE as n\n"
        "t = np.full(64, 3.0, np.float32)\n"
        "print(n.raised(n.OPS.index('pow'), 0, t, t - 1, np.empty_like(t)))\n"
    )
    env = {**compiled_environment(), pow_shortcut.ENV_VAR: "0"}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, cwd=OUTSIDE
    )
    assert done.returncode == 0, done.stderr
    text, bits, flags = done.stdout.splitlines()
    assert text == f"off: switched off ({pow_shortcut.ENV_VAR}=0): powf for every lane"
    assert int(flags) == FE_INEXACT  # powf's arithmetic ran, not the short way
    x = np.linspace(0.1, 9, 4099, dtype=np.float32)
    assert np.array_equal(
        np.asarray(json.loads(bits), np.uint32), powf_bits(x, np.full_like(x, 2.5))
    )


FE_INEXACT = 0x20 if platform.machine() == "x86_64" else 0x10
"""<fenv.h>'s FE_INEXACT (x86-64; aarch64)."""


@needs_vector
def test_a_fresh_process_runs_the_vector_powf() -> None:
    """Nothing run by hand: the kernels take the vector powf as the package comes (3 ** 2 on
    the short way raises no flag; powf's arithmetic would raise inexact)."""
    assert native.pow_status()[:2] == (True, True)
    x, y = np.full(64, 3.0, np.float32), np.full(64, 2.0, np.float32)
    assert native.raised(POW, F32_CODE, x, y, np.empty_like(x)) == 0


@needs_vector
def test_the_switch_turns_the_vector_powf_off() -> None:
    """The bits are the same either way, so which path ran shows in the status flags: 3 ** 2
    in whole groups is exact on the short way (no flag) and inexact in powf's arithmetic."""
    x, y = np.full(64, 3.0, np.float32), np.full(64, 2.0, np.float32)
    previous = native.pow_vector(True)
    try:
        assert native.raised(POW, F32_CODE, x, y, np.empty_like(x)) == 0
        native.pow_vector(False)
        assert native.raised(POW, F32_CODE, x, y, np.empty_like(x)) == FE_INEXACT
    finally:
        native.pow_vector(previous)


@needs_vector
@kernels_native
def test_the_status_says_the_vector_powf_runs_and_why() -> None:
    previous = native.pow_vector(True)
    try:
        assert pow_shortcut.status() == (True, f"the vector powf runs: {native.pow_status()[2]}")
        native.pow_vector(False)
        assert pow_shortcut.status()[0] is False
    finally:
        native.pow_vector(previous)


def test_the_fingerprint_shows_the_state() -> None:
    on, text = pow_shortcut.status()
    assert machine().pow_shortcut == f"{'on' if on else 'off'}: {text}"
    assert machine().pow_shortcut in str(machine())


def test_the_command_shows_the_state(capsys: pytest.CaptureFixture[str]) -> None:
    from fueltensor.cli import main

    assert main(["pow-shortcut"]) == 0
    on, text = pow_shortcut.status()
    assert (
        capsys.readouterr().out.split() == f"pow shortcut: {'on' if on else 'off'}: {text}".split()
    )


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_the_check_draws_a_bar_with_the_time_left_only_on_a_terminal() -> None:
    from fueltensor.cli import _check_progress

    tty, pipe = _Terminal(), io.StringIO()
    for stream in (tty, pipe):
        report = _check_progress(stream)
        report(2.0, 1 << 31, 1 << 32)
        report(0.5, 1 << 32, 1 << 32)
    first, last = tty.getvalue().split("\r")[1:]
    assert first.startswith("  [" + "#" * 8 + " " * 22 + "]  25%  y=2 ") and "s left" in first
    assert last.startswith("  [" + "#" * 30 + "] 100%  y=0.5 ") and last.endswith("\n")
    assert pipe.getvalue() == "  y=0.5: all 4294967296 inputs compared\n"
