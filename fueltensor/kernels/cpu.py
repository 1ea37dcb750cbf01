"""fuel-cpu-backend: the 32 same-shape byte kernels, the integer powers, the unary functions and
the comparisons.

Every thunk is `kernel(lhs, rhs, *, out) -> None` over C-contiguous arrays of equal element
count (the contract's `same_as` shapes): it checks the three byte lengths as the Rust chassis
does, then writes `out[i] = op(lhs[i], rhs[i])` in place. F32/F64 compute natively; BF16/F16
widen to f32, compute, and round once to nearest-even on store (see `_chassis`). The bodies come
from the chassis' current implementation (compiled or pure NumPy; both are tested bit for bit
against one independent scalar reference, pow included: both call the C library's powf/pow).
The integer-scalar forms of the op table (`powi_<dtype>`, `kernel(x, k, *, out)`) take their
parameter positionally after the input, as the planner passes a contract's `accept.params`.
The unary functions (`<op>_<dtype>`, `kernel(x, *, out)`, one per row of the op table's unary
family) are compiled only: where `_native` is not built, or FUELTENSOR_PURE_NUMPY=1 asks for
the pure kernels, their entry points are left out and `UNLINKED` says why, so their contracts
are not registrable (the oracle serves the functions there). The comparisons (`<op>_<dtype>`,
`kernel(lhs, rhs, *, out)` with a bool `out`, one per row of the comparison family) are exact,
so both implementations give the same bytes: the compiled `compare` body, or NumPy's comparison
on the operands (a half type widened to f32 first, exactly).
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any, Final

import numpy as np

from fueltensor.families import TRAITS, Family
from fueltensor.kernels import KernelFn, _chassis, casting, contractions, fp8, reductions
from fueltensor.kernels._chassis import (
    DTYPES,
    IMPLEMENTATION,
    IMPLEMENTATIONS,
    NATIVE,
    OPS,
    PURE_REQUESTED,
    Array,
    Body,
    Op,
)
from fueltensor.kernels._powi import BODIES, ParamBody
from fueltensor.ops import COMPARISON_OPS, SCALAR_FORMS, TERNARY_OPS, UNARY_KERNEL_OPS, ContractOp

PROVIDER: Final = "fuel-cpu-backend"
_PREFIX: Final = "fuel_cpu_backend::byte_kernels::"


def _thunk(op: Op, suffix: str, dtype: np.dtype[Any], body: Body) -> KernelFn:
    """Build the thunk `<op>_<suffix>`: validate like the Rust chassis, then run `body`."""
    name = f"{op.name}_{suffix}"

    def kernel(lhs: Array, rhs: Array, *, out: Array) -> None:
        if not (lhs.nbytes == rhs.nbytes == out.nbytes):
            raise ValueError(
                f"{name}: byte lengths differ: lhs {lhs.nbytes}, rhs {rhs.nbytes}, out {out.nbytes}"
            )
        if lhs.dtype != dtype or rhs.dtype != dtype or out.dtype != dtype:
            raise TypeError(
                f"{name}: expected {dtype} operands and output, got "
                f"lhs {lhs.dtype}, rhs {rhs.dtype}, out {out.dtype}"
            )
        body(lhs, rhs, out)

    kernel.__name__ = kernel.__qualname__ = name
    if isinstance(body, partial) and NATIVE is not None and body.func is NATIVE.binary:
        # The compiled (op, dtype) numbers, so dispatch's fast path may run this body directly.
        kernel.__fueltensor_native__ = body.args  # type: ignore[attr-defined]
    kernel.__doc__ = f"fuel-cpu-backend {name}: out[i] = {op.name}(lhs[i], rhs[i]) in {dtype}."
    return kernel


def _param_thunk(
    stem: str, suffix: str, dtype: np.dtype[Any], body: ParamBody, compiled: bool
) -> KernelFn:
    """Build the thunk `<stem>_<suffix>(x, k, *, out)` of an integer-scalar form; `compiled`:
    the fast path may run `_native`'s body of the same numerics instead (tested bit for bit)."""
    name = f"{stem}_{suffix}"

    def kernel(x: Array, k: int, *, out: Array) -> None:
        if x.nbytes != out.nbytes:
            raise ValueError(f"{name}: byte lengths differ: x {x.nbytes}, out {out.nbytes}")
        if x.dtype != dtype or out.dtype != dtype:
            raise TypeError(
                f"{name}: expected {dtype} input and output, got x {x.dtype}, out {out.dtype}"
            )
        body(x, out, k)

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = f"fuel-cpu-backend {name}: out[i] = {stem}(x[i], k) in {dtype}."
    if compiled and NATIVE is not None:
        # The compiled (op, dtype) numbers, so dispatch's fast path may run `_native`'s body.
        kernel.__fueltensor_native__ = (NATIVE.POWI_OP, NATIVE.DTYPES.index(dtype.name))  # type: ignore[attr-defined]
    return kernel


