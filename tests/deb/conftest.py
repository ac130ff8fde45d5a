# SPDX-License-Identifier: MIT
"""The Debian packages under test (REAPER_DEB_DIR, what `make deb` built: make check-deb passes
it) unpacked into a throwaway root: nothing is installed on the machine."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # procutil
from procutil import BUILD, ROOT  # noqa: E402

PACKAGES = ("reaper", "libreaper0", "libreaper-dev", "libreaper-check-dev", "python3-reaper")


def dpkg_status() -> str:
    """What dpkg says of this project's packages on the machine (installed or not)."""
    return subprocess.run(["dpkg-query", "-W", "-f", "${Package} ${Status} ${Version}\n", *PACKAGES],
                          capture_output=True, text=True).stdout


@pytest.fixture(scope="session")
def debs() -> dict:
    """{package: .deb path}; built here into the build tree when make did not pass them."""
    out = Path(os.environ.get("REAPER_DEB_DIR") or BUILD / "deb")
    if not os.environ.get("REAPER_DEB_DIR"):
        subprocess.run(["make", "-s", "-C", str(ROOT), f"BUILD={BUILD}", f"DEB_OUT={out}", "deb"], check=True,
                       capture_output=True)
    found = {}
    for deb in out.glob("*.deb"):
        found[subprocess.run(["dpkg-deb", "-f", str(deb), "Package"], capture_output=True, text=True,
                             check=True).stdout.strip()] = deb
    missing = [p for p in PACKAGES if p not in found]
    assert not missing, f"no .deb for {missing} in {out}"
    return found


@pytest.fixture(scope="session")
def multiarch() -> str:
    return subprocess.run(["dpkg-architecture", "-qDEB_HOST_MULTIARCH"], capture_output=True, text=True,
                          check=True).stdout.strip()


@pytest.fixture(scope="session")
def instroot(debs, tmp_path_factory):
    """Every package of the project, unpacked (dpkg -x) into one directory as into /; the
    machine's own dpkg database and / are left as they were."""
    before = dpkg_status()
    root = tmp_path_factory.mktemp("root")
    for pkg in PACKAGES:
        subprocess.run(["dpkg-deb", "-x", str(debs[pkg]), str(root)], check=True)
    yield root
    assert dpkg_status() == before, "the machine's package state changed"
