"""Certificates of casts from float64: not every input (2**64), but every edge of the target
and a seeded sample, against the judge's reference in Python integers.

The edge set (`edges`), for the target the contract names, both signs: target values and the
midpoints between adjacent ones (0 and the smallest subnormal included: the underflow to zero),
the rounding threshold above the largest finite value (its midpoint with the next power of two,
`past`) and that power itself, each with the float64 values one ULP either side; and float64's
special values (±0, ±inf, NaNs of several payloads, quiet and signaling, its extremes). Which
target values (`edge_patterns`): of each binade (each exponent field; among the subnormals each
power-of-two range of the fraction) the first and last `EDGE_RUN`. That is every value and
every midpoint of a target whose binades hold at most 2 * EDGE_RUN values: every 8- and 16-bit
format. float32's 2**32 are too many: of its binades, the edges are where the exponent field,
the carry of a rounding up into the next binade and the quantum change, the places a rounding
of the fraction bits can go wrong apart from the fraction itself, which the seeded sample of
midpoints covers. The sample (`sampled`), for `n`: n midpoints drawn among every one of the
target with their float64 neighbours (where the edges do not hold them all), n random float64
bit patterns and n random values within the target's range; the certificate gives its size and
seed.

The reference is `judge.casts.cast_bits` (each pattern's fields rounded in integers by the
declared rule, the target's bits composed from theirs): no NumPy or ml_dtypes cast is involved.
The tally is the cast sweep's (`casts.tally`), so the certificate reads as the other cast
certificates do; its span names the edges, the sample and the seed instead of a range.
"""

from __future__ import annotations

import hashlib
import itertools
import time
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Final

import numpy as np

from fueltensor.core import dtypes as _dtypes
from fueltensor.core.dtypes import DType
from fueltensor.fkc.schema import KernelContract
from fueltensor.kernels import KernelFn
from fueltensor.registry import Registry
from fueltensor.testing import FloatFormat, float_format, format_value, special_values
from fueltensor.tools.certify.binary import binary_identity
from fueltensor.tools.certify.casts import ORACLE, head, is_source, run_cast, tally, tally_fields
from fueltensor.tools.certify.tally import fresh, merge, named
from fueltensor.tools.judge import casts

EDGE_RUN: Final = 512
"""Target values taken at each end of a binade: every value of a binade of at most 1024 (a
fraction of at most 10 bits, every 8- and 16-bit format's)."""
SAMPLE: Final = 1 << 16
"""The sample's `n` where none is asked for (`sampled`)."""
CHUNK: Final = 1 << 20
"""Inputs per kernel call and tally."""
WIDTH: Final = 64
"""The source width certified here: float64's."""


def _values(p: np.ndarray, t: FloatFormat) -> np.ndarray:
    """The float64 values of target patterns `p` (exact: float64 holds every one)."""
    out: np.ndarray = p.astype(t.uint).view(t.dtype).astype(np.float64)
    return out


def _past(t: FloatFormat) -> float:
    """The power of two past the largest finite value (its next pattern's value, were there no
    infinity or NaN): the largest plus its ULP."""
    top, below = _values(np.array([t.max_pattern, t.max_pattern - 1], np.uint64), t)
    return float(2 * top - below)


def enumerates_all(t: FloatFormat) -> bool:
    """Whether the edge set holds every value and midpoint of `t` (a binade of at most 2 *
    EDGE_RUN values)."""
    return 1 << t.mantissa <= 2 * EDGE_RUN


def edge_patterns(t: FloatFormat) -> np.ndarray:
    """The positive finite target patterns at the ends of their binades (module docstring),
    sorted, as uint64."""
    top = t.max_pattern + 1
    normal = range(1 << t.mantissa, top, 1 << t.mantissa)
    bounds = sorted({0, *(1 << k for k in range(t.mantissa)), *normal, top})
    binades = list(itertools.pairwise(bounds))
    runs = [np.arange(lo, min(lo + EDGE_RUN, hi)) for lo, hi in binades]
    runs += [np.arange(max(hi - EDGE_RUN, lo), hi) for lo, hi in binades]
    return np.unique(np.concatenate(runs)).astype(np.uint64)


def _midpoints(p: np.ndarray, t: FloatFormat) -> np.ndarray:
    """The midpoint between each positive finite pattern of `p` and the next value up (the
    largest finite's: the rounding threshold, halfway to `_past`); exact in float64."""
    after = _values(np.minimum(p + np.uint64(1), np.uint64(t.max_pattern)), t)
    after[p == t.max_pattern] = _past(t)
    out: np.ndarray = (_values(p, t) + after) / 2
    return out


def _near(points: np.ndarray) -> np.ndarray:
    """`points` and the float64 values one ULP either side of each, both signs."""
    near = np.concatenate([points, np.nextafter(points, np.inf), np.nextafter(points, -np.inf)])
    return np.concatenate([near, -near])


def edges(t: FloatFormat) -> np.ndarray:
    """The edge set of target `t` as float64 patterns (uint64), sorted (module docstring)."""
    p = edge_patterns(t)
    points = np.concatenate([_values(p, t), _midpoints(p, t), [_past(t)]])
    specials = special_values(np.float64).array.view(np.uint64)
    return np.unique(np.concatenate([_near(points).view(np.uint64), specials]))


