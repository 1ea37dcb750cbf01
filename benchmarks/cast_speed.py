"""Issue 45 item 8's numbers: 10^6 float32 -> bfloat16 and -> float16 by `_native.convert` on one
and two threads, each instruction-set body this CPU runs, beside NumPy's `astype(float16)` and
ml_dtypes' `astype(bfloat16)`; the widenings back; best of many repeats, in milliseconds. The
targets: -> float16 no slower than NumPy, -> bfloat16 in half ml_dtypes' time or less.

    PYTHONPATH=. python benchmarks/cast_speed.py [n] [repeats]
"""

from __future__ import annotations

import sys
import timeit
from collections.abc import Callable
from functools import partial

import ml_dtypes
import numpy as np

from fueltensor.ext import _native


def best(fn: Callable[[], object], repeats: int) -> float:
    """The fastest of `repeats` single calls, in milliseconds."""
    return min(timeit.repeat(fn, number=1, repeat=repeats)) * 1e3


def rows(n: int, repeats: int) -> list[str]:
    """One line per body and target: the narrowing on 1 and 2 threads, the widening on 1."""
    x = np.random.default_rng(0).standard_normal(n).astype(np.float32)
    names = _native.CAST_DTYPES
    widest, threads = _native.isa(), _native.set_threads(1)
    lines = []
    try:
        for isa in _native.ISAS:
            _native.select_isa(isa)
            for dtype in (ml_dtypes.bfloat16, np.float16):
                code, out, back = names.index(np.dtype(dtype).name), np.empty(n, dtype), x.copy()
                times = []
                for count in (1, 2):
                    _native.set_threads(count)
                    times.append(best(partial(_native.convert, 0, code, 0, x, out), repeats))
                _native.set_threads(1)
                times.append(best(partial(_native.convert, code, 0, 0, out, back), repeats))
                lines.append(
                    f"{isa:8} f32 -> {np.dtype(dtype).name:8}: {times[0]:.3f} ms, 2 threads "
                    f"{times[1]:.3f} ms; back to f32 {times[2]:.3f} ms"
                )
    finally:
        _native.select_isa(widest)
        _native.set_threads(threads)
    numpy_f16 = best(lambda: x.astype(np.float16), repeats)
    ml_bf16 = best(lambda: x.astype(ml_dtypes.bfloat16), repeats)
    return [
        *lines,
        f"NumPy astype(float16) {numpy_f16:.3f} ms, ml_dtypes astype(bfloat16) {ml_bf16:.3f} ms",
    ]


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 10**6
    repeats = int(sys.argv[2]) if len(sys.argv) > 2 else 300
    print("\n".join(rows(n, repeats)))
