# SPDX-License-Identifier: MIT
"""The zombie collector: the orphans pytest adopted as their subreaper (markers and descent),
collected as they exit, and only those."""

from __future__ import annotations

import errno

from .. import kin

COLLECT_PERIOD = 0.1  # seconds between two looks for zombies of adopted orphans


class _Collector:
    """Collects the zombies of orphans pytest adopted while tests run (markers and descent:
    pytest is their subreaper), and only those (libreaper's orphan collector): a zombie child
    of ours is collected when it cannot be a child this process started itself, because its
    session is neither pytest's nor its own (a child of pytest is in pytest's session unless
    it called setsid, which makes it the leader of its own), or because it was seen running
    below another process of ours earlier (a child's parent never changes while its parent
    lives). Any other zombie keeps its exit status for its owner: a child C code started below
    the interception, and every child the interception started, which is in pytest's session
    or its own from its fork on. Each one is pinned by pidfd and start time before it is
    collected; no SIGCHLD handler and no wait for "any child".

    The looks run in a thread of libreaper's, not of Python's: every thread Python knows of is
    work in each forked child (its state reset there), and a Python loop's objects are pages
    written, which the next fork of a process-heavy test makes pytest copy."""

    def __init__(self):
        self.collected = 0
        self.running = False

    def start(self) -> None:
        try:
            kin.orphans_start(COLLECT_PERIOD)
            self.running = True
        except OSError as e:
            if e.errno != errno.EBUSY:  # EBUSY: an enclosing session's runs in this process
                raise

    def finish(self) -> None:
        if self.running:
            self.running = False
            self.collected += kin.orphans_stop()
