"""The built-in providers' kernels (cpu, reference) and the calling convention they share."""

from collections.abc import Callable

KernelFn = Callable[..., None]
"""`kernel(*inputs, out=out) -> None`; see docs/interfaces.md for the calling convention."""
