"""The unary contract operations (`ft.exp` ... `ft.negative`, `-x`, `abs(x)`) planned through
the contracts: every row at every float dtype runs a provider's kernel, never the host; the
trace and `explain` show it; integer inputs follow the row's rule; views of every layout give
the dense input's bits; use_backend and compare_backends steer and compare them; the CPU
kernels, compiled only, are not registrable where `_native` cannot run them, and say why; a
user's unary document with a wrong kernel signature or an unknown function is refused with
file:line."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import warnings
from collections.abc import Callable
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest
from _cli import PACKAGE_DIR, command
from _documents import DENSE, front, section
from _exact import assert_within
from _extras import OUTSIDE
from hypothesis import given, settings
from hypothesis import strategies as st

import fueltensor as ft
from fueltensor.core.errors import ContractWarning
from fueltensor.engine.steps import StepKind
from fueltensor.ops import BY_NAME, UNARY_OPS, ContractOp, Integers
from fueltensor.testing import float_format, special_values

DTYPES = {"f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16, "f16": np.float16}
OWN = ("fuel-cpu-backend", "fuel-reference-backend")
ROOT = Path(__file__).resolve().parents[2]


def function(row: ContractOp) -> Callable[[object], ft.FuelTensor]:
    """The namespace function of a row."""
    fn: Callable[[object], ft.FuelTensor] = getattr(ft, row.name)
    return fn


def expected_kernel(row: ContractOp, suffix: str) -> str:
    """The kernel the planner must pick: the CPU one where it is registrable (a cost tie goes to
    the production provider), else the oracle's."""
    cpu = ft.registry()[f"{row.kernel_op}_{suffix}"]
    return cpu.name if cpu.registrable else f"broadcast_{row.kernel_op}"


def bits(t: ft.FuelTensor) -> list[int]:
    """The bit patterns of a tensor's elements."""
    a = np.ascontiguousarray(np.asarray(t))
    return a.view(f"u{a.itemsize}").reshape(-1).tolist()


@pytest.mark.parametrize("suffix", DTYPES)
@pytest.mark.parametrize("row", UNARY_OPS, ids=lambda r: r.name)
def test_every_row_and_dtype_runs_a_contract_kernel(row: ContractOp, suffix: str) -> None:
    values = special_values(DTYPES[suffix]).array
    x = ft.asarray(values.copy())
    with ft.trace() as plans:
        y = function(row)(x)
    (plan,) = plans
    assert plan.op_kind == row.op_kind and plan.backend != "host"
    assert plan.kernel is not None and plan.kernel.provider.name in OWN
    assert plan.kernel.name == expected_kernel(row, suffix)
    assert ft.explain(function(row), x).kernel is plan.kernel
    assert y.dtype == x.dtype and y.shape == x.shape
    bound = plan.kernel.precision.max_ulp
    assert bound is not None
    assert_within(row, values, np.asarray(y), bound)


def test_unlinked_cpu_kernels_are_listed_with_the_reason() -> None:
    reg = ft.registry()
    row = UNARY_OPS[0]
    x = ft.asarray(np.ones(3, np.float32))
    text = str(ft.explain(function(row), x))
    unlinked = reg.unlinked(row.op_kind)
    for c in unlinked:
        assert not c.registrable and "needs the compiled kernels" in c.unlinked
        assert c not in reg.for_op(row.op_kind)
    if unlinked:
        names = ", ".join(c.name for c in unlinked)
        assert f"not registrable here: {names}: needs the compiled kernels" in text
    else:
        assert "not registrable" not in text


