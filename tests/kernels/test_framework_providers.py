"""NumPy, PyTorch and JAX as providers: each wrapper loses nothing (its results are the
framework's own call on the same values, in every layout its document admits, half types
through their bits), the frameworks join dispatch only when named, and a framework that is not
installed is named with how to install it. Tests needing PyTorch or JAX skip, naming the extra.
"""

from __future__ import annotations

import importlib.util
import re
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import fueltensor as ft
from fueltensor.cli import main
from fueltensor.core.dtypes import BY_FKC
from fueltensor.engine.steps import StepKind
from fueltensor.kernels.frameworks import jax_provider, torch_provider
from fueltensor.ops import BINARY_OPS, COMPARISON_OPS, UNARY_OPS
from fueltensor.testing import bits

BF16 = np.dtype(ml_dtypes.bfloat16)
DTYPES = [np.dtype(np.float32), np.dtype(np.float64), BF16, np.dtype(np.float16)]
FRAMEWORKS = ("numpy", "torch", "jax")
N = 37
"""Elements per 1-D operand: one shape for every 1-D layout (JAX compiles once per shape)."""


def framework(name: str) -> ModuleType:
    """The framework's module, or a skip naming the extra that installs it."""
    return pytest.importorskip(
        name, reason=f"the {name} extra is not installed: pip install 'fueltensor[{name}]'"
    )


def _base(dtype: np.dtype, seed: int) -> np.ndarray:
    """4N + 12 values: random bit patterns (NaNs with payloads, subnormals ...), special values
    spread in, and ordinary numbers."""
    rng = np.random.default_rng(seed)
    u = np.dtype(f"u{dtype.itemsize}")
    raw = rng.integers(0, np.iinfo(u).max, 4 * N + 12, dtype=u, endpoint=True).view(dtype)
    ordinary = rng.uniform(-8, 8, raw.size).astype(np.float32).astype(dtype)
    out = np.where(rng.random(raw.size) < 0.5, raw, ordinary)
    special = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0, 0.5], np.float32)
    out[rng.choice(out.size, special.size, replace=False)] = special.astype(dtype)
    return out


def _views(base: np.ndarray) -> dict[str, Callable[[Any], Any]]:
    """Each layout as a function of the base: applies to a NumPy array, a FuelTensor or a torch
    tensor alike (reversed: a NumPy or FuelTensor flip; torch has its own)."""
    return {
        "contiguous": lambda x: x[:N],
        "strided": lambda x: x[: 2 * N : 2],
        "offset": lambda x: x[5 : 5 + N],
        "reversed": lambda x: x[:N][::-1] if not _is_torch(x) else x[:N].flip(0),
        "broadcast": lambda x: x[:3].reshape(3, 1),
        "transposed": lambda x: (
            x[:12].reshape(4, 3).T if not _is_torch(x) else x[:12].reshape(4, 3).t()
        ),
    }


def _is_torch(x: object) -> bool:
    return type(x).__module__.startswith("torch")


def _other(layout: str) -> Callable[[Any], Any]:
    """The right operand's view for a layout (the broadcast pairs a column with a row)."""
    if layout == "broadcast":
        return lambda x: x[3:7].reshape(1, 4)
    return _views(np.empty(0))[layout]


def _torch_tensor(array: np.ndarray) -> Any:
    """An independent torch tensor of the same bits (a copy; bfloat16 through uint16)."""
    torch = framework("torch")
    if array.dtype == BF16:
        return torch.from_numpy(array.view(np.uint16).copy()).view(torch.bfloat16)
    return torch.from_numpy(array.copy())


def _to_numpy(tensor: Any, dtype: np.dtype) -> np.ndarray:
    torch = framework("torch")
    if dtype == BF16:
        return tensor.view(torch.uint16).numpy().view(BF16)
    return np.asarray(tensor.numpy())


