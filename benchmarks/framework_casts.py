"""How NumPy/ml_dtypes, PyTorch and JAX cast between the six float formats (issue 45, item 6),
measured against fueltensor's own cast rule: tests/_casts.py, which rounds once from the bit
fields with MPFR (nearest even, subnormals kept, overflow to inf or, for float8_e4m3fn, NaN; a
NaN quiet with its sign and high payload bits).

For each provider and each of the 30 ordered pairs it casts probe inputs (every pattern of an
8- or 16-bit source; for a float32 or float64 source a structured set: every sampled target
value with its rounding midpoint and their source neighbours, the overflow edge and the tie
beyond it, subnormals of both formats, ±0, ±inf, quiet and signalling NaNs with payloads, and
seeded random patterns), then classifies what came out, aspect by aspect, comparing bit
patterns only:

- rounding: "nearest_even", or the first hypothesis that explains every finite in-range lane
  (double rounding via an intermediate format, toward_zero, nearest_away), else "other";
- overflow: "inf_or_nan" (the rule), "saturate", or a description by input magnitude;
- nan: "quiet_payload" (the rule), "canonical" (payload dropped), "kept" (the payload's high
  bits, a signalling NaN staying signalling; one whose payload shifts out gets payload 1, as
  NumPy's float16 does), or the patterns seen; the finding's `sign`: is the sign kept;
- subnormals: "kept" or "flushed" (its note: subnormal inputs, or results, read or made 0);
- position: "invariant", or "dependent" where the same value cast at another length (1, 7,
  64, 1000) or element offset gives other bits than in the full-length call ("nan_bits" where
  only NaN results moved, both NaNs).

`observe(provider)` returns `{provider: {(src, dst): {aspect: Finding}}}` (merge several with
`|`), for the contract writer; `main()` prints one line per provider and pair.

    PYTHONPATH=. python benchmarks/framework_casts.py [--only numpy] [--only torch]

`--write` writes the frameworks' cast contracts from the findings (contracts/<provider>-cast.md,
benchmarks/framework_cast_contracts.py); `--diff` prints how the checked-in ones differ.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass
from fractions import Fraction
from functools import cache
from pathlib import Path
from typing import Any

import gmpy2
import ml_dtypes
import numpy as np

from fueltensor.core.storage import aligned_empty

_TESTS = str(Path(__file__).resolve().parent.parent / "tests")
if _TESTS not in sys.path:  # the rule lives with the tests (tests/_casts.py)
    sys.path.insert(0, _TESTS)
from _casts import FLOATS, Format, cast_pattern, fmt  # noqa: E402

PROVIDERS = ("numpy", "torch", "jax")
ASPECTS = ("rounding", "overflow", "nan", "subnormals", "position")
RULE = {
    "rounding": "nearest_even",
    "overflow": "inf_or_nan",
    "nan": "quiet_payload",
    "subnormals": "kept",
    "position": "invariant",
}
"""Each aspect's finding where the framework follows fueltensor's rule."""
PAIRS = tuple((s, d) for s in FLOATS for d in FLOATS if s != d)
LENGTHS = (1, 7, 64, 1000)
"""The call lengths of the position sweep (besides the full-length call)."""
SEED = 45
SAMPLE = 1024
"""Random target patterns (and random source patterns) of a float32/float64 source's probes."""

SINGLES = 96
"""How many of the position sweep's values are also cast alone (a call each: JAX's ~1 ms)."""

Example = tuple[int, int, int]
"""(source pattern, observed pattern, the rule's pattern; for position: the full call's)."""


@dataclass(frozen=True)
class Finding:
    """What one aspect of one cast does: `value` is the rule's name (`RULE`) where it holds."""

    value: str
    count: int = 0
    """Lanes that differ from the rule (position: from the full-length call)."""
    lanes: int = 0
    """Lanes the aspect judged."""
    examples: tuple[Example, ...] = ()
    note: str = ""
    sign: str = ""
    """nan only: "kept", "dropped" (always +) or "mixed"."""

    def follows_rule(self, aspect: str) -> bool:
        """Whether this finding of `aspect` is the rule's (or the aspect has no lanes)."""
        return self.value in (RULE[aspect], "n/a") and self.sign in ("", "kept")


