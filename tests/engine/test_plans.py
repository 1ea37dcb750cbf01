"""Plans and their prices, held to the contracts' own words.

For every layout flag a view can carry, the steps `explain` shows and the bytes it charges are
recomputed here from first principles: each candidate contract's `bytes_moved` formula text (read
from the registry, evaluated by this file's own small evaluator), plus a `Contiguize` priced as
the bytes it copies (every element of the operand read once and written once) or, for a
stride-0 operand of a kernel whose document lets it run block by block (`same_as` inputs,
`semantics.position` invariant or nan_bits), as the distinct elements it reads once (its block
stays in cache), plus a `Cast` priced as its source read and its target written. The planner
must pick the cheapest viable production plan, the oracle only where no production kernel
admits the call, and a tie goes to registry order (docs/dispatch.md, "Which plan runs").
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import math
import operator
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from _extras import ROOT

import fueltensor as ft
from fueltensor.kernels._chassis import IMPLEMENTATION, NATIVE
from fueltensor.ops import BY_NAME
from fueltensor.registry import bundled_contracts_dir

_BINOPS: dict[type, Callable[[float, float], float]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
}

PRODUCTION = "fuel-cpu-backend"  # the production provider the bundled registry reads first
ORACLE = "reference-oracle"  # the oracle's kernel_source: it ranks after every production plan
ROW = 4
"""Distinct elements of VIEWS' broadcast_stride0 view: a 4-element row repeated three times."""

FLAGS = ("contiguous", "strided", "broadcast_stride0", "start_offset", "reverse_strides")
ITEMSIZE = {"float32": 4, "float64": 8, "float16": 2, "bfloat16": 2}
FKC = {"float32": "F32", "float64": "F64", "float16": "F16", "bfloat16": "BF16"}


def evaluate(text: str, env: Mapping[str, float]) -> float:
    """A cost formula's value: numbers, names, + - * / and parentheses (nothing else)."""

    def walk(node: ast.AST) -> float:
        if isinstance(node, ast.Expression):
            return walk(node.body)
        if isinstance(node, ast.Constant) and isinstance(node.value, (int, float)):
            return float(node.value)
        if isinstance(node, ast.Name):
            return float(env[node.id])
        if isinstance(node, ast.BinOp) and type(node.op) in _BINOPS:
            return _BINOPS[type(node.op)](walk(node.left), walk(node.right))
        raise AssertionError(f"not a cost formula: {ast.dump(node)}")

    return walk(ast.parse(text, mode="eval"))


def test_the_evaluator_reads_formulas_as_written() -> None:
    assert evaluate("3 * n * 4", {"n": 5}) == 60
    env = {"n": 2, "dtype_bytes": 4, "a_count": 6}
    assert evaluate("n * dtype_bytes + a_count * (dtype_bytes - 1) / 2", env) == 17


def tensor(shape: tuple[int, ...], dtype: str) -> ft.FuelTensor:
    values = np.arange(1, math.prod(shape) + 1, dtype=np.float64).reshape(shape)
    return ft.asarray(values, dtype=dtype)


# Views of shape (3, 4) and the layout flags each carries, worked out by hand from how the view
# is made: {name: (make the view from a dtype, its flags)}.
VIEWS: dict[str, tuple[Callable[[str], ft.FuelTensor], frozenset[str]]] = {
    "contiguous": (lambda d: tensor((3, 4), d), frozenset({"contiguous"})),
    "strided": (lambda d: tensor((3, 8), d)[:, ::2], frozenset({"strided"})),
    "transposed": (lambda d: tensor((4, 3), d).T, frozenset({"strided"})),
    "broadcast_stride0": (
        lambda d: ft.broadcast_to(tensor((4,), d), (3, 4)),
        frozenset({"broadcast_stride0"}),
    ),
    "start_offset": (lambda d: tensor((4, 4), d)[1:], frozenset({"contiguous", "start_offset"})),
    "reverse_strides": (
        lambda d: ft.flip(tensor((3, 4), d), axis=1),
        frozenset({"reverse_strides", "start_offset"}),
    ),
}


