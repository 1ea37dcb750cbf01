"""The contract registry: FKC documents, validated and linked to Python kernels, indexed by op.

A contract's `entry_point` string resolves only through its provider's `ENTRY_POINTS` map,
registered in code with `register_provider` or found through the `fueltensor.providers`
entry-point group (how a separate package ships an FKC document plus its kernels). Nothing a
document names is ever imported. `registry()` is the bundled documents plus every installed
provider's documents, built once per process.
"""

from __future__ import annotations

import os
import sys
import threading
import warnings
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import replace
from pathlib import Path
from types import MappingProxyType, ModuleType
from typing import TYPE_CHECKING, Final

from .core.errors import ContractError, ContractWarning, ProviderUnavailable, plural
from .core.hooks import present
from .fkc import load_document  # the package is light: its schema loads with the first document
from .kernels import KernelFn, shaped
from .kernels.calling import calling_problem
from .op_checks import op_kind_problems
from .plugins import PROVIDER_GROUP as PROVIDER_GROUP
from .plugins import plugin_entry_points as _plugin_entry_points

if TYPE_CHECKING:
    from .fkc.schema import KernelContract, MeasuredOn, Provider

_lock = threading.RLock()
_links: dict[str, Mapping[str, KernelFn]] = {}
_hooks: dict[str, dict[str, Callable[[], object]]] = {}
"""Provider name -> its module's optional hooks (HOOK_NAMES), each read by the `provider_...`
function of its name."""
HOOK_NAMES: Final = ("UNAVAILABLE", "UNLINKED", "ENVIRONMENT", "ISA_SWITCHES", "BINARY")
_discovered: tuple[Path, ...] | None = None
_bundled: Registry | None = None


def register_provider(name: str, entry_points: Mapping[str, KernelFn]) -> None:
    """Make `entry_points` (entry_point string -> kernel) the link map of provider `name`.

    Registering a name again replaces its map; registries already built keep the kernels they
    linked.
    """
    if not isinstance(name, str) or not name:
        raise TypeError(f"provider name must be a non-empty string, got {name!r}")
    if not isinstance(entry_points, Mapping):
        raise TypeError(f"entry_points must be a mapping, got {type(entry_points).__name__}")
    for key, fn in entry_points.items():
        if not isinstance(key, str) or not callable(fn):
            raise TypeError(
                f"entry point {key!r} of provider {name} must map a string to a callable"
            )
    with _lock:
        _links[name] = MappingProxyType(dict(entry_points))


def _adopt(obj: object, origin: str) -> tuple[Path, ...]:
    """Register a provider module/object's ENTRY_POINTS; return the DOCUMENTS it ships."""
    name = getattr(obj, "PROVIDER", None)
    table = getattr(obj, "ENTRY_POINTS", None)
    if not isinstance(name, str) or not isinstance(table, Mapping):
        raise ContractError(
            f"provider {origin} must define PROVIDER: str and ENTRY_POINTS: Mapping[str, Callable]"
        )
    register_provider(name, table)
    hooks = {h: fn for h in HOOK_NAMES if callable(fn := getattr(obj, h, None))}
    with _lock:
        _hooks[name] = hooks
    return tuple(_home(obj) / d for d in getattr(obj, "DOCUMENTS", ()))


def _said(name: str, hook: str) -> object:
    """What provider `name`'s hook (`HOOK_NAMES`) answers, once its module was adopted; None
    without one."""
    with _lock:
        if name not in _hooks:
            _discover()
        found = _hooks.get(name, {}).get(hook)
    return found() if found is not None else None


def provider_unavailable(name: str) -> str | None:
    """Why provider `name` cannot run on this machine (its framework is not installed, say:
    the message says how to install it), or None when it can or does not say."""
    why = _said(name, "UNAVAILABLE")
    return why if isinstance(why, str) else None


def provider_unlinked(name: str) -> Mapping[str, str]:
    """The entry points provider `name` ships documents for but cannot run in this installation
    (compiled-only kernels where its extension is not built), each with why and what to do;
    empty if it names none."""
    found = _said(name, "UNLINKED")
    return found if isinstance(found, Mapping) else {}


def provider_isa_switches(name: str) -> list[dict[str, str]]:
    """The environment settings under which provider `name`'s framework runs another
    instruction set on this machine (NumPy's NPY_DISABLE_CPU_FEATURES, PyTorch's
    ATEN_CPU_CAPABILITY), each read by a fresh process; empty if it names none."""
    found = _said(name, "ISA_SWITCHES")
    return [dict(s) for s in found] if isinstance(found, list) else []


def provider_environment(name: str) -> MeasuredOn | None:
    """What provider `name` would be measured with here (framework version, instruction set),
    against its documents' `measured_on`; None if it does not say (the hook may take seconds)."""
    from .fkc.schema import MeasuredOn

    found = _said(name, "ENVIRONMENT")
    return found if isinstance(found, MeasuredOn) else None


