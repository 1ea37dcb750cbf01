"""fuel-reference-backend oracle: broadcast index math, arithmetic, and its independence.

The oracle is held to the independent scalar reference (`_oracle`), never to fuel-cpu-backend.
For BF16/F16 it computes in the half type; for + - * / the correctly rounded half result is
the scalar reference's widen-compute-round-once result, so every lane must match bit for bit,
NaNs included: the seeds' arithmetic (Rust's `a op b` on x86; for a half type through f32, the
`half` crate) gives the lhs NaN first, else the rhs NaN, quieted (a half one narrowed keeping
its high bits), and a NaN made from two numbers is x86's invalid-operation NaN (what `_oracle`
models). That holds for F32/F64 too, whatever loop NumPy runs (NumPy 2.2's add, and the tail
lanes of others, give the rhs NaN of a NaN pair): the oracle redoes its NaN lanes itself.
"""

from __future__ import annotations

import ast
import inspect
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _oracle import FORMATS, Fmt, bits_of, cpu_scalar
from hypothesis import given, settings
from hypothesis import strategies as st

import fueltensor as ft
from fueltensor.kernels import casting, reference
from fueltensor.kernels.reference import broadcast_shape, broadcast_src_flat, broadcast_src_view
from fueltensor.ops import (
    BINARY_OPS,
    COMPARISON_OPS,
    CONTRACTION_OPS,
    PLANNED_REDUCTIONS,
    TERNARY_OPS,
    UNARY_OPS,
)

OPS = ("add", "sub", "mul", "div")
FMTS = ("f32", "f64", "bf16", "f16")
SHAPE_PAIRS = [
    ((), ()),
    ((3,), ()),
    ((), (2, 3)),
    ((2, 3), (3,)),
    ((4, 1), (1, 5)),
    ((2, 1, 3), (4, 1)),
    ((0,), (1,)),
    ((2, 0, 3), (1, 3)),
    ((5, 1, 1), (1, 0)),
    ((1, 1, 2, 1), (3, 1, 4)),
    ((3000,), (3000,)),
    ((70, 300), (300,)),
]


def oracle(op: str) -> Any:
    """The linked kernel `broadcast_<op>`."""
    return reference.ENTRY_POINTS[f"fuel_reference_backend::ops::broadcast_{op}"]


def assert_lane(got: int, want: int, fmt: Fmt, what: Any) -> None:
    """The scalar reference's bits, NaN payload and sign included (see the docstring)."""
    assert got == want, (what, fmt.name, hex(got), hex(want))


def random_array(rng: np.random.Generator, shape: tuple[int, ...], fmt: Fmt) -> Any:
    """Random bit patterns of `fmt`, so NaN payloads, infinities and subnormals all turn up."""
    info = np.iinfo(fmt.uint)
    words = rng.integers(0, int(info.max), shape, dtype=fmt.uint, endpoint=True)
    return words.view(fmt.np_dtype)


def test_provider_and_entry_points() -> None:
    assert reference.PROVIDER == "fuel-reference-backend"
    rows = (*UNARY_OPS, *COMPARISON_OPS, *TERNARY_OPS)
    ops = ("add", "div", "mul", "sub", *(row.kernel_op for row in rows))
    fp8 = ("add_f8", "div_f8", "mul_f8", "sub_f8")
    casts = [f"ref_{casting.kernel_name(*cast)}" for cast in casting.CASTS]
    formats = ("f32", "f64", "bf16", "f16")
    casts += [f"ref_{row.kernel_op}_{f}" for row in PLANNED_REDUCTIONS for f in formats]
    casts += [f"ref_{row.kernel_op}_{f}" for row in CONTRACTION_OPS for f in formats]
    assert sorted(reference.ENTRY_POINTS) == sorted(
        [*(f"fuel_reference_backend::ops::broadcast_{op}" for op in (*ops, *fp8)),
         *(f"fuel_reference_backend::ops::{name}" for name in casts)]
    )  # fmt: skip


