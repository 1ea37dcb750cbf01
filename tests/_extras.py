"""Skips for the tests that need one of fueltensor's optional extras: each names the module that
is missing and the extra that installs it, so a run without the extra says what it left out; and
where a fresh interpreter starts to import the installed package."""

from __future__ import annotations

import importlib.util
import os
import sys

import pytest


def needs(module: str, extra: str) -> pytest.MarkDecorator:
    """Skip unless `module` can be imported, naming it and the extra that brings it."""
    return pytest.mark.skipif(
        importlib.util.find_spec(module) is None,
        reason=f"needs {module}, which the {extra} extra installs (pip install '.[{extra}]')",
    )


OUTSIDE = os.path.dirname(sys.executable)
"""Where a test's fresh interpreter starts: not the checkout, whose unbuilt sources would shadow
the installed package (with its compiled kernels) from the current directory."""
