"""NumPy, PyTorch and JAX matmul as contract providers (contracts/<framework>-matmul.md, written
by benchmarks/framework_matmul.py from what they do here): the documents load and lint, each
wrapper returns the framework's own matmul bit for bit in every layout its document admits,
naming a framework plans its matmul (and only then), `compare_backends` sets them beside
fueltensor's own, the documents pass the judge's contraction audit as written, and a
declaration wider than the framework's accumulator fails it. Tests needing PyTorch or JAX skip,
naming the extra."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from _extras import ROOT

import fueltensor as ft
from fueltensor.cli import main
from fueltensor.core.dtypes import BY_FKC
from fueltensor.core.errors import NoKernelError
from fueltensor.ops import CONTRACTION_OPS
from fueltensor.testing import bits
from fueltensor.tools.judge import judge

BF16 = np.dtype(ml_dtypes.bfloat16)
(ROW,) = CONTRACTION_OPS
FRAMEWORKS = ("numpy", "torch", "jax")
CODES = {
    "numpy": ("F32", "F64", "F16"),  # no BF16: np.matmul promotes it to float32 (the document)
    "torch": ("F32", "F64", "BF16", "F16"),
    "jax": ("F32", "F64", "BF16", "F16"),
}
DOCUMENTS = [ROOT / "contracts" / f"{name}-matmul.md" for name in FRAMEWORKS]


def framework(name: str) -> Any:
    """The framework's module, or a skip naming the extra that installs it."""
    return pytest.importorskip(
        name, reason=f"the {name} extra is not installed: pip install 'fueltensor[{name}]'"
    )


def _documents(*names: str) -> ft.Registry:
    """The registry of the named frameworks' matmul documents, joined for dispatch."""
    reg = ft.Registry.from_paths([ROOT / "contracts" / f"{n}-matmul.md" for n in names])
    return reg.joined(*names)


def _dense(x: Any) -> Any:
    """x's values in a fresh dense array (NumPy) or tensor (PyTorch)."""
    return np.ascontiguousarray(x) if isinstance(x, np.ndarray) else x.contiguous()


def _spread(x: Any) -> Any:
    """x's values as every other column of one twice as wide: a strided view."""
    wide = np.repeat(x, 2, axis=1) if isinstance(x, np.ndarray) else x.repeat_interleave(2, 1)
    return wide[:, ::2]


def _stack(x: Any, n: int = 3) -> Any:
    """x broadcast over a stack of n with stride 0 (NumPy's broadcast_to, PyTorch's expand)."""
    return np.broadcast_to(x, (n, *x.shape)) if isinstance(x, np.ndarray) else x.expand(n, *x.shape)


Layout = Callable[[Any, Any], tuple[Any, Any]]
LAYOUTS: dict[str, Layout] = {
    "dense": lambda a, b: (a, b),
    "a transposed": lambda a, b: (_dense(a.T).T, b),
    "b strided": lambda a, b: (a, _spread(b)),
    "stacks broadcast": lambda a, b: (_stack(a), _stack(b)),
    "a flipped": lambda a, b: (np.ascontiguousarray(a[::-1, ::-1])[::-1, ::-1], b),
    "stacks apart": lambda a, b: (a, _stack(b[0], a.shape[0])),
}
"""The operand layouts a kernel is handed, each made alike on NumPy's and PyTorch's side (the
flipped one not for PyTorch: no negative strides, its document rejects them); "stacks apart"
is a stack of a against one matrix of a stack of b broadcast to it with stride 0."""


