"""The compiled casts (`_native.convert`, issue 45 item 3) between the six float formats, bit for
bit against tests/_casts.py (the formats' bit fields and one MPFR rounding, never the kernels'
code, NumPy's or ml_dtypes' conversions), on every instruction-set body this CPU runs: every
pattern of each 8- and 16-bit source; float32 and float64 sources on a structured set (every
source exponent, the target's every rounding boundary and the source ulps around it,
subnormals, NaN payloads, zeros and infinities) and seeded random patterns; each ordered pair,
with and without saturation. Also: one thread's bits on 2, 3 and 7 threads, the caller's
status flags kept, a cast to its own dtype a copy, an `out` overlapping x, and each refusal's
message with nothing written."""

from __future__ import annotations

import math
from collections.abc import Iterator
from functools import cache
from typing import Any

import numpy as np
import pytest
from _extras import extra

from fueltensor.kernels import threads
from fueltensor.kernels._chassis import NATIVE

extra("gmpy2", "test")  # the reference rounds with MPFR
import _casts  # noqa: E402
from _fpstatus import FE, flags_after  # noqa: E402

pytestmark = pytest.mark.skipif(NATIVE is None, reason="the compiled kernels are not built")
_native: Any = NATIVE
NAMES = ("float32", "float64", "bfloat16", "float16", "float8_e4m3fn", "float8_e5m2")
PAIRS = [(s, t) for s in NAMES for t in NAMES if s != t]
Patterns = np.ndarray[Any, Any]


def cast(patterns: Patterns, src: str, dst: str, saturate: int, fill: int = 0) -> Patterns:
    """`_native.convert` of the source `patterns` into a fresh output prefilled with byte `fill`,
    as the target's patterns."""
    s, t = _casts.fmt(src), _casts.fmt(dst)
    x = np.ascontiguousarray(patterns, s.uint).view(s.dtype)
    out = np.full(x.size * t.dtype.itemsize, fill, np.uint8).view(t.dtype)
    _native.convert(NAMES.index(src), NAMES.index(dst), saturate, x, out)
    return out.view(t.uint)


def specials(f: _casts.Format) -> list[int]:
    """Every exponent of `f` with fraction 0, 1 and all ones (zeros, infinities, signalling
    and quiet NaNs among them); subnormals; NaNs of several payloads (the high bits that survive
    a narrowing, the low ones that do not); all with both signs."""
    m, frac = f.mantissa, (1 << f.mantissa) - 1
    fracs = [0, 1, frac]
    out = [(e << m) | g for e in range(f.top + 1) for g in fracs]
    out += [2, 3, 1 << (m - 1), frac - 1, (1 << (m - 1)) - 1, 0x5 << (m - 3)]
    top = f.top << m  # below: NaNs (f is float32 or float64)
    out += [top | g for g in (2, 1 << (m - 2), (1 << (m - 1)) - 1, 1 << (m - 1), 0x3 << (m - 2))]
    out += [top | (1 << (m - 1)) | 1, top | (0x2D << (m - 6)), top | (0x2D << (m - 6)) | 7]
    sign = 1 << (f.width - 1)
    return out + [p | sign for p in out]


def boundaries(s: _casts.Format, t: _casts.Format) -> Patterns:
    """Source patterns of the target's rounding boundaries: each positive finite target value
    (all of them for an 8- or 16-bit target; float32's every exponent with six fractions) and
    the midpoint to the next one up (past the largest finite value: the overflow boundary), each
    with the source's neighbours one ulp either side, both signs."""
    if t.width >= s.width:
        return np.zeros(0, s.uint)  # a widening is exact: no boundary
    if t.width <= 16:
        finite = range(t.encode(t.max) + 1)
    else:
        m = t.mantissa
        fracs = (0, 1, 2, 1 << (m - 1), (1 << m) - 2, (1 << m) - 1)
        finite = [(e << m) | g for e in range(t.top) for g in fracs]
    values = [t.decode(p) for p in finite]
    above = [t.decode(p + 1) for p in finite]
    below = [t.decode(p - 1) if p else 0.0 for p in finite]
    points = []
    for v, up, down in zip(values, above, below, strict=True):
        assert isinstance(v, float) and isinstance(down, float)
        up = up if isinstance(up, float) and abs(up) <= t.max else 2 * v - down
        points += [v, (v + up) / 2]
    exact = np.array(points, np.float64).astype(s.dtype)
    assert np.array_equal(exact.astype(np.float64), points)  # each point exact in the source
    near = [exact, np.nextafter(exact, s.dtype.type(np.inf)), np.nextafter(exact, -np.inf)]
    around = np.concatenate(near).view(s.uint)
    return np.concatenate([around, around | s.uint.type(1 << (s.width - 1))])


