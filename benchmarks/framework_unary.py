"""Measure NumPy's, PyTorch's and JAX's unary functions against the correctly rounded value:
the figures behind their unary contracts' `max_ulp` and semantics notes (contracts/numpy.md,
torch.md, jax.md).

For each framework, each unary row it provides (`ENTRY_POINTS` of its provider) and each dtype:
every input of BF16 and F16 (2^16), and for F32 and F64 the special values plus `--sample`
random patterns (and, for F32, every pattern of the hard band around 1 and of the overflow
edge). The reference is MPFR (`tools.exact_unary`), never NumPy. Prints one line per kernel:
the worst ULP distance over numbers and its input, the NaN rules seen, whether subnormal
results were kept, and whether Annex F's special cases held.

    PYTHONPATH=. python benchmarks/framework_unary.py [--sample N] [--only numpy] [--write]

`--write` (re)writes each framework document's unary part (everything from its marker line
down) from what was measured: one contract per function and dtype the framework takes, its
semantics as the judge's own inference (`tools.judge.semantics.infer`) observed them, its
`max_ulp` the worst distance found (against the flushed reference where the framework flushes
subnormals, as the judge measures), and the front matter's `measured_on` set to this machine.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import zlib
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np

import fueltensor as ft
from fueltensor.fkc.semantics import Semantics
from fueltensor.kernels.frameworks import BF16
from fueltensor.ops import UNARY_OPS, ContractOp
from fueltensor.registry import linked_entry_points, provider_environment
from fueltensor.testing import float_format, ulp_distance
from fueltensor.testing.differences import format_value
from fueltensor.tools.exact_unary import correctly_rounded
from fueltensor.tools.judge.hard import hard_values
from fueltensor.tools.judge.semantics import findings, infer, observe

MARKER = (
    "<!-- The unary contracts below are written by benchmarks/framework_unary.py --write from "
    "what it measures: change the script and run it again, do not edit them by hand. -->"
)
LAYOUT = (
    "{contiguous: allowed, strided: allowed, broadcast_stride0: allowed, start_offset: allowed, "
    "reverse_strides: %s}"
)
CHEAP = ("abs", "negative")
BLURB = "the framework's own call; layouts as the framework takes them."
TAIL = 7
"""The length of the short calls each input is also measured in (every lane a tail lane)."""
INTRO = """## Unary functions

The unary rows of the op table that the framework names (`fueltensor.ops.UNARY_OPS`), one
contract per function and dtype, measured on {where} by `benchmarks/framework_unary.py`:
`max_ulp` is the worst distance from the correctly rounded value (MPFR) over every input of the
16-bit dtypes and over the special values, the judge's hard points and 65,536 random
patterns of F32 and F64 (the
judge measures again on its own sample); the `semantics` are what the judge's probes observed.
An aspect no value of the vocabulary describes is left undeclared. Where the framework breaks
one of the op table's own special cases (C99 Annex F, IEEE 754's sign-bit operations), which no
declaration can change, the function has no contract at that dtype:

{undeclared}