@pytest.mark.parametrize("name", VIEWS)
def test_the_hand_worked_flags_are_the_views_flags(name: str) -> None:
    make, flags = VIEWS[name]
    view = make("float32")
    assert {f for f in FLAGS if getattr(view.layout, f)} == flags


@dataclass(frozen=True)
class Priced:
    """What a contract should cost on some operands, worked out from its document."""

    contract: Any
    kinds: tuple[str, ...]
    step_bytes: tuple[int, ...]
    cost: int


def refused(spec: Any, flags: frozenset[str]) -> bool:
    """Whether an input's layout clause refuses a view carrying `flags`."""
    return any(
        (want == "required" and flag not in flags) or (want == "rejected" and flag in flags)
        for flag, want in spec.layout
    )


def price(
    contract: Any, operands: list[tuple[tuple[int, ...], frozenset[str]]], itemsize: int
) -> Priced:
    """The steps and bytes of running `contract` on same-dtype operands given as (shape, flags).

    A `same_as` input of another shape is first broadcast to the output shape (a stride-0 view,
    no bytes); any input whose layout clause refuses its view is Contiguized (read + write of
    every element it holds; a stride-0 one of a block-by-block kernel: its distinct elements
    read once); the kernel is charged its `bytes_moved` formula."""
    out_shape = tuple(np.broadcast_shapes(*(s for s, _ in operands)))
    semantics = contract.semantics
    blocks = (
        semantics is not None
        and semantics.effective_position in ("invariant", "nan_bits")
        and all(
            s.shape_constraint is None or s.shape_constraint.kind == "same_as"
            for s in contract.inputs
        )
    )
    kinds: list[str] = []
    step_bytes: list[int] = []
    counts = {}
    for spec, (shape, flags) in zip(contract.inputs, operands, strict=True):
        distinct = ROW if "broadcast_stride0" in flags else math.prod(shape)
        sc = spec.shape_constraint
        if sc is not None and sc.kind == "same_as" and shape != out_shape:
            shape, flags = out_shape, (flags - {"contiguous"}) | {"broadcast_stride0"}
            kinds.append("BroadcastTo")
            step_bytes.append(0)
        count = math.prod(shape)
        counts[f"{spec.name}_count"] = count
        if refused(spec, flags):
            kinds.append("Contiguize")
            tiled = blocks and "broadcast_stride0" in flags
            step_bytes.append((distinct if tiled else 2 * count) * itemsize)
    env = {"n": math.prod(out_shape), "dtype_bytes": itemsize, **counts}
    kernel = int(evaluate(str(contract.cost.bytes_moved), env))
    return Priced(contract, (*kinds, "Kernel"), (*step_bytes, kernel), sum(step_bytes) + kernel)


def candidates(op_kind: str, dtype: str) -> list[Any]:
    """The registrable contracts at `op_kind` that list `dtype` for every input, of the
    providers that join dispatch by default (the frameworks join only where named)."""
    reg = ft.registry()
    return [
        c
        for c in reg.for_op(op_kind)
        if c.registrable and reg.joins(c.provider) and all(FKC[dtype] in s.dtypes for s in c.inputs)
    ]


def best(priced: list[Priced]) -> Priced:
    """The cheapest production plan (the oracle's only when there is none), a tie going to the
    provider read first."""
    return min(
        priced,
        key=lambda p: (
            p.contract.kernel_source == ORACLE,
            p.cost,
            p.contract.provider.name != PRODUCTION,
        ),
    )


def provider_plans(op: Callable[..., Any], a: ft.FuelTensor, b: ft.FuelTensor) -> list[ft.Plan]:
    """The plan each provider would run on its own, asked through `use_backend`."""
    plans = []
    for backend in ("cpu", "reference"):
        with ft.use_backend(backend), contextlib.suppress(ft.NoKernelError):
            plans.append(ft.explain(op, a, b))
    return plans


