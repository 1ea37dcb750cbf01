"""`where` and `clip` as contract operations (the selection and clamp families): every kernel
(the CPU ones of each implementation, the oracle's) and `ft.where` / `ft.clip` in every layout a
tensor takes, against a reference written here from the contracts' formula on bit patterns and
Python floats (no NumPy selection involved): where moves x1's or x2's bits; clip is
minimum(maximum(x, low), high) with the binary maximum and minimum contracts' rules, a NaN
operand returned as it is (x's first), the left kept on a tie of zeros. Their plans, and the
judge, which accepts the bundled contracts and fails kernels that quiet a NaN or break the
zero tie, naming the input."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import _impls
import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import fueltensor as ft
from fueltensor.families import Family
from fueltensor.kernels import reference as oracle
from fueltensor.ops import TERNARY_OPS
from fueltensor.registry import bundled_contracts_dir
from fueltensor.testing import bits, float_format, special_values
from fueltensor.tools.judge import judge

FORMATS = {"f32": np.float32, "f64": np.float64, "bf16": ml_dtypes.bfloat16, "f16": np.float16}
WHERE, CLAMP = (
    next(r for r in TERNARY_OPS if r.family is f) for f in (Family.SELECT, Family.CLAMP)
)


def clamp_scalar(x: float, low: float, high: float) -> int:
    """Which operand clip returns (0 x, 1 low, 2 high), by the formula on Python floats:
    maximum(x, low) keeps a NaN x, else takes a NaN low, else the larger (x on a tie); then
    minimum of that and high the same way."""
    pick, value = 0, x
    if not math.isnan(x) and (math.isnan(low) or low > x):
        pick, value = 1, low
    if not math.isnan(value) and (math.isnan(high) or high < value):
        pick = 2
    return pick


def expected_clip(x: np.ndarray, low: np.ndarray, high: np.ndarray) -> np.ndarray:
    """clip's bits, lane by lane: the chosen operand's pattern (`clamp_scalar`)."""
    x, low, high = np.broadcast_arrays(x, low, high)
    with np.errstate(invalid="ignore"):
        values = [a.astype(np.float64).reshape(-1).tolist() for a in (x, low, high)]
    picks = np.array([clamp_scalar(*v) for v in zip(*values, strict=True)], np.intp)
    patterns = np.stack([bits(a).reshape(-1) for a in (x, low, high)])
    return patterns[picks, np.arange(picks.size)].reshape(x.shape)


def expected_where(c: np.ndarray, x1: np.ndarray, x2: np.ndarray) -> np.ndarray:
    """where's bits, lane by lane: x1's pattern where c, else x2's."""
    c, x1, x2 = np.broadcast_arrays(c, x1, x2)
    a, b = bits(x1).reshape(-1).tolist(), bits(x2).reshape(-1).tolist()
    flags = c.reshape(-1).tolist()
    out = [p if f else q for f, p, q in zip(flags, a, b, strict=True)]
    return np.array(out, bits(x1).dtype).reshape(x1.shape)


