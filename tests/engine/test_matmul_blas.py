"""fuel-blas-backend's matmul of F32 and F64 (contracts/fuel-blas-backend-matmul.md; issue 46):
`ft.matmul` and `@` plan `blas_matmul_<dtype>` by default, and its results are NumPy's matmul
bits (the host BLAS) on every layout, stacks and 1-D operands, the larger sizes BLAS blocks
included; the document declares no order and no invariance, and passes the judge, every
output within the bound of any order (no bits checked: there is no order to simulate)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from _extras import ROOT
from _matmul import product, views

import fueltensor as ft
from fueltensor.kernels import blas
from fueltensor.registry import provider_binary
from fueltensor.tools.judge import judge

FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
SUFFIX = {"float32": "f32", "float64": "f64"}
DOCUMENT = ROOT / "contracts" / "fuel-blas-backend-matmul.md"


@pytest.mark.parametrize("dtype", FLOATS, ids=str)
def test_the_default_plan_is_the_blas_kernel_with_numpys_bits(dtype: np.dtype[Any]) -> None:
    rng = np.random.default_rng(4)
    pairs = views(rng, dtype)
    pairs.append((rng.standard_normal((300, 200)), rng.standard_normal((200, 150))))
    pairs.append((rng.standard_normal((2, 70, 90)), rng.standard_normal((90, 40)).T.T))
    for x, y in pairs:
        x, y = x.astype(dtype, copy=False), y.astype(dtype, copy=False)
        got, ran = product(x, y)
        assert ran == [f"blas_matmul_{SUFFIX[dtype.name]}"]
        want = np.matmul(x, y)
        assert got.shape == want.shape and got.dtype == dtype
        assert got.tobytes() == want.tobytes()
    x = ft.asarray(np.ones((3, 4), dtype))
    assert ft.explain(ft.matmul, x, x.mT).provider == blas.PROVIDER


def test_specials_are_nan_and_infinities() -> None:
    """A NaN, inf * 0 and infinities of both signs give NaN, one sign's infinities that infinity
    (the document's semantics), on every path NumPy takes (gemm, gemv, dot)."""
    for dtype in FLOATS:
        a = np.array([[np.nan, 1.0, 2.0], [np.inf, -np.inf, 1.0], [np.inf, 0.0, 1.0]], dtype)
        b = np.array([[1.0], [2.0], [1.0]], dtype)
        b0 = np.array([[0.0], [1.0], [1.0]], dtype)
        for y in (b, np.hstack([b] * 9)):
            got, _ = product(a, y)
            assert np.isnan(got[:2]).all() and (got[2] == np.inf).all()
        for x in (a[2:], np.vstack([a[2:]] * 9), a[2]):
            got, _ = product(x, b0)
            assert np.isnan(got).all()  # inf * 0: no zero skipped


def test_the_document_passes_the_judge_within_the_bound_of_any_order() -> None:
    reg = ft.Registry.from_paths([DOCUMENT])
    rows = judge(reg, quick=True, progress=False).rows
    assert {row.kernel for row in rows} == {"blas_matmul_f32", "blas_matmul_f64"}
    assert {row.kernel: row.failures for row in rows if row.failures} == {}
    for row in rows:
        assert any("any order (none declared)" in s for s in row.semantics), row.semantics
        assert not any("declared order's bits" in s for s in row.semantics)


def test_the_document_declares_no_order_and_no_invariance() -> None:
    for contract in ft.Registry.from_paths([DOCUMENT]):
        assert contract.provider.name == blas.PROVIDER and not contract.provider.when_named
        assert contract.kernel_source == "host-blas"
        assert set(contract.op_params) == {"accumulator"}
        assert not contract.semantics.invariance


def test_the_thunk_refuses_what_it_cannot_run() -> None:
    kernel = blas.ENTRY_POINTS["fuel_blas_backend::host::blas_matmul_f32"]
    a = np.ones((2, 3), np.float32)
    with pytest.raises(TypeError, match="expected float32"):
        kernel(a.astype(np.float64), a.T.astype(np.float64), out=np.empty((2, 2), np.float64))
    with pytest.raises(ValueError, match="not"):
        kernel(a, a, out=np.empty((2, 2), np.float32))
    with pytest.raises(ValueError, match="out must be dense"):
        kernel(a, a.T, out=np.empty((2, 4), np.float32)[:, ::2])


def test_the_provider_names_the_blas_library_its_bits_come_from() -> None:
    """For certificates: the BLAS library NumPy ships (its file where NumPy's wheel has one), its
    version, and NumPy's version."""
    found = provider_binary(blas.PROVIDER)
    assert found is not None
    path, version, how = found
    assert how == f"numpy {np.__version__} matmul" and version
    assert path is None or "blas" in path.name
