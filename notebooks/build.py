"""(Re)generate the notebooks in this folder from the cell sources below, without outputs.

Run `python notebooks/build.py`; `python notebooks/build.py --check` exits 1 if a stored
notebook differs from what this script writes (the test suite runs that check).
"""

from __future__ import annotations

import sys
from pathlib import Path

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

HERE = Path(__file__).resolve().parent

Cells = list[tuple[str, str]]
"""(kind, source) pairs: kind is "md" or "py"."""

TOUR: Cells = [
    (
        "md",
        "# fueltensor: a first tour\n\nA `FuelTensor` is storage plus shape, strides and "
        "offset. Its arithmetic is planned from kernel contracts, and every plan can be "
        "inspected.",
    ),
    (
        "py",
        "import numpy as np\n\nimport fueltensor as ft\n\n"
        "x = ft.asarray([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], dtype=ft.float32)\n"
        "y = ft.asarray([10.0, 20.0, 30.0], dtype=ft.float32)\nx",
    ),
    ("md", "## Operators\n\nThe eight contract operations: `+ - * / % **`, `maximum`, `minimum`."),
    ("py", "x + y, x * 2, x / y, x % 4, x ** 2, ft.maximum(x, y), ft.minimum(x, -x)"),
    (
        "md",
        "## Views share storage\n\nTransposes, slices, flips and broadcasts are views: "
        "look at the strides, the offset and the layout flags.",
    ),
    ("py", "x.T"),
    ("py", "x[:, ::2]"),
    ("py", "ft.flip(x, axis=1)"),
    ("py", "ft.broadcast_to(y, (4, 3))"),
    (
        "md",
        "## Which kernel runs, and why\n\n`ft.explain` plans an operation without running "
        "it: the kernel, the steps before it (Cast, BroadcastTo, Contiguize), the cost and "
        "every rejected candidate.",
    ),
    ("py", "ft.explain(ft.add, x, x)"),
    ("py", "ft.explain(ft.add, x, y)  # broadcast: add_f32, y made dense block by block"),
    ("py", "ft.explain(ft.maximum, x.T, x.T)  # strided operands are made dense first"),
    (
        "py",
        "h = ft.asarray(np.ones((2, 3), np.float16))\n"
        "ft.explain(ft.add, h, x)  # mixed dtypes: a Cast step, then the f32 kernel",
    ),
    ("md", "## What ran\n\n`ft.trace()` collects the plans of everything inside the block."),
    (
        "py",
        "with ft.trace() as plans:\n    z = (x * 2 + y) / 3\n"
        "[(p.op, p.kernel_name) for p in plans]",
    ),
]

CONTRACTS: Cells = [
    (
        "md",
        "# The contract registry\n\nContracts are data: FKC documents read into a "
        "registry. Browse it, query it, and see why a kernel is rejected.",
    ),
    (
        "py",
        "import numpy as np\n\nimport fueltensor as ft\n"
        "from fueltensor.registry import Contracts\n\nreg = ft.registry()\nreg",
    ),
    ("md", "## Query: the kernels of one op kind"),
    ("py", "reg.for_op('AddElementwise')"),
    ("md", "## Query: which precision bounds the judge must measure (`max_ulp: ~`)"),
    ("py", "Contracts(c for c in reg if c.registrable and c.precision.max_ulp is None)"),
    ("md", "## One contract in full"),
    ("py", "reg['maximum_f32']"),
    (
        "md",
        "The `notes` keep the words of the seed document this contract was written from: the "
        "FKC document of the Rust provider `fuel-cpu-backend` that the project started from "
        "(a copy is in `tests/seeds/003_f61b2f697a8bb6f9.txt`). They cite two sources of that "
        "Rust project which are not part of fueltensor. **`binary.rs`** is its source file "
        "`fuel-cpu-backend/src/chassis/binary.rs`, the one chassis behind its 32 byte kernels "
        "(fueltensor's counterparts are `fueltensor/kernels/_chassis.py` and the "
        "C in `fueltensor/ext/src/native/`). **KISS §6.13** is a section of that project's "
        "design document, which the seed cites but does not include. What it pins is in the "
        "contract itself: on a ±0 tie the left operand wins, unlike `np.maximum`.",
    ),
    (
        "md",
        "## Why a kernel is rejected\n\nEvery plan lists the other candidates with the "
        "reason each lost: a dtype it does not take, a shape constraint, a higher cost, or "
        "being the oracle, which runs only where no production kernel does (or where named).",
    ),
    (
        "py",
        "x = ft.asarray(np.ones((3, 4), np.float32))\nrow = ft.asarray(np.ones(4, np.float32))\n"
        "ft.explain(ft.add, x, row)",
    ),
    (
        "md",
        "Restricted to one provider, an operation nothing admits raises `NoKernelError` "
        "with every candidate's reason:",
    ),
    (
        "py",
        "try:\n    with ft.use_backend('reference'):\n        ft.maximum(x, row)\n"
        "except ft.NoKernelError as e:\n    print(e)",
    ),
]

