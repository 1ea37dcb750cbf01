"""fueltensor.testing against first principles: every special value is what its class and name
say (checked on values and on the IEEE layout written out here, not through the module's own
bit fields), `classify` agrees with a value-based reference on every 16-bit pattern and on
random 32- and 64-bit ones, `difference` names each kind of difference, and
`assert_bits_equal` names the lanes, inputs, bits, NaN payloads and signed zeros."""

from __future__ import annotations

import math
import re
import subprocess
import sys
from typing import Any

import ml_dtypes
import numpy as np
import pytest
from _extras import ROOT

import fueltensor as ft
from fueltensor.testing import (
    DIFFERENCE_CLASSES,
    VALUE_CLASSES,
    assert_bits_equal,
    classify,
    difference,
    difference_classes,
    random_bits,
    special_pairs,
    special_values,
)

BF16 = np.dtype(ml_dtypes.bfloat16)
LAYOUT: dict[str, tuple[Any, int, int]] = {
    # dtype: (unsigned type, quiet bit, stored fraction bits), from IEEE 754 and bfloat16's
    # definition (the top 16 bits of a float32), written out by hand.
    "float32": (np.uint32, 0x0040_0000, 23),
    "float64": (np.uint64, 1 << 51, 52),
    "bfloat16": (np.uint16, 0x0040, 7),
    "float16": (np.uint16, 0x0200, 10),
}
ROUNDING_ULP = {"float32": 2048, "float64": 2**26, "bfloat16": 8, "float16": 32}
DTYPES = tuple(LAYOUT)
DOC = ROOT / "docs" / "testing.md"


def np_dtype(name: str) -> np.dtype:
    return BF16 if name == "bfloat16" else np.dtype(name)


def finfo(name: str) -> Any:
    return ml_dtypes.finfo(BF16) if name == "bfloat16" else np.finfo(np.dtype(name))


def value(pattern: int, name: str) -> float:
    """The pattern's value, widened exactly to a Python float (NaN for every NaN)."""
    uint = LAYOUT[name][0]
    with np.errstate(invalid="ignore"):  # widening a signaling NaN raises the invalid flag
        return float(np.array(pattern, uint).view(np_dtype(name)).astype(np.float64))


def reference_class(pattern: int, name: str) -> str:
    """The value class from the value (frexp, finfo) and the hand-written quiet bit."""
    _, quiet, p = LAYOUT[name]
    v = value(pattern, name)
    if math.isnan(v):
        return "quiet NaN" if pattern & quiet else "signaling NaN"
    if math.isinf(v):
        return "infinity"
    a, info = abs(v), finfo(name)
    if a == 0:
        return "zero"
    if a < float(info.tiny):
        return "subnormal"
    if a < 2 * float(info.tiny) or a >= 2.0 ** (int(info.maxexp) - 1):
        return "normal extreme"
    if a == 1:
        return "one"
    m, _ = math.frexp(a)
    significand = int(m * 2 ** (p + 1))  # the p + 1 significant bits, as an integer
    if significand == 2**p:
        return "power of two"
    if significand in (2**p + 1, 2 ** (p + 1) - 1):
        return "binade edge"
    return "integer" if a == math.floor(a) else "non-integer"


def patterns(name: str, n: int = 20000) -> np.ndarray:
    """Every pattern of a 16-bit type; random ones (seeded) of the wider types."""
    uint = LAYOUT[name][0]
    if np.dtype(uint).itemsize == 2:
        return np.arange(1 << 16, dtype=uint)
    return np.random.default_rng(7).integers(0, np.iinfo(uint).max, n, uint, endpoint=True)


@pytest.mark.parametrize("name", DTYPES)
def test_classify_agrees_with_a_value_based_reference(name: str) -> None:
    u = patterns(name)
    got = classify(u.view(np_dtype(name)))
    want = [reference_class(int(p), name) for p in u.tolist()]
    assert got.tolist() == want
    assert set(want) == set(VALUE_CLASSES) or np.dtype(LAYOUT[name][0]).itemsize > 2
    assert classify(int(u[5]), name) == want[5]  # one pattern, with its dtype
    assert classify(ft.asarray(u[:4].view(np_dtype(name)))).tolist() == want[:4]


