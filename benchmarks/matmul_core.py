"""Issue 46's numbers for the compiled matmul core (`_native.contract`, docs/matmul.md,
"Kernels"): bfloat16, float16 and float32 products of n x n x n beside NumPy's float32 matmul
(its BLAS: OpenBLAS in the wheels), `ft.matmul` of bfloat16 and float16 (the public call, each
row named by the contract kernel its plan runs: fuel-cpu-backend's matmul_bf16, matmul_f16; and
matmul_bf16_pairs, VDPBF16PS's order, named by `use_backend`; its core call is `core bf16 pairs`
on the body measured faster, which the first line names, and where the CPU has VDPBF16PS
`core bf16 pairs fma` and `core bf16 pairs vdpbf16ps` on each body forced)
and, where it imports, PyTorch's bfloat16 and float32 matmul, in one run, on 1 thread and on
this machine's cores. Each round runs every contender in a burst of calls after a pause of
PAUSE seconds (OpenBLAS's workers poll for about 2^28 cycles after a call, and would otherwise
hold the second core through the next contender's burst) and keeps the burst's fastest; rounds
interleave the contenders so that load falls on all alike. The best of the rounds is printed in
milliseconds, with the ratio NumPy float32 / contender (above 1: faster than NumPy's float32
BLAS), a call that allocates its result beside NumPy's that does (`BASE_OF`). Prints only:
nothing here is a test.

    PYTHONPATH=. python benchmarks/matmul_core.py [rounds] [sizes...]
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from functools import partial
from typing import Any

import ml_dtypes
import numpy as np
from threadpoolctl import threadpool_limits  # type: ignore[import-untyped, unused-ignore]

import fueltensor as ft
from fueltensor import ops
from fueltensor.ext import _native
from fueltensor.kernels.threads import running_on

OP = _native.CONTRACTION_OPS.index(ops.CONTRACTION_OPS[0].kernel_op)
"""The contraction family's one op, matmul, as the core numbers it."""
BURST = 5
"""Calls a contender makes in a row each round."""
PAUSE = 0.3
"""Seconds before each burst: every library's polling workers have gone to sleep."""
BASE_OF = {"ft": "numpy f32 new", "torch": "numpy f32 new"}
"""The NumPy row a contender's ratio is taken against: calls that allocate their result (the
public ones) beside `np.matmul(a, b)`, which allocates too; the core's calls, given `out`,
beside `np.matmul(a, b, out=out)`."""


def burst(fn: Callable[[], object]) -> float:
    """The fastest of BURST calls in a row, in milliseconds."""
    best = float("inf")
    time.sleep(PAUSE)
    for _ in range(BURST):
        start = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - start)
    return best * 1e3


def contenders(n: int) -> dict[str, Callable[[], object]]:
    """Every contender's call on one n x n x n product, by name."""
    rng = np.random.default_rng(0)
    a32, b32 = rng.standard_normal((n, n), np.float32), rng.standard_normal((n, n), np.float32)
    numpy_f32 = partial(np.matmul, a32, b32, out=np.empty_like(a32))
    calls: dict[str, Callable[[], object]] = {
        "numpy f32": numpy_f32,
        "numpy f32 new": partial(np.matmul, a32, b32),
    }
    for name, dtype in (("bf16", ml_dtypes.bfloat16), ("f16", np.float16), ("f32", np.float32)):
        a, b = a32.astype(dtype), b32.astype(dtype)
        products = _native.PRODUCTS_FUSED if dtype is np.float32 else _native.PRODUCTS_EXACT
        out = np.empty((n, n), dtype)
        calls[f"core {name}"] = partial(_native.contract, OP, a, b, out, 0,
                                        _native.ORDER_SEQUENTIAL, products)  # fmt: skip
        if dtype is not np.float32:  # the public call, named by the kernel its plan runs
            x, y = ft.asarray(a), ft.asarray(b)
            kernel = ft.explain(ft.matmul, x, y).kernel
            calls[f"ft {kernel.name if kernel else 'host'}"] = partial(ft.matmul, x, y)
        if dtype is ml_dtypes.bfloat16:  # VDPBF16PS's order, where the CPU has it
            calls["core bf16 pairs"] = partial(_native.contract, OP, a, b, np.empty_like(out), 0,
                                               _native.ORDER_PAIRS_ODD_FIRST,
                                               _native.PRODUCTS_EXACT)  # fmt: skip
            calls[f"ft {PAIRS}"] = partial(named, PAIRS, ft.matmul, x, y)
            if _native.pairs_instruction(None) is not None:  # the CPU has VDPBF16PS
                for body, on in (("fma", False), ("vdpbf16ps", True)):
                    calls[f"core bf16 pairs {body}"] = partial(forced, on, calls["core bf16 pairs"])
    torch = torch_module()
    if torch is not None:
        for name, tdtype in (("bf16", torch.bfloat16), ("f32", torch.float32)):
            ta, tb = torch.from_numpy(a32).to(tdtype), torch.from_numpy(b32).to(tdtype)
            calls[f"torch {name}"] = partial(torch.matmul, ta, tb)
    return calls


