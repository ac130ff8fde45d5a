# SPDX-License-Identifier: MIT
"""Whether a test's end may skip the scan: what a read or two tells of a test that left
nothing (most tests), before the scan that reads every process started since it began."""

from __future__ import annotations

import os
from typing import Optional

from .. import kin
from .cgroups import _read
from .host import HOST
from .mp import _served
from .options import MARKER
from .scope import _Scope


class _QuickEnd:
    """The reads of a test's end that stand in for a scan (Checks: the session's checks,
    with the pids and the clock read at the test's beginning)."""

    def _quiet(self, test: _Scope) -> bool:
        """Whether nothing of the test's can be there, at the cost of a read or two: it started
        nothing through the interception, and no pid was given out since it began, or (pids
        move on a busy host) nothing new is in pytest's cgroup (with cgroups: what C code
        starts below the interception, and everything that descends from it, stays there) and
        among pytest's children (without cgroups pytest adopts the orphans of what it started)."""
        if test.spawned or test.cgroup is not None:
            return False
        last = kin.last_pid()
        if last == -1 or self.last_pid == -1:
            return False
        if last == self.last_pid:
            return True
        if (last - self.last_pid) % self.pid_max > self.pid_max // 2:
            return False  # so many given out that a pid may have been given out twice
        if self.cgroups and (self.members is None or _read(self.members_file) != self.members):
            return False
        return not any(p.pid not in HOST.children and p.start_time >= self.since for p in kin.children())

    def _plainly_over(self, test: _Scope, members: Optional[bytes]) -> bool:
        """Whether a test that started something has nothing left, at the cost of a read or
        two instead of a scan (a scan reads the environment of every process started since
        the test began, the host's too): none of the fork server's workers is its, with a
        cgroup nothing but pytest is in the test's (members: what it held at the test's end),
        without one no child of pytest's started since it began, and every process started
        since it began is gone or plainly another's (_none_since).
        Markers cross what descent and cgroups track: a process a wider fixture's server
        started with the test's environment, or one that left the test's cgroup and, without
        a subreaper, pytest's tree."""
        if _served(test.marker):
            return False
        if self.cgroups:
            if not test.cgroup or members not in (b"", self.cgroups.alone):
                return False
        elif not self.adopted:
            return False  # without cgroups, an orphan is found by its marker only
        try:
            # without cgroups, what the test left is below pytest: its children are listed
            # (pids given out since the test began are not all of them when a test moves
            # ns_last_pid back); with cgroups, what it left is in the test's, read above
            if not self.cgroups and any(p.start_time >= self.since for p in kin.children()):
                return False
            return self._none_since(test)
        except OSError:
            return False

    def _none_since(self, test: _Scope) -> bool:
        """Whether every pid given out since the test began is gone, a zombie that is not
        pytest's child, a thread of pytest's, or a process that neither carries the test's
        marker nor descends from pytest (the host's): what the scan's finders would take (what
        the test started and its descendants are in pytest's tree, or, with pytest adopting
        orphans, its children). The environments are read last, and only those of the host's
        processes: reading one that is in the middle of an exec waits for the exec
        (milliseconds on a busy host), which no other fact read here does."""
        last = kin.last_pid()
        if last == -1 or self.last_pid == -1 or last < self.last_pid or last - self.last_pid > 4096:
            return False  # the pids wrapped, or so many were given out that the scan costs no more
        since = self.since
        me = os.getpid()
        live = []
        for pid in range(self.last_pid + 1, last + 1):
            st = kin.pstat(pid)
            if st is None or st.start_time < since:
                continue
            if st.state != "Z":
                live.append(st)
            elif st.ppid == me:
                # a child of pytest's that its owner has not waited for yet: the check decides
                # (a zombie is no leak, but the child is its owner's to collect)
                return False
            # another's zombie is no leak (nor to the scan); its children have pids of their own
        if not live:
            return True
        threads = {int(t) for t in os.listdir(f"/proc/{me}/task")}
        live = [p for p in live if p.pid not in threads]
        if not live:
            return True
        start = kin.start_time(me)
        if start is None:
            return False
        ours = {p.pid for p in kin.trees([(me, start)])}
        if any(p.pid in ours or p.ppid in ours for p in live):
            return False
        # an environment that cannot be read (an exit under way, another user's) is no match to
        # the scan's marker finder either; one whose exec is under way (uninterruptible, "D")
        # is read last, if it is still there by then
        entry = f"{MARKER}={test.marker}".encode()
        for p in sorted(live, key=lambda p: p.state == "D"):
            if p.state == "D":
                st = kin.pstat(p.pid)
                if st is None or st.state == "Z" or st.start_time != p.start_time:
                    continue
            env = kin.environ(p.pid)
            if env is not None and entry in env.split(b"\0"):
                return False
        return True
