"""From `a + b` to the kernel that ran: coerce the operands, plan (cached), run, record.

The binary contract operations and the comparisons (`fueltensor.ops.BINARY_OPS`,
`COMPARISON_OPS`; the unary ones are `engine.unary`'s, `explain` serves both) are looked up by
the op_kind their contracts declare; an operation no contract admits runs as a labelled host
operation (its NumPy ufunc). A `use_backend` restriction chooses among contract providers and
never moves an operation onto or off the host: dtypes no contract of any provider takes
(integers, bools) run on the host under it too, as every host function does; dtypes some
contract takes but no allowed contract admits raise `NoKernelError`, listing every candidate and
why it was rejected.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Final

import numpy as np

from fueltensor.core import dtypes as _dtypes
from fueltensor.core import operators
from fueltensor.core.errstate import ERRSTATE
from fueltensor.core.layout import Layout
from fueltensor.core.scalars import coerce, scalar_tensor
from fueltensor.core.storage import output_fits
from fueltensor.core.tensor import FuelTensor, check_inplace
from fueltensor.engine import backends, cast, contract, fast, reduce, ternary, unary
from fueltensor.engine.backends import Policy, current_policy, notify, record, trace, tracing
from fueltensor.engine.choice import decide
from fueltensor.engine.execute import HostFn, run
from fueltensor.engine.planner import Operand, Plan, Planning, Step, StepKind
from fueltensor.engine.scalar_forms import FORMS, planned, run_form
from fueltensor.families import TRAITS, Family
from fueltensor.kernels import reference
from fueltensor.kernels.compiled import CompiledKernel
from fueltensor.ops import (
    BINARY_OPS,
    BY_KIND,
    BY_NAME,
    COMPARISON_OPS,
    CONTRACT_OPS,
    HOST_CALLS,
    ContractOp,
    OpKind,
)

Scalar = bool | int | float | complex

_ORACLE_PREP: Final = ((), (StepKind.CONTIGUIZE,))
_NATIVE_PREP: Final = (
    *_ORACLE_PREP,
    (StepKind.BROADCAST_TO,),
    (StepKind.BROADCAST_TO, StepKind.CONTIGUIZE),
)
"""The operand preparations the fast path performs itself, for the oracle's kernels (a dense
copy) and for the compiled ones (a dense copy, broadcast first)."""


Cast = tuple[np.dtype[Any], Layout, _dtypes.DType]


def _after_casts(
    plan: Plan,
) -> tuple[list[Operand], list[tuple[StepKind, ...]], list[Cast | None]]:
    """Each operand as the fast path reads it after the plan's Cast (a dense tensor of the new
    dtype and the operand's own shape), the kinds of its remaining steps, and the cast's
    (NumPy dtype, dense layout, dtype), None where the plan casts nothing."""
    operands: list[Operand] = []
    kinds: list[tuple[StepKind, ...]] = []
    casts: list[Cast | None] = []
    for operand, steps in zip(plan.operands, plan.prep, strict=True):
        cast = steps[0].dtype if steps and steps[0].kind is StepKind.CAST else None
        if cast is not None:
            operand = Operand(cast, Layout.dense(operand.layout.shape))
            steps = steps[1:]
        operands.append(operand)
        kinds.append(tuple(s.kind for s in steps))
        casts.append(None if cast is None else (cast.np, operand.layout, cast))
    return operands, kinds, casts


def _fast_entry(plan: Plan) -> object | None:
    """The fast path's (opaque) entry for `plan`, or None when only the Python path may run it:
    a host plan, an output alignment finer than the fast path's 64 bytes, or a kernel that is
    neither a compiled fuel-cpu-backend body, a comparison's included (with BroadcastTo /
    Contiguize at most, after a Cast) nor the bundled oracle on operands of the output's dtype
    (Contiguize at most, after a Cast) nor a compiled provider's (`fast.foreign_entry`), or an
    output that cannot exist (the Python path refuses it). A Cast makes the operand a dense
    tensor of its own shape, as `execute.prepare` does (the same `astype` call), which the
    entry then reads like any dense operand."""
    if _FAST_MODULE is None or 64 % plan.alignment:
        return None
    if not output_fits(plan.out_shape, plan.out_dtype.itemsize):  # `run` refuses it
        return None
    if plan.params or len(plan.prep) != 2:
        return fast.param_entry(_FAST_MODULE, plan)
    # How the fast path reads an operand: its own dense elements, a dense copy (the plan's
    # BroadcastTo and/or Contiguize), or its single element repeated block by block (the same
    # steps on a one-element operand, never materialized at the output's size).
    AS_IS, DENSIFY, REPEAT = _FAST_MODULE.AS_IS, _FAST_MODULE.DENSIFY, _FAST_MODULE.REPEAT
    dt = plan.out_dtype
    out = (dt, Layout.dense(plan.out_shape), dt.np, plan.out_shape)
    operands, kinds, casts = _after_casts(plan)
    offsets = tuple(o.layout.offset for o in operands)
    # An operand read as it is must be dense (a user's contract may link a bundled kernel to
    # layouts the kernel itself refuses: the Python path then raises the kernel's error).
    for operand, prep in zip(operands, kinds, strict=True):
        if not prep and not operand.layout.flags.contiguous:
            return None
    codes = getattr(plan.fn, "__fueltensor_native__", None)  # a binary body's, or a comparison's
    codes = codes or getattr(plan.fn, "__fueltensor_compare__", None)
    if codes is not None:
        if any(k not in _NATIVE_PREP for k in kinds):
            return None
        modes = tuple(
            (REPEAT if o.layout.size == 1 else DENSIFY) if k else AS_IS
            for o, k in zip(operands, kinds, strict=True)
        )
        needs = tuple({AS_IS: plan.size, REPEAT: 1, DENSIFY: 0}[m] for m in modes)
        native: object | None = _FAST_MODULE.entry(
            *codes, *out, modes, offsets, needs, None, None, tuple(casts)
        )
        return native
    if type(plan.fn) is CompiledKernel:  # exactly: a subclass may call differently
        return fast.foreign_entry(_FAST_MODULE, plan, operands, kinds, tuple(casts))
    ufunc = _ORACLE.get(plan.fn) if plan.fn is not None else None
    if ufunc is None or any(o.dtype is not dt for o in operands):
        return None
    if any(k not in _ORACLE_PREP for k in kinds):
        return None
    strides = tuple(
        tuple(s * dt.itemsize for s in reference.src_strides(o.layout.shape, plan.out_shape))
        for o in operands
    )
    modes = tuple(DENSIFY if k else AS_IS for k in kinds)
    needs = tuple(o.layout.size for o in operands)
    call = (ufunc, reference.nans, reference.infinity_bits(dt.np))  # the NaNs redone after it
    oracle: object | None = _FAST_MODULE.entry(
        0, 0, *out, modes, offsets, needs, call, strides, tuple(casts)
    )
    return oracle


_ORACLE: Final[dict[Callable[..., Any], np.ufunc]] = {
    fn: ufunc
    for fn in reference.ENTRY_POINTS.values()
    if (ufunc := getattr(fn, "__fueltensor_ufunc__", None)) is not None
}
"""The bundled binary oracle kernels and the ufunc each calls on its broadcast views (the fast
path makes the same call)."""


_HOSTS: dict[str, HostFn] = dict(HOST_CALLS)
"""Each contract operation's host function, in a plain dict (read on every call)."""


