"""A draft provider from the command line: FKC documents no installed plugin ships, linked to the
kernels of a shared library or a Python module the user names, beside the installed registry.

An entry point `namespace::name` links to the C symbol `name` of a library (the examples'
convention), or, in a module, to `ENTRY_POINTS[entry_point]` when the module defines that map,
else to its function `name`. A module is imported only because the command line names it, and a
library is loaded only because it is named: nothing a document says is imported or loaded.
"""

from __future__ import annotations

import importlib
import importlib.util
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType
from typing import NamedTuple

from fueltensor.core.errors import ContractError, LibraryError
from fueltensor.fkc import KernelContract, load_document
from fueltensor.fkc.validate import check_unique
from fueltensor.kernels import KernelFn
from fueltensor.kernels.compiled import load_library
from fueltensor.kernels.shaped import abi_errors
from fueltensor.op_checks import op_kind_problems
from fueltensor.registry import (
    Registry,
    document_paths,
    installed_documents,
    linked_entry_points,
    register_provider,
    registry,
)
from fueltensor.tools.judge.contractions import declaration_problems

Paths = Sequence[str | os.PathLike[str]]


class DraftError(ValueError):
    """A library or module named on the command line cannot serve: missing, or failing to import."""


def symbol(entry_point: str) -> str:
    """The C symbol or Python function an entry point names: its last `::` segment."""
    return entry_point.rsplit("::", 1)[-1]


@dataclass(frozen=True)
class Library:
    """A shared library named with `--library`: its byte kernels, by their entry points' symbols."""

    path: Path

    def find(self, entry_point: str) -> KernelFn | str:
        """The kernel `entry_point` links to in this library, or why there is none."""
        try:
            return load_library(self.path, {entry_point: symbol(entry_point)})[entry_point]
        except LibraryError as e:
            return str(e)


@dataclass(frozen=True)
class Module:
    """A Python module named with `--module`: its ENTRY_POINTS map, else its functions."""

    label: str
    module: ModuleType

    def find(self, entry_point: str) -> KernelFn | str:
        """The kernel `entry_point` links to in this module, or why there is none."""
        table = getattr(self.module, "ENTRY_POINTS", None)
        if isinstance(table, Mapping):
            fn = table.get(entry_point)
            return fn if callable(fn) else f"{self.label}: ENTRY_POINTS has no {entry_point!r}"
        fn = getattr(self.module, symbol(entry_point), None)
        return fn if callable(fn) else f"{self.label} defines no function {symbol(entry_point)!r}"


Source = Library | Module


def import_module(name: str) -> ModuleType:
    """The module `name` names: a `.py` file (imported under its file name's stem), else a module
    importable from the working directory; DraftError saying why when it does not import."""
    path = Path(name)
    try:
        if path.suffix == ".py" or path.is_file():
            return _import_file(path)
        sys.path.insert(0, os.getcwd())
        try:
            return importlib.import_module(name)
        finally:
            sys.path.remove(os.getcwd())
    except DraftError:
        raise
    except Exception as e:  # the module's own code failed: say which module, and how
        raise DraftError(f"--module {name}: {type(e).__name__}: {e}") from e


def _import_file(path: Path) -> ModuleType:
    """The Python file at `path`, imported and registered in sys.modules under its stem."""
    where = path.expanduser().resolve()
    if not where.is_file():
        raise DraftError(f"--module {path}: no such file ({where})")
    name = where.stem
    known = sys.modules.get(name)
    if known is not None:
        if getattr(known, "__file__", None) == str(where):
            return known
        raise DraftError(
            f"--module {path}: a module called {name!r} is already imported "
            f"({getattr(known, '__file__', 'built in')}); rename the file"
        )
    spec = importlib.util.spec_from_file_location(name, where)
    assert spec is not None and spec.loader is not None  # a .py path always has a loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[name]
        raise
    return module


def sources(libraries: Iterable[str] = (), modules: Iterable[str] = ()) -> list[Source]:
    """The libraries (checked to exist) and the modules (imported) named on the command line."""
    found: list[Source] = []
    for lib in libraries:
        path = Path(lib).expanduser().resolve()
        if not path.is_file():
            raise DraftError(f"--library {lib}: no such file ({path})")
        found.append(Library(path))
    found.extend(Module(name, import_module(name)) for name in modules)
    return found