def check_plan(
    op: Callable[..., Any],
    a: ft.FuelTensor,
    b: ft.FuelTensor,
    operands: list[tuple[tuple[int, ...], frozenset[str]]],
    dtype: str,
) -> ft.Plan:
    """The plan explain gives is the cheapest of the contracts' own prices, step for step."""
    plan = ft.explain(op, a, b)
    assert plan.op_kind is not None
    priced = [price(c, operands, ITEMSIZE[dtype]) for c in candidates(plan.op_kind, dtype)]
    want = best(priced)
    assert plan.kernel is not None and plan.kernel.name == want.contract.name, plan
    assert tuple(s.kind for s in plan.steps) == want.kinds, plan
    assert tuple(s.bytes for s in plan.steps) == want.step_bytes, plan
    assert plan.cost == want.cost, plan
    # Every provider's own plan costs what its contracts say, and no production plan is cheaper
    # than the pick.
    by_name = {p.contract.name: p for p in priced}
    for other in provider_plans(op, a, b):
        assert other.kernel is not None
        assert other.cost == by_name[other.kernel.name].cost, other
        assert plan.cost <= other.cost or other.kernel.kernel_source == ORACLE
    return plan


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("op", [ft.add, ft.maximum], ids=["add", "maximum"])
@pytest.mark.parametrize("lhs", VIEWS)
@pytest.mark.parametrize("rhs", ["contiguous", "start_offset", "reverse_strides"])
def test_every_layout_flag_is_planned_and_priced_from_the_contract(
    op: Callable[..., Any], lhs: str, rhs: str, dtype: str
) -> None:
    (make_a, flags_a), (make_b, flags_b) = VIEWS[lhs], VIEWS[rhs]
    operands = [((3, 4), flags_a), ((3, 4), flags_b)]
    plan = check_plan(op, make_a(dtype), make_b(dtype), operands, dtype)
    dense = {"contiguous"}
    if flags_a == dense and flags_b == dense:
        assert "Contiguize" not in [s.kind for s in plan.steps]
    else:
        assert [s.operand for s in plan.steps if s.kind == "Contiguize"] == [
            i for i, f in enumerate((flags_a, flags_b)) if f != dense
        ]


def test_an_offset_only_view_is_contiguized_and_charged() -> None:
    """The issue's example: `x[1:]` is dense but starts at offset 1, which the kernels refuse."""
    x, y = tensor((13,), "float32"), tensor((12,), "float32")
    plan = check_plan(
        ft.add,
        x[1:],
        y,
        [((12,), frozenset({"contiguous", "start_offset"})), ((12,), frozenset({"contiguous"}))],
        "float32",
    )
    assert [s.kind for s in plan.steps] == ["Contiguize", "Kernel"]
    assert plan.steps[0].operand == 0
    assert plan.cost == 2 * 12 * 4 + 3 * 12 * 4
    np.testing.assert_array_equal(np.asarray(ft.add(x[1:], y)), np.arange(2, 14) + np.arange(1, 13))


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize("op", [ft.add, ft.multiply, ft.maximum, ft.pow], ids=str)
@pytest.mark.parametrize("rhs", ["contiguous_row", "strided_row", "column"])
def test_broadcast_operands_are_priced_per_contract(
    op: Callable[..., Any], rhs: str, dtype: str
) -> None:
    big = tensor((3, 4), dtype)
    if rhs == "contiguous_row":
        small, spec = tensor((4,), dtype), ((4,), frozenset({"contiguous"}))
    elif rhs == "strided_row":
        small, spec = tensor((8,), dtype)[::2], ((4,), frozenset({"strided"}))
    else:
        small, spec = tensor((3, 1), dtype), ((3, 1), frozenset({"contiguous"}))
    check_plan(op, big, small, [((3, 4), frozenset({"contiguous"})), spec], dtype)
    check_plan(op, small, big, [spec, ((3, 4), frozenset({"contiguous"}))], dtype)


