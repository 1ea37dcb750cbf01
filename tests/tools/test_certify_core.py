"""The certifier's compiled core against references written here from the definitions: the
correctly rounded result in exact rational arithmetic rounded once (not through double), the
seeds' formula from the independent scalar oracle (tests/_oracle.py), and the tally's counts
recomputed from `fueltensor.testing`'s own distance and difference classes; then the sweep:
a kernel wrong in one lane of the span is found with its inputs, and the tally and digest do
not depend on threads, on resuming, or on how the blocks were split."""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections import Counter
from collections.abc import Callable
from dataclasses import replace
from fractions import Fraction
from pathlib import Path
from typing import Any

import _oracle as O
import numpy as np
import pytest

import fueltensor as ft
from fueltensor.testing import (
    VALUE_CLASSES,
    classify,
    difference_classes,
    float_format,
    special_pairs,
    ulp_distance,
)

_certify = pytest.importorskip("fueltensor.ext._certify")

from fueltensor.tools.certify import binary_identity, certificate  # noqa: E402
from fueltensor.tools.certify.binary import binary_text  # noqa: E402
from fueltensor.tools.certify.sweep import Job, Span, sweep  # noqa: E402
from fueltensor.tools.certify.tally import class_table, fresh, merge, named  # noqa: E402

FMTS = {"bfloat16": O.BF16, "float16": O.F16}
EXACT_OPS = ("add", "sub", "mul", "div", "maximum", "minimum", "rem")


def round_fraction(q: Fraction, fmt: O.Fmt) -> int:
    """A nonzero rational rounded once, to nearest with ties to even, into `fmt`: the quantum of
    its binade (the subnormals' below the normal range), Python's round (half to even)."""
    sign = fmt.sign if q < 0 else 0
    a = abs(q)
    e = a.numerator.bit_length() - a.denominator.bit_length()
    if Fraction(2) ** e > a:
        e -= 1
    e = max(e, 1 - fmt.bias)
    quantum = Fraction(2) ** (e - fmt.man_bits)
    value = round(a / quantum) * quantum
    if value >= 2 ** (fmt.bias + 1):
        return sign | fmt.exp_mask
    return sign | O.encode(float(value), fmt)  # exact: value is a number of the format


def _ieee_double(op: str, x: float, y: float) -> float:
    """IEEE double +, -, *, / (x / 0 is a signed infinity or NaN, not an exception)."""
    if op == "div" and y == 0:
        if x == 0 or math.isnan(x):
            return math.nan
        return math.copysign(math.inf, x) * math.copysign(1.0, y)
    return {"add": x + y, "sub": x - y, "mul": x * y, "div": x / y if y else 0.0}[op]


def exact_scalar(op: str, a: int, b: int, fmt: O.Fmt) -> int | None:
    """The correctly rounded result of one pair (None: an invalid operation's NaN, whose bits
    are the machine's). A NaN operand: the lhs's first, quieted."""
    for v in (a, b):
        if O.is_nan(v, fmt):
            return v | fmt.quiet
    x, y = O.decode(a, fmt), O.decode(b, fmt)
    if op in ("maximum", "minimum"):
        if x == y:  # equal values: the same bits, or zeros (-0 below +0)
            return (a if a & fmt.sign else b) if op == "minimum" else (b if a & fmt.sign else a)
        return a if (x > y) == (op == "maximum") else b
    if op == "rem":
        return _floored(a, b, x, y, fmt)
    r = _ieee_double(op, x, y)
    if math.isnan(r):
        return None
    if math.isinf(r) or r == 0:  # specials and exact zeros involve no rounding
        return O.encode(r, fmt)
    exact = {
        "add": Fraction(x) + Fraction(y),
        "sub": Fraction(x) - Fraction(y),
        "mul": Fraction(x) * Fraction(y),
        "div": Fraction(x) / Fraction(y) if y else Fraction(0),
    }[op]
    return round_fraction(exact, fmt)


def _floored(a: int, b: int, x: float, y: float, fmt: O.Fmt) -> int | None:
    """x - floor(x / y) * y as a real number, rounded once; x % ±inf and a zero remainder as
    Python's float `%` has them (docs/semantics.md, `dividend_or_divisor`, `divisor`)."""
    if y == 0 or math.isinf(x):
        return None
    if math.isinf(y):
        return O.encode(x % y, fmt) if x else (b & fmt.sign)
    r = Fraction(x) - math.floor(Fraction(x) / Fraction(y)) * Fraction(y)
    return (b & fmt.sign) if r == 0 else round_fraction(r, fmt)


