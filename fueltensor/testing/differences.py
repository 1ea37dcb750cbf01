"""How two results differ, lane by lane, and the assertion that says so.

`difference_classes` names the difference of every (got, want) pair of bit patterns, in this
order (the first that holds names it):

=============  ========================================================================
equal          the same bits
NaN sign       both NaN, only the sign bit differs
NaN payload    both NaN, the payload or the quiet bit differs
NaN vs number  one side NaN, the other not
signed zero    +0 against -0
infinity       either side infinite
subnormal      either side subnormal (flushing to zero lands here)
sign           the same magnitude, the opposite sign
rounding       within `rounding_ulp` of each other: half the fraction's bits agree
value          anything further apart
=============  ========================================================================

`lane_message` is the one description of a differing element (its index, the inputs, both
results with their bits, the class and the ULP distance) that `assert_bits_equal`,
`ComparisonReport.assert_equal` and the judge's failures print.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

import numpy as np

from fueltensor.testing.formats import EXACT_KINDS, FloatFormat, bits, float_format, ulp_distance
from fueltensor.testing.values import (
    INFINITY,
    QUIET_NAN,
    SIGNALING_NAN,
    SUBNORMAL,
    ZERO,
    classify,
)

EQUAL: Final = "equal"
NAN_SIGN: Final = "NaN sign"
NAN_PAYLOAD: Final = "NaN payload"
NAN_VS_NUMBER: Final = "NaN vs number"
SIGNED_ZERO: Final = "signed zero"
INFINITE: Final = "infinity"
SUBNORMAL_DIFFERENCE: Final = "subnormal"
SIGN: Final = "sign"
ROUNDING: Final = "rounding"
VALUE: Final = "value"

DIFFERENCE_CLASSES: Final = (
    EQUAL,
    NAN_SIGN,
    NAN_PAYLOAD,
    NAN_VS_NUMBER,
    SIGNED_ZERO,
    INFINITE,
    SUBNORMAL_DIFFERENCE,
    SIGN,
    ROUNDING,
    VALUE,
)
"""Every difference class, in the order `difference_classes` decides them."""
NAN_CLASSES: Final = (QUIET_NAN, SIGNALING_NAN)


def rounding_ulp(dtype: object) -> int:
    """The widest distance still called rounding: 2 ** (fraction bits // 2) ULP (2048 for
    float32, 8 for bfloat16), where the two values still agree in half their fraction bits."""
    return 1 << (float_format(dtype).mantissa // 2)


def _pair(got: object, want: object) -> tuple[np.ndarray, np.ndarray, FloatFormat]:
    """Both sides as NumPy arrays of one float format and one shape (a 0-d side broadcast)."""
    g, w = np.asarray(got), np.asarray(want)
    fmt = float_format(g.dtype)
    if w.dtype != g.dtype:
        raise TypeError(f"got {g.dtype} but expected {w.dtype}: compare bits of one dtype")
    if g.shape != w.shape:
        if w.ndim and g.ndim:
            raise ValueError(f"shapes differ: got {g.shape}, expected {w.shape}")
        g, w = np.broadcast_arrays(g, w)
    return g, w, fmt


def difference_classes(got: object, want: object) -> np.ndarray:
    """The difference class (`DIFFERENCE_CLASSES`) of every lane of two float arrays (or
    FuelTensors) of one dtype, as a string array of their shape; of two bool or integer arrays
    (a comparison's results, an index's), `equal` or `value`."""
    if np.asarray(got).dtype.kind in EXACT_KINDS:
        g, w = np.broadcast_arrays(np.asarray(got), np.asarray(want))
        return np.where(g == w, EQUAL, VALUE)
    g, w, fmt = _pair(got, want)
    gb, wb = bits(g), bits(w)
    gc, wc = classify(g), classify(w)
    nan_g, nan_w = np.isin(gc, NAN_CLASSES), np.isin(wc, NAN_CLASSES)
    sign = fmt.uint.type(fmt.sign_bit)
    same_magnitude = (gb & ~sign) == (wb & ~sign)
    choices = [
        gb == wb,
        nan_g & nan_w & same_magnitude,
        nan_g & nan_w,
        nan_g | nan_w,
        (gc == ZERO) & (wc == ZERO),
        (gc == INFINITY) | (wc == INFINITY),
        (gc == SUBNORMAL) | (wc == SUBNORMAL),
        same_magnitude,
        ulp_distance(g, w) <= rounding_ulp(fmt),
    ]
    found: np.ndarray = np.select(choices, DIFFERENCE_CLASSES[:-1], default=VALUE)
    return found


@dataclass(frozen=True)
class Errors:
    """Per-lane differences of `got` from `want` (float64 arrays), the one error measure of
    `compare_backends` and the judge.

    The NaN-lane rule: a lane NaN on both sides agrees (0 ULP, no error); a lane NaN on one
    side only is `nan_mismatch` and infinitely many ULPs apart; neither counts towards the
    absolute or relative error, which measure the lanes that hold numbers.
    """

    ulp: np.ndarray
    absolute: np.ndarray
    relative: np.ndarray
    nan_mismatch: np.ndarray


def errors(got: np.ndarray, want: np.ndarray) -> Errors:
    """ULP distance, absolute and relative error of `got` from `want` by the NaN-lane rule;
    for bool or integer arrays (a comparison's results, an index's: exact or wrong), infinite
    where they differ."""
    if got.dtype.kind in EXACT_KINDS:
        wrong = got != want
        far = np.where(wrong, np.inf, 0.0)
        return Errors(far, wrong.astype(np.float64), far, np.zeros(got.shape, bool))
    with np.errstate(all="ignore"):
        wg, ww = got.astype(np.float64), want.astype(np.float64)
        nan_got, nan_want = np.isnan(wg), np.isnan(ww)
        numbers = ~(nan_got | nan_want)
        ulp = ulp_distance(got, want).astype(np.float64)
        ulp[~numbers] = 0.0
        ulp[nan_got != nan_want] = np.inf
        same = (wg == ww) | ~numbers
        absolute = np.where(same, 0.0, np.abs(wg - ww))
        relative = np.where(same, 0.0, np.nan_to_num(absolute / np.abs(ww), nan=np.inf))
    return Errors(ulp, absolute, relative, nan_got != nan_want)


@dataclass(frozen=True)
class Difference:
    """How one result differs from the expected one: its class, and the distance in ULPs
    (None where a NaN is involved: NaNs are not ordered)."""

    class_: str
    ulp: int | None

    def __str__(self) -> str:
        if self.ulp is None or self.class_ in (EQUAL, SIGNED_ZERO):
            return self.class_
        return f"{self.class_}, {self.ulp} ULP"


def difference(got: int, want: int, dtype: object) -> Difference:
    """The `Difference` of one pair of bit patterns of `dtype` (e.g. `difference(0x7fc00000,
    0x7fc00001, "float32")` is a NaN payload difference)."""
    fmt = float_format(dtype)
    g, w = (np.array(p, np.uint64).astype(fmt.uint).view(fmt.dtype) for p in (got, want))
    return _difference(g, w)


def _difference(g: np.ndarray, w: np.ndarray) -> Difference:
    """The `Difference` of two 0-d arrays of one float dtype (or of two bools or integers)."""
    class_ = str(difference_classes(g, w)[()])
    if g.dtype.kind in EXACT_KINDS:
        return Difference(class_, None)
    nan = class_ in (NAN_SIGN, NAN_PAYLOAD, NAN_VS_NUMBER)
    return Difference(class_, None if nan else int(ulp_distance(g, w)[()]))


def format_value(value: object) -> str:
    """A scalar as its value with the digits its format needs, and its bits:
    `1 (0x3f800000)`; integers (an operation's parameters) as themselves."""
    array = np.asarray(value)
    try:
        fmt = float_format(array.dtype)
    except TypeError:
        return str(array.item() if array.ndim == 0 else array)
    pattern = int(bits(array.reshape(())))
    return f"{float(array):.{fmt.digits}g} (0x{pattern:0{fmt.width // 4}x})"


def lane_message(
    index: tuple[int, ...],
    got: object,
    want: object,
    inputs: Sequence[object] | Mapping[str, object] = (),
    labels: tuple[str, str] = ("got", "expected"),
) -> str:
    """One differing element, described for a reader: `at (1, 2): inputs (lhs 1.5 (0x3fc00000),
    rhs 2 (0x40000000)) -> got 3.50000024 (0x40600001), expected 3.5 (0x40600000): rounding,
    1 ULP`. `inputs` are the operands' values at that element (named when a mapping); `labels`
    name the two sides (kernel names in a comparison)."""
    named = inputs.items() if isinstance(inputs, Mapping) else (("", v) for v in inputs)
    args = ", ".join(f"{name} {format_value(v)}".strip() for name, v in named)
    head = f"at {index}: " + (f"inputs ({args}) -> " if args else "")
    g, w = np.asarray(got), np.asarray(want)
    return (
        f"{head}{labels[0]} {format_value(g)}, {labels[1]} {format_value(w)}: {_difference(g, w)}"
    )


def summarize(classes: np.ndarray | Mapping[str, int], ulp: np.ndarray | None = None) -> str:
    """Counts by difference class, most common first, equal lanes left out: `3 rounding (max 2
    ULP), 1 NaN payload`. `classes` is an array of class names (then `ulp`, of its shape, adds
    each numeric class's max ULP) or counts by class."""
    if isinstance(classes, Mapping):
        counts = Counter({c: n for c, n in classes.items() if c != EQUAL})
        names, ulps = np.array([], str), np.array([], np.uint64)
    else:
        names = classes.reshape(-1)
        counts = Counter(c for c in names.tolist() if c != EQUAL)
        ulps = np.array([], np.uint64) if ulp is None else ulp.reshape(-1)
    parts = []
    for class_, n in counts.most_common():
        worst = ""
        if ulps.size and class_ in (ROUNDING, VALUE, SIGN, INFINITE, SUBNORMAL_DIFFERENCE):
            worst = f" (max {int(ulps[names == class_].max())} ULP)"
        parts.append(f"{n} {class_}{worst}")
    return ", ".join(parts)


def _operands(
    inputs: Sequence[object] | Mapping[str, object] | None, shape: tuple[int, ...]
) -> Mapping[str, np.ndarray] | list[np.ndarray]:
    """The operands broadcast to the result's shape, keeping their names when they have any."""
    if isinstance(inputs, Mapping):
        return {name: np.broadcast_to(np.asarray(v), shape) for name, v in inputs.items()}
    return [np.broadcast_to(np.asarray(v), shape) for v in inputs or ()]


def _at(
    operands: Mapping[str, np.ndarray] | list[np.ndarray], index: tuple[int, ...]
) -> Mapping[str, object] | list[object]:
    """Each operand's element at `index`, named as the operands are."""
    if isinstance(operands, Mapping):
        return {name: a[index] for name, a in operands.items()}
    return [a[index] for a in operands]


def assert_bits_equal(
    actual: object,
    expected: object,
    *,
    max_ulp: int = 0,
    nan_payloads: bool = True,
    inputs: Sequence[object] | Mapping[str, object] | None = None,
    show: int = 5,
    err_msg: str = "",
) -> None:
    """Raise AssertionError unless `actual` and `expected` (FuelTensors, NumPy arrays, bf16 via
    ml_dtypes; a 0-d side is broadcast; Python numbers are taken in `actual`'s dtype) hold the
    same bits, lane by lane.

    `max_ulp` lets numbers (never NaNs) differ by that many ULPs, a signed zero counting 0;
    `nan_payloads=False` lets a NaN meet any NaN. The message counts the differing lanes by
    class (`DIFFERENCE_CLASSES`) and describes the first `show` of them with `lane_message`:
    index, `inputs` (the operands, named when a mapping) at that index, both results with their
    bits, the class (NaN payload, signed zero...) and the ULP distance.
    """
    got = np.asarray(actual)
    typed = hasattr(expected, "dtype")  # an array, tensor or NumPy scalar keeps its dtype
    want = np.asarray(expected) if typed else np.asarray(expected, dtype=got.dtype)
    if want.dtype != got.dtype or (got.shape != want.shape and want.ndim):
        raise AssertionError(
            f"{err_msg}\n" * bool(err_msg) + f"got {got.dtype}{list(got.shape)}, expected "
            f"{want.dtype}{list(want.shape)}: bits compare only between one dtype and shape"
        )
    g, w, _ = _pair(got, want)
    classes = difference_classes(g, w)
    ulp = ulp_distance(g, w)
    nan = np.isin(classes, (NAN_SIGN, NAN_PAYLOAD))
    ok = (classes == EQUAL) | (nan & (not nan_payloads))
    if max_ulp > 0:
        ok |= ~nan & (classes != NAN_VS_NUMBER) & (ulp <= max_ulp)
    bad = np.argwhere(~ok)
    if not bad.size:
        return
    operands = _operands(inputs, g.shape)
    lines = []
    for row in bad[:show]:
        index = tuple(int(i) for i in row)
        lines.append(lane_message(index, g[index], w[index], _at(operands, index)))
    if len(bad) > show:
        lines.append(f"... and {len(bad) - show} more")
    tolerance = f"max_ulp {max_ulp}, NaN payloads {'compared' if nan_payloads else 'ignored'}"
    head = (
        f"bits differ in {len(bad)} of {g.size} elements ({tolerance}): "
        f"{summarize(classes[~ok], ulp[~ok])}"
    )
    raise AssertionError("\n  ".join([f"{err_msg}\n{head}" if err_msg else head, *lines]))
