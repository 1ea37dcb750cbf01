"""The comparisons (`<`, `<=`, `==`, `!=`, `>`, `>=`) as contract operations: every kernel (the
CPU ones of each implementation and instruction set, the oracle's) against a reference computed
from the operands' bit fields alone (integers in value order; a NaN unordered), in every layout
a tensor takes; their plans; the fast path against the Python path; and the judge, which
accepts the bundled contracts and fails kernels that order a NaN, tell -0 from +0 or flush a
subnormal, naming the input."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import _impls
import ml_dtypes
import numpy as np
import pytest
from _fastpath import outcome
from hypothesis import given, settings
from hypothesis import strategies as st

import fueltensor as ft
from fueltensor.kernels import reference as oracle
from fueltensor.ops import COMPARISON_OPS, ContractOp
from fueltensor.registry import bundled_contracts_dir
from fueltensor.testing import bits, float_format, special_values
from fueltensor.tools.judge import judge

FORMATS = {"f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16, "f16": np.float16}
ROWS = {row.name: row for row in COMPARISON_OPS}


def keys(x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Each element's bit pattern as an integer in value order (-0 and +0 both 0), and whether
    it is a NaN: read from the format's fields, no float comparison involved."""
    f = float_format(x.dtype)
    u = bits(x).astype(np.uint64)
    sign = np.uint64(f.sign_bit)
    magnitude = (u & (sign - np.uint64(1))).astype(np.int64)
    nan = magnitude > ((1 << (f.width - 1)) - (1 << f.mantissa))  # above infinity's pattern
    return np.where((u & sign) != 0, -magnitude, magnitude), nan


