"""Planning: which kernel contract runs an operation, and what must happen to the operands first.

For an op_kind and its operands the planner asks every registrable contract at that op_kind for
a verdict: one reason per failed `accept` predicate. What a contract's caps allow is repaired
(`BroadcastTo` + `Contiguize` so a `same_as` constraint holds, `Contiguize` for a layout flag);
the rest rejects it. A stride-0 operand of a kernel that runs block by block (`blockwise`) is
made dense one cache-sized block at a time, never at the output's size. Viable plans are priced
from the contract's `bytes_moved` formula plus the bytes the inserted steps move; a correctness
oracle ranks after every production plan (it exists to be right, not fast), and among the rest
the cheapest wins, a tie going to registry order (docs/dispatch.md, "Which plan runs"). Nothing
in here knows which kernel takes which dtype: that is read from the contracts.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import PurePath
from types import MappingProxyType
from typing import TYPE_CHECKING, Final, NamedTuple

from fueltensor.core.dtypes import BY_FKC, DType
from fueltensor.core.errors import ContractError
from fueltensor.core.hooks import present
from fueltensor.core.layout import Shape, broadcast_shapes
from fueltensor.core.storage import DEFAULT_ALIGNMENT
from fueltensor.engine.rejections import OTHER_TARGET, rejection_lines
from fueltensor.engine.repairs import (
    STRATEGY_REPAIRS,
    Verdict,
    blockwise,
    layout_repair,
    shape_repair,
)
from fueltensor.engine.rules import apply_rule, unchained
from fueltensor.engine.steps import Operand as Operand
from fueltensor.engine.steps import Request as Request
from fueltensor.engine.steps import Step as Step
from fueltensor.engine.steps import StepKind as StepKind
from fueltensor.engine.steps import Target as Target
from fueltensor.engine.steps import promote as promote
from fueltensor.families import CONTRACTED
from fueltensor.kernels import KernelFn
from fueltensor.kernels.threads import compiled_body, threads_for
from fueltensor.registry import UNLINKED, Registry

if TYPE_CHECKING:
    from fueltensor.fkc.schema import InputSpec, KernelContract, ParamValue

ORACLE_SOURCES: Final = frozenset({"reference-oracle"})
"""kernel_source tags of correctness oracles: on a cost tie, a production provider wins."""


@dataclass(frozen=True, slots=True, repr=False)
class Plan:
    """How one operation runs: the chosen kernel (None for a host operation), the steps in order,
    the bytes they move, and why every other candidate was rejected."""

    op: str
    """The operation's name: a namespace function ("add"), or the contract's op_kind when the
    judge plans a contract on its own."""
    op_kind: str | None
    """The op_kind of the contracts planned (None for a host operation outside them)."""
    kernel: KernelContract | None
    steps: tuple[Step, ...]
    cost: int
    rejected: Mapping[str, tuple[str, ...]]
    out_shape: Shape
    out_dtype: DType
    operands: tuple[Operand, ...]
    prep: tuple[tuple[Step, ...], ...] = field(repr=False)
    fn: KernelFn | None = field(default=None, repr=False, compare=False)
    params: tuple[ParamValue, ...] = ()
    """The values of the kernel's `accept.params` (an exponent, a reduction's axes), passed
    after its inputs."""
    size: int = field(init=False, repr=False, compare=False)
    """Element count of the output."""
    alignment: int = field(init=False, repr=False, compare=False)
    """Byte alignment of the output buffer: the chosen contract's `caps.alignment_bytes`."""
    prepared: bool = field(init=False, repr=False, compare=False)
    """True when some operand has a Cast / BroadcastTo / Contiguize step before the kernel."""
    tiled: bool = field(init=False, repr=False, compare=False)
    """True when some operand's Contiguize is made one block at a time (`Step.tiled`)."""

    def __post_init__(self) -> None:
        # Derived once per plan (plans are cached), so running a plan reads plain slots.
        object.__setattr__(self, "size", math.prod(self.out_shape))
        caps = self.kernel.caps if self.kernel is not None else None
        object.__setattr__(self, "alignment", caps.alignment_bytes if caps else DEFAULT_ALIGNMENT)
        object.__setattr__(self, "prepared", any(self.prep))
        object.__setattr__(self, "tiled", any(s.tiled for p in self.prep for s in p))

    def __reduce__(self) -> tuple[Callable[..., Plan], tuple[object, ...]]:
        """Pickled without the linked kernel function (provider functions need not pickle); it
        is linked again on load, by kernel name, from the loading process's registry."""
        return _relinked, (
            self.op,
            self.op_kind,
            self.kernel,
            self.steps,
            self.cost,
            dict(self.rejected),
            self.out_shape,
            self.out_dtype,
            self.operands,
            self.prep,
            self.params,
        )

    @property
    def backend(self) -> str:
        """The kernel_source of the chosen contract, or "host" for a NumPy host operation."""
        return "host" if self.kernel is None else self.kernel.kernel_source

    @property
    def kernel_name(self) -> str:
        """The chosen contract's name, or "host" for a NumPy host operation."""
        return "host" if self.kernel is None else self.kernel.name

    @property
    def provider(self) -> str:
        """The provider of the chosen contract, or "host" for a NumPy host operation."""
        return "host" if self.kernel is None else self.kernel.provider.name

    def __repr__(self) -> str:
        return (
            f"<Plan {self.op}: {self.kernel_name} via {self.provider}, "
            f"{' -> '.join(s.kind for s in self.steps)}, {self.cost:,} bytes moved>"
        )

    def __str__(self) -> str:
        args = ", ".join(f"{o.dtype.name}{list(o.layout.shape)}" for o in self.operands)
        if self.kernel is not None and self.params:
            named = zip(self.kernel.params, self.params, strict=True)
            args += "".join(f", {p.name}={v}" for p, v in named)
        head = (
            f"{self.op}({args}) -> {self.out_dtype.name}{list(self.out_shape)}"
            f"  via {self.provider}" + (f" [{self.op_kind}]" if self.op_kind else "")
        )
        lines = [head]
        lines += [f"  {i}. {s}" for i, s in enumerate(self.steps, 1)]
        lines.append(f"  cost: {self.cost:,} bytes moved ({self.price_source})")
        lines += rejection_lines(self.rejected)
        return "\n".join(lines)

    @property
    def price_source(self) -> str:
        """Where the plan's price comes from: the chosen contract's `cost.bytes_moved` formula
        and `cost.provenance` plus its steps' bytes (a host plan: its operands and result)."""
        if self.kernel is None:
            return "host: the bytes of its operands and result"
        cost = self.kernel.cost
        steps = sum(s.bytes for s in self.steps if s.kind is not StepKind.KERNEL)
        return (
            f"{self.kernel.name}'s cost.bytes_moved {cost.bytes_moved.raw!r}, provenance "
            f"{cost.provenance}; its steps {steps:,}"
        )

    def _repr_html_(self) -> str:
        """The notebook display (registered by `fueltensor.tools.display`)."""
        return present(self, "html")


