"""The kernel-contract objects (frozen dataclasses) and the vocabulary of a document.

The `Shape` tree below is the single statement of which keys a document holds and how they
nest; the parser uses it to re-nest flattened blocks and `fkc.validate` to check documents,
which it turns into the objects defined here.
"""

from __future__ import annotations

import hashlib
import json
import operator
from collections.abc import Mapping
from dataclasses import asdict, dataclass, field
from types import MappingProxyType
from typing import Any, Final

from ..core.hooks import present
from ..ops import CONTRACTING_RULES
from .formula import Formula
from .semantics import SEMANTICS_SHAPE, Semantics
from .shapes import OPEN, Scalar, shape_of

LAYOUT_FLAGS: Final = (
    "contiguous",
    "strided",
    "broadcast_stride0",
    "start_offset",
    "reverse_strides",
)
LAYOUT_VALUES: Final = ("required", "rejected", "allowed")
"""`allowed` means no constraint on that flag."""
AWKWARD_LAYOUT_STRATEGIES: Final = ("requires_contiguous",)
SHAPE_CONSTRAINT_KINDS: Final = ("same_as", "broadcast_to")
DTYPE_RULES: Final = {"passthrough": 1, "fixed": 1}
"""Rule name -> number of arguments it takes, for `dtype_rule`: `passthrough(<input>)`, the
input's dtype; `fixed(<dtype code>)`, that dtype whatever the inputs' (a comparison's BOOL)."""
DTYPE_ARGUMENT_RULES: Final = ("fixed",)
"""The dtype rules whose argument is an FKC dtype code, not an input name."""
SHAPE_RULES: Final = {"same_as": 1, "broadcast": 2, "reduce": 1} | dict.fromkeys(
    CONTRACTING_RULES, 2
)
"""Rule name -> number of input names it takes, for `shape_rule` (the least, for a variadic).
`reduce(<input>)`: the input's shape without the call's axes (the contract's `axes` parameter;
docs/reductions.md). `matmul(<a>, <b>)`: a (..., M, K) times b (..., K, N) gives (stacks
broadcast, M, N) (docs/matmul.md)."""
REDUCING_RULES: Final = ("reduce",)
"""The shape rules that read the call's `axes` parameter: a contract with one declares it."""
VARIADIC_RULES: Final = ("broadcast",)
"""The rules that take that many input names or more (`broadcast(condition, x1, x2)`)."""
LAYOUT_GUARANTEES: Final = ("contiguous",)
ALIASING: Final = ("none",)
PARAM_TYPES: Final = {
    "i8": (-(2**7), 2**7 - 1),
    "i16": (-(2**15), 2**15 - 1),
    "i32": (-(2**31), 2**31 - 1),
    "i64": (-(2**63), 2**63 - 1),
    "u8": (0, 2**8 - 1),
    "u16": (0, 2**16 - 1),
    "u32": (0, 2**32 - 1),
    "u64": (0, 2**64 - 1),
}
"""Parameter type -> the closed range of integers a value of it may take (`accept.params`)."""
AXES: Final = "axes"
"""The parameter type of a reduction's axes: a sorted tuple of distinct axes of its input, none
negative (the namespace normalises `axis=-1` before planning)."""
PARAM_KINDS: Final = (*PARAM_TYPES, AXES)
"""Every `accept.params` type: the integer types and `axes`."""
ParamValue = int | tuple[int, ...]
"""A parameter's value in a plan: an integer, or a tuple of axes."""
FKC_VERSIONS: Final = (1,)
AUTO_HASH: Final = "auto"

