"""Shared kernel machinery: silent NumPy, half-float widen/narrow, cache-sized blocking.

Both providers build on this module so that the numerics live in one place: the op bodies
(`OPS`) work on blocks of the working precision (f32 or f64), and the chassis feeds them either
the caller's native arrays or half-float blocks widened to f32 and narrowed back once on store.
The same op table also runs compiled (`ext._native`, built at install when a C compiler is
there); `IMPLEMENTATION` is the one switch between the two. Both call the platform C library's
`powf`/`pow` for pow (never `np.power`, whose SIMD loops give other bits on AVX-512 machines);
the tests hold each implementation to the same independent scalar reference.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from pathlib import Path
from types import ModuleType
from typing import Any, Final

import ml_dtypes
import numpy as np
from numpy.typing import NDArray

from fueltensor.core import settings
from fueltensor.core.errstate import restore, silence
from fueltensor.kernels import pow_shortcut
from fueltensor.kernels.libm import libm_pow
from fueltensor.ops import (
    BY_KIND,
    COMPARISON_OPS,
    CONTRACTING_RULES,
    KERNEL_OPS,
    REDUCTION_OPS,
    TERNARY_OPS,
    UNARY_KERNEL_OPS,
    OpKind,
)

Array = NDArray[Any]
BlockOp = Callable[[Array, Array, Array, "Scratch"], None]

BLOCK: Final = 8192
"""Elements per block: three f64 blocks plus the half-float tiles stay inside a 512 KiB L2."""

F32: Final = np.dtype(np.float32)
F64: Final = np.dtype(np.float64)
BF16: Final = np.dtype(ml_dtypes.bfloat16)
F16: Final = np.dtype(np.float16)
_U16: Final = np.dtype(np.uint16)

DTYPES: Final[tuple[tuple[str, np.dtype[Any]], ...]] = (
    ("f32", F32),
    ("f64", F64),
    ("bf16", BF16),
    ("f16", F16),
)
"""The four dtypes both providers' kernels take: thunk-name suffix and storage dtype."""


class Scratch:
    """Preallocated block-sized buffers, so a blocked kernel allocates nothing per call."""

    __slots__ = ("a32", "a64", "b32", "b64", "c32", "c64", "mask", "mask2", "t32", "t64")

    def __init__(self) -> None:
        self.a32 = np.empty(BLOCK, F32)
        self.b32 = np.empty(BLOCK, F32)
        self.c32 = np.empty(BLOCK, F32)
        self.a64 = np.empty(BLOCK, F64)
        self.b64 = np.empty(BLOCK, F64)
        self.c64 = np.empty(BLOCK, F64)
        self.t32 = np.empty(BLOCK, F32)
        self.t64 = np.empty(BLOCK, F64)
        self.mask = np.empty(BLOCK, np.bool_)
        self.mask2 = np.empty(BLOCK, np.bool_)

    def work(self, dtype: np.dtype[Any], n: int) -> tuple[Array, Array, Array]:
        """Three scratch blocks of `n` elements in the working precision `dtype`."""
        if dtype is F64:
            return self.a64[:n], self.b64[:n], self.c64[:n]
        return self.a32[:n], self.b32[:n], self.c32[:n]

    def temp(self, dtype: np.dtype[Any], n: int) -> Array:
        """A fourth block for op bodies' own intermediates (never one of `work`'s three)."""
        return self.t64[:n] if dtype is F64 else self.t32[:n]


# A pool rather than one module-level Scratch: kernels run with the GIL released inside NumPy,
# so two threads may be inside a blocked kernel at once. list.pop/append are atomic.
_POOL: list[Scratch] = [Scratch()]


def take_scratch() -> Scratch:
    """Borrow a Scratch set from the pool (a new one only when every set is in use)."""
    try:
        return _POOL.pop()
    except IndexError:
        return Scratch()


def give_scratch(scratch: Scratch) -> None:
    """Return a borrowed Scratch set to the pool."""
    _POOL.append(scratch)


# ---------------------------------------------------------------------------------------------
# Half floats: widening is exact (every bf16/f16 value is an f32); narrowing is one
# round-to-nearest-even. NumPy (f16) and ml_dtypes (bf16) casts round correctly for every
# non-NaN f32, including subnormal results and overflow to inf, but they do not keep NaN
# payloads the way the Rust `half` crate the contracts name does, so NaN lanes are redone here.


