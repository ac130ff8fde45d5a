# SPDX-License-Identifier: MIT
"""The zombie collector: the orphans pytest adopted as their subreaper (markers and descent),
collected as they exit, and only those."""

from __future__ import annotations

import threading

from .. import kin

COLLECT_PERIOD = 0.1  # seconds between two looks for zombies of adopted orphans

class _Collector(threading.Thread):
    """Collects the zombies of orphans pytest adopted while tests run (markers and descent:
    pytest is their subreaper), and only those (libreaper's orphan collector): a zombie child
    of ours is collected when it cannot be a child this process started itself, because its
    session is neither pytest's nor its own (a child of pytest is in pytest's session unless
    it called setsid, which makes it the leader of its own), or because it was seen running
    below another process of ours earlier (a child's parent never changes while its parent
    lives). Any other zombie keeps its exit status for its owner: a child C code started below
    the interception, and every child the interception started, which is in pytest's session
    or its own from its fork on (so no list of them is passed: building one at each look wrote
    a page for every record, each copied by the next fork of a process-heavy test). Each one
    is pinned by pidfd and start time before it is collected; no SIGCHLD handler and no wait
    for "any child"."""

    def __init__(self):
        super().__init__(name="reaper-zombie-collector", daemon=True)
        self.stop = threading.Event()
        self.collected = 0

    def run(self):
        with kin.Orphans() as orphans:
            while not self.stop.wait(COLLECT_PERIOD):
                try:
                    self.collected += orphans.collect()
                except OSError:  # out of descriptors or memory: the next look tries again
                    pass

    def finish(self):
        self.stop.set()
        self.join(timeout=10)
