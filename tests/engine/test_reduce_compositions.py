"""ft.mean, ft.var, ft.std and ft.logsumexp as compositions of planned steps (issue 48;
array_api/compositions.py, docs/reductions.md "The compositions").

Each result is held bit for bit to a reference that redoes the same steps in NumPy from their
contracts' formulas, not from fueltensor's code: the sum by its declared order
(`judge.orders.simulate`, the judge's own simulator; the exact sum rounded once where the
contract declares `exact`), IEEE 754's correctly rounded subtract, multiply, divide and sqrt
(NumPy's in-type ufuncs), the clip and the maximum by selection, the casts by round to nearest
even (ml_dtypes). exp and log are not correctly rounded anywhere NumPy runs, so logsumexp's
reference takes those two steps from their kernels (the judge holds them to MPFR) and redoes
everything around them. The trace must list every step as a contract plan, and a mean's error
from the exact mean (rationals) must stay within the documented bound.
"""

from __future__ import annotations

import contextlib
import math
import warnings
from fractions import Fraction
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fueltensor as ft
from fueltensor.engine.reduce import normalised
from fueltensor.kernels.exact_sums import exact_rows, exact_sum, rows
from fueltensor.ops import BY_KIND, OpKind
from fueltensor.tools.judge.orders import Declared, declared, selected, simulate

FLOATS = (np.float32, np.float64, ml_dtypes.bfloat16, np.float16)
HALVES = (np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16))
FUNCTIONS = {"mean": ft.mean, "var": ft.var, "std": ft.std, "logsumexp": ft.logsumexp}
CORRECTED = ("var", "std")


def _name(kind: OpKind) -> str:
    """The namespace name of an op table row (the trace's `op`)."""
    return BY_KIND[kind].name


def work_of(dtype: Any) -> np.dtype:
    """The dtype a composition computes in: float32 for a half type, float64 for integers."""
    d = np.dtype(dtype)
    if d in HALVES:
        return np.dtype(np.float32)
    return np.dtype(np.float64) if d.kind in "biu" else d


def declaration(work: np.dtype) -> Declared | str:
    """The declaration of the sum contract a `work` tensor plans (read from the contract)."""
    return declared(ft.explain(ft.sum, ft.asarray(np.zeros(2, work)), axis=0).kernel)


def ref_sum(table: np.ndarray) -> np.ndarray:
    """Each row's sum by the chosen contract's declared order, or exactly, rounded once."""
    d = declaration(table.dtype)
    out = np.empty(table.shape[0], table.dtype)
    if isinstance(d, str) or not d.fixes_bits:
        exact_sum(table, (1,), out)
        return out
    return simulate(table, d, table.dtype)


def ref_mean(t: np.ndarray) -> np.ndarray:
    """sum / n, the division IEEE's in the work dtype."""
    with np.errstate(all="ignore"):
        return ref_sum(t) / t.dtype.type(t.shape[1])


def ref_var(t: np.ndarray, correction: float) -> np.ndarray:
    """Two-pass: the squared deviations' sum over n - correction (NaN where that is <= 0)."""
    with np.errstate(all="ignore"):
        d = t - ref_mean(t)[:, None]
        dof = t.shape[1] - correction
        return ref_sum(d * d) / t.dtype.type(dof if dof > 0 else math.nan)


def ref_logsumexp(t: np.ndarray) -> np.ndarray:
    """m + log(sum(exp(x - m))), m the maximum clipped to the finite range; exp and log from
    their kernels (judged against MPFR elsewhere), every other step redone here."""
    with np.errstate(all="ignore"):
        if t.shape[1] == 0:
            return np.asarray(ft.log(ft.asarray(ref_sum(t))))
        top = np.finfo(t.dtype).max
        shift = np.clip(selected(t, t.dtype, True, "lhs"), -top, top).astype(t.dtype)
        e = np.asarray(ft.exp(ft.asarray(t - shift[:, None])))
        return np.asarray(ft.log(ft.asarray(ref_sum(e)))) + shift


