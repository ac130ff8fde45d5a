# SPDX-License-Identifier: MIT
"""The plugin names where each leak was started: the line in the test's own file, the innermost
line of the caller's code (a helper module's), and the call made, in the teardown error, the
JSON report, the JUnit message and GitHub annotations; for a child forked without exec, and
for what a leak's shell started, too. Real inner sessions in both trackings."""
from __future__ import annotations

import json
import xml.etree.ElementTree as ET

from test_plugin_guest import PLUGIN, inner, run_sub, tracked  # noqa: F401 (inner, tracked: fixtures)

FAST = ("--reaper-timeout", "0.2", "--reaper-grace", "0")


def line_of(source: str, tag: str) -> int:
    """The line that ends with the comment # tag in the file makepyfile writes (source stripped)."""
    return next(n for n, text in enumerate(source.strip().splitlines(), 1) if text.rstrip().endswith(f"# {tag}"))


def one_leak(tracked, tmp_path, name: str, src: str, pidfile: str):
    """Run the inner file name (src), whose one test leaks the process it writes to pidfile:
    (the result, that pid)."""
    tracked.makepyfile(**{name: src})
    result = run_sub(tracked, *PLUGIN, *FAST)
    result.assert_outcomes(passed=1, errors=1)
    return result, int((tmp_path / pidfile).read_text())


DIRECT = """
import subprocess

def test_leaks():
    subprocess.Popen(["sleep", "60"])  # spawn
"""

HELPERS = """
import subprocess

def start_server():
    return subprocess.Popen(["sleep", "60"])  # spawn
"""

VIA_HELPER = """
import helpers

def test_uses_helper():
    helpers.start_server()  # call
"""


def test_a_direct_popen_is_named_at_its_line_in_every_format(tracked, tmp_path):
    tracked.makepyfile(test_direct=DIRECT)
    line = line_of(DIRECT, "spawn")
    report, junit = tmp_path / "r.json", tmp_path / "j.xml"
    result = run_sub(tracked, *PLUGIN, *FAST, f"--reaper-report={report}", f"--junitxml={junit}")
    result.assert_outcomes(passed=1, errors=1)
    want = f"started at test_direct.py:{line} in test_leaks, via subprocess.Popen"
    result.stdout.fnmatch_lines(["*reaper: test_direct.py::test_leaks left 1 process running*",
                                 "*: sleep 60", f"      {want}"])
    leak, = json.loads(report.read_text())["leaks"]
    frame = {"file": "test_direct.py", "line": line, "function": "test_leaks"}
    assert leak["started_at"] == {"test_frame": frame, "innermost": frame, "via": "subprocess.Popen"}
    error, = ET.parse(junit).getroot().iter("error")  # the reason its message, the detail its text
    assert error.get("message") == 'failed on teardown with "left 1 process: sleep 60"'
    assert want in error.text


def test_a_leak_through_a_helper_module_names_both_frames_and_the_call(tracked, tmp_path):
    tracked.makepyfile(helpers=HELPERS, test_helper=VIA_HELPER)
    report = tmp_path / "r.json"
    result = run_sub(tracked, *PLUGIN, *FAST, f"--reaper-report={report}")
    result.assert_outcomes(passed=1, errors=1)
    at, inner = line_of(VIA_HELPER, "call"), line_of(HELPERS, "spawn")
    result.stdout.fnmatch_lines([f"      started at test_helper.py:{at} in test_uses_helper; "
                                 f"helpers.py:{inner} in start_server, via subprocess.Popen"])
    leak, = json.loads(report.read_text())["leaks"]
    assert leak["started_at"] == {"test_frame": {"file": "test_helper.py", "line": at, "function": "test_uses_helper"},
                                  "innermost": {"file": "helpers.py", "line": inner, "function": "start_server"},
                                  "via": "subprocess.Popen"}


def test_a_shells_background_job_inherits_the_site(tracked, tmp_path):
    # the shell exits at once: its job is re-parented, its ancestry lost; its environment says
    src = f"""
import subprocess

def test_background():
    subprocess.run(["sh", "-c", "sleep 60 & echo $! > {tmp_path / 'bg.pid'}"], check=True)  # spawn
"""
    result, pid = one_leak(tracked, tmp_path, "test_bg", src, "bg.pid")
    result.stdout.fnmatch_lines([f"  {pid}: sleep 60",
                                 f"      started at test_bg.py:{line_of(src, 'spawn')} in test_background, via subprocess.run"])


# a test that forks a child that sleeps (its line tagged fork); its pid is written next
FORKED_CHILD = """
import os, time

def test_fork():
    pid = os.fork()  # fork
    if pid == 0:
        time.sleep(60)
        os._exit(0)
"""


