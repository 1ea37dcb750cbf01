"""Malformed documents: seeded mutations of the bundled contracts, and 10 MB files.

Every mutant either loads to the same facts (`to_dict()` of every contract and the provider),
changes only the contract whose block it touched, or raises `ContractError` naming the file and
a line of it; never another exception, never a change to the bundled registry or the provider
link maps, and always in bounded memory (time belongs in benchmarks: a load is not timed here,
and a document that made the loader hang would hang the suite, which CI notices).
"""

from __future__ import annotations

import importlib
import random
import re
import sys
import tracemalloc
import warnings
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from _mutations import MUST_FAIL, RANDOM, Mutant, Mutation, block_lines

import fueltensor as ft
from fueltensor.core.errors import ContractWarning
from fueltensor.fkc.parse import MAX_EVENTS

registry_module = importlib.import_module("fueltensor.registry")

SEED = 20240607
MUTANTS_PER_DOCUMENT = {
    "fuel-cpu-backend.md": 300,
    "fuel-cpu-backend-powi.md": 150,
    "fuel-cpu-backend-remainder.md": 100,
    "fuel-cpu-backend-unary.md": 150,
    "fuel-cpu-backend-comparison.md": 100,
    "fuel-reference-backend-comparison.md": 60,
    "fuel-cpu-backend-selection.md": 60,
    "fuel-cpu-backend-cast.md": 60,
    "fuel-reference-backend-cast.md": 40,
    "fuel-cpu-backend-fp8.md": 40,
    "fuel-reference-backend-fp8.md": 30,
    "fuel-cpu-backend-reduce.md": 80,
    "fuel-reference-backend-reduce.md": 30,
    "fuel-cpu-backend-argreduce.md": 40,
    "fuel-reference-backend-argreduce.md": 20,
    "fuel-cpu-backend-matmul.md": 60,
    "fuel-reference-backend-matmul.md": 40,
    "fuel-blas-backend-matmul.md": 60,
    "numpy-fp8.md": 30,
    "numpy-cast.md": 40,
    "torch-cast.md": 40,
    "jax-cast.md": 40,
    "fuel-reference-backend-selection.md": 40,
    "fuel-reference-backend-unary.md": 100,
    "fuel-reference-backend.md": 200,
    "numpy.md": 150,
    "torch.md": 150,
    "jax.md": 150,
    "numpy-comparison.md": 40,
    "torch-comparison.md": 40,
    "jax-comparison.md": 40,
    "numpy-selection.md": 100,
    "torch-selection.md": 100,
    "jax-selection.md": 100,
    "numpy-reduce.md": 80,
    "torch-reduce.md": 40,
    "jax-reduce.md": 40,
    "numpy-matmul.md": 40,
    "torch-matmul.md": 40,
    "jax-matmul.md": 40,
}
MB = 2**20

Facts = tuple[list[dict[str, Any]], list[dict[str, Any]]]


def bundled_documents() -> list[Path]:
    return sorted(registry_module.bundled_contracts_dir().glob("*.md"))


def facts(reg: ft.Registry) -> Facts:
    """Everything a registry states, prose aside: each contract's and provider's facts."""
    return [c.to_dict() for c in reg], [p.to_dict() for p in reg.providers]


def load(path: Path) -> Facts | ft.ContractError:
    """Load `path` on its own; the facts or the ContractError."""
    try:
        return facts(ft.Registry.from_paths([path]))
    except ft.ContractError as e:
        return e


def assert_names_file_and_line(error: ft.ContractError, path: Path, data: bytes) -> None:
    """The error points at a line of the file that was loaded, and its message says so."""
    assert error.path == str(path), error
    assert error.line is not None and 1 <= error.line <= data.count(b"\n") + 1, error
    assert str(error).startswith(f"{path}:{error.line}: "), error