def reference(name: str, x: np.ndarray, axes: tuple[int, ...], correction: float) -> np.ndarray:
    """The composition `name` of x over `axes` from its steps, rounded once to the result dtype,
    in the reduced shape."""
    work = work_of(x.dtype)
    t = rows(x.astype(work), axes)
    if name == "mean":
        r = ref_mean(t)
    elif name == "logsumexp":
        r = ref_logsumexp(t)
    else:
        r = ref_var(t, correction)
        r = np.sqrt(r) if name == "std" else r
    out = work if x.dtype.kind in "biu" else x.dtype
    with np.errstate(all="ignore"):
        return r.astype(out).reshape([n for i, n in enumerate(x.shape) if i not in axes])


def same_bits(got: np.ndarray, want: np.ndarray) -> bool:
    """Equal bit patterns, any NaN matching any NaN."""
    g, w = np.atleast_1d(got).reshape(-1), np.atleast_1d(want).reshape(-1)
    kind = f"u{g.dtype.itemsize}"
    nan = np.isnan(g.astype(np.float64)) & np.isnan(w.astype(np.float64))
    return bool(np.all((g.view(kind) == w.view(kind)) | nan))


def check(name: str, view: np.ndarray, axis: Any, keepdims: bool, correction: float = 0) -> None:
    """`name` of the tensor of `view` gives the reference's bits, dtype and shape, every step a
    contract plan, warning nothing."""
    kwargs: dict[str, Any] = {"axis": axis, "keepdims": keepdims}
    if name in CORRECTED:
        kwargs["correction"] = correction
    with ft.trace() as plans, warnings.catch_warnings():
        warnings.simplefilter("error")
        got = np.asarray(FUNCTIONS[name](ft.asarray(view), **kwargs))
    hosts = [p.op for p in plans if p.kernel is None]  # an integer's conversion to float64
    assert plans and hosts == ([_name(OpKind.CAST)] if view.dtype.kind in "biu" else []), hosts
    axes = normalised(axis, view.ndim)
    want = reference(name, view, axes, correction)
    if keepdims:
        want = want.reshape([1 if i in axes else n for i, n in enumerate(view.shape)])
    assert got.dtype == want.dtype and got.shape == want.shape, (got.dtype, got.shape, want.shape)
    assert same_bits(got, want), (name, view.dtype, axis, got, want)


def sample(dtype: Any, shape: tuple[int, ...], seed: int, specials: bool = True) -> np.ndarray:
    """Values of every sign over a spread of magnitudes, with signed zeros, subnormals and (when
    `specials`) a NaN and infinities of both signs."""
    rng = np.random.default_rng(seed)
    x = rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 3, shape)
    x[rng.random(shape) < 0.05] = -0.0
    tiny = float(ml_dtypes.finfo(dtype).smallest_subnormal)
    x[rng.random(shape) < 0.05] = 3 * tiny
    if specials and x.size > 8:
        flat = x.reshape(-1)
        flat[rng.choice(flat.size, 3, replace=False)] = (math.nan, math.inf, -math.inf)
    return x.astype(dtype)


@pytest.mark.parametrize("backend", [None, "fuel-reference-backend"])
@pytest.mark.parametrize("name", list(FUNCTIONS))
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_every_axis_gives_the_steps_bits(backend: str | None, name: str, dtype: Any) -> None:
    """On the default plans (the CPU contracts; in pure-NumPy mode, the oracle's where the CPU
    provider has no kernel) and on the oracle's alone (its sums exact, rounded once)."""
    with ft.use_backend(backend) if backend else contextlib.nullcontext():
        for specials in (False, True):
            x = sample(dtype, (3, 5, 300), 1 + specials, specials)
            for axis in (None, 0, 2, -1, (0, 2), (), (0, 1, 2)):
                for keepdims in (False, True):
                    check(name, x, axis, keepdims, correction=1)


