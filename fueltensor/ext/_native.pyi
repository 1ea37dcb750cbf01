"""Type stub of the compiled kernels, built from `src/native/` (one translation unit)."""

from typing import Any

OPS: tuple[str, ...]
"""The op names, in the order `binary` numbers them."""
DTYPES: tuple[str, ...]
"""The NumPy dtype names, in the order `binary` numbers them."""
ISAS: tuple[str, ...]
"""The instruction sets this machine has a kernel body for, the one used by default last."""

def binary(op: int, dtype: int, lhs: Any, rhs: Any, out: Any, /) -> None:
    """out[i] = OPS[op](lhs[i], rhs[i]) over C-contiguous buffers of DTYPES[dtype]."""

UNARY_OPS: tuple[str, ...]
"""The unary op names, in the order `unary` numbers them (the op table's unary rows)."""

def unary(op: int, dtype: int, x: Any, out: Any, /) -> None:
    """out[i] = UNARY_OPS[op](x[i]) over C-contiguous buffers of DTYPES[dtype]: computed in
    double and rounded once (abs and negative: the sign bit alone)."""

COMPARISON_OPS: tuple[str, ...]
"""The comparison op names, in the order `compare` numbers them (the op table's comparisons)."""

COMPARE_OP: int
"""The op number the fast path's entries give comparison c: COMPARE_OP + c (abi.h)."""

def compare(op: int, dtype: int, lhs: Any, rhs: Any, out: Any, /) -> None:
    """out[i] = COMPARISON_OPS[op](lhs[i], rhs[i]) over C-contiguous buffers of DTYPES[dtype],
    out as many bools: IEEE 754's comparisons (a NaN is unordered)."""

TERNARY_OPS: tuple[str, ...]
"""The three-operand op names (where's, clip's), in the order `ternary` numbers them."""

def ternary(op: int, dtype: int, a: Any, b: Any, c: Any, out: Any, /) -> None:
    """where (out[i] = b[i] if a[i] else c[i], a bools) or clip (out[i] = minimum(maximum(a[i],
    b[i]), c[i])) over C-contiguous buffers of DTYPES[dtype]: one operand's bits a lane."""

CAST_DTYPES: tuple[str, ...]
"""The float dtype names a cast connects, in the order `cast` numbers them (abi.h's version-2
codes F32 ... F8_E5M2: float32, float64, bfloat16, float16, float8_e4m3fn, float8_e5m2)."""
CAST_OP: int
"""The op number `threads` takes for a cast, its dtype the source's code in CAST_DTYPES."""
CAST_SPLIT_FROM: int
"""Elements from which a cast splits across threads (abi.h's SPLIT_CAST)."""

def convert(src: int, dst: int, saturate: int, x: Any, out: Any, /) -> None:
    """out[i] = x[i] cast from CAST_DTYPES[src] to CAST_DTYPES[dst] over C-contiguous buffers of
    as many elements: the exact value rounded once to nearest even, subnormals kept; beyond the
    largest finite value the infinity of its sign (float8_e4m3fn: its NaN of that sign) or, with
    saturate=1, the largest finite value of its sign, infinities included; a NaN quieted, its
    sign and top payload bits kept. src == dst copies the bits."""

REDUCTION_OPS: tuple[str, ...]
"""The reduction op names, in the order `reduce` numbers them (the op table's REDUCTION_OPS)."""
CONTRACTION_OPS: tuple[str, ...]
"""The contraction op names, in the order `contract` numbers them (the op table's
CONTRACTION_OPS)."""
ORDER_SEQUENTIAL: int
"""`reduce`'s order: one accumulator, element after element (abi.h's ORDER_* codes)."""
ORDER_PAIRWISE: int
"""abi.h's pairwise order code: no reduction takes it yet."""
ORDER_BLOCKED: int
"""`reduce`'s order: blocks of `block`, 8 lanes each, a pairwise tree over the blocks."""
REDUCE_LANES: int
"""The partial accumulators of a block in ORDER_BLOCKED."""
REDUCE_FEW_OUTPUTS: int
"""Below this many outputs a blocked sum or product splits across threads by blocks."""
REDUCE_OP: int
"""The op number `threads` takes for a reduction, n its input elements."""

def reduce(
    op: int,
    x: Any,
    out: Any,
    axes: tuple[int, ...],
    accumulator: int | str,
    order: int,
    block: int,
    /,
) -> None:
    """out = REDUCTION_OPS[op] of any strided x over the sorted `axes`, out the dense reduced
    shape of x's dtype, accumulated in `accumulator` (a dtype code or name) in the order
    ORDER_SEQUENTIAL or ORDER_BLOCKED (blocks of `block`), rounded once: the same bits on any
    thread count and instruction set (docs/ops.md, "Reductions")."""