def widen(src: Array, dst: Array) -> None:
    """Exact half -> f32 widening of one block into `dst`."""
    np.copyto(dst, src, casting="unsafe")


def quiet_nans(block: Array, scratch: Scratch) -> None:
    """Set the quiet bit of every NaN in an f32 block (one reduction pass when there are none)."""
    if np.isnan(np.maximum.reduce(block)):
        mask = np.isnan(block, out=scratch.mask2[: block.size])
        np.bitwise_or(block.view(np.uint32), 0x00400000, out=block.view(np.uint32), where=mask)


def _nan_bits_bf16(bits: Array) -> Array:
    """half::bf16::from_f32 for NaN f32 bit patterns: top payload bits kept, quiet bit set."""
    return (bits >> 16) | 0x0040


def _nan_bits_f16(bits: Array) -> Array:
    """half::f16::from_f32 for NaN f32 bit patterns: sign, top 10 payload bits, quiet bit set."""
    return ((bits >> 16) & 0x8000) | 0x7E00 | ((bits & 0x007FFFFF) >> 13)


_NAN_BITS: Final[dict[np.dtype[Any], Callable[[Array], Array]]] = {
    BF16: _nan_bits_bf16,
    F16: _nan_bits_f16,
}


def narrow(src: Array, dst: Array, scratch: Scratch) -> None:
    """f32 -> half narrowing of one block with RNE, keeping NaN payloads as `half` does."""
    np.copyto(dst, src, casting="unsafe")
    if np.isnan(np.maximum.reduce(src)):
        n = src.size
        mask = np.isnan(src, out=scratch.mask[:n]) if n <= BLOCK else np.isnan(src)
        bits = src.view(np.uint32)[mask]
        dst.view(_U16)[mask] = _NAN_BITS[dst.dtype](bits)


# ---------------------------------------------------------------------------------------------
# The eight op bodies over blocks of the working precision. `whole` is the NumPy ufunc that is
# already exactly the contract for native F32/F64 arrays (so it runs unblocked on the caller's
# arrays); the others are composed here and run block by block.


def _max_block(lhs: Array, rhs: Array, out: Array, s: Scratch) -> None:
    """Contract maximum: NumPy's maximum (NaN operand unchanged, lhs first), then lhs on ties."""
    np.maximum(lhs, rhs, out=out)
    tie = np.equal(lhs, rhs, out=s.mask[: lhs.size])
    np.copyto(out, lhs, where=tie)


def _min_block(lhs: Array, rhs: Array, out: Array, s: Scratch) -> None:
    """Contract minimum: NumPy's minimum (NaN operand unchanged, lhs first), then lhs on ties."""
    np.minimum(lhs, rhs, out=out)
    tie = np.equal(lhs, rhs, out=s.mask[: lhs.size])
    np.copyto(out, lhs, where=tie)


def _mod_block(lhs: Array, rhs: Array, out: Array, s: Scratch) -> None:
    """The floored remainder, exact before its one rounding (Python's and NumPy's `%`): fmod,
    which is exact; plus rhs where that is not zero and its sign is not rhs's (one rounded sum,
    as the C body's `m < 0 != b < 0`, so a NaN is never adjusted); a zero takes rhs's sign; of
    two NaNs, lhs's comes out quieted (the C body's lhs-first rule)."""
    np.fmod(lhs, rhs, out=out)
    adjust = (out != 0) & (np.less(out, 0) != np.less(rhs, 0))
    np.add(out, rhs, out=out, where=adjust)
    np.copyto(out, np.copysign(out.dtype.type(0), rhs), where=out == 0)
    keep_lhs_nan(lhs, rhs, out)  # fmod quiets a lone NaN itself; of two, it may return either


def _rem_block(lhs: Array, rhs: Array, out: Array, s: Scratch) -> None:
    """The seeds' formula remainder `a - floor(a / b) * b`, each step rounded in the working
    precision."""
    t = s.temp(lhs.dtype, lhs.size)
    np.divide(lhs, rhs, out=t)
    np.floor(t, out=t)
    np.multiply(t, rhs, out=t)
    np.subtract(lhs, t, out=out)


Whole = Callable[..., None]
"""A whole-array body: `fn(lhs, rhs, out=out)`."""