@pytest.mark.parametrize("name", list(FUNCTIONS))
@pytest.mark.parametrize("dtype", [*FLOATS, np.int32, np.uint8, np.bool_], ids=str)
def test_zero_d_empty_and_corrections_give_the_steps_bits(name: str, dtype: Any) -> None:
    """0-d inputs; empty reductions (mean, var and std NaN, logsumexp -inf, with no warning);
    corrections of 0, 1, a fraction, n and past n (NaN: the array API's N - correction <= 0);
    integers and bool computed in float64."""
    rng = np.random.default_rng(3)
    x = (rng.standard_normal((4, 7)) * 50).astype(dtype)
    for correction in (0, 1, 2.5, 7, 9):
        check(name, x, 1, False, correction)
    check(name, np.asarray(x[0, 0]), None, False)
    check(name, np.asarray(x[0, 0]), (), True)
    check(name, np.zeros((0, 3), dtype), 0, False)
    check(name, np.zeros((0, 3), dtype), None, True)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_logsumexp_of_infinities_and_nans(dtype: Any) -> None:
    """A row of -inf gives -inf, a +inf anywhere +inf, a NaN anywhere NaN; a huge finite row
    does not overflow (the maximum is shifted out)."""
    top = float(ml_dtypes.finfo(dtype).max)
    x = np.array(
        [
            [-np.inf, -np.inf, -np.inf],
            [1.0, np.inf, -np.inf],
            [np.nan, np.inf, 1.0],
            [top, top, -np.inf],
            [-0.0, -0.0, -0.0],
        ]
    ).astype(dtype)
    got = np.asarray(ft.logsumexp(ft.asarray(x), axis=1)).astype(np.float64)
    assert got[0] == -np.inf and got[1] == np.inf and np.isnan(got[2])
    assert np.isfinite(got[3]) or got[3] == np.inf  # top + log 2 rounds past the half types
    assert math.isclose(got[4], math.log(3), rel_tol=float(ml_dtypes.finfo(dtype).eps))
    check("logsumexp", x, 1, False)


VIEWS = st.sampled_from(["strided", "flipped", "offset", "broadcast", "transposed"])