def test_pure_numpy_mode_serves_the_oracle_and_says_why() -> None:
    """FUELTENSOR_PURE_NUMPY=1: the compiled-only contracts are not registrable, explain and
    `fueltensor contracts` say so, and the oracle serves the function."""
    row, env = UNARY_OPS[0], {"FUELTENSOR_PURE_NUMPY": "1"}
    listed = command("contracts", "--op", row.name, env=env)
    assert listed.returncode == 0, listed.stderr
    assert "not here" in listed.stdout and "FUELTENSOR_PURE_NUMPY=1" in " ".join(
        listed.stdout.split()
    )
    planned = command("explain", "add", env=env)  # the binary CPU kernels still serve
    assert planned.returncode == 0 and "add_f32" in planned.stdout, planned.stderr
    script = (
        "import fueltensor as ft, numpy as np\n"
        f"p = ft.explain(ft.{row.name}, ft.asarray(np.ones(2, np.float32)))\n"
        "print(p.kernel.name)\nprint(p)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script],
        env={**os.environ, "PYTHONPATH": str(PACKAGE_DIR), **env},
        cwd=OUTSIDE,  # a checkout's unbuilt sources would shadow the fueltensor under test
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    first, rest = done.stdout.split("\n", 1)
    assert first == f"broadcast_{row.kernel_op}"
    assert "not registrable here" in rest and "FUELTENSOR_PURE_NUMPY=1" in rest


@pytest.mark.parametrize("row", UNARY_OPS, ids=lambda r: r.name)
def test_integer_and_bool_inputs_follow_the_rows_rule(row: ContractOp) -> None:
    ints = ft.asarray(np.array([-3, 0, 2, 7], np.int16))
    flags = ft.asarray(np.array([True, False]))
    for x in (ints, flags):
        if row.integers is Integers.HOST and x.dtype == ft.bool:
            continue  # -True has no meaning in the array API (NumPy refuses it too)
        with ft.trace() as plans:
            y = function(row)(x)
        (plan,) = plans
        if row.integers is Integers.HOST:
            assert plan.backend == "host" and y.dtype == x.dtype
            assert np.asarray(y).tolist() == row.host(np.asarray(x)).tolist()
            continue
        cast = plan.steps[0]
        assert cast.kind is StepKind.CAST and cast.dtype == ft.float64 and "float64" in cast.why[0]
        assert plan.kernel is not None and y.dtype == ft.float64
        assert bits(y) == bits(function(row)(ft.astype(x, ft.float64)))


def test_complex_inputs_run_on_the_host_labelled() -> None:
    row = UNARY_OPS[0]
    z = ft.asarray(np.array([1j, 0.5 + 0.5j]))
    plan = ft.explain(function(row), z)
    assert plan.backend == "host" and f"numpy.{row.host.__name__}(x)" in str(plan)
    np.testing.assert_array_equal(np.asarray(function(row)(z)), row.host(np.asarray(z)))


def test_the_operators_are_the_tables_dunders() -> None:
    x = ft.asarray(np.array([-1.5, np.nan, -0.0], np.float32))
    rows = {row.dunder: row for row in UNARY_OPS if row.dunder}
    with ft.trace() as plans:
        negated, absolute = -x, abs(x)
    assert [p.op_kind for p in plans] == [rows["neg"].op_kind, rows["abs"].op_kind]
    assert bits(negated) == bits(ft.negative(x)) and bits(absolute) == bits(ft.abs(x))
    assert bits(negated)[2] == 0 and bits(absolute)[2] == 0  # -(-0) and |-0| are +0


LAYOUTS = ("dense", "strided", "offset", "flipped", "broadcast", "transposed")


@settings(max_examples=60, deadline=None)
@given(
    row=st.sampled_from(UNARY_OPS),
    suffix=st.sampled_from(sorted(DTYPES)),
    shape=st.lists(st.integers(0, 4), max_size=3).map(tuple),
    layout=st.sampled_from(LAYOUTS),
    seed=st.integers(0, 2**16),
)
def test_every_layout_gives_the_dense_inputs_bits(
    row: ContractOp, suffix: str, shape: tuple[int, ...], layout: str, seed: int
) -> None:
    f = float_format(DTYPES[suffix])
    rng = np.random.default_rng(seed)
    base = rng.integers(0, np.iinfo(f.uint).max, (9, *shape, 3), dtype=f.uint, endpoint=True)
    big = ft.asarray(base.view(f.dtype))
    view = {
        "dense": lambda: big[0, ..., 0],
        "strided": lambda: big[::2, ..., 0],
        "offset": lambda: big[3, ..., 1],
        "flipped": lambda: ft.flip(big[1:4, ..., 2], axis=0),
        "broadcast": lambda: ft.broadcast_to(big[2, ..., 0], (2, *shape)),
        "transposed": lambda: ft.permute_dims(big[0], tuple(reversed(range(len(shape) + 1)))),
    }[layout]()
    dense = ft.asarray(np.ascontiguousarray(np.asarray(view)))
    with ft.trace() as plans:
        got = function(row)(view)
    assert got.shape == view.shape and got.dtype == view.dtype
    assert bits(got) == bits(function(row)(dense))
    flags = view.layout
    awkward = not flags.contiguous or flags.strided or flags.broadcast_stride0
    awkward = awkward or flags.start_offset or flags.reverse_strides
    assert (StepKind.CONTIGUIZE in [s.kind for s in plans[0].steps]) == awkward


def test_zero_d_and_empty_inputs() -> None:
    for row in UNARY_OPS:
        scalar = function(row)(ft.asarray(np.float32(0.25)))
        assert scalar.shape == () and scalar.dtype == ft.float32
        bound = ft.explain(function(row), scalar).kernel.precision.max_ulp  # type: ignore[union-attr]
        assert_within(row, np.array(0.25, np.float32), np.asarray(scalar), bound)  # type: ignore[arg-type]
        empty = function(row)(ft.zeros((0, 3), dtype=ft.bfloat16))
        assert empty.shape == (0, 3) and empty.dtype == ft.bfloat16


def test_use_backend_restricts_the_unary_operations() -> None:
    row = UNARY_OPS[0]
    x = ft.asarray(np.linspace(-2, 2, 5, dtype=np.float32))
    with ft.use_backend("reference"):
        assert ft.explain(function(row), x).kernel.name == f"broadcast_{row.kernel_op}"  # type: ignore[union-attr]
    with ft.use_backend("numpy"):  # NumPy's own exp, its contract in contracts/numpy.md
        assert ft.explain(function(row), x).kernel_name == f"numpy_{row.kernel_op}_f32"
    lacking = BY_NAME["sigmoid"]  # NumPy has no sigmoid: no contract of numpy's takes it
    with ft.use_backend("numpy"), pytest.raises(ft.NoKernelError) as refused:
        function(lacking)(x)
    assert f"broadcast_{lacking.kernel_op}: provider fuel-reference-backend is excluded" in str(
        refused.value
    )
    with ft.use_backend("numpy"):  # no contract of any provider takes integers: the host
        assert np.asarray(ft.negative(ft.asarray(np.arange(3)))).tolist() == [0, -1, -2]


def test_compare_backends_compares_the_unary_operations() -> None:
    x = ft.asarray(special_values(ml_dtypes.bfloat16).array.copy())
    with ft.compare_backends("cpu", "reference") as report:
        for row in UNARY_OPS:
            function(row)(x)
    rows = list(report)
    assert [r.op for r in rows] == [row.name for row in UNARY_OPS]
    for r, row in zip(rows, UNARY_OPS, strict=True):
        assert r.op_kind == row.op_kind
        if ft.registry()[f"{row.kernel_op}_bf16"].registrable:  # both correctly rounded here
            assert r.compared and r.kernels == (
                f"{row.kernel_op}_bf16",
                f"broadcast_{row.kernel_op}",
            )
        else:
            assert not r.compared and r.kernels == (f"broadcast_{row.kernel_op}",)


def user_document(folder: Path, op_kind: str, inputs: int) -> Path:
    """A user's document of one F32 kernel `my_kernel` at `op_kind` with one input (`x`), or
    two (`lhs`, `rhs`), provider `unary-user`."""
    text = front("unary-user", "unary-user", "u", "v1", "unary-user") + section(
        "my_kernel",
        op_kind,
        "F32",
        source="unary-user",
        entry_point="unary_user::my_kernel",
        blurb="a user's kernel",
        max_ulp=1,
        notes="the user's",
    )
    if inputs == 1:
        one = f"    - {{name: x, dtypes: [F32], layout: {DENSE}, rank: any}}\n"
        text = re.sub(r"    - \{name: lhs.*\n    - \{name: rhs.*\n", one, text)
        text = text.replace("(lhs)", "(x)")
    path = folder / "user.md"
    path.write_text(text, encoding="utf-8")
    return path


def line_of(path: Path, key: str) -> int:
    """The line of `path` where `key:` is first written."""
    lines = path.read_text(encoding="utf-8").splitlines()
    return next(i for i, text in enumerate(lines, 1) if text.startswith(f"{key}:"))


def test_a_unary_kernel_with_a_wrong_signature_is_refused_with_file_and_line(
    tmp_path: Path,
) -> None:
    row = UNARY_OPS[0]

    def two_operands(lhs: np.ndarray, rhs: np.ndarray, *, out: np.ndarray) -> None:
        out[...] = lhs

    def one_operand(x: np.ndarray, *, out: np.ndarray) -> None:
        out[...] = x

    ft.register_provider("unary-user", {"unary_user::my_kernel": two_operands})
    path = user_document(tmp_path, row.op_kind.value, 1)
    with pytest.raises(ft.ContractError) as refused:
        ft.Registry.from_paths([path])
    where = f"{path}:{line_of(path, 'entry_point')}"
    assert where in str(refused.value) and "kernel(x, *, out)" in str(refused.value)
    ft.register_provider("unary-user", {"unary_user::my_kernel": one_operand})
    assert ft.Registry.from_paths([path])["my_kernel"].registrable  # the right one links
    two = user_document(tmp_path, row.op_kind.value, 2)  # a binary kernel's inputs
    with pytest.raises(ft.ContractError) as refused:
        ft.Registry.from_paths([two])
    assert f"{two}:{line_of(two, 'op_kind')}" in str(refused.value)
    assert "1 input (x)" in str(refused.value)


def test_a_document_naming_an_unknown_function_is_refused_with_file_and_line(
    tmp_path: Path,
) -> None:
    row = UNARY_OPS[0]
    path = user_document(tmp_path, row.op_kind.value.replace("Elementwise", "mElementwise"), 1)
    ft.register_provider("unary-user", {"unary_user::my_kernel": lambda x, *, out: None})
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        ft.Registry.from_paths([path])
    (warned,) = [w for w in caught if issubclass(w.category, ContractWarning)]
    assert f"{path}:{line_of(path, 'op_kind')}" in str(warned.message)
    assert f"did you mean {row.op_kind.value}" in str(warned.message)
    checked = command("contracts", "--check", "--contracts", str(path))
    assert checked.returncode == 1 and f"{path}:{line_of(path, 'op_kind')}" in checked.stdout


def test_out_of_domain_inputs_give_the_declared_nan_never_an_exception() -> None:
    x = ft.asarray(np.array([-1.0, -np.inf, np.inf, 0.0, -0.0], np.float32))
    old = np.seterr(all="raise")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error")
            for row in UNARY_OPS:
                bound = ft.explain(function(row), x).kernel.precision.max_ulp  # type: ignore[union-attr]
                assert_within(row, np.asarray(x), np.asarray(function(row)(x)), bound)  # type: ignore[arg-type]
        assert np.geterr()["invalid"] == "raise"  # the caller's state, as it was
    finally:
        np.seterr(**old)


def test_numpys_ufuncs_on_a_tensor_are_the_contract_operations() -> None:
    x = ft.asarray(np.array([0.5, -2.0, np.nan], np.float32))
    for row in UNARY_OPS:
        if not isinstance(row.host, np.ufunc):
            continue  # sigmoid, erf, rsqrt: NumPy has no ufunc
        with ft.trace() as plans:
            got = row.host(x)
        assert isinstance(got, ft.FuelTensor) and plans[0].op_kind == row.op_kind
        assert bits(got) == bits(function(row)(x))
