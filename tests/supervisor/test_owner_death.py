# SPDX-License-Identifier: MIT
"""Owner death: a reaper that is SIGKILLed mid-run still takes its run with
it (its guardian sees the pipe close and kills by the run's marker), while another, live
reaper run is left alone."""
import ctypes
import json
import os
import platform
import signal
import subprocess
import textwrap
import time

import pytest

from conftest import kill_marked, marked, script
from procutil import PY, REAPER, alive, stat, wait_gone

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


def test_guardian_holds_nothing_of_the_run_and_leaves_with_a_normal_end(run, tmp_path):
    """The guardian is reaper's child leading a process group of its own, outside reaper's and
    COMMAND's (one fork, no middle process),
    holds no descriptor of the run (a reader of COMMAND's output must not wait for it), sits
    in /, and exits, collected, when the run ends normally."""
    r = run([], script("""
        import sys
        print("ready", flush=True)
        sys.stdin.readline()
    """), stdin=subprocess.PIPE, cwd=str(tmp_path))
    r.expect("ready")
    doc = r.state()
    g, cmd = doc["guardian_pid"], doc["command_pid"]
    assert g and g != r.p.pid
    fd = os.pidfd_open(g)
    try:
        assert stat(g)["pgrp"] == g  # its own group: group signals for the run miss it
        assert stat(g)["pgrp"] not in (stat(r.p.pid)["pgrp"], stat(cmd)["pgrp"])
        assert stat(g)["ppid"] == r.p.pid  # started by one fork
        assert os.readlink("/proc/%d/cwd" % g) == "/"
        ours = {os.readlink("/proc/%d/fd/%s" % (cmd, n)) for n in ("0", "1", "2")}
        held = {os.readlink("/proc/%d/fd/%s" % (g, n)) for n in os.listdir("/proc/%d/fd" % g)}
        assert not (ours & held), held
        assert len([h for h in held if h.startswith("pipe:")]) == 1  # its pipe from reaper
        # and nothing else while it waits: not even 0-2 (/dev/null goes there only to reap)
        assert len(os.listdir("/proc/%d/fd" % g)) == 1, held
        r.p.stdin.write(b"end\n")
        assert r.wait(30) == 0
        assert wait_gone([fd], 30) == []
    finally:
        os.close(fd)