def triples(fmt: str, seed: int = 0) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Every pair of the format's special values (x, low), each against every special value as
    high in turn (rolled), then random bit patterns."""
    dtype = np.dtype(FORMATS[fmt])
    f, rng = float_format(dtype), np.random.default_rng(seed)
    specials = special_values(dtype).array
    x, low = (a.reshape(-1) for a in np.meshgrid(specials, specials))
    high = np.concatenate([np.roll(specials, k) for k in range(specials.size)])
    made = rng.integers(0, np.iinfo(f.uint).max, (3, 4096), dtype=f.uint, endpoint=True)
    return tuple(  # type: ignore[return-value]
        np.concatenate([a, m.view(dtype)]) for a, m in zip((x, low, high), made, strict=True)
    )


@pytest.mark.parametrize("impl", _impls.IMPLS)
@pytest.mark.parametrize("fmt", FORMATS)
def test_every_cpu_clamp_and_where_kernel_is_the_formula(impl: str, fmt: str) -> None:
    x, low, high = triples(fmt)
    condition = (bits(high) & 1) == 1
    with _impls.using(impl):
        out = np.empty_like(x)
        _impls.thunk(impl, CLAMP.kernel_op, fmt)(x, low, high, out=out)
        assert np.array_equal(bits(out), expected_clip(x, low, high))
        _impls.thunk(impl, WHERE.kernel_op, fmt)(condition, x, low, out=out)
        assert np.array_equal(bits(out), expected_where(condition, x, low))


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_oracle_kernels_are_the_formula(fmt: str) -> None:
    x, low, high = triples(fmt, 1)
    out = np.empty_like(x)
    oracle.ENTRY_POINTS[f"fuel_reference_backend::ops::broadcast_{CLAMP.kernel_op}"](
        x, low, high, out=out
    )
    assert np.array_equal(bits(out), expected_clip(x, low, high))
    condition = (bits(x) & 2) == 2
    oracle.ENTRY_POINTS[f"fuel_reference_backend::ops::broadcast_{WHERE.kernel_op}"](
        condition, x, high, out=out
    )
    assert np.array_equal(bits(out), expected_where(condition, x, high))


def test_the_cases_the_contract_names() -> None:
    """The document's words, value by value: a NaN x first, a NaN bound next, -0 kept against
    +0, high where low > high, a None bound none."""
    snan = np.array([0x7FA00001], np.uint32).view(np.float32)[0]
    qnan = np.array([0xFFC00002], np.uint32).view(np.float32)[0]
    x = ft.asarray(np.array([snan, 1.0, -0.0, 5.0, 0.5, -7.0], np.float32))
    low = ft.asarray(np.array([qnan, qnan, 0.0, 3.0, 0.0, 0.0], np.float32))
    got = bits(np.asarray(ft.clip(x, low, 2.0)))
    want = [0x7FA00001, 0xFFC00002, 0x80000000, 0x40000000, 0x3F000000, 0x00000000]
    assert got.tolist() == want
    assert np.asarray(ft.clip(x, None, 0.75))[1:].tolist() == [0.75, -0.0, 0.75, 0.5, -7.0]
    assert np.asarray(ft.clip(x, -1.0, None))[1:].tolist() == [1.0, -0.0, 5.0, 0.5, -1.0]


LAYOUTS = ("dense", "strided", "offset", "flipped", "transposed")


def laid_out(patterns: np.ndarray, kind: str) -> ft.FuelTensor:
    """A FuelTensor holding the 2-D `patterns` in one layout (see test_comparisons)."""
    rows, cols = patterns.shape
    if kind == "strided":
        wide = np.zeros((rows, 2 * cols), patterns.dtype)
        wide[:, ::2] = patterns
        return ft.asarray(wide)[:, ::2]
    if kind == "offset":
        return ft.asarray(np.concatenate([patterns[:1], patterns]))[1:]
    if kind == "flipped":
        return ft.flip(ft.asarray(patterns[::-1].copy()), axis=0)
    if kind == "transposed":
        return ft.asarray(patterns.T.copy()).T
    return ft.asarray(patterns)


SHAPES = ("full", "row", "column", "0-d")


def shaped(t: ft.FuelTensor, how: str) -> ft.FuelTensor:
    """`t`, or a row, a column or a 0-d element of it (broadcast against the full ones)."""
    if how == "row":
        return t[:1]
    if how == "column":
        return t[:, :1]
    if how == "0-d":
        return t[0, 0]
    return t


@settings(max_examples=120, deadline=None)
@given(
    fmt=st.sampled_from(sorted(FORMATS)),
    kinds=st.tuples(*(st.sampled_from(LAYOUTS),) * 3),
    shapes=st.tuples(*(st.sampled_from(SHAPES),) * 3),
    rows=st.integers(1, 5),
    cols=st.integers(1, 6),
    provider=st.sampled_from(["cpu", "reference"]),
    seed=st.integers(0, 2**32 - 1),
)
def test_any_layout_and_broadcast_is_the_formula(
    fmt: str,
    kinds: tuple[str, str, str],
    shapes: tuple[str, str, str],
    rows: int,
    cols: int,
    provider: str,
    seed: int,
) -> None:
    """Strided, offset, flipped and transposed views, broadcast rows, columns and 0-d tensors,
    through ft.clip and ft.where on the CPU provider and on the oracle: the formula's bits."""
    dtype = np.dtype(FORMATS[fmt])
    f, rng = float_format(dtype), np.random.default_rng(seed)
    made = rng.integers(0, np.iinfo(f.uint).max, (3, rows, cols), dtype=f.uint, endpoint=True)
    specials = bits(special_values(dtype).array)
    made.reshape(-1)[: specials.size] = rng.permutation(specials)[: made.size]
    x, low, high = (
        shaped(laid_out(m.view(dtype), k), s) for m, k, s in zip(made, kinds, shapes, strict=True)
    )
    arrays = [np.asarray(t) for t in (x, low, high)]
    condition = ft.asarray(arrays[2].view(f.uint) % 3 == 0)
    with ft.use_backend(provider):
        clipped, chosen = ft.clip(x, low, high), ft.where(condition, x, low)
    assert np.array_equal(bits(np.asarray(clipped)), expected_clip(*arrays))
    assert np.array_equal(
        bits(np.asarray(chosen)), expected_where(np.asarray(condition), *arrays[:2])
    )