def _relinked(
    op: str,
    op_kind: str | None,
    kernel: KernelContract | None,
    steps: tuple[Step, ...],
    cost: int,
    rejected: dict[str, tuple[str, ...]],
    out_shape: Shape,
    out_dtype: DType,
    operands: tuple[Operand, ...],
    prep: tuple[tuple[Step, ...], ...],
    params: tuple[ParamValue, ...] = (),
) -> Plan:
    """An unpickled Plan. When the active registry holds the same contract (same facts), the
    plan takes that registry's contract object and linked kernel, so it equals the sender's plan
    and can run; otherwise `fn` stays None and the plan is a record to read, not to run."""
    from fueltensor.engine.backends import current_policy

    fn = None
    reg = current_policy().registry
    if kernel is not None and kernel.registrable and kernel.name in reg:
        local = reg[kernel.name]
        if local.to_dict() == kernel.to_dict():
            kernel, fn = local, reg.kernel(kernel.name)
    return Plan(
        op,
        op_kind,
        kernel,
        steps,
        cost,
        MappingProxyType(rejected),
        out_shape,
        out_dtype,
        operands,
        prep,
        fn,
        params,
    )


@dataclass(frozen=True, slots=True)
class Planning:
    """Everything planning learned: viable plans best first, and the rejected contracts."""

    viable: tuple[Plan, ...]
    rejected: Mapping[str, tuple[str, ...]]
    to: Target | None = None
    """The dtype the operands were cast to instead of their promoted one (clip's x's)."""
    fixed: frozenset[int] = frozenset()
    """The operands left out of the promotion (where's condition)."""
    request: Request | None = None
    """What the call asked of its result (a cast's target dtype and rule)."""