MATMUL_POOL_OP: int
"""The op number `threads` takes for a matmul, n its products (M * N * K)."""
PRODUCTS_EXACT: int
"""`contract`'s products code: each product exact in the accumulator (abi.h's PRODUCTS_*)."""
PRODUCTS_FUSED: int
"""`contract`'s products code: each product added by one fused multiply-add."""
PRODUCTS_ROUNDED: int
"""abi.h's rounded-products code: no kernel takes it yet."""

def contract(
    op: int,
    a: Any,
    b: Any,
    out: Any,
    accumulator: int,
    order: int,
    products: int,
    /,
) -> None:
    """out (..., M, N) = a (..., M, K) @ b (..., K, N), the contraction family's kernel
    (op CONTRACTION_OPS.index('matmul'); the MATMUL capsule): a and b any strided arrays of one
    rank (stacks broadcast by the caller), out C-contiguous, all float32, bfloat16 or float16;
    accumulator float32 (its dtype code), order ORDER_SEQUENTIAL, products PRODUCTS_EXACT (the
    half types) or PRODUCTS_FUSED: per output acc = -0, acc = fl32(acc + a[i,l] * b[l,j]) for l
    in order, rounded once (K = 0: +0): the same bits on any thread count and instruction set
    (native/matmul.c)."""

def pairs_instruction(on: bool | None, /) -> bool | None:
    """Run the BF16 pairs order on the AVX-512 body's VDPBF16PS (True), its FMAs under FTZ and
    DAZ (False) or the faster as measured at the first call (None, the default): the same bits.
    Returns whether the setting before chose the instruction; None where the CPU lacks it."""

def select_isa(name: str, /) -> str:
    """Run the kernel body compiled for `name` (one of ISAS); returns the previous one."""

def isa() -> str:
    """The instruction set of the kernel body that runs (ISAS[-1] unless `select_isa` chose)."""

SPLIT_FROM: dict[str, dict[str, int]]
"""Per op name (and "powi") and dtype name, the elements from which a body splits (abi.h)."""
PARALLEL_FROM: int
"""The largest of SPLIT_FROM: every body splits from here (abi.h)."""
WAKE_FACTOR: int
"""A split call this many times its op class's threshold wakes sleeping workers (native.h)."""
ALONE_STREAK: int
"""After this many shorter calls in a row ran alone, the next wakes the workers (native.h)."""
POOL_SPIN_NS: int
"""How long a worker polls for the next part after its last before it sleeps (native.h)."""

def threads(n: int, op: int, dtype: int, /) -> int:
    """How many threads the body of OPS[op] (POWI_OP: the integer power) on DTYPES[dtype]
    runs a call over n elements on now (CAST_OP: a cast from CAST_DTYPES[dtype]; REDUCE_OP: a
    reduction of n input elements)."""

def copy_strided(src: Any, dst: Any, /) -> None:
    """Copy any strided `src` into the C-contiguous `dst` of its size, in row-major order."""

POW_BAND: int
"""Double ULPs from a float rounding midpoint inside which the f32 pow shortcut calls powf."""
POWI_OP: int
"""The kernel op number of the integer powers (PowIElementwise), past OPS: the POWI capsule's
body, which `_fast` runs for a plan of `cpu`'s powi thunks (abi.h)."""
MAX_DIMS: int
"""The most dimensions a layout may have (abi.h; `core.layout.MAX_DIMS` is its twin)."""
GIL_FREE_FROM: int
"""Elements from which a call releases the GIL around its loop (abi.h)."""

def pow_shortcut(two: bool, half: bool, /) -> tuple[bool, bool]:
    """Take f32 pow's shortcut for y == 2 / y == 0.5 (only after a verdict); returns the
    previous settings."""

def verify_pow(
    y: float, start: int, stop: int, band: int, threads: int, /
) -> tuple[tuple[int, int], ...]:
    """Per kernel body (ISAS order): (mismatches, first mismatching x bits or -1) of f32 pow
    with the shortcut on for `y` (2.0 or 0.5) and `band`, against powf over x bits [start, stop)."""

def pow_identity() -> dict[str, str]:
    """The C library's version ("libc"), the file holding the powf called ("libm"), and that
    implementation's symbol and offset in it ("powf")."""
