"""The kernel tests' shared fixture: each instruction set's compiled body in turn."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _impls import runnable_isas, using


@pytest.fixture(params=runnable_isas())
def isa(request: pytest.FixtureRequest) -> Iterator[str]:
    """Each instruction set's body this CPU runs in turn, the one selected before after."""
    with using(f"native-{request.param}"):
        yield request.param
