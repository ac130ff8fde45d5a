# SPDX-License-Identifier: MIT
"""pytest-xdist: the controller names each worker's session, and ends what a worker that
crashed left in its cgroup."""

from __future__ import annotations

import os

import pytest

from .cgroups import _Cgroups
from .options import _token
from .reports import _record, _why


class Xdist:
    """The session's hooks for an xdist controller."""

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node):
        # the workers this xdist controller starts check their own tests (see pytest_configure)
        node.workerinput["reaper_controller"] = self.prefix
        node.workerinput["reaper_prefix"] = f"{_token()}-{node.gateway.id}"

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        # A worker that died (killed, os._exit in a test) never reaped its tests nor removed its
        # cgroups; it started in this process's cgroup, so its session's cgroup is below it.
        prefix = getattr(node, "workerinput", {}).get("reaper_prefix")
        if error is None or not prefix:
            return
        from .. import cgroup
        try:
            path = os.path.join(cgroup.current(), f"reaper-pytest-{prefix}")
        except self.reaper.ReaperError:
            return
        if not os.path.isdir(path):
            return
        try:
            rep = self.reaper.reap_report(self.reaper.with_cgroup(path), timeout=self.timeout, grace=self.grace)
        except self.reaper.ReaperIncomplete as e:
            self.notes.append(f"the check of what the crashed worker {node.gateway.id} left is incomplete: {_why(e)}")
            rep = e.report
        self.crash_leaks.extend(_record(p, p.test) for p in rep.leaks)
        self.records.extend(self.crash_leaks[len(self.crash_leaks) - len(rep.leaks):])
        left = _Cgroups.drop(path)
        if left:
            self.notes.append(left)
