"""Write the frameworks' reduction contracts from what they do here: `python
benchmarks/framework_reductions.py --write [--only numpy]` probes NumPy's, PyTorch's and JAX's
sum, max and min on every float dtype and writes contracts/<provider>-reduce.md.

A framework promises no summation order (NumPy's follows the memory layout: pairwise down a
contiguous row, one row after another down axis 0; PyTorch and XLA split over their thread
pools), so a document declares none and the judge holds the sums to the bound of any order of
m - 1 additions in the declared accumulator (docs/reductions.md). What is measured here:

- the accumulator of a half type: 4096 ones summed along a contiguous row, down axis 0 and along
  a strided row: 4096 in each layout is a wider accumulator (F32); less, the format's own
  (NumPy's bfloat16 reaches 256, its float16 2048 down axis 0, where it adds row by row);
- max's and min's ±0 tie: rows of zeros of both signs (lengths 2 to 300, both layouts), read
  as the first rule of `ordered`, `lhs`, `rhs` that explains every result, else `either`;
- a NaN's payload: kept (quieted) or replaced by the canonical NaN.

Then `fueltensor judge --provider <provider>` holds each document to its bound and selections.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
from framework_comparisons import BLURB, DTYPES, command, front

from fueltensor.kernels.casting import bits_of
from fueltensor.ops import VALUE_REDUCTIONS, ContractOp, OpKind
from fueltensor.registry import provider_environment

Kernel = Callable[..., None]
TORCH = {OpKind.SUM: "torch.sum", OpKind.MAX: "torch.amax", OpKind.MIN: "torch.amin"}
"""PyTorch's reductions over a tuple of dims (`torch.max` over a dim returns indices too;
`torch.prod` takes one dim, so PyTorch has no product contract)."""
ENTRY: dict[str, Callable[[ContractOp], str]] = {
    "numpy": lambda row: f"numpy.{row.name}",
    "torch": lambda row: TORCH[row.op_kind],
    "jax": lambda row: f"jax.numpy.{row.name}",
}
"""Each provider's entry point of a reduction row (its providers module's names)."""
ACCUMULATED = (OpKind.SUM, OpKind.PROD)
"""The rows whose contracts declare an accumulator (the others select an element)."""
TIES = ("ordered", "lhs", "rhs")
UNPROMISED = (
    "no order promised, no invariance claimed (the framework's order follows its layout and "
    "threads)."
)
PROVIDERS = "fueltensor.kernels.frameworks"


def run(kernel: Kernel, x: np.ndarray, axes: tuple[int, ...]) -> np.ndarray:
    """`kernel` over `axes` of `x`, into a fresh output."""
    shape = tuple(n for i, n in enumerate(x.shape) if i not in axes)
    out = np.empty(shape, x.dtype)
    kernel(x, axes, out=out)
    return out


def layouts(base: np.ndarray) -> list[tuple[np.ndarray, tuple[int, ...]]]:
    """`base` (one row of values) as a contiguous row, down axis 0 of a 3-column matrix, and as
    a strided row: each reduced to the row's result."""
    column = np.repeat(base[:, None], 3, axis=1)
    strided = np.repeat(base, 2)[::2]
    return [(base[None, :].copy(), (1,)), (column, (0,)), (strided, (0,))]


def accumulator(kernel: Kernel, code: str, product: bool) -> str:
    """The accumulator a sum (`product`) of `code` shows: the format's own or, for a half type
    that sums 4096 ones (multiplies 64 copies of 1 + its epsilon: each step's rounding loses
    the square term) to the exact result in every layout, F32."""
    if code in ("F32", "F64"):
        return code
    dtype = DTYPES[code]
    step = 1 + float(ml_dtypes.finfo(dtype).eps) if product else 1.0
    n = 64 if product else 4096
    want = float(np.asarray(step**n if product else n).astype(dtype))
    row = np.full(n, step, dtype)
    exact = all(float(run(kernel, x, a).reshape(-1)[0]) == want for x, a in layouts(row))
    return "F32" if exact else code


def zero_tie(kernel: Kernel, code: str, is_max: bool) -> str:
    """The ±0 tie rule every probe of max (min) agrees with."""
    dtype, rng = DTYPES[code], np.random.default_rng(0)
    seen: list[tuple[np.ndarray, bool]] = []
    for n in (2, 3, 17, 300):
        for _ in range(8):
            row = np.where(rng.random(n) < 0.5, -0.0, 0.0).astype(dtype)
            for x, a in layouts(row):
                seen.append((row, bool(np.signbit(run(kernel, x, a).reshape(-1)[0]))))
    rules: dict[str, Callable[[np.ndarray], bool]] = {  # whether the result is -0
        "ordered": lambda r: bool(np.signbit(r).all() if is_max else np.signbit(r).any()),
        "lhs": lambda r: bool(np.signbit(r[0])),
        "rhs": lambda r: bool(np.signbit(r[-1])),
    }
    return next((t for t in TIES if all(rules[t](r) == neg for r, neg in seen)), "either")


def nan_rule(kernel: Kernel, code: str) -> str:
    """The `nan` line: payloads kept (quieted) or the canonical NaN, as the probes show."""
    dtype = DTYPES[code]
    f = bits_of(dtype)
    quiet = (1 << (f.mantissa - 1)) | (((1 << f.exponent) - 1) << f.mantissa)
    unsigned = np.dtype(f"u{dtype.itemsize}")
    got = set()
    for payload in (1, 3):
        row = np.array([1, quiet | payload, 2, quiet | (payload + 1)], unsigned).view(dtype)
        for x, a in layouts(row):
            bits = int(run(kernel, x, a).reshape(-1)[:1].view(unsigned)[0])
            got.add("kept" if bits & ~quiet in (payload, payload + 1) else "positive_canonical")
    sign = "kept" if got == {"kept"} else "any"
    return f"{{operand: either, result: [{', '.join(sorted(got))}], sign: {sign}}}"