@pytest.mark.parametrize(("a", "b"), SHAPE_PAIRS)
def test_broadcast_shape_matches_numpy(a: tuple[int, ...], b: tuple[int, ...]) -> None:
    assert broadcast_shape(a, b) == np.broadcast_shapes(a, b)


@pytest.mark.parametrize(("a", "b"), [((2, 3), (4, 3)), ((3,), (4,)), ((2, 1), (3, 0, 3))])
def test_broadcast_shape_names_both_shapes(a: tuple[int, ...], b: tuple[int, ...]) -> None:
    with pytest.raises(ValueError, match=rf"{a!r}.*{b!r}".replace("(", r"\(").replace(")", r"\)")):
        broadcast_shape(a, b)


@pytest.mark.parametrize(("a", "b"), SHAPE_PAIRS[:10])
def test_broadcast_src_flat_matches_numpy_indexing(a: tuple[int, ...], b: tuple[int, ...]) -> None:
    out = broadcast_shape(a, b)
    for src in (a, b):
        index = np.broadcast_to(np.arange(int(np.prod(src))).reshape(src), out).reshape(-1)
        for k in range(index.size):
            assert broadcast_src_flat(k, src, out) == index[k]


@pytest.mark.parametrize(("a", "b"), SHAPE_PAIRS[:10])
def test_broadcast_src_view_reads_what_broadcast_src_flat_says(
    a: tuple[int, ...], b: tuple[int, ...]
) -> None:
    out = broadcast_shape(a, b)
    for src in (a, b):
        view = broadcast_src_view(np.arange(int(np.prod(src))).reshape(src), out).reshape(-1)
        assert view.tolist() == [broadcast_src_flat(k, src, out) for k in range(view.size)]


@pytest.mark.parametrize("fmt", FMTS)
@pytest.mark.parametrize("op", OPS)
@pytest.mark.parametrize(("a_shape", "b_shape"), SHAPE_PAIRS)
def test_elementwise_against_scalar_reference(
    op: str, fmt: str, a_shape: tuple[int, ...], b_shape: tuple[int, ...]
) -> None:
    f = FORMATS[fmt]
    rng = np.random.default_rng(len(a_shape) * 31 + len(b_shape))
    a, b = random_array(rng, a_shape, f), random_array(rng, b_shape, f)
    a_before, b_before = a.copy(), b.copy()
    shape = broadcast_shape(a_shape, b_shape)
    out = np.full(shape, 0x5A5A, f.uint).view(f.np_dtype)
    oracle(op)(a, b, out=out)
    assert a.tobytes() == a_before.tobytes() and b.tobytes() == b_before.tobytes()
    a_bits, b_bits, got = bits_of(a, f), bits_of(b, f), bits_of(out, f)
    for k, g in enumerate(got):
        ia = broadcast_src_flat(k, a_shape, shape)
        ib = broadcast_src_flat(k, b_shape, shape)
        assert_lane(g, cpu_scalar(op, a_bits[ia], b_bits[ib], f), f, (k, a_bits[ia], b_bits[ib]))


@pytest.mark.parametrize("fmt", ["bf16", "f16"])
@pytest.mark.parametrize("op", OPS)
def test_half_oracle_agrees_with_cpu_kernels_bit_for_bit(op: str, fmt: str) -> None:
    """The contract's claim for + - * /: the in-half-type result is the CPU kernels' widen-
    compute-round result, NaN payloads and signs included, on 20,000 random bit patterns of
    each operand (compare_backends counts a NaN's payload as a mismatch)."""
    f = FORMATS[fmt]
    rng = np.random.default_rng(3)
    a, b = (ft.asarray(random_array(rng, (20000,), f)) for _ in range(2))
    with np.errstate(invalid="ignore"):  # ml_dtypes 0.6 flags a signalling NaN in isnan
        assert int(np.isnan(np.asarray(a)).sum()) > 50  # NaNs with payloads are among them
    with ft.compare_backends("cpu", "reference") as report:
        getattr(ft, ft_name(op))(a, b)
    (c,) = list(report)
    assert c.compared and c.count == 20000 and "broadcast" in c.kernels[1]
    report.assert_equal(max_ulp=0)