def test_a_cost_tie_goes_to_the_production_provider() -> None:
    """Same-shape f32 add: `3 * n * 4` and `n*4 + a_count*4 + b_count*4` are equal."""
    x = tensor((3, 4), "float32")
    plans = {p.provider: p for p in provider_plans(ft.add, x, x)}
    assert plans[PRODUCTION].cost == plans["fuel-reference-backend"].cost
    assert ft.explain(ft.add, x, x).provider == PRODUCTION


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("other", ["row", "scalar", "view"])
def test_the_oracle_cheaper_in_bytes_still_ranks_after_the_cpu_kernel(
    dtype: str, other: str
) -> None:
    """A broadcast row, a Python scalar and a broadcast view: the CPU kernel's plan runs, its
    stride-0 operands made dense block by block, though the oracle's formula charges fewer
    bytes for the first two (it reads each distinct element once); its rejection says why."""
    big = tensor((300, 40), dtype)
    args = {
        "row": (big, tensor((40,), dtype)),
        "scalar": (big, 0.5),
        "view": (ft.broadcast_to(tensor((40,), dtype), (300, 40)),) * 2,
    }[other]
    plan = ft.explain(ft.add, *args)
    assert plan.provider == PRODUCTION, plan
    tiled = [s for s in plan.steps if s.kind == "Contiguize"]
    assert tiled and all(s.tiled for s in tiled), plan
    with ft.use_backend("reference"):
        oracle = ft.explain(ft.add, *args)
    # The oracle makes a broadcast view dense at its own shape, the output's: more bytes.
    assert (oracle.cost < plan.cost) == (other != "view")
    (why,) = plan.rejected[oracle.kernel_name]
    assert why == (
        "admissible, but an oracle runs only where no production kernel does "
        f"({oracle.cost:,} bytes moved vs {plan.cost:,} for {plan.kernel_name})"
    )
    price_line = next(line for line in str(plan).splitlines() if line.startswith("  cost:"))
    formula = plan.kernel.cost.bytes_moved.raw  # type: ignore[union-attr]
    steps = plan.cost - plan.steps[-1].bytes
    assert price_line == (
        f"  cost: {plan.cost:,} bytes moved ({plan.kernel_name}'s cost.bytes_moved {formula!r}, "
        f"provenance judge_measured; its steps {steps:,})"
    )


@pytest.mark.parametrize(
    ("lhs", "rhs", "target"),
    [
        ("float16", "float32", "float32"),
        ("float32", "float64", "float64"),
        ("bfloat16", "float16", "float32"),
    ],
)
def test_a_cast_is_charged_its_source_read_and_target_write(
    lhs: str, rhs: str, target: str
) -> None:
    a, b = tensor((3, 4), lhs), tensor((3, 4), rhs)
    plan = ft.explain(ft.add, a, b)
    casts = [s for s in plan.steps if s.kind == "Cast"]
    want_casts = [12 * (ITEMSIZE[d] + ITEMSIZE[target]) for d in (lhs, rhs) if d != target]
    assert [s.bytes for s in casts] == want_casts
    kernel = price(
        ft.registry()[plan.kernel.name], [((3, 4), frozenset({"contiguous"}))] * 2, ITEMSIZE[target]
    )  # type: ignore[union-attr]
    assert plan.steps[-1].bytes == kernel.cost
    assert plan.cost == sum(want_casts) + kernel.cost