@pytest.fixture(scope="module", autouse=True)
def bundled_state_is_untouched() -> Iterator[None]:
    """No load, failed or not, changes the bundled registry or any provider's link map."""
    before = ft.registry()
    snapshot = facts(before)
    links = {name: dict(table) for name, table in registry_module._links.items()}
    yield
    assert ft.registry() is before and facts(before) == snapshot
    assert {name: dict(table) for name, table in registry_module._links.items()} == links


def check_mutant(mutant: Mutant, must_fail: bool, original: bytes, base: Facts, path: Path) -> str:
    """Load one mutant and hold it to the rules; its outcome as a word for the tally."""
    path.write_bytes(mutant.data)
    try:
        with warnings.catch_warnings(record=True) as warned:  # e.g. a misspelled op_kind
            warnings.simplefilter("always", ContractWarning)
            outcome = load(path)
    except Exception as e:  # anything but ContractError is a loader bug: say which mutant
        raise AssertionError(f"{mutant.label}: {type(e).__name__}: {e}") from e
    for w in warned:  # a document that loads with a warning: the warning points at the file
        assert str(w.message).startswith(f"{path}:"), f"{mutant.label}: {w.message}"
    if isinstance(outcome, ft.ContractError):
        assert_names_file_and_line(outcome, path, mutant.data)
        return "refused"
    assert not must_fail, f"{mutant.label}: loaded, but this mutation always breaks a document"
    if outcome == base:
        return "same"
    contracts, providers = outcome
    assert mutant.line != 0, f"{mutant.label}: same text, different facts"
    assert len(contracts) == len(base[0]), f"{mutant.label}: contracts appeared or vanished"
    front_matter_end = original.split(b"\n").index(b"---", 1) + 1
    if mutant.line <= front_matter_end:
        return "changed"  # provider facts feed every contract (its revision hash, its links)
    assert providers == base[1], f"{mutant.label}: provider changed from line {mutant.line}"
    touched = [k for k, (a, b) in enumerate(block_lines(original)) if a <= mutant.line <= b]
    for k, (got, want) in enumerate(zip(contracts, base[0], strict=True)):
        if k not in touched:
            assert got == want, f"{mutant.label}: contract {k} changed from line {mutant.line}"
    return "changed"


@pytest.mark.parametrize("document", bundled_documents(), ids=lambda p: p.name)
def test_seeded_mutations_load_the_same_facts_or_fail_with_file_and_line(
    document: Path, tmp_path: Path
) -> None:
    original = document.read_bytes()
    base = facts(ft.Registry.from_paths([document]))
    rng = random.Random(f"{SEED}:{document.name}")
    path = tmp_path / document.name
    tally: dict[str, int] = {}
    kinds: list[tuple[Mutation, bool]] = [(m, False) for m in RANDOM] + [
        (m, True) for m in MUST_FAIL
    ]
    for _ in range(MUTANTS_PER_DOCUMENT[document.name]):
        mutation, must_fail = rng.choice(kinds)
        word = check_mutant(mutation(original, rng), must_fail, original, base, path)
        tally[word] = tally.get(word, 0) + 1
    # The mix must exercise every outcome, or the mutations are too gentle or too rough.
    assert tally.keys() == {"same", "changed", "refused"}, tally


