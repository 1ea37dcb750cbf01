"""The validation that builds kernel contracts from parsed documents.

`build_provider` and `build_contract` turn the line-annotated YAML values the parser produces
(`Node`) into `Provider` and `KernelContract` objects (`fkc.schema`), or raise `ContractError`
naming the file, the line, the field and what is accepted.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import replace
from types import MappingProxyType
from typing import Final

from ..core.dtypes import BY_FKC
from ..core.errors import ContractError
from ..families import ABI_VERSIONS, CONTRACTED
from ..ops import CONTRACTING_RULES
from . import bounds
from .reader import Reader, join, kind
from .schema import (
    ACCEPT_SHAPE,
    ALIASING,
    AUTO_HASH,
    AWKWARD_LAYOUT_STRATEGIES,
    AXES,
    CAPS_SHAPE,
    CONTRACT_SHAPE,
    COST_SHAPE,
    DISPATCH,
    DTYPE_ARGUMENT_RULES,
    DTYPE_RULES,
    FAST_PATH_SHAPE,
    FKC_VERSIONS,
    FRONT_MATTER_SHAPE,
    INPUT_SHAPE,
    LAYOUT_FLAGS,
    LAYOUT_GUARANTEES,
    LAYOUT_SHAPE,
    LAYOUT_VALUES,
    MEASURED_ON_SHAPE,
    MEMORY_SHAPE,
    OUTPUT_SHAPE,
    PARAM_KINDS,
    PARAM_SHAPE,
    PRECISION_SHAPE,
    PROVIDER_SHAPE,
    REDUCING_RULES,
    RETURN_SHAPE,
    SHAPE_CONSTRAINT_KINDS,
    SHAPE_RULES,
    VARIADIC_RULES,
    Caps,
    Cost,
    InputSpec,
    KernelContract,
    MeasuredOn,
    OutputSpec,
    ParamSpec,
    Precision,
    Provider,
    Rule,
    ShapeConstraint,
    Source,
    revision_hash,
)
from .semantics import build_semantics
from .shapes import OPEN, Node, Scalar

_RULE: Final = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\(([^()]*)\)\Z")


def build_provider(node: Node, path: str) -> Provider:
    """The Provider a document's front matter declares."""
    r = Reader(path)
    top = r.mapping(node, FRONT_MATTER_SHAPE, "")
    version = r.integer(top["fkc_version"], "fkc_version")
    if version not in FKC_VERSIONS:
        r.fail(
            top["fkc_version"].line,
            "fkc_version",
            f"version {version} is not supported; accepted: 1",
        )
    p = r.mapping(top["provider"], PROVIDER_SHAPE, "provider")
    fields = {k: r.string(p[k], f"provider.{k}") for k in PROVIDER_SHAPE.required}
    measured = None
    if "measured_on" in p:
        m = r.mapping(p["measured_on"], MEASURED_ON_SHAPE, "provider.measured_on")
        measured = MeasuredOn(
            *(r.string(m[k], f"provider.measured_on.{k}") for k in MEASURED_ON_SHAPE.keys)
        )
    return Provider(
        **fields,
        fkc_version=version,
        path=path,
        dispatch=r.string(p["dispatch"], "provider.dispatch", DISPATCH)
        if "dispatch" in p
        else "default",
        measured_on=measured,
    )