class Unsupported(Exception):
    """The provider has no such cast (or is not installed)."""


# -- the providers' casts: source patterns in, target patterns out -----------------------------

Caster = Callable[[np.ndarray, str, str], np.ndarray]


def _numpy_cast(bits: np.ndarray, src: str, dst: str) -> np.ndarray:
    with np.errstate(all="ignore"):  # an overflow's or NaN's warning: the bits tell
        return bits.view(fmt(src).dtype).astype(fmt(dst).dtype).view(fmt(dst).uint)


def _torch_caster() -> Caster:
    try:
        import torch
    except ImportError as e:
        raise Unsupported(f"torch not importable ({e})") from e
    ints = {1: torch.int8, 2: torch.int16, 4: torch.int32, 8: torch.int64}

    def cast(bits: np.ndarray, src: str, dst: str) -> np.ndarray:
        s, d = getattr(torch, src, None), getattr(torch, dst, None)
        if s is None or d is None:
            raise Unsupported(f"torch has no {src if s is None else dst}")
        f, t = fmt(src), fmt(dst)
        signed = torch.from_numpy(bits.view(f"i{f.dtype.itemsize}"))  # shares the buffer
        try:
            out = signed.view(s).to(d)
        except (RuntimeError, TypeError) as e:
            raise Unsupported(f"torch: {e}") from e
        return out.view(ints[t.dtype.itemsize]).numpy().view(t.uint)

    return cast


def _jax_caster() -> Caster:
    try:
        import jax
        import jax.numpy as jnp
    except ImportError as e:
        raise Unsupported(f"jax not importable ({e})") from e
    cpu = jax.devices("cpu")[0]

    def cast(bits: np.ndarray, src: str, dst: str) -> np.ndarray:
        s, d = getattr(jnp, src, None), getattr(jnp, dst, None)
        if s is None or d is None:
            raise Unsupported(f"jax.numpy has no {src if s is None else dst}")
        signed = bits.view(f"i{fmt(src).dtype.itemsize}")
        with ExitStack() as stack:  # x64 scoped, as fueltensor's JAX provider runs F64
            stack.enter_context(jax.enable_x64(True))
            stack.enter_context(jax.default_device(cpu))
            x = jax.lax.bitcast_convert_type(jnp.asarray(signed), s)  # the bits, no conversion
            try:
                out = x.astype(d)
            except (TypeError, ValueError) as e:
                raise Unsupported(f"jax: {e}") from e
            return np.asarray(out).view(fmt(dst).uint)

    return cast


def caster(provider: str) -> Caster:
    """`provider`'s cast of an array of source bit patterns, or Unsupported."""
    if provider == "numpy":
        return _numpy_cast
    if provider == "torch":
        return _torch_caster()
    if provider == "jax":
        return _jax_caster()
    raise ValueError(f"no provider {provider!r}; the providers: {', '.join(PROVIDERS)}")


# -- bit fields, vectorized --------------------------------------------------------------------