@settings(max_examples=40, deadline=None)
@given(
    name=st.sampled_from(list(FUNCTIONS)),
    dtype=st.sampled_from(FLOATS),
    kind=VIEWS,
    rows_=st.integers(1, 5),
    cols=st.integers(1, 600),
    axis=st.sampled_from([None, 0, 1, (0, 1)]),
    keepdims=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_every_view_gives_the_steps_bits(
    name: str, dtype: Any, kind: str, rows_: int, cols: int, axis: Any, keepdims: bool, seed: int
) -> None:
    base = sample(dtype, (rows_ * 2, cols + 3), seed)
    view = {
        "strided": base[::2, ::3],
        "flipped": base[::-1, ::-1],
        "offset": base[1:, 3:],
        "broadcast": np.broadcast_to(base[:1], (rows_, cols + 3)),
        "transposed": base.T,
    }[kind]
    check(name, view, axis, keepdims, correction=1)


STEPS = {
    "mean": (OpKind.SUM, OpKind.DIV),
    "var": (OpKind.SUM, OpKind.DIV, OpKind.SUB, OpKind.MUL, OpKind.SUM, OpKind.DIV),
    "std": (OpKind.SUM, OpKind.DIV, OpKind.SUB, OpKind.MUL, OpKind.SUM, OpKind.DIV, OpKind.SQRT),
    "logsumexp": (
        OpKind.MAX, OpKind.CLIP, OpKind.SUB, OpKind.EXP, OpKind.SUM, OpKind.LOG, OpKind.ADD,
    ),
}  # fmt: skip
"""Each composition's steps in the order they run, by op kind."""


@pytest.mark.parametrize("name", list(FUNCTIONS))
@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_the_trace_lists_every_step_as_a_contract_plan(name: str, dtype: Any) -> None:
    """Each step is a plan of its op kind's contract, of the work dtype; a half type adds the
    widening cast first and the one rounding cast last."""
    x = ft.asarray(sample(dtype, (4, 9), 5))
    with ft.trace() as plans:
        FUNCTIONS[name](x, axis=1)
    kinds = tuple(p.op_kind for p in plans)
    steps = STEPS[name]
    if np.dtype(dtype) in HALVES:
        steps = (OpKind.CAST, *steps, OpKind.CAST)
    assert kinds == steps, kinds
    assert all(p.kernel is not None and p.kernel.op_kind == p.op_kind for p in plans)


def test_complex_inputs_take_the_host_and_bad_arguments_are_refused_first() -> None:
    """A complex mean, var or std is NumPy's (a host plan named for the function); a complex
    logsumexp, a negative correction and a bad axis are refused before anything runs."""
    z = ft.asarray(np.array([1 + 2j, 3 - 1j, -2j], np.complex128))
    with ft.trace() as plans:
        assert complex(ft.mean(z)) == np.mean(np.asarray(z))
        assert float(ft.var(z, correction=1)) == np.var(np.asarray(z), ddof=1)
        assert float(ft.std(z)) == np.std(np.asarray(z))
    assert [(p.op, p.kernel) for p in plans] == [("mean", None), ("var", None), ("std", None)]
    x = ft.asarray(np.ones((2, 3), np.float32))
    with ft.trace() as plans:
        with pytest.raises(TypeError, match="real tensors"):
            ft.logsumexp(z)
        with pytest.raises(ValueError, match="non-negative"):
            ft.var(x, correction=-1)
        with pytest.raises(ValueError, match="non-negative"):
            ft.std(x, correction=True)
        with pytest.raises(IndexError):
            ft.mean(x, axis=2)
        with pytest.raises(ValueError, match="twice"):
            ft.logsumexp(x, axis=(1, -1))
    assert plans == []


def _ulp(value: float, dtype: Any) -> Fraction:
    """The spacing of `dtype`'s numbers at |value| (its subnormals' below the normal range)."""
    info = ml_dtypes.finfo(dtype)
    exponent = max(math.frexp(value)[1], int(info.minexp) + 1)
    return Fraction(2) ** (exponent - int(info.nmant) - 1)


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_a_means_error_is_within_its_documented_bound(dtype: Any) -> None:
    """|mean^ - s/n| <= (γ_k·Σ|x| + ½ulp_w(ŝ))/n + ½ulp_w(q̂) + [½ulp_out(mean^) for a half
    type], s and Σ|x| exact, γ_k the sum contract's (docs/reductions.md, "The compositions"):
    on long constant-sign rows, cancelling rows and a wide dynamic range."""
    rng = np.random.default_rng(8)
    cases = [
        rng.random((3, 10_000)),
        np.repeat(rng.standard_normal((3, 1)) * 1e3, 4_001, axis=1)
        * np.where(np.arange(4_001) % 2, 1.0, -1.0)
        + rng.random((3, 4_001)),
        rng.standard_normal((3, 999)) * 10.0 ** rng.integers(-6, 4, (3, 999)),
    ]
    work = work_of(dtype)
    d = declaration(work)
    for values in cases:
        x = values.astype(dtype)
        got = np.asarray(ft.mean(ft.asarray(x), axis=1))
        n = x.shape[1]
        sums, magnitudes = exact_rows(x)
        partial = ref_sum(x.astype(work))
        quotient = ref_mean(x.astype(work))
        for i in range(x.shape[0]):
            gamma = Fraction(0) if isinstance(d, str) else d.gamma(n)
            bound = (gamma * magnitudes[i] + _ulp(float(partial[i]), work) / 2) / n
            bound += _ulp(float(quotient[i]), work) / 2
            if np.dtype(dtype) in HALVES:
                bound += _ulp(float(got[i]), dtype) / 2
            error = abs(Fraction(float(got[i])) - sums[i] / n)
            assert error <= bound, (i, float(error), float(bound))


def test_explain_names_a_composition_and_points_to_the_trace() -> None:
    """explain() plans one operation: a composition is refused by name, with the way to see its
    steps, and the trace shows them (each a planned contract)."""
    x = ft.asarray(np.float32([[1.0, 2.0], [3.0, 5.0]]))
    for fn in (ft.mean, ft.var, ft.std, ft.logsumexp):
        with pytest.raises(TypeError, match=f"{fn.__name__} is a composition of planned steps"):
            ft.explain(fn, x)
    with ft.trace() as plans:
        ft.mean(x, axis=0)
    assert [p.op for p in plans] == [ft.sum.__name__, ft.divide.__name__]
    assert all(p.kernel is not None for p in plans)