def build_contract(node: Node, provider: Provider, description: str) -> KernelContract:
    """The KernelContract one ```fkc block declares, checked against its provider."""
    r = Reader(provider.path)
    top = r.mapping(node, CONTRACT_SHAPE, "")
    for key, expected in (("backend", provider.backend), ("kernel_source", provider.kernel_source)):
        value = r.string(top[key], key)
        if value != expected:
            r.fail(
                top[key].line,
                key,
                f"{value!r} disagrees with the front matter of provider {provider.name}; "
                f"accepted: {expected!r}",
            )
    accept = r.mapping(top["accept"], ACCEPT_SHAPE, "accept")
    inputs = _inputs(r, accept["inputs"])
    names = tuple(s.name for s in inputs)
    params = _params(r, accept.get("params"), names)
    outputs = _outputs(r, top["return"], inputs, params)
    contract = KernelContract(
        name=r.identifier(top["kernel"], "kernel"),
        op_kind=r.identifier(top["op_kind"], "op_kind"),
        blurb=r.text(top.get("blurb"), "blurb"),
        backend=provider.backend,
        kernel_source=provider.kernel_source,
        entry_point=r.string(top["entry_point"], "entry_point"),
        abi=_abi(r, top["abi"]) if "abi" in top else None,
        kernel_revision_hash=r.string(top["kernel_revision_hash"], "kernel_revision_hash")
        if "kernel_revision_hash" in top
        else AUTO_HASH,
        registrable=r.boolean(top["registrable"], "registrable") if "registrable" in top else True,
        dispatch=r.string(top["dispatch"], "dispatch", DISPATCH)
        if "dispatch" in top
        else "default",
        inputs=inputs,
        params=params,
        op_params=_op_params(r, accept.get("op_params")),
        outputs=outputs,
        caps=_caps(r, top["caps"]),
        cost=_cost(r, top["cost"], names, any(o.contracts for o in outputs)),
        precision=_precision(r, top["precision"]),
        determinism=r.string(top["determinism"], "determinism"),
        description=description,
        provider=provider,
        source=Source(provider.path, node.line, {k: v.line for k, v in top.items()}),
        semantics=build_semantics(r, top["semantics"]) if "semantics" in top else None,
    )
    if contract.kernel_revision_hash == AUTO_HASH:
        digest = revision_hash(provider.revision_base, contract.to_dict())
        contract = replace(contract, kernel_revision_hash=digest)
    return contract


def _abi(r: Reader, node: Node) -> int:
    """The declared C ABI version of the entry point: one fueltensor knows, or ContractError at
    its line naming them, so nothing is linked through a calling convention it cannot speak."""
    value = node.value
    if isinstance(value, bool) or not isinstance(value, int) or value not in ABI_VERSIONS:
        known = "; ".join(f"{v}, {what}" for v, what in ABI_VERSIONS.items())
        r.fail(
            node.line,
            "abi",
            f"{value!r} is not a C ABI version fueltensor knows; accepted: {known}",
        )
    return int(value)


def check_unique(contracts: Iterable[KernelContract]) -> None:
    """ContractError at the second declaration of any kernel name."""
    first: dict[str, KernelContract] = {}
    for c in contracts:
        if c.name in first:
            seen = first[c.name].source
            raise ContractError(
                f"duplicate kernel name {c.name!r} (first declared at {seen.path}:{seen.line}); "
                "accepted: a name no other contract in the registry uses",
                path=c.source.path,
                line=c.source.lines.get("kernel", c.source.line),
                field="kernel",
            )
        first[c.name] = c


def _inputs(r: Reader, node: Node) -> tuple[InputSpec, ...]:
    nodes = r.items(node, "accept.inputs")
    if not nodes:
        r.fail(node.line, "accept.inputs", "expected at least one input")
    raw: list[tuple[str, dict[str, Node]]] = []
    for i, item in enumerate(nodes):
        where = f"accept.inputs[{i}]"
        entries = r.mapping(item, INPUT_SHAPE, where)
        name = r.identifier(entries["name"], f"{where}.name")
        if any(name == n for n, _ in raw):
            r.fail(entries["name"].line, f"{where}.name", f"duplicate input name {name!r}")
        raw.append((name, entries))
    names = [n for n, _ in raw]
    return tuple(_input(r, f"accept.inputs[{i}]", e, names) for i, (_, e) in enumerate(raw))