def test_a_child_forked_without_exec_and_what_it_execs_are_named(tracked, tmp_path):
    # a forked child's /proc environ is pytest's own: its site is known by its identity; what it
    # execs carries the site in its environment
    src = FORKED_CHILD + f"""    open({str(tmp_path / 'fork.pid')!r}, "w").write(str(pid))

def test_fork_then_shell():
    pid = os.fork()  # shell
    if pid == 0:
        os.execv("/bin/sh", ["sh", "-c", "sleep 60 & echo $! > {tmp_path / 'job.pid'}"])
    os.waitpid(pid, 0)
"""
    tracked.makepyfile(test_fork=src)
    result = run_sub(tracked, *PLUGIN, *FAST)
    result.assert_outcomes(passed=2, errors=2)
    fork, job = (int((tmp_path / f"{n}.pid").read_text()) for n in ("fork", "job"))
    result.stdout.fnmatch_lines([f"  {fork}: *", f"      started at test_fork.py:{line_of(src, 'fork')} in test_fork, via os.fork"])
    result.stdout.fnmatch_lines([f"  {job}: sleep 60",
                                 f"      started at test_fork.py:{line_of(src, 'shell')} in test_fork_then_shell, via os.fork"])


def test_github_actions_gets_an_annotation_at_the_spawn_line(tracked, monkeypatch):
    monkeypatch.setenv("GITHUB_ACTIONS", "true")
    tracked.makepyfile(helpers=HELPERS, test_helper=VIA_HELPER, test_direct=DIRECT)
    result = run_sub(tracked, *PLUGIN, *FAST)
    result.assert_outcomes(passed=2, errors=2)
    at, inner = line_of(VIA_HELPER, "call"), line_of(HELPERS, "spawn")
    result.stdout.fnmatch_lines([
        f"::error file=test_direct.py,line={line_of(DIRECT, 'spawn')},title=reaper%3A leaked process::"
        "test_direct.py::test_leaks left pid * running (*): sleep 60; started at test_direct.py:* in test_leaks, "
        "via subprocess.Popen",
        f"::error file=test_helper.py,line={at},title=reaper%3A leaked process::test_helper.py::test_uses_helper "
        f"left pid * running (*): sleep 60; started at test_helper.py:{at} in test_uses_helper; "
        f"helpers.py:{inner} in start_server, via subprocess.Popen"], consecutive=False)


def test_no_annotation_outside_github_actions(tracked, monkeypatch):
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    tracked.makepyfile(test_direct=DIRECT)
    result = run_sub(tracked, *PLUGIN, *FAST)
    result.assert_outcomes(passed=1, errors=1)
    assert "::error" not in result.stdout.str()


def test_a_daemon_forked_twice_without_exec_is_named_at_its_fork(tracked, tmp_path):
    # the middle child exits at once: the daemon's parent is gone, its environment pytest's own;
    # the middle child told the session where it forked it
    src = f"""
import os, time

def test_daemon():
    first = os.fork()  # first
    if first == 0:
        if os.fork() == 0:  # second
            open({str(tmp_path / 'd.pid')!r}, "w").write(str(os.getpid()))
            time.sleep(60)
        os._exit(0)
    os.waitpid(first, 0)
    while not os.path.exists({str(tmp_path / 'd.pid')!r}):
        time.sleep(0.01)
"""
    result, pid = one_leak(tracked, tmp_path, "test_daemon", src, "d.pid")
    result.stdout.fnmatch_lines([f"  {pid}: *",
                                 f"      started at test_daemon.py:{line_of(src, 'second')} in test_daemon, via os.fork"])


def test_what_c_code_starts_in_a_forked_child_gone_is_the_tests_and_named_at_no_other_line(tracked, tmp_path):
    # C code (ctypes system()) starts a shell's job in a child forked without exec, which then
    # exits: the job is re-parented, its ancestry lost, and the child's fork set no site in its
    # environment (see atfork): the test's leak, named at no line, or at the fork's
    src = f"""
import ctypes, os

def test_c_system():
    pid = os.fork()  # fork
    if pid == 0:
        ctypes.CDLL(None).system(b"sleep 60 & echo $! > {tmp_path / 'c.pid'}")
        os._exit(0)
    os.waitpid(pid, 0)
"""
    result, pid = one_leak(tracked, tmp_path, "test_c", src, "c.pid")
    result.stdout.fnmatch_lines(["*reaper: test_c.py::test_c_system left 1 process*", f"  {pid}: sleep 60"])
    named = [line.strip() for line in result.stdout.lines if line.strip().startswith("started at")]
    assert named in ([], [f"started at test_c.py:{line_of(src, 'fork')} in test_c_system, via os.fork"])


