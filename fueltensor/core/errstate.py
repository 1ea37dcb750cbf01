"""NumPy's floating-point error state, silenced around a call: every kernel and host call runs
under the all-ignore state (IEEE results, no warnings), as NumPy's own `np.errstate` would.

`silence()` enters it and returns a token for `restore`; `silenced()` is the context-manager
form for paths that are not per-call hot; `ERRSTATE` is NumPy's error-state context variable
and its all-ignore value, which the compiled fast path sets itself (None where NumPy has none).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from functools import partial
from typing import Any

import numpy as np

# Silencing NumPy's floating-point warnings is on every kernel call, so its price is dispatch
# overhead. `np.errstate` costs ~2 µs per enter/exit; NumPy 2 keeps the error state in a
# contextvar holding an opaque "extobj", and setting that contextvar directly costs ~0.1 µs.
# It is private API, hence the guarded import with `np.errstate` as the fallback.
try:
    from numpy._core._multiarray_umath import (  # type: ignore[import-not-found]
        _extobj_contextvar,
        _make_extobj,
    )

    _IGNORE: Any = _make_extobj(all="ignore")
    # Bound C-level callables (no Python frame): the pair costs ~0.25 µs on this machine.
    silence: Callable[[], Any] = partial(_extobj_contextvar.set, _IGNORE)
    restore: Callable[[Any], None] = _extobj_contextvar.reset
    ERRSTATE: tuple[Any, Any] | None = (_extobj_contextvar, _IGNORE)
    """NumPy's error-state contextvar and its all-ignore value (None on the fallback): what
    dispatch's compiled path sets around the oracle's ufunc call."""

except ImportError:  # pragma: no cover - exercised only on NumPy builds without the contextvar
    ERRSTATE = None

    def silence() -> Any:
        """Enter the all-ignore floating-point error state; returns the token for `restore`."""
        state = np.errstate(all="ignore")
        state.__enter__()
        return state

    def restore(token: Any) -> None:
        """Leave the error state entered by `silence`."""
        token.__exit__(None, None, None)


@contextmanager
def silenced() -> Iterator[None]:
    """Context-manager form of `silence`/`restore` for code paths that are not per-call hot."""
    token = silence()
    try:
        yield
    finally:
        restore(token)
