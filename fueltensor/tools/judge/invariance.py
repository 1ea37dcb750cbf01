"""The judge's audit of a contract's invariance claims (`semantics.invariance`).

* `threads`: the kernel on a size that splits (twice the compiled bodies' `PARALLEL_FROM`) at
  one thread and at every thread fueltensor may use must give the same bits. A kernel that
  does not follow fueltensor's thread setting (a framework's, a user's) runs on one thread
  whatever it: the claim cannot be audited here, and the judge says so in a note.
* `isa`: the kernel on every instruction-set body of fuel-cpu-backend this machine has
  (`_native.ISAS`: AVX2 and the baseline here, AVX-512 where the speed issue adds it) must give
  the same bits; a framework's kernel, under each of its own switches
  (`registry.provider_isa_switches`: NumPy's NPY_DISABLE_CPU_FEATURES, PyTorch's
  ATEN_CPU_CAPABILITY), read at start-up, so run in a fresh process (`python -m
  fueltensor.tools.judge.invariance`). For a provider with neither, the judge says, in a note,
  that it has nothing to switch between here.
* `position`: the position sweep of `judge.semantics` audits it (`position: invariant`).
* `layout` and `batch`: a reduction's claims, which `judge.reductions` audits; here a note says
  they were not audited.

Probes: `testing.special_pairs` tiled, then random bit patterns, so every special value sits
in vector lanes and tails of every chunk. A broken claim names the first differing element:
its index, its inputs and both results' bits.
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

import numpy as np

from fueltensor.core.dtypes import BY_FKC, DType
from fueltensor.fkc.schema import KernelContract
from fueltensor.kernels import KernelFn
from fueltensor.kernels._chassis import NATIVE
from fueltensor.kernels.threads import MAX_THREADS, PARALLEL_FROM, running_on, threads_for
from fueltensor.registry import provider_isa_switches, registry
from fueltensor.testing import format_value, random_bits, special_pairs
from fueltensor.tools.judge.calls import as_operands, call, flat_shapes, plan_for

Array = np.ndarray
SPLIT_SIZE: Final = 2 * (PARALLEL_FROM or 1 << 19)
"""Elements per probe: twice where the compiled bodies start splitting."""


def _operands(contract: KernelContract, dtype: DType, n: int) -> tuple[Array, ...]:
    """The probe's operands, one per input: special pairs tiled (a third operand the first
    rolled), then random patterns; a fixed bool input from its column's sign bits."""
    sa, sb = (s.array for s in special_pairs(dtype.np))
    found = []
    for seed, special in enumerate((sa, sb, np.roll(sa, 7))[: len(contract.inputs)]):
        tiled = np.resize(special, n // 2)
        rest = np.asarray(random_bits(dtype.np, n - tiled.size, rng=seed))
        found.append(np.concatenate([tiled, rest]))
    return as_operands(contract.op_kind, found, dtype.np)


def _first_difference(inputs: tuple[Array, ...], a: Array, b: Array, what: str) -> str | None:
    """The first element whose bits differ between two runs, described; None when none does."""
    ua, ub = (x.reshape(-1).view(f"u{x.itemsize}") for x in (a, b))
    differ = np.flatnonzero(ua != ub)
    if not differ.size:
        return None
    i = int(differ[0])
    shown = ", ".join(format_value(x.reshape(-1)[i]) for x in inputs)
    return (
        f"{what}: {differ.size} of {ua.size} elements differ, first element {i} ({shown}): "
        f"{format_value(a.reshape(-1)[i])} against {format_value(b.reshape(-1)[i])}"
    )


@contextmanager
def _isa(name: str) -> Iterator[None]:
    """Run fuel-cpu-backend's compiled bodies for instruction set `name` inside the block."""
    assert NATIVE is not None
    previous = NATIVE.select_isa(name)
    try:
        yield
    finally:
        NATIVE.select_isa(previous)


def audit_invariance(
    contract: KernelContract, fn: KernelFn, dtype: DType
) -> tuple[list[str], list[str]]:
    """(failures, notes) of `contract`'s invariance claims at `dtype` (see the module)."""
    claims = contract.semantics.invariance if contract.semantics is not None else None
    if not claims:
        return [], []
    n = SPLIT_SIZE
    plan = plan_for(contract, dtype, flat_shapes(contract, n))
    inputs = tuple(
        x.reshape(o.layout.shape)
        for x, o in zip(_operands(contract, dtype, n), plan.operands, strict=True)
    )

    def run() -> Array:
        """The kernel on the probe, as dispatch calls it."""
        return call(fn, plan, inputs)

    failures: list[str] = []
    notes: list[str] = []
    if "threads" in claims:
        _threads(fn, n, inputs, run, failures, notes)
    if "isa" in claims and provider_isa_switches(contract.provider.name):
        _switched(contract, dtype, inputs, run, failures)
    elif "isa" in claims:
        _isas(fn, inputs, run, failures, notes)
    notes += [
        f"invariance {claim}: a reduction's claim (judge.reductions), not audited here"
        for claim in ("layout", "batch")
        if claim in claims
    ]
    return failures, notes


def probe_outputs(name: str, dtype: str) -> Array:
    """Contract `name`'s outputs on the invariance probe at `dtype` (an FKC code), in this
    process: what a fresh process under an instruction-set switch computes."""
    reg = registry()
    contract, dt = reg[name], BY_FKC[dtype]
    plan = plan_for(contract, dt, flat_shapes(contract, SPLIT_SIZE))
    inputs = tuple(
        x.reshape(o.layout.shape)
        for x, o in zip(_operands(contract, dt, SPLIT_SIZE), plan.operands, strict=True)
    )
    return call(reg.kernel(name), plan, inputs)


def _switched(
    contract: KernelContract,
    dtype: DType,
    inputs: tuple[Array, ...],
    run: Callable[[], Array],
    failures: list[str],
) -> None:
    """The `isa` claim of a framework: its default here against each of its switches, each in
    a fresh process."""
    here = run()
    for switch in provider_isa_switches(contract.provider.name):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "out.npy"
            argv = [sys.executable, "-m", __name__, contract.name, dtype.fkc, str(path)]
            done = subprocess.run(  # in tmp: a fueltensor checkout in the cwd is not it
                argv,
                env=os.environ | switch,
                cwd=tmp,
                capture_output=True,
                text=True,
                check=False,
            )
            if done.returncode != 0:
                failures.append(f"invariance isa: under {switch} the kernel failed: {done.stderr}")
                continue
            there = np.load(path).view(here.dtype).reshape(here.shape)
        shown = " ".join(f"{k}={v}" for k, v in switch.items())
        found = _first_difference(inputs, here, there, f"invariance isa: default against {shown}")
        if found:
            failures.append(found)


if __name__ == "__main__":
    name, code, target = sys.argv[1:]
    got = probe_outputs(name, code)
    np.save(target, got.view(f"u{got.itemsize}"))


def _threads(
    fn: KernelFn,
    n: int,
    inputs: tuple[Array, ...],
    run: Callable[[], Array],
    failures: list[str],
    notes: list[str],
) -> None:
    """The `threads` claim: one thread against every thread."""
    with running_on(MAX_THREADS):
        many = threads_for(fn, n)
        wide = run()
    if many < 2:
        notes.append(
            f"invariance threads: the kernel runs on {many} thread at {n} elements here "
            "(it does not follow fueltensor's thread setting, or this machine has one core): "
            "not audited"
        )
        return
    with running_on(1):
        one = run()
    found = _first_difference(inputs, one, wide, f"invariance threads: 1 thread against {many}")
    if found:
        failures.append(found)


def _isas(
    fn: KernelFn,
    inputs: tuple[Array, ...],
    run: Callable[[], Array],
    failures: list[str],
    notes: list[str],
) -> None:
    """The `isa` claim: every compiled body of this machine against the first."""
    if NATIVE is None or getattr(fn, "__fueltensor_native__", None) is None:
        notes.append(
            "invariance isa: the kernel has no instruction-set bodies fueltensor can switch "
            "between here: not audited"
        )
        return
    results = {}
    for name in NATIVE.ISAS:
        with _isa(name):
            results[name] = run()
    first, *others = NATIVE.ISAS
    for name in others:
        found = _first_difference(
            inputs, results[first], results[name], f"invariance isa: {first} against {name}"
        )
        if found:
            failures.append(found)
