"""Two builds of fueltensor side by side: the same operations timed in each checkout, in turns.

    python benchmarks/checkouts.py BEFORE AFTER [--rounds 7]

BEFORE and AFTER are checkouts with their extensions built in place (`python setup.py
build_ext --inplace`). Each round starts one fresh interpreter per checkout (its folder first
on the path, so it imports that fueltensor), alternating which goes first; each interpreter
times every row (best of its repeats), and NumPy's same call on the same arrays, and prints
them. The table gives each row's median over the rounds, AFTER ÷ BEFORE (absolute times from
different interpreters: it carries their noise) and each checkout's ratio to NumPy measured in
the same interpreter (the steadier figure): what a change to the compiled layer costs or gains,
measured in one run (issue 33: "the 4-element and 10^6 rows within noise of before").
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROWS: list[tuple[str, str, int, float | None]] = [
    *(
        (op, dtype, n, None)
        for n in (4, 1_000_000)
        for dtype in ("float32", "float64")
        for op in ("add", "multiply", "divide", "maximum")
    ),
    *(
        (op, dtype, n, scalar)
        for n in (4, 4096, 65536, 1_000_000)
        for dtype in ("float32", "float64")
        for op, scalar in (("add", 1.0), ("multiply", 2))
    ),
]
"""(operation, dtype, elements, Python scalar or None): the libraries table's + × ÷ max rows at
its two ends (two tensors), and `x + 1.0` / `x * 2` from 4 elements to 10^6 (the oracle's rows)."""

TIMER = """
import json, sys, timeit
import numpy as np
import fueltensor as ft
assert ft.__file__.startswith(sys.argv[1]), ft.__file__
rows, out = json.loads(sys.argv[2]), {}
for op, dtype, n, scalar in rows:
    rng = np.random.default_rng(0)
    xs, ys = (rng.random(n).astype(dtype) + 0.5 for _ in range(2))
    x, y = ft.asarray(xs), ft.asarray(ys)
    fn, ufunc = getattr(ft, op), getattr(np, op)
    other, np_other = (y, ys) if scalar is None else (scalar, scalar)
    calls = (lambda: fn(x, other)), (lambda: ufunc(xs, np_other))
    number = max(20, 200_000 // n)  # a repeat of 20 calls at least: a worker asleep is one
    best = []
    for call in calls:
        call()
        best.append(min(timeit.repeat(call, number=number, repeat=9)) / number)
    out[f"{op}(x, {'y' if scalar is None else repr(scalar)}) {dtype} n={n:,}"] = best
print(json.dumps(out))
"""
"""Run in a fresh interpreter inside a checkout: seconds per call of every row, fueltensor's and
NumPy's (the same operation on the same arrays), as JSON."""


def timings(checkout: Path) -> dict[str, list[float]]:
    """One fresh interpreter's timings in `checkout` (its fueltensor imported, not another)."""
    done = subprocess.run(
        [sys.executable, "-c", TIMER, str(checkout), json.dumps(ROWS)],
        cwd=checkout,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    found: dict[str, list[float]] = json.loads(done.stdout.splitlines()[-1])
    return found


def main() -> None:
    """Time both checkouts in alternating rounds and print the medians and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    pair = (args.before.resolve(), args.after.resolve())
    runs: dict[Path, list[dict[str, list[float]]]] = {p: [] for p in pair}
    for r in range(args.rounds):
        for p in pair if r % 2 == 0 else pair[::-1]:
            runs[p].append(timings(p))
    a_name, b_name = (p.name for p in pair)
    print(
        f"| case | {a_name} µs | {b_name} µs | {b_name} ÷ {a_name} "
        f"| {a_name} ÷ NumPy | {b_name} ÷ NumPy |"
    )
    print("|---|---:|---:|---:|---:|---:|")
    for name in runs[pair[0]][0]:
        a, b = (statistics.median(t[name][0] for t in runs[p]) * 1e6 for p in pair)
        na, nb = (statistics.median(t[name][0] / t[name][1] for t in runs[p]) for p in pair)
        print(f"| {name} | {a:.3g} | {b:.3g} | {b / a:.2f} | {na:.2f} | {nb:.2f} |")


if __name__ == "__main__":
    main()