DEFERRED: dict[type, Callable[[str, Any, Any], Any]] = {}
"""Array collections that run the eight operations themselves, block by block (a Dask array):
type -> handler(op, a, b). Filled by `fueltensor.dask.register()`."""


_CONFIG: Final = fast.FastConfig(
    policy_var=backends._POLICY,
    trace_var=backends._TRACE,
    observers_var=backends._OBSERVERS,
    default_policy=backends.default_policy,
    make_scalar=scalar_tensor,
    errstate=ERRSTATE,
    check_inplace=check_inplace,
    integer_forms=frozenset(FORMS),
    form_marker=fast.FORM_MARKER,
)
"""What the compiled fast path reads, by name (`_fast.configure`)."""
_FAST_MODULE: Final = fast.load(_CONFIG)
"""The compiled fast path (`ext._fast`), configured, or None where it is not built. It
serves only plans `_fast_entry` gives an entry, which the pure-NumPy kernels and the host never
get."""
_FAST: Final[Callable[[str, Any, Any], FuelTensor | None] | None] = (
    _FAST_MODULE.binary if _FAST_MODULE is not None else None
)
"""`ext._fast.binary`, or None where it is not built."""
_FAST_INPLACE: Final[Callable[[str, FuelTensor, Any], FuelTensor | None] | None] = (
    _FAST_MODULE.inplace if _FAST_MODULE is not None else None
)
"""`ext._fast.inplace`, or None where it is not built."""
_PLAN_KEY: Final = fast.key_function(_FAST_MODULE)
"""The plan-cache key's one definition in this build (`_fast.key` where compiled)."""