DISPATCH: Final = ("default", "when_named")
"""`when_named`: the provider's contracts join dispatch only where the provider is named
(`use_backend`, `compare_backends`, `judge --provider`, `Registry.joined`), never by default;
declared by one contract, only where that contract is named by its kernel name."""
MEASURED_ON_SHAPE: Final = shape_of("framework isa")
PROVIDER_SHAPE: Final = shape_of(
    "name backend kernel_source link_registry revision_base dispatch? measured_on?",
    measured_on=MEASURED_ON_SHAPE,
)
FRONT_MATTER_SHAPE: Final = shape_of("fkc_version provider", provider=PROVIDER_SHAPE)
LAYOUT_SHAPE: Final = shape_of(" ".join(LAYOUT_FLAGS))
INPUT_SHAPE: Final = shape_of("name dtypes layout rank shape_constraint?", layout=LAYOUT_SHAPE)
PARAM_SHAPE: Final = shape_of("name type")
OUTPUT_SHAPE: Final = shape_of("name dtype_rule shape_rule layout_guarantee aliasing")
FAST_PATH_SHAPE: Final = shape_of("when class? note?")
MEMORY_SHAPE: Final = shape_of("device_bytes host_bytes disk_bytes")
ACCEPT_SHAPE: Final = shape_of(
    "inputs params? op_params?", inputs=[INPUT_SHAPE], params=[PARAM_SHAPE], op_params=OPEN
)
RETURN_SHAPE: Final = shape_of("outputs", outputs=[OUTPUT_SHAPE])
CAPS_SHAPE: Final = shape_of(
    "awkward_layout_strategy fast_paths? in_place alignment_bytes access_granularity_bits",
    fast_paths=[FAST_PATH_SHAPE],
)
COST_SHAPE: Final = shape_of(
    "provenance class flops bytes_moved overhead_ns? memory", memory=MEMORY_SHAPE
)
PRECISION_SHAPE: Final = shape_of(
    "bit_stable_on_same_hardware max_ulp? max_relative? max_absolute? audited notes?"
)
CONTRACT_SHAPE: Final = shape_of(
    "kernel op_kind registrable? dispatch? blurb? backend kernel_source entry_point "
    "abi? kernel_revision_hash? accept return caps cost precision determinism semantics?",
    accept=ACCEPT_SHAPE,
    semantics=SEMANTICS_SHAPE,
    caps=CAPS_SHAPE,
    cost=COST_SHAPE,
    precision=PRECISION_SHAPE,
    **{"return": RETURN_SHAPE},
)
PROSE_KEYS: Final = ("blurb",)
"""Document keys that are prose (our own words), not facts: left out of `to_dict()`."""


@dataclass(frozen=True)
class Source:
    """Where a contract was declared; `lines` maps each top-level key to its line."""

    path: str
    line: int
    lines: Mapping[str, int] = field(default_factory=dict, compare=False, repr=False)


@dataclass(frozen=True)
class MeasuredOn:
    """The framework (name and version) and the instruction set a document was measured on."""

    framework: str
    isa: str


@dataclass(frozen=True)
class Provider:
    """A document's front matter: who provides the kernels and how they are linked."""

    name: str
    backend: str
    kernel_source: str
    link_registry: str
    revision_base: str
    fkc_version: int
    path: str
    dispatch: str = "default"
    """A value of `DISPATCH`: whether the contracts join dispatch by default."""
    measured_on: MeasuredOn | None = None
    """What the document's measured facts were measured with (None: nothing measured, e.g.
    facts that follow from a formula)."""

    def to_dict(self) -> dict[str, Any]:
        """The front matter as the document writes it (`fkc_version`, `provider: {...}`); the
        optional keys only when the document sets them."""
        provider = {
            k: getattr(self, k) for k in PROVIDER_SHAPE.keys if k in PROVIDER_SHAPE.required
        }
        if self.dispatch != "default":
            provider["dispatch"] = self.dispatch
        if self.measured_on is not None:
            provider["measured_on"] = asdict(self.measured_on)
        return {"fkc_version": self.fkc_version, "provider": provider}

    @property
    def when_named(self) -> bool:
        """True when the contracts join dispatch only where the provider is named."""
        return self.dispatch == "when_named"


@dataclass(frozen=True)
class ShapeConstraint:
    """How an input's shape relates to another input's: `same_as=x` or `broadcast_to=x`."""

    kind: str
    other: str

    def __str__(self) -> str:
        return f"{self.kind}={self.other}"


@dataclass(frozen=True)
class InputSpec:
    """One accepted operand: its name, FKC dtype codes, layout flags, rank and shape relation."""

    name: str
    dtypes: tuple[str, ...]
    layout: tuple[tuple[str, str], ...]
    rank: int | None
    shape_constraint: ShapeConstraint | None

    def to_dict(self) -> dict[str, Any]:
        """This input as its document writes it (`KernelContract.to_dict`)."""
        sc = self.shape_constraint
        return {
            "name": self.name,
            "dtypes": list(self.dtypes),
            "layout": dict(self.layout),
            "rank": "any" if self.rank is None else self.rank,
            "shape_constraint": None if sc is None else str(sc),
        }


@dataclass(frozen=True, slots=True)
class ParamSpec:
    """A typed scalar the caller passes with the operands at each call (an integer exponent,
    say): unlike `op_params`, whose values the document fixes, its value is the call's."""

    name: str
    type: str
    """One of `PARAM_KINDS`: an integer type ("i32") or `AXES`."""

    def refusal(self, value: object) -> str | None:
        """Why `value` cannot be passed as this parameter, or None when it can."""
        if self.is_axes:
            return _axes_refusal(self.name, value)
        low, high = PARAM_TYPES[self.type]
        try:
            number = None if isinstance(value, bool) else operator.index(value)  # type: ignore[arg-type]
        except TypeError:
            number = None
        if number is None:
            return (
                f"parameter {self.name} takes an integer ({self.type}), got {type(value).__name__}"
            )
        if not low <= number <= high:
            return f"parameter {self.name}={number} is outside {self.type} [{low}, {high}]"
        return None

    @property
    def is_axes(self) -> bool:
        """Whether it is a reduction's axes (type `AXES`), which a `reduce` shape rule reads."""
        return self.type == AXES

    def normal(self, value: Any) -> ParamValue:
        """An admitted `value` as a plain Python value: a NumPy integer exponent as an int, a
        tuple of axes as a tuple of ints."""
        return tuple(int(a) for a in value) if self.is_axes else int(value)

    def to_dict(self) -> dict[str, Any]:
        """This parameter as its document writes it (`KernelContract.to_dict`)."""
        return {"name": self.name, "type": self.type}


