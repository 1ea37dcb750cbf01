"""`fueltensor.lib`: NumPy's `lib` layout for the one function clients look for there
(`lib.stride_tricks.sliding_window_view`, which xarray's rolling windows call on the namespace
of their data). An extension outside the array API standard."""

from fueltensor.array_api.lib import stride_tricks

__all__ = ["stride_tricks"]
