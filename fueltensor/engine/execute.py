"""Running a Plan: prepare each operand as its steps say, call the kernel, check what it returned.

A kernel receives C-contiguous, zero-offset buffers of the shapes its plan promised and writes a
fresh output buffer allocated here, aligned to its contract's `alignment_bytes`. A kernel that
hands back an array of its own instead is held to its contract's `return` clause. A plan whose
Contiguize of a stride-0 operand is `tiled` runs its kernel block by block over the output, the
operand made dense one block at a time (`tiled`): a broadcast is never densified at the
output's size.
"""

from __future__ import annotations

import math
import operator
import sys
import threading
from collections.abc import Callable
from functools import partial

import numpy as np

from fueltensor.core.errors import ContractViolation
from fueltensor.core.errstate import silenced
from fueltensor.core.layout import Layout
from fueltensor.core.shared import new_tensor
from fueltensor.core.storage import MACHINE_BYTES, aligned_empty, allocator, refuse_output
from fueltensor.core.tensor import FuelTensor
from fueltensor.engine import foreign
from fueltensor.engine.planner import Plan, Step, StepKind
from fueltensor.kernels import KernelFn
from fueltensor.kernels._chassis import IMPLEMENTATION, NATIVE
from fueltensor.kernels.compiled import CompiledKernel

HostFn = Callable[..., np.ndarray]
_ARRAY = operator.attrgetter("_array")
"""A tensor's NumPy view, as a C-level getter (cheaper than a comprehension on the hot path)."""


TILE = 256
"""Edge of the square tiles a transposing copy moves at a time: a tile's source and destination
rows both stay in cache, where NumPy's own copy walks the source a column at a time."""

_COPY_STRIDED = NATIVE.copy_strided if NATIVE is not None and IMPLEMENTATION == "native" else None
"""The compiled strided copy (a cache-blocked N-D gather), or None for the NumPy fallback."""


def tiled_copy(array: np.ndarray, out: np.ndarray) -> None:
    """Copy `array` into the row-major `out` with NumPy, the fallback of the compiled copy.

    When the source's fastest-moving axis is not the last one (a transpose or permute), the
    copy goes tile by tile over those two axes so reads and writes both stay in cache.
    """
    pairs = zip(array.shape, array.strides, strict=True)
    strides = [abs(s) if n > 1 else np.inf for n, s in pairs]
    fast = int(np.argmin(strides)) if strides else 0
    last = array.ndim - 1
    if array.size < TILE * TILE or fast == last or strides[fast] == 0:
        np.copyto(out, array)
        return
    src = np.moveaxis(array, (fast, last), (-2, -1))
    dst = np.moveaxis(out, (fast, last), (-2, -1))
    rows, cols = src.shape[-2:]
    for i in range(0, rows, TILE):
        for j in range(0, cols, TILE):
            dst[..., i : i + TILE, j : j + TILE] = src[..., i : i + TILE, j : j + TILE]


def contiguize(array: np.ndarray, scratch: bool = True) -> np.ndarray:
    """A row-major copy of `array` in a buffer of its own (always a copy: no view is ever
    handed to a kernel that requires a dense, zero-offset operand). `scratch=False` never takes
    the per-thread scratch buffer (a kernel fueltensor did not ship gets its own memory).

    Compiled where the kernels are built (about 3x NumPy's copy on a transposed operand), else
    `tiled_copy`; the bytes are the same either way. Object arrays always take NumPy's copy.
    """
    if array.dtype.hasobject:
        return np.array(array, order="C", copy=True)
    out = _temporary(array.shape, array.dtype) if scratch else np.empty(array.shape, array.dtype)
    if _COPY_STRIDED is None:
        tiled_copy(array, out)
    else:
        _COPY_STRIDED(array, out)
    return out


class _Scratch(threading.local):
    """The last large Contiguize temporary of this thread, kept for the next one."""

    buffer: np.ndarray | None = None


_scratch = _Scratch()
SCRATCH_MIN_BYTES = 1 << 20
SCRATCH_MAX_BYTES = 1 << 26
"""Contiguize temporaries of 1–64 MiB reuse one per-thread buffer: the fresh pages of a new
40 MB buffer cost the kernel a third of a transposed add, which PyTorch's caching allocator
avoids the same way. At most 64 MiB per thread stays held between operations."""


