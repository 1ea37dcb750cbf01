"""Dask arrays of FuelTensor chunks: each block a FuelTensor, each elementwise op on a worker
dispatched through the same kernel contracts (as Dask holds CuPy or sparse chunks).

`from_tensor(x, chunks)` makes a `dask.array.Array` whose `_meta` and blocks are FuelTensors.
The eight operations (`ft.add(a, b)`, `ft.maximum(a, b)`, ...) on such arrays map blockwise, the
result's dtype planned by fueltensor (bf16 + f16 -> f32); operators, NumPy ufuncs and `da.*`
functions reach the contracts through FuelTensor's NumPy protocols on every block, and Dask's
metadata is the FuelTensor the operation gives on the empty `_meta` blocks.
`trace(x, client)` computes an array block by block on the workers, each inside `ft.trace()`.

Needs the `dask` extra: `pip install 'fueltensor[dask]'`.
"""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import dask.array as da
import numpy as np
from dask.array.chunk_types import register_chunk_type
from dask.array.dispatch import concatenate_lookup, percentile_lookup
from dask.array.percentile import _percentile
from dask.sizeof import sizeof

from fueltensor.array_api.creation import empty
from fueltensor.array_api.manipulation import concat
from fueltensor.core.tensor import FuelTensor, asarray
from fueltensor.engine import dispatch
from fueltensor.engine.backends import trace as _trace
from fueltensor.engine.planner import Plan

if TYPE_CHECKING:
    from distributed import Client

Chunks = Any
"""What `dask.array.from_array` takes as `chunks`: "auto", an int, a shape, or explicit sizes."""

_registered = False


def register() -> None:
    """Make Dask hold FuelTensors: a chunk type (so `dask_array + tensor` stays a Dask array),
    concatenated with `concat`, sized by its `nbytes`, a block's percentiles by Dask's NumPy
    code (`np.percentile` on a tensor stays one), and the eight operations mapped blockwise.
    Idempotent; `from_tensor` calls it."""
    global _registered
    if _registered:
        return
    register_chunk_type(FuelTensor)
    concatenate_lookup.register(FuelTensor)(_concatenate)
    percentile_lookup.register(FuelTensor)(_percentile)
    sizeof.register(FuelTensor)(_nbytes)
    dispatch.DEFERRED[da.Array] = elementwise
    _registered = True


def _nbytes(t: FuelTensor) -> int:
    """A block's size for Dask's memory accounting: its elements' bytes (not the Python
    object's few dozen, which would hide every block from spilling and scheduling)."""
    return t.nbytes


def _concatenate(arrays: Sequence[Any], axis: int = 0) -> FuelTensor:
    """Dask's concatenate for FuelTensor blocks (a host operation: blocks are data, not math)."""
    return concat([asarray(a) for a in arrays], axis=axis)


def meta(dtype: Any, ndim: int) -> FuelTensor:
    """An empty FuelTensor of `dtype` and `ndim` axes: what Dask keeps as an array's `_meta`."""
    return empty((0,) * ndim, dtype=dtype)


def from_tensor(x: Any, chunks: Chunks = "auto") -> da.Array:
    """A Dask array of FuelTensor blocks cut from `x` (a FuelTensor, or anything `asarray`
    takes). Blocks are views of `x` until they travel: a pickled view carries only its own
    elements."""
    register()
    t = asarray(x)
    array: da.Array = da.from_array(t, chunks=chunks, asarray=False, meta=meta(t.dtype, t.ndim))
    return array


def _lift(value: Any) -> Any:
    """A Dask array as is; a tensor or NumPy array as a one-block Dask array; a scalar as is."""
    if isinstance(value, da.Array):
        return value
    if isinstance(value, FuelTensor | np.ndarray):
        t = asarray(value)
        return from_tensor(t, t.shape or "auto")
    return value


