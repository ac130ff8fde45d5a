# SPDX-License-Identifier: MIT
"""`reaper run` keeps what its help promises at the edges: --home finds leftovers by HOME=DIR,
a cancellation during the drain reaches leftovers as itself, an unkillable COMMAND does not
keep reaper forever, an inherited SIGCHLD=SIG_IGN does not cost the guardian, and COMMAND
has the caller's descriptor limit and scheduling."""
import json
import os
import select
import signal
import subprocess
import time

import pytest

from conftest import has_marker, script
from procutil import FIXTURES, PY, REAPER, alive, wait_gone


def kill_by_pidfd(fd):
    try:
        signal.pidfd_send_signal(fd, signal.SIGKILL)
    except ProcessLookupError:
        pass


def test_home_finds_a_leftover_outside_the_tree(run, tmp_path):
    """A process outside the run's tree (started here, not by reaper, in a session of its own
    as an outside daemon starts one) that carries only HOME=DIR is found, reported and ended
    by `reaper run --home DIR`; one with another HOME is left alone. (One in the caller's own
    session is the caller's: tests/cli/test_caller.py.)"""
    home, other = tmp_path / "sandbox", tmp_path / "elsewhere"
    home.mkdir()
    other.mkdir()
    sleeper = [PY, "-c", "import time; time.sleep(300)"]
    stray = subprocess.Popen(sleeper, env={"HOME": str(home)}, stdin=subprocess.DEVNULL, start_new_session=True)
    control = subprocess.Popen(sleeper, env={"HOME": str(other)}, stdin=subprocess.DEVNULL, start_new_session=True)
    fds = [os.pidfd_open(stray.pid), os.pidfd_open(control.pid)]
    try:
        report = tmp_path / "report.json"
        r = run(["--home", str(home), "--timeout", "0", "--grace", "5", "--report", str(report)],
                ["true"])
        assert r.wait(60) == 23, r.stderr  # COMMAND succeeded, the stray leaked
        assert stray.wait(30) == -signal.SIGTERM
        assert alive(fds[1]), "a process with another HOME was signalled"
        procs = {p["pid"]: p for p in json.loads(report.read_text())["processes"]}
        assert procs[stray.pid]["fate"] == "terminated"
        assert "env HOME=%s" % home in procs[stray.pid]["found_by"]
        assert control.pid not in procs
    finally:
        for fd in fds:
            kill_by_pidfd(fd)
            os.close(fd)
        stray.wait()
        control.wait()


def test_home_equal_to_reapers_own_home_finds_nothing_outside(run, tmp_path):
    """When reaper's own HOME is DIR, HOME=DIR names the caller's session (and the guardian),
    not the run: it is not used as a finder, and reaper says so."""
    home = tmp_path / "sandbox"
    home.mkdir()
    sibling = subprocess.Popen([PY, "-c", "import time; time.sleep(300)"], env={"HOME": str(home)},
                               stdin=subprocess.DEVNULL)
    fd = os.pidfd_open(sibling.pid)
    try:
        r = run(["--home", str(home), "--timeout", "0", "--grace", "1"], ["true"], env={"HOME": str(home)})
        assert r.wait(60) == 0, r.stderr  # neither the sibling nor the guardian is a leak
        assert "is reaper's own HOME" in r.stderr, r.stderr
        assert alive(fd)
    finally:
        kill_by_pidfd(fd)
        os.close(fd)
        sibling.wait()


def test_sigint_during_the_drain_reaches_leftovers_as_sigint(run):
    """The drain's escalation sends the cancellation signal received, not SIGTERM."""
    rfd, wfd = os.pipe()
    leftover = None
    try:
        r = run(["--timeout", "300", "--grace", "1"],
                [os.path.join(FIXTURES, "hard_sig"), "-f", str(wfd), "-o"], pass_fds=(wfd,))
        os.close(wfd)
        wfd = -1
        pid = int(r.line())
        leftover = os.pidfd_open(pid)
        r.wait_state(lambda d: d["phase"] == "draining", what="draining")
        assert has_marker(pid, r.run_id) and alive(leftover)
        r.signal(signal.SIGINT)
        assert r.wait(60) == 23, r.stderr  # hard_sig survives SIGINT: killed, a leak
        assert not wait_gone([leftover], 30)
        doc = r.state()
        assert doc["termination_signal"] == signal.SIGINT and doc["escalated"] is True
        got = b""
        while select.select([rfd], [], [], 5)[0]:
            chunk = os.read(rfd, 4096)
            if not chunk:
                break
            got += chunk
        assert got.startswith(b"R"), got
        caught = set(got[1:])
        assert signal.SIGINT in caught, caught
        assert signal.SIGTERM not in caught, caught
    finally:
        if wfd >= 0:
            os.close(wfd)
        os.close(rfd)
        if leftover is not None:
            kill_by_pidfd(leftover)
            os.close(leftover)


