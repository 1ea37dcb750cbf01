"""Users' compiled kernels of C ABI version 2: a `ShapedKernel` (ext/src/abi.h) exported from
their shared library, linked by a contract whose entry point declares `abi: 2`.

    int NAME(int op, const TensorArg *in, int n_in, const TensorArg *out,
             const ParamArg *params, int n_params, char *error, size_t error_len);

`ft.load_library` resolves the symbol as it does every other (a missing one fails there); the
registry, linking a contract that declares `abi: 2`, makes the symbol a `ShapedCompiledKernel`
(`shaped_kernel`) with its family's thunk: a reduction's `kernel(x, axes, *, out)`, out dense of
the reduced shape, the parameter `axes` (PARAM_AXES) first; a contraction's `kernel(a, b, *,
out)`, a (..., M, K) and b (..., K, N) with their stacks broadcast (stride-0 views), out dense
(..., M, N). Every operand goes as a `TensorArg` of its own strides once each of its elements
is found inside its buffer; then the contract's `accept.op_params` (`accumulator`, `order` and
`products` as PARAM_CODE, integers such as `block` as PARAM_I64), read from the contract when
it is linked. ctypes releases the GIL for the call. A -1 return raises KernelStatusError
carrying the kernel's message. The judge and compare_backends run these kernels checked, in the
worker process of `tools.checked` (`request` is the call in its wire protocol).
"""

from __future__ import annotations

import ctypes
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Final

import numpy as np
from numpy.typing import NDArray

from fueltensor.core.dtypes import BY_FKC
from fueltensor.core.errors import ContractError, KernelStatusError
from fueltensor.families import TRAITS, Family
from fueltensor.fkc.semantics import SUBNORMALS
from fueltensor.kernels import KernelFn
from fueltensor.kernels.compiled import CompiledKernel
from fueltensor.kernels.contraction_thunk import stacked
from fueltensor.kernels.shaped_abi import (
    PARAM_CODE,
    PARAM_F64,
    PARAM_I64,
    PROTOTYPE,
    Param,
    Tensor,
    arguments,
    message,
)
from fueltensor.ops import BY_KIND, CONTRACTION_PAIRS, CONTRACTION_PRODUCTS, of_family

if TYPE_CHECKING:
    from fueltensor.fkc.schema import KernelContract

ABI_DTYPES: Final = (
    "F32", "F64", "BF16", "F16", "F8_E4M3FN", "F8_E5M2", "F4_E2M1FN",
    "I8", "I16", "I32", "I64", "U8", "BOOL",
)  # fmt: skip
"""The v2 dtype codes in abi.h's order (its dtype enums; tests/kernels/test_shaped_kernels.py
holds them equal), each spelled as the FKC code of the same format."""
ABI_ORDERS: Final = ("sequential", "pairwise", "blocked", "pairs_odd_first")
"""The `order` codes in abi.h's `ORDER_*` order (the same test holds them equal); the last is
a contraction's `order: sequential` with `pairs: odd_first` and `subnormals: flushed`, the
contract's three fields as one code (`kernels.contractions`)."""
_CODES: Final = {BY_FKC[c].np: i for i, c in enumerate(ABI_DTYPES) if c in BY_FKC}
"""NumPy dtype -> v2 dtype code, for the formats NumPy holds."""


def _param(name: str, value: object) -> tuple[str, int, int | float] | str:
    """One `op_params` entry as (name, ParamType, value), or why ABI v2 cannot carry it."""
    for key, codes in (
        ("accumulator", ABI_DTYPES),
        ("order", ABI_ORDERS[:-1]),
        ("products", CONTRACTION_PRODUCTS),
    ):
        if name == key and value in codes:
            return (name, PARAM_CODE, codes.index(str(value)))
    if isinstance(value, int) and not isinstance(value, bool) and -(2**63) <= value < 2**63:
        return (name, PARAM_I64, value)
    if isinstance(value, float):
        return (name, PARAM_F64, value)
    return (
        f"op_params.{name} {value!r} has no ABI v2 form: an accumulator is one of "
        f"{', '.join(ABI_DTYPES)}, an order one of {', '.join(ABI_ORDERS[:-1])}, products one "
        f"of {', '.join(CONTRACTION_PRODUCTS)}, any other parameter an integer or a float"
    )