def kernel_cost(contract: KernelContract, env: Mapping[str, float]) -> int | str:
    """The bytes `contract`'s `bytes_moved` formula gives for one call, or why that call cannot
    be priced (the formula fails, or gives a negative or non-finite number): a contract that
    cannot be priced is rejected for that call, never allowed to break or capture dispatch."""
    formula = contract.cost.bytes_moved
    try:
        value = formula.evaluate(env)
    except (ContractError, ArithmeticError) as e:
        return f"cost.bytes_moved cannot be priced for this call: {e}"
    if value < 0:
        return f"cost.bytes_moved {formula.raw!r} is negative ({value:g}) for {dict(env)}"
    return int(value)


def _dtype_verdict(specs: tuple[InputSpec, ...], operands: tuple[Operand, ...]) -> Verdict:
    """Arity, dtypes and ranks: what no step in front of the kernel can change."""
    if len(specs) != len(operands):
        return (f"takes {len(specs)} inputs, the operation has {len(operands)}",)
    fatal: list[str] = []
    for spec, o in zip(specs, operands, strict=True):
        if o.dtype.fkc not in spec.dtypes:
            fatal.append(f"{spec.name}: dtype {o.dtype.fkc} not in [{', '.join(spec.dtypes)}]")
        if spec.rank is not None and o.layout.ndim != spec.rank:
            fatal.append(f"{spec.name}: rank {o.layout.ndim}, the contract needs {spec.rank}")
    return tuple(fatal)


class Output(NamedTuple):
    """The output a contract's rules give for the (repaired) operands."""

    dtype: DType
    shape: Shape


def _output(
    contract: KernelContract, work: list[Operand], out_shape: Shape, params: tuple[object, ...]
) -> Output | Verdict:
    """The output dtype and shape by the contract's rules (for the call's `params`: a reduction's
    axes), or why they are not the operation's."""
    if len(contract.outputs) != 1:
        return (f"returns {len(contract.outputs)} outputs; a binary operation returns one",)
    out = contract.outputs[0]
    names = {s.name: i for i, s in enumerate(contract.inputs)}
    rule = out.dtype_rule
    if rule.kind == "fixed":
        dtype = BY_FKC[rule.args[0]]
    else:
        dtype_src = apply_rule(rule, names, work)
        assert isinstance(dtype_src, Operand)
        dtype = dtype_src.dtype
    axes = next((v for p, v in zip(contract.params, params, strict=True) if p.is_axes), ())
    assert isinstance(axes, tuple)
    if any(a >= o.layout.ndim for a in axes for o in work[:1]):
        return (f"axes {axes} are not all axes of a rank-{work[0].layout.ndim} input",)
    refused = unchained(out.shape_rule, names, work)
    if refused:
        return refused
    shape = apply_rule(out.shape_rule, names, work, axes)
    assert isinstance(shape, tuple)
    if shape != out_shape:
        return (
            f"its shape_rule {out.shape_rule.kind}({', '.join(out.shape_rule.args)}) gives "
            f"{shape}, the operation's result has shape {out_shape}",
        )
    return Output(dtype, shape)


