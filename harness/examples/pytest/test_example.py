# SPDX-License-Identifier: MIT
"""A tiny suite that leaks on purpose: run it with `make example-pytest`.

test_starts_a_daemon detaches a `sleep` into its own session and forgets it, the way a
server, an MCP stdio helper or a diagnostic often does. With -p reaper.pytest_plugin that
test gets an error at teardown naming the process; the others pass."""
import subprocess

import pytest


def test_waits_for_its_child():
    assert subprocess.run(["sh", "-c", "sleep 0.1"]).returncode == 0


def test_starts_a_daemon():
    subprocess.run(["setsid", "-f", "sleep", "300"], check=True)


def test_helper_that_exits_on_its_own():
    subprocess.run(["setsid", "-f", "sleep", "0.2"], check=True)


@pytest.mark.reaper(allow=["sleep 301"])
def test_allowed_leftover():
    subprocess.run(["setsid", "-f", "sleep", "301"], check=True)
