# SPDX-License-Identifier: MIT
"""multiprocessing: its helper processes (resource tracker, fork server) belong to no test;
the fork server's workers are told by pid; pools left open are terminated."""

from __future__ import annotations

import functools
import sys
from typing import Dict, List

from .. import cgroup, kin
from .host import HOST, _move_tree
from .scope import FORCED, _Scope, _swap_env

def _exit_finalizers() -> None:
    """Run multiprocessing's exit-time finalizers now, as the interpreter's exit would next: a
    Pool still open tells its workers to quit through its queue. Killed by the check instead,
    an idle worker may die holding the queue's lock, and the Pool's finalizer then waits for
    that lock forever when pytest exits."""
    util = sys.modules.get("multiprocessing.util")
    run = getattr(util, "_run_finalizers", None)
    if run is not None:
        run(0)


# multiprocessing starts its resource tracker and fork server once, in whichever test first
# needs them, and they serve the interpreter until it exits (which ends them): they are
# started with a marker no check looks for, outside the session's cgroup, so no test is blamed
# for them and none kills them under the tests that follow. The table in patches.py applies
# these for that helpers' scope.

def launch(fn, applied_for=None):
    """popen_forkserver.Popen._launch: the fork server forks a worker with its own
    environment, outside the test's cgroup and not as pytest's child: the scope it was started
    for is told by its pid."""
    from multiprocessing import forkserver

    @functools.wraps(fn)
    def _launch(self, *args, **kwargs):
        scope = HOST.scope_here()
        result = fn(self, *args, **kwargs)
        server = getattr(forkserver._forkserver, "_forkserver_pid", None)
        if scope is not None and server and getattr(self, "pid", None):
            serve(self.pid, server, scope)
        return result
    return _launch


def ensure_running(fn, scope):
    """ResourceTracker/ForkServer.ensure_running: the helper started for the helpers' scope."""
    @functools.wraps(fn)
    def wrapper(self, *args, **kwargs):
        before, token = _swap_env(scope.env()), FORCED.set(scope)
        try:
            return fn(self, *args, **kwargs)
        finally:
            FORCED.reset(token)
            _swap_env(before)
    return wrapper


def _end_open_pools(marker: str) -> List[str]:
    """Terminate the multiprocessing pools still open whose workers marker's scope started, as
    pool.terminate() does (its workers told to quit, then ended); the workers' pids."""
    util, mpool = sys.modules.get("multiprocessing.util"), sys.modules.get("multiprocessing.pool")
    if util is None or mpool is None:
        return []
    ended = []
    for f in list(getattr(util, "_finalizer_registry", {}).values()):
        ref = getattr(f, "_weakref", None)
        pool = ref() if ref is not None else None
        if not isinstance(pool, mpool.Pool) or getattr(pool, "_state", None) != mpool.RUN:
            continue
        pids = [w.pid for w in getattr(pool, "_pool", ()) if getattr(w, "pid", None)]
        if any((HOST.children.get(pid) or HOST.served.get(pid) or (0, None))[1] == marker for pid in pids):
            pool.terminate()
            ended.extend(str(pid) for pid in pids)
    return ended


def _served(marker: str) -> list:
    """A finder of the fork server's workers for marker's scope, when it started any."""
    if not HOST.served:  # no fork server in use (every test's end asks)
        return []
    with HOST.lock:
        if not any(m == marker for _, m in HOST.served.values()):
            return []
    return [functools.partial(served_by, marker)]




def serve(pid: int, server: int, scope: _Scope) -> None:
    """A worker the fork server forked for scope: moved to its scope's cgroup with what it
    forked meanwhile, and listed for its scope's check (see served_by)."""
    HOST.own_process()
    st = kin.pstat(pid)
    if not st or st.ppid != server:  # gone (its pid may be another process's now)
        return
    scope.spawned = True
    if scope.where():
        _move_tree(scope.cgroup, st.ident, {cgroup.of(server)} - {scope.cgroup, None})
    with HOST.lock:
        HOST.served[pid] = (st.start_time, scope.marker)

def served_by(marker: str) -> Dict[tuple, str]:
    """The fork server's workers started for marker's scope that still run, and their
    descendants (a finder: each root while it is the process it was, a child only while its
    parent is)."""
    with HOST.lock:
        roots = [(pid, start) for pid, (start, m) in HOST.served.items() if m == marker]
    out = {p.ident: "" for p in kin.trees(roots)}
    gone = [pid for pid, start in roots if (pid, start) not in out]
    if gone:
        with HOST.lock:
            for pid in gone:
                HOST.served.pop(pid, None)
    return out
