"""NumPy, PyTorch and JAX as reduction providers (contracts/<framework>-reduce.md, written by
benchmarks/framework_reductions.py from what they do here): each wrapper returns the
framework's own reduction over the same values in every layout its document admits, the
documents pass the judge as written (no order, the accumulators measured), and a declaration
wider than the framework's accumulator fails it. Tests needing PyTorch or JAX skip, naming
the extra."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from _extras import ROOT

import fueltensor as ft
from fueltensor.core.dtypes import BY_FKC
from fueltensor.ops import REDUCTION_BY_KIND, VALUE_REDUCTIONS, OpKind
from fueltensor.testing import bits
from fueltensor.tools.judge import judge

BF16 = np.dtype(ml_dtypes.bfloat16)
CODES = ("F32", "F64", "BF16", "F16")
SUM = REDUCTION_BY_KIND[OpKind.SUM.value]
TORCH = {OpKind.SUM: "torch.sum", OpKind.MAX: "torch.amax", OpKind.MIN: "torch.amin"}
"""PyTorch's reductions over a tuple of dims (no product: `torch.prod` takes one dim)."""


def framework(name: str) -> Any:
    """The framework's module, or a skip naming the extra that installs it."""
    return pytest.importorskip(
        name, reason=f"the {name} extra is not installed: pip install 'fueltensor[{name}]'"
    )


def _torch_view(base: np.ndarray, layout: str) -> Any:
    """The layout of `_views` made on PyTorch's side, from a tensor of the base's values (the
    half types through their bits): PyTorch's sum follows the memory layout it is handed."""
    torch = framework("torch")
    if base.dtype == BF16:
        t = torch.from_numpy(base.view(np.uint16).copy()).view(torch.bfloat16)
    else:
        t = torch.from_numpy(base.copy())
    if layout == "broadcast":
        return t[:1].expand(4, t.shape[1])
    return _views(base)[layout](t)


def _direct(name: str, kind: OpKind, base: np.ndarray, layout: str, axes: tuple[int, ...]) -> Any:
    """The framework's own reduction of `layout` of `base` over `axes`, called as its users
    call it, as a NumPy array of the base's dtype."""
    row = REDUCTION_BY_KIND[kind.value]
    x = _views(base)[layout](base)
    if name == "numpy":
        with np.errstate(all="ignore"):
            return np.asarray(row.host(x, axis=axes))
    if name == "jax":
        jax = framework("jax")
        with jax.default_device(jax.devices("cpu")[0]), jax.enable_x64(x.dtype == np.float64):
            return np.asarray(getattr(jax.numpy, row.name)(x, axis=axes))
    torch = framework("torch")
    fn = getattr(torch, TORCH[kind].removeprefix("torch."))
    got = fn(_torch_view(base, layout), dim=axes)
    if base.dtype == BF16:
        return got.view(torch.uint16).numpy().view(BF16)
    return np.asarray(got.numpy())


def _views(base: np.ndarray) -> dict[str, Callable[[np.ndarray], np.ndarray]]:
    """The layouts a reduction is handed (a 2-D base of 6 x 10): dense, strided, offset,
    flipped (not for PyTorch: its document rejects negative strides) and broadcast."""
    return {
        "contiguous": lambda b: b,
        "strided": lambda b: b[::2, ::3],
        "offset": lambda b: b[1:, 2:],
        "flipped": lambda b: b[::-1, ::-1],
        "broadcast": lambda b: np.broadcast_to(b[:1], (4, b.shape[1])),  # torch: expand
        "transposed": lambda b: b.T,
    }


def _base(dtype: np.dtype, seed: int) -> np.ndarray:
    """6 x 10 values: ordinary numbers with zeros of both signs and infinities spread in."""
    rng = np.random.default_rng(seed)
    out = rng.uniform(-8, 8, 60).astype(np.float32)
    out[rng.choice(60, 6, replace=False)] = [0.0, -0.0, -0.0, np.inf, 0.0, 1.0]
    return out.astype(dtype).reshape(6, 10)


@pytest.mark.parametrize("name", ["numpy", "torch", "jax"])
@pytest.mark.parametrize("code", CODES)
def test_a_reduction_wrapper_returns_the_frameworks_own_bits(name: str, code: str) -> None:
    framework(name)
    reg = ft.registry().joined(name)
    dtype = BY_FKC[code].np
    base = _base(dtype, 3)
    for row in VALUE_REDUCTIONS:
        if name == "torch" and row.op_kind not in TORCH:
            continue  # torch.prod takes one dim: no contract (benchmarks/framework_reductions.py)
        kernel = reg.kernel(f"{name}_{row.kernel_op}_{code.lower()}")
        for layout, view in _views(base).items():
            if name == "torch" and layout == "flipped":
                continue
            x = view(base)
            for axes in [(0,), (1,), (0, 1)]:
                out = np.empty(tuple(n for i, n in enumerate(x.shape) if i not in axes), dtype)
                kernel(x, axes, out=out)
                want = _direct(name, row.op_kind, base, layout, axes)
                assert np.array_equal(bits(out), bits(want)), (row.name, layout, axes)


def _documents(*names: str) -> ft.Registry:
    """The registry of the named frameworks' reduction documents, joined for dispatch."""
    reg = ft.Registry.from_paths([ROOT / "contracts" / f"{n}-reduce.md" for n in names])
    for n in names:
        reg = reg.joined(n)
    return reg


@pytest.mark.parametrize("name", ["numpy", "torch"])
def test_the_frameworks_reduction_documents_pass_the_judge(name: str) -> None:
    framework(name)
    rows = judge(_documents(name), quick=True, progress=False).rows
    names = [row.name for row in VALUE_REDUCTIONS if name != "torch" or row.op_kind in TORCH]
    assert len(rows) == len(names) * len(CODES)
    assert {row.kernel: row.failures for row in rows if row.failures} == {}
    if name == "numpy":  # its bfloat16 sum has no bound past 256 elements, and says so
        (bf16,) = [row for row in rows if row.kernel == f"numpy_{SUM.kernel_op}_bf16"]
        assert any("too long to bound" in note for note in bf16.semantics), bf16.semantics


def test_jaxs_float32_reductions_pass_the_judge() -> None:
    """JAX compiles each shape anew (two minutes for the twelve): its F32 kernels alone."""
    framework("jax")
    kernels = [f"jax_{row.kernel_op}_f32" for row in VALUE_REDUCTIONS]
    rows = judge(_documents("jax"), kernels=kernels, quick=True, progress=False).rows
    assert len(rows) == len(kernels)
    assert {row.kernel: row.failures for row in rows if row.failures} == {}


def test_numpys_bfloat16_sum_declared_in_float32_fails_the_bound(tmp_path: Path) -> None:
    """The measurement is the judge's too: NumPy sums bfloat16 in bfloat16 (256 for 4096 ones,
    ml_dtypes' own example), so its document declaring an F32 accumulator fails."""
    text = (ROOT / "contracts" / "numpy-reduce.md").read_text(encoding="utf-8")
    kernel = f"numpy_{SUM.kernel_op}_bf16"
    assert "op_params: {accumulator: BF16}" in text
    start = text.index(f"kernel: {kernel}\n")
    end = text.index("```", start)
    block = text[start:end].replace("accumulator: BF16", "accumulator: F32")
    path = tmp_path / "numpy-reduce.md"
    path.write_text(text[:start] + block + text[end:], encoding="utf-8")
    reg = ft.Registry.from_paths([path]).joined("numpy")
    (row,) = judge(reg, kernels=[kernel], quick=True, progress=False).rows
    assert any(f.startswith("bound: ") for f in row.failures), row.failures
