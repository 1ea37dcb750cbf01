"""What the tests of the compiled host calls compare: a call's outcome, the same call on the
Python path, and which of fueltensor's Python functions a call enters."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

import fueltensor as ft

PACKAGE = str(Path(ft.__file__).parent)


def outcome(call: Callable[[], Any]) -> tuple[str, Any]:
    """("ok", (dtype, shape, layout, bytes)) of a call's result, or ("error", (type, message))."""
    try:
        r = call()
    except Exception as e:
        return "error", (type(e), str(e))
    return "ok", (r.dtype, r.shape, r._layout, np.asarray(r).tobytes())


def traced(call: Callable[[], Any]) -> Any:
    """`call()` on the Python path: an active trace keeps every compiled call aside."""
    with ft.trace():
        return call()


def python_calls(call: Callable[[], Any]) -> list[str]:
    """The functions of fueltensor's own Python code `call()` enters (NumPy's Python layers,
    such as np.mean's or `np.where`'s dispatcher, are NumPy's cost on both sides)."""
    entered: list[str] = []

    def profile(frame: Any, event: str, arg: Any) -> None:
        if event == "call" and frame.f_code.co_filename.startswith(PACKAGE):
            entered.append(frame.f_code.co_name)

    sys.setprofile(profile)
    try:
        call()
    finally:
        sys.setprofile(None)
    return entered