@pytest.mark.parametrize("name", DTYPES)
def test_every_special_value_is_what_its_class_and_name_say(name: str) -> None:
    values = special_values(name)
    uint, quiet, p = LAYOUT[name]
    info, sign = finfo(name), 1 << (8 * np.dtype(uint).itemsize - 1)
    assert {s.class_ for s in values} == set(VALUE_CLASSES)
    by_name = {}
    for s in values:
        assert reference_class(s.bits, name) == s.class_, s
        assert s.name[0] == ("-" if s.bits & sign else "+"), s
        by_name[s.name[1:]] = s.bits & ~sign
    assert len(by_name) * 2 == len(values)  # every one comes in both signs
    expected = {
        "zero": 0.0,
        "infinity": math.inf,
        "smallest subnormal": float(info.smallest_subnormal),
        "largest subnormal": float(info.tiny) - float(info.smallest_subnormal),
        "min normal": float(info.tiny),
        "largest finite": float(info.max),
        "1": 1.0,
        "2": 2.0,
        "0.5": 0.5,
        f"2**-{p + 1}, half an ulp of 1": 2.0 ** -(p + 1),
        "(1 + ulp)": 1 + float(info.eps),
        "largest below 1": 1 - float(info.eps) / 2,
        f"(2**{p + 1} - 1), the largest odd integer": 2.0 ** (p + 1) - 1,
        "3": 3.0,
        "10": 10.0,
        "1.5": 1.5,
    }
    for label, want in expected.items():
        assert value(by_name[label], name) == want, label
    assert 0 < value(by_name["middle subnormal"], name) < float(info.tiny)
    assert value(by_name["0.1 rounded"], name) == pytest.approx(0.1, rel=float(info.eps))
    assert value(by_name["(1/3) rounded"], name) == pytest.approx(1 / 3, rel=float(info.eps))
    payload_mask = quiet - 1
    payloads = {
        "lowest payload bit": 1,
        "highest payload bit": quiet >> 1,
        "payload all ones": payload_mask,
    }
    for kind, bit in (("qNaN", quiet), ("sNaN", 0)):
        for label, payload in payloads.items():
            pattern = by_name[f"{kind}, {label}"]
            assert math.isnan(value(pattern, name)) and pattern & quiet == bit
            assert pattern & payload_mask == payload, (kind, label)
        alternating = by_name[f"{kind}, alternating payload"] & payload_mask
        assert alternating not in (0, 1, payload_mask, quiet >> 1)
    assert by_name["qNaN, no payload"] & payload_mask == 0


def test_special_values_filter_by_class_and_arrays_keep_every_bit() -> None:
    nans = special_values("F32", ["signaling NaN"])
    assert len(nans) == 8 and set(nans.classes) == {"signaling NaN"}
    assert nans.array.view(np.uint32).tolist() == [s.bits for s in nans]  # not quieted
    assert not nans.array.flags.writeable
    assert nans.tensor().dtype == ft.float32
    with pytest.raises(ValueError, match="unknown value class"):
        special_values("F32", ["nan"])
    with pytest.raises(TypeError, match="not a float dtype"):
        special_values("int32")


@pytest.mark.parametrize("spelling", [ft.float16, np.float16, "float16", "F16", np.dtype("f2")])
def test_pairs_are_every_ordered_pair(spelling: object) -> None:
    values = special_values(spelling).array.view(np.uint16)
    lhs, rhs = special_pairs(spelling)
    n = len(values)
    assert len(lhs) == len(rhs) == n * n
    pairs = zip(lhs.array.view(np.uint16).tolist(), rhs.array.view(np.uint16).tolist(), strict=True)
    got = list(pairs)
    assert got == [(int(a), int(b)) for a in values for b in values]
    assert lhs.classes[n] == special_values(spelling).classes[1]


def test_random_bits_are_seeded_uniform_patterns() -> None:
    x = random_bits(ml_dtypes.bfloat16, (16, 65536), rng=3)
    assert x.dtype == ft.bfloat16 and x.shape == (16, 65536)
    again = random_bits("BF16", (16, 65536), rng=3)
    assert np.array_equal(np.asarray(x).view(np.uint16), np.asarray(again).view(np.uint16))
    u = np.asarray(x).view(np.uint16).reshape(-1)
    assert set(classify(np.asarray(x)).reshape(-1).tolist()) == set(VALUE_CLASSES)
    for bit in range(16):  # each bit is set in about half the patterns
        assert abs(float(((u >> bit) & 1).mean()) - 0.5) < 0.01
    rng = np.random.default_rng(0)
    first, second = random_bits("F64", 4, rng=rng), random_bits("F64", 4, rng=rng)
    assert not np.array_equal(np.asarray(first).view(np.uint64), np.asarray(second).view(np.uint64))


@pytest.mark.parametrize("name", DTYPES)
def test_each_kind_of_difference_is_named(name: str) -> None:
    uint, quiet, p = LAYOUT[name]
    width = 8 * np.dtype(uint).itemsize
    sign, top = 1 << (width - 1), ((1 << (width - 1 - p)) - 1) << p  # exponent all ones
    one = int(np.array(1.0).astype(np_dtype(name)).view(uint))
    # one + k: k floats above 1 (adjacent floats of one sign have adjacent patterns, IEEE 754)
    edge = ROUNDING_ULP[name]
    cases = {
        (one, one): ("equal", 0),
        (top | quiet, top | quiet | 1): ("NaN payload", None),
        (top | quiet, top | 1): ("NaN payload", None),  # quiet against signaling
        (top | quiet, sign | top | quiet): ("NaN sign", None),
        (top | quiet, one): ("NaN vs number", None),
        (0, sign): ("signed zero", 0),
        (top, top - 1): ("infinity", 1),  # inf against max: overflow
        (0, 1): ("subnormal", 1),  # flushed to zero
        (one, sign | one): ("sign", 2 * one),
        (one + 1, one): ("rounding", 1),
        (one + edge, one): ("rounding", edge),
        (one, one + edge + 1): ("value", edge + 1),
    }
    for (got, want), (kind, ulp) in cases.items():
        d = difference(got, want, name)
        assert (d.class_, d.ulp) == (kind, ulp), (hex(got), hex(want))
    assert {k for k, _ in cases.values()} == set(DIFFERENCE_CLASSES)
    g = np.array([a for a, _ in cases], uint).view(np_dtype(name))
    w = np.array([b for _, b in cases], uint).view(np_dtype(name))
    assert difference_classes(g, w).tolist() == [k for k, _ in cases.values()]


