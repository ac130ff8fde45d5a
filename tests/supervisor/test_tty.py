# SPDX-License-Identifier: MIT
"""Terminal and job control: under a controlling tty COMMAND gets the
foreground, so the terminal's ^C reaches the suite and ^Z / fg work; once COMMAND is gone the
terminal is reaper's again, so ^C cancels the drain. Each test makes a pty the controlling
terminal of a new session (setsid + TIOCSCTTY) and types into its master side."""
import errno
import fcntl
import os
import pty
import select
import termios
import time

from conftest import script
from procutil import REAPER


class Tty:
    def __init__(self):
        self.master, self.slave = pty.openpty()
        self.out = b""

    def popen_args(self):
        slave = self.slave

        def make_controlling():
            fcntl.ioctl(0, termios.TIOCSCTTY, 0)

        return dict(stdin=slave, stdout=slave, stderr=slave, start_new_session=True,
                    preexec_fn=make_controlling)

    def started(self):
        os.close(self.slave)
        self.slave = -1

    def type(self, data):
        os.write(self.master, data)

    def expect(self, text, timeout=30):
        deadline = time.monotonic() + timeout
        while text.encode() not in self.out:
            left = deadline - time.monotonic()
            assert left > 0, "no %r on the terminal; got %r" % (text, self.out)
            if select.select([self.master], [], [], left)[0]:
                try:
                    chunk = os.read(self.master, 4096)
                except OSError as e:
                    if e.errno != errno.EIO:
                        raise
                    chunk = b""
                assert chunk, "the terminal closed before %r; got %r" % (text, self.out)
                self.out += chunk

    def close(self):
        if self.slave >= 0:
            os.close(self.slave)
        os.close(self.master)


def test_ctrl_c_reaches_the_suite_in_the_foreground(run):
    t = Tty()
    try:
        r = run([], script("""
            import os, signal, time
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            print("foreground", os.tcgetpgrp(0) == os.getpgrp(), flush=True)
            print("ready", flush=True)
            time.sleep(300)
        """), **t.popen_args())
        t.started()
        t.expect("ready")
        assert b"foreground True" in t.out
        t.type(b"\x03")
        assert r.wait(30) == 130
        doc = r.state()
        assert doc["termination_signal"] is None  # the ^C went to the suite, not to reaper
        assert doc["runner_exit_code"] == 130
    finally:
        t.close()


def test_ctrl_c_during_the_drain_cancels_it(run):
    t = Tty()
    try:
        r = run(["--timeout", "300", "--grace", "5"], script("""
            import os, time
            if os.fork() == 0:
                os.setsid()
                time.sleep(300)
                os._exit(0)
            print("ready", flush=True)
        """), **t.popen_args())
        t.started()
        t.expect("ready")
        r.wait_state(lambda d: d["phase"] == "draining", what="draining")
        t.type(b"\x03")
        # a 300 s timeout cut short by the ^C: the leftover gets SIGINT and ends
        assert r.wait(30) == 23
        doc = r.state()
        assert doc["termination_signal"] == 2 and doc["leaks"] == 1
        assert doc["escalated"] is False
    finally:
        t.close()


# A minimal job-control shell: runs reaper as a foreground job, reports when the job stops,
# then does what `fg` does (terminal to the job, SIGCONT to its group) and waits for the end.
JOB_SHELL = """
    import os, signal, sys
    signal.signal(signal.SIGTTOU, signal.SIG_IGN)
    pid = os.fork()
    if pid == 0:
        os.setpgid(0, 0)
        os.tcsetpgrp(0, os.getpid())
        signal.signal(signal.SIGTTOU, signal.SIG_DFL)
        os.execv(sys.argv[1], sys.argv[1:])
    try:
        os.setpgid(pid, pid)  # as a shell does: whichever of the two runs first makes the group
    except PermissionError:
        pass  # EACCES: the job already exec'd, after its own setpgid
    os.tcsetpgrp(0, pid)
    _, st = os.waitpid(pid, os.WUNTRACED)
    os.tcsetpgrp(0, os.getpgrp())
    print("shell: job", "stopped" if os.WIFSTOPPED(st) else "ended", flush=True)
    if not os.WIFSTOPPED(st):
        sys.exit(99)
    os.tcsetpgrp(0, pid)
    os.killpg(pid, signal.SIGCONT)
    _, st = os.waitpid(pid, 0)
    os.tcsetpgrp(0, os.getpgrp())
    print("shell: job exited", os.waitstatus_to_exitcode(st), flush=True)
    sys.exit(os.waitstatus_to_exitcode(st))
"""


def test_ctrl_z_stops_the_job_and_fg_resumes_it(run, tmp_path):
    t = Tty()
    state = str(tmp_path / "job.json")
    try:
        reaper = [REAPER, "run", "--state", state, "--"] + script("""
            import sys
            print("ready", flush=True)
            print("got", sys.stdin.readline().strip(), flush=True)
        """)
        r = run(None, script(JOB_SHELL) + reaper, state=False, **t.popen_args())
        r.state_path = state  # the Run is the shell; reaper is its job (cleanup finds its run)
        t.started()
        t.expect("ready")
        t.type(b"\x1a")  # ^Z: the suite stops, reaper stops with it, the shell sees the job stop
        t.expect("shell: job stopped")
        t.type(b"hello\n")  # read only once fg gave the terminal back to the suite
        t.expect("got hello")
        t.expect("shell: job exited 0")
        assert r.wait(30) == 0
    finally:
        t.close()
