"""The compiled floor: fueltensor's two C extensions, below every Python layer.

`_native` holds fuel-cpu-backend's kernel bodies (one per instruction set), the integer-power
body, the worker pool and Contiguize's strided copy; `_fast` is dispatch's compiled fast path
(tensor construction, the aligned allocator, the plan key and cache lookup, the operators,
views, and the host calls over NumPy's own loops). Their sources are under `src/`: one folder
per extension, one file per concern, and `abi.h`, the header both share.

This floor imports nothing of fueltensor's Python and reads none of its private names: core
binds its types (`_fast.bind_core`) and the engine its hooks (`_fast.configure`) through the
public interface of docs/interfaces.md, "The compiled floor". Either extension may be missing
(no C compiler at install): the layers above then run their pure-NumPy twins, with the same bits.
"""
