"""The compiled fast path's interface (`ext._fast`): its configuration, and the plan-cache
key both dispatch paths use.

Every decision the fast path shares with dispatch's Python path has one definition. The
plan-cache key is `_fast.key` where the module is built (its C lookup packs the same parts), and
`python_key` only where it is not; the two are tested equal. The fast path's mode and form codes
are `_fast`'s constants (dispatch reads them there), and its kernel op / dtype numbers are
`_native`'s (read by `kernels._chassis`).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from contextvars import ContextVar
from functools import partial
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final, NamedTuple

from fueltensor.core.layout import Layout
from fueltensor.engine.execute import raise_status
from fueltensor.engine.steps import Operand, StepKind
from fueltensor.kernels.compiled import CompiledKernel

if TYPE_CHECKING:
    from fueltensor.core.tensor import FuelTensor
    from fueltensor.engine.planner import Plan

PlanKey = tuple[object, ...]


class FastConfig(NamedTuple):
    """What `_fast.configure` reads, by field name (see `ext/_fast.pyi`): the engine's context
    variables and hooks. Core's types were bound by `core.shared.bind` already."""

    policy_var: ContextVar[Any]
    """The active `use_backend` / `use_registry` policy (None: the default)."""
    trace_var: ContextVar[Any]
    """The active traces: while any, the Python path runs (it records plans)."""
    observers_var: ContextVar[Any]
    """The active observers: while any, the Python path runs (it notifies them)."""
    default_policy: Callable[[], Any]
    """Makes the default policy (`backends.default_policy`): called once, its result kept."""
    make_scalar: Callable[[Any, Any], Any]
    """A Python scalar as the 0-d tensor beside a tensor (`scalars.scalar_tensor`)."""
    errstate: tuple[ContextVar[Any], Any] | None
    """NumPy's error-state var and its all-ignore value (None: no oracle entries)."""
    check_inplace: Callable[[Any, Any, tuple[int, ...], str], None]
    """`tensor.check_inplace`: what an in-place operation refuses, and its error."""
    integer_forms: frozenset[str]
    """Operations with an integer-scalar form (`engine.scalar_forms.FORMS`): for `x op k`, k a
    Python int or NumPy integer scalar, the compiled path looks up that form's plan."""
    form_marker: str
    """`FORM_MARKER`: the first part of an integer-scalar form's plan-cache key."""


FORM_MARKER: Final = "integer-scalar form"
"""First part of an integer-scalar form's plan-cache key (no operation is named so): `x ** 2`
never meets the plan of `x ** 2.0` or of two tensors."""


def compiled() -> ModuleType | None:
    """`ext._fast` (not configured), or None where it is not built."""
    try:
        from fueltensor.ext import _fast
    except ImportError:
        return None
    return _fast


def load(config: FastConfig) -> ModuleType | None:
    """`ext._fast`, configured with `config`, or None where it is not built."""
    module = compiled()
    if module is not None:
        module.configure(config)
    return module


def python_key(op: str, a: FuelTensor, b: FuelTensor) -> PlanKey:
    """The plan-cache key of `op(a, b)` where `_fast` is not built: `_fast.key`'s parts
    (the operation, then each operand's NumPy dtype and Layout)."""
    return (op, a._dtype.np, a._layout, b._dtype.np, b._layout)


def key_function(fast: ModuleType | None) -> Callable[[str, FuelTensor, FuelTensor], PlanKey]:
    """The plan-cache key's one definition in this build: `_fast.key`, else `python_key`."""
    if fast is None:
        return python_key
    made: Callable[[str, FuelTensor, FuelTensor], PlanKey] = fast.key
    return made


def python_form_key(op: str, x: FuelTensor, k: int) -> PlanKey:
    """The plan-cache key of `op(x, k)` in its integer-scalar form where `_fast` is not built:
    `_fast.form_key`'s parts (the marker, the operation, x's NumPy dtype and Layout, k)."""
    return (FORM_MARKER, op, x._dtype.np, x._layout, k)


def form_key_function(fast: ModuleType | None) -> Callable[[str, FuelTensor, int], PlanKey]:
    """The integer-scalar form key's one definition in this build: `_fast.form_key`, else
    `python_form_key`."""
    if fast is None:
        return python_form_key
    made: Callable[[str, FuelTensor, int], PlanKey] = fast.form_key
    return made


def param_entry(fast: ModuleType, plan: Plan) -> object | None:
    """`fast`'s entry for a plan of one operand with kernel parameters (`x ** 3`'s
    PowIElementwise kernel), or None: a compiled body (`__fueltensor_native__`) reading the
    operand as it is (dense) or a dense copy (the plan's Contiguize), with `plan.params`. The
    caller (`dispatch._fast_entry`) has checked the output's alignment and size."""
    codes = getattr(plan.fn, "__fueltensor_native__", None)
    if codes is None or not plan.params or len(plan.prep) != 1:
        return None
    kinds = tuple(s.kind for s in plan.prep[0])
    (operand,) = plan.operands
    if kinds not in ((), (StepKind.CONTIGUIZE,)) or not (kinds or operand.layout.flags.contiguous):
        return None
    dt = plan.out_dtype
    made: object | None = fast.entry(
        *codes,
        *(dt, Layout.dense(plan.out_shape), dt.np, plan.out_shape),
        (fast.DENSIFY if kinds else fast.AS_IS, fast.AS_IS),
        (operand.layout.offset, 0),
        (0 if kinds else plan.size, 0),
        None,
        None,
        (None, None),
        plan.params,
    )
    return made


_FOREIGN_PREP: Final = (
    (),
    (StepKind.CONTIGUIZE,),
    (StepKind.BROADCAST_TO,),
    (StepKind.BROADCAST_TO, StepKind.CONTIGUIZE),
)
"""The operand preparations a compiled provider's entry performs (after a Cast)."""


def foreign_entry(
    fast: ModuleType,
    plan: Plan,
    operands: Sequence[Operand],
    kinds: Sequence[tuple[StepKind, ...]],
    casts: tuple[object, ...],
) -> object | None:
    """`fast`'s entry for a plan whose kernel is a compiled provider's (`CompiledKernel`), or
    None: its C function called on the buffers `execute.prepare` would hand it, each operand
    (after its Cast: `operands`, `kinds`, `casts`) of the output's dtype and read as it is
    (dense) or as the dense copy of its Contiguize, after a BroadcastTo (to the output's shape:
    the operation's, which the planner broadcasts to). A nonzero status raises the Python path's
    error (`execute.raise_status`)."""
    fn = plan.fn
    assert isinstance(fn, CompiledKernel)
    modes, needs = [], []
    for operand, steps in zip(operands, kinds, strict=True):
        if operand.dtype is not plan.out_dtype or steps not in _FOREIGN_PREP:
            return None
        need = plan.size if StepKind.BROADCAST_TO in steps else operand.layout.size
        copy = StepKind.CONTIGUIZE in steps
        if not copy and not (operand.layout.flags.contiguous and need in (0, operand.layout.size)):
            return None  # read as it is: its own dense elements (a broadcast adds only 1s), or none
        modes.append(fast.DENSIFY if copy else fast.AS_IS)
        needs.append(need)
    dt = plan.out_dtype
    made: object | None = fast.foreign_entry(
        fn.address,
        partial(raise_status, plan),
        *(dt, Layout.dense(plan.out_shape), dt.np, plan.out_shape),
        tuple(modes),
        tuple(o.layout.offset for o in operands),
        tuple(needs),
        casts,
    )
    return made