def _kernel_step(
    contract: KernelContract, work: list[Operand], dtype: DType, shape: Shape
) -> Step | Verdict:
    """The kernel call, priced by the contract's `bytes_moved` formula (or why it cannot be)."""
    specs = contract.inputs
    env: dict[str, float] = {"n": math.prod(shape), "dtype_bytes": dtype.itemsize}
    env.update({f"{s.name}_count": w.count for s, w in zip(specs, work, strict=True)})
    env.update({f"{s.name}_bytes": w.dtype.itemsize for s, w in zip(specs, work, strict=True)})
    if contract.outputs[0].contracts:  # a contraction's dot-product length, a's last axis
        env[CONTRACTED] = work[0].layout.shape[-1]
    kernel_bytes = kernel_cost(contract, env)
    if isinstance(kernel_bytes, str):
        return (kernel_bytes,)
    return Step(
        kind=StepKind.KERNEL,
        operand=None,
        label=f"{contract.name}({', '.join(s.name for s in specs)}) -> {dtype.name}{list(shape)}",
        bytes=kernel_bytes,
    )


def _param_verdict(contract: KernelContract, params: tuple[object, ...]) -> Verdict:
    """Why the call's scalar parameters do not fit the contract's `accept.params` (or ())."""
    specs = contract.params
    if len(params) != len(specs):
        names = ", ".join(f"{p.name}: {p.type}" for p in specs) or "none"
        return (f"takes {len(specs)} parameter(s) ({names}); the call passes {len(params)}",)
    return tuple(r for p, v in zip(specs, params, strict=True) if (r := p.refusal(v)) is not None)


def _request_verdict(contract: KernelContract, request: Request | None) -> Verdict:
    """Why the contract's declared `op_params` are not the ones the call asks for (or ())."""
    if request is None:
        return ()
    rule = contract.outputs[0].dtype_rule if len(contract.outputs) == 1 else None
    if rule is not None and rule.kind == "fixed" and rule.args[0] != request.dtype.fkc:
        return (f"{OTHER_TARGET}{rule.args[0]}; the call asks for {request.dtype.fkc}",)
    return tuple(
        f"declares op_params.{key} {contract.op_params.get(key)!r}; the call asks for {want!r}"
        for key, want in request.op_params
        if contract.op_params.get(key) != want
    )


def admit(
    contract: KernelContract,
    op: str,
    operands: tuple[Operand, ...],
    out_shape: Shape,
    params: tuple[object, ...] = (),
    request: Request | None = None,
) -> Plan | Verdict:
    """A plan for running `contract` on `operands` (and the call's scalar `params`), or the
    reasons it cannot run them; `request`, what the call asks of its result (a cast's)."""
    fatal = _request_verdict(contract, request)
    if fatal[:1] and fatal[0].startswith(OTHER_TARGET):
        return fatal  # the one reason that matters: it computes something else
    fatal += _dtype_verdict(contract.inputs, operands) + _param_verdict(contract, params)
    if fatal:
        return fatal
    repairs = STRATEGY_REPAIRS.get(contract.caps.awkward_layout_strategy, False)
    work = list(operands)
    prep: list[list[Step]] = [[] for _ in operands]
    verdict = shape_repair(contract.inputs, work, prep, repairs) or layout_repair(
        contract.inputs, work, prep, repairs, blockwise(contract)
    )
    if verdict:
        return verdict
    output = _output(contract, work, out_shape, params)
    if not isinstance(output, Output):
        return output
    dtype, shape = output
    if request is not None and dtype is not request.dtype:
        return (f"{OTHER_TARGET}{dtype.fkc}; the call asks for {request.dtype.fkc}",)
    kernel = _kernel_step(contract, work, dtype, shape)
    if not isinstance(kernel, Step):
        return kernel
    steps = (*(s for p in prep for s in p), kernel)
    return Plan(
        op=op,
        op_kind=contract.op_kind,
        kernel=contract,
        steps=steps,
        cost=sum(s.bytes for s in steps),
        rejected={},
        out_shape=shape,
        out_dtype=dtype,
        operands=operands,
        prep=tuple(tuple(p) for p in prep),
        params=tuple(p.normal(v) for p, v in zip(contract.params, params, strict=True)),
    )


def _threaded(steps: tuple[Step, ...], fn: KernelFn | None, count: int) -> tuple[Step, ...]:
    """`steps` with the Kernel step (the last) saying which compiled body runs `fn` and on how
    many threads."""
    threads, body = threads_for(fn, count), compiled_body(fn) or ""
    if threads == 1 and not body:
        return steps
    return (*steps[:-1], replace(steps[-1], threads=threads, body=body))


