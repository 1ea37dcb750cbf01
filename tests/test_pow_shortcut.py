"""f32 pow's shortcut for y = 2 and y = 0.5: the C library's `powf` bits, and only where proven.

The compiled loop (`ext/src/native/pow_shortcut.c`) is held, with the shortcut forced on, to
ctypes libm `powf` (never np.power) on special values, values at the band's edges, random bit
patterns, and every length and alignment of the vector loop, on each instruction set. The
exhaustive verifier is run over a slice and shown to catch a wrong loop, and the verdict logic
(`fueltensor/kernels/pow_shortcut.py`) to switch the shortcut on only for a matching, complete,
clean verdict.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import io
import json
import platform
import threading
from collections.abc import Iterator
from dataclasses import replace
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _oracle import F32, pow_

import fueltensor as ft
from fueltensor.fingerprint import machine
from fueltensor.kernels import pow_shortcut
from fueltensor.kernels._chassis import NATIVE

native: Any = NATIVE
pytestmark = pytest.mark.skipif(NATIVE is None, reason="the compiled kernels are not built here")

POW = 6 if NATIVE is None else NATIVE.OPS.index("pow")
F32_CODE = 0 if NATIVE is None else NATIVE.DTYPES.index("float32")
ISAS = () if NATIVE is None else NATIVE.ISAS
YS = (2.0, 0.5)

_LIBM = ctypes.CDLL(ctypes.util.find_library("m"))
_LIBM.powf.restype = ctypes.c_float
_LIBM.powf.argtypes = [ctypes.c_float, ctypes.c_float]


def powf_bits(x: np.ndarray[Any, Any], y: float) -> np.ndarray[Any, Any]:
    """libm powf(x[i], y) for f32 `x`, as uint32 bits (NaN lanes passed as exact bits)."""
    out = np.fromiter(map(_LIBM.powf, x.tolist(), [y] * x.size), np.float32, x.size)
    bits = out.view(np.uint32)
    xb = x.view(np.uint32)
    y_bits = int(np.float32(y).view(np.uint32))
    for i in np.flatnonzero(np.isnan(x)).tolist():
        bits[i] = pow_(int(xb[i]), y_bits, F32)
    return bits


@pytest.fixture
def forced() -> Iterator[None]:
    """The shortcut on for both exponents, whatever the verdict; restored afterwards."""
    previous = native.pow_shortcut(True, True)
    try:
        yield
    finally:
        native.pow_shortcut(*previous)


def kernel_bits(x: np.ndarray[Any, Any], y: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The compiled f32 pow over `x`, `y` (the selected instruction set), as uint32 bits."""
    out = np.empty_like(x)
    native.binary(POW, F32_CODE, x, y, out)
    return out.view(np.uint32)


