"""The machine fingerprint carried by the judge's and the comparison's reports."""

from __future__ import annotations

import json
import platform

import ml_dtypes
import numpy as np
from numpy._core import _multiarray_umath as umath

from fueltensor.fingerprint import Fingerprint, machine
from fueltensor.kernels._chassis import IMPLEMENTATION, NATIVE


def test_fingerprint_reports_this_interpreter_numpy_and_kernels() -> None:
    m = machine()
    assert isinstance(m, Fingerprint) and machine() is m
    assert (m.python, m.numpy, m.ml_dtypes) == (
        platform.python_version(),
        np.__version__,
        ml_dtypes.__version__,
    )
    want = f"native ({NATIVE.ISAS[-1]})" if IMPLEMENTATION == "native" and NATIVE else "pure"
    assert m.kernels == want
    assert m.cpu.endswith(f"({platform.machine()})")


def test_numpy_simd_is_what_numpy_detected() -> None:
    m = machine()
    assert list(m.numpy_baseline) == list(umath.__cpu_baseline__)
    features = umath.__cpu_features__
    assert all(features[t] for t in m.numpy_dispatch)
    assert set(m.numpy_dispatch) <= set(umath.__cpu_dispatch__)
    assert set(m.cpu_features) == {k for k, on in features.items() if on}


def test_c_library_is_named_with_its_version() -> None:
    name, version = platform.libc_ver()
    if name:
        assert machine().libc.split()[0] == name and version in machine().libc


def test_dict_and_text_forms_carry_every_field() -> None:
    m = machine()
    data = json.loads(json.dumps(m.to_dict()))
    assert set(data) == set(Fingerprint.__dataclass_fields__)
    assert data["numpy_dispatch"] == list(m.numpy_dispatch)
    for part in (m.cpu, m.libc, m.kernels, m.numpy, m.ml_dtypes, *m.numpy_dispatch):
        assert part in str(m)
