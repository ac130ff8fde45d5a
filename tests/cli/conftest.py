# SPDX-License-Identifier: MIT
"""Fixtures of the reaper command suite; the helpers live in cli_util.py."""
import pytest

from cli_util import Spawner


@pytest.fixture
def home(tmp_path):
    d = tmp_path / "home"
    d.mkdir()
    return str(d)


@pytest.fixture
def spawn(home):
    s = Spawner(home)
    yield s
    s.cleanup()