def contract_text(provider: str, row: ContractOp, code: str, measured: dict[str, str]) -> str:
    """One contract: reduction `row` of `provider` at dtype `code`, as measured."""
    source = re.search(r'kernel_source: "([^"]+)"', front(provider))
    assert source is not None
    reverse = "rejected" if provider == "torch" else "allowed"  # PyTorch has no negative strides
    layout = (
        "{contiguous: allowed, strided: allowed, broadcast_stride0: allowed, start_offset: "
        f"allowed, reverse_strides: {reverse}}}"
    )
    name, bits = f"{provider}_{row.kernel_op}_{code.lower()}", 8 * DTYPES[code].itemsize
    accumulated = row.op_kind in ACCUMULATED
    params = f"{{accumulator: {measured['accumulator']}}}" if accumulated else "{}"
    precision = {
        OpKind.SUM: "Bounded as any order of m - 1 additions in the accumulator: |s - exact| <= "
        "gamma_(m-1) sum|x| + half an ULP (docs/reductions.md)",
        OpKind.PROD: "Bounded as any order of m - 1 multiplications in the accumulator: "
        "|p - exact| <= gamma_(m-1) |p| + half an ULP where no partial product leaves the "
        "normal range (docs/reductions.md)",
    }.get(row.op_kind, "Exact: one of the reduced elements")
    tie = "" if accumulated else f"  zero_tie: {measured['zero_tie']}\n"
    return f"""
## {name}: {row.name} over axes, {code}

`out = {ENTRY[provider](row)}(x, axes)`, the framework's own reduction.

```fkc
kernel: {name}
op_kind: {row.op_kind.value}
blurb: "{provider} {row.name} for {code}: {BLURB}"
backend: Cpu
kernel_source: "{source.group(1)}"
entry_point: "{ENTRY[provider](row)}"
kernel_revision_hash: auto
accept:
  inputs:
    - name: x
      dtypes: [{code}]
      layout: {layout}
      rank: any
  params:
    - name: axes
      type: axes
  op_params: {params}
return:
  outputs:
    - name: out
      dtype_rule: passthrough(x)
      shape_rule: reduce(x)
      layout_guarantee: contiguous
      aliasing: none
caps:
  awkward_layout_strategy: requires_contiguous
  in_place: false
  alignment_bytes: 64
  access_granularity_bits: {bits}
cost:
  provenance: author_estimate
  class: reduction
  flops: "x_count"
  bytes_moved: "x_count * x_bytes + n * x_bytes"
  memory: {{device_bytes: 0, host_bytes: "n * x_bytes", disk_bytes: 0}}
precision:
  bit_stable_on_same_hardware: true
  max_ulp: {"~" if accumulated else 0}
  max_relative: ~
  max_absolute: ~
  audited: true
  notes: "{precision}; measured on {measured["where"]}."
determinism: same_hardware_bitwise
semantics:
  source: [measurement]
  nan: {measured["nan"]}
{tie}  subnormals: kept
  notes: "Measured on {measured["where"]}: {UNPROMISED}"
```
"""


INTRO = """# {provider}: its reductions over axes

The framework's own reductions (`{example}` ...) as contracts of the same provider as
[`{provider}.md`](./{provider}.md) (its front matter), one per function and dtype, written by
`benchmarks/framework_reductions.py --write` from what its probes observed on {where}: no
summation order (none is promised), the accumulator of each half type as measured, max's and
min's ±0 tie and the NaN payloads as the probes found them. PyTorch has no product here:
`torch.prod` takes one dim, not a tuple.
"""


def covered(provider: str) -> list[ContractOp]:
    """The planned reductions `provider` has a function for (PyTorch: no product over dims)."""
    return [r for r in VALUE_REDUCTIONS if provider != "torch" or r.op_kind in TORCH]


def write(provider: str) -> None:
    """Probe `provider`'s reductions and write contracts/<provider>-reduce.md."""
    path = Path(__file__).resolve().parent.parent / "contracts" / f"{provider}-reduce.md"
    env = provider_environment(provider)
    assert env is not None
    where = f"{env.framework}, {env.isa}"
    kernels: dict[str, Any] = importlib.import_module(
        f"{PROVIDERS}.{provider}_provider"
    ).ENTRY_POINTS
    texts = []
    for row in covered(provider):
        for code in DTYPES:
            kernel = kernels[ENTRY[provider](row)]
            measured = {"where": where, "nan": nan_rule(kernel, code)}
            if row.op_kind in ACCUMULATED:
                measured["accumulator"] = accumulator(kernel, code, row.op_kind is OpKind.PROD)
            else:
                measured["zero_tie"] = zero_tie(kernel, code, row.op_kind is OpKind.MAX)
            print(provider, row.name, code, measured, flush=True)
            texts.append(contract_text(provider, row, code, measured))
    example = ENTRY[provider](VALUE_REDUCTIONS[0])
    intro = INTRO.format(provider=provider, example=example, where=where)
    path.write_text(front(provider) + intro + "".join(texts), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    return command(__doc__, "reduce", write, argv)


if __name__ == "__main__":
    sys.exit(main())
