"""Dispatch: which contract each operation plans, the steps in front of it, caching, policies,
promotion and in-place semantics."""

from __future__ import annotations

import threading

import numpy as np
import pytest

import fueltensor as ft

F32 = ft.float32


def t32(shape: tuple[int, ...]) -> ft.FuelTensor:
    return ft.asarray(np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape) + 1)


def kinds(plan: ft.Plan) -> list[str]:
    return [s.kind for s in plan.steps]


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize(
    "op, prefix",
    [
        (ft.add, "add"),
        (ft.subtract, "sub"),
        (ft.multiply, "mul"),
        (ft.divide, "div"),
        (ft.remainder, "mod"),
        (ft.pow, "pow"),
        (ft.maximum, "maximum"),
        (ft.minimum, "minimum"),
    ],
)
def test_same_shape_runs_the_cpu_kernel_of_its_dtype(op: object, prefix: str, dtype: str) -> None:
    x = ft.asarray(np.ones((3, 4)), dtype=dtype)
    plan = ft.explain(op, x, x)  # type: ignore[arg-type]
    code = {"float32": "f32", "float64": "f64", "float16": "f16", "bfloat16": "bf16"}[dtype]
    assert plan.kernel is not None and plan.kernel.name == f"{prefix}_{code}"
    assert kinds(plan) == ["Kernel"]
    assert plan.backend == "portable-cpu"


def test_broadcast_add_runs_the_cpu_kernel_its_row_made_dense_block_by_block() -> None:
    plan = ft.explain(ft.add, t32((1000, 10)), t32((10,)))
    assert plan.kernel is not None and plan.kernel.name == "add_f32"
    assert kinds(plan) == ["BroadcastTo", "Contiguize", "Kernel"]
    assert plan.steps[1].tiled and "block by block" in str(plan.steps[1])
    assert "broadcast_add" in plan.rejected
    assert plan.cost == 3 * 1000 * 10 * 4 + 10 * 4  # the row's 10 elements read once


def test_under_use_backend_reference_a_broadcast_add_runs_the_oracle_unmaterialized() -> None:
    with ft.use_backend("reference"):
        plan = ft.explain(ft.add, t32((1000, 10)), t32((10,)))
    assert plan.kernel is not None and plan.kernel.name == "broadcast_add"
    assert "BroadcastTo" not in kinds(plan) and "Contiguize" not in kinds(plan)
    assert plan.cost == 1000 * 10 * 4 * 2 + 10 * 4


def test_broadcast_maximum_broadcasts_and_contiguizes_for_the_cpu_kernel() -> None:
    plan = ft.explain(ft.maximum, t32((3, 4)), t32((4,)))
    assert plan.kernel is not None and plan.kernel.name == "maximum_f32"
    assert kinds(plan) == ["BroadcastTo", "Contiguize", "Kernel"]
    assert plan.steps[0].operand == 1


def test_transposed_operand_is_contiguized() -> None:
    x = t32((4, 3))
    plan = ft.explain(ft.add, x.T, t32((3, 4)))
    assert plan.kernel is not None and plan.kernel.name == "add_f32"
    assert kinds(plan) == ["Contiguize", "Kernel"]
    assert any("strided" in why for why in plan.steps[0].why)


def test_strided_operand_of_a_broadcast_is_made_dense_at_its_own_shape() -> None:
    a = t32((6, 8))[::2]
    with ft.use_backend("reference"):
        plan = ft.explain(ft.add, a, t32((8,)))
    assert plan.kernel is not None and plan.kernel.name == "broadcast_add"
    assert kinds(plan) == ["Contiguize", "Kernel"]


def test_mixed_f32_f64_casts_then_runs_add_f64() -> None:
    a = t32((2, 3))
    b = ft.asarray(np.ones((2, 3)), dtype=ft.float64)
    plan = ft.explain(ft.add, a, b)
    assert plan.kernel is not None and plan.kernel.name == "add_f64"
    assert kinds(plan) == ["Cast", "Kernel"]
    assert plan.out_dtype is ft.float64
    out = a + b
    assert out.dtype is ft.float64
    np.testing.assert_array_equal(np.asarray(out), np.asarray(a).astype(np.float64) + 1.0)


