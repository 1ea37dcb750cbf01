"""Whether f32 pow takes the vector powf on this machine, and the proof that it is `powf`.

The contract's pow is the platform C library's `powf`. The compiled kernels run a vector
transcription of glibc's `powf` (`ext/src/native/powf_vector.c`: the same double-precision
operations in the same order, FMAs where glibc's FMA variant has them) wherever the platform's
`powf` is recognised as that algorithm: glibc 2.28 or later, the FMA variant its ifunc picks on
this CPU, its tables found byte for byte in the running libm, and a sample of special and
random inputs equal bit for bit (`ext/src/native/powf_recognise.c`, run once at the first f32
pow, in well under a millisecond). Everywhere else, and in any floating-point mode but the
default, `powf` runs for every lane: the same bits, slower. Nothing has to be run by hand.

`check` holds every vector pass to `powf` over all 2^32 x for a fixed y (`_native.verify_pow`,
C, all cores, GIL released): `fueltensor pow-shortcut --check` runs it for y = 2 and y = 0.5 on
this machine (minutes of CPU), and benchmarks/pow_proof.py adds 10^9 random (x, y) pairs; the
development machine's results are in benchmarks/RESULTS.md.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from types import ModuleType
from typing import Final

from fueltensor.core import settings

Y_VALUES: Final = (2.0, 0.5)
"""The exponents `fueltensor pow-shortcut --check` proves exhaustively (the common scalar
powers that are not integers: `x ** 2` with an int exponent is PowIElementwise)."""
INPUTS: Final = 1 << 32
"""Every f32 bit pattern."""
CHUNK: Final = 1 << 26
"""x bit patterns per `_native.verify_pow` call: 64 steps per exponent for progress reports."""
ENV_VAR: Final = "FUELTENSOR_POW_SHORTCUT"
"""A switch: off (0, false, off, no) keeps the vector powf off (`powf` for every lane)."""


def _cores() -> int:
    """The cores this process may run on."""
    if hasattr(os, "sched_getaffinity"):
        return len(os.sched_getaffinity(0))
    return os.cpu_count() or 1


THREADS: Final = min(_cores(), 64)
"""Threads of one check: every core this process may run on, up to the 64 `_native.verify_pow`
takes (the check is a one-off wait for the whole machine)."""


@dataclass(frozen=True)
class Check:
    """One comparison of every vector pass with `powf` over a range of x for one y."""

    y: float
    inputs: int
    """How many x bit patterns were compared."""
    mismatches: int
    """Lanes whose bits differ from `powf`'s, summed over the passes."""
    first: int | None
    """The bits of the first x that differs, if any."""
    seconds: float
    passes: tuple[str, ...]
    """The vector passes compared (the instruction sets this CPU runs)."""

    @property
    def proven(self) -> bool:
        """Whether every pass matched `powf` on all 2^32 inputs."""
        return self.inputs == INPUTS and self.mismatches == 0 and bool(self.passes)


Progress = Callable[[float, int, int], None]
"""Called as (y, inputs done for that y, inputs of that y) after every chunk of a check."""


def check(
    native: ModuleType,
    start: int = 0,
    stop: int = INPUTS,
    threads: int = THREADS,
    y_values: tuple[float, ...] = Y_VALUES,
    progress: Progress | None = None,
) -> tuple[Check, ...]:
    """Compare every vector pass with `powf` for each of `y_values`, over the x bit patterns
    [start, stop), `CHUNK` at a time (`progress` hears of each); RuntimeError where the vector
    powf does not run here (there is nothing to compare)."""
    checks = []
    for y in y_values:
        began = time.perf_counter()
        mismatches, firsts, passes = 0, [], ()
        for lo in range(start, stop, CHUNK):
            hi = min(lo + CHUNK, stop)
            per_pass = native.verify_pow(y, lo, hi, threads)
            passes = tuple(name for name, *_ in per_pass)
            mismatches += sum(count for _, count, _, _ in per_pass)
            firsts += [x for _, _, x, _ in per_pass if x >= 0]
            if progress is not None:
                progress(y, hi - start, stop - start)
        checks.append(
            Check(
                y=y,
                inputs=stop - start,
                mismatches=mismatches,
                first=min(firsts) if firsts else None,
                seconds=round(time.perf_counter() - began, 1),
                passes=passes,
            )
        )
    return tuple(checks)


_STATE: dict[str, ModuleType | str | None] = {"native": None, "off": None}
"""The kernels' module once `activate` has run, and why the vector powf is off by request."""
_LOCK: Final = threading.Lock()


REQUESTED: Final = settings.switch(ENV_VAR, True)
"""The switch `ENV_VAR`, read (and a value it does not take refused) at import in every build,
the pure one included, though only the compiled kernels have a vector powf to switch."""


def activate(native: ModuleType) -> None:
    """At import: keep the vector powf on unless the switch `ENV_VAR` is off (the recognition
    itself runs at the first f32 pow, never here)."""
    off = not REQUESTED
    native.pow_vector(not off)
    with _LOCK:
        _STATE.update(native=native, off=f"{ENV_VAR}={os.environ[ENV_VAR]}" if off else None)


def status() -> tuple[bool, str]:
    """Whether f32 pow takes the vector powf here, and why (recognising it now if no pow ran)."""
    with _LOCK:
        native, off = _STATE["native"], _STATE["off"]
    if not isinstance(native, ModuleType):
        return False, "the compiled kernels are not in use: the pure kernels call powf"
    on, recognised, reason = native.pow_status()
    if not on:
        return False, f"switched off ({off or 'pow_vector(False)'}): powf for every lane"
    if not recognised:
        return False, f"powf for every lane (the same bits, slower): {reason}"
    return True, f"the vector powf runs: {reason}"


def describe() -> str:
    """`status` in one line, as the machine fingerprint shows it."""
    on, text = status()
    return f"{'on' if on else 'off'}: {text}"