def provider_binary(name: str) -> tuple[Path | None, str, str] | None:
    """The file provider `name`'s kernels run from here (None: no file of their own), its version
    and how they run ("built-in extension _native"), for certificates; None if it does not say."""
    found = _said(name, "BINARY")
    return found if isinstance(found, tuple) and len(found) == 3 else None


def require(names: Iterable[str]) -> None:
    """ProviderUnavailable for the first provider among `names` that cannot run here."""
    for name in names:
        why = provider_unavailable(name)
        if why is not None:
            raise ProviderUnavailable(why)


def _home(obj: object) -> Path:
    """The directory of the module that defines provider `obj` (a module, or an object made in
    one): its relative DOCUMENTS are relative to it, never to the working directory."""
    module = obj if isinstance(obj, ModuleType) else sys.modules.get(getattr(obj, "__module__", ""))
    where = getattr(module, "__file__", None)
    return Path(where).resolve().parent if where else Path.cwd()


def _discover() -> tuple[Path, ...]:
    """Load the built-in and installed providers once; the documents the installed ones ship."""
    global _discovered
    with _lock:
        if _discovered is None:
            from fueltensor.kernels import blas, cpu, reference  # on first use: import stays light
            from fueltensor.kernels.frameworks import jax_provider, numpy_provider, torch_provider

            for module in (cpu, blas, reference, numpy_provider, torch_provider, jax_provider):
                _adopt(module, module.__name__)
            documents: list[Path] = []
            for ep in _plugin_entry_points():
                origin = f"{ep.name} = {ep.value}"
                try:
                    shipped = _adopt(ep.load(), origin)
                    for document in shipped:  # a document that does not load breaks the plugin
                        load_document(document, cached=True)
                    documents.extend(shipped)
                except Exception as e:  # one broken plugin must not break every operation
                    warnings.warn(
                        f"fueltensor: skipping the provider plugin {origin} "
                        f"({PROVIDER_GROUP}): {type(e).__name__}: {e}",
                        RuntimeWarning,
                        stacklevel=2,
                    )
            _discovered = tuple(documents)
        return _discovered


def linked_entry_points(provider: str) -> Mapping[str, KernelFn] | None:
    """The link map registered for `provider` (by `register_provider`, a plugin or the built-in
    providers), None if it has none: what its documents' entry points resolve through."""
    with _lock:
        if provider not in _links:
            _discover()
        return _links.get(provider)


EXCLUDED: Final = " is excluded by use_backend"
"""How `Registry.excluded` ends the reason of a contract whose provider `use_backend` left out
(after `provider NAME`): explain folds those into one line."""


def bundled_contracts_dir() -> Path:
    """Where the bundled FKC documents live: inside the installed package, else the checkout."""
    package = Path(__file__).resolve().parent
    for candidate in (package / "contracts", package.parent / "contracts"):
        if candidate.is_dir():
            return candidate
    raise ContractError(f"bundled contracts not found in {package / 'contracts'} or the checkout")


def document_paths(paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str]) -> list[Path]:
    """The FKC documents `paths` name: files as given (one str or path is one file), a directory
    standing for its `*.md` files in name order."""
    out: list[Path] = []
    for p in [paths] if isinstance(paths, (str, os.PathLike)) else paths:
        path = Path(p)
        if not path.is_dir():
            out.append(path)
            continue
        found = sorted(path.glob("*.md"))
        if not found:
            raise ContractError("the directory holds no *.md FKC documents", path=str(path))
        out.extend(found)
    return out


class Contracts(tuple["KernelContract", ...]):
    """A tuple of contracts that shows itself as a table (what `Registry.for_op` returns)."""

    __slots__ = ()

    def __repr__(self) -> str:
        """A table of the contracts (registered by `fueltensor.tools.display`)."""
        return present(self, "repr")

    def _repr_html_(self) -> str:
        """The notebook display (registered by `fueltensor.tools.display`)."""
        return present(self, "html")


WHEN_NAMED: Final = (
    "joins only where it is named: use_backend({name}), compare_backends(..., {name}) or "
    "registry().joined({name})"
)
"""Why a `dispatch: when_named` provider's contract took no part (`Registry.excluded`)."""


UNLINKED: Final = "not registrable here: "
"""How the planner words a contract this installation cannot link (`Registry.unlinked`)."""


