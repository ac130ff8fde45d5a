# SPDX-License-Identifier: MIT
"""What HOST runs at every os.fork while a session is active (os.register_at_fork): SIGTERM
held back over the fork, and in the child the locks, the SIGTERM handler, the site and the
scope it was forked for made its own. Each object these touch is a page the fork copies."""

from __future__ import annotations

import os
import threading

from .. import _site, cgroup

# signal's own functions, without the wrappers that turn their values into enums: the fork
# handlers call them on every fork, in the parent and in the child, where each conversion of a
# Python handler raises (and catches) a ValueError, and every page a child writes is copied
try:
    from _signal import SIGTERM, SIG_BLOCK, SIG_DFL, SIG_UNBLOCK, getsignal as _getsignal, \
        pthread_sigmask as _sigmask, signal as _setsignal
except ImportError:  # another Python than CPython
    from signal import SIGTERM, SIG_BLOCK, SIG_DFL, SIG_UNBLOCK, getsignal as _getsignal, \
        pthread_sigmask as _sigmask, signal as _setsignal

_TERM = (SIGTERM,)

# The sites of the session's spawns. A module's, not HOST's: the fork handlers are registered
# for the interpreter's life, so HOST lives until the interpreter's very end, past the point
# where Python 3.9 can still finalize an open file (the registry's log) without crashing.
SITES = _site.Registry()


class _AtFork:
    """The fork handlers of HOST (host._HostChildren), over its state and SITES'."""

    def before_fork(self) -> None:
        # (runs at every os.fork: each object it touches is a page copied after the fork,
        # each function called too: written out in place)
        local = self.local
        if self.final is not None and getattr(local, "forking", None) is None:
            self.hold_at_exit(forever=True)  # a fork the interception did not see
        term = self.term
        if term is not None and _getsignal(SIGTERM) is term:
            local.held = SIGTERM not in _sigmask(SIG_BLOCK, _TERM)
        elif getattr(local, "held", False):
            local.held = False

    def release_sigterm(self) -> None:
        local = self.local
        if getattr(local, "held", False):
            local.held = False
            _sigmask(SIG_UNBLOCK, _TERM)

    def after_fork_child(self) -> None:
        # in the child of os.fork/forkpty, before it returns to Python code: the marker and
        # cgroup of the scope it was started for, before it can start anything itself. Only
        # the forking thread goes on here: a lock another thread held stays held unless new
        # (one that is free is kept). Each object made or written here, and each function
        # called (its reference count), is a page the child copies: written out in place.
        # held or free by acquiring it, not by locked(): before 3.13 a lock a thread has just
        # taken (its wait ended) says it is free until that thread has the GIL back
        lock = self.lock
        if lock.acquire(False):
            lock.release()
        else:
            self.lock = threading.RLock()
        lock = SITES.lock
        if lock.acquire(False):
            lock.release()
        else:
            SITES.lock = threading.RLock()
        moving = self.moving
        if moving.acquire(False):
            moving.release()
        else:
            self.moving = threading.Condition()
        # the session's SIGTERM handler is pytest's: a child that inherited it would end by
        # SIGTERM only once its Python code runs again, which a wait that began as the signal
        # came (a Pool worker's wait for its queue) never does. SIGTERM was held back over the
        # fork (before_fork): one sent meanwhile is delivered now, at its default.
        term = self.term
        if term is not None and _getsignal(SIGTERM) is term:
            try:
                _setsignal(SIGTERM, SIG_DFL)
            except ValueError:  # not the child's main thread: the handler still ends it
                pass
        local = self.local
        if getattr(local, "held", False):
            local.held = False
            _sigmask(SIG_UNBLOCK, _TERM)
        # what it execs carries the site of its fork: the site, made before the fork, is set in
        # its environment by the exec (spawn.exec_with_site), not here, where each page written
        # is copied and most such children never exec. What C code starts from it (ctypes'
        # system()) carries none: once this child is gone, such a process is found, not named
        # (the site set here in the C environment alone costs about half the pages this saves)
        sites = SITES.local
        site = getattr(sites, "site", None)
        if site is not None and self.users:
            self.exec_site = site if getattr(sites, "child_env", None) is not None else None
            sites.site = sites.child_env = None
        s = getattr(self.local, "forking", None)
        if s is None or not self.users:
            return
        self.local.forking = None
        self.main = s
        for name, value in s.env().items():
            os.environ[name] = value
        if s.cgroup and not getattr(self.local, "inherit", False):
            try:
                cgroup.join(s.cgroup)
            except OSError:  # gone (the test ended meanwhile): where it was forked
                pass