def _input(r: Reader, where: str, e: dict[str, Node], names: list[str]) -> InputSpec:
    name = e["name"].value
    assert isinstance(name, str)
    dtypes: list[str] = []
    for d in r.items(e["dtypes"], f"{where}.dtypes"):
        code = r.string(d, f"{where}.dtypes", BY_FKC)
        if code in dtypes:
            r.fail(d.line, f"{where}.dtypes", f"dtype {code} is listed twice")
        dtypes.append(code)
    if not dtypes:
        r.fail(e["dtypes"].line, f"{where}.dtypes", f"expected at least one of {', '.join(BY_FKC)}")
    flags = r.mapping(e["layout"], LAYOUT_SHAPE, f"{where}.layout")
    layout = tuple(
        (f, r.string(flags[f], f"{where}.layout.{f}", LAYOUT_VALUES)) for f in LAYOUT_FLAGS
    )
    rank_node = e["rank"]
    rank = None if rank_node.value == "any" else rank_node.value
    if rank is not None and (
        isinstance(rank, bool) or not isinstance(rank, int) or not 0 <= rank <= bounds.MAX_RANK
    ):
        r.fail(
            rank_node.line,
            f"{where}.rank",
            f"got {kind(rank)}; accepted: any or an integer from 0 to {bounds.MAX_RANK}",
        )
    return InputSpec(
        name,
        tuple(dtypes),
        layout,
        rank,
        _shape_constraint(r, e.get("shape_constraint"), where, name, names),
    )


def _shape_constraint(
    r: Reader, node: Node | None, where: str, name: str, names: list[str]
) -> ShapeConstraint | None:
    if node is None or node.value is None:
        return None
    where = f"{where}.shape_constraint"
    others = [n for n in names if n != name]
    accepted = " | ".join(
        f"{k}=<{'|'.join(others) or 'another input'}>" for k in SHAPE_CONSTRAINT_KINDS
    )
    text = r.string(node, where)
    kind, sep, other = (part.strip() for part in text.partition("="))
    if not sep or kind not in SHAPE_CONSTRAINT_KINDS or other not in others:
        r.fail(node.line, where, f"{text!r} is not accepted; accepted: {accepted}")
    return ShapeConstraint(kind, other)


def _params(r: Reader, node: Node | None, inputs: tuple[str, ...]) -> tuple[ParamSpec, ...]:
    """The typed call-time parameters: identifiers unique among parameters and inputs."""
    if node is None or node.value is None:
        return ()
    params: list[ParamSpec] = []
    for i, item in enumerate(r.items(node, "accept.params")):
        where = f"accept.params[{i}]"
        entries = r.mapping(item, PARAM_SHAPE, where)
        name = r.identifier(entries["name"], f"{where}.name")
        if name in inputs or any(p.name == name for p in params):
            r.fail(
                entries["name"].line,
                f"{where}.name",
                f"{name!r} already names an input or parameter; accepted: a name of its own",
            )
        kind = r.string(entries["type"], f"{where}.type", PARAM_KINDS)
        if kind == AXES and any(p.is_axes for p in params):
            r.fail(entries["type"].line, f"{where}.type", "a contract takes one axes parameter")
        params.append(ParamSpec(name, kind))
    return tuple(params)


def _op_params(r: Reader, node: Node | None) -> Mapping[str, Scalar]:
    if node is None:
        return MappingProxyType({})
    return MappingProxyType(_scalars(r, node, "accept.op_params"))


def _scalars(r: Reader, node: Node, where: str) -> dict[str, Scalar]:
    """A mapping of free keys to scalar values (op_params, a fast path)."""
    entries = r.mapping(node, OPEN, where)
    out: dict[str, Scalar] = {}
    for key, child in entries.items():
        if isinstance(child.value, (dict, list)):
            r.fail(child.line, join(where, key), "expected a scalar (string, number, bool or ~)")
        r.within(child, join(where, key), _scalar_refusal(child.value))
        out[key] = child.value
    return out


def _scalar_refusal(value: Scalar) -> str | None:
    """Why a free scalar (an op_params or fast path value) is out of bounds, or None."""
    if isinstance(value, str):
        return bounds.string_refusal(value, multiline=True)
    if isinstance(value, float):
        return bounds.number_refusal(abs(value))
    return None


