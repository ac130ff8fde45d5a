# SPDX-License-Identifier: MIT
"""What a fork made while a session is active needs beyond the fork itself: in the child, the
session's locks free, its SIGTERM handler not run, the site and scope it was forked for made
its own; and, once pytest's exit check has begun, no fork from another thread.

Nearly all of it costs nothing at the fork. Each Python function run around a fork writes
pages (its objects, its code's counters) that one of the two processes then copies, some 40
a fork for a Python at-fork handler, and a process-heavy suite forks in every test. So: the
locks are reset by their own C methods; the SIGTERM handler is kept for pytest's process by
libreaper (reaper.keep_handler), so a child that receives SIGTERM ends as at SIGTERM's default
without a step of its own; a child's site is read at its exec and its records are made its own
at its first spawn, from what its fork left in place."""

from __future__ import annotations

import os

from .. import _site, _siteenv, cgroup

_getpid = os.getpid

# The sites of the session's spawns. A module's, not HOST's: the fork handlers are registered
# for the interpreter's life, so HOST lives until the interpreter's very end, past the point
# where Python 3.9 can still finalize an open file (the registry's log) without crashing.
SITES = _site.Registry()


class _AtFork:
    """The fork handling of HOST (host._HostChildren), over its state and SITES'."""

    def register_at_fork(self) -> None:
        """The session's locks free in every child, whoever forks it: a lock another thread held
        at the fork stays held there, its owner gone (C methods: no Python code runs). No region
        of these locks forks, so the forking thread holds none of them."""
        for lock in (self.lock, SITES.lock, self.moving_lock):
            os.register_at_fork(after_in_child=lock._at_fork_reinit)

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

    def forked(self) -> None:
        """In a child forked while a session was active, at its first spawn: none of the
        records are its children, and its own reach the session at once (it may exit before
        any look at them). The parent's records are kept, not freed: freeing them writes to
        the page of every entry, each one a page the child copies."""
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
