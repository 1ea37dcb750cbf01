"""Threads: eight threads, each under its own `use_backend` context, run a mix of the eight
operations at once. Each must see only its own context, get bitwise the results of a
single-threaded run, leave the plan caches consistent, and finish in bounded time."""

from __future__ import annotations

import random
import sys
import threading
from collections.abc import Iterator
from contextlib import AbstractContextManager, nullcontext
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import fueltensor as ft

CONTEXTS: tuple[str | None, ...] = (
    None,
    "cpu",
    "reference",
    "contracts",
    "fuel-cpu-backend",
    "reference-oracle",
    None,
    "cpu",
)
OPS = ("add", "subtract", "multiply", "divide", "remainder", "pow", "maximum", "minimum")
ROUNDS = 6
JOIN_SECONDS = 60.0

Outcome = tuple[str, bytes | str, str | None]
"""('ok', result bytes + dtype/shape, kernel or 'host') or ('error', type and message, None)."""


def operand_pairs() -> list[tuple[ft.FuelTensor, ft.FuelTensor]]:
    """Same-shape, broadcast, strided, flipped, half, mixed and integer (host) operands."""
    rng = np.random.default_rng(7)

    def make(shape: tuple[int, ...], dtype: Any) -> ft.FuelTensor:
        return ft.asarray((rng.standard_normal(shape) * 4 + 1).astype(dtype))

    a32 = make((5, 6), np.float32)
    return [
        (a32, make((5, 6), np.float32)),
        (a32, make((6,), np.float32)),
        (make((6, 5), np.float64).T, make((5, 6), np.float64)),
        (ft.flip(a32, axis=0)[::2], make((3, 6), np.float32)),
        (make((4, 4), ml_dtypes.bfloat16), make((4, 4), ml_dtypes.bfloat16)),
        (make((2, 3, 4), np.float16), make((3, 1), np.float16)),
        (a32, make((5, 6), np.float64)),
        (make((3, 3), np.int32) + 9, make((3, 3), np.int32) * 0 + 2),
    ]


def backend(name: str | None) -> AbstractContextManager[object]:
    return nullcontext() if name is None else ft.use_backend(name)


def run_one(op: str, pair: tuple[ft.FuelTensor, ft.FuelTensor]) -> Outcome:
    with ft.trace() as plans:
        try:
            result = getattr(ft, op)(*pair)
        except (ft.NoKernelError, ValueError, TypeError) as e:
            return ("error", f"{type(e).__name__}: {e}", None)
    array = np.asarray(result)
    (plan,) = plans
    used = "host" if plan.kernel is None else f"{plan.kernel.provider.name}/{plan.kernel.name}"
    return ("ok", array.tobytes() + f"{array.dtype}{array.shape}".encode(), used)


def allowed_providers(name: str | None) -> set[str]:
    """What a context may use, from the registry's own provider facts: the host in every one,
    for what no contract takes (the integer pair)."""
    providers = ft.registry().providers
    if name is None or name == "contracts":
        return {p.name for p in providers} | {"host"}
    return {
        p.name
        for p in providers
        if name in (p.name, p.kernel_source, p.name.removeprefix("fuel-").removesuffix("-backend"))
    } | {"host"}


@pytest.fixture
def fine_switching() -> Iterator[None]:
    """Switch threads often, so the operations really interleave."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-5)
    yield
    sys.setswitchinterval(before)


def test_eight_threads_see_only_their_own_backend_and_match_a_single_thread(
    fine_switching: None,
) -> None:
    pairs = operand_pairs()
    work = [(op, k) for op in OPS for k in range(len(pairs))]
    expected: dict[str | None, dict[tuple[str, int], Outcome]] = {}
    for name in set(CONTEXTS):
        with backend(name):
            expected[name] = {(op, k): run_one(op, pairs[k]) for op, k in work}
    barrier = threading.Barrier(len(CONTEXTS), timeout=JOIN_SECONDS)
    failures: list[str] = []
    seen: dict[int, set[str]] = {}

    def worker(index: int, name: str | None) -> None:
        try:
            order = list(work)
            random.Random(index).shuffle(order)
            used: set[str] = set()
            with backend(name):
                barrier.wait()
                for _ in range(ROUNDS):
                    for op, k in order:
                        got = run_one(op, pairs[k])
                        if got != expected[name][op, k]:
                            failures.append(f"thread {index} ({name}) {op} pair {k}: {got[2]}")
                        if got[2] is not None:
                            used.add(got[2].split("/")[0])
            seen[index] = used
        except Exception as e:  # reported below; a thread must never die silently
            failures.append(f"thread {index} ({name}): {type(e).__name__}: {e}")

    threads = [
        threading.Thread(target=worker, args=(i, name), daemon=True)
        for i, name in enumerate(CONTEXTS)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join(JOIN_SECONDS)
    assert not any(t.is_alive() for t in threads), "a thread did not finish: deadlock?"
    assert failures == []
    for index, name in enumerate(CONTEXTS):
        assert seen[index] and seen[index] <= allowed_providers(name), (name, seen[index])
    # Restricted contexts really were restricted, so the comparison above meant something.
    assert seen[CONTEXTS.index("cpu")] != seen[CONTEXTS.index("reference")]
    # Under every context only the integer pair, which no contract takes, ran on the host.
    for name in set(CONTEXTS):
        hosted = {k for (_, k), got in expected[name].items() if got[2] == "host"}
        assert {pairs[k][0].dtype.name for k in hosted} == {"int32"}, (name, hosted)


def test_plan_caches_stay_consistent_after_concurrent_use(fine_switching: None) -> None:
    """Every cached plan is for the operands its key names, uses only its policy's providers,
    and is the plan a fresh planning picks."""
    pairs = operand_pairs()
    errors: list[str] = []

    def worker(name: str | None) -> None:
        try:
            with backend(name):
                for _ in range(ROUNDS):
                    for op in OPS:
                        for pair in pairs:
                            run_one(op, pair)
        except Exception as e:
            errors.append(f"{name}: {type(e).__name__}: {e}")

    threads = [threading.Thread(target=worker, args=(n,), daemon=True) for n in CONTEXTS]
    for t in threads:
        t.start()
    for t in threads:
        t.join(JOIN_SECONDS)
    assert not any(t.is_alive() for t in threads) and errors == []
    for name in set(CONTEXTS) - {None}:
        assert name is not None
        with ft.use_backend(name) as policy:
            allowed = allowed_providers(name)
            assert policy.plans, name
            for key, entry in list(policy.plans.items()):
                if key[0] not in OPS:  # another test's: `x ** 3` keyed by its form, a matmul's,
                    continue  # a reduction call's, each cached in its own shape
                plan, _planning, _fast = entry
                assert key[0] == plan.op
                assert key[1:] == tuple(x for o in plan.operands for x in (o.dtype, o.layout))
                assert plan.kernel is None or plan.kernel.provider.name in allowed
            for op in OPS:
                for pair in pairs:
                    try:
                        cached = ft.explain(getattr(ft, op), *pair)
                    except ft.NoKernelError:
                        continue
                    policy.plans.clear()
                    fresh = ft.explain(getattr(ft, op), *pair)
                    assert str(cached) == str(fresh)