def _rule(
    r: Reader, node: Node, where: str, rules: Mapping[str, int], names: tuple[str, ...]
) -> Rule:
    text = r.string(node, where)
    accepted = ", ".join(
        f"{k}({', '.join(['<dtype>' if k in DTYPE_ARGUMENT_RULES else '<input>'] * n)}"
        f"{', ...' * (k in VARIADIC_RULES)})"
        for k, n in rules.items()
    )
    m = _RULE.match(text.strip())
    kind = m.group(1) if m else ""
    args = tuple(a.strip() for a in m.group(2).split(",")) if m else ()
    least = rules.get(kind)
    if least is None or not (len(args) == least or (kind in VARIADIC_RULES and len(args) > least)):
        r.fail(node.line, where, f"{text!r} is not accepted; accepted: {accepted}")
    if kind in DTYPE_ARGUMENT_RULES:
        if args[0] not in BY_FKC:
            r.fail(
                node.line,
                where,
                f"{text!r} names {args[0]!r}, not a dtype; dtypes: {', '.join(BY_FKC)}",
            )
        return Rule(kind, args)
    for a in args:
        if a not in names:
            r.fail(
                node.line,
                where,
                f"{text!r} names {a!r}, which is not an input; inputs: {', '.join(names)}",
            )
    if len(set(args)) != len(args):
        r.fail(node.line, where, f"{text!r} names the same input twice")
    return Rule(kind, args)


def _outputs(
    r: Reader, node: Node, inputs: tuple[InputSpec, ...], params: tuple[ParamSpec, ...]
) -> tuple[OutputSpec, ...]:
    """The outputs; a reducing shape rule needs the `axes` parameter it reads, a contracting
    one two matrix inputs."""
    names = tuple(s.name for s in inputs)
    ret = r.mapping(node, RETURN_SHAPE, "return")
    items = r.items(ret["outputs"], "return.outputs")
    if not items:
        r.fail(ret["outputs"].line, "return.outputs", "expected at least one output")
    outputs: list[OutputSpec] = []
    for i, item in enumerate(items):
        where = f"return.outputs[{i}]"
        e = r.mapping(item, OUTPUT_SHAPE, where)
        name = r.identifier(e["name"], f"{where}.name")
        if name in names or any(o.name == name for o in outputs):
            r.fail(e["name"].line, f"{where}.name", f"output name {name!r} is already used")
        outputs.append(
            OutputSpec(
                name=name,
                dtype_rule=_rule(r, e["dtype_rule"], f"{where}.dtype_rule", DTYPE_RULES, names),
                shape_rule=_contracting(
                    r,
                    e["shape_rule"],
                    f"{where}.shape_rule",
                    _reducing(
                        r,
                        e["shape_rule"],
                        f"{where}.shape_rule",
                        _rule(r, e["shape_rule"], f"{where}.shape_rule", SHAPE_RULES, names),
                        params,
                    ),
                    inputs,
                ),
                layout_guarantee=r.string(
                    e["layout_guarantee"], f"{where}.layout_guarantee", LAYOUT_GUARANTEES
                ),
                aliasing=r.string(e["aliasing"], f"{where}.aliasing", ALIASING),
            )
        )
    return tuple(outputs)


def _reducing(r: Reader, node: Node, where: str, rule: Rule, params: tuple[ParamSpec, ...]) -> Rule:
    """`rule`, checked: a reducing rule (`reduce(x)`) reads the call's axes, so the contract
    must declare a parameter of type `axes`."""
    if rule.kind in REDUCING_RULES and not any(p.is_axes for p in params):
        r.fail(
            node.line,
            where,
            f"{rule} removes the call's axes, and the contract takes none; declare them in "
            f"accept.params: {{name: axes, type: {AXES}}}",
        )
    return rule


