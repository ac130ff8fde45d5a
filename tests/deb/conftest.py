# SPDX-License-Identifier: MIT
"""The Debian packages under test, built by `make deb` into REAPER_DEB_OUT (make check-deb
passes its DEB_OUT), unpacked into a throwaway root: nothing is installed on the machine."""
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


# What the output directory holds before `make deb` runs: a file of someone else's, which the
# build keeps, and a package of this project's from an earlier build, which it replaces.
BESIDE = {"others": ("notes.txt", "not the build's\n"), "earlier": ("reaper_0.0.1_amd64.deb", "an earlier build\n")}


@pytest.fixture(scope="session")
def deb_build() -> dict:
    """`make deb` into DEB_OUT, which holds BESIDE's files: {"debs": {package: .deb path},
    "kept": {BESIDE key: whether that file was still there, as it was, after the build}}."""
    out = ROOT / (os.environ.get("REAPER_DEB_OUT") or BUILD / "deb")  # relative: to the checkout, as make's
    out.mkdir(parents=True, exist_ok=True)
    for name, text in BESIDE.values():
        (out / name).write_text(text)
    try:
        r = subprocess.run(["make", "-s", "-C", str(ROOT), f"BUILD={BUILD}", f"DEB_OUT={out}", "deb"],
                           capture_output=True, text=True, timeout=1200)
        assert r.returncode == 0, r.stdout + r.stderr
        kept = {k: (out / name).is_file() and (out / name).read_text() == text for k, (name, text) in BESIDE.items()}
    finally:
        for name, _ in BESIDE.values():
            (out / name).unlink(missing_ok=True)
    found = {}
    for deb in out.glob("*.deb"):
        found[subprocess.run(["dpkg-deb", "-f", str(deb), "Package"], capture_output=True, text=True,
                             check=True).stdout.strip()] = deb
    missing = [p for p in PACKAGES if p not in found]
    assert not missing, f"no .deb for {missing} in {out}"
    return {"debs": found, "kept": kept}


@pytest.fixture(scope="session")
def debs(deb_build) -> dict:
    """{package: .deb path}"""
    return deb_build["debs"]


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