def choose(
    op: str, tensors: tuple[FuelTensor, FuelTensor], policy: Policy
) -> tuple[Plan, Planning]:
    """The plan an operation runs under `policy` (cached by operand signature), and the
    planning it came from."""
    key = _PLAN_KEY(op, *tensors)
    cached: tuple[Plan, Planning, object] | None = policy.plans.get(key)  # type: ignore[assignment]
    if cached is not None:
        return cached[0], cached[1]
    chosen = decide(BY_NAME[op], tuple(Operand(t._dtype, t._layout) for t in tensors), policy)
    policy.remember(key, (*chosen, _fast_entry(chosen[0])))
    return chosen


LOADERS: dict[str, Callable[[], None]] = {}
"""Top-level package of a collection type -> what fills its `DEFERRED` handlers on first sight
(the package root installs Dask's: the `dask` extra), so no import of Dask happens before."""


def _collection(kind: type) -> Callable[[str, Any, Any], Any] | None:
    """The `DEFERRED` handler for operands of type `kind` (learnt through `LOADERS`)."""
    handler = DEFERRED.get(kind)
    load = LOADERS.get(kind.__module__.partition(".")[0]) if handler is None else None
    if load is not None:
        load()
        handler = DEFERRED.get(kind)
    return handler


def binary(op: str, a: Any, b: Any) -> FuelTensor:
    """Run the contract operation `op` ("add" ...) on two operands and return a fresh tensor
    (an operand of a `DEFERRED` collection type hands the operation to that collection).

    A cached plan of two tensors, or of a tensor and a Python float / int / bool, with no trace
    or observer active, runs in one compiled call (`ext._fast`) when it is built: the same
    plan, kernel and output as below. `x ** 3` (an int exponent) runs the plan of its
    integer-scalar form (`engine.scalar_forms`), which the Python path plans and caches."""
    if _FAST is not None:
        fast = _FAST(op, a, b)
        if fast is not None:
            return fast
    return _python_binary(op, a, b)


def _python_binary(op: str, a: Any, b: Any) -> FuelTensor:
    """`binary` on the Python path: the integer-scalar form when it applies (`x ** 3`), else
    coerce, plan (cached), run, notify."""
    if op in FORMS:
        done = run_form(op, a, b, current_policy(), _fast_entry)
        if done is not None:
            return done
    try:
        tensors = coerce(a, b)
    except TypeError:
        handler = _collection(type(a)) or _collection(type(b))
        if handler is None:
            raise
        result: FuelTensor = handler(op, a, b)
        return result
    plan, planning = choose(op, tensors, current_policy())
    result = run(plan, tensors, _HOSTS[op])
    notify(planning, plan, tensors, result)
    return result


def binary_inplace(op: str, target: FuelTensor, other: Any) -> FuelTensor:
    """`target op= other`: computed fresh, then written through `target`'s strides; refused
    (target untouched) when the result's dtype or shape is not the target's.

    Served by the compiled fast path (`ext._fast.inplace`) where `binary` would be: the
    same plan, output and refusals as below (`x **= 3` included: see `binary`)."""
    if _FAST_INPLACE is not None:
        fast = _FAST_INPLACE(op, target, other)
        if fast is not None:
            return fast
    return _python_binary_inplace(op, target, other)


