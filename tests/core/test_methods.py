"""NumPy's ndarray methods on FuelTensor (issue 22): each call against the same call on a NumPy
array of the same values (NumPy is the reference for these host operations' meaning), bad input
in fueltensor's words, the methods traced as the namespace functions they are, and the pieces
NumPy-aware clients rely on: `__array_priority__`, pickled dtypes, named-tuple results,
`ft.pad` and `ft.einsum`."""

from __future__ import annotations

import inspect
import pickle
from collections.abc import Callable
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from _extras import ROOT
from hypothesis import given
from hypothesis import strategies as st
from numpy.exceptions import AxisError

import fueltensor as ft
from fueltensor.core.dtypes import ALL
from fueltensor.core.hooks import Hooks
from fueltensor.core.methods import NdarrayMethods

RNG = np.random.default_rng(22)
A = RNG.standard_normal((3, 4))
A3 = RNG.standard_normal((2, 3, 4))
INTS = RNG.integers(-5, 9, (3, 4))
B = A > 0

CALLS: dict[str, tuple[np.ndarray, Callable[[Any], Any]]] = {
    "sum": (A, lambda a: a.sum()),
    "sum axis keepdims": (A3, lambda a: a.sum(axis=(0, 2), keepdims=True)),
    "sum dtype": (INTS, lambda a: a.sum(axis=1, dtype=np.float32)),
    "sum positional": (A, lambda a: a.sum(1, np.float64, None, True)),
    "sum bool": (B, lambda a: a.sum(axis=0)),
    "prod": (A, lambda a: a.prod(axis=0)),
    "prod dtype": (INTS, lambda a: a.prod(dtype=np.int32)),
    "mean": (A3, lambda a: a.mean(axis=-1)),
    "mean int": (INTS, lambda a: a.mean()),
    "mean dtype": (A, lambda a: a.mean(axis=0, dtype=np.float32)),
    "var ddof": (A, lambda a: a.var(axis=1, ddof=1)),
    "std": (A3, lambda a: a.std(axis=(1, 2), keepdims=True)),
    "std dtype": (A, lambda a: a.std(0, np.float32, None, 1)),
    "max": (A, lambda a: a.max()),
    "max axis": (INTS, lambda a: a.max(axis=0, keepdims=True)),
    "min": (A3, lambda a: a.min(1)),
    "any": (B, lambda a: a.any()),
    "any axis": (A, lambda a: a.any(axis=1)),
    "all": (B, lambda a: a.all(axis=0, keepdims=True)),
    "argmax": (A, lambda a: a.argmax()),
    "argmax axis": (A3, lambda a: a.argmax(axis=1)),
    "argmin keepdims": (A, lambda a: a.argmin(axis=0, keepdims=True)),
    "cumsum": (A, lambda a: a.cumsum()),
    "cumsum axis": (INTS, lambda a: a.cumsum(axis=1)),
    "cumprod": (A3, lambda a: a.cumprod(axis=-1)),
    "cumprod dtype": (INTS, lambda a: a.cumprod(dtype=np.float64)),
    "reshape dims": (A, lambda a: a.reshape(2, 6)),
    "reshape tuple": (A, lambda a: a.reshape((4, -1))),
    "reshape int": (A, lambda a: a.reshape(-1)),
    "reshape F": (A3, lambda a: a.reshape(4, 6, order="F")),
    "reshape A": (A.T, lambda a: a.reshape(2, 6, order="A")),
    "ravel": (A3, lambda a: a.ravel()),
    "ravel F": (A3, lambda a: a.ravel("F")),
    "flatten": (A.T, lambda a: a.flatten()),
    "flatten F": (A, lambda a: a.flatten(order="F")),
    "squeeze": (A[:, :1, None], lambda a: a.squeeze()),
    "squeeze axis": (A[None], lambda a: a.squeeze(axis=0)),
    "astype": (A, lambda a: a.astype(np.float32)),
    "astype int": (A * 10, lambda a: a.astype("int16")),
    "astype same_kind": (A, lambda a: a.astype(np.float32, casting="same_kind")),
    "transpose": (A3, lambda a: a.transpose()),
    "transpose dims": (A3, lambda a: a.transpose(2, 0, 1)),
    "transpose tuple": (A3, lambda a: a.transpose((1, -1, 0))),
    "swapaxes": (A3, lambda a: a.swapaxes(0, -1)),
    "copy": (A.T, lambda a: a.copy()),
    "clip": (A, lambda a: a.clip(-0.5, 0.5)),
    "clip max": (INTS, lambda a: a.clip(max=3)),
    "round": (A * 10, lambda a: a.round()),
    "round decimals": (A, lambda a: a.round(2)),
    "round negative": (INTS * 37, lambda a: a.round(-1)),
    "dot matrix": (A, lambda a: a.dot(a.T)),
    "dot vector": (A, lambda a: a.dot(np.arange(4.0))),
    "dot scalar": (A, lambda a: a.dot(2.0)),
    "dot 3-D": (A3, lambda a: a.dot(np.arange(20.0).reshape(4, 5))),
    "conj": (A + 1j * A, lambda a: a.conj()),
    "conjugate": (A + 1j * A, lambda a: a.conjugate()),
    "real": (A + 2j * A, lambda a: a.real),
    "imag": (A + 2j * A, lambda a: a.imag),
    "take": (A, lambda a: a.take([0, 5, 11])),
    "take axis": (A, lambda a: a.take(np.array([[0, 3], [1, 1]]), axis=1)),
    "take wrap": (A, lambda a: a.take([-13, 14], mode="wrap")),
    "take clip": (A, lambda a: a.take([-3, 40], axis=1, mode="clip")),
    "repeat": (A, lambda a: a.repeat(2)),
    "repeat axis": (A, lambda a: a.repeat([1, 0, 2], axis=0)),
    "nonzero": (INTS, lambda a: a.nonzero()),
    "diagonal": (A, lambda a: a.diagonal()),
    "diagonal axes": (A3, lambda a: a.diagonal(1, 2, 0)),
    "diagonal negative": (A3, lambda a: a.diagonal(-1, axis1=-1, axis2=1)),
    "trace": (A, lambda a: a.trace()),
    "trace axes": (A3, lambda a: a.trace(axis1=1, axis2=2)),
    "trace ints": (INTS, lambda a: a.trace(-1)),
    "trace dtype": (INTS, lambda a: a.trace(1, dtype=np.float32)),
}


