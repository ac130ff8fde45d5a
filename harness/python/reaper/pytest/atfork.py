# SPDX-License-Identifier: MIT
"""What a fork made while a session is active needs beyond the fork itself: in the child, the
session's locks free, its SIGTERM handler not run, the site and scope it was forked for made
its own; and, once pytest's exit check has begun, no fork from another thread.

None of it runs at the fork. Each Python function run around a fork writes pages (its
objects, its code's counters) that one of the two processes then copies, some 40 a fork for a
Python at-fork handler, and a process-heavy suite forks in every test. So: the SIGTERM handler
is kept for pytest's process by libreaper (reaper.keep_handler), and a child that receives
SIGTERM ends as at SIGTERM's default without a step of its own; a child's locks and records
are made its own at its first spawn, and its site is read at its exec, from what its fork
left in place."""

from __future__ import annotations

import os

from .. import _site, _siteenv, cgroup
from .scope import _MAKING

_getpid = os.getpid

# The sites of the session's spawns. A module's, not HOST's: the fork handlers are registered
# for the interpreter's life, so HOST lives until the interpreter's very end, past the point
# where Python 3.9 can still finalize an open file (the registry's log) without crashing.
SITES = _site.Registry()


class _AtFork:
    """The fork handling of HOST (host._HostChildren), over its state and SITES'."""

    def hold_forks_at_exit(self) -> None:
        """pytest's exit check begins: a fork the interception does not see (os.fork taken
        before the session, posix.fork) from another thread waits for good, as the
        interception's own spawns do (registered once, this late: see above)."""
        if not self.exit_hold:
            self.exit_hold = True
            os.register_at_fork(before=self._fork_at_exit)

    def _fork_at_exit(self) -> None:
        if self.final is not None and getattr(self.local, "forking", None) is None:
            self.hold_at_exit(forever=True)

    def own_process(self) -> None:
        """First thing of every interception path that takes the session's locks: in a child
        forked while a session was active, they and the records are made its own (forked)."""
        if self.pid != _getpid() and self.users:
            self.forked()

    def forked(self) -> None:
        """In a child forked while a session was active, at its first spawn: a lock another
        thread held at the fork is free (its owner is not in the child), one the forking thread
        held stays its own (a signal handler that forked inside the session's bookkeeping
        returns into it); the running test's cgroup is not its to make or enter; none of the
        records are its children, and its own reach the session
        at once (it may exit before any look at them). The parent's records are kept, not
        freed: freeing them writes to the page of every entry, each one a page the child
        copies. Held or free is told by acquiring: before 3.13 a lock a thread has just taken
        (its wait ended) says it is free until that thread has the GIL back."""
        for lock in (self.lock, SITES.lock, self.moving_lock, _MAKING):
            if lock.acquire(False):
                lock.release()
            else:
                lock._at_fork_reinit()
        if self.main is not None:
            # its cgroup is made, and pytest moved into it, by pytest alone: a child that
            # made it would take it from pytest (and moving would move the child)
            self.main.close()
        self.parents = (self._children, self.pending)
        self._children = {}
        self.pending = None
        self.pid = _getpid()

    def exec_site(self):
        """The site a program exec'd now carries: in a child the interception forked without
        exec, the site of its fork (its forking thread's last), set there before the fork;
        None in pytest's own process, or when the site names nothing and no ancestor's is
        in the environment to be replaced."""
        site = getattr(SITES.local, "fork_site", None)
        if site is None or not self.users or _getpid() == SITES.pid:
            return None
        return site if site.spot or _siteenv.carried() else None

    def child_for(self, scope, inherit: bool) -> None:
        """In the child of a fork another thread than the running test's made for scope: its
        marker, and its cgroup (unless it was born there, inherit), before it can start
        anything itself."""
        if not self.users:
            return
        self.main = scope
        for name, value in scope.env().items():
            os.environ[name] = value
        if scope.cgroup and not inherit:
            try:
                cgroup.join(scope.cgroup)
            except OSError:  # gone (the test ended meanwhile): where it was forked
                pass
