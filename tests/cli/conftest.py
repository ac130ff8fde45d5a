# SPDX-License-Identifier: MIT
"""Fixtures of the reaper command suite; the helpers live in cli_util.py and tests/procutil.py."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # procutil
from cli_util import Spawner  # noqa: E402


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
