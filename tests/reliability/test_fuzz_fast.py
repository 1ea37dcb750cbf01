"""A seeded differential fuzzer: the compiled fast path (`ext._fast`) against the Python path.

Each case is built twice from its seed, identically: an operation, operands of every dtype (mixed
ones cast), views (strided, offset, flipped, transposed, broadcast, empty), Python scalars on
either side, and in-place forms whose other operand may alias the target. The Python path runs
under `ft.trace()` (which the fast path never serves) and caches the plan; then `_fast.binary` /
`_fast.inplace` run the same case. Where the fast path serves it, the result's dtype, shape and
bytes, every storage the case touched (a write outside a view shows there) and any error's type
and words must be the Python path's.

The normal suite runs a few hundred cases; the sanitizer pass of CI (`.ci/sanitize`) sets
`FUELTENSOR_FUZZ_CASES` to run many more under ASan and UBSan.
"""

from __future__ import annotations

import contextlib
import operator
import os
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

import fueltensor as ft
from fueltensor.core.dtypes import DType
from fueltensor.kernels._chassis import IMPLEMENTATION

fast: Any = None
with contextlib.suppress(ImportError):
    from fueltensor.ext import _fast as fast

pytestmark = pytest.mark.skipif(fast is None, reason="the compiled fast path is not built here")

CASES = int(os.environ.get("FUELTENSOR_FUZZ_CASES", "400"))
CHUNKS = 8
"""Seeds are split over this many tests, so a failure names a small range."""
SHARE = 4 if IMPLEMENTATION == "native" else None
"""At least 1/SHARE of the cases must be served by the fast path with the compiled kernels: a
quarter. With the pure-NumPy ones (FUELTENSOR_PURE_NUMPY=1) it serves no float plan (it runs
compiled bodies and the oracle's broadcasts, and the oracle ranks after every production plan),
so the pure run checks only that the Python path's bits are those of every case it served."""

FLOATS = (ft.float32, ft.float64, ft.bfloat16, ft.float16)
OTHERS = (ft.int8, ft.int16, ft.int32, ft.int64, ft.uint8, ft.uint16, ft.uint32, ft.uint64, ft.bool)
OPS = ("add", "subtract", "multiply", "divide", "remainder", "pow", "maximum", "minimum")
IN_PLACE = {
    "add": operator.iadd,
    "subtract": operator.isub,
    "multiply": operator.imul,
    "divide": operator.itruediv,
    "remainder": operator.imod,
    "pow": operator.ipow,
}
SPECIALS = (0.0, -0.0, np.inf, -np.inf, np.nan, 1.0, -1.0, 2.0, 0.5, 3.0, -2.0, 1e-40, 65504.0)
SIZES = (0, 1, 1, 2, 3, 5, 8, 9, 17)


@dataclass
class Case:
    """One case as built: the operation, its operands, and every tensor whose storage it may
    touch (compared after the run)."""

    op: str
    inplace: bool
    a: Any
    b: Any
    storages: list[ft.FuelTensor]


def values(rng: np.random.Generator, dtype: DType, n: int) -> np.ndarray:
    """`n` values of `dtype`: random magnitudes, special values and (floats) raw bit patterns,
    which hold NaN payloads and subnormals."""
    if dtype in FLOATS:
        out = rng.standard_normal(n) * 10.0 ** rng.integers(-3, 4, n)
        pick = rng.random(n) < 0.3
        out[pick] = rng.choice(SPECIALS, int(pick.sum()))
        arr = out.astype(dtype.np)
        raw = rng.random(n) < 0.1
        bits = rng.integers(0, 2 ** (8 * dtype.itemsize), n, dtype=np.uint64)
        arr.view(f"u{dtype.itemsize}")[raw] = bits[raw].astype(f"u{dtype.itemsize}")
        return arr
    if dtype == ft.bool:
        return rng.random(n) < 0.5
    info = np.iinfo(dtype.np)
    return rng.integers(max(info.min, -100), min(info.max, 100), n, endpoint=True).astype(dtype.np)


def view(rng: np.random.Generator, dtype: DType, shape: tuple[int, ...]) -> ft.FuelTensor:
    """A tensor of `shape`: a dense one, or a view of a larger storage with steps of either
    sign, an offset, its axes permuted and axes of extent 1 broadcast."""
    kind = rng.integers(4)
    if kind == 0 or not shape:
        return ft.asarray(values(rng, dtype, int(np.prod(shape))).reshape(shape), dtype=dtype)
    src = [n if kind != 3 or rng.random() < 0.5 else 1 for n in shape]
    steps = [int(rng.choice([1, 2, 3, -1, -2])) for _ in src]
    starts = [int(rng.integers(0, 3)) for _ in src]
    outer = [
        (n - 1) * abs(s) + 1 + st if n else st + 1
        for n, s, st in zip(src, steps, starts, strict=True)
    ]
    order = rng.permutation(len(src)) if kind == 2 else np.arange(len(src))
    base_shape = tuple(outer[i] for i in order)
    base = ft.asarray(values(rng, dtype, int(np.prod(base_shape))).reshape(base_shape))
    t = ft.permute_dims(base, tuple(int(i) for i in np.argsort(order)))
    keys = []
    for n, s, st, o in zip(src, steps, starts, outer, strict=True):
        first = st if s > 0 else o - 1 - st
        keys.append(slice(first, first + n * s if first + n * s >= 0 else None, s))
    t = t[tuple(keys)]
    return ft.broadcast_to(t, shape) if kind == 3 else t


