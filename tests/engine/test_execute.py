"""Contiguize's reusable temporary: reused only when nothing refers to it any more."""

from __future__ import annotations

import weakref

import numpy as np

import fueltensor as ft
from fueltensor.engine import execute


def transposed(n: int) -> np.ndarray:
    return np.arange(n * n, dtype=np.float32).reshape(n, n).T


def test_live_temporaries_never_share_memory() -> None:
    src = transposed(600)  # 1.4 MB: inside the reused range
    first = execute.contiguize(src)
    second = execute.contiguize(src)
    assert not np.shares_memory(first, second)
    np.testing.assert_array_equal(first, src)
    np.testing.assert_array_equal(second, src)


def test_a_dead_temporary_is_reused() -> None:
    src = transposed(600)
    first = execute.contiguize(src)
    base = weakref.ref(first.base)
    del first
    again = execute.contiguize(src)
    assert again.base is base()
    np.testing.assert_array_equal(again, src)


def test_small_and_huge_temporaries_are_fresh() -> None:
    large = execute.contiguize(transposed(600))
    held = weakref.ref(large.base)
    del large  # dead: the next large Contiguize would reuse its buffer
    assert held() is not None
    small = execute.contiguize(transposed(16))
    assert small.base is not held()
    np.testing.assert_array_equal(small, transposed(16))
    nbytes = execute.SCRATCH_MAX_BYTES + 4
    huge = np.zeros(nbytes // 4 + 1, np.float32)[::-1]
    copied = execute.contiguize(huge)
    assert copied.base is not held() and not np.shares_memory(copied, huge)
    assert execute.contiguize(transposed(600)).base is held()  # still there to be reused


def test_results_never_alias_the_reused_temporary() -> None:
    a = ft.asarray(np.arange(600 * 600, dtype=np.float32).reshape(600, 600))
    r1 = a.T + a
    r2 = a.T * a
    held = execute._scratch.buffer
    assert held is not None
    for r in (r1, r2):
        assert not np.shares_memory(np.asarray(r), held)
    np.testing.assert_array_equal(np.asarray(r1), np.asarray(a).T + np.asarray(a))
