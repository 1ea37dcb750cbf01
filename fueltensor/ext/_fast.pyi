"""Type stub of dispatch's compiled fast path, built from `src/fast/` (one translation unit)."""

from collections.abc import Callable
from contextvars import ContextVar
from typing import Any, Protocol

ALIGNMENT: int
"""The byte alignment of every buffer `empty` and `binary` allocate."""
GUARD_BYTES: int
"""The bytes of guard pattern on each side of a compiled provider's fresh output on the fast
path, read after its call."""
AS_IS: int
"""An entry's mode: the operand's own dense elements are read."""
DENSIFY: int
"""An entry's mode: a dense copy of the operand (its BroadcastTo and/or Contiguize) is read."""
REPEAT: int
"""An entry's mode: the operand's single element is repeated block by block."""
REPEAT_HEAP_BYTES: int
"""The most a repeated element's block takes from the heap per operand, for a call long enough
that each body call over a block is split over the threads (shorter ones fill a stack block)."""
FORWARD: int
"""`operator`'s form: `x op y`."""
REFLECTED: int
"""`operator`'s form: `y op x`, x the instance."""
INPLACE: int
"""`operator`'s form: `x op= y`."""
HOST: int
"""`operator`'s form: `x op y` of a host function (`hooks.namespace.<op>(x, y)` for a tensor
and a tensor or Python scalar, else `fallback(x, y)`)."""
METHOD: int
"""`operator`'s form: a method `x.<op>(...)` run by the compiled call of the `ruled` function
`hooks.namespace.<op>` when it takes its arguments (with the method's meaning), else
`fallback`."""
REDUCE: int
"""`ruled`'s kind: `fn(x[, axis=, keepdims=])` is `call(a, axis=<axes>, keepdims=...[,
dtype=work])` of a ufunc's reduce."""
STATISTIC: int
"""`ruled`'s kind: `fn(x[, axis=, keepdims=])` is `call(a, axis=<axes>, keepdims=...)` of a
NumPy function (np.mean)."""
CAST: int
"""`ruled`'s kind: `fn(x, dtype)` is `a.astype(dtype.np)`."""
MATMUL: int
"""`ruled`'s kind: `fn(x1, x2)` is `call(a1, a2)` of two tensors of one DType."""
CORE_FIELDS: tuple[str, ...]
"""The fields `bind_core` reads, in order (`CoreConfig`'s, held equal by a test)."""
CONFIG_FIELDS: tuple[str, ...]
"""The fields `configure` reads, in order (`engine.fast.FastConfig`'s, held equal by a test)."""

def binary(op: str, a: Any, b: Any, /) -> Any:
    """dispatch.binary's result for two tensors, or a tensor and a Python float / int / bool
    (or a NumPy integer exponent of an integer-scalar form), when the cached plan has an
    entry and nothing traces or observes; else None."""

def inplace(op: str, target: Any, other: Any, /) -> Any:
    """dispatch.binary_inplace's result (the target, written through its strides) when `binary`
    would serve `op(target, other)`; else None. A result the target cannot hold raises
    `check_inplace`'s error with the target untouched."""

def adopt(array: Any, dtype: Any, /) -> Any:
    """`FuelTensor._from_dense(array, dtype)` for an exact ndarray of `dtype` that owns its
    memory, row-major and writable; else None."""

def scalar(value: Any, like: Any, /) -> Any:
    """`scalars.scalar_tensor(value, like)`, cached (its arrays read-only), for an exact Python
    float / int / bool beside tensor `like`; else None."""

def operator(op: str, form: int, fallback: Callable[..., Any], hooks: Any = None, /) -> Any:
    """A callable (a, b) that runs `binary(op, a, b)`'s fast path, else `fallback(op, a, b)`
    (form REFLECTED: operands swapped; INPLACE: `inplace(op, a, b)`'s fast path; HOST, given
    `hooks`: `hooks.namespace.<op>(a, b)` for a tensor and a tensor or Python float / int /
    bool, else `fallback(a, b)`; METHOD, given `hooks`: see METHOD); it binds as a method and
    takes attributes."""

