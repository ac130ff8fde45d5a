# SPDX-License-Identifier: MIT
"""`reaper run --isolate`: the run in a PID namespace of its own. SIGKILL the reaper mid-run
and nothing of the run is left, not even a TERM-ignoring daemon that dropped the run's marker
from its environment; as root, and as an unprivileged user (nobody) through a user namespace.
The run's processes are found from our /proc by their PID namespace (the /proc/PID/ns/pid
link of the namespace's init), each pinned by a pidfd and the link read again after."""
import json
import os
import pty
import pwd
import select
import shutil
import signal
import subprocess
import tempfile
import time

import pytest

from procutil import PY, REAPER, alive, pidfds_where, start_time, wait_gone

# COMMAND: a child, and a setsid daemon that ignores SIGTERM and execs with an empty
# environment (no REAPER_RUN, no HOME: no finder outside the namespace would see it);
# "ready" once the daemon runs.
FAMILY = r"""
import os, signal, sys, time
ready = sys.argv[1]
if os.fork() == 0:
    time.sleep(300)
    os._exit(0)
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        os.execve(sys.executable, [sys.executable, "-c",
                  "import sys, time\nopen(sys.argv[1], 'w').close()\ntime.sleep(300)", ready], {})
    os._exit(0)
time.sleep(300)
"""


def ns_of(pid):
    try:
        return os.readlink("/proc/%d/ns/pid" % pid)
    except OSError:
        return None


def in_namespace(ns):
    """pidfds of every live process in PID namespace ns, identity-checked."""
    return pidfds_where(lambda pid: ns_of(pid) == ns)


def children(pid):
    with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
        return [int(x) for x in f.read().split()]


def wait_for(path, proc, timeout=60.0):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        assert proc.poll() is None, "reaper ended early: %r" % (proc.communicate(),)
        assert time.monotonic() < deadline, "%s never appeared" % path
        time.sleep(0.01)


def end_run(p, outer, fds):
    """After a test: SIGKILL what is left of the run through the pidfds fds, and the reaper p
    through its pidfd outer."""
    for fd in fds:
        if alive(fd):
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        os.close(fd)
    if p.poll() is None:
        signal.pidfd_send_signal(outer, signal.SIGKILL)
        p.wait(30)
    os.close(outer)


