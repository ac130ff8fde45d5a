# SPDX-License-Identifier: MIT
"""The interception: the functions that start processes, wrapped while a session is active
so that HOST learns of each child and its site is recorded."""

from __future__ import annotations

import functools
import os
import sys
import threading
from signal import SIGTERM

from .. import _site, _siteenv, keep_handler
from .host import _BOOTTIME, _NS_PER_TICK, HOST, SITES, _clock, _get_ident, _getpid
from .scope import FORCED, THREAD, _Scope, _swap_env

_getframe = sys._getframe

_NO_SITE = _site.Site(None, None, None)
_ENTRIES: dict = {}  # site -> its environment entries (a spawn in a loop makes the same site)


def _sited(called, fn, pid_of, args, kwargs, env_at):
    """A spawn that records where it was made (see _site): in the environment the program
    execs with and, for the child, by identity. A spawn within another (os.system's shell)
    has the outer one's site (HOST.fork makes a forked child's state its own first)."""
    local = SITES.local
    outer = getattr(local, "site", None)
    scope = HOST.scope_here()
    marker = scope.marker if scope else None
    if outer is not None:
        site = outer
    else:
        # from the frame that called the interception's wrapper (2 up): a frame object is made
        # for each frame looked at, and the wrapper's is the interception's own
        site = SITES.here(marker, called, 2) or _NO_SITE
        local.site = site
    try:
        if env_at is None:
            # a child forked without exec: what it execs carries its site (HOST.exec_site)
            local.fork_site = site
        elif len(args) > env_at and (site.test_frame or site.innermost or _siteenv.carried()):
            env = args[env_at]
            env = _siteenv.with_env(env, site, _entries(site) if env is None else None)
            args = args[:env_at] + (env,) + args[env_at + 1:]
        result = HOST.fork(fn, pid_of, args, kwargs, env_at, scope, site)
        if env_at is None and pid_of(result):
            local.fork_site = None  # the child's alone: a later fork below the interception has none
        return result
    except BaseException:
        if env_at is None:
            local.fork_site = None
        raise
    finally:
        if outer is None:
            local.site = None


def _entries(site) -> tuple:
    entries = _ENTRIES.get(site)
    if entries is None:
        if len(_ENTRIES) > 4096:
            _ENTRIES.clear()
        entries = _ENTRIES[site] = _siteenv.env_entries(site)
    return entries


def install(session: _Scope) -> bool:
    """A session begins: the fork hooks registered, the threads already running made the
    session's. True for the process's first session, which applies the table of patches."""
    HOST.users += 1
    HOST.runner = threading.get_ident()
    if HOST.users > 1:
        return False
    HOST.pid = os.getpid()
    # threads already running (a plugin's, a conftest's) are the session's
    HOST.earlier = {t.ident: session for t in threading.enumerate()
                    if t is not threading.current_thread() and t.ident is not None}
    return True


def uninstall() -> None:
    """A session ends (its patches restored first when it was the last one)."""
    HOST.users -= 1
    if HOST.users > 0:
        return
    HOST.saved = []
    HOST.earlier = {}
    HOST.children = {}
    if HOST.pending is not None:
        HOST.pending.clear()
    HOST.owned = {}
    HOST.served = {}


# The replacements of the table in patches.py: each takes the target and the scope the
# table is applied for, and returns what stands in for the target.

def returns_pid(pid_of, env_at=None):
    """A function that starts a process and returns its pid (pid_of reads it from the result;
    env_at: the position of the environment it execs with, where a thread of another scope
    than the running test's gets its scope's markers; an os.fork child gets them in
    HOST.child_for)."""
    def replace(fn, applied_for=None):
        called = _called(fn)

        # os.posix_spawn takes a mapping and, from Python 3.13 on, None for os.environ
        # (subprocess passes None there); _posixsubprocess takes a list or None
        spawn_mapping = env_at is not None and sys.version_info >= (3, 13) and \
            fn.__name__ in ("posix_spawn", "posix_spawnp")

        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            if spawn_mapping and len(args) > env_at and args[env_at] is None:
                args = args[:env_at] + (os.environ,) + args[env_at + 1:]
            return _sited(called, fn, pid_of, args, kwargs, env_at)
        return wrapper
    return replace