def _direct(name: str, a: np.ndarray, b: np.ndarray, layout: str = "dense") -> np.ndarray:
    """The framework's own matmul of `layout` of dense a and b, called as its users call it
    (PyTorch on its own views: its kernels follow the strides it is handed), as a NumPy array
    of a's dtype."""
    if name == "numpy":
        return np.asarray(np.matmul(*LAYOUTS[layout](a, b)))
    if name == "jax":
        jax = framework("jax")
        with jax.default_device(jax.devices("cpu")[0]), jax.enable_x64(a.dtype == np.float64):
            return np.asarray(jax.numpy.matmul(*LAYOUTS[layout](a, b)))
    torch = framework("torch")
    if a.dtype == BF16:
        x, y = (torch.from_numpy(v.view(np.uint16).copy()).view(torch.bfloat16) for v in (a, b))
    else:
        x, y = torch.from_numpy(a.copy()), torch.from_numpy(b.copy())
    got = torch.matmul(*LAYOUTS[layout](x, y))
    if a.dtype == BF16:
        return np.asarray(got.view(torch.uint16).numpy()).view(BF16)
    return np.asarray(got.numpy())


def _operands(
    dtype: np.dtype, seed: int, m: int = 5, k: int = 300, n: int = 4
) -> tuple[np.ndarray, np.ndarray]:
    """a (m, 2k) and b (2k, n) whose products cancel in pairs to a small remainder: a dot
    product's order and accumulator show in the bits, even rounded to a half type."""
    rng = np.random.default_rng(seed)
    x, y = rng.uniform(-1, 1, (m, k)), rng.uniform(-1, 1, (k, n))
    noise = rng.uniform(0, 2.0**-8, (k, n))
    a = np.concatenate([x, x], axis=1).astype(dtype)
    return a, np.concatenate([y, noise - y], axis=0).astype(dtype)


def test_the_documents_load_lint_and_declare_only_what_was_measured() -> None:
    reg = ft.Registry.from_paths(DOCUMENTS)
    found = {c.name: c for c in reg if c.op_kind == ROW.op_kind.value}
    want = {f"{n}_{ROW.kernel_op}_{code.lower()}" for n in FRAMEWORKS for code in CODES[n]}
    assert set(found) == want
    for c in found.values():
        assert c.provider.when_named and c.provider.measured_on is not None
        assert c.semantics is not None and "measurement" in c.semantics.source
        assert not c.semantics.invariance  # no framework promises threads, layout or batch
        assert set(c.op_params) == {"accumulator"}  # no order, no products: none promised
    assert found[f"numpy_{ROW.kernel_op}_f64"].op_params["accumulator"] == "F64"
    assert "No BF16." in DOCUMENTS[0].read_text(encoding="utf-8")
    # the installed documents (these, in an editable install; their copies in a wheel, which
    # --contracts would then name twice) pass the linter
    assert main(["contracts", "--check"]) == 0


@pytest.mark.parametrize("name", FRAMEWORKS)
def test_a_matmul_wrapper_returns_the_frameworks_own_bits(name: str) -> None:
    framework(name)
    reg = ft.registry().joined(name)
    for code in CODES[name]:
        kernel = reg.kernel(f"{name}_{ROW.kernel_op}_{code.lower()}")
        a, b = _operands(BY_FKC[code].np, 1, k=40)
        a[0, 3], b[7, 2] = np.inf, np.nan
        for layout, make in LAYOUTS.items():
            if (name == "torch" and layout == "a flipped") or layout == "stacks apart":
                continue
            x, y = make(a, b)
            out = np.empty((*x.shape[:-1], y.shape[-1]), x.dtype)
            kernel(x, y, out=out)
            assert np.array_equal(bits(out), bits(_direct(name, a, b, layout))), (code, layout)