def _python_binary_inplace(op: str, target: FuelTensor, other: Any) -> FuelTensor:
    """`binary_inplace` on the Python path: coerce, plan (cached), check, run, notify, copy."""
    policy = current_policy()
    form = planned(op, target, other, policy, _fast_entry)
    tensors: tuple[FuelTensor, ...]
    if form is None:
        tensors = coerce(target, other)
        plan, planning = choose(op, tensors, policy)
    else:
        tensors, (plan, planning) = (target,), form
    check_inplace(target, plan.out_dtype, plan.out_shape, op)
    result = run(plan, tensors, _HOSTS[op])
    notify(planning, plan, tensors, result)
    target._array[...] = result._array
    return target


def compiled(fn: Callable[..., FuelTensor], op: str) -> Callable[..., FuelTensor]:
    """`fn`, a contract operation's namespace function (`binary(op, a, b)`), as one compiled
    callable where `ext._fast` is built: the fast path, else the Python path, with no Python
    frame in between. It carries `fn`'s name, docstring and signature. (The operators' compiled
    forms, reflected and in place too, are made by `core.operators`.)"""
    if _FAST_MODULE is None:
        return fn
    return operators.compiled(fn, op, "FORWARD", _python_binary)


def record_host(name: str, inputs: Sequence[FuelTensor], output: FuelTensor) -> None:
    """Record a host (NumPy) operation in every active trace, labelled `host`."""
    if not tracing():
        return
    moved = sum(t.size * t.dtype.itemsize for t in (*inputs, output))
    args = ", ".join(f"{t.dtype.name}{list(t.shape)}" for t in inputs)
    step = Step(
        kind=StepKind.HOST,
        operand=None,
        label=f"numpy {name}({args}) -> {output.dtype.name}{list(output.shape)}",
        bytes=moved,
    )
    record(
        Plan(
            op=name,
            op_kind=None,
            kernel=None,
            steps=(step,),
            cost=moved,
            rejected={},
            out_shape=output.shape,
            out_dtype=output.dtype,
            operands=tuple(Operand(t.dtype, t._layout) for t in inputs),
            prep=(),
        )
    )


def host_operation(fn: Callable[..., FuelTensor]) -> Callable[..., FuelTensor]:
    """Mark an array-API function that runs on the host (NumPy), so `explain` can show it and
    `trace` records it."""
    fn.__fueltensor_host__ = True  # type: ignore[attr-defined]
    return fn


_HOSTED: Final = (Family.CAST, Family.REDUCTION, Family.CONTRACTION)
"""The families whose calls the host may run, whose `explain` then runs and records them."""