class Finding(NamedTuple):
    """One fault of a lint, shown as `path:line: field: message`. Its `level`: "error" (the
    draft cannot be read or join the registry), "problem" (it loads but cannot work as written)
    or "warning" (an entry point not linked yet: shown as `path:line: warning: ...`)."""

    error: ContractError
    level: str = "error"

    @property
    def fatal(self) -> bool:
        """Whether the finding fails a lint (everything but a warning)."""
        return self.level != "warning"

    def __str__(self) -> str:
        text = str(self.error)
        if self.fatal or self.error.path is None:
            return text
        where = f"{self.error.path}:{self.error.line}: "
        return f"{where}warning: {text.removeprefix(where)}"


def _unlinked(c: KernelContract, misses: list[str]) -> Finding:
    """Why `c`'s entry point has no kernel: an error when a library or module was named and
    holds none, a warning while none was named."""
    name = symbol(c.entry_point)
    if misses:
        why = "; ".join(dict.fromkeys(misses))
    else:
        why = (
            f"no --library or --module was named, and provider {c.provider.name} registers no "
            f"such entry; name the kernel's home with --library PATH (a C symbol {name}) or "
            f"--module FILE (a function {name}) to explain, compare or judge it"
        )
    line = c.source.lines.get("entry_point", c.source.line)
    message = f"{c.entry_point!r} of {c.name} is not linked: {why}"
    error = ContractError(message, path=c.source.path, line=line, field="entry_point")
    return Finding(error, "error" if misses else "warning")


def link(contracts: Iterable[KernelContract], found: Sequence[Source]) -> list[Finding]:
    """Register, beside what each provider already registers, the kernels `found` holds for the
    contracts' entry points; one Finding per registrable contract left unlinked."""
    tables: dict[str, dict[str, KernelFn]] = {}
    findings = []
    for c in contracts:
        if not c.registrable:
            continue
        misses: list[str] = []
        for source in found:
            fn = source.find(c.entry_point)
            if not isinstance(fn, str):
                tables.setdefault(c.provider.name, {})[c.entry_point] = fn
                break
            misses.append(fn)
        else:
            if c.entry_point not in (linked_entry_points(c.provider.name) or {}):
                findings.append(_unlinked(c, misses))
    for provider, table in tables.items():
        register_provider(provider, {**(linked_entry_points(provider) or {}), **table})
    return findings


def lint(paths: Paths, found: Sequence[Source] = ()) -> tuple[list[KernelContract], list[Finding]]:
    """The contracts of the documents at `paths`, linked through `found`, and every fault, one
    line each with file:line: a document that does not load (its first fault), a kernel name the
    registry already has, an op_kind nothing dispatches, a C ABI its op kind cannot take, a
    contraction's declaration the judge cannot read, and each entry point not linked (a warning
    while no library or module is named)."""
    given = document_paths(paths)
    contracts: list[KernelContract] = []
    findings: list[Finding] = []
    for path in given:
        try:
            contracts.extend(load_document(path, cached=True)[1])
        except ContractError as e:
            findings.append(Finding(e))
    ours = {p.resolve() for p in given}
    others = [c for c in registry() if Path(c.source.path).resolve() not in ours]
    try:
        check_unique([*others, *contracts])
    except ContractError as e:
        findings.append(Finding(e))
    findings += [Finding(ContractError(p), "problem") for p in op_kind_problems(contracts)]
    findings += [Finding(e) for e in abi_errors(contracts)]
    findings += [Finding(ContractError(p), "problem") for p in declaration_problems(contracts)]
    return contracts, findings + link(contracts, found)


@dataclass(frozen=True)
class Draft:
    """Draft documents linked and read beside the installed ones: the registry they make together,
    and the names of the drafts' contracts in document order."""

    registry: Registry
    names: tuple[str, ...]


def load(paths: Paths, found: Sequence[Source] = ()) -> Draft:
    """The installed registry with the documents at `paths` after its own (a tie at equal cost
    goes to the earlier document), linked through `found`; ContractError at the first fault."""
    given = document_paths(paths)
    installed = installed_documents()
    known = {p.resolve() for p in installed}
    contracts = [c for p in given for c in load_document(p, cached=True)[1]]
    unlinked = link(contracts, found)
    if unlinked:
        raise unlinked[0].error
    mine = [p for p in given if p.resolve() not in known]
    reg = Registry.from_paths([*installed, *mine], cached=True)
    return Draft(reg, tuple(c.name for c in contracts))
