# SPDX-License-Identifier: MIT
"""`reaper run` as PID 1 of a PID namespace: it reaps every orphan, handles
and forwards signals (the kernel gives PID 1 no default actions: an unhandled SIGTERM would
simply be dropped) and exits with COMMAND's status."""
import os
import shutil
import signal

import pytest

from conftest import script, signalled_script

UNSHARE = ["unshare", "--pid", "--fork", "--mount-proc"]

pytestmark = pytest.mark.skipif(
    os.geteuid() != 0 or not shutil.which("unshare"),
    reason="a PID namespace with its own /proc needs root and unshare(1)")

INIT_COMMAND = """
    import os, signal, sys, time
    sigs = {signal.SIGUSR1, signal.SIGTERM}
    signal.pthread_sigmask(signal.SIG_BLOCK, sigs)
    print("pid", os.getpid(), os.getppid(), flush=True)
    for i in range(100):
        pid = os.fork()
        if pid == 0:
            if os.fork() == 0:
                time.sleep(0.2)
                os._exit(0)
            os._exit(0)
        os.waitpid(pid, 0)
    print("ready", flush=True)
    print("got", signal.sigwait(sigs), flush=True)
    print("got", signal.sigwait(sigs), flush=True)
    sys.exit(42)
"""


def ns_init(unshare_pid):
    """A pidfd of the namespace's PID 1 (reaper), seen from outside: the only child of
    unshare, checked to be our reaper binary after the pidfd is open."""
    with open("/proc/%d/task/%d/children" % (unshare_pid, unshare_pid)) as f:
        kids = f.read().split()
    assert len(kids) == 1, kids
    pid = int(kids[0])
    fd = os.pidfd_open(pid)
    if os.path.basename(os.readlink("/proc/%d/exe" % pid)) != "reaper":
        os.close(fd)
        raise AssertionError("unshare's child is not reaper")
    return pid, fd


def test_pid1_reaps_100_orphans_forwards_signals_and_exits_with_the_status(run):
    r = run(["--timeout", "5", "--grace", "2"], script(INIT_COMMAND), prefix=UNSHARE)
    assert r.line().split()[1:] == ["2", "1"]  # COMMAND is pid 2, reaper is its parent, pid 1
    r.expect("ready")
    doc = r.wait_state(lambda d: d["reaped_orphans_total"] == 100, what="100 orphans reaped")
    assert doc["reaper_pid"] == 1 and doc["phase"] == "running"
    assert doc["orphaned_children_total"] == 100 and doc["adopted_children"] == 0
    pid, fd = ns_init(r.p.pid)
    try:
        signal.pidfd_send_signal(fd, signal.SIGUSR1)
        assert r.line() == "got %d" % signal.SIGUSR1
        signal.pidfd_send_signal(fd, signal.SIGTERM)
        assert r.line() == "got %d" % signal.SIGTERM
    finally:
        os.close(fd)
    assert r.wait(30) == 42, r.stderr  # unshare --fork passes on PID 1's status
    doc = r.state()
    assert doc["termination_signal"] == 15
    assert doc["runner_exit_code"] == 42
    assert doc["reaped_orphans_total"] == 100 and doc["leaks"] == 0


def test_pid1_sigint_cancels_and_the_status_is_the_signal(run):
    r = run(["--grace", "2"], signalled_script("""
        wake = signal_wakeup()
        print("ready", flush=True)
        await_signals(wake)
    """), prefix=UNSHARE)
    r.expect("ready")
    pid, fd = ns_init(r.p.pid)
    try:
        signal.pidfd_send_signal(fd, signal.SIGINT)
    finally:
        os.close(fd)
    # Python turns SIGINT into KeyboardInterrupt: status 1 after its traceback, or 130
    assert r.wait(30) in (1, 130), r.stderr
    assert r.state()["termination_signal"] == signal.SIGINT