def _fields(p: np.ndarray, f: Format) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Sign, biased exponent and fraction of each pattern, as uint64."""
    p = p.astype(np.uint64)
    frac = p & np.uint64((1 << f.mantissa) - 1)
    return p >> np.uint64(f.width - 1), (p >> np.uint64(f.mantissa)) & np.uint64(f.top), frac


def is_nan(p: np.ndarray, f: Format) -> np.ndarray:
    _, e, m = _fields(p, f)
    full = (1 << f.mantissa) - 1
    return (e == f.top) & ((m != 0) if f.has_inf else (m == full))


def is_zero(p: np.ndarray, f: Format) -> np.ndarray:
    return (p.astype(np.uint64) & np.uint64((1 << (f.width - 1)) - 1)) == 0


def is_subnormal(p: np.ndarray, f: Format) -> np.ndarray:
    _, e, m = _fields(p, f)
    return (e == 0) & (m != 0)


def magnitude(p: np.ndarray, f: Format) -> np.ndarray:
    """|value| of each pattern as float64 (exact: every format here fits), NaN for a NaN."""
    _, e, m = _fields(p, f)
    sub = e == 0
    sig = np.where(sub, m, m | np.uint64(1 << f.mantissa)).astype(np.float64)
    scale = np.where(sub, f.min_exp, e.astype(np.int64) - f.bias) - f.mantissa
    with np.errstate(over="ignore"):  # the top exponent's lanes, set below
        out = np.ldexp(sig, scale.astype(np.int32))
    if f.has_inf:
        out[(e == f.top) & (m == 0)] = np.inf
    out[is_nan(p, f)] = np.nan
    return out


def hexed(p: int, f: Format) -> str:
    return f"0x{p:0{f.width // 4}x}"


# -- the probes and the rule's results ---------------------------------------------------------


def _targets(t: Format, rng: np.random.Generator) -> np.ndarray:
    """Positive finite target patterns: all of an 8-bit format; else ±0's neighbourhood, every
    binade's ends, the subnormals (sampled for float32) and SAMPLE random ones."""
    top = int(t.encode(t.max))
    if t.width == 8:
        return np.arange(top + 1, dtype=np.uint64)
    m = t.mantissa
    ends = [(e << m) + d for e in range(1, t.top) for d in (-1, 0, 1, 2)]
    subs = np.arange(1 << m) if m <= 10 else rng.integers(1, 1 << m, 256)
    return np.unique(np.r_[0, 1, 2, ends, subs, rng.integers(0, top + 1, SAMPLE), top - 1, top])


def _nans(f: Format, rng: np.random.Generator) -> list[int]:
    """Quiet and signalling NaNs with payloads (the format's one NaN for float8_e4m3fn)."""
    base, q = f.top << f.mantissa, 1 << (f.mantissa - 1)
    if not f.has_inf:
        return [base | (2 * q - 1)]
    payloads = {q, q | 1, 2 * q - 1, 1, q >> 1 or 1, q - 1 or 1}
    payloads |= {int(p) for p in rng.integers(1, 2 * q, 6)}
    return sorted(base | p for p in payloads)


def probes(src: str, dst: str) -> np.ndarray:
    """The source patterns `src` -> `dst` is observed on (both signs of every magnitude)."""
    f, t = fmt(src), fmt(dst)
    if f.width <= 16:
        return np.arange(1 << f.width, dtype=np.uint64).astype(f.uint)
    rng = np.random.default_rng([SEED, FLOATS.index(src), FLOATS.index(dst)])
    pats: list[int] = [0, f.encode(f.max), f.top << f.mantissa, 1, 2, 3]
    pats += [(1 << f.mantissa) - d for d in (1, 2)] + [1 << f.mantissa, (1 << f.mantissa) + 1]
    pats += [int(p) for p in rng.integers(1, 1 << f.mantissa, 64)] + _nans(f, rng)
    if t.mantissa < f.mantissa:  # a narrowing: midpoints and neighbours of target values
        tp = _targets(t, rng)
        v = magnitude(tp, t)
        below = magnitude(np.maximum(tp, 1) - 1, t)
        nxt = magnitude(tp + 1, t)
        w = np.where(np.isfinite(nxt), nxt, 2 * v - below)  # past the max: its ulp again
        for value in (*v, *((v + w) / 2), w[-1], 2 * t.max):  # w[-1]: max + its ulp
            if value <= f.max:
                p = f.encode(float(value))
                pats += [p - 1, p, p + 1] if p else [p, p + 1]
        low, smallest = (1 << (f.mantissa - t.mantissa)) - 1, 2.0**t.min_exp  # normals: + noise
        noise = rng.integers(0, low + 1, v.size).tolist()
        pats += [f.encode(x) | r for x, r in zip(v.tolist(), noise, strict=True) if x >= smallest]
    pats += [int(p) for p in rng.integers(0, 1 << (f.width - 1), SAMPLE, dtype=np.uint64)]
    half = np.unique(np.array(pats, np.uint64))
    return np.r_[half, half | np.uint64(1 << (f.width - 1))].astype(f.uint)