def _appendix(data: bytes) -> bytes:
    return (
        data
        + b"\n## Appendix\n\n"
        + (b"lorem ipsum dolor sit amet " * 38 + b"\n") * (10 * MB // 1027)
    )


def _one_line(data: bytes) -> bytes:
    return data + b"\n" + b"x" * (10 * MB)


def _huge_string(data: bytes) -> bytes:
    return data.replace(b'notes: "', b'notes: "' + b"y" * (10 * MB), 1)


def _deep_nesting(data: bytes) -> bytes:
    return data.replace(b"op_params: {variant: None}", b"op_params: {v: " + b"[" * (10 * MB), 1)


def _many_keys(data: bytes) -> bytes:
    keys = b", ".join(b"k%d: 1" % i for i in range(10 * MB // 9))
    return data.replace(b"op_params: {variant: None}", b"op_params: {" + keys + b"}", 1)


def _repeated_key(data: bytes) -> bytes:
    return data.replace(b"op_params: {variant: None}", b"op_params: {" + b"a: 1, " * (MB * 2), 1)


def _binary_noise(data: bytes) -> bytes:
    return data + bytes(range(256)) * (10 * MB // 256)


@pytest.mark.parametrize(
    ("build", "loads"),
    [
        (_appendix, True),
        (_one_line, True),
        (_huge_string, None),
        (_deep_nesting, False),
        (_many_keys, False),
        (_repeated_key, False),
        (_binary_noise, False),
    ],
    ids=lambda v: getattr(v, "__name__", str(v)),
)
def test_ten_megabyte_documents_load_or_fail_in_bounded_memory(
    build: Callable[[bytes], bytes], loads: bool | None, tmp_path: Path
) -> None:
    """`loads`: True = same facts as the original, False = refused, None = either."""
    document = registry_module.bundled_contracts_dir() / "fuel-reference-backend.md"
    data = build(document.read_bytes())
    assert len(data) >= 10 * MB
    path = tmp_path / "big.md"
    path.write_bytes(data)
    tracemalloc.start()
    try:
        outcome = load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 12 * len(data), f"peak {peak / MB:.0f} MB for a {len(data) / MB:.0f} MB file"
    if isinstance(outcome, ft.ContractError):
        assert loads is not True, outcome
        assert_names_file_and_line(outcome, path, data)
    else:
        assert loads is not False
        if loads:
            assert outcome == facts(ft.Registry.from_paths([document]))


# -- what each refusal says -------------------------------------------------------------------


def _reference() -> str:
    return (registry_module.bundled_contracts_dir() / "fuel-reference-backend.md").read_text()


def _first_line(text: str, needle: str) -> int:
    return text[: text.index(needle)].count("\n") + 1


@pytest.mark.parametrize(
    ("edit", "needle", "says"),
    [
        (
            lambda t: t.replace("dtypes: [F32", "dtypes: [F33", 1),
            "dtypes: [F33",
            ["'F33' is not accepted", "accepted:", "F32", "BF16"],
        ),
        (
            lambda t: t.replace("alignment_bytes: 64", "alignment_bytes: [64]", 1),
            "alignment_bytes",
            ["caps.alignment_bytes", "expected an integer from 1 to 4096", "a list"],
        ),
        (
            lambda t: t.replace("in_place: false", "in_place: 0", 1),
            "in_place",
            ["caps.in_place", "expected true or false", "int 0"],
        ),
        (
            lambda t: t.replace("rank: any", "rank: -2", 1),
            "rank: -2",
            ["rank", "accepted: any or an integer from 0 to 64"],
        ),
        (
            lambda t: t.replace(
                "layout: {contiguous: required,", "layout: {contiguous: required", 1
            ),
            "layout: {contiguous: required",
            ["invalid YAML", "accepted: YAML mappings"],
        ),
        (
            lambda t: t.replace("contiguous: required", "contiguous: needed", 1),
            "contiguous: needed",
            ["'needed' is not accepted", "accepted: required, rejected, allowed"],
        ),
        (
            lambda t: t.replace("\n  in_place: false", "", 1),
            "\ncaps:",
            ["caps.in_place", "missing required key"],
        ),
        (
            lambda t: t.replace("determinism:", "determinsm:", 1),
            "determinsm",
            ["determinsm", "unknown key; accepted here:", "determinism"],
        ),
        (
            lambda t: t.replace("```fkc", "```kc", 1),
            "```kc",
            ["fenced as '```kc'", "declares a contract", "accepted: ```fkc"],
        ),
        (
            lambda t: t.replace("\n```\n", "\n``\n", 1),
            "```fkc\nkernel: broadcast_sub",
            ["inside the code block opened at line", "accepted: close a code block"],
        ),
        (
            lambda t: t.replace("kernel: broadcast_sub", "kernel: broadcast_add", 1),
            "kernel: broadcast_add\nop_kind: SubElementwise",
            ["duplicate kernel name 'broadcast_add'", "first declared at", "accepted: a name"],
        ),
        (
            lambda t: t.replace("kernel: broadcast_sub", "kernel: broadcast_sub\u0007", 1),
            "broadcast_sub\u0007",
            ["#x0007 is not accepted", "accepted: printable"],
        ),
        (
            lambda t: t[: t.index("precision:", t.index("broadcast_mul"))],
            "```fkc\nkernel: broadcast_mul",
            ["not closed by a ``` line"],
        ),
    ],
    ids=[
        "unknown-dtype",
        "list-for-int",
        "int-for-bool",
        "negative-rank",
        "broken-flow",
        "bad-flag-value",
        "removed-key",
        "misspelt-key",
        "mistyped-open-fence",
        "mistyped-close-fence",
        "duplicate-kernel",
        "control-character",
        "truncated-block",
    ],
)
def test_each_refusal_says_what_was_wrong_and_what_is_accepted_at_its_line(
    edit: Callable[[str], str], needle: str, says: list[str], tmp_path: Path
) -> None:
    text = edit(_reference())
    path = tmp_path / "doc.md"
    path.write_text(text, encoding="utf-8", newline="\n")
    with pytest.raises(ft.ContractError) as info:
        ft.Registry.from_paths([path])
    message = str(info.value)
    assert all(s in message for s in says), message
    assert info.value.line == _first_line(text, needle.lstrip("\n")), message
    assert_names_file_and_line(info.value, path, text.encode())


@pytest.mark.parametrize(
    ("bad", "line_of"),
    [(b"\xff", b"kernel: broadcast_mul"), (b"\xe2\x82", b"precision:")],
)
def test_non_utf8_bytes_are_refused_at_their_line(
    bad: bytes, line_of: bytes, tmp_path: Path
) -> None:
    data = (registry_module.bundled_contracts_dir() / "fuel-reference-backend.md").read_bytes()
    pos = data.index(line_of)
    path = tmp_path / "doc.md"
    path.write_bytes(data[:pos] + bad + data[pos:])
    with pytest.raises(ft.ContractError, match="is not UTF-8; accepted: UTF-8 text") as info:
        ft.Registry.from_paths([path])
    assert info.value.line == data.count(b"\n", 0, pos) + 1


def test_a_document_over_the_yaml_value_limit_is_refused(tmp_path: Path) -> None:
    keys = ", ".join(f"k{i}: 1" for i in range(MAX_EVENTS))
    text = _reference().replace("op_params: {variant: None}", "op_params: {" + keys + "}", 1)
    path = tmp_path / "doc.md"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ft.ContractError, match=f"more than {MAX_EVENTS} YAML values; accepted"):
        ft.Registry.from_paths([path])


# -- no code from documents -------------------------------------------------------------------

FORMULA_VARIABLES = "a_bytes, a_count, b_bytes, b_count, dtype_bytes, n"


@pytest.mark.parametrize(
    ("formula", "says"),
    [
        ("__import__('os').system('true')", "unexpected character"),
        ("os", "unknown variable os"),
        ("n.real", "attribute access"),
        ("abs(n)", "calls are not allowed"),
        ("n[0]", "subscripts"),
        ("lambda: 1", "unexpected character ':'"),
        ("9 ** 9 ** 9", "'**' (power) is not allowed"),
        ("9e999", "too large"),
        ("1e18 * 1e18", "too large"),
        ("(" * 60 + "n" + ")" * 60, "nested deeper than"),
    ],
)
def test_formulas_that_are_code_or_huge_are_refused_at_load(
    formula: str, says: str, contract_text: Callable[..., str], tmp_path: Path
) -> None:
    text = contract_text().replace('flops: "n"', "flops: '" + formula.replace("'", "''") + "'", 1)
    path = tmp_path / "doc.md"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ft.ContractError) as info:
        ft.Registry.from_paths([path])
    message = str(info.value)
    assert info.value.field == "cost.flops" and says in message, message
    assert "; accepted: " in message and message.endswith(FORMULA_VARIABLES), message
    assert info.value.line == _first_line(text, "  flops:")


def _tagged_documents(marker: Path) -> list[str]:
    command = f"touch {marker}"
    return [
        f'blurb: !!python/object/apply:os.system ["{command}"]',
        f"blurb: !!python/object/apply:os.system\n  args: ['{command}']",
        f'blurb: !!python/object/new:subprocess.Popen [["touch", "{marker}"]]',
        "blurb: !!python/name:os.system",
        "blurb: !!python/module:os",
        "blurb: !!python/tuple [1, 2]",
        "blurb: !!binary aGVsbG8=",
        "blurb: !!timestamp 2024-01-01",
        "blurb: 2024-01-01",
        "blurb: !!set {a, b}",
        "blurb: !!omap [a: 1]",
        "blurb: !custom text",
    ]


@pytest.mark.parametrize("case", range(12))
def test_yaml_tags_are_refused_and_never_run(
    case: int, contract_text: Callable[..., str], tmp_path: Path
) -> None:
    marker = tmp_path / "executed"
    line = _tagged_documents(marker)[case]
    text = contract_text().replace('blurb: "test kernel"', line, 1)
    path = tmp_path / "doc.md"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ft.ContractError) as info:
        ft.Registry.from_paths([path])
    assert "is not accepted; accepted: plain strings, numbers" in str(info.value), info.value
    assert info.value.line == _first_line(text, "blurb:")
    assert not marker.exists()


@pytest.mark.parametrize(
    ("value", "says"),
    [("&a x", "anchor &a is not accepted"), ("*a", "alias *a is not accepted")],
)
def test_anchors_and_aliases_are_refused(
    value: str, says: str, contract_text: Callable[..., str], tmp_path: Path
) -> None:
    text = contract_text().replace('blurb: "test kernel"', f"blurb: {value}", 1)
    path = tmp_path / "doc.md"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ft.ContractError, match=re.escape(says)):
        ft.Registry.from_paths([path])


