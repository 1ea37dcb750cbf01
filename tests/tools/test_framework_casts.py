"""benchmarks/framework_casts.py: what it reports about a framework's casts agrees with facts
each test establishes on its own (a few lanes cast through the framework and read as bits,
set beside what the formats' fields say they should be), and stand-in casts that break one
aspect on purpose are reported as breaking it, so each classification can fail."""

from __future__ import annotations

import importlib.util
import sys
from fractions import Fraction
from types import ModuleType
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from _extras import ROOT

BF16 = np.dtype(ml_dtypes.bfloat16)
E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
F32_BF16 = ("float32", "bfloat16")


@pytest.fixture(scope="module")
def fc() -> ModuleType:
    """The benchmark module, loaded from the checkout (benchmarks/ is no package)."""
    spec = importlib.util.spec_from_file_location(
        "framework_casts", ROOT / "benchmarks" / "framework_casts.py"
    )
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


def _found(fc: ModuleType, provider: str, pair: tuple[str, str]) -> dict[str, Any]:
    found: dict[str, Any] = fc.observe(provider, (pair,))[provider][pair]
    return found


def _bf16_value(pattern: int) -> Fraction:
    """A bfloat16 pattern's exact value: its bits are the high half of a float32's."""
    return Fraction(float(np.array([pattern << 16], np.uint32).view(np.float32)[0]))


def test_f64_to_bf16_rounding_matches_a_witness_lane_cast_by_ml_dtypes(fc: ModuleType) -> None:
    # 1 + 2**-8 is the bfloat16 midpoint between 1 (0x3f80) and 1 + 2**-7 (0x3f81). 2**-40 above
    # it, one rounding gives 0x3f81; float32 first (its half ulp at 1 is 2**-24) lands on the
    # midpoint exactly, whose tie goes to the even 0x3f80.
    x = np.array([1 + 2**-8 + 2**-40], np.float64)
    assert int(np.array([1 + 2**-8], np.float32).view(np.uint32)[0]) == 0x3F808000
    lane = int(x.astype(BF16).view(np.uint16)[0])
    assert lane in (0x3F80, 0x3F81)
    found = _found(fc, "numpy", ("float64", "bfloat16"))["rounding"]
    if lane == 0x3F80:
        assert found.value == "double rounding via float32"
        assert found.count > 0
    else:
        assert found.value == "nearest_even"
    for src, got, want in found.examples:  # each example: ml_dtypes' lane, the nearer value
        value = np.array([src], np.uint64).view(np.float64)
        assert int(value.astype(BF16).view(np.uint16)[0]) == got != want
        exact = Fraction(float(value[0]))
        off_got, off_want = abs(exact - _bf16_value(got)), abs(exact - _bf16_value(want))
        assert off_want < off_got or (off_want == off_got and want % 2 == 0)


def test_f32_to_e4m3fn_overflow_matches_lanes_cast_by_ml_dtypes(fc: ModuleType) -> None:
    # 448 is e4m3fn's largest finite, 464 the tie beyond it: 465, 1e30 and inf overflow.
    x = np.array([465.0, 1e30, np.inf, -465.0], np.float32)
    with np.errstate(all="ignore"):
        lanes = x.astype(E4M3).view(np.uint8).tolist()
    magnitudes = {b & 0x7F for b in lanes}
    expected = {0x7F: "inf_or_nan", 0x7E: "saturate"}.get(magnitudes.pop())
    assert not magnitudes and expected is not None, f"mixed overflow results {lanes}"
    assert _found(fc, "numpy", ("float32", "float8_e4m3fn"))["overflow"].value == expected


def _nan_convention(got: list[int], kept: list[int], quiet: list[int], canon: list[int]) -> str:
    return {str(kept): "kept", str(quiet): "quiet_payload", str(canon): "canonical"}[str(got)]


def test_bf16_nan_conventions_match_lanes_cast_by_ml_dtypes(fc: ModuleType) -> None:
    # Widening: a signalling NaN's payload shifted up 16 bits, with or without the quiet bit
    # (0x0040 -> 0x00400000), or dropped.
    snan = np.array([0x7F81, 0xFFA5], np.uint16)
    got = snan.view(BF16).astype(np.float32).view(np.uint32).tolist()
    kept, quiet = [0x7F810000, 0xFFA50000], [0x7FC10000, 0xFFE50000]
    expected = _nan_convention(got, kept, quiet, [0x7FC00000, 0xFFC00000])
    found = _found(fc, "numpy", ("bfloat16", "float32"))["nan"]
    assert (found.value, found.sign) == (expected, "kept")
    # Narrowing: the payload's high 7 bits, quieted, or the quiet NaN of the sign alone.
    nans = np.array([0x7FC12345, 0xFF812345], np.uint32)
    with np.errstate(all="ignore"):
        got = nans.view(np.float32).astype(BF16).view(np.uint16).tolist()
    expected = _nan_convention(got, [0x7FC1, 0xFF81], [0x7FC1, 0xFFC1], [0x7FC0, 0xFFC0])
    assert _found(fc, "numpy", F32_BF16)["nan"].value == expected


def _ml_dtypes_cast(bits: np.ndarray, src: str, dst: str) -> np.ndarray:
    """The plain cast the stand-ins below change."""
    to = {"bfloat16": BF16}[dst]
    with np.errstate(all="ignore"):
        out: np.ndarray = bits.view(np.float32).astype(to).view(np.uint16)
    return out


