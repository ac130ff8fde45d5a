# SPDX-License-Identifier: MIT
"""A signal handler runs in the thread it interrupts. One that spawns may come while that
thread holds the plugin's own bookkeeping of a spawn: the site table's lock, or the lock under
which a test's cgroup is made. It must go on there, not wait for itself."""
from __future__ import annotations

import os
import signal
import threading

import pytest

from reaper import _site
from reaper.pytest.scope import _Scope


@pytest.fixture
def watchdog():
    """SIGALRM after 10 s raises in the main thread: a thread waiting for a lock it holds
    itself fails the test instead of hanging it."""
    def expire(sig, frame):
        raise TimeoutError("waited for a lock this thread holds")
    old = signal.signal(signal.SIGALRM, expire)
    signal.setitimer(signal.ITIMER_REAL, 10)
    yield
    signal.setitimer(signal.ITIMER_REAL, 0)
    signal.signal(signal.SIGALRM, old)


def test_a_handler_records_a_site_while_its_thread_holds_the_table(watchdog):
    reg = _site.Registry()
    reg.pid = os.getpid()
    site = _site.Site(None, None, "os.posix_spawn")
    recorded = []

    def handler(sig, frame):  # a spawn's record, made by a handler
        reg.record(12345, 678, site, "m")
        recorded.append(1)
    old = signal.signal(signal.SIGUSR1, handler)
    try:
        with reg.lock:  # the interrupted thread, mid-record
            signal.pthread_kill(threading.get_ident(), signal.SIGUSR1)
            reg.by_id[(1, 2)] = (site, "m")
    finally:
        signal.signal(signal.SIGUSR1, old)
    assert recorded == [1]
    assert reg.by_id[(12345, 678)] == (site, "m") and reg.by_id[(1, 2)] == (site, "m")


def test_a_handler_that_spawns_while_its_thread_makes_the_tests_cgroup_makes_no_second(watchdog):
    made = []

    def maker():
        made.append(1)
        # a handler's spawn now, in this thread: the cgroup is not there yet
        assert scope.where() is None
        return "/cgroup/of/the/test"
    scope = _Scope("marker", "test_x", None, maker=maker)
    assert scope.where() == "/cgroup/of/the/test"
    assert scope.where() == "/cgroup/of/the/test"
    assert made == [1]


def test_a_maker_that_fails_is_tried_again_by_the_next_spawn(watchdog):
    tries = []

    def maker():
        tries.append(1)
        if len(tries) == 1:
            raise OSError("no cgroup yet")
        return "/cgroup/second"
    scope = _Scope("marker", "test_y", None, maker=maker)
    with pytest.raises(OSError):
        scope.where()
    assert scope.where() == "/cgroup/second" and len(tries) == 2
