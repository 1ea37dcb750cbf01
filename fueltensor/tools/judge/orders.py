"""A reduction contract's declared accumulation (docs/reductions.md), and an independent
simulator of the orders that fix a sum's or a product's bits, for the judge's reduction audit
(`judge.reductions`, `judge.products`).

A contract declares in `accept.op_params`: `accumulator` (an FKC dtype code: every partial sum
is held in it), `order` (one of `ops.REDUCTION_ORDERS`; none declared: any order), `block` (B,
for `blocked` and `pairwise`) and, for `blocked`, optionally `lanes` (L). For the m reduced
elements x_0 .. x_{m-1} of one output, in row-major order of the reduced axes, each converted
to the accumulator:

* `sequential`: ((x_0 + x_1) + x_2) + ... : the fold starts from x_0 (not from +0, so a row of
  -0 sums to -0, as IEEE 754 and `kernels.exact_sums` have it); an empty row is +0.
* `blocked`, block B: the row cut into ⌈m/B⌉ blocks of B consecutive elements (the last one
  shorter when B does not divide m). Each block is summed sequentially, as above; or, with
  `lanes: L`, element j of a block (counted from the block's start) goes to lane j mod L, each
  lane (those holding an element: min(L, block length)) summed sequentially, and the lanes'
  sums combined by the tree below over lane indices. The blocks' sums are combined by the
  tree over block indices.
* **The tree** over c parts p_0 .. p_{c-1} (c >= 1): tree(p_0) = p_0; otherwise, with h the
  largest power of two strictly below c, tree(p_0 .. p_{c-1}) = tree(p_0 .. p_{h-1}) +
  tree(p_h .. p_{c-1}), the left operand first. So 2 parts: p0 + p1; 3: (p0 + p1) + p2;
  4: (p0 + p1) + (p2 + p3); 5: ((p0 + p1) + (p2 + p3)) + p4; 6: (...) + (p4 + p5).
* The result, held in the accumulator, is rounded once to the output's dtype (nearest even).

`pairwise` (NumPy's recursion) and an undeclared order only bound the bits: the judge holds
them to the bound, |s^ - s| <= γ_k Σ|x_i| + ½ ulp_out(s^), γ_k = k·u / (1 - k·u), u = 2^-p
the accumulator's unit roundoff, k from the order (`Declared.k`). Every k is capped at m - 1,
which bounds any order of m - 1 additions (Higham, Accuracy and Stability of Numerical
Algorithms, §4.2).

A contraction (docs/matmul.md) declares the same over the K products of one output, and how the
products enter the sums (`products`, `ops.CONTRACTION_PRODUCTS`): `exact` (exact in the
accumulator: the inputs' precision at most half the accumulator's, which the declaration's
reader checks), `fused` (each added by an FMA: one rounding per term, the first product's too)
or `rounded` (each rounded to the accumulator, then added). The bound's k counts one more
rounding for `fused` and `rounded` products (Higham §3.1), and for a contraction that declares
no `products` (held to `rounded`'s bound, its bits not simulated). `pairs: odd_first`
(VDPBF16PS) takes K's products two at a time, (p_0, p_1), (p_2, p_3), ..., and adds each pair's
odd one first (`PAIRED`): the order runs over p_1, p_0, p_3, p_2, ..., an odd K's last alone;
simulated for `sequential` and for `blocked` of an even block without lanes (the pairs never
cross a block), bound only otherwise. `exact` is simulated as `fused` (the product
taken exactly, added by an FMA): the same bits wherever the product fits the accumulator, and
the kernel's where it does not (a BF16 product past float32's range, 2^64 · 2^64). A
contraction declaring `semantics.subnormals: flushed` reads subnormal operands as zeros of their
sign and flushes every step's result below the accumulator's smallest normal (tiny after
rounding to its precision with an unbounded exponent, as x86 detects it) to a zero of its sign.

A product takes the same orders with multiplication (an in-order fold from its first element,
an empty row +1) and is bounded by |p^ - p| <= γ_(m-1)·|p| + ½ ulp_out(p^) in any order, but only
where no partial product leaves the accumulator's normal range (`leaves_range`): past it, an
overflow or an underflow decides the result (an infinity, a zero, inf·0 = NaN), which no bound
on the exact product describes.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace
from fractions import Fraction
from typing import Any, Final

import numpy as np

from fueltensor.core.dtypes import BY_FKC
from fueltensor.fkc.schema import KernelContract
from fueltensor.fkc.semantics import SUBNORMALS
from fueltensor.kernels.casting import bits_of
from fueltensor.ops import (
    CONTRACTION_BY_KIND,
    CONTRACTION_PAIRS,
    CONTRACTION_PRODUCTS,
    REDUCTION_ORDERS,
)

Array = np.ndarray[Any, Any]
SEQUENTIAL, BLOCKED, PAIRWISE = REDUCTION_ORDERS
EXACT_PRODUCTS, FUSED, ROUNDED = CONTRACTION_PRODUCTS
BITWISE = (SEQUENTIAL, BLOCKED)
"""The orders that fix the bits (the judge simulates them); the others only bound them."""
FLOATS = ("F32", "F64", "BF16", "F16")
"""The accumulators a reduction contract may declare, with `EXACT`."""
PAIRED: Final = {CONTRACTION_PAIRS[0]: (1, 0)}
"""Each `pairs` declaration's order inside a pair of K: the offsets added first to last."""
EXACT = "exact"
"""The accumulator of an exact sum (the oracle's, `kernels.exact_sums`): no rounding but the
last, so no order and a bound of half an ULP of the output (k = 0)."""


