"""Two builds of fueltensor side by side: the same operations timed in each checkout, in turns.

    python benchmarks/checkouts.py BEFORE AFTER [--rounds 7]

BEFORE and AFTER are checkouts with their extensions built in place (`python setup.py
build_ext --inplace`). Each round starts one fresh interpreter per checkout (its folder first
on the path, so it imports that fueltensor), alternating which goes first; each interpreter
times every row (best of its repeats) and prints them. The table gives each row's median over
the rounds and AFTER ÷ BEFORE: what a change to the compiled layer costs, measured in one run
(issue 33: "the 4-element and 10^6 rows within noise of before").
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
from pathlib import Path

ROWS = [
    (op, dtype, n)
    for n in (4, 1_000_000)
    for dtype in ("float32", "float64")
    for op in ("add", "multiply", "divide", "maximum")
]
"""(operation, dtype, elements): the libraries table's + × ÷ max rows at its two ends."""

TIMER = """
import json, sys, timeit
import numpy as np
import fueltensor as ft
assert ft.__file__.startswith(sys.argv[1]), ft.__file__
rows, out = json.loads(sys.argv[2]), {}
for op, dtype, n in rows:
    rng = np.random.default_rng(0)
    x, y = (ft.asarray(rng.random(n).astype(dtype) + 0.5) for _ in range(2))
    fn = getattr(ft, op)
    fn(x, y)
    number = max(20, 200_000 // n)  # a repeat of 20 calls at least: a worker asleep is one
    best = min(timeit.repeat(lambda: fn(x, y), number=number, repeat=9))
    out[f"{op} {dtype} n={n:,}"] = best / number
print(json.dumps(out))
"""
"""Run in a fresh interpreter inside a checkout: seconds per call of every row, as JSON."""


def timings(checkout: Path) -> dict[str, float]:
    """One fresh interpreter's timings in `checkout` (its fueltensor imported, not another)."""
    done = subprocess.run(
        [sys.executable, "-c", TIMER, str(checkout), json.dumps(ROWS)],
        cwd=checkout,
        capture_output=True,
        text=True,
        check=True,
        timeout=600,
    )
    found: dict[str, float] = json.loads(done.stdout.splitlines()[-1])
    return found


def main() -> None:
    """Time both checkouts in alternating rounds and print the medians and their ratio."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    pair = (args.before.resolve(), args.after.resolve())
    runs: dict[Path, list[dict[str, float]]] = {p: [] for p in pair}
    for r in range(args.rounds):
        for p in pair if r % 2 == 0 else pair[::-1]:
            runs[p].append(timings(p))
    print(f"| case | {pair[0].name} µs | {pair[1].name} µs | ratio |")
    print("|---|---:|---:|---:|")
    for name in runs[pair[0]][0]:
        a, b = (statistics.median(t[name] for t in runs[p]) * 1e6 for p in pair)
        print(f"| {name} | {a:.3g} | {b:.3g} | {b / a:.2f} |")


if __name__ == "__main__":
    main()
