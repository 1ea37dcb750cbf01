"""Reading FKC documents: both forms (indented, flattened), the seeds, prose, encodings."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import pytest
from _extras import ROOT, TESTS
from conftest import PROVEN_EXACT, SEED_CPU, SEED_REFERENCE, as_seeded

from fueltensor import ContractError
from fueltensor.fkc import PROSE_KEYS, KernelContract, load_document
from fueltensor.fkc.schema import AUTO_HASH

BUNDLED = ROOT / "contracts"
PAIRS = [(SEED_CPU, "fuel-cpu-backend.md"), (SEED_REFERENCE, "fuel-reference-backend.md")]


def flatten(text: str) -> str:
    """Strip all leading whitespace, as the seeds were."""
    return "\n".join(line.lstrip() for line in text.split("\n"))


def facts(contracts: tuple[KernelContract, ...]) -> dict[str, dict[str, object]]:
    return {c.name: c.to_dict() for c in contracts}


@pytest.mark.parametrize(("seed", "bundled"), PAIRS)
def test_seed_and_bundled_documents_declare_the_same_facts(
    seeds: Path, seed: str, bundled: str
) -> None:
    seed_provider, seed_contracts = load_document(seeds / seed)
    own_provider, own_contracts = load_document(BUNDLED / bundled)
    assert seed_provider.to_dict() == own_provider.to_dict()
    assert [c.name for c in seed_contracts] == [c.name for c in own_contracts]
    for theirs, ours in zip(seed_contracts, own_contracts, strict=True):
        # The project's documents add a `semantics` section, derived from the seeds' formulas
        # (the seeds say it in prose), and the remainders' `dispatch`: every other fact, and
        # the revision hash, is the seed's but for PROVEN_EXACT's bound.
        facts = ours.to_dict()
        assert (ours.semantics is not None) == ours.registrable, ours.name
        assert facts.pop("semantics", None) == (ours.semantics and ours.semantics.to_dict())
        # Issue 44: the seeds' formula remainders join only where named (`%` is the exact
        # remainder's); unhashed, as it says where the kernel runs, not what it computes.
        remainder = ours.op_kind == "RemElementwise"
        assert facts.pop("dispatch", "default") == ("when_named" if remainder else "default")
        assert theirs.semantics is None
        assert as_seeded(theirs.to_dict()) == as_seeded(facts), theirs.name
        # Issue 41: the half + - * / declare the max_ulp 0 their certificates prove; hashed.
        exact = theirs.name in PROVEN_EXACT
        assert (theirs.kernel_revision_hash == ours.kernel_revision_hash) != exact, ours.name
        if exact:
            assert (theirs.precision.max_ulp, ours.precision.max_ulp) == (None, 0), ours.name
        if ours.semantics is not None:
            assert ours.semantics.source == ("formula",), ours.name


def test_seed_values_arrive_nested_and_typed(seeds: Path) -> None:
    _, contracts = load_document(seeds / SEED_CPU)
    assert len(contracts) == 33
    umbrella, add_f32 = contracts[0], contracts[1]
    assert (umbrella.name, umbrella.registrable) == ("binary", False)
    assert add_f32.registrable is True
    assert [s.name for s in add_f32.inputs] == ["lhs", "rhs"]
    assert add_f32.input("rhs").dtypes == ("F32",)
    assert add_f32.input("lhs").rank is None
    assert str(add_f32.input("lhs").shape_constraint) == "same_as=rhs"
    assert add_f32.op_params == {"variant": "None"}
    assert str(add_f32.outputs[0].shape_rule) == "same_as(lhs)"
    assert add_f32.caps.fast_paths[0] == {
        "when": "all_inputs_contiguous",
        "class": "cheap_elementwise",
    }
    assert add_f32.cost.bytes_moved.evaluate({"n": 5}) == 60
    assert add_f32.cost.overhead_ns is None
    assert add_f32.precision.max_ulp == 0
    assert add_f32.precision.max_relative is None
    as_dict = add_f32.to_dict()
    assert as_dict["accept"]["inputs"][0]["rank"] == "any"
    assert as_dict["cost"]["memory"] == {"device_bytes": 0, "host_bytes": "n * 4", "disk_bytes": 0}
    assert as_dict["cost"]["class"] == "cheap_elementwise"
    assert not set(PROSE_KEYS) & set(as_dict)


def test_reference_seed_declares_broadcasting(seeds: Path) -> None:
    provider, contracts = load_document(seeds / SEED_REFERENCE)
    assert provider.name == "fuel-reference-backend"
    assert [c.name for c in contracts] == [f"broadcast_{op}" for op in ("add", "sub", "mul", "div")]
    add = contracts[0]
    assert str(add.input("a").shape_constraint) == "broadcast_to=b"
    assert str(add.outputs[0].shape_rule) == "broadcast(a, b)"
    assert (
        add.cost.bytes_moved.evaluate({"n": 6, "dtype_bytes": 4, "a_count": 3, "b_count": 2}) == 44
    )


def test_line_numbers_point_into_the_original_flattened_file(seeds: Path) -> None:
    path = seeds / SEED_CPU
    lines = path.read_text(encoding="utf-8").split("\n")
    _, contracts = load_document(path)
    for c in contracts:
        for key in ("kernel", "entry_point", "accept", "determinism"):
            assert lines[c.source.lines[key] - 1].startswith(f"{key}:"), (c.name, key)
        assert c.source.path == str(path)


def test_flattened_and_indented_forms_load_alike(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    text = contract_text()
    indented = load_document(write(text, "indented.md"))
    flat_text = flatten(text)
    assert flat_text != text
    flattened = load_document(write(flat_text, "flat.md"))
    assert facts(indented[1]) == facts(flattened[1])
    assert indented[0].to_dict() == flattened[0].to_dict()
    assert indented[1][0].source.lines == flattened[1][0].source.lines


def test_block_mappings_in_a_flattened_document_are_renested(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    flow = '  memory: {device_bytes: 0, host_bytes: "n * dtype_bytes", disk_bytes: 0}\n'
    block = '  memory:\n    device_bytes: 0\n    host_bytes: "n * dtype_bytes"\n    disk_bytes: 0\n'
    text = contract_text()
    assert flow in text
    expected = facts(load_document(write(text, "a.md"))[1])
    renested = load_document(write(flatten(text.replace(flow, block)), "b.md"))[1]
    assert facts(renested) == expected


@pytest.mark.parametrize(
    "encode",
    [
        lambda t: t.encode("utf-8"),
        lambda t: b"\xef\xbb\xbf" + t.encode("utf-8"),
        lambda t: t.replace("\n", "\r\n").encode("utf-8"),
        lambda t: b"\xef\xbb\xbf" + flatten(t).replace("\n", "\r\n").encode("utf-8"),
    ],
    ids=["utf8", "bom", "crlf", "bom-crlf-flattened"],
)
def test_bom_and_crlf_variants(
    contract_text: Callable[..., str], write: Callable[..., Path], encode: Callable[[str], bytes]
) -> None:
    text = contract_text()
    plain = load_document(write(text, "plain.md"))[1][0]
    variant = load_document(write(encode(text), "variant.md"))[1][0]
    assert variant.to_dict() == plain.to_dict()
    assert variant.source.lines == plain.source.lines
    assert variant.description == plain.description


def test_non_utf8_file_names_file_and_line(write: Callable[..., Path]) -> None:
    path = write(b"---\nfkc_version: 1\nprovider: caf\xe9\n---\n", "latin1.md")
    with pytest.raises(ContractError) as info:
        load_document(path)
    assert (info.value.path, info.value.line) == (str(path), 3)
    assert "UTF-8" in str(info.value)


def test_section_prose_becomes_the_description(seeds: Path) -> None:
    seed_add = {c.name: c for c in load_document(seeds / SEED_CPU)[1]}["add_f32"]
    own_add = {c.name: c for c in load_document(BUNDLED / "fuel-cpu-backend.md")[1]}["add_f32"]
    assert "lhs[i] + lhs[i]" in seed_add.description  # the seed's typo, kept as prose
    assert "lhs[i] + rhs[i]" in own_add.description
    assert "lhs[i] + lhs[i]" not in own_add.description
    assert "```" not in own_add.description and "kernel:" not in own_add.description


def test_prose_is_not_a_fact(contract_text: Callable[..., str], write: Callable[..., Path]) -> None:
    text = contract_text()
    reworded = text.replace('blurb: "test kernel"', 'blurb: "other words"').replace(
        "Doubles nothing in particular", "Says something else"
    )
    a = load_document(write(text, "a.md"))[1][0]
    b = load_document(write(reworded, "b.md"))[1][0]
    assert (a.blurb, b.blurb) == ("test kernel", "other words")
    assert a.description != b.description
    assert a.to_dict() == b.to_dict()


def test_auto_revision_hash_follows_facts_and_revision_base(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    text = contract_text()
    base = load_document(write(text, "a.md"))[1][0].kernel_revision_hash
    assert re.fullmatch(r"[0-9a-f]{16}", base)
    assert base != AUTO_HASH
    other_build = text.replace('revision_base: "test:1"', 'revision_base: "test:2"')
    other_fact = text.replace("alignment_bytes: 64", "alignment_bytes: 32")
    assert load_document(write(other_build, "b.md"))[1][0].kernel_revision_hash != base
    assert load_document(write(other_fact, "c.md"))[1][0].kernel_revision_hash != base
    explicit = text.replace("kernel_revision_hash: auto", 'kernel_revision_hash: "abc123"')
    assert load_document(write(explicit, "d.md"))[1][0].kernel_revision_hash == "abc123"


def test_optional_keys_take_their_defaults(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    lines = [
        line
        for line in contract_text().split("\n")
        if not line.lstrip().startswith(
            ("blurb:", "kernel_revision_hash:", "overhead_ns:", "max_ulp:", "notes:", "fast_paths:")
        )
        and "when:" not in line
    ]
    c = load_document(write("\n".join(lines)))[1][0]
    assert (c.blurb, c.registrable, c.cost.overhead_ns, c.precision.max_ulp) == (
        "",
        True,
        None,
        None,
    )
    assert c.caps.fast_paths == ()
    assert c.precision.notes == ""
    assert len(c.kernel_revision_hash) == 16


def test_seed_copies_match_shared() -> None:
    """tests/seeds holds the seeds as received; where shared/ sits beside the checkout, compare."""
    shared = ROOT.parent / "shared" / "seeds"
    if not shared.is_dir():
        pytest.skip(f"no shared seeds at {shared} to compare the copies with")
    copies = TESTS / "seeds"
    names = sorted(p.name for p in shared.glob("*.txt"))
    assert names == sorted(p.name for p in copies.glob("*.txt"))
    for name in names:
        assert (copies / name).read_bytes() == (shared / name).read_bytes(), name
