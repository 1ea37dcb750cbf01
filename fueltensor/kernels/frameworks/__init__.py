"""NumPy, PyTorch and JAX as contract providers: each framework's own call behind the FKC
calling convention, so its kernels can be planned, compared and judged like fueltensor's.

A provider module here sets `PROVIDER`, `ENTRY_POINTS` (entry point -> kernel),
`UNAVAILABLE` (why the framework cannot run here, None when it can), `ISA_SWITCHES` (optional:
the environment settings that make the framework run another instruction set) and `ENVIRONMENT` (the
framework version and instruction set here, to set against the document's `measured_on`).
Its documents (`contracts/numpy.md` ...) declare `dispatch: when_named`: the frameworks join
dispatch only where they are named (`use_backend("torch")`, `compare_backends(...)`,
`fueltensor judge --provider torch`, `Registry.joined`).

A wrapper changes no value: operands reach the framework as they are (views of the caller's
memory, the half types through their bits where the framework cannot take ml_dtypes' bfloat16),
the framework's own function runs as a user would call it, and its result's bits are copied
into `out`. Importing these modules imports no framework: each is imported on its first call.
"""

from __future__ import annotations

import importlib.util
from dataclasses import dataclass
from typing import Any, Final

import ml_dtypes
import numpy as np

from fueltensor.core.errors import ProviderUnavailable
from fueltensor.fkc.schema import MeasuredOn

BF16: Final = np.dtype(ml_dtypes.bfloat16)
NARROW: Final = frozenset(
    {BF16, np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(ml_dtypes.float8_e5m2)}
)
"""The float dtypes NumPy holds through ml_dtypes, which a framework may not take as they are."""
UNSIGNED: Final[dict[int, np.dtype[Any]]] = {
    1: np.dtype(np.uint8),  # a comparison's bools
    2: np.dtype(np.uint16),
    4: np.dtype(np.uint32),
    8: np.dtype(np.uint64),
}


@dataclass(frozen=True)
class Framework:
    """What a framework provider needs to say about its framework."""

    provider: str
    module: str
    """The import name ("torch")."""
    title: str
    """How people call it ("PyTorch")."""
    install: str
    """The command that installs it for fueltensor."""

    def unavailable(self) -> str | None:
        """Why the provider cannot run here (its framework is not installed), or None."""
        if importlib.util.find_spec(self.module) is not None:
            return None
        return (
            f"provider {self.provider} runs {self.title}, which is not installed here; "
            f"install it with: {self.install}"
        )

    def load(self) -> Any:
        """The framework's module, imported on first use; ProviderUnavailable naming the install."""
        why = self.unavailable()
        if why is not None:
            raise ProviderUnavailable(why)
        return importlib.import_module(self.module)


def bits(array: np.ndarray) -> np.ndarray:
    """The same memory as unsigned integers of the element's width (any strides): a bit copy
    through this view changes no value, signaling NaNs included."""
    view: np.ndarray = array.view(UNSIGNED[array.dtype.itemsize])
    return view


def deliver(result: np.ndarray, out: np.ndarray) -> None:
    """Copy a framework's result into the caller's `out`, bit for bit (any result strides)."""
    if result.shape != out.shape or result.dtype != out.dtype:
        raise ValueError(
            f"the framework returned {result.dtype}{list(result.shape)} where the contract "
            f"promises {out.dtype}{list(out.shape)}"
        )
    np.copyto(bits(out), bits(result))


def isa_here() -> str:
    """The widest SIMD level NumPy detects on this CPU (e.g. AVX512_ICL): the instruction set
    a framework that compiles for the host (NumPy's dispatch, XLA) runs here."""
    from fueltensor.fingerprint import machine

    dispatched = machine().numpy_dispatch
    return dispatched[-1] if dispatched else "baseline"


def measured(framework: str, version: str, isa: str) -> MeasuredOn:
    """A `MeasuredOn` as the documents spell it ("torch 2.13.0+cpu", "AVX512")."""
    return MeasuredOn(f"{framework} {version}", isa)