@pytest.mark.parametrize("name", FRAMEWORKS)
def test_naming_a_framework_plans_its_matmul_and_only_then(name: str) -> None:
    framework(name)
    for code in CODES[name]:
        a, b = _operands(BY_FKC[code].np, 2, k=30)
        x1, x2 = ft.asarray(np.stack([a, a[::-1]])), ft.asarray(b)
        with ft.use_backend(name):
            got = np.asarray(x1 @ x2)
            plan = ft.explain(ft.matmul, x1, x2)
            vector = np.asarray(ft.matmul(x1, ft.asarray(b[:, 0])))
        assert plan.kernel_name == f"{name}_{ROW.kernel_op}_{code.lower()}"
        assert np.array_equal(bits(got), bits(_direct(name, np.asarray(x1), b)))
        # a 1-D x2 reaches the framework as a (K, 1) column broadcast over x1's stack (the
        # contract's shape rule): no framework promises it the bits of the (2, K) @ (K, N) call
        want = _direct(name, np.asarray(x1), b[None, :, :1], "stacks apart")[..., 0]
        assert vector.shape == want.shape and np.array_equal(bits(vector), bits(want))
        default = ft.explain(ft.matmul, x1, x2).provider
        assert default != name  # never by default: fueltensor's own, or the host's
    if name == "numpy":  # no NumPy BF16 contract: naming NumPy refuses a BF16 matmul
        a, b = _operands(BF16, 3, k=4)
        with ft.use_backend("numpy"), pytest.raises(NoKernelError, match="under use_backend"):
            ft.asarray(a) @ ft.asarray(b)


def test_compare_backends_shows_where_the_frameworks_bits_differ_from_fueltensors() -> None:
    names = [n for n in FRAMEWORKS if n == "numpy" or _installed(n)]
    a, b = (ft.asarray(x) for x in _operands(np.dtype(np.float16), 4, m=8, k=1000, n=8))
    with ft.compare_backends("cpu", *names, timing=False) as report:
        got = np.asarray(a @ b)
    rows = list(report)
    assert sorted(r.provider for r in rows) == sorted(names) and all(r.compared for r in rows)
    own = f"{ROW.kernel_op}_f16"
    for r in rows:
        assert r.kernels == (own, f"{r.provider}_{ROW.kernel_op}_f16")
        want = _direct(r.provider, np.asarray(a), np.asarray(b))
        assert r.count == got.size and r.equal == int((bits(want) == bits(got)).sum())
        assert r.equal + sum(r.classes.values()) == r.count
    if len(names) > 1:  # NumPy's F16 loop sums in K order in float32 too: here, the same bits
        assert any(r.equal < r.count for r in rows), "no framework's bits differ on cancellation"


def _installed(name: str) -> bool:
    """Whether the framework imports here."""
    import importlib.util

    return importlib.util.find_spec(name) is not None


@pytest.mark.parametrize("name", FRAMEWORKS)
def test_the_frameworks_matmul_documents_pass_the_judge(name: str) -> None:
    framework(name)
    rows = judge(_documents(name), quick=True, progress=False).rows
    assert len(rows) == len(CODES[name])
    assert {row.kernel: row.failures for row in rows if row.failures} == {}
    assert all(any(s.startswith("contraction: any order") for s in r.semantics) for r in rows)


def _declaring(tmp_path: Path, name: str, kernel: str, edit: Callable[[str], str]) -> ft.Registry:
    """The framework's matmul document with `kernel`'s block edited, joined."""
    text = (ROOT / "contracts" / f"{name}-matmul.md").read_text(encoding="utf-8")
    start = text.index(f"kernel: {kernel}\n")
    end = text.index("```", start)
    path = tmp_path / f"{name}-matmul.md"
    path.write_text(text[:start] + edit(text[start:end]) + text[end:], encoding="utf-8")
    return ft.Registry.from_paths([path]).joined(name)


def test_numpys_float32_matmul_declared_in_float64_fails_the_bound(tmp_path: Path) -> None:
    """The measurement is the judge's too: NumPy's float32 matmul (OpenBLAS' sgemm) sums in
    float32, so its document declaring an F64 accumulator fails the bound."""
    kernel = f"numpy_{ROW.kernel_op}_f32"
    reg = _declaring(
        tmp_path, "numpy", kernel, lambda b: b.replace("accumulator: F32", "accumulator: F64")
    )
    (row,) = judge(reg, kernels=[kernel], quick=True, progress=False).rows
    assert any(f.startswith("bound: ") for f in row.failures), row.failures