def _params(c: KernelContract) -> list[tuple[str, int, int | float]] | str:
    """`c`'s `op_params` as ABI v2 parameters, a contraction's `pairs: odd_first` folded into
    its order's code (abi.h's ORDER_PAIRS_ODD_FIRST: order sequential, pairs odd first,
    subnormals flushed, the three fields as one); or why they have no ABI v2 form."""
    values, folded = dict(c.op_params), []
    pairs = values.pop("pairs", None)
    if pairs is not None:
        flushed = c.semantics is not None and c.semantics.subnormals == SUBNORMALS[1]
        if pairs != CONTRACTION_PAIRS[0] or values.get("order") != ABI_ORDERS[0] or not flushed:
            return (
                f"{c.name}: op_params.pairs {pairs!r} has an ABI v2 form only as VDPBF16PS's "
                f"order (abi.h's ORDER_PAIRS_ODD_FIRST): pairs: {CONTRACTION_PAIRS[0]} with "
                f"order: {ABI_ORDERS[0]} and semantics.subnormals: {SUBNORMALS[1]}"
            )
        del values["order"]
        folded = [("order", PARAM_CODE, len(ABI_ORDERS) - 1)]
    params = [*folded, *(_param(name, value) for name, value in values.items())]
    problems = [p for p in params if isinstance(p, str)]
    if problems:
        return f"{c.name}: {'; '.join(problems)}"
    return [p for p in params if not isinstance(p, str)]


def _version_problem(c: KernelContract, version: int) -> str | None:
    """Why a compiled kernel of C ABI `version` cannot serve `c`'s op kind: its family takes
    another version (`families.TRAITS`), or it declares one for an op kind none of the table's."""
    row = BY_KIND.get(c.op_kind)
    if row is None and c.abi is None:
        return None  # a user's own op kind: its kernels' calling is theirs to say
    if row is None:
        return f"{c.op_kind} is no op of the table, so no family says which C ABI it takes"
    wants = TRAITS[row.family].abi
    if version == wants:
        return None
    said = f"declares abi: {c.abi}" if c.abi is not None else "declares no abi (version 1)"
    return (
        f"{c.name} {said}, but {c.op_kind} is a {row.family} operation, whose compiled kernels "
        f"take C ABI version {wants} ({TRAITS[row.family].c_body}); accepted: abi: {wants} "
        "beside its entry_point"
    )


def abi_errors(contracts: Iterable[KernelContract]) -> list[ContractError]:
    """One error, at its `abi` line, per registrable contract whose declared `abi` its op kind
    cannot take: what the registry checks of every document before it links any, and what
    `fueltensor contracts --check` reports."""
    out = []
    for c in contracts:
        problem = _version_problem(c, c.abi) if c.registrable and c.abi is not None else None
        if problem is not None:
            line = c.source.lines.get("abi", c.source.line)
            out.append(ContractError(problem, path=c.source.path, line=line, field="abi"))
    return out


def linked(c: KernelContract, fn: KernelFn) -> KernelFn | str:
    """The kernel contract `c` links for the provider's `fn`: `fn` itself, or for `abi: 2` its
    symbol called through ABI v2; or why it cannot (a compiled kernel declared as version 1 for a
    family of another version, a Python callable under a declared `abi`, op_params with no ABI
    v2 form)."""
    if not isinstance(fn, CompiledKernel):
        if c.abi is None:
            return fn
        return (
            f"{c.name} declares abi: {c.abi}, but its entry point {c.entry_point!r} maps to a "
            "Python callable; accepted: a symbol of ft.load_library, or no abi"
        )
    problem = _version_problem(c, 1 if c.abi is None else c.abi)
    if problem is not None:
        return problem
    return fn if c.abi in (None, 1) else shaped_kernel(c, fn)


def shaped_kernel(c: KernelContract, fn: CompiledKernel) -> ShapedCompiledKernel | str:
    """`fn`'s symbol called through ABI v2 for contract `c` (its op code, its family's operands
    and its `op_params` bound now), or why the contract's parameters have no ABI v2 form."""
    params = _params(c)
    if isinstance(params, str):
        return params
    row = BY_KIND[c.op_kind]
    return ShapedCompiledKernel(fn, of_family(row.family).index(row), params, row.family)


