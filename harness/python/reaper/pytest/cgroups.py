# SPDX-License-Identifier: MIT
"""The session's cgroup and one per test below it, and whether the tests get them."""

from __future__ import annotations

import errno
import os
from typing import Optional

import pytest

from .host import HOST
from .options import CGROUP_MODES

def _read(path: str) -> Optional[bytes]:
    """A small file of cgroupfs (a cgroup.procs), whole; None if it cannot be read."""
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


class _Cgroups:
    """The session's cgroup (wider fixtures, hooks, whatever runs between tests) and one below
    it per test. pytest moves itself (the whole process) into the running test's cgroup for the
    test's function fixtures and call, into the session's while wider fixtures are set up, and
    out of a test's before it reaps it: what stays in a test's cgroup is what the test left. A
    test's cgroup that holds only pytest at its end is kept (spare) and pytest stays there
    until the next test that starts something takes it over."""

    def __init__(self, own: str, prefix: str):
        from .. import cgroup
        self.cg = cgroup
        self.own = own
        self.session = cgroup.create(own, f"reaper-pytest-{prefix}")
        self.where = own
        # a test's cgroup that held only pytest when its test ended: pytest stays in it and the
        # next test that starts something takes it, so that a test leaving nothing costs no move
        # (each move waits for an RCU grace period: milliseconds)
        self.spare: Optional[str] = None
        self.alone = f"{os.getpid()}\n".encode()
        try:
            self.goto(self.session)
        except BaseException:
            self.drop(self.session)
            raise

    def goto(self, path: str) -> None:
        if path != self.where:
            with HOST.moving_lock:  # not while a fork that counts on where pytest is is under way
                HOST.no_fork_inheriting()
                self.cg.enter(path)
                self.where = HOST.here = path

    def only_pytest(self, path: str) -> bool:
        """Whether nothing but pytest is in path (no fork that counts on where pytest is under
        way): what is in it from now on was started afterwards."""
        with HOST.moving_lock:
            HOST.no_fork_inheriting()
            return self.where == path and _read(os.path.join(path, "cgroup.procs")) == self.alone

    @staticmethod
    def members(path: str) -> Optional[bytes]:
        """What is in path (its cgroup.procs; None: it cannot be read), read once no fork that
        counts on where pytest is is under way."""
        with HOST.moving_lock:
            HOST.no_fork_inheriting()
            return _read(os.path.join(path, "cgroup.procs"))

    @staticmethod
    def drop(path: str) -> Optional[str]:
        """Remove path (a reaped cgroup); what it still holds (unkillable) moves up a level.
        Never raises: a sentence when something stayed."""
        from .. import cgroup
        try:
            cgroup.remove(path)
            return None
        except OSError as e:
            if e.errno != errno.EBUSY:
                return f"cannot remove the cgroup {path}: {e.strerror}"
        try:
            n = cgroup.release(path)
            return f"{n} process{'es' if n != 1 else ''} still in {path} moved to its parent cgroup"
        except OSError as e:
            return f"cannot release the cgroup {path}: {e.strerror}"

    def close(self, timeout: float) -> Optional[str]:
        """Last resort (the session ended without its check): back where pytest was, the
        session's cgroup ended and removed."""
        try:
            self.goto(self.own)
        except OSError:
            pass
        if not os.path.isdir(self.session):
            return None
        try:
            self.cg.kill(self.session)
            self.cg.wait(self.session, timeout)
        except OSError:
            pass
        return self.drop(self.session)


def _tracking(config, prefix: str):
    """(cgroup tracking or None, the header's words for it)."""
    mode = config.getoption("reaper_cgroup") or config.getini("reaper_cgroup") or "auto"
    if mode not in CGROUP_MODES:
        raise pytest.UsageError(f"the reaper_cgroup ini value must be one of {', '.join(CGROUP_MODES)}, "
                                f"not {mode!r}")
    if mode == "off":
        return None, "proc (markers and descent; --reaper-cgroup off)"
    from .. import cgroup
    import reaper
    try:
        own = cgroup.current()
        err = cgroup.usable(own)
    except reaper.ReaperError as e:
        own, err = "?", e.errno
    if not err and config.pluginmanager.has_plugin("dsession"):
        # an xdist controller runs no test: each worker makes its own cgroups
        return None, "cgroup (each xdist worker's own)"
    if not err:
        try:
            cg = _Cgroups(own, prefix)
            return cg, f"cgroup (one per test below {cg.session})"
        except reaper.ReaperError as e:
            err = e.errno
    why = cgroup.why_not(err, own)
    if mode == "on":
        raise pytest.UsageError(f"--reaper-cgroup on: the tests cannot have cgroups: {why}")
    return None, f"proc (markers and descent: {why})"