_NAN_FIX: Final[dict[np.dtype[Any], tuple[np.dtype[Any], int]]] = {
    F32: (np.dtype(np.uint32), 0x00400000),
    F64: (np.dtype(np.uint64), 0x0008000000000000),
}
"""Per dtype: its bits dtype and quiet bit."""


def keep_lhs_nan(lhs: Array, rhs: Array, out: Array) -> None:
    """Where both operands are NaN, make `out` lhs's NaN quieted (x86's first-operand rule);
    `lhs` and `rhs` broadcast to `out`'s shape, an F32 or F64 array."""
    both = np.isnan(lhs) & np.isnan(rhs)
    if both.any():
        uint, quiet = _NAN_FIX[out.dtype]
        out.view(uint)[both] = np.broadcast_to(lhs, out.shape).view(uint)[both] | quiet


def _lhs_nan_first(ufunc: np.ufunc) -> Whole:
    """`ufunc` with the contract's NaN rule (lhs's NaN when both are NaN) in every lane.

    NumPy's commutative add and multiply loops may take either NaN when both operands are one,
    and which lanes do depends on NumPy's release and the machine's SIMD (NumPy 2.4 on AVX2:
    the remainder lanes after the unrolled body). So every lane is repaired, not a measured
    subset: a lane whose operands are both NaN has a NaN result, so a result without NaN (one
    reduction over it, the common case) needs nothing.
    """

    def call(lhs: Array, rhs: Array, *, out: Array) -> None:
        ufunc(lhs, rhs, out=out)
        if out.size and np.isnan(np.maximum.reduce(out, axis=None)):
            keep_lhs_nan(lhs, rhs, out)

    call.__doc__ = f"np.{ufunc.__name__} with the first NaN operand (lhs) kept in every lane."
    return call


def _ufunc_block(ufunc: Whole) -> BlockOp:
    """A block body that is one whole-array call."""

    def block(lhs: Array, rhs: Array, out: Array, s: Scratch) -> None:
        ufunc(lhs, rhs, out=out)

    block.__doc__ = f"Block body: {ufunc.__doc__}"
    return block


def _max_pick(lhs: Array, rhs: Array, mask: Array, s: Scratch) -> None:
    """Where maximum returns lhs: lhs is NaN, or lhs >= rhs (so lhs on a ±0 tie)."""
    np.greater_equal(lhs, rhs, out=mask)
    nan = np.isnan(lhs, out=s.mask2[: lhs.size])
    np.logical_or(mask, nan, out=mask)


def _min_pick(lhs: Array, rhs: Array, mask: Array, s: Scratch) -> None:
    """Where minimum returns lhs: lhs is NaN, or lhs <= rhs (so lhs on a ±0 tie)."""
    np.less_equal(lhs, rhs, out=mask)
    nan = np.isnan(lhs, out=s.mask2[: lhs.size])
    np.logical_or(mask, nan, out=mask)


PickOp = Callable[[Array, Array, Array, Scratch], None]


@dataclass(frozen=True)
class Op:
    """One binary op of the CPU family: how to compute it natively, blocked, and as a pick."""

    kind: OpKind
    """The op table row it serves (its `kernel_op` names the thunks)."""
    block: BlockOp
    whole: Whole | None = None
    pick: PickOp | None = None
    """For the selecting ops (maximum/minimum): a mask of lanes returning lhs, so half-float
    results are the operands' original bits (a NaN operand comes back unchanged)."""
    quiet_inputs: bool = False
    """Half path only: set the quiet bit of widened NaNs as `half`'s to_f32 does. Only pow can
    tell (glibc powf(1, sNaN) is NaN, powf(1, qNaN) is 1); arithmetic quiets NaNs anyway."""
    formula: bool = False
    """The body of the row's formula kernels (its `formula_op`), not of its own."""

    @property
    def name(self) -> str:
        """The kernels' op id (the thunk-name stem, `add` in `add_f32`), from the op table."""
        row = BY_KIND[self.kind]
        return row.formula_op if self.formula and row.formula_op else row.kernel_op


_ADD: Final = _lhs_nan_first(np.add)
_MUL: Final = _lhs_nan_first(np.multiply)

