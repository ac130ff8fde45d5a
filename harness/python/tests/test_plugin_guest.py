# SPDX-License-Identifier: MIT
"""The plugin inside someone else's process: it finds exactly what each test leaves (forks
without exec, children caught before exec), never takes what the host owns (exit statuses of
its own children), collects adopted orphans as they die, leaves nested sessions to the
enclosing check, lets finalizers and SIGTERM handlers run, and keeps pytest's conventions
(opt-in, -p beside the entry point, junitxml under both families)."""
from __future__ import annotations

import os
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from conftest import LEAKER, TAG_VAR, running_after, with_tag

PLUGIN = ("-p", "reaper.pytest_plugin", "--reaper", "--reaper-nested")
PYPATH = str(Path(__file__).resolve().parents[1])
SUBREAPER = str(Path(__file__).resolve().parent / "subreaper.py")


@pytest.fixture
def inner(pytester, spawner, monkeypatch):
    """A pytester whose every process carries this test's tag; nothing of it may survive."""
    monkeypatch.setenv(TAG_VAR, spawner.tag)
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [PYPATH, os.environ.get("PYTHONPATH")])))
    pytester.makeconftest(f"LEAKER = {LEAKER!r}\n")
    yield pytester
    assert with_tag(spawner.tag) == [], "a process of the inner suite outlived it"


def cgroup_usable():
    """Why per-test cgroups cannot be made here (None: they can)."""
    import reaper.cgroup
    try:
        err = reaper.cgroup.usable(reaper.cgroup.current())
    except OSError as e:
        err = e.errno
    return None if not err else reaper.cgroup.why_not(err, "this process's cgroup")


@pytest.fixture(params=["cgroup", "proc"])
def tracked(request, inner, monkeypatch):
    """inner, its sessions tracking tests by a cgroup each, or by markers and descent."""
    if request.param == "cgroup" and (why := cgroup_usable()):
        if os.geteuid() == 0:
            pytest.fail(f"root, but no cgroup per test: {why}")
        pytest.skip(f"per-test cgroups need a writable cgroup2 (root or a delegated cgroup): {why}")
    monkeypatch.setenv("PYTEST_ADDOPTS", "--reaper-cgroup=" + ("on" if request.param == "cgroup" else "off"))
    yield inner


def run_sub(pytester, *args, timeout=120):
    """The inner suite in a pytest process of its own (its children are not ours)."""
    return pytester.runpytest_subprocess(*args, timeout=timeout)


def test_a_clean_session_ends_python_with_status_0(tracked):
    """`python -m pytest` over a clean suite exits 0: what the plugin keeps for the
    interpreter's life (the fork handlers, registered once) holds no open file, which an
    interpreter's last step (the at-fork callbacks cleared) cannot finalize on every Python
    the plugin claims."""
    tracked.makepyfile(test_clean="def test_nothing():\n    pass\n")
    result = run_sub(tracked, *PLUGIN)
    assert result.ret == 0, result.stderr.str()
    result.assert_outcomes(passed=1)


def test_a_session_leaves_no_file_of_its_own_to_the_interpreters_end(tracked, monkeypatch):
    """What the plugin opened for the session (the sites' shared file) is closed by pytest's
    exit: an interpreter that finalizes it says so (ResourceWarning, -X dev or -W always)."""
    monkeypatch.setenv("PYTHONWARNINGS", "always::ResourceWarning")
    tracked.makepyfile(test_clean="def test_nothing():\n    pass\n")
    result = run_sub(tracked, *PLUGIN)
    assert result.ret == 0, result.stderr.str()
    assert "ResourceWarning" not in result.stderr.str()
    result.assert_outcomes(passed=1)


def test_pytests_objects_are_finalized_as_without_the_plugin(tracked, tmp_path):
    """What the plugin keeps to the interpreter's last step (the fork handlers' state) does not
    hold the session's plugin object, nor through it pytest's config: a plugin's file written at
    the session's end and never closed is flushed when pytest's objects are finalized, which an
    interpreter does not do for what is still held at its last step (Python 3.9)."""
    out = tmp_path / "written.txt"
    tracked.makeconftest(f"""
class Writer:
    def __init__(self):
        self.out = open({str(out)!r}, "w")

    def pytest_sessionfinish(self, session):
        self.out.write("written at the session's end\\n")

def pytest_configure(config):
    config.pluginmanager.register(Writer(), "writer")
""")
    tracked.makepyfile(test_clean="def test_nothing():\n    pass\n")
    result = run_sub(tracked, *PLUGIN)
    assert result.ret == 0, result.stderr.str()
    assert out.read_text() == "written at the session's end\n"