@dataclass(frozen=True)
class Reference:
    """A pair's probes and the rule's results (non-saturating and saturating), as patterns."""

    src: str
    dst: str
    x: np.ndarray
    want: np.ndarray
    saturated: np.ndarray
    seconds: float


@cache
def reference(src: str, dst: str) -> Reference:
    """The rule's results on `probes(src, dst)` (tests/_casts.py, lane by lane: slow, shared
    by every provider)."""
    start = time.perf_counter()
    f, t = fmt(src), fmt(dst)
    x = probes(src, dst)
    lanes = x.astype(np.uint64).tolist()
    want = np.array([cast_pattern(p, f, t, False) for p in lanes], t.uint)
    over = magnitude(x, f) > t.max
    saturated = want.copy()
    saturated[over] = [cast_pattern(p, f, t, True) for p in x[over].astype(np.uint64).tolist()]
    return Reference(src, dst, x, want, saturated, time.perf_counter() - start)


# -- rounding hypotheses -----------------------------------------------------------------------


def _mpfr_round(pattern: int, f: Format, t: Format, mode: Any) -> int:
    """One finite, in-range source pattern rounded into `t` in MPFR rounding mode `mode`."""
    ctx = gmpy2.context(
        precision=t.mantissa + 1,
        emax=4096,
        emin=t.min_exp - t.mantissa + 1,
        subnormalize=True,
        round=mode,
    )
    value = f.decode(pattern)
    with gmpy2.context(precision=64):
        exact = gmpy2.mpfr(value)
    return t.encode(float(ctx.plus(exact)))


def _nearest_away(pattern: int, f: Format, t: Format) -> int:
    down = _mpfr_round(pattern, f, t, gmpy2.RoundToZero)
    up = _mpfr_round(pattern, f, t, gmpy2.RoundAwayZero)
    value = Fraction(f.decode(pattern))  # type: ignore[arg-type]
    tie = 2 * value == Fraction(t.decode(down)) + Fraction(t.decode(up))  # type: ignore[arg-type]
    return up if tie else cast_pattern(pattern, f, t, False)


def hypotheses(src: str, dst: str) -> dict[str, Callable[[int], int]]:
    """The roundings a framework may do instead of the rule, each a source -> target pattern
    function for finite in-range lanes: double rounding via each format of a precision between
    the two, toward zero, and to nearest with ties away from zero."""
    f, t = fmt(src), fmt(dst)
    out: dict[str, Callable[[int], int]] = {}
    for mid in FLOATS:
        m = fmt(mid)
        if t.mantissa < m.mantissa < f.mantissa:
            out[f"double rounding via {mid}"] = lambda p, m=m: cast_pattern(
                cast_pattern(p, f, m, False), m, t, False
            )
    out["toward_zero"] = lambda p: _mpfr_round(p, f, t, gmpy2.RoundToZero)
    out["nearest_away"] = lambda p: _nearest_away(p, f, t)
    return out


@cache
def _hypothesis_results(src: str, dst: str, name: str) -> np.ndarray:
    """`name`'s results on every finite in-range probe (other lanes: 0), shared by providers."""
    ref = reference(src, dst)
    rule = hypotheses(src, dst)[name]
    mag = magnitude(ref.x, fmt(src))
    out = np.zeros(ref.x.size, np.uint64)
    for i in np.flatnonzero(np.isfinite(mag) & (mag <= fmt(dst).max)).tolist():
        out[i] = rule(int(ref.x[i]))
    return out


# -- the aspects -------------------------------------------------------------------------------


