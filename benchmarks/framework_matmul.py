"""Write the frameworks' matmul contracts from what they do here: `python
benchmarks/framework_matmul.py --write [--only numpy]` probes NumPy's, PyTorch's and JAX's
matmul at their default precisions on every float dtype and writes contracts/<provider>-matmul.md.

A framework promises no order for a dot product (a BLAS blocks K by its kernel's choice and
splits the work over threads) and no invariance, so a document declares neither, nor
`products` (held to rounded products' bound, the widest), and the judge holds it to the bound
of any order of K terms in the declared accumulator (docs/matmul.md). What is measured here:

- the accumulator: K = 4096 ones (a half-type accumulator stops at 256 or 2048, float32 or
  wider gives 4096), then three products 2^E, 2^(E-p) and 2^T (p the output's significant
  bits) chosen so the exact sum rounds up from the output's midpoint, a float32 accumulator
  loses 2^T in any order (so the output ties to even, down) and a float64 one keeps it: the
  narrowest accumulator that explains both is declared;
- subnormals: a subnormal operand times one, kept or flushed;
- threads: the bits of a cancelling 300 x 200 @ 200 x 150 product on one thread and on two
  (PyTorch's `set_num_threads`, NumPy's BLAS through threadpoolctl; JAX's XLA pool is fixed at
  start-up). Printed and written as prose only: no framework promises it, so none is declared.

NumPy has no bfloat16 matmul: `np.matmul` promotes ml_dtypes' bfloat16 to float32 and returns
float32 (its BLAS sgemm), so no BF16 -> BF16 call exists to declare; the document says so.
Then `fueltensor judge --provider <provider>` holds each document to its bound.
"""

from __future__ import annotations

import importlib
import re
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager, nullcontext
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
from framework_comparisons import BLURB, DTYPES, command, front

from fueltensor.kernels.casting import bits_of
from fueltensor.ops import CONTRACTION_OPS
from fueltensor.registry import provider_environment

Kernel = Callable[..., None]
(ROW,) = CONTRACTION_OPS
ENTRY = {"numpy": f"numpy.{ROW.host.__name__}", "torch": f"torch.{ROW.name}",
         "jax": f"jax.numpy.{ROW.name}"}  # fmt: skip
"""Each provider's entry point of the matmul row (its providers module's names)."""
OMITTED = {
    ("numpy", "BF16"): "NumPy has no bfloat16 matmul loop: `np.matmul` promotes ml_dtypes' "
    "bfloat16 operands to float32 and returns float32 (its BLAS sgemm), so there is no BF16 -> "
    "BF16 call of NumPy's to declare (rounding its float32 result would be a wrapper's, not "
    "NumPy's)."
}
"""The (provider, dtype) pairs left out, and why (written into the document)."""
WIDE = {"F32": (0, -50), "BF16": (0, -40), "F16": (14, -28)}
"""The three-product probe's E and T per dtype (F64: nothing wider is declarable)."""
SHAPES = ((1, 1), (1, 16), (16, 1), (16, 16), (64, 48))
"""The three-product probe's M and N: a dot, a vector times a matrix and back, matrices (a
framework picks its BLAS call by shape: a dot, gemv or gemm may accumulate differently)."""
BOUND = (
    "Bounded as any order of K rounded products summed in the accumulator: |c - exact| <= "
    "gamma_K sum|a||b| + half an ULP (docs/matmul.md)"
)
UNPROMISED = (
    "no order, no products and no invariance declared (the framework promises none: its BLAS "
    "or XLA blocks K and splits the work over threads as it chooses); NaN payloads not promised."
)
PROVIDERS = "fueltensor.kernels.frameworks"


