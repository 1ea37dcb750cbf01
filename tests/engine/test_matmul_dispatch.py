"""ft.matmul through its contracts (`engine.contract`, docs/matmul.md): the oracle is never the
default (F32 and F64 run on fuel-blas-backend's host BLAS, tests/engine/test_matmul_blas.py;
BF16 and F16 on fuel-cpu-backend's matmul, tests/engine/test_matmul_cpu.py); under
use_backend("reference") it
plans ref_matmul_<dtype>, bit for bit the exact product rounded once (against Fractions,
tests/kernels/test_exact_matmul.py's reference), for 1-D operands, broadcast stacks, transposed,
strided and flipped views, promoted dtypes; K = 0 and empty results call no kernel; integers
stay on the host; errors come before anything runs."""

from __future__ import annotations

from typing import Any

import ml_dtypes
import numpy as np
import pytest
from _extras import ROOT
from _matmul import over_stacks, reference, same, views

import fueltensor as ft

FLOATS = (np.float32, np.float64, ml_dtypes.bfloat16, np.float16)


def planned_kernel(fn: Any, *args: Any) -> str:
    """The kernel ft.explain names for fn(*args), 'host' where the host runs it."""
    plan = ft.explain(fn, *args)
    return plan.kernel.name if plan.kernel is not None else "host"


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_the_oracle_is_not_the_default_and_runs_where_named(dtype: Any) -> None:
    rng = np.random.default_rng(0)
    x, y = (rng.standard_normal(s).astype(dtype) for s in ((3, 5), (5, 4)))
    a, b = ft.asarray(x), ft.asarray(y)
    suffix = {"float32": "f32", "float64": "f64", "bfloat16": "bf16", "float16": "f16"}
    own = {"bfloat16": "matmul_bf16", "float16": "matmul_f16"}  # fuel-cpu-backend's
    own |= {"float32": "blas_matmul_f32", "float64": "blas_matmul_f64"}  # fuel-blas-backend's
    default = own[np.dtype(dtype).name]
    assert planned_kernel(ft.matmul, a, b) == default
    with ft.trace() as plans:
        host = ft.matmul(a, b)
    assert [p.kernel.name if p.kernel else "host" for p in plans] == [default]
    with ft.use_backend("reference"):
        assert planned_kernel(ft.matmul, a, b) == f"ref_matmul_{suffix[np.dtype(dtype).name]}"
        with ft.trace() as plans:
            got = a @ b
        assert [p.kernel.name for p in plans if p.kernel] == [planned_kernel(ft.matmul, a, b)]
    same(np.asarray(got), reference(x, y))
    assert host.dtype == got.dtype and host.shape == got.shape


@pytest.mark.parametrize("dtype", FLOATS, ids=lambda d: np.dtype(d).name)
def test_views_and_vectors_are_the_exact_product(dtype: Any) -> None:
    rng = np.random.default_rng(1)
    for x, y in views(rng, dtype):
        with ft.use_backend("reference"):
            got = np.asarray(ft.matmul(ft.asarray(x), ft.asarray(y)))
        want = over_stacks(reference, x, y)
        assert got.shape == want.shape and got.dtype == x.dtype
        same(got, want)


def test_promotion_first_and_integers_on_the_host() -> None:
    x = ft.asarray(np.arange(6, dtype=np.float16).reshape(2, 3))
    y = ft.asarray(np.ones((3, 2), np.float32))
    with ft.use_backend("reference"):
        assert planned_kernel(ft.matmul, x, y) == "ref_matmul_f32"
        assert ft.matmul(x, y).dtype == ft.float32
        i = ft.asarray(np.full((2, 3), 2**62, np.int64))
        assert planned_kernel(ft.matmul, i, i.mT) == "host"
        np.testing.assert_array_equal(np.asarray(i @ i.mT), np.asarray(i) @ np.asarray(i).T)


