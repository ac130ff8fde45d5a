# SPDX-License-Identifier: MIT
"""The plugin with a cgroup per test: pytest moves itself into the running test's cgroup for
the test's function fixtures and call, into the session's while wider fixtures are set up and
torn down, and out before it reaps; every cgroup it makes is gone when pytest ends, whichever
way the session ends; a read-only or missing cgroup2 means markers and descent."""
from __future__ import annotations

import os
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from conftest import TAG_VAR
from test_plugin_guest import PLUGIN, cgroup_usable, inner, run_sub  # noqa: F401 (inner: a fixture)

import reaper
import reaper.cgroup

needs_cgroup = pytest.mark.skipif(os.geteuid() != 0 and cgroup_usable() is not None,
                                  reason="per-test cgroups need a writable cgroup2 (root or a delegated cgroup)")
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="a private mount namespace needs root")

CG = """
def cg():
    return [l for l in open("/proc/self/cgroup").read().splitlines() if l.startswith("0::")][0][3:]
"""


def mount_of(path: str) -> str:
    """The cgroup2 mount point path lies under (the longest one that is a prefix)."""
    best = ""
    for line in Path("/proc/self/mountinfo").read_text().splitlines():
        left, right = line.split(" - ")
        if right.split()[0] == "cgroup2":
            point = left.split()[4]
            if (path == point or path.startswith(point.rstrip("/") + "/")) and len(point) > len(best):
                best = point
    return best


@pytest.fixture
def box():
    """A cgroup of this test's own for an inner pytest to start in: what the inner session
    leaves below it is visible, and nothing else is there."""
    path = reaper.cgroup.create(None, f"plugin-test-{secrets.token_hex(4)}")
    yield path
    try:
        if reaper.cgroup.populated(path):
            reaper.cgroup.kill(path)
            reaper.cgroup.wait(path, 30)
    finally:
        reaper.cgroup.remove(path)


def left_below(box: str):
    return sorted(os.path.relpath(d, box) for d, _, _ in os.walk(box) if d != box)


def run_in(pytester, box: str, *args, wrap=(), timeout=120):
    """The inner suite in a pytest process started inside the cgroup box (wrap: a command
    prefix run after the move, such as unshare)."""
    return pytester.run("sh", "-c", 'echo 0 > "$0/cgroup.procs" && exec "$@"', box, *wrap,
                        sys.executable, "-m", "pytest", f"--basetemp={pytester.path / 'inner-tmp'}",
                        "-p", "no:cacheprovider", *args, timeout=timeout)


@needs_cgroup
def test_a_test_runs_in_its_own_cgroup_and_wider_fixtures_in_the_sessions(inner, box, tmp_path):
    log = tmp_path / "where"
    inner.makepyfile(test_where=CG + f"""
import os, subprocess, pytest
def note(what):
    with open({str(log)!r}, "a") as f:
        f.write(what + " " + cg() + "\\n")
@pytest.fixture(scope="module")
def mod():
    note("module-setup")
    yield
    note("module-teardown")
@pytest.fixture(scope="session")
def lazy():
    note("lazy-setup")
@pytest.fixture
def fn():
    note("fn-setup")
    yield
    note("fn-teardown")
def test_a(mod, fn):
    note("call-a-before")  # nothing started yet: no cgroup of its own
    subprocess.run(["true"], check=True)
    note("call-a")
def test_b(fn, request):
    request.getfixturevalue("lazy")
    os.system("true")
    note("call-b")
def test_c(fn):
    note("call-c")
    tests = [d for d in os.listdir({mount_of(box)!r} + cg()) if d.startswith("test-")]
    note("no-cgroup-for-c" if not tests else "cgroups-beside-c:" + ",".join(tests))
""")
    result = run_in(inner, box, *PLUGIN)
    result.assert_outcomes(passed=3)
    where = dict(line.split(" ", 1) for line in log.read_text().splitlines())
    header = [l for l in result.outlines if l.startswith("reaper: tracking: ")]
    assert len(header) == 1 and header[0].startswith("reaper: tracking: cgroup (one per test below "), header
    session = where["module-setup"]
    rel = "/" + os.path.relpath(box, mount_of(box))
    assert os.path.dirname(session) == rel and os.path.basename(session).startswith("reaper-pytest-"), where
    # pytest moves into a test's cgroup at the test's first spawn; a test that left nothing in
    # it leaves pytest there, and the next test that starts something takes it over
    assert where["call-a-before"] == session
    assert where["call-a"] == session + "/test-1"
    assert where["call-b"] == session + "/test-1"
    assert where["lazy-setup"] == session  # wider fixtures are set up in the session's
    assert "no-cgroup-for-c" in where, where  # none made for it
    assert left_below(box) == []