def _log2_ceil(n: int) -> int:
    """⌈log2 n⌉ for n >= 1."""
    return (n - 1).bit_length()


@dataclass(frozen=True)
class Declared:
    """A reduction contract's accumulator and order (see the module docstring)."""

    accumulator: str
    order: str | None
    block: int
    lanes: int = 1
    zero_tie: str = "ordered"
    """A maximum's or minimum's +0 against -0 (`semantics.zero_tie`, folded over the row in
    order): `ordered` (IEEE 754-2019: -0 < +0), `lhs` (the first zero), `rhs` (the last) or
    `either`; a contract that declares none is held to `ordered`."""
    products: str | None = None
    """A contraction's `products` (`CONTRACTION_PRODUCTS`); None for a sum, or a contraction
    that declares none."""
    pairs: str | None = None
    """A contraction's `pairs` (`CONTRACTION_PAIRS`), None where it declares none."""
    contraction: bool = False
    """Whether the declaration is a contraction's (the terms are products)."""
    subnormals: str | None = None
    """A contraction's `semantics.subnormals` (kept where None), `flushed`: operands read as
    zeros, every step's result below the accumulator's normal range flushed."""

    @property
    def flushed(self) -> bool:
        """Whether the declaration flushes subnormals (inputs and each step's result)."""
        return self.subnormals == SUBNORMALS[1]

    @property
    def dtype(self) -> np.dtype[Any]:
        """The accumulator's NumPy dtype."""
        return BY_FKC[self.accumulator].np

    @property
    def fixes_bits(self) -> bool:
        """Whether the order fixes the bits (so the judge holds the kernel to them): for a
        contraction, with its products declared, no pairs, and an FMA simulated exactly (the
        accumulator narrower than float64, `fused_add`), its pairs, if any, inside its blocks
        (`sequential`, or `blocked` of an even block without lanes)."""
        if not self.contraction:
            return self.order in BITWISE
        fused_f64 = self.products == FUSED and self.accumulator == "F64"
        even_blocks = self.order == BLOCKED and self.lanes == 1 and self.block % 2 == 0
        paired = self.pairs is None or self.order == SEQUENTIAL or even_blocks
        return self.order in BITWISE and self.products is not None and not fused_f64 and paired

    @property
    def unit_roundoff_bits(self) -> int:
        """p of the accumulator's unit roundoff u = 2^-p."""
        return bits_of(self.dtype).mantissa + 1

    def k(self, m: int, product: bool = False) -> int:
        """The bound's k for m reduced elements (docs/reductions.md), at most m - 1: a
        product's is m - 1 in any order (every multiplication one rounding, relative); one more
        for a contraction's products rounded or fused (or undeclared)."""
        if self.accumulator == EXACT:
            return 0
        extra = int(self.contraction and m >= 1 and self.products != EXACT_PRODUCTS)
        return self._order_k(m, product) + extra

    def _order_k(self, m: int, product: bool) -> int:
        """The order's k for m terms (of a sum, or a `product`), at most m - 1."""
        if m <= 1:
            return 0
        if product:
            return m - 1
        b = min(self.block, m)
        tree = _log2_ceil(-(-m // self.block))
        if self.order == BLOCKED and self.lanes > 1:
            inside = -(-b // self.lanes) - 1 + _log2_ceil(min(self.lanes, b))
        elif self.order == BLOCKED:
            inside = b - 1
        elif self.order == PAIRWISE:
            inside = self.block // 8 + 7
        else:
            return m - 1
        return min(inside + tree, m - 1)

    def gamma(self, m: int, product: bool = False) -> Fraction | None:
        """γ_k = k·u / (1 - k·u) for m elements (of a sum, or a `product`), exactly; None where
        k·u >= 1, a row too long for the accumulator to bound (NumPy's bfloat16 sum, in
        bfloat16, past 256 elements)."""
        k = self.k(m, product)
        if k == 0:  # an exact sum's too: its accumulator has no unit roundoff
            return Fraction(0)
        scale = 1 << self.unit_roundoff_bits
        return Fraction(k, scale - k) if k < scale else None

    def describe(self) -> str:
        """The declaration in words, for the audit's notes and failures."""
        if self.accumulator == EXACT:
            return "exact, rounded once to the output"
        order = self.order or "any order (none declared)"
        if self.order in (BLOCKED, PAIRWISE):
            order += f", block {self.block}"
        if self.lanes > 1:
            order += f", {self.lanes} lanes"
        products = f", products {self.products or 'undeclared'}" if self.contraction else ""
        pairs = f", pairs {self.pairs}" if self.pairs else ""
        subnormals = f", subnormals {self.subnormals}" if self.subnormals else ""
        return f"{order}, accumulator {self.accumulator}{products}{pairs}{subnormals}"

    def flush_slack(self, m: int) -> Fraction:
        """The absolute error flushing may add to a contraction of m terms: each of its m
        roundings may lose a result below the accumulator's smallest normal, grown by the later
        roundings (1 + γ); 0 where nothing is flushed."""
        if not self.flushed or m == 0:
            return Fraction(0)
        gamma = self.gamma(m) or Fraction(0)
        return m * Fraction(2) ** bits_of(self.dtype).min_exp * (1 + gamma)


def declared(contract: KernelContract) -> Declared | str:
    """The contract's declaration, or why the judge cannot read one (a failure)."""
    params = contract.op_params
    where = f"{contract.source.path}:{contract.source.lines.get('op_params', contract.source.line)}"
    accumulator, order = params.get("accumulator"), params.get("order")
    block, lanes = params.get("block", 128), params.get("lanes", 1)
    if accumulator not in (*FLOATS, EXACT):
        return (
            f"{where}: op_params.accumulator {accumulator!r} is not one of "
            f"{', '.join(FLOATS)}, {EXACT}"
        )
    if accumulator == EXACT and order is not None:
        return f"{where}: op_params.order {order!r} is declared for an exact sum, which has none"
    if order is not None and order not in REDUCTION_ORDERS:
        return f"{where}: op_params.order {order!r} is not one of {', '.join(REDUCTION_ORDERS)}"
    for key, value in (("block", block), ("lanes", lanes)):
        if isinstance(value, bool) or not isinstance(value, int) or value < 1:
            return f"{where}: op_params.{key} {value!r} is not a positive integer"
    if order != BLOCKED and "lanes" in params:
        return f"{where}: op_params.lanes is declared for a {order or 'undeclared'} order"
    assert isinstance(block, int) and isinstance(lanes, int)
    order_name = None if order is None else str(order)
    plain = Declared(str(accumulator), order_name, block, lanes, tie(contract))
    if contract.op_kind not in CONTRACTION_BY_KIND:
        return plain
    return _contraction(contract, plain, where)


def _contraction(contract: KernelContract, plain: Declared, where: str) -> Declared | str:
    """A contraction's declaration: `plain`'s with its `products` and `pairs`, checked (the
    product exact in the accumulator only where the inputs' precision is at most half its)."""
    params = contract.op_params
    products, pairs = params.get("products"), params.get("pairs")
    for key, value, vocabulary in (
        ("products", products, CONTRACTION_PRODUCTS),
        ("pairs", pairs, CONTRACTION_PAIRS),
    ):
        if value is not None and value not in vocabulary:
            return f"{where}: op_params.{key} {value!r} is not one of {', '.join(vocabulary)}"
    if products == EXACT_PRODUCTS and plain.accumulator != EXACT:
        for code in contract.inputs[0].dtypes:
            bits = bits_of(BY_FKC[code].np).mantissa + 1
            if 2 * bits > plain.unit_roundoff_bits:
                return (
                    f"{where}: op_params.products exact: a {code} x {code} product has up to "
                    f"{2 * bits} significant bits, the {plain.accumulator} accumulator holds "
                    f"{plain.unit_roundoff_bits}; declare fused or rounded"
                )
    return replace(
        plain,
        products=None if products is None else str(products),
        pairs=None if pairs is None else str(pairs),
        contraction=True,
        subnormals=contract.semantics.subnormals if contract.semantics is not None else None,
    )


def tie(contract: KernelContract) -> str:
    """The contract's declared `semantics.zero_tie`, `ordered` where it declares none."""
    declared = contract.semantics.zero_tie if contract.semantics is not None else None
    return declared or "ordered"


# -- the simulator ------------------------------------------------------------------------------

Join = Callable[[Array, Array], Array]
"""How the simulator combines two partial results: np.add for a sum, np.multiply for a
product, or a `Watch` of the product's range."""


def _fold(x: Array, join: Join) -> Array:
    """Each row of the last axis joined sequentially, from its first element."""
    total: Array = x[..., 0].copy()
    for j in range(1, x.shape[-1]):
        total = join(total, x[..., j])
    return total


def tree(parts: Array, join: Join = np.add) -> Array:
    """The fixed pairwise tree over the last axis (the module docstring's)."""
    count = parts.shape[-1]
    if count == 1:
        alone: Array = parts[..., 0].copy()
        return alone
    half = 1 << (count - 1).bit_length() - 1
    total: Array = join(tree(parts[..., :half], join), tree(parts[..., half:], join))
    return total


Fold = Callable[[Array], Array]
"""Each row of the last axis joined sequentially (`_fold` with a `Join`, or an FMA chain
`fused_fold`)."""


def flush_rounded(x: Array, dtype: np.dtype[Any]) -> Array:
    """Float64 values rounded to `dtype`, those below its smallest normal once rounded to its
    precision with an unbounded exponent (x86's tininess, after rounding) flushed to zeros of
    their sign: a flushing step's result, or a flushing kernel's operands (their own dtype)."""
    min_exp = bits_of(dtype).min_exp
    tiny = 2.0**min_exp
    with np.errstate(all="ignore"):
        x = x.astype(np.float64)
        scaled = (x * 2.0**-min_exp).astype(dtype).astype(np.float64) * tiny
        unbounded = np.where(np.abs(x) < 2 * tiny, scaled, x)
        flushed: Array = np.where(np.abs(unbounded) < tiny, np.copysign(0.0, x), x).astype(dtype)
    return flushed


def _flushing(join: Join, dtype: np.dtype[Any]) -> Join:
    """`join` with its result flushed (`flush_rounded`: exact, the result is already rounded)."""
    return lambda x, y: flush_rounded(join(x, y), dtype)


def paired(m: int, pairs: str) -> Array:
    """The indices of m terms in the order a `pairs` declaration adds them (`PAIRED` inside
    each pair of consecutive terms, an odd m's last alone)."""
    whole = m - m % 2
    head = np.arange(0, whole, 2)[:, None] + np.array(PAIRED[pairs])
    index: Array = np.concatenate([head.reshape(-1), np.arange(whole, m)])
    return index


def fused_fold(dtype: np.dtype[Any], flush: bool = False) -> Fold:
    """The sequential fold of exact float64 products by FMAs in the accumulator `dtype` (narrower
    than float64): the first product rounded once, then each sum of the running total and the
    next exact product rounded once, to odd in float64 (TwoSum's error decides the last bit)
    and then to `dtype`, which is the sum correctly rounded since 53 >= p + 2; each result
    flushed where `flush` (`flush_rounded`)."""

    def narrow(x: Array) -> Array:
        return flush_rounded(x, dtype) if flush else x.astype(dtype)

    def fold(x: Array) -> Array:
        total: Array = narrow(x[..., 0])
        for j in range(1, x.shape[-1]):
            wide, term = total.astype(np.float64), x[..., j]
            s = wide + term
            back = s - wide
            error = (wide - (s - back)) + (term - back)
            even = (s.view(np.int64) & 1) == 0
            nudge = (error != 0) & even & np.isfinite(s)
            s = np.where(nudge, np.nextafter(s, np.copysign(np.inf, error)), s)
            total = narrow(s)
        return total

    return fold


def _block_sums(x: Array, lanes: int, fold: Fold, join: Join) -> Array:
    """The results of blocks of one length (x: outputs, blocks, length), each sequential or in
    `lanes` interleaved lanes combined by the tree."""
    if lanes <= 1 or x.shape[-1] == 1:
        return fold(x)
    used = min(lanes, x.shape[-1])
    parts = [fold(x[..., lane::lanes]) for lane in range(used)]
    return tree(np.stack(parts, axis=-1), join)


def _blocked(acc: Array, block: int, lanes: int, fold: Fold, join: Join) -> Array:
    """The blocked order over the rows of `acc` (outputs, m), m >= 1."""
    outputs, m = acc.shape
    full, rest = divmod(m, block)
    sums = []
    if full:
        head = acc[:, : full * block].reshape(outputs, full, block)
        sums.append(_block_sums(head, lanes, fold, join))
    if rest:
        tail = acc[:, full * block :].reshape(outputs, 1, rest)
        sums.append(_block_sums(tail, lanes, fold, join))
    return tree(np.concatenate(sums, axis=1), join)


def _ordered(acc: Array, d: Declared, join: Join, fold: Fold | None = None) -> Array:
    """The declared order (`BITWISE`) over the rows of `acc` (outputs, m), m >= 1: its runs
    folded by `fold` (`join` in order where none is given), the parts joined by `join`."""
    run = fold or (lambda x: _fold(x, join))
    return run(acc) if d.order == SEQUENTIAL else _blocked(acc, d.block, d.lanes, run, join)


def simulate(table: Array, d: Declared, out: np.dtype[Any], product: bool = False) -> Array:
    """What the declared order gives for each row of `table` (outputs, terms), in `out`: its
    sum, or its `product` (an empty one +1); only for the orders that fix the bits
    (`Declared.fixes_bits`). A contraction's terms are its exact products in float64:
    `rounded` ones converted to the accumulator, `fused` and `exact` ones added by FMAs (an
    F64 accumulator adds exact ones as they are: they are exact in it); in the order of its
    `pairs`, each result flushed where it flushes subnormals (its operands flushed already)."""
    assert d.fixes_bits, d
    if table.shape[1] == 0:
        return np.full(table.shape[0], 1 if product else 0, out)
    wide = d.products in (FUSED, EXACT_PRODUCTS) and d.accumulator != "F64"
    if d.pairs is not None:
        table = table[:, paired(table.shape[1], d.pairs)]
    with np.errstate(all="ignore"):
        if d.flushed and not wide:
            acc = flush_rounded(table, d.dtype)
        else:
            acc = np.ascontiguousarray(table.astype(np.float64 if wide else d.dtype))
        join: Join = np.multiply if product else np.add
        join = _flushing(join, d.dtype) if d.flushed else join
        total = _ordered(acc, d, join, fused_fold(d.dtype, d.flushed) if wide else None)
        return np.asarray(total, d.dtype).reshape(-1).astype(out)


class Watch:
    """np.multiply that notes, per output (the leading axis of every operand), whether a
    product left the accumulator's normal range (a subnormal, a zero or an infinity)."""

    def __init__(self, dtype: np.dtype[Any], outputs: int) -> None:
        """Watch products in `dtype` of `outputs` rows."""
        self.tiny = np.array(2.0 ** bits_of(dtype).min_exp, dtype)
        self.left = np.zeros(outputs, bool)

    def __call__(self, a: Array, b: Array) -> Array:
        """a * b, its range noted."""
        product: Array = np.multiply(a, b)
        magnitude = np.abs(product)
        out = (magnitude < self.tiny) | np.isinf(magnitude)
        self.left |= out.reshape(out.shape[0], -1).any(axis=1)
        return product


def leaves_range(table: Array, d: Declared) -> Array:
    """Per row of `table` (outputs, m), whether a partial product of its finite nonzero
    elements (the others taken as 1: an infinity, a zero or a NaN is a special of its own)
    leaves the accumulator's normal range, an element included: in the declared order's own
    partial products where it fixes the bits; for any other order, where the product of the
    magnitudes above 1 may overflow or that of those below 1 underflow (every partial product
    of any order lies between the two). An exact product leaves no range but its result's."""
    if d.accumulator == EXACT or table.shape[1] == 0:
        return np.zeros(table.shape[0], bool)
    with np.errstate(invalid="ignore"):
        wide = table.astype(np.float64)
    usable = np.isfinite(wide) & (wide != 0)
    acc = np.where(usable, wide, 1.0).astype(d.dtype)
    if not d.fixes_bits:
        return _spread(acc, d.dtype)
    with np.errstate(all="ignore"):
        watch = Watch(d.dtype, table.shape[0])
        watch.left |= (np.abs(acc) < watch.tiny).any(axis=1) | np.isinf(acc).any(axis=1)
        _ordered(np.abs(acc), d, watch)
    return watch.left


def _spread(acc: Array, dtype: np.dtype[Any]) -> Array:
    """Per row, whether the product of the magnitudes above 1 may pass the largest finite value
    of `dtype`, or that of those below 1 fall under its smallest normal one (frexp's exponents:
    |x| < 2^e, |x| >= 2^(e-1))."""
    info = bits_of(dtype)
    _, power = np.frexp(np.abs(acc.astype(np.float64)))
    big = np.where(np.abs(acc) > 1, power, 0).astype(np.int64).sum(axis=1)
    small = np.where(np.abs(acc) < 1, power - 1, 0).astype(np.int64).sum(axis=1)
    left: Array = (big > info.bias) | (small < info.min_exp)
    return left


def selected(table: Array, out: np.dtype[Any], largest: bool, tie: str = "ordered") -> Array:
    """Each row's maximum (`largest`) or minimum, exact: a NaN if the row holds one; a zero
    result's sign by the declared `tie` (`Declared.zero_tie`; `either` as `ordered`, the caller
    accepting both): `ordered` +0 over -0 for a maximum, -0 over +0 for a minimum; `lhs` the
    row's first zero, `rhs` its last (docs/reductions.md: the binary maximum's and minimum's
    declared rules folded over the row)."""
    with np.errstate(invalid="ignore"):
        wide = table.astype(np.float64)
    found = (np.max if largest else np.min)(wide, axis=1)  # a NaN wins
    zeros = wide == 0
    if tie in ("lhs", "rhs") and table.shape[1]:
        pick = zeros if tie == "lhs" else zeros[:, ::-1]
        at = np.argmax(pick, axis=1) if tie == "lhs" else table.shape[1] - 1 - np.argmax(pick, 1)
        first = np.signbit(wide[np.arange(table.shape[0]), at])
        zero = np.where(first, -0.0, 0.0)
    else:
        preferred = zeros & (np.signbit(wide) != largest)  # +0 for a maximum, -0 for a minimum
        zero = np.where(preferred.any(axis=1) == largest, 0.0, -0.0)
    result: Array = np.where(found == 0, zero, found).astype(out)
    return result
