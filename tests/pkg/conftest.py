# SPDX-License-Identifier: MIT
"""The checkout copy the packaging tests build in; the paths are tests/procutil.py's."""
from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # procutil
from procutil import ROOT  # noqa: E402


def copy_checkout(dest: Path) -> Path:
    """The tracked files of this checkout (as they are now) in dest: builds made there leave
    the checkout alone."""
    files = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                           capture_output=True, check=True).stdout.split(b"\0")
    for f in filter(None, files):
        src = ROOT / f.decode()
        if src.is_file():
            (dest / f.decode()).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / f.decode())
    return dest


@pytest.fixture
def checkout(tmp_path):
    return copy_checkout(tmp_path / "src")