def expected(row: ContractOp, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """The relation of the exact values: on the ordered integers, and where either side is a
    NaN, what IEEE 754 (Python's float comparison) says of a NaN: false, but true for !=."""
    assert row.relation is not None
    (ka, na), (kb, nb) = keys(a), keys(b)
    unordered = row.relation(math.nan, 0.0)
    return np.where(na | nb, unordered, row.relation(ka, kb))


def operands(fmt: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of the format's special values, then random bit patterns; for a 16-bit format
    every pattern on the left against eight rotations of them on the right."""
    dtype = np.dtype(FORMATS[fmt])
    f, rng = float_format(dtype), np.random.default_rng(seed)
    specials = special_values(dtype).array
    a, b = (x.reshape(-1) for x in np.meshgrid(specials, specials))
    if dtype.itemsize == 2:
        every = np.arange(1 << 16, dtype=np.uint16).view(dtype)
        rolled = [np.roll(every, 1 + 8191 * k) for k in range(8)]
        a = np.concatenate([a, *([every] * 8)])
        b = np.concatenate([b, *rolled])
    else:
        patterns = rng.integers(0, np.iinfo(f.uint).max, (2, 1 << 16), dtype=f.uint, endpoint=True)
        a = np.concatenate([a, patterns[0].view(dtype), patterns[1].view(dtype)])
        b = np.concatenate([b, patterns[1].view(dtype), patterns[0].view(dtype)])
    return a, b


def first_wrong(got: np.ndarray, want: np.ndarray, a: np.ndarray, b: np.ndarray) -> str:
    """The first lane where `got` is not `want`, its operands' bits."""
    i = int(np.flatnonzero(got != want)[0])
    return f"{int(bits(a)[i]):#x} vs {int(bits(b)[i]):#x}: got {got[i]}, want {want[i]}"


@pytest.mark.parametrize("impl", _impls.IMPLS)
@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", ROWS)
def test_every_cpu_kernel_is_the_relation_of_the_bit_fields(impl: str, fmt: str, name: str) -> None:
    row, (a, b) = ROWS[name], operands(fmt)
    out = np.empty(a.size, bool)
    with _impls.using(impl):
        _impls.thunk(impl, row.kernel_op, fmt)(a, b, out=out)
    want = expected(row, a, b)
    assert np.array_equal(out, want), first_wrong(out, want, a, b)


@pytest.mark.parametrize("fmt", FORMATS)
@pytest.mark.parametrize("name", ROWS)
def test_every_oracle_kernel_is_the_relation_of_the_bit_fields(fmt: str, name: str) -> None:
    row, (a, b) = ROWS[name], operands(fmt, 1)
    out = np.empty(a.size, bool)
    oracle.ENTRY_POINTS[f"fuel_reference_backend::ops::broadcast_{row.kernel_op}"](a, b, out=out)
    want = expected(row, a, b)
    assert np.array_equal(out, want), first_wrong(out, want, a, b)


LAYOUTS = ("dense", "strided", "offset", "flipped", "transposed")


def laid_out(patterns: np.ndarray, kind: str) -> tuple[ft.FuelTensor, np.ndarray]:
    """A FuelTensor holding the 2-D `patterns` (a float dtype's) in one layout: dense, every
    other column of a wider tensor, past an offset, flipped, or the transpose of a transposed
    copy; and the array it holds."""
    rows, cols = patterns.shape
    if kind == "strided":
        wide = np.zeros((rows, 2 * cols), patterns.dtype)
        wide[:, ::2] = patterns
        made = ft.asarray(wide)[:, ::2]
    elif kind == "offset":
        made = ft.asarray(np.concatenate([patterns[:1], patterns]))[1:]
    elif kind == "flipped":
        made = ft.flip(ft.asarray(patterns[::-1].copy()), axis=0)
    elif kind == "transposed":
        made = ft.asarray(patterns.T.copy()).T
    else:
        made = ft.asarray(patterns)
    assert np.asarray(made).tobytes() == np.ascontiguousarray(patterns).tobytes()
    return made, np.asarray(made)


@settings(max_examples=120, deadline=None)
@given(
    name=st.sampled_from(sorted(ROWS)),
    fmt=st.sampled_from(sorted(FORMATS)),
    kinds=st.tuples(st.sampled_from(LAYOUTS), st.sampled_from(LAYOUTS)),
    shape=st.tuples(st.integers(0, 5), st.integers(1, 6)),
    other=st.sampled_from(["tensor", "row", "column", "0-d", 0.0, -0.0, 1.5, math.nan, -math.inf]),
    seed=st.integers(0, 2**32 - 1),
)
def test_any_layout_and_broadcast_is_the_relation(
    name: str, fmt: str, kinds: tuple[str, str], shape: tuple[int, int], other: Any, seed: int
) -> None:
    """Strided, offset, flipped and transposed views, empty ones, broadcasts (a row, a column,
    a 0-d tensor against a matrix) and Python scalars, through `ft.<name>`: a bool tensor, the
    relation elementwise."""
    dtype, row = np.dtype(FORMATS[fmt]), ROWS[name]
    f, rng = float_format(dtype), np.random.default_rng(seed)
    made = rng.integers(0, np.iinfo(f.uint).max, (2, *shape), dtype=f.uint, endpoint=True)
    specials = bits(special_values(dtype).array)
    made.reshape(-1)[: specials.size] = specials[: made.size]
    x, a = laid_out(made[0].view(dtype), kinds[0])
    y, b = laid_out(made[1].view(dtype), kinds[1])
    if other == "row":
        y, b = y[:1], b[:1]
    elif other == "column":
        y, b = y[:, :1], b[:, :1]
    elif other == "0-d":
        y, b = ft.asarray(b[0, 0]) if b.size else ft.asarray(dtype.type(0)), np.asarray(b.flat[:1])
        b = b.reshape(()) if b.size else np.zeros((), dtype)
    elif not isinstance(other, str):
        y, b = other, np.array(other, dtype)
    got = getattr(ft, name)(x, y)
    assert got.dtype == ft.bool and got.shape == np.broadcast_shapes(a.shape, b.shape)
    want = expected(row, *np.broadcast_arrays(a, b))
    assert np.array_equal(np.asarray(got), want)


def test_zero_d_and_empty_tensors() -> None:
    base = np.array([[1.0, np.nan, -0.0], [2.0, 0.0, np.inf]], np.float32)
    x = ft.asarray(base)
    for t, a in ((x[1, 2], base[1, 2]), (x[:0], base[:0]), (x[:, :0], base[:, :0])):
        for name, row in ROWS.items():
            got = getattr(ft, name)(t, t)
            assert got.dtype == ft.bool and got.shape == np.shape(a)
            assert np.array_equal(np.asarray(got), expected(row, np.asarray(a), np.asarray(a)))


def test_the_operators_are_the_namespace_functions() -> None:
    a = np.array([1.0, np.nan, -0.0, 2.0, -np.inf], np.float32)
    b = np.array([2.0, 1.0, 0.0, np.nan, -np.inf], np.float32)
    x, y = ft.asarray(a), ft.asarray(b)
    pairs = [(x < y, "less"), (x <= y, "less_equal"), (x == y, "equal"), (x != y, "not_equal")]
    pairs += [(x > y, "greater"), (x >= y, "greater_equal")]
    for got, name in pairs:
        assert np.array_equal(np.asarray(got), expected(ROWS[name], a, b)), name
    assert np.array_equal(np.asarray(x < 2.0), expected(ROWS["less"], a, np.full(5, 2, a.dtype)))


def test_the_plans_name_the_contracts() -> None:
    x = ft.asarray(np.ones((3, 4), np.float32))
    plan = ft.explain(ft.less, x, x)
    assert plan.kernel_name == "lt_f32" and plan.out_dtype is ft.bool
    assert plan.op_kind == "LessElementwise"
    wide = ft.explain(ft.equal, x, ft.asarray(np.ones(4, np.float64)))
    assert wide.out_dtype is ft.bool and wide.operands[1].dtype is ft.float64
    with ft.use_backend("reference"):
        assert ft.explain(ft.greater, x, x[0]).kernel_name == "broadcast_gt"
    ints = ft.explain(ft.less, ft.asarray(np.arange(3)), 1)
    assert ints.kernel is None and ints.out_dtype is ft.bool
    assert "lt_f32" in ints.rejected and "dtype I64" in " ".join(ints.rejected["lt_f32"])


def test_the_fast_path_is_the_python_path() -> None:
    base = np.array([[1.0, np.nan, -0.0, 3.0], [2.0, 0.0, np.inf, -1.0]], np.float32)
    x = ft.asarray(base)
    for other in (x, x[0], 0.0, 2, ft.flip(x, axis=0), x[:, ::2][:, :1]):
        for name in ROWS:
            fn = getattr(ft, name)
            fast = [outcome(lambda f=fn, o=other: f(x, o)) for _ in range(2)]
            with ft.trace():
                slow = outcome(lambda f=fn, o=other: f(x, o))
            assert fast[0] == fast[1] == slow, (name, other)


# -- the judge ----------------------------------------------------------------------------------


def test_the_judge_accepts_the_bundled_comparison_contracts() -> None:
    report = judge(kernels=["lt_f32", "eq_bf16", "ne_f16", "ge_f64", "broadcast_le"], quick=True)
    assert report.ok, report.failures
    assert all(row.probes > 1000 and row.measured_ulp == 0 for row in report.rows)


def nan_first(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> None:
    """`<` that orders a NaN below every number (a sort key's rule, not IEEE 754's)."""
    with np.errstate(invalid="ignore"):
        wa, wb = a.astype(np.float64), b.astype(np.float64)
    out[...] = np.isnan(wa) & ~np.isnan(wb) | (wa < wb)


def bitwise_equal(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> None:
    """`==` by bit pattern: -0 is not +0, and a NaN equals itself."""
    out[...] = bits(a) == bits(b)


def flushing_less(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> None:
    """`<` on a machine that flushes: subnormal operands read as zeros."""
    f = float_format(a.dtype)
    sign, normal = f.uint.type(f.sign_bit), f.uint.type(1 << f.mantissa)
    flushed = [np.where((bits(x) & ~sign) < normal, bits(x) & sign, bits(x)) for x in (a, b)]
    with np.errstate(invalid="ignore"):
        wa, wb = (u.view(a.dtype).astype(np.float64) for u in flushed)
    out[...] = wa < wb


def registry_of(
    folder: Path, cheats: dict[str, Any], subnormals: str = "subnormals: kept"
) -> ft.Registry:
    """Provider `cmp-test`: the bundled document's sections of the kernels `cheats` names
    (kernel name -> thunk), linked to them, declaring `subnormals`."""
    text = (bundled_contracts_dir() / "fuel-cpu-backend-comparison.md").read_text()
    head, *sections = text.split("\n## ")
    head = head.replace("name: fuel-cpu-backend", "name: cmp-test").replace("portable-cpu", "t")
    kept = [s for s in sections if s.split(":")[0] in cheats]
    body = "\n## ".join([head, *kept]).replace('"portable-cpu"', '"t"')
    body = body.replace("fuel_cpu_backend::byte_kernels::", "cmp_test::")
    body = body.replace("subnormals: kept", subnormals)
    ft.register_provider("cmp-test", {f"cmp_test::{k}": fn for k, fn in cheats.items()})
    path = folder / "cmp.md"
    path.write_text(body, encoding="utf-8")
    return ft.Registry.from_paths([path])


@pytest.mark.parametrize(
    ("kernel", "cheat", "shows"),
    [
        ("lt_f32", nan_first, "less(NaN·a, 1) (0x7fc00001, 0x3f800000) gave true"),
        ("eq_bf16", bitwise_equal, "equal(-0, +0) (0x8000, 0x0000) gave false"),
        ("lt_f32", flushing_less, "subnormals kept, but less(+0, subnormal) (0x00000000, 0x0"),
    ],
)
def test_the_judge_fails_a_comparison_that_breaks_ieee_naming_the_input(
    tmp_path: Path, kernel: str, cheat: Any, shows: str
) -> None:
    report = judge(registry_of(tmp_path, {kernel: cheat}), quick=True, progress=False)
    (row,) = report.rows
    assert any(f.startswith("precision: ") for f in row.failures), row.failures
    assert any(shows in failure for failure in row.failures), row.failures


def test_a_flushing_comparison_passes_as_flushed(tmp_path: Path) -> None:
    flushed = registry_of(tmp_path, {"lt_f32": flushing_less}, "subnormals: flushed")
    report = judge(flushed, quick=True, progress=False)
    assert report.ok, report.failures