def randoms(s: _casts.Format, t: _casts.Format, seed: int) -> Patterns:
    """4096 seeded random source patterns, and 4096 whose exponents lie in and around the
    target's range (random fraction bits below its precision: the rounding's sticky bits)."""
    rng = np.random.default_rng(seed)
    anywhere = rng.integers(0, (1 << s.width) - 1, 4096, dtype=s.uint, endpoint=True)
    lo = max(1, s.bias + t.min_exp - t.mantissa - 3)
    hi = min(s.top - 1, s.bias + (t.top - t.bias) + 2)
    exps = rng.integers(lo, hi, 4096, endpoint=True).astype(s.uint)
    fracs = rng.integers(0, 1 << s.mantissa, 4096, dtype=s.uint)
    signs = rng.integers(0, 2, 4096).astype(s.uint) << s.uint.type(s.width - 1)
    return np.concatenate([anywhere, signs | (exps << s.uint.type(s.mantissa)) | fracs])


@cache
def sources(src: str, dst: str) -> Patterns:
    """The source patterns a cast src -> dst is checked on: every one of an 8- or 16-bit
    source; a float32 or float64 source's specials, boundaries and random patterns."""
    s, t = _casts.fmt(src), _casts.fmt(dst)
    if s.width <= 16:
        return np.arange(1 << s.width, dtype=s.uint)
    made = [np.array(specials(s), s.uint), boundaries(s, t), randoms(s, t, NAMES.index(dst))]
    return np.unique(np.concatenate(made))


def is_nan(patterns: Patterns, f: _casts.Format) -> Patterns:
    """Which patterns of format f are NaNs, by their fields (no float conversion to signal)."""
    u, ones = patterns.astype(np.uint64), (1 << f.mantissa) - 1
    exp, frac = (u >> np.uint64(f.mantissa)) & np.uint64(f.top), u & np.uint64(ones)
    return (exp == f.top) & ((frac != 0) if f.has_inf else (frac == ones))


@cache
def expected(src: str, dst: str, saturate: int) -> Patterns:
    """The reference's patterns for `sources(src, dst)`, computed once a run. With saturation,
    the reference runs only where the plain cast overflowed (an infinity, or float8_e4m3fn's
    NaN, from a number): elsewhere the rule's saturation changes nothing."""
    s, t = _casts.fmt(src), _casts.fmt(dst)
    patterns = sources(src, dst)
    x = patterns.view(s.dtype)
    plain = _casts.cast(x, dst) if not saturate else expected(src, dst, 0)
    if not saturate:
        return plain
    mag = plain & t.uint.type((1 << (t.width - 1)) - 1)
    over = mag == (t.top << t.mantissa if t.has_inf else (1 << (t.width - 1)) - 1)
    over &= ~is_nan(patterns, s)
    out = plain.copy()
    out[over] = _casts.cast(x[over], dst, saturate=True)
    return out


def mismatches(got: Patterns, want: Patterns, x: Patterns) -> str:
    """The first differing lanes, as hex source -> got / want (pytest would print megabytes)."""
    bad = np.flatnonzero(got != want)
    shown = [f"{x[i]:#x} -> {got[i]:#x} / {want[i]:#x}" for i in bad[:6].tolist()]
    return f"{bad.size} of {want.size} differ: " + ", ".join(shown)


@pytest.mark.parametrize("saturate", [0, 1])
@pytest.mark.parametrize(("src", "dst"), PAIRS)
def test_every_pair_is_the_reference_on_every_body(
    src: str, dst: str, saturate: int, isa: str
) -> None:
    x = sources(src, dst)
    got = cast(x, src, dst, saturate)
    want = expected(src, dst, saturate)
    assert np.array_equal(got, want), mismatches(got, want, x)


def test_the_sets_reach_what_they_are_for() -> None:
    """The structured sets hold the boundaries the docstring names: float64's largest finite
    and its neighbour below, the float16 overflow midpoint 65520 with an ulp either side, a
    float32 subnormal, and float8_e4m3fn's 464 (the tie that rounds down to 448)."""
    f64 = sources("float64", "float16").view(np.float64)
    assert {np.finfo(np.float64).max, 65520.0, np.nextafter(65520.0, 0), -65520.0} <= set(f64)
    f32 = sources("float32", "float8_e4m3fn").view(np.float32)
    assert {np.float32(464.0), np.float32(-464.0), np.float32(1e-45)} <= set(f32)
    assert sources("float32", "bfloat16").size > 2 * 6 * 32000