def _examples(
    idx: np.ndarray, x: np.ndarray, got: np.ndarray, want: np.ndarray, limit: int = 3
) -> tuple[Example, ...]:
    return tuple((int(x[i]), int(got[i]), int(want[i])) for i in idx[:limit].tolist())


def _rounding(ref: Reference, got: np.ndarray, flushed: np.ndarray) -> Finding:
    """Every finite in-range lane (subnormals a flush explains aside) against the rule, then
    against each hypothesis."""
    f, t = fmt(ref.src), fmt(ref.dst)
    mag = magnitude(ref.x, f)
    lanes = np.isfinite(mag) & (mag <= t.max) & ~flushed
    bad = np.flatnonzero(lanes & (got != ref.want))
    n, found = int(lanes.sum()), _examples(bad, ref.x, got, ref.want)
    if not bad.size:
        return Finding("nearest_even", 0, n, note=_would_show(ref, lanes))
    explained = []
    for name, rule in hypotheses(ref.src, ref.dst).items():
        ok = sum(rule(int(ref.x[i])) == int(got[i]) for i in bad[:256].tolist())
        explained.append(f"{name} explains {ok} of {min(bad.size, 256)}")
        if ok < min(bad.size, 256):
            continue
        theirs = _hypothesis_results(ref.src, ref.dst, name)
        if np.array_equal(theirs[lanes], got[lanes].astype(np.uint64)):
            return Finding(name, bad.size, n, found)
    return Finding("other", bad.size, n, found, "differing lanes: " + "; ".join(explained))


def _would_show(ref: Reference, lanes: np.ndarray) -> str:
    """How many probes tell double rounding via float32 from the rule (f64 -> narrower)."""
    name = "double rounding via float32"
    if name not in hypotheses(ref.src, ref.dst):
        return ""
    theirs = _hypothesis_results(ref.src, ref.dst, name)
    return f"{int((lanes & (theirs != ref.want)).sum())} lanes tell {name} apart"


def _label(p: int, t: Format) -> str:
    """A target pattern without its sign: NaN (its pattern), inf, max, 0 or its pattern."""
    mag = p & ((1 << (t.width - 1)) - 1)
    if bool(is_nan(np.array([p]), t)[0]):
        return f"NaN {hexed(mag, t)}"
    if t.has_inf and mag == t.top << t.mantissa:
        return "inf"
    return {t.encode(t.max): f"max ({t.max:g})", 0: "0"}.get(mag, hexed(mag, t))


def _overflow(ref: Reference, got: np.ndarray) -> Finding:
    """Every lane beyond the target's largest finite (infinities included), non-NaN."""
    f, t = fmt(ref.src), fmt(ref.dst)
    mag = magnitude(ref.x, f)
    lanes = mag > t.max
    n = int(lanes.sum())
    if not n:
        return Finding("n/a", note="no source value exceeds the target's largest finite")
    bad = np.flatnonzero(lanes & (got != ref.want))
    if not bad.size:
        return Finding("inf_or_nan", 0, n)
    if np.array_equal(got[lanes], ref.saturated[lanes]):
        return Finding("saturate", bad.size, n, _examples(bad, ref.x, got, ref.want))
    rounded = _overflow_after(ref, got, lanes)
    if rounded:
        return Finding(rounded, bad.size, n, _examples(bad, ref.x, got, ref.want))
    groups: dict[str, list[int]] = {}
    for i in np.flatnonzero(lanes).tolist():
        groups.setdefault(_label(int(got[i]), t), []).append(i)
    parts, firsts = [], []
    for label, idx in sorted(groups.items(), key=lambda g: float(mag[g[1]].min())):
        m = mag[idx]
        signs = (ref.x[idx].astype(np.uint64) >> np.uint64(f.width - 1)) != (
            got[idx].astype(np.uint64) >> np.uint64(t.width - 1)
        )
        lost = ", sign lost" if signs.any() else ""
        parts.append(f"{label} for |x| in [{m.min():.9g}, {m.max():.9g}]{lost}")
        firsts += [i for i in idx if got[i] != ref.want[i]][:1]
    found = _examples(np.array(firsts, np.int64), ref.x, got, ref.want, limit=4)
    return Finding("; ".join(parts), bad.size, n, found)


