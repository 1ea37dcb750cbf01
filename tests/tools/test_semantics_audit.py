"""The judge's semantic audit: what each declared value allows (against results reasoned out
here, independently), the position sweep, the audit of the bundled contracts, a document that
declares a wrong rule failed with the case, its inputs and the bits, and a document measured on
another machine re-measured rather than trusted."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

import fueltensor as ft
from fueltensor.core.dtypes import BY_FKC
from fueltensor.fkc.schema import MeasuredOn
from fueltensor.fkc.semantics import NanRule, PowRule, RemainderRule, Semantics
from fueltensor.ops import CONTRACTION_BY_KIND, REDUCTION_BY_KIND
from fueltensor.testing import float_format
from fueltensor.tools.judge import declared
from fueltensor.tools.judge import semantics as judge_semantics
from fueltensor.tools.judge.calls import audited_dtypes
from fueltensor.tools.judge.cases import Case, cases, describe
from fueltensor.tools.judge.positions import WIDEST_VECTOR, layouts, sweep
from fueltensor.tools.judge.semantics import allows, audit_semantics, infer, observe, remeasured

F32 = np.dtype(np.float32)
QA, QB = 0x7FC00001, 0xFFD55555  # +qNaN payload 1, -qNaN alternating payload
SA = 0x7F800001  # +sNaN payload 1
ONE_AND_HALF = 0x3FC00000


def case(op_kind: str, lhs: int, rhs: int, aspect: str = "nan", rule: str = "") -> Case:
    return Case(aspect, rule, op_kind, F32, lhs, rhs, "test case")


def test_nan_rules_allow_exactly_the_declared_forms() -> None:
    pair = case("AddElementwise", QA, QB)
    rule = Semantics(("formula",), nan=NanRule("lhs", ("quieted",), "kept"))
    assert allows(rule, pair, QA) and not allows(rule, pair, QB)
    either = replace(rule, nan=NanRule("either", ("quieted",), "kept"))
    assert allows(either, pair, QA) and allows(either, pair, QB)
    signaling = case("AddElementwise", SA, ONE_AND_HALF)
    assert allows(rule, signaling, SA | 0x00400000) and not allows(rule, signaling, SA)
    kept = replace(rule, nan=NanRule("lhs", ("kept",), "kept"))
    assert allows(kept, signaling, SA) and not allows(kept, signaling, SA | 0x00400000)
    canonical = replace(rule, nan=NanRule("rhs", ("canonical",), "kept"))
    assert allows(canonical, pair, 0xFFC00000) and not allows(canonical, pair, 0x7FC00000)
    unsigned = replace(canonical, nan=NanRule("rhs", ("canonical",), "any"))
    assert allows(unsigned, pair, 0x7FC00000)
    fixed = replace(rule, nan=NanRule("either", ("positive_canonical", "all_ones"), "any"))
    assert allows(fixed, pair, 0xFFFFFFFF) and allows(fixed, pair, 0x7FC00000)
    assert not allows(fixed, pair, QA)
    assert not allows(rule, pair, 0x3F800000)  # a number where a NaN must come out


def test_invalid_zero_tie_and_undeclared_aspects() -> None:
    sem = Semantics(("formula",), nan=NanRule("lhs", ("kept",), "kept", ("negative_canonical",)))
    invalid = case("AddElementwise", 0x7F800000, 0xFF800000, "invalid")
    assert allows(sem, invalid, 0xFFC00000) and not allows(sem, invalid, 0x7FC00000)
    assert allows(replace(sem, nan=NanRule("lhs", ("kept",), "kept")), invalid, 0) is None
    tie = case("MinimumElementwise", 0x00000000, 0x80000000, "zero_tie")
    assert allows(sem, tie, 0) is None  # zero_tie not declared
    expect = {"lhs": {0}, "rhs": {0x80000000}, "either": {0, 0x80000000}, "ordered": {0x80000000}}
    for value, results in expect.items():
        assert {
            p for p in (0, 0x80000000) if allows(replace(sem, zero_tie=value), tie, p)
        } == results
    top = case("MaximumElementwise", 0x80000000, 0x00000000, "zero_tie")
    assert allows(replace(sem, zero_tie="ordered"), top, 0)


def _f32(x: float) -> int:
    return int(np.array([x], np.float32).view(np.uint32)[0])


def test_remainder_and_pow_rules_against_the_reasoned_results() -> None:
    fmod = Semantics(
        ("formula",), remainder=RemainderRule("fmod", "dividend", "dividend_or_divisor")
    )
    floor = Semantics(("formula",), remainder=RemainderRule("floor_formula", "positive", "nan"))
    zero = case("RemElementwise", _f32(-4.0), _f32(2.0), "remainder", "zero_sign")
    assert allows(fmod, zero, 0x80000000) and allows(floor, zero, 0)
    assert not allows(fmod, zero, 0) and not allows(floor, zero, 0x80000000)
    divisor = replace(fmod, remainder=RemainderRule("fmod", "divisor", "nan"))
    assert allows(divisor, zero, 0)
    inf = case("RemElementwise", _f32(-5.0), _f32(math.inf), "remainder", "infinite_divisor")
    assert allows(fmod, inf, _f32(math.inf)) and not allows(fmod, inf, _f32(-5.0))
    assert allows(floor, inf, 0x7FC00000) and not allows(floor, inf, _f32(math.inf))
    large = case("RemElementwise", _f32(1e10), _f32(3.0), "remainder", "definition")
    assert allows(fmod, large, _f32(1.0))  # 1e10 rounded to f32 is 10000000000, 1 mod 3
    assert not allows(floor, large, _f32(1.0))
    c99 = Semantics(("formula",), pow=PowRule("one", "one", "one", "ieee", "nan"))
    assert allows(c99, case("PowElementwise", QA, 0, "pow", "nan_zero"), _f32(1.0))
    odd = case("PowElementwise", 0x80000000, _f32(-1.0), "pow", "zero_negative")
    even = case("PowElementwise", 0x80000000, _f32(-2.0), "pow", "zero_negative")
    assert allows(c99, odd, _f32(-math.inf)) and allows(c99, even, _f32(math.inf))
    assert not allows(c99, odd, _f32(math.inf))


def test_every_case_names_its_operands_and_results_in_the_dtype() -> None:
    for op_kind in ("AddElementwise", "RemElementwise", "PowElementwise", "MinimumElementwise"):
        for fkc in ("F32", "F64", "BF16", "F16"):
            dtype = BY_FKC[fkc].np
            found = cases(op_kind, dtype)
            assert found and all(c.dtype == dtype for c in found)
            f = float_format(dtype)
            for c in found:
                assert c.label.startswith(op_kind[:3].lower()) or "(" in c.label
                assert describe(c, c.lhs) in ("lhs", c.label.split("(")[1].split(",")[0])
            assert {c.aspect for c in found} >= {"nan", "subnormals"}
            nan = next(c for c in found if c.aspect == "nan")
            assert describe(nan, nan.lhs | f.quiet_bit) in ("lhs", "lhs quieted")


def test_the_sweep_covers_every_length_and_offset_and_finds_a_tail_that_differs() -> None:
    for itemsize in (2, 4, 8):
        lanes = WIDEST_VECTOR // itemsize
        full = layouts(itemsize, "full")
        assert len(full) == 4 * lanes * lanes
        assert {n for n, _ in full} == set(range(1, 4 * lanes + 1))
        assert {b for _, b in full} == set(range(0, 64, itemsize))
        assert set(layouts(itemsize, "brief")) <= set(layouts(itemsize, "quick")) <= set(full)
    with pytest.raises(ValueError, match="depth"):
        layouts(4, "deep")

    def tail_flips_zeros(operands: tuple[np.ndarray, ...]) -> np.ndarray:
        out = np.minimum(*operands)
        body = out.size - out.size % 16
        out[body:] = np.where(out[body:] == 0, np.float32(0.0), out[body:])  # +0 in the tail
        return out

    probes = [(0x00000000, 0x80000000), (_f32(1.0), _f32(2.0))]
    found = sweep(tail_flips_zeros, F32, probes, "quick")
    assert found.varies(0) and not found.varies(1)
    assert set(found.results(0)) == {0x80000000, 0}
    assert found.seen[0][0].length % 16 != 0  # the +0 came from a tail


@pytest.mark.parametrize("provider", ["fuel-cpu-backend", "fuel-reference-backend"])
def test_the_bundled_contracts_pass_their_declared_semantics(provider: str) -> None:
    reg = ft.registry()
    for c in reg:
        # a reduction's semantics are audited by judge.reductions (test_judge_reductions.py), a
        # contraction's by judge.contractions (test_judge_contractions.py)
        shaped = c.op_kind in REDUCTION_BY_KIND or c.op_kind in CONTRACTION_BY_KIND
        if c.registrable and c.provider.name == provider and not shaped:
            for fkc in audited_dtypes(c):  # a where's at x1's dtypes, not its condition's
                found = audit_semantics(c, reg.kernel(c.name), BY_FKC[fkc].np, True)
                assert found == ([], []), (c.name, fkc)


def test_the_measured_semantics_of_the_cpu_kernels_are_at_least_what_they_declare() -> None:
    reg = ft.registry()
    for name in ("maximum_f32", "minimum_bf16", "rem_f64"):
        c = reg[name]
        measured = infer(observe(c, reg.kernel(name), BY_FKC[c.inputs[0].dtypes[0]].np, "brief"))
        assert c.semantics is not None
        for aspect in ("zero_tie", "remainder", "pow", "subnormals"):
            if getattr(c.semantics, aspect) is not None:
                assert getattr(measured, aspect) == getattr(c.semantics, aspect), (name, aspect)


WRONG_TIE = "  nan: {operand: lhs, result: [kept], sign: kept}\n  zero_tie: rhs\n"


def _redeclared(write: Callable[..., Path], kernel: str, old: str, new: str) -> ft.Registry:
    """The bundled CPU document with one contract's semantics line changed."""
    path = ft.registry()[kernel].source.path
    text = Path(path).read_text(encoding="utf-8")
    start = text.index(f"kernel: {kernel}\n")
    at = text.index(old, start)
    doc = write(text[:at] + new + text[at + len(old) :], "fuel-cpu-backend.md")
    return ft.Registry.from_paths([doc])


