"""One timing harness for `compare_backends` and the judge: a steady state, raced fairly.

A kernel's first calls pay for cold caches, page faults and lazy set-up, and a machine shared
with other work drifts from one moment to the next: timing kernels back to back, cold, can
invert their order. `race` times every candidate the same way, built-in or not:

1. warm-up: `warmup` untimed calls of each (the last one also sizes the batches);
2. batches: each candidate is called in batches long enough (`sample_seconds`) for the clock;
3. interleaving: the candidates take turns, batch by batch, for `samples` rounds (the order
   rotating each round), so a slow moment of the machine falls on all of them alike;
4. the figure is the median seconds per call over the rounds, reported with the call count.

`budget` bounds the timed seconds per candidate: a slow kernel gets fewer rounds (never fewer
than `min_samples`), so timing never dominates a comparison of large operands.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Final

import numpy as np

Clock = Callable[[], float]


@dataclass(frozen=True)
class Timing:
    """What the harness measured for one candidate."""

    seconds: float
    """The median seconds per call over the timed samples."""
    calls: int
    """Calls timed in all (batch * samples), warm-up not counted."""
    samples: int
    """Timed batches (rounds of the race)."""
    batch: int
    """Calls per timed batch."""
    warmup: int
    """Untimed calls before the first sample."""


@dataclass(frozen=True)
class Harness:
    """The harness's settings (`race` documents them); `HARNESS` is the one both tools use."""

    warmup: int = 3
    samples: int = 7
    min_samples: int = 3
    sample_seconds: float = 2e-4
    budget: float = 0.25


HARNESS: Final = Harness()
"""The settings `compare_backends` and the judge time every kernel with."""


def _sizes(
    calls: Mapping[str, Callable[[], object]], harness: Harness, clock: Clock
) -> tuple[dict[str, int], int]:
    """Warm each candidate up and size its batch; also how many rounds the budget allows."""
    batch: dict[str, int] = {}
    per_round = 0.0
    for name, call in calls.items():
        for _ in range(harness.warmup - 1):
            call()
        start = clock()
        call()
        once = max(clock() - start, 1e-9)
        batch[name] = max(1, math.ceil(harness.sample_seconds / once))
        per_round = max(per_round, batch[name] * once)
    rounds = harness.samples
    if per_round * rounds > harness.budget:
        rounds = max(harness.min_samples, int(harness.budget / per_round))
    return batch, rounds


def race(
    calls: Mapping[str, Callable[[], object]],
    harness: Harness = HARNESS,
    clock: Clock = time.perf_counter,
) -> dict[str, Timing]:
    """Time every candidate of `calls` (name -> a call without arguments) by the steps of the
    module docstring; a `Timing` per name. `clock` is swappable for tests."""
    if harness.warmup < 1 or harness.min_samples < 1:
        raise ValueError("the harness needs a warm-up call and at least one sample")
    batch, rounds = _sizes(calls, harness, clock)
    names = list(calls)
    samples: dict[str, list[float]] = {name: [] for name in names}
    for r in range(rounds):
        for name in names[r % len(names) :] + names[: r % len(names)]:
            call, n = calls[name], batch[name]
            start = clock()
            for _ in range(n):
                call()
            samples[name].append((clock() - start) / n)
    return {
        name: Timing(
            statistics.median(samples[name]),
            batch[name] * rounds,
            rounds,
            batch[name],
            harness.warmup,
        )
        for name in names
    }


def time_one(
    call: Callable[[], object], harness: Harness = HARNESS, clock: Clock = time.perf_counter
) -> Timing:
    """`race` of a single candidate (the judge's cost figures)."""
    return race({"call": call}, harness, clock)["call"]


def copy_bandwidth(n: int = 1 << 22) -> float:
    """This machine's memory copy speed in bytes per second (read + write of an f32 array of
    `n` elements: a working set of 8 n bytes), timed by `time_one`."""
    src = np.ones(n, np.float32)
    dst = np.empty_like(src)
    return 2 * src.nbytes / time_one(lambda: np.copyto(dst, src)).seconds
