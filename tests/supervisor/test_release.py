# SPDX-License-Identifier: MIT
"""The guardian's release once the run's reap is over (before reaper writes its reports and
removes the run's cgroup): what the run spared (--keep, --report-only) is still moved out and
the cgroup removed when reaper is SIGKILLed after the release; the guardian's removal and
reaper's own, in either order, make no warning; an incomplete reap is said once; and what
reaper makes sure of on 0-2 gives COMMAND no descriptor it did not have.

Timings are forced with ptrace (reaper started with PTRACE_TRACEME, the guardian seized),
never with sleeps."""
import ctypes
import os
import resource
import signal
import subprocess
import time

import pytest

from conftest import KEEP_AND_DEAF, kill_where, script
from procutil import REAPER, environ, running, wait_gone
from test_cgroup import end_identified, needs_cgroup

libc = ctypes.CDLL(None, use_errno=True)
libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
libc.ptrace.restype = ctypes.c_long
PTRACE_TRACEME, PTRACE_DETACH, PTRACE_SYSCALL, PTRACE_SETOPTIONS = 0, 17, 24, 0x4200
PTRACE_GET_SYSCALL_INFO, PTRACE_SEIZE, PTRACE_INTERRUPT = 0x420E, 0x4206, 0x4207
MKDIR, RMDIR, MKDIRAT = 83, 84, 258  # x86-64


def traceme():
    libc.ptrace(PTRACE_TRACEME, 0, None, None)


class Tracer:
    """Follows a reaper started with traceme() from one system call on its run's cgroup to the
    next; between two, it stays stopped."""

    def __init__(self, pid):
        assert os.uname().machine == "x86_64", "the calls' numbers are x86-64's"
        self.pid = pid
        _, st = os.waitpid(pid, 0)
        assert os.WIFSTOPPED(st) and os.WSTOPSIG(st) == signal.SIGTRAP, st  # at its exec
        assert libc.ptrace(PTRACE_SETOPTIONS, pid, None, 1) == 0  # PTRACE_O_TRACESYSGOOD
        self.info = (ctypes.c_uint64 * 10)()  # op, arch | ip | sp | nr or rval | args

    def until(self, calls, stop_op):
        """On to the next call of calls ({number: the path's argument}) on a path of a run's
        cgroup, at stop_op (1 its entry, 2 its exit). The path."""
        pid, info, deliver, path = self.pid, self.info, 0, None
        while True:
            assert libc.ptrace(PTRACE_SYSCALL, pid, None, deliver) == 0, ctypes.get_errno()
            _, st = os.waitpid(pid, 0)
            assert os.WIFSTOPPED(st), "the reaper ended before the call on its cgroup (status %#x)" % st
            deliver = 0
            if os.WSTOPSIG(st) != signal.SIGTRAP | 0x80:
                deliver = os.WSTOPSIG(st)
                continue
            assert libc.ptrace(PTRACE_GET_SYSCALL_INFO, pid, ctypes.sizeof(info), info) > 0
            op = info[0] & 0xFF
            if op == 1:
                path = None
                if info[3] in calls:
                    with open("/proc/%d/mem" % pid, "rb") as mem:
                        mem.seek(info[4 + calls[info[3]]])
                        name = mem.read(4096).split(b"\0")[0].decode()
                    path = name if "/reaper-run-" in name else None
            if path and op == stop_op:
                return path

    def detach(self):
        libc.ptrace(PTRACE_DETACH, self.pid, None, None)


def guardian_of(pid):
    """The guardian among pid's children, as (pid, pidfd): it names itself reaper-guard, or,
    exec'd for its work (on reaper's memory until then), runs `reaper __guardian ...` (named
    exe until it names itself again: under ASan, for the whole of the sanitizer's start)."""
    deadline = time.monotonic() + 30
    while True:  # until it has named itself (a fork, or a clone, that has not run yet has not)
        got = _guardian_among_children(pid)
        if isinstance(got, tuple) or time.monotonic() > deadline:
            break
        time.sleep(0.001)
    if isinstance(got, tuple):
        return got
    raise AssertionError("no guardian among %d's children %r" % (pid, got))


def _guardian_among_children(pid):
    with open("/proc/%d/task/%d/children" % (pid, pid)) as f:
        kids = [int(k) for k in f.read().split()]
    seen = {}
    for k in kids:
        try:
            with open("/proc/%d/comm" % k) as f:
                comm = seen[k] = f.read().strip()
            with open("/proc/%d/cmdline" % k, "rb") as f:
                argv = f.read().split(b"\0")
            if comm == "reaper-guard" or argv[1:2] == [b"__guardian"]:
                fd = os.pidfd_open(k)
                with open("/proc/%d/stat" % k) as f:
                    ppid = f.read().rsplit(")", 1)[1].split()[1]
                if ppid == str(pid):
                    return k, fd  # still pid's child once the pidfd is open: fd names it
                os.close(fd)
        except OSError:
            pass
    return seen


def remove_left(path):
    """The test's own cleanup of a cgroup left behind (once what it held has been ended)."""
    if path and os.path.isdir(path):
        try:
            os.rmdir(path)
        except OSError:
            pass


