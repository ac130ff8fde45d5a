# SPDX-License-Identifier: MIT
"""The processes a harness starts itself, followed through libreaper: what /proc says of a pid,
its environment and children, the trees below several roots, the last pid given out, one identity signalled or collected, and the
collection of adopted orphans' zombies (see "processes by identity" in libreaper(3)). An
identity is ``(pid, start_time)``; every act on one goes through a pidfd opened before its
start time is checked again, so a pid that has passed to another process is never touched."""

from __future__ import annotations

import ctypes
import errno
import os
from typing import Iterable, List, NamedTuple, Optional, Tuple

from . import _c, _check, _lib

Identity = Tuple[int, int]

__all__ = ["PStat", "pstat", "start_time", "children", "trees", "last_pid", "environ", "signal", "collect", "Orphans",
           "orphans_start", "orphans_stop"]


class PStat(NamedTuple):
    """What /proc/PID/stat said of a process at one moment."""
    pid: int
    ppid: int
    pgrp: int
    session: int
    start_time: int
    state: str  # R S D Z T t X ...

    @property
    def ident(self) -> Identity:
        return (self.pid, self.start_time)


def _pstat(c: "_lib.PStat") -> PStat:
    return PStat(c.pid, c.ppid, c.pgrp, c.session, c.start_time, c.state.decode("ascii", "replace"))


# reaper_pstat, taken from the library once: a pytest session reads a few pids at each test's
# end, and every object a call goes through (the library object's attribute lookup, the
# modules named) is a page written, which the next fork of a process-heavy test makes it copy
_reaper_pstat = None
_byref, _PStat, _NO_PID = ctypes.byref, _lib.PStat, -errno.ESRCH


def _read_stat(pid: int):
    global _reaper_pstat
    call = _reaper_pstat
    if call is None:
        call = _reaper_pstat = _c().reaper_pstat
    out = _PStat()
    rc = call(int(pid), _byref(out))
    if rc == _NO_PID:
        return None
    if rc < 0:
        _check(rc, f"reaper_pstat {pid}")
    return out


def pstat(pid: int = 0) -> Optional[PStat]:
    """What /proc/PID/stat says of ``pid`` now (0: this process); None when there is none."""
    out = _read_stat(pid)
    return None if out is None else _pstat(out)


def start_time(pid: int) -> Optional[int]:
    """pstat(pid).start_time, read at the least cost; None when there is no such process."""
    out = _read_stat(pid)
    return None if out is None else out.start_time


def _listed(call, what: str) -> List[PStat]:
    cap = 64
    while True:
        buf = (_lib.PStat * cap)()
        n = call(buf, cap)
        if n == -errno.ESRCH:
            return []
        _check(n, what)
        if n <= cap:
            return [_pstat(buf[i]) for i in range(n)]
        cap = n + 16  # more came meanwhile: room for them and a few more


def children(pid: int = 0) -> List[PStat]:
    """The children of ``pid`` now (0: this process), of every thread, zombies included, each
    only while its stat still names ``pid`` as its parent; [] when ``pid`` is gone."""
    return _listed(lambda buf, cap: _c().reaper_children(int(pid), buf, cap), f"reaper_children {pid}")


def trees(roots: Iterable[Identity]) -> List[PStat]:
    """Every process in the trees of ``roots``: each root that is still the process its identity
    names, then its descendants (roots first, each parent before its children, each process
    once), a process's children taken only while it is still the process it was."""
    ids = [(int(p), int(s)) for p, s in roots]
    arr = (_lib.Ident * max(1, len(ids)))(*ids)
    return _listed(lambda buf, cap: _c().reaper_descendants(arr, len(ids), buf, cap), "reaper_descendants")


_LAST_PID = "/proc/sys/kernel/ns_last_pid"
_last_pid_fd = -1
_last_pid_file = None  # (st_dev, st_ino) of the file _last_pid_fd was opened on


