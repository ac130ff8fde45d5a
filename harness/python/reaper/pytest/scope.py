# SPDX-License-Identifier: MIT
"""Whose a process started now is: a test's or the session's (see _Scope), and the
environment that says so to what it execs."""

from __future__ import annotations

import contextvars
import os
import sys
import threading
from typing import Dict, Optional

from .. import _siteenv
from .options import MARKER

def _swap_env(values: Dict[str, Optional[str]]) -> Dict[str, Optional[str]]:
    """Set (or unset, for None) each variable; return what was there before. Read from the
    bytes os.environ keeps: its mapping methods raise and catch a KeyError for each name it
    lacks (a forked child swaps its site's in, where every page written is copied)."""
    before = {}
    data = _siteenv._environb()
    for name, value in values.items():
        old = data.get(os.fsencode(name))
        before[name] = None if old is None else os.fsdecode(old)
        if value is not None:
            os.environ[name] = value
        elif old is not None:
            del os.environ[name]
    return before

#: the scope in force where the calling thread was started (set in its context before its run);
#: in the thread that runs the tests, the running test's or that of the wider fixture being set
#: up, so that a context copied there (an asyncio task's, a callback's handed to an event loop
#: that another thread runs) carries it
THREAD: "contextvars.ContextVar[Optional[_Scope]]" = contextvars.ContextVar("reaper_thread_scope", default=None)
#: a scope forced on what the calling code starts now (a pool's task: its submitter's; the
#: start of multiprocessing's helpers: theirs)
FORCED: "contextvars.ContextVar[Optional[_Scope]]" = contextvars.ContextVar("reaper_forced_scope", default=None)

# a scope's cgroup is made once, by whichever thread spawns first; reentrant: a signal handler
# that spawns runs in the thread it interrupts, which may be making it
_MAKING = threading.RLock()
_BEING_MADE = object()  # a scope's maker while it runs


class _Scope:
    """Whose a process started now is: a test's (its marker, its cgroup) or the session's
    (wider fixtures, hooks, multiprocessing's helpers). A thread belongs to the scope in
    force where it was started; once its test has ended, what it starts is the session's.
    A test's cgroup is made at its first spawn the interception sees (maker), and pytest
    moves into it (goto) when that spawn comes from the thread running the test: a test that
    starts nothing costs no cgroup and no move."""

    __slots__ = ("marker", "test", "cgroup", "session", "live", "maker", "goto", "spawned")

    def __init__(self, marker: str, test: str, cgroup: Optional[str], session: "Optional[_Scope]" = None,
                 maker=None, goto=None):
        self.marker = marker
        self.test = test
        self.cgroup = cgroup  # where its processes go (None: no cgroup, markers and descent)
        self.session = session
        self.live = True
        self.maker = maker    # makes its cgroup (returns it, or None when it cannot be made)
        self.goto = goto      # moves pytest into a cgroup
        self.spawned = False  # the interception started something for it

    def where(self) -> Optional[str]:
        """Its cgroup, made now if it is not yet."""
        if self.maker is not None:
            with _MAKING:  # another thread waits here until it is made
                maker = self.maker
                if maker is _BEING_MADE:
                    # by this thread, interrupted by a signal handler that spawns: no cgroup
                    # yet for that child (markers and descent find it), never a second one
                    return None
                if maker is not None:
                    self.maker = _BEING_MADE
                    try:
                        self.cgroup = maker()
                    except BaseException:
                        self.maker = maker  # made by the next spawn, as before
                        raise
                    self.maker = None
        return self.cgroup

    def enter(self) -> None:
        """The thread that runs the test starts something: pytest runs in the test's cgroup
        from now on, so that what it forks below the interception (C code) is there too."""
        goto = self.goto
        if goto is not None:
            # made already (the test's every spawn but its first): no lock taken
            path = self.cgroup if self.maker is None else self.where()
            if path:
                goto(path)

    def close(self) -> None:
        """The test has ended: no cgroup is made for it any more, pytest moves no more."""
        with _MAKING:
            self.maker = self.goto = None

    def env(self) -> Dict[str, Optional[str]]:
        # an id may hold a NUL (id escaping turned off), which no environment can: written as
        # pytest writes it in PYTEST_CURRENT_TEST
        return {MARKER: self.marker, "REAPER_TEST": self.test.replace("\0", "(null)")}


_PLAIN = (str, bytes, int, float, complex, bool, type(None), tuple, frozenset, type, type(os))


def _objects_of(value) -> list:
    """A fixture's value and the objects among its attributes (a server object holding its
    executor): whatever their methods start is the fixture's."""
    if isinstance(value, _PLAIN):
        return []
    out = [value]
    try:
        # pytest's own objects (the config a helper keeps) serve every test
        out.extend(v for v in vars(value).values() if not isinstance(v, _PLAIN) and
                   not type(v).__module__.startswith(("_pytest", "pytest", "pluggy")))
    except TypeError:
        pass
    return [o for o in out if not _runs_others_code(o)]


def _runs_others_code(value) -> bool:
    """An event loop runs whichever coroutines it is given (a test's, on a session-wide loop),
    a thread pool whichever tasks: what its methods start for them is not its fixture's."""
    aio, pool = sys.modules.get("asyncio"), sys.modules.get("concurrent.futures.thread")
    return (aio is not None and isinstance(value, aio.AbstractEventLoop)) or \
        (pool is not None and isinstance(value, pool.ThreadPoolExecutor))


_MARKER_B, _TEST_B = os.fsencode(MARKER), b"REAPER_TEST"


def _env_for(env, scope: _Scope):
    """The environment a program started for scope execs with, from the one it was given
    (None: os.environ): a marker of this session in it (a test's, copied from os.environ at
    any time) is replaced by scope's, and the test named with it."""
    if type(env) is _siteenv.Inherited:
        # os.environ's entries with a site's (most often a thread of the running test's while
        # os.environ names that test): told by two lookups in what they were made from, not by
        # a scan of them all. None is still made into os.environ's entries below: passed on as
        # it is, the child would get the C environment, which os.unsetenv and os.putenv change
        # apart from os.environ
        source = env.source
        if source.get(_MARKER_B) == os.fsencode(scope.marker) and \
                source.get(_TEST_B) == os.fsencode(scope.env()["REAPER_TEST"]):
            return env
    if env is None:  # _posixsubprocess's "inherit"
        env = [k + b"=" + v for k, v in _siteenv._environb().items()]
    ours = scope.env()
    session = ours[MARKER].rsplit("-", 1)[0] + "-"

    def replaced(value) -> bool:
        return value is not None and value.startswith(session) and value[len(session):].isalnum()

    if isinstance(env, (list, tuple)):  # _posixsubprocess: b"NAME=VALUE" entries
        # the marker's entry found by its bytes: decoding every entry costs more than the fork
        key = os.fsencode(MARKER) + b"="
        value = next((os.fsdecode(bytes(e)[len(key):]) for e in env if bytes(e).startswith(key)), None)
        if not replaced(value):
            return env
        if value == scope.marker and os.fsencode(f"REAPER_TEST={ours['REAPER_TEST']}") in env:
            return env  # copied from os.environ in scope: its entries already
        mine = {os.fsencode(k) + b"=": os.fsencode(v) for k, v in ours.items()}
        out = []
        for entry in env:
            n, s, v = bytes(entry).partition(b"=")
            got = mine.get(n + s)
            out.append(n + s + got if got is not None else n + s + v)
        return out
    try:
        out = dict(env)
    except (TypeError, ValueError):
        return env
    if replaced(out.get(MARKER)):
        out.update(ours)
    return out