@pytest.mark.parametrize(
    "a, b, want",
    [
        ("float16", "float32", "float32"),
        ("bfloat16", "float32", "float32"),
        ("bfloat16", "float16", "float32"),
        ("float16", "float64", "float64"),
        ("bfloat16", "float64", "float64"),
        ("float32", "float64", "float64"),
    ],
)
def test_promotion(a: str, b: str, want: str) -> None:
    x = ft.asarray(np.ones(3), dtype=a)
    y = ft.asarray(np.ones(3), dtype=b)
    assert (x + y).dtype.name == want and (y + x).dtype.name == want


@pytest.mark.parametrize("dtype", ["float32", "float16", "bfloat16", "float64"])
def test_python_scalars_are_weak(dtype: str) -> None:
    x = ft.asarray(np.ones(3), dtype=dtype)
    for r in (x + 1, 2.5 * x, x**2, 1 - x, x % 3.0, x / 2):
        assert r.dtype.name == dtype


def test_integers_run_on_the_host_with_the_rejections() -> None:
    x = ft.asarray(np.arange(6, dtype=np.int32))
    plan = ft.explain(ft.add, x, x)
    assert plan.kernel is None and plan.backend == "host"
    assert any("I32" in r for r in plan.rejected["add_f32"])
    np.testing.assert_array_equal(np.asarray(x + x), np.arange(6, dtype=np.int32) * 2)


@pytest.mark.parametrize("backend", ["contracts", "cpu", "reference", "numpy", "torch", "jax"])
def test_what_no_contract_admits_runs_on_the_host_under_every_use_backend(backend: str) -> None:
    """One rule: use_backend chooses among contract providers; it never refuses an operation
    no contract of any provider admits (integers, bools), as it never refuses a host function."""
    pytest.importorskip({"torch": "torch", "jax": "jax"}.get(backend, "numpy"))
    x = ft.asarray(np.arange(6, dtype=np.int32))
    flags = ft.asarray(np.array([True, False]))
    with ft.use_backend(backend):
        np.testing.assert_array_equal(np.asarray(x + 1), np.arange(1, 7, dtype=np.int32))
        assert ft.explain(ft.add, x, x).backend == "host"
        assert np.asarray(flags * flags).tolist() == [True, False]
        assert np.asarray(ft.expm1(ft.asarray([0.0]))).tolist() == [0.0]  # a host function too


def test_what_a_contract_admits_but_no_allowed_one_does_is_refused() -> None:
    x = t32((2, 3))
    with ft.use_backend("reference"), pytest.raises(ft.NoKernelError) as err:
        x**x  # pow: the CPU provider's contracts admit it, the oracle has none
    assert "pow_f32" in str(err.value) and "excluded by use_backend" in str(err.value)
    assert isinstance(err.value, TypeError)


def test_use_backend_reference_restricts_and_raises_for_what_it_lacks() -> None:
    x = t32((2, 3))
    with ft.use_backend("reference"):
        assert ft.explain(ft.add, x, x).kernel.name == "broadcast_add"  # type: ignore[union-attr]
        with pytest.raises(ft.NoKernelError, match="maximum_f32"):
            ft.maximum(x, x)
    with ft.use_backend("fuel-cpu-backend"):
        plan = ft.explain(ft.add, t32((3, 4)), t32((4,)))
        assert plan.kernel.name == "add_f32"  # type: ignore[union-attr]
        assert "BroadcastTo" in kinds(plan)
    with pytest.raises(ValueError, match="no provider"), ft.use_backend("gpu"):
        pass