"""

DTYPES = {"F32": np.dtype(np.float32), "F64": np.dtype(np.float64), "BF16": BF16,
          "F16": np.dtype(np.float16)}  # fmt: skip


def inputs(code: str, sample: int, seed: str) -> np.ndarray:
    """Every pattern of a 16-bit dtype; special values, the judge's hard points and random
    patterns of F32/F64."""
    fmt = float_format(DTYPES[code])
    if fmt.dtype.itemsize == 2:
        return np.arange(1 << 16, dtype=np.uint16).view(fmt.dtype)
    width = 8 * fmt.dtype.itemsize
    rng = np.random.default_rng(zlib.crc32(seed.encode()))  # the same sample on every run
    drawn = rng.integers(0, 1 << width, sample, dtype=np.uint64, endpoint=False)
    specials = np.array([0, 1, (1 << fmt.mantissa) - 1, 1 << fmt.mantissa,
                         fmt.exponent_max << fmt.mantissa,
                         (fmt.exponent_max << fmt.mantissa) | fmt.quiet_bit,
                         (fmt.exponent_max << fmt.mantissa) | 1], np.uint64)  # fmt: skip
    both = np.concatenate([specials, specials | np.uint64(fmt.sign_bit), drawn])
    hard = hard_values(fmt.dtype).view(fmt.uint)  # the judge's hard points, as it probes them
    return np.concatenate([both.astype(fmt.uint), hard]).view(fmt.dtype)


def flush(x: np.ndarray) -> np.ndarray:
    """`x` with its subnormals replaced by zeros of their sign (as an FTZ/DAZ machine reads and
    writes them)."""
    fmt = float_format(x.dtype)
    u = x.view(fmt.uint).copy()
    exponent = (u >> fmt.uint.type(fmt.mantissa)) & fmt.uint.type(fmt.exponent_max)
    u[exponent == 0] &= fmt.uint.type(fmt.sign_bit)
    flushed: np.ndarray = u.view(fmt.dtype)
    return flushed


def measure(row: ContractOp, kernel: Any, x: np.ndarray, flushed: bool = False) -> dict[str, Any]:
    """Run `kernel` on `x` and compare with the correctly rounded value, lane by lane (of the
    flushed input, flushed, where the kernel flushes subnormals)."""
    fmt = float_format(x.dtype)
    out = np.empty_like(x)
    kernel(x, out=out)
    want = flush(correctly_rounded(row, flush(x))) if flushed else correctly_rounded(row, x)
    tails = np.empty_like(x)  # short calls: a framework's scalar tail may round otherwise
    for start in range(0, x.size, TAIL):
        kernel(x[start : start + TAIL], out=tails[start : start + TAIL])
    gu, wu, xu = out.view(fmt.uint), want.view(fmt.uint), x.view(fmt.uint)
    with np.errstate(all="ignore"):
        g_nan, w_nan = np.isnan(out.astype(np.float64)), np.isnan(want.astype(np.float64))
        x_nan = np.isnan(x.astype(np.float64))
    numbers = ~g_nan & ~w_nan
    with np.errstate(all="ignore"):
        numbers &= ~np.isnan(tails.astype(np.float64))
    ulp = np.zeros(0, np.int64)
    if numbers.any():
        ulp = np.maximum(ulp_distance(out[numbers], want[numbers]),
                         ulp_distance(tails[numbers], want[numbers]))  # fmt: skip
    worst = int(ulp.max()) if ulp.size else 0
    at = int(np.flatnonzero(numbers)[int(ulp.argmax())]) if ulp.size and worst else None
    exact_nan = bool(np.array_equal(gu[g_nan & x_nan], wu[g_nan & x_nan]))
    made = ~x_nan & w_nan
    tiny = (wu & ~fmt.uint.type(fmt.sign_bit)) < fmt.uint.type(1 << fmt.mantissa)
    lost = (
        numbers
        & tiny
        & (wu & ~fmt.uint.type(fmt.sign_bit) != 0)
        & (gu & ~fmt.uint.type(fmt.sign_bit) == 0)
    )
    return {
        "subnormals_lost": int(lost.sum()),
        "max_ulp": worst,
        "worst_input": None if at is None else f"x = {format_value(x[at])}",
        "exact_lanes": float((ulp == 0).mean()) if ulp.size else 1.0,
        "nan_where_expected": bool(np.array_equal(g_nan, w_nan)),
        "nan_mismatch": next(
            (
                f"{row.name}({format_value(x[i])}) gave {format_value(out[i])} "
                f"where the correctly rounded value is {format_value(want[i])}"
                for i in np.flatnonzero(g_nan != w_nan)[:1]
            ),
            None,
        ),
        "nan_input_bits_as_reference": exact_nan,
        "invalid_bits": sorted({f"{int(v):#x}" for v in gu[made & g_nan]})[:4],
        "nan_input_examples": [
            f"{int(a):#x}->{int(b):#x}" for a, b in zip(xu[x_nan][:3], gu[x_nan][:3], strict=True)
        ],
        "lanes": int(x.size),
    }


def _semantics_text(sem: Semantics, notes: str) -> str:
    """A `semantics` section in the documents' own spelling."""
    lines = ["semantics:", "  source: [measurement]"]
    if sem.nan is not None:
        n = sem.nan
        invalid = f", invalid: [{', '.join(n.invalid)}]" if n.invalid else ""
        result = ", ".join(n.result)
        lines.append(
            f"  nan: {{operand: {n.operand}, result: [{result}], sign: {n.sign}{invalid}}}"
        )
    if sem.subnormals is not None:
        lines.append(f"  subnormals: {sem.subnormals}")
    lines.append(f"  position: {sem.position}")
    return "\n".join([*lines, f'  notes: "{notes}"'])