ROUNDED = {"dot 3-D", "std dtype", "sum", "sum axis keepdims", "sum positional", "mean"}
ROUNDED |= {"var ddof", "std"}
"""NumPy's N-D dot loop and the tensordot it means (one BLAS call) sum in different orders;
NumPy's std with dtype=float32 of float64 data subtracts the float32 mean in float64, where the
method computes wholly in the dtype asked for; a float sum adds in its contract's blocked order
(contracts/fuel-cpu-backend-reduce.md), NumPy's pairwise, and mean, var and std compose it with
a divide (`array_api.compositions`): the same values to rounding."""


def _same(got: Any, want: Any, exact: bool = True) -> None:
    """`got` is FuelTensors (a tuple of them where NumPy gives a tuple) of NumPy's values and
    dtype, bit for bit (when not `exact`: to 16 eps of the largest magnitude)."""
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(got) == len(want)
        for g, w in zip(got, want, strict=True):
            _same(g, w, exact)
        return
    want = np.asarray(want)
    assert isinstance(got, ft.FuelTensor), type(got)
    assert got.dtype == want.dtype and got.shape == want.shape
    if exact:
        np.testing.assert_array_equal(np.asarray(got), want, strict=True)
    else:
        scale = 16 * np.finfo(want.dtype).eps * np.abs(want).max()
        np.testing.assert_allclose(np.asarray(got), want, rtol=0, atol=scale)


@pytest.mark.parametrize("name", sorted(CALLS))
def test_method_matches_numpy(name: str) -> None:
    data, call = CALLS[name]
    _same(call(ft.asarray(data)), call(np.asarray(data)), exact=name not in ROUNDED)


def test_methods_take_numpy_parameters_in_numpy_order() -> None:
    """Every method's parameters begin with the ndarray method's positional ones, in order
    (NumPy's keyword-only `where=` is not taken)."""
    try:
        inspect.signature(np.ndarray.sum)
    except ValueError:  # NumPy 2.2 and before: ndarray's methods carry no text signature
        pytest.skip(f"NumPy {np.__version__} gives ndarray's methods no signature to compare")
    for name, fn in vars(NdarrayMethods).items():
        if not callable(fn) or name.startswith("_"):
            continue
        ours = list(inspect.signature(fn).parameters)
        theirs = [
            p.name
            for p in inspect.signature(getattr(np.ndarray, name)).parameters.values()
            if p.kind not in (p.VAR_KEYWORD, p.KEYWORD_ONLY)
        ]
        assert ours[: len(theirs)] == theirs, (name, ours, theirs)