def last_pid() -> int:
    """The pid the kernel gave out last in this PID namespace; -1 when it cannot be read.
    Read from a descriptor kept open (a test's check reads it a few times: opening the file
    costs three times the read and the check below); the file tells the namespace of whoever
    reads it, so a forked child's inherited descriptor reads its own. Code that closes every
    descriptor may close it, and its number may then be another file's (a pidfile holds an
    integer too): the descriptor is read only while it is still that file, else opened
    again, once."""
    global _last_pid_fd, _last_pid_file
    for _ in range(2):
        fd = _last_pid_fd
        try:
            if fd < 0:
                fd = os.open(_LAST_PID, os.O_RDONLY | os.O_CLOEXEC)
                st = os.fstat(fd)
                _last_pid_fd, _last_pid_file = fd, (st.st_dev, st.st_ino)
            else:
                st = os.fstat(fd)
                if (st.st_dev, st.st_ino) != _last_pid_file:
                    raise OSError("another file under the descriptor")
            pid = int(os.pread(fd, 32, 0))
            return pid if pid > 0 else -1
        except (OSError, ValueError):
            # not ours any more (closed, or reused for another file): left to its owner
            _last_pid_fd = -1
    return -1


def environ(pid: int = 0) -> Optional[bytes]:
    """The environment ``pid`` (0: this process) was started with, as /proc/PID/environ holds
    it (entries each ending in NUL; what its last exec was given, not ``os.environ`` now); None
    when there is no such process or it cannot be read (another user's)."""
    cap = 8192
    while True:
        buf = ctypes.create_string_buffer(cap)
        n = _c().reaper_environ(int(pid), buf, cap)
        if n < 0:
            if n in (-errno.ESRCH, -errno.EACCES, -errno.EPERM):
                return None
            _check(n, f"reaper_environ {pid}")
        if n <= cap:
            return buf.raw[:n]
        cap = n + 4096


def _ident(ident: Identity) -> "_lib.Ident":
    pid, start = ident
    return _lib.Ident(int(pid), int(start))


def signal(ident: Identity, sig: int) -> bool:
    """Send ``sig`` to the process ``ident`` names while it is that process: True when sent,
    False when it is gone or its pid is another process's (nothing was signalled)."""
    rc = _c().reaper_signal(ctypes.byref(_ident(ident)), int(sig))
    if rc == -errno.ESRCH:
        return False
    _check(rc, f"reaper_signal {ident[0]}")
    return True


def collect(ident: Identity) -> Optional[int]:
    """Collect the zombie of ``ident`` when this process is its parent, without waiting: its wait
    status, or None when it still runs, is gone, is another process now, or is not our child."""
    status = ctypes.c_int(0)
    rc = _c().reaper_collect(ctypes.byref(_ident(ident)), ctypes.byref(status))
    if rc in (0, -errno.ESRCH, -errno.ECHILD):
        return None
    _check(rc, f"reaper_collect {ident[0]}")
    return status.value


def orphans_start(period: float) -> None:
    """Collect the zombies of this process's adopted orphans in a thread of libreaper's, as
    ``Orphans.collect()`` does, a look every ``period`` seconds until ``orphans_stop()``: no
    Python thread (each one is work in every forked child). One per process."""
    _check(_c().reaper_orphans_start(float(period)), "reaper_orphans_start")


def orphans_stop() -> int:
    """Stop the thread ``orphans_start()`` started in this process; how many it collected."""
    return _check(_c().reaper_orphans_stop(), "reaper_orphans_stop")


class Orphans:
    """The zombies of the orphans this process adopted (``reaper.adopt_orphans``), collected at
    each ``collect()``, and only those: a zombie child whose session is neither ours nor its own,
    or that an earlier look saw running below another child of ours. Any other zombie child (one
    C code started) keeps its exit status for its owner. One thread at a time."""

    def __init__(self):
        handle = ctypes.c_void_p()
        _check(_c().reaper_orphans_open(ctypes.byref(handle)), "reaper_orphans_open")
        self._handle: Optional[int] = handle.value

    def collect(self, own: Iterable[Identity] = ()) -> int:
        """One look; ``own``: identities of children we started and wait for ourselves, never
        collected. How many zombies were collected."""
        if self._handle is None:
            raise ValueError("reaper.kin.Orphans: closed")
        ids = [(int(p), int(s)) for p, s in own]
        arr = (_lib.Ident * len(ids))(*ids) if ids else None
        return _check(_c().reaper_orphans_collect(self._handle, arr, len(ids)), "reaper_orphans_collect")

    def close(self) -> None:
        handle, self._handle = self._handle, None
        if handle is not None:
            _c().reaper_orphans_close(handle)

    def __enter__(self) -> "Orphans":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self) -> None:
        if getattr(self, "_handle", None) is not None and os is not None:
            self.close()
