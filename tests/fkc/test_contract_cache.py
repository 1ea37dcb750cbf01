"""The per-user JSON cache of contracts: a hit equals a fresh parse; bad entries rebuild."""

from __future__ import annotations

import importlib
import json
import os
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from conftest import SEED_CPU, SEED_REFERENCE

import fueltensor as ft
from fueltensor import ContractError
from fueltensor.fkc import KernelContract, Provider, cache, load_document

parse_module = importlib.import_module("fueltensor.fkc.parse")
registry_module = importlib.import_module("fueltensor.registry")


@pytest.fixture
def cache_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty cache directory for this test only."""
    where = tmp_path / "cache"
    monkeypatch.setenv(cache.ENV_VAR, str(where))
    return where


def everything(provider: Provider, contracts: tuple[KernelContract, ...]) -> Any:
    """All a loaded document says, prose and source lines included (to_dict() leaves them out)."""
    return (
        provider,
        [
            (c.to_dict(), c.blurb, c.description, c.source, dict(c.source.lines), c.provider)
            for c in contracts
        ],
    )


def no_parsing(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make any YAML parse fail, so a load that succeeds must have come from the cache."""

    def refuse(*_: object) -> None:
        raise AssertionError("the document was parsed although a valid cache entry exists")

    monkeypatch.setattr(parse_module, "parse_document", refuse)


def documents(seeds_dir: Path | None) -> list[Path]:
    found = sorted(registry_module.bundled_contracts_dir().glob("*.md"))
    if seeds_dir is not None:
        found += [seeds_dir / SEED_CPU, seeds_dir / SEED_REFERENCE]
    return found


@pytest.mark.parametrize("with_seeds", [False, True])
def test_a_cache_hit_equals_a_fresh_parse(
    cache_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
    with_seeds: bool,
) -> None:
    paths = documents(request.getfixturevalue("seeds") if with_seeds else None)
    fresh = [everything(*load_document(p)) for p in paths]
    written = [everything(*load_document(p, cached=True)) for p in paths]
    assert len(list(cache_dir.glob("*.json"))) == len(paths)
    no_parsing(monkeypatch)
    hits = [everything(*load_document(p, cached=True)) for p in paths]
    assert hits == written == fresh


def test_the_same_bytes_elsewhere_report_their_own_path(
    cache_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    contract_text: Callable[..., str],
    tmp_path: Path,
) -> None:
    first, second = tmp_path / "a.md", tmp_path / "b.md"
    for p in (first, second):
        p.write_text(contract_text(), encoding="utf-8")
    load_document(first, cached=True)
    no_parsing(monkeypatch)
    provider, contracts = load_document(second, cached=True)
    assert provider.path == contracts[0].source.path == str(second)


@pytest.mark.parametrize(
    "damage",
    [b"", b"{not json", b"[]", b'{"format": 1}', b'{"format": 999, "contracts": []}', b"\xff\xfe"],
)
def test_a_corrupt_entry_is_ignored_and_rewritten(
    cache_dir: Path, contract_text: Callable[..., str], write: Callable[..., Path], damage: bytes
) -> None:
    doc = write(contract_text())
    fresh = everything(*load_document(doc))
    load_document(doc, cached=True)
    (entry,) = cache_dir.glob("*.json")
    entry.write_bytes(damage)
    assert everything(*load_document(doc, cached=True)) == fresh
    assert json.loads(entry.read_bytes())["format"] == cache.FORMAT