class Registry:
    """Validated, linked kernel contracts: iterable in document order, indexed by name and op."""

    __slots__ = (
        "__weakref__",
        "_by_name",
        "_by_op",
        "_contracts",
        "_joined",
        "_kernels",
        "_providers",
    )

    def __init__(
        self,
        contracts: Iterable[KernelContract],
        kernels: Mapping[str, KernelFn],
        joined: frozenset[str] = frozenset(),
    ) -> None:
        self._joined = joined
        self._contracts = tuple(contracts)
        self._by_name = {c.name: c for c in self._contracts}
        self._kernels = dict(kernels)
        by_op: dict[str, list[KernelContract]] = {}
        for c in self._contracts:
            if c.registrable:
                by_op.setdefault(c.op_kind, []).append(c)
        self._by_op = {op: Contracts(cs) for op, cs in by_op.items()}
        providers: dict[str, Provider] = {}
        for c in self._contracts:
            providers.setdefault(c.provider.name, c.provider)
        self._providers = tuple(providers.values())

    @classmethod
    def from_paths(
        cls,
        paths: Iterable[str | os.PathLike[str]] | str | os.PathLike[str],
        *,
        cached: bool = False,
    ) -> Registry:
        """Load, validate and link FKC documents (files, or directories of `*.md`; a single
        str or path is one of those).

        All or nothing: any fault raises ContractError and no registry is made. With `cached`,
        documents validated by an earlier process come from the per-user JSON cache. A contract
        that loads but can never be dispatched (an unknown op_kind) gives a ContractWarning.
        """
        from .fkc.validate import check_unique

        contracts: list[KernelContract] = []
        providers: dict[str, Provider] = {}
        for path in document_paths(paths):
            provider, declared = load_document(path, cached=cached)
            first = providers.setdefault(provider.name, provider)
            if first.to_dict() != provider.to_dict():
                raise ContractError(
                    f"provider {provider.name} is declared differently in {first.path}; "
                    "accepted: identical front matter for one provider",
                    path=provider.path,
                    line=1,
                    field="provider",
                )
            contracts.extend(declared)
        check_unique(contracts)
        for error in shaped.abi_errors(contracts):  # every C ABI before anything is linked
            raise error
        for problem in op_kind_problems(contracts):
            warnings.warn(problem, ContractWarning, stacklevel=2)
        return cls(*_link(contracts))

    def __getitem__(self, name: str) -> KernelContract:
        try:
            return self._by_name[name]
        except KeyError:
            import difflib  # only for the error message; kept out of `import fueltensor`

            close = difflib.get_close_matches(str(name), self._by_name, n=5, cutoff=0.5)
            hint = f"; did you mean {', '.join(close)}?" if close else ""
            raise KeyError(
                f"no contract named {name!r} among {plural(len(self), 'contract')}{hint}"
            ) from None

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def __iter__(self) -> Iterator[KernelContract]:
        return iter(self._contracts)

    def __len__(self) -> int:
        return len(self._contracts)

    def __repr__(self) -> str:
        names = ", ".join(p.name for p in self._providers)
        return f"<Registry: {plural(len(self), 'contract')} from {names or 'no providers'}>"

    def _repr_html_(self) -> str:
        """The notebook display (registered by `fueltensor.tools.display`)."""
        return present(self, "html")

    @property
    def providers(self) -> tuple[Provider, ...]:
        """The providers whose documents were loaded, in document order."""
        return self._providers

    def provider_names(self, name: str) -> frozenset[str]:
        """The provider called `name` (its name or an alias, `provider_aliases`) as a set of
        canonical names, or a `dispatch: when_named` contract's kernel name as itself;
        ValueError listing every provider with its aliases, and those contracts, otherwise."""
        found = frozenset(p.name for p in self._providers if name in (p.name, *provider_aliases(p)))
        found = found or frozenset((name,)) & frozenset(self.named_contracts())
        if not found:
            named = ", ".join(self.named_contracts())
            also = f"; or a contract that joins only where named: {named}" if named else ""
            raise ValueError(f"no provider is called {name!r}; known: {self.provider_list()}{also}")
        return found

    def named_contracts(self) -> tuple[str, ...]:
        """The contracts that join dispatch only where named by kernel name (their own
        `dispatch: when_named`, not their provider's)."""
        return tuple(c.name for c in self._contracts if c.dispatch == "when_named")

    def provider_list(self) -> str:
        """Every provider once, with its aliases: `fuel-cpu-backend (alias cpu, portable-cpu)`."""
        return ", ".join(
            p.name + (f" (alias {', '.join(a)})" if (a := provider_aliases(p)) else "")
            for p in self._providers
        )

    def joins(self, provider: Provider) -> bool:
        """Whether `provider`'s contracts take part in dispatch where no provider is named:
        always, unless its documents say `dispatch: when_named` and it was not `joined`."""
        return not provider.when_named or provider.name in self._joined

    def excluded(self, contract: KernelContract, providers: frozenset[str] | None) -> str:
        """Why `contract` takes no part where `providers` may run (None: no provider named),
        "" when it does: neither its provider nor its kernel name is among them; it joins only
        where its own kernel name is named and that is not; or none is named and its provider
        joins only where it is named."""
        name = contract.provider.name
        if providers is not None and name not in providers and contract.name not in providers:
            return f"provider {name}{EXCLUDED}"
        named = contract.name in self._joined or contract.name in (providers or ())
        if contract.dispatch == "when_named" and not named:
            return f"kernel {contract.name} {WHEN_NAMED.format(name=repr(contract.name))}"
        if providers is None and not self.joins(contract.provider):
            return f"provider {name} {WHEN_NAMED.format(name=repr(name))}"
        return ""

    def joined(self, *names: str) -> Registry:
        """This registry with the named `dispatch: when_named` providers (names or aliases)
        joining dispatch by default, their costs against everyone's: the registry option
        behind `with ft.use_registry(ft.registry().joined("torch")): ...`. ValueError for an
        unknown name; ProviderUnavailable for a framework that is not installed."""
        found = frozenset().union(*(self.provider_names(n) for n in names))
        require(found)
        return Registry(self._contracts, self._kernels, self._joined | found)

    def problems(self) -> list[str]:
        """What loads but cannot work as written (e.g. an unknown op_kind), one line each."""
        return op_kind_problems(self._contracts)

    def for_op(self, op_kind: str) -> Contracts:
        """The registrable contracts at `op_kind`, in document order (empty if none)."""
        return self._by_op.get(op_kind, Contracts())

    def unlinked(self, op_kind: str) -> Contracts:
        """The contracts at `op_kind` this installation cannot link (`KernelContract.unlinked`
        says why), in document order: what `explain` lists beside the candidates."""
        return Contracts(c for c in self._contracts if c.unlinked and c.op_kind == op_kind)

    def kernel(self, name: str) -> KernelFn:
        """The Python kernel linked to contract `name`."""
        contract = self[name]
        if contract.unlinked:
            raise KeyError(f"{name} has no kernel in this installation: {contract.unlinked}")
        if not contract.registrable:
            raise KeyError(f"{name} is describe-only (registrable: false) and has no kernel")
        return self._kernels[name]


