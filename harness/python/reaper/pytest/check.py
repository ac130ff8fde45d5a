# SPDX-License-Identifier: MIT
"""The check of one test: its scope from its first function fixture to its last teardown,
where its processes are looked for, and the verdict."""

from __future__ import annotations

import functools
import gc
import os
import time
import warnings
from typing import Dict, List, Optional

import pytest

from .. import kin
from .cgroups import _read
from .host import HOST, SITES
from .mp import _end_open_pools, _served
from .quick import _QuickEnd
from .options import MARKER, MAX_SECONDS, ReaperIncompleteWarning, _seconds
from .reports import FOUND, _TeardownError, _holdings_lines, _leak_summary, _record, _site_of
from .scope import THREAD, _Scope, _swap_env

#: how many pids given out since the last origin still let a test's check use it (see begin)
ORIGIN_REUSE = 128  # (libreaper reads a window of up to 256 pids one by one)


def _globs(value):
    """(the globs, None) of a marker's allow value, or ((), value) when it is none: a bad value
    must not stop the cleanup; the test fails naming it once its processes are reaped."""
    globs = (value,) if isinstance(value, str) else () if value is None else value
    try:
        globs = tuple(globs)
    except TypeError:
        return (), value
    return (globs, None) if all(isinstance(g, str) for g in globs) else ((), value)


