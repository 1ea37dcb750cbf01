"""Can a contract declare what AMX's TDPBF16PS computes? Issue 46's speed criterion asks
fueltensor's own bfloat16 matmul to run no slower than NumPy's float32 sgemm; the AMX tiles of
Sapphire Rapids do bfloat16 products at several times the FMA units' rate (PyTorch's bfloat16
matmul, oneDNN on AMX, runs 512^3 in about a seventh of sgemm's time here), but a contract's
`order` names how each output's sum is rounded, and the judge holds a kernel to those bits. This
script runs one TDPBF16PS (benchmarks/amx_order.c, built here with cc) on random tiles and counts
the outputs whose float32 bits differ from each order a document can declare, every one with
denormal operands read as zero and results below 2^-126 flushed, as the SDM says the instruction
does: `even_first` (c += a0*b0, then c += a1*b1, each add rounded to nearest even: the SDM's
pseudocode), `odd_first` (VDPBF16PS's, `pairs: odd_first`), and `pair_once` (c + a0*b0 + a1*b1
rounded once) and `row_once` (c plus all K products rounded once: a fused dot product). On
this 2-core Sapphire Rapids class VM every order misses outputs once K > 2 or the magnitudes
spread (benchmarks/RESULTS.md): the instruction's sums are none of them, so a kernel on it could
declare its accumulator and a bound but no order the judge can check bit for bit. Prints only:
nothing here is a test.

    python benchmarks/amx_order.py [trials]
"""

from __future__ import annotations

import ctypes
import math
import subprocess
import sys
import tempfile
from fractions import Fraction
from pathlib import Path

import ml_dtypes
import numpy as np

BF16 = np.dtype(ml_dtypes.bfloat16)
TINY = Fraction(2) ** -126


def rounded(q: Fraction) -> float:
    """q rounded to float32's 24 bits, nearest even; below 2^-126 a zero (flushed)."""
    if q == 0 or abs(q) < TINY:
        return math.copysign(0.0, q)
    return float(np.float32(rounded_exactly(q)))


def rounded_exactly(q: Fraction) -> float:
    """q to 24 significant bits, nearest even, with an unbounded exponent."""
    sign, q = (-1 if q < 0 else 1), abs(q)
    e = q.numerator.bit_length() - q.denominator.bit_length()
    e += 1 if Fraction(2) ** (e + 1) <= q else 0
    e -= 1 if Fraction(2) ** e > q else 0
    ulp = Fraction(2) ** (e - 23)
    n, rest = divmod(q, ulp)
    n += rest > ulp / 2 or (rest == ulp / 2 and n % 2 == 1)
    return sign * float(n * ulp)


def daz(x: float) -> Fraction:
    """An operand as the instruction reads it: a denormal is zero."""
    return Fraction(0) if abs(x) < TINY else Fraction(x)


def model(order: str, c: float, a: list[float], b: list[float]) -> float:
    """One output of c + a . b in `order` (finite inputs only)."""
    for t in range(0, len(a), 2):
        p0, p1 = daz(a[t]) * daz(b[t]), daz(a[t + 1]) * daz(b[t + 1])
        if order == "row_once":
            return rounded(Fraction(c) + sum(daz(u) * daz(v) for u, v in zip(a, b, strict=True)))
        if order == "pair_once":
            c = rounded(Fraction(c) + p0 + p1)
            continue
        first, second = (p0, p1) if order == "even_first" else (p1, p0)
        c = rounded(Fraction(rounded(Fraction(c) + first)) + second)
    return c


def build() -> ctypes.CDLL:
    """benchmarks/amx_order.c as a shared library in a temporary folder."""
    out = Path(tempfile.mkdtemp()) / "amx_order.so"
    source = Path(__file__).with_name("amx_order.c")
    cmd = ["cc", "-O2", "-mamx-tile", "-mamx-bf16", "-shared", "-fPIC", str(source), "-o", str(out)]
    subprocess.run(cmd, check=True)
    return ctypes.CDLL(str(out))


def trial(lib: ctypes.CDLL, rng: np.random.Generator, k: int, spread: int) -> dict[str, int]:
    """Outputs of one random tile (magnitudes 2^-spread..2^spread) unlike each order."""

    def draw(shape: tuple[int, int], dtype: type) -> np.ndarray:
        scale = 2.0 ** rng.integers(-spread, spread + 1, shape)
        return (rng.standard_normal(shape) * scale).astype(dtype)

    a, b, c = draw((16, k), BF16), draw((k, 16), BF16), draw((16, 16), np.float32)
    paired = np.ascontiguousarray(np.stack([b[0::2], b[1::2]], axis=-1))  # (k/2, 16, 2)
    got = c.copy()
    ptr = ctypes.c_void_p
    lib.amx_dpbf16(ptr(a.ctypes.data), ptr(paired.ctypes.data), ptr(got.ctypes.data), k)
    x, y = a.astype(np.float64).tolist(), b.astype(np.float64).T.tolist()
    return {
        order: sum(
            np.float32(model(order, float(c[i, j]), x[i], y[j])).view(np.uint32)
            != got[i, j].view(np.uint32)
            for i in range(16)
            for j in range(16)
        )
        for order in ("even_first", "odd_first", "pair_once", "row_once")
    }


def main() -> None:
    """Each (K, spread)'s count of differing outputs, of 256 per trial, by order."""
    if "amx_bf16" not in Path("/proc/cpuinfo").read_text():
        sys.exit("this CPU does not report amx_bf16 (Linux, Sapphire Rapids or later)")
    trials = int(sys.argv[1]) if len(sys.argv) > 1 else 4
    lib = build()
    if lib.amx_request() != 0:
        sys.exit("the kernel refused the AMX tile state (arch_prctl ARCH_REQ_XCOMP_PERM)")
    rng = np.random.default_rng(0)
    print(f"outputs of {256 * trials} unlike each order (float32 bits)")
    for k in (2, 8, 32):
        for spread in (0, 8, 24):
            counts: dict[str, int] = {}
            for _ in range(trials):
                for order, n in trial(lib, rng, k, spread).items():
                    counts[order] = counts.get(order, 0) + n
            row = "  ".join(f"{order} {n:4d}" for order, n in counts.items())
            print(f"  K {k:2d}  magnitudes 2^+-{spread:<2d}  {row}")


if __name__ == "__main__":
    main()