def _overflow_after(ref: Reference, got: np.ndarray, lanes: np.ndarray) -> str:
    """`inf_or_nan after double rounding via <format>` (or `saturate after ...`) where the
    overflow lanes are the rule's applied twice, through an intermediate format; else ""."""
    f, t = fmt(ref.src), fmt(ref.dst)
    x, g = ref.x[lanes].astype(np.uint64).tolist(), got[lanes].tolist()
    for name in hypotheses(ref.src, ref.dst):
        if name.startswith("double rounding via "):
            m = fmt(name.rsplit(" ", 1)[1])
            for sat, how in ((False, "inf_or_nan"), (True, "saturate")):
                twice = [cast_pattern(cast_pattern(p, f, m, sat), m, t, sat) for p in x]
                if twice == g:
                    return f"{how} after {name}"
    return ""


def _nan(ref: Reference, got: np.ndarray) -> Finding:
    """Every NaN source lane: its result's bits without the sign against the rule and the
    other NaN conventions; the sign on its own."""
    f, t = fmt(ref.src), fmt(ref.dst)
    lanes = np.flatnonzero(is_nan(ref.x, f))
    if not lanes.size:
        return Finding("n/a")
    x, g = ref.x[lanes].astype(np.uint64), got[lanes].astype(np.uint64)
    sx, sg = x >> np.uint64(f.width - 1), g >> np.uint64(t.width - 1)
    sign = "kept" if (sx == sg).all() else "dropped" if (sg == 0).all() else "mixed"
    low = np.uint64((1 << (t.width - 1)) - 1)
    nan_base = np.uint64((t.top << t.mantissa) if t.has_inf else int(low))
    frac = x & np.uint64((1 << f.mantissa) - 1)
    shift = t.mantissa - f.mantissa
    payload = frac << np.uint64(shift) if shift >= 0 else frac >> np.uint64(-shift)
    quiet = np.uint64(1 << (t.mantissa - 1)) if t.has_inf else np.uint64(0)
    conventions = {
        "quiet_payload": ref.want[lanes].astype(np.uint64) & low,
        "canonical": np.full_like(g, nan_base | quiet),
        "kept": (nan_base | np.maximum(payload, 1)) if t.has_inf else np.full_like(g, nan_base),
    }
    bad = np.flatnonzero(g != ref.want[lanes])
    found = _examples(lanes[bad], ref.x, got, ref.want)
    for name, bits in conventions.items():
        if np.array_equal(g & low, bits):
            return Finding(name, bad.size, lanes.size, found, sign=sign)
    seen: dict[int, list[int]] = {}
    for xi, gi in zip(x.tolist(), g.tolist(), strict=True):
        seen.setdefault(gi, []).append(xi)
    desc = ", ".join(
        f"{hexed(gi, t)} from {len(xs)} (e.g. {hexed(xs[0], f)})" for gi, xs in sorted(seen.items())
    )
    return Finding("results " + desc, bad.size, lanes.size, found, sign=sign)


