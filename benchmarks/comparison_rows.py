"""The comparisons' rows for benchmarks/run.py (`--only comparisons`): `<` and `==` on float32
through their contracts, beside NumPy (and PyTorch where installed), in one run, interleaved.

Each row: a tensor against a tensor and against a Python scalar, at 8 elements (the call's
overhead: the compiled fast path runs the cached plan) and at 10^6 (the kernel: one byte out
per four in). fueltensor's comparison bodies run on one thread, as NumPy's do."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np
from pricing_rows import _median_seconds
from unary_rows import _torch

import fueltensor as ft
from fueltensor.ops import COMPARISON_OPS


def comparison_rows(repeats: int) -> None:
    """fueltensor, NumPy and PyTorch per comparison row, sizes and operand kinds."""
    torch, rng = _torch(), np.random.default_rng(0)
    print("| f32 | n | other | kernel | ft µs | NumPy µs | ÷ NumPy | PyTorch µs |")
    print("|---|---:|---|---|---:|---:|---:|---:|")
    for row in (r for r in COMPARISON_OPS if r.name in ("less", "equal")):
        for n in (8, 10**6):
            a = rng.standard_normal(n).astype(np.float32)
            b = np.roll(a, 1)
            for other, theirs in (("tensor", b), ("scalar", 0.5)):
                x = ft.asarray(a)
                y = ft.asarray(b) if other == "tensor" else theirs
                fn = getattr(ft, row.name)
                fns: list[Callable[[], object]] = [partial(fn, x, y), partial(row.host, a, theirs)]
                if torch is not None:
                    ta = torch.from_numpy(a)
                    tb = torch.from_numpy(b) if other == "tensor" else theirs
                    assert row.relation is not None  # torch's `<`, `==`
                    fns.append(partial(row.relation, ta, tb))
                ours, numpy_s, *rest = _median_seconds(fns, repeats)
                torch_us = f"{rest[0] * 1e6:.2f}" if rest else "—"
                kernel = ft.explain(fn, x, y).kernel_name
                print(
                    f"| {row.name} | {n:,} | {other} | {kernel} | {ours * 1e6:.2f} | "
                    f"{numpy_s * 1e6:.2f} | {ours / numpy_s:.2f} | {torch_us} |"
                )