def _pairs(dtype: str, n: int, seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Every pair of the special values, then `n` random pattern pairs."""
    sa, sb = (s.array.view(np.uint16) for s in special_pairs(dtype))
    rng = np.random.default_rng(seed)
    ra, rb = rng.integers(0, 1 << 16, (2, n), dtype=np.uint16)
    return np.concatenate([sa, ra]), np.concatenate([sb, rb])


def _references(op: str, dtype: str, a: np.ndarray, b: np.ndarray) -> tuple[Any, Any]:
    fmt = float_format(dtype)
    exact, formula = np.empty_like(a), np.empty_like(a)
    _certify.references(_certify.OPS.index(op), fmt.exponent, fmt.mantissa, a, b, exact, formula)
    return exact, formula


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("op", EXACT_OPS)
def test_exact_reference_is_the_correctly_rounded_result(op: str, dtype: str) -> None:
    """Every special pair and 4000 random pairs: the core's correctly rounded result is the
    rational one rounded once; an invalid operation's is a NaN without payload."""
    fmt = FMTS[dtype]
    a, b = _pairs(dtype, 4000, seed=len(op))
    exact, _ = _references(op, dtype, a, b)
    for x, y, got in zip(a.tolist(), b.tolist(), exact.tolist(), strict=True):
        want = exact_scalar(op, x, y, fmt)
        if want is None:
            assert got & ~fmt.sign == fmt.exp_mask | fmt.quiet, (op, hex(x), hex(y), hex(got))
        else:
            assert got == want, (op, hex(x), hex(y), hex(got), hex(want))


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("op", [*EXACT_OPS, "pow"])
def test_formula_reference_is_the_seeds_formula(op: str, dtype: str) -> None:
    """The formula's bits are the scalar oracle's for the CPU contract (widen to f32, compute,
    narrow once; NaN lhs first), pow included (both call the C library's powf)."""
    fmt = FMTS[dtype]
    a, b = _pairs(dtype, 4000, seed=7 + len(op))
    _, formula = _references(op, dtype, a, b)
    want = [O.cpu_scalar(op, x, y, fmt) for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    assert formula.tolist() == want


def test_rounding_edges() -> None:
    """Ties to even at the subnormal boundary, overflow to infinity at max + half an ulp, and
    the smallest subnormal's half rounding to zero: products and sums that land exactly there."""
    fmt = O.BF16
    one, half_sub = 0x3F80, 0x0001  # 1.0 and the smallest subnormal 2**-133
    a = np.array([0x7F7F, half_sub, 0x0001, 0x7F7F], np.uint16)  # max, 2**-133, 2**-133, max
    b = np.array([0x7F7F, 0x3F00, 0x3F40, 0xBF80], np.uint16)  # max, 0.5, 0.75, -1
    exact, _ = _references("add", "bfloat16", a, b)
    assert exact.tolist()[0] == fmt.exp_mask  # max + max overflows
    exact, _ = _references("mul", "bfloat16", a, b)
    # 2**-134 is a tie between 0 and 2**-133: to even, 0; 0.75 * 2**-133 rounds up to 2**-133.
    assert exact.tolist()[1:3] == [0x0000, 0x0001]
    assert exact.tolist()[3] == 0xFF7F and one  # -max, exact


def _span_pairs(span: Span) -> tuple[np.ndarray, np.ndarray]:
    lhs = np.arange(*span.lhs, dtype=np.uint16)
    rhs = np.arange(*span.rhs, dtype=np.uint16)
    return np.repeat(lhs, rhs.size), np.tile(rhs, lhs.size)


def _job(name: str, span: Span, kernel: Callable[..., Any] | None = None) -> Job:
    reg = ft.registry()
    c = reg[name]
    dtype = ft.float16 if name.endswith("f16") and not name.endswith("bf16") else ft.bfloat16
    op = _certify.OPS.index(name.rsplit("_", 1)[0])
    return Job(c, kernel or reg.kernel(name), dtype, op, span, binary_identity(c, reg))


# A span with zeros and subnormals on the left, and large numbers, infinity, NaNs, -0 and
# negative subnormals on the right.
SPAN = Span((0x0000, 0x0010), (0x7F00, 0x8100))


@pytest.mark.parametrize("name", ["add_bf16", "div_bf16", "mul_f16", "rem_bf16"])
def test_tally_counts_what_testing_counts(name: str) -> None:
    """The tally of a span: histogram, maximum, difference classes and the operand-class table
    recomputed from the kernel's outputs, the rational reference and `fueltensor.testing`."""
    job = _job(name, SPAN)
    dtype = job.dtype.name
    fmt = FMTS[dtype]
    a, b = _span_pairs(SPAN)
    got = job.run(a, b)
    result = sweep(job, threads=2)
    s = named(result.stats)
    op = name.rsplit("_", 1)[0]
    invalid = fmt.sign | fmt.exp_mask | fmt.quiet  # x86's default NaN, as the core gives it
    scalars = [exact_scalar(op, x, y, fmt) for x, y in zip(a.tolist(), b.tolist(), strict=True)]
    want = np.array([invalid if w is None else w for w in scalars], np.uint16)
    gv, wv = (v.view(job.dtype.np) for v in (got, want))
    nan_g, nan_w = np.isnan(gv.astype(np.float32)), np.isnan(wv.astype(np.float32))
    d = ulp_distance(gv, wv).astype(np.int64)
    d[nan_g & nan_w] = 0
    d[nan_g != nan_w] = _certify.NAN_DISTANCE
    exact = got == want
    assert s["exact"] == int(exact.sum())
    for k in range(9):
        assert s[f"ulp{k}"] == int(((d == k) & ~exact).sum()), k
    assert s["beyond"] == int((d > 8).sum())
    assert s["max_ulp"] == int(d.max())
    first = int(np.argmax(d))
    assert (s["max_lhs"], s["max_rhs"]) == (int(a[first]), int(b[first]))
    diffs = Counter(difference_classes(gv, wv).tolist())
    assert {k: s[k] for k in diffs} == dict(diffs)
    cells = Counter(
        zip(
            classify(a.view(job.dtype.np)).tolist(),
            classify(b.view(job.dtype.np)).tolist(),
            strict=True,
        )
    )
    table = result.stats[_certify.CLASS_TABLE : _certify.NAN_FORMS].reshape(
        _certify.MAX_CLASSES, _certify.MAX_CLASSES, 3
    )
    for (ca, cb), count in cells.items():
        assert table[VALUE_CLASSES.index(ca), VALUE_CLASSES.index(cb), 0] == count


def test_one_wrong_lane_is_found_with_its_inputs() -> None:
    """A kernel one ULP off in a single lane of 2**32 (lhs 1.5, rhs 0x3f2a): the sweep of a
    span holding it names exactly that lane, as the maximum and as the formula's first miss."""
    bad = (0x3FC0, 0x3F2A)
    real = ft.registry().kernel("add_bf16")

    def wrong(lhs: np.ndarray, rhs: np.ndarray, *, out: np.ndarray) -> None:
        real(lhs, rhs, out=out)
        u = out.view(np.uint16)
        hit = (lhs.view(np.uint16) == bad[0]) & (rhs.view(np.uint16) == bad[1])
        u[hit] += 1

    span = Span((0x3FB0, 0x3FD0), (0x0000, 0x10000))
    s = named(sweep(_job("add_bf16", span, wrong), threads=2).stats)
    assert s["ulp1"] == 1 and s["max_ulp"] == 1 and s["beyond"] == 0
    assert (s["max_lhs"], s["max_rhs"]) == bad == (s["formula_lhs"], s["formula_rhs"])
    assert s["formula_equal"] == span.pairs - 1 == s["exact"]
    clean = named(sweep(_job("add_bf16", span), threads=2).stats)
    assert clean["exact"] == span.pairs and clean["max_ulp"] == 0


def test_the_max_pair_shows_the_bits_the_sweep_saw() -> None:
    """A kernel wrong in one lane only when called on many elements (as a framework's vector
    loop may differ from its one-element path): the certificate's max pair shows the bits the
    sweep saw, not a one-element call's."""
    bad = (0x3FC0, 0x3F2A)
    real = ft.registry().kernel("add_bf16")

    def wrong_in_bulk(lhs: np.ndarray, rhs: np.ndarray, *, out: np.ndarray) -> None:
        real(lhs, rhs, out=out)
        hit = (lhs.view(np.uint16) == bad[0]) & (rhs.view(np.uint16) == bad[1])
        out.view(np.uint16)[hit & (lhs.size > 1)] = 0x7FC0

    span = Span((0x3FB0, 0x3FD0), (0x3F00, 0x3F80))
    job = _job("add_bf16", span, wrong_in_bulk)
    cert = certificate(job, sweep(job, threads=2))
    assert cert.max_ulp == math.inf
    pair = cert.data["max_pair"]
    assert (pair["lhs"], pair["rhs"], pair["got"]) == (*bad, 0x7FC0)


def test_digest_threads_resume_and_split(tmp_path: Path) -> None:
    """The digest is the chain of the blocks' SHA-256 (recomputed here from the kernel); the
    tally and digest are the same on one thread and two, after a stop and a resume, and when
    the blocks are split between two runs and merged."""
    span = Span((0x3F70, 0x3FA3), (0x0000, 0x4000))
    job = _job("mul_bf16", span)
    one = sweep(job, threads=1)
    chain = hashlib.sha256()
    for rows in span.blocks():
        a, b = job.operands(rows)
        chain.update(hashlib.sha256(job.run(a, b).astype("<u2").tobytes()).digest())
    assert one.digest == chain.hexdigest()
    first = named(one.stats)  # every pair exact here: the maximum's first pair is the span's
    assert first["max_ulp"] == 0 and (first["max_lhs"], first["max_rhs"]) == (0x3F70, 0)
    assert sweep(job, threads=2).digest == one.digest
    state = tmp_path / "mul.state"
    half = sweep(job, 2, state, blocks=lambda rows: list(range(len(rows) // 2)))
    resumed = sweep(job, 2, state)
    assert resumed.resumed_blocks == len(span.blocks()) // 2
    assert resumed.digest == one.digest and (resumed.stats == one.stats).all()
    other = sweep(job, 1, blocks=lambda rows: list(range(len(rows) // 2, len(rows))))
    merged = fresh()
    merge(merged, other.stats)
    merge(merged, half.stats)
    assert (merged == one.stats).all()


def test_a_state_file_of_another_sweep_is_refused(tmp_path: Path) -> None:
    """Resuming from the state of another contract or span says so and changes nothing."""
    state = tmp_path / "x.state"
    sweep(_job("add_bf16", Span((0, 16), (0, 64))), 1, state)
    before = state.read_text()
    with pytest.raises(ValueError, match="state of another sweep"):
        sweep(_job("sub_bf16", Span((0, 16), (0, 64))), 1, state)
    assert state.read_text() == before


def test_a_resume_cuts_a_line_the_stop_cut(tmp_path: Path) -> None:
    """A stop that cut the last block line mid-JSON: the resume drops the cut line before it
    appends (it used to append right after it, so every later resume failed to parse), and a
    second resume finds every block."""
    span = Span((0x3F80, 0x3FC0), (0x0000, 0x0100))
    job = _job("add_bf16", span)
    whole = sweep(job, 1)
    state = tmp_path / "add.state"
    sweep(job, 1, state, blocks=lambda rows: [0, 1])
    text = state.read_text()
    state.write_text(text[: len(text) - 20])  # the second block's line, cut
    first = sweep(job, 1, state)
    assert first.resumed_blocks == 1 and first.digest == whole.digest
    again = sweep(job, 1, state)
    assert again.resumed_blocks == len(span.blocks()) and again.digest == whole.digest
    lines = state.read_text().splitlines()
    assert len(lines) == 1 + len(span.blocks())
    assert sorted(json.loads(line)["block"] for line in lines[1:]) == list(range(len(lines) - 1))


def test_a_corrupt_state_line_is_named_by_file_and_line(tmp_path: Path) -> None:
    """A block line that is not JSON, in the middle of the file: the error names file:line."""
    span = Span((0x3F80, 0x3FC0), (0x0000, 0x0100))
    job = _job("add_bf16", span)
    state = tmp_path / "add.state"
    sweep(job, 1, state, blocks=lambda rows: [0, 1, 2])
    lines = state.read_text().splitlines(keepends=True)
    lines[2] = lines[2][:30] + "\n"
    state.write_text("".join(lines))
    with pytest.raises(ValueError, match=f"^{re.escape(str(state))}:3: not a block"):
        sweep(job, 1, state)


def test_a_state_file_of_another_binary_is_refused(tmp_path: Path) -> None:
    """The header names the binary: a resume under another one is refused, naming both."""
    span = Span((0x3F80, 0x3FA0), (0x0000, 0x0100))
    job = _job("add_bf16", span)
    state = tmp_path / "add.state"
    sweep(job, 1, state)
    before = state.read_text()
    other = replace(job, binary={**job.binary, "sha256": "ab" * 32, "file": "rebuilt.so"})
    with pytest.raises(ValueError, match="written by another binary") as e:
        sweep(other, 1, state)
    assert f"written by another binary ({binary_text(job.binary)})" in str(e.value)
    assert f"this run's is rebuilt.so sha256 {'ab' * 32}" in str(e.value)
    assert state.read_text() == before


def test_class_table_is_testing_classify() -> None:
    """The table the core counts operand classes by is `testing.classify` of every pattern."""
    table = class_table("float16")
    patterns = np.arange(1 << 16, dtype=np.uint16).view(np.float16)
    assert [VALUE_CLASSES[i] for i in table.tolist()] == classify(patterns).tolist()


def test_core_refuses_bad_arguments() -> None:
    """A format that is not 16 bits, an unknown op, mismatched buffers, a short tally."""
    a = np.zeros(4, np.uint16)
    stats, classes = fresh(), np.zeros(1 << 16, np.uint8)
    with pytest.raises(ValueError, match="16-bit format"):
        _certify.tally(0, 8, 23, a, a, a, classes, stats)
    with pytest.raises(ValueError, match="op must be"):
        _certify.tally(99, 8, 7, a, a, a, classes, stats)
    with pytest.raises(ValueError, match="expected 8"):
        _certify.tally(0, 8, 7, a, a, np.zeros(3, np.uint16), classes, stats)
    with pytest.raises(ValueError, match="int64 tally"):
        _certify.tally(0, 8, 7, a, a, a, classes, stats[:-1])
    with pytest.raises(ValueError, match="class numbers"):
        _certify.tally(0, 8, 7, a, a, a, np.full(1 << 16, 99, np.uint8), stats)
    assert (stats == fresh()).all()


@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_pow_reference_is_mpfr_where_proven_and_the_rest_is_named(dtype: str) -> None:
    """pow's correctly rounded reference: on every finite, nonzero lane the core proves, the
    C library's double pow rounded once is MPFR's correctly rounded pow; the lanes it does
    not prove are returned (exact midpoints among them: 1.0625**2 = 1 + 2**-3 + 2**-8 has nine
    significant bits, a tie in bf16)."""
    pytest.importorskip("gmpy2")
    from fueltensor.tools.exact_pow import correctly_rounded

    fmt = float_format(dtype)
    a, b = _pairs(dtype, 6000, seed=11)
    exact, _ = _references("pow", dtype, a, b)
    with np.errstate(all="ignore"):
        x, y = (v.view(fmt.dtype).astype(np.float64) for v in (a, b))
        lanes = np.isfinite(x) & np.isfinite(y) & ~np.isnan(np.power(x, y))
    mpfr = correctly_rounded(x[lanes], y[lanes], fmt).view(np.uint16)
    unproven = set(
        _certify.references(
            _certify.OPS.index("pow"), fmt.exponent, fmt.mantissa, a, b, exact, exact
        )
    )
    proven = np.array([i not in unproven for i in np.flatnonzero(lanes)])
    assert (exact[lanes][proven] == mpfr[proven]).all()
    tie = np.array([0x3F88], np.uint16), np.array([0x4000], np.uint16)  # 1.0625 ** 2
    if dtype == "bfloat16":
        out = np.empty(1, np.uint16)
        assert _certify.references(_certify.OPS.index("pow"), 8, 7, *tie, out, out) == [0]


def _forms_by_hand(got: int, a: int, b: int, fmt: O.Fmt) -> int:
    """certify.h's NaN form mask, written out: per NaN operand (lhs bits 0-4, rhs 5-9) kept,
    quieted, canonical of its sign, kept and quieted with the sign flipped; +qNaN, -qNaN, all
    ones (10-12); lhs NaN (13), rhs NaN (14)."""
    mask = 0
    for at, p in ((0, a), (5, b)):
        if O.is_nan(p, fmt):
            forms = [p, p | fmt.quiet, (p & fmt.sign) | fmt.exp_mask | fmt.quiet]
            hits = [got == f for f in forms] + [got ^ fmt.sign == f for f in forms[:2]]
            mask |= sum(int(h) << (at + i) for i, h in enumerate(hits))
            mask |= 1 << (13 if at == 0 else 14)
    fixed = [fmt.exp_mask | fmt.quiet, fmt.sign | fmt.exp_mask | fmt.quiet, 0xFFFF]
    return mask | sum(int(got == f) << (10 + i) for i, f in enumerate(fixed))


@pytest.mark.parametrize(
    ("name", "span"),
    [
        ("maximum_f16", Span((0x7BF0, 0x7E10), (0xFDF0, 0xFE10))),
        ("add_bf16", Span((0x7F70, 0x7FD0), (0xFF70, 0xFFD0))),
    ],
)
def test_nan_form_masks_are_counted_lane_by_lane(name: str, span: Span) -> None:
    """A kernel whose NaNs are each lane's own choice (kept, canonical, the other operand's,
    sign flipped, by position): the tally's form masks are the masks written out here."""
    real = ft.registry().kernel(name)

    def mixed(lhs: np.ndarray, rhs: np.ndarray, *, out: np.ndarray) -> None:
        real(lhs, rhs, out=out)
        u, b = out.view(np.uint16), rhs.view(np.uint16)
        nan = (u & 0x7FFF) > 0x7F80 if "bf16" in name else (u & 0x7FFF) > 0x7C00
        pick = np.arange(u.size) % 4
        quiet = 0x7FC0 if "bf16" in name else 0x7E00
        u[nan & (pick == 1)] = quiet
        u[nan & (pick == 2)] = b[nan & (pick == 2)]
        u[nan & (pick == 3)] ^= 0x8000

    job = _job(name, span, mixed)
    fmt = FMTS[job.dtype.name]
    a, b = _span_pairs(span)
    got = job.run(a, b)
    exact, _ = _references(name.rsplit("_", 1)[0], job.dtype.name, a, b)
    nan = lambda v: (v & 0x7FFF) > fmt.exp_mask  # noqa: E731
    lanes = nan(exact) & nan(got)
    want = Counter(
        _forms_by_hand(g, x, y, fmt)
        for g, x, y in zip(got[lanes].tolist(), a[lanes].tolist(), b[lanes].tolist(), strict=True)
    )
    s = sweep(job, threads=2).stats
    from fueltensor.tools.certify.tally import nan_forms

    assert nan_forms(s) == dict(want) and len(want) > 4


def test_the_seeds_formula_remainder_is_certified_against_its_formula_and_mod_exactly() -> None:
    """Both remainders of `%` over one span: the seeds' `rem_bf16` is checked against its
    declared floor formula (which it keeps on every pair, while many pairs are far from the
    exact value), the exact `mod_bf16` against the exact floored remainder on every pair."""
    from fueltensor.tools.certify import certify

    span = ((0x4F00, 0x4F10), (0x3F00, 0x4300))  # about 2^31 against 0.5 to 128: big quotients
    mod, rem = certify("cpu", ["rem_bf16", "mod_bf16"], lhs=span[0], rhs=span[1], threads=2)
    pairs = 16 * 0x400
    assert (rem.data["contract"]["name"], mod.data["contract"]["name"]) == ("rem_bf16", "mod_bf16")
    assert rem.data["formula"]["equal"] == pairs > rem.data["histogram"]["exact"]
    assert "seeds' formula" in rem.data["reference"]["formula"]
    assert mod.data["histogram"]["exact"] == mod.data["formula"]["equal"] == pairs
    assert mod.data["reference"]["formula"] == "x1 % x2 exactly, rounded once"
    assert rem.data["verdict"] == mod.data["verdict"] == []  # no failures: both accepted