class Checks(_QuickEnd):
    """The session's hooks per test: its scope begins before its first function fixture and
    its check runs once they are all torn down."""

    # -- per test -----------------------------------------------------------------------
    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        # A wider fixture outlives the test that first asked for it: its processes (and what
        # the threads it starts start later) are the session's, in the session's cgroup and with
        # the session's marker, not the test's; they are reaped when the session ends.
        if fixturedef.scope == "function":
            if self.test is None:  # the test's first function fixture: it begins here
                self._begin(request.node)
            yield
            return
        scope = _Scope(self.shared_marker, f"{fixturedef.argname} ({fixturedef.scope}-scoped fixture)",
                       self.scope.cgroup, self.scope)
        before, main = _swap_env(scope.env()), HOST.main
        where = self.cgroups.where if self.cgroups else None
        if where and where == self.cgroups.spare:
            where = None  # no test's yet: the next one that starts something moves in
            self.cgroups.goto(self.cgroups.session)
        HOST.main = scope
        held = THREAD.get()
        THREAD.set(scope)
        since = self.reaper.now_ticks()
        try:
            if where:
                self.cgroups.goto(self.cgroups.session)
            outcome = yield
            if outcome.excinfo is None:
                HOST.own(outcome.get_result(), scope, id(fixturedef))
        finally:
            self.wider.append((since, self.reaper.now_ticks()))
            HOST.main = main
            THREAD.set(held)
            _swap_env(before)
            if where:
                self.cgroups.goto(where)

    def pytest_fixture_post_finalizer(self, fixturedef, request):
        if fixturedef.scope != "function":
            HOST.disown(id(fixturedef))

    def begin(self, item) -> Dict[str, Optional[str]]:
        self.count += 1
        marker = f"{self.prefix}-{self.count}"
        maker = goto = None
        if self.cgroups:
            maker, goto = functools.partial(self._test_cgroup, self.count), self.cgroups.goto
        self.cgroup_error = None
        self.test = _Scope(marker, item.nodeid, None, self.scope, maker, goto)
        SITES.files[marker] = str(item.path)
        self.last_pid = kin.last_pid()
        if self.cgroups:
            spare, alone = self.cgroups.spare, False
            if spare:
                alone = self.cgroups.only_pytest(spare)  # pytest in it, and nothing else
                if not alone:
                    # something started between tests (below the interception) is in it: the
                    # session's, with what the session's cgroup holds
                    self.cgroups.spare = None
                    self.cgroups.goto(self.cgroups.session)
                    left = self.cgroups.drop(spare)
                    if left:
                        self.notes.append(left)
            self.members_file = os.path.join(self.cgroups.where, "cgroup.procs")
            self.members = self.cgroups.alone if alone else _read(self.members_file)
        # An earlier origin is as good as a new one for the marker finder, which takes only the
        # processes with this test's marker (none can be older than the test): its window holds
        # the few pids given out since it was taken too, a few reads more for a check that runs
        # (reading one costs some 40 us, /proc/stat among it, and most tests are not reaped)
        if self.origin is None or self.last_pid == -1 or \
                not 0 <= self.last_pid - self.origin.last_pid <= ORIGIN_REUSE:
            self.origin = self.reaper.origin_now()
        self.since = self.reaper.now_ticks()
        # one set up just before, within the same clock tick, started its processes "since"
        self.wider = [w for w in self.wider if w[1] >= self.since]
        HOST.main = self.test
        self.thread_before = THREAD.get()
        THREAD.set(self.test)
        return _swap_env(self.test.env())

    def _test_cgroup(self, n: int) -> Optional[str]:
        """The running test's cgroup, made at its first spawn; None when it cannot be (the
        test is checked by its marker and by descent, and warned about)."""
        spare, self.cgroups.spare = self.cgroups.spare, None
        if spare:
            return spare
        try:
            return self.cgroups.cg.create(self.cgroups.session, f"test-{n}")
        except OSError as e:
            self.cgroup_error = e
            return None

    def end(self, item, before: Dict[str, Optional[str]]) -> None:
        test, self.test = self.test, None
        test.live = False
        test.close()
        HOST.main = self.scope
        THREAD.set(self.thread_before)
        _swap_env(before)
        if self.cgroup_error is not None:
            warnings.warn(ReaperIncompleteWarning(f"reaper: no cgroup for this test ({self.cgroup_error}); "
                                                  "checked by its marker and by descent"))
        # what is in the test's cgroup besides pytest is the test's: pytest moves out before
        # it is reaped; when nothing is, pytest stays and the cgroup serves the next test. Read
        # once the children other threads forked for the test are in it (nothing is forked for
        # it any more: it has ended), for the check below too.
        reuse, members = False, None
        if test.cgroup:
            HOST.settle()
            members = self.cgroups.members(test.cgroup)
            reuse = members == self.cgroups.alone and self.cgroups.where == test.cgroup
        try:
            if test.cgroup and not reuse:
                self.cgroups.goto(self.cgroups.session)  # out of it before it is reaped
            if self._quiet(test):
                self._check(item, test, [], False)
                return
            HOST.settle()  # a child forked for it by another thread is where it belongs
            left = self._left_something(test, members)
            if left and reuse:
                reuse = False
                self.cgroups.goto(self.cgroups.session)
            if left and self.gc:
                gc.collect()  # finalizers may need the threads held back below
            if not left and item.get_closest_marker("reaper") is None:
                return  # nothing to check: other threads' forks need not wait
            pools = _end_open_pools(test.marker) if left else []  # its threads may fork: not held back yet
            with HOST.closed_for_others():
                self._check(item, test, pools, left)
        finally:
            HOST.flush()  # its children's sites recorded, to be forgotten with the others
            HOST.prune()
            SITES.forget(test.marker)
            if reuse:
                self.cgroups.spare = test.cgroup
            elif test.cgroup:
                left = self.cgroups.drop(test.cgroup)
                if left:
                    warnings.warn(ReaperIncompleteWarning(f"reaper: {left}"))

    def _finders(self, test: _Scope, host) -> list:
        marker = test.marker
        # children forked for another scope (a wider fixture, its threads) are not the test's;
        # with a cgroup, descent still finds a child forked without exec that left it
        others = [pid for pid, (_, owner) in host.items() if owner != marker]
        others += self._wider_forks(test, others, host)
        finders = [self.reaper.with_env(MARKER, marker, origin=self.origin),
                   self.reaper.descendants(since=self.since, unless_env=(MARKER, marker), skip=others)]
        if test.cgroup:
            finders.append(self.reaper.with_cgroup(test.cgroup))
        return finders + _served(marker)

    def _wider_forks(self, test: _Scope, others: list, host) -> List[int]:
        """What a wider fixture set up during the test (or within its first clock tick) forked
        without exec and let go (a daemon: adopted by pytest, with pytest's own environment):
        started within that setup, no child of ours, no marker of the test's. Descent would
        take it for the test's."""
        if not self.wider:
            return []
        try:
            found = self.reaper.scan(self.reaper.descendants(since=self.since, unless_env=(MARKER, test.marker),
                                                             skip=others)).processes
        except OSError:
            return []
        entry = f"{MARKER}={test.marker}".encode()
        return [p.pid for p in found if p.pid not in host and
                any(a <= p.start_time <= b for a, b in self.wider) and
                entry not in (kin.environ(p.pid) or b"").split(b"\0")]

    def _left_something(self, test: _Scope, members: Optional[bytes]) -> bool:
        """Whether a process of the test's is still running: if none is, there is nothing to
        wait for, collect garbage for (a full collection costs about 10 ms on pytest's heap)
        nor reap. One scan: the pids given out since the test began, pytest's children."""
        if self._plainly_over(test, members):
            HOST.forget_pending(test.marker)  # every child it started is gone
            return False
        # A scan lists its candidates, then reads each: one of them may fork and exit in
        # between (a daemon's middle process), its child listed by nothing. With a cgroup,
        # that child is in it, read after the scan; without one, it took a pid after the scan
        # began: the scan is made again (a few times, then the full check decides).
        for _ in range(3):
            last = kin.last_pid()
            try:
                if any(p.fate != "exited" and p.state != "Z"
                       for p in self.reaper.scan(*self._finders(test, HOST.current())).processes):
                    return True
            except OSError:
                return True
            if test.cgroup:
                # pytest itself may sit in it (a clean test's cgroup is kept for the next)
                members = _read(os.path.join(test.cgroup, "cgroup.procs"))
                return members is None or any(m != b"%d" % os.getpid() for m in members.split())
            if last != -1 and kin.last_pid() == last:
                return False
        return True

    def _check(self, item, test: _Scope, pools: List[str], left: bool = True) -> None:
        mark = item.get_closest_marker("reaper")
        kw = dict(mark.kwargs) if mark else {}
        if not left and not kw:
            return
        host = HOST.current()
        finders = self._finders(test, host)
        if kw.get("check", True) is False:
            # still cleaned up, never reported
            if left:
                self._reap(finders, timeout=self.timeout, grace=self.grace, host_children=host)
            return
        # a bad timeout of the marker must not stop the cleanup: the test's processes are
        # reaped with the session's timeout, then the test fails naming the value
        bad = kw.get("timeout")
        try:
            timeout = self.timeout if bad is None else _seconds(bad, "")
            bad = None
        except pytest.UsageError:
            timeout = self.timeout
        allow, bad_allow = _globs(kw.get("allow", ()))
        started = time.monotonic()
        rep = self._reap(finders, timeout=timeout, grace=self.grace, allow=allow,
                         host_children=host, holdings=True) if left else self.reaper.ReapReport((), False, 0.0, ())
        found = [p for p in rep.processes if p.leaked or (p.allowed and p.fate != "exited")]
        if found:
            item.stash[FOUND] = [_record(p, item.nodeid) for p in found]
        leaks = rep.leaks
        if pools:
            pools = [f"reaper: {item.nodeid} left a multiprocessing pool open (workers {', '.join(pools)}); "
                     "it was terminated (its workers killed instead could die holding its queue's lock, "
                     "and its exit-time finalizer would wait for that lock)"]
        if leaks and not self.running:
            self.late_leaks.extend(_record(p, item.nodeid) for p in leaks)
            self.records.extend(item.stash.get(FOUND, ()))
            item.stash[FOUND] = []
            return
        if leaks:
            waited = time.monotonic() - started
            lines = [f"reaper: {item.nodeid} left {len(leaks)} process{'es' if len(leaks) > 1 else ''} "
                     f"running; stopped after {waited:.1f} s (timeout {timeout:g} s, grace {self.grace:g} s):"]
            for p in leaks:
                lines.append(f"  {p.pid}: {p.cmdline[:200]}")
                site = _site_of(p)
                if site is not None:
                    lines.append(f"      started at {site.text()}")
                owner = "; a child of pytest: its exit status is left for its owner" if p.host_child else ""
                lines.append(f"      {p.fate}, state {p.state}, age {p.age:.1f} s, cwd {p.cwd or '?'}, "
                             f"ancestry {p.ancestry or '?'}{owner}")
                lines.extend(_holdings_lines(p))
            lines.append("(allow one with @pytest.mark.reaper(allow=['glob']), or wait for it in the test)")
            lines.extend(pools)
            if bad is not None:
                lines.append(f"(@pytest.mark.reaper(timeout={bad!r}) is not a number of seconds >= 0 and "
                             f"<= {MAX_SECONDS:g}: {timeout:g} s was used)")
            if bad_allow is not None:
                lines.append(f"(@pytest.mark.reaper(allow={bad_allow!r}) is not a glob or a list of globs: "
                             "nothing was allowed)")
            raise _TeardownError("\n".join(lines), _leak_summary(leaks))
        if bad is not None:
            raise _TeardownError(f"reaper: @pytest.mark.reaper(timeout={bad!r}): the timeout must be >= 0 and <= "
                                 f"{MAX_SECONDS:g} (seconds); the test's processes were reaped with {timeout:g} s")
        if bad_allow is not None:
            raise _TeardownError(f"reaper: @pytest.mark.reaper(allow={bad_allow!r}) is not a glob or a list of globs")
        if pools:
            raise _TeardownError(pools[0], "left a multiprocessing pool open")

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item):
        if self.test is None:  # a test without function fixtures
            self._begin(item)

    def _begin(self, item) -> None:
        """The test begins before its first function fixture is set up; its check is a
        finalizer of its own, registered before any of theirs, so it runs once they are all
        torn down (the test's own fixtures have stopped what they started) and before wider
        fixtures are. No fixture of the plugin's: one per test costs as much as the check."""
        before = self.begin(item)
        item.addfinalizer(functools.partial(self.end, item, before))