def _contracting(
    r: Reader, node: Node, where: str, rule: Rule, inputs: tuple[InputSpec, ...]
) -> Rule:
    """`rule`, checked: a contracting rule (`matmul(a, b)`) multiplies two matrices (or stacks
    of them), so the contract's inputs are exactly its two tensors, of rank 2 or more."""
    if rule.kind not in CONTRACTING_RULES:
        return rule
    if len(inputs) != 2:
        r.fail(
            node.line,
            where,
            f"{rule} multiplies two tensors, and the contract takes {len(inputs)} inputs "
            f"({', '.join(s.name for s in inputs)}); accepted: exactly the two it names",
        )
    low = [s for s in inputs if s.rank is not None and s.rank < 2]
    if low:
        r.fail(
            node.line,
            where,
            f"{rule} multiplies matrices (..., M, K) @ (..., K, N), and input {low[0].name} is "
            f"of rank {low[0].rank}; accepted: rank any or 2 and more",
        )
    return rule


def _caps(r: Reader, node: Node) -> Caps:
    c = r.mapping(node, CAPS_SHAPE, "caps")
    fast_paths: list[Mapping[str, Scalar]] = []
    if "fast_paths" in c:
        for i, item in enumerate(r.items(c["fast_paths"], "caps.fast_paths")):
            where = f"caps.fast_paths[{i}]"
            entries = r.mapping(item, FAST_PATH_SHAPE, where)
            r.string(entries["when"], f"{where}.when")
            fast_paths.append(MappingProxyType(_scalars(r, item, where)))
    alignment = r.integer(
        c["alignment_bytes"], "caps.alignment_bytes", 1, bounds.MAX_ALIGNMENT_BYTES
    )
    if alignment & (alignment - 1):
        r.fail(
            c["alignment_bytes"].line,
            "caps.alignment_bytes",
            f"{alignment} is not accepted; accepted: a power of two",
        )
    return Caps(
        awkward_layout_strategy=r.string(
            c["awkward_layout_strategy"], "caps.awkward_layout_strategy", AWKWARD_LAYOUT_STRATEGIES
        ),
        fast_paths=tuple(fast_paths),
        in_place=r.boolean(c["in_place"], "caps.in_place"),
        alignment_bytes=alignment,
        access_granularity_bits=r.integer(
            c["access_granularity_bits"],
            "caps.access_granularity_bits",
            1,
            bounds.MAX_ACCESS_GRANULARITY_BITS,
        ),
    )


def _cost(r: Reader, node: Node, names: tuple[str, ...], contracting: bool) -> Cost:
    """The cost; its formulas read n, dtype_bytes, each input's count and bytes, and, for a
    contraction (`matmul(a, b)`), `k`, the length of its dot products."""
    c = r.mapping(node, COST_SHAPE, "cost")
    variables = frozenset(
        {"n", "dtype_bytes", *(f"{n}_count" for n in names), *(f"{n}_bytes" for n in names)}
        | ({CONTRACTED} if contracting else set())
    )
    memory = r.mapping(c["memory"], MEMORY_SHAPE, "cost.memory")
    return Cost(
        provenance=r.string(c["provenance"], "cost.provenance"),
        class_=r.string(c["class"], "cost.class"),
        flops=r.formula(c["flops"], "cost.flops", variables),
        bytes_moved=r.formula(c["bytes_moved"], "cost.bytes_moved", variables),
        overhead_ns=r.bound(c.get("overhead_ns"), "cost.overhead_ns"),
        memory=MappingProxyType(
            {k: r.formula(memory[k], f"cost.memory.{k}", variables) for k in MEMORY_SHAPE.keys}
        ),
    )


def _precision(r: Reader, node: Node) -> Precision:
    p = r.mapping(node, PRECISION_SHAPE, "precision")
    return Precision(
        bit_stable_on_same_hardware=r.boolean(
            p["bit_stable_on_same_hardware"], "precision.bit_stable_on_same_hardware"
        ),
        max_ulp=r.bound(p.get("max_ulp"), "precision.max_ulp"),
        max_relative=r.bound(p.get("max_relative"), "precision.max_relative"),
        max_absolute=r.bound(p.get("max_absolute"), "precision.max_absolute"),
        audited=r.boolean(p["audited"], "precision.audited"),
        notes=r.text(p.get("notes"), "precision.notes"),
    )