BACKENDS: Cells = [
    (
        "md",
        "# Side by side: fueltensor's kernels, NumPy, PyTorch and JAX\n\n"
        "A kernel has to agree with the frameworks it will run beside, and those disagree "
        "with each other wherever IEEE 754 leaves a choice: which NaN comes out, a NaN's "
        "payload, `minimum(+0, -0)`, the sign of a zero remainder, `x % inf`, subnormals. "
        "fueltensor runs NumPy, PyTorch (CPU) and JAX (CPU) as contract providers "
        "(`contracts/numpy.md`, `torch.md`, `jax.md`), each document declaring what its "
        "framework does. They join dispatch only where they are named, so nothing below "
        "changes what `x + y` runs. PyTorch and JAX are extras "
        "(`pip install torch==2.13.0 && pip install 'fueltensor[torch]'`, "
        "`pip install 'fueltensor[jax]'`); a framework that is not installed is left out.",
    ),
    (
        "py",
        "import numpy as np\n\nimport fueltensor as ft\n"
        "from fueltensor.registry import provider_unavailable\n"
        "from fueltensor.testing import random_bits\n\n"
        "frameworks = [n for n in ('numpy', 'torch', 'jax') if provider_unavailable(n) is None]\n"
        "rng = np.random.default_rng(0)\nframeworks",
    ),
    (
        "md",
        "## The cases where they may differ\n\n`ft.semantics_table` runs each provider's "
        "kernel on targeted cases (NaN operands and pairs, signaling NaNs, ±0 ties, "
        "remainder signs, infinite divisors) at several lengths and offsets, and shows what "
        "each returned: a number, or where a NaN came from (`lhs`, `rhs quieted`, `+qNaN` "
        "for one with no payload). `a | b`: the result depended on where the element sat. "
        "Shaded rows: the providers differ. `fueltensor semantics` prints the same table.",
    ),
    ("py", "ft.semantics_table(['cpu', *frameworks], ['minimum', 'remainder'])"),
    (
        "md",
        "## Where an element sits can change its bits\n\nPyTorch's `minimum` runs a vector "
        "body and a scalar tail, and they break a ±0 tie differently: at length 17 (one "
        "AVX-512 vector of f32, plus one) one call returns both zeros.",
    ),
    (
        "py",
        "zeros, negative = ft.zeros(17, dtype=ft.float32), ft.full(17, -0.0, dtype=ft.float32)\n"
        "if 'torch' in frameworks:\n"
        "    with ft.use_backend('torch'):\n"
        "        tie = np.asarray(ft.minimum(zeros, negative))\n"
        "    signs = ''.join('-' if s else '+' for s in np.signbit(tie))\n"
        "    print('signs of minimum(+0, -0) at length 17:', signs)",
    ),
    (
        "md",
        "## Every operation on random bit patterns and on every pair of special values\n\n"
        "`compare_backends('cpu', *frameworks)` runs each operation of the block on the default "
        "kernel and on every kernel the named frameworks have for it, and diffs the results bit "
        "for bit. The report groups the differing elements by class (NaN payload, signed zero, "
        "remainder sign, infinity, subnormal, rounding ...) and provider, above the table of "
        "operations; `report.plot()` draws that class x provider matrix.",
    ),
    (
        "py",
        "from fueltensor.testing import special_pairs\n\n"
        "ops = (ft.add, ft.subtract, ft.multiply, ft.divide, ft.remainder, ft.pow, ft.maximum, "
        "ft.minimum)\n"
        "with ft.compare_backends('cpu', *frameworks) as report:\n"
        "    for dtype in ('float32', 'bfloat16'):\n"
        "        random = [random_bits(dtype, 2048, rng=rng) for _ in 'ab']\n"
        "        specials = [v.tensor() for v in special_pairs(dtype)]\n"
        "        for a, b in (random, specials):\n"
        "            for op in ops:\n"
        "                op(a, b)\n"
        "report",
    ),
    ("py", "report.plot()"),
    (
        "md",
        "## Why they differ\n\n"
        "- **±0 ties.** The seeds' kernels return the lhs (their formula). NumPy's f32, f64 "
        "and bfloat16 loops return the rhs, the rule of the `vminps` instruction, though "
        "NumPy documents `np.where(x1 <= x2, x1, x2)` (its float16 loop does that: lhs). "
        "PyTorch returns lhs or rhs depending on where the element sits; JAX orders -0 "
        "below +0, as IEEE 754-2019's minimum does.\n"
        "- **NaN payloads.** PyTorch's `maximum`/`minimum` return a NaN without payload "
        "(`+qNaN`, or every bit set in the vector body), though its documentation says "
        "the NaN element is returned. bfloat16 NaNs lose their payload in NumPy (ml_dtypes' "
        "loops), PyTorch and JAX, which compute through f32 and round.\n"
        "- **Remainder sign.** An exact zero remainder has the divisor's sign in fueltensor's "
        "`%` and NumPy's (Python's `%`) and the dividend's in PyTorch and JAX (`fmod`'s), "
        "though both document the divisor's; the seeds' floor formula (`rem_f32`, which runs "
        "only where named) gives `+0` (`a - a`).\n"
        "- **Infinite divisor.** `5 % inf` is 5 in fueltensor's `%` and all three frameworks, "
        "NaN by the seeds' floor formula (`0 * inf`).\n"
        "- **Subnormals.** JAX on CPU flushes them to zero in f32, f64 and bfloat16 "
        "arithmetic, `maximum` and `minimum`; it keeps them in float16 and in `remainder`.\n"
        "- **Rounding.** `pow` comes from different libraries (within one ULP); the seeds' "
        "floor formula rounds at each step (`rem(1e10, 3)` is 0 in f32, 1 by `%`); PyTorch's "
        "vectorized `remainder` returns NaN where `a / b` overflows.\n\n"
        "Each of these is declared in the providers' documents (the `semantics` section, "
        "docs/semantics.md) and audited by the judge.",
    ),
    (
        "md",
        "## The documents hold\n\n`ft.judge(provider='numpy')` audits NumPy's contracts: "
        "every declared semantic checked with the cases above at every length from 1 to "
        "four vectors and every offset inside 64 bytes, the precision bounds measured "
        "(`fueltensor judge --provider torch` and `jax` do the same; they take minutes).",
    ),
    ("py", "audit = ft.judge(provider='numpy', quick=True, progress=False)\naudit"),
    (
        "md",
        "## exp, the same function in three libraries\n\nThe unary functions are contracts "
        "too: `ft.exp(x)` under `compare_backends` runs fueltensor's `exp_f32` beside each "
        "framework's, and names the lanes where they differ.",
    ),
    (
        "py",
        "x = ft.asarray(np.float32([1.0, 25.9943848, -0.123387642, 80.0, -88.5, 0.0]))\n"
        "with ft.compare_backends('cpu', *frameworks) as exp_report:\n"
        "    ft.exp(x)\nexp_report",
    ),
    (
        "md",
        "## Every float32 input\n\nA float32 function has 2^32 inputs: `fueltensor certify` "
        "runs all of them through the kernel and checks each against the correctly rounded "
        "value (the C library's double exp rounded once, MPFR where that lies near a rounding "
        "boundary). The certificates of fueltensor's `exp_f32`, NumPy's and PyTorch's, made on "
        "the 2-core development machine (AMD EPYC, AVX2; NumPy 2.4.6, torch 2.13.0+cpu), are "
        "in `benchmarks/certificates/`; this reads them (no framework needed). Another CPU "
        "(AVX-512, another NumPy) runs other loops: certify there to see its table.",
    ),
    (
        "py",
        "from pathlib import Path\n\n"
        "from fueltensor.tools.certify.histograms import histograms\n\n"
        "CERTIFICATES = Path('..') / 'benchmarks' / 'certificates'\n"
        "TEXTS = ('cpu/exp_f32.txt', 'numpy/numpy_exp_f32.txt', 'torch/torch_exp_f32.txt')\n"
        "exp_f32 = histograms(CERTIFICATES / text for text in TEXTS)\nexp_f32",
    ),
    (
        "md",
        "`0 ULP, other bits`: a NaN input whose result is a NaN of other bits than the "
        "input's, quieted (NumPy's float32 loop returns the positive quiet NaN with no "
        "payload). NumPy's loop here is its AVX2 float32 evaluation; fueltensor's evaluates "
        "in double and rounds once.",
    ),
    ("py", "exp_f32.plot()"),
]

