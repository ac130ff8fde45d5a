"""Owner death (issue 3, point 10): a reaper that is SIGKILLed mid-run still takes its run with
it (its guardian sees the pipe close and kills by the run's marker), while another, live
reaper run is left alone."""
import os
import signal
import time

from conftest import alive, marked, script, wait_gone

# COMMAND, a plain child in its group, a double-forked orphan and a TERM-ignoring setsid daemon
FAMILY = """
    import os, signal, time
    def child(body):
        pid = os.fork()
        if pid == 0:
            body()
            os._exit(0)
        return pid
    def daemon():
        os.setsid()
        if os.fork() == 0:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)
            time.sleep(300)
        os._exit(0)
    def orphan():
        if os.fork() == 0:
            time.sleep(300)
        os._exit(0)
    child(lambda: time.sleep(300))
    os.waitpid(child(daemon), 0)
    os.waitpid(child(orphan), 0)
    print("ready", flush=True)
    time.sleep(300)
"""


def test_sigkilled_reaper_takes_its_run_along_and_spares_another_run(run):
    victim = run(["--timeout", "60", "--grace", "60"], script(FAMILY))
    control = run(["--timeout", "0", "--grace", "0.5"], script(FAMILY))
    victim.expect("ready")
    control.expect("ready")
    victim.state()
    control.state()
    v = marked(victim.run_id)
    c = marked(control.run_id)
    try:
        assert len(v) == 4 and len(c) == 4, (v, c)
        victim.signal(signal.SIGKILL)
        t0 = time.monotonic()
        left = wait_gone([fd for _, fd in v], 10)
        took = time.monotonic() - t0
        assert left == [], "still alive after the owner died: %r" % [p for p, fd in v if fd in left]
        print("owner death: the run was gone %.3f s after SIGKILL" % took)
        assert marked(victim.run_id) == []
        # the other run: every process alive, its reaper still supervising
        assert all(alive(fd) for _, fd in c)
        assert alive(control.pidfd)
        assert control.state()["phase"] == "running"
        control.signal(signal.SIGTERM)
        assert control.wait(30) == 128 + signal.SIGTERM, control.stderr
        assert wait_gone([fd for _, fd in c], 10) == []
    finally:
        for _, fd in v + c:
            os.close(fd)
