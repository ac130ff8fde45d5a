# SPDX-License-Identifier: MIT
"""A plain pytest suite (no plugin) under `reaper run`: each leak is named by the test that
started it, from the PYTEST_CURRENT_TEST pytest puts in its tests' environment; REAPER_TEST,
when set, wins."""
import os
import subprocess
import xml.etree.ElementTree as ET

from cli_util import load_json
from procutil import PY, REAPER, kill_identified, start_time

SUITE = '''
import os, subprocess

def test_leaks_a_sleep():
    p = subprocess.Popen(["sleep", "600"])
    open(os.environ["PIDS"], "a").write("%d sleep\\n" % p.pid)

def test_names_itself():
    env = dict(os.environ, REAPER_TEST="chosen-name")
    p = subprocess.Popen(["sleep", "601"], env=env)
    open(os.environ["PIDS"], "a").write("%d named\\n" % p.pid)
'''


def run_suite(tmp_path):
    suite = tmp_path / "suite"
    suite.mkdir()
    (suite / "test_plain.py").write_text(SUITE)
    pids, report, junit = tmp_path / "pids", tmp_path / "r.json", tmp_path / "r.xml"
    env = {k: v for k, v in os.environ.items()
           if k not in ("PYTHONPATH", "REAPER_TEST", "PYTEST_ADDOPTS", "GITHUB_ACTIONS") and not k.startswith("PYTEST_")}
    env["PIDS"] = str(pids)
    r = subprocess.run([REAPER, "run", "--timeout", "0", "--grace", "2", "--report", str(report), "--junit",
                        str(junit), "--", PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:reaper",
                        "test_plain.py"], cwd=suite, env=env, capture_output=True, timeout=300)
    left = {}
    for line in pids.read_text().splitlines() if pids.exists() else []:
        pid, what = line.split()
        left[what] = int(pid)
    return r, left, report, junit


def test_plain_pytest_suite_names_the_test_of_each_leak(tmp_path):
    r, left, report, junit = run_suite(tmp_path)
    try:
        assert r.returncode == 23, (r.stdout, r.stderr)
        procs = {p["pid"]: p for p in load_json(report)["processes"]}
        assert procs[left["sleep"]]["test"] == "test_plain.py::test_leaks_a_sleep"
        assert procs[left["named"]]["test"] == "chosen-name"
        err = r.stderr.decode()
        assert "test test_plain.py::test_leaks_a_sleep," in err and "(no test)" not in err, err
        assert "test_plain.py::test_leaks_a_sleep 1" in err
        cases = ET.parse(junit).getroot().iter("testcase")
        assert any(c.get("classname") == "test_plain" and c.get("name").startswith("test_leaks_a_sleep: leaked")
                   for c in cases)
    finally:
        for pid in left.values():
            st = start_time(pid)
            if st:
                kill_identified(pid, st)
