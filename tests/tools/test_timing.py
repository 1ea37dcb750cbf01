"""The timing harness's logic on a fake clock: warm-up first, batches sized for the clock, the
candidates interleaved round by round, medians, the calls counted and reported, the budget.
No wall-clock figure is asserted (the machines are shared)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from fueltensor.tools.timing import HARNESS, Harness, race, time_one


class FakeClock:
    """A clock that only moves when a fake kernel runs, by the kernel's cost for that call."""

    def __init__(self) -> None:
        self.now = 0.0
        self.log: list[str] = []

    def __call__(self) -> float:
        return self.now

    def kernel(self, name: str, cost: Callable[[int], float]) -> Callable[[], None]:
        """A call that advances the clock by `cost(n)` on its n-th call (from 0)."""
        calls = 0

        def call() -> None:
            nonlocal calls
            self.now += cost(calls)
            self.log.append(name)
            calls += 1

        return call


def runs(log: list[str]) -> list[tuple[str, int]]:
    """The log as (name, consecutive calls) runs."""
    out: list[tuple[str, int]] = []
    for name in log:
        if out and out[-1][0] == name:
            out[-1] = (name, out[-1][1] + 1)
        else:
            out.append((name, 1))
    return out


def test_warm_up_keeps_a_cold_start_from_inverting_the_order() -> None:
    # The figures: a built-in kernel cold at first (381.6 µs) but 57 µs steadily,
    # against the author's 163 µs: three back-to-back cold calls would rank them the wrong way.
    clock = FakeClock()
    cold = clock.kernel("built-in", lambda n: 381.6e-6 if n < 2 else 57e-6)
    steady = clock.kernel("mine", lambda n: 163e-6)
    got = race({"built-in": cold, "mine": steady}, HARNESS, clock)
    assert got["built-in"].seconds == pytest.approx(57e-6)
    assert got["mine"].seconds == pytest.approx(163e-6)
    assert clock.log[: HARNESS.warmup] == ["built-in"] * HARNESS.warmup  # warm-up comes first
    assert clock.log[HARNESS.warmup : 2 * HARNESS.warmup] == ["mine"] * HARNESS.warmup


def test_calls_are_counted_and_batches_sized_for_the_clock() -> None:
    clock = FakeClock()
    # Binary fractions of a second, so the fake clock's sums are exact.
    harness = Harness(warmup=2, samples=5, min_samples=3, sample_seconds=2**-13, budget=1.0)
    fast = clock.kernel("fast", lambda n: 2**-20)
    slow = clock.kernel("slow", lambda n: 2**-14)
    got = race({"fast": fast, "slow": slow}, harness, clock)
    assert (got["fast"].batch, got["slow"].batch) == (128, 2)  # >= 122 µs per batch
    for name in ("fast", "slow"):
        t = got[name]
        assert (t.samples, t.warmup) == (5, 2)
        assert t.calls == t.batch * t.samples
        assert clock.log.count(name) == t.calls + t.warmup  # the report counts every timed call


def test_candidates_take_turns_batch_by_batch() -> None:
    clock = FakeClock()
    harness = Harness(warmup=1, samples=4, min_samples=1, sample_seconds=3 * 2**-20, budget=1.0)
    calls = {name: clock.kernel(name, lambda n: 2**-20) for name in ("a", "b", "c")}
    race(calls, harness, clock)
    timed = runs(clock.log[3:])  # after one warm-up call each
    assert [n for _, n in timed] == [3] * 12  # batches of 3 calls
    rounds = [[name for name, _ in timed[i : i + 3]] for i in range(0, 12, 3)]
    assert all(sorted(r) == ["a", "b", "c"] for r in rounds)  # every round runs every one
    assert [r[0] for r in rounds] == ["a", "b", "c", "a"]  # and the first place rotates


def test_the_median_ignores_a_slow_moment_of_the_machine() -> None:
    clock = FakeClock()
    harness = Harness(warmup=1, samples=5, min_samples=1, sample_seconds=2**-20, budget=1.0)
    # Call 0 sizes the batches (1 call); calls 1..5 are the samples: one hit by a slow moment,
    # one lucky. Neither the mean nor the best is the steady figure.
    costs = {3: 2**-10, 5: 2**-21}
    t = time_one(clock.kernel("k", lambda n: costs.get(n, 2**-19)), harness, clock)
    assert t.batch == 1 and t.samples == 5 and t.seconds == 2**-19


def test_the_budget_cuts_rounds_of_a_slow_kernel_but_keeps_a_minimum() -> None:
    clock = FakeClock()
    harness = Harness(warmup=1, samples=7, min_samples=3, sample_seconds=2**-13, budget=0.25)
    t = time_one(clock.kernel("slow", lambda n: 0.125), harness, clock)
    assert (t.batch, t.samples, t.calls) == (1, 3, 3)  # 0.25 s allows 2; the floor is 3
    t = time_one(clock.kernel("mid", lambda n: 2**-6), harness, clock)
    assert t.samples == 7 and t.calls == 7  # 7 rounds of 16 ms fit
    t = time_one(clock.kernel("big", lambda n: 2**-4), harness, clock)
    assert t.samples == 4  # 4 rounds of 62.5 ms fit 0.25 s


def test_a_harness_without_warm_up_or_samples_is_refused() -> None:
    with pytest.raises(ValueError, match="warm-up"):
        time_one(lambda: None, Harness(warmup=0))