FREEZER = "/sys/fs/cgroup/freezer"


def test_a_report_only_drain_collects_what_exits_and_reports_its_status(run, tmp_path):
    """--report-only signals nothing, but a leftover that exits during the drain is still
    collected by the reap, and the report gives its exit status as without --report-only."""
    err, report = tmp_path / "stderr", tmp_path / "report.json"
    # the leftover exits once reaper says it waits for it: the reap holds it as a live match
    code = """
        import os, time
        if os.fork() == 0:
            while b"waiting for 1 process" not in open(%r, "rb").read():
                time.sleep(0.02)
            os._exit(3)
    """ % str(err)
    with open(err, "wb") as f:
        r = run(["--report-only", "--timeout", "120", "--report", str(report)], script(code), stderr=f)
        assert r.wait(150) == 0, err.read_text()
    procs = json.loads(report.read_text())["processes"]
    assert [(p["fate"], p["exit_status"]) for p in procs] == [("exited", 3 << 8)], procs


def test_unkillable_command_does_not_keep_reaper(run):
    """COMMAND frozen by the cgroup v1 freezer sleeps uninterruptibly and ignores SIGKILL;
    a cancelled reaper gives up on it after the settle time and exits 137. Frozen, COMMAND
    keeps reaper's stdout and stderr open, as a task stuck in the kernel does: reaper's exit is
    waited for by its pidfd, never by EOF on those pipes."""
    if os.geteuid() != 0:
        pytest.skip("needs root to create a freezer cgroup")
    if not os.path.exists(os.path.join(FREEZER, "cgroup.procs")):
        pytest.skip("no cgroup v1 freezer at %s (cgroup v2 lets SIGKILL through a freeze)" % FREEZER)
    cg = os.path.join(FREEZER, "reaper-test-%d-%d" % (os.getpid(), time.monotonic_ns()))
    os.mkdir(cg)
    cmd = None
    try:
        r = run(["--grace", "0.5"], script("""
            import os, time
            print(os.getpid(), flush=True)
            time.sleep(300)
        """))
        pid = int(r.line())
        cmd = os.pidfd_open(pid)
        r.state()
        assert has_marker(pid, r.run_id)
        with open(os.path.join(cg, "cgroup.procs"), "w") as f:
            f.write(str(pid))
        with open(os.path.join(cg, "freezer.state"), "w") as f:
            f.write("FROZEN")
        deadline = time.monotonic() + 30
        while open(os.path.join(cg, "freezer.state")).read().strip() != "FROZEN":
            assert time.monotonic() < deadline, "the freezer did not freeze COMMAND"
            time.sleep(0.05)
        r.signal(signal.SIGTERM)
        # grace 0.5 s + the reap's settle 5 s + the bounded wait 5 s; hangs forever unfixed
        assert r.wait_exit(60) == 137, r.stderr
        assert "is still there" in r.stderr, r.stderr
        assert alive(cmd)  # still frozen: reaper did not wait for it
        doc = r.state()
        assert doc["phase"] == "exited" and doc["runner_exit_code"] == 137
    finally:
        with open(os.path.join(cg, "freezer.state"), "w") as f:
            f.write("THAWED")
        if cmd is not None:
            kill_by_pidfd(cmd)
            wait_gone([cmd], 30)
            os.close(cmd)
        deadline = time.monotonic() + 30
        while True:
            try:
                os.rmdir(cg)
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)


def test_inherited_sigchld_ignore_keeps_the_guardian(run):
    """With SIGCHLD ignored the kernel would collect the guardian's middle process before
    reaper's waitpid: the guardian must still start, and COMMAND's status still count."""
    def ignore_sigchld():
        signal.signal(signal.SIGCHLD, signal.SIG_IGN)

    r = run([], script("""
        import os, sys
        print(os.getppid(), flush=True)
        sys.stdin.readline()
        sys.exit(5)
    """), preexec_fn=ignore_sigchld, stdin=subprocess.PIPE)
    r.line()
    doc = r.state()
    g = doc["guardian_pid"]
    assert isinstance(g, int) and g > 0, (doc, r.p.stderr)
    gfd = os.pidfd_open(g)
    try:
        with open("/proc/%d/comm" % g) as f:
            assert f.read().strip() == "reaper-guard"
        r.p.stdin.write(b"\n")
        r.p.stdin.flush()
        assert r.wait(60) == 5, r.stderr
        assert "no owner-death guardian" not in r.stderr, r.stderr
        assert not wait_gone([gfd], 30), "the guardian did not stop with the run"
    finally:
        os.close(gfd)