OPS: Final[tuple[Op, ...]] = (
    Op(OpKind.ADD, _ufunc_block(_ADD), whole=_ADD),
    Op(OpKind.SUB, _ufunc_block(np.subtract), whole=np.subtract),
    Op(OpKind.MUL, _ufunc_block(_MUL), whole=_MUL),
    Op(OpKind.DIV, _ufunc_block(np.divide), whole=np.divide),
    Op(OpKind.MAXIMUM, _max_block, pick=_max_pick),
    Op(OpKind.MINIMUM, _min_block, pick=_min_pick),
    Op(OpKind.POW, _ufunc_block(libm_pow), whole=libm_pow, quiet_inputs=True),
    Op(OpKind.REM, _mod_block),
    Op(OpKind.REM, _rem_block, formula=True),
)
"""The bodies the CPU thunks are generated from, one per binary row of the op table."""

if sorted(op.name for op in OPS) != sorted(KERNEL_OPS):
    raise ImportError(
        f"the chassis ops {[op.name for op in OPS]} are not the op table's kernel ops "
        f"{list(KERNEL_OPS)} (fueltensor.ops): give every row a body and nothing else"
    )


def run_native(op: Op, lhs: Array, rhs: Array, out: Array) -> None:
    """F32/F64: the whole-array ufunc when it is the contract, else the body block by block."""
    if op.whole is not None:
        op.whole(lhs, rhs, out=out.reshape(lhs.shape))
        return
    lf, rf, of = lhs.reshape(-1), rhs.reshape(-1), out.reshape(-1)
    n = of.size
    s = take_scratch()
    try:
        for i in range(0, n, BLOCK):
            j = min(i + BLOCK, n)
            op.block(lf[i:j], rf[i:j], of[i:j], s)
    finally:
        give_scratch(s)


def run_half(op: Op, lhs: Array, rhs: Array, out: Array) -> None:
    """BF16/F16: per block widen both operands to f32, compute, and narrow once on store."""
    lf, rf, of = lhs.reshape(-1), rhs.reshape(-1), out.reshape(-1)
    n = of.size
    s = take_scratch()
    try:
        for i in range(0, n, BLOCK):
            j = min(i + BLOCK, n)
            a, b, c = s.work(F32, j - i)
            widen(lf[i:j], a)
            widen(rf[i:j], b)
            if op.quiet_inputs:
                quiet_nans(a, s)
                quiet_nans(b, s)
            if op.pick is not None:
                mask = s.mask[: j - i]
                op.pick(a, b, mask, s)
                dst = of[i:j].view(_U16)
                np.copyto(dst, rf[i:j].view(_U16))
                np.copyto(dst, lf[i:j].view(_U16), where=mask)
            else:
                op.block(a, b, c, s)
                narrow(c, of[i:j], s)
    finally:
        give_scratch(s)


# ---------------------------------------------------------------------------------------------
# Implementations: each turns an (op, dtype) pair into a body `body(lhs, rhs, out)` over
# validated C-contiguous operands of equal size. The pure one is the NumPy chassis above; the
# native one is the compiled extension, which keeps its own copy of the numerics in C and is
# tested bit for bit against the same scalar reference.

Body = Callable[[Array, Array, Array], None]
Implementation = Callable[[Op, np.dtype[Any]], Body]


def pure(op: Op, dtype: np.dtype[Any]) -> Body:
    """The pure-NumPy body of `op` on `dtype`, run with NumPy's warnings silenced."""
    if dtype is F32 or dtype is F64:
        whole = op.whole

        def body(lhs: Array, rhs: Array, out: Array) -> None:
            token = silence()
            try:
                if whole is not None and lhs.shape == rhs.shape == out.shape:
                    whole(lhs, rhs, out=out)
                else:
                    run_native(op, lhs, rhs.reshape(lhs.shape), out)
            finally:
                restore(token)

    else:

        def body(lhs: Array, rhs: Array, out: Array) -> None:
            token = silence()
            try:
                run_half(op, lhs, rhs.reshape(lhs.shape), out)
            finally:
                restore(token)

    body.__doc__ = f"Pure-NumPy {op.name} on {dtype}."
    return body


def _load_native() -> ModuleType | None:
    """The compiled kernels, or None when the optional extension was not built."""
    try:
        from fueltensor.ext import _native
    except ImportError:
        return None
    return _native


NATIVE: Final = _load_native()
"""The compiled kernels module (`_native.binary`, `OPS`, `DTYPES`, `ISAS`), or None."""

