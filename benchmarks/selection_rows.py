"""where's and clip's rows for benchmarks/run.py (`--only selections`): `ft.where` and `ft.clip`
on float32 through their contracts, beside NumPy (and PyTorch where installed), in one run,
interleaved.

Each row at 8 elements (the call's overhead: these take the Python path, planned from a cached
plan) and at 10^6 (the kernel): where with a random condition (half true), clip with tensor
bounds and with Python-number bounds (which the plan broadcasts block by block in front of the
same-shape kernel). fueltensor's bodies run on one thread, as NumPy's do."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np
from pricing_rows import _median_seconds
from unary_rows import _torch

import fueltensor as ft


def selection_rows(repeats: int) -> None:
    """fueltensor, NumPy and PyTorch for where and clip at 8 and 10^6 float32 elements."""
    torch, rng = _torch(), np.random.default_rng(0)
    print("| f32 | n | kernel | ft µs | NumPy µs | ÷ NumPy | PyTorch µs |")
    print("|---|---:|---|---:|---:|---:|---:|")
    for n in (8, 10**6):
        a = rng.standard_normal(n).astype(np.float32)
        b, c = np.roll(a, 1), rng.random(n) < 0.5
        lo, hi = np.full(n, -0.5, np.float32), np.full(n, 0.5, np.float32)
        x, y, k, low, high = (ft.asarray(v) for v in (a, b, c, lo, hi))
        cases: list[tuple[str, Callable[..., object], tuple[object, ...], Callable[[], object]]] = [
            ("where(c, x, y)", ft.where, (k, x, y), partial(np.where, c, a, b)),
            ("clip(x, tensor, tensor)", ft.clip, (x, low, high), partial(np.clip, a, lo, hi)),
            ("clip(x, -0.5, 0.5)", ft.clip, (x, -0.5, 0.5), partial(np.clip, a, -0.5, 0.5)),
        ]
        for label, fn, args, numpy_call in cases:
            fns: list[Callable[[], object]] = [partial(fn, *args), numpy_call]
            if torch is not None:
                ta, tb, tc = (torch.from_numpy(v) for v in (a, b, c))
                tlo, thi = torch.from_numpy(lo), torch.from_numpy(hi)
                fns.append(
                    partial(torch.where, tc, ta, tb)
                    if fn is ft.where
                    else partial(torch.clamp, ta, *((tlo, thi) if args[1] is low else (-0.5, 0.5)))
                )
            ours, numpy_s, *rest = _median_seconds(fns, repeats)
            torch_us = f"{rest[0] * 1e6:.2f}" if rest else "—"
            kernel = ft.explain(fn, *args).kernel_name
            print(
                f"| {label} | {n:,} | {kernel} | {ours * 1e6:.2f} | {numpy_s * 1e6:.2f} | "
                f"{ours / numpy_s:.2f} | {torch_us} |"
            )