def _span(a: NDArray[Any]) -> tuple[int, int]:
    """The first and one past the last byte address `a`'s elements occupy (size > 0)."""
    lo = hi = int(a.__array_interface__["data"][0])
    for n, s in zip(a.shape, a.strides, strict=True):
        reach = (n - 1) * s
        lo, hi = lo + min(reach, 0), hi + max(reach, 0)
    return lo, hi + a.itemsize


def _buffer_span(a: NDArray[Any]) -> tuple[int, int] | None:
    """The bytes of the buffer `a`'s elements live in: those of the array at the end of its
    chain of bases (through an as_strided view's holder and a memoryview's object), or of the
    buffer object under it; None where no buffer can be found (nothing to check against)."""
    owner, base = a, a.base
    while base is not None:
        inner = base.obj if isinstance(base, memoryview) else base
        inner = inner if isinstance(inner, np.ndarray) else getattr(inner, "base", None)
        if not isinstance(inner, np.ndarray):
            break
        owner, base = inner, inner.base
    if base is None:
        return _span(owner) if owner.size else None
    try:
        whole = np.asarray(memoryview(base))
    except (TypeError, ValueError, BufferError):
        return None
    return _span(whole) if whole.size else None


def _operand_problem(name: str, x: object) -> str | None:
    """Why operand `name` cannot be handed over as a TensorArg: not an array of a v2 dtype, or
    an element outside its buffer (a view made with as_strided past its end, say)."""
    if not isinstance(x, np.ndarray) or x.dtype not in _CODES:
        kind = x.dtype if isinstance(x, np.ndarray) else type(x).__name__
        return f"{name} must be an ndarray of a v2 dtype ({', '.join(ABI_DTYPES)}), got {kind}"
    if x.size == 0:
        return None
    buffer = _buffer_span(x)
    lo, hi = _span(x)
    if buffer is None or not (buffer[0] <= lo and hi <= buffer[1]):
        return f"{name} names elements outside its buffer (or a buffer that cannot be found)"
    return None


Operands = tuple[NDArray[Any], ...]
Shaped = tuple[Operands, tuple[int, ...], "tuple[int, ...] | None"]
"""A call as C receives it: the operands, the shape of out, and the axes (a reduction's)."""


def _reduced(x: NDArray[Any], axes: object) -> Shaped | str:
    """A reduction's call: x as it is, out of x's shape without `axes`, the axes."""
    if not isinstance(axes, tuple) or not all(isinstance(a, (int, np.integer)) for a in axes):
        return f"axes must be a tuple of ints, got {axes!r}"
    if list(axes) != sorted(set(axes)) or any(not 0 <= a < x.ndim for a in axes):
        return f"axes must be sorted, distinct axes of the {x.ndim}-d x, got {axes}"
    shape = tuple(n for i, n in enumerate(x.shape) if i not in axes)
    return (x,), shape, tuple(int(a) for a in axes)


def _contracted(a: NDArray[Any], b: NDArray[Any]) -> Shaped | str:
    """A contraction's call: a (..., M, K) and b (..., K, N) with their stacks broadcast to one
    shape (stride-0 views, nothing copied), out (..., M, N), no axes."""
    if a.ndim < 2 or b.ndim < 2 or a.shape[-1] != b.shape[-2]:
        return f"a and b must be (..., M, K) and (..., K, N), got {a.shape} and {b.shape}"
    try:
        wide_a, wide_b, shape = stacked(a, b)  # as every provider's Python thunk has them
    except ValueError:
        return f"the stacks of a {a.shape} and b {b.shape} do not broadcast"
    return (wide_a, wide_b), shape, None


_CALLS: Final[Mapping[Family, Callable[..., Shaped | str]]] = {
    Family.REDUCTION: _reduced,
    Family.CONTRACTION: _contracted,
}
"""How each ABI v2 family's thunk arguments become the C call's operands and out's shape."""


def _out_problem(out: object, shaped: Shaped) -> str | None:
    """Why `out` cannot take the call's result: not a dense, writable array of its shape and a
    v2 dtype, or overlapping an operand."""
    operands, shape, _ = shaped
    if not isinstance(out, np.ndarray) or out.dtype not in _CODES:
        return "out must be an ndarray of a v2 dtype"
    if out.shape != shape or not out.flags.c_contiguous or not out.flags.writeable:
        return f"out must be a dense, writable array of shape {shape}, got {out.shape}"
    if any(np.may_share_memory(x, out) for x in operands):
        return "out overlaps an operand"
    return None