_EXPORTED: Final[tuple[tuple[tuple[str, ...], tuple[str, ...]], ...]] = (
    ()
    if NATIVE is None
    else (
        (tuple(NATIVE.OPS), KERNEL_OPS),
        (tuple(NATIVE.UNARY_OPS), UNARY_KERNEL_OPS),
        (tuple(NATIVE.COMPARISON_OPS), tuple(row.kernel_op for row in COMPARISON_OPS)),
        (tuple(NATIVE.TERNARY_OPS), tuple(row.kernel_op for row in TERNARY_OPS)),
        # an older build has none: the rebuild message, not an AttributeError
        (tuple(getattr(NATIVE, "REDUCTION_OPS", ())), tuple(r.kernel_op for r in REDUCTION_OPS)),
        (tuple(getattr(NATIVE, "CONTRACTION_OPS", ())), CONTRACTING_RULES),
    )
)
"""Each family's ops as the compiled kernels export them, beside the op table's."""
for _built, _table in _EXPORTED:
    if sorted(_built) != sorted(_table):
        raise ImportError(
            f"the compiled kernels export ops {list(_built)}, the op table (fueltensor.ops) "
            f"has {list(_table)}: rebuild them (python setup.py build_ext --inplace)"
        )

NOT_BUILT: Final = (
    "the compiled kernels (fueltensor.ext._native) are not built; reinstall fueltensor where a "
    "C compiler is available (pip install .), or build them in a checkout (python setup.py "
    "build_ext --inplace)"
)
"""Why a compiled body cannot be had."""


def native(op: Op, dtype: np.dtype[Any]) -> Body:
    """The compiled body of `op` on `dtype`: one C call, no Python frame of its own."""
    if NATIVE is None:
        raise RuntimeError(f"{NOT_BUILT}, or use the pure implementation")
    body: Body = partial(NATIVE.binary, NATIVE.OPS.index(op.name), NATIVE.DTYPES.index(dtype.name))
    return body


def native_unary(op: str, dtype: np.dtype[Any]) -> Callable[[Array, Array], None]:
    """The compiled unary body of kernel op `op` ("exp") on `dtype`: `body(x, out)`, one C call.
    The unary functions have no pure-NumPy body: their contracts need the compiled kernels."""
    if NATIVE is None:
        raise RuntimeError(NOT_BUILT)
    body: Callable[[Array, Array], None] = partial(
        NATIVE.unary, NATIVE.UNARY_OPS.index(op), NATIVE.DTYPES.index(dtype.name)
    )
    return body


IMPLEMENTATIONS: Final[dict[str, Implementation]] = (
    {"native": native, "pure": pure} if NATIVE is not None else {"pure": pure}
)
"""The implementations available here, fastest first."""

PURE_REQUESTED: Final = settings.switch("FUELTENSOR_PURE_NUMPY", False)
"""Whether the user asked for the pure-NumPy kernels (FUELTENSOR_PURE_NUMPY on)."""

IMPLEMENTATION: Final = "pure" if PURE_REQUESTED else next(iter(IMPLEMENTATIONS))
"""The one the kernels use: the compiled one when built, unless FUELTENSOR_PURE_NUMPY is on."""

UNBUILT: Final = """fueltensor is imported from the source checkout {root}, whose compiled \
kernels are not built, so it runs its pure-NumPy kernels: the same bits, up to 50x slower. Build \
them in place (`pip install -e .` from the checkout), or start Python outside the checkout to \
use the installed fueltensor. FUELTENSOR_PURE_NUMPY=1 says the pure kernels are meant."""
"""The warning of `warn_if_unbuilt`."""


def warn_if_unbuilt(package: Path) -> None:
    """Warn once (at import) where the kernels are the pure ones by accident: `package` sits in
    a source checkout (its `ext/src` and the checkout's setup.py are there; an installed
    fueltensor has neither) whose extensions are not built, and FUELTENSOR_PURE_NUMPY is off."""
    root = package.parent
    in_checkout = (package / "ext" / "src").is_dir() and (root / "setup.py").is_file()
    if NATIVE is None and in_checkout and not PURE_REQUESTED:
        # Explicit: the message is the whole story, not a line of this file.
        warnings.warn_explicit(UNBUILT.format(root=root), RuntimeWarning, "fueltensor", 0)


warn_if_unbuilt(Path(__file__).resolve().parent.parent)

if IMPLEMENTATION == "native" and NATIVE is not None:
    pow_shortcut.activate(NATIVE)  # f32 pow: the vector powf where it is recognised