def _called(fn) -> str:
    """The name a site gives the spawning function fn: os.fork, or its replacer's."""
    mod = getattr(fn, "__module__", None)
    return f"{'os' if mod in (None, 'posix') else mod}.{fn.__name__}"


def fork(fn, applied_for=None):
    """os.fork. The running test's own fork from the thread that runs it (most forks) takes a
    path of one frame, written out in place: once the fork is made, each page either process
    writes is copied, and each function called, each object touched, is a page or two. The
    child takes no step of its own (see atfork). Any other fork (another scope's or thread's,
    one within another spawn, pytest's exit check under way) takes returns_pid's."""
    other = returns_pid(lambda r: r)(fn)
    called = _called(fn)
    sites = SITES
    local, direct, files = sites.local, sites.direct, sites.files

    @functools.wraps(fn)
    def wrapper():
        host = HOST
        # host.scope_here() for the thread that runs the tests, written out (a forked child
        # forks as another thread would: its first spawn makes the session's state its own)
        if _get_ident() != host.runner or host.final is not None or host.owned or host.pid != _getpid():
            return other()
        scope = FORCED.get() or THREAD.get()
        if scope is None or scope is not host.main or getattr(local, "site", None) is not None or \
                (scope.goto is None and scope.cgroup is not None and host.here is not None and
                 host.here != scope.cgroup):
            return other()
        if not scope.spawned:
            scope.spawned = True
        if scope.goto is not None and (scope.cgroup is None or scope.cgroup != host.here):
            scope.enter()
        # SITES.here's site made once for a call straight from the test's file, written out
        marker = scope.marker
        frame = _getframe(1)
        code = frame.f_code
        got = direct.get((id(code), frame.f_lasti, called))
        if got is not None and got[0] is code and got[1] == files.get(marker) and got[2] == sites.root:
            site = got[3]
        else:
            site = sites.here(marker, called) or _NO_SITE
        local.fork_site = site
        before = _clock(_BOOTTIME) // _NS_PER_TICK if _BOOTTIME is not None else -1
        try:
            pid = fn()
        except BaseException:
            local.fork_site = None
            raise
        if pid:
            local.fork_site = None  # the child's alone: a later fork below the interception has none
            # host.add's record of a child whose fork no clock tick ended during, written out
            pending = host.pending
            if before >= 0 and pending is not None and _clock(_BOOTTIME) // _NS_PER_TICK == before:
                pending.append((pid, before, before, marker, site))
            else:
                host.add(pid, scope, before, site)
        return pid
    return wrapper


def exec_with_site(fn, applied_for=None):
    """os.execv, os.execve (and the os.exec* functions that call them): in a child forked
    without exec, the site of its fork (HOST.exec_site) is set in os.environ and in the
    environment it execs with, as _sited gives a spawn's (left to the exec: most such
    children never exec)."""
    env_at = 2 if fn.__name__ == "execve" else None

    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        site = HOST.exec_site()
        if site is not None:
            if env_at is not None and len(args) > env_at:
                args = args[:env_at] + (_siteenv.with_env(args[env_at], site),) + args[env_at + 1:]
            _siteenv.set_entries(_entries(site))
        return fn(*args, **kwargs)
    return wrapper


def thread_start(fn, applied_for=None):
    """Thread.start: the thread belongs to the scope in force where it was started. Its run
    begins by setting that scope (THREAD) in the thread's own context, which starts empty:
    none of the starter's variables reach it."""
    @functools.wraps(fn)
    def wrapper(thread, *args, **kwargs):
        undo = _run_in(thread, HOST.scope_here())
        try:
            return fn(thread, *args, **kwargs)
        except BaseException:
            undo()  # not started (started twice): its run is as it was
            raise
    return wrapper


