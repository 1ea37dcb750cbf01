"""fuel-reference-backend: the NumPy-broadcasting oracle kernels broadcast_add/sub/mul/div, its
unary functions (`broadcast_<op>`, one per row of the op table's unary family) and its
comparisons (`broadcast_lt` ...: each operand widened exactly to float64, then compared).

A second opinion on fuel-cpu-backend, so it shares none of that provider's numerics: nothing
of `cpu`, `_chassis` or the compiled `_native` is imported here (a test checks). Inputs are
contiguous buffers of their own shapes; the output has the broadcast shape. The broadcast is
the oracle's own index math (`broadcast_shape`, `broadcast_src_flat`, the Rust `ops.rs`
functions transcribed), applied in bulk as the equivalent element strides over each buffer
(`broadcast_src_view`: 0 where a dim stretches). Arithmetic is in the operand type: NumPy's
own loops for F32/F64, and for BF16/F16 the half type's own arithmetic (ml_dtypes' bfloat16
ufunc loops, NumPy's float16 loops), never the CPU kernels' widen-compute-narrow chassis.
A NaN result is then made as the seeds' arithmetic makes it (Rust's `a op b` on x86, and the
`half` crate computing through f32), by this module's own code (`nans`): the lhs NaN first,
else the rhs NaN, quieted; a NaN made from two numbers is this machine's invalid-operation NaN
(for a half type the f32 one, narrowed keeping the high bits, as `half`'s from_f32 does). So no
NaN's bits depend on which loop NumPy runs: NumPy 2.2's F32/F64 add hands back the rhs NaN of a
NaN pair where 2.4's hands back the lhs one.

A unary function is computed in float64, whatever the dtype: the row's host function (NumPy's
float64 ufunc; sigmoid as 1 / (1 + exp(-x)), rsqrt as 1 / sqrt(x), erf as the C library's
`math.erf` lane by lane, as the op table writes them) on the input widened exactly, then
rounded once to the dtype (`round_once`: bfloat16 through f32 rounded to odd, never twice),
never NumPy's float32 loops. Its NaN lanes are then made by `unary_nans`, from the row's
special cases: a NaN input quieted with its payload (|x| and -x: the sign bit alone), a NaN
made from a number this machine's default NaN (double `inf - inf`, narrowed).

FP8 + - * / (`broadcast_<op>_f8`, `fp8_bits`): each operand's bit fields decoded to float64 by
the oracle's own cast (`casting.cast_bits`, never ml_dtypes'), the op there (exact for + - *, a
quotient rounded to 53 bits), rounded once to the format by the cast rule (overflow inf, or
float8_e4m3fn's NaN); a NaN operand gives itself quieted, lhs's first.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from functools import cache
from typing import Any, Final

import ml_dtypes
import numpy as np
from numpy.typing import NDArray

from fueltensor.families import Family
from fueltensor.kernels import KernelFn, exact_matmul, exact_reductions
from fueltensor.kernels.casting import cast_bits, oracle_entries
from fueltensor.ops import BINARY_OPS, COMPARISON_OPS, TERNARY_OPS, UNARY_OPS, ContractOp

PROVIDER: Final = "fuel-reference-backend"
_PREFIX: Final = "fuel_reference_backend::ops::"

Array = NDArray[Any]

_DTYPES: Final = (
    np.dtype(np.float32),
    np.dtype(np.float64),
    np.dtype(ml_dtypes.bfloat16),
    np.dtype(np.float16),
)
"""The operand types the contract admits (F32, F64, BF16, F16), each computed in itself."""
_FP8: Final = (np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.float8_e5m2))
"""The 8-bit formats of the `broadcast_<op>_f8` kernels, computed exactly and rounded once."""
_F64: Final = np.dtype(np.float64)

_OPS: Final[tuple[tuple[str, np.ufunc], ...]] = tuple(
    (op.kernel_op, op.host)
    for op in BINARY_OPS
    if op.ieee_rounded and isinstance(op.host, np.ufunc)
)
"""The binary ops IEEE 754 rounds correctly in-type (the op table's `ieee_rounded`), each with
its in-type NumPy ufunc: the `broadcast_<op>` entry points its documents may name."""


def broadcast_shape(a_shape: Sequence[int], b_shape: Sequence[int]) -> tuple[int, ...]:
    """NumPy's broadcast of two shapes (right-aligned, size-1 dims stretch); ValueError if none."""
    rank = max(len(a_shape), len(b_shape))
    a = (1,) * (rank - len(a_shape)) + tuple(a_shape)
    b = (1,) * (rank - len(b_shape)) + tuple(b_shape)
    dims = []
    for x, y in zip(a, b, strict=True):
        if x == y or y == 1:
            dims.append(x)
        elif x == 1:
            dims.append(y)
        else:
            raise ValueError(
                f"shapes {tuple(a_shape)} and {tuple(b_shape)} do not broadcast "
                f"(dimension {x} against {y})"
            )
    return tuple(dims)


def row_major_strides(shape: Sequence[int]) -> tuple[int, ...]:
    """Element strides of a contiguous row-major buffer of `shape`."""
    strides = [1] * len(shape)
    for k in range(len(shape) - 2, -1, -1):
        strides[k] = strides[k + 1] * shape[k + 1]
    return tuple(strides)


def broadcast_src_flat(out_index: int, src_shape: Sequence[int], out_shape: Sequence[int]) -> int:
    """Flat index in a `src_shape` buffer read for flat output index `out_index`."""
    offset = len(out_shape) - len(src_shape)
    src_strides = row_major_strides(src_shape)
    flat = 0
    rem = out_index
    for k in range(len(out_shape) - 1, -1, -1):
        coord = rem % out_shape[k] if out_shape[k] else 0
        rem = rem // out_shape[k] if out_shape[k] else 0
        j = k - offset
        if j >= 0 and src_shape[j] != 1:
            flat += coord * src_strides[j]
    return flat


def src_strides(src_shape: Sequence[int], out_shape: Sequence[int]) -> tuple[int, ...]:
    """Per output dim, the element step `broadcast_src_flat` takes in the source buffer: its
    row-major stride, or 0 where the source lacks the dim or stretches a size-1 dim."""
    offset = len(out_shape) - len(src_shape)
    strides = row_major_strides(src_shape)
    return tuple(
        strides[k - offset] if k >= offset and src_shape[k - offset] != 1 else 0
        for k in range(len(out_shape))
    )


def broadcast_src_view(src: Array, out_shape: Sequence[int]) -> Array:
    """A read-only view of the contiguous `src` with `out_shape`, whose flat element k is
    `src.flat[broadcast_src_flat(k, src.shape, out_shape)]`: the index math as strides."""
    steps = tuple(s * src.itemsize for s in src_strides(src.shape, out_shape))
    view: Array = np.ndarray(tuple(out_shape), src.dtype, src.reshape(-1), 0, steps)
    view.flags.writeable = False
    return view


_HALF: Final[dict[np.dtype[Any], tuple[int, int]]] = {
    np.dtype(ml_dtypes.bfloat16): (0x7F80, 0x0040),
    np.dtype(np.float16): (0x7C00, 0x0200),
}
"""Per half type: its all-ones exponent field and its quiet bit."""

_WIDE: Final[dict[np.dtype[Any], tuple[int, int]]] = {
    np.dtype(np.float32): (0x7F800000, 0x00400000),
    np.dtype(np.float64): (0x7FF0000000000000, 0x0008000000000000),
}
"""Per hardware float type: its all-ones exponent field and its quiet bit."""


def infinity_bits(dtype: np.dtype[Any]) -> int:
    """The bits of +inf in `dtype`: a value whose bits past the sign are larger is a NaN."""
    return (_HALF.get(dtype) or _WIDE[dtype])[0]


def narrow_nan(bits: int, dtype: np.dtype[Any]) -> int:
    """`half`'s from_f32 of the f32 NaN `bits`: sign and high payload bits kept, quiet bit set."""
    if dtype == np.dtype(np.float16):
        return ((bits >> 16) & 0x8000) | 0x7E00 | ((bits & 0x007FFFFF) >> 13)
    return (bits >> 16) | 0x0040


with np.errstate(invalid="ignore"):
    _INVALID: Final = int(np.subtract(np.float32(np.inf), np.float32(np.inf)).view(np.uint32))
"""This machine's f32 invalid-operation NaN (x86: 0xffc00000), what inf - inf gives in f32."""


def nans(lhs: Array, rhs: Array, out: Array) -> None:
    """Redo `out`'s NaN lanes as the seeds' arithmetic gives them: the lhs NaN if lhs is one,
    else the rhs NaN, quieted; else the invalid-operation NaN (the ufunc's own for F32/F64, the
    f32 one narrowed for a half type). `lhs` and `rhs` have `out`'s shape (the broadcast views)."""
    half = out.dtype in _HALF
    inf, quiet = _HALF[out.dtype] if half else _WIDE[out.dtype]
    word = np.dtype(f"u{out.itemsize}")
    mask, quiet_bit = word.type((1 << (8 * out.itemsize - 1)) - 1), word.type(quiet)
    if not half and out.size and not np.isnan(out.max()):  # no NaN: one reduction (NaN wins)
        return
    got = out.view(word)
    magnitude = got & mask
    if int(magnitude.max(initial=0)) <= inf:  # no NaN in a half type: one reduction on the bits
        return
    nan = magnitude > inf
    a, b = lhs.view(word)[nan], rhs.view(word)[nan]
    made = word.type(narrow_nan(_INVALID, out.dtype)) if half else got[nan]
    got[nan] = np.where(
        (a & mask) > inf, a | quiet_bit, np.where((b & mask) > inf, b | quiet_bit, made)
    )


with np.errstate(invalid="ignore"):
    _DEFAULT_NAN: Final = int(np.subtract(np.inf, np.inf).view(np.uint64))
"""This machine's default NaN in double (x86: 0xfff8000000000000), what inf - inf gives."""


def default_nan(dtype: np.dtype[Any]) -> int:
    """This machine's default NaN narrowed to `dtype`'s bits: sign kept, quieted, the high
    payload bits kept (through f32 for a half type, as `half` narrows)."""
    if dtype == np.dtype(np.float64):
        return _DEFAULT_NAN
    f32 = (_DEFAULT_NAN >> 32 & 0x80000000) | 0x7FC00000 | (_DEFAULT_NAN & ((1 << 52) - 1)) >> 29
    return f32 if dtype == np.dtype(np.float32) else narrow_nan(f32, dtype)


def round_once(wide: Array, dtype: np.dtype[Any]) -> Array:
    """float64 values rounded once, to nearest even, into `dtype`. NumPy rounds float64 to f32
    and f16 directly; bfloat16 (whose ml_dtypes cast goes through f32, rounding twice) goes
    through f32 rounded to odd, whose sticky last bit makes the rounding to bf16 the one
    rounding of the float64 value."""
    if dtype != np.dtype(ml_dtypes.bfloat16):
        return wide.astype(dtype)
    r = wide.astype(np.float32)
    bits = r.view(np.uint32).copy()
    back = r.astype(np.float64)
    inexact = np.isfinite(r) & (back != wide)
    bits[inexact & (np.abs(back) > np.abs(wide))] -= np.uint32(1)  # the value below |wide|
    bits[inexact] |= np.uint32(1)
    rounded: Array = bits.view(np.float32).astype(dtype)
    return rounded


_SIGN_BIT_RESULTS: Final = ("|x|", "-x")
"""The op table's NaN results that change the sign bit alone (`ops.Special`)."""


def unary_nans(row: ContractOp, x: Array, out: Array) -> None:
    """Redo `out`'s NaN lanes by `row`'s special cases: a NaN input quieted with its sign and
    payload, or (|x|, -x) with only its sign bit changed; a NaN made from a number is this
    machine's default NaN narrowed to the dtype. A NaN input gives a NaN output in every row,
    so an output without NaN has nothing to redo (one check, the common case)."""
    if not np.isnan(out).any():
        return
    inf, quiet = _HALF[out.dtype] if out.dtype in _HALF else _WIDE[out.dtype]
    word = np.dtype(f"u{out.itemsize}")
    sign = word.type(1 << (8 * out.itemsize - 1))
    got, given = out.view(word), x.view(word)
    nan_in = (given & ~sign) > inf
    made = ((got & ~sign) > inf) & ~nan_in
    rule = next(result for value, result in row.special if value == "NaN")
    if rule in _SIGN_BIT_RESULTS:
        got[nan_in] = given[nan_in] & ~sign if rule == "|x|" else given[nan_in] ^ sign
    else:
        got[nan_in] = given[nan_in] | word.type(quiet)
    got[made] = word.type(default_nan(out.dtype))


@cache
def in_type(ufunc: np.ufunc, dtype: np.dtype[Any]) -> Callable[..., object]:
    """The call `call(lhs, rhs, out=out)` the oracle makes on its broadcast views for `dtype`:
    the ufunc, then `nans` (the seeds' NaN rule, whatever loop the ufunc ran)."""

    def call(lhs: Array, rhs: Array, *, out: Array) -> None:
        ufunc(lhs, rhs, out=out)
        nans(lhs, rhs, out)

    return call


def _require_dense(name: str, **arrays: Array) -> None:
    """Refuse, naming it, an array of a broadcasting kernel `name` that is not C-contiguous."""
    for label, x in arrays.items():
        if not x.flags.c_contiguous:
            raise ValueError(
                f"{name}: {label} must be a C-contiguous array (the contract admits dense "
                "buffers only; make a strided operand dense at its own shape first)"
            )


def _kernel(op: str, ufunc: np.ufunc) -> KernelFn:
    """Build `broadcast_<op>`: check layout, dtypes and output shape, then compute in-type."""
    name = f"broadcast_{op}"

    def kernel(a: Array, b: Array, *, out: Array) -> None:
        shape = broadcast_shape(a.shape, b.shape)
        if out.shape != shape:
            raise ValueError(f"{name}: out has shape {out.shape}, broadcast shape is {shape}")
        if not (a.dtype == b.dtype == out.dtype) or out.dtype not in _DTYPES:
            raise TypeError(
                f"{name}: a, b and out must share one of float32, float64, bfloat16, float16; "
                f"got a {a.dtype}, b {b.dtype}, out {out.dtype}"
            )
        _require_dense(name, a=a, b=b, out=out)
        lhs, rhs = broadcast_src_view(a, shape), broadcast_src_view(b, shape)
        with np.errstate(all="ignore"):  # IEEE results (x/0, inf-inf) are the contract, silent
            in_type(ufunc, out.dtype)(lhs, rhs, out=out)

    kernel.__name__ = kernel.__qualname__ = name
    # The ufunc of the call above, so dispatch's compiled path can make the same call.
    kernel.__fueltensor_ufunc__ = ufunc  # type: ignore[attr-defined]
    kernel.__doc__ = f"fuel-reference-backend {name}: out = a {op} b with NumPy broadcasting."
    return kernel


def _unary_kernel(row: ContractOp) -> KernelFn:
    """Build `broadcast_<op>` of a unary row: check dtypes, shape and layout, then compute in
    float64, round once and redo the NaN lanes."""
    name = f"broadcast_{row.kernel_op}"

    def kernel(x: Array, *, out: Array) -> None:
        if out.shape != x.shape:
            raise ValueError(f"{name}: out has shape {out.shape}, x has {x.shape}")
        if x.dtype != out.dtype or out.dtype not in _DTYPES:
            raise TypeError(
                f"{name}: x and out must share one of float32, float64, bfloat16, float16; "
                f"got x {x.dtype}, out {out.dtype}"
            )
        if not (x.flags.c_contiguous and out.flags.c_contiguous):
            raise ValueError(
                f"{name}: x and out must be C-contiguous arrays (the contract admits dense "
                "buffers only; make a strided operand dense first)"
            )
        with np.errstate(all="ignore"):  # IEEE results (log(0), sqrt(-1)) are the contract
            out[...] = round_once(np.asarray(row.host(x.astype(np.float64))), out.dtype)
        unary_nans(row, x, out)

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = (
        f"fuel-reference-backend {name}: out = {row.summary}, in float64, rounded once."
    )
    return kernel


def _comparison_kernel(row: ContractOp) -> KernelFn:
    """Build `broadcast_<op>` of a comparison row: check dtypes, shapes and layout, then compare
    the operands' exact values, each widened to float64 (exact from every operand type), on the
    oracle's broadcast views."""
    name = f"broadcast_{row.kernel_op}"

    def kernel(a: Array, b: Array, *, out: Array) -> None:
        shape = broadcast_shape(a.shape, b.shape)
        if out.shape != shape:
            raise ValueError(f"{name}: out has shape {out.shape}, broadcast shape is {shape}")
        if a.dtype != b.dtype or a.dtype not in _DTYPES or out.dtype != np.bool_:
            raise TypeError(
                f"{name}: a and b must share one of float32, float64, bfloat16, float16, and out "
                f"be bool; got a {a.dtype}, b {b.dtype}, out {out.dtype}"
            )
        _require_dense(name, a=a, b=b, out=out)
        with np.errstate(invalid="ignore"):  # a signalling NaN widened: still a NaN
            wide = [broadcast_src_view(x, shape).astype(np.float64) for x in (a, b)]
        row.host(*wide, out=out)

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = (
        f"fuel-reference-backend {name}: out = {row.summary} with NumPy broadcasting, on the "
        "operands' exact values (a bool result)."
    )
    return kernel


def _bits(x: Array) -> Array:
    """x's bit patterns: the unsigned integers of its width (a selection moves these alone)."""
    return x.view(f"u{x.dtype.itemsize}")


def _select_kernel(row: ContractOp) -> KernelFn:
    """Build `broadcast_<op>` of the selection row: out = x1's bits where the condition holds,
    else x2's, on the oracle's broadcast views (no float is loaded: every NaN kept as it is)."""
    name = f"broadcast_{row.kernel_op}"

    def kernel(condition: Array, x1: Array, x2: Array, *, out: Array) -> None:
        shape = broadcast_shape(broadcast_shape(condition.shape, x1.shape), x2.shape)
        if out.shape != shape:
            raise ValueError(f"{name}: out has shape {out.shape}, broadcast shape is {shape}")
        if condition.dtype != np.bool_ or not (x1.dtype == x2.dtype == out.dtype in _DTYPES):
            raise TypeError(
                f"{name}: condition must be bool, and x1, x2 and out share one of float32, "
                f"float64, bfloat16, float16; got {condition.dtype}, {x1.dtype}, {x2.dtype}, "
                f"out {out.dtype}"
            )
        _require_dense(name, condition=condition, x1=x1, x2=x2, out=out)
        c, a, b = (broadcast_src_view(x, shape) for x in (condition, _bits(x1), _bits(x2)))
        _bits(out)[...] = np.where(c, a, b)

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = f"fuel-reference-backend {name}: out = {row.summary}, bit for bit."
    return kernel


def _clamp_kernel(row: ContractOp) -> KernelFn:
    """Build `broadcast_<op>` of the clamp row: which operand each lane returns, decided on the
    values widened exactly to float64 by the contract's formula minimum(maximum(x, low), high)
    (a NaN operand returned, x's first; x kept on a tie), then that operand's bits."""
    name = f"broadcast_{row.kernel_op}"

    def kernel(x: Array, low: Array, high: Array, *, out: Array) -> None:
        shape = broadcast_shape(broadcast_shape(x.shape, low.shape), high.shape)
        if out.shape != shape:
            raise ValueError(f"{name}: out has shape {out.shape}, broadcast shape is {shape}")
        if not (x.dtype == low.dtype == high.dtype == out.dtype in _DTYPES):
            raise TypeError(
                f"{name}: x, low, high and out must share one of float32, float64, bfloat16, "
                f"float16; got {x.dtype}, {low.dtype}, {high.dtype}, out {out.dtype}"
            )
        _require_dense(name, x=x, low=low, high=high, out=out)
        views = [broadcast_src_view(v, shape) for v in (x, low, high)]
        with np.errstate(invalid="ignore"):  # a signalling NaN widened: still a NaN
            v, lo, hi = (w.astype(np.float64) for w in views)
        nan = np.isnan
        raised = (lo > v) | (nan(lo) & ~nan(v))  # maximum(x, low) is low
        kept = np.where(raised, lo, v)
        lowered = (hi < kept) | (nan(hi) & ~nan(kept))  # minimum(that, high) is high
        pick = np.where(lowered, 2, np.where(raised, 1, 0))
        _bits(out)[...] = np.choose(pick, [_bits(w) for w in views])

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = f"fuel-reference-backend {name}: out = {row.summary}, an operand's bits."
    return kernel


@cache
def _fp8_tables(dtype: np.dtype[Any]) -> tuple[Array, Array]:
    """Every pattern of an FP8 `dtype` decoded from its bit fields to float64 (exact, by the
    oracle's cast), and each pattern's round trip back by the cast rule (a NaN quieted)."""
    wide = cast_bits(np.arange(256, dtype=np.uint8).view(dtype), _F64, False).view(_F64)
    return wide, cast_bits(wide, dtype, False)


def fp8_bits(ufunc: np.ufunc, lhs: Array, rhs: Array, dtype: np.dtype[Any]) -> Array:
    """The oracle's result patterns of `ufunc` on FP8 `lhs`, `rhs` (one shape): each decoded
    from its bit fields to float64 (exact), the op there, rounded once to `dtype` by the cast
    rule. A NaN operand gives itself quieted, lhs's first; two numbers' invalid operation the
    CPU's default NaN, narrowed."""
    wide, back = _fp8_tables(np.dtype(dtype))
    a, b = lhs.view(np.uint8), rhs.view(np.uint8)
    x, y = wide[a], wide[b]
    with np.errstate(all="ignore"):  # IEEE results (x/0, inf-inf) are the contract, silent
        z = ufunc(x, y)
    got = cast_bits(z, dtype, False)
    got = np.where(np.isnan(y), back[b], got)
    return np.where(np.isnan(x), back[a], got)


def _fp8_kernel(op: str, ufunc: np.ufunc) -> KernelFn:
    """`broadcast_<op>_f8(a, b, *, out)`: NumPy broadcasting over dense operands of one FP8
    dtype, computed by `fp8_bits`."""
    name = f"broadcast_{op}_f8"

    def kernel(a: Array, b: Array, *, out: Array) -> None:
        shape = np.broadcast_shapes(a.shape, b.shape)
        if out.shape != shape:
            raise ValueError(f"{name}: out has shape {out.shape}, broadcast shape is {shape}")
        if not (a.dtype == b.dtype == out.dtype) or out.dtype not in _FP8:
            raise TypeError(
                f"{name}: a, b and out must share float8_e4m3fn or float8_e5m2; "
                f"got a {a.dtype}, b {b.dtype}, out {out.dtype}"
            )
        _require_dense(name, a=a, b=b, out=out)
        lhs, rhs = broadcast_src_view(a, shape), broadcast_src_view(b, shape)
        out.view(np.uint8)[...] = fp8_bits(ufunc, lhs, rhs, out.dtype)

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = f"fuel-reference-backend {name}: out = a {op} b in FP8, rounded once."
    return kernel


_TERNARY: Final = {Family.SELECT: _select_kernel, Family.CLAMP: _clamp_kernel}
"""The kernel builder of each three-operand family."""

ENTRY_POINTS: Final[dict[str, KernelFn]] = (
    {f"{_PREFIX}broadcast_{op}": _kernel(op, ufunc) for op, ufunc in _OPS}
    | {f"{_PREFIX}broadcast_{row.kernel_op}": _unary_kernel(row) for row in UNARY_OPS}
    | {f"{_PREFIX}broadcast_{row.kernel_op}": _comparison_kernel(row) for row in COMPARISON_OPS}
    | {f"{_PREFIX}broadcast_{row.kernel_op}": _TERNARY[row.family](row) for row in TERNARY_OPS}
    | oracle_entries(_PREFIX)
    | {f"{_PREFIX}broadcast_{op}_f8": _fp8_kernel(op, ufunc) for op, ufunc in _OPS}
    | exact_reductions.oracle_entries(_PREFIX)
    | exact_matmul.oracle_entries(_PREFIX)
)
"""The provider's link registry: full `entry_point` string -> oracle kernel."""

__all__ = [
    "ENTRY_POINTS",
    "PROVIDER",
    "broadcast_shape",
    "broadcast_src_flat",
    "broadcast_src_view",
    "default_nan",
    "fp8_bits",
    "in_type",
    "nans",
    "narrow_nan",
    "round_once",
    "row_major_strides",
    "src_strides",
    "unary_nans",
]