def run(kernel: Kernel, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """`kernel(a, b)` into a fresh output."""
    out = np.empty((*a.shape[:-1], b.shape[-1]), a.dtype)
    kernel(a, b, out=out)
    return out


def split(power: int) -> tuple[float, float]:
    """2^power as a product of two powers of two of about half its exponent each."""
    return 2.0 ** (power // 2), 2.0 ** (power - power // 2)


def accumulator(kernel: Kernel, code: str) -> tuple[str, str]:
    """The narrowest accumulator the two probes (the module's) explain, and what they saw."""
    dtype = DTYPES[code]
    ones = float(run(kernel, np.ones((1, 4096), dtype), np.ones((4096, 1), dtype))[0, 0])
    if ones != 4096.0:
        return code, f"4096 ones sum to {ones:g}"
    if code == "F64":
        return code, "4096 ones sum to 4096"
    e, t = WIDE[code]
    p = bits_of(dtype).mantissa + 1
    pairs = [split(e), split(e - p), split(t)]
    row, column = [x for x, _ in pairs], [y for _, y in pairs]
    up = float(np.asarray(2.0**e + 2.0 ** (e - p + 1)).astype(dtype))
    got = set()
    for m, n in SHAPES:
        a, b = np.array([row] * m, dtype), np.array([column] * n, dtype).T
        got |= {float(v) for v in run(kernel, a, b).flat}
    wide = "F64" if got == {up} else "F32"
    seen = ", ".join(map(repr, sorted(got)))
    state = "kept" if wide == "F64" else "lost" if up not in got else "kept by some shapes only"
    return wide, f"4096 ones sum to 4096; 2^{e} + 2^{e - p} + 2^{t} gives {seen}: 2^{t} {state}"


def subnormals(kernel: Kernel, code: str) -> str:
    """`kept` if a subnormal operand times one survives, else `flushed`."""
    dtype = DTYPES[code]
    tiny = float(ml_dtypes.finfo(dtype).smallest_subnormal)  # type: ignore[no-untyped-call]
    got = run(kernel, np.array([[tiny * 3]], dtype), np.ones((1, 1), dtype))
    return "kept" if float(got[0, 0]) == float(np.asarray(tiny * 3, dtype)) else "flushed"


@contextmanager
def threads(provider: str, n: int) -> Iterator[bool]:
    """The framework on `n` threads inside the block (True), or unchanged where it cannot be
    switched in a running process (False: JAX)."""
    if provider == "torch":
        torch = importlib.import_module("torch")
        before = torch.get_num_threads()
        torch.set_num_threads(n)
        try:
            yield True
        finally:
            torch.set_num_threads(before)
    elif provider == "numpy":
        from threadpoolctl import threadpool_limits

        with threadpool_limits(limits=n, user_api="blas"):
            yield True
    else:
        with nullcontext():
            yield False


def thread_bits(provider: str, kernel: Kernel, code: str) -> str:
    """Whether a cancelling 300 x 200 @ 200 x 150 product has the same bits on 1 and 2 threads."""
    rng, dtype = np.random.default_rng(0), DTYPES[code]
    x, y = rng.uniform(-1, 1, (300, 100)), rng.uniform(-1, 1, (100, 150))
    a = np.concatenate([x, x], axis=1).astype(dtype)
    b = np.concatenate([y, rng.uniform(0, 2.0**-8, y.shape) - y], axis=0).astype(dtype)
    with threads(provider, 1) as switched:
        one = run(kernel, a, b)
    if not switched:
        return "threads not switchable in a running process (XLA's pool is fixed at start-up)"
    with threads(provider, 2):
        two = run(kernel, a, b)
    same = one.view(f"u{dtype.itemsize}") == two.view(f"u{dtype.itemsize}")
    return (
        "1 and 2 threads: the same bits"
        if same.all()
        else (f"1 and 2 threads: {int((~same).sum())} of {same.size} outputs differ")
    )


def contract_text(provider: str, code: str, m: dict[str, str]) -> str:
    """One contract: `provider`'s matmul at dtype `code`, as measured (`m`)."""
    source = re.search(r'kernel_source: "([^"]+)"', front(provider))
    assert source is not None
    reverse = "rejected" if provider == "torch" else "allowed"  # PyTorch has no negative strides
    layout = (
        "{contiguous: allowed, strided: allowed, broadcast_stride0: allowed, start_offset: "
        f"allowed, reverse_strides: {reverse}}}"
    )
    name, bits = f"{provider}_{ROW.kernel_op}_{code.lower()}", 8 * DTYPES[code].itemsize
    operand = """    - name: {n}
      dtypes: [{code}]
      layout: {layout}
      rank: any
"""
    inputs = "".join(operand.format(n=n, code=code, layout=layout) for n in ("a", "b"))
    return f"""
## {name}: {code} matrix product, the framework's default precision

`out = {ENTRY[provider]}(a, b)`, the framework's own call ({m["seen"]}; {m["threads"]}).

```fkc
kernel: {name}
op_kind: {ROW.op_kind.value}
blurb: "{provider} {ROW.name} for {code}: {BLURB}"
backend: Cpu
kernel_source: "{source.group(1)}"
entry_point: "{ENTRY[provider]}"
kernel_revision_hash: auto
accept:
  inputs:
{inputs}  op_params: {{accumulator: {m["accumulator"]}}}
return:
  outputs:
    - name: out
      dtype_rule: passthrough(a)
      shape_rule: {ROW.kernel_op}(a, b)
      layout_guarantee: contiguous
      aliasing: none
caps:
  awkward_layout_strategy: requires_contiguous
  in_place: false
  alignment_bytes: 64
  access_granularity_bits: {bits}
cost:
  provenance: author_estimate
  class: contraction
  flops: "2 * n * k"
  bytes_moved: "a_count * a_bytes + b_count * b_bytes + n * dtype_bytes"
  memory: {{device_bytes: 0, host_bytes: "n * dtype_bytes", disk_bytes: 0}}
precision:
  bit_stable_on_same_hardware: true
  max_ulp: ~
  max_relative: ~
  max_absolute: ~
  audited: true
  notes: "{BOUND}; measured on {m["where"]}."
determinism: same_hardware_bitwise
semantics:
  source: [measurement]
  nan: {{operand: either, result: [any], sign: any}}
  subnormals: {m["subnormals"]}
  notes: "Measured on {m["where"]}: {UNPROMISED}"
```
"""


INTRO = """# {provider}: its matrix product

The framework's own `{entry}` at its default precision as contracts of the same provider as
[`{provider}.md`](./{provider}.md) (its front matter), one per dtype, written by
`benchmarks/framework_matmul.py --write` from what its probes observed on {where}: no order
and no `products` (none is promised: held to rounded products' bound), no invariance claimed
(threads, layout, batch: the framework promises none), the accumulator as measured (4096 ones;
three products a float32 accumulator loses the last of and a float64 one keeps, over dot, vector
and matrix shapes: the narrowest seen), subnormals as the probe found them. Beside each contract,
what the probes saw, and the bits on 1 and 2 threads (all this 2-core machine can show): an
observation, not a claim.
{omitted}"""


def write(provider: str) -> None:
    """Probe `provider`'s matmul and write contracts/<provider>-matmul.md."""
    path = Path(__file__).resolve().parent.parent / "contracts" / f"{provider}-matmul.md"
    env = provider_environment(provider)
    assert env is not None
    where = f"{env.framework}, {env.isa}"
    kernels: dict[str, Any] = importlib.import_module(
        f"{PROVIDERS}.{provider}_provider"
    ).ENTRY_POINTS
    kernel, texts, omitted = kernels[ENTRY[provider]], [], ""
    for code in DTYPES:
        if (provider, code) in OMITTED:
            omitted += f"\n**No {code}.** {OMITTED[provider, code]}\n"
            continue
        acc, seen = accumulator(kernel, code)
        m = {"where": where, "accumulator": acc, "seen": seen}
        m["subnormals"] = subnormals(kernel, code)
        m["threads"] = thread_bits(provider, kernel, code)
        print(provider, code, m, flush=True)
        texts.append(contract_text(provider, code, m))
    intro = INTRO.format(provider=provider, entry=ENTRY[provider], where=where, omitted=omitted)
    path.write_text(front(provider) + intro + "".join(texts), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    return command(__doc__, "matmul", write, argv)


if __name__ == "__main__":
    sys.exit(main())
