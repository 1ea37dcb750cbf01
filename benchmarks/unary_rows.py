"""Issue 43 item 7's rows for benchmarks/run.py (`--only unary`): the unary functions on 10^6
float32 elements against NumPy (and PyTorch where installed), in one run, interleaved.

Each row: fueltensor on every core it splits over and on one thread, NumPy (one thread: its
loops are single-threaded), PyTorch on the same thread counts, and the ratios. Targets (issue
43): exp, log, tanh and sin no slower than NumPy; sqrt, abs and negative at the binary
kernels' bandwidth (here: at or below NumPy's time). Each row names the kernel that ran."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from typing import Any

import numpy as np
from pricing_rows import _median_seconds

import fueltensor as ft
from fueltensor.ops import UNARY_OPS

N = 10**6
DOMAIN = {"log": (0.01, 100.0), "sqrt": (0.0, 100.0), "rsqrt": (0.01, 100.0)}
"""Where a function's inputs are drawn (uniform); every other row takes [-10, 10)."""


def _torch() -> Any:
    """PyTorch, or None where it is not installed."""
    try:
        import torch
    except ImportError:
        return None
    return torch


def unary_rows(repeats: int) -> None:
    """fueltensor (all threads, one thread), NumPy and PyTorch per unary function at 10^6 f32."""
    torch, rng = _torch(), np.random.default_rng(0)
    cores = ft.get_num_threads()
    print(
        f"| f32 n=10^6 | kernel | ft ms ({cores} threads) | ft ms (1) | NumPy ms | "
        "÷ NumPy | ÷ NumPy, 1 thread | PyTorch ms (same threads) | target |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---|")
    for row in UNARY_OPS:
        host = getattr(np, row.name, None)
        lo, hi = DOMAIN.get(row.name, (-10.0, 10.0))
        a = rng.uniform(lo, hi, N).astype(np.float32)
        x, fn = ft.asarray(a), getattr(ft, row.name)
        fns: list[Callable[[], object]] = [partial(fn, x)]
        fns += [partial(host, a)] if host is not None else []
        ours, *theirs = _median_seconds(fns, repeats)
        ft.set_num_threads(1)
        try:
            (alone,) = _median_seconds([partial(fn, x)], repeats)
        finally:
            ft.set_num_threads(cores)
        torch_ms = "—"
        tfn = getattr(torch, row.name, None) if torch is not None else None
        if tfn is not None:
            t = torch.from_numpy(a)
            torch.set_num_threads(cores)
            torch_ms = f"{_median_seconds([partial(tfn, t)], repeats)[0] * 1e3:.3f}"
        numpy_ms = f"{theirs[0] * 1e3:.3f}" if theirs else "— (no NumPy function)"
        ratio = f"{ours / theirs[0]:.2f}" if theirs else "—"
        alone_ratio = f"{alone / theirs[0]:.2f}" if theirs else "—"
        print(
            f"| {row.name} | {ft.explain(fn, x).kernel.name} | {ours * 1e3:.3f} | "
            f"{alone * 1e3:.3f} | {numpy_ms} | {ratio} | {alone_ratio} | {torch_ms} | ≤ 1 |"
        )
