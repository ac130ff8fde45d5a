# SPDX-License-Identifier: MIT
"""What the interception records of each child it starts, checked against /proc while the
child runs (this suite runs with the plugin)."""

import os
import subprocess
import sys

import pytest

from reaper import _site, kin
from reaper.pytest import host
from reaper.pytest.host import HOST, SITES

BLOCK = [sys.executable, "-c", "import sys; sys.stdin.read()"]


@pytest.fixture
def session():
    if not HOST.users:
        pytest.fail("the plugin's tests run with the plugin (-p reaper.pytest_plugin --reaper)")


def _forked(r, w):
    pid = os.fork()
    if pid == 0:
        os.close(w)
        os.read(r, 1)
        os._exit(0)
    return pid


def _spawned(r, w):
    return os.posix_spawn(BLOCK[0], BLOCK, os.environ, file_actions=[(os.POSIX_SPAWN_DUP2, r, 0)])


def _popen(r, w):
    return subprocess.Popen(BLOCK, stdin=r).pid


@pytest.mark.parametrize("start", [_forked, _spawned, _popen], ids=["os.fork", "os.posix_spawn", "subprocess"])
def test_each_childs_start_time_is_the_one_proc_gives(session, start):
    # from the clock around the fork, or read from /proc when a clock tick ended during it:
    # each way, what an identity check compares with later
    r, w = os.pipe()
    pids = []
    try:
        for _ in range(20):
            pids.append(start(r, w))
        for pid in pids:
            assert HOST.children[pid][0] == kin.pstat(pid).start_time, pid
    finally:
        os.close(w)
        os.close(r)
        for pid in pids:
            os.waitpid(pid, 0)


def test_a_child_forked_across_a_clock_tick_has_its_start_time_read(session):
    # before: a tick already past, as when a tick ends during the fork
    r, w = os.pipe()
    pid = _forked(r, w)
    try:
        HOST.children.pop(pid, None)
        HOST.add(pid, None, host._tick() - 1)
        assert HOST.children[pid][0] == kin.pstat(pid).start_time
    finally:
        os.close(w)
        os.close(r)
        os.waitpid(pid, 0)


def test_a_pid_started_outside_its_forks_clock_ticks_is_not_taken_for_the_child(session):
    # entered after the fork (at the next look): a process of another start time than the
    # fork's ticks allow holds the pid now, and is no child the interception started
    r, w = os.pipe()
    pid = _forked(r, w)
    try:
        HOST.children.pop(pid, None)
        HOST.add(pid, None, host._tick() + 2)  # a fork that began after the child did
        assert pid not in HOST.children
    finally:
        os.close(w)
        os.close(r)
        os.waitpid(pid, 0)


def test_the_site_of_a_child_forked_across_a_clock_tick_outlives_the_child(session):
    # what a shell it exec'd started is named by the site of the fork, found by its frames
    # once the shell is gone
    site = _site.Site(_site.Frame("test_x.py", 7, "test_y"), _site.Frame("test_x.py", 7, "test_y"), "os.fork")
    r, w = os.pipe()
    pid = _forked(r, w)
    start = kin.pstat(pid).start_time
    try:
        HOST.children.pop(pid, None)
        HOST.add(pid, None, host._tick() - 1, site)
    finally:
        os.close(w)
        os.close(r)
        os.waitpid(pid, 0)
    HOST.flush()
    assert SITES.by_id.get((pid, start), (None,))[0] == site
    with SITES.lock:
        SITES.by_id.pop((pid, start), None)


def test_the_records_of_children_gone_are_dropped_once_they_are_many(session):
    # each os.fork child drops the records it inherits and each look at them reads them all:
    # those of children waited for go once they pile up, those of children still running stay
    r, w = os.pipe()
    running = _popen(r, w)
    try:
        for _ in range(HOST.prune_at + 50):
            subprocess.run(["true"], check=True)
        HOST.prune()
        assert len(HOST.children) < 50, len(HOST.children)
        assert running in HOST.children
    finally:
        os.close(w)
        os.close(r)
        os.waitpid(running, 0)


def test_a_spawn_that_c_code_calls_with_no_python_frame_above_it_is_made(session):
    # _thread.start_new_thread calls its function from C: the interception's wrapper is the
    # thread's outermost frame, and the site's walk begins above it (the wrapper's caller)
    import _thread
    r, w = os.pipe()
    failed = []
    hook = sys.unraisablehook

    def failure(unraisable):  # the thread's exception: told through the pipe, not lost
        failed.append(unraisable.exc_value)
        os.write(w, b"error\n")
    sys.unraisablehook = failure
    try:
        _thread.start_new_thread(os.posix_spawn, ("/bin/sh", ["sh", "-c", "echo $$ >&3"], dict(os.environ)),
                                 {"file_actions": [(os.POSIX_SPAWN_DUP2, w, 3)]})
        line = b""
        while not line.endswith(b"\n"):
            line += os.read(r, 1)
    finally:
        sys.unraisablehook = hook
        os.close(w)
        os.close(r)
    assert not failed, failed
    os.waitpid(int(line), 0)