@needs_cgroup
@pytest.mark.parametrize("rule", [["--keep", "*keepme*"], ["--report-only"]], ids=["keep", "report-only"])
def test_a_reaper_killed_after_the_release_leaves_no_cgroup_around_what_the_run_spared(run, rule):
    """reaper SIGKILLed after the guardian's release (held at its own rmdir of the run's
    cgroup, which still holds what --keep or --report-only spared, nothing having been killed
    around it): the run's cgroup goes all the same, what it held moved out, as a guardian
    that was not released yet does."""
    r = run(["--cgroup", "on", "--timeout", "0.1", "--grace", "0.2"] + rule,
            script(KEEP_AND_DEAF) + ["kept-only" if rule[0] == "--keep" else "both", "0"], preexec_fn=traceme)
    path, spared, gfd = None, [], None
    try:
        t = Tracer(r.p.pid)
        path = t.until({RMDIR: 0}, 1)  # its own rmdir, after the reports: the guardian released
        _, gfd = guardian_of(r.p.pid)
        f = list(map(int, r.line(60).split()))
        spared = [(f[0], f[1])] + ([(f[2], f[3])] if rule == ["--report-only"] else [])
        assert open(os.path.join(path, "cgroup.procs")).read(), "nothing spared in the run's cgroup"
        r.signal(signal.SIGKILL)
        t.detach()
        assert r.wait(60) == -signal.SIGKILL
        assert wait_gone([gfd], 120) == [], "the guardian did not end"
        assert all(running(*p) for p in spared), "what the run spared was ended"
        left = os.path.isdir(path) and open(os.path.join(path, "cgroup.procs")).read().split()
        assert not os.path.isdir(path), "the run's cgroup %s is left, holding %s" % (path, left)
    finally:
        if gfd is not None:
            os.close(gfd)
        for p in spared:
            end_identified(p)
        remove_left(path)


@needs_cgroup
def test_a_guardian_that_removes_the_cgroup_last_makes_no_warning(run):
    """The released guardian, late (stopped until reaper has moved out what --keep kept and is
    at its last rmdir), removes the run's cgroup first: reaper's rmdir finds it gone, which is
    the end it wanted, not a failure to warn about."""
    r = run(["--cgroup", "on", "--keep", "*keepme*", "--timeout", "0.1", "--grace", "0.2"],
            script(KEEP_AND_DEAF) + ["kept-only", "0"], preexec_fn=traceme)
    path, kept, gfd, g = None, None, None, None
    try:
        t = Tracer(r.p.pid)
        path = t.until({MKDIR: 0, MKDIRAT: 1}, 2)  # the cgroup made: the guardian is there, waiting
        g, gfd = guardian_of(r.p.pid)
        assert libc.ptrace(PTRACE_SEIZE, g, None, None) == 0, ctypes.get_errno()
        assert libc.ptrace(PTRACE_INTERRUPT, g, None, None) == 0
        _, st = os.waitpid(g, 0x40000000)  # __WALL
        assert os.WIFSTOPPED(st), st
        # on to reaper's rmdir that comes after the kept process has been moved out
        while True:
            t.until({RMDIR: 0}, 1)
            if not open(os.path.join(path, "cgroup.procs")).read():
                break
        f = list(map(int, r.line(60).split()))
        kept = (f[0], f[1])
        assert libc.ptrace(PTRACE_DETACH, g, None, None) == 0  # the released guardian goes on
        g = None
        assert wait_gone([gfd], 120) == [], "the released guardian did not end"
        assert not os.path.isdir(path), "the released guardian did not remove the empty cgroup"
        t.detach()
        assert r.wait(60) == 0, r.stderr
        assert "cannot remove" not in r.stderr, r.stderr
        assert running(*kept)
    finally:
        if g is not None:
            libc.ptrace(PTRACE_DETACH, g, None, None)
        if gfd is not None:
            os.close(gfd)
        if kept:
            end_identified(kept)
        remove_left(path)


@pytest.mark.parametrize("mode", [pytest.param("on", marks=needs_cgroup), "off"])
def test_an_incomplete_reap_is_said_once(run, mode):
    """Short of descriptors, the reap's result is incomplete: reaper says so once. What an
    incomplete reap leaves (no state file names the run: it needs a descriptor) is ended here,
    by a variable of the test's own in the sleepers' environment."""
    seen = 0
    entry = "REAPER_TEST_INCOMPLETE=%d-%d" % (os.getpid(), time.monotonic_ns())
    try:
        for n in range(11, 17):
            r = run(["--cgroup", mode, "--timeout", "0.2", "--grace", "0.2"],
                    ["sh", "-c", "for i in $(seq 30); do sleep 1000 >/dev/null 2>&1 & done; exit 0"], state=False,
                    env={entry.split("=")[0]: entry.split("=")[1]},
                    preexec_fn=lambda n=n: resource.setrlimit(resource.RLIMIT_NOFILE, (n, n)))
            code = r.wait(60)
            said = r.stderr.count("the result is incomplete")
            assert said <= 1, (n, code, r.stderr)
            seen += said
        assert seen, "no limit made the result incomplete"
    finally:
        kill_where(lambda pid: entry.encode() in environ(pid))


def test_an_o_path_stdin_gives_command_no_descriptor():
    """reaper's 0 is an O_PATH descriptor (open, but poll() calls it invalid): nothing is
    opened for it, and COMMAND has 0-2 and nothing else, as reaper got them."""
    def o_path_stdin():
        fd = os.open("/", os.O_PATH)
        os.dup2(fd, 0)
        os.close(fd)
    # ls's listing holds the directory it reads (3): one descriptor more than 0-2
    p = subprocess.run([REAPER, "run", "--cgroup", "off", "--", "ls", "/proc/self/fd"], preexec_fn=o_path_stdin,
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=60)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == [b"0", b"1", b"2", b"3"], p.stdout
