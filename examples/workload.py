"""A small workload written as tensor code is: a layer norm, a two-layer MLP (GELU in its tanh
form, weights stored in bfloat16 and widened for the matmuls) and a masked softmax, on fixed
shapes and a fixed seed.

    python examples/workload.py

prints which kernel each operation dispatched to (`ft.trace`) and what `compare_backends`
compared, against NumPy's kernels and the oracle's (the reductions' second kernel: the layer
norm's mean and var are compositions of sums, divides, subtracts and multiplies, each
compared). The op-family issues (unary math, reductions, matmul, casts, the GPU) measure their
progress on it: every operation it runs should plan through a contract, and the comparison
should compare each one. `tests/clients/test_workload.py` runs it against a NumPy float64
transcription.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import ml_dtypes
import numpy as np

import fueltensor as ft
from fueltensor import FuelTensor

BATCH, FEATURES, HIDDEN = 32, 64, 128
"""The shapes: a batch of rows of FEATURES values; the MLP's hidden width."""
SEED = 20261204
EPS = 1e-5
"""The layer norm's epsilon (PyTorch's default)."""


class Params(NamedTuple):
    """The block's parameters: the layer norm's scale and shift, the MLP's weights (bfloat16,
    as mixed-precision checkpoints store them) and biases, and the softmax's column mask (1.0
    where a column takes part, 0.0 for padding)."""

    gamma: FuelTensor
    beta: FuelTensor
    w1: FuelTensor
    b1: FuelTensor
    w2: FuelTensor
    b2: FuelTensor
    valid: FuelTensor


def inputs(seed: int = SEED) -> tuple[FuelTensor, Params]:
    """The block's input (BATCH x FEATURES float32) and parameters, drawn from `seed`."""
    rng = np.random.default_rng(seed)

    def normal(*shape: int, scale: float = 1.0) -> np.ndarray:
        return (rng.standard_normal(shape) * scale).astype(np.float32)

    valid = np.ones(FEATURES, np.float32)
    valid[-FEATURES // 8 :] = 0.0
    params = Params(
        gamma=ft.asarray(1.0 + normal(FEATURES, scale=0.1)),
        beta=ft.asarray(normal(FEATURES, scale=0.1)),
        w1=ft.asarray(normal(FEATURES, HIDDEN, scale=FEATURES**-0.5).astype(ml_dtypes.bfloat16)),
        b1=ft.asarray(normal(HIDDEN, scale=0.1)),
        w2=ft.asarray(normal(HIDDEN, FEATURES, scale=HIDDEN**-0.5).astype(ml_dtypes.bfloat16)),
        b2=ft.asarray(normal(FEATURES, scale=0.1)),
        valid=ft.asarray(valid),
    )
    return ft.asarray(normal(BATCH, FEATURES, scale=3.0)), params


def layer_norm(x: FuelTensor, gamma: FuelTensor, beta: FuelTensor) -> FuelTensor:
    """Each row scaled to mean 0 and variance 1 (the biased variance), then `gamma * x + beta`."""
    mean = ft.mean(x, axis=-1, keepdims=True)
    var = ft.var(x, axis=-1, keepdims=True)
    return (x - mean) / ft.sqrt(var + EPS) * gamma + beta


def gelu(x: FuelTensor) -> FuelTensor:
    """GELU in its tanh form (as GPT-2 and PyTorch's `approximate="tanh"` compute it)."""
    return 0.5 * x * (1.0 + ft.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)))


def mlp(x: FuelTensor, p: Params) -> FuelTensor:
    """Two linear layers with GELU between them; the bfloat16 weights widened to x's dtype."""
    hidden = gelu(ft.matmul(x, ft.astype(p.w1, x.dtype)) + p.b1)
    return ft.matmul(hidden, ft.astype(p.w2, x.dtype)) + p.b2


def masked_softmax(x: FuelTensor, valid: FuelTensor) -> FuelTensor:
    """Softmax over the last axis of the columns where `valid` > 0.5 (0 elsewhere), shifted by
    the row's maximum so that exp never overflows."""
    scores = ft.where(valid > 0.5, x, -math.inf)
    e = ft.exp(scores - ft.max(scores, axis=-1, keepdims=True))
    return e / ft.sum(e, axis=-1, keepdims=True)


def block(x: FuelTensor, p: Params) -> FuelTensor:
    """Layer norm, the MLP with a residual connection, then the masked softmax."""
    h = layer_norm(x, p.gamma, p.beta)
    return masked_softmax(h + mlp(h, p), p.valid)


def main() -> None:
    """Run the block once traced, then once inside `compare_backends("cpu", "numpy",
    "reference")`."""
    x, params = inputs()
    with ft.trace() as plans:
        block(x, params)
    print(f"{len(plans)} operations ran:")
    for plan in plans:
        print(f"  {plan.op:<10} {plan.kernel.name if plan.kernel else 'host'}")
    with ft.compare_backends("cpu", "numpy", "reference") as report:
        block(x, params)
    print(report)


if __name__ == "__main__":
    main()
