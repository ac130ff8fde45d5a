"""Bad values and hostile files in the Python package and the pytest plugin: a clear error
for every bad time, the report written whole and never through a symlink."""
from __future__ import annotations

import math
import os

import pytest

import reaper

PLUGIN = ("-p", "reaper.pytest_plugin")


def test_plugin_report_never_written_through_a_symlink(pytester):
    pytester.makepyfile(test_clean="def test_clean():\n    pass\n")
    victim = pytester.path / "victim"
    victim.write_text("precious\n")
    link = pytester.path / "leaks.json"
    link.symlink_to(victim)
    # and at the temporary name a writer with a predictable one would use (the inner session
    # runs in this process)
    (pytester.path / f"leaks.json.tmp{os.getpid()}").symlink_to(victim)
    result = pytester.runpytest(*PLUGIN, "--reaper-report", str(link))
    result.assert_outcomes(passed=1)
    assert victim.read_text() == "precious\n"
    assert not link.is_symlink() and '"reaper-pytest/1"' in link.read_text()
    assert not [n for n in os.listdir(pytester.path) if n.endswith(".tmp")]  # no temporary file left