def test_a_truncating_cast_is_reported_as_rounding_toward_zero(fc: ModuleType) -> None:
    def truncate(bits: np.ndarray, src: str, dst: str) -> np.ndarray:
        finite = (bits & 0x7F800000) != 0x7F800000
        small = (bits & 0x7FFFFFFF) <= 0x7F7F0000  # in bfloat16's range: the high half
        return np.where(finite & small, bits >> 16, _ml_dtypes_cast(bits, src, dst)).astype(
            np.uint16
        )

    found = fc.observe_pair(truncate, *F32_BF16)
    assert found["rounding"].value == "toward_zero"
    assert found["rounding"].count > 0
    assert found["subnormals"].value == "kept"


def test_a_cast_that_flushes_subnormal_results_is_reported_as_flushing(fc: ModuleType) -> None:
    def flush(bits: np.ndarray, src: str, dst: str) -> np.ndarray:
        out = _ml_dtypes_cast(bits, src, dst)
        return np.where((out & 0x7F80) == 0, out & 0x8000, out).astype(np.uint16)

    found = fc.observe_pair(flush, *F32_BF16)
    assert found["subnormals"].value == "flushed"
    assert found["rounding"].value == "nearest_even"  # the flushed lanes are not its


def test_a_cast_whose_tail_lanes_differ_is_reported_as_position_dependent(
    fc: ModuleType,
) -> None:
    def tail(bits: np.ndarray, src: str, dst: str, numbers: bool = False) -> np.ndarray:
        out = _ml_dtypes_cast(bits, src, dst).copy()
        rest = bits.size % 8  # a "vector body" of 8 lanes, the rest a scalar tail
        if rest:
            nan = (out[-rest:] & 0x7FFF) > 0x7F80
            out[-rest:][nan] = 0xFFFF
            if numbers:  # a finite lane of the tail one ulp off too
                finite = np.flatnonzero((out[-rest:] & 0x7F80) != 0x7F80)
                out[out.size - rest + finite[:1]] ^= 1
        return out

    found = fc.observe_pair(tail, *F32_BF16)
    assert found["position"].value == "nan_bits"  # only NaN bits moved: declarable
    assert found["position"].count > 0
    moved = fc.observe_pair(lambda b, s, d: tail(b, s, d, True), *F32_BF16)
    assert moved["position"].value == "dependent"
    plain = fc.observe_pair(_ml_dtypes_cast, *F32_BF16)
    assert plain["position"].value == "invariant"


def test_a_missing_cast_or_framework_is_refused_cleanly(
    fc: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(bits: np.ndarray, src: str, dst: str) -> np.ndarray:
        raise fc.Unsupported(f"no {dst} here")

    found = fc.observe_pair(refuse, *F32_BF16)
    assert {f.value for f in found.values()} == {"unsupported"}
    assert found["nan"].note == "no bfloat16 here"
    monkeypatch.setitem(sys.modules, "torch", None)  # `import torch` raises ImportError
    absent = fc.observe("torch", (F32_BF16,))["torch"][F32_BF16]
    assert {f.value for f in absent.values()} == {"unsupported"}


def test_torch_e4m3fn_overflow_matches_lanes_cast_by_torch(fc: ModuleType) -> None:
    torch = pytest.importorskip("torch")
    x = torch.tensor([465.0, 1e30, float("inf"), -465.0], dtype=torch.float32)
    lanes = [b & 0xFF for b in x.to(torch.float8_e4m3fn).view(torch.int8).tolist()]
    magnitudes = {b & 0x7F for b in lanes}
    expected = {0x7F: "inf_or_nan", 0x7E: "saturate"}.get(magnitudes.pop())
    assert not magnitudes and expected is not None, f"mixed overflow results {lanes}"
    assert _found(fc, "torch", ("float32", "float8_e4m3fn"))["overflow"].value == expected


def test_torch_f16_to_f32_position_matches_a_nan_cast_alone_and_in_a_vector(
    fc: ModuleType,
) -> None:
    torch = pytest.importorskip("torch")
    nan = np.full(64, 0x7E5A, np.int16)  # a quiet float16 NaN with a payload
    h = torch.from_numpy(nan).view(torch.float16)
    alone = h[:1].to(torch.float32).view(torch.int32).tolist()[0]
    body = h.to(torch.float32).view(torch.int32).tolist()[0]
    found = _found(fc, "torch", ("float16", "float32"))["position"]
    assert found.value == ("nan_bits" if alone != body else "invariant")  # NaNs both


def test_jax_f32_to_f64_subnormals_match_a_lane_cast_by_jax(fc: ModuleType) -> None:
    jax = pytest.importorskip("jax")
    jnp = pytest.importorskip("jax.numpy")
    tiny = np.array([1], np.int32)  # float32's smallest subnormal, 2**-149
    with jax.enable_x64(True):
        x = jax.lax.bitcast_convert_type(jnp.asarray(tiny), jnp.float32)
        got = int(np.asarray(x.astype(jnp.float64)).view(np.uint64)[0])
    assert got in (0, 0x36A0000000000000)  # zero, or 2**-149 exactly
    found = _found(fc, "jax", ("float32", "float64"))["subnormals"]
    assert found.value == ("flushed" if got == 0 else "kept")
