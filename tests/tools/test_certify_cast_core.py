"""The certifier's compiled cast reference and tally (`_certify.cast_reference`, `cast_tally`):
the reference is the tests' MPFR rule (tests/_casts.py) on every tie, boundary, NaN, infinity and
subnormal of each 8- and 16-bit target from float32; the tally is the Python cast tally's, bit for
bit and count for count, on blocks with wrong results planted; a float32 cast's certificate is
the same whichever path made it."""

from __future__ import annotations

import numpy as np
import pytest
from _casts import expected

import fueltensor as ft
from fueltensor.testing import float_format
from fueltensor.tools.certify import casts as certify_casts
from fueltensor.tools.certify import certify
from fueltensor.tools.certify.tally import fresh

_certify = pytest.importorskip("fueltensor.ext._certify")

TARGETS = ("bfloat16", "float16", "float8_e4m3fn", "float8_e5m2")
F32 = float_format(np.float32)


def compiled(to: str, saturate: bool, x: np.ndarray) -> np.ndarray:
    """The compiled reference's patterns (uint32) of float32 patterns `x`."""
    t, want = float_format(to), np.empty(x.size, np.uint32)
    _certify.cast_reference(t.exponent, t.mantissa, t.has_inf, saturate, x, want)
    return want


@pytest.mark.parametrize("saturate", [False, True], ids=["inf_or_nan", "saturate"])
@pytest.mark.parametrize("to", TARGETS)
def test_the_compiled_reference_is_mpfrs_on_every_tie_and_boundary(to: str, saturate: bool) -> None:
    x, want = expected("float32", to, saturate)  # every target value, midpoint, neighbour, edge
    patterns = np.ascontiguousarray(x).view(np.uint32)
    got = compiled(to, saturate, patterns)
    bad = np.flatnonzero(got != want.astype(np.uint32))
    assert bad.size == 0, [(hex(patterns[i]), hex(got[i]), hex(want[i])) for i in bad[:5]]


def blocks(seed: int) -> list[np.ndarray]:
    """float32 patterns that reach every outcome: a random spread, the top binade up to the
    infinities and NaNs, the subnormals and the smallest normals, each with both signs."""
    rng = np.random.default_rng(seed)
    parts = [
        rng.integers(0, 1 << 32, 1 << 16, dtype=np.uint64).astype(np.uint32),
        np.arange(0x7F7F0000, 0x7F800400, dtype=np.uint32),
        np.arange(0, 1 << 16, dtype=np.uint32),
        np.arange(0x00800000 - 512, 0x00800000 + 512, dtype=np.uint32),
        np.arange(0x38000000, 0x38000000 + (1 << 16), dtype=np.uint32),  # f16's subnormal range
    ]
    return [np.concatenate([p, p | np.uint32(1 << 31)]) for p in parts]


@pytest.mark.parametrize("saturate", [False, True], ids=["inf_or_nan", "saturate"])
@pytest.mark.parametrize("to", TARGETS)
def test_the_compiled_tally_is_the_python_tally(to: str, saturate: bool) -> None:
    t, rng = float_format(to), np.random.default_rng(7)
    for x in blocks(3):
        want = compiled(to, saturate, x)
        wrong = want.copy()
        lanes = rng.integers(0, x.size, 4000)
        wrong[lanes] ^= rng.integers(1, 1 << t.width, lanes.size).astype(np.uint32)
        wrong[lanes[:200]] &= np.uint32(t.sign_bit)  # flushed to zeros of the sign
        for got in (want, wrong):
            stats = fresh()
            _certify.cast_tally(t.exponent, t.mantissa, t.has_inf, x, got, want, stats)
            python = certify_casts.tally(F32, t, x, got.astype(np.uint64), want.astype(np.uint64))
            differ = np.flatnonzero(stats != python)
            assert differ.size == 0, [(int(i), stats[i], python[i]) for i in differ[:5]]


def test_a_float32_certificate_is_the_same_from_either_path(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    contract = ft.registry()["cast_f32_e5m2_sat"]
    if not contract.registrable:
        pytest.skip("the compiled cast kernels are not built here")
    span = (0x477F0000, 0x47800000 + (1 << 16))  # past e5m2's 57344 into float32's 65536s
    (fast,) = certify("cpu", [contract.name], inputs=span)
    monkeypatch.setattr(certify_casts, "_has_cast_core", lambda: False)
    (slow,) = certify("cpu", [contract.name], inputs=span)
    assert "compiled core" in fast.text() and "oracle's (NumPy)" in slow.text()
    keys = ("histogram", "max_ulp", "max_input", "differences", "specials", "classes", "outcomes")
    assert all(fast.data[k] == slow.data[k] for k in (*keys, "digest"))
    assert fast.data["verdict"] == [] and fast.data["outcomes"]["overflow"] > 0


def test_a_target_the_core_does_not_hold_is_refused_with_why() -> None:
    x, want = np.zeros(4, np.uint32), np.empty(4, np.uint32)
    with pytest.raises(ValueError, match=r"a cast target has 2\.\.8 exponent"):
        _certify.cast_reference(11, 52, True, False, x, want)  # float64: the Python path's
    with pytest.raises(ValueError, match="buffer 1 holds 8 bytes"):
        _certify.cast_reference(8, 7, True, False, x, np.empty(2, np.uint32))
