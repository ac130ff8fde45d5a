# SPDX-License-Identifier: MIT
"""What pytest's short test summary and --junitxml say of a test that leaked: the reason after
its id, in both modes, with the detailed teardown error still there."""
from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from test_plugin_guest import run_sub, tracked, inner  # noqa: F401 (fixtures)

ARGV0 = "a\nnewline, " + "x" * 80  # sleep by another name: its cmdline is long and two lines


def test_short_summary_names_what_each_test_left(tracked, monkeypatch):
    monkeypatch.setenv("COLUMNS", "300")  # pytest trims the reason to the terminal's width
    tracked.makepyfile(test_s=f"""
import subprocess
import pytest
def test_one():
    subprocess.Popen(["sleep", "60"])
def test_four():
    for n in range(61, 65):
        subprocess.Popen(["sleep", str(n)])
def test_long_cmdline():
    subprocess.Popen([{ARGV0!r}, "60"], executable="sleep")
def test_clean():
    subprocess.run(["true"], check=True)
@pytest.mark.reaper(timeout="soon")
def test_bad_marker():
    pass
""")
    result = run_sub(tracked, "-p", "reaper.pytest_plugin", "--reaper", "--reaper-nested", "--reaper-timeout", "0.2",
                     "--reaper-grace", "0", "-rA", "--junitxml=out.xml")
    result.assert_outcomes(passed=5, errors=4)
    lines = result.stdout.lines
    summary = lines[next(i for i, l in enumerate(lines) if "short test summary info" in l):]
    assert "ERROR test_s.py::test_one - left 1 process: sleep 60" in summary
    four = [l for l in summary if l.startswith("ERROR test_s.py::test_four - ")]
    assert len(four) == 1, summary
    m = re.fullmatch(r"ERROR test_s\.py::test_four - left 4 processes: (.+), (.+), (.+), \.\.\. \(1 more\)", four[0])
    assert m and set(m.groups()) < {f"sleep {n}" for n in range(61, 65)}, four[0]
    named = " ".join(ARGV0.split())[:57] + "..."
    assert f"ERROR test_s.py::test_long_cmdline - left 1 process: {named}" in summary
    result.stdout.fnmatch_lines(["ERROR test_s.py::test_bad_marker - @pytest.mark.reaper(timeout='soon'): "
                                 "the timeout must be >= 0 *"])
    assert not [l for l in summary if "test_clean" in l and not l.startswith("PASSED")]
    # the teardown error keeps its detail
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_one*",
                                 "*reaper: test_s.py::test_one left 1 process running; stopped after*",
                                 "*: sleep 60"])
    cases = {c.get("name"): c for c in ET.parse(tracked.path / "out.xml").iter("testcase")}
    assert cases["test_one"].find("error").get("message") == 'failed on teardown with "left 1 process: sleep 60"'