def _unary_thunk(
    op: str, suffix: str, dtype: np.dtype[Any], body: Callable[[Array, Array], None]
) -> KernelFn:
    """Build the thunk `<op>_<suffix>(x, *, out)`: check byte lengths and dtypes, run `body`."""
    name = f"{op}_{suffix}"

    def kernel(x: Array, *, out: Array) -> None:
        if x.nbytes != out.nbytes:
            raise ValueError(f"{name}: byte lengths differ: x {x.nbytes}, out {out.nbytes}")
        if x.dtype != dtype or out.dtype != dtype:
            raise TypeError(
                f"{name}: expected {dtype} input and output, got x {x.dtype}, out {out.dtype}"
            )
        body(x, out)

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = f"fuel-cpu-backend {name}: out[i] = {op}(x[i]) in {dtype} (compiled)."
    return kernel


def _comparison_body(row: ContractOp, dtype: np.dtype[Any], implementation: str) -> Body:
    """The body `body(lhs, rhs, out)` of comparison `row` on `dtype`: the compiled one, or
    NumPy's comparison of the operands (a half type's widened exactly to f32) in pure mode."""
    if implementation != "pure" and NATIVE is not None:
        return partial(
            NATIVE.compare,
            NATIVE.COMPARISON_OPS.index(row.kernel_op),
            NATIVE.DTYPES.index(dtype.name),
        )
    wide = np.dtype(np.float32) if dtype.itemsize == 2 else dtype

    def body(lhs: Array, rhs: Array, out: Array) -> None:
        row.host(lhs.astype(wide, copy=False), rhs.astype(wide, copy=False), out=out)

    return body


def _comparison_thunk(row: ContractOp, suffix: str, dtype: np.dtype[Any], body: Body) -> KernelFn:
    """Build the thunk `<op>_<suffix>(lhs, rhs, *, out)`: check lengths and dtypes (a bool
    `out`), run `body`."""
    name = f"{row.kernel_op}_{suffix}"

    def kernel(lhs: Array, rhs: Array, *, out: Array) -> None:
        if not (lhs.nbytes == rhs.nbytes and out.size * dtype.itemsize == lhs.nbytes):
            raise ValueError(
                f"{name}: lengths differ: lhs {lhs.size}, rhs {rhs.size}, out {out.size} elements"
            )
        if lhs.dtype != dtype or rhs.dtype != dtype or out.dtype != np.bool_:
            raise TypeError(
                f"{name}: expected {dtype} operands and a bool output, got "
                f"lhs {lhs.dtype}, rhs {rhs.dtype}, out {out.dtype}"
            )
        body(lhs, rhs, out)

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = f"fuel-cpu-backend {name}: out[i] = {row.summary} of {dtype}, exact."
    if isinstance(body, partial) and NATIVE is not None and body.func is NATIVE.compare:
        # The fast path's (op, dtype) numbers of this body: COMPARE_OP + the comparison's.
        op, code = body.args
        kernel.__fueltensor_compare__ = (NATIVE.COMPARE_OP + op, code)  # type: ignore[attr-defined]
    return kernel


def _put(out: Array, x: Array, where: Array | bool) -> None:
    """out = x where `where` holds: their bit patterns (no float is loaded: NaNs kept)."""
    width = f"u{out.itemsize}"
    np.copyto(out.view(width), x.view(width), where=where)


def _ternary_body(
    row: ContractOp, dtype: np.dtype[Any], implementation: str
) -> Callable[..., None]:
    """The body `body(a, b, c, out)` of a three-operand row on `dtype`: the compiled one, or in
    pure mode NumPy on the bit patterns: a selection's by its bool condition (`a`), or a clamp's
    by `maximum`'s rule and then `minimum`'s (a NaN operand returned as it is, x's first; the
    left kept on a tie), decided on float32 (a half type widened exactly) or float64 values."""
    if implementation != "pure" and NATIVE is not None:
        op = NATIVE.TERNARY_OPS.index(row.kernel_op)
        return partial(NATIVE.ternary, op, NATIVE.DTYPES.index(dtype.name))
    if row.family is Family.SELECT:

        def select(condition: Array, x1: Array, x2: Array, out: Array) -> None:
            _put(out, x2, True)
            _put(out, x1, condition)

        return select
    wide = np.dtype(np.float32) if dtype.itemsize == 2 else dtype

    def clamp(x: Array, low: Array, high: Array, out: Array) -> None:
        v, lo, hi = (a.astype(wide, copy=False) for a in (x, low, high))
        with np.errstate(invalid="ignore"):
            raised = (lo > v) | (np.isnan(lo) & ~np.isnan(v))
            kept = np.where(raised, lo, v)
            lowered = (hi < kept) | (np.isnan(hi) & ~np.isnan(kept))
        _put(out, x, True)
        _put(out, low, raised)
        _put(out, high, lowered)

    return clamp


