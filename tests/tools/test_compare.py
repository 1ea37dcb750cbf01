"""compare_backends: figures against hand-computed cases, a planted 1-ULP difference found and
located, NaN payloads, policies, threads."""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fueltensor as ft
from fueltensor.fingerprint import machine
from fueltensor.registry import bundled_contracts_dir
from fueltensor.testing import format_value, ulp_distance
from fueltensor.tools.compare import compare_backends
from fueltensor.tools.textwidth import table_width

F32 = np.float32
PLANTED_AT = 7


def _planted_ulp(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> None:
    """Correct addition, except one element one ULP up."""
    np.add(a, b, out=out)
    flat = out.reshape(-1)
    flat[PLANTED_AT] = np.nextafter(flat[PLANTED_AT], F32(np.inf))


def _planted_nan(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> None:
    """Correct addition, except every NaN result carries payload 0x7fc00123."""
    with np.errstate(all="ignore"):
        np.add(a, b, out=out)
    bits = out.reshape(-1).view(np.uint32)
    bits[np.isnan(out.reshape(-1))] = 0x7FC00123


@pytest.fixture
def planted(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> Iterator[Callable[[Callable[..., None]], ft.Registry]]:
    """A registry of the bundled contracts plus `planted_f32` (AddElementwise, F32) linked to
    the given kernel; dispatch uses it inside the test."""

    def make(kernel: Callable[..., None]) -> ft.Registry:
        ft.register_provider("test-provider", {"tests::planted_f32": kernel})
        doc = write(contract_text(kernel="planted_f32"))
        return ft.Registry.from_paths([bundled_contracts_dir(), doc])

    yield make


def operands() -> tuple[ft.FuelTensor, ft.FuelTensor, np.ndarray, np.ndarray]:
    rng = np.random.default_rng(3)
    a = rng.uniform(-10, 10, (3, 5)).astype(F32)
    b = rng.uniform(-10, 10, (3, 5)).astype(F32)
    return ft.asarray(a), ft.asarray(b), a, b


def test_ulp_distance_hand_computed() -> None:
    f = np.array
    tiny = np.finfo(F32).smallest_subnormal
    assert ulp_distance(f([0.0], F32), f([-0.0], F32))[0] == 0
    assert ulp_distance(f([1.0], F32), f([np.nextafter(F32(1), F32(2))], F32))[0] == 1
    assert ulp_distance(f([-tiny], F32), f([tiny], F32))[0] == 2
    assert ulp_distance(f([np.inf], F32), f([np.finfo(F32).max], F32))[0] == 1
    assert ulp_distance(f([-1.0], F32), f([1.0], F32))[0] == 2 * 0x3F800000
    # f64 -inf vs +inf: 2 * 0x7ff0000000000000 does not fit int64 but fits uint64
    assert int(ulp_distance(f([-np.inf]), f([np.inf]))[0]) == 2 * 0x7FF0000000000000
    h = np.array([1.0, 1.0009765625], np.float16).view(np.uint16)
    assert int(h[1]) - int(h[0]) == 1
    assert ulp_distance(np.array([1.0], np.float16), np.array([1.0009765625], np.float16))[0] == 1


def test_a_planted_one_ulp_difference_is_found_and_located(
    planted: Callable[[Callable[..., None]], ft.Registry],
) -> None:
    reg = planted(_planted_ulp)
    x, y, a, b = operands()
    with ft.use_registry(reg), compare_backends() as report:
        z = x + y
    exact = a + b
    assert np.array_equal(np.asarray(z), exact)  # the code gets the default plan's result
    by_kernel = {c.kernels[1]: c for c in report}
    assert set(by_kernel) == {"broadcast_add", "planted_f32"}
    good, bad = by_kernel["broadcast_add"], by_kernel["planted_f32"]
    assert (good.count, good.equal, good.mismatches, good.max_ulp) == (15, 15, 0, 0)
    assert bad.kernels == ("add_f32", "planted_f32")
    assert (bad.count, bad.equal, bad.mismatches, bad.max_ulp) == (15, 14, 1, 1)
    index = np.unravel_index(PLANTED_AT, (3, 5))
    step = float(np.spacing(np.abs(exact[index])))
    assert bad.max_abs == step
    assert bad.max_rel == pytest.approx(step / abs(float(exact[index])))
    assert bad.nan_patterns_agree
    assert bad.worst is not None and bad.worst.index == tuple(int(i) for i in index)
    assert bad.worst.inputs == (
        f"{a[index]:.9g} (0x{a.view(np.uint32)[index]:08x})",
        f"{b[index]:.9g} (0x{b.view(np.uint32)[index]:08x})",
    )
    got = exact.copy()
    got[index] = np.nextafter(got[index], F32(np.inf))
    names = ("lhs", "rhs")  # the default kernel's input names
    inputs = ", ".join(f"{n} {v}" for n, v in zip(names, bad.worst.inputs, strict=True))
    assert str(bad.worst) == (  # testing.lane_message: the message assert_bits_equal prints
        f"at (1, 2): inputs ({inputs}) -> planted_f32 {got[index]:.9g} "
        f"(0x{got.view(np.uint32)[index]:08x}), add_f32 {exact[index]:.9g} "
        f"(0x{exact.view(np.uint32)[index]:08x}): rounding, 1 ULP"
    )
    with pytest.raises(AssertionError, match=r"planted_f32.*1 of 15.*at \(1, 2\)"):
        report.assert_equal()
    report.assert_equal(max_ulp=1)
    assert "planted_f32" in str(report) and "1 of 30 compared elements differ" in str(report)


def test_nan_payload_differences_are_mismatches_with_agreeing_patterns(
    planted: Callable[[Callable[..., None]], ft.Registry],
) -> None:
    reg = planted(_planted_nan)
    a = np.array([[np.inf, 1.0, np.nan], [0.0, -np.inf, 2.0]], F32)
    b = np.array([[-np.inf, 1.0, 1.0], [0.0, np.inf, np.nan]], F32)
    with ft.use_registry(reg), compare_backends("test-provider") as report:
        ft.asarray(a) + ft.asarray(b)
    (c,) = list(report)
    # inf + -inf gives the default NaN; the two NaN operands pass their own payloads through
    assert (c.count, c.mismatches, c.max_ulp, c.nan_patterns_agree) == (6, 4, 0, True)
    with pytest.raises(AssertionError, match="4 of 6"):
        report.assert_equal(max_ulp=0)
    with pytest.raises(AssertionError, match="NaN payload"):  # a ULP bound is for numbers
        report.assert_equal(max_ulp=1)
    report.assert_equal(max_ulp=1, nan_payloads=False)


def _planted_nan_lane(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> None:
    """Correct addition, except a NaN where the sum is a number."""
    np.add(a, b, out=out)
    out.reshape(-1)[PLANTED_AT] = np.nan


def _planted_two_ulp(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> None:
    """Correct addition, except one element two ULPs up."""
    np.add(a, b, out=out)
    flat = out.reshape(-1)
    up = F32(np.inf)
    flat[PLANTED_AT] = np.nextafter(np.nextafter(flat[PLANTED_AT], up), up)


def test_a_nan_against_a_number_is_beyond_every_ulp_bound(
    planted: Callable[[Callable[..., None]], ft.Registry],
) -> None:
    reg = planted(_planted_nan_lane)
    x, y, _, _ = operands()
    with ft.use_registry(reg), compare_backends("test-provider") as report:
        x + y
    (c,) = list(report)
    assert (c.count, c.mismatches, c.nan_patterns_agree) == (15, 1, False)
    assert c.max_ulp == np.inf
    assert "background:#fdd" in report._repr_html_()  # the mismatching operation is shaded
    with pytest.raises(AssertionError, match="1 of 15"):
        report.assert_equal(max_ulp=1e30)


def test_assert_equal_holds_the_ulp_bound_exactly(
    planted: Callable[[Callable[..., None]], ft.Registry],
) -> None:
    reg = planted(_planted_two_ulp)
    x, y, _, _ = operands()
    with ft.use_registry(reg), compare_backends("test-provider") as report:
        x + y
    (c,) = list(report)
    assert (c.mismatches, c.max_ulp, c.nan_patterns_agree) == (1, 2, True)
    with pytest.raises(AssertionError, match="1 of 15"):
        report.assert_equal(max_ulp=1)
    report.assert_equal(max_ulp=2)


def _exact_add(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> None:
    np.add(a, b, out=out)


@pytest.fixture
def two_kernels(contract_text: Callable[..., str], write: Callable[..., Path]) -> ft.Registry:
    """The bundled contracts plus two AddElementwise F32 kernels of one provider (test-provider):
    planted_f32 (one element one ULP up) and exact_f32."""
    ft.register_provider(
        "test-provider", {"tests::planted_f32": _planted_ulp, "tests::exact_f32": _exact_add}
    )
    docs = [write(contract_text(kernel=k), f"{k}.md") for k in ("planted_f32", "exact_f32")]
    return ft.Registry.from_paths([bundled_contracts_dir(), *docs])


def test_every_admissible_kernel_of_a_named_provider_is_compared(two_kernels: ft.Registry) -> None:
    x, y, _, _ = operands()
    with ft.use_registry(two_kernels), compare_backends("test-provider") as report:
        x + y
    assert [c.kernels for c in report] == [("add_f32", "planted_f32"), ("add_f32", "exact_f32")]
    assert [c.mismatches for c in report] == [1, 0]
    for c in report:  # raced together: one timing per kernel, the baseline's shared
        assert set(c.times) == set(c.calls) == set(c.kernels) and min(c.calls.values()) >= 3
    first, second = report
    assert first.times["add_f32"] == second.times["add_f32"]
    with ft.use_registry(two_kernels), compare_backends() as everything:
        x + y
    assert [c.kernels[1] for c in everything] == ["planted_f32", "exact_f32", "broadcast_add"]
    # The default kernel of the provider itself: its second kernel is compared with it.
    with ft.use_registry(two_kernels), ft.use_backend("test-provider"), compare_backends() as own:
        x + y
    assert [c.kernels for c in own] == [("planted_f32", "exact_f32")]


def test_kernels_can_be_named_and_a_wrong_name_is_refused(two_kernels: ft.Registry) -> None:
    x, y, _, _ = operands()
    with ft.use_registry(two_kernels):
        with compare_backends(kernels=["exact_f32"]) as named:
            x + y
        with compare_backends("reference", kernels="exact_f32") as both:
            x + y
            x * y
        with (
            pytest.raises(ValueError, match="did you mean exact_f32"),
            compare_backends(kernels=["exact_f33"]),
        ):
            pass
        with pytest.raises(ValueError, match="describe-only"), compare_backends(kernels="binary"):
            pass
    assert [c.kernels for c in named] == [("add_f32", "exact_f32")]
    assert [c.kernels[-1] for c in both] == ["exact_f32", "broadcast_add", "broadcast_mul"]
    with ft.use_registry(two_kernels), compare_backends(kernels=["exact_f32"]) as none:
        x * y
    (c,) = none
    assert (
        not c.compared
        and c.note == "no other selected kernel admits it (only mul_f32, of fuel-cpu-backend)"
    )


def test_single_provider_operations_are_listed_as_not_compared() -> None:
    x, y, _, _ = operands()
    with compare_backends() as report:
        ft.maximum(x, y)
        ft.asarray([1, 2]) + ft.asarray([3, 4])  # host: no contract admits int64
    first, second = list(report)
    assert not first.compared and first.kernels == ("maximum_f32",)
    assert not second.compared and second.kernels == ("host",)
    text = " ".join(str(report).split())
    # each row's cell, each reason under the table, and the summary's count
    assert text.count("not compared") == 5
    assert (
        "not compared, no other allowed kernel admits it (only maximum_f32, of fuel-cpu-backend): "
        "maximum(float32, float32)"
    ) in text
    assert "not compared, no contract admits it: add(int64, int64)" in text
    assert "2 operations ran: 0 compared, 2 not compared (1 host, 1 with no second kernel)" in text
    with pytest.raises(AssertionError, match="nothing was compared: 2 operations ran"):
        report.assert_equal()


def test_host_operations_are_reported_as_not_compared_and_counted() -> None:
    x, y, _, _ = operands()
    whole = ft.asarray(np.ones(x.shape, np.int64))
    with compare_backends("cpu", "numpy") as report:
        ft.expm1(x)
        x + y
        ft.vecdot(whole, whole)  # a host operation: no contract takes an integer vecdot
    assert [c.op for c in sorted(report, key=lambda c: c.position)] == ["expm1", "add", "vecdot"]
    exp, _, dots = (c for c in report.grouped())
    assert (exp.kernels, exp.compared, exp.count, dots.shape) == (("host",), False, 15, (3,))
    assert (report.operations, report.compared) == (3, 1)
    text = " ".join(str(report).split())
    assert "not compared, a host operation (NumPy): no contract covers it: expm1(float32)" in text
    assert "3 operations ran: 1 compared, 2 not compared (2 host)" in text
    report.assert_equal()  # the one compared operation agrees
    with compare_backends("cpu", "numpy") as only_host:
        ft.expm1(x)
    assert "1 operation ran: 0 compared, 1 not compared (1 host)" in str(only_host)
    with pytest.raises(AssertionError, match="nothing was compared: 1 operation ran"):
        only_host.assert_equal()


def test_operations_not_compared_for_one_reason_share_its_line() -> None:
    x, _, _, _ = operands()
    i = ft.asarray([1, 2])
    m = ft.asarray(np.ones((2, 2), np.int64))
    with compare_backends("cpu", "numpy", timing=False) as report:
        ft.vecdot(m, m)  # a host operation: no contract takes an integer vecdot
        i + i
        ft.matmul(m, m.T)  # an integer matmul stays on the host
        ft.matmul(x, x.T)  # a float one: fuel-blas-backend's beside numpy's own, compared
        ft.vecdot(m, m)  # the same call again: named once
        i * i
    # one line per reason, each call named once, in the order they ran
    assert report.reasons() == [
        "not compared, a host operation (NumPy): no contract covers it: "
        "vecdot(int64, int64), matmul(int64, int64)",
        "not compared, no contract admits it: add(int64, int64), multiply(int64, int64)",
    ]
    (product,) = (c for c in report if c.op == "matmul" and c.compared)
    assert product.kernels == ("blas_matmul_f32", "numpy_matmul_f32"), product.kernels


def test_repeated_calls_are_grouped_and_timed_once_per_group() -> None:
    x, y, _, _ = operands()
    with compare_backends("cpu", "numpy") as report:
        for _ in range(5):
            x + y
            x * y
    rows = list(report)
    assert len(rows) == 10 and report.operations == 10
    grouped = report.grouped()
    assert [(c.op, c.repeats, c.count) for c in grouped] == [("add", 5, 75), ("multiply", 5, 75)]
    assert [sum(1 for c in rows if c.op == op and c.times) for op in ("add", "multiply")] == [1, 1]
    table = str(report).split("\n")
    assert sum(line.startswith(("add ", "multiply ")) for line in table) == 2
    per_call = report.text(per_call=True).split("\n")
    assert sum(line.startswith(("add ", "multiply ")) for line in per_call) == 10
    with compare_backends("cpu", "numpy", timing=False) as untimed:
        x + y
    assert not any(c.times for c in untimed) and "µs per call: the median" not in str(untimed)


def _planted_by_lhs(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> None:
    """Correct addition, except element PLANTED_AT is as many ULPs up as lhs's first element."""
    np.add(a, b, out=out)
    flat = out.reshape(-1)
    for _ in range(int(a.reshape(-1)[0])):
        flat[PLANTED_AT] = np.nextafter(flat[PLANTED_AT], F32(np.inf))


def test_a_grouped_row_keeps_the_worst_call(planted: Callable[..., ft.Registry]) -> None:
    reg = planted(_planted_by_lhs)
    zero, one, three = (ft.asarray(np.full((3, 5), v, F32)) for v in (0, 1, 3))
    with ft.use_registry(reg), compare_backends(kernels=["planted_f32"]) as report:
        zero + zero
        three + zero
        one + zero
    (row,) = report.grouped()
    assert (row.repeats, row.count, row.mismatches, row.max_ulp) == (3, 45, 2, 3.0)
    assert row.worst is not None and row.worst.index == (1, 2)
    assert row.worst.inputs[0].startswith("3 ")  # the lane of the call three ULPs off
    with pytest.raises(AssertionError, match=r"2 of 45 elements differ in value, max 3 ULP"):
        report.assert_equal(max_ulp=2)
    report.assert_equal(max_ulp=3)


def test_nested_in_use_backend_only_the_allowed_providers_count() -> None:
    x, y, _, _ = operands()
    with ft.use_backend("cpu"), compare_backends() as report:
        x + y
    (c,) = list(report)
    assert not c.compared and "(only add_f32, of fuel-cpu-backend)" in c.note
    with compare_backends("cpu") as only_cpu:
        x + y
    assert not next(iter(only_cpu)).compared
    with pytest.raises(ValueError, match="no provider is called"), compare_backends("nonesuch"):
        pass


@settings(max_examples=15, deadline=None)
@given(
    shape=st.lists(st.integers(1, 4), min_size=1, max_size=3).map(tuple),
    dtype=st.sampled_from(["float32", "float64", "float16", "bfloat16"]),
    seed=st.integers(0, 2**16),
    transpose=st.booleans(),
)
def test_cpu_and_reference_agree_on_every_non_nan_element_of_random_patterns(
    shape: tuple[int, ...], dtype: str, seed: int, transpose: bool
) -> None:
    dt = ft.asarray([0.0], dtype=dtype).dtype
    rng = np.random.default_rng(seed)
    u = np.dtype(f"u{dt.itemsize}")
    raw = rng.integers(0, np.iinfo(u).max, (2, *shape), dtype=u, endpoint=True).view(dt.np)
    x, y = ft.asarray(raw[0]), ft.asarray(raw[1])
    if transpose:
        x, y = (
            ft.permute_dims(x, tuple(reversed(range(len(shape))))),
            ft.asarray(np.ascontiguousarray(raw[1].T)),
        )
    with compare_backends() as report:
        for op in (ft.add, ft.subtract, ft.multiply, ft.divide):
            op(x, y)
    assert [c.compared for c in report] == [True] * 4
    # The oracle is independent (in-half-type arithmetic, NumPy's own NaN choice): any mismatch
    # must be a NaN whose payload or sign differs, never a value.
    assert all(c.nan_patterns_agree and c.mismatches == c.nan_payloads for c in report), str(report)


def test_reports_stay_apart_across_threads() -> None:
    x, y, _, _ = operands()
    barrier = threading.Barrier(2)
    seen: dict[str, list[str]] = {}

    def work(name: str, op: Callable[..., ft.FuelTensor]) -> None:
        with compare_backends() as report:
            barrier.wait()
            for _ in range(20):
                op(x, y)
        seen[name] = [c.op for c in report]

    threads = [
        threading.Thread(target=work, args=("a", ft.add)),
        threading.Thread(target=work, args=("b", ft.divide)),
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert seen == {"a": ["add"] * 20, "b": ["divide"] * 20}


def test_html_report_is_an_escaped_table() -> None:
    x, y, _, _ = operands()
    with compare_backends() as report:
        x + y
        ft.maximum(x, y)
    html = report._repr_html_()
    assert html.startswith("<div><table") and "add_f32 vs broadcast_add" in html
    assert "not compared" in html and "<script" not in html
    assert "no other allowed kernel admits it (only maximum_f32, of fuel-cpu-backend)" in html
    assert "calls timed per kernel" in html
    plan_html = ft.explain(ft.add, x, y)._repr_html_()
    assert "-&gt;" in plan_html and "broadcast_add" in plan_html
    tensor_html = x.T._repr_html_()
    assert "strided" in tensor_html and "(1, 5)" in tensor_html
    assert "broadcast_div" in ft.registry()._repr_html_()
    assert f"measured on: {machine()}" in html.replace("&#x27;", "'")


def test_reports_name_the_machine_and_count_nan_payload_mismatches(
    planted: Callable[[Callable[..., None]], ft.Registry],
) -> None:
    rng = np.random.default_rng(1)
    raw = rng.integers(0, 2**32 - 1, (2, 1, 8192), dtype=np.uint32, endpoint=True)
    x, y = (ft.asarray(r.view(F32)) for r in raw)
    with ft.use_registry(planted(_planted_nan)), compare_backends("cpu", "test-provider") as report:
        x + y
    (c,) = list(report)
    nan = ((raw & 0x7F800000) == 0x7F800000) & ((raw & 0x007FFFFF) != 0)
    assert 0 < c.nan_payloads <= int((nan[0] | nan[1]).sum()) and c.mismatches == c.nan_payloads
    summary = (
        f"{c.mismatches} of 8,192 compared elements differ (all only in a NaN's payload or sign)"
    )
    assert summary in " ".join(str(report).split())
    with table_width(None):
        header, _, row = str(report).splitlines()[:3]
    cells = dict(zip(re.split(r"\s{2,}", header), re.split(r"\s{2,}", row), strict=True))
    assert cells["differences"] == f"{c.nan_payloads} NaN payload"  # sign included: one class
    assert c.classes == {"NaN payload": c.nan_payloads}
    assert cells["bit-equal"] == f"{c.equal}/8192"
    assert "background:#fdd" not in report._repr_html_()  # shaded: a value mismatch only
    assert str(report).endswith(f"measured on: {machine()}")
    data = report.to_dict()
    assert data["machine"] == machine().to_dict() and data["mismatches"] == c.mismatches
    assert data["comparisons"][0]["nan_payloads"] == c.nan_payloads
    json.dumps(data)


def test_nan_payloads_false_forgives_only_nan_against_nan(
    planted: Callable[[Callable[..., None]], ft.Registry],
) -> None:
    bits = np.random.default_rng(3).integers(0, 2**32, (1, 4096), dtype=np.uint32)
    a = ft.asarray(bits.view(F32))
    with ft.use_registry(planted(_planted_nan)), compare_backends("cpu", "test-provider") as report:
        a + a
    (c,) = report.comparisons
    assert c.nan_payloads > 0  # a provider whose NaN rule differs: one payload for every NaN
    with pytest.raises(AssertionError) as raised:
        report.assert_equal(max_ulp=0)
    message = str(raised.value)
    assert message.startswith("kernels agree on every value, but some NaNs differ in payload")
    assert "nan_payloads=False" in message and "ULP" not in message
    assert f"{c.nan_payloads} of 4096 elements are NaNs that differ only in payload" in message
    report.assert_equal(max_ulp=0, nan_payloads=False)
    assert c.mismatches == c.nan_payloads


def test_a_reduction_is_compared_with_each_named_providers_kernel() -> None:
    """A sum and a max planned through their contracts are compared with the oracle's kernels
    when a `when_named` provider is named beside it (the re-planning keeps the reduced shape);
    the worst lane of a differing sum names the row it reduced, not one operand value."""
    rng = np.random.default_rng(4)
    scale = 10.0 ** rng.integers(-4, 4, (6, 4000))
    values = (rng.standard_normal((6, 4000)) * scale).astype(np.float32)
    x = ft.asarray(values)
    with compare_backends("cpu", "numpy", "reference", timing=False) as report:
        ft.sum(x, axis=1)
        ft.max(x[:, ::-3], axis=0, keepdims=True)
    rows = sorted(report, key=lambda c: (c.position, c.kernels))
    assert [(c.op, c.compared, c.kernels) for c in rows] == [
        ("sum over axes (1,)", True, ("sum_f32", "numpy_sum_f32")),
        ("sum over axes (1,)", True, ("sum_f32", "ref_sum_f32")),
        ("max over axes (0,)", True, ("max_f32", "numpy_max_f32")),
        ("max over axes (0,)", True, ("max_f32", "ref_max_f32")),
    ]
    assert rows[0].shape == (6,) and rows[2].count == 1334 and rows[3].equal == 1334
    worst = rows[1].worst
    assert worst is not None and re.search(r"inputs \(x 4000 elements from ", worst.message)


def test_a_matmul_that_differs_names_its_worst_outputs_row_and_column() -> None:
    """Where a matmul's kernels differ, the worst output's operands are a's row and b's column
    of it (summarised as a reduction's row is), in its stack: output (1, 2, 0) of a BF16
    product, 1 + 2^-8 + 298 · 2^-24, is a tie in float32 at each of fuel-cpu-backend's steps
    (1 + 2^-8, then rounded to 1 in BF16), above half an ULP exactly (1 + 2^-7)."""
    row = np.array([1.0, 2.0**-8] + [2.0**-24] * 298)
    x = np.zeros((2, 3, 300), ml_dtypes.bfloat16)
    x[1, 2] = row
    y = np.zeros((300, 4), ml_dtypes.bfloat16)
    y[:, 0] = 1.0
    a, b = ft.asarray(x), ft.asarray(y)
    with compare_backends("reference", timing=False) as report:
        a @ b
    (found,) = list(report)
    assert found.kernels == ("matmul_bf16", "ref_matmul_bf16") and found.equal == found.count - 1
    assert found.worst is not None and found.worst.index == (1, 2, 0)
    assert [s.split(" elements")[0] for s in found.worst.inputs] == ["300", "300"]
    firsts = [s.split("first ")[1].split(",")[0] for s in found.worst.inputs]
    assert firsts == [format_value(x[1, 2, 0]), format_value(y[0, 0])]