def f32(bits: list[int] | np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """f32 values from bit patterns."""
    return np.asarray(bits, dtype=np.uint32).view(np.float32)


def special_bits() -> list[int]:
    """±0, ±inf, quiet and signalling NaNs with payloads, subnormals, the FLT_MIN and FLT_MAX
    regions, the squares' and roots' underflow/overflow edges, 1, 2, and their negations."""
    edges = []
    for x in (2.0**-63, 2.0**-75, 2.0**64, 1.8446743e19, 2.0**-149, 1.0, 2.0, 0.5, 4.0):
        b = int(np.float32(x).view(np.uint32))
        edges += [b - 2, b - 1, b, b + 1, b + 2]
    base = [0, 1, 2, 0x7FFFFF, 0x400000, 0x800000, 0x800001, 0x7F7FFFFF, 0x7F7FFFFE]
    base += [0x7F800000, 0x7FC00000, 0x7FC00005, 0x7F800001, 0x7FA00000, 0x7FFFFFFF]
    base += [0x1AC00000, 0x0000072F, 0x3F800001, 0x5F800000, 0x5F7FFFFF]
    allbits = base + edges
    allbits = [b for b in allbits if b >= 0]
    return sorted(set(allbits) | {b | 0x80000000 for b in allbits})


@cache
def band_edge_bits(y: float, band: int) -> list[int]:
    """x bit patterns whose exact result (double x*x or sqrt(x)) lies at, just inside and just
    outside `band` double ULPs from a float rounding midpoint, and at the midpoint itself."""
    xs = np.arange(0x3F000000, 0x3F000000 + (1 << 22), dtype=np.uint32)
    x = xs.view(np.float32).astype(np.float64)
    e = x * x if y == 2.0 else np.sqrt(x)
    off = (e.view(np.uint64) & np.uint64(0x1FFFFFFF)).astype(np.int64) - (1 << 28)
    picked: list[int] = []
    for target in (0, band - 2, band - 1, band, band + 1, band + 2, band + 64):
        dist = np.abs(np.abs(off) - target)
        picked += xs[np.argpartition(dist, 8)[:8]].tolist()
    return picked


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("y", YS)
def test_specials_and_band_edges_are_powf(forced: None, isa: str, y: float) -> None:
    x = f32(special_bits() + band_edge_bits(y, native.POW_BAND))
    previous = native.select_isa(isa)
    try:
        got = kernel_bits(x, np.full_like(x, y))
    finally:
        native.select_isa(previous)
    want = powf_bits(x, y)
    bad = np.flatnonzero(got != want)
    assert bad.size == 0, [(hex(int(x.view(np.uint32)[i])), hex(got[i]), hex(want[i])) for i in bad]


@pytest.mark.parametrize("isa", ISAS)
@pytest.mark.parametrize("y", YS)
def test_random_bit_patterns_are_powf(forced: None, isa: str, y: float) -> None:
    x = f32(np.random.default_rng(12).integers(0, 1 << 32, 10**6, dtype=np.uint32))
    if y == 0.5:  # half of them positive, so the root's lanes are exercised as much
        x = np.abs(x[: x.size // 2]).tolist() + x[x.size // 2 :].tolist()
        x = np.asarray(x, dtype=np.float32)
    previous = native.select_isa(isa)
    try:
        got = kernel_bits(x, np.full_like(x, y))
    finally:
        native.select_isa(previous)
    assert np.array_equal(got, powf_bits(x, y))


@pytest.mark.parametrize("isa", ISAS)
def test_every_length_offset_and_mixed_exponents(forced: None, isa: str) -> None:
    """Lengths across the 8-lane groups and the 512-lane tiles, at every 4-byte offset, with
    other exponents (and the other shortcut's) mixed into a tile and leading it."""
    rng = np.random.default_rng(3)
    pool = f32(special_bits() + band_edge_bits(2.0, native.POW_BAND))
    previous = native.select_isa(isa)
    try:
        for n in (*range(0, 26), 511, 512, 513, 1029):
            for offset in range(8):
                buf = rng.standard_normal(n + offset).astype(np.float32)
                buf[::5] = rng.choice(pool, buf[::5].size)
                x = buf[offset:]
                for y in (
                    np.full(n, 2.0, np.float32),
                    np.full(n, 0.5, np.float32),
                    rng.choice(np.array([2.0, 0.5, 3.0, -2.0], np.float32), n),
                ):
                    want = np.array(
                        [
                            pow_(int(a), int(b), F32)
                            for a, b in zip(
                                x.view(np.uint32).tolist(), y.view(np.uint32).tolist(), strict=True
                            )
                        ],
                        dtype=np.uint32,
                    )
                    assert np.array_equal(kernel_bits(x, y), want), (n, offset, y[:3])
    finally:
        native.select_isa(previous)


@pytest.mark.parametrize("isa", ISAS)
def test_negative_zero_in_every_tail_lane_of_a_square_root(forced: None, isa: str) -> None:
    """-0.0 ** 0.5 in the lanes after the last full 8-lane group (the scalar rule's): its bits
    as a double are INT64_MIN, which the lane's midpoint arithmetic once overflowed as a signed
    integer (undefined behaviour; fails under the sanitizer build's UBSan before the fix)."""
    previous = native.select_isa(isa)
    try:
        for n in range(1, 17):
            x = np.full(n, -0.0, np.float32)
            assert np.array_equal(kernel_bits(x, np.full(n, 0.5, np.float32)), powf_bits(x, 0.5))
    finally:
        native.select_isa(previous)


@pytest.mark.skipif(platform.machine() not in ("x86_64", "AMD64"), reason="x86 rounding codes")
def test_another_rounding_mode_runs_powf(forced: None) -> None:
    """Rounding upward changes powf's bits; the shortcut (verified to nearest) must step aside."""
    fesetround = ctypes.CDLL(None).fesetround
    x = f32(np.random.default_rng(5).integers(0x30000000, 0x50000000, 4096, dtype=np.uint32))
    assert fesetround(0x800) == 0  # FE_UPWARD
    try:
        got = {y: kernel_bits(x, np.full_like(x, y)) for y in YS}
        want = {y: powf_bits(x, y) for y in YS}
    finally:
        fesetround(0)  # FE_TONEAREST
    for y in YS:
        assert np.array_equal(got[y], want[y])


def test_public_operators_give_powf_bits(forced: None) -> None:
    rng = np.random.default_rng(9)
    x = f32(np.concatenate([rng.integers(0, 1 << 32, 20000, dtype=np.uint32), special_bits()]))
    for y in YS:
        got = np.asarray(ft.asarray(x) ** y).view(np.uint32)
        assert np.array_equal(got, powf_bits(x, y)), y


# -- the verifier ----------------------------------------------------------------------------

SLICE = (0x3F000000, 0x3F000000 + (1 << 24))
"""2^24 inputs from 0.5 up: normal results, and mismatches for a loop without a band."""


def test_verifier_passes_the_real_loop_on_a_slice() -> None:
    for y in YS:
        per_body = native.verify_pow(y, *SLICE, native.POW_BAND, 2)
        assert per_body == tuple((0, -1) for _ in ISAS), y


def test_verifier_catches_a_loop_without_a_band() -> None:
    """Band 0 rounds the exact value for lanes powf rounds the other way: it must be caught,
    and the first lane it names must really differ from powf."""
    for y in YS:
        for count, first in native.verify_pow(y, *SLICE, 0, 2):
            assert count > 0 and SLICE[0] <= first < SLICE[1], y
            x = f32([first])
            exact = x.astype(np.float64)[0] ** 2 if y == 2.0 else np.sqrt(x.astype(np.float64))[0]
            assert int(np.float32(exact).view(np.uint32)) != int(powf_bits(x, y)[0])
    checks = pow_shortcut.check(native, *SLICE, band=0)
    assert all(c.mismatches > 0 and c.first is not None and c.first >= SLICE[0] for c in checks)
    assert all(c.inputs == SLICE[1] - SLICE[0] for c in checks)


def test_check_reports_a_slice_as_unproven() -> None:
    checks = pow_shortcut.check(native, stop=1 << 16)
    assert all(c.inputs == 1 << 16 for c in checks)
    verdict = pow_shortcut.Verdict(pow_shortcut.identity(native), checks)
    assert [c.y for c in checks] == list(YS) and all(c.mismatches == 0 for c in checks)
    assert not any(verdict.proven(y) for y in YS)  # 2^16 of 2^32 inputs prove nothing


def test_a_check_in_chunks_counts_as_one_and_reports_progress(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """`check` runs `CHUNK` inputs per call: over several chunks it must find the same
    mismatches and first lane as one call over the whole range, and report every chunk."""
    lo, hi = SLICE
    whole = [native.verify_pow(y, lo, hi, 0, 2) for y in YS]
    seen: list[tuple[float, int, int]] = []
    chunk = (hi - lo) // 5 + 1
    monkeypatch.setattr(pow_shortcut, "CHUNK", chunk)
    checks = pow_shortcut.check(native, lo, hi, band=0, progress=lambda *a: seen.append(a))
    for c, per_body in zip(checks, whole, strict=True):
        assert c.mismatches == sum(n for n, _ in per_body) > 0
        assert c.first == min(f for _, f in per_body if f >= 0)
    assert [done for y, done, _ in seen if y == 2.0] == [chunk * k for k in (1, 2, 3, 4)] + [
        hi - lo
    ]
    assert {total for *_, total in seen} == {hi - lo}


# -- the verdict logic -----------------------------------------------------------------------


@pytest.fixture
def isolated(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """A fresh cache directory (no verdict); the kernels' state restored afterwards."""
    monkeypatch.setenv("FUELTENSOR_CACHE_DIR", str(tmp_path / "cache"))
    state = native.pow_shortcut(False, False)
    native.pow_shortcut(*state)
    status = pow_shortcut.status()
    try:
        yield tmp_path
    finally:
        native.pow_shortcut(*state)
        pow_shortcut._report(status)


def verdict(mismatches: int = 0, inputs: int = 1 << 32, **changed: str) -> pow_shortcut.Verdict:
    """A verdict for this machine (or one with `changed` identity fields)."""
    checks = tuple(pow_shortcut.Check(y, inputs, mismatches, None, 1.0) for y in YS)
    return pow_shortcut.Verdict({**pow_shortcut.identity(native), **changed}, checks)


def state() -> tuple[bool, bool]:
    """Whether the kernels take the shortcut for y = 2 and y = 0.5 now."""
    now: tuple[bool, bool] = native.pow_shortcut(False, False)
    native.pow_shortcut(*now)
    return now


def test_a_cached_verdict_for_this_machine_is_used(isolated: Path) -> None:
    path = pow_shortcut.cache_path(pow_shortcut.identity(native))
    assert path is not None
    pow_shortcut.write(verdict(), path)
    pow_shortcut.activate(native)
    assert state() == (True, True)
    texts = pow_shortcut.status().values()
    assert all(t.startswith("verified on this machine (cache") for t in texts)
    assert pow_shortcut.describe().startswith("y=2 and y=0.5 verified on this machine (cache")


@pytest.mark.parametrize(
    "field", ["cpu", "libc", "libm", "powf", "native", "glibc_tunables", "platform"]
)
def test_a_verdict_from_another_machine_is_ignored(isolated: Path, field: str) -> None:
    path = isolated / "verdict.json"
    pow_shortcut.write(verdict(**{field: "elsewhere"}), path)
    assert pow_shortcut.read(path, pow_shortcut.identity(native)) is None
    assert pow_shortcut.read(isolated / "missing.json", pow_shortcut.identity(native)) is None
    path.write_text("{not json")
    assert pow_shortcut.read(path, pow_shortcut.identity(native)) is None


def test_a_negative_verdict_keeps_powf_and_says_why(isolated: Path, forced: None) -> None:
    good = verdict()
    wrong = replace(good.checks[0], mismatches=7, first=0x1AC00000)
    bad = replace(good, checks=(wrong, *good.checks[1:]))
    pow_shortcut.apply(native, bad, "cache")
    assert state() == (False, True)
    text = pow_shortcut.status()[2.0]
    assert text.startswith("off: 7 of 2^32 inputs differ") and "0x1ac00000" in text
    x = f32(np.random.default_rng(1).integers(0, 1 << 32, 4096, dtype=np.uint32))
    assert np.array_equal(kernel_bits(x, np.full_like(x, 2.0)), powf_bits(x, 2.0))


def test_an_incomplete_or_wrong_format_verdict_enables_nothing(isolated: Path) -> None:
    pow_shortcut.apply(native, verdict(inputs=1 << 24), "cache")
    assert state() == (False, False)
    assert "covered 16777216 of 2^32" in pow_shortcut.status()[0.5]
    path = isolated / "v.json"
    data = verdict().to_dict()
    data["format"] = 0
    path.write_text(json.dumps(data))
    assert pow_shortcut.read(path, pow_shortcut.identity(native)) is None


def test_off_by_environment(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = pow_shortcut.cache_path(pow_shortcut.identity(native))
    assert path is not None
    pow_shortcut.write(verdict(), path)
    monkeypatch.setenv(pow_shortcut.ENV_VAR, "0")
    pow_shortcut.activate(native)
    assert state() == (False, False)
    assert pow_shortcut.status()[2.0] == f"off: {pow_shortcut.ENV_VAR}=0"


def test_without_a_verdict_nothing_runs_and_the_status_says_how_to_check(isolated: Path) -> None:
    """No verdict for this machine: the shortcut stays off, no thread starts behind the
    user's back, and the status names the command that checks."""
    threads = threading.active_count()
    pow_shortcut.activate(native)
    assert state() == (False, False)
    assert threading.active_count() == threads
    assert "fueltensor pow-shortcut --check" in pow_shortcut.status()[2.0]


def test_verify_checks_caches_and_applies(isolated: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """`verify` (the command's work) caches its verdict for the next process and applies it;
    here over a slice, so the verdict proves nothing and the shortcut stays off."""
    real = pow_shortcut.check
    monkeypatch.setattr(
        pow_shortcut, "check", lambda n, progress: real(n, stop=1 << 16, progress=progress)
    )
    seen: list[tuple[float, int, int]] = []
    pow_shortcut.verify(native, lambda *a: seen.append(a))
    assert seen == [(y, 1 << 16, 1 << 16) for y in YS]
    assert state() == (False, False)
    cached = pow_shortcut.cache_path(pow_shortcut.identity(native))
    assert cached is not None and pow_shortcut.read(cached, pow_shortcut.identity(native))
    assert "covered 65536 of 2^32" in pow_shortcut.status()[2.0]
    pow_shortcut.activate(native)  # the next process reads it from the cache
    assert "covered 65536 of 2^32" in pow_shortcut.status()[0.5]


def test_verify_without_a_cache_applies_and_says_it_did_not_save(
    isolated: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = pow_shortcut.check
    monkeypatch.setattr(
        pow_shortcut, "check", lambda n, progress: real(n, stop=1 << 12, progress=progress)
    )
    monkeypatch.setenv("FUELTENSOR_CACHE_DIR", "")
    with pytest.raises(OSError, match="cache is off"):
        pow_shortcut.verify(native)
    assert "covered 4096 of 2^32" in pow_shortcut.status()[2.0]


def test_the_fingerprint_shows_the_shortcut_state() -> None:
    assert "y=2 " in machine().pow_shortcut and "y=0.5 " in machine().pow_shortcut
    assert machine().pow_shortcut in str(machine())


def test_the_command_shows_the_state(capsys: pytest.CaptureFixture[str]) -> None:
    from fueltensor.cli import main

    assert main(["pow-shortcut"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out == [f"pow shortcut y={y:g}: {pow_shortcut.status()[y]}" for y in YS]


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
