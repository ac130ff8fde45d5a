# SPDX-License-Identifier: MIT
"""Shared helpers for the `reaper run` supervisor suite: real processes, cleaned up by identity.

Every process a test starts is signalled only through a pidfd opened while its identity was
known: the reaper itself (our child), and the processes of a run, found by the run's
REAPER_RUN marker and confirmed again after the pidfd was opened."""
import json
import os
import select
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # procutil
from procutil import PY, REAPER, environ, pidfds_where  # noqa: E402

# The suite cancels runs with SIGINT and SIGQUIT. A background job of a script starts with both
# ignored, the reapers it starts would inherit that, and reaper rightly leaves an ignored signal
# alone: give them the defaults, however pytest itself was started.
if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)
if signal.getsignal(signal.SIGQUIT) == signal.SIG_IGN:
    signal.signal(signal.SIGQUIT, signal.SIG_DFL)
# nohup starts pytest with SIGHUP ignored (the suite cancels runs with it and with SIGTERM).
# Caught by a handler that does nothing, pytest stays as deaf to it as it was started, and the
# reapers start with the default: a caught signal is back at its default after exec.
for _sig in (signal.SIGHUP, signal.SIGTERM):
    if signal.getsignal(_sig) == signal.SIG_IGN:
        signal.signal(_sig, lambda signum, frame: None)


def script(body):
    """argv running a Python snippet (dedented) as COMMAND."""
    return [PY, "-c", textwrap.dedent(body)]


# COMMAND leaves a kept process (its cmdline says keepme) beside one that ignores SIGTERM (none
# when argv[1] is "kept-only"), prints "PID START" of each, kept first, then sleeps as many
# seconds as its last argument says
KEEP_AND_DEAF = """
    import os, signal, sys, time
    def leave(body):
        r, w = os.pipe()
        if os.fork() == 0:
            os.setsid()
            if os.fork() == 0:
                null = os.open("/dev/null", os.O_RDWR)
                for i in (0, 1, 2):
                    os.dup2(null, i)
                st = open("/proc/self/stat").read().rsplit(")", 1)[1].split()[19]
                os.write(w, ("%d %s\\n" % (os.getpid(), st)).encode())
                body()
            os._exit(0)
        os.wait()
        os.close(w)
        return os.read(r, 100).decode().strip()
    def kept():
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(300)", "keepme"])
    def deaf():  # execs: COMMAND's own cmdline holds the word the kept one is kept by
        signal.signal(signal.SIGTERM, signal.SIG_IGN)
        os.execv(sys.executable, [sys.executable, "-c", "import time; time.sleep(300)", "deaf"])
    print(leave(kept), "" if sys.argv[1:2] == ["kept-only"] else leave(deaf), flush=True)
    time.sleep(float(sys.argv[-1]))
"""


# A runner that waits for a signal its Python handler acts on cannot sleep for it: time.sleep
# and signal.pause miss a signal that lands after the interpreter last looked for pending
# handlers and before the system call blocks (the C-level handler has run; the Python one waits
# until the sleep ends). The wakeup fd gets a byte for each signal whenever it came, so select
# returns and the Python handler runs.
AWAIT_SIGNAL = """
import os as _os, select as _select, signal as _signal


def signal_wakeup():
    \"\"\"Call before the runner says it is ready: from then on every signal leaves a byte
    on the fd returned.\"\"\"
    r, w = _os.pipe()
    _os.set_blocking(w, False)
    _signal.set_wakeup_fd(w)
    return r


def await_signals(wake):
    \"\"\"Wait for signals forever, running their Python handlers: one that raises ends it.\"\"\"
    while True:
        _select.select([wake], [], [])
        _os.read(wake, 64)
"""


def signalled_script(body):
    """script(body), where body may call signal_wakeup() and await_signals(wake)."""
    return [PY, "-c", AWAIT_SIGNAL + textwrap.dedent(body)]


def has_marker(pid, run_id):
    return ("REAPER_RUN=%s" % run_id).encode() in environ(pid)


def marked(run_id):
    """pidfds of every live process carrying REAPER_RUN=run_id, identity-checked."""
    return pidfds_where(lambda pid: has_marker(pid, run_id))


def kill_marked(run_id):
    kill_where(lambda pid: has_marker(pid, run_id))


def kill_where(pred):
    """SIGKILL every live process for which pred(pid) holds, each through a pidfd opened and
    checked against pred (pidfds_where): a pid passed to another process is never signalled."""
    for pid, fd in pidfds_where(pred):
        try:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
        except ProcessLookupError:
            pass
        os.close(fd)


def _stack(pid):
    """/proc/PID/stack (root only) and wchan, for a message about a process that hangs."""
    got = []
    for what in ("wchan", "stack"):
        try:
            with open("/proc/%d/%s" % (pid, what)) as f:
                got.append("%s: %s" % (what, f.read().strip()))
        except OSError as e:
            got.append("%s: %s" % (what, e))
    return "\n".join(got)


