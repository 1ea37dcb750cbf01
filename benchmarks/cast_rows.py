"""The casts' rows for benchmarks/run.py (`--only casts`): `ft.astype` through the cast
contracts, beside NumPy/ml_dtypes' `astype` (and PyTorch's `.to` where installed), in one run,
interleaved.

Each row at 8 elements (the call's overhead: a cast takes the Python path, planned from a
cached plan) and at 10^6 (the kernel): float32 to bfloat16, float16 and the two 8-bit formats,
and the widenings back. The targets of issue 45: to float16 no slower than NumPy's, to bfloat16
in half ml_dtypes' time or less. fueltensor's bodies run on one thread, as NumPy's do."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np
from pricing_rows import _median_seconds
from unary_rows import _torch

import fueltensor as ft

PAIRS = (
    (ft.float32, ft.bfloat16),
    (ft.float32, ft.float16),
    (ft.float32, ft.float8_e4m3fn),
    (ft.float32, ft.float8_e5m2),
    (ft.bfloat16, ft.float32),
    (ft.float16, ft.float32),
)
"""The (source, target) pairs timed."""


def cast_rows(repeats: int) -> None:
    """fueltensor, NumPy/ml_dtypes and PyTorch casting at 8 and 10^6 elements."""
    torch, rng = _torch(), np.random.default_rng(0)
    print("| cast | n | kernel | ft µs | NumPy µs | ÷ NumPy | PyTorch µs |")
    print("|---|---:|---|---:|---:|---:|---:|")
    before = ft.set_num_threads(1)
    try:
        for n in (8, 10**6):
            wide = rng.standard_normal(n).astype(np.float32) * 100
            for src, dst in PAIRS:
                a = wide.astype(src.np)
                x = ft.asarray(a)
                fns: list[Callable[[], object]] = [
                    partial(ft.astype, x, dst),
                    partial(a.astype, dst.np),
                ]
                to = getattr(torch, dst.name, None) if torch is not None else None
                if torch is not None and to is not None and src.numpy_own:
                    fns.append(partial(torch.from_numpy(a).to, to))
                ours, numpy_s, *rest = _median_seconds(fns, repeats)
                torch_us = f"{rest[0] * 1e6:.2f}" if rest else "—"
                kernel = ft.explain(ft.astype, x, dst).kernel_name
                print(
                    f"| {src.name} → {dst.name} | {n:,} | {kernel} | {ours * 1e6:.2f} | "
                    f"{numpy_s * 1e6:.2f} | {ours / numpy_s:.2f} | {torch_us} |"
                )
    finally:
        ft.set_num_threads(before)
