"""Typed call-time parameters (`accept.params`): declared, validated at file:line, checked."""

from __future__ import annotations

import pickle
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from fueltensor import ContractError
from fueltensor.fkc import load_document
from fueltensor.fkc.parse import renest
from fueltensor.fkc.schema import CONTRACT_SHAPE, PARAM_TYPES, ParamSpec

OP_PARAMS = "  op_params: {variant: None}"
EXPONENT = "  params:\n    - name: k\n      type: i32\n" + OP_PARAMS


def _load(write: Callable[..., Path], text: str) -> tuple[Path, object]:
    path = write(text)
    _, contracts = load_document(path)
    return path, contracts[0]


def test_a_declared_parameter_is_on_the_contract(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    text = contract_text().replace(OP_PARAMS, EXPONENT, 1)
    _, contract = _load(write, text)
    assert contract.params == (ParamSpec("k", "i32"),)  # type: ignore[attr-defined]
    assert contract.to_dict()["accept"]["params"] == [{"name": "k", "type": "i32"}]  # type: ignore[attr-defined]
    assert pickle.loads(pickle.dumps(contract)).to_dict() == contract.to_dict()  # type: ignore[attr-defined]
    assert "param k" in str(contract) and "i32" in str(contract)


def test_a_document_without_parameters_keeps_its_facts(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    _, contract = _load(write, contract_text())
    assert contract.params == ()  # type: ignore[attr-defined]
    assert "params" not in contract.to_dict()["accept"]  # type: ignore[attr-defined]


def test_parameters_change_the_revision_hash(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    _, plain = _load(write, contract_text())
    _, typed = _load(write, contract_text().replace(OP_PARAMS, EXPONENT, 1))
    assert plain.kernel_revision_hash != typed.kernel_revision_hash  # type: ignore[attr-defined]


def test_the_flattened_form_renests_parameters(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    text = contract_text().replace(OP_PARAMS, EXPONENT, 1)
    start = text.index("```fkc\n") + len("```fkc\n")
    end = text.index("```", start)
    block = text[start:end].splitlines()
    flat = [line.lstrip() for line in block]
    assert renest(flat, CONTRACT_SHAPE) == block
    _, nested = _load(write, text)
    _, flattened = _load(write, text[:start] + "\n".join(flat) + "\n" + text[end:])
    assert flattened.to_dict() == nested.to_dict()  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("params", "field", "message", "anchor"),
    [
        ("    - name: k\n      type: f32\n", "accept.params[0].type", "accepted: i8", "type: f32"),
        (
            "    - name: k\n      type: 32\n",
            "accept.params[0].type",
            "non-empty string",
            "type: 32",
        ),
        ("    - name: 2k\n      type: i32\n", "accept.params[0].name", "identifier", "name: 2k"),
        (
            "    - name: a\n      type: i32\n",
            "accept.params[0].name",
            "already names",
            "a\n      type: i32",
        ),
        (
            "    - name: k\n      type: i32\n    - name: k\n      type: i64\n",
            "accept.params[1].name",
            "already names",
            "name: k\n      type: i64",
        ),
        ("    - name: k\n", "accept.params[0].type", "missing", "- name: k"),
        (
            "    - name: k\n      type: i32\n      range: 3\n",
            "accept.params[0].range",
            "unknown key",
            "range: 3",
        ),
    ],
    ids=[
        "unknown-type",
        "type-not-a-string",
        "bad-name",
        "clash-with-input",
        "twice",
        "no-type",
        "unknown-key",
    ],
)
def test_malformed_parameters_name_file_line_and_field(
    contract_text: Callable[..., str],
    write: Callable[..., Path],
    params: str,
    field: str,
    message: str,
    anchor: str,
) -> None:
    text = contract_text().replace(OP_PARAMS, "  params:\n" + params + OP_PARAMS, 1)
    path = write(text)
    with pytest.raises(ContractError) as info:
        load_document(path)
    line = text[: text.index(anchor)].count("\n") + 1
    assert (info.value.field, info.value.line) == (field, line)
    assert str(info.value).startswith(f"{path}:{line}: {field}: ")
    assert message in str(info.value)


@pytest.mark.parametrize("kind", sorted(PARAM_TYPES))
def test_refusal_follows_the_declared_range(kind: str) -> None:
    low, high = PARAM_TYPES[kind]
    spec = ParamSpec("k", kind)
    bits = int(kind[1:])
    assert (low, high) == (
        (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1) if kind[0] == "i" else (0, 2**bits - 1)
    )
    for ok in (low, high, 0, np.int64(0), np.uint8(1)):
        assert spec.refusal(ok) is None
    for outside in (low - 1, high + 1):
        assert f"outside {kind}" in (spec.refusal(outside) or "")
    for wrong in (1.0, True, "1", None, np.float32(2)):
        assert "takes an integer" in (spec.refusal(wrong) or "")