ENDINGS = {
    "clean": ("", ()),
    "leaks": ("""
import os, subprocess, time, pytest
@pytest.fixture(scope="session")
def server():
    p = subprocess.Popen(["sleep", "600"])  # never stopped: the session's leak
    yield p
def test_fork(server):
    if os.fork() == 0:
        time.sleep(600)
        os._exit(0)
def test_popen():
    subprocess.Popen(["sleep", "600"])
""", ()),
    "first-failure": ("""
import subprocess
def test_fails():
    subprocess.Popen(["sleep", "600"])
    assert False
def test_not_run():
    pass
""", ("-x",)),
    "interrupted-in-a-test": ("""
import subprocess
def test_interrupted():
    subprocess.Popen(["sleep", "600"])
    raise KeyboardInterrupt
""", ()),
    "interrupted-in-a-session-fixture": ("""
import subprocess, pytest
@pytest.fixture(scope="session")
def slow():
    subprocess.Popen(["sleep", "600"])
    raise KeyboardInterrupt
def test_a():
    pass
def test_b(slow):
    pass
""", ()),
    "internal-error": ("""
import subprocess
def test_a():
    subprocess.Popen(["sleep", "600"])
""", ()),
    "another-plugin-fails-at-the-end": ("""
import subprocess
def test_a():
    subprocess.Popen(["sleep", "600"])
""", ()),
}
CONFTESTS = {
    "internal-error": """
def pytest_runtest_logreport(report):
    if report.when == "call":
        raise RuntimeError("a broken plugin")
""",
    "another-plugin-fails-at-the-end": """
import pytest
@pytest.hookimpl(tryfirst=True)
def pytest_sessionfinish():
    raise RuntimeError("a broken plugin at the end")
""",
}


