# SPDX-License-Identifier: MIT
"""A Check test that cannot run for this user is never counted as passed: a suite run by an
unprivileged user registers only what it can run, lists the rest as not run with the reason,
and appends them to TESTS_NOT_RUN_FILE for make check's closing line."""
from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from pathlib import Path

from procutil import BUILD

SUITE = "check_hard_priv"  # two root-only tests and the closing check


def unprivileged():
    if os.geteuid() == 0:
        os.setgroups([])
        os.setgid(65534)
        os.setuid(65534)


def test_root_only_tests_are_not_run_and_said_so_for_another_user():
    # a copy another user can reach, whatever the checkout's (and pytest's tmp) directory modes
    with tempfile.TemporaryDirectory(prefix="reaper-not-run-", dir="/tmp") as top:
        check_suite_unprivileged(Path(top))


def check_suite_unprivileged(d: Path):
    shutil.copy2(BUILD / "tests" / SUITE, d / SUITE)
    listing = d / "not-run.txt"
    listing.touch()
    d.chmod(0o755)
    listing.chmod(0o666)
    env = {"PATH": "/usr/bin:/bin", "REAPER_BUILD": str(BUILD), "TESTS_NOT_RUN_FILE": str(listing)}
    r = subprocess.run([str(d / SUITE)], cwd=str(d), env=env, preexec_fn=unprivileged, capture_output=True,
                       text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert "Checks: 1, Failures: 0, Errors: 0" in out, out  # only nothing_left_behind ran
    assert f"{SUITE}: 2 not run (need root):" in out, out
    for test in ("nobody_library_own_processes_only", "nobody_cli_own_processes_only"):
        assert f"  {test}: " in out, out
    assert "SKIP" not in out + r.stderr
    rows = [line.split("\t") for line in listing.read_text().splitlines()]
    assert sorted(row[1] for row in rows) == ["nobody_cli_own_processes_only", "nobody_library_own_processes_only"]
    assert all(row[0] == SUITE and row[2] == "root" and row[3] for row in rows), rows
