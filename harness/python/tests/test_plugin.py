# SPDX-License-Identifier: MIT
"""The pytest plugin, driven through pytester: real inner sessions that start real processes."""
from __future__ import annotations

import json
import os
import sys

import pytest

from conftest import LEAKER, TAG_VAR, running_after, with_tag, zombie_children
from test_plugin_guest import cgroup_usable

PLUGIN = ("-p", "reaper.pytest_plugin", "--reaper", "--reaper-nested")


@pytest.fixture
def suite(pytester, spawner):
    """An inner test file; every process it starts carries this test's tag (for cleanup)."""
    os.environ[TAG_VAR] = spawner.tag
    pytester.makeconftest(f"""
import subprocess, sys
LEAKER = {LEAKER!r}
def spawn(*args, daemon=True):
    p = subprocess.Popen([sys.executable, LEAKER, *(["--daemon"] if daemon else []), *args])
    if daemon:
        p.wait()
    return p
""")
    yield pytester
    del os.environ[TAG_VAR]
    assert running_after(spawner.tag) == [], "the plugin left a process of the inner suite running"


def test_leaking_test_fails_naming_the_command_and_the_next_is_not_blamed(suite, spawner):
    suite.makepyfile(test_inner="""
import os, time
from conftest import spawn
def test_clean_before():
    spawn("--sleep", "0", "clean-before", daemon=False).wait()
def test_leaks():
    spawn("--pidfile", "leak.pid", "leaky-daemon-tag")
    while not os.path.exists("leak.pid"):
        time.sleep(0.01)
def test_after():
    spawn("--sleep", "0.1", "after-exits-in-time")
def test_failing_and_leaking():
    spawn("--ignore-term", "second-leak")
    assert False, "body failed"
""")
    result = suite.runpytest(*PLUGIN, "--reaper-timeout", "1", "-rA")
    result.assert_outcomes(passed=3, failed=1, errors=2)
    result.stdout.fnmatch_lines([
        "*ERROR at teardown of test_leaks*",
        "*reaper: test_inner.py::test_leaks left 1 process running; stopped after*",
        f"*: {sys.executable} {LEAKER} --daemon --pidfile leak.pid leaky-daemon-tag",
    ])
    out = result.stdout.str()
    assert "ERROR at teardown of test_after" not in out and "ERROR at teardown of test_clean_before" not in out
    assert "ERROR at teardown of test_failing_and_leaking" in out and "second-leak" in out
    pid = int((suite.path / "leak.pid").read_text())
    assert not os.path.exists(f"/proc/{pid}") or pid not in zombie_children()
    assert running_after(spawner.tag) == []


def test_marker_and_test_name_are_in_the_environment_of_what_a_test_starts(suite):
    suite.makepyfile(test_env="""
import os, subprocess
seen = []
def test_one():
    seen.append(subprocess.run(["sh", "-c", "echo $REAPER_TEST $REAPER_PYTEST"], capture_output=True, text=True).stdout.split())
def test_two():
    seen.append(subprocess.run(["sh", "-c", "echo $REAPER_TEST $REAPER_PYTEST"], capture_output=True, text=True).stdout.split())
    (a_test, a_mark), (b_test, b_mark) = seen
    assert a_test == "test_env.py::test_one" and b_test == "test_env.py::test_two"
    assert a_mark != b_mark and a_mark.rsplit("-", 1)[0] == b_mark.rsplit("-", 1)[0]
    assert "-main-" in a_mark
""")
    before = os.environ.get("REAPER_PYTEST")
    suite.runpytest(*PLUGIN).assert_outcomes(passed=2)
    assert os.environ.get("REAPER_PYTEST") == before, "the plugin did not restore the environment"


def test_xdist_workers_get_their_own_marker_prefix(suite, monkeypatch):
    monkeypatch.setenv("PYTEST_XDIST_WORKER", "gw3")
    suite.makepyfile(test_w="""
import os
def test_w():
    assert "-gw3-" in os.environ["REAPER_PYTEST"]
""")
    suite.runpytest(*PLUGIN).assert_outcomes(passed=1)


def test_mark_allow_and_timeout(suite):
    suite.makepyfile(test_mark="""
import os, time, pytest
from conftest import spawn
@pytest.mark.reaper(allow=["*allowed-helper*"])
def test_allowed():
    spawn("allowed-helper")
@pytest.mark.reaper(timeout=30)
def test_slow_exit_within_a_longer_timeout():
    spawn("--sleep", "1.5", "slow-but-in-time")
@pytest.mark.reaper(check=False)
def test_unchecked():
    spawn("unchecked-helper")
""")
    result = suite.runpytest(*PLUGIN, "--reaper-timeout", "0.2")
    result.assert_outcomes(passed=3)


