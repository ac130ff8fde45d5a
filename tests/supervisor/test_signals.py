# SPDX-License-Identifier: MIT
"""Cancellation, escalation and forwarding of signals sent to `reaper run`."""
import os
import signal
import subprocess
import time

import pytest

from conftest import has_marker, script, signalled_script
from procutil import PY, alive, stat
from test_cgroup import needs_cgroup

IGNORE_TERM_INT = """
    import signal, time
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    print("ready", flush=True)
    time.sleep(300)
"""


def test_sigterm_to_reaper_escalates_a_term_ignoring_runner(run):
    r = run(["--grace", "1"], script(IGNORE_TERM_INT))
    r.expect("ready")
    r.signal(signal.SIGTERM)
    assert r.wait(60) == 137, r.stderr
    doc = r.state()
    assert doc["escalated"] is True
    assert doc["termination_signal"] == 15
    assert doc["runner_exit_code"] == 137
    assert doc["phase"] == "exited"
    assert doc["phases"] == ["starting", "running", "terminating", "exited"]
    assert doc["leaks"] == 0  # COMMAND is the runner, not a leftover


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT])
def test_cancellation_reaches_a_runner_that_obeys_it(run, sig):
    r = run(["--grace", "30"], signalled_script("""
        import signal, sys
        signal.signal(%d, lambda s, f: sys.exit(3))
        wake = signal_wakeup()
        print("ready", flush=True)
        await_signals(wake)
    """ % sig))
    r.expect("ready")
    r.signal(sig)
    assert r.wait(20) == 3, r.stderr  # well before the 30 s grace: no SIGKILL needed
    doc = r.state()
    assert doc["escalated"] is False
    assert doc["termination_signal"] == sig
    assert doc["runner_exit_code"] == 3


def test_the_cancellation_tests_hold_when_the_suite_runs_under_nohup():
    """nohup starts the suite with SIGHUP ignored. The reapers the suite starts must still have
    it at its default (reaper rightly leaves an ignored signal alone), or every SIGHUP test here
    waits out its bound."""
    sighup = "%s::test_cancellation_reaches_a_runner_that_obeys_it[%d]" % (__file__, signal.SIGHUP)
    inner = subprocess.run(["nohup", PY, "-m", "pytest", "-q", "-p", "no:cacheprovider", sighup],
                           stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           timeout=300)
    out = inner.stdout.decode(errors="replace")
    assert inner.returncode == 0 and "1 passed" in out, out


def test_second_sigint_escalates_at_once(run):
    r = run(["--grace", "300"], script(IGNORE_TERM_INT))
    r.expect("ready")
    r.signal(signal.SIGINT)
    r.wait_state(lambda d: d["phase"] == "terminating", what="terminating")
    r.signal(signal.SIGINT)
    # a 300 s grace cut short: the wait below would time out if it were honoured
    assert r.wait(30) == 137, r.stderr
    doc = r.state()
    assert doc["termination_signal"] == 2
    assert doc["escalated"] is True


def test_cancellation_reaches_leftovers_outside_the_group(run):
    """A setsid helper (not in COMMAND's group) gets the cancellation signal too, then
    SIGKILL at the end of grace when it ignores it."""
    r = run(["--grace", "1"], script("""
        import os, signal, time
        if os.fork() == 0:
            os.setsid()
            signal.signal(signal.SIGHUP, signal.SIG_IGN)
            print("helper", os.getpid(), flush=True)
            time.sleep(300)
        time.sleep(300)
    """))
    word, pid = r.line().split()
    helper = os.pidfd_open(int(pid))
    try:
        r.state()
        assert has_marker(int(pid), r.run_id)
        r.signal(signal.SIGHUP)
        assert r.wait(60) == 128 + signal.SIGHUP, r.stderr
        assert not alive(helper)
        doc = r.state()
        assert doc["termination_signal"] == signal.SIGHUP
        assert doc["escalated"] is True
        assert doc["leaks"] == 1  # the helper; COMMAND is not counted
    finally:
        os.close(helper)


def test_usr1_usr2_winch_are_forwarded(run):
    r = run([], script("""
        import signal
        want = {signal.SIGUSR1, signal.SIGUSR2, signal.SIGWINCH}
        signal.pthread_sigmask(signal.SIG_BLOCK, want)
        print("ready", flush=True)
        got = set()
        while got != want:
            got.add(signal.sigwait(want))
        print("got all", flush=True)
    """))
    r.expect("ready")
    for sig in (signal.SIGUSR1, signal.SIGUSR2, signal.SIGWINCH):
        r.signal(sig)
    r.expect("got all")
    assert r.wait(30) == 0, r.stderr
    assert r.state()["termination_signal"] is None