def test_an_edited_document_is_read_again(
    cache_dir: Path, contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    doc = write(contract_text(kernel="before_f32"))
    assert load_document(doc, cached=True)[1][0].name == "before_f32"
    doc.write_text(contract_text(kernel="after_f32"), encoding="utf-8")
    assert load_document(doc, cached=True)[1][0].name == "after_f32"
    assert len(list(cache_dir.glob("*.json"))) == 2


def test_a_changed_reader_misses_the_old_entries(
    cache_dir: Path,
    monkeypatch: pytest.MonkeyPatch,
    contract_text: Callable[..., str],
    write: Callable[..., Path],
) -> None:
    doc = write(contract_text())
    load_document(doc, cached=True)
    monkeypatch.setattr(cache, "reader_fingerprint", lambda: "another reader")
    load_document(doc, cached=True)
    assert len(list(cache_dir.glob("*.json"))) == 2


def test_a_faulty_document_is_never_cached_and_names_its_line(
    cache_dir: Path, contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    text = contract_text().replace("alignment_bytes: 64", "alignment_bytes: 48")
    doc = write(text)
    for _ in range(2):
        with pytest.raises(ContractError) as caught:
            load_document(doc, cached=True)
        assert (caught.value.path, caught.value.field) == (str(doc), "caps.alignment_bytes")
        assert caught.value.line == text[: text.index("alignment_bytes:")].count("\n") + 1
    assert not cache_dir.exists() or not list(cache_dir.glob("*.json"))


def test_a_missing_document_is_a_contract_error(cache_dir: Path, tmp_path: Path) -> None:
    with pytest.raises(ContractError, match="cannot read the document"):
        load_document(tmp_path / "absent.md", cached=True)


def test_empty_setting_turns_the_cache_off(
    monkeypatch: pytest.MonkeyPatch, contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    monkeypatch.setenv(cache.ENV_VAR, "")
    assert cache.cache_dir() is None
    doc = write(contract_text())
    assert everything(*load_document(doc, cached=True)) == everything(*load_document(doc))


def test_an_unwritable_cache_only_costs_time(
    monkeypatch: pytest.MonkeyPatch, contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    blocker = write("a file where the cache directory should be", "blocker")
    monkeypatch.setenv(cache.ENV_VAR, str(blocker / "cache"))
    doc = write(contract_text())
    assert everything(*load_document(doc, cached=True)) == everything(*load_document(doc))


def test_the_bundled_registry_uses_the_cache(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(registry_module, "_bundled", None)
    built = ft.registry()
    assert len(list(cache_dir.glob("*.json"))) == len(documents(None))
    monkeypatch.setattr(registry_module, "_bundled", None)
    no_parsing(monkeypatch)
    again = ft.registry()
    assert [c.to_dict() for c in again] == [c.to_dict() for c in built]
    assert all(again.kernel(c.name) is built.kernel(c.name) for c in built if c.registrable)


# -- the cache can only speed up loading the document's own facts (issue 15) -----------------


def _edit(obj: dict[str, Any], what: str) -> None:
    facts = obj["contracts"][0]["facts"]
    if what == "no contracts":
        obj["contracts"] = []
    elif what == "edited facts":
        facts["kernel"] = "edited_f32"
        facts["cost"]["bytes_moved"] = "1"
    elif what == "alignment 0":
        facts["caps"]["alignment_bytes"] = 0
    elif what == "wrong types":
        facts["accept"]["inputs"][0]["dtypes"] = "F32"
        obj["contracts"][0]["line"] = "7"
    elif what == "duplicate":
        obj["contracts"].append(obj["contracts"][0])


@pytest.mark.parametrize("rehash", [False, True], ids=["as-edited", "rehashed"])
@pytest.mark.parametrize(
    "what", ["no contracts", "edited facts", "alignment 0", "wrong types", "duplicate"]
)
def test_an_edited_entry_is_never_used(
    cache_dir: Path,
    contract_text: Callable[..., str],
    write: Callable[..., Path],
    what: str,
    rehash: bool,
) -> None:
    """Facts edited in place, with or without a matching hash, are rebuilt from the document:
    a stale hash gives them away, and the schema validation every entry goes through does."""
    doc = write(contract_text())
    fresh = everything(*load_document(doc))
    load_document(doc, cached=True)
    (entry,) = cache_dir.glob("*.json")
    obj = json.loads(entry.read_bytes())
    _edit(obj, what)
    if rehash and what not in ("edited facts",):
        obj["facts_sha256"] = cache._facts_hash(obj)
    entry.write_text(json.dumps(obj), encoding="utf-8")
    assert everything(*load_document(doc, cached=True)) == fresh


def test_an_entry_under_another_documents_key_is_not_used(
    cache_dir: Path, contract_text: Callable[..., str], tmp_path: Path
) -> None:
    first, second = tmp_path / "a.md", tmp_path / "b.md"
    first.write_text(contract_text(kernel="first_f32"), encoding="utf-8")
    second.write_text(contract_text(kernel="second_f32"), encoding="utf-8")
    load_document(first, cached=True)
    (entry_a,) = cache_dir.glob("*.json")
    load_document(second, cached=True)
    (entry_b,) = set(cache_dir.glob("*.json")) - {entry_a}
    entry_b.write_bytes(entry_a.read_bytes())
    assert load_document(second, cached=True)[1][0].name == "second_f32"


@pytest.mark.parametrize(
    "damage", [b"[" * 100_000, b'{"format": 2, "contracts": ' + b"[" * 100_000, b"1" * 5000]
)
def test_deeply_nested_or_huge_entries_are_rebuilt(
    cache_dir: Path, contract_text: Callable[..., str], write: Callable[..., Path], damage: bytes
) -> None:
    doc = write(contract_text())
    fresh = everything(*load_document(doc))
    load_document(doc, cached=True)
    (entry,) = cache_dir.glob("*.json")
    entry.write_bytes(damage)
    assert everything(*load_document(doc, cached=True)) == fresh


@pytest.mark.parametrize("kind", ["fifo", "dev-zero", "directory"])
def test_an_entry_that_is_not_a_regular_file_is_not_read(
    cache_dir: Path, contract_text: Callable[..., str], write: Callable[..., Path], kind: str
) -> None:
    doc = write(contract_text())
    fresh = everything(*load_document(doc))
    load_document(doc, cached=True)
    (entry,) = cache_dir.glob("*.json")
    entry.unlink()
    if kind == "fifo":
        os.mkfifo(entry)
    elif kind == "dev-zero":
        entry.symlink_to("/dev/zero")
    else:
        entry.mkdir()
    assert everything(*load_document(doc, cached=True)) == fresh  # returns: nothing blocks


def test_forged_entries_leave_the_bundled_registry_whole(
    cache_dir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(registry_module, "_bundled", None)
    built = ft.registry()
    for entry in cache_dir.glob("*.json"):
        obj = json.loads(entry.read_bytes())
        obj["contracts"] = []
        obj["facts_sha256"] = cache._facts_hash(obj)
        entry.write_text(json.dumps(obj), encoding="utf-8")
    monkeypatch.setattr(registry_module, "_bundled", None)
    again = ft.registry()
    assert [c.to_dict() for c in again] == [c.to_dict() for c in built]
    x = ft.asarray([1.0, 2.0], dtype=ft.float32)
    with ft.use_registry(again):
        assert ft.explain(ft.add, x, x).provider == "fuel-cpu-backend"


def _flip_bytes(raw: bytes, rng: random.Random) -> bytes:
    data = bytearray(raw)
    for _ in range(rng.randint(1, 4)):
        data[rng.randrange(len(data))] = rng.randrange(256)
    return bytes(data)


def _edit_a_value(raw: bytes, rng: random.Random) -> bytes:
    """One JSON value somewhere in the entry replaced by another (hash left as it was)."""
    obj = json.loads(raw)
    node: Any = obj
    while True:
        keys = list(node) if isinstance(node, dict) else list(range(len(node)))
        if not keys:
            break
        key = rng.choice(keys)
        child = node[key]
        if not isinstance(child, dict | list) or rng.random() < 0.3:
            node[key] = rng.choice([0, -1, None, "", [], {}, "F32", True, 1e308, "[" * 50])
            break
        node = child
    return json.dumps(obj).encode()


def test_seeded_entry_corruptions_always_load_the_documents_facts(
    cache_dir: Path, contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    """Byte flips and value edits anywhere in an entry: every load still gives the document's
    own facts (a corrupt entry is never used, never raises)."""
    rng = random.Random(15)
    doc = write(contract_text())
    fresh = everything(*load_document(doc))
    load_document(doc, cached=True)
    (entry,) = cache_dir.glob("*.json")
    good = entry.read_bytes()
    for _ in range(150):
        entry.write_bytes(rng.choice([_flip_bytes, _edit_a_value])(good, rng))
        assert everything(*load_document(doc, cached=True)) == fresh
