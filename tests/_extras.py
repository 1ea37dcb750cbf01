"""Skips for the tests that need one of fueltensor's optional extras: each names the module that
is missing and the extra that installs it, so a run without the extra says what it left out."""

from __future__ import annotations

import importlib.util

import pytest


def needs(module: str, extra: str) -> pytest.MarkDecorator:
    """Skip unless `module` can be imported, naming it and the extra that brings it."""
    return pytest.mark.skipif(
        importlib.util.find_spec(module) is None,
        reason=f"needs {module}, which the {extra} extra installs (pip install '.[{extra}]')",
    )