def provider_aliases(provider: Provider) -> tuple[str, ...]:
    """The other names a provider answers to, everywhere a provider is named: its short name
    ("cpu" for fuel-cpu-backend) and its documents' kernel_source ("portable-cpu")."""
    short = provider.name.removeprefix("fuel-").removesuffix("-backend")
    return tuple(n for n in dict.fromkeys((short, provider.kernel_source)) if n != provider.name)


def _link(
    contracts: Iterable[KernelContract],
) -> tuple[list[KernelContract], dict[str, KernelFn]]:
    """The contracts, and each registrable one's kernel from its provider's map; ContractError
    if missing, unless its provider says this installation cannot run that entry point
    (`provider_unlinked`): that contract comes back not registrable, saying why."""
    kernels: dict[str, KernelFn] = {}
    linked: list[KernelContract] = []
    for c in contracts:
        linked.append(c)
        if not c.registrable:
            continue
        table = linked_entry_points(c.provider.name)
        fn = table.get(c.entry_point) if table is not None else None
        why = provider_unlinked(c.provider.name).get(c.entry_point) if fn is None else None
        if why is not None:
            linked[-1] = replace(c, registrable=False, unlinked=why)
            continue
        if fn is None:
            why = (
                f"provider {c.provider.name} has no entry {c.entry_point!r} in its ENTRY_POINTS"
                if table is not None
                else f"no ENTRY_POINTS are registered for provider {c.provider.name}"
            )
            raise ContractError(
                f"{why}; accepted: an entry point the provider registers (register_provider or "
                f"the {PROVIDER_GROUP} entry-point group), or registrable: false",
                path=c.source.path,
                line=c.source.lines.get("entry_point", c.source.line),
                field="entry_point",
            )
        found = shaped.linked(c, fn)
        if isinstance(found, str):
            line = c.source.lines.get("abi", c.source.lines.get("entry_point", c.source.line))
            raise ContractError(found, path=c.source.path, line=line, field="abi")
        fn = found
        problem = calling_problem(c, fn)
        if problem is not None:
            key = "entry_point" if problem.startswith("its kernel") else "op_kind"
            line = c.source.lines.get(key, c.source.line)
            raise ContractError(problem, path=c.source.path, line=line, field=key)
        kernels[c.name] = fn
    return linked, kernels


def installed_documents() -> tuple[Path, ...]:
    """The documents `registry()` reads, in its order: the bundled ones, then those of every
    installed provider plugin."""
    return (*document_paths(bundled_contracts_dir()), *_discover())


def registry() -> Registry:
    """The bundled contracts plus every installed provider's, linked; built once, thread-safe."""
    global _bundled
    reg = _bundled
    if reg is None:
        with _lock:
            if _bundled is None:
                _bundled = Registry.from_paths(installed_documents(), cached=True)
            reg = _bundled
    return reg
