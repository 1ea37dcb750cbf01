"""astype between the six float formats planned through the cast contracts (CastElementwise):
every pair runs a provider's kernel, never the host, and gives the bits of the independent
reference (tests/_casts.py: the formats' bit fields and one MPFR rounding) on every view of
its input; `saturate=True` is one call away and refused where it means nothing; the trace and
`explain` show the contract; a use_backend restriction that refuses every cast contract raises
with the candidates; the other casts stay on the host, labelled so."""

from __future__ import annotations

import numpy as np
import pytest
from _casts import CASES, FLOATS, cast, fmt
from hypothesis import given, settings
from hypothesis import strategies as st

import fueltensor as ft
from fueltensor.core.errors import NoKernelError
from fueltensor.kernels.casting import kernel_name
from fueltensor.ops import CAST_OP

PAIRS = [(s, d) for s in FLOATS for d in FLOATS if s != d]
OWN = ("fuel-cpu-backend", "fuel-reference-backend")


def values(src: str) -> np.ndarray:
    """Inputs that decide a cast from `src`: every pattern of an 8-bit source, else a spread of
    numbers across the narrow formats' ranges and boundaries, subnormals, zeros, infinities
    and NaNs with payloads, as `src` patterns."""
    f = fmt(src)
    if f.width == 8:
        return np.arange(256, dtype=np.uint8).view(f.dtype)
    numbers = [0.0, -0.0, 1.0, -1.5, 448.0, 464.0, 465.0, 480.0, 57344.0, 61440.0, 65504.0]
    numbers += [65520.0, 1e-8, 2.0**-10, 2.0**-17, 3e38, -3.4e38, 6.1e-5, 1 / 3, np.pi]
    with np.errstate(over="ignore"):
        x = np.array(numbers, np.float64).astype(f.dtype)
    exp_ones = ((1 << f.exponent) - 1) << f.mantissa
    nans = [exp_ones | 1, exp_ones | 1 << (f.mantissa - 1) | 5, exp_ones]  # sNaN, qNaN, inf
    nans += [p | 1 << (f.width - 1) for p in nans] + [1, 3]  # negatives, subnormals
    return np.concatenate([x.view(f.uint), np.array(nans, f.uint)]).view(f.dtype)


def bits(t: ft.FuelTensor) -> np.ndarray:
    a = np.ascontiguousarray(np.asarray(t))
    return a.view(f"u{a.itemsize}")


def expected_provider(src: str, dst: str) -> str:
    """The CPU kernels where registrable (compiled only), else the oracle."""
    cpu = ft.registry()[kernel_name(getattr(ft, src).np, getattr(ft, dst).np, False)]
    return OWN[0] if cpu.registrable else OWN[1]


@pytest.mark.parametrize(
    ("src", "dst", "saturate"), CASES, ids=[f"{s}-{d}-{t}" for s, d, t in CASES]
)
def test_every_pair_plans_a_contract_and_gives_the_references_bits(
    src: str, dst: str, saturate: bool
) -> None:
    x = values(src)
    with ft.trace() as plans:
        got = ft.astype(ft.asarray(x), getattr(ft, dst), saturate=saturate)
    (plan,) = plans
    assert plan.op_kind == CAST_OP.op_kind and plan.provider == expected_provider(src, dst)
    assert plan.kernel is not None and plan.kernel.op_params["overflow"] == (
        "saturate" if saturate else "inf_or_nan"
    )
    assert got.dtype == getattr(ft, dst)
    np.testing.assert_array_equal(bits(got), cast(x, dst, saturate))


@pytest.mark.parametrize("provider", OWN)
def test_both_providers_serve_every_pair_alike(provider: str) -> None:
    reg = ft.registry()
    if not reg["cast_f32_f16"].registrable and provider == OWN[0]:
        pytest.skip("the compiled cast kernels are not built here")
    with ft.use_backend(provider):
        for src, dst in PAIRS:
            x = values(src)
            with ft.trace() as plans:
                got = ft.astype(ft.asarray(x), getattr(ft, dst))
            assert plans[0].provider == provider
            np.testing.assert_array_equal(bits(got), cast(x, dst), err_msg=f"{src} -> {dst}")


def test_float64_to_bfloat16_is_rounded_once_not_through_float32() -> None:
    # 1 + 2^-8 + 2^-30: float32 rounds it to 1 + 2^-8, a bfloat16 tie, which goes to even (1);
    # the value itself lies above the tie, so once rounded it goes up to 1 + 2^-7.
    x = ft.asarray(np.array([1 + 2.0**-8 + 2.0**-30], np.float64))
    once = bits(ft.astype(x, ft.bfloat16))
    twice = bits(ft.astype(ft.astype(x, ft.float32), ft.bfloat16))
    assert once.tolist() == [0x3F81] and twice.tolist() == [0x3F80]