def sampled(t: FloatFormat, n: int, seed: int) -> np.ndarray:
    """The seeded sample (module docstring) as float64 patterns (uint64), in drawing order."""
    rng = np.random.default_rng(seed)
    parts = []
    if not enumerates_all(t):
        p = rng.integers(0, t.max_pattern, n, dtype=np.uint64, endpoint=True)
        mid = _midpoints(p, t) * rng.choice([-1.0, 1.0], n)
        parts += [mid, np.nextafter(mid, np.inf), np.nextafter(mid, -np.inf)]
    parts.append(rng.integers(0, 1 << 64, n, dtype=np.uint64).view(np.float64))
    lowest = 1 - t.bias - t.mantissa - 2  # below the smallest subnormal's binade
    highest = int(np.log2(_past(t)))  # the binade past the largest finite
    scale = rng.integers(lowest, highest, n, endpoint=True)
    parts.append(np.ldexp(rng.uniform(1.0, 2.0, n), scale) * rng.choice([-1.0, 1.0], n))
    return np.concatenate(parts).view(np.uint64)


@dataclass(frozen=True)
class F64CastJob:
    """One cast contract from float64: its kernel, its binary, and the edges and sample."""

    contract: KernelContract
    kernel: KernelFn
    dtype: DType
    binary: dict[str, Any]

    @property
    def target(self) -> FloatFormat:
        """The format the contract casts to (its `fixed(<dtype>)` rule)."""
        return float_format(casts.target(self.contract))

    def run(self, x: np.ndarray) -> np.ndarray:
        """The kernel's output patterns (uint64) for float64 patterns `x`."""
        return run_cast(self.contract, self.kernel, self.dtype, x)

    def reference(self, x: np.ndarray) -> np.ndarray:
        """The declared rule's target patterns (uint64) of float64 patterns `x`, each rounded
        in integers (module docstring)."""
        s, t = float_format(self.dtype.np), self.target
        saturate, form, flush = casts.declared_rule(self.contract)
        made: np.ndarray = casts.cast_bits(x, s, t, saturate, form, flush)
        return made


def f64_cast_jobs(reg: Registry, names: Iterable[str], wanted: set[str] | None) -> list[F64CastJob]:
    """A job per registrable cast contract from float64 of the providers `names` (or the
    `wanted` ones), the oracle's own left out as for float32 (`casts.cast_jobs`)."""
    providers, found = set(names), []
    for c in reg:
        if not is_source(c, providers, wanted) or c.kernel_source == ORACLE:
            continue
        for code in dict.fromkeys(c.inputs[0].dtypes):
            dtype = _dtypes.BY_FKC[code]
            if 8 * dtype.itemsize == WIDTH:
                found.append(F64CastJob(c, reg.kernel(c.name), dtype, binary_identity(c, reg)))
    return found


def scheme(t: FloatFormat, n: int) -> str:
    """Which target values and midpoints the edges hold, in words (the span's `scheme`)."""
    if enumerates_all(t):
        return "every target value and midpoint"
    return (
        f"each binade's first and last {EDGE_RUN} target values and midpoints; in the sample, "
        f"{n:,} midpoints drawn among all"
    )


def f64_cast_data(job: F64CastJob, sample: int, seed: int) -> dict[str, Any]:
    """The certificate fields of a cast from float64 (the caller adds the contract, the binary,
    the machine and the versions): the edges and the sample of `sample` (0: `SAMPLE`) from
    `seed` through the kernel and the reference, tallied as the cast sweep tallies."""
    start, t, n = time.perf_counter(), job.target, sample or SAMPLE
    edge, drawn = edges(t), sampled(t, n, seed)
    x, stats, digest = np.concatenate([edge, drawn]), fresh(), hashlib.sha256()
    for lo in range(0, x.size, CHUNK):
        part = x[lo : lo + CHUNK]
        got = job.run(part)
        lanes = np.arange(lo, lo + part.size)
        merge(stats, tally(float_format(job.dtype.np), t, part, got, job.reference(part), lanes))
        digest.update(got.astype(f"<u{t.dtype.itemsize}").tobytes())
    span: dict[str, Any] = {"inputs": int(x.size), "exhaustive": False, "edges": int(edge.size)}
    span |= {"sample": int(drawn.size), "seed": seed, "scheme": scheme(t, n)}
    return {
        **head(job.contract, job.dtype, "the judge's (Python integers)"),
        "span": span,
        "max_input": _worst(job, x, named(stats)["max_lhs"]),
        **tally_fields(stats),
        "digest": digest.hexdigest(),
        "seconds": time.perf_counter() - start,
        "threads": 1,
    }


def _worst(job: F64CastJob, x: np.ndarray, lane: int) -> dict[str, Any] | None:
    """The input at `lane` with the kernel's result, read from a call over its whole chunk as
    the run made it, and the rule's (None: no input)."""
    if lane < 0:
        return None
    lo = lane - lane % CHUNK
    got = int(job.run(x[lo : lo + CHUNK])[lane - lo])
    want = int(job.reference(x[lane : lane + 1])[0])
    found: dict[str, Any] = {}
    for name, f, bits in (
        ("x", float_format(job.dtype.np), int(x[lane])),
        ("got", job.target, got),
        ("want", job.target, want),
    ):
        found[name], found[f"{name}_value"] = bits, format_value(f.scalar(bits))
    return found
