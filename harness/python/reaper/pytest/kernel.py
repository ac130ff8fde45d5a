# SPDX-License-Identifier: MIT
"""What the plugin reads from /proc and writes to cgroupfs itself."""

from __future__ import annotations

import os
from typing import List, Optional

def _token() -> str:
    """12 random hex digits, as secrets.token_hex(6) gives them, without the hashlib (and
    libcrypto, 3.6 MB) that importing secrets loads: every fork copies what pytest maps."""
    return os.urandom(6).hex()


def _stat(pid: int):
    """(state, ppid, start time, session) of pid, or None."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fields = os.read(fd, 4096).rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    finally:
        os.close(fd)
    return fields[0].decode(), int(fields[1]), int(fields[19]), int(fields[3])


# ---- children this process starts itself ----------------------------------------------------
def _move(cgroup: str, pid: int) -> None:
    """Put pid (0: this process) into cgroup; a child that is already gone is no error."""
    try:
        with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
            f.write(str(pid))
    except OSError:
        pass


def _cgroup_of(pid) -> Optional[str]:
    """The cgroup v2 of pid ("self": this process), as /proc says it; None if gone."""
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            return next((line[3:].rstrip("\n") for line in f if line.startswith("0::")), None)
    except OSError:
        return None


def _move_forked(cgroup: str, pid: int, here: set) -> None:
    """An exec'd child is moved only once it runs its program, which may have forked by then
    (a shell script): what it started in a cgroup this process was in while it forked (here)
    moves to cgroup too, until a look finds none left there."""
    for _ in range(100):
        left, todo = [], [pid]
        while todo:
            kids = _children(todo.pop())
            todo.extend(kids)
            left.extend(k for k in kids if _cgroup_of(k) in here)
        if not left:
            return
        for k in left:
            _move(cgroup, k)

def _children(pid="self") -> List[int]:
    out = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                out.extend(int(p) for p in f.read().split())
        except OSError:
            pass
    return out


def _read(path: str) -> Optional[bytes]:
    """A small file of the kernel's, whole; None if it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        out = b""
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                return out
            out += chunk
    except OSError:
        return None
    finally:
        os.close(fd)


def _last_pid() -> int:
    """The pid the kernel gave out last in this PID namespace (-1: unknown)."""
    try:
        return int(_read("/proc/sys/kernel/ns_last_pid") or b"-1")
    except ValueError:
        return -1


def _environ(pid: int) -> List[bytes]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def _read_self_environ() -> bytes:
    try:
        with open("/proc/self/environ", "rb") as f:
            return f.read()
    except OSError:
        return b""