def test_session_fixture_processes_are_not_a_tests_leak(suite):
    suite.makepyfile(test_fix="""
import pytest
from conftest import spawn
@pytest.fixture(scope="session")
def server():
    p = spawn("--sleep", "600", "session-server", daemon=False)
    yield p
@pytest.fixture(scope="module")
def lazy():
    return spawn("--sleep", "600", "module-helper", daemon=False)
def test_a(server):
    assert server.poll() is None
def test_b(server, request):
    request.getfixturevalue("lazy")
    assert server.poll() is None
""")
    result = suite.runpytest(*PLUGIN, "--reaper-timeout", "0.2")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*reaper: left by fixtures wider than a test*"])
    out = result.stdout.str()
    assert "module-helper  [terminated, lazy (module-scoped fixture)]" in out
    assert "session-server  [terminated, server (session-scoped fixture)]" in out


def test_json_report(suite):
    suite.makepyfile(test_rep="""
import pytest
from conftest import spawn
def test_leak_one():
    spawn("json-leak-1")
def test_clean():
    pass
@pytest.mark.reaper(allow=["*json-allowed*"])
def test_leak_allowed():
    spawn("json-allowed")
""")
    result = suite.runpytest(*PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0", "--reaper-report", "leaks.json")
    result.assert_outcomes(passed=3, errors=1)
    doc = json.loads((suite.path / "leaks.json").read_text())
    assert doc["schema"] == "reaper-pytest/1.1" and doc["tests_checked"] == 3
    (leak,) = doc["leaks"]
    assert leak["test"] == "test_rep.py::test_leak_one" and leak["fate"] == "killed"
    assert leak["cmdline"].endswith("--daemon json-leak-1") and leak["pid"] > 0 and leak["start_time"] > 0
    assert leak["found_by"][0].startswith("env REAPER_PYTEST=")
    (allowed,) = doc["allowed"]
    assert allowed["test"] == "test_rep.py::test_leak_allowed" and allowed["allowed"] is True
    assert doc["summary"] == {"leaks": 1, "tests_with_leaks": 1, "per_test": {"test_rep.py::test_leak_one": 1}}


def test_disable_and_bad_timeout(suite):
    suite.makepyfile(test_off="""
def test_off():
    pass
""")
    suite.runpytest(*PLUGIN, "--reaper-disable").assert_outcomes(passed=1)
    bad = suite.runpytest(*PLUGIN, "--reaper-timeout", "-1")
    assert bad.ret != 0 and "--reaper-timeout must be >= 0" in bad.stderr.str()


@pytest.mark.parametrize("cgroup", [
    pytest.param("on", marks=pytest.mark.skipif(
        os.geteuid() != 0 and cgroup_usable() is not None,
        reason="per-test cgroups need a writable cgroup2 (root or a delegated cgroup)")),
    "off"])
def test_a_leak_found_only_by_its_marker_right_after_a_test_that_started_a_few(suite, cgroup):
    # A check may reuse the origin of an earlier test (a few pids given out since): what an
    # older process (a session fixture's server) starts with a test's environment is neither
    # in the test's cgroup nor below its processes, and is found by its marker alone.
    suite.makepyfile(test_server=r'''
import json, os, subprocess, sys
import pytest
SERVER = """
import json, os, sys
for line in sys.stdin:
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        os.execve("/bin/sleep", ["sleep", "600"], json.loads(line))
    os.close(w)
    os.read(r, 1)  # end of file once the child has exec'd (w is close-on-exec)
    print(pid, flush=True)
"""
@pytest.fixture(scope="session")
def server():
    p = subprocess.Popen([sys.executable, "-c", SERVER], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    yield p
    p.stdin.close()
    p.wait()
@pytest.mark.parametrize("i", range(4))
def test_ask(server, i):
    for _ in range(5):
        subprocess.run(["true"], check=True)
    if i % 2:
        server.stdin.write(json.dumps(dict(os.environ)) + "\n")
        server.stdin.flush()
        server.stdout.readline()
''')
    result = suite.runpytest(*PLUGIN, f"--reaper-cgroup={cgroup}", "--reaper-timeout", "0")
    result.assert_outcomes(passed=4, errors=2)
    out = result.stdout.str()
    assert "ERROR at teardown of test_ask[1]" in out and "ERROR at teardown of test_ask[3]" in out, out
    assert "ERROR at teardown of test_ask[0]" not in out and "ERROR at teardown of test_ask[2]" not in out, out