def test_zero_d_and_empty_tensors() -> None:
    base = np.array([[1.0, np.nan, -0.0], [2.0, 0.0, np.inf]], np.float32)
    x = ft.asarray(base)
    for t in (x[1, 2], x[:0], x[:, :0]):
        a = np.asarray(t)
        got = ft.clip(t, t, t)
        assert got.shape == a.shape and np.array_equal(
            bits(np.asarray(got)), expected_clip(a, a, a)
        )
        c = ft.asarray(np.ones(a.shape, bool))
        assert np.asarray(ft.where(c, t, 0.0)).tobytes() == a.tobytes()


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_plans_name_the_contracts_for_every_dtype(fmt: str) -> None:
    x = ft.asarray(np.ones((3, 4), FORMATS[fmt]))
    c = ft.asarray(np.ones((3, 1), bool))
    with ft.trace() as plans:
        ft.clip(x, 0.0, 1.0)
        ft.where(c, x, x[0])
    assert [p.op_kind for p in plans] == [CLAMP.op_kind, WHERE.op_kind]
    assert [p.kernel_name for p in plans] == [
        f"{CLAMP.kernel_op}_{fmt}",
        f"{WHERE.kernel_op}_{fmt}",
    ]
    assert plans[1].operands[0].dtype is ft.bool  # the condition is never promoted


def test_other_dtypes_run_on_the_host_and_a_bound_takes_x_dtype() -> None:
    ints = ft.explain(ft.clip, ft.asarray(np.arange(5)), 1, 3)
    assert ints.kernel is None and f"{CLAMP.kernel_op}_f32" in ints.rejected
    assert np.asarray(ft.clip(ft.asarray(np.arange(5)), 1, 3)).tolist() == [1, 1, 2, 3, 3]
    plan = ft.explain(ft.clip, ft.asarray(np.ones(4, np.float32)), ft.asarray(np.zeros(4)), None)
    assert plan.out_dtype is ft.float32 and plan.kernel_name == f"{CLAMP.kernel_op}_f32"
    assert any(s.kind.name == "CAST" for s in plan.steps)  # the float64 bound, cast to float32
    with pytest.raises(TypeError, match="bool condition"):
        ft.where(ft.asarray(np.ones(3, np.float32)), 1.0, 2.0)