def _direct(name: str, op: str, dtype: np.dtype, a: Any, b: Any) -> np.ndarray:
    """The framework's own call on its own operands, as a user of it makes it."""
    if name == "numpy":
        with np.errstate(all="ignore"):
            return np.asarray(getattr(np, op)(a, b))
    if name == "torch":
        torch = framework("torch")
        spelled = {"subtract": "sub", "multiply": "mul", "divide": "div", "power": "pow"}
        return _to_numpy(getattr(torch, spelled.get(op, op))(a, b), dtype)
    jax = framework("jax")
    import jax.numpy as jnp

    with jax.enable_x64(dtype == np.float64):
        return np.asarray(getattr(jnp, op)(a, b))


def _framework_operands(name: str, base: np.ndarray, layout: str) -> tuple[Any, Any]:
    if name == "torch":
        t = _torch_tensor(base)
        return _views(base)[layout](t), _other(layout)(t[2 * N :])
    return _views(base)[layout](base), _other(layout)(base[2 * N :])


BINARY = [op for op in BINARY_OPS]


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op", BINARY, ids=lambda op: op.name)
@pytest.mark.parametrize("name", FRAMEWORKS)
def test_a_wrapper_returns_the_frameworks_own_bits_in_every_layout(
    name: str, op: Any, dtype: np.dtype
) -> None:
    framework(name)
    base = _base(dtype, seed=hash((op.name, str(dtype))) % 2**32)
    tensor = ft.asarray(base)
    for layout in _views(base):
        lhs, rhs = _views(base)[layout](tensor), _other(layout)(tensor[2 * N :])
        with ft.use_backend(name):
            plan = ft.explain(getattr(ft, op.name), lhs, rhs)
            got = np.asarray(getattr(ft, op.name)(lhs, rhs))
        want = _direct(name, op.host.__name__, dtype, *_framework_operands(name, base, layout))
        assert got.shape == want.shape, layout
        assert np.array_equal(bits(got), bits(want)), (name, op.name, layout)
        densified = any(s.kind is StepKind.CONTIGUIZE for s in plan.steps)
        assert densified == (name == "torch" and layout == "reversed"), (layout, str(plan))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("name", FRAMEWORKS)
def test_an_integer_power_is_the_frameworks_own(name: str, dtype: np.dtype) -> None:
    module = framework(name)
    base = _base(dtype, seed=11)[:N]
    for k in (2, 3, -1, 0, 7):
        with ft.use_backend(name):
            got = np.asarray(ft.asarray(base) ** k)
        if name == "numpy":
            with np.errstate(all="ignore"):
                want = base**k
        elif name == "torch":
            want = _to_numpy(_torch_tensor(base) ** k, dtype)
        else:
            with module.enable_x64(dtype == np.float64):
                want = np.asarray(module.numpy.power(base, k))
        assert np.array_equal(bits(got), bits(want)), (name, k)


def test_jax_f64_runs_in_f64_and_leaves_the_x64_switch_alone() -> None:
    jax = framework("jax")
    third = np.full(5, 1 / 3)
    with ft.use_backend("jax"):
        got = np.asarray(ft.asarray(third) + ft.asarray(third * 1e-9))
    assert got.dtype == np.float64
    assert np.array_equal(got, third + third * 1e-9)  # float32 would lose these digits
    assert jax.numpy.zeros(1).dtype == np.float32  # the global switch is still off


def test_bfloat16_reaches_torch_through_its_bits_and_reversed_views_are_refused() -> None:
    torch = framework("torch")
    payloads = np.array([0x7FC1, 0xFFD5, 0x7F81, 0x0001, 0x8000], np.uint16).view(BF16)
    tensor = torch_provider._tensor(torch, payloads)
    assert tensor.dtype == torch.bfloat16
    assert np.array_equal(tensor.view(torch.uint16).numpy(), payloads.view(np.uint16))
    out = np.empty(5, np.float32)
    with pytest.raises(ValueError, match="negative strides"):
        torch_provider.ENTRY_POINTS["torch.add"](
            np.ones(5, np.float32)[::-1], np.ones(5, np.float32), out=out
        )


