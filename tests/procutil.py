# SPDX-License-Identifier: MIT
"""What the Python suites (tests/cli, tests/supervisor, tests/pkg, harness/python/tests) share:
where the checkout and its build are, and an independent view of processes through pidfds and
/proc, which does not use the library under test.

Each suite's conftest.py puts this directory on sys.path. Nothing here needs another user to
reach the checkout: the programs a test runs as another user are copied out first."""
from __future__ import annotations

import os
import select
import signal
import socket
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# REAPER_BUILD: the build tree (make passes it absolute; a relative one is the checkout's)
BUILD = ROOT / (os.environ.get("REAPER_BUILD") or "build")
REAPER = str(BUILD / "reaper")
FIXTURES = str(BUILD / "fixtures")
PY = "/usr/bin/python3"


def alive(pidfd: int) -> bool:
    """A pidfd polls readable once its process has exited."""
    p = select.poll()
    p.register(pidfd, select.POLLIN)
    return not p.poll(0)


def wait_gone(pidfds, timeout: float = 10.0) -> list:
    """Wait until every pidfd reports an exit (poll: thousands of fds); returns the live ones."""
    deadline = time.monotonic() + timeout
    left = list(pidfds)
    while left and time.monotonic() < deadline:
        p = select.poll()
        for fd in left:
            p.register(fd, select.POLLIN)
        done = {fd for fd, _ in p.poll(max(0, int((deadline - time.monotonic()) * 1000)))}
        left = [fd for fd in left if fd not in done]
    return left


def stat(pid: int):
    """{"state", "ppid", "pgrp", "session", "start"} from /proc/PID/stat (start: clock ticks since boot, the
    identity with the pid), or None once it is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(errors="replace")
    except OSError:
        return None
    f = text.rsplit(")", 1)[1].split()
    return {"state": f[0], "ppid": int(f[1]), "pgrp": int(f[2]), "session": int(f[3]), "start": int(f[19])}


def start_time(pid: int):
    s = stat(pid)
    return s and s["start"]


def running(pid: int, start: int) -> bool:
    """The process of this identity (pid + start time) exists and is not a zombie."""
    s = stat(pid)
    return bool(s) and s["start"] == start and s["state"] not in ("Z", "X")


def ignores(pid: int, sig: int) -> bool:
    """The process has sig set to SIG_IGN (SigIgn of /proc/PID/status); False once it is gone."""
    try:
        text = Path(f"/proc/{pid}/status").read_text(errors="replace")
    except OSError:
        return False
    for line in text.splitlines():
        if line.startswith("SigIgn:"):
            return bool(int(line.split()[1], 16) >> (sig - 1) & 1)
    return False


def environ(pid: int) -> list:
    """The NAME=VALUE entries (bytes) of its environment; [] when unreadable or gone."""
    try:
        return Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
    except OSError:
        return []


def pidfds_where(pred) -> list:
    """(pid, pidfd) of every live process for which pred(pid) holds, identity-checked: pred
    is asked again once the pidfd is open, so the fd names the process pred matched."""
    out = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or not pred(int(name)):
            continue
        try:
            fd = os.pidfd_open(int(name))
        except OSError:
            continue
        if pred(int(name)) and alive(fd):
            out.append((int(name), fd))
        else:
            os.close(fd)
    return out


def pinned_by(pid="self") -> set:
    """Pids the process pid (this one by default) holds a pidfd of (its fdinfo names them);
    empty when its descriptors cannot be listed (gone)."""
    out = set()
    try:
        fds = os.listdir(f"/proc/{pid}/fdinfo")
    except OSError:
        return out
    for fd in fds:
        try:
            with open(f"/proc/{pid}/fdinfo/{fd}") as f:
                for line in f:
                    if line.startswith("Pid:"):
                        out.add(int(line.split()[1]))
        except (OSError, ValueError):
            continue
    return out


def pinned_here() -> set:
    """Pids this process holds a pidfd of."""
    return pinned_by()


def when_pinned(pids, then, bound: float = 120.0) -> threading.Thread:
    """Run then() in a thread once this process holds a pidfd of every pid in pids (a reap
    running in it has found them), or after bound seconds: a gate opened on that condition
    instead of after a guessed delay, so a loaded machine cannot make the reap miss them."""
    def wait():
        end = time.monotonic() + bound
        while not set(pids) <= pinned_here() and time.monotonic() < end:
            time.sleep(0.01)
        then()
    t = threading.Thread(target=wait, daemon=True)
    t.start()
    return t


def kill_identified(pid: int, start: int) -> None:
    """SIGKILL the process of this identity, through a pidfd opened before the check."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return
    try:
        if running(pid, start):
            signal.pidfd_send_signal(fd, signal.SIGKILL)
    except OSError:
        pass
    finally:
        os.close(fd)


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on now."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def syscall_stops(pid: int):
    """Follow pid, started traced (PTRACE_TRACEME) and stopped at its exec, from system call to
    system call: yields (op, nr, args) at each stop at one (op 1 its entry, nr its number; 2 its
    exit, nr its value), pid stopped there until the next is asked for; the signals it gets are
    delivered. Ends when pid does. The calls' numbers are x86-64's."""
    import ctypes
    libc = ctypes.CDLL(None, use_errno=True)
    libc.ptrace.argtypes = [ctypes.c_long, ctypes.c_long, ctypes.c_void_p, ctypes.c_void_p]
    libc.ptrace.restype = ctypes.c_long
    PTRACE_SYSCALL, PTRACE_SETOPTIONS, PTRACE_GET_SYSCALL_INFO = 24, 0x4200, 0x420E
    assert os.uname().machine == "x86_64", "the calls' numbers are x86-64's"
    info = (ctypes.c_uint64 * 10)()  # op, arch | ip | sp | nr or rval | args
    _, st = os.waitpid(pid, 0)
    assert os.WIFSTOPPED(st) and os.WSTOPSIG(st) == signal.SIGTRAP, st  # at its exec
    assert libc.ptrace(PTRACE_SETOPTIONS, pid, None, 1) == 0  # PTRACE_O_TRACESYSGOOD
    deliver = 0
    while True:
        assert libc.ptrace(PTRACE_SYSCALL, pid, None, deliver) == 0, ctypes.get_errno()
        _, st = os.waitpid(pid, 0)
        if not os.WIFSTOPPED(st):
            return
        deliver = 0 if os.WSTOPSIG(st) == signal.SIGTRAP | 0x80 else os.WSTOPSIG(st)
        if not deliver:
            assert libc.ptrace(PTRACE_GET_SYSCALL_INFO, pid, ctypes.sizeof(info), info) > 0
            yield info[0] & 0xFF, info[3], info[4:10]


def string_at(pid: int, addr: int) -> str:
    """The NUL-ended string at addr in pid's memory (up to 4096 bytes)."""
    with open("/proc/%d/mem" % pid, "rb") as mem:
        mem.seek(addr)
        return mem.read(4096).split(b"\0")[0].decode(errors="replace")