def _run_in(thread, scope):
    """thread's run called with THREAD set to scope, once; the function that undoes it. (No
    functools.wraps: each attribute it copies is an object written in the thread that starts
    the thread, a page the next fork copies; the stand-in is gone once the run begins.)"""
    try:
        own = vars(thread)
    except TypeError:  # no __dict__: the thread is the session's, as one started by C code
        return lambda: None
    had, before, run = "run" in own, own.get("run"), thread.run

    def undo():
        if had:
            own["run"] = before
        else:
            own.pop("run", None)

    def run_in_scope(*args, **kwargs):
        undo()  # the thread's run is its own again
        THREAD.set(scope)
        return run(*args, **kwargs)
    own["run"] = run_in_scope
    return undo


def system(fn, applied_for=None):
    """os.system: its shell started where its scope's children go, with its site."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        HOST.own_process()
        HOST.hold_at_exit()
        scope = HOST.scope_here()
        if scope is not None:
            scope.spawned = True
        if len(args) == 1 and not kwargs and HOST.away(scope):
            # another scope's thread: its shell is started as its other children are
            # (its scope's cgroup and markers, a child of ours), not where the process
            # is now; the same wait status as system(3)
            pid = os.posix_spawn("/bin/sh", ["sh", "-c", args[0]], os.environ)
            return os.waitpid(pid, 0)[1]
        if scope is not None and not HOST.away(scope):
            scope.enter()
        return fn(*args, **kwargs)
    return _sited_system(wrapper)


def keeps_sigterm(fn, applied_for=None):
    """signal.signal: the session's SIGTERM handler put back in place (by a test that set its
    own and then restored the one it got) is kept for pytest's process again, as when the
    session installed it. Python installs its own C handler for it, which replaces the kept
    one: a child forked afterwards and waiting in C code would not end by SIGTERM."""
    @functools.wraps(fn)
    def wrapper(signalnum, handler):
        old = fn(signalnum, handler)
        term = HOST.term_kept
        if term is not None and signalnum == SIGTERM and handler == term and _getpid() == HOST.pid:
            try:
                keep_handler(SIGTERM)
            except OSError:  # the handler still ends a child, once its Python code runs
                pass
        return old
    return wrapper


# a pool's thread runs each task for whoever submitted it, not for the scope that started
# the thread (a session fixture's pool, or a module's started by an earlier test)

def work_submitted(init, applied_for=None):
    """concurrent.futures' _WorkItem.__init__: the task is the submitter's scope's."""
    @functools.wraps(init)
    def wrapper(item, *args, **kwargs):
        item._reaper_scope = HOST.scope_here()  # the task's, read by work_run
        init(item, *args, **kwargs)
    return wrapper


def work_run(fn, applied_for=None):
    """_WorkItem.run: the pool's thread runs the task in its submitter's scope."""
    @functools.wraps(fn)
    def wrapper(item, *args, **kwargs):
        token = FORCED.set(getattr(item, "_reaper_scope", None) or FORCED.get())
        try:
            return fn(item, *args, **kwargs)
        finally:
            FORCED.reset(token)
    return wrapper


def _sited_system(fn):
    """os.system with its site in the shell's environment (system(3) passes the process's
    own): set for the call only."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if getattr(SITES.local, "site", None) is not None:
            return fn(*args, **kwargs)
        scope = HOST.scope_here()
        site = SITES.here(scope.marker if scope else None, "os.system") or _NO_SITE
        SITES.local.site = site
        before = _swap_env(site.env()) if site.spot or _siteenv.carried() else None
        try:
            return fn(*args, **kwargs)
        finally:
            SITES.local.site = None
            if before is not None:
                _swap_env(before)
    return wrapper