def _axes_refusal(name: str, value: object) -> str | None:
    """Why `value` is not an `AXES` parameter's value (a sorted tuple of distinct ints >= 0)."""
    if not isinstance(value, tuple) or not all(
        isinstance(a, int) and not isinstance(a, bool) for a in value
    ):
        return f"parameter {name} takes a tuple of axes (ints), got {value!r}"
    if any(a < 0 for a in value) or list(value) != sorted(set(value)):
        return f"parameter {name}={value!r} is not sorted, distinct axes >= 0"
    return None


@dataclass(frozen=True)
class Rule:
    """An output rule such as `passthrough(lhs)`, `same_as(lhs)` or `broadcast(a, b)`."""

    kind: str
    args: tuple[str, ...]

    def __str__(self) -> str:
        return f"{self.kind}({', '.join(self.args)})"


@dataclass(frozen=True)
class OutputSpec:
    """One output: how its dtype and shape follow from the inputs, its layout, its aliasing."""

    name: str
    dtype_rule: Rule
    shape_rule: Rule
    layout_guarantee: str
    aliasing: str

    @property
    def contracts(self) -> bool:
        """Whether its shape rule is a contraction's (`matmul(a, b)`): its cost reads `k`."""
        return self.shape_rule.kind in CONTRACTING_RULES

    def to_dict(self) -> dict[str, Any]:
        """This output as its document writes it (`KernelContract.to_dict`)."""
        return {
            "name": self.name,
            "dtype_rule": str(self.dtype_rule),
            "shape_rule": str(self.shape_rule),
            "layout_guarantee": self.layout_guarantee,
            "aliasing": self.aliasing,
        }


class _ReadOnlyMap(dict[str, Any]):
    """A `MappingProxyType`'s contents on their way through pickle (proxies do not pickle)."""


def _thaw(value: Any) -> Any:
    if isinstance(value, MappingProxyType):
        return _ReadOnlyMap(value)
    if type(value) is tuple:
        return tuple(_thaw(v) for v in value)
    return value


def _freeze(value: Any) -> Any:
    if isinstance(value, _ReadOnlyMap):
        return MappingProxyType(dict(value))
    if type(value) is tuple:
        return tuple(_freeze(v) for v in value)
    return value


