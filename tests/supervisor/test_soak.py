# SPDX-License-Identifier: MIT
"""A small soak of short-lived orphans while COMMAND runs (the 100,000 one is
`make soak-supervisor`): each is reaped while COMMAND lives, counted once, and reaper's memory
does not grow with their number."""
from soak import soak

N = 1000


def test_short_lived_orphans_are_reaped_while_running_and_memory_stays_flat():
    m = soak(N, limit=600)
    assert m["rc"] == 0
    doc = m["running_doc"]
    assert doc["phase"] == "running" and doc["reaped_orphans_total"] == N
    final = m["final_doc"]
    assert final["orphaned_children_total"] == N and final["reaped_orphans_total"] == N
    assert final["reaped_children_total"] == N + 1 and final["leaks"] == 0
    # Nothing is kept per orphan: a few bytes each would already show as hundreds of kB here.
    # The slack covers page-granular stdio and /proc buffers touched once.
    assert m["hwm_after_kb"] - m["rss_before_kb"] < 256, m
