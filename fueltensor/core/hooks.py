"""The slots that the layers above core fill when `fueltensor` is imported.

core imports nothing from engine/, array_api/, tools/ or the package root; where a tensor needs
them (its operators' Python path, fancy indexing, NumPy's protocols, its namespace, how a model
object is displayed), it calls a slot of `HOOKS` that `fueltensor/__init__.py` installs. A slot
read before it is installed raises `HookNotInstalled`, naming the slot and who fills it.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType
from typing import TYPE_CHECKING, Any, Final, Literal, NoReturn

if TYPE_CHECKING:
    from fueltensor.core.tensor import FuelTensor

Form = Literal["html", "str", "repr"]
"""How a model object is presented: its notebook HTML, `str()` or `repr()`."""


class HookNotInstalled(RuntimeError):
    """A core hook was used before the layer that fills it was imported."""


class Hooks:
    """Typed slots; each is set once, by the package root, before it returns from import."""

    __slots__ = (
        "array_function",
        "array_ufunc",
        "binary",
        "binary_inplace",
        "getitem",
        "namespace",
        "presenters",
        "setitem",
        "unary",
    )

    namespace: ModuleType
    """The `fueltensor` array-API namespace module."""
    binary: Callable[[str, Any, Any], FuelTensor]
    """`engine.dispatch.binary`: a contract operation `op(a, b)` (the operators' Python path)."""
    binary_inplace: Callable[[str, FuelTensor, Any], FuelTensor]
    """`engine.dispatch.binary_inplace`: `target op= other` (the operators' Python path)."""
    unary: Callable[[str, Any], FuelTensor]
    """`engine.unary.unary`: a unary contract operation `op(x)` (`-x`, `abs(x)`)."""
    getitem: Callable[[FuelTensor, Any], FuelTensor]
    """`array_api.indexing.getitem`: integer-array and boolean-mask indexing."""
    setitem: Callable[[FuelTensor, Any, Any], object]
    """`array_api.indexing.setitem`: writes through a tensor's strides."""
    array_ufunc: Callable[..., Any]
    """`array_api.numpy_protocols.array_ufunc` (NumPy's `__array_ufunc__`)."""
    array_function: Callable[[Any, tuple[Any, ...], dict[str, Any]], Any]
    """`array_api.numpy_protocols.array_function` (NumPy's `__array_function__`)."""
    presenters: dict[tuple[str, Form], Callable[[Any], str]]
    """(model class name, form) -> its presentation, registered by `tools.display.register`
    (by name, so that registering needs no class a first operation would load)."""

    def __init__(self) -> None:
        self.presenters = {}

    def __getattr__(self, name: str) -> NoReturn:
        """Only reached for a slot not yet set (or a name that is no slot)."""
        if name not in Hooks.__slots__:
            raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")
        raise HookNotInstalled(
            f"fueltensor.core's {name!r} hook is not installed yet: `import fueltensor` "
            "installs it (the core layer alone has no engine, array API or displays)"
        )


HOOKS: Final = Hooks()
"""The one set of slots core reads."""


def present(obj: object, form: Form) -> str:
    """`obj` presented as `form`, by the presenter registered for its class (or a base)."""
    presenters = HOOKS.presenters
    for cls in type(obj).__mro__:
        found = presenters.get((cls.__name__, form))
        if found is not None:
            return found(obj)
    raise HookNotInstalled(
        f"no {form} presentation is registered for {type(obj).__name__}: `import fueltensor` "
        "registers them (fueltensor.tools.display)"
    )
