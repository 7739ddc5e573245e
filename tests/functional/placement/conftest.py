"""Placement tests: falcon's validating test client accepts Placement's
empty 201s (see :func:`fixtures.allow_untyped_empty_201`)."""

import pytest

from tests.functional.placement import fixtures


@pytest.fixture(autouse=True)
def _untyped_empty_201(monkeypatch):
    fixtures.allow_untyped_empty_201(monkeypatch)