def entry(
    kop: int,
    kdtype: int,
    out_dtype: Any,
    out_layout: Any,
    np_dtype: Any,
    shape: tuple[int, ...],
    modes: tuple[int, ...],
    offsets: tuple[int, ...],
    needs: tuple[int, ...],
    oracle: tuple[Any, Callable[[Any, Any, Any], None], int] | None,
    steps: tuple[tuple[int, ...], ...] | None,
    casts: tuple[tuple[Any, Any, Any] | None, ...],
    params: tuple[int, ...] = (),
    /,
) -> object | None:
    """What `binary` runs for a cached plan (an opaque object; see `dispatch._fast_entry`), or
    None for an oracle plan where NumPy's error state cannot be set from C. `oracle` is the
    reference oracle's (NumPy ufunc, `reference.nans`, its dtype's infinity bits): the ufunc
    is called, then the NaN rule where its output holds a NaN. `params` is a
    `_native.POWI_OP` kernel's (k,), k in i32 (none for any other kernel)."""

def foreign_entry(
    address: int,
    failure: Callable[[int, int, int, int], None],
    overrun: Callable[[int, int, int], None],
    out_dtype: Any,
    out_layout: Any,
    np_dtype: Any,
    shape: tuple[int, ...],
    modes: tuple[int, ...],
    offsets: tuple[int, ...],
    needs: tuple[int, ...],
    casts: tuple[tuple[Any, Any, Any] | None, ...],
    /,
) -> object | None:
    """What `binary` runs for a cached plan of a compiled provider's kernel, the function at
    `address` (see `engine.fast.foreign_entry`): each operand read AS_IS (`needs` elements from
    its offset) or DENSIFY (its dense copy, broadcast to `shape` when its need is the output's
    count); `failure(status, lhs_bytes, rhs_bytes, out_bytes)` raises a nonzero status,
    `overrun(before, after_first, after_last)` a write in the guard zones around its output."""

def byte_call(address: int, lhs: Any, rhs: Any, out: Any, /) -> int:
    """The status of the compiled kernel at `address` (the FKC byte-kernel C ABI) called on
    three C-contiguous arrays, `out` writable: inputs of at most 16 bytes as private copies,
    the GIL released from `GIL_FREE_FROM` output elements, the caller's FP flags kept."""

def empty(count: int, dtype: Any, /) -> Any:
    """An uninitialized 1-D array of `count` elements whose first byte is 64-byte aligned."""

class CoreConfig(Protocol):
    """The named fields `bind_core` reads (`fueltensor.core.shared.CoreConfig`)."""

    @property
    def tensor(self) -> type:
        """FuelTensor: the type served and built (`new_tensor` takes it or a subclass)."""
    @property
    def slots(self) -> tuple[Any, Any, Any, Any]:
        """The member descriptors of the tensor's storage, layout, dtype and NumPy-view object
        slots, in that order: their byte offsets are read from them, never from a name."""
    @property
    def layout(self) -> type:
        """Layout, a tuple subclass with a memoized `dense(shape)`."""
    @property
    def dtype(self) -> type:
        """DType."""
    @property
    def dtype_np(self) -> Any:
        """The member descriptor of DType's object slot holding its NumPy dtype (the plan-cache
        key's part)."""
    @property
    def array(self) -> Callable[[Any], Any]:
        """The tensor's NumPy view of exactly its elements (made once, kept in its slot)."""

def bind_core(config: CoreConfig, /) -> None:
    """Bind core's types and slots from `config`'s named fields (a wrong field raises TypeError
    naming it, and nothing changes). `fueltensor.core.tensor` calls it once at import."""

class Config(Protocol):
    """The named fields `configure` reads (dispatch passes `engine.fast.FastConfig`)."""

    @property
    def policy_var(self) -> ContextVar[Any]:
        """The active policy (None: the default policy)."""
    @property
    def trace_var(self) -> ContextVar[Any]:
        """The active traces (while any, `binary` returns None)."""
    @property
    def observers_var(self) -> ContextVar[Any]:
        """The active observers (while any, `binary` returns None)."""
    @property
    def default_policy(self) -> Callable[[], Any]:
        """Makes the default policy: called the first time the policy var holds None, its
        result kept until the next `configure`. A policy's `plans` attribute is its plan cache
        (a dict, read once per policy)."""
    @property
    def make_scalar(self) -> Callable[[Any, Any], Any]:
        """A Python scalar as the 0-d tensor beside a tensor."""
    @property
    def errstate(self) -> tuple[ContextVar[Any], Any] | None:
        """NumPy's error-state var and its all-ignore value (None: no oracle entries)."""
    @property
    def check_inplace(self) -> Callable[[Any, Any, tuple[int, ...], str], None]:
        """What an in-place operation refuses (`tensor.check_inplace`)."""
    @property
    def integer_forms(self) -> frozenset[str]:
        """Operations whose `x op k`, k an exact int or a NumPy integer scalar, `binary` and
        `inplace` serve from their integer-scalar form's cached plan (`x ** 3` is
        PowIElementwise), looked up under `form_key`."""
    @property
    def form_marker(self) -> str:
        """The first part of an integer-scalar form's plan-cache key (`form_key`)."""