JUDGE: Cells = [
    (
        "md",
        "# The judge\n\nEvery registrable contract audited against its kernel: "
        "determinism (16 runs), precision (ULP vs a higher-precision reference), "
        "conformance (the `return` clause), and cost. Here with `quick=True`.",
    ),
    (
        "py",
        "from fueltensor.tools.judge import judge\n\n"
        "report = judge(quick=True, progress=False)\nreport",
    ),
    (
        "md",
        "## Measured cost against the `bytes_moved` formula, and call overhead\n\n"
        "`report.plot()`: above, each point is one kernel, the bytes per element its formula "
        "declares against the time per element measured on one large input; the dashed line "
        "is those bytes at the copy bandwidth the judge measured over the working set of its "
        "largest kernel probe (the legend says whether that fits in this machine's largest "
        "cache: then both are cache, not memory, speeds). Below, one call on one-element "
        "inputs per kernel, on a log axis, so that the CPU kernels and the oracle (whose "
        "index math costs about ten times more per call here) both show.",
    ),
    ("py", "report.plot()"),
    (
        "md",
        "## Failures\n\nA declared bound that is exceeded is a failure; undeclared ones "
        "are reported as measured.",
    ),
    ("py", "report.failures or 'no failures: every declared bound holds'"),
]

DASK: Cells = [
    (
        "md",
        "# fueltensor on Dask\n\nWhen one machine is not enough, a Dask array can hold "
        "FuelTensor chunks: every block is a FuelTensor and every elementwise operation on a "
        "worker is dispatched through the same kernel contracts. Here a local cluster of two "
        "worker processes stands in for the machines (`pip install 'fueltensor[dask]'`).",
    ),
    (
        "py",
        "import numpy as np\nfrom distributed import Client, LocalCluster\n\n"
        "import fueltensor as ft\nfrom fueltensor import dask as fd\n\n"
        "cluster = LocalCluster(n_workers=2, threads_per_worker=1, processes=True, "
        "dashboard_address=None)\nclient = Client(cluster, timeout=60)\n"
        "client.wait_for_workers(2, timeout=60)\nsorted(client.scheduler_info(n_workers=-1)"
        "['workers'])",
    ),
    (
        "md",
        "## Chunked FuelTensors\n\nOperands in the four contract dtypes: random bit patterns "
        "(NaNs with payloads, infinities, subnormals, ±0 among them) and ordinary values, "
        "cut into 8 chunks. The Dask array's `_meta` is a FuelTensor, so Dask knows its "
        "chunk type.",
    ),
    (
        "py",
        "rng = np.random.default_rng(0)\nUINT = {2: np.uint16, 4: np.uint32, 8: np.uint64}\n\n"
        "\ndef operands(dtype, shape=(16, 64)):\n"
        "    u = UINT[dtype.itemsize]\n"
        "    raw = rng.integers(0, np.iinfo(u).max, (2, *shape), dtype=u, endpoint=True)\n"
        "    raw[:, 0, :4] = np.array([0.0, -0.0, np.inf, -np.inf]).astype(dtype.np).view(u)\n"
        "    return ft.asarray(raw[0].view(dtype.np)), ft.asarray(raw[1].view(dtype.np))\n\n"
        "\nDTYPES = (ft.float32, ft.float64, ft.bfloat16, ft.float16)\n"
        "data = {d: operands(d) for d in DTYPES}\n"
        "x, y = data[ft.float32]\na, b = fd.from_tensor(x, (4, 32)), fd.from_tensor(y, (4, 32))\n"
        "a",
    ),
    (
        "md",
        "## The eight operations, on the workers and in this process\n\nEach operation runs "
        "on the cluster (`.compute()` assembles the FuelTensor blocks into a FuelTensor) and "
        "here, in one process; the table counts the elements whose bits are equal.",
    ),
    (
        "py",
        "OPS = ('add', 'subtract', 'multiply', 'divide', 'remainder', 'pow', 'maximum', "
        "'minimum')\n\n\ndef bits(t):\n"
        "    array = np.ascontiguousarray(np.asarray(t))\n"
        "    return array.view(UINT[array.dtype.itemsize])\n\n\n"
        "jobs = [(op, d) for op in OPS for d in DTYPES]\n"
        "chunked = {d: [fd.from_tensor(t, (4, 32)) for t in data[d]] for d in DTYPES}\n"
        "lazy = [getattr(ft, op)(*chunked[d]) for op, d in jobs]\n"
        "results = [f.result(timeout=60) for f in client.compute(lazy)]\n"
        "cells = {}\nfor (op, d), got in zip(jobs, results, strict=True):\n"
        "    want = getattr(ft, op)(*data[d])\n"
        "    equal = int((bits(got) == bits(want)).sum())\n"
        "    cells[op, d] = f'{equal}/{want.size} {type(got).__name__}'\n"
        "print('bit-equal elements (dask on 2 workers vs one process) and the result type')\n"
        "print(f\"{'op':<10}\" + ''.join(f'{d.name:>22}' for d in DTYPES))\n"
        "for op in OPS:\n"
        "    print(f'{op:<10}' + ''.join(f'{cells[op, d]:>22}' for d in DTYPES))",
    ),
    (
        "md",
        "Dtypes follow fueltensor's promotion, in the metadata too: bfloat16 with float16 "
        "gives float32.",
    ),
    (
        "py",
        "half = ft.add(chunked[ft.bfloat16][0], chunked[ft.float16][0])\n"
        "half.dtype, half._meta.dtype",
    ),
    (
        "md",
        "## A trace taken on the workers\n\n`fd.trace` computes each block on a worker "
        "inside `ft.trace()`; the plans come back with the blocks (a Plan pickles: its kernel "
        "is linked again by name). Each block is a view of its source tensor (some of its "
        "rows and columns), so the plans make it contiguous first, as in one process.",
    ),
    (
        "py",
        "traced = fd.trace(ft.maximum(a, b) % b, client, timeout=60)\n"
        "for block in traced.blocks:\n"
        "    kernels = ', '.join(p.kernel.name if p.kernel else 'host' for p in block.plans)\n"
        "    print(block.block, block.worker, kernels)",
    ),
    ("py", "traced.blocks[0].plans[0]"),
    (
        "md",
        "## The judge across the workers\n\nThe audit runs on one worker per host, tagged "
        "with the machine's fingerprint (here both workers share a host, so `every_worker` "
        "audits each); the output digests of the seeded probes are compared between machines.",
    ),
    (
        "py",
        "kernels = ['add_f32', 'pow_f32', 'maximum_bf16']\n"
        "report = ft.judge(client=client, kernels=kernels, quick=True, every_worker=True, "
        "timeout=120)\nprint(report)",
    ),
    ("md", "## Closing the cluster"),
    ("py", "client.close(timeout=60)\ncluster.close(timeout=60)"),
]

