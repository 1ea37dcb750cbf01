"""Issue 34 item 4's rows for benchmarks/run.py: fueltensor beside NumPy, PyTorch on one thread
and on every core, and JAX (jit), each where installed, at 4 to 10^7 elements, f32 and f64, for
+ × ÷ maximum and pow (tensor ** tensor); a ratio per library (fueltensor ÷ it), a plot of the
ratios against size, and each 10^7 row as a fraction of the machine's memory bandwidth.

Every side gets the same values (JAX its own copy on its device); each call makes its result
and drops it. The sides are timed in rotation, the order flipping every repeat, each sample a
run of calls of about 20 ms, on the wall clock: fueltensor and PyTorch's all-core side use a
second thread that a CPU clock would not see. A side's thread setting is made before its
sample (PyTorch's is global). "after idle" is one fueltensor call made 3 ms after the last
(the pool's workers parked): what an isolated call costs. Bandwidth is STREAM's copy and triad
(benchmarks/bandwidth.c, built with the C compiler here), on every core; a row's fraction is
the bytes its kernel names (two operands and the result) per second over the triad's.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

import fueltensor as ft
from fueltensor.kernels import threads

try:
    import torch  # type: ignore[import-not-found, unused-ignore]
except ImportError:
    torch = None
try:
    import jax  # type: ignore[import-not-found, unused-ignore]

    jax.config.update("jax_enable_x64", True)  # f64 arrays stay f64
    import jax.numpy as jnp  # type: ignore[import-not-found, unused-ignore]
except ImportError:
    jax = jnp = None

SIZES = (4, 4096, 65536, 10**6, 10**7)
DTYPES = ("float32", "float64")
OPS: dict[str, tuple[Callable[[Any, Any], Any], str]] = {
    "add": (ft.add, "add"),
    "mul": (ft.multiply, "multiply"),
    "div": (ft.divide, "divide"),
    "maximum": (ft.maximum, "maximum"),
    "pow": (ft.pow, "power"),
}
"""Case name -> (fueltensor function, the NumPy / JAX function name; PyTorch's is torch's own
spelling below)."""
TORCH_NAMES = {"add": "add", "mul": "mul", "div": "div", "maximum": "maximum", "pow": "pow"}
SAMPLE_SECONDS = 20e-3
"""Each sample is a run of calls this long: a library's threads, asleep after the other sides'
samples, wake within it (PyTorch's when its first call wakes them, fueltensor's by
themselves), as in a loop of the same operation."""
BANDWIDTH_SOURCE = Path(__file__).with_name("bandwidth.c")


@dataclass(frozen=True)
class Side:
    """One library's call on the case's operands, and what must hold before its sample."""

    name: str
    call: Callable[[], object]
    setup: Callable[[], None] = lambda: None


def torch_threads(count: int) -> Callable[[], None]:
    """Make PyTorch's (global) thread setting `count` if it is not already."""

    def setup() -> None:
        if torch.get_num_threads() != count:
            torch.set_num_threads(count)

    return setup


def sides(op: str, a: np.ndarray, b: np.ndarray) -> list[Side]:
    """fueltensor, NumPy, and the libraries installed here, on copies of the same a and b."""
    fuel, numpy_name = OPS[op]
    x, y = ft.asarray(a), ft.asarray(b)
    out = [
        Side("fueltensor", lambda: fuel(x, y)),
        Side("NumPy", lambda: getattr(np, numpy_name)(a, b)),
    ]
    if torch is not None:
        ta, tb, fn = torch.from_numpy(a), torch.from_numpy(b), getattr(torch, TORCH_NAMES[op])
        out.append(Side("torch 1 thr", lambda: fn(ta, tb), torch_threads(1)))
        out.append(
            Side(f"torch {threads.cores()} thr", lambda: fn(ta, tb), torch_threads(threads.cores()))
        )
    if jax is not None:
        ja, jb = jax.device_put(a), jax.device_put(b)
        jitted = jax.jit(getattr(jnp, numpy_name))
        out.append(Side("JAX jit", lambda: jitted(ja, jb).block_until_ready()))
    return out


def timed(cases: list[Side], repeats: int) -> list[float]:
    """Median wall seconds per call of each side, in rotation (the order flips every repeat),
    each sample about SAMPLE_SECONDS of calls after the side's setup."""
    inner = []
    for side in cases:
        side.setup()
        side.call()
        start = time.perf_counter()
        side.call()
        inner.append(
            max(1, min(100_000, int(SAMPLE_SECONDS / max(time.perf_counter() - start, 1e-8))))
        )
    samples: list[list[float]] = [[] for _ in cases]
    for r in range(repeats):
        for i in range(len(cases)) if r % 2 == 0 else reversed(range(len(cases))):
            cases[i].setup()
            start = time.perf_counter()
            for _ in range(inner[i]):
                cases[i].call()
            samples[i].append((time.perf_counter() - start) / inner[i])
    return [statistics.median(s) for s in samples]