def _ternary_thunk(
    row: ContractOp, suffix: str, dtype: np.dtype[Any], implementation: str
) -> KernelFn:
    """Build the thunk `<op>_<suffix>(a, b, c, *, out)` of a three-operand row: check lengths
    and dtypes (a selection's condition bool), run its body."""
    name, names = f"{row.kernel_op}_{suffix}", TRAITS[row.family].operands
    fixed = dict(TRAITS[row.family].fixed)
    want = [np.dtype(np.bool_) if n in fixed else dtype for n in names]
    body = _ternary_body(row, dtype, implementation)

    def kernel(a: Array, b: Array, c: Array, *, out: Array) -> None:
        if not (a.size == b.size == c.size == out.size):
            raise ValueError(
                f"{name}: lengths differ: {', '.join(names)} {a.size}, {b.size}, {c.size}, "
                f"out {out.size} elements"
            )
        if [a.dtype, b.dtype, c.dtype, out.dtype] != [*want, dtype]:
            expected = ", ".join(f"{n} {w}" for n, w in zip(names, want, strict=True))
            raise TypeError(
                f"{name}: expected {expected} and out {dtype}, got {a.dtype}, {b.dtype}, "
                f"{c.dtype}, out {out.dtype}"
            )
        body(a, b, c, out)

    kernel.__name__ = kernel.__qualname__ = name
    kernel.__doc__ = f"fuel-cpu-backend {name}: out = {row.summary} in {dtype}, bit for bit."
    return kernel


NEEDS_COMPILED: Final = (
    "needs the compiled kernels (fueltensor.ext._native), {why}; meanwhile "
    "fuel-reference-backend serves the function"
)
"""Why the unary contracts are not registrable where their compiled bodies cannot run."""
UNBUILT_HERE: Final = (
    "which are not built here: build them with `python setup.py build_ext --inplace` in a "
    "checkout, or `pip install fueltensor` where a C compiler is available"
)
PURE_HERE: Final = "which FUELTENSOR_PURE_NUMPY=1 turns off: unset it to run them"


def _unary_missing(implementation: str) -> str:
    """Why the unary kernels cannot run with `implementation`, "" when they can."""
    if implementation == "pure":
        # The switch the user set is the one to name: unset, an unbuilt extension says so next.
        return NEEDS_COMPILED.format(why=PURE_HERE if PURE_REQUESTED else UNBUILT_HERE)
    return ""


def _unary_entries() -> list[tuple[str, str, str, np.dtype[Any]]]:
    """(entry point, op, suffix, dtype) of every unary kernel, in table order."""
    return [
        (f"{_PREFIX}{op}_{suffix}", op, suffix, dtype)
        for op in UNARY_KERNEL_OPS
        for suffix, dtype in DTYPES
    ]


def _cast_entries() -> list[tuple[str, str, np.dtype[Any], np.dtype[Any], bool]]:
    """(entry point, kernel name, source, target, saturate) of every cast kernel."""
    return [
        (f"{_PREFIX}{name}", name, src, dst, saturate)
        for src, dst, saturate in casting.CASTS
        for name in (casting.kernel_name(src, dst, saturate),)
    ]


def _cast_missing(implementation: str) -> str:
    """Why the cast kernels cannot run with `implementation`, "" when they can: as the unary
    ones, or an extension built before `_native.convert` existed."""
    why = _unary_missing(implementation)
    if not why and NATIVE is not None and not hasattr(NATIVE, "CAST_DTYPES"):
        why = NEEDS_COMPILED.format(
            why="whose build here predates the casts: rebuild it with `python setup.py "
            "build_ext --inplace` in a checkout, or reinstall fueltensor"
        )
    return why


def _cast_thunks(implementation: str) -> dict[str, KernelFn]:
    """The compiled cast kernels (`_native.convert`), none where they cannot run (`UNLINKED`)."""
    if _cast_missing(implementation) or NATIVE is None:
        return {}
    if tuple(NATIVE.CAST_DTYPES) != tuple(str(d) for d in casting.FORMATS):
        raise ImportError(
            f"_native.CAST_DTYPES {NATIVE.CAST_DTYPES} are not casting.FORMATS "
            f"{[str(d) for d in casting.FORMATS]}: rebuild the extension"
        )
    codes = {np.dtype(d): i for i, d in enumerate(casting.FORMATS)}

    def body(src: np.dtype[Any], dst: np.dtype[Any], saturate: bool) -> casting.Convert:
        def convert(x: Array, out: Array) -> None:
            NATIVE.convert(codes[src], codes[dst], int(saturate), x, out)

        return convert

    return {
        entry: casting.thunk(name, src, dst, body(src, dst, saturate))
        for entry, name, src, dst, saturate in _cast_entries()
    }


