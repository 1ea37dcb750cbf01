"""fueltensor's thread setting as one of threadpoolctl's libraries: `threadpool_info()` lists it
(user_api "fueltensor") and `threadpool_limits(n)` sets it as `ft.set_num_threads` does.

This module imports threadpoolctl, so `import fueltensor` imports it only when threadpoolctl
is imported already (and then registers the controller); a program that imports threadpoolctl
after fueltensor calls `register()` itself.
"""

from __future__ import annotations

from importlib.metadata import version

import threadpoolctl  # type: ignore[import-untyped, unused-ignore]

from fueltensor.engine.threads import set_num_threads
from fueltensor.kernels._chassis import NATIVE
from fueltensor.kernels.threads import MAX_THREADS


class FueltensorController(threadpoolctl.LibController):  # type: ignore[misc, unused-ignore]
    """The compiled kernels' library (`_native`, told from other `_native` modules by its
    exported `fueltensor_thread_setting`): the threads a large body may use."""

    user_api = "fueltensor"
    internal_api = "fueltensor"
    filename_prefixes = ("_native",)
    check_symbols = ("fueltensor_thread_setting",)

    def get_num_threads(self) -> int:
        """The setting the compiled kernels run by now."""
        setting: int = self.dynlib.fueltensor_thread_setting()
        return setting

    def set_num_threads(self, num_threads: int) -> None:
        """`ft.set_num_threads`, with a count above MAX_THREADS taken as MAX_THREADS
        (threadpoolctl passes any positive limit)."""
        set_num_threads(max(1, min(int(num_threads), MAX_THREADS)))

    def get_version(self) -> str:
        """fueltensor's version (the library is part of it)."""
        return version("fueltensor")


def register() -> bool:
    """Make threadpoolctl list fueltensor's thread setting; False where there is nothing to list
    (no compiled kernels here) or no way to (a threadpoolctl before 3.3, without `register`).
    Registering again changes nothing."""
    if NATIVE is None or not hasattr(threadpoolctl, "register"):
        return False
    if FueltensorController not in threadpoolctl._ALL_CONTROLLERS:
        threadpoolctl.register(FueltensorController)
    return True