def test_compare_backends_compares_where_and_clip() -> None:
    x = ft.asarray(np.array([-1.0, 0.5, np.nan, 3.0], np.float32))
    with ft.compare_backends("cpu", "reference") as report:
        ft.clip(x, 0.0, 1.0)
        ft.where(x > 0, x, 0.0)
    rows = {c.op_kind: c for c in report if c.compared}
    for op in (CLAMP, WHERE):
        row = rows[op.op_kind]
        assert row.kernels == (f"{op.kernel_op}_f32", f"broadcast_{op.kernel_op}"), row
        assert row.count == row.equal == 4 and row.nan_payloads == 0, row


# -- the judge ----------------------------------------------------------------------------------


def test_the_judge_accepts_the_bundled_contracts() -> None:
    names = [f"{CLAMP.kernel_op}_f32", f"{CLAMP.kernel_op}_bf16", f"{WHERE.kernel_op}_f16"]
    names += [f"broadcast_{CLAMP.kernel_op}", f"broadcast_{WHERE.kernel_op}"]
    report = judge(kernels=names, quick=True)
    assert report.ok, report.failures
    assert all(row.probes > 1000 and row.measured_ulp == 0 for row in report.rows)


def quieting_where(c: np.ndarray, x1: np.ndarray, x2: np.ndarray, *, out: np.ndarray) -> None:
    """where through float arithmetic: a signalling NaN comes back quieted."""
    with np.errstate(invalid="ignore"):
        out[...] = np.where(c, x1.astype(np.float64), x2.astype(np.float64)).astype(out.dtype)


def low_on_ties(x: np.ndarray, low: np.ndarray, high: np.ndarray, *, out: np.ndarray) -> None:
    """NumPy's maximum then minimum: on a tie of zeros the right operand (low, high) wins."""
    out[...] = np.minimum(np.maximum(x, low), high)


def registry_of(folder: Path, kernel: str, cheat: Any) -> ft.Registry:
    """Provider `tern-test`: the bundled document's section of `kernel`, linked to `cheat`."""
    text = (bundled_contracts_dir() / "fuel-cpu-backend-selection.md").read_text()
    head, *sections = text.split("\n## ")
    head = head.replace("name: fuel-cpu-backend", "name: tern-test")
    kept = [s for s in sections if s.split(":")[0] == kernel]
    body = "\n## ".join([head, *kept]).replace('"portable-cpu"', '"t"')
    body = body.replace("fuel_cpu_backend::byte_kernels::", "tern_test::")
    ft.register_provider("tern-test", {f"tern_test::{kernel}": cheat})
    path = folder / "tern.md"
    path.write_text(body, encoding="utf-8")
    return ft.Registry.from_paths([path])


@pytest.mark.parametrize(
    ("family", "cheat", "shows"),
    [(Family.SELECT, quieting_where, "NaN payload"), (Family.CLAMP, low_on_ties, "signed zero")],
)
def test_the_judge_fails_a_kernel_off_the_formula_naming_the_input(
    tmp_path: Path, family: Family, cheat: Any, shows: str
) -> None:
    row = WHERE if family is Family.SELECT else CLAMP
    report = judge(registry_of(tmp_path, f"{row.kernel_op}_f32", cheat), quick=True, progress=False)
    (audit,) = report.rows
    assert any(f.startswith("precision: ") for f in audit.failures), audit.failures
    assert any(shows in f for f in audit.failures), audit.failures


# -- the frameworks' where ----------------------------------------------------------------------


def framework_call(provider: str, name: str) -> Any:
    """The framework's own where or clip (`name`) on NumPy operands, as a NumPy array
    (PyTorch's bfloat16 through its bits; JAX on its CPU device, with 64-bit floats for float64
    operands)."""
    if provider == "torch":
        torch = pytest.importorskip("torch")

        def tensor(v: np.ndarray) -> Any:
            if v.dtype == ml_dtypes.bfloat16:
                return torch.from_numpy(v.view(np.uint16)).view(torch.bfloat16)
            return torch.from_numpy(v)

        def torch_call(*args: np.ndarray) -> np.ndarray:
            got = getattr(torch, name)(*map(tensor, args))
            if got.dtype == torch.bfloat16:
                return got.view(torch.uint16).numpy().view(ml_dtypes.bfloat16)
            return got.numpy()

        return torch_call
    if provider == "jax":
        jax = pytest.importorskip("jax")

        def jax_call(*args: np.ndarray) -> np.ndarray:
            wide = args[-1].dtype == np.float64
            with jax.enable_x64(wide), jax.default_device(jax.devices("cpu")[0]):
                return np.asarray(getattr(jax.numpy, name)(*args))

        return jax_call
    return getattr(np, name)


