# SPDX-License-Identifier: MIT
"""Bad values and hostile files in the Python package and the pytest plugin: a clear error
for every bad time, the report written whole and never through a symlink."""
from __future__ import annotations

import math
import os
import time

import pytest

import reaper

PLUGIN = ("-p", "reaper.pytest_plugin", "--reaper", "--reaper-nested")


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
    assert not link.is_symlink() and '"reaper-pytest/1.1"' in link.read_text()
    assert not [n for n in os.listdir(pytester.path) if n.endswith(".tmp")]  # no temporary file left


def test_plugin_report_that_cannot_be_written_is_a_clear_error(pytester):
    """A directory at the path (or a full disk): an error naming the file and status 74 when
    the tests passed, as the reaper command does; no traceback, no temporary file left."""
    pytester.makepyfile(test_clean="def test_clean():\n    pass\n")
    (pytester.path / "leaks.json").mkdir()
    result = pytester.runpytest_subprocess(*PLUGIN, "--reaper-report", str(pytester.path / "leaks.json"))
    result.assert_outcomes(passed=1)
    assert result.ret == 74, result.stderr.str()
    assert "INTERNALERROR" not in result.stdout.str() + result.stderr.str()
    assert "reaper: error: cannot write the report" in result.stderr.str()
    assert not [n for n in os.listdir(pytester.path) if n.endswith(".tmp")]


def test_plugin_report_whose_name_is_near_the_name_limit_is_written(pytester):
    pytester.makepyfile(test_clean="def test_clean():\n    pass\n")
    path = pytester.path / ("r" * 255)
    result = pytester.runpytest(*PLUGIN, "--reaper-report", str(path))
    result.assert_outcomes(passed=1)
    assert '"reaper-pytest/1.1"' in path.read_text()


@pytest.mark.parametrize("mark, says", [
    *((f"timeout={v}", "timeout=* is not a number of seconds >= 0") for v in ("'abc'", "float('nan')", "-1", "1e9")),
    *((f"allow={v}", "allow=* is not a glob or a list of globs") for v in ("[1]", "42", "[None]", "b'sleep*'")),
])
def test_plugin_bad_marker_value_still_reaps_the_test(pytester, mark, says):
    """A bad @pytest.mark.reaper(timeout=...) or (allow=...) raised before the reap: the test's
    leftover (carrying only the test's marker) outlived the session."""
    pidfile = pytester.path / "pid"
    pytester.makepyfile(test_bad=f"""
import pytest, subprocess
@pytest.mark.reaper({mark})
def test_leaves_one():
    subprocess.run(["sh", "-c", "setsid sleep 300 >/dev/null 2>&1 & echo $! > {pidfile}"], check=True)
""")
    result = pytester.runpytest(*PLUGIN, "--reaper-timeout", "0", "--reaper-cgroup", "off")
    pid = int(pidfile.read_text())
    started = reaper.start_time(pid)
    try:
        result.assert_outcomes(passed=1, errors=1)
        result.stdout.fnmatch_lines([f"*@pytest.mark.reaper({says}*"])
        assert started is None, "the test's leftover outlived the session"
    finally:
        if started is not None:  # by identity: the pid may name another process by now
            reaper.kill_identified({(pid, started): "sleep 300"})


@pytest.mark.parametrize("kw", [{"timeout": math.nan}, {"timeout": math.inf}, {"grace": math.nan},
                                {"settle": -math.inf}, {"timeout": -0.5}])
def test_nan_infinite_or_negative_times_are_value_errors(spawner, kw):
    """A NaN deadline compares false with every clock reading: accepted, the wait never ended
    and nothing was ever escalated."""
    with pytest.raises(ValueError, match="finite number of seconds"):
        reaper.reap_report(reaper.with_env("REAPER_NO_SUCH_MARKER", "x"), **kw)


def test_library_refuses_nan_and_infinite_times():
    """The C call itself, without the Python check in front of it."""
    import ctypes
    from reaper import _lib
    clib = ctypes.CDLL(reaper.library_path)
    f = (_lib.Finder * 1)()
    f[0].kind = _lib.FIND_ENV
    f[0].marker = b"REAPER_NO_SUCH_MARKER=x"
    for field, value in (("timeout", math.nan), ("timeout", math.inf), ("grace", math.nan), ("settle", math.nan)):
        opts = _lib.Opts()
        clib.reaper_opts_init(ctypes.byref(opts))
        setattr(opts, field, value)
        out = ctypes.c_void_p()
        assert clib.reaper_reap(f, 1, ctypes.byref(opts), ctypes.byref(out)) == -22, field
        assert not out.value


@pytest.mark.parametrize("where,value", [
    ("ini", "abc"), ("ini", "nan"), ("ini", "-1"), ("ini", "inf"), ("option", "nan"), ("option", "inf"),
    ("ini", "1e308"), ("option", "86401"),
])
def test_plugin_bad_timeout_is_a_usage_error(pytester, where, value):
    pytester.makepyfile(test_ok="def test_ok():\n    pass\n")
    if where == "ini":
        pytester.makeini(f"[pytest]\nreaper_timeout = {value}\n")
        result = pytester.runpytest_subprocess(*PLUGIN)
    else:
        result = pytester.runpytest_subprocess(*PLUGIN, "--reaper-timeout", value)
    assert result.ret == pytest.ExitCode.USAGE_ERROR, result.stderr.str()
    err = result.stderr.str()
    assert "INTERNALERROR" not in err and "must be >= 0" in err and value in err


def test_library_as_root_leaves_another_users_marker_only_match_alone(tmp_path):
    """The library's rule under the command: fate "foreign", not signalled; any_user=True
    signals it."""
    if os.geteuid() != 0:
        pytest.skip("needs root: a process of the nobody user")
    import pwd
    import select
    import signal
    import subprocess
    import sys
    pw = pwd.getpwnam("nobody")
    marker = f"REAPER_FOREIGN_TEST={os.getpid()}-{tmp_path.name}"
    name, value = marker.split("=", 1)
    # started by a child that exits at once: nobody's process is an orphan, no descendant
    # of ours (a system binary run from /, so nothing of the checkout, nor an interpreter in
    # root's home, must be reachable)
    code = ("import os\nif os.fork() == 0:\n    os.setsid(); os.setgroups([]); os.setgid(%d); os.setuid(%d)\n"
            "    os.execve('/bin/sleep', ['sleep', '600'], {'PATH': '/usr/bin:/bin', %r: %r})\nos._exit(0)\n"
            % (pw.pw_gid, pw.pw_uid, name, value))
    subprocess.run([sys.executable, "-c", code], cwd="/", check=True, stdin=subprocess.DEVNULL)
    finder = reaper.with_env(name, value)
    fd = None
    try:
        deadline = time.monotonic() + 60
        found = []
        while not found and time.monotonic() < deadline:
            found = [p for p in reaper.scan(finder).processes if p.uid == pw.pw_uid]
            time.sleep(0.01)
        (p,) = found
        fd = os.pidfd_open(p.pid)
        assert p.fate == "foreign"
        rep = reaper.reap_report(finder, timeout=0)
        assert [q.fate for q in rep.processes] == ["foreign"] and not rep.leaks
        assert not select.select([fd], [], [], 0)[0]  # still alive
        rep = reaper.reap_report(finder, timeout=0, any_user=True)
        assert [q.fate for q in rep.processes] == ["killed"]
        assert select.select([fd], [], [], 10)[0]
    finally:
        if fd is not None:
            try:
                signal.pidfd_send_signal(fd, signal.SIGKILL)
            except ProcessLookupError:
                pass
            os.close(fd)