class _PicklesReadOnlyMaps:
    """Pickling for frozen dataclasses that hold read-only mappings: they travel as dicts and
    are wrapped again on load, so a contract (and a Plan holding one) reaches a Dask worker."""

    def __getstate__(self) -> dict[str, Any]:
        return {k: _thaw(v) for k, v in vars(self).items()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for k, v in state.items():
            object.__setattr__(self, k, _freeze(v))


@dataclass(frozen=True)
class Caps(_PicklesReadOnlyMaps):
    """What the kernel can cope with: awkward layouts, fast paths, in-place, alignment."""

    awkward_layout_strategy: str
    fast_paths: tuple[Mapping[str, Scalar], ...]
    in_place: bool
    alignment_bytes: int
    access_granularity_bits: int


@dataclass(frozen=True)
class Cost(_PicklesReadOnlyMaps):
    """The declared cost: provenance, class, and formulas in `n` (the output's elements),
    `dtype_bytes` (the output's element bytes), `<input>_count` and `<input>_bytes` (an input's
    elements and element bytes)."""

    provenance: str
    class_: str
    flops: Formula
    bytes_moved: Formula
    overhead_ns: float | None
    memory: Mapping[str, Formula]


@dataclass(frozen=True)
class Precision:
    """The declared precision bounds (None = not declared) and whether they were audited."""

    bit_stable_on_same_hardware: bool
    max_ulp: float | None
    max_relative: float | None
    max_absolute: float | None
    audited: bool
    notes: str


@dataclass(frozen=True, eq=False, repr=False)
class KernelContract(_PicklesReadOnlyMaps):
    """One kernel's contract as a document declares it; compare contracts with `to_dict()`.

    `repr` is one line, `str` and the notebook display are a card of its facts.
    """

    name: str
    op_kind: str
    blurb: str
    backend: str
    kernel_source: str
    entry_point: str
    kernel_revision_hash: str
    registrable: bool
    inputs: tuple[InputSpec, ...]
    params: tuple[ParamSpec, ...]
    """The call-time parameters (`accept.params`), in declared order; () for most kernels."""
    op_params: Mapping[str, Scalar]
    outputs: tuple[OutputSpec, ...]
    caps: Caps
    cost: Cost
    precision: Precision
    determinism: str
    description: str
    provider: Provider
    source: Source
    semantics: Semantics | None = None
    """The declared `semantics` section (None when the document declares none)."""
    dispatch: str = "default"
    """A value of `DISPATCH`: `when_named`, the contract joins dispatch only where its kernel
    name is named (the seeds' formula remainders, beside the exact one)."""
    abi: int | None = None
    """The C ABI version of a compiled kernel's entry point (`families.ABI_VERSIONS`), as the
    document declares it beside `entry_point`; None where it declares none (a Python kernel, or
    a byte kernel of `ft.load_library`, version 1)."""
    unlinked: str = ""
    """Why this installation cannot link the kernel (a compiled-only kernel where the extension
    is not built): set by the registry, which then makes the contract not `registrable`; "" for
    every contract it links. A fact of the installation, not of the document."""

    def __repr__(self) -> str:
        """Its name and a one-line summary (registered by `fueltensor.tools.display`)."""
        return present(self, "repr")

    def __str__(self) -> str:
        """A card of its facts (registered by `fueltensor.tools.display`)."""
        return present(self, "str")

    def _repr_html_(self) -> str:
        """The notebook display (registered by `fueltensor.tools.display`)."""
        return present(self, "html")

    def input(self, name: str) -> InputSpec:
        """The input called `name`; KeyError naming the inputs this contract has."""
        for spec in self.inputs:
            if spec.name == name:
                return spec
        names = ", ".join(s.name for s in self.inputs)
        raise KeyError(f"contract {self.name} has no input {name!r}; its inputs are {names}")

    def to_dict(self) -> dict[str, Any]:
        """The contract's facts as a canonical nested mapping with the documents' own keys.

        Prose (`blurb`, and the section text in `description`) is left out, so two documents
        that say the same things in different words give equal dicts.
        """
        return {
            "kernel": self.name,
            "op_kind": self.op_kind,
            "registrable": self.registrable,
            **({"dispatch": self.dispatch} if self.dispatch != "default" else {}),
            "backend": self.backend,
            "kernel_source": self.kernel_source,
            "entry_point": self.entry_point,
            **({"abi": self.abi} if self.abi is not None else {}),
            "kernel_revision_hash": self.kernel_revision_hash,
            "accept": {
                "inputs": [s.to_dict() for s in self.inputs],
                # Only when declared, so documents without parameters keep their revision hashes.
                **({"params": [p.to_dict() for p in self.params]} if self.params else {}),
                "op_params": dict(self.op_params),
            },
            "return": {"outputs": [o.to_dict() for o in self.outputs]},
            "caps": {
                "awkward_layout_strategy": self.caps.awkward_layout_strategy,
                "fast_paths": [dict(p) for p in self.caps.fast_paths],
                "in_place": self.caps.in_place,
                "alignment_bytes": self.caps.alignment_bytes,
                "access_granularity_bits": self.caps.access_granularity_bits,
            },
            "cost": {
                "provenance": self.cost.provenance,
                "class": self.cost.class_,
                "flops": self.cost.flops.raw,
                "bytes_moved": self.cost.bytes_moved.raw,
                "overhead_ns": self.cost.overhead_ns,
                "memory": {k: f.raw for k, f in self.cost.memory.items()},
            },
            "precision": {
                "bit_stable_on_same_hardware": self.precision.bit_stable_on_same_hardware,
                "max_ulp": self.precision.max_ulp,
                "max_relative": self.precision.max_relative,
                "max_absolute": self.precision.max_absolute,
                "audited": self.precision.audited,
                "notes": self.precision.notes,
            },
            "determinism": self.determinism,
            **({"semantics": self.semantics.to_dict()} if self.semantics is not None else {}),
        }


UNHASHED: Final = ("kernel_revision_hash", "semantics", "dispatch")
"""Facts left out of the revision hash: the hash itself, the `semantics` section, which spells
out what the kernel already does (declaring it makes no new revision of the kernel, so the
seeds' documents, which say it in prose, keep their hashes), and `dispatch`, which says where
the kernel joins, not what it computes."""


def revision_hash(revision_base: str, facts: Mapping[str, Any]) -> str:
    """A stable 16-hex-digit hash of a provider build id and a contract's facts."""
    payload = {k: v for k, v in facts.items() if k not in UNHASHED}
    text = json.dumps([revision_base, payload], sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:16]