@pytest.mark.parametrize("provider", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("family", [Family.SELECT, Family.CLAMP])
def test_each_frameworks_kernel_is_its_own_call_and_compared(provider: str, family: Family) -> None:
    """Each declared framework where and clip kernel gives the framework's own bits on special
    values (signalling NaNs, both zeros, subnormals) with a broadcast operand, where's bits
    the formula's; and compare_backends sets it beside fueltensor's kernel."""
    row = WHERE if family is Family.SELECT else CLAMP
    own = framework_call(provider, row.name)
    reg = ft.registry()
    declared = [c for c in reg.for_op(row.op_kind) if c.provider.name == provider]
    assert {c.inputs[1].dtypes[0] for c in declared} & {"F32", "F16"}, declared
    rng = np.random.default_rng(3)
    for contract in declared:
        dtype = np.dtype(FORMATS[contract.inputs[1].dtypes[0].lower()])
        specials = special_values(dtype).array
        a = specials.reshape(1, -1).repeat(3, 0)
        b = rng.permutation(specials).reshape(1, -1).repeat(3, 0)
        first = rng.random((3, 1)) < 0.5 if row is WHERE else rng.permutation(specials)[:3, None]
        out = np.empty(a.shape, dtype)
        reg.kernel(contract.name)(first, a, b, out=out)
        mine = own(first, a, b)  # the same operands: a position-dependent kernel agrees too
        assert bits(out).tobytes() == bits(np.asarray(mine, dtype)).tobytes(), contract.name
        if row is WHERE:
            assert bits(out).tobytes() == expected_where(first, a, b).tobytes(), contract.name
    x = ft.asarray(np.array([-1.0, 0.5, np.nan, -0.0], np.float32))
    with ft.compare_backends("cpu", provider) as report:
        ft.where(x > 0, x, -x) if row is WHERE else ft.clip(x, 0.0, 1.0)
    compared = [r for r in report if r.compared and r.op_kind == row.op_kind]
    assert compared or "F32" not in {c.inputs[1].dtypes[0] for c in declared}, list(report)


def test_the_command_line_explains_and_compares_them(capsys: pytest.CaptureFixture[str]) -> None:
    """`fueltensor explain where` (the condition bool whatever --dtypes says) and `fueltensor
    compare where clip cpu reference`: every dtype, every lane equal."""
    from fueltensor.cli import main

    assert main(["explain", WHERE.name, "--shapes", "3,1", "4", "()", "--dtypes", "float16"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{WHERE.name}(bool[3, 1], float16[4], float16[]) -> float16[3, 4]")
    assert f"{WHERE.kernel_op}_f16(condition, x1, x2)" in out
    assert main(["explain", WHERE.name, "--shapes", "3", "4"]) == 2
    assert "takes 3 operands" in capsys.readouterr().err
    assert main(["compare", WHERE.name, CLAMP.name, "cpu", "reference", "--size", "32"]) == 0
    out = capsys.readouterr().out
    for fmt in FORMATS:
        assert f"{CLAMP.kernel_op}_{fmt} vs broadcast_{CLAMP.kernel_op}" in out, out
        assert f"{WHERE.kernel_op}_{fmt} vs broadcast_{WHERE.kernel_op}" in out, out
    assert "8 operations ran: 8 compared" in out


def test_certify_says_why_it_does_not_sweep_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from fueltensor.cli import main

    name = f"{WHERE.kernel_op}_bf16"
    assert main(["certify", "--kernel", name, "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert f"{name} is a {Family.SELECT} contract" in err
    assert "the judge checks these exact ones bit for bit" in err
