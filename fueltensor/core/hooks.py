"""What core reaches above itself: slots the package fills at import, so core imports no layer
above it (not even inside a function).

`HOOKS.namespace` is the `fueltensor` namespace module; `fueltensor/__init__.py` installs it
as its last step. The tensor's NumPy-style methods (`core.methods`) call the namespace's
functions through it, so they plan and trace exactly as the functions do.
"""

from __future__ import annotations

from types import ModuleType


class Hooks:
    """The slots core calls through; reading one that was never installed is a RuntimeError."""

    __slots__ = ("_namespace",)

    def __init__(self) -> None:
        self._namespace: ModuleType | None = None

    @property
    def namespace(self) -> ModuleType:
        """The `fueltensor` namespace module (its functions: `sum`, `reshape`, ...)."""
        if self._namespace is None:
            raise RuntimeError(
                "fueltensor's namespace is not installed in core's hooks; "
                "import fueltensor (it installs it) before calling tensor methods"
            )
        return self._namespace

    @namespace.setter
    def namespace(self, module: ModuleType) -> None:
        self._namespace = module


HOOKS = Hooks()
"""The one set of hooks; filled by `fueltensor/__init__.py`."""