def _tie(loser: KernelContract, winner: KernelContract) -> str:
    """Why a contract lost at the winner's cost: the registry's document order decided; it says
    how the loser could run."""
    doc, first = PurePath(loser.source.path).name, PurePath(winner.source.path).name
    levers = []
    if loser.provider.name != winner.provider.name:
        levers.append(f"use_backend({loser.provider.name!r})")
    if loser.source.path == winner.source.path:
        levers.append(f"declare it before {winner.name} in {doc}")
    else:
        levers.append(f"list {doc} before {first} in Registry.from_paths")
    return f" (a tie: registry order decides; to run it: {', or '.join(levers)})"


def _outranked(ranked: list[tuple[tuple[bool, int, int], Plan]]) -> dict[str, tuple[str, ...]]:
    """Why each admissible plan after the first (`ranked`, best first) lost to it."""
    out: dict[str, tuple[str, ...]] = {}
    if not ranked:
        return out
    (best_oracle, best_cost, _), best = ranked[0]
    assert best.kernel is not None
    for (oracle, cost, _), plan in ranked[1:]:
        assert plan.kernel is not None
        moved = f"{cost:,} bytes moved vs {best_cost:,} for {best.kernel.name}"
        if oracle and not best_oracle:
            why = f"admissible, but an oracle runs only where no production kernel does ({moved})"
        else:
            tie = "" if cost != best_cost else _tie(plan.kernel, best.kernel)
            why = f"admissible but outranked: {moved}{tie}"
        out[plan.kernel.name] = (why,)
    return out


def plan_contracts(
    op: str,
    op_kind: str,
    operands: tuple[Operand, ...],
    registry: Registry,
    providers: frozenset[str] | None,
    params: tuple[object, ...] = (),
    to: Target | None = None,
    fixed: frozenset[int] = frozenset(),
    request: Request | None = None,
    out_shape: Shape | None = None,
) -> Planning:
    """Every viable contract plan for the operation (best first) and why the others lost;
    `params` are the call's scalar parameters, checked against each contract's `accept.params`;
    `to`, a dtype the operands are cast to first instead of their promoted one; `fixed`, the
    operands never cast (`families.Traits.fixed`: a selection's condition); `request`, the result
    dtype and declared op_params the call asks for (a cast's target and rule). The contracts
    this installation cannot link are among the rejected, with why (`Registry.unlinked`);
    `out_shape`, the result's shape where it is not the operands' broadcast (a reduction's)."""
    if out_shape is None:
        out_shape = broadcast_shapes(*(o.layout.shape for o in operands))
    cast, casts = promote(operands, to, fixed)
    cast_steps = tuple(s for c in casts for s in c)
    cast_bytes = sum(s.bytes for s in cast_steps)
    ranked: list[tuple[tuple[bool, int, int], Plan]] = []
    rejected: dict[str, tuple[str, ...]] = {
        c.name: (UNLINKED + c.unlinked,) for c in registry.unlinked(op_kind)
    }
    for order, contract in enumerate(registry.for_op(op_kind)):
        excluded = registry.excluded(contract, providers)
        if excluded:
            rejected[contract.name] = (excluded,)
            continue
        verdict = admit(contract, op, cast, out_shape, params, request)
        if isinstance(verdict, tuple):
            rejected[contract.name] = verdict
            continue
        cost = verdict.cost + cast_bytes
        ranked.append(((contract.kernel_source in ORACLE_SOURCES, cost, order), verdict))
    ranked.sort(key=lambda kv: kv[0])
    frozen = MappingProxyType(rejected | _outranked(ranked))
    viable = tuple(
        replace(
            p,
            steps=cast_steps + _threaded(p.steps, fn, p.size),
            cost=key[1],
            rejected=frozen,
            prep=tuple(c + q for c, q in zip(casts, p.prep, strict=True)),
            operands=operands,
            fn=fn,
        )
        for key, p in ranked
        for fn in (registry.kernel(p.kernel.name) if p.kernel else None,)
    )
    return Planning(viable, frozen, to, fixed, request)