def test_a_document_declaring_the_wrong_zero_tie_is_failed_with_case_inputs_and_bits(
    write: Callable[..., Path],
) -> None:
    reg = _redeclared(write, "maximum_f32", "  zero_tie: lhs\n", "  zero_tie: rhs\n")
    report = ft.judge(reg, ["maximum_f32"], quick=True)
    assert not report.ok
    ties = [f for _, f in report.failures if "zero_tie" in f]
    assert len(ties) == 2  # maximum(+0, -0) and maximum(-0, +0)
    why = next(f for f in ties if "(+0, -0)" in f)
    assert "zero_tie rhs, but maximum(+0, -0) (0x00000000, 0x80000000) gave +0 (0x00000000)" in why
    assert re.search(r"at length \d+, byte offset \d+, element \d+$", why)


@pytest.mark.parametrize(
    ("kernel", "old", "new", "says"),
    [
        ("minimum_f64", "result: [kept]", "result: [quieted]", "minimum(sNaN·a, 1.5)"),
        ("rem_f32", "zero_sign: positive", "zero_sign: dividend", "mod(-0, 2)"),
        ("rem_f32", "infinite_divisor: nan", "infinite_divisor: dividend_or_divisor", "inf)"),
        ("add_bf16", "subnormals: kept", "subnormals: flushed", "add(subnormal, +0)"),
        ("pow_f32", "one_nan: one", "one_nan: nan", "pow(1, NaN·a)"),
        ("pow_f64", "sign: any", "sign: kept", "pow(-NaN·b, 3)"),
    ],
)
def test_a_document_declaring_another_wrong_rule_is_failed(
    write: Callable[..., Path], kernel: str, old: str, new: str, says: str
) -> None:
    reg = _redeclared(write, kernel, old, new)
    report = ft.judge(reg, [kernel], quick=True)
    assert any(says in why and "gave" in why for _, why in report.failures), report.failures


