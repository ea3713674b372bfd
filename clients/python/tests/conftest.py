"""Shared fixtures: the package under test from this checkout, and one
``sexton dev`` for the whole session."""

import sys
from pathlib import Path
from typing import Iterator

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import harness  # noqa: E402


@pytest.fixture(scope="session")
def dev(tmp_path_factory: pytest.TempPathFactory) -> Iterator[harness.DevCluster]:
    d = harness.DevCluster(tmp_path_factory.mktemp("dev"))
    yield d
    d.stop()