def test_no_products_and_empty_results_call_no_kernel() -> None:
    with ft.use_backend("reference"), ft.trace() as plans:
        zeros = ft.matmul(
            ft.asarray(np.ones((2, 0), np.float32)), ft.asarray(np.ones((0, 3), np.float32))
        )
        empty = ft.matmul(ft.asarray(np.ones((0, 4))), ft.asarray(np.ones((4, 3))))
    assert all(p.kernel is None for p in plans)
    assert np.asarray(zeros).tolist() == [[0.0] * 3] * 2
    assert not np.signbit(np.asarray(zeros)).any() and empty.shape == (0, 3)


def test_shape_errors_are_todays_and_come_first() -> None:
    a = ft.asarray(np.ones((3, 4), np.float32))
    with ft.use_backend("reference"), ft.trace() as plans:
        with pytest.raises(ValueError, match="do not chain"):
            ft.matmul(a, a)
        with pytest.raises(ValueError, match="stacked dimensions do not broadcast"):
            ft.matmul(ft.asarray(np.ones((2, 3, 4))), ft.asarray(np.ones((3, 4, 5))))
        with pytest.raises(ValueError, match="at least 1 dimension"):
            ft.matmul(a, ft.asarray(np.float32(1)))
    assert plans == []


def test_a_restriction_to_a_provider_without_matmul_keeps_the_host() -> None:
    """Where only the oracle takes F32 matmul (a registry without fuel-blas-backend's document),
    use_backend("cpu") runs it on the host, as before the oracle's contracts came; "contracts"
    (no host) reaches the oracle."""
    contracts = ROOT / "contracts"
    names = ("fuel-cpu-backend-matmul.md", "fuel-reference-backend-matmul.md")
    reg = ft.Registry.from_paths([contracts / name for name in names])
    a = ft.asarray(np.ones((2, 2), np.float32))
    with ft.use_registry(reg):
        with ft.use_backend("cpu"):
            assert planned_kernel(ft.matmul, a, a) == "host"
        with ft.use_backend("contracts"):
            assert planned_kernel(ft.matmul, a, a) == "ref_matmul_f32"


def test_a_restriction_that_leaves_out_the_blas_refuses_float_matmul() -> None:
    """In the bundled registry a production contract takes F32 matmul (fuel-blas-backend's), so
    use_backend("cpu") refuses it, naming it, as any operation a left-out provider serves;
    "blas" and "contracts" plan it, "reference" the oracle."""
    a = ft.asarray(np.ones((2, 2), np.float32))
    with ft.use_backend("cpu"), pytest.raises(ft.NoKernelError) as refused:
        a @ a
    assert "blas_matmul_f32: provider fuel-blas-backend is excluded" in str(refused.value)
    for name in ("blas", "host-blas", "contracts"):
        with ft.use_backend(name):
            assert planned_kernel(ft.matmul, a, a) == "blas_matmul_f32"
    with ft.use_backend("reference"):
        assert planned_kernel(ft.matmul, a, a) == "ref_matmul_f32"


def test_the_command_line_explains_matmul(capsys: pytest.CaptureFixture[str]) -> None:
    """One --shapes serves a matmul as a @ (its reverse's shape): 3,4 @ 4,3."""
    from fueltensor.cli import main

    assert main(["explain", "matmul"]) == 0
    out = capsys.readouterr().out
    assert "float32[3, 4], float32[4, 3]) -> float32[3, 3]  via fuel-blas-backend" in out
    assert main(["explain", "MatmulContract", "--backend", "reference", "--dtypes", "float16"]) == 0
    assert "ref_matmul_f16(a, b) -> float16[3, 3]" in capsys.readouterr().out


def test_numpys_matmul_of_tensors_is_the_host_product() -> None:
    """np.matmul is a generalized ufunc, not an elementwise one: on tensors it runs NumPy's
    product on the host (the elementwise ufuncs dispatch their contracts)."""
    x, y = np.arange(6.0).reshape(2, 3), np.arange(12.0).reshape(3, 4)
    got = np.matmul(ft.asarray(x), ft.asarray(y))
    assert isinstance(got, ft.FuelTensor)
    np.testing.assert_array_equal(np.asarray(got), x @ y)
