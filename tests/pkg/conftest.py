# SPDX-License-Identifier: MIT
"""Paths shared by the packaging tests."""
from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILD = Path(os.environ.get("REAPER_BUILD") or ROOT / "build")


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
