# SPDX-License-Identifier: MIT
"""The children this process starts while a session is active (HOST), and the fork paths
that put each one in its scope's cgroup with its scope's markers."""

from __future__ import annotations

import collections
import contextlib
import errno
import os
import sys
import threading
import time
from typing import Dict, List, Optional

from .. import cgroup, kin
from .atfork import SITES, _AtFork
from .options import MARKER
from .scope import FORCED, THREAD, _Scope, _env_for, _objects_of

# A child's start time (/proc/PID/stat field 22) is the boot-time clock at its fork, in clock
# ticks: read before and after the fork, the two agree but when a tick ended meanwhile. Reading
# /proc/PID/stat of a child just started costs some 80 us (it is still being set up on another
# CPU), and a forked child shares this process's pages while the read's objects are made.
try:
    _BOOTTIME = time.CLOCK_BOOTTIME
    _NS_PER_TICK = 10**9 // os.sysconf("SC_CLK_TCK")
except (AttributeError, ValueError, OSError):
    _BOOTTIME, _NS_PER_TICK = None, 1


_clock = time.clock_gettime_ns
_get_ident = threading.get_ident
_getpid = os.getpid


def _tick() -> int:
    return _clock(_BOOTTIME) // _NS_PER_TICK if _BOOTTIME is not None else -1