def test_a_normal_end_collects_the_guardian_before_reaper_exits(tmp_path):
    """reaper collects its stopped guardian itself: run under a subreaper, nothing of reaper's
    (the guardian's zombie) is left for that subreaper to collect once reaper has exited."""
    out = subprocess.run([PY, "-c", textwrap.dedent("""
        import ctypes, os, subprocess, sys, time
        PR_SET_CHILD_SUBREAPER = 36
        assert ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) == 0
        left = []
        for _ in range(20):
            assert subprocess.run([sys.argv[1], "run", "--", "true"]).returncode == 0
            time.sleep(0.01)
            while True:
                try:
                    pid, _ = os.waitpid(-1, os.WNOHANG)
                except ChildProcessError:
                    break
                if not pid:
                    break
                left.append(pid)
        print(len(left))
    """), REAPER], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "0", "collected by the subreaper: " + out.stdout


def test_a_guardian_killed_early_is_no_longer_named(run):
    """A guardian killed from outside is collected by reaper and the run goes on: its pid is
    free for anyone then, so the state document stops naming it, and COMMAND's status is still
    the run's."""
    r = run([], script("""
        import sys
        print("ready", flush=True)
        sys.stdin.readline()
        sys.exit(3)
    """), stdin=subprocess.PIPE)
    r.expect("ready")
    g = r.state()["guardian_pid"]
    assert g
    fd = os.pidfd_open(g)
    try:
        assert stat(g)["ppid"] == r.p.pid  # ours to kill: reaper's child, the run's guardian
        signal.pidfd_send_signal(fd, signal.SIGKILL)
        assert wait_gone([fd], 30) == []
        r.wait_state(lambda d: d["guardian_pid"] is None, what="the dead guardian unnamed")
        r.p.stdin.write(b"end\n")
        r.p.stdin.flush()
        assert r.wait(30) == 3, r.stderr
    finally:
        os.close(fd)


def end_with_guardian(r, g):
    """COMMAND (reading a line) told to end: the run ends 0 and its guardian g with it."""
    fd = os.pidfd_open(g)
    try:
        r.p.stdin.write(b"end\n")
        r.p.stdin.flush()
        assert r.wait(30) == 0, r.stderr
        assert wait_gone([fd], 30) == []
    finally:
        os.close(fd)


def kernel_at_least(major, minor):
    release = platform.release().split(".")
    try:
        return (int(release[0]), int(release[1].split("-")[0])) >= (major, minor)
    except (IndexError, ValueError):
        return False


# The guardian runs on reaper's memory on x86-64 only; elsewhere it is a fork (as under
# valgrind), and so it is on kernels before 5.16
on_x86_64 = pytest.mark.skipif(platform.machine() != "x86_64", reason="the guardian is a fork of reaper's here")
on_reapers_memory = pytest.mark.skipif(platform.machine() != "x86_64" or not kernel_at_least(5, 16),
                                       reason="the guardian is a fork of reaper's here (x86-64, Linux 5.16 or later only)")


@on_reapers_memory
def test_reaper_and_its_guardian_show_no_environment_yet_command_and_settings_get_it(run, tmp_path):
    """The guardian runs on reaper's memory, whose environment is what /proc shows for both:
    reaper moves its own out of sight as it starts (a scan by a marker of the caller's must
    find neither). What it read from its environment still holds (REAPER_STATE names the
    document, REAPER_GRACE the grace) and COMMAND gets the caller's environment whole."""
    state = tmp_path / "from-env.json"
    r = run(None, [REAPER, "run", "--", PY, "-c", textwrap.dedent("""
        import os, sys
        print(os.environ.get("REAPER_T_FOO"), os.environ.get("REAPER_GRACE"), flush=True)
        sys.stdin.readline()
    """)], env={"REAPER_T_FOO": "bar baz", "REAPER_STATE": str(state), "REAPER_GRACE": "7",
                 "REAPER_RUN": None},  # not nested in a run (make check)
            stdin=subprocess.PIPE)
    assert r.line() == "bar baz 7"
    with open(state) as f:
        doc = json.load(f)
    g = doc["guardian_pid"]
    assert doc["grace"] == 7 and g and g != r.p.pid
    for pid in (r.p.pid, g):
        with open("/proc/%d/environ" % pid, "rb") as f:
            assert not f.read().strip(b"\0"), "pid %d shows an environment" % pid
    end_with_guardian(r, g)


@on_reapers_memory
def test_the_guardian_of_a_sigkilled_reaper_reaps_as_a_process_of_its_own(run):
    """reaper SIGKILLed: its guardian, which waited on reaper's memory, execs reaper afresh for
    the reap (the memory of a process killed at any moment is nothing to run on): by the same
    pid, with no environment, given the run's marker; and the run ends whole. The guardian is
    seized (ptrace) to be seen at its exec."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    libc.ptrace.restype = ctypes.c_long
    PTRACE_SEIZE, PTRACE_DETACH, PTRACE_O_TRACEEXEC, PTRACE_EVENT_EXEC = 0x4206, 17, 0x10, 4
    r = run(["--timeout", "60", "--grace", "60"], script(FAMILY), env={"REAPER_RUN": None})  # not nested
    r.expect("ready")
    g = r.state()["guardian_pid"]
    v = marked(r.run_id)
    fd = os.pidfd_open(g)
    try:
        assert len(v) == 4, v
        assert libc.ptrace(PTRACE_SEIZE, g, None, PTRACE_O_TRACEEXEC) == 0, ctypes.get_errno()
        r.signal(signal.SIGKILL)
        _, st = os.waitpid(g, 0x40000000)  # __WALL: the guardian is our tracee, not our child
        assert os.WIFSTOPPED(st) and st >> 8 == signal.SIGTRAP | PTRACE_EVENT_EXEC << 8, "%#x" % st
        with open("/proc/%d/cmdline" % g, "rb") as f:
            argv = f.read().split(b"\0")
        with open("/proc/%d/environ" % g, "rb") as f:
            env = f.read()
        assert libc.ptrace(PTRACE_DETACH, g, None, None) == 0, ctypes.get_errno()
        assert argv[1:4] == [b"__guardian", b"death", ("REAPER_RUN=%s" % r.run_id).encode()], argv
        assert not env.strip(b"\0"), "the guardian's exec has an environment: %r" % env
        assert wait_gone([fd] + [f for _, f in v], 30) == [], "the run outlived its SIGKILLed reaper"
        assert marked(r.run_id) == []
    finally:
        os.close(fd)
        for _, f in v:
            os.close(f)


def test_a_sigkilled_reaper_without_cgroup_takes_a_nested_run_along(run, tmp_path):
    """Without cgroups, the guardian of a SIGKILLed reaper finds its run by the run's marker
    only. A reaper run nested in the run (make check under reaper, running reaper again) is
    one of the run's: it carries the marker in the environment it got, and must show it, so
    that it is killed and its own guardian ends the nested run."""
    inner_state = tmp_path / "inner.json"
    r = run(["--cgroup", "off", "--timeout", "60", "--grace", "60"],
            [REAPER, "run", "--cgroup", "off", "--state", str(inner_state), "--"]
            + script("""
                import time
                print("ready", flush=True)
                time.sleep(300)
            """))
    r.expect("ready")
    with open(inner_state) as f:
        inner = json.load(f)
    fds = [os.pidfd_open(inner["reaper_pid"])]
    try:
        if inner.get("guardian_pid"):
            fds.append(os.pidfd_open(inner["guardian_pid"]))
        v = marked(inner["run_id"])
        fds += [f for _, f in v]
        assert len(v) == 1, v
        r.signal(signal.SIGKILL)
        left = wait_gone(fds, 20)
        assert left == [], "the nested run outlived the SIGKILLed reaper: %r" % [
            os.readlink("/proc/self/fd/%d" % f) for f in left]
    finally:
        kill_marked(inner["run_id"])
        for f in fds:
            if alive(f):
                signal.pidfd_send_signal(f, signal.SIGKILL)
            os.close(f)


# A seccomp filter that answers close_range with EPERM (as container runtimes' filters answer a
# system call they do not list), then the command line given: prefix for Run.
NO_CLOSE_RANGE = [PY, "-c", textwrap.dedent("""
    import ctypes, os, struct, sys
    libc = ctypes.CDLL(None, use_errno=True)
    AUDIT_ARCH_X86_64, NR_CLOSE_RANGE, EPERM = 0xc000003e, 436, 1
    def insn(code, jt, jf, k):
        return struct.pack("HBBI", code, jt, jf, k)
    prog = b"".join([
        insn(0x20, 0, 0, 4),                            # A = arch
        insn(0x15, 0, 3, AUDIT_ARCH_X86_64),            # not x86-64: allow
        insn(0x20, 0, 0, 0),                            # A = nr
        insn(0x15, 0, 1, NR_CLOSE_RANGE),
        insn(0x06, 0, 0, 0x00050000 | EPERM),           # close_range: EPERM
        insn(0x06, 0, 0, 0x7fff0000),                   # allow
    ])
    buf = ctypes.create_string_buffer(prog)
    fprog = struct.pack("HxxxxxxQ", len(prog) // 8, ctypes.addressof(buf))
    PR_SET_NO_NEW_PRIVS, PR_SET_SECCOMP, SECCOMP_MODE_FILTER = 38, 22, 2
    assert libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0
    assert libc.prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, ctypes.c_char_p(fprog), 0, 0) == 0, ctypes.get_errno()
    os.execv(sys.argv[1], sys.argv[1:])
""")]


@pytest.mark.skipif(platform.machine() != "x86_64", reason="the filter is x86-64's")
def test_with_close_range_refused_the_guardian_still_holds_only_its_pipe_and_ends_the_run(run):
    """A seccomp filter may refuse close_range with EPERM (not ENOSYS): the guardian closes
    what it inherited one by one then, and holds nothing but its pipe. Holding a copy of the
    pipe's write end, it would never see its reaper die."""
    r = run(["--timeout", "60", "--grace", "60"], script(FAMILY), prefix=NO_CLOSE_RANGE)
    r.expect("ready")
    g = r.state()["guardian_pid"]
    v = marked(r.run_id)
    gfd = os.pidfd_open(g)  # reaper's child: it is the guardian
    try:
        assert len(v) == 4, v
        held = [os.readlink("/proc/%d/fd/%s" % (g, n)) for n in os.listdir("/proc/%d/fd" % g)]
        assert len(held) == 1 and held[0].startswith("pipe:"), held
        r.signal(signal.SIGKILL)
        assert wait_gone([f for _, f in v], 20) == [], "the run outlived its SIGKILLed reaper"
        assert wait_gone([gfd], 30) == [], "the guardian did not end"
    finally:
        if alive(gfd):  # one that holds its own pipe's write end waits forever
            signal.pidfd_send_signal(gfd, signal.SIGKILL)
        os.close(gfd)
        for _, f in v:
            os.close(f)


@on_x86_64
def test_on_a_kernel_before_5_16_the_guardian_is_a_fork_and_reaper_shows_its_environment(run, tmp_path):
    """Before Linux 5.16 a core dump killed every process of a memory: a guardian on reaper's
    would die with a crashing reaper. There (uname says 2.6.x under setarch --uname-2.6) it is
    a fork, and reaper keeps its environment in sight."""
    state = tmp_path / "old-kernel.json"
    r = run(None, ["setarch", "x86_64", "--uname-2.6", REAPER, "run", "--", PY, "-c",
                   "import sys; print('up', flush=True); sys.stdin.readline()"],
            env={"REAPER_T_FOO": "old", "REAPER_STATE": str(state), "REAPER_RUN": None},
            stdin=subprocess.PIPE)
    assert r.line() == "up"
    with open(state) as f:
        doc = json.load(f)
    g = doc["guardian_pid"]
    assert g and g != r.p.pid
    with open("/proc/%d/environ" % r.p.pid, "rb") as f:
        assert b"REAPER_T_FOO=old" in f.read().split(b"\0"), "reaper hid its environment on an old kernel"
    with open("/proc/%d/environ" % g, "rb") as f:
        assert not f.read().strip(b"\0"), "the forked guardian shows an environment"
    end_with_guardian(r, g)