def _temporary(shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """An uninitialized C-order array for a kernel input that dies with the operation."""
    nbytes = math.prod(shape) * dtype.itemsize
    if not SCRATCH_MIN_BYTES <= nbytes <= SCRATCH_MAX_BYTES:
        return np.empty(shape, dtype)
    buffer = _scratch.buffer
    # Free when only the thread-local slot, this frame and getrefcount's argument refer to it:
    # every array made from it (a live temporary) holds one more reference through `.base`.
    if buffer is None or buffer.nbytes < nbytes or sys.getrefcount(buffer) > 3:
        buffer = np.empty(nbytes, np.uint8)
        _scratch.buffer = buffer
    return buffer[:nbytes].view(dtype).reshape(shape)


TILE_BYTES = 1 << 20
"""Bytes of the block a tiled operand is made dense in, one block of the output at a time."""


def _boxes(shape: tuple[int, ...], limit: int) -> tuple[int, int]:
    """The blocks `tiled` walks for an output of `shape`: (axis j, rows c) such that a block is
    c indices along axis j times every trailing axis, at most `limit` elements (c >= 1): each
    block is a run of the C-order output, and a box of every operand of that shape."""
    j, inner = len(shape) - 1, 1
    while j > 0 and inner * shape[j] <= limit:
        inner *= shape[j]
        j -= 1
    return j, max(1, limit // inner)


def tiled(
    fn: KernelFn, arrays: tuple[np.ndarray, ...], params: tuple[object, ...], out: np.ndarray
) -> None:
    """Run the elementwise `fn` block by block into the C-contiguous `out`, each operand (of
    `out`'s shape) read as it is where dense, else made dense one block at a time; a stride-0
    operand that repeats along every axis up to the block's (`a + row`) is made dense once."""
    shape = out.shape
    j, rows = _boxes(shape, TILE_BYTES // max(a.itemsize for a in arrays))
    rows = min(rows, shape[j])
    tail = shape[j + 1 :]
    inner = math.prod(tail)
    flat = out.reshape(-1)
    # Per operand: (its flat elements, None, True), read at the block's place; or (a block,
    # the view it is filled from per block, or None where it was filled once, False).
    reads: list[tuple[np.ndarray, np.ndarray | None, bool]] = []
    for a in arrays:
        if a.flags.c_contiguous:
            reads.append((a.reshape(-1), None, True))
            continue
        block = np.empty(rows * inner, a.dtype)
        once = not any(a.strides[: j + 1])
        if once:
            np.copyto(block.reshape(rows, *tail), a[(0,) * j + (slice(0, rows),)])
        reads.append((block, None if once else a, False))
    start = 0
    for prefix in np.ndindex(*shape[:j]):
        for row in range(0, shape[j], rows):
            size = min(rows, shape[j] - row)
            n = size * inner
            args = []
            for elements, view, placed in reads:
                if placed:
                    args.append(elements[start : start + n])
                    continue
                if view is not None:
                    index = (*prefix, slice(row, row + size))
                    box = view[index]
                    np.copyto(elements[:n].reshape(size, *tail), box)
                args.append(elements[:n])
            fn(*args, *params, out=flat[start : start + n])
            start += n


def _dense_broadcast(array: np.ndarray, shape: tuple[int, ...], scratch: bool) -> np.ndarray:
    """`array` broadcast to `shape` in a dense buffer of its own, in one assignment: a
    BroadcastTo and its Contiguize at once (np.broadcast_to's view alone costs more than the
    copy of a small operand)."""
    plain = scratch and not array.dtype.hasobject
    out = _temporary(shape, array.dtype) if plain else np.empty(shape, array.dtype)
    out[...] = array
    return out


def prepare(
    array: np.ndarray, steps: tuple[Step, ...], scratch: bool = True, tiles: bool = False
) -> np.ndarray:
    """Apply an operand's Cast / BroadcastTo / Contiguize steps, in order (`scratch`: whether
    a Contiguize may use the per-thread scratch buffer; `tiles`: a `tiled` Contiguize is left to
    `tiled`, the stride-0 view returned)."""
    made = False  # the next Contiguize done by its BroadcastTo
    for i, step in enumerate(steps):
        if step.kind is StepKind.CAST:
            assert step.dtype is not None
            array = array.astype(step.dtype.np, order="C")
        elif step.kind is StepKind.BROADCAST_TO:
            assert step.shape is not None
            after = steps[i + 1] if i + 1 < len(steps) else None
            made = after is not None and after.kind is StepKind.CONTIGUIZE
            made = made and not (tiles and after is not None and after.tiled)
            array = (
                _dense_broadcast(array, step.shape, scratch)
                if made
                else np.broadcast_to(array, step.shape)
            )
        elif step.kind is StepKind.CONTIGUIZE:
            if not (tiles and step.tiled) and not made:
                array = contiguize(array, scratch)
            made = False
        else:
            raise ValueError(f"a {step.kind} step does not prepare an operand: {step}")
    return array


def returned_problems(plan: Plan, got: np.ndarray, inputs: tuple[np.ndarray, ...]) -> list[str]:
    """How an array a kernel returned breaks its contract's `return` clause (empty: it holds);
    the executor and the judge both hold kernels to this."""
    assert plan.kernel is not None
    out = plan.kernel.outputs[0]
    problems = []
    if got.dtype != plan.out_dtype.np:
        problems.append(f"dtype {got.dtype}, its dtype_rule gives {plan.out_dtype.name}")
    if got.shape != plan.out_shape:
        problems.append(f"shape {got.shape}, its shape_rule gives {plan.out_shape}")
    if out.layout_guarantee == "contiguous" and not got.flags.c_contiguous:
        problems.append("a non-contiguous buffer, its layout_guarantee is contiguous")
    if out.aliasing == "none" and any(np.may_share_memory(got, x) for x in inputs):
        problems.append("a buffer that aliases an input, its aliasing is none")
    return problems


def raise_status(plan: Plan, status: int, lhs_bytes: int, rhs_bytes: int, out_bytes: int) -> None:
    """Raise the Python path's error for a nonzero `status` of `plan`'s compiled kernel, called
    on buffers of these byte lengths (the fast path's entry calls this when its call fails)."""
    assert isinstance(plan.fn, CompiledKernel)
    raise foreign.failed(plan, plan.fn.status_error(status, lhs_bytes, rhs_bytes, out_bytes))


def _check_returned(plan: Plan, got: object, inputs: tuple[np.ndarray, ...]) -> np.ndarray:
    """Hold an array a kernel returned to its contract's `return` clause."""
    assert plan.kernel is not None
    source = plan.kernel.source
    kernel = f"kernel {plan.kernel.name} ({source.path}:{source.line})"
    if not isinstance(got, np.ndarray):
        raise ContractViolation(
            f"{kernel} returned a {type(got).__name__}; kernels write "
            "`out` and return None, or return an ndarray"
        )
    problems = returned_problems(plan, got, inputs)
    if problems:
        raise ContractViolation(f"{kernel} returned " + "; ".join(problems))
    return got


def run(plan: Plan, tensors: tuple[FuelTensor, ...], host: HostFn | None = None) -> FuelTensor:
    """Execute `plan` on `tensors` and wrap the fresh output as a dense FuelTensor.

    An output that cannot exist is refused first (MemoryError), before any operand is cast or
    densified: a broadcast's operands may fit where their output never will."""
    if plan.size * plan.out_dtype.itemsize > MACHINE_BYTES:
        refuse_output(plan.out_shape, plan.out_dtype.itemsize, plan.out_dtype.name)
    fn = plan.fn
    ours = fn is None or fn in foreign.bundled()
    checked = None if ours else foreign.runner()
    if checked is not None:
        return checked(plan, tensors)
    # Block by block only past one block: below, a dense copy costs less than the walk.
    tiles = ours and plan.tiled and plan.size * plan.out_dtype.itemsize > TILE_BYTES
    if plan.prepared:
        arrays = tuple(
            [
                prepare(t._array, steps, ours, tiles) if steps else t._array
                for t, steps in zip(tensors, plan.prep, strict=True)
            ]
        )
    else:
        arrays = tuple(map(_ARRAY, tensors))
    if fn is None:
        assert host is not None
        with silenced():
            result = np.asarray(host(*arrays), order="C")  # a 0-d result stays 0-d
        return FuelTensor._from_dense(result, plan.out_dtype)
    if not ours:
        got, out = foreign.call(plan, fn, arrays)
        if got is not None:  # the kernel keeps no handle on what it returned
            out = np.array(_check_returned(plan, got, arrays), order="C", copy=True)
        return FuelTensor._from_dense(out, plan.out_dtype)
    if tiles:
        out = aligned_empty(plan.size, plan.out_dtype.np, plan.alignment)
        out = out if len(plan.out_shape) == 1 else out.reshape(plan.out_shape)
        tiled(fn, arrays, plan.params, out)
        return FuelTensor._from_dense(out, plan.out_dtype)
    flat = aligned_empty(plan.size, plan.out_dtype.np, plan.alignment)
    return _fresh(plan, fn, arrays, flat, Layout.dense(plan.out_shape))


def _fresh(
    plan: Plan,
    fn: Callable[..., object],
    arrays: tuple[np.ndarray, ...],
    flat: np.ndarray,
    layout: Layout,
) -> FuelTensor:
    """Call the bundled kernel `fn` on the prepared `arrays` into `flat`, a fresh aligned 1-D
    buffer of the plan's output, and adopt it as the storage under `layout`, the output's dense
    one (no reshape back)."""
    out = flat if len(plan.out_shape) == 1 else flat.reshape(plan.out_shape)
    got = fn(*arrays, *plan.params, out=out)
    if got is not None:
        return FuelTensor._from_dense(_check_returned(plan, got, arrays), plan.out_dtype)
    return new_tensor(FuelTensor, flat, layout, plan.out_dtype, out)


def bound(plan: Plan) -> Callable[[tuple[FuelTensor, ...]], FuelTensor]:
    """`run(plan, ·)` with what `run` decides from the plan alone decided once, for a caller
    that caches it beside the plan: a bundled kernel reading its operands as they are (no
    step), of an output that can exist, is called straight into a fresh buffer; any other plan
    runs `run` itself (a checked runner, steps, tiles, the host)."""
    fn = plan.fn
    fits = plan.size * plan.out_dtype.itemsize <= MACHINE_BYTES
    if fn is None or plan.prepared or not fits or fn not in foreign.bundled():
        return partial(run, plan)
    fresh = allocator(plan.size, plan.out_dtype.np, plan.alignment)
    layout = Layout.dense(plan.out_shape)
    return lambda tensors: _fresh(plan, fn, tuple(map(_ARRAY, tensors)), fresh(), layout)
