# SPDX-License-Identifier: MIT
"""The zombie collector: the orphans pytest adopted as their subreaper (markers and descent),
collected as they exit, and only those."""

from __future__ import annotations

import os
import threading
from typing import Dict

from .host import HOST
from .kernel import _children, _stat

COLLECT_PERIOD = 0.1  # seconds between two looks for zombies of adopted orphans

class _Collector(threading.Thread):
    """Collects the zombies of orphans pytest adopted while tests run (markers and descent:
    pytest is their subreaper), and only those: a zombie child of ours is collected when it
    cannot be a child this process started itself, because its session is neither pytest's
    nor its own (a child of pytest is in pytest's session unless it called setsid, which
    makes it the leader of its own), or because it was seen running below another process
    of ours earlier (a child's parent never changes while its parent lives). Any other
    zombie (a child C code started, below the interception) keeps its exit status for its
    owner. Each one is pinned by pidfd and start time before waitid(P_PIDFD); no SIGCHLD
    handler and no wait for "any child"."""

    def __init__(self):
        super().__init__(name="reaper-zombie-collector", daemon=True)
        self.stop = threading.Event()
        self.collected = 0

    def run(self):
        session = os.getsid(0)
        below: Dict[tuple, int] = {}  # (pid, start) seen below another process of ours
        while not self.stop.wait(COLLECT_PERIOD):
            for pid in _children():
                st = _stat(pid)
                if not st:
                    continue
                if st[0] != "Z":
                    _walk_below(pid, below)
                    continue
                if HOST.owns(pid, st[2]):
                    continue
                if st[3] not in (session, pid) or (pid, st[2]) in below:
                    self.collected += _collect(pid, st[2])
                    below.pop((pid, st[2]), None)
            if len(below) > 4096:  # forget the ones that are gone
                for ident in [i for i in below if (_stat(i[0]) or (0, 0, 0))[2] != i[1]]:
                    del below[ident]

    def finish(self):
        self.stop.set()
        self.join(timeout=10)


def _walk_below(root: int, below: Dict[tuple, int]) -> None:
    """Note every process below root (a child of ours) by identity, each read while its
    parent is the process it was listed under."""
    todo = [root]
    while todo:
        parent = todo.pop()
        for kid in _children(parent):
            ks = _stat(kid)
            if ks and ks[1] == parent and ks[0] != "Z":
                below[(kid, ks[2])] = parent
                todo.append(kid)


def _collect(pid: int, start: int) -> int:
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        return 0
    try:
        st = _stat(pid)
        if not st or st[2] != start or st[0] != "Z":
            return 0
        return 1 if os.waitid(os.P_PIDFD, fd, os.WEXITED | os.WNOHANG) else 0
    except OSError:
        return 0
    finally:
        os.close(fd)