@needs_cgroup
@pytest.mark.parametrize("ending", sorted(ENDINGS))
def test_no_cgroup_and_no_process_is_left_behind(inner, box, ending):
    source, args = ENDINGS[ending]
    inner.makepyfile(test_end=source or "def test_ok():\n    pass\n")
    if ending in CONFTESTS:
        inner.makeconftest(CONFTESTS[ending])
    result = run_in(inner, box, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0", *args)
    out = result.stdout.str() + result.stderr.str()
    assert "reaper: tracking: cgroup" in out
    if ending == "leaks":
        result.assert_outcomes(passed=2, errors=2)
        result.stdout.fnmatch_lines(["*reaper: left by fixtures wider than a test*", "*sleep 600*server*"])
    elif ending == "first-failure":
        result.assert_outcomes(failed=1, errors=1)
    elif ending.startswith("interrupted"):
        assert "KeyboardInterrupt" in out and result.ret == pytest.ExitCode.INTERRUPTED
        if ending == "interrupted-in-a-test":  # torn down after the protocol: listed, no traceback
            result.stdout.fnmatch_lines(["*reaper: left by tests torn down at the session's end*",
                                         "*sleep 600*test_end.py::test_interrupted*"])
            assert "Traceback" not in out
    elif ending == "internal-error":
        assert "INTERNALERROR" in out and "a broken plugin" in out
    assert left_below(box) == [], out
    assert not reaper.cgroup.populated(box), "a process of the inner session outlived it"


@needs_root
def test_a_read_only_cgroup2_means_markers_and_descent(inner, box, tmp_path):
    # a private mount namespace in which the cgroup2 mount is read-only; the fork without exec
    # is still the test's (descent)
    mount = mount_of(box)
    ro = ("unshare", "-m", "--propagation", "private", "sh", "-c", 'mount -o remount,bind,ro "$0" && exec "$@"', mount)
    inner.makepyfile(test_ro="""
import os, time
def test_fork():
    if os.fork() == 0:
        time.sleep(600)
        os._exit(0)
def test_clean():
    pass
""")
    result = run_in(inner, box, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0", wrap=ro)
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines([f"reaper: tracking: proc (markers and descent: the cgroup2 mount at {box} is read-only)",
                                 "*reaper: test_ro.py::test_fork left 1 process running*"])
    on = run_in(inner, box, *PLUGIN, "--reaper-cgroup", "on", wrap=ro)
    assert on.ret == pytest.ExitCode.USAGE_ERROR
    assert f"--reaper-cgroup on: the tests cannot have cgroups: the cgroup2 mount at {box} is read-only" \
        in on.stderr.str()
    assert left_below(box) == [] and not reaper.cgroup.populated(box)


@needs_root
def test_a_unified_hierarchy_at_sys_fs_cgroup(inner, box):
    # where cgroup2 is the only hierarchy it is mounted at /sys/fs/cgroup itself (this machine
    # may be hybrid: a private mount namespace shows it that way)
    rel = os.path.relpath(box, mount_of(box))
    unified = ("unshare", "-m", "--propagation", "private", "sh", "-c",
               'umount -R -l /sys/fs/cgroup 2>/dev/null; mount -t cgroup2 cgroup2 /sys/fs/cgroup && exec "$@"', "sh")
    inner.makepyfile(test_u=CG + """
import subprocess
def test_popen():
    subprocess.Popen(["sleep", "600"])
    assert cg().endswith("/test-1")
""")
    result = run_in(inner, box, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0", wrap=unified)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines([f"reaper: tracking: cgroup (one per test below /sys/fs/cgroup/{rel}/reaper-pytest-*)",
                                 "*sleep 600*"])
    assert left_below(box) == [] and not reaper.cgroup.populated(box)


def test_proc_tracking_when_asked_for(inner):
    inner.makepyfile(test_off="def test_ok():\n    pass\n")
    result = run_sub(inner, *PLUGIN, "--reaper-cgroup", "off")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["reaper: tracking: proc (markers and descent; --reaper-cgroup off)"])
    inner.makeini("[pytest]\nreaper_cgroup = sometimes\n")
    bad = run_sub(inner, *PLUGIN)
    assert bad.ret == pytest.ExitCode.USAGE_ERROR
    assert "the reaper_cgroup ini value must be one of auto, on, off, not 'sometimes'" in bad.stderr.str()