def test_a_declared_aspect_with_nothing_to_check_is_a_finding(write: Callable[..., Path]) -> None:
    reg = _redeclared(
        write, "add_f32", "  subnormals: kept\n", "  subnormals: kept\n  zero_tie: lhs\n"
    )
    report = ft.judge(reg, ["add_f32"], quick=True)
    assert any(
        "zero_tie is declared, but AddElementwise has no case" in w for _, w in report.failures
    )


def test_a_document_measured_elsewhere_is_re_measured_not_trusted(
    write: Callable[..., Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    reg = _redeclared(write, "maximum_f32", "  zero_tie: lhs\n", "  zero_tie: rhs\n")
    contract = reg["maximum_f32"]
    there = MeasuredOn("fuel 1.0", "AVX2")
    moved = replace(contract, provider=replace(contract.provider, measured_on=there))
    monkeypatch.setattr(judge_semantics, "_environment", lambda name: there)
    found, kept_notes = audit_semantics(moved, reg.kernel("maximum_f32"), F32, True)
    assert found and kept_notes == []  # measured where it runs: the failures stand
    failures = [*found, "precision: 3 ULP from the reference", "conformance: returned float64"]
    monkeypatch.setattr(judge_semantics, "_environment", lambda name: MeasuredOn("fuel 1.0", "V4"))
    kept, notes = remeasured(moved, failures)
    assert kept == ["conformance: returned float64"]  # not a measured fact: still a failure
    head = "re-measured on fuel 1.0, V4 (the document was measured on fuel 1.0, AVX2): "
    assert len(notes) == len(failures) - 1 and all(n.startswith(head) for n in notes)
    assert any("maximum(+0, -0)" in n for n in notes)
    assert remeasured(moved, [])[1] == [head + "every measured fact holds here"]
    monkeypatch.setattr(judge_semantics, "_environment", lambda name: there)
    assert remeasured(moved, failures) == (failures, [])
    assert remeasured(contract, failures) == (failures, [])  # nothing measured: trusted


def _tail_flips_zero_sign(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> None:
    """lhs on a ±0 tie (as the seeds), except in the last len % 16 elements (a "scalar tail"
    that returns rhs), and except where the operands start off a 64-byte boundary."""
    np.copyto(out, np.where((a == b) & (a == 0), a, np.minimum(a, b)))
    off = a.ctypes.data % 64 != 0
    tail = out.size - out.size % 16 if not off else 0
    out[tail:] = np.where(a[tail:] == b[tail:], b[tail:], out[tail:])


@pytest.mark.parametrize("quick", [True, False])
def test_a_position_dependent_kernel_declared_invariant_is_failed(
    contract_text: Callable[..., str], write: Callable[..., Path], quick: bool
) -> None:
    ft.register_provider("test-provider", {"tests::tail_min": _tail_flips_zero_sign})
    text = contract_text(kernel="tail_min", op_kind="MinimumElementwise")
    text = text.replace("      rank: 2\n", "      rank: any\n").replace(
        "determinism: same_hardware_bitwise\n",
        "determinism: same_hardware_bitwise\nsemantics:\n  source: measurement\n"
        "  zero_tie: either\n  position: invariant\n",
    )
    report = ft.judge(ft.Registry.from_paths([write(text)]), quick=quick)
    found = [w for _, w in report.failures if "position" in w]
    assert len(found) == 2  # minimum(+0, -0) and minimum(-0, +0)
    why = next(w for w in found if "(+0, -0)" in w)
    assert "position declared invariant, but minimum(+0, -0) (0x00000000, 0x80000000) gave" in why
    assert "+0 (0x00000000)" in why and "-0 (0x80000000)" in why
    relaxed = text.replace("position: invariant", "position: dependent")
    assert ft.judge(ft.Registry.from_paths([write(relaxed, "relaxed.md")]), quick=quick).ok


def test_the_sweep_moves_the_operands_off_alignment() -> None:
    seen: set[int] = set()

    def record(operands: tuple[np.ndarray, ...]) -> np.ndarray:
        seen.update(x.ctypes.data % WIDEST_VECTOR for x in operands)
        return operands[0].copy()

    sweep(record, np.dtype(np.float16), [(0, 0)], "brief")
    assert seen == set(range(0, WIDEST_VECTOR, 2))


def test_precision_follows_the_declared_remainder_and_subnormals() -> None:
    reg = ft.registry()
    rem = reg["rem_f32"]
    assert declared.reference_for(rem) is declared.REFERENCES["RemElementwise"]
    fmod = replace(rem, semantics=Semantics(("formula",), remainder=RemainderRule("fmod")))
    ref = declared.reference_for(fmod)
    assert ref is not None
    a, b = np.float32([1e10, -4.0, 5.0]), np.float32([3.0, 2.0, np.inf])
    assert ref.fn(a, b).tolist() == [1.0, 0.0, 5.0]  # 1e10 in f32 is 10000000000: 1 mod 3
    flushed = replace(rem, semantics=Semantics(("formula",), subnormals="flushed"))
    ref = declared.reference_for(flushed)
    assert ref is not None and "flushed" in ref.describe
    tiny = np.array([1, 0x80000001, 0x00800000], np.uint32).view(np.float32)
    got = ref.fn(tiny, np.ones(3, np.float32)).view(np.uint32)
    assert got.tolist() == [0, 0, 0x00800000]  # -0 % 1 by the floor formula is +0
    mul = reg["mul_f32"]
    ref = declared.reference_for(
        replace(mul, semantics=Semantics(("measurement",), subnormals="flushed"))
    )
    assert ref is not None
    below = np.array([0x00800000, 0x80800000, 0x00800000], np.uint32).view(np.float32)
    factor = np.array([0x3F7FFFFF, 0x3F7FFFFF, 0x3F800000], np.uint32).view(np.float32)
    # min normal * (1 - 2**-24) rounds up to min normal, but is tiny before rounding: flushed
    assert ref.fn(below, factor).view(np.uint32).tolist() == [0, 0x80000000, 0x00800000]


def test_a_selection_reference_follows_the_declared_tie_and_nan_rule() -> None:
    reg = ft.registry()
    minimum = reg["minimum_f32"]
    assert declared.reference_for(minimum) is not None
    own = declared.reference_for(minimum)
    assert own is not None and own.nan_bits  # the seeds' rule: the lhs NaN, unchanged
    a = np.array([0.0, -0.0, 1.0], F32)
    b = np.array([-0.0, 0.0, 2.0], F32)
    sem = minimum.semantics
    assert sem is not None
    for tie, want in (("rhs", [-0.0, 0.0, 1.0]), ("ordered", [-0.0, -0.0, 1.0])):
        other = replace(minimum, semantics=replace(sem, zero_tie=tie))
        ref = declared.reference_for(other)
        assert ref is not None and ref.nan_bits
        got = ref.fn(a, b)
        assert np.array_equal(np.signbit(got), np.signbit(np.array(want, F32))), tie
    canonical = replace(sem, nan=NanRule("either", ("positive_canonical",), "any"))
    ref = declared.reference_for(replace(minimum, semantics=canonical))
    assert ref is not None and not ref.nan_bits  # its NaN bits are the semantic audit's