class _HostChildren(_AtFork):
    """Every child this process starts while a session is active, as (pid -> start time,
    the marker of the scope it was started for): their exit statuses belong to whoever
    started them. A child started by a thread of another scope than the main thread's (a
    worker a session-scoped multiprocessing.Pool replaces while a test runs) is moved into its
    scope's cgroup and given its scope's marker, so no test is blamed for it."""

    def __init__(self):
        # reentrant: a signal handler that spawns may run while this thread holds it (a
        # child's start time is read under it)
        self.lock = threading.RLock()
        self._children: Dict[int, tuple] = {}
        # children started since the last look at _children, entered at that look: right
        # after a fork the child shares this process's pages, and each one written meanwhile
        # is copied (None: entered at once, in a forked child, whose records must reach the
        # session before it exits)
        self.pending: Optional[collections.deque] = collections.deque()
        self.parents: tuple = ()  # in a forked child: the parent's records (see forked)
        self.pid = 0  # the process whose records these are (another: a forked child's first spawn)
        self.prune_at = 256  # the records of children gone are dropped when there are more
        self.users = 0
        self.saved: List[tuple] = []
        self.main: Optional[_Scope] = None  # the scope of the thread running the tests
        self.runner: Optional[int] = None  # that thread's ident
        self.local = threading.local()  # .forking: the scope of a fork under way in this thread
        # thread ident -> scope: the threads already running when the session began (its own)
        self.earlier: Dict[int, _Scope] = {}
        self.moving_lock = threading.RLock()  # the Condition's, taken alone where no wait is due
        self.moving = threading.Condition(self.moving_lock)
        self.waiting = 0  # threads waiting on moving
        self.inflight = 0  # forks under way whose child must be moved
        self.inheriting = 0  # forks under way whose child is where pytest is (here), as it must be
        self.here: Optional[str] = None  # the cgroup pytest is in, when it moved itself
        self.closed = False  # forks for another scope wait (a check by descent is listing)
        self.exit_hold = False  # forks the interception does not see wait at pytest's exit
        self.final = None  # the thread running pytest's exit check: the others' spawns wait
        self.term_kept = None  # the session's SIGTERM handler, while reaper.keep_handler keeps it
        self.exited = threading.Event()  # ... for it to end
        # id -> (object, scope, fixture): the values of wider fixtures and their attributes
        self.owned: Dict[int, tuple] = {}
        # multiprocessing's fork server's workers (not children of ours, with the fork
        # server's environment): pid -> (start time, the marker of the scope they were for)
        self.served: Dict[int, tuple] = {}

    def scope_here(self) -> Optional[_Scope]:
        """The scope of what the calling thread starts now: its own (a thread started by a
        wider fixture), else the running test's, unless a method of a wider fixture's object
        is doing it (a session's executor that starts its workers lazily, from a test)."""
        s = FORCED.get() or THREAD.get()
        if s is None and self.earlier:
            s = self.earlier.get(threading.get_ident())
        while s is not None and not s.live:
            s = s.session
        s = s or self.main
        if self.owned and s is not None and s.session is not None and s.marker != s.session.marker:  # a test's
            return self.on_behalf() or s
        return s

    def own(self, value, scope: _Scope, key: int) -> None:
        for obj in _objects_of(value):
            self.owned[id(obj)] = (obj, scope, key)

    def disown(self, key: int) -> None:
        for k in [k for k, v in self.owned.items() if v[2] == key]:
            del self.owned[k]

    def on_behalf(self) -> Optional[_Scope]:
        """The scope of the wider fixture whose object's method is on the calling stack."""
        if not self.owned:
            return None
        f = sys._getframe(2)
        for _ in range(64):
            if f is None:
                break
            code = f.f_code
            if code.co_argcount and code.co_varnames[0] == "self":
                me = f.f_locals.get("self")
                got = self.owned.get(id(me))
                if got is not None and got[0] is me:
                    return got[1]
            f = f.f_back
        return None

    @property
    def children(self) -> Dict[int, tuple]:
        if self.pending:
            self.flush()
        return self._children

    @children.setter
    def children(self, value: Dict[int, tuple]) -> None:
        self._children = value

    def add(self, pid: int, scope: Optional[_Scope] = None, before: int = -1, site=None, now: bool = False) -> None:
        """pid, started by this process for scope at site; before: _tick() before it was
        forked. now: entered at once, else at the next look at children."""
        if pid <= 0:  # the child of a fork (it does nothing here: see atfork), or none
            return
        self.own_process()
        after = _clock(_BOOTTIME) // _NS_PER_TICK if before >= 0 else -1
        entry = (pid, before, after, scope.marker if scope else os.environ.get(MARKER), site)
        pending = self.pending
        # a tick ended during the fork: its start time read now, before its owner has its pid
        # to wait for it (its site is told by identity, and by its frames once it is gone)
        if pending is None or now or after != before:
            with self.lock:
                self._enter(entry)
        else:
            pending.append(entry)

    def flush(self) -> None:
        """The children started since the last look entered."""
        pending = self.pending
        with self.lock:
            while pending:
                try:
                    entry = pending.popleft()
                except IndexError:
                    break
                self._enter(entry)

    def forget_pending(self, marker: str) -> None:
        """The children of marker's scope started since the last look, all gone (collected):
        dropped without being entered, which would make records of no use (each one a few
        objects written, pages the next fork copies). Entries of other scopes stay."""
        pending = self.pending
        if not pending:
            return
        with self.lock:  # no flush meanwhile; what another thread appends stays at the end
            for _ in range(len(pending)):
                entry = pending.popleft()
                if entry[3] != marker:
                    pending.append(entry)

    def _enter(self, entry: tuple) -> None:
        pid, before, after, marker, site = entry
        if before >= 0 and before == after:
            start = before  # no clock tick ended during the fork: the child's start time
        else:
            start = kin.start_time(pid)
            if start is None or (before >= 0 and not before <= start <= after):
                return  # gone (waited for by another thread), or its pid another process's
        self._children[pid] = (start, marker)
        if site is not None and site.spot:
            SITES.record(pid, start, site, marker)

    def settle(self, timeout: float = 30.0) -> None:
        """Wait for the forks under way whose child must be moved out of where this process
        is: a check that lists its test's cgroup after this sees none of them in it."""
        if self.inflight:
            with self.moving_lock:
                self.wait_moving(lambda: self.inflight == 0, timeout)

    def wait_moving(self, predicate, timeout: float) -> bool:
        """With moving_lock held: wait until predicate holds, told by each fork that ends."""
        self.waiting += 1
        try:
            return self.moving.wait_for(predicate, timeout)
        finally:
            self.waiting -= 1

    def no_fork_inheriting(self) -> None:
        """With moving_lock held: wait for the forks under way whose child is born where
        pytest is (pytest must not move, nor its cgroup be read, meanwhile)."""
        if self.inheriting:
            self.wait_moving(lambda: self.inheriting == 0, 30)

    def moved(self) -> None:
        """With moving_lock held: a fork has ended (or the forks may go on); whoever waits
        looks again (no one, most often: the Condition's Python code is left unrun)."""
        if self.waiting:
            self.moving.notify_all()

    @contextlib.contextmanager
    def closed_for_others(self):
        """While a test is checked by descent, which a child of another scope's thread would
        look like until its pid is known: such forks wait, those under way are finished."""
        with self.moving_lock:
            self.closed = True
        try:
            self.settle()
            yield
        finally:
            with self.moving_lock:
                self.closed = False
                self.moved()

    def away(self, scope: Optional[_Scope]) -> bool:
        # the running test's own forks from the thread that runs the tests are where the
        # process is; any other child is put in its place, also when that is where the process
        # is now: the runner moves the process (and changes main) at a test's boundaries while
        # another thread's fork is under way; and the session's, while pytest waits between
        # tests in a test's cgroup kept for the next one
        main = self.main
        return scope is not None and main is not None and \
            (scope is not main or _get_ident() != self.runner or
             (scope.goto is None and scope.cgroup is not None and self.here is not None and self.here != scope.cgroup))

    def hold_at_exit(self, forever: bool = False) -> None:
        """Once pytest's exit check has begun, no other thread starts anything (what it
        started could outlive pytest unchecked): the spawn waits for the check to end, then
        fails with EAGAIN (a thread that a later exit handler joins must not wait forever);
        forever: a fork that cannot be failed from here."""
        final = self.final
        if final is not None and final != threading.get_ident():
            self.exited.wait()
            if forever:
                threading.Event().wait()
            raise BlockingIOError(errno.EAGAIN, "pytest is exiting: nothing more is started")

    def fork(self, fn, pid_of, args, kwargs, env_at=None, scope=None, site=None):
        """fn's spawn for scope (None: the caller's, scope_here's), made at site. The running
        test's own spawn, from the thread running it, calls nothing it can do without: each
        object it touches is a page that the next os.fork makes this process copy."""
        self.own_process()
        if self.final is not None:
            self.hold_at_exit()
        if scope is None:
            scope = self.scope_here()
        if scope is not None:
            if not scope.spawned:
                scope.spawned = True
            if self.away(scope):
                if scope.cgroup is not None and scope is self.main and self.here == scope.cgroup:
                    return self._fork_inherit(fn, pid_of, args, kwargs, env_at, scope, site)
                return self._fork_away(fn, pid_of, args, kwargs, env_at, scope, site)
            # pytest into the test's cgroup, unless it is there (the test's every spawn but its
            # first, and the next test's that takes over the cgroup kept)
            if scope.goto is not None and (scope.cgroup is None or scope.cgroup != self.here):
                scope.enter()
        before = _clock(_BOOTTIME) // _NS_PER_TICK if _BOOTTIME is not None else -1
        result = fn(*args, **kwargs)
        self.add(pid_of(result), scope, before, site)
        return result

    def _fork_inherit(self, fn, pid_of, args, kwargs, env_at, scope, site):
        """A thread of the running test forks while pytest is in the test's cgroup: its child
        is born there; pytest does not move until the fork is done (goto waits for it)."""
        with self.moving_lock:
            here = scope.live and scope is self.main and self.here == scope.cgroup and self.final is None
            if here:
                self.inheriting += 1
        if not here:
            return self._fork_away(fn, pid_of, args, kwargs, env_at, scope, site)
        self.local.forking = scope
        if env_at is not None and len(args) > env_at:
            args = args[:env_at] + (_env_for(args[env_at], scope),) + args[env_at + 1:]
        try:
            before = _tick()
            result = fn(*args, **kwargs)
            pid = pid_of(result)
            if pid == 0:
                self.child_for(scope, inherit=True)
            self.add(pid, scope, before, site)
            return result
        finally:
            self.local.forking = None
            with self.moving_lock:
                self.inheriting -= 1
                self.moved()

    def _fork_away(self, fn, pid_of, args, kwargs, env_at, scope, site):
        with self.moving_lock:
            if self.closed:
                self.wait_moving(lambda: not self.closed, 60)
            final = self.final is not None and self.final != threading.get_ident()
            if not final:
                self.inflight += 1  # the exit check waits for it: final is set under this lock
        if final:
            self.hold_at_exit()
        here = cgroup.of(0) if scope.where() else None
        self.local.forking = scope
        if env_at is not None and len(args) > env_at:
            args = args[:env_at] + (_env_for(args[env_at], scope),) + args[env_at + 1:]
        try:
            before = _tick()
            result = fn(*args, **kwargs)
            pid = pid_of(result)
            if pid == 0:
                self.child_for(scope, inherit=False)
            self.add(pid, scope, before, site, now=True)
            got = self._children.get(pid) if pid > 0 and scope.cgroup else None
            if got:
                # a child that runs no Python code (exec) moves here, with what it forked
                # meanwhile where this process was
                _move_tree(scope.cgroup, (pid, got[0]), {here, cgroup.of(0)} - {scope.cgroup, None})
            return result
        finally:
            self.local.forking = None
            with self.moving_lock:
                self.inflight -= 1
                self.moved()

    def current(self) -> Dict[int, tuple]:
        """The tracked children that are still ours and not waited for; forget the others."""
        self.flush()
        with self.lock:
            if not self._children:
                return {}
            ours = {p.ident for p in kin.children()}
            for pid, (start, _) in list(self._children.items()):
                if (pid, start) not in ours:
                    del self._children[pid]
            return dict(self._children)

    def prune(self) -> None:
        """The records of children gone dropped once they are many (a session's every spawn
        would stay in them, and each look at them reads them all)."""
        if len(self.children) > self.prune_at:
            try:
                self.prune_at = max(256, 2 * len(self.current()))
            except OSError:  # out of descriptors or memory: the next test's end tries again
                pass

    def owns(self, pid: int, start: int) -> bool:
        got = self.children.get(pid)
        return got is not None and got[0] == start

def _move_tree(path: str, ident, found_in) -> None:
    """ident into the cgroup at path, with its descendants still in found_in; a process gone
    meanwhile, or a cgroup that is, is no error."""
    try:
        cgroup.move_tree(path, ident, sorted(found_in))
    except OSError:
        pass


HOST = _HostChildren()