def _subnormals(ref: Reference, got: np.ndarray) -> tuple[Finding, np.ndarray]:
    """The results the rule makes subnormal, and subnormal inputs whose result is normal (a
    zero there: the input read as zero): kept, or flushed to zero; with the flushed lanes (left
    out of `rounding`; where results are flushed, also a value below the smallest normal that
    the rule rounds up to it, if zero)."""
    f, t = fmt(ref.src), fmt(ref.dst)
    outs = is_subnormal(ref.want, t) & ~is_nan(ref.x, f)
    ins = is_subnormal(ref.x, f) & ~is_zero(ref.want, t) & ~outs
    zero = is_zero(got, t) & (got != ref.want)
    kinds = {"results": outs, "inputs": ins}
    which = [w for w, m in kinds.items() if m.any() and zero[m].all()]
    flushed = np.zeros(ref.x.size, bool)
    for w in which:
        flushed |= kinds[w]
    part = [f"{int(kinds[w].sum())} subnormal {w} gave zero" for w in which]
    if "results" in which:  # flushed before rounding: a value the rule rounds up to the
        smallest = (ref.want.astype(np.uint64) & np.uint64((1 << (t.width - 1)) - 1)) == (
            1 << t.mantissa  # smallest normal may give zero too
        )
        edge = smallest & zero & (magnitude(ref.x, f) < 2.0**t.min_exp)
        flushed |= edge
        if edge.any():
            part.append(f"{int(edge.sum())} rounding up to the smallest normal gave zero")
    n = int((ins | outs | flushed).sum())
    if not n:
        return Finding("n/a"), flushed
    if not which:  # a few zeros among kept subnormals: a rounding's, left to `rounding`
        few = int((zero & (ins | outs)).sum())
        note = f"{few} gave zero where the rule does not (see rounding)" if few else ""
        return Finding("kept", 0, n, note=note), flushed
    found = _examples(np.flatnonzero(flushed), ref.x, got, ref.want)
    return Finding("flushed", int(flushed.sum()), n, found, ", ".join(part)), flushed


def _subset(ref: Reference, got: np.ndarray) -> np.ndarray:
    """Up to 40 probes of each kind (NaNs, subnormal inputs and results, overflows, lanes off
    the rule, any), shuffled: the values the position sweep moves around."""
    f, t = fmt(ref.src), fmt(ref.dst)
    kinds = (
        is_nan(ref.x, f),
        is_subnormal(ref.x, f),
        is_subnormal(ref.want, t),
        magnitude(ref.x, f) > t.max,
        got != ref.want,
        np.ones(ref.x.size, bool),
    )
    rng = np.random.default_rng(SEED)
    picks = [rng.permutation(np.flatnonzero(k))[:40] for k in kinds]
    return rng.permutation(np.unique(np.concatenate(picks)))