def test_nans_are_the_seeds_nans() -> None:
    """Hand-picked lanes: NaN pairs (lhs first), one NaN (quieted, signalling ones too), NaNs
    made from numbers; every format, against the scalar reference bit for bit."""
    for f in (FORMATS[name] for name in FMTS):
        inf, quiet, sign, one = f.exp_mask, f.quiet, f.sign, f.bias << f.man_bits
        lanes = [inf | 1, inf | quiet | 5, sign | inf | 3, sign | inf | quiet, inf, 0, one]
        a = np.array([x for x in lanes for _ in lanes], f.uint).view(f.np_dtype)
        b = np.array([y for _ in lanes for y in lanes], f.uint).view(f.np_dtype)
        for op in OPS:
            out = np.empty_like(a)
            oracle(op)(a, b, out=out)
            want = [
                cpu_scalar(op, x, y, f) for x, y in zip(bits_of(a, f), bits_of(b, f), strict=True)
            ]
            assert bits_of(out, f) == want, (op, f.name)


def ft_name(op: str) -> str:
    """The namespace function of kernel op `op` (from the operation table)."""
    return next(row.name for row in BINARY_OPS if row.kernel_op == op)


def broadcast_pair(
    data: st.DataObject, shape: list[int]
) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Two shapes that broadcast to `shape`, in either order: one of any lower rank, each dim
    either the full size or 1 (so size-1 dims stretch, rank differences and 0-size dims occur)."""
    rank = data.draw(st.integers(0, len(shape)))
    short = tuple(d if data.draw(st.booleans()) else 1 for d in shape[len(shape) - rank :])
    full = tuple(d if data.draw(st.booleans()) else 1 for d in shape)
    return (short, full) if data.draw(st.booleans()) else (full, short)


def mixed_bits(rng: np.random.Generator, shape: tuple[int, ...], fmt: Fmt) -> Any:
    """Random bit patterns with about a third replaced by NaNs (signalling and quiet, with
    payloads and signs), infinities, ±0 and ±1, so NaN pairs turn up in every few dozen lanes."""
    words = random_array(rng, shape, fmt).view(fmt.uint)
    nan, quiet, sign = fmt.exp_mask, fmt.quiet, fmt.sign
    pool = [nan | 1, nan | quiet | 5, sign | nan | 3, sign | nan | quiet, nan, sign | nan, 0, sign]
    one = fmt.bias << fmt.man_bits
    pick = rng.random(shape) < 1 / 3
    words[pick] = rng.choice(np.array([*pool, one, sign | one], fmt.uint), int(pick.sum()))
    return words.view(fmt.np_dtype)


@settings(max_examples=80, deadline=None)
@given(
    data=st.data(),
    op=st.sampled_from(OPS),
    fmt=st.sampled_from(FMTS),
    shape=st.lists(st.integers(0, 6), max_size=4),
    seed=st.integers(0, 2**32 - 1),
)
def test_random_broadcast_pairs(
    op: str, fmt: str, shape: list[int], seed: int, data: st.DataObject
) -> None:
    f = FORMATS[fmt]
    a_shape, b_shape = broadcast_pair(data, shape)
    rng = np.random.default_rng(seed)
    a, b = mixed_bits(rng, a_shape, f), mixed_bits(rng, b_shape, f)
    out_shape = broadcast_shape(a_shape, b_shape)
    out = np.empty(out_shape, f.np_dtype)
    oracle(op)(a, b, out=out)
    a_bits, b_bits, got = bits_of(a, f), bits_of(b, f), bits_of(out, f)
    for k, g in enumerate(got):
        ia = broadcast_src_flat(k, a_shape, out_shape)
        ib = broadcast_src_flat(k, b_shape, out_shape)
        assert_lane(g, cpu_scalar(op, a_bits[ia], b_bits[ib], f), f, (k, a_bits[ia], b_bits[ib]))


def test_wrong_output_shape_is_refused() -> None:
    with pytest.raises(ValueError, match="broadcast_add"):
        oracle("add")(np.ones((2, 1)), np.ones(3), out=np.empty((2, 2)))


def test_what_the_contract_does_not_admit_is_refused() -> None:
    add = oracle("add")
    with pytest.raises(TypeError, match="broadcast_add: a, b and out must share one of"):
        add(np.ones(3, np.int32), np.ones(3, np.int32), out=np.empty(3, np.int32))
    with pytest.raises(ValueError, match="broadcast_add: a must be a C-contiguous array"):
        add(np.ones(6, np.float32)[::2], np.ones(3, np.float32), out=np.empty(3, np.float32))


def test_division_is_silent_even_under_raise_errstate() -> None:
    out = np.empty((2, 2), np.float16)
    a = np.array([[0.0], [1.0]], np.float16)
    b = np.array([0.0, -0.0], np.float16)
    with np.errstate(all="raise"):
        oracle("div")(a, b, out=out)
    assert np.isnan(out[0]).all() and list(out[1]) == [np.inf, -np.inf]


FORBIDDEN = ("fueltensor.kernels.cpu", "fueltensor.kernels._chassis", "fueltensor.ext._native")
"""fuel-cpu-backend's numerics: the oracle must not share any of it (issue 10)."""