def owner_kill(reaper, workdir, user=None):
    """Start an isolated run, SIGKILL its reaper once the daemon runs; returns (number of
    processes in the namespace before, seconds until they were all gone)."""
    ready = os.path.join(workdir, "ready")

    def as_user():
        if user:
            os.setgroups([])
            os.setgid(user.pw_gid)
            os.setuid(user.pw_uid)

    env = {"PATH": "/usr/bin:/bin", "HOME": workdir}
    p = subprocess.Popen([reaper, "run", "--isolate", "--timeout", "60", "--grace", "60", "--",
                          PY, "-c", FAMILY, ready], cwd=workdir, env=env, preexec_fn=as_user,
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    outer = os.pidfd_open(p.pid)
    fds = []
    try:
        wait_for(ready, p)
        (init,) = children(p.pid)
        ns = ns_of(init)
        assert ns and ns != ns_of(os.getpid()), "the run is not in a PID namespace of its own"
        procs = in_namespace(ns)
        fds = [fd for _, fd in procs]
        # the init (the inner reaper), COMMAND, its child, the daemon
        assert len(procs) >= 4, procs
        if user:
            assert all(os.stat("/proc/%d" % pid).st_uid == user.pw_uid for pid, _ in procs)
        signal.pidfd_send_signal(outer, signal.SIGKILL)
        t0 = time.monotonic()
        left = wait_gone(fds, 30)
        took = time.monotonic() - t0
        assert left == [], "still alive after the reaper was SIGKILLed: %r" % [pid for pid, fd in procs if fd in left]
        assert in_namespace(ns) == []
        p.wait(30)
        assert p.returncode == -signal.SIGKILL
        return len(procs), took
    finally:
        end_run(p, outer, fds)


@pytest.mark.skipif(os.geteuid() != 0, reason="as root: the PID namespace without a user namespace")
def test_isolate_as_root_owner_killed_leaves_nothing(tmp_path):
    n, took = owner_kill(REAPER, str(tmp_path))
    print("isolate (root): %d processes of the namespace gone %.3f s after SIGKILL of reaper" % (n, took))


@pytest.fixture
def nobody_dir():
    """A directory nobody can reach and write, holding a copy of the reaper (the checkout may
    sit in a 0700 directory)."""
    d = tempfile.mkdtemp(prefix="reaper-isolate-", dir="/tmp")
    try:
        os.chmod(d, 0o755)
        shutil.copy2(REAPER, os.path.join(d, "reaper"))
        os.chmod(os.path.join(d, "reaper"), 0o755)
        work = os.path.join(d, "work")
        os.mkdir(work)
        nobody = pwd.getpwnam("nobody")
        os.chown(work, nobody.pw_uid, nobody.pw_gid)
        yield d, work, nobody
    finally:
        shutil.rmtree(d)


def userns_refusal(reaper, work, nobody):
    """None when nobody may have user namespaces here, else reaper's message why not."""
    def as_nobody():
        os.setgroups([])
        os.setgid(nobody.pw_gid)
        os.setuid(nobody.pw_uid)
    r = subprocess.run([reaper, "run", "--isolate", "--", "true"], cwd=work, preexec_fn=as_nobody,
                       capture_output=True, timeout=60, env={"PATH": "/usr/bin:/bin", "HOME": work})
    return None if r.returncode == 0 else r.stderr.decode()


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to become nobody")
def test_isolate_unprivileged_owner_killed_leaves_nothing(nobody_dir):
    d, work, nobody = nobody_dir
    reaper = os.path.join(d, "reaper")
    why = userns_refusal(reaper, work, nobody)
    if why:
        pytest.skip("unprivileged user namespaces are not allowed here: " + why)
    n, took = owner_kill(reaper, work, user=nobody)
    print("isolate (nobody, user namespace): %d processes gone %.3f s after SIGKILL of reaper" % (n, took))


def test_isolate_reports_what_was_left(tmp_path):
    """The inner reaper reaps and reports as usual; the outer one passes its status on."""
    r = subprocess.run([REAPER, "run", "--isolate", "--timeout", "0", "--grace", "5", "--",
                        "sh", "-c", 'sleep 600 </dev/null >/dev/null 2>&1 & '
                                    'while [ "$(cat /proc/$!/comm)" != sleep ]; do :; done; '
                                    'echo "pid $$"'], capture_output=True, timeout=120, cwd=str(tmp_path))
    assert r.returncode == 23, r.stderr
    assert r.stdout.decode().strip() == "pid 2"  # COMMAND is the second process of its namespace
    err = r.stderr.decode()
    assert "under 1 reaper-init" in err and "LEAK (terminated) sleep 600" in err, err


def test_isolate_refused_names_the_setting(tmp_path):
    """Where no PID namespace may be created, the error names the sysctl. A user namespace of
    our own (where user.max_pid_namespaces can be set to 0) stands in for such a system."""
    if shutil.which("unshare") is None:
        pytest.skip("no unshare(1)")
    probe = subprocess.run(["unshare", "-Ur", "true"], capture_output=True)
    if probe.returncode != 0:
        pytest.skip("no user namespace to stand in for a restricted system: %s" % probe.stderr.decode())
    r = subprocess.run(["unshare", "-Ur", "sh", "-c",
                        'echo 0 > /proc/sys/user/max_pid_namespaces && exec "$0" run --isolate -- true', REAPER],
                       capture_output=True, timeout=60, cwd=str(tmp_path))
    assert r.returncode == 126, r.stderr
    assert b"user.max_pid_namespaces" in r.stderr, r.stderr


def test_isolate_passes_a_sent_signal_on(tmp_path):
    """SIGTERM sent to the outer reaper cancels the run inside: the leftover is terminated and
    reported, and the status is 128+15."""
    ready = str(tmp_path / "ready")
    p = subprocess.Popen([REAPER, "run", "--isolate", "--grace", "5", "--", "sh", "-c",
                          'setsid sleep 300 </dev/null >/dev/null 2>&1 & '
                          'while [ "$(cat /proc/$!/comm)" != sleep ]; do :; done; : > "$0"; sleep 300', ready],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, cwd=str(tmp_path))
    outer = os.pidfd_open(p.pid)
    try:
        wait_for(ready, p)
        signal.pidfd_send_signal(outer, signal.SIGTERM)
        _, err = p.communicate(timeout=60)
        assert p.returncode == 143, err
        assert b"LEAK (terminated) sleep 300" in err, err
    finally:
        if p.poll() is None:
            signal.pidfd_send_signal(outer, signal.SIGKILL)
            p.wait(30)
        os.close(outer)


def test_isolate_on_a_terminal_ctrl_c_reaches_command_then_the_drain(tmp_path):
    """Job control works inside the namespace: the first Ctrl-C ends COMMAND (130), the
    terminal comes back to the inner reaper, and a second one cuts its drain short (a
    300 s timeout would otherwise hold the run). COMMAND execs its last sleep, so no moment
    between its commands can meet the Ctrl-C."""
    pid, master = pty.fork()
    if pid == 0:
        try:
            os.chdir(str(tmp_path))
            # an ignored SIGINT is inherited on purpose (nohup, a shell's & job): not this test's
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.execv(REAPER, [REAPER, "run", "--isolate", "--timeout", "300", "--grace", "5", "--",
                              "sh", "-c", 'sleep 300 & while [ "$(cat /proc/$!/comm)" != sleep ]; do :; done; '
                              'echo started; exec sleep 300'])
        finally:
            os._exit(127)
    out = b""

    def read_until(needle, timeout=60.0):
        nonlocal out
        deadline = time.monotonic() + timeout
        while needle not in out:
            assert time.monotonic() < deadline, out
            r, _, _ = select.select([master], [], [], 0.5)
            if r:
                try:
                    chunk = os.read(master, 4096)
                except OSError:
                    chunk = b""
                assert chunk, out
                out += chunk

    try:
        read_until(b"started")
        os.write(master, b"\x03")
        read_until(b"waiting for 1 process")
        os.write(master, b"\x03")
        read_until(b"SUMMARY: ")
        _, status = os.waitpid(pid, 0)
        pid = 0
        assert os.waitstatus_to_exitcode(status) == 130, out
        # the background sleep ignores SIGINT (sh's rule for & jobs): killed after the grace
        assert b"LEAK" in out and b"sleep 300" in out, out
    finally:
        if pid:
            os.kill(pid, signal.SIGKILL)  # our own child, by pid: it cannot have been reused
            os.waitpid(pid, 0)
        os.close(master)


@pytest.mark.skipif(os.geteuid() != 0, reason="as root: a writable cgroup2 and a PID namespace without a user namespace")
def test_isolate_cgroup_on_owner_killed_removes_the_cgroup(tmp_path):
    """The run's cgroup is made before the namespace, with its guardian outside it: a SIGKILLed
    reaper takes the run with it, and its cgroup too."""
    from test_cgroup import OWN
    assert OWN, "root without a cgroup2 mount"
    ready, state = str(tmp_path / "ready"), str(tmp_path / "state.json")
    p = subprocess.Popen([REAPER, "run", "--isolate", "--cgroup", "on", "--state", state, "--timeout", "60",
                          "--grace", "60", "--", PY, "-c", FAMILY, ready], cwd=str(tmp_path),
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    outer = os.pidfd_open(p.pid)
    fds, cg = [], None
    try:
        wait_for(ready, p)
        with open(state) as f:
            doc = json.load(f)
        assert doc["tracking"] == "cgroup", doc
        cg = os.path.join(OWN, "reaper-run-" + doc["run_id"])
        assert os.path.isdir(cg)
        (init,) = [c for c in children(p.pid) if c != doc["guardian_pid"]]  # the guardian is the other
        procs = in_namespace(ns_of(init))
        fds = [fd for _, fd in procs]
        signal.pidfd_send_signal(outer, signal.SIGKILL)
        assert wait_gone(fds, 60) == [], "the run survived its owner"
        deadline = time.monotonic() + 60
        while os.path.exists(cg) and time.monotonic() < deadline:
            time.sleep(0.05)  # the guardian removes it once the run is gone: no event for us
        assert not os.path.exists(cg), "the run's cgroup was left behind"
        p.wait(30)
    finally:
        end_run(p, outer, fds)
        if cg and os.path.isdir(cg):
            os.rmdir(cg)


def nspid(pid):
    """The NSpid line of /proc/PID/status: its pid in our namespace, then in each below ([]
    when it is gone: the run's shell starts short-lived processes while it waits)."""
    try:
        with open("/proc/%d/status" % pid) as f:
            return [int(x) for l in f if l.startswith("NSpid:") for x in l.split()[1:]]
    except (FileNotFoundError, ProcessLookupError):
        return []


@pytest.mark.skipif(os.geteuid() != 0, reason="as root: the PID namespace without a user namespace")
def test_isolate_reports_name_the_callers_pid_and_the_namespaces(tmp_path):
    """Every format names a leftover by the pid the caller sees, the namespace's beside it."""
    pidfile, go = str(tmp_path / "pid"), str(tmp_path / "go")
    summary = tmp_path / "summary.md"
    env = dict(os.environ, GITHUB_ACTIONS="true", GITHUB_STEP_SUMMARY=str(summary))
    p = subprocess.Popen([REAPER, "run", "--isolate", "--timeout", "0", "--grace", "5",
                          "--report", str(tmp_path / "r.json"), "--junit", str(tmp_path / "j.xml"), "--",
                          "sh", "-c", 'sleep 600 </dev/null >/dev/null 2>&1 & echo $! > %s; '
                                      'while [ ! -e %s ]; do sleep 0.01; done' % (pidfile, go)],
                         cwd=str(tmp_path), env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    outer = os.pidfd_open(p.pid)
    fds = []
    try:
        wait_for(pidfile, p)
        with open(pidfile) as f:
            inner = int(f.read())
        (init,) = children(p.pid)
        procs = in_namespace(ns_of(init))
        fds = [fd for _, fd in procs]
        (pid,) = [pid for pid, _ in procs if nspid(pid)[1:] == [inner]]
        assert pid != inner
        st = start_time(pid)
        open(go, "w").close()
        out, err = p.communicate(timeout=120)
        assert p.returncode == 23, err
        shown = "%d (%d in the run's namespace)" % (pid, inner)
        err = err.decode()
        assert "%s LEAK (terminated) sleep 600" % shown in err, err
        with open(str(tmp_path / "r.json")) as f:
            rep = json.load(f)
        assert rep["schema"] == "reaper-report/1.2"
        (leak,) = [x for x in rep["processes"] if x["cmdline"] == "sleep 600"]
        assert (leak["pid"], leak["ns_pid"], leak["start_time"]) == (pid, inner, st), leak
        junit = (tmp_path / "j.xml").read_text()
        assert 'message="pid %s leaked (terminated)' % shown in junit, junit
        assert "title=process leak::pid %s (terminated" % shown in out.decode(), out
        assert "| %s | terminated |" % shown in summary.read_text()
    finally:
        end_run(p, outer, fds)


@pytest.mark.skipif(os.geteuid() != 0, reason="as root: the PID namespace without a user namespace")
def test_isolate_state_names_the_callers_pids_and_the_namespaces(tmp_path):
    """The state document names reaper and COMMAND by the pids the caller sees (the inner
    reaper, the namespace's init, and COMMAND), the namespace's pids beside them."""
    pidfile, go, state = str(tmp_path / "pid"), str(tmp_path / "go"), str(tmp_path / "state.json")
    p = subprocess.Popen([REAPER, "run", "--isolate", "--timeout", "5", "--state", state, "--",
                          "sh", "-c", 'echo $$ > %s; while [ ! -e %s ]; do sleep 0.01; done' % (pidfile, go)],
                         cwd=str(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    outer = os.pidfd_open(p.pid)
    fds = []
    try:
        wait_for(pidfile, p)
        with open(pidfile) as f:
            inner = int(f.read())
        (init,) = children(p.pid)
        procs = in_namespace(ns_of(init))
        fds = [fd for _, fd in procs]
        (cmd,) = [pid for pid, _ in procs if nspid(pid)[1:] == [inner]]
        deadline = time.monotonic() + 60
        while True:  # written once COMMAND runs, which may be after it wrote its pid
            with open(state) as f:
                doc = json.load(f)
            if doc["phase"] == "running" or time.monotonic() > deadline:
                break
            time.sleep(0.01)
        assert (doc["reaper_pid"], doc.get("reaper_ns_pid")) == (init, 1), doc
        assert (doc["command_pid"], doc.get("command_ns_pid")) == (cmd, inner), doc
        open(go, "w").close()
        out, err = p.communicate(timeout=120)
        assert p.returncode == 0, err
        with open(state) as f:
            doc = json.load(f)
        assert doc["phase"] == "exited" and (doc["reaper_pid"], doc["command_pid"]) == (init, cmd), doc
    finally:
        end_run(p, outer, fds)


def test_isolate_under_an_ignored_sigchld_waits_for_its_run(tmp_path):
    """A caller that ignores SIGCHLD passes that on through exec; the outer reaper must still
    see the inner one end (an ignored SIGCHLD is never sent, and the kernel collects the child
    itself) and pass COMMAND's status on."""
    p = subprocess.Popen([REAPER, "run", "--isolate", "--", "sh", "-c", "exit 5"], stdout=subprocess.DEVNULL,
                         stderr=subprocess.PIPE, cwd=str(tmp_path),
                         preexec_fn=lambda: signal.signal(signal.SIGCHLD, signal.SIG_IGN))
    outer = os.pidfd_open(p.pid)
    try:
        _, err = p.communicate(timeout=60)
        assert p.returncode == 5, err
    finally:
        if p.poll() is None:
            signal.pidfd_send_signal(outer, signal.SIGKILL)
            p.wait(30)
        os.close(outer)