CASES = [  # (src, dst, value, saturate, target pattern): the rule's named cases, by hand
    ("float64", "bfloat16", 1 + 2**-8 + 2**-30, 0, 0x3F81),  # once: not f32's tie to 1.0
    ("float32", "float16", 65519.0, 0, 0x7BFF),
    ("float32", "float16", 65520.0, 0, 0x7C00),  # the tie rounds to even: past 65504
    ("float32", "float16", -65520.0, 1, 0xFBFF),
    ("float32", "float16", -math.inf, 1, 0xFBFF),
    ("float32", "float8_e4m3fn", 464.0, 0, 0x7E),  # 448 is even
    ("float32", "float8_e4m3fn", 465.0, 0, 0x7F),  # no infinity: its NaN
    ("float32", "float8_e4m3fn", -1e9, 1, 0xFE),
    ("float64", "float8_e5m2", 61440.0, 0, 0x7C),
    ("float64", "float8_e5m2", 61439.0, 1, 0x7B),
    ("float16", "float8_e5m2", 2**-17, 0, 0x00),  # the tie to even at the least subnormal
    ("float16", "float8_e5m2", -(2**-17) * 1.5, 0, 0x81),
    ("bfloat16", "float32", math.inf, 1, 0x7F7FFFFF),  # a widening saturates infinities too
]


@pytest.mark.parametrize(("src", "dst", "value", "saturate", "want"), CASES)
def test_the_rules_named_cases(src: str, dst: str, value: float, saturate: int, want: int) -> None:
    x = np.array([value], _casts.fmt(src).dtype)
    assert float(x[0]) == value  # the source holds it exactly
    assert cast(x.view(_casts.fmt(src).uint), src, dst, saturate).tolist() == [want]


def test_a_nan_keeps_its_sign_and_top_payload_bits_quieted() -> None:
    """A signalling float32 NaN with payload 0x2D0001: its top bits in each target, quiet."""
    x = np.array([0x7FAD0001, 0xFFAD0001], np.uint32)
    assert cast(x, "float32", "bfloat16", 0).tolist() == [0x7FED, 0xFFED]
    assert cast(x, "float32", "float16", 1).tolist() == [0x7F68, 0xFF68]
    assert cast(x, "float32", "float8_e5m2", 0).tolist() == [0x7F, 0xFF]
    assert cast(x, "float32", "float8_e4m3fn", 1).tolist() == [0x7F, 0xFF]
    assert cast(x, "float32", "float64", 0).tolist() == [0x7FFDA00020000000, 0xFFFDA00020000000]


@pytest.mark.parametrize("dtype", NAMES)
def test_a_cast_to_its_own_dtype_copies_the_bits(dtype: str, isa: str) -> None:
    """src == dst is a copy: a signalling NaN stays signalling, an infinity stays one."""
    f = _casts.fmt(dtype)
    x = np.arange(1 << f.width, dtype=f.uint) if f.width <= 16 else np.array(specials(f), f.uint)
    for saturate in (0, 1):
        assert np.array_equal(cast(x, dtype, dtype, saturate, fill=0xA5), x)


def test_an_out_overlapping_x_reads_x_as_it_was() -> None:
    rng = np.random.default_rng(5)
    buf = rng.integers(0, 1 << 32, 3000, dtype=np.uint32)
    x = buf.copy()
    want = cast(x, "float32", "float16", 0)
    out = buf.view(np.float16)[1000:4000]  # its bytes start inside x's
    _native.convert(0, NAMES.index("float16"), 0, buf.view(np.float32), out)
    assert np.array_equal(out.view(np.uint16), want)


BIG = (_native.CAST_SPLIT_FROM * _native.WAKE_FACTOR if NATIVE is not None else 0) + 4097
"""An odd size whose call wakes sleeping workers (a shorter one may run alone)."""


@pytest.fixture
def cores() -> Iterator[None]:
    """The test pretends a core count: the run's pretence comes back after."""
    pretended = threads.pretend_cores(0)
    yield
    threads.pretend_cores(pretended)


@pytest.mark.parametrize("count", [2, 3, 7])
def test_one_threads_bits_on_several_threads(count: int, cores: None) -> None:
    """Every pair split over 2, 3 and 7 threads (as on a machine of that many cores), at an odd
    size and an odd element offset, gives one thread's bytes, whatever out held before."""
    threads.pretend_cores(count)
    for src, dst in PAIRS:
        s = _casts.fmt(src)
        rng = np.random.default_rng(NAMES.index(src))
        x = rng.integers(0, (1 << s.width) - 1, BIG + 3, s.uint, endpoint=True)
        for part in (x[:BIG], x[3:]):
            saturate = int(part[0]) & 1
            with threads.running_on(1):
                one = cast(part, src, dst, saturate)
            with threads.running_on(count):
                assert _native.threads(part.size, _native.CAST_OP, NAMES.index(src)) == count
                many = cast(part, src, dst, saturate, fill=0xFF)
            assert np.array_equal(many, one), (src, dst, mismatches(many, one, part))