def test_use_backend_is_per_thread() -> None:
    x = t32((2, 2))
    seen: dict[str, str] = {}

    def worker() -> None:
        seen["thread"] = ft.explain(ft.add, x, x).backend

    with ft.use_backend("reference"):
        th = threading.Thread(target=worker)
        th.start()
        th.join()
        seen["main"] = ft.explain(ft.add, x, x).backend
    assert seen == {"thread": "portable-cpu", "main": "reference-oracle"}


def test_trace_records_plans_in_order() -> None:
    x = t32((2, 2))
    with ft.trace() as outer:
        x + x
        with ft.trace() as inner:
            ft.maximum(x, x)
    assert [p.kernel.name for p in outer] == ["add_f32", "maximum_f32"]  # type: ignore[union-attr]
    assert [p.kernel.name for p in inner] == ["maximum_f32"]  # type: ignore[union-attr]


def test_plans_are_cached_by_operand_signature() -> None:
    x = t32((5, 7))
    assert ft.explain(ft.add, x, x) is ft.explain(ft.add, t32((5, 7)), t32((5, 7)))
    assert ft.explain(ft.add, x, x) is not ft.explain(ft.add, x.T, x.T)


def test_results_are_fresh_dense_and_never_alias() -> None:
    x = t32((3, 4))
    for r in (x + x, x.T * 2, ft.maximum(x, x[0]), x[::-1] - 1):
        assert r.offset == 0 and r.layout.contiguous
        assert not np.shares_memory(np.asarray(r), np.asarray(x))


def test_inplace_writes_through_strides() -> None:
    base = np.arange(12, dtype=np.float32).reshape(3, 4)
    t = ft.asarray(base.copy())
    view = t[:, ::2]
    view += 10
    ref = base.copy()
    ref[:, ::2] += 10
    np.testing.assert_array_equal(np.asarray(t), ref)


def test_inplace_with_overlapping_operand_matches_numpy() -> None:
    base = np.arange(10, dtype=np.float64)
    t = ft.asarray(base.copy())
    target = t[1:]
    target += t[:-1]
    ref = base.copy()
    ref[1:] += ref[:-1].copy()
    np.testing.assert_array_equal(np.asarray(t), ref)


@pytest.mark.parametrize(
    "other, error",
    [
        (lambda: ft.asarray(np.ones(4), dtype=ft.float64), TypeError),
        (lambda: ft.asarray(np.ones((2, 4)), dtype=ft.float32), ValueError),
    ],
)
def test_failing_inplace_leaves_the_target_untouched(other: object, error: type) -> None:
    t = ft.asarray(np.arange(4, dtype=np.float32))
    before = np.asarray(t).tobytes()
    with pytest.raises(error):
        t += other()  # type: ignore[operator]
    assert np.asarray(t).tobytes() == before


def test_incompatible_shapes_raise_value_error() -> None:
    with pytest.raises(ValueError, match="broadcast"):
        t32((2, 3)) + t32((4,))


def test_inputs_are_never_modified() -> None:
    a, b = t32((3, 4)), t32((4,))
    before = (np.asarray(a).tobytes(), np.asarray(b).tobytes())
    for op in (
        ft.add,
        ft.subtract,
        ft.multiply,
        ft.divide,
        ft.remainder,
        ft.pow,
        ft.maximum,
        ft.minimum,
    ):
        op(a, b)
        op(a.T.T, b)
    assert (np.asarray(a).tobytes(), np.asarray(b).tobytes()) == before


def test_policies_for_throwaway_registries_are_not_hoarded() -> None:
    import gc
    import weakref

    from fueltensor.engine import backends

    x = t32((2, 2))
    refs = []
    for _ in range(backends._POLICY_LIMIT + 8):
        reg = ft.Registry.from_paths([ft.registry().providers[0].path])
        refs.append(weakref.ref(reg))
        with ft.use_registry(reg):
            x + x
        del reg
    gc.collect()
    assert sum(r() is not None for r in refs) <= backends._POLICY_LIMIT