def _position(cast: Caster, ref: Reference, got: np.ndarray) -> Finding:
    """The subset cast again at each of LENGTHS, at element offsets 0 and 1 from a 64-byte
    boundary, its cycle shifted so each value lands in several lanes (length 1: the first
    SINGLES values only, a call each): any result other than the full-length call's."""
    f = fmt(ref.src)
    chosen = _subset(ref, got)
    xs, full = ref.x[chosen], got[chosen]
    t = fmt(ref.dst)
    count, bad, numbers, examples, where = 0, 0, 0, [], ""
    for length in LENGTHS:
        for offset in (0, 1):
            for shift in (0, length // 2 + 1):
                for start in range(0, min(xs.size, SINGLES) if length == 1 else xs.size, length):
                    which = (start + shift + np.arange(length)) % xs.size
                    buf = aligned_empty(length + 1, f.uint, 64)[offset : offset + length]
                    buf[:] = xs[which]
                    here = cast(buf, ref.src, ref.dst)
                    count += length
                    off = np.flatnonzero(here != full[which])
                    bad += off.size
                    numbers += int((~(is_nan(here[off], t) & is_nan(full[which][off], t))).sum())
                    if off.size and len(examples) < 3:
                        i = int(off[0])
                        examples.append((int(xs[which[i]]), int(here[i]), int(full[which[i]])))
                        where = where or f"first at length {length}, offset {offset}, lane {i}"
    if not bad:
        return Finding("invariant", 0, count)
    value = "dependent" if numbers else "nan_bits"  # only NaN bits moved: declarable
    return Finding(value, bad, count, tuple(examples), where)


# -- observe and report ------------------------------------------------------------------------


def _unsupported(why: str) -> dict[str, Finding]:
    return {aspect: Finding("unsupported", note=why) for aspect in ASPECTS}


def observe_pair(cast: Caster, src: str, dst: str) -> dict[str, Finding]:
    """Every aspect of `cast` from `src` to `dst` (all "unsupported" where it has no such cast)."""
    ref = reference(src, dst)
    try:
        got = np.asarray(cast(ref.x.copy(), src, dst))
    except (Unsupported, RuntimeError, TypeError, ValueError, NotImplementedError) as e:
        return _unsupported(str(e).splitlines()[0] if str(e) else type(e).__name__)
    if got.dtype != fmt(dst).uint or got.shape != ref.x.shape:
        return _unsupported(f"returned {got.dtype} {got.shape}, not {dst} {ref.x.shape}")
    subnormals, flushed = _subnormals(ref, got)
    return {
        "rounding": _rounding(ref, got, flushed),
        "overflow": _overflow(ref, got),
        "nan": _nan(ref, got),
        "subnormals": subnormals,
        "position": _position(cast, ref, got),
    }


def observe(
    provider: str, pairs: tuple[tuple[str, str], ...] = PAIRS
) -> dict[str, dict[tuple[str, str], dict[str, Finding]]]:
    """`{provider: {(src, dst): {aspect: Finding}}}` for each pair of `pairs`."""
    try:
        cast = caster(provider)
    except Unsupported as e:
        return {provider: {pair: _unsupported(str(e)) for pair in pairs}}
    return {provider: {(s, d): observe_pair(cast, s, d) for s, d in pairs}}


def render(aspect: str, found: Finding, src: str, dst: str) -> str:
    """One aspect as the table spells it."""
    f, t = fmt(src), fmt(dst)
    text = f"{aspect}: {found.value}"
    if found.sign and found.sign != "kept":
        text += f", sign {found.sign}"
    if found.count:
        text += f" ({found.count} of {found.lanes} lanes)"
    if found.note:
        text += f" [{found.note}]"
    other = "full call" if aspect == "position" else "rule"
    text += "".join(
        f"; {hexed(a, f)} -> {hexed(b, t)} ({other} {hexed(c, t)})" for a, b, c in found.examples
    )
    return text


def _machine(providers: list[str]) -> str:
    """The CPU, and each provider's version and the instruction set it runs here."""
    from fueltensor.fingerprint import machine
    from fueltensor.registry import provider_environment

    out = [machine().cpu, f"ml_dtypes {ml_dtypes.__version__}"]
    for name in providers:
        env = provider_environment(name)
        out.append(f"{env.framework} ({env.isa})" if env else f"{name}: not installed")
    return "; ".join(out)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--only", action="append", choices=PROVIDERS, default=None)
    p.add_argument("--write", action="store_true", help="write contracts/<provider>-cast.md")
    p.add_argument("--diff", action="store_true", help="diff them against the measurement")
    args = p.parse_args(argv)
    providers = args.only or list(PROVIDERS)
    print(f"# {_machine(providers)}")
    start = time.perf_counter()
    lanes = sum(reference(s, d).x.size for s, d in PAIRS)
    print(f"# the rule (tests/_casts.py): {time.perf_counter() - start:.1f} s, {lanes} lanes")
    timings, everything = [], {}
    for provider in providers:
        start = time.perf_counter()
        found = everything[provider] = observe(provider)[provider]
        timings.append(f"{provider} {time.perf_counter() - start:.1f} s")
        for (src, dst), aspects in found.items():
            off = [render(a, v, src, dst) for a, v in aspects.items() if not v.follows_rule(a)]
            if all(v.value == "unsupported" for v in aspects.values()):
                off = [f"unsupported: {aspects['rounding'].note}"]
            print(f"{provider:5} {src:>13} -> {dst:<13} {' | '.join(off) or 'as the rule'}")
    print("# observe: " + ", ".join(timings))
    if args.write or args.diff:
        from documents import settle
        from framework_cast_contracts import documents

        return settle(documents(everything), args.write)
    return 0


if __name__ == "__main__":
    sys.exit(main())
