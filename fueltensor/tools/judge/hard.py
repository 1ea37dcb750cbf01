"""The hard regions of the unary functions: inputs where a function's last bit is hard to get
right, which random bit patterns seldom hit.

Argument reduction (sin and cos near multiples of pi/4, far from zero too), cancellation (log
near 1), the edges of the format's range (exp and sigmoid where the result overflows, leaves
the normal range, or underflows to zero), exact results and their neighbours (square roots of
squares and of powers of two). Each point is taken in the format with its two neighbours on
either side, in both signs, so the values straddle every edge. The judge adds them to its
probes of every unary contract (`audit.probes`); they are properties of the format and of
arithmetic, not of a row, so one list serves every function.
"""

from __future__ import annotations

import math
from functools import cache
from typing import Final

import numpy as np

from fueltensor.testing import bits, float_format
from fueltensor.tools.judge.references import round_to

NEIGHBOURS: Final = 2
"""Patterns taken on either side of each point."""


def _points(dtype: np.dtype) -> list[float]:
    """The points of the module docstring, as float64 values (positive; signs come later)."""
    f = float_format(dtype)
    top, normal, smallest = (
        float(np.float64(f.scalar(p)))
        for p in (f.pattern(0, f.exponent_max - 1, f.mantissa_mask), f.pattern(0, 1, 0), 1)
    )
    quarter_pis = [k * math.pi / 4 for k in range(1, 65)]
    far_pis = [math.pi * 2.0**j for j in range(7, min(f.bias, 120), 7)]
    near_one = [1 + s * 2.0**-j for j in range(1, f.precision + 2) for s in (1, -1)]
    edges = [math.log(top), math.log(normal), math.log(smallest)]
    squares = [float(k * k) for k in range(2, 65)] + [2.0**j for j in range(-9, 10, 3)]
    return quarter_pis + far_pis + near_one + edges + squares


@cache
def hard_values(dtype: np.dtype) -> np.ndarray:
    """Every hard point of `dtype` (module docstring) with its neighbours, both signs, once."""
    f = float_format(dtype)
    centres = bits(round_to(np.array(_points(np.dtype(dtype))), f.dtype)).astype(np.int64)
    steps = np.arange(-NEIGHBOURS, NEIGHBOURS + 1)
    near = (centres[:, None] + steps[None, :]).reshape(-1)
    near = near[(near >= 0) & (near < f.exponent_max << f.mantissa)].astype(np.uint64)
    both = np.concatenate([near, near | np.uint64(f.sign_bit)])  # finite, both signs
    found: np.ndarray = np.unique(both).astype(f.uint).view(f.dtype)
    return found