def test_entry_points_resolve_only_through_link_registries(
    contract_text: Callable[..., str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A document naming a real importable function, or a module whose import would leave a
    mark, links to nothing and imports nothing."""
    marker = tmp_path / "imported"
    module = "fueltensor_reliability_trap"
    (tmp_path / f"{module}.py").write_text(
        f"import pathlib\npathlib.Path({str(marker)!r}).touch()\ndef kernel(*a, out): pass\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    for provider, entry in [
        ("os", "os.system"),
        ("os", "os:system"),
        (module, f"{module}.kernel"),
        (module, f"{module}:kernel"),
        ("fuel-cpu-backend-not", "builtins.print"),
    ]:
        text = contract_text(provider=provider).replace('"tests::twice_f32"', f'"{entry}"', 1)
        text = text.replace("tests::ENTRY_POINTS", f"{module}.ENTRY_POINTS")
        path = tmp_path / "doc.md"
        path.write_text(text, encoding="utf-8")
        with pytest.raises(ft.ContractError) as info:
            ft.Registry.from_paths([path])
        message = str(info.value)
        assert info.value.field == "entry_point", message
        assert f"no ENTRY_POINTS are registered for provider {provider}" in message
        assert "accepted: an entry point the provider registers" in message
        assert info.value.line == _first_line(text, "entry_point:")
    assert not marker.exists()
    assert module not in sys.modules


def test_a_registered_provider_links_only_the_names_in_its_map(
    contract_text: Callable[..., str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Even for a registered provider, an entry point outside its map (a real function's dotted
    path) is refused."""
    monkeypatch.setattr(registry_module, "_links", dict(registry_module._links))
    provider = "reliability-link-test"
    ft.register_provider(provider, {"tests::twice_f32": lambda a, b, *, out: None})
    text = contract_text(provider=provider).replace('"tests::twice_f32"', '"os.system"', 1)
    path = tmp_path / "doc.md"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ft.ContractError, match=f"provider {provider} has no entry 'os.system'"):
        ft.Registry.from_paths([path])