@pytest.mark.skipif(not FE, reason="this machine's FE_* bits are not listed in _fpstatus")
@pytest.mark.parametrize("count", [1, 2])
def test_the_callers_status_flags_are_kept(count: int) -> None:
    """A cast whose F16C path raises overflow, inexact and invalid (a signalling NaN) leaves
    the caller's flags as they were, none raised or all, on one thread or split."""
    x = np.resize(np.array([1e30, 1.1, 0x7F800001, 0], np.float32), BIG)
    x[2::4] = np.array([0x7F800001], np.uint32).view(np.float32)[0]
    out = np.empty(BIG, np.float16)
    with threads.running_on(count):
        for before in (0, sum(FE.values()), FE["inexact"]):
            assert flags_after(before, lambda: _native.convert(0, 3, 0, x, out)) == before
    assert out.view(np.uint16)[:4].tolist() == [0x7C00, 0x3C66, 0x7E00, 0]


def refusals() -> list[tuple[tuple[Any, ...], type[Exception], str]]:
    """Bad calls (OUT: the test's float16 array of 4) and what each must raise."""
    f32, f64 = np.zeros(4, np.float32), np.zeros(4, np.float64)
    u16 = np.zeros(4, np.uint16)
    return [
        ((0, 3, 0, f32), TypeError, r"takes 5 arguments, got 4"),
        ((6, 3, 0, f32, OUT), ValueError, r"src must be a code of CAST_DTYPES, in \[0, 6\), got 6"),
        (
            (0, -1, 0, f32, OUT),
            ValueError,
            r"dst must be a code of CAST_DTYPES, in \[0, 6\), got -1",
        ),
        (("float32", 3, 0, f32, OUT), TypeError, r"src must be an int \(a code of CAST_DTYPES\)"),
        ((0, 3, 2, f32, OUT), ValueError, r"saturate must be 0 or 1, in \[0, 2\), got 2"),
        (
            (0, 3, 0.5, f32, OUT),
            TypeError,
            r"saturate must be an int \(0 or 1\), got <class 'float'>",
        ),
        ((0, 3, 0, f64, OUT), TypeError, r"x must hold float32 elements \(4 bytes\), got .*'d'"),
        ((2, 3, 0, u16, OUT), TypeError, r"x must hold bfloat16 elements \(2 bytes\), got .*'H'"),
        ((3, 3, 0, np.zeros(8, np.float16)[::2], OUT), ValueError, r"x must be a C-contiguous"),
        ((0, 3, 0, np.zeros(5, np.float32), OUT), ValueError, r"x has 20 bytes .*, out 8 bytes"),
    ]


OUT = object()
"""Where a refusal's arguments take the test's out array."""


@pytest.mark.parametrize("case", range(len(refusals())))
def test_each_refusal_says_why_and_writes_nothing(case: int) -> None:
    args, error, message = refusals()[case]
    out = np.full(4, 7.0, np.float16)
    with pytest.raises(error, match=message):
        _native.convert(*(out if a is OUT else a for a in args))
    assert out.tolist() == [7.0] * 4


def test_out_must_be_writable_of_the_target_dtype() -> None:
    x = np.arange(4, dtype=np.float64)
    frozen = np.zeros(4, np.float16)
    frozen.flags.writeable = False
    with pytest.raises(ValueError, match=r"out must be a C-contiguous, writable array"):
        _native.convert(1, 3, 0, x, frozen)
    with pytest.raises(TypeError, match=r"out must hold float16 elements \(2 bytes\), got .*'f'"):
        _native.convert(1, 3, 0, x, np.zeros(2, np.float32))
    with pytest.raises(TypeError, match=r"out must hold float8_e4m3fn elements \(1 bytes\)"):
        _native.convert(1, 4, 0, x, np.zeros(4, np.int8))
    assert frozen.tolist() == [0.0] * 4
    empty = np.zeros(0, np.float16)
    assert _native.convert(1, 3, 0, np.zeros(0), empty) is None


def test_the_module_names_the_cast_dtypes_and_its_threshold() -> None:
    assert _native.CAST_DTYPES == NAMES
    assert set(NAMES) == set(_casts.FLOATS)
    assert _native.CAST_DTYPES[:4] == _native.DTYPES
    assert 512 <= _native.CAST_SPLIT_FROM <= _native.PARALLEL_FROM
    assert type(_native.CAST).__name__ == "PyCapsule"
