# SPDX-License-Identifier: MIT
"""Helpers for the `reaper scan` / `reaper reap` / report tests: real processes, cleaned up by
identity.

A leftover is started the way a suite that ran without the wrapper leaves one: forked twice
with setsid in between, so it is nobody's child of ours. Its pid comes back through a pipe
and a pidfd is opened for it at once (it is blocked sleeping, so the pid cannot have been
reused); every signal a test sends afterwards goes through that pidfd, never by name."""
import json
import os
import pty
import select
import signal
import subprocess
import time

from procutil import PY, REAPER, alive, ignores, wait_gone

SLEEPER = "import time\nwhile True: time.sleep(60)\n"
STUBBORN = "import signal, time\nsignal.signal(signal.SIGTERM, signal.SIG_IGN)\nwhile True: time.sleep(60)\n"


class Proc:
    def __init__(self, pid, fd):
        self.pid, self.fd = pid, fd

    @property
    def alive(self):
        return alive(self.fd)


class Spawner:
    """Starts leftovers and kills whatever of them is still alive at teardown."""

    def __init__(self, home):
        self.home = home
        self.procs = []

    def env(self, extra=None):
        e = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": self.home}
        e.update(extra or {})
        return e

    def orphan(self, argv, env=None, cwd=None, ready=None, user=None):
        """Double-fork + setsid + exec argv (bytes or str items); returns a Proc once the
        process exists (ready: a file the process creates when it is set up). user: a pwd
        entry to run as (root only)."""
        env = self.env(env)
        rd, wr = os.pipe()
        pid = os.fork()
        if pid == 0:  # the middle process: never returns into pytest
            try:
                os.close(rd)
                os.setsid()
                gc = os.fork()
                if gc == 0:
                    if cwd:
                        os.chdir(cwd)
                    null = os.open("/dev/null", os.O_RDWR)
                    for fd in (0, 1, 2):
                        os.dup2(null, fd)
                    if user:
                        os.setgroups([])
                        os.setgid(user.pw_gid)
                        os.setuid(user.pw_uid)
                    os.execve(argv[0], argv, env)
                os.write(wr, b"%d\n" % gc)
            finally:
                os._exit(0)
        os.close(wr)
        data = b""
        while True:
            chunk = os.read(rd, 64)
            if not chunk:
                break
            data += chunk
        os.close(rd)
        os.waitpid(pid, 0)
        gc = int(data)
        fd = os.pidfd_open(gc)
        p = Proc(gc, fd)
        self.procs.append(p)
        # exec done when /proc/PID/exe is the program (argv[0])
        want = os.path.realpath(argv[0] if isinstance(argv[0], str) else argv[0].decode())
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            try:
                if os.readlink("/proc/%d/exe" % gc) == want and (not ready or os.path.exists(ready)):
                    break
            except OSError:
                pass
            time.sleep(0.01)
        return p

    def sleeper(self, *args, env=None, stubborn=False, cwd=None):
        """A python3 that sleeps (ignoring SIGTERM when stubborn); args end up in its cmdline."""
        p = self.orphan([PY, "-c", STUBBORN if stubborn else SLEEPER, *args], env=env, cwd=cwd)
        # its exec is done, but until the interpreter has run the script a SIGTERM still ends it
        deadline = time.monotonic() + 60
        while stubborn and not ignores(p.pid, signal.SIGTERM):
            assert p.alive and time.monotonic() < deadline, "the stubborn sleeper never ignored SIGTERM"
            time.sleep(0.01)
        return p

    def adopt(self, pid):
        """Track a process started some other way (pid known to be alive and ours)."""
        fd = os.pidfd_open(pid)
        p = Proc(pid, fd)
        self.procs.append(p)
        return p

    def cleanup(self):
        for p in self.procs:
            try:
                signal.pidfd_send_signal(p.fd, signal.SIGKILL)
            except ProcessLookupError:
                pass
        left = wait_gone([p.fd for p in self.procs], 10)
        for p in self.procs:
            os.close(p.fd)
        self.procs = []
        assert not left, "could not clean up what the test started"


def reaper(*args, env=None, timeout=120):
    """Run the reaper command; returns CompletedProcess with bytes stdout/stderr."""
    e = dict(os.environ)
    for k in ("GITHUB_ACTIONS", "NO_COLOR", "REAPER_TIMEOUT", "REAPER_GRACE", "REAPER_LEAK_EXIT_CODE"):
        e.pop(k, None)
    e.update(env or {})
    return subprocess.run([REAPER, *args], capture_output=True, env=e, timeout=timeout)


def reaper_pty(*args, env=None, timeout=120):
    """Run the reaper command with stderr (and stdin, stdout) on a pseudo-terminal; returns
    (exit status, everything the terminal received)."""
    e = dict(os.environ)
    for k in ("GITHUB_ACTIONS", "NO_COLOR"):
        e.pop(k, None)
    e["TERM"] = "xterm"
    e.update(env or {})
    pid, master = pty.fork()
    if pid == 0:
        try:
            os.execve(REAPER, [REAPER, *args], e)
        finally:
            os._exit(127)
    out = b""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        r, _, _ = select.select([master], [], [], 1)
        if not r:
            continue
        try:
            chunk = os.read(master, 4096)
        except OSError:  # EIO: the child side is closed
            break
        if not chunk:
            break
        out += chunk
    _, status = os.waitpid(pid, 0)
    os.close(master)
    return os.waitstatus_to_exitcode(status), out


def load_json(path):
    with open(path, "rb") as f:
        raw = f.read()
    raw.decode("utf-8")  # strict: the report must be valid UTF-8
    return json.loads(raw)


def by_pid(report):
    return {p["pid"]: p for p in report["processes"]}


def on_hung_fuse(mnt, opened, command, env=None, timeout=120):
    """command under a FUSE server mounted at mnt that stops answering once its file `f` is
    opened (tests/cli/hung_fuse.py, which creates opened then), in a mount namespace of its
    own: (status, stdout, stderr). The test fails when it has not ended within timeout (the
    server is killed with it, so that what waits on it returns)."""
    server = os.path.join(os.path.dirname(os.path.abspath(__file__)), "hung_fuse.py")
    p = subprocess.Popen(["unshare", "--mount", "--propagation", "private", PY, server, str(mnt), opened, "--",
                          *command], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         start_new_session=True)
    try:
        out, err = p.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        raise AssertionError("reaper is blocked on the hung FUSE server")
    return p.returncode, out, err