def test_input_counts_are_the_counts_the_kernel_sees(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    """A `same_as` operand broadcast for a kernel is charged at the broadcast count: the test
    document's formula reads `b_count` after BroadcastTo + Contiguize."""

    def kernel(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> None:
        np.add(a, b, out=out)

    ft.register_provider("plans-test", {"tests::counted": kernel})
    text = contract_text(provider="plans-test", kernel="counted", op_kind="AddElementwise")
    reg = ft.Registry.from_paths([write(text.replace("rank: 2", "rank: any"))])
    a, b = tensor((3, 4), "float32"), tensor((4,), "float32")
    with ft.use_registry(reg):
        plan = ft.explain(ft.add, a, b)
        out = np.asarray(a + b)
    formula = str(reg["counted"].cost.bytes_moved)
    assert formula == "a_count * dtype_bytes + b_count * dtype_bytes + n * dtype_bytes"
    assert [s.kind for s in plan.steps] == ["BroadcastTo", "Contiguize", "Kernel"]
    assert plan.steps[-1].bytes == evaluate(
        formula, {"a_count": 12, "b_count": 12, "n": 12, "dtype_bytes": 4}
    )
    assert plan.cost == 2 * 12 * 4 + 3 * 12 * 4
    np.testing.assert_array_equal(out, np.asarray(a) + np.asarray(b))


def test_a_rank_the_contract_does_not_take_is_refused(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    def kernel(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> None:
        np.add(a, b, out=out)

    ft.register_provider("rank-test", {"tests::ranked": kernel})
    reg = ft.Registry.from_paths([write(contract_text(provider="rank-test", kernel="ranked"))])
    with ft.use_registry(reg), ft.use_backend("rank-test"):
        assert (
            ft.explain(ft.add, tensor((2, 3), "float32"), tensor((2, 3), "float32")).kernel
            is not None
        )
        with pytest.raises(ft.NoKernelError, match="rank 3, the contract needs 2"):
            ft.explain(ft.add, tensor((2, 2, 3), "float32"), tensor((2, 2, 3), "float32"))


def test_bundled_contracts_dir_is_what_the_registry_reads() -> None:
    names = {c.name for c in ft.Registry.from_paths([bundled_contracts_dir()])}
    assert names == {c.name for c in ft.registry()}


@pytest.mark.parametrize("flag", ["start_offset", "reverse_strides", "strided"])
def test_each_flag_is_judged_on_its_own(
    contract_text: Callable[..., str], write: Callable[..., Path], flag: str
) -> None:
    """A contract that allows one flag and rejects the rest: only views carrying a rejected flag
    are contiguized, whatever else they carry."""

    def kernel(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> None:
        np.add(a, b, out=out)

    provider = f"flag-{flag.replace('_', '-')}-test"
    ft.register_provider(provider, {"tests::flagged": kernel})
    text = contract_text(provider=provider, kernel="flagged").replace(
        f"{flag}: rejected", f"{flag}: allowed"
    )
    text = text.replace("contiguous: required", "contiguous: allowed")
    reg = ft.Registry.from_paths([write(text)])
    (contract,) = list(reg)
    dense = tensor((3, 4), "float32")
    with ft.use_registry(reg), ft.use_backend(provider):
        for name, (make, flags) in VIEWS.items():
            if name == "broadcast_stride0":
                continue
            plan = ft.explain(ft.add, make("float32"), dense)
            want = price(contract, [((3, 4), flags), ((3, 4), frozenset({"contiguous"}))], 4)
            assert tuple(s.kind for s in plan.steps) == want.kinds, (name, plan)
            assert plan.cost == want.cost, (name, plan)
            np.testing.assert_array_equal(
                np.asarray(ft.add(make("float32"), dense)),
                np.asarray(make("float32")) + np.asarray(dense),
            )


def _add(a: np.ndarray, b: np.ndarray, *, out: np.ndarray) -> None:
    np.add(a, b, out=out)


def _tied(reg: ft.Registry, kernel: str) -> str:
    """The reason `kernel` lost a same-shape f32 add planned through `reg`."""
    x = tensor((3, 4), "float32")
    with ft.use_registry(reg):
        (reason,) = ft.explain(ft.add, x, x).rejected[kernel]
    return reason


def _runs(reg: ft.Registry, backend: str | None = None) -> str | None:
    """The kernel a same-shape f32 add runs through `reg` (under `use_backend(backend)`)."""
    x = tensor((3, 4), "float32")
    with ft.use_registry(reg), ft.use_backend(backend) if backend else contextlib.nullcontext():
        return ft.explain(ft.add, x, x).kernel_name


def test_a_tie_in_registry_order_names_the_levers_that_make_the_other_kernel_run(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    """A user's kernel that costs what add_f32 costs loses on registry order; the plan says how
    to make it run, and each lever it names does (followed as written, names and order read back
    from the message)."""
    ft.register_provider("tie-provider", {"tests::tied_add_f32": _add})
    doc = write(contract_text(provider="tie-provider", kernel="tied_add_f32"), "tied.md")
    bundled = sorted(bundled_contracts_dir().glob("*.md"))
    reason = _tied(ft.Registry.from_paths([*bundled, doc]), "tied_add_f32")
    assert "admissible but outranked: 144 bytes moved vs 144 for add_f32" in reason
    assert "a tie: registry order decides" in reason
    backend = re.search(r"use_backend\('([^']+)'\)", reason)
    assert backend is not None and backend[1] == "tie-provider"
    assert _runs(ft.Registry.from_paths([*bundled, doc]), backend[1]) == "tied_add_f32"
    order = re.search(r"list (\S+) before (\S+) in Registry\.from_paths", reason)
    assert order is not None and order[1] == doc.name
    by_name = {p.name: p for p in [*bundled, doc]}
    ahead = [by_name[order[1]], by_name[order[2]]]
    rest = [p for p in [*bundled, doc] if p not in ahead]
    assert _runs(ft.Registry.from_paths([*ahead, *rest])) == "tied_add_f32"
    assert _runs(ft.Registry.from_paths([*bundled, doc])) == "add_f32"  # as the plan said


def test_a_tie_inside_one_document_names_the_declaration_order(
    contract_text: Callable[..., str], write: Callable[..., Path]
) -> None:
    """Two kernels of one provider that tie: use_backend cannot separate them, the order of
    their declarations can; swapped as the message says, the other runs."""
    ft.register_provider("twin-provider", {"tests::twin_a": _add, "tests::twin_b": _add})
    first = contract_text(provider="twin-provider", kernel="twin_a")
    second = contract_text(provider="twin-provider", kernel="twin_b")
    block_a, block_b = first[first.index("## twin_a") :], second[second.index("## twin_b") :]
    head = first[: first.index("## twin_a")]
    reg = ft.Registry.from_paths([write(head + block_a + "\n" + block_b, "twins.md")])
    with ft.use_registry(reg), ft.use_backend("twin-provider"):
        (reason,) = ft.explain(ft.add, *[tensor((3, 4), "float32")] * 2).rejected["twin_b"]
    assert "use_backend" not in reason
    assert reason.endswith(
        "(a tie: registry order decides; to run it: declare it before twin_a in twins.md)"
    )
    swapped = ft.Registry.from_paths([write(head + block_b + "\n" + block_a, "twins.md")])
    assert _runs(swapped, "twin-provider") == "twin_b"


def test_the_workloads_contract_operations_plan_on_the_cpu_kernels() -> None:
    """examples/workload.py (layer norm, MLP, masked softmax): every operation a contract
    serves runs a CPU kernel (never the oracle), its broadcast rows and Python scalars made
    dense block by block; the two float32 matmuls run the host BLAS's (fuel-blas-backend)."""
    spec = importlib.util.spec_from_file_location("workload", ROOT / "examples" / "workload.py")
    assert spec is not None and spec.loader is not None
    workload = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(workload)
    with ft.trace() as plans:
        workload.block(*workload.inputs())
    planned = [p for p in plans if p.kernel is not None]
    if NATIVE is None or IMPLEMENTATION != "native":  # the unary and cast ones: compiled-only
        linked = ft.registry().for_op  # the contracts registrable here
        planned = [
            p
            for p in planned
            if any(c.provider.name == PRODUCTION for c in linked(p.op_kind or ""))
        ]
    blas = [p.op for p in planned if p.provider == "fuel-blas-backend"]
    assert blas == ["matmul", "matmul"]
    assert planned and all(p.provider == PRODUCTION for p in planned if p.op != "matmul"), [
        (p.op, p.provider) for p in planned
    ]
    assert any(s.tiled for p in planned for s in p.steps)


def test_explain_folds_the_providers_use_backend_leaves_out_into_one_line() -> None:
    """Under `use_backend("cpu")` every other provider's contract of the op kind is rejected for
    one reason: explain says so once, each provider with its count, not a line per kernel (a
    comparison: its CPU kernels are registrable with the pure-NumPy kernels too)."""
    x = ft.asarray(np.ones(4, np.float32))
    kind = BY_NAME["less"].op_kind
    with ft.use_backend("cpu"):
        text = str(ft.explain(ft.less, x, x))
    (line,) = [row for row in text.splitlines() if "excluded by use_backend" in row]
    others = [c.provider.name for c in ft.registry().for_op(kind)]
    counts = {name: others.count(name) for name in others if name != "fuel-cpu-backend"}
    assert counts and line == "  excluded by use_backend: " + ", ".join(
        f"{name} ({n} kernel{'s' * (n != 1)})" for name, n in counts.items()
    )
    assert "rejected broadcast_lt" not in text