def test_command_death_noticed_when_sigchlds_coalesce(run):
    """200 adopted orphans and COMMAND itself exit in the same instant (they all wait for the
    same pipe to close): the SIGCHLDs coalesce, and reaper must still see COMMAND's end.
    With --timeout 300 a missed exit would hang until the wait below times out."""
    n = 200
    r = run(["--timeout", "300", "--grace", "1"], script("""
        import os
        n = %d
        rd, wr = os.pipe()
        for i in range(n):
            pid = os.fork()
            if pid == 0:
                if os.fork() == 0:
                    os.close(wr)
                    os.read(rd, 1)
                    os._exit(0)
                os._exit(0)
            os.waitpid(pid, 0)
        print("ready", flush=True)
        os._exit(9)
    """ % n))
    r.expect("ready")
    assert r.wait(60) == 9, r.stderr
    doc = r.state()
    assert doc["runner_exit_code"] == 9
    assert doc["reaped_orphans_total"] == n
    assert doc["reaped_children_total"] == n + 1
    assert doc["orphaned_children_total"] == n
    assert doc["leaks"] == 0


def test_sigkill_of_command_is_its_status(run):
    r = run([], script("""
        import os, signal
        print("ready", flush=True)
        os.kill(os.getpid(), signal.SIGKILL)
    """))
    r.expect("ready")
    assert r.wait(30) == 137
    assert r.state()["termination_signal"] is None


def sig_ignored(status_text, sig):
    line = [l for l in status_text.splitlines() if l.startswith("SigIgn:")][0]
    return bool(int(line.split()[1], 16) & (1 << (sig - 1)))


def test_signals_ignored_by_our_caller_stay_ignored(run):
    """Under nohup a hangup is not a cancellation, and COMMAND inherits the ignore."""
    r = run([], script("""
        import sys
        print("ready", open("/proc/self/status").read().count("SigIgn"), flush=True)
        sys.stdin.readline()
        print(open("/proc/self/status").read(), flush=True)
    """), stdin=subprocess.PIPE, preexec_fn=lambda: signal.signal(signal.SIGHUP, signal.SIG_IGN))
    r.expect("ready 1")
    r.signal(signal.SIGHUP)
    r.p.stdin.write(b"go\n")
    assert r.wait(30) == 0, r.stderr
    assert sig_ignored(r.out, signal.SIGHUP)
    assert r.state()["termination_signal"] is None


def test_command_gets_default_sigpipe_and_a_closed_stderr_does_not_kill_reaper(run):
    """reaper ignores SIGPIPE for itself only: its report to a closed stderr must not turn
    the exit status into 141, and COMMAND starts with SIGPIPE as we had it (default)."""
    r = run(["--timeout", "0", "--grace", "0"], ["sh", "-c", """
        grep SigIgn /proc/self/status
        read x
        setsid sleep 300 &
    """], stdin=subprocess.PIPE)
    status = "SigIgn: " + r.line().split()[1]
    assert not sig_ignored(status, signal.SIGPIPE)
    r.p.stderr.close()  # the report that follows the leak goes to a closed pipe
    r.p.stderr = None
    r.p.stdin.write(b"go\n")
    r.p.stdin.flush()
    assert r.wait(30) == 23


def test_a_stopped_runner_is_continued_so_it_can_obey_the_cancellation(run):
    r = run(["--grace", "300"], signalled_script("""
        import os, signal, sys
        signal.signal(signal.SIGTERM, lambda s, f: sys.exit(7))
        wake = signal_wakeup()
        print("ready", flush=True)
        os.kill(os.getpid(), signal.SIGSTOP)
        await_signals(wake)
    """))
    r.expect("ready")
    cmd = r.wait_state(lambda d: d["command_pid"] > 0)["command_pid"]
    deadline = time.monotonic() + 30
    while stat(cmd)["state"] != "T":
        assert time.monotonic() < deadline, "COMMAND never stopped"
        time.sleep(0.01)
    r.signal(signal.SIGTERM)
    assert r.wait(60) == 7, r.stderr  # its handler ran: not the SIGKILL 300 s later


@pytest.mark.parametrize("mode", [pytest.param("on", marks=needs_cgroup), "off"])
def test_cancelled_runner_is_killed_even_when_the_reap_cannot_open_pidfds(run, mode):
    """With a hard limit of 10 descriptors the reap cannot watch anything (or fails outright);
    a cancelled COMMAND that ignores SIGTERM must still be killed after its grace. Without a
    cgroup, starting COMMAND takes a pipe more (its exec's outcome comes back on it, where a
    start into the cgroup needs none), which 10 descriptors do not leave: reaper says it
    cannot start COMMAND (126), and nothing is left behind."""
    import resource
    r = run(["--cgroup", mode, "--grace", "1"], ["sh", "-c", 'trap "" TERM; echo ready; sleep 300'],
            preexec_fn=lambda: resource.setrlimit(resource.RLIMIT_NOFILE, (10, 10)))
    if mode == "off":
        assert r.wait(60) == 126, r.stderr
        assert "cannot start COMMAND: Too many open files" in r.stderr
        return
    r.expect("ready")
    r.signal(signal.SIGTERM)
    assert r.wait(60) == 137, r.stderr
    doc = r.state()
    assert doc["escalated"] is True and doc["termination_signal"] == 15