def configure(config: Config, /) -> None:
    """Tell `binary`, `inplace` and the operators what they read of the engine, from `config`'s
    named fields (a wrong field raises TypeError naming it, and nothing changes)."""

def key(op: str, a: Any, b: Any, /) -> tuple[object, ...]:
    """The plan-cache key `dispatch.choose` stores `op(a, b)`'s plan under (two tensors): the
    key's only definition in a compiled build."""

def host(
    fn: Callable[..., Any],
    ufunc: Any,
    fresh: Callable[[Any], Any],
    arity: int,
    /,
) -> Any:
    """`fn`, a host function returning `fresh(ufunc(*arrays))` of its `arity` (1 or 2)
    operands' arrays, as one compiled call: tensors of one dtype (or a tensor and a Python
    scalar beside it), their
    arrays made, nothing tracing or observing, run in C (silenced as `host` silences); every
    other call, and any error, runs `fn`. Dense operands of one shape (0-d ones beside them)
    run the inner loop NumPy's ufunc call would run (its trivial loop, resolved once per
    signature; the result's `trivial_loops` lists the signatures kept). Takes attributes."""

def ruled(
    fn: Callable[..., Any],
    kind: int,
    call: Any,
    fresh: Callable[[Any], Any],
    rules: dict[Any, tuple[Any, Any, Any]],
    /,
) -> Any:
    """`fn`, a host function of `kind` (REDUCE, STATISTIC, CAST or MATMUL) calling `call`, as
    one compiled call: for an operand DType in `rules` (DType -> (NumPy dtype to cast the
    operands to first or None, `dtype=` to pass or None, result DType or None: NumPy's), no
    keyword but a reduction's `axis=` (None or one int) and `keepdims=`, an array made,
    nothing tracing or observing, the call runs in C (silenced as `host` silences), its result
    cast to the result DType and adopted as `fresh` adopts it; every other call, and any error,
    runs `fn`. A MATMUL `call` that is NumPy's matmul gufunc runs its loop itself for operands
    of one or two dimensions (no error state; the result's `inner_loops` lists the signatures
    kept). Takes attributes."""

def form_key(op: str, x: Any, k: int, /) -> tuple[object, ...]:
    """The plan-cache key `scalar_forms.choose` stores `op(x, k)`'s integer-scalar plan under
    (the form's marker, op, x's NumPy dtype and Layout, k): its only definition in a compiled
    build, which `binary` and `inplace` look up."""

def new_tensor(cls: type, storage: Any, layout: Any, dtype: Any, np: Any, /) -> Any:
    """A `cls` (FuelTensor) with these four slots: the one FuelTensor constructor of a compiled
    build (`shared.new_tensor`); the caller checks the layout against the storage."""

def getitem(t: Any, key: Any, /) -> Any:
    """The view t[key] for a basic index (ints, NumPy ints, slices, `...`, None, alone or in a
    tuple), raising `Layout.select`'s IndexError; None for any other key (the host's
    indexing). Basic indexing's one definition in a compiled build (`shared.basic_view`)."""

def select(layout: Any, key: Any, /) -> Any:
    """The Layout a basic index selects from `layout` (as `getitem`), or None when `key` is
    not a basic index."""

def inplace_refusal(t: Any, dtype: Any, shape: tuple[int, ...] | None, /) -> str | None:
    """Why tensor `t` cannot take an in-place result of `dtype` and `shape` (None: not
    compared): "dtype", "shape", "read-only", "stride0" or "overlap"; None when it can. The
    in-place rule's one definition in a compiled build (`tensor.check_inplace`)."""

def transpose(t: Any, /) -> Any:
    """The view of t with its axes reversed, else None."""
