"""The per-user JSON cache of contracts: a hit equals a fresh parse; bad entries rebuild."""

from __future__ import annotations

import importlib
import json
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
