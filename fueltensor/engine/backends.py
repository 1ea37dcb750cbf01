"""Which providers an operation may use, and what it records: context managers over contextvars.

`use_backend` restricts dispatch to one provider (or to every contract provider with no host
fallback); `use_registry` swaps the contract registry; `trace` collects the plans that ran. All
three live in contextvars, so threads and asyncio tasks never see each other's choice.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from fueltensor.registry import Registry, registry, require

if TYPE_CHECKING:
    from fueltensor.core.tensor import FuelTensor
    from fueltensor.engine.planner import Plan, Planning

    Observer = Callable[[Planning, Plan, tuple[FuelTensor, ...], FuelTensor], None]

_PLAN_CACHE_LIMIT = 4096
_POLICY_LIMIT = 64


@dataclass(frozen=True, eq=False)
class Policy:
    """A registry plus the providers dispatch may use; it owns the plan cache for that choice."""

    registry: Registry
    providers: frozenset[str] | None
    allow_host: bool
    label: str
    plans: dict[tuple[object, ...], object] = field(default_factory=dict, repr=False)

    def remember(self, key: tuple[object, ...], value: object) -> None:
        """Cache a planning result; the cache is cleared whole when it grows past its limit."""
        if len(self.plans) >= _PLAN_CACHE_LIMIT:
            self.plans.clear()
        self.plans[key] = value


_POLICY: ContextVar[Policy | None] = ContextVar("fueltensor_policy", default=None)
_TRACE: ContextVar[tuple[list[Plan], ...]] = ContextVar("fueltensor_trace", default=())
_OBSERVERS: ContextVar[tuple[Observer, ...]] = ContextVar("fueltensor_observers", default=())
_DEFAULT: Policy | None = None
_POLICIES: dict[tuple[int, frozenset[str] | None, bool, str], Policy] = {}


def _policy(
    reg: Registry, providers: frozenset[str] | None, allow_host: bool, label: str
) -> Policy:
    """One Policy object per (registry, restriction, name used), so plan caches survive
    re-entering."""
    key = (id(reg), providers, allow_host, label)  # the label: errors echo the name used
    found = _POLICIES.get(key)
    if found is None or found.registry is not reg:
        if len(_POLICIES) >= _POLICY_LIMIT:
            _POLICIES.clear()  # a policy keeps its registry alive: never hoard them
        found = Policy(reg, providers, allow_host, label)
        _POLICIES[key] = found
    return found


def current_policy() -> Policy:
    """The active policy: the innermost `use_backend`/`use_registry`, else the bundled registry
    with every provider and host fallback."""
    p = _POLICY.get()
    return p if p is not None else default_policy()


def default_policy() -> Policy:
    """The policy outside any `use_backend`/`use_registry`: the bundled registry with every
    provider and host fallback, made the first time and the same object after."""
    global _DEFAULT
    if _DEFAULT is None:
        _DEFAULT = _policy(registry(), None, True, "default")
    return _DEFAULT


def _resolve(reg: Registry, name: str) -> frozenset[str]:
    """Provider names matching `name` (a name or alias, `Registry.provider_names`)."""
    try:
        return reg.provider_names(name)
    except ValueError as e:
        raise ValueError(f"{e}; or 'contracts' for every provider") from None


@contextmanager
def use_backend(name: str) -> Iterator[Policy]:
    """Restrict dispatch to provider `name` (its name or an alias: "cpu", "reference", a
    kernel_source, "torch"), or to every provider that joins dispatch by default, with no host
    fallback ("contracts").

    Inside, an operation on dtypes some contract takes but no allowed contract admits raises
    `NoKernelError`; one on dtypes no contract of any provider takes (integers, bools) runs on
    the host, as it does outside, and so do the host functions (docs/dispatch.md). A provider
    whose framework is not installed raises `ProviderUnavailable`, saying how to install it.
    """
    reg = current_policy().registry
    providers = None if name == "contracts" else _resolve(reg, name)
    require(providers or ())
    policy = _policy(reg, providers, False, name)
    token = _POLICY.set(policy)
    try:
        yield policy
    finally:
        _POLICY.reset(token)


@contextmanager
def use_registry(reg: Registry) -> Iterator[Registry]:
    """Dispatch through `reg` (e.g. `Registry.from_paths([...])`) instead of the bundled one."""
    token = _POLICY.set(_policy(reg, None, True, "default"))
    try:
        yield reg
    finally:
        _POLICY.reset(token)


@contextmanager
def trace() -> Iterator[list[Plan]]:
    """Collect, in order, the Plan of every operation that runs inside the block (nested traces
    each see every operation)."""
    plans: list[Plan] = []
    token = _TRACE.set((*_TRACE.get(), plans))
    try:
        yield plans
    finally:
        _TRACE.reset(token)


def tracing() -> bool:
    """True inside a `trace` block (so host operations build a Plan only when one is wanted)."""
    return bool(_TRACE.get())


def record(plan: Plan) -> None:
    """Append `plan` to every active trace."""
    for plans in _TRACE.get():
        plans.append(plan)


@contextmanager
def observe(observer: Observer) -> Iterator[None]:
    """Call `observer(planning, plan, operands, result)` after every contract operation inside
    the block (how `compare_backends` sees what ran)."""
    token = _OBSERVERS.set((*_OBSERVERS.get(), observer))
    try:
        yield
    finally:
        _OBSERVERS.reset(token)


def notify(
    planning: Planning, plan: Plan, tensors: tuple[FuelTensor, ...], result: FuelTensor
) -> None:
    """Record `plan` in every active trace and tell every active observer about the operation
    that just ran (one call, as it follows every contract operation)."""
    for plans in _TRACE.get():
        plans.append(plan)
    for observer in _OBSERVERS.get():
        observer(planning, plan, tensors, result)


def forget_plans() -> None:
    """Empty every policy's plan cache (plans record facts of the setting they were made
    under, such as the threads a kernel step runs on)."""
    for policy in (*_POLICIES.values(), *((_DEFAULT,) if _DEFAULT is not None else ())):
        policy.plans.clear()