@needs_cgroup
def test_sigterm_ends_the_session_as_an_interruption_then_pytest_dies_by_it(inner, box, tmp_path):
    # `timeout` and CI runners stop a run with SIGTERM: the test is interrupted, torn down and
    # reaped, the cgroups removed, and pytest still ends by SIGTERM
    ready = tmp_path / "ready"
    inner.makepyfile(test_term=f"""
import subprocess, time
def test_waits():
    subprocess.Popen(["sleep", "600"])
    open({str(ready)!r}, "w").close()
    time.sleep(600)
""")
    p = subprocess.Popen(["sh", "-c", 'echo 0 > "$0/cgroup.procs" && exec "$@"', box, sys.executable, "-m",
                          "pytest", "-p", "no:cacheprovider", *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0"],
                         cwd=inner.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while not ready.exists() and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert ready.exists(), "the inner test never started"
        p.send_signal(signal.SIGTERM)
        out = p.communicate(timeout=120)[0]
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == -signal.SIGTERM, out
    assert "reaper: left by tests torn down at the session's end" in out and "sleep 600" in out, out
    assert left_below(box) == [], out
    assert not reaper.cgroup.populated(box), "a process of the inner session outlived it"


@needs_cgroup
def test_what_a_crashed_xdist_worker_left_is_ended_by_its_controller(inner, box):
    # a worker killed in a test never reaps that test nor removes its cgroups; the controller
    # it started from does, and lists what was there
    pytest.importorskip("xdist")
    inner.makepyfile(test_crash="""
import os, signal, subprocess
def test_crash():
    subprocess.Popen(["sleep", "600"])
    os.kill(os.getpid(), signal.SIGKILL)
def test_clean():
    pass
""")
    result = run_in(inner, box, *PLUGIN, "-n", "2", "--reaper-timeout", "0.2", "--reaper-grace", "0")
    result.assert_outcomes(failed=1, passed=1)
    result.stdout.fnmatch_lines(["*reaper: left by xdist workers that crashed*",
                                 "*: sleep 600  [[]killed, test_crash.py::test_crash]"])
    assert left_below(box) == [], result.stdout.str()
    assert not reaper.cgroup.populated(box), "a process of the inner session outlived it"


@needs_cgroup
def test_what_starts_between_tests_in_a_kept_cgroup_is_the_sessions(inner, box, tmp_path):
    # test_a leaves nothing: pytest stays in its cgroup for the next test; what a hook starts
    # after test_a, through subprocess or below it (libc's posix_spawnp), is the session's,
    # never test_b's, though pytest was in test_a's cgroup when it started
    log = tmp_path / "pids"
    inner.makeconftest(f"""
import ctypes, subprocess, time, reaper
started = []
def pytest_runtest_logreport(report):
    if report.when == "teardown" and report.nodeid.endswith("test_a"):
        started.append(subprocess.Popen(["sleep", "600"]))
        pid, libc = ctypes.c_int(), ctypes.CDLL(None, use_errno=True)
        argv = (ctypes.c_char_p * 3)(b"sleep", b"601", None)
        assert libc.posix_spawnp(ctypes.byref(pid), b"sleep", None, None, argv, None) == 0
        open({str(log)!r}, "w").write("%d %d" % (started[0].pid, pid.value))
        # a test's descent covers what started within the clock tick it began in
        tick = reaper.now_ticks()
        while reaper.now_ticks() <= tick:
            time.sleep(0.001)
""")
    inner.makepyfile(test_between=CG + """
import subprocess
def test_a():
    subprocess.run(["true"], check=True)
def test_b():
    subprocess.run(["true"], check=True)
    assert cg().endswith("/test-2"), cg()
""")
    result = run_in(inner, box, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0")
    result.assert_outcomes(passed=2)
    popen, spawned = log.read_text().split()
    result.stdout.fnmatch_lines(["*reaper: left by fixtures wider than a test*"])
    result.stdout.fnmatch_lines_random([f"{popen}: sleep 600*", f"{spawned}: sleep 601*"])
    assert left_below(box) == [] and not reaper.cgroup.populated(box)


@needs_cgroup
def test_a_child_forked_without_exec_that_leaves_the_tests_cgroup_is_still_the_tests(inner, box):
    # no marker (no exec) and no longer in the test's cgroup: descent still finds it
    elsewhere = reaper.cgroup.create(box, "elsewhere")
    inner.makepyfile(test_leaves=f"""
import os, time
def test_leaves():
    r, w = os.pipe()
    if os.fork() == 0:
        with open({os.path.join(elsewhere, "cgroup.procs")!r}, "w") as f:
            f.write("0")
        os.write(w, b"x")
        time.sleep(600)
        os._exit(0)
    os.read(r, 1)
""")
    result = run_in(inner, box, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*reaper: test_leaves.py::test_leaves left 1 process running*"])
    assert left_below(box) == ["elsewhere"], result.stdout.str()
    assert not reaper.cgroup.populated(box), "a process of the inner session outlived it"


@needs_cgroup
def test_what_a_tests_thread_starts_is_in_the_tests_cgroup(inner, box, tmp_path):
    # the test's own thread forks while pytest is in the test's cgroup (after the test's first
    # spawn) and while it is not (before): either way its child is in the test's cgroup
    inner.makepyfile(test_thread=CG + f"""
import os, subprocess, threading
def child_cgroup(pid):
    return [l for l in open("/proc/%d/cgroup" % pid).read().splitlines() if l.startswith("0::")][0][3:]
def in_thread(name):
    got = []
    t = threading.Thread(target=lambda: got.append(subprocess.Popen(["sleep", "600"]).pid))
    t.start()
    t.join()
    open({str(tmp_path)!r} + "/" + name, "w").write("%d %s" % (got[0], child_cgroup(got[0])))
def test_before_its_first_spawn():
    in_thread("before")
    subprocess.run(["true"], check=True)
    assert cg().endswith("/test-1")
def test_after_its_first_spawn():
    subprocess.run(["true"], check=True)
    in_thread("after")
    assert cg().endswith("/test-2")
""")
    result = run_in(inner, box, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0")
    result.assert_outcomes(passed=2, errors=2)
    for name, n in (("before", 1), ("after", 2)):
        pid, where = (tmp_path / name).read_text().split()
        assert where.endswith(f"/test-{n}"), (name, where)
        result.stdout.fnmatch_lines([f"*  {pid}: sleep 600"])
    assert left_below(box) == [] and not reaper.cgroup.populated(box)


@needs_cgroup
def test_a_cgroup_pytest_cannot_enter_means_markers_and_descent(inner, box):
    # pytest starts in a threaded cgroup: the session's cgroup made below it is "domain
    # invalid", and no process can be moved there (EOPNOTSUPP), which cgroup.usable cannot tell
    # beforehand. The session tracks by markers and descent from its start, as with a cgroup2
    # that cannot be written; no test fails for it.
    threaded = os.path.join(box, "threaded")
    os.mkdir(threaded)
    with open(os.path.join(threaded, "cgroup.type"), "w") as f:
        f.write("threaded")
    inner.makepyfile(test_thr="""
import os, subprocess, time
def test_spawns():
    subprocess.run(["true"], check=True)
def test_forks():
    if os.fork() == 0:
        time.sleep(600)
        os._exit(0)
def test_clean():
    pass
""")
    result = run_in(inner, threaded, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0")
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(["reaper: tracking: proc (markers and descent: *)",
                                 "*reaper: test_thr.py::test_forks left 1 process running*"])
    assert left_below(threaded) == [] and not reaper.cgroup.populated(box)


@needs_cgroup
def test_what_c_code_daemonizes_during_pytests_first_move_is_the_sessions(inner, box, tmp_path):
    # C code (below the interception) starts a daemon at the session's start, without the
    # session's marker in its environment: it is in the session's cgroup, and the session's
    # check ends it. The inner conftest holds back pytest's move into the session's cgroup
    # (when another thread makes it) until the daemon is started: the move takes an RCU grace
    # period, longer on a busy host, and the daemon's middle process may exit before it ends.
    pidfile = tmp_path / "daemon.pid"
    inner.makeconftest(f"""
import _thread, ctypes, os, threading
import reaper.cgroup
MAIN = _thread.get_ident()
entered, gate = threading.Event(), threading.Event()
_enter = reaper.cgroup.enter
def enter(path):
    if _thread.get_ident() != MAIN and not gate.is_set():
        entered.set()
        gate.wait()
    return _enter(path)
reaper.cgroup.enter = enter
def pytest_sessionstart(session):
    if not os.path.basename(reaper.cgroup.current()).startswith("reaper-pytest-"):
        entered.wait()  # pytest's move is under way, made by another thread
    try:
        ctypes.CDLL(None).system(b"env -i {TAG_VAR}={os.environ[TAG_VAR]} sleep 600 & echo $! > {pidfile}")
    finally:
        gate.set()
""")
    inner.makepyfile(test_clean="def test_clean():\n    pass\n")
    result = run_in(inner, box, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0")
    result.assert_outcomes(passed=1)
    pid = int(pidfile.read_text())
    result.stdout.fnmatch_lines(["*reaper: left by fixtures wider than a test*", f"{pid}: sleep 600 *"])
    assert left_below(box) == [] and not reaper.cgroup.populated(box)