def _block(a: Any, b: Any, *, op: str) -> FuelTensor:
    """One block of an operation: the namespace's `op` on FuelTensor blocks (on a worker)."""
    result: FuelTensor = getattr(dispatch, op)(a, b)
    return result


def elementwise(op: str, a: Any, b: Any) -> da.Array:
    """One of the eight operations where an operand is a Dask array: blockwise, each block
    dispatched through the contracts, the result's dtype planned by fueltensor (not NumPy)."""
    register()
    args = [_lift(a), _lift(b)]
    metas = [v._meta if isinstance(v, da.Array) else v for v in args]
    planned = dispatch.explain(getattr(dispatch, op), *metas)
    ndim = max(getattr(v, "ndim", 0) for v in args)
    pairs: list[Any] = []
    for v in args:
        pairs += [v, tuple(range(v.ndim))[::-1] if isinstance(v, da.Array) else None]
    result: da.Array = da.blockwise(
        _block,
        tuple(range(ndim))[::-1],
        *pairs,
        op=op,
        meta=meta(planned.out_dtype, ndim),
        token=f"fueltensor-{op}",
    )
    return result


@dataclass(frozen=True)
class BlockTrace:
    """The plans one output block ran, and the worker it ran on."""

    block: tuple[int, ...]
    worker: str
    plans: tuple[Plan, ...]


@dataclass(frozen=True)
class Traced:
    """`trace`'s answer: the computed array, and every block's plans from its worker."""

    result: FuelTensor
    blocks: tuple[BlockTrace, ...]

    @property
    def plans(self) -> list[Plan]:
        """Every plan that ran, block after block."""
        return [p for b in self.blocks for p in b.plans]

    @property
    def kernels(self) -> list[str]:
        """The kernels the plans chose, in order ("host" for a host operation)."""
        return ["host" if p.kernel is None else p.kernel.name for p in self.plans]


@dataclass(frozen=True)
class _Graph:
    """A block's Delayed, wrapped so that `client.submit` ships its graph instead of computing
    it as an argument."""

    block: Any


def _compute_traced(graph: _Graph) -> tuple[FuelTensor, tuple[Plan, ...], str]:
    """Run on a worker: compute one block's graph in this thread inside `ft.trace()`."""
    from distributed import get_worker

    with _trace() as plans:
        value = asarray(graph.block.compute(scheduler="sync"))
    return value, tuple(plans), get_worker().address


def trace(x: da.Array, client: Client, timeout: float | None = None) -> Traced:
    """Compute `x` on `client`'s workers block by block, each block's graph run inside
    `ft.trace()` on the worker that computes it; the blocks come back with their plans (which
    pickle: the kernel is linked again by name) and are assembled as `x.compute()` would.
    `timeout` (seconds) bounds the wait for each block."""
    delayed = x.to_delayed()
    token = uuid.uuid4().hex[:8]
    futures = {
        index: client.submit(
            _compute_traced, _Graph(delayed[index]), key=f"fueltensor-trace-{token}-{i}", pure=False
        )
        for i, index in enumerate(np.ndindex(delayed.shape))
    }
    done = {index: f.result(timeout=timeout) for index, f in futures.items()}
    grid = np.empty(delayed.shape, dtype=object)
    for index, (value, _, _) in done.items():
        grid[index] = value
    result = _concatenate_grid(grid) if grid.size else meta(x.dtype, x.ndim)
    blocks = tuple(BlockTrace(index, w, plans) for index, (_, plans, w) in done.items())
    return Traced(result, blocks)


def _concatenate_grid(grid: np.ndarray) -> FuelTensor:
    """A grid of blocks (an object array) joined along every axis, last axis first."""
    for axis in reversed(range(grid.ndim)):
        joined = np.empty(grid.shape[:axis], dtype=object)
        for index in np.ndindex(joined.shape):
            joined[index] = _concatenate(list(grid[index]), axis=axis)
        grid = joined
    value = grid[()]
    assert isinstance(value, FuelTensor)
    return value