def explain(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Plan:
    """The Plan `fn(*args)` runs. A contract operation is planned without running anything; a
    host operation is run (it is pure) and its recorded plan returned."""
    op = getattr(fn, "__fueltensor_op__", None)
    row = BY_NAME.get(op) if isinstance(op, str) else None
    if getattr(fn, "__fueltensor_composition__", False):
        raise TypeError(
            f"{fn.__name__} is a composition of planned steps (docs/reductions.md, 'The "
            "compositions'), and explain() plans one operation: see each step's plan with "
            f"`with ft.trace() as plans: ft.{fn.__name__}(...)`"
        )
    if row is not None and row.family is Family.CAST:
        planned_cast = cast.explained(current_policy(), *args, **kwargs)
        if planned_cast is not None:
            return planned_cast
    if row is not None and row.family is Family.REDUCTION:
        planned_reduce = reduce.explained(current_policy(), row.name, *args, **kwargs)
        if planned_reduce is not None:
            return planned_reduce
    if row is not None and row.family is Family.CONTRACTION:
        planned_matmul = contract.explained(current_policy(), *args, **kwargs)
        if planned_matmul is not None:
            return planned_matmul
    if row is None or row.family in _HOSTED:  # a host operation: run (it is pure), recorded
        if row is not None or getattr(fn, "__fueltensor_host__", False):
            with trace() as plans:
                fn(*args, **kwargs)
            if plans:
                return plans[-1]
        raise TypeError(
            f"explain() takes one of fueltensor's operations, got {getattr(fn, '__name__', fn)!r}"
        )
    op, policy = row.name, current_policy()
    make = getattr(fn, "__fueltensor_operands__", None)
    if make is not None:  # a three-operand row: its function's own coercion (`engine.ternary`)
        tensors, to = make(*args, **kwargs)
        return ternary.choose(op, tensors, to, policy)[0]
    arity = len(TRAITS[row.family].operands)
    if len(args) != arity:
        raise TypeError(f"{op} takes {arity} operand{'s' * (arity > 1)}, explain() got {len(args)}")
    if row.family is Family.UNARY:
        return unary.choose(op, unary.operand(args[0]), policy)[0]
    form = planned(op, args[0], args[1], policy, _fast_entry)
    return form[0] if form is not None else choose(op, coerce(*args), policy)[0]


def _operation(op: ContractOp) -> Callable[[Any, Any], FuelTensor]:
    """The namespace function of a contract operation."""
    name = op.name

    def operation(x1: Any, x2: Any, /) -> FuelTensor:
        return binary(name, x1, x2)

    operation.__name__ = operation.__qualname__ = name
    operation.__doc__ = (
        f"{op.summary}, element-wise, planned from the {op.op_kind} kernel contracts; their "
        f"documents state its numerics (`fueltensor contracts --op {op.op_kind}`)."
    )
    made = compiled(operation, name)
    made.__fueltensor_op__ = name  # type: ignore[attr-defined]
    return made


OPERATIONS: dict[str, Callable[[Any, Any], FuelTensor]] = {
    op.name: _operation(op) for op in (*BINARY_OPS, *COMPARISON_OPS)
}
"""The namespace functions of the two-operand contract operations, by name ("add", "less" ...)."""


def functions() -> dict[str, Callable[..., FuelTensor]]:
    """The namespace function of every contract operation by name, in table order: what the
    command line plans and compares (the three-operand ones and astype as their array API
    modules made them, `ternary.OPERATIONS`, `cast.OPERATIONS`, `reduce.OPERATIONS` and
    `contract.OPERATIONS`, which
    `import fueltensor` fills)."""
    made: dict[str, Callable[..., FuelTensor]] = {
        **OPERATIONS,
        **unary.OPERATIONS,
        **ternary.OPERATIONS,
        **cast.OPERATIONS,
        **reduce.OPERATIONS,
        **contract.OPERATIONS,
    }
    return {op.name: made[op.name] for op in CONTRACT_OPS if op.name in made}


# Spelled out so that type checkers and `fueltensor.__all__` see them; tests check the rows.
add = OPERATIONS[BY_KIND[OpKind.ADD].name]
subtract = OPERATIONS[BY_KIND[OpKind.SUB].name]
multiply = OPERATIONS[BY_KIND[OpKind.MUL].name]
divide = OPERATIONS[BY_KIND[OpKind.DIV].name]
remainder = OPERATIONS[BY_KIND[OpKind.REM].name]
pow = OPERATIONS[BY_KIND[OpKind.POW].name]
maximum = OPERATIONS[BY_KIND[OpKind.MAXIMUM].name]
minimum = OPERATIONS[BY_KIND[OpKind.MINIMUM].name]
less = OPERATIONS[BY_KIND[OpKind.LESS].name]
less_equal = OPERATIONS[BY_KIND[OpKind.LESS_EQUAL].name]
equal = OPERATIONS[BY_KIND[OpKind.EQUAL].name]
not_equal = OPERATIONS[BY_KIND[OpKind.NOT_EQUAL].name]
greater = OPERATIONS[BY_KIND[OpKind.GREATER].name]
greater_equal = OPERATIONS[BY_KIND[OpKind.GREATER_EQUAL].name]