PAIRS = "matmul_bf16_pairs"
"""fuel-cpu-backend's BF16 kernel in VDPBF16PS's order: it runs where named (`use_backend`)."""


def named(kernel: str, fn: Callable[..., object], *args: object) -> object:
    """fn(*args) under `use_backend(kernel)` (its plan cached after the first call)."""
    with ft.use_backend(kernel):
        return fn(*args)


def forced(on: bool, fn: Callable[[], object]) -> object:
    """fn() with the pairs order's AVX-512 body forced: VDPBF16PS (on) or FMAs under FTZ and DAZ
    (`_native.pairs_instruction`), then the body chosen before, kept as it is (going back to
    None would measure both bodies again at the next call, inside some contender's time)."""
    was = _native.pairs_instruction(on)
    try:
        return fn()
    finally:
        _native.pairs_instruction(was)


def torch_module() -> Any:
    """PyTorch if it imports, else None."""
    try:
        import torch
    except ImportError:
        return None
    return torch


def measure(n: int, threads: int, rounds: int) -> dict[str, float]:
    """Each contender's best burst over `rounds` interleaved rounds on `threads` threads."""
    calls = contenders(n)
    torch = torch_module()
    torch_threads = torch.get_num_threads() if torch is not None else 0
    if torch is not None:
        torch.set_num_threads(threads)
    best = dict.fromkeys(calls, float("inf"))
    try:
        with threadpool_limits(limits=threads, user_api="blas"), running_on(threads):
            for _ in range(rounds):
                for name, fn in calls.items():
                    best[name] = min(best[name], burst(fn))
    finally:
        if torch is not None:
            torch.set_num_threads(torch_threads)
    return best


def rows(rounds: int, sizes: list[int]) -> list[str]:
    """One line per size, thread count and contender."""
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1
    chosen = {None: "emulated", True: "vdpbf16ps", False: "fma"}[_native.pairs_instruction(None)]
    lines = [
        f"isa {_native.isa()}, {cores} core(s), pairs body {chosen} (measured); ratio = NumPy "
        "f32 / contender (ft, torch: NumPy f32 new / contender)"
    ]
    for n in sizes:
        for threads in sorted({1, cores}):
            best = measure(n, threads, rounds)
            for name, ms in best.items():
                base = best[BASE_OF.get(name.split()[0], "numpy f32")]
                lines.append(f"{n:5}^3 {threads} thread(s) {name:14} {ms:8.3f} ms  "
                             f"ratio {base / ms:5.2f}")  # fmt: skip
    return lines


if __name__ == "__main__":
    args = [int(a) for a in sys.argv[1:]]
    print("\n".join(rows(args[0] if args else 20, args[1:] or [512])))