NOTEBOOKS: dict[str, Cells] = {
    "01_tour.ipynb": TOUR,
    "02_contracts.ipynb": CONTRACTS,
    "03_backends.ipynb": BACKENDS,
    "04_judge.ipynb": JUDGE,
    "05_dask.ipynb": DASK,
}


def build(cells: Cells) -> nbformat.NotebookNode:
    """A notebook of the given cells, no outputs, with a Python 3 kernelspec."""
    nb = new_notebook(
        cells=[
            new_markdown_cell(src) if kind == "md" else new_code_cell(src) for kind, src in cells
        ]
    )
    nb.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    for i, cell in enumerate(nb.cells):
        cell["id"] = f"cell-{i}"
    return nb


def text(cells: Cells) -> str:
    """The notebook file's exact text."""
    return nbformat.writes(build(cells)) + "\n"


def main(argv: list[str]) -> int:
    stale = []
    for name, cells in NOTEBOOKS.items():
        path = HERE / name
        want = text(cells)
        if "--check" in argv:
            if not path.is_file() or path.read_text(encoding="utf-8") != want:
                stale.append(name)
        else:
            path.write_text(want, encoding="utf-8")
    if stale:
        print(f"stale notebooks (run python notebooks/build.py): {', '.join(stale)}")
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