def test_reference_source_imports_nothing_of_the_cpu_provider() -> None:
    tree = ast.parse(inspect.getsource(reference))
    imported: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            imported.add(node.module)
            imported.update(f"{node.module}.{alias.name}" for alias in node.names)
    assert "fueltensor.kernels" in imported  # the walk sees the imports at all
    assert not imported & set(FORBIDDEN), sorted(imported & set(FORBIDDEN))


def test_importing_the_reference_loads_nothing_of_the_cpu_provider(tmp_path: Path) -> None:
    """In a fresh interpreter, with the package's own __init__ (which loads everything) kept out
    of the way, importing the oracle loads no module of fuel-cpu-backend."""
    package = str(Path(reference.__file__).resolve().parents[1])
    code = (
        "import importlib, sys, types\n"
        "root = types.ModuleType('fueltensor')\n"
        f"root.__path__ = [{package!r}]\n"
        "sys.modules['fueltensor'] = root\n"
        "importlib.import_module('fueltensor.kernels.reference')\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('fueltensor'))))"
    )
    run = subprocess.run(
        [sys.executable, "-c", code],
        env=os.environ,
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=True,
    )
    loaded = run.stdout.split()
    # the op table (its families, names and host ufuncs, no numerics of the CPU provider's),
    # its host functions (NumPy's, where NumPy has no ufunc), the dtypes (the cast kernels'
    # names), the oracle's own casts, exact reductions and exact matmul, and the contraction
    # thunks' frame (shapes checked, stacks broadcast: no provider's numerics) are the only
    # other modules it reads
    assert loaded == [
        "fueltensor",
        "fueltensor.core",
        "fueltensor.core.dtypes",
        "fueltensor.families",
        "fueltensor.hostmath",
        "fueltensor.kernels",
        "fueltensor.kernels.casting",
        "fueltensor.kernels.contraction_thunk",
        "fueltensor.kernels.exact_matmul",
        "fueltensor.kernels.exact_products",
        "fueltensor.kernels.exact_reductions",
        "fueltensor.kernels.exact_sums",
        "fueltensor.kernels.reference",
        "fueltensor.ops",
    ]