class ShapedCompiledKernel:
    """One ABI v2 symbol of a loaded library bound to its contract, called as its family's thunk
    (`kernel(x, axes, *, out)`, `kernel(a, b, *, out)`)."""

    __slots__ = ("__name__", "_fn", "compiled", "family", "library", "op", "params", "symbol")

    def __init__(
        self,
        compiled: CompiledKernel,
        op: int,
        params: list[tuple[str, int, Any]],
        family: Family,
    ) -> None:
        self.compiled = compiled
        """The symbol as `ft.load_library` loaded it (its library's private copy)."""
        self._fn = PROTOTYPE(compiled.address)
        self.op = op
        """The `op` argument: the row's place in its family's C enum (ext/src/ops.h)."""
        self.params: tuple[Param, ...] = tuple(
            (name.encode(), kind, value) for name, kind, value in params
        )
        """(name, ParamType, value) of the contract's `op_params`, passed after the family's own
        (a reduction's `axes`), each name encoded once here."""
        self.family = family
        """The op's family: which thunk this is, what its operands are (`families.TRAITS`)."""
        self.library = compiled.library
        self.symbol = compiled.symbol
        self.__name__ = compiled.symbol

    def __repr__(self) -> str:
        """The symbol and the library it came from."""
        return f"<compiled ABI v2 kernel {self.symbol} from {self.library}>"

    def _shaped(self, args: tuple[object, ...], out: object) -> Shaped:
        """The call as C receives it, checked before anything is built; ValueError, naming the
        symbol, where it cannot be handed over as it stands."""
        traits = TRAITS[self.family]
        if len(args) != len(traits.operands) + len(traits.params):
            raise ValueError(f"{self.symbol}: takes {traits.thunk}")
        for name, x in zip(traits.operands, args, strict=False):
            problem = _operand_problem(name, x)
            if problem is not None:
                raise ValueError(f"{self.symbol}: {problem}")
        shaped = _CALLS[self.family](*args)
        if isinstance(shaped, str):
            raise ValueError(f"{self.symbol}: {shaped}")
        problem = _out_problem(out, shaped)
        if problem is not None:
            raise ValueError(f"{self.symbol}: {problem}")
        return shaped

    def request(
        self, args: tuple[object, ...], out_shape: tuple[int, ...], out_dtype: Any
    ) -> tuple[dict[str, Any], list[bytes]]:
        """The call in the checked worker's wire protocol (its `shaped` header, which the
        worker packs with `shaped_abi.arguments` as `__call__` does) and, per operand, the bytes
        its elements span, its element 0 at its `offset` in them; ValueError where `__call__`
        refuses."""
        out = np.empty(out_shape, out_dtype)
        operands, _, axes = self._shaped(args, out)
        layouts, spans = [], []
        for x in operands:
            address = int(x.__array_interface__["data"][0])
            lo, hi = _span(x) if x.size else (address, address)
            layouts.append(
                {
                    "dtype": _CODES[x.dtype],
                    "shape": list(x.shape),
                    "strides": list(x.strides),
                    "offset": address - lo,
                }
            )
            spans.append(ctypes.string_at(lo, hi - lo))
        form = {
            "op": self.op,
            "inputs": layouts,
            "out_dtype": _CODES[out.dtype],
            "out_shape": list(out.shape),
            "out_strides": list(out.strides),
            "axes": None if axes is None else list(axes),
            "params": [[name.decode(), kind, value] for name, kind, value in self.params],
        }
        return form, spans

    def __call__(self, *args: object, out: NDArray[Any]) -> None:
        """Hand the operands, out and the parameters to the C function; KernelStatusError on
        -1."""
        operands, _, axes = self._shaped(args, out)
        given = [
            Tensor(_CODES[x.dtype], x.shape, x.strides, x.__array_interface__["data"][0])
            for x in (*operands, out)
        ]
        call = arguments(self.op, given[:-1], given[-1], axes, self.params)
        status = self._fn(*call.call)
        if status != 0:
            said = message(call.error.raw)
            raise KernelStatusError(
                f"{self.symbol} ({self.library}) returned {status}: {said}",
                status=status,
                symbol=self.symbol,
            )