def contract_text(provider: str, entry: str, row: ContractOp, code: str, found: dict[str, Any],
                  sem: Semantics | None, where: str) -> str:  # fmt: skip
    """One unary contract of a framework, from what was measured."""
    name = f"{provider}_{row.kernel_op}_{code.lower()}"
    source = ft.registry().providers
    kernel_source = next(p.kernel_source for p in source if p.name == provider)
    reversed_ok = "rejected" if provider == "torch" else "allowed"
    how = (
        "every input (2^16)"
        if code in ("BF16", "F16")
        else (f"{found['lanes']:,} inputs: the special values, hard points and random patterns")
    )
    worst = f", worst at {found['worst_input']}" if found["worst_input"] else ""
    flushed = sem is not None and sem.subnormals == "flushed"
    against = (
        "the correctly rounded value of the flushed input, flushed"
        if flushed
        else ("the correctly rounded value")
    )
    precision = (
        f"Worst distance measured on {where} from {against} (MPFR): {found['max_ulp']} "
        f"ULP over {how}{worst}; {100 * found['exact_lanes']:.2f}% of lanes exact."
    )
    sem_notes = (
        f"Measured on {where} by the judge's probes (NaN inputs, invalid operations, "
        "subnormals, the position sweep); the framework's documentation says nothing of "
        "NaN payloads or subnormals."
    )
    cls = "cheap_elementwise" if row.name in CHEAP else "transcendental_elementwise"
    semantics = (
        _semantics_text(sem, sem_notes)
        if sem is not None
        else ("semantics:\n  source: [measurement]\n  position: dependent")
    )
    return f"""## {name}: {row.name}, {code}

`{entry}(x)` for {code}, as the framework computes it. {precision}

```fkc
kernel: {name}
op_kind: {row.op_kind.value}
blurb: "{provider} {row.name} for {code}: {BLURB}"
backend: Cpu
kernel_source: "{kernel_source}"
entry_point: "{entry}"
kernel_revision_hash: auto
accept:
  inputs:
    - name: x
      dtypes: [{code}]
      layout: {LAYOUT % reversed_ok}
      rank: any
  op_params: {{variant: None}}
return:
  outputs:
    - name: out
      dtype_rule: passthrough(x)
      shape_rule: same_as(x)
      layout_guarantee: contiguous
      aliasing: none
caps:
  awkward_layout_strategy: requires_contiguous
  in_place: false
  alignment_bytes: 64
  access_granularity_bits: {8 * DTYPES[code].itemsize}
cost:
  provenance: judge_measured
  class: {cls}
  flops: "n"
  bytes_moved: "3 * n * dtype_bytes"
  memory: {{device_bytes: 0, host_bytes: "n * dtype_bytes", disk_bytes: 0}}
precision:
  bit_stable_on_same_hardware: true
  max_ulp: {found["max_ulp"]}
  max_relative: ~
  max_absolute: ~
  audited: true
  notes: "{precision}"
determinism: same_hardware_bitwise
{semantics}
```
"""


CERTIFICATES = Path(__file__).resolve().parent / "certificates"


def certified(name: str) -> int | None:
    """The max ULP of `name`'s exhaustive certificate in benchmarks/certificates/ (a float32
    contract certified on every input), None where there is none."""
    path = CERTIFICATES / name.split("_")[0] / f"{name}.txt"
    if not path.is_file():
        return None
    text = path.read_text(encoding="utf-8")
    found = re.search(r"^max (\d+) ULP", text, re.MULTILINE)
    return int(found.group(1)) if found and "every input" in text.splitlines()[0] else None