class Run:
    """One `reaper run` under test. Its pidfd is opened right after the fork, while it is our
    unreaped child, so signals through it can only reach this reaper."""

    def __init__(self, args, command, tmp_path, state=True, env=None, prefix=(), **popen):
        self.state_path = str(tmp_path / ("state-%d.json" % time.monotonic_ns())) if state else None
        argv = list(prefix) + [REAPER, "run"]
        if self.state_path:
            argv += ["--state", self.state_path]
        if args is None:  # command is the whole argv (it starts reaper itself)
            argv = list(command)
        else:
            argv += list(args) + ["--"] + list(command)
        e = dict(os.environ)
        for k in ("REAPER_TIMEOUT", "REAPER_GRACE", "REAPER_STATE", "REAPER_LEAK_EXIT_CODE"):
            e.pop(k, None)
        for k, v in (env or {}).items():  # None: not in reaper's environment
            if v is None:
                e.pop(k, None)
            else:
                e[k] = v
        popen.setdefault("stdin", subprocess.DEVNULL)
        popen.setdefault("stdout", subprocess.PIPE)
        popen.setdefault("stderr", subprocess.PIPE)
        self.p = subprocess.Popen(argv, env=e, **popen)
        self.pidfd = os.pidfd_open(self.p.pid)
        self.run_id = None
        self._stderr = None
        self._buf = b""

    def signal(self, sig):
        signal.pidfd_send_signal(self.pidfd, sig)

    def line(self, timeout=30):
        """The next line COMMAND printed (stdout must be a pipe). Read unbuffered, so select()
        and what is left for wait() stay true."""
        deadline = time.monotonic() + timeout
        fd = self.p.stdout.fileno()
        while b"\n" not in self._buf:
            left = deadline - time.monotonic()
            r, _, _ = select.select([fd], [], [], max(0.0, left))
            assert r, "COMMAND printed no whole line within %ss (have %r)" % (timeout, self._buf)
            chunk = os.read(fd, 65536)
            if not chunk:
                out, self._buf = self._buf, b""
                return out.decode(errors="replace").strip()
            self._buf += chunk
        line, _, self._buf = self._buf.partition(b"\n")
        return line.decode(errors="replace").strip()

    def expect(self, text, timeout=30):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            got = self.line(max(0.1, deadline - time.monotonic()))
            if got == text:
                return
            assert got, "COMMAND ended its output before %r" % text
        raise AssertionError("no %r from COMMAND" % text)

    def state(self):
        with open(self.state_path) as f:
            doc = json.load(f)
        self.run_id = doc["run_id"]
        return doc

    def wait_state(self, pred, timeout=30, what="state"):
        """Poll the document until pred(doc) holds; every read must be whole JSON."""
        deadline = time.monotonic() + timeout
        doc = None
        while time.monotonic() < deadline:
            try:
                doc = self.state()
            except FileNotFoundError:
                doc = None
            if doc is not None and pred(doc):
                return doc
            time.sleep(0.02)
        raise AssertionError("%s not reached within %ss; last document: %r" % (what, timeout, doc))

    def wait(self, timeout=60):
        """reaper's exit status, once it has exited and its stdout and stderr reached EOF."""
        try:
            out, err = self.p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired as e:
            if self.p.poll() is None:
                raise
            # reaper is gone: what keeps the pipes open is a process that has them, not reaper
            raise AssertionError("reaper exited %d, but its stdout or stderr is still open in another "
                                 "process after %ss; its stderr: %r" % (self.p.returncode, timeout, e.stderr))
        self._stderr = err.decode(errors="replace") if err is not None else ""
        self.out = (self._buf + (out or b"")).decode(errors="replace")
        return self.p.returncode

    def wait_exit(self, timeout=60):
        """reaper's exit status, waited for by its pidfd; then what its stdout and stderr hold
        now. For a run whose COMMAND outlives reaper with those pipes open (frozen in the
        kernel), where EOF never comes."""
        if not select.select([self.pidfd], [], [], timeout)[0]:
            raise AssertionError("reaper did not exit within %ss; its kernel stack:\n%s"
                                 % (timeout, _stack(self.p.pid)))
        self.p.wait()
        chunks = {}
        for name in ("stdout", "stderr"):
            f, got = getattr(self.p, name), b""
            if f:
                os.set_blocking(f.fileno(), False)
                while True:
                    try:
                        chunk = os.read(f.fileno(), 65536)
                    except BlockingIOError:
                        break
                    if not chunk:
                        break
                    got += chunk
            chunks[name] = got
        self._stderr = chunks["stderr"].decode(errors="replace")
        self.out = (self._buf + chunks["stdout"]).decode(errors="replace")
        self._buf = b""
        return self.p.returncode

    @property
    def stderr(self):
        return self._stderr

    def cleanup(self):
        if self.p.poll() is None:
            signal.pidfd_send_signal(self.pidfd, signal.SIGKILL)
            self.p.wait()
        if self.run_id is None and self.state_path:
            try:
                self.state()
            except (OSError, ValueError):
                pass
        if self.run_id:
            kill_marked(self.run_id)
        os.close(self.pidfd)
        for f in (self.p.stdout, self.p.stderr):
            if f:
                f.close()


@pytest.fixture
def run(tmp_path):
    """run(args, command, **kw) starts a reaper; everything is cleaned up by identity after."""
    runs = []

    def start(args, command, **kw):
        r = Run(args, command, tmp_path, **kw)
        runs.append(r)
        return r

    yield start
    for r in runs:
        r.cleanup()


@pytest.fixture(scope="session", autouse=True)
def built():
    if not os.access(REAPER, os.X_OK):
        pytest.exit("no %s: build first (make BUILD=... check-supervisor)" % REAPER, 2)
    sys.stdout.flush()
