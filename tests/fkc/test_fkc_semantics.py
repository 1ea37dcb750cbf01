"""The typed `semantics` section and the provider's `dispatch` / `measured_on` front matter:
declared, validated at file:line, kept out of the revision hash, cached and pickled."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from pathlib import Path

import pytest

from fueltensor import ContractError
from fueltensor.fkc import load_document
from fueltensor.fkc.parse import renest
from fueltensor.fkc.schema import CONTRACT_SHAPE, MeasuredOn
from fueltensor.fkc.semantics import NanRule, PowRule, RemainderRule, Semantics

DETERMINISM = "determinism: same_hardware_bitwise\n"
SECTION = """semantics:
  source: [documentation, measurement]
  nan: {operand: rhs, result: [quieted, all_ones], sign: any, invalid: negative_canonical}
  zero_tie: ordered
  remainder: {definition: fmod, zero_sign: dividend, infinite_divisor: dividend_or_divisor}
  pow:
    nan_zero: one
    one_nan: nan
    minus_one_inf: one
    zero_negative: ieee
    negative_fractional: nan
  subnormals: flushed
  position: nan_bits
  notes: "measured"
"""
PROVIDER = '  revision_base: "test:1"\n'


def _with(contract_text: Callable[..., str], section: str = SECTION) -> str:
    return contract_text().replace(DETERMINISM, DETERMINISM + section, 1)


def test_a_declared_section_is_typed_on_the_contract(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    _, (contract,) = load_document(write(_with(contract_text)))
    assert contract.semantics == Semantics(
        source=("documentation", "measurement"),
        nan=NanRule("rhs", ("quieted", "all_ones"), "any", ("negative_canonical",)),
        zero_tie="ordered",
        remainder=RemainderRule("fmod", "dividend", "dividend_or_divisor"),
        pow=PowRule("one", "nan", "one", "ieee", "nan"),
        subnormals="flushed",
        position="nan_bits",
        notes="measured",
    )
    facts = contract.to_dict()["semantics"]
    assert facts["nan"]["invalid"] == ["negative_canonical"]  # one value is a list of one
    assert pickle.loads(pickle.dumps(contract)).to_dict() == contract.to_dict()


def test_the_section_is_optional_and_stays_out_of_the_revision_hash(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    _, (plain,) = load_document(write(contract_text(), "plain.md"))
    _, (declared,) = load_document(write(_with(contract_text), "declared.md"))
    assert plain.semantics is None and "semantics" not in plain.to_dict()
    assert plain.kernel_revision_hash == declared.kernel_revision_hash
    assert plain.to_dict() != declared.to_dict()


def test_an_aspect_left_out_is_not_declared(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    section = "semantics:\n  source: formula\n  nan: {operand: lhs, result: kept, sign: kept}\n"
    _, (contract,) = load_document(write(_with(contract_text, section)))
    assert contract.semantics is not None
    assert contract.semantics.declared() == ("nan",)
    assert contract.semantics.nan == NanRule("lhs", ("kept",), "kept", None)
    assert contract.to_dict()["semantics"] == {
        "source": ["formula"],
        "nan": {"operand": "lhs", "result": ["kept"], "sign": "kept"},
    }


def test_the_cache_and_the_flattened_form_give_the_same_section(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    text = _with(contract_text)
    path = write(text)
    _, (parsed,) = load_document(path)
    load_document(path, cached=True)  # writes the entry
    _, (cached,) = load_document(path, cached=True)
    assert cached.semantics == parsed.semantics
    start = text.index("```fkc\n") + len("```fkc\n")
    end = text.index("```", start)
    block = text[start:end].splitlines()
    flat = [line.lstrip() for line in block]
    assert renest(flat, CONTRACT_SHAPE) == block
    flattened = text[:start] + "\n".join(flat) + "\n" + text[end:]
    _, (again,) = load_document(write(flattened, "flat.md"))
    assert again.to_dict() == parsed.to_dict()


BAD = [  # (text replaced, replacement, field, message, the text on the line the error names)
    ("zero_tie: ordered", "zero_tie: lhs_wins", "semantics.zero_tie", "accepted: lhs", "lhs_wins"),
    ("position: nan_bits", "position: [x]", "semantics.position", "non-empty string", "[x]"),
    (
        "subnormals: flushed",
        "subnormals: flushed\n  speed: 1",
        "semantics.speed",
        "unknown",
        "speed",
    ),
    ("[documentation, measurement]", "[guess]", "semantics.source", "formula", "[guess]"),
    ("operand: rhs", "operand: first", "semantics.nan.operand", "lhs, rhs, either", "nan:"),
    ("[quieted, all_ones]", "[quieted, quieted]", "semantics.nan.result", "twice", "nan:"),
    ("[quieted, all_ones]", "[]", "semantics.nan.result", "at least one", "nan:"),
    ("invalid: negative_canonical", "invalid: kept", "semantics.nan.invalid", "positive", "nan:"),
    (
        "{definition: fmod, zero_sign: dividend, infinite_divisor: dividend_or_divisor}",
        "{}",
        "semantics.remainder",
        "at least one of definition",
        "remainder:",
    ),
    (
        "definition: fmod",
        "definition: trunc",
        "semantics.remainder.definition",
        "fmod",
        "remainder:",
    ),
    ("one_nan: nan", "one_nan: 1", "semantics.pow.one_nan", "non-empty string", "one_nan"),
    ("  source: [documentation, measurement]\n", "", "semantics.source", "missing", "semantics:"),
]


@pytest.mark.parametrize(
    ("old", "new", "field", "message", "anchor"), BAD, ids=[f"{b[2]}-{b[3]}" for b in BAD]
)
def test_a_malformed_section_names_file_line_and_field(
    contract_text: Callable[..., str],
    write: Callable[..., Path],
    old: str,
    new: str,
    field: str,
    message: str,
    anchor: str,
) -> None:
    text = _with(contract_text, SECTION.replace(old, new, 1))
    path = write(text)
    with pytest.raises(ContractError) as info:
        load_document(path)
    line = text[: text.index(anchor, text.index("semantics:"))].count("\n") + 1
    assert (info.value.field, info.value.line) == (field, line)
    assert str(info.value).startswith(f"{path}:{line}: {field}: ")
    assert message in str(info.value)


def test_the_provider_front_matter_says_when_it_joins_and_where_it_was_measured(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    extra = PROVIDER + '  dispatch: when_named\n  measured_on: {framework: "x 1.0", isa: AVX2}\n'
    provider, _ = load_document(write(contract_text().replace(PROVIDER, extra, 1)))
    assert provider.when_named
    assert provider.measured_on == MeasuredOn("x 1.0", "AVX2")
    assert provider.to_dict()["provider"]["measured_on"] == {"framework": "x 1.0", "isa": "AVX2"}
    plain, _ = load_document(write(contract_text(), "plain.md"))
    assert not plain.when_named and plain.measured_on is None
    assert "dispatch" not in plain.to_dict()["provider"]


@pytest.mark.parametrize(
    ("extra", "field", "message"),
    [
        ("  dispatch: sometimes\n", "provider.dispatch", "accepted: default, when_named"),
        ("  measured_on: {framework: x}\n", "provider.measured_on.isa", "missing"),
        ("  measured_on: AVX2\n", "provider.measured_on", "expected a mapping"),
    ],
)
def test_a_malformed_front_matter_names_file_line_and_field(
    contract_text: Callable[..., str],
    write: Callable[..., Path],
    extra: str,
    field: str,
    message: str,
) -> None:
    text = contract_text().replace(PROVIDER, PROVIDER + extra, 1)
    path = write(text)
    with pytest.raises(ContractError) as info:
        load_document(path)
    line = text[: text.index(extra.strip())].count("\n") + 1
    assert (info.value.field, info.value.line) == (field, line)
    assert message in str(info.value)