def operand_shape(rng: np.random.Generator, shape: tuple[int, ...]) -> tuple[int, ...]:
    """A shape that broadcasts to `shape`: some axes 1, some leading axes dropped."""
    kept = tuple(1 if rng.random() < 0.3 else n for n in shape)
    return kept[int(rng.integers(0, len(kept) + 1)) if rng.random() < 0.3 else 0 :]


def scalar(rng: np.random.Generator) -> float | int | bool:
    """A Python scalar operand of each kind, specials included."""
    kind = rng.integers(3)
    if kind == 0:
        return float(rng.choice(SPECIALS))
    return int(rng.integers(-300, 300)) if kind == 1 else bool(rng.integers(2))


def out_shape(rng: np.random.Generator) -> tuple[int, ...]:
    """The case's output shape: small extents around the 8-lane groups, now and then one long
    axis (past the 512-lane tiles, or the size the fast path releases the GIL from)."""
    shape = tuple(int(rng.choice(SIZES)) for _ in range(rng.integers(0, 4)))
    if rng.random() < 0.05:
        shape = (int(rng.choice([511, 513, 1029, 20011])),)
    return shape


def build(seed: int) -> Case:
    """The case of `seed` (the same objects' values every time it is built)."""
    rng = np.random.default_rng(seed)
    op = str(rng.choice(OPS))
    shape = out_shape(rng)
    da = FLOATS[rng.integers(len(FLOATS))] if rng.random() < 0.85 else rng.choice(OTHERS)
    db = da if rng.random() < 0.7 else (FLOATS + OTHERS)[rng.integers(len(FLOATS + OTHERS))]
    inplace = op in IN_PLACE and rng.random() < 0.3
    if inplace:
        target = view(rng, da, shape)
        target = (
            ft.asarray(np.array(target), dtype=da) if target.layout.broadcast_stride0 else target
        )
        b = aliasing(rng, target, db)
        return Case(op, True, target, b, [target, b] if isinstance(b, ft.FuelTensor) else [target])
    a: Any = view(rng, da, operand_shape(rng, shape))
    b: Any = view(rng, db, operand_shape(rng, shape))
    if rng.random() < 0.2:
        a, b = (scalar(rng), b) if rng.random() < 0.5 else (a, scalar(rng))
    return Case(op, False, a, b, [t for t in (a, b) if isinstance(t, ft.FuelTensor)])


def aliasing(rng: np.random.Generator, target: ft.FuelTensor, dtype: DType) -> Any:
    """The other operand of `target op= other`: the target itself, its flip, a shifted view of
    its storage, an unrelated view, or a Python scalar."""
    kind = rng.integers(5)
    if kind == 0:
        return target
    if kind == 1 and target.ndim:
        return ft.flip(target, axis=int(rng.integers(target.ndim)))
    if kind == 2 and target.ndim and target.shape[0] > 1:
        return target[1:]  # broadcasts only when its first extent is then 1
    if kind == 3:
        return scalar(rng)
    return view(rng, dtype, operand_shape(rng, target.shape))


def run(case: Case, compiled: bool) -> tuple[str, Any]:
    """The case's outcome on one path: ("ok", result bytes...), ("error", type and words), or
    ("unserved", None) when the fast path does not take it."""
    try:
        if compiled:
            fn = fast.inplace if case.inplace else fast.binary
            got = fn(case.op, case.a, case.b)
            if got is None:
                return "unserved", None
        else:
            with ft.trace():
                if case.inplace:
                    got = IN_PLACE[case.op](case.a, case.b)
                else:
                    got = getattr(ft, case.op)(case.a, case.b)
    except (ArithmeticError, TypeError, ValueError, Warning) as e:  # warnings are errors here
        return "error", (type(e), str(e))
    result = np.asarray(got)
    return "ok", (result.dtype, result.shape, result.tobytes())


def storage_bytes(case: Case) -> list[bytes]:
    """The bytes of every storage the case may have touched."""
    return [np.asarray(t._storage).tobytes() for t in case.storages]


def check(seed: int) -> bool:
    """Run case `seed` on both paths; True when the fast path served it."""
    python_case, compiled_case = build(seed), build(seed)
    want = run(python_case, compiled=False)
    got = run(compiled_case, compiled=True)
    if got[0] == "unserved":
        return False
    assert got == want, (seed, python_case.op, python_case.inplace)
    assert storage_bytes(compiled_case) == storage_bytes(python_case), seed
    return True


@pytest.mark.parametrize("chunk", range(CHUNKS))
def test_the_fast_path_gives_the_python_paths_bits(chunk: int) -> None:
    """Every case of this chunk's seeds; the fast path must have served a good share of them
    (else the fuzzer checks nothing)."""
    seeds = range(chunk, CASES, CHUNKS)
    served = sum(check(seed) for seed in seeds)
    if SHARE is not None:
        assert served >= len(seeds) // SHARE, f"the fast path served {served} of {len(seeds)}"