def test_var_and_std_take_the_standards_correction_too() -> None:
    x = ft.asarray(A)
    _same(x.var(correction=1), np.var(A, correction=1))
    _same(x.std(axis=0, correction=2), np.std(A, axis=0, correction=2))


def test_out_writes_into_the_tensor_given() -> None:
    x = ft.asarray(A)
    out = ft.zeros((4,))
    assert x.sum(axis=0, out=out) is out
    np.testing.assert_array_equal(np.asarray(out), A.sum(axis=0))
    bounded = ft.empty((3, 4))
    x.clip(-0.1, 0.1, out=bounded)
    np.testing.assert_array_equal(np.asarray(bounded), A.clip(-0.1, 0.1))
    with pytest.raises(ValueError, match=r"out= has shape \(3,\), the result \(4,\)"):
        x.max(axis=0, out=ft.zeros((3,)))
    ints = ft.zeros((4,), dtype=ft.int64)
    with pytest.raises(TypeError, match="float64 value in an int64 tensor"):
        x.sum(axis=0, out=ints)
    assert not np.asarray(ints).any()
    with pytest.raises(TypeError, match="out= must be a FuelTensor"):
        x.sum(out=np.zeros(()))


@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=4),
    steps=st.lists(st.sampled_from([1, -1, 2, -2]), min_size=4, max_size=4),
    seed=st.integers(0, 2**32 - 1),
    order=st.sampled_from("CFAK"),
)
def test_ravel_reshape_and_transpose_of_any_view_match_numpy(
    shape: list[int], steps: list[int], seed: int, order: str
) -> None:
    rng = np.random.default_rng(seed)
    base = np.arange(int(np.prod([n * abs(s) for n, s in zip(shape, steps, strict=False)])))
    a = base.reshape([n * abs(s) for n, s in zip(shape, steps, strict=False)])
    a = a[tuple(slice(None, None, s) for s in steps[: len(shape)])]
    a = a.transpose(rng.permutation(a.ndim))
    x = ft.asarray(a)
    assert np.shares_memory(np.asarray(x), a)  # x is the view itself, strides and all
    _same(x.ravel(order), a.ravel(order))  # type: ignore[arg-type]
    _same(x.flatten(order), a.flatten(order))  # type: ignore[arg-type]
    _same(x.transpose(), a.transpose())
    if order != "K":
        dims = (a.size // a.shape[0], a.shape[0])
        _same(x.reshape(dims, order=order), a.reshape(dims, order=order))  # type: ignore[call-overload]


BAD: dict[str, tuple[Callable[[Any], Any], type[Exception], str]] = {
    "sum axis": (lambda x: x.sum(axis=2), AxisError, "axis 2 is out of bounds"),
    "argmax axis": (lambda x: x.argmax(axis=-3), AxisError, "axis -3 is out of bounds"),
    "cumsum axis": (lambda x: x.cumsum(axis=5), AxisError, "axis 5 is out of bounds"),
    "squeeze axis": (lambda x: x.squeeze(axis=3), AxisError, "axis 3 is out of bounds"),
    "squeeze extent": (lambda x: x.squeeze(axis=0), ValueError, "extent 1"),
    "swapaxes": (lambda x: x.swapaxes(0, 2), AxisError, "axis 2 is out of bounds"),
    "transpose": (lambda x: x.transpose(0, 0), ValueError, "not a permutation"),
    "reshape size": (lambda x: x.reshape(5, 2), ValueError, r"12 elements .* of 10 elements"),
    "reshape K": (lambda x: x.reshape(12, order="K"), ValueError, "order='K' is not permitted"),
    "reshape none": (lambda x: x.reshape(), TypeError, "needs a shape"),
    "ravel order": (lambda x: x.ravel("X"), ValueError, "order must be"),
    "astype unknown": (lambda x: x.astype("float8"), TypeError, "use one of bool, int8"),
    "astype casting": (lambda x: x.astype(np.int32, casting="safe"), TypeError, "casting='safe'"),
    "astype complex": (
        lambda x: (x + 1j).astype(np.float64),
        TypeError,
        "drop the imaginary part",
    ),
    "var ddof and correction": (lambda x: x.var(ddof=1, correction=1), ValueError, "not both"),
    "take bounds": (lambda x: x.take([12]), IndexError, "out of bounds"),
    "take mode": (lambda x: x.take([1], mode="nearest"), ValueError, "mode must be"),
    "dot shapes": (lambda x: x.dot(x), ValueError, "do not chain"),
    "diagonal axes": (lambda x: x.diagonal(axis1=1, axis2=-1), ValueError, "both axis 1"),
    "trace axis": (lambda x: x.trace(axis2=2), AxisError, "axis 2 is out of bounds"),
}


@pytest.mark.parametrize("name", sorted(BAD))
def test_bad_input_raises_what_the_namespace_raises(name: str) -> None:
    call, kind, words = BAD[name]
    x = ft.asarray(A)
    with pytest.raises(kind, match=words):
        call(x)
    np.testing.assert_array_equal(np.asarray(x), A)


def test_methods_are_traced_as_the_namespace_functions() -> None:
    x = ft.asarray(A, dtype=ft.float32)
    with ft.trace() as t:
        x.sum(axis=0)
        x.astype(ft.float64)
        x.dot(x.T)
        (x.reshape(4, 3) + x.reshape(4, 3)).max()
    assert [p.op for p in t] == ["sum", "astype", "matmul", "add", "max"]
    # the float sum and max plan their contracts (engine.reduce), as astype, matmul and add do
    assert [p.kernel is not None for p in t] == [True, True, True, True, True]
    assert t[1].kernel == ft.explain(ft.astype, x, ft.float64).kernel  # a cast contract
    assert t[2].kernel == ft.explain(ft.matmul, x, x.T).kernel  # the host BLAS's contract
    assert t[3].kernel == ft.explain(ft.add, x, x).kernel


def test_methods_leave_the_standard_attributes_alone() -> None:
    x = ft.asarray(A3)
    with pytest.raises(ValueError, match=r"\.T needs at most 2 dimensions"):
        x.T  # noqa: B018
    assert x.transpose().shape == (4, 3, 2)
    assert x.mT.shape == (2, 4, 3) and x.device == "cpu" and x.shape == (2, 3, 4)
    for name in ("T", "mT", "device", "shape", "dtype", "ndim", "size"):
        assert isinstance(inspect.getattr_static(ft.FuelTensor, name), property), name
    assert not hasattr(x, "__dict__")


def test_an_uninstalled_hook_says_so() -> None:
    with pytest.raises(RuntimeError, match="'namespace' hook is not installed"):
        Hooks().namespace  # noqa: B018


def test_array_priority_is_above_numpys() -> None:
    x = ft.asarray(A)
    assert x.__array_priority__ > np.zeros(1).__array_priority__
    assert max([np.zeros(1), x], key=lambda v: v.__array_priority__) is x


@pytest.mark.parametrize("dtype", ALL, ids=lambda d: d.name)
def test_every_dtype_pickles_to_itself(dtype: Any) -> None:
    for protocol in range(2, pickle.HIGHEST_PROTOCOL + 1):
        back = pickle.loads(pickle.dumps(dtype, protocol=protocol))
        assert back is dtype and back == dtype
    t = pickle.loads(pickle.dumps(ft.zeros((2,), dtype=dtype)))
    assert t.dtype is dtype


NAMED = {
    "qr": lambda a: np.linalg.qr(a),
    "svd": lambda a: np.linalg.svd(a, full_matrices=False),
    "eigh": lambda a: np.linalg.eigh(a.T @ a),
    "slogdet": lambda a: np.linalg.slogdet(a.T @ a),
}


@pytest.mark.parametrize("name", sorted(NAMED))
def test_named_tuple_results_keep_their_type_and_hold_tensors(name: str) -> None:
    got, want = NAMED[name](ft.asarray(A)), NAMED[name](A)
    assert type(got) is type(want) and got._fields == want._fields
    for g, w in zip(got, want, strict=True):
        assert isinstance(g, ft.FuelTensor)
        np.testing.assert_array_equal(np.asarray(g), w)


PADS: dict[str, Callable[[Any, Any], Any]] = {
    "int": lambda xp, a: xp.pad(a, 2),
    "per axis": lambda xp, a: xp.pad(a, ((1, 0), (0, 3)), constant_values=7.5),
    "edge": lambda xp, a: xp.pad(a, 1, mode="edge"),
    "reflect": lambda xp, a: xp.pad(a, (2, 1), mode="reflect"),
    "nan fill": lambda xp, a: xp.pad(a, ((0, 0), (2, 0)), mode="constant", constant_values=np.nan),
}


@pytest.mark.parametrize("name", sorted(PADS))
def test_pad_matches_numpy(name: str) -> None:
    with ft.trace() as t:
        got = PADS[name](ft, ft.asarray(A))
    _same(got, PADS[name](np, A))
    assert [p.op for p in t] == ["pad"] and t[0].kernel is None


def test_pad_keeps_a_half_dtype() -> None:
    h = A.astype(ml_dtypes.bfloat16)
    got = ft.pad(ft.asarray(h), 1, constant_values=2.0)
    assert got.dtype is ft.bfloat16
    np.testing.assert_array_equal(np.asarray(got), np.pad(h, 1, constant_values=2.0))


EINSUMS = {
    "matmul": ("ij,kj->ik", (A, A)),
    "trace": ("ii", (A[:, :3],)),
    "outer": ("i,j->ij", (A[0], A[1])),
    "batched": ("bij,bjk->bik", (A3, A3.transpose(0, 2, 1))),
    "three": ("ij,jk,kl->il", (A, A.T, A)),
}


@pytest.mark.parametrize("name", sorted(EINSUMS))
def test_einsum_matches_numpy(name: str) -> None:
    subscripts, operands = EINSUMS[name]
    got = ft.einsum(subscripts, *(ft.asarray(o) for o in operands))
    _same(got, np.einsum(subscripts, *operands))


def test_einsum_promotes_and_sums_halves_in_float32() -> None:
    h = A.astype(np.float16)
    got = ft.einsum("ij,kj->ik", ft.asarray(h), ft.asarray(h))
    want = np.einsum("ij,kj->ik", h.astype(np.float32), h.astype(np.float32)).astype(np.float16)
    _same(got, want)
    mixed = ft.einsum("ij,ij->i", ft.asarray(INTS), ft.asarray(A, dtype=ft.float32))
    assert mixed.dtype is ft.float32  # int meeting float32 takes the float (fueltensor's rule)
    wide = ft.einsum("ij->j", ft.asarray(INTS), dtype=ft.float64)
    _same(wide, INTS.astype(np.float64).sum(axis=0))
    with pytest.raises(ValueError, match="at least one operand"):
        ft.einsum("ij")


@pytest.mark.parametrize(
    ("window", "axis"), [((2, 2, 2), None), ((1, 3, 2), None), (2, 1), ((2, 2), (1, 1)), (3, -1)]
)
def test_sliding_window_view_is_numpys_as_a_read_only_view(window: Any, axis: Any) -> None:
    view = A3[:, ::-1, 1:]
    x = ft.asarray(view)
    got = ft.lib.stride_tricks.sliding_window_view(x, window, axis=axis)
    want = np.lib.stride_tricks.sliding_window_view(view, window, axis=axis)
    _same(got, want)
    assert np.shares_memory(np.asarray(got), view)
    with pytest.raises(ValueError, match="read-only"):
        got[(0,) * got.ndim] = 1.0


def test_sliding_window_view_refuses_a_window_that_does_not_fit() -> None:
    with pytest.raises(ValueError, match="a window of 5 does not fit axis 0 of extent 3"):
        ft.lib.stride_tricks.sliding_window_view(ft.asarray(A), 5, axis=0)
    with pytest.raises(ValueError, match="2 window extents for 1 axes"):
        ft.lib.stride_tricks.sliding_window_view(ft.asarray(A), (2, 2), axis=1)


def test_cumsum_and_cumprod_functions_are_numpys() -> None:
    _same(ft.cumsum(ft.asarray(A3)), np.cumsum(A3))
    _same(ft.cumprod(ft.asarray(INTS), axis=0), np.cumprod(INTS, axis=0))
    _same(ft.cumsum(ft.asarray(INTS), 1, dtype=np.float32), np.cumsum(INTS, 1, dtype=np.float32))


def test_numpy_einsum_and_pad_on_tensors_are_fueltensors_own() -> None:
    h = ft.asarray(A.astype(np.float16))
    with ft.trace() as t:
        product = np.einsum("ij,kj->ik", h, h)
        padded = np.pad(ft.asarray(A), 1, constant_values=3.0)
    assert [p.op for p in t] == ["einsum", "pad"]
    _same(product, ft.einsum("ij,kj->ik", h, h))
    _same(padded, np.pad(A, 1, constant_values=3.0))


def test_order_is_checked_where_it_only_chooses_a_layout() -> None:
    x = ft.asarray(A)
    for call in (lambda: x.copy(order="Z"), lambda: x.astype(np.float32, order="Z")):
        with pytest.raises(ValueError, match="order must be 'C', 'F', 'A' or 'K'"):
            call()
    _same(x.copy(order="F"), A.copy(order="F"))


REDUCTIONS = ("sum", "prod", "mean", "var", "std", "max", "min", "any", "all")


@given(
    name=st.sampled_from(REDUCTIONS),
    data=st.data(),
    keepdims=st.booleans(),
    transposed=st.booleans(),
)
def test_reductions_over_any_axes_of_a_view_match_numpy(
    name: str, data: st.DataObject, keepdims: bool, transposed: bool
) -> None:
    a = A3.transpose(2, 0, 1) if transposed else A3[:, ::-1]
    picked = data.draw(st.lists(st.integers(-a.ndim, a.ndim - 1), unique_by=lambda i: i % a.ndim))
    axis = None if not picked else tuple(picked)
    got = getattr(ft.asarray(a), name)(axis=axis, keepdims=keepdims)
    # a sum or product joins in its contract's order, not NumPy's pairwise or in-order one
    # (`ROUNDED`), as do the compositions over the sum
    exact = name not in ("sum", "prod", "mean", "var", "std")
    _same(got, getattr(a, name)(axis=axis, keepdims=keepdims), exact=exact)


def test_the_deviations_page_lists_every_method() -> None:
    page = (ROOT / "docs" / "deviations.md").read_text()
    row = next(line for line in page.splitlines() if line.startswith("| NumPy's ndarray methods"))
    public = [n for n in vars(NdarrayMethods) if not n.startswith("_")]
    missing = [n for n in public if f"`{n}`" not in row]
    assert not missing, missing


def test_nbytes_counts_the_visible_elements() -> None:
    view = A3[:, ::2, 1:].astype(np.float32)[..., ::-1]
    assert ft.asarray(view).nbytes == view.nbytes == 2 * 2 * 3 * 4
    assert ft.asarray(A.astype(ml_dtypes.bfloat16)).nbytes == A.size * 2


EXTENSIONS: dict[str, tuple[Callable[[Any, Any], Any], Any]] = {
    "transpose": (lambda xp, a: xp.transpose(a), A3),
    "transpose axes": (lambda xp, a: xp.transpose(a, (1, 2, 0)), A3),
    "gradient": (lambda xp, a: xp.gradient(a), A3),
    "gradient axis": (lambda xp, a: xp.gradient(a, 0.5, axis=1, edge_order=2), A),
    "gradient coordinates": (lambda xp, a: xp.gradient(a, np.array([0.0, 1.0, 3.0]), axis=0), A),
    "gradient ints": (lambda xp, a: xp.gradient(a), INTS),
    "quantile": (lambda xp, a: xp.quantile(a, 0.3), A3),
    "quantile axis": (lambda xp, a: xp.quantile(a, [0.1, 0.9], axis=1, keepdims=True), A3),
    "quantile method": (lambda xp, a: xp.quantile(a, 0.5, axis=0, method="nearest"), INTS),
}


@pytest.mark.parametrize("name", sorted(EXTENSIONS))
def test_numpy_compatible_extensions_match_numpy(name: str) -> None:
    call, data = EXTENSIONS[name]
    got, want = call(ft, ft.asarray(data)), call(np, data)
    _same(tuple(got) if isinstance(want, tuple) else got, want)


def test_gradient_and_quantile_of_a_half_type_compute_in_float32() -> None:
    h = A.astype(ml_dtypes.bfloat16)
    wide = h.astype(np.float32)
    _same(ft.quantile(ft.asarray(h), 0.25, axis=1), np.quantile(wide, 0.25, axis=1).astype(h.dtype))
    grads = ft.gradient(ft.asarray(h))
    assert isinstance(grads, tuple)
    _same(grads, tuple(g.astype(h.dtype) for g in np.gradient(wide)))