def test_fork_without_exec_and_multiprocessing_leaks_are_the_tests(tracked, tmp_path):
    tracked.makepyfile(test_fork=f"""
import multiprocessing, os, time
def test_os_fork():
    pid = os.fork()
    if pid == 0:
        time.sleep(600)
        os._exit(0)
    open({str(tmp_path / "fork.pid")!r}, "w").write(str(pid))
def sleeper():
    time.sleep(600)
def test_multiprocessing_fork():
    p = multiprocessing.get_context("fork").Process(target=sleeper)  # not a daemon: joined at exit
    p.start()
    open({str(tmp_path / "mp.pid")!r}, "w").write(str(p.pid))
def test_after():
    pass
""")
    result = run_sub(tracked, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0")
    result.assert_outcomes(passed=3, errors=2)
    for name in ("fork", "mp"):
        pid = int((tmp_path / f"{name}.pid").read_text())
        result.stdout.fnmatch_lines([f"*  {pid}: *"])
    out = result.stdout.str()
    assert "ERROR at teardown of test_os_fork" in out and "ERROR at teardown of test_multiprocessing_fork" in out
    assert "ERROR at teardown of test_after" not in out


def test_a_child_caught_between_fork_and_exec_is_the_tests(tracked, tmp_path):
    # the child execs only after the check has begun: its environment is still the one pytest
    # was started with, so no marker can find it, only descent
    tracked.makepyfile(test_window=f"""
import os, sys, time
def test_window():
    pid = os.fork()
    if pid == 0:
        time.sleep(3)
        os.execv(sys.executable, [sys.executable, {LEAKER!r}, "late-exec"])
    open({str(tmp_path / "w.pid")!r}, "w").write(str(pid))
""")
    result = run_sub(tracked, *PLUGIN, "--reaper-timeout", "0", "--reaper-grace", "0")
    result.assert_outcomes(passed=1, errors=1)
    pid = int((tmp_path / "w.pid").read_text())
    result.stdout.fnmatch_lines(["*reaper: test_window.py::test_window left 1 process running*", f"*  {pid}: *"])


def test_popen_and_pty_children_keep_their_exit_status_for_their_owner(tracked):
    tracked.makepyfile(test_status=f"""
import os, signal, subprocess, sys
kept = []
def test_leaves_a_popen():
    kept.append(subprocess.Popen([sys.executable, {LEAKER!r}, "--ignore-term", "popen-child"]))
def test_owner_reads_the_status():
    assert kept[0].wait(timeout=60) == -9
def test_leaves_a_pty_child():
    pid, fd = os.forkpty()
    if pid == 0:
        os.execv(sys.executable, [sys.executable, {LEAKER!r}, "--ignore-term", "pty-child"])
    kept.append((pid, fd))
def test_pty_owner_waits():
    pid, fd = kept[1]
    got, status = os.waitpid(pid, 0)
    assert got == pid and os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGKILL
    os.close(fd)
""")
    result = run_sub(tracked, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0.2")
    result.assert_outcomes(passed=4, errors=2)
    result.stdout.fnmatch_lines(["*popen-child*", "*killed*a child of pytest: its exit status is left for its owner*"])


def test_a_child_forked_while_other_threads_spawn_can_spawn_itself(tracked):
    # a lock another thread has just been handed (its wait over, the GIL not back yet) reads as
    # free; the child must not keep it as its own and block on it at its first spawn
    tracked.makepyfile(test_atfork="""
import os, signal, subprocess, threading
def test_fork_while_threads_spawn():
    stop = threading.Event()
    def churn():
        while not stop.is_set():
            subprocess.Popen(["true"]).wait()
    threads = [threading.Thread(target=churn) for _ in range(2)]
    for t in threads:
        t.start()
    pids = []
    try:
        for _ in range(60):
            pid = os.fork()
            if pid == 0:
                signal.alarm(20)  # a child that blocks ends with SIGALRM, not the suite's timeout
                subprocess.run(["true"])
                os._exit(0)
            pids.append(pid)
    finally:
        stop.set()
        for t in threads:
            t.join()
    statuses = [os.waitpid(pid, 0)[1] for pid in pids]
    assert statuses == [0] * len(pids)
""")
    result = run_sub(tracked, *PLUGIN)
    result.assert_outcomes(passed=1)


def test_a_signal_handler_that_spawns_never_waits_for_its_own_thread(tracked):
    # a handler runs in the thread it interrupts: in the middle of the plugin's own bookkeeping
    # of a spawn, whose lock that thread holds
    tracked.makepyfile(test_handler="""
import os, signal, subprocess, time
def test_spawn_in_a_handler():
    got, busy = [], []
    def handler(sig, frame):
        if not busy:
            busy.append(1)
            got.append(os.posix_spawn("/bin/true", ["true"], os.environ))
            busy.clear()
    old = signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, 0.001, 0.001)
    try:
        end = time.monotonic() + 2
        while time.monotonic() < end:
            subprocess.Popen(["/bin/true"]).wait()
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0, 0)
        signal.signal(signal.SIGALRM, old)
    for pid in got:
        os.waitpid(pid, 0)
    assert got
""")
    result = run_sub(tracked, *PLUGIN, timeout=60)
    result.assert_outcomes(passed=1)


def run_under_subreaper(pytester, *args, timeout=120):
    """The inner suite in a pytest process of its own below a subreaper that reaps what is
    reparented to it (where orphans would go without the plugin; this host's init may reap
    nothing)."""
    return pytester.run(sys.executable, SUBREAPER, sys.executable, "-m", "pytest", "-p", "no:cacheprovider",
                        f"--basetemp={pytester.path / 'inner-tmp'}", *args, timeout=timeout)


ORPHANS = """
import os, subprocess, sys, time
CGROUP = os.environ["PYTEST_ADDOPTS"].endswith("=on")
def daemon(n, sleep):
    pidfile = {tmp!r} + "/d%d.pid" % n
    subprocess.run([sys.executable, {leaker!r}, "--daemon", "--sleep", sleep, "--pidfile", pidfile, "o%d" % n],
                   check=True)
    while not os.path.exists(pidfile):
        time.sleep(0.01)
    return int(open(pidfile).read())
def parent(pid):
    return int(open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[1])
def gone(pid, timeout=60):
    deadline = time.monotonic() + timeout
    while os.path.exists("/proc/%d" % pid):
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True
def test_an_orphan_goes_where_it_would_without_the_plugin():
    pid = daemon(0, "600")  # left running: the test's leak
    open({tmp!r} + "/left", "w").write(str(pid))
    # with a cgroup per test, to the subreaper pytest runs under, as without the plugin;
    # with markers and descent, to pytest, whose descent finds it
    reaper = os.getppid() if CGROUP else os.getpid()
    deadline = time.monotonic() + 60
    while parent(pid) not in (os.getpid(), os.getppid()) and time.monotonic() < deadline:
        time.sleep(0.01)  # its first parent is exiting
    assert parent(pid) == reaper
def test_waits_for_an_orphan_to_vanish():
    assert gone(daemon(1, "0")), "the orphan stayed a zombie"
def test_many():
    for pid in [daemon(n, "0") for n in range(2, 12)]:
        assert gone(pid)
"""


def test_orphans_go_where_they_would_without_the_plugin_and_their_test_still_finds_them(tracked, tmp_path):
    # a suite that checks where orphans go: with a cgroup per test, pytest adopts nothing (the
    # cgroup holds the test's processes whatever their parent); with markers and descent it
    # adopts them and collects their zombies as they exit
    tracked.makepyfile(test_orphans=ORPHANS.format(tmp=str(tmp_path), leaker=LEAKER))
    result = run_under_subreaper(tracked, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0")
    result.assert_outcomes(passed=3, errors=1)
    left = int((tmp_path / "left").read_text())
    result.stdout.fnmatch_lines(["*reaper: test_orphans.py::test_an_orphan_goes_where_it_would_without_the_plugin "
                                 "left 1 process running*", f"*  {left}: *leaker.py --daemon *"])


SPAWNP = """
import ctypes, os
libc = ctypes.CDLL(None, use_errno=True)
libc.posix_spawnp.argtypes = [ctypes.POINTER(ctypes.c_int), ctypes.c_char_p, ctypes.c_void_p, ctypes.c_void_p,
                              ctypes.POINTER(ctypes.c_char_p), ctypes.POINTER(ctypes.c_char_p)]
def spawnp(*argv):
    # as a C extension starts a program: below Python's wrappers, with the C environment
    pid = ctypes.c_int()
    args = (ctypes.c_char_p * (len(argv) + 1))(*[a.encode() for a in argv], None)
    environ = ctypes.POINTER(ctypes.c_char_p).in_dll(libc, "environ")
    rc = libc.posix_spawnp(ctypes.byref(pid), args[0], None, None, args, environ)
    assert rc == 0, os.strerror(rc)
    return pid.value
"""


def test_a_child_c_code_started_keeps_its_exit_status_for_its_owner(tracked, tmp_path):
    # the child of a C extension's posix_spawnp: no wrapper of Python's saw it start, so the
    # plugin cannot tell it is its owner's; a leak of it is still the test's
    tracked.makepyfile(test_c=SPAWNP + f"""
import time
def state(pid):
    return open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0]
def test_waits_for_it_later():
    pid = spawnp("sh", "-c", "exit 7")
    deadline = time.monotonic() + 60
    while state(pid) != "Z" and time.monotonic() < deadline:
        time.sleep(0.01)
    time.sleep(1)  # the owner waits later: several looks of a zombie collector meanwhile
    assert os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]) == 7
def test_leaves_one_running():
    open({str(tmp_path / "left")!r}, "w").write(str(spawnp("sleep", "600")))
def test_leaves_an_orphan():
    # its parent waited for, the orphan is no child of pytest's (nor in a cgroup of the test's)
    sh = spawnp("sh", "-c", "sleep 601 & echo $! > {str(tmp_path / "orphan")!r}")
    assert os.waitstatus_to_exitcode(os.waitpid(sh, 0)[1]) == 0
def test_forks_in_c():
    pid = ctypes.PyDLL(None).fork()  # no at-fork hook of Python's runs
    if pid == 0:
        time.sleep(600)
        os._exit(0)
    open({str(tmp_path / "forked")!r}, "w").write(str(pid))
""")
    result = run_sub(tracked, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0")
    result.assert_outcomes(passed=4, errors=3)
    result.stdout.fnmatch_lines(["*reaper: test_c.py::test_forks_in_c left 1 process running*",
                                 f"*  {int((tmp_path / 'forked').read_text())}: *"])
    left, orphan = (int((tmp_path / name).read_text()) for name in ("left", "orphan"))
    result.stdout.fnmatch_lines(["*reaper: test_c.py::test_leaves_one_running left 1 process running*",
                                 f"*  {left}: sleep 600"])
    result.stdout.fnmatch_lines(["*reaper: test_c.py::test_leaves_an_orphan left 1 process running*",
                                 f"*  {orphan}: sleep 601"])


def test_what_a_thread_starts_after_the_sessions_check_does_not_outlive_pytest(tracked, spawner):
    # a daemon thread that never stops starting programs: what it starts while tests run is
    # theirs or the session's, and what it starts after the session's check is ended at
    # pytest's exit (no other thread starts anything from then on)
    tracked.makepyfile(test_spawner="""
import subprocess, threading, time
started = threading.Event()
def forever():
    while True:
        subprocess.Popen(["sleep", "600"])
        started.set()
        time.sleep(0.005)
def test_starts_a_thread_that_never_stops():
    threading.Thread(target=forever, daemon=True).start()
    assert started.wait(60)
""")
    result = run_sub(tracked, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*reaper: test_spawner.py::test_starts_a_thread_that_never_stops left * running*"])
    assert running_after(spawner.tag) == [], "a process the thread started outlived pytest"


def test_a_program_that_calls_pytest_main_gets_its_process_back(tracked):
    # a runner or an IDE calls pytest.main() and goes on: when it returns nothing of the
    # plugin stays (patches, markers in os.environ), a second session checks again, and what
    # the program starts afterwards is its own, not ended at its exit
    tracked.makepyfile(test_leaks=f"""
import subprocess, sys
def test_leaks():
    subprocess.Popen([sys.executable, {LEAKER!r}, "left-by-a-test"])
""")
    script = tracked.makepyfile(driver="""
import atexit, concurrent.futures.thread, multiprocessing.forkserver, multiprocessing.popen_forkserver
import multiprocessing.resource_tracker, os, subprocess, sys
import pytest
from reaper.pytest import patches
later = []
def at_exit():  # registered first: runs after whatever pytest registered
    for p in later:
        print("still running at exit" if p.poll() is None else f"ended before exit: {p.returncode}", flush=True)
        p.kill()
        p.wait()
atexit.register(at_exit)
def targets():
    return {".".join(filter(None, (p.module, p.holder, p.attribute))): patches.target(p) for p in patches.PATCHES}
before, env = targets(), dict(os.environ)
for run in (1, 2):
    rc = pytest.main(["-q", "-p", "reaper.pytest_plugin", "--reaper", "--reaper-nested", "--reaper-timeout", "0.2",
                      "--reaper-grace", "0", "test_leaks.py"])
    print(f"run {run}: status {int(rc)}", flush=True)
    print(f"run {run}: patched {[k for k, v in targets().items() if v is not before[k]]}", flush=True)
    print(f"run {run}: environ {sorted(k for k, v in set(os.environ.items()) ^ set(env.items()) if k != 'PYTEST_CURRENT_TEST')}", flush=True)
later.append(subprocess.Popen(["sleep", "60"]))
""")
    result = tracked.runpython(script)
    out = result.stdout.str()
    for run in (1, 2):
        assert f"run {run}: status 1" in out, out  # the test's leak is found, twice
        assert f"run {run}: patched []" in out, out
        assert f"run {run}: environ []" in out, out
    assert "still running at exit" in out, out
    assert "ended at pytest's exit" not in result.stderr.str()


def test_a_nested_session_leaves_the_check_to_the_enclosing_one(tracked, tmp_path):
    pidfile = tmp_path / "left.pid"
    tracked.makepyfile(test_outer=f"""
import os, time
pytest_plugins = ["pytester"]
def test_outer(pytester):
    pytester.makepyfile(test_nested='''
import subprocess, sys
def test_leaves_it_for_the_outer_test():
    subprocess.run([sys.executable, {LEAKER!r}, "--daemon", "--pidfile", {str(pidfile)!r}, "for-outer"], check=True)
''')
    # enabled through the ini, as an installed plugin would be
    pytester.makeini("[pytest]\\nreaper = true\\n")
    pytester.runpytest("-p", "reaper.pytest_plugin", "--reaper-timeout", "0").assert_outcomes(passed=1)
    deadline = time.monotonic() + 30
    while not os.path.exists({str(pidfile)!r}) and time.monotonic() < deadline:
        time.sleep(0.01)
    pid = int(open({str(pidfile)!r}).read())
    state = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[0]
    assert state not in "ZX", "the nested session killed what it left for this test"
""")
    result = run_sub(tracked, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0")
    result.assert_outcomes(passed=1, errors=1)  # the enclosing session's check got it
    result.stdout.fnmatch_lines(["*reaper: test_outer.py::test_outer left 1 process running*", "*for-outer*"])


CYCLE = f"""
import gc, subprocess, sys
gc.disable()  # only the plugin's collection may close the cycle
class Server:
    def __init__(self):
        self.proc = subprocess.Popen([sys.executable, {LEAKER!r}, "held-by-a-cycle"])
        self.me = self
    def __del__(self):
        self.proc.kill()
        self.proc.wait()
def test_cycle():
    Server()
"""


def test_garbage_collection_before_the_check_closes_what_cycles_hold(tracked):
    tracked.makepyfile(test_gc=CYCLE)
    run_sub(tracked, *PLUGIN, "--reaper-timeout", "0.2").assert_outcomes(passed=1)
    off = run_sub(tracked, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-no-gc")
    off.assert_outcomes(passed=1, errors=1)
    off.stdout.fnmatch_lines(["*held-by-a-cycle*"])


SERVER = """
import os, signal, sys, time
def stop(*_):
    open(sys.argv[1], "w").write("clean shutdown")
    sys.exit(0)
signal.signal(signal.SIGTERM, stop)
open(sys.argv[1] + ".ready", "w").close()
while True:
    time.sleep(1)
"""


@pytest.mark.parametrize("grace, clean", [("5", True), ("0", False)])
def test_sigterm_grace_lets_a_leaked_server_shut_down_cleanly(tracked, tmp_path, grace, clean):
    (tmp_path / "server.py").write_text(SERVER)
    done = tmp_path / "done"
    tracked.makepyfile(test_srv=f"""
import os, subprocess, sys, time
def test_leaves_a_server():
    subprocess.Popen([sys.executable, {str(tmp_path / "server.py")!r}, {str(done)!r}], start_new_session=True)
    deadline = time.monotonic() + 30
    while not os.path.exists({str(done) + ".ready"!r}) and time.monotonic() < deadline:
        time.sleep(0.01)
""")
    result = run_sub(tracked, *PLUGIN, "--reaper-timeout", "0", "--reaper-grace", grace)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*" + ("terminated" if clean else "killed") + ", state*"])
    assert done.exists() == clean


# ---- conventions -------------------------------------------------------------------------

LEAKY = f"""
import subprocess, sys
def test_leaks():
    subprocess.run([sys.executable, {LEAKER!r}, "--daemon", "conventions-leak"], check=True)
"""


def installed_entry_point(where: Path) -> str:
    """A dist-info declaring the plugin's pytest11 entry point, as an installed package does."""
    dist = where / "reaper_fake-0.0.dist-info"
    dist.mkdir(parents=True)
    (dist / "METADATA").write_text("Metadata-Version: 2.1\nName: reaper-fake\nVersion: 0.0\n")
    (dist / "entry_points.txt").write_text("[pytest11]\nreaper = reaper.pytest_plugin\n")
    return str(where)


@pytest.mark.parametrize("installed", [False, True])
def test_inactive_until_asked_for_and_the_p_form_works_installed_or_not(inner, spawner, monkeypatch, tmp_path,
                                                                       installed):
    if installed:
        # the entry point's site first, then the inner suite's path (the package, and pytest's
        # own directory where the interpreter has no pytest of its own)
        site = installed_entry_point(tmp_path / "site")
        monkeypatch.setenv("PYTHONPATH", os.pathsep.join([site, os.environ["PYTHONPATH"]]))
    inner.makepyfile(test_c=LEAKY)
    load = () if installed else ("-p", "reaper.pytest_plugin")
    # loaded, not asked for: nothing changes (the leak is the inner suite's to clean up here)
    quiet = run_sub(inner, *load, "-p", "no:cacheprovider")
    quiet.assert_outcomes(passed=1)
    assert "reaper:" not in quiet.stdout.str() and "ERROR" not in quiet.stdout.str()
    spawner.cleanup()
    for ask in (("--reaper",), ("-p", "reaper.pytest_plugin", "--reaper")):
        got = run_sub(inner, *load, *ask, "--reaper-nested", "--reaper-timeout", "0")
        got.assert_outcomes(passed=1, errors=1)
        got.stdout.fnmatch_lines(["*reaper: test_c.py::test_leaks left 1 process running*", "*conventions-leak*"])
    inner.makeini("[pytest]\nreaper = true\n")
    by_ini = run_sub(inner, *load, "--reaper-nested", "--reaper-timeout", "0")
    by_ini.assert_outcomes(passed=1, errors=1)


def test_a_chain_of_forks_that_turns_over_during_the_check_is_still_the_tests(tracked):
    # each process forks its successor and exits at once (a daemon's middle process does it
    # once): the check's scan lists one, which has forked and gone when it is read, its
    # successor listed by nothing. The last one sleeps: every test left it.
    tracked.makepyfile(test_chain='''
import subprocess, sys, pytest
CHAIN = """
import os, time
for _ in range(300):
    if os.fork():
        os._exit(0)
time.sleep(600)
"""
@pytest.mark.parametrize("n", range(6))
def test_chain(n):
    subprocess.run([sys.executable, "-c", CHAIN], check=True)
''')
    result = run_sub(tracked, *PLUGIN, "--reaper-timeout", "0", "--reaper-grace", "0")
    result.assert_outcomes(passed=6, errors=6)
    assert "wider than a test" not in result.stdout.str()


def test_what_a_session_fixture_hands_to_its_event_loop_thread_starts_is_the_fixtures(tracked, tmp_path):
    # the coroutine is handed over from the thread that runs the tests while the fixture is
    # set up (its context copied there) and starts its process while a test runs
    tracked.makepyfile(test_aio=f"""
import asyncio, os, threading, pytest
FLAG = {str(tmp_path / "go")!r}

@pytest.fixture(scope="session")
def server():
    loop = asyncio.new_event_loop()
    t = threading.Thread(target=loop.run_forever, daemon=True)
    t.start()
    async def serve():
        while not os.path.exists(FLAG):
            await asyncio.sleep(0.01)
        return await asyncio.create_subprocess_exec("sleep", "600")
    fut = asyncio.run_coroutine_threadsafe(serve(), loop)
    yield fut
    proc = fut.result(60)
    proc.kill()
    asyncio.run_coroutine_threadsafe(proc.wait(), loop).result(60)
    loop.call_soon_threadsafe(loop.stop)
    t.join(60)
    loop.close()

def test_uses_server(server):
    open(FLAG, "w").close()
    server.result(60)

def test_after(server):
    pass
""")
    result = run_sub(tracked, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0")
    result.assert_outcomes(passed=2)


def test_a_library_that_cannot_load_is_an_error_only_when_enabled(inner, monkeypatch):
    monkeypatch.setenv("REAPER_LIBRARY", "/nonexistent/libreaper.so")
    inner.makepyfile(test_ok="def test_ok():\n    pass\n")
    run_sub(inner, "-p", "reaper.pytest_plugin").assert_outcomes(passed=1)
    bad = run_sub(inner, "-p", "reaper.pytest_plugin", "--reaper", "--reaper-nested")
    assert bad.ret != 0
    assert "reaper plugin enabled, but reaper: cannot load libreaper" in bad.stderr.str()
    assert "/nonexistent/libreaper.so" in bad.stderr.str()


@pytest.mark.parametrize("family", ["xunit1", "xunit2"])
def test_junitxml_stays_valid_under_both_families(inner, family):
    inner.makepyfile(test_j=LEAKY + "\ndef test_clean():\n    pass\n")
    result = run_sub(inner, *PLUGIN, "--reaper-timeout", "0", "--junitxml", "out.xml",
                     "-o", f"junit_family={family}")
    result.assert_outcomes(passed=2, errors=1)
    root = ET.parse(inner.path / "out.xml").getroot()
    cases = root.findall(".//testcase")
    assert len(cases) == 2
    assert all(c.find("properties") is None for c in cases), "properties inside a testcase"
    (leaky,) = [c for c in cases if c.get("name") == "test_leaks"]
    assert "conventions-leak" in leaky.find("error").get("message", "") + (leaky.find("error").text or "")


def test_a_test_id_with_a_nul_byte_is_named_in_the_environment_as_pytest_names_it(inner):
    # with id escaping turned off an id may hold a NUL, which no environment variable can:
    # pytest writes "(null)" in PYTEST_CURRENT_TEST; the test's marker must not fail it
    inner.makeini("[pytest]\ndisable_test_id_escaping_and_forfeit_all_rights_to_community_support = true\n")
    inner.makepyfile(test_nul="""
import os, subprocess, pytest
@pytest.mark.parametrize("data", ["a\\x00b"])
def test_id(data):
    out = subprocess.run(["sh", "-c", 'echo "$REAPER_TEST"'], capture_output=True, check=True).stdout
    assert out == b"test_nul.py::test_id[a(null)b]\\n"
""")
    result = run_sub(inner, *PLUGIN)
    result.assert_outcomes(passed=1)


def test_xdist_workers_check_their_own_tests_without_the_nested_option(tracked, monkeypatch, tmp_path):
    # the workers inherit the controller's session variable; they are not nested sessions
    pytest.importorskip("xdist")
    monkeypatch.delenv("REAPER_PYTEST_SESSION", raising=False)
    tracked.makepyfile(test_x=f"""
import os, time
def test_fork():
    pid = os.fork()
    if pid == 0:
        time.sleep(600)
        os._exit(0)
    open({str(tmp_path / "fork.pid")!r}, "w").write(str(pid))
def test_clean():
    pass
""")
    result = run_sub(tracked, "-p", "reaper.pytest_plugin", "--reaper", "-n", "2",
                     "--reaper-timeout", "0.2", "--reaper-grace", "0")
    result.assert_outcomes(passed=2, errors=1)
    pid = int((tmp_path / "fork.pid").read_text())
    result.stdout.fnmatch_lines(["*reaper: test_x.py::test_fork left 1 process running*", f"*  {pid}: *"])
    assert "left by fixtures wider than a test" not in result.stdout.str()


def test_multiprocessing_helper_processes_are_no_tests_leak(tracked, spawner):
    # the resource tracker (spawn, forkserver) and the fork server serve the whole
    # interpreter: a pool closed properly leaves nothing of the test's
    tracked.makepyfile(test_mp="""
import multiprocessing, pytest
def square(x):
    return x * x
@pytest.mark.parametrize("method", ["spawn", "forkserver", "spawn", "forkserver"])
def test_pool(method):
    with multiprocessing.get_context(method).Pool(1) as pool:
        assert pool.map(square, range(3)) == [0, 1, 4]
    pool.join()
""")
    # every warning is an error (a fork in a threaded process, an unclosed resource); the inner
    # file's asserts are not rewritten: pytest 7's rewriter warns of ast.Str on Python 3.12+
    result = run_sub(tracked, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0", "-W", "error",
                     "--assert=plain")
    result.assert_outcomes(passed=4)
    assert "left by fixtures wider than a test" not in result.stdout.str()
    helpers_exit(spawner.tag)


def helpers_exit(tag):
    """multiprocessing's helpers end on their own once the interpreter they serve has exited."""
    deadline = time.monotonic() + 60
    while with_tag(tag) and time.monotonic() < deadline:
        time.sleep(0.05)


def test_a_fork_server_worker_a_test_leaves_is_the_tests(tracked, spawner, tmp_path):
    # the fork server forks the worker (and the worker its own child): neither is pytest's
    # child, and both carry the fork server's environment, not the test's marker
    tracked.makepyfile(test_fs=f"""
import multiprocessing, os, time
def work(path):
    pid = os.fork()
    if pid == 0:
        time.sleep(600)
        os._exit(0)
    open(path, "w").write(str(pid))
    time.sleep(600)
def test_leaves_a_worker():
    p = multiprocessing.get_context("forkserver").Process(target=work, args=({str(tmp_path / "child")!r},))
    p.start()  # not a daemon: joined at exit
    open({str(tmp_path / "worker")!r}, "w").write(str(p.pid))
    while not os.path.exists({str(tmp_path / "child")!r}):
        time.sleep(0.01)
def test_after():
    pass
""")
    result = run_sub(tracked, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0")
    result.assert_outcomes(passed=2, errors=1)
    for name in ("worker", "child"):
        result.stdout.fnmatch_lines([f"*  {int((tmp_path / name).read_text())}: *"])
    assert "ERROR at teardown of test_leaves_a_worker" in result.stdout.str()
    helpers_exit(spawner.tag)


def test_what_a_test_starts_on_a_session_scoped_event_loop_is_the_tests(tracked):
    # pytest-asyncio's session-wide loop: the test's coroutine runs under the loop's methods,
    # and the loop's own methods start its subprocess; the loop runs the test's code, so what
    # it starts there is the test's, not the loop fixture's
    tracked.makepyfile(test_loop="""
import asyncio, pytest
@pytest.fixture(scope="session")
def loop():
    loop = asyncio.new_event_loop()
    yield loop
    loop.close()
def test_leaks(loop):
    async def main():
        await asyncio.create_subprocess_exec("sleep", "600")
    loop.run_until_complete(main())
def test_clean(loop):
    async def main():
        p = await asyncio.create_subprocess_exec("true")
        assert await p.wait() == 0
    loop.run_until_complete(main())
""")
    result = run_sub(tracked, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*test_loop.py::test_leaks left 1 process running*", "*: sleep 600"])
    assert "left by fixtures wider than a test" not in result.stdout.str()


def test_what_a_test_submits_to_an_older_thread_pool_starts_is_the_tests(tracked):
    # a pool's threads were started for another scope (a session fixture's pool, or a module's
    # started by an earlier test): the task a test submits runs for the test
    tracked.makepyfile(test_tp="""
import concurrent.futures, subprocess, pytest
@pytest.fixture(scope="session")
def ex():
    ex = concurrent.futures.ThreadPoolExecutor(1)
    ex.submit(lambda: None).result()
    yield ex
    ex.shutdown()
def test_leaks_via_a_fixtures_pool(ex):
    ex.submit(subprocess.Popen, ["sleep", "600"]).result()
MOD = concurrent.futures.ThreadPoolExecutor(1)
def test_starts_the_modules_pool():
    MOD.submit(lambda: None).result()
def test_leaks_via_the_modules_pool():
    MOD.submit(subprocess.Popen, ["sleep", "601"]).result()
def test_clean(ex):
    assert ex.submit(subprocess.run, ["true"]).result().returncode == 0
""")
    result = run_sub(tracked, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0")
    result.assert_outcomes(passed=4, errors=2)
    result.stdout.fnmatch_lines(["*test_tp.py::test_leaks_via_a_fixtures_pool left 1 process running*",
                                 "*: sleep 600"])
    result.stdout.fnmatch_lines(["*test_tp.py::test_leaks_via_the_modules_pool left 1 process running*",
                                 "*: sleep 601"])
    assert "left by fixtures wider than a test" not in result.stdout.str()


def test_a_pool_a_test_leaves_open_is_terminated_by_its_own_terminate_not_killed_under_it(tracked):
    # killed, an idle worker dies holding the pool's queue lock, and the pool's exit-time
    # finalizer then waits for that lock: pytest hung at exit (plain pytest: passes, exits)
    tracked.makepyfile(test_pool="""
import multiprocessing
kept = []
def square(x):
    return x * x
def test_leaves_a_pool():
    pool = multiprocessing.get_context("fork").Pool(2)
    assert pool.map(square, range(4)) == [0, 1, 4, 9]
    kept.append(pool)
def test_after():
    pass
""")
    result = run_sub(tracked, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0", timeout=90)
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*test_pool.py::test_leaves_a_pool left a multiprocessing pool open*"])


def test_an_inline_session_leaves_the_finalizers_of_the_process_it_runs_in_alone(inner):
    # a plain pytest (no check of its own) runs a checked session inline (pytester): the
    # inline session's own check ran every multiprocessing finalizer of the process, and the
    # outer suite's session-scoped pool lost its worker (its next map waited forever)
    inner.makepyfile(test_outer="""
import multiprocessing, pytest
pytest_plugins = ["pytester"]
def square(x):
    return x * x
@pytest.fixture(scope="session")
def pool():
    with multiprocessing.get_context("fork").Pool(1) as p:
        yield p
def test_before(pool):
    assert pool.map(square, [2]) == [4]
def test_inline(pytester):
    pytester.makepyfile("def test_x():\\n    pass\\n")
    pytester.runpytest("-p", "reaper.pytest_plugin", "--reaper", "--reaper-nested").assert_outcomes(passed=1)
def test_after(pool):
    assert pool.map_async(square, [3]).get(timeout=60) == [9]
""")
    result = run_sub(inner, "-p", "pytester")
    result.assert_outcomes(passed=3)


def test_children_started_before_the_session_keep_their_exit_status(tracked):
    # a conftest starts them at import, before the session: they are the host's, and the
    # zombie collector must leave their statuses to the code that waits for them later
    tracked.makeconftest("""
import os, subprocess, time
P = subprocess.Popen(["sh", "-c", "exit 7"])
PID = os.fork()
if PID == 0:
    os._exit(5)
""")
    tracked.makepyfile(test_late="""
import os, time, conftest
def test_wait_later():
    deadline = time.monotonic() + 60
    while conftest.P.poll() is None and time.monotonic() < deadline:  # never reaped before
        time.sleep(0.05)
    time.sleep(1)  # several of the collector's looks while both are zombies
    assert conftest.P.returncode == 7
def test_waitpid_later():
    assert os.waitstatus_to_exitcode(os.waitpid(conftest.PID, 0)[1]) == 5
""")
    run_sub(tracked, *PLUGIN).assert_outcomes(passed=2)


def test_what_a_wider_fixtures_thread_starts_during_a_test_is_not_the_tests(tracked, tmp_path):
    # a session-scoped Pool replaces its worker (maxtasksperchild) from its handler thread
    # while a test runs; a session fixture's thread forks while another test runs: neither
    # is the running test's (marker, cgroup, descent), and the Pool keeps working
    inner = tracked
    inner.makepyfile(test_pool=f"""
import multiprocessing, os, re, subprocess, sys, threading, time, pytest
done = False
def where(_):
    cg = [l for l in open("/proc/self/cgroup").read().splitlines() if l.startswith("0::")][0][3:]
    start = open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19]
    return os.getpid(), cg, os.environ.get("REAPER_TEST"), os.environ.get("REAPER_PYTEST"), start
@pytest.fixture(scope="session")
def pool():
    p = multiprocessing.get_context("fork").Pool(1, maxtasksperchild=1)
    yield p
    p.close()
    p.join()
@pytest.fixture(scope="session")
def forker():
    go, ready, resume = threading.Event(), threading.Event(), threading.Event()
    def run():
        go.wait()
        pid = os.fork()
        if pid == 0:
            time.sleep(600)
            os._exit(0)
        p = subprocess.Popen(["sleep", "600"])  # execs with the session's markers
        # a program that forks before this thread gets the GIL back to move it
        ready.set()
        resume.wait()
        sh = os.posix_spawn("/bin/sh", ["sh", "-c", "sleep 600; :"], dict(os.environ))
        open({str(tmp_path / "spawned.pid")!r}, "w").write(str(sh))
        open({str(tmp_path / "popen.pid")!r}, "w").write(str(p.pid))
        open({str(tmp_path / "forked.pid")!r}, "w").write(str(pid))
        global done
        done = True
    t = threading.Thread(target=run)
    t.start()
    yield go, ready, resume
    t.join()
seen = []
@pytest.mark.parametrize("n", range(3))
def test_pool(pool, n, request):
    # apply_async: map_async divides by the number of workers, which is 0 for a moment while
    # the Pool replaces its only worker (a race of multiprocessing's own)
    seen.append(pool.apply_async(where, (n,)).get(timeout=60))
    pid, cg, test, marker, _ = seen[-1]
    assert test != request.node.nodeid, seen
    assert marker == os.environ["REAPER_PYTEST"].rsplit("-", 1)[0] + "-shared", seen
    if os.environ["PYTEST_ADDOPTS"].endswith("=on"):  # not in this test's cgroup: the session's
        session = re.sub("/test-[0-9]+$", "", where(0)[1])  # pytest is in the test's from its first spawn on
        assert cg == session and os.path.basename(cg).startswith("reaper-pytest-"), seen
def test_replaced(pool):
    # a new worker each time (pid and start time: with pid_max 32768 a busy host reuses pids)
    assert len(set((s[0], s[4]) for s in seen)) == 3, seen
    # the last one's replacement forked before the forker's Popen below: a fork of the Pool's
    # meanwhile would hold that Popen's pipe open (its read waits for the exec) for good
    deadline = time.monotonic() + 60
    while not any(w.pid not in (None, seen[-1][0]) for w in list(pool._pool)) and time.monotonic() < deadline:
        time.sleep(0.01)
def test_thread_forks(forker):
    go, ready, resume = forker
    go.set()
    assert ready.wait(120)
    # the test holds the GIL a second at a time while the forker spawns a shell: the shell
    # forks before the forker gets the GIL back to move it (every step of the move gives the
    # GIL up once more, so only a few seconds of this)
    before = sys.getswitchinterval()
    sys.setswitchinterval(1.0)
    try:
        resume.set()
        end = time.monotonic() + 3
        while time.monotonic() < end:
            pass
    finally:
        sys.setswitchinterval(before)
    deadline = time.monotonic() + 120
    while not done and time.monotonic() < deadline:
        time.sleep(0.01)
    assert done
""")
    result = run_sub(inner, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0")
    result.assert_outcomes(passed=5)
    forked, popen = (int((tmp_path / f"{name}.pid").read_text()) for name in ("forked", "popen"))
    result.stdout.fnmatch_lines(["*reaper: left by fixtures wider than a test*"])
    result.stdout.fnmatch_lines([f"{forked}: *"])
    result.stdout.fnmatch_lines([f"{popen}: sleep 600  [[]*, forker (session-scoped fixture)]"])
    result.stdout.fnmatch_lines([f"{int((tmp_path / 'spawned.pid').read_text())}: sh -c sleep 600*"])


def test_a_daemon_a_wider_fixture_forks_without_exec_is_not_the_tests(tracked):
    # a session fixture daemonizes a child of its own (double fork, no exec, as python-daemon
    # does): the daemon carries pytest's own environment and is adopted by pytest. Set up
    # while a test runs (getfixturevalue), or just before it begins, it started after the
    # test's clock did: descent alone cannot tell it from the test's.
    tracked.makepyfile(test_daemon="""
import os, time, pytest
def daemonize():
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        if os.fork() == 0:
            os.setsid()
            os.write(w, b"x")
            time.sleep(600)
            os._exit(0)
        os._exit(0)
    os.waitpid(pid, 0)
    os.read(r, 1)
@pytest.fixture(scope="session")
def lazy():
    daemonize()
@pytest.fixture(scope="module")
def eager():
    daemonize()
def test_lazy(request):
    request.getfixturevalue("lazy")
@pytest.mark.parametrize("n", range(20))
def test_eager(eager, n):
    pass
""")
    result = run_sub(tracked, *PLUGIN, "--reaper-timeout", "0", "--reaper-grace", "0")
    result.assert_outcomes(passed=21)
    out = result.stdout.str()
    result.stdout.fnmatch_lines(["*reaper: left by fixtures wider than a test*"])
    assert out.count("  [killed, ") == 2, out  # the two daemons, at the session's end


def test_a_wider_fixtures_thread_forking_through_test_boundaries_keeps_its_children(tracked):
    # a session fixture's thread forks and waits all the time while hundreds of tests begin
    # and end: every child's status is its own (none collected, none killed by a test's check)
    tracked.makepyfile(test_churn="""
import os, subprocess, threading, pytest
statuses, errors = [], []
stop = threading.Event()
@pytest.fixture(scope="session")
def churn():
    def run():
        try:
            while not stop.is_set():
                pid = os.fork()
                if pid == 0:
                    os._exit(3)
                statuses.append(os.waitpid(pid, 0)[1])
                statuses.append(subprocess.Popen(["sh", "-c", "exit 3"]).wait() << 8)
        except Exception as e:
            errors.append(repr(e))
    t = threading.Thread(target=run)
    t.start()
    yield
    stop.set()
    t.join()
@pytest.mark.parametrize("n", range(200))
def test_n(churn, n):
    pass
def test_every_status_is_its_own(churn):
    assert not errors and set(statuses) == {3 << 8}, (errors, sorted(set(statuses)))
""")
    result = run_sub(tracked, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0", "-p", "no:randomly",
                     timeout=600)
    result.assert_outcomes(passed=201)


def test_os_system_from_a_wider_fixtures_thread_during_a_test_is_not_the_tests(tracked, tmp_path):
    # the shell os.system starts for a session fixture's thread while a test runs is the
    # fixture's: not the test's leak, not killed under the thread, its status the thread's
    started, stop, status = (str(tmp_path / name) for name in ("started", "stop", "status"))
    tracked.makepyfile(test_system=f"""
import os, threading, time, pytest
go = threading.Event()
results = []
@pytest.fixture(scope="session")
def shell():
    def run():
        go.wait()
        results.append(os.system("echo $$ > '{started}.tmp' && mv '{started}.tmp' '{started}'; "
                                 "while [ ! -e '{stop}' ]; do sleep 0.05; done; exit 3"))
    t = threading.Thread(target=run)
    t.start()
    yield
    open({stop!r}, "w").close()
    t.join()
    open({status!r}, "w").write(repr(results))
def test_during(shell):
    go.set()
    while not os.path.exists({started!r}):
        time.sleep(0.05)
def test_after(shell):
    pass
""")
    result = run_sub(tracked, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0")
    result.assert_outcomes(passed=2)
    assert Path(status).read_text() == repr([3 << 8])
def test_children_a_fixtures_thread_starts_during_the_sessions_own_check_keep_their_status(tracked, tmp_path):
    # the session's own check waits (a session fixture left a sleeper) while a thread of
    # another session fixture goes on starting children and waiting for them: none of their
    # statuses is taken by the check (a child it ended is the session's, its status a signal)
    tracked.makeconftest(f"""
import os, subprocess, threading, time, pytest
stop = threading.Event()
threads = []
def run():
    statuses, errors = [], []
    while not stop.is_set():
        try:
            statuses.append(subprocess.Popen(["sh", "-c", "sleep 0.2; exit 3"]).wait())
            pid = os.fork()
            if pid == 0:
                time.sleep(0.2)
                os._exit(3)
            statuses.append(os.waitstatus_to_exitcode(os.waitpid(pid, 0)[1]))
        except Exception as e:
            errors.append(repr(e))
    with open({str(tmp_path / "statuses")!r}, "w") as f:
        f.write(repr((sorted(set(statuses)), errors[:3])))
def pytest_unconfigure(config):  # after the session's check
    stop.set()
    for t in threads:
        t.join()
@pytest.fixture(scope="session")
def sleeper():
    return subprocess.Popen(["sleep", "600"])
@pytest.fixture(scope="session")
def churn():
    threads.append(threading.Thread(target=run))
    threads[-1].start()
""")
    tracked.makepyfile(test_end="""
def test_x(sleeper, churn):
    pass
""")
    result = run_sub(tracked, *PLUGIN, "--reaper-timeout", "1", "--reaper-grace", "0.5")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*left by fixtures wider than a test*", "*: sleep 600*"])
    statuses, errors = eval((tmp_path / "statuses").read_text())
    assert not errors and statuses and 0 not in statuses, (statuses, errors)


def test_a_pool_left_open_is_ended_by_its_own_finalizer_not_killed_under_it(tracked):
    # killed by the session's check, an idle worker of an open Pool may die holding the
    # Pool's queue lock: multiprocessing's exit then waits for that lock forever
    tracked.makepyfile(test_pool="""
import multiprocessing
def square(x):
    return x * x
pool = multiprocessing.get_context("fork").Pool(2)  # never closed: multiprocessing ends it at exit
def test_pool():
    assert pool.apply(square, (3,)) == 9
""")
    result = run_sub(tracked, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0")
    result.assert_outcomes(passed=1)
    assert result.ret == 0 and "left by fixtures wider than a test" not in result.stdout.str()


def test_a_forked_child_ends_by_sigterm_while_its_python_code_never_runs(inner):
    # a child forked without exec must not depend on pytest's SIGTERM handler: a Python handler
    # runs only once the child's Python code runs again, which a wait in C code begun as the
    # signal came never does (a Pool worker then outlives its terminate())
    inner.makepyfile(test_fork="""
import ctypes, os, signal, time
def state(pid):
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rsplit(")", 1)[1].split()[0]
def test_fork():
    assert signal.getsignal(signal.SIGTERM) not in (signal.SIG_DFL, None)  # the session's
    forked_and_terminated()
def test_fork_once_the_sessions_handler_is_back():
    # a test that sets its own handler and puts back the one it got: Python installs its
    # own C handler again, and the session's must still not be a forked child's
    old = signal.signal(signal.SIGTERM, lambda s, f: None)
    signal.signal(signal.SIGTERM, old)
    forked_and_terminated()
def forked_and_terminated():
    libc = ctypes.CDLL(None, use_errno=True)
    mutex = ctypes.create_string_buffer(64)  # zeroed: a default mutex, unlocked
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(r)
        libc.pthread_mutex_lock(mutex)
        os.write(w, b"x")
        libc.pthread_mutex_lock(mutex)  # its own lock again: waits in C code for good
        os._exit(0)
    os.close(w)
    pidfd = os.pidfd_open(pid)  # our child, not collected yet: this very process
    status = None
    try:
        assert os.read(r, 1) == b"x"
        deadline = time.monotonic() + 60
        while state(pid) != "S":  # nothing but that wait puts it to sleep now
            assert time.monotonic() < deadline
            time.sleep(0.01)
        signal.pidfd_send_signal(pidfd, signal.SIGTERM)
        deadline = time.monotonic() + 60
        while True:
            got, st = os.waitpid(pid, os.WNOHANG)
            if got:
                status = st
                break
            assert time.monotonic() < deadline, "SIGTERM did not end the child"
            time.sleep(0.01)
        assert os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGTERM
    finally:
        os.close(r)
        if status is None:  # not collected yet
            signal.pidfd_send_signal(pidfd, signal.SIGKILL)
            os.waitpid(pid, 0)
        os.close(pidfd)
""")
    result = run_sub(inner, *PLUGIN)
    result.assert_outcomes(passed=2)


def test_a_fork_in_a_signal_handler_amid_the_sessions_bookkeeping_leaves_the_child_sound(inner, tmp_path):
    # a handler runs in the thread it interrupts, which may be inside the plugin's record of a
    # spawn, holding its lock: the child forked there returns into that record and must
    # finish it (its lock its own), then spawn as any child does
    errors = tmp_path / "errors"
    errors.mkdir()
    inner.makepyfile(test_handler_fork=f"""
import os, signal, traceback
def test_fork_in_handler():
    st = {{"child": False, "n": 0, "busy": False}}
    def handler(sig, frame):
        if st["child"] or st["busy"] or st["n"] >= 300:
            return
        st["busy"] = True
        st["n"] += 1
        pid = os.fork()
        if pid == 0:
            st["child"] = True
            return
        os.waitpid(pid, 0)
        st["busy"] = False
    signal.signal(signal.SIGALRM, handler)
    signal.setitimer(signal.ITIMER_REAL, 0.0002, 0.0002)
    try:
        for _ in range(20000):
            try:
                pid = os.posix_spawn("/bin/true", ["true"], os.environ)
                os.waitpid(pid, 0)
                if st["child"]:  # a spawn of its own, then it ends
                    os.waitpid(os.posix_spawn("/bin/true", ["true"], os.environ), 0)
            except ChildProcessError:
                if st["child"]:  # forked between its parent's spawn and wait: not its child
                    os._exit(0)
                raise
            except BaseException:
                if st["child"]:
                    with open(os.path.join({str(errors)!r}, str(os.getpid())), "w") as f:
                        traceback.print_exc(file=f)
                    os._exit(3)
                raise
            if st["child"]:
                os._exit(0)
            if st["n"] >= 300:
                break
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0, 0)
        signal.signal(signal.SIGALRM, signal.SIG_DFL)
    assert st["n"] > 0
""")
    result = run_sub(inner, *PLUGIN, timeout=300)
    result.assert_outcomes(passed=1)
    found = sorted(errors.iterdir())
    assert not found, found[0].read_text()


def test_a_fork_below_the_interception_that_execs_is_named_by_no_earlier_fork(inner):
    # the site a fork leaves for its child's exec is that child's alone: a later fork the
    # interception does not see (posix.fork) gives its exec'd leak no site of another test's
    inner.makepyfile(test_stale="""
import os, posix, time
def test_a_fork():
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
def test_b_fork_below():
    pid = posix.fork()
    if pid == 0:
        os.execv("/bin/sleep", ["sleep", "61"])
    time.sleep(0.2)
""")
    result = run_sub(inner, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0.2")
    result.assert_outcomes(passed=2, errors=1)
    out = result.stdout.str()
    assert "sleep 61" in out
    assert "test_stale.py:4" not in out and "in test_a_fork" not in out, out


INCOMPLETE = """
import errno, reaper
real = reaper.reap_report
def incomplete(*args, **kwargs):
    # the result a reap gives while a foreign process sits in an exec past the bound
    rep = real(*args, **kwargs)
    raise reaper.ReaperIncomplete(errno.EAGAIN, "an environment under an exec could not be judged in time", rep)
reaper.reap_report = incomplete
"""


def test_an_incomplete_check_is_a_warning_and_what_it_found_still_an_error(inner, tmp_path):
    inner.makeconftest(INCOMPLETE)
    inner.makepyfile(test_inc=f"""
import os, subprocess, time
kept = []
def test_clean():
    # a test that starts nothing is not checked at all, nor one whose children are all gone;
    # this one's has exited, not yet waited for by its owner: it is checked, and not left
    p = subprocess.Popen(["true"])
    os.waitid(os.P_PID, p.pid, os.WEXITED | os.WNOWAIT)
    kept.append(p)
def test_fork():
    pid = os.fork()
    if pid == 0:
        time.sleep(600)
        os._exit(0)
    open({str(tmp_path / "fork.pid")!r}, "w").write(str(pid))
""")
    result = run_sub(inner, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0")
    result.assert_outcomes(passed=2, errors=1, warnings=2)
    pid = int((tmp_path / "fork.pid").read_text())
    result.stdout.fnmatch_lines(["*reaper: test_inc.py::test_fork left 1 process running*", f"*  {pid}: *",
                                 "*ReaperIncompleteWarning: reaper: the check of this test is incomplete, "
                                 "processes may have been missed: an environment under an exec could not be "
                                 "judged in time*"])
    result.stdout.fnmatch_lines(["reaper: warning: the check of the session's own processes is incomplete: *"])
    assert "Traceback" not in result.stdout.str()
    strict = run_sub(inner, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0",
                     "-W", "error::reaper.pytest_plugin.ReaperIncompleteWarning", "-k", "clean")
    strict.assert_outcomes(passed=1, errors=1)


COUNTED = """
import reaper
real = reaper.reap_report
calls = []
def counted(*args, **kwargs):
    calls.append(1)
    return real(*args, **kwargs)
reaper.reap_report = counted
"""


def test_a_test_whose_children_are_all_gone_is_checked_without_a_scan(tracked):
    # a scan reads the environment of every process started since the test began, the host's
    # too; a test that waited for what it started needs none, one that left something does
    tracked.makeconftest(COUNTED)
    tracked.makepyfile(test_gone="""
import os, subprocess, threading
import conftest
def test_spawns():
    subprocess.run(["true"], check=True)
    t = threading.Thread(target=subprocess.run, args=(["true"],))
    t.start()
    t.join()
    pid = os.fork()
    if pid == 0:
        os._exit(0)
    os.waitpid(pid, 0)
def test_after():
    assert conftest.calls == [], conftest.calls
def test_leaves():
    subprocess.Popen(["sleep", "600"])
def test_after_leaving():
    assert conftest.calls, "the test that left a process was not scanned"
""")
    result = run_sub(tracked, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0")
    result.assert_outcomes(passed=4, errors=1)
    result.stdout.fnmatch_lines(["*test_gone.py::test_leaves left 1 process running*"])


SPAWNER = r"""
import json, subprocess, sys
for line in sys.stdin:
    req = json.loads(line)
    print(subprocess.Popen(req["argv"], env=req["env"]).pid, flush=True)
"""


def test_what_a_test_had_a_wider_fixtures_server_start_with_its_marker_is_its_leak(tracked):
    # the test waited for its own child; the server (pytest's child since before the test) started
    # one with the test's environment: found by the marker, as a process an outside daemon starts
    tracked.makepyfile(test_server=f"""
import json, os, subprocess, sys, time, pytest
@pytest.fixture(scope="session")
def server():
    p = subprocess.Popen([sys.executable, "-c", {SPAWNER!r}], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    # older than the test by a clock tick: no child of pytest's started since the test began
    born = int(open(f"/proc/{{p.pid}}/stat").read().rsplit(")", 1)[1].split()[19])
    deadline = time.monotonic() + 60
    while time.clock_gettime(time.CLOCK_BOOTTIME) * os.sysconf("SC_CLK_TCK") < born + 2:
        assert time.monotonic() < deadline
        time.sleep(0.005)
    yield p
    p.stdin.close()
    p.wait()
def test_through_server(server):
    subprocess.run(["true"], check=True)
    server.stdin.write(json.dumps({{"argv": ["sleep", "600"], "env": dict(os.environ)}}) + "\\n")
    server.stdin.flush()
    assert int(server.stdout.readline()) > 0
def test_after():
    pass
""")
    result = run_sub(tracked, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0")
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*test_server.py::test_through_server left 1 process running*", "*sleep 600*"])


@pytest.mark.skipif(bool(cgroup_usable()), reason="needs a writable cgroup2")
def test_a_grandchild_that_moved_itself_to_another_cgroup_is_found_by_its_marker(inner, tmp_path):
    # its parent was waited for; it left the test's cgroup and pytest's tree (no subreaper with
    # cgroups): only its marker says whose it is
    import reaper.cgroup
    away = reaper.cgroup.create(None, f"away-{os.getpid()}-{time.monotonic_ns()}")
    inner.makepyfile(test_away=f"""
import subprocess, time
def test_moves_out(tmp_path):
    moved = tmp_path / "moved"
    subprocess.run(["sh", "-c", f'sh -c "echo \\\\$\\\\$ > {away}/cgroup.procs && echo \\\\$\\\\$ > {{moved}} && exec sleep 600" &'],
                   check=True)
    deadline = time.monotonic() + 60
    while not moved.exists() or not moved.read_text().strip():
        assert time.monotonic() < deadline
        time.sleep(0.01)
def test_after():
    pass
""")
    try:
        result = run_sub(inner, *PLUGIN, "--reaper-cgroup", "on", "--reaper-timeout", "0.2", "--reaper-grace", "0")
        result.assert_outcomes(passed=2, errors=1)
        result.stdout.fnmatch_lines(["*test_away.py::test_moves_out left 1 process running*", "*sleep 600*"])
    finally:
        reaper.cgroup.kill(away)
        assert reaper.cgroup.wait(away, 30)
        reaper.cgroup.remove(away)


def test_a_child_forked_without_exec_ends_by_sigterm_as_without_the_plugin(inner, tmp_path):
    # the plugin's SIGTERM handler (the session stops, then pytest ends by the signal) is
    # inherited by os.fork() children: in one of them it ends the child as SIGTERM would have,
    # no exception runs the child's finally blocks (and pytest's own, in the child)
    unwound = tmp_path / "unwound"
    inner.makepyfile(test_term=f"""
import os, time
def test_fork():
    if os.fork() == 0:
        try:
            time.sleep(600)
        finally:
            open({str(unwound)!r}, "w").close()
            os._exit(0)
""")
    result = run_sub(inner, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "60")
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(["*test_term.py::test_fork left 1 process running*", "      terminated, *"])
    assert not unwound.exists()


def test_workers_a_wider_fixtures_object_starts_lazily_in_a_test_are_not_the_tests(tracked):
    # a ProcessPoolExecutor made by a session fixture (or held by a module fixture's object)
    # starts its workers at the first submit, from the test's own thread: a method of the
    # fixture's object on the stack makes them the fixture's
    inner = tracked
    inner.makepyfile(test_ex="""
import concurrent.futures, multiprocessing, os, pytest
def where(_):
    return os.getpid(), os.environ.get("REAPER_TEST")
def executor():
    return concurrent.futures.ProcessPoolExecutor(1, mp_context=multiprocessing.get_context("fork"))
@pytest.fixture(scope="session")
def pool():
    ex = executor()
    yield ex
    ex.shutdown()
class Server:
    def __init__(self):
        self.ex = executor()
@pytest.fixture(scope="module")
def server():
    s = Server()
    yield s
    s.ex.shutdown()
seen = []
@pytest.mark.parametrize("n", range(2))
def test_pool(pool, n):
    seen.append(pool.submit(where, n).result(timeout=60))
    assert seen[-1][1] == "pool (session-scoped fixture)"
@pytest.mark.parametrize("n", range(2))
def test_server(server, n):
    seen.append(server.ex.submit(where, n).result(timeout=60))
    assert seen[-1][1] == "server (module-scoped fixture)"
def test_the_same_workers_served_all():
    assert seen[0][0] == seen[1][0] and seen[2][0] == seen[3][0], seen
""")
    result = run_sub(inner, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0")
    result.assert_outcomes(passed=5)
    assert "left by fixtures wider than a test" not in result.stdout.str()


def test_what_a_tests_threads_start_is_the_tests_and_no_context_of_its_reaches_them(tracked):
    # a thread is in the scope in force where it was started, a thread it starts in turn too;
    # the thread's context holds that and nothing of its starter's (as without the plugin)
    tracked.makepyfile(test_threads="""
import contextvars, subprocess, threading
USER = contextvars.ContextVar("user", default="unset")
def test_thread_leaks():
    t = threading.Thread(target=subprocess.Popen, args=(["sleep", "603"],))
    t.start()
    t.join()
def test_a_threads_thread_leaks():
    inner = []
    def outer():
        t = threading.Thread(target=subprocess.Popen, args=(["sleep", "604"],))
        inner.append(t)
        t.start()
        t.join()
    t = threading.Thread(target=outer)
    t.start()
    t.join()
    assert inner and not inner[0].is_alive()
def test_the_threads_context_is_its_own():
    USER.set("the test's")
    seen = []
    class Mine(threading.Thread):
        def run(self):
            seen.append((USER.get(), "run" in vars(self)))
    t = Mine()
    t.start()
    t.join()
    assert seen == [("unset", False)] and "run" not in vars(t)
    t = threading.Thread(target=lambda: None)
    t.start()
    t.join()
    try:
        t.start()
    except RuntimeError:
        pass
    assert "run" not in vars(t)
""")
    result = run_sub(tracked, *PLUGIN, "--reaper-timeout", "0.2", "--reaper-grace", "0")
    result.assert_outcomes(passed=3, errors=2)
    result.stdout.fnmatch_lines(["*test_threads.py::test_thread_leaks left 1 process running*", "*: sleep 603"])
    result.stdout.fnmatch_lines(["*test_threads.py::test_a_threads_thread_leaks left 1 process running*",
                                 "*: sleep 604"])
    assert "left by fixtures wider than a test" not in result.stdout.str()
