"""`set_num_threads` / `get_num_threads`: the threads fueltensor's compiled kernels split a
large operation over (see `fueltensor.kernels.threads` for how and when)."""

from __future__ import annotations

from fueltensor.engine.backends import forget_plans
from fueltensor.kernels import threads


def set_num_threads(n: int) -> int:
    """Let operations over their op class's threshold (`_native.SPLIT_FROM`) run on up to `n`
    threads (1 to 64; above the cores this process may run on, the cores). Returns the previous
    setting.
    Plans made before are forgotten, so `explain` and `trace` show the thread count the new
    setting gives."""
    count = threads.checked(n, "set_num_threads(n)")
    previous = threads.apply(count)
    forget_plans()
    return previous


def get_num_threads() -> int:
    """The thread count set by `set_num_threads` or $FUELTENSOR_NUM_THREADS (by default, the
    cores this process may run on when fueltensor was imported)."""
    return threads.setting()