ISOLATE = pytest.param(["--isolate"], marks=pytest.mark.skipif(os.geteuid() != 0, reason="--isolate here needs root"))


@pytest.mark.parametrize("args", [[], ["--cgroup", "off"], ISOLATE], ids=["auto", "off", "isolate"])
@pytest.mark.parametrize("soft, hard", [(40, 4000), (40, 40)], ids=["soft below hard", "soft at hard"])
def test_command_gets_the_callers_descriptor_limit(args, soft, hard, tmp_path):
    """reaper may raise its own descriptor limit for the pidfds of many leftovers, but COMMAND
    (and what it leaves) has the caller's, soft and hard, whether or not there was room to
    raise it; the leftovers are ended all the same."""
    import resource
    if resource.getrlimit(resource.RLIMIT_NOFILE)[1] < hard:
        pytest.skip("the hard descriptor limit here is below %d" % hard)
    env = dict(os.environ, HOME=str(tmp_path))
    r = subprocess.run([REAPER, "run", *args,
                        "--timeout", "0", "--grace", "10", "--", "sh", "-c",
                        'echo $(ulimit -Sn) $(ulimit -Hn); for i in 1 2 3; do sleep 600 & done'],
                       capture_output=True, text=True, env=env, timeout=120,
                       preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (soft, hard)))
    assert r.stdout.split() == [str(soft), str(hard)], r.stderr
    assert r.returncode == 23 and "3 leaked" in r.stderr, r.stderr


# what a process says of its own scheduling: policy, nice value, and the time slice the kernel
# gives it where /proc/PID/sched shows one (reaper asks for short slices for itself only)
SCHEDULING = """
import os
sl = "-"
try:
    with open("/proc/self/sched") as f:
        sl = next((l.split(":")[1].strip() for l in f if l.startswith("se.slice")), "-")
except OSError:
    pass
print(os.sched_getscheduler(0), os.nice(0), sl)
"""


@pytest.mark.parametrize("args", [[], ["--cgroup", "off"], ["--isolate"]], ids=["auto", "cgroup-off", "isolate"])
def test_command_has_the_callers_scheduling(args, tmp_path):
    """reaper may ask for short time slices for itself, but COMMAND runs with the caller's
    scheduling: its policy, its nice value and its slice are what the same program gets
    started by the caller directly (also when started by --isolate's namespace init)."""
    if args == ["--isolate"] and os.geteuid() != 0:
        pytest.skip("as root: the PID namespace without a user namespace")
    def batch_nice():
        os.sched_setscheduler(0, os.SCHED_BATCH, os.sched_param(0))
        os.nice(3)
    env = dict(os.environ, HOME=str(tmp_path))
    direct = subprocess.run([PY, "-c", SCHEDULING], capture_output=True, text=True, env=env, timeout=60,
                            preexec_fn=batch_nice)
    r = subprocess.run([REAPER, "run", *args, "--", PY, "-c", SCHEDULING], capture_output=True, text=True,
                       env=env, timeout=120, preexec_fn=batch_nice)
    assert r.returncode == 0, r.stderr
    assert direct.stdout.split()[:2] == [str(os.SCHED_BATCH), str(os.nice(0) + 3)], direct.stdout
    assert r.stdout.split() == direct.stdout.split(), r.stderr


def test_command_gets_what_a_reset_on_fork_caller_gives_a_child(tmp_path):
    """A caller under SCHED_RESET_ON_FORK with a negative nice value: its children start
    with nice 0 and without the flag, and so does COMMAND (reaper gives back no more than the
    kernel would)."""
    if os.geteuid() != 0:
        pytest.skip("as root: a negative nice value")
    def reset_on_fork():
        os.sched_setscheduler(0, os.SCHED_OTHER | os.SCHED_RESET_ON_FORK, os.sched_param(0))
        os.nice(-5)
    env = dict(os.environ, HOME=str(tmp_path))
    # a child of the caller: forked by a shell that has the caller's scheduling (`; :` keeps it
    # from exec'ing the program in its own place)
    direct = subprocess.run(["sh", "-c", '"$0" -c "$1"; :', PY, SCHEDULING], capture_output=True, text=True,
                            env=env, timeout=60, preexec_fn=reset_on_fork)
    r = subprocess.run([REAPER, "run", "--", PY, "-c", SCHEDULING], capture_output=True, text=True,
                       env=env, timeout=120, preexec_fn=reset_on_fork)
    assert r.returncode == 0, r.stderr
    assert direct.stdout.split()[:2] == [str(os.SCHED_OTHER), "0"], direct.stdout
    assert r.stdout.split() == direct.stdout.split(), r.stderr