@pytest.mark.parametrize(
    "view",
    [
        lambda a: a[::2],
        lambda a: a[1:],
        lambda a: a[::-1],
        lambda a: a.reshape(4, 6).T,
        lambda a: a[0],
        lambda a: a[:0],
        lambda a: np.broadcast_to(a[:6], (3, 6)),
    ],
    ids=["strided", "offset", "flipped", "transposed", "0-d", "empty", "broadcast"],
)
def test_a_view_casts_as_its_dense_copy(view: object) -> None:
    base = ft.asarray(np.linspace(-70000, 70000, 24, dtype=np.float32))
    v = view(base)  # type: ignore[operator]
    got = ft.astype(v, ft.float8_e5m2, saturate=True)
    want = cast(np.ascontiguousarray(np.asarray(v)), "float8_e5m2", True)
    assert got.shape == v.shape
    np.testing.assert_array_equal(bits(got).reshape(want.shape), want)


@settings(max_examples=40, deadline=None)
@given(
    shape=st.lists(st.integers(0, 5), min_size=0, max_size=3),
    step=st.sampled_from([1, 2, -1]),
    pair=st.sampled_from(PAIRS),
    seed=st.integers(0, 2**32 - 1),
)
def test_any_shape_and_layout_gives_the_references_bits(
    shape: list[int], step: int, pair: tuple[str, str], seed: int
) -> None:
    src, dst = pair
    f = fmt(src)
    rng = np.random.default_rng(seed)
    size = int(np.prod(shape)) * abs(step)
    patterns = rng.integers(0, 1 << f.width, size, dtype=f.uint, endpoint=False)
    base = ft.asarray(patterns.view(f.dtype))
    v = base[::step].reshape(shape) if shape else base[::step][:1].reshape(())
    want = cast(np.ascontiguousarray(np.asarray(v)), dst)
    np.testing.assert_array_equal(bits(ft.astype(v, getattr(ft, dst))).reshape(want.shape), want)


def test_saturate_where_nothing_can_overflow_is_refused_with_the_reason() -> None:
    x = ft.asarray(np.array([1.0], np.float32))
    with pytest.raises(ValueError, match="every float32 value, infinities included, is within"):
        ft.astype(x, ft.float64, saturate=True)
    with pytest.raises(ValueError, match="between two float formats; float32 to int32"):
        ft.astype(x, ft.int32, saturate=True)


def test_an_unknown_dtype_names_the_dtypes_there_are() -> None:
    x = ft.asarray(np.array([1.0], np.float32))
    with pytest.raises(TypeError, match=r"not a fueltensor dtype; use one of .*float8_e4m3fn"):
        ft.astype(x, "float8")


def test_explain_names_the_contract_and_folds_the_other_targets() -> None:
    x = ft.asarray(np.array([1.0, 70000.0], np.float32))
    plan = ft.explain(ft.astype, x, ft.float16, saturate=True)
    assert plan.kernel is not None and plan.kernel.op_params["overflow"] == "saturate"
    text = str(plan)
    assert "astype(float32[2]) -> float16[2]" in text and "[CastElementwise]" in text
    assert "declares op_params.overflow 'inf_or_nan'; the call asks for 'saturate'" in text
    (folded,) = [line for line in text.splitlines() if "returning another dtype" in line]
    assert "(BF16)" in folded and "(F16)" not in folded


def test_a_restriction_without_cast_contracts_raises_with_the_candidates() -> None:
    # NumPy's float64 to bfloat16 rounds twice (via float32): contracts/numpy-cast.md has none.
    x = ft.asarray(np.array([1.0], np.float64))
    with ft.use_backend("numpy"), pytest.raises(NoKernelError, match="astype\\(float64\\[1\\]"):
        ft.astype(x, ft.bfloat16)


def test_the_other_casts_run_on_the_host_labelled_so() -> None:
    x = ft.asarray(np.array([1.5, -2.0], np.float32))
    with ft.trace() as plans:
        got = ft.astype(x, ft.int32)
    assert [p.provider for p in plans] == ["host"] and got.tolist() == [1, -2]
    assert ft.astype(x, ft.float32, copy=False) is x
    assert ft.explain(ft.astype, x, ft.int8).provider == "host"
    assert x.astype(ft.bfloat16).tolist() == [1.5, -2.0]  # the method plans the same