def test_a_fork_replaced_before_the_session_is_named_by_its_replacer(tracked, tmp_path):
    # os.fork already replaced when the session began (a conftest's, as gevent's monkey patching
    # does): the call is named for what was replaced, on every path a fork takes
    tracked.makeconftest("""
import os
_real = os.fork

def fork():
    return _real()

os.fork = fork
""")
    src = FORKED_CHILD + f"""    open({str(tmp_path / 'f.pid')!r}, "w").write(str(pid))
"""
    result, pid = one_leak(tracked, tmp_path, "test_f", src, "f.pid")
    result.stdout.fnmatch_lines([f"  {pid}: *",
                                 f"      started at test_f.py:{line_of(src, 'fork')} in test_fork, via conftest.fork"])


# a helper, the same in the test's file and in a module of its own: equal code objects
TWIN = """
import os


def spawn():
    return os.fork()  # twin
"""


def test_a_helpers_twin_in_another_module_is_named_at_its_own_lines(tracked, tmp_path):
    # the test's file forks through its own helper first (its site kept for the next fork made
    # by the same code), then through another module's helper written the same way at the same
    # line, whose code object compares equal to it: each fork is named at its own lines
    tracked.makepyfile(twin=TWIN)
    src = TWIN + f"""

def test_own():
    pid = spawn()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)


def test_twin():
    import time, twin
    pid = twin.spawn()  # call
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    open({str(tmp_path / 'twin.pid')!r}, "w").write(str(pid))
"""
    tracked.makepyfile(test_twin=src)
    result = run_sub(tracked, *PLUGIN, *FAST)
    result.assert_outcomes(passed=2, errors=1)
    pid = int((tmp_path / "twin.pid").read_text())
    result.stdout.fnmatch_lines(["*reaper: test_twin.py::test_twin left 1 process*", f"  {pid}: *",
                                 f"      started at test_twin.py:{line_of(src, 'call')} in test_twin; "
                                 f"twin.py:{line_of(TWIN, 'twin')} in spawn, via os.fork"])


def test_the_site_pytest_itself_was_started_with_is_no_tests(tracked, monkeypatch, tmp_path):
    # pytest started by a spawn with a site (an enclosing checked session): what C code forks
    # or starts below the interception carries that environment, which names no line of this
    # session's
    monkeypatch.setenv("REAPER_STARTED_AT", "outer.py:1:test_outer")
    monkeypatch.setenv("REAPER_STARTED_IN", "outer.py:1:test_outer")
    src = f"""
import ctypes

def test_c_system():
    ctypes.CDLL(None).system(b"sleep 60 & echo $! > {tmp_path / 'c.pid'}")
"""
    result, pid = one_leak(tracked, tmp_path, "test_c", src, "c.pid")
    result.stdout.fnmatch_lines([f"  {pid}: sleep 60"])
    assert "outer.py" not in result.stdout.str()


THREAD_ENV = """
import os, subprocess, threading

def child_env():
    out = subprocess.run(["env", "-0"], stdout=subprocess.PIPE, check=True).stdout  # spawn
    return dict(e.split("=", 1) for e in out.decode().split("\\0") if e)

def in_thread(fn):
    got = []
    t = threading.Thread(target=lambda: got.append(fn()))
    t.start()
    t.join()
    return got[0]

def check(env, test):
    assert env["REAPER_PYTEST"] == os.environ["REAPER_PYTEST"]
    assert env["REAPER_TEST"] == test
    assert env["REAPER_STARTED_IN"].endswith(":child_env"), env["REAPER_STARTED_IN"]

def test_one():
    check(in_thread(child_env), "test_thread_env.py::test_one")
    os.environ["EXTRA_ONE"] = "1"
    env = in_thread(child_env)
    check(env, "test_thread_env.py::test_one")
    assert env["EXTRA_ONE"] == "1"
    check(child_env(), "test_thread_env.py::test_one")
    del os.environ["EXTRA_ONE"]
    assert "EXTRA_ONE" not in in_thread(child_env)

def test_two():
    env = in_thread(child_env)
    check(env, "test_thread_env.py::test_two")
    assert "EXTRA_ONE" not in env
    # a marker of this session's that is not this test's, set by the test itself: the test's
    # own replaces it in what another thread starts
    mine = os.environ["REAPER_PYTEST"]
    os.environ["REAPER_PYTEST"] = mine.rsplit("-", 1)[0] + "-999"
    try:
        env = in_thread(child_env)
    finally:
        os.environ["REAPER_PYTEST"] = mine
    check(env, "test_thread_env.py::test_two")
"""


def test_what_a_tests_thread_starts_carries_the_tests_marker_and_site_as_os_environ_changes(tracked):
    tracked.makepyfile(test_thread_env=THREAD_ENV)
    result = run_sub(tracked, *PLUGIN, *FAST)
    result.assert_outcomes(passed=2)