def test_assert_bits_equal_passes_equal_bits_of_every_container() -> None:
    x = random_bits("bfloat16", 100, rng=1)
    assert_bits_equal(x, np.asarray(x).copy())
    assert_bits_equal(np.asarray(x), x)
    assert_bits_equal(np.float32(1.5), 1.5)  # a Python number is taken in actual's dtype


def test_assert_bits_equal_names_lanes_inputs_bits_and_kinds() -> None:
    lhs = np.array([1.0, np.nan, 0.0, 3.0, 2.0], np.float32)
    rhs = np.ones(5, np.float32)
    got = np.array([1.0, np.nan, 0.0, 3.0, 2.0], np.float32)
    want = got.copy()
    want.view(np.uint32)[1] = 0x7FC00001  # a payload
    want[2] = -0.0
    want.view(np.uint32)[3] += 1  # one ULP up
    want.view(np.uint32)[4] = 0x7FC00000  # a NaN where got has a number
    with pytest.raises(AssertionError) as raised:
        assert_bits_equal(got, want, inputs={"lhs": lhs, "rhs": rhs}, err_msg="maximum_f32")
    message = str(raised.value)
    assert message.startswith("maximum_f32\nbits differ in 4 of 5 elements (max_ulp 0")
    lines = message.splitlines()
    assert lines[2] == (
        "  at (1,): inputs (lhs nan (0x7fc00000), rhs 1 (0x3f800000)) -> got nan (0x7fc00000), "
        "expected nan (0x7fc00001): NaN payload"
    )
    assert lines[3].endswith("got 0 (0x00000000), expected -0 (0x80000000): signed zero")
    assert lines[4].endswith(
        "got 3 (0x40400000), expected 3.00000024 (0x40400001): rounding, 1 ULP"
    )
    assert lines[5].endswith("expected nan (0x7fc00000): NaN vs number")
    for counted in ("1 NaN payload", "1 signed zero", "1 rounding (max 1 ULP)", "1 NaN vs number"):
        assert counted in lines[1]
    with pytest.raises(AssertionError, match=r"2 of 5 .*NaN payload.*\n.*\n.*NaN vs number"):
        assert_bits_equal(got, want, max_ulp=1)  # numbers within 1 ULP; NaN bits still count
    with pytest.raises(AssertionError, match=r"1 of 5 .* NaN payloads ignored"):
        assert_bits_equal(got, want, max_ulp=1, nan_payloads=False)
    with pytest.raises(AssertionError, match=r"\.\.\. and 2 more"):
        assert_bits_equal(got, want, show=2)
    assert_bits_equal(got[:4], want[:4], max_ulp=1, nan_payloads=False)


def test_the_ulp_bound_holds_exactly_and_never_covers_a_nan() -> None:
    one = np.array([1.0], np.float32)
    two_up = (one.view(np.uint32) + 2).view(np.float32)  # two floats above 1
    with pytest.raises(AssertionError, match="rounding, 2 ULP"):
        assert_bits_equal(two_up, one, max_ulp=1)
    assert_bits_equal(two_up, one, max_ulp=2)
    inf = np.array([np.inf], np.float32)
    nan_next_to_inf = (inf.view(np.uint32) + 1).view(np.float32)  # one pattern away
    with pytest.raises(AssertionError, match="NaN vs number"):
        assert_bits_equal(inf, nan_next_to_inf, max_ulp=10)


def test_assert_bits_equal_refuses_other_dtypes_and_shapes() -> None:
    with pytest.raises(AssertionError, match="one dtype and shape"):
        assert_bits_equal(np.zeros(3, np.float32), np.zeros(3, np.float64))
    with pytest.raises(AssertionError, match="one dtype and shape"):
        assert_bits_equal(np.zeros(3, np.float32), np.zeros(4, np.float32))


def test_the_documented_examples_run_and_print_what_the_page_shows() -> None:
    text = DOC.read_text(encoding="utf-8")
    blocks = re.findall(r"^```python\n(.*?)^```$", text, re.M | re.S)
    done = subprocess.run(
        [sys.executable, "-c", "\n".join(blocks)],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    shown = re.search(r"prints\n\n```\n(.*?)```", text, re.S)
    assert shown is not None and shown.group(1) in done.stdout
    assert "FKC, the fuel kernel-contract format" in " ".join(text.split())  # spelled out
