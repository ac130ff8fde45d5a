# SPDX-License-Identifier: MIT
"""cgroup v2 through libreaper: the cgroups a test harness makes for a session and for each
test, moves itself into and out of, and removes. A cgroup is named by its directory on the
cgroup2 mount. Each call raises ``reaper.ReaperError`` with the errno the library gave
(EROFS: the mount is read-only; EACCES/EPERM: no permission; EBUSY: still populated;
EDEADLK: the caller is inside a cgroup it asked to kill)."""

from __future__ import annotations

import ctypes
import errno
import os
from typing import Optional

from . import _c, _check, _lib

_PATH_MAX = 4096


def _b(path: Optional["os.PathLike[str] | str"]) -> Optional[bytes]:
    return None if path is None else os.fsencode(path)


def current() -> str:
    """The directory of this process's own cgroup v2."""
    buf = ctypes.create_string_buffer(_PATH_MAX)
    _check(_c().reaper_cgroup_current(buf, _PATH_MAX), "reaper_cgroup_current")
    return os.fsdecode(buf.value)


def of(pid: int) -> Optional[str]:
    """The directory of the cgroup v2 of the process at ``pid`` (0: this process); None when
    there is no such process."""
    buf = ctypes.create_string_buffer(_PATH_MAX)
    rc = _c().reaper_cgroup_of(int(pid), buf, _PATH_MAX)
    if rc == -errno.ESRCH:
        return None
    _check(rc, f"reaper_cgroup_of {pid}")
    return os.fsdecode(buf.value)


def move(path: str, ident) -> bool:
    """Move the process ``ident`` (pid, start time) names into ``path`` while it is that
    process; False when it is gone or its pid is another process's."""
    rc = _c().reaper_cgroup_move(_b(path), ctypes.byref(_lib.Ident(int(ident[0]), int(ident[1]))))
    if rc == -errno.ESRCH:
        return False
    _check(rc, f"reaper_cgroup_move {path}")
    return True


def move_tree(path: str, ident, found_in=()) -> int:
    """``move``, with every descendant of ``ident`` found in one of the cgroups ``found_in``
    (directories, not the cgroups below them): what it forked before it was moved goes with
    it. How many processes were moved (0: ``ident`` is gone)."""
    dirs = [os.fsencode(d) for d in found_in if d]
    arr = (ctypes.c_char_p * max(1, len(dirs)))(*dirs)
    rc = _c().reaper_cgroup_move_tree(_b(path), ctypes.byref(_lib.Ident(int(ident[0]), int(ident[1]))), arr,
                                      len(dirs))
    if rc == -errno.ESRCH:
        return 0
    return _check(rc, f"reaper_cgroup_move_tree {path}")


def usable(directory: Optional[str] = None) -> int:
    """0 when cgroups can be made below ``directory`` (default: our own cgroup) and processes
    moved there; else the errno saying why not (never raises)."""
    rc = _c().reaper_cgroup_usable(_b(directory))
    return -rc if rc < 0 else 0


def why_not(err: int, directory: str) -> str:
    """Words for an errno from ``usable``."""
    if err == errno.EROFS:
        return f"the cgroup2 mount at {directory} is read-only"
    if err in (errno.EACCES, errno.EPERM):
        return f"no permission to make cgroups below {directory}"
    if err == errno.ENOENT:
        return "no cgroup2 mount shows this process's cgroup"
    return f"{directory}: {os.strerror(err)}"


def create(parent: Optional[str], name: str) -> str:
    """Make the cgroup ``name`` below ``parent`` (None: our own cgroup); its directory."""
    buf = ctypes.create_string_buffer(_PATH_MAX)
    _check(_c().reaper_cgroup_create(_b(parent), _b(name), buf, _PATH_MAX), f"reaper_cgroup_create {name}")
    return os.fsdecode(buf.value)


def enter(path: str) -> str:
    """Move this whole process (every thread) into ``path``; where it was before."""
    buf = ctypes.create_string_buffer(_PATH_MAX)
    _check(_c().reaper_cgroup_enter(_b(path), buf, _PATH_MAX), f"reaper_cgroup_enter {path}")
    return os.fsdecode(buf.value)


def join(path: str) -> None:
    """``enter`` without reading where this process was first (a forked child's move)."""
    _check(_c().reaper_cgroup_enter(_b(path), None, 0), f"reaper_cgroup_enter {path}")


def populated(path: str) -> bool:
    return _check(_c().reaper_cgroup_populated(_b(path)), f"reaper_cgroup_populated {path}") == 1


def kill(path: str) -> None:
    """SIGKILL everything in ``path`` and below (EDEADLK while we are inside it)."""
    _check(_c().reaper_cgroup_kill(_b(path)), f"reaper_cgroup_kill {path}")


def wait(path: str, timeout: float) -> bool:
    """Wait up to ``timeout`` s for ``path`` to be empty; whether it is."""
    rc = _c().reaper_cgroup_wait(_b(path), float(timeout))
    if rc == -errno.ETIMEDOUT:
        return False
    _check(rc, f"reaper_cgroup_wait {path}")
    return True


def remove(path: str) -> None:
    """Remove ``path`` and every cgroup below it (EBUSY while one is populated)."""
    _check(_c().reaper_cgroup_remove(_b(path)), f"reaper_cgroup_remove {path}")


def release(path: str) -> int:
    """Move what still lives in ``path`` and below up to its parent, then remove it; how many
    processes were moved."""
    return _check(_c().reaper_cgroup_release(_b(path)), f"reaper_cgroup_release {path}")