def after_idle(call: Callable[[], object], repeats: int) -> float:
    """Median wall seconds of one call made 3 ms after the last (every worker parked)."""
    samples = []
    for _ in range(repeats):
        time.sleep(3e-3)
        start = time.perf_counter()
        call()
        samples.append(time.perf_counter() - start)
    return statistics.median(samples)


def bandwidth() -> tuple[float, float] | None:
    """STREAM copy and triad GB/s on every core (bandwidth.c built here), or None without a C
    compiler."""
    compiler = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if compiler is None:
        return None
    with tempfile.TemporaryDirectory() as tmp:
        exe = Path(tmp) / "bandwidth"
        subprocess.run(
            [compiler, "-O2", "-pthread", str(BANDWIDTH_SOURCE), "-o", str(exe)], check=True
        )
        done = subprocess.run(
            [str(exe), str(4 * 10**7), str(threads.cores()), "10"],
            capture_output=True,
            text=True,
            check=True,
        )
    words = done.stdout.split()
    return float(words[1]), float(words[3])


def operands(n: int, dtype: str) -> tuple[np.ndarray, np.ndarray]:
    """Positive lhs (pow stays real) and a rhs kept away from zero, as run.py's operands."""
    rng = np.random.default_rng(0)
    lhs = (rng.random(n, np.float32) * 10 + 0.5).astype(dtype)
    rhs = (rng.standard_normal(n, np.float32) * 3 + 0.25).astype(dtype)
    return lhs, rhs


def library_rows(repeats: int, max_n: int, plot: Path | None) -> None:
    """Print the side-by-side table (ms per call, fueltensor ÷ each library) up to `max_n`
    elements, and plot it."""
    bw = bandwidth()
    if bw is None:
        print("(no C compiler: the bandwidth columns are left empty)")
    else:
        print(
            f"memory bandwidth on {threads.cores()} cores (STREAM, best of 10): "
            f"copy {bw[0]:.1f} GB/s, triad {bw[1]:.1f} GB/s"
        )
    ratios: dict[str, dict[str, list[tuple[int, float]]]] = {}
    header_done = False
    for n in (size for size in SIZES if size <= max_n):
        for dtype in DTYPES:
            a, b = operands(n, dtype)
            for op in OPS:
                cases = sides(op, a, b)
                t = timed(cases, repeats)
                if not header_done:
                    print_header(cases)
                    header_done = True
                idle = after_idle(cases[0].call, repeats)
                print_row(f"{op} f{dtype[5:]} n={n:,}", n, a.itemsize, cases, t, idle, bw)
                for side, seconds in zip(cases[1:], t[1:], strict=True):
                    ratios.setdefault(side.name, {}).setdefault(f"{op} f{dtype[5:]}", []).append(
                        (n, t[0] / seconds)
                    )
    if torch is not None:
        torch.set_num_threads(threads.cores())
    if plot is not None:
        draw(ratios, plot)


def print_header(cases: list[Side]) -> None:
    """The table's two header lines."""
    head = "| case | fueltensor ms | after idle ms |" + "".join(
        f" {s.name} ms | ft ÷ {s.name} |" for s in cases[1:]
    )
    print(head + " ft GB/s | of triad |")
    print("|---|" + "---:|" * (2 + 2 * (len(cases) - 1) + 2))


def print_row(
    label: str,
    n: int,
    itemsize: int,
    cases: list[Side],
    t: list[float],
    idle: float,
    bw: tuple[float, float] | None,
) -> None:
    """One case: each side's ms and fueltensor's ratio to it; at 10^7 its GB/s and share."""
    cells = [label, f"{t[0] * 1e3:.4g}", f"{idle * 1e3:.4g}"]
    for seconds in t[1:]:
        cells += [f"{seconds * 1e3:.4g}", f"{t[0] / seconds:.2f}"]
    rate = 3 * n * itemsize / t[0] / 1e9
    big = n >= 10**7
    cells += [f"{rate:.1f}" if big else "", f"{rate / bw[1]:.2f}" if big and bw else ""]
    print("| " + " | ".join(cells) + " |", flush=True)


def draw(ratios: dict[str, dict[str, list[tuple[int, float]]]], path: Path) -> None:
    """One panel per library: fueltensor's time ÷ its time against size, a line per case."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("(matplotlib is not installed: no plot)")
        return
    fig, axes = plt.subplots(
        1, len(ratios), figsize=(4.2 * len(ratios), 4), sharey=True, squeeze=False
    )
    for ax, (library, cases) in zip(axes[0], ratios.items(), strict=True):
        for case, points in cases.items():
            ax.plot([p[0] for p in points], [p[1] for p in points], marker="o", label=case)
        ax.axhline(1.0, color="black", linewidth=0.8)
        ax.set(xscale="log", yscale="log", title=f"fueltensor ÷ {library}", xlabel="elements")
    axes[0][0].set_ylabel("time ratio (below 1: fueltensor faster)")
    axes[0][-1].legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    print(f"\n(plot: {path})")