def write(provider: str, sample: int) -> None:
    """Measure `provider`'s unary kernels and write its document's unary part (see --write)."""
    path = Path(__file__).resolve().parent.parent / "contracts" / f"{provider}.md"
    text = path.read_text(encoding="utf-8")
    head = text.split(MARKER)[0].rstrip() + "\n\n"
    env = provider_environment(provider)
    assert env is not None
    where = f"{env.framework}, {env.isa}"
    measured_on = f'measured_on: {{framework: "{env.framework}", isa: {env.isa}}}'
    head = re.sub(r"measured_on: \{.*\}", measured_on, head)
    entries = linked_entry_points(provider) or {}
    todo = []
    for row in UNARY_OPS:
        entry = next((e for e in entries if e.rsplit(".", 1)[-1] == row.name), None)
        for code in DTYPES if entry else ():
            x = inputs(code, sample, f"{provider} {row.name} {code}")
            try:
                found = measure(row, entries[entry], x)
            except Exception as e:  # a dtype the framework refuses: no contract
                print(provider, row.name, code, "refused:", e, flush=True)
                continue
            todo.append((entry, row, code, x, found))
    draft = head + MARKER + "\n\n" + "\n".join(
        contract_text(provider, e, r, c, f, None, where) for e, r, c, _, f in todo)  # fmt: skip
    path.write_text(draft, encoding="utf-8")
    reg = ft.Registry.from_paths([path]).joined(provider)
    final, undeclared = [], []
    for entry, row, code, x, found in todo:
        name = f"{provider}_{row.kernel_op}_{code.lower()}"
        observed = observe(reg[name], reg.kernel(name), DTYPES[code], "quick")
        sem = infer(observed)
        broken = findings(sem, observed)
        if broken:  # the op table's own special cases, which no declaration can change
            undeclared.append(f"- `{entry}` for {code}: {broken[0]}")
            print(name, "not declared:", broken[0], flush=True)
            continue
        if sem.subnormals == "flushed":
            found = measure(row, entries[entry], x, flushed=True)
        elif sem.subnormals == "kept" and found["subnormals_lost"]:  # the probes missed them
            sem = replace(sem, subnormals=None)
        proven = certified(name)
        if proven is not None and proven > found["max_ulp"]:
            found = {**found, "max_ulp": proven, "certified": True}
        if found["nan_mismatch"]:  # a NaN for a number, or the reverse: no max_ulp covers it
            undeclared.append(f"- `{entry}` for {code}: {found['nan_mismatch']}")
            print(name, "not declared:", found["nan_mismatch"], flush=True)
            continue
        final.append(contract_text(provider, entry, row, code, found, sem, where))
        print(name, found["max_ulp"], sem.nan, sem.subnormals, sem.position, flush=True)
    intro = INTRO.format(where=where, undeclared="\n".join(undeclared) or "- none")
    path.write_text(head + MARKER + "\n\n" + intro + "\n".join(final), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--sample", type=int, default=1 << 16)
    p.add_argument("--only", action="append", default=None)
    p.add_argument("--json", default=None, help="write the figures here")
    p.add_argument("--write", action="store_true", help="write the documents' unary contracts")
    args = p.parse_args(argv)
    if args.write:
        for provider in args.only or ("numpy", "torch", "jax"):
            write(provider, args.sample)
        return 0
    found: dict[str, Any] = {}
    for provider in args.only or ("numpy", "torch", "jax"):
        entries = linked_entry_points(provider) or {}
        for row in UNARY_OPS:
            entry = next((e for e in entries if e.rsplit(".", 1)[-1] == row.name), None)
            if entry is None:
                continue
            for code in DTYPES:
                x = inputs(code, args.sample, f"{provider} {row.name} {code}")
                try:
                    got = measure(row, entries[entry], x)
                except Exception as e:  # a dtype the framework refuses
                    got = {"refused": f"{type(e).__name__}: {e}"[:160]}
                found[f"{provider} {row.name} {code}"] = got
                print(provider, row.name, code, json.dumps(got), flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(found, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
