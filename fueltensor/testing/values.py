"""Special values per float dtype, grouped in named classes; `classify`; random bit patterns.

A value class is a property of a bit pattern alone, decided on its fields in this order (the
first that holds names it):

==================  ===================================================================
quiet NaN           exponent all ones, quiet bit (the top fraction bit) set
signaling NaN       exponent all ones, quiet bit clear, fraction not zero
infinity            exponent all ones, fraction zero
zero                exponent and fraction zero (either sign)
subnormal           exponent zero, fraction not zero
normal extreme      a normal number of the lowest or the highest binade (±min normal, ±max)
one                 ±1
power of two        any other normal with a zero fraction (±2, ±0.5 ...)
binade edge         fraction 1 or all ones: a neighbour of a power of two, where the spacing
                    of the floats halves or doubles (1 + ulp, the float below 1, 2**p - 1)
integer             any other normal number without a fractional part
non-integer         every other normal number
==================  ===================================================================

`special_values(dtype)` lists named members of every class (NaN payload patterns, both signs,
the extremes), each tagged with the class `classify` gives its bits, so a report can group
probes and findings by class. `special_pairs` gives every ordered pair for binary operations.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from typing import Final, overload

import numpy as np

from fueltensor.core.tensor import FuelTensor, asarray
from fueltensor.testing.formats import FloatFormat, bits, float_format, from_bits

QUIET_NAN: Final = "quiet NaN"
SIGNALING_NAN: Final = "signaling NaN"
INFINITY: Final = "infinity"
ZERO: Final = "zero"
SUBNORMAL: Final = "subnormal"
NORMAL_EXTREME: Final = "normal extreme"
ONE: Final = "one"
POWER_OF_TWO: Final = "power of two"
BINADE_EDGE: Final = "binade edge"
INTEGER: Final = "integer"
NON_INTEGER: Final = "non-integer"

VALUE_CLASSES: Final = (
    QUIET_NAN,
    SIGNALING_NAN,
    INFINITY,
    ZERO,
    SUBNORMAL,
    NORMAL_EXTREME,
    ONE,
    POWER_OF_TWO,
    BINADE_EDGE,
    INTEGER,
    NON_INTEGER,
)
"""Every value class, in the order `classify` decides them (see the module docstring)."""


def _classes(u: np.ndarray, fmt: FloatFormat) -> np.ndarray:
    """The value class of each bit pattern of `u` (unsigned, any shape) as a string array."""
    w = u.astype(np.uint64)
    e = ((w >> np.uint64(fmt.mantissa)) & np.uint64(fmt.exponent_max)).astype(np.int64)
    m = w & np.uint64(fmt.mantissa_mask)
    top, mask = fmt.exponent_max, fmt.mantissa_mask
    unbiased = e - fmt.bias
    # Integral when every fraction bit below the binary point is zero.
    below = np.clip(fmt.mantissa - unbiased, 0, fmt.mantissa).astype(np.uint64)
    fraction = m & ((np.uint64(1) << below) - np.uint64(1))
    integral = (unbiased >= 0) & (fraction == 0)
    if fmt.has_inf:
        nan = (e == top) & (m != 0)
        quiet, inf, extreme = (
            nan & ((m & np.uint64(fmt.quiet_bit)) != 0),
            (e == top) & (m == 0),
            top - 1,
        )
    else:  # e4m3fn: one NaN a sign, which counts as quiet; its all-ones exponent holds numbers
        quiet = nan = (e == top) & (m == np.uint64(mask))
        inf, extreme = np.zeros(e.shape, bool), top
    choices = [
        quiet,
        nan,
        inf,
        (e == 0) & (m == 0),
        e == 0,
        (e == 1) | (e == extreme),
        (m == 0) & (e == fmt.bias),
        m == 0,
        (m == 1) | (m == mask),
        integral,
    ]
    found: np.ndarray = np.select(choices, VALUE_CLASSES[:-1], default=NON_INTEGER)
    return found


@overload
def classify(x: int, dtype: object) -> str: ...


@overload
def classify(x: object, dtype: None = None) -> np.ndarray: ...


def classify(x: object, dtype: object = None) -> str | np.ndarray:
    """The value class (`VALUE_CLASSES`) of one bit pattern (an int, with its `dtype`), or of
    every element of a float array or FuelTensor (a string array of its shape)."""
    if isinstance(x, int | np.integer):
        if dtype is None:
            raise TypeError("classify(pattern, dtype): a bit pattern needs its dtype")
        fmt = float_format(dtype)
        return str(_classes(np.asarray(from_bits(int(x), fmt).view(fmt.uint)), fmt)[()])
    a = np.asarray(x)
    if dtype is not None and float_format(dtype).dtype != a.dtype:
        raise TypeError(f"classify: the array holds {a.dtype}, not {float_format(dtype).name}")
    return _classes(bits(a), float_format(a.dtype))


@dataclass(frozen=True)
class Special:
    """One special value: its value class, a name saying which member it is, its bits."""

    class_: str
    name: str
    bits: int


@dataclass(frozen=True)
class SpecialValues:
    """Special values of one dtype, in order: the values, their classes and names.

    Iterating gives `Special` items; `array` is a read-only NumPy array of the values (bit
    exact: signaling NaNs and payloads intact) and `tensor()` a FuelTensor of them.
    """

    format: FloatFormat
    items: tuple[Special, ...]

    def __len__(self) -> int:
        return len(self.items)

    def __iter__(self) -> Iterator[Special]:
        return iter(self.items)

    @property
    def array(self) -> np.ndarray:
        """The values as a read-only 1-d array of the dtype."""
        out = from_bits(np.array([s.bits for s in self.items], self.format.uint), self.format)
        out.flags.writeable = False
        return out

    @property
    def classes(self) -> tuple[str, ...]:
        """The value class of each value, in order."""
        return tuple(s.class_ for s in self.items)

    @property
    def names(self) -> tuple[str, ...]:
        """The name of each value, in order."""
        return tuple(s.name for s in self.items)

    def tensor(self) -> FuelTensor:
        """The values as a FuelTensor (a copy)."""
        return asarray(self.array.copy())

    def only(self, classes: Iterable[str]) -> SpecialValues:
        """The values of the given classes alone (ValueError for an unknown class name)."""
        wanted = set(_known(classes))
        return SpecialValues(self.format, tuple(s for s in self.items if s.class_ in wanted))


def _known(classes: Iterable[str]) -> list[str]:
    """`classes` as a list, refusing a name that is not a value class."""
    names = list(classes)
    unknown = [c for c in names if c not in VALUE_CLASSES]
    if unknown:
        raise ValueError(f"unknown value class {unknown}; the classes are {list(VALUE_CLASSES)}")
    return names


def _nan_payloads(fmt: FloatFormat) -> list[tuple[str, int]]:
    """Payload patterns under the quiet bit: lowest bit, highest bit, all ones, alternating;
    each pattern once (e5m2 has one payload bit)."""
    ones = fmt.quiet_bit - 1
    named: dict[str, int] = {}
    for name, payload in (
        ("lowest payload bit", 1),
        ("highest payload bit", fmt.quiet_bit >> 1),
        ("payload all ones", ones),
        ("alternating payload", ones // 3),
    ):
        if payload and payload not in named.values():
            named[name] = payload
    return list(named.items())


def _members(fmt: FloatFormat) -> Iterator[tuple[str, int]]:
    """(name, positive pattern) of every special value; each also comes negated."""
    top, mask, bias, p = fmt.exponent_max, fmt.mantissa_mask, fmt.bias, fmt.mantissa
    if not fmt.has_inf:
        yield "NaN", fmt.pattern(0, top, mask)
    else:
        yield "qNaN, no payload", fmt.pattern(0, top, fmt.quiet_bit)
        for name, payload in _nan_payloads(fmt):
            yield f"qNaN, {name}", fmt.pattern(0, top, fmt.quiet_bit | payload)
        for name, payload in _nan_payloads(fmt):
            yield f"sNaN, {name}", fmt.pattern(0, top, payload)
        yield "infinity", fmt.pattern(0, top, 0)
    yield "zero", 0
    yield "smallest subnormal", 1
    yield "middle subnormal", 1 << (p // 2)
    yield "largest subnormal", mask
    yield "min normal", fmt.pattern(0, 1, 0)
    yield "largest finite", fmt.max_pattern
    yield "1", fmt.pattern(0, bias, 0)
    yield "2", fmt.pattern(0, bias + 1, 0)
    yield "0.5", fmt.pattern(0, bias - 1, 0)
    yield f"2**-{p + 1}, half an ulp of 1", fmt.pattern(0, bias - p - 1, 0)
    yield "(1 + ulp)", fmt.pattern(0, bias, 1)
    yield "largest below 1", fmt.pattern(0, bias - 1, mask)
    yield f"(2**{p + 1} - 1), the largest odd integer", fmt.pattern(0, bias + p, mask)
    yield "3", fmt.pattern(0, bias + 1, 1 << (p - 1))
    yield "10", fmt.pattern(0, bias + 3, 1 << (p - 2))
    yield "1.5", fmt.pattern(0, bias, 1 << (p - 1))
    yield "0.1 rounded", int(bits(np.array(0.1).astype(fmt.dtype)))
    yield "(1/3) rounded", int(bits(np.array(1 / 3).astype(fmt.dtype)))


def special_values(dtype: object, classes: Iterable[str] | None = None) -> SpecialValues:
    """The special values of a float dtype (F32, F64, BF16, F16 in any spelling), every one in
    both signs, each tagged with its value class; only those of `classes` when given.

    NaNs: quiet and signaling, with payloads of the lowest bit, the highest payload bit, all
    ones and an alternating pattern (and the quiet NaN without payload). ±0, ±inf; subnormals:
    smallest, a middle one, largest; ±min normal, ±max; ±1; ±2, ±0.5 and 2**-(p+1) (half an ulp
    of one, p the fraction bits); binade edges: 1 + ulp, the float below 1, 2**(p+1) - 1;
    integers 3 and 10; non-integers 1.5, 0.1 and 1/3 rounded.
    """
    fmt = float_format(dtype)
    patterns = [
        (f"{sign}{name}", pattern | (fmt.sign_bit if sign == "-" else 0))
        for name, pattern in _members(fmt)
        for sign in ("+", "-")
    ]
    found = _classes(np.array([p for _, p in patterns], fmt.uint), fmt)
    values = SpecialValues(
        fmt, tuple(Special(str(c), n, p) for (n, p), c in zip(patterns, found, strict=True))
    )
    return values if classes is None else values.only(classes)


def special_pairs(
    dtype: object, classes: Iterable[str] | None = None
) -> tuple[SpecialValues, SpecialValues]:
    """Every ordered pair of `special_values(dtype, classes)`, as two aligned sequences
    (lhs[i], rhs[i]) of n * n values: lhs repeats each value n times, rhs cycles through all."""
    values = special_values(dtype, classes)
    n = len(values)
    lhs = tuple(s for s in values for _ in range(n))
    return SpecialValues(values.format, lhs), SpecialValues(values.format, values.items * n)


def random_bits(
    dtype: object,
    shape: int | Sequence[int],
    *,
    rng: int | np.random.Generator | None = None,
) -> FuelTensor:
    """A FuelTensor of uniformly random bit patterns of a float dtype: every pattern equally
    likely, so NaNs (with random payloads, signaling ones too), infinities and subnormals
    appear in their natural proportions.

    `rng` is what `numpy.random.default_rng` takes (Scientific Python's SPEC 7): an int seed, a
    Generator (drawn from, so successive calls continue its stream), or None for fresh entropy.
    """
    fmt = float_format(dtype)
    generator = np.random.default_rng(rng)
    raw = generator.integers(0, np.iinfo(fmt.uint).max, shape, dtype=fmt.uint, endpoint=True)
    return asarray(np.asarray(raw).view(fmt.dtype))