def test_default_dispatch_never_runs_a_framework_and_says_why() -> None:
    for op in BINARY_OPS:
        for dtype in DTYPES:
            x = ft.asarray(np.ones(4, dtype))
            plan = ft.explain(getattr(ft, op.name), x, x)
            assert plan.provider not in FRAMEWORKS
            for name in FRAMEWORKS:
                reasons = [r for k, r in plan.rejected.items() if k.startswith(f"{name}_")]
                assert reasons and all("joins only where it is named" in r[0] for r in reasons)


def test_a_joined_registry_lets_a_framework_win_on_cost_without_contiguize() -> None:
    x = ft.asarray(np.arange(40, dtype=np.float32))[::2]
    y = ft.asarray(np.arange(60, dtype=np.float32))[::3]
    assert ft.explain(ft.add, x, y).provider == "fuel-cpu-backend"
    with ft.use_registry(ft.registry().joined("numpy")):
        plan = ft.explain(ft.add, x, y)
        got = np.asarray(x + y)
    assert plan.provider == "numpy"
    assert [s.kind for s in plan.steps] == [StepKind.KERNEL]
    assert np.array_equal(got, np.arange(40, dtype=np.float32)[::2] + np.arange(60)[::3])


@pytest.fixture
def without(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    """Make a framework look uninstalled to fueltensor (its import spec is not found)."""

    def hide(module: str) -> None:
        find = importlib.util.find_spec
        monkeypatch.setattr(
            importlib.util, "find_spec", lambda name, *a: None if name == module else find(name, *a)
        )

    return hide


@pytest.mark.parametrize("name", ["torch", "jax"])
def test_a_missing_framework_is_named_with_how_to_install_it(
    name: str, without: Callable[[str], None], capsys: pytest.CaptureFixture[str]
) -> None:
    without(name)
    extra = re.escape(f"fueltensor[{name}]")
    calls: list[Callable[[], object]] = [
        lambda: ft.use_backend(name).__enter__(),
        lambda: ft.compare_backends("cpu", name).__enter__(),
        lambda: ft.registry().joined(name),
        lambda: ft.judge(provider=name, quick=True),
    ]
    for call in calls:
        with pytest.raises(ft.ProviderUnavailable, match=rf"provider {name} .*{extra}"):
            call()
    for command in (["explain", "add", "--backend", name], ["judge", "--provider", name]):
        assert main(command) == 2
        assert re.search(rf"provider {name} .*{extra}", capsys.readouterr().err), command
    with pytest.raises(ft.ProviderUnavailable, match=extra):  # what every kernel calls first
        {"torch": torch_provider, "jax": jax_provider}[name].FRAMEWORK.load()
    assert ft.explain(ft.add, ft.ones(2), ft.ones(2)).provider == "fuel-cpu-backend"


@pytest.mark.parametrize("fkc", ["F32", "F64", "BF16", "F16"])
def test_each_framework_document_covers_every_operation_at_every_dtype(fkc: str) -> None:
    reg = ft.registry()
    kinds = [op.op_kind.value for op in BINARY_OPS] + ["PowIElementwise"]
    for name in FRAMEWORKS:
        for kind in kinds:
            found = [
                c for c in reg.for_op(kind) if c.provider.name == name and fkc in c.inputs[0].dtypes
            ]
            assert len(found) == 1, (name, kind, fkc)
            (c,) = found
            assert c.provider.when_named and c.provider.measured_on is not None
            assert c.semantics is not None and "measurement" in c.semantics.source
            assert BY_FKC[fkc].name in [BY_FKC[d].name for d in c.inputs[0].dtypes]


def test_compare_backends_runs_the_named_frameworks_beside_the_default() -> None:
    x = ft.asarray(np.float32([0.0, -0.0, 1.5, np.nan, -4.0]))
    y = ft.asarray(np.float32([-0.0, 0.0, np.nan, 2.0, 2.0]))
    with ft.compare_backends("cpu", "numpy") as report:
        got = ft.minimum(x, y)
    assert np.array_equal(bits(np.asarray(got)), bits(np.asarray(ft.minimum(x, y))))
    (row,) = list(report)
    assert row.kernels[0] == "minimum_f32" and row.kernels[1].startswith("numpy_minimum")
    want = np.minimum(np.asarray(x), np.asarray(y))
    assert row.equal == int((bits(want) == bits(np.asarray(got))).sum())
    with ft.compare_backends() as everyone:  # no names: the providers that join by default
        ft.minimum(x, y)
    assert all(not c.compared for c in everyone)  # maximum/minimum have no second provider


def test_judge_audits_a_named_provider_only() -> None:
    reg = ft.registry()
    report = ft.judge(provider="numpy", kernels=None, quick=True)
    assert {a.provider for a in report.rows} == {"numpy"}
    assert len(report.rows) == sum(
        len(c.inputs[0].dtypes) for c in reg if c.provider.name == "numpy" and c.registrable
    )
    assert report.ok, report.failures


# -- the unary rows ---------------------------------------------------------------------------

UNARY_HOMES = {"sigmoid": "jax.nn", "erf": "jax.scipy.special", "rsqrt": "jax.lax"}
"""Where JAX keeps the functions jax.numpy lacks (the others are jax.numpy's)."""


def _direct_unary(name: str, fn: str, base: np.ndarray, layout: str) -> np.ndarray:
    """The framework's own unary function on its own view of the base (torch on a torch view:
    PyTorch runs a strided operand through another loop than a dense one), as its user calls
    it."""
    operand = _views(base)[layout]
    if name == "numpy":
        with np.errstate(all="ignore"):
            return np.asarray(getattr(np, fn)(operand(base)))
    if name == "torch":
        torch = framework("torch")
        return _to_numpy(getattr(torch, fn)(operand(_torch_tensor(base))), base.dtype)
    jax = framework("jax")
    module = importlib.import_module(UNARY_HOMES.get(fn, "jax.numpy"))
    with jax.enable_x64(base.dtype == np.float64):
        return np.asarray(getattr(module, fn)(operand(base)))


def _declared(name: str, op: Any, fkc: str) -> list[Any]:
    """The framework's contracts of a unary row at a dtype (none where its document says the
    framework breaks one of the row's special cases)."""
    return [
        c
        for c in ft.registry().for_op(op.op_kind)
        if c.provider.name == name and fkc in c.inputs[0].dtypes
    ]


@pytest.mark.parametrize("fkc", ["F32", "F64", "BF16", "F16"])
@pytest.mark.parametrize("op", UNARY_OPS, ids=lambda op: op.name)
@pytest.mark.parametrize("name", FRAMEWORKS)
def test_a_unary_wrapper_returns_the_frameworks_own_bits(name: str, op: Any, fkc: str) -> None:
    framework(name)
    declared = _declared(name, op, fkc)
    if not declared:
        pytest.skip(f"{name} declares no {op.name} at {fkc} (its document says why)")
    dtype = BY_FKC[fkc].np
    base = _base(dtype, seed=hash((name, op.name, fkc)) % 2**32)
    tensor = ft.asarray(base)
    for layout in ("contiguous", "strided", "offset", "reversed", "transposed"):
        view = _views(base)[layout]
        with ft.use_backend(name):
            plan = ft.explain(getattr(ft, op.name), view(tensor))
            got = np.asarray(getattr(ft, op.name)(view(tensor)))
        want = _direct_unary(name, op.name, base, layout)
        assert plan.kernel_name == declared[0].name, str(plan)
        assert np.array_equal(bits(got), bits(want)), (name, op.name, fkc, layout)


def test_compare_backends_compares_exp_across_the_installed_frameworks() -> None:
    names = [n for n in FRAMEWORKS if importlib.util.find_spec(n) is not None]
    x = ft.asarray(np.float32([0.0, -0.0, 1.0, -88.5, 80.0, np.inf, -np.inf, np.nan, 0.5]))
    with ft.compare_backends("cpu", *names) as report:
        got = ft.exp(x)
    rows = list(report)  # one comparison per named framework, each against the default
    assert sorted(r.provider for r in rows) == sorted(names) and all(r.compared for r in rows)
    default = ft.explain(ft.exp, x).kernel_name  # exp_f32; the oracle's without _native
    assert all(r.kernels == (default, f"{r.provider}_exp_f32") for r in rows)
    for r in rows:
        want = np.asarray(ft.exp(x))
        assert r.equal == r.count - sum(r.classes.values()) and r.count == x.size
    assert np.array_equal(bits(np.asarray(got)), bits(want))  # the default kernel's result


def _direct_comparison(name: str, op: Any, a: Any, b: Any) -> np.ndarray:
    """The framework's own comparison of its own operands: NumPy's ufunc, PyTorch's operator
    (`torch.equal` is not elementwise), `jax.numpy`'s function."""
    if name == "numpy":
        with np.errstate(all="ignore"):  # ml_dtypes' bfloat16 loop flags a signalling NaN
            return np.asarray(op.host(a, b))
    if name == "torch":
        return np.asarray(op.relation(a, b).numpy())
    jax = framework("jax")
    import jax.numpy as jnp

    with jax.enable_x64(a.dtype == np.float64):
        return np.asarray(getattr(jnp, op.name)(a, b))


@pytest.mark.parametrize("dtype", DTYPES, ids=str)
@pytest.mark.parametrize("op", COMPARISON_OPS, ids=lambda op: op.name)
@pytest.mark.parametrize("name", FRAMEWORKS)
def test_a_comparison_wrapper_returns_the_frameworks_own_bools_in_every_layout(
    name: str, op: Any, dtype: np.dtype
) -> None:
    framework(name)
    base = _base(dtype, seed=hash((name, op.name, str(dtype))) % 2**32)
    tensor = ft.asarray(base)
    for layout in _views(base):
        lhs, rhs = _views(base)[layout](tensor), _other(layout)(tensor[2 * N :])
        with ft.use_backend(name):
            plan = ft.explain(getattr(ft, op.name), lhs, rhs)
            got = np.asarray(getattr(ft, op.name)(lhs, rhs))
        want = _direct_comparison(name, op, *_framework_operands(name, base, layout))
        assert plan.provider == name and plan.out_dtype is ft.bool, str(plan)
        assert got.dtype == np.bool_ and np.array_equal(got, want), (name, op.name, layout)


def test_compare_backends_compares_a_comparison_across_the_installed_frameworks() -> None:
    names = [n for n in FRAMEWORKS if importlib.util.find_spec(n) is not None]
    x = ft.asarray(np.float32([0.0, -0.0, 1.0, np.nan, np.inf, 1e-45, -2.0]))
    with ft.compare_backends("cpu", *names) as report:
        got = x > 0
    rows = list(report)
    assert sorted(r.provider for r in rows) == sorted(names) and all(r.compared for r in rows)
    assert all(r.kernels == ("gt_f32", f"{r.provider}_gt_f32") for r in rows)
    assert np.asarray(got).tolist() == [False, False, True, False, True, True, False]
    # JAX flushes subnormals (its document declares it): 1e-45 > 0 is false there, one lane
    assert {r.provider: r.count - r.equal for r in rows} == {n: int(n == "jax") for n in names}


def test_the_judge_fails_numpy_exp_declared_correctly_rounded(tmp_path: Any) -> None:
    # NumPy's float32 exp (its SIMD loop) is not correctly rounded: declared so, it fails,
    # naming an input. Without `measured_on`, another NumPy or CPU than the document's is held
    # to it too (the judge would report what differs there as notes).
    path = ft.registry()["numpy_exp_f32"].source.path
    text = re.sub(r"\n  measured_on: \{.*\}", "", Path(path).read_text(encoding="utf-8"))
    start = text.index("kernel: numpy_exp_f32\n")
    at = text.index("  max_ulp: ", start)
    end = text.index("\n", at)
    doc = tmp_path / "numpy.md"
    doc.write_text(text[:at] + "  max_ulp: 0" + text[end:], encoding="utf-8")
    reg = ft.Registry.from_paths([doc]).joined("numpy")
    report = ft.judge(reg, kernels=["numpy_exp_f32"], quick=True, progress=False)
    (row,) = report.rows
    assert not report.ok and row.measured_ulp >= 1
    assert any("declared max_ulp 0" in f and "inputs (x " in f for f in row.failures)
