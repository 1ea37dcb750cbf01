"""The vector powf against the C library's `powf`, bit for bit: every f32 x for y = 2 and
y = 0.5, and a sample of random (x, y) pairs (10^9 by default). Issue 34's proof, run once per
change of the vector powf and recorded in benchmarks/RESULTS.md; not run in CI (minutes of CPU).

Every vector pass this CPU runs (AVX2, AVX-512) is compared, through `_native.verify_pow` and
`_native.verify_pow_pairs` (C, `--threads` threads, the reference `powf` called from C). The
pairs are four kinds a quarter each (`powf_pair` in ext/src/native/powf_recognise.c): any bit
patterns; any x with |y| in [2^-12, 2^8); x in [0.5, 2) with |y| in [2^-4, 2^12); any x with
an integer y in [-64, 64]. The machine is shared: run it as `nice -n 10 python
benchmarks/pow_proof.py --threads 2`, and note the load.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from typing import Any

from fueltensor.fingerprint import machine
from fueltensor.kernels import pow_shortcut
from fueltensor.kernels._chassis import NATIVE

STEP = 1 << 26
"""Lanes per `verify_pow` / `verify_pow_pairs` call (a progress line each)."""

Verify = Callable[[int, int], tuple[tuple[str, int, int, int], ...]]
"""A proof over lanes [lo, hi): per pass (name, mismatches, first x bits, first y bits)."""


def prove(label: str, verify: Verify, count: int) -> None:
    """Run `verify` over lanes [0, count) a STEP at a time; print a Markdown row per pass."""
    began = time.perf_counter()
    totals: dict[str, list[int]] = {}
    for lo in range(0, count, STEP):
        hi = min(lo + STEP, count)
        for name, mismatches, x, y in verify(lo, hi):
            seen = totals.setdefault(name, [0, -1, -1])
            seen[0] += mismatches
            if seen[1] < 0 <= x:
                seen[1:] = [x, y]
        elapsed = time.perf_counter() - began
        print(f"  {label}: {hi:,} of {count:,}, {elapsed:.0f} s", file=sys.stderr)
    seconds = time.perf_counter() - began
    for name, (mismatches, x, y) in totals.items():
        first = "" if x < 0 else f", first x=0x{x:08x} y=0x{y:08x}"
        print(f"| {label} | {name} | {mismatches}{first} | {seconds:.0f} s |")


def main() -> int:
    """Run the proofs and print one Markdown row per (proof, pass)."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--threads", type=int, default=pow_shortcut.THREADS)
    parser.add_argument("--pairs", type=int, default=10**9)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--skip-exhaustive", action="store_true")
    args = parser.parse_args()
    native: Any = NATIVE
    if native is None:
        print("the compiled kernels are not built here", file=sys.stderr)
        return 1
    on, reason = pow_shortcut.status()
    print(f"machine: {machine()}")
    print(f"powf: {native.pow_identity()}; load before: {os.getloadavg()}")
    print(f"vector powf: {'on' if on else 'off'}: {reason}")
    if not on:
        return 1
    print("\n| proof | pass | mismatches | time |\n|---|---|---|---|")
    threads = args.threads
    for y in () if args.skip_exhaustive else pow_shortcut.Y_VALUES:
        prove(
            f"all 2^32 x, y = {y:g}",
            lambda lo, hi, y=y: native.verify_pow(y, lo, hi, threads),
            pow_shortcut.INPUTS,
        )
    prove(
        f"{args.pairs:,} random pairs (seed {args.seed})",
        lambda lo, hi: native.verify_pow_pairs(args.seed, lo, hi, threads),
        args.pairs,
    )
    print(f"\nload after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