def _fp8_entries() -> list[tuple[str, Op, str, np.dtype[Any]]]:
    """(entry point, op, suffix, dtype) of every FP8 arithmetic kernel (`kernels.fp8`)."""
    ops = set(fp8.OPS)
    return [
        (f"{_PREFIX}{op.name}_{suffix}", op, suffix, dtype)
        for op in OPS
        if op.name in ops and not op.formula
        for suffix, dtype in fp8.DTYPES
    ]


def _fp8_thunks(implementation: str) -> dict[str, KernelFn]:
    """The FP8 arithmetic kernels: the compiled casts around the float32 body, so compiled only,
    as the casts (`UNLINKED` says why where they cannot run)."""
    if _cast_missing(implementation) or NATIVE is None:
        return {}
    return {
        entry: _thunk(op, suffix, dtype, fp8.cpu_body(NATIVE, op.name, dtype))
        for entry, op, suffix, dtype in _fp8_entries()
    }


def UNLINKED() -> dict[str, str]:
    """The unary, cast and FP8 entry points this installation cannot run, each with why and what
    to do (`registry.provider_unlinked`): all of them with the pure-NumPy kernels, none else."""
    why, cast_why = _unary_missing(IMPLEMENTATION), _cast_missing(IMPLEMENTATION)
    unary = dict.fromkeys((entry for entry, *_ in _unary_entries()), why) if why else {}
    entries = [e for e, *_ in _cast_entries()] + [e for e, *_ in _fp8_entries()]
    casts = dict.fromkeys(entries, cast_why) if cast_why else {}
    return unary | casts


if sorted(BODIES) != sorted(form.kernel_op for form in SCALAR_FORMS):
    raise ImportError(
        f"the integer-scalar bodies {sorted(BODIES)} are not the op table's integer-scalar "
        f"kernel ops {[f.kernel_op for f in SCALAR_FORMS]} (fueltensor.ops)"
    )


def thunks(implementation: str = IMPLEMENTATION) -> dict[str, KernelFn]:
    """Every thunk by full `entry_point` string: the 32 binary ones with bodies from one chassis
    implementation, the integer-scalar forms' (pure NumPy in every implementation), the unary
    ones where the implementation is the compiled one (`UNLINKED`), the comparisons, the
    reductions and the matmuls (the compiled cores, or NumPy bodies of the same order:
    `kernels.reductions`, `kernels.contractions`)."""
    make = IMPLEMENTATIONS[implementation]
    binary = {
        f"{_PREFIX}{op.name}_{suffix}": _thunk(op, suffix, dtype, make(op, dtype))
        for op in OPS
        for suffix, dtype in DTYPES
    }
    scalar = {
        f"{_PREFIX}{stem}_{suffix}": _param_thunk(
            stem, suffix, dtype, BODIES[stem](dtype), implementation != "pure"
        )
        for stem in BODIES
        for suffix, dtype in DTYPES
    }
    unary = (
        {
            entry: _unary_thunk(op, suffix, dtype, _chassis.native_unary(op, dtype))
            for entry, op, suffix, dtype in _unary_entries()
        }
        if not _unary_missing(implementation)
        else {}
    )
    comparisons = {
        f"{_PREFIX}{row.kernel_op}_{suffix}": _comparison_thunk(
            row, suffix, dtype, _comparison_body(row, dtype, implementation)
        )
        for row in COMPARISON_OPS
        for suffix, dtype in DTYPES
    }
    ternary = {
        f"{_PREFIX}{row.kernel_op}_{suffix}": _ternary_thunk(row, suffix, dtype, implementation)
        for row in TERNARY_OPS
        for suffix, dtype in DTYPES
    }
    casts = _cast_thunks(implementation) | _fp8_thunks(implementation)
    reduce = reductions.cpu_entries(_PREFIX, implementation)
    contract = contractions.cpu_entries(_PREFIX, implementation)
    return binary | scalar | unary | comparisons | ternary | casts | reduce | contract


ENTRY_POINTS: Final[dict[str, KernelFn]] = thunks()
"""The provider's link registry: full `entry_point` string -> thunk (every registrable one)."""


def binary() -> tuple[Path | None, str, str]:
    """The file the binary kernels run from here (the `_native` extension module; None in
    pure-NumPy mode, whose kernels are Python over NumPy), fueltensor's version, and how."""
    from importlib.metadata import version as installed  # ~20 ms to import: only when asked

    version = installed("fueltensor")
    if IMPLEMENTATION == "native" and NATIVE is not None and NATIVE.__file__ is not None:
        return Path(NATIVE.__file__), version, "built-in extension _native"
    return None, version, "pure-NumPy kernels"


BINARY: Final = binary
