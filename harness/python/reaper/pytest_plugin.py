# SPDX-License-Identifier: MIT
"""pytest plugin: every test is checked for the processes it leaves behind.

Installed, it is registered as the ``reaper`` plugin but checks nothing until asked for:
``--reaper`` on the command line or ``reaper = true`` in the ini file. Not installed, load it
with ``-p reaper.pytest_plugin`` (the same form works installed too) and enable it the same way.

* With a writable cgroup2 (``--reaper-cgroup auto``, the default), each test that starts
  something has a cgroup below the session's, made at its first spawn: pytest moves itself
  into it then, runs in the session's for wider fixtures and between tests, and moves out
  before the check, which reaps what stays in the test's cgroup plus what the two ways below
  find. pytest's process semantics stay the host's: no subreaper, no zombie collected.
* Without one (markers and descent) the pytest process adopts orphans for the session, so
  what a test detaches reparents to it; a background thread collects the zombies of the
  orphans it adopted as they exit (never one that may be a child this process started
  itself, see _Collector), so none piles up and code waiting for a pid to vanish does not
  wait in vain.
* A test that started nothing (no spawn seen, no pid given out since it began) is not
  scanned at all. In any case:
* What a test leaves is found three ways: its marker (``REAPER_PYTEST=<session>-<n>``, with
  ``REAPER_TEST=<nodeid>``, in ``os.environ`` from its first function-scoped fixture to its
  last teardown, so every program it starts carries them); descent (every process under
  pytest started after the test began that carries no other test's marker: children forked
  without exec, ``multiprocessing`` workers, and processes caught between fork and exec);
  and what wider-scoped fixtures (and the threads they started) start meanwhile belongs to
  the session, not the test.
* A check that cannot be completed is a ``ReaperIncompleteWarning``; what it found is still
  the test's error.
* Children pytest itself started (what ``os.fork``, ``os.forkpty``, ``os.posix_spawn`` or
  ``subprocess.Popen`` returned while the plugin is active) are signalled when they leak but
  never waited for: their exit status stays for their owner (a ``Popen`` object reads
  ``returncode -9``), and the report says "host child".
* After the test's fixtures are torn down: a garbage collection when a process of the test is still there (finalizers close what
  reference cycles held; ``--reaper-no-gc`` turns it off), then ``--reaper-timeout`` seconds
  for the leftovers to exit, then SIGTERM and ``--reaper-grace`` seconds, then SIGKILL
  (identity-checked); the test gets an error at teardown listing each leaked process.
* A pytest session inside a checked test (pytester, a subprocess) leaves the check to the
  enclosing session: what its tests leave is the enclosing test's (``--reaper-nested``
  checks it anyway, for testing plugins).
* What the session's threads start after its check is still the session's; it is ended at
  pytest's exit, from when on no other thread starts anything.
* ``@pytest.mark.reaper(timeout=..., allow=[globs], check=False)`` per test;
  ``--reaper-report FILE`` writes the session's leaks as JSON.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import functools
import gc
import json
import math
import os
import secrets
import signal
import subprocess
import sys
import tempfile
import threading
import time
import warnings
from typing import Dict, List, Optional

import pytest

from . import _site

MARKER = "REAPER_PYTEST"
SESSION_VAR = "REAPER_PYTEST_SESSION"  # set while a checking session runs: nested ones defer
DEFAULT_TIMEOUT = 3.0
DEFAULT_GRACE = 1.0
MAX_SECONDS = 86400.0  # as the reaper command: a larger time is a typo, not a wait
SCHEMA = "reaper-pytest/1.1"
COLLECT_PERIOD = 0.1  # seconds between two looks for zombies of adopted orphans
CGROUP_MODES = ("auto", "on", "off")


class ReaperIncompleteWarning(pytest.PytestWarning):
    """A test's leak check could not be completed (something outside the test, such as another
    process held in an exec, or no descriptors left): what it found is reported and cleaned up
    as usual, but processes may have been missed. ``-W error::reaper.pytest_plugin.
    ReaperIncompleteWarning`` makes it an error."""


class _Terminated(KeyboardInterrupt):
    """SIGTERM while the session runs: it stops as on Ctrl-C (the tests torn down and checked,
    the cgroups removed), then pytest ends by SIGTERM all the same."""


def pytest_addoption(parser):
    group = parser.getgroup("reaper", "process leak detection (reaper)")
    group.addoption("--reaper", action="store_true", default=None,
                    help="check every test for the processes it leaves behind (or reaper = true in the ini file)")
    group.addoption("--reaper-timeout", type=float, default=None, metavar="SECONDS",
                    help=f"how long a test's leftovers get to exit before they are signalled "
                         f"(default {DEFAULT_TIMEOUT}, or the reaper_timeout ini value)")
    group.addoption("--reaper-grace", type=float, default=None, metavar="SECONDS",
                    help=f"after SIGTERM, how long leftovers get before SIGKILL; 0: SIGKILL at once "
                         f"(default {DEFAULT_GRACE}, or the reaper_grace ini value)")
    group.addoption("--reaper-no-gc", action="store_true", default=None,
                    help="no garbage collection before each check (or reaper_gc = false in the ini file)")
    group.addoption("--reaper-report", default=None, metavar="FILE",
                    help="write the session's leaked processes to FILE as JSON")
    group.addoption("--reaper-nested", action="store_true", default=False,
                    help="check even inside a test of another checking session (testing plugins)")
    group.addoption("--reaper-disable", action="store_true", default=False,
                    help="check nothing, even when the ini file enables the plugin")
    group.addoption("--reaper-cgroup", default=None, choices=CGROUP_MODES,
                    help="a cgroup v2 per test: auto (when one can be made, the default), on (an error "
                         "when none can), off (markers and descent only); or the reaper_cgroup ini value")
    parser.addini("reaper", "check every test for the processes it leaves behind", type="bool", default=False)
    parser.addini("reaper_timeout", "default for --reaper-timeout", default=None)
    parser.addini("reaper_grace", "default for --reaper-grace", default=None)
    parser.addini("reaper_gc", "collect garbage before each check (default true)", type="bool", default=True)
    parser.addini("reaper_cgroup", "default for --reaper-cgroup (auto, on, off)", default=None)


@pytest.hookimpl
def pytest_plugin_registered(plugin, manager):
    # Installed, this module is the "reaper" entry point; loaded with -p it is registered under
    # its module name first. Whichever name comes first, the other is blocked, so the same
    # module is never registered twice ("Plugin already registered").
    if plugin is not sys.modules.get(__name__):
        return
    name = manager.get_name(plugin)
    other = "reaper" if name != "reaper" else __name__
    if manager.get_plugin(other) is None and not manager.is_blocked(other):
        manager.set_blocked(other)


def _enabled(config) -> bool:
    if config.getoption("reaper_disable"):
        return False
    opt = config.getoption("reaper")
    return bool(opt) if opt is not None else bool(config.getini("reaper"))


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "reaper(timeout=None, allow=(), check=True): per-test process leak settings: "
        "seconds leftovers get before being signalled, cmdline/exe globs that may be left (they are "
        "still cleaned up), check=False to skip the check")
    if not _enabled(config):
        return
    outer = os.environ.get(SESSION_VAR)
    # an xdist worker inherits its controller's variable, but it is the controller's own
    # worker, not a session nested in one of its tests: its tests are checked here
    own_worker = outer and getattr(config, "workerinput", {}).get("reaper_controller") == outer
    if outer and not own_worker and not config.getoption("reaper_nested"):
        config.pluginmanager.register(_Deferred(outer), "reaper-deferred")
        return
    import reaper
    if reaper.load_error is not None:
        raise pytest.UsageError(f"reaper plugin enabled, but {reaper.load_error}")
    config.pluginmanager.register(_Session(config), "reaper-session")


class _Deferred:
    def __init__(self, outer: str):
        self.outer = outer

    def pytest_report_header(self):
        return f"reaper: inside the checking session {self.outer}: its check covers this run"


def _replace_file(path: str, text: str) -> None:
    """Write path whole, as the reaper command writes its files: a new file with a random name
    in the same directory (exclusive create, so no symlink is followed), then renamed over
    path; a reader sees the old file or the new one, and a symlink at path is replaced."""
    # the name's own part cut so that the temporary name stays within NAME_MAX (255)
    fd, tmp = tempfile.mkstemp(prefix=os.path.basename(path)[:200] + ".", suffix=".tmp",
                               dir=os.path.dirname(os.path.abspath(path)))
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            os.fchmod(f.fileno(), 0o644)
            f.write(text)
            f.flush()
            os.fdatasync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise


def _seconds(value, what: str) -> float:
    """A time setting as a number of seconds; anything else is a usage error naming it."""
    try:
        seconds = float(value)
    except (TypeError, ValueError):
        seconds = math.nan
    if not math.isfinite(seconds) or not 0 <= seconds <= MAX_SECONDS:
        raise pytest.UsageError(f"{what} must be >= 0 and <= {MAX_SECONDS:g} (seconds), not {value!r}")
    return seconds


def _number(config, opt: str, ini: str, default: float) -> float:
    value = config.getoption(opt)
    if value is not None:
        return _seconds(value, "--" + opt.replace("_", "-"))
    raw = config.getini(ini)
    return _seconds(raw, f"the {ini} ini value") if raw not in (None, "") else default


def _swap_env(values: Dict[str, Optional[str]]) -> Dict[str, Optional[str]]:
    """Set (or unset, for None) each variable; return what was there before."""
    before = {}
    for name, value in values.items():
        before[name] = os.environ.get(name)
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value
    return before


def _stat(pid: int):
    """(state, ppid, start time, session) of pid, or None."""
    try:
        fd = os.open(f"/proc/{pid}/stat", os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        fields = os.read(fd, 4096).rsplit(b")", 1)[1].split()
    except (OSError, IndexError):
        return None
    finally:
        os.close(fd)
    return fields[0].decode(), int(fields[1]), int(fields[19]), int(fields[3])


# ---- children this process starts itself ----------------------------------------------------

_MAKING = threading.Lock()  # a scope's cgroup is made once, by whichever thread spawns first


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
            with _MAKING:
                if self.maker is not None:
                    self.cgroup, self.maker = self.maker(), None
        return self.cgroup

    def enter(self) -> None:
        """The thread that runs the test starts something: pytest runs in the test's cgroup
        from now on, so that what it forks below the interception (C code) is there too."""
        if self.goto is not None:
            path = self.where()
            if path:
                self.goto(path)

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


def _move(cgroup: str, pid: int) -> None:
    """Put pid (0: this process) into cgroup; a child that is already gone is no error."""
    try:
        with open(os.path.join(cgroup, "cgroup.procs"), "w") as f:
            f.write(str(pid))
    except OSError:
        pass


def _env_for(env, scope: _Scope):
    """The environment a program started for scope execs with, from the one it was given
    (None: os.environ): a marker of this session in it (a test's, copied from os.environ at
    any time) is replaced by scope's, and the test named with it."""
    if env is None:  # _posixsubprocess's "inherit"
        env = [os.fsencode(k) + b"=" + os.fsencode(v) for k, v in os.environ.items()]
    ours = scope.env()
    session = ours[MARKER].rsplit("-", 1)[0] + "-"

    def replaced(entries: dict) -> bool:
        value = entries.get(MARKER)
        return value is not None and value.startswith(session) and value[len(session):].isalnum()

    if isinstance(env, (list, tuple)):  # _posixsubprocess: b"NAME=VALUE" entries
        pairs = [bytes(entry).partition(b"=") for entry in env]
        if not replaced({os.fsdecode(n): os.fsdecode(v) for n, _, v in pairs}):
            return env
        return [n + b"=" + os.fsencode(ours[os.fsdecode(n)]) if os.fsdecode(n) in ours else n + s + v
                for n, s, v in pairs]
    try:
        out = dict(env)
    except (TypeError, ValueError):
        return env
    if replaced(out):
        out.update(ours)
    return out


def _cgroup_of(pid) -> Optional[str]:
    """The cgroup v2 of pid ("self": this process), as /proc says it; None if gone."""
    try:
        with open(f"/proc/{pid}/cgroup") as f:
            return next((line[3:].rstrip("\n") for line in f if line.startswith("0::")), None)
    except OSError:
        return None


def _move_forked(cgroup: str, pid: int, here: set) -> None:
    """An exec'd child is moved only once it runs its program, which may have forked by then
    (a shell script): what it started in a cgroup this process was in while it forked (here)
    moves to cgroup too, until a look finds none left there."""
    for _ in range(100):
        left, todo = [], [pid]
        while todo:
            kids = _children(todo.pop())
            todo.extend(kids)
            left.extend(k for k in kids if _cgroup_of(k) in here)
        if not left:
            return
        for k in left:
            _move(cgroup, k)


def _handles_sigterm() -> bool:
    """Whether SIGTERM is the session's (its handler in this process)."""
    return getattr(signal.getsignal(signal.SIGTERM), "__func__", None) is _Session._sigterm


class _HostChildren:
    """Every child this process starts while a session is active, as (pid -> start time,
    the marker of the scope it was started for): their exit statuses belong to whoever
    started them. A child started by a thread of another scope than the main thread's (a
    worker a session-scoped multiprocessing.Pool replaces while a test runs) is moved into its
    scope's cgroup and given its scope's marker, so no test is blamed for it."""

    def __init__(self):
        self.lock = threading.Lock()
        self.children: Dict[int, tuple] = {}
        self.users = 0
        self.saved: List[tuple] = []
        self.main: Optional[_Scope] = None  # the scope of the thread running the tests
        self.runner: Optional[threading.Thread] = None  # that thread
        self.local = threading.local()  # .scope: a scope forced on this thread; .forking
        self.moving = threading.Condition()
        self.inflight = 0  # forks under way whose child must be moved
        self.inheriting = 0  # forks under way whose child is where pytest is (here), as it must be
        self.here: Optional[str] = None  # the cgroup pytest is in, when it moved itself
        self.closed = False  # forks for another scope wait (a check by descent is listing)
        self.at_fork = False
        self.final = None  # the thread running pytest's exit check: the others' spawns wait
        self.exited = threading.Event()  # ... for it to end
        self.site_at_fork = False
        # id -> (object, scope, fixture): the values of wider fixtures and their attributes
        self.owned: Dict[int, tuple] = {}
        # multiprocessing's fork server's workers (not children of ours, with the fork
        # server's environment): pid -> (start time, the marker of the scope they were for)
        self.served: Dict[int, tuple] = {}

    def scope_here(self) -> Optional[_Scope]:
        """The scope of what the calling thread starts now: its own (a thread started by a
        wider fixture), else the running test's, unless a method of a wider fixture's object
        is doing it (a session's executor that starts its workers lazily, from a test)."""
        s = getattr(self.local, "scope", None)
        if s is None:
            s = getattr(threading.current_thread(), "_reaper_scope", None)
        while s is not None and not s.live:
            s = s.session
        s = s or self.main
        if s is not None and s.session is not None and s.marker != s.session.marker:  # a test's
            return self.on_behalf() or s
        return s

    def own(self, value, scope: _Scope, key: int) -> None:
        for obj in _objects_of(value):
            self.owned[id(obj)] = (obj, scope, key)

    def disown(self, key: int) -> None:
        for k in [k for k, v in self.owned.items() if v[2] == key]:
            del self.owned[k]

    def on_behalf(self) -> Optional[_Scope]:
        """The scope of the wider fixture whose object's method is on the calling stack."""
        if not self.owned:
            return None
        f = sys._getframe(2)
        for _ in range(64):
            if f is None:
                break
            code = f.f_code
            if code.co_argcount and code.co_varnames[0] == "self":
                me = f.f_locals.get("self")
                got = self.owned.get(id(me))
                if got is not None and got[0] is me:
                    return got[1]
            f = f.f_back
        return None

    def add(self, pid: int, scope: Optional[_Scope] = None) -> None:
        if pid <= 0:
            if pid == 0:  # the child of a fork: none of these are its children
                self.children = {}
            return
        st = _stat(pid)
        if st:
            with self.lock:
                self.children[pid] = (st[2], scope.marker if scope else os.environ.get(MARKER))

    def settle(self, timeout: float = 30.0) -> None:
        """Wait for the forks under way whose child must be moved out of where this process
        is: a check that lists its test's cgroup after this sees none of them in it."""
        with self.moving:
            self.moving.wait_for(lambda: self.inflight == 0, timeout)

    @contextlib.contextmanager
    def closed_for_others(self):
        """While a test is checked by descent, which a child of another scope's thread would
        look like until its pid is known: such forks wait, those under way are finished."""
        with self.moving:
            self.closed = True
        try:
            self.settle()
            yield
        finally:
            with self.moving:
                self.closed = False
                self.moving.notify_all()

    def _after_fork_child(self) -> None:
        # in the child of os.fork/forkpty, before it returns to Python code: the marker and
        # cgroup of the scope it was started for, before it can start anything itself. Only
        # the forking thread goes on here: a lock another thread held stays held unless new.
        self.lock = threading.Lock()
        self.moving = threading.Condition()
        # the session's SIGTERM handler is pytest's: a child that inherited it would end by
        # SIGTERM only once its Python code runs again, which a wait that began as the signal
        # came (a Pool worker's wait for its queue) never does. SIGTERM was held back over the
        # fork (_before_fork): one sent meanwhile is delivered now, at its default.
        if _handles_sigterm():
            try:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
            except ValueError:  # not the child's main thread: the handler still ends it
                pass
        self._release_sigterm()
        s = getattr(self.local, "forking", None)
        if s is None or not self.users:
            return
        self.local.forking = None
        self.main = s
        for name, value in s.env().items():
            os.environ[name] = value
        if s.cgroup and not getattr(self.local, "inherit", False):
            _move(s.cgroup, 0)

    def _away(self, scope: Optional[_Scope]) -> bool:
        # the running test's own forks from the thread that runs the tests are where the
        # process is; any other child is put in its place, also when that is where the process
        # is now: the runner moves the process (and changes main) at a test's boundaries while
        # another thread's fork is under way
        main = self.main
        return scope is not None and main is not None and \
            (scope is not main or threading.current_thread() is not self.runner)

    def _before_fork(self) -> None:
        if getattr(self.local, "forking", None) is None:  # a fork the interception did not see
            self._hold_at_exit(forever=True)
        self.local.held = False
        if _handles_sigterm():
            old = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
            self.local.held = signal.SIGTERM not in old

    def _release_sigterm(self) -> None:
        if getattr(self.local, "held", False):
            self.local.held = False
            signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM})

    def _sited(self, called, fn, pid_of, args, kwargs, env_at):
        """A spawn that records where it was made (see _site): in the environment the program
        execs with and, for the child, by identity. A spawn within another (os.system's shell)
        has the outer one's site."""
        local = SITES.local
        outer = getattr(local, "site", None)
        scope = self.scope_here()
        marker = scope.marker if scope else None
        if outer is not None:
            site = outer
        else:
            site = SITES.here(marker, called) or _site.Site(None, None, None)
            local.site = site
        try:
            if env_at is not None and len(args) > env_at and \
                    (site.spot or _site.AT in os.environ or _site.IN in os.environ):
                args = args[:env_at] + (_site.with_env(args[env_at], site),) + args[env_at + 1:]
            result = self._fork(fn, pid_of, args, kwargs, env_at)
            pid = pid_of(result)
            if pid > 0 and site.spot:
                st = _stat(pid)
                SITES.record(pid, st[2] if st else None, site, marker)
            return result
        finally:
            if outer is None:
                local.site = None

    @staticmethod
    def _sited_child() -> None:
        # a child forked without exec: what it execs (or starts) carries its site
        SITES.lock = threading.Lock()
        site = getattr(SITES.local, "site", None)
        if site is not None and HOST.users:
            SITES.local.site = None
            _swap_env(site.env())

    def _hold_at_exit(self, forever: bool = False) -> None:
        """Once pytest's exit check has begun, no other thread starts anything (what it
        started could outlive pytest unchecked): the spawn waits for the check to end, then
        fails with EAGAIN (a thread that a later exit handler joins must not wait forever);
        forever: a fork that cannot be failed from here."""
        final = self.final
        if final is not None and final != threading.get_ident():
            self.exited.wait()
            if forever:
                threading.Event().wait()
            raise BlockingIOError(errno.EAGAIN, "pytest is exiting: nothing more is started")

    def _fork(self, fn, pid_of, args, kwargs, env_at=None):
        self._hold_at_exit()
        scope = self.scope_here()
        if scope is not None:
            scope.spawned = True
        if self._away(scope):
            if scope.cgroup is not None and scope is self.main and self.here == scope.cgroup:
                return self._fork_inherit(fn, pid_of, args, kwargs, env_at, scope)
            return self._fork_away(fn, pid_of, args, kwargs, env_at, scope)
        if scope is not None:
            scope.enter()
        result = fn(*args, **kwargs)
        self.add(pid_of(result), scope)
        return result

    def _fork_inherit(self, fn, pid_of, args, kwargs, env_at, scope):
        """A thread of the running test forks while pytest is in the test's cgroup: its child
        is born there; pytest does not move until the fork is done (goto waits for it)."""
        with self.moving:
            here = scope.live and scope is self.main and self.here == scope.cgroup and self.final is None
            if here:
                self.inheriting += 1
        if not here:
            return self._fork_away(fn, pid_of, args, kwargs, env_at, scope)
        self.local.forking, self.local.inherit = scope, True
        if env_at is not None and len(args) > env_at:
            args = args[:env_at] + (_env_for(args[env_at], scope),) + args[env_at + 1:]
        try:
            result = fn(*args, **kwargs)
            self.add(pid_of(result), scope)
            return result
        finally:
            self.local.forking, self.local.inherit = None, False
            with self.moving:
                self.inheriting -= 1
                self.moving.notify_all()

    def _fork_away(self, fn, pid_of, args, kwargs, env_at, scope):
        with self.moving:
            self.moving.wait_for(lambda: not self.closed, 60)
            final = self.final is not None and self.final != threading.get_ident()
            if not final:
                self.inflight += 1  # the exit check waits for it: final is set under this lock
        if final:
            self._hold_at_exit()
        here = _cgroup_of("self") if scope.where() else None
        self.local.forking = scope
        if env_at is not None and len(args) > env_at:
            args = args[:env_at] + (_env_for(args[env_at], scope),) + args[env_at + 1:]
        try:
            result = fn(*args, **kwargs)
            pid = pid_of(result)
            if pid > 0 and scope.cgroup:
                _move(scope.cgroup, pid)  # a child that runs no Python code (exec) moves here
                _move_forked(scope.cgroup, pid, {here, _cgroup_of("self")} - {scope.cgroup})
            self.add(pid, scope)
            return result
        finally:
            self.local.forking = None
            with self.moving:
                self.inflight -= 1
                self.moving.notify_all()

    def serve(self, pid: int, server: int, scope: _Scope) -> None:
        """A worker the fork server forked for scope: moved to its scope's cgroup with what it
        forked meanwhile, and listed for its scope's check (see served_by)."""
        st = _stat(pid)
        if not st or st[1] != server:  # gone (its pid may be another process's now)
            return
        scope.spawned = True
        if scope.where():
            _move(scope.cgroup, pid)
            _move_forked(scope.cgroup, pid, {_cgroup_of(server)} - {scope.cgroup})
        with self.lock:
            self.served[pid] = (st[2], scope.marker)

    def served_by(self, marker: str) -> Dict[tuple, str]:
        """The fork server's workers started for marker's scope that still run, and their
        descendants (a finder: each identity read parent first, a child only while its
        parent is the process it was)."""
        out: Dict[tuple, str] = {}
        with self.lock:
            roots = [(pid, start) for pid, (start, m) in self.served.items() if m == marker]
        for pid, start in roots:
            st = _stat(pid)
            if not st or st[2] != start:
                with self.lock:
                    self.served.pop(pid, None)
                continue
            todo = [(pid, start)]
            while todo:
                parent = todo.pop()
                out[parent] = ""
                for kid in _children(parent[0]):
                    ks = _stat(kid)
                    if ks and ks[1] == parent[0] and (kid, ks[2]) not in out:
                        todo.append((kid, ks[2]))
        return out

    def current(self) -> Dict[int, tuple]:
        """The tracked children that are still ours and not waited for; forget the others."""
        me = os.getpid()
        with self.lock:
            for pid, (start, _) in list(self.children.items()):
                st = _stat(pid)
                if not st or st[2] != start or st[1] != me:
                    del self.children[pid]
            return dict(self.children)

    def owns(self, pid: int, start: int) -> bool:
        got = self.children.get(pid)
        return got is not None and got[0] == start

    def install(self, session: _Scope) -> None:
        self.users += 1
        self.runner = threading.current_thread()
        if self.users > 1:
            return
        import _posixsubprocess
        if not self.at_fork:  # cannot be unregistered: does nothing while no session runs
            os.register_at_fork(before=self._before_fork, after_in_parent=self._release_sigterm,
                                after_in_child=self._after_fork_child)
            self.at_fork = True
        # threads already running (a plugin's, a conftest's) are the session's
        for t in threading.enumerate():
            if t is not threading.current_thread():
                t._reaper_scope = session

        def returns_pid(fn, pid_of, env_at=None):
            mod = getattr(fn, "__module__", None)
            called = f"{'os' if mod in (None, 'posix') else mod}.{fn.__name__}"

            # os.posix_spawn takes a mapping and, from Python 3.13 on, None for os.environ
            # (subprocess passes None there); _posixsubprocess takes a list or None
            spawn_mapping = env_at is not None and sys.version_info >= (3, 13) and \
                fn.__name__ in ("posix_spawn", "posix_spawnp")

            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                if spawn_mapping and len(args) > env_at and args[env_at] is None:
                    args = args[:env_at] + (os.environ,) + args[env_at + 1:]
                return self._sited(called, fn, pid_of, args, kwargs, env_at)
            return wrapper

        def start(fn):
            @functools.wraps(fn)
            def wrapper(thread, *args, **kwargs):
                try:
                    thread._reaper_scope = self.scope_here()
                except AttributeError:  # a subclass with __slots__
                    pass
                return fn(thread, *args, **kwargs)
            return wrapper

        def system(fn):
            @functools.wraps(fn)
            def wrapper(*args, **kwargs):
                self._hold_at_exit()
                scope = self.scope_here()
                if scope is not None:
                    scope.spawned = True
                if len(args) == 1 and not kwargs and self._away(scope):
                    # another scope's thread: its shell is started as its other children are
                    # (its scope's cgroup and markers, a child of ours), not where the process
                    # is now; the same wait status as system(3)
                    pid = os.posix_spawn("/bin/sh", ["sh", "-c", args[0]], os.environ)
                    return os.waitpid(pid, 0)[1]
                if scope is not None and not self._away(scope):
                    scope.enter()
                return fn(*args, **kwargs)
            return wrapper

        # (module, function, the pid from its result, the position of the environment it
        # execs with: a thread of another scope than the running test's gets its scope's
        # markers there; an os.fork child gets them in _after_fork_child)
        targets = [(os, "fork", lambda r: r, None), (os, "forkpty", lambda r: r[0], None),
                   (os, "posix_spawn", lambda r: r, 2), (os, "posix_spawnp", lambda r: r, 2),
                   (subprocess, "_fork_exec", lambda r: r, 5), (_posixsubprocess, "fork_exec", lambda r: r, 5)]
        for mod, name, pid_of, env_at in targets:
            fn = getattr(mod, name, None)
            if fn is not None:
                self.saved.append((mod, name, fn))
                setattr(mod, name, returns_pid(fn, pid_of, env_at))
        self.saved.append((os, "system", os.system))
        os.system = _sited_system(system(os.system))
        if not self.site_at_fork:
            os.register_at_fork(after_in_child=self._sited_child)
            self.site_at_fork = True

        # a pool's thread runs each task for whoever submitted it, not for the scope that
        # started the thread (a session fixture's pool, or a module's started by an earlier test)
        from concurrent.futures import thread as pool

        def submitted(init):
            @functools.wraps(init)
            def wrapper(item, *args, **kwargs):
                item._reaper_scope = self.scope_here()
                init(item, *args, **kwargs)
            return wrapper

        def run(fn):
            @functools.wraps(fn)
            def wrapper(item, *args, **kwargs):
                forced = getattr(self.local, "scope", None)
                self.local.scope = getattr(item, "_reaper_scope", None) or forced
                try:
                    return fn(item, *args, **kwargs)
                finally:
                    self.local.scope = forced
            return wrapper

        for name, wrap in (("__init__", submitted), ("run", run)):
            self.saved.append((pool._WorkItem, name, pool._WorkItem.__dict__[name]))
            setattr(pool._WorkItem, name, wrap(pool._WorkItem.__dict__[name]))
        self.saved.append((threading.Thread, "start", threading.Thread.start))
        threading.Thread.start = start(threading.Thread.start)

    def uninstall(self) -> None:
        self.users -= 1
        if self.users > 0:
            return
        for mod, name, fn in reversed(self.saved):
            setattr(mod, name, fn)
        self.saved = []
        self.children = {}
        self.owned = {}
        self.served = {}


HOST = _HostChildren()
SITES = _site.Registry()


def _sited_system(fn):
    """os.system with its site in the shell's environment (system(3) passes the process's
    own): set for the call only."""
    @functools.wraps(fn)
    def wrapper(*args, **kwargs):
        if getattr(SITES.local, "site", None) is not None:
            return fn(*args, **kwargs)
        scope = HOST.scope_here()
        site = SITES.here(scope.marker if scope else None, "os.system") or _site.Site(None, None, None)
        SITES.local.site = site
        before = _swap_env(site.env()) if site.spot or _site.AT in os.environ or _site.IN in os.environ else None
        try:
            return fn(*args, **kwargs)
        finally:
            SITES.local.site = None
            if before is not None:
                _swap_env(before)
    return wrapper


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


def _children(pid="self") -> List[int]:
    out = []
    try:
        tasks = os.listdir(f"/proc/{pid}/task")
    except OSError:
        return out
    for tid in tasks:
        try:
            with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                out.extend(int(p) for p in f.read().split())
        except OSError:
            pass
    return out


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


def _exit_finalizers() -> None:
    """Run multiprocessing's exit-time finalizers now, as the interpreter's exit would next: a
    Pool still open tells its workers to quit through its queue. Killed by the check instead,
    an idle worker may die holding the queue's lock, and the Pool's finalizer then waits for
    that lock forever when pytest exits."""
    util = sys.modules.get("multiprocessing.util")
    run = getattr(util, "_run_finalizers", None)
    if run is not None:
        run(0)


def _inline() -> bool:
    """Whether this session runs inside another pytest session of the same process (pytester's
    runpytest, inline): the process, and what its exit would finalize, are that session's."""
    from _pytest import main
    code, f, n = main.wrap_session.__code__, sys._getframe(1), 0
    while f is not None:
        n += f.f_code is code
        f = f.f_back
    return n > 1


def _mark_helpers(scope: _Scope) -> List[tuple]:
    """multiprocessing starts its resource tracker and fork server once, in whichever test
    first needs them, and they serve the interpreter until it exits (which ends them): they
    are started with a marker no check looks for, outside the session's cgroup, so no test is
    blamed for them and none kills them under the tests that follow. Returns (class, name,
    original) to restore."""
    try:
        from multiprocessing import forkserver, popen_forkserver, resource_tracker
    except ImportError:
        return []
    saved = []
    launch = popen_forkserver.Popen.__dict__.get("_launch")
    if launch is not None:
        # the fork server forks a worker with its own environment, outside the test's cgroup
        # and not as pytest's child: the scope it was started for is told by its pid
        def _launch(self, *args, _fn=launch, **kwargs):
            scope = HOST.scope_here()
            result = _fn(self, *args, **kwargs)
            server = getattr(forkserver._forkserver, "_forkserver_pid", None)
            if scope is not None and server and getattr(self, "pid", None):
                HOST.serve(self.pid, server, scope)
            return result
        popen_forkserver.Popen._launch = functools.wraps(launch)(_launch)
        saved.append((popen_forkserver.Popen, "_launch", launch))
    for cls in (resource_tracker.ResourceTracker, forkserver.ForkServer):
        fn = cls.__dict__.get("ensure_running")
        if fn is None:
            continue

        def ensure_running(self, *args, _fn=fn, **kwargs):
            before, forced = _swap_env(scope.env()), getattr(HOST.local, "scope", None)
            HOST.local.scope = scope
            try:
                return _fn(self, *args, **kwargs)
            finally:
                HOST.local.scope = forced
                _swap_env(before)
        cls.ensure_running = functools.wraps(fn)(ensure_running)
        saved.append((cls, "ensure_running", fn))
    return saved


# ---- the session -------------------------------------------------------------------------

class _Cgroups:
    """The session's cgroup (wider fixtures, hooks, whatever runs between tests) and one below
    it per test. pytest moves itself (the whole process) into the running test's cgroup for the
    test's function fixtures and call, into the session's while wider fixtures are set up and
    torn down, and out of both before it reaps them: what stays in a test's cgroup is what the
    test left."""

    def __init__(self, own: str, prefix: str):
        from . import cgroup
        self.cg = cgroup
        self.own = own
        self.session = cgroup.create(own, f"reaper-pytest-{prefix}")
        self.where = own
        try:
            self.goto(self.session)
        except BaseException:
            self.drop(self.session)
            raise

    def goto(self, path: str) -> None:
        if path != self.where:
            with HOST.moving:  # not while a fork that counts on where pytest is is under way
                HOST.moving.wait_for(lambda: HOST.inheriting == 0, 30)
                self.cg.enter(path)
                self.where = HOST.here = path

    @staticmethod
    def drop(path: str) -> Optional[str]:
        """Remove path (a reaped cgroup); what it still holds (unkillable) moves up a level.
        Never raises: a sentence when something stayed."""
        from . import cgroup
        try:
            cgroup.remove(path)
            return None
        except OSError as e:
            if e.errno != errno.EBUSY:
                return f"cannot remove the cgroup {path}: {e.strerror}"
        try:
            n = cgroup.release(path)
            return f"{n} process{'es' if n != 1 else ''} still in {path} moved to its parent cgroup"
        except OSError as e:
            return f"cannot release the cgroup {path}: {e.strerror}"

    def close(self, timeout: float) -> Optional[str]:
        """Last resort (the session ended without its check): back where pytest was, the
        session's cgroup ended and removed."""
        try:
            self.goto(self.own)
        except OSError:
            pass
        if not os.path.isdir(self.session):
            return None
        try:
            self.cg.kill(self.session)
            self.cg.wait(self.session, timeout)
        except OSError:
            pass
        return self.drop(self.session)


def _tracking(config, prefix: str):
    """(cgroup tracking or None, the header's words for it)."""
    mode = config.getoption("reaper_cgroup") or config.getini("reaper_cgroup") or "auto"
    if mode not in CGROUP_MODES:
        raise pytest.UsageError(f"the reaper_cgroup ini value must be one of {', '.join(CGROUP_MODES)}, "
                                f"not {mode!r}")
    if mode == "off":
        return None, "proc (markers and descent; --reaper-cgroup off)"
    from . import cgroup
    import reaper
    try:
        own = cgroup.current()
        err = cgroup.usable(own)
    except reaper.ReaperError as e:
        own, err = "?", e.errno
    if not err and config.pluginmanager.has_plugin("dsession"):
        # an xdist controller runs no test: each worker makes its own cgroups
        return None, "cgroup (each xdist worker's own)"
    if not err:
        try:
            cg = _Cgroups(own, prefix)
            return cg, f"cgroup (one per test below {cg.session})"
        except reaper.ReaperError as e:
            err = e.errno
    why = cgroup.why_not(err, own)
    if mode == "on":
        raise pytest.UsageError(f"--reaper-cgroup on: the tests cannot have cgroups: {why}")
    return None, f"proc (markers and descent: {why})"


class _Session:
    def __init__(self, config):
        import reaper
        self.reaper = reaper
        self.config = config
        self.timeout = _number(config, "reaper_timeout", "reaper_timeout", DEFAULT_TIMEOUT)
        self.grace = _number(config, "reaper_grace", "reaper_grace", DEFAULT_GRACE)
        no_gc = config.getoption("reaper_no_gc")
        self.gc = not no_gc if no_gc is not None else bool(config.getini("reaper_gc"))
        self.worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        # an xdist worker's prefix is its controller's choice: the controller ends what a
        # worker that crashed left in its cgroup
        self.prefix = getattr(config, "workerinput", {}).get("reaper_prefix") or \
            f"{secrets.token_hex(6)}-{self.worker}"
        self.shared_marker = f"{self.prefix}-shared"
        self.count = 0
        self.test: Optional[_Scope] = None  # the running test's scope
        self.since = 0                      # when it began (clock ticks since boot)
        self.wider: List[tuple] = []        # (from, to) ticks: wider fixtures set up since it began
        self.session_since = 0
        self.records: List[dict] = []       # from teardown reports (controller side under xdist)
        self.found: Dict[str, List[dict]] = {}  # nodeid -> what its check found, for its teardown report
        self.checked = 0
        self.shared_leaks: List[dict] = []
        self.adopted = False
        self.outer: Dict[str, Optional[str]] = {}
        self.collector: Optional[_Collector] = None
        self.helpers: List[tuple] = []
        self.cgroups: Optional[_Cgroups] = None
        self.tracking = "proc"
        self.scope: Optional[_Scope] = None
        self.outer_scope: Optional[_Scope] = None
        self.session_origin = None  # where pid allocation stood when the session began
        self.origin = None          # ... and when the running test began
        self.last_pid = -1          # the pid given out last before it began
        self.members: Optional[bytes] = None  # what was in the session's cgroup (pytest's) then
        self.members_file = ""
        self.pid_max = 4194304
        self.exit_cgroups: Optional[_Cgroups] = None
        self.at_exit = False  # pytest's exit check is still to come
        self.running = False  # inside a test's runtest protocol (else: torn down at the session's end)
        self.cgroup_error: Optional[OSError] = None  # the running test's cgroup could not be made
        self.late_leaks: List[dict] = []
        self.crash_leaks: List[dict] = []  # left by xdist workers that crashed (controller side)
        self.notes: List[str] = []  # the session's own check: said in the terminal summary
        self.on_sigterm = 0  # our SIGTERM handler is in place (in this pid)
        self.site_root: Optional[str] = None  # the rootdir of the session this one is inside

    # -- session ------------------------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session):
        self.cgroups, self.tracking = _tracking(self.config, self.prefix)
        self.site_root = SITES.open(str(self.config.rootpath), _read_self_environ())
        self.scope = _Scope(self.shared_marker, "the session (outside any test)",
                            self.cgroups.session if self.cgroups else None)
        # markers and descent need pytest to adopt what its tests detach; a cgroup holds every
        # process of its test whoever its parent is: orphans then go where they would go
        # without the plugin, and no zombie of the host is collected
        if not self.tracking.startswith("cgroup"):
            self.reaper.adopt_orphans()
            self.adopted = True
        HOST.install(self.scope)
        self.outer_scope, HOST.main = HOST.main, self.scope
        # children started before the session (a conftest, a plugin's configure hook) are the
        # host's own as well: their owners wait for them later
        for pid in _children():
            HOST.add(pid)
        if self.adopted:
            self.collector = _Collector()
            self.collector.start()
        self.session_since = self.reaper.now_ticks()
        self.session_origin = self.reaper.origin_now()
        self.pid_max = self.session_origin.pid_max or self.pid_max
        if self.cgroups:
            self.members_file = os.path.join(self.cgroups.session, "cgroup.procs")
        # What starts outside any test (session fixtures, plugins) carries the shared marker.
        self.outer = _swap_env({MARKER: self.shared_marker, SESSION_VAR: self.prefix, _site.AT: None, _site.IN: None})
        self.helpers = _mark_helpers(_Scope(f"{self.prefix}-multiprocessing", "multiprocessing's helper process",
                                            self.cgroups.own if self.cgroups else None))
        # SIGTERM (a CI job's timeout) would end pytest at once, leaving the running test's
        # processes and the cgroups behind: unless the host handles it, the session is
        # interrupted instead, and pytest ends by the signal once it is cleaned up
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            signal.signal(signal.SIGTERM, self._sigterm)
            self.on_sigterm = os.getpid()

    def _sigterm(self, signum, frame):
        if os.getpid() != self.on_sigterm:
            # a child forked without exec inherited the handler: it ends as it would have
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
            signal.raise_signal(signal.SIGTERM)
            return
        signal.signal(signal.SIGTERM, signal.SIG_DFL)  # a second one ends pytest at once
        self.on_sigterm = 0
        atexit.register(signal.raise_signal, signal.SIGTERM)
        raise _Terminated("SIGTERM: the session stops; pytest ends by SIGTERM once its tests are cleaned up")

    def pytest_report_header(self):
        return f"reaper: tracking: {self.tracking}"

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session):
        cgroups, self.cgroups = self.cgroups, None
        # The process's own session (not one run inline in another's test; not an xdist
        # worker, whose controller looks for what it left once it reports its end): what its
        # threads start after the check below is still the session's (its cgroup, its marker)
        # and is checked once more at pytest's exit, when no other thread can start anything.
        own = HOST.users == 1 and not _inline() and not os.environ.get("PYTEST_XDIST_WORKER")
        try:
            self._finish(cgroups, drop=not own)
        finally:
            if self.on_sigterm:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                self.on_sigterm = 0
            if self.collector:
                self.collector.finish()
                self.collector = None
            if own:
                self.exit_cgroups, self.at_exit = cgroups, True
                HOST.runner = None  # every spawn goes to its scope: the session's
                atexit.register(self._exit_check)
            else:
                self._close(cgroups)
        path = self.config.getoption("reaper_report")
        if path and not os.environ.get("PYTEST_XDIST_WORKER"):
            try:
                self._write(path)
            except OSError as e:
                # as the reaper command does: a clear error, not a traceback; the session's
                # own failures decide the status first, 74 (EX_IOERR) otherwise
                print(f"reaper: error: cannot write the report {path}: {e.strerror or e}", file=sys.stderr)
                if session.exitstatus == 0:
                    session.exitstatus = 74

    def _close(self, cgroups: Optional[_Cgroups]) -> None:
        """Everything the session changed, undone."""
        if cgroups:
            left = cgroups.close(self.timeout + self.grace + 5)
            if left:
                self.notes.append(left)
        _swap_env(self.outer)
        HOST.main = self.outer_scope
        for cls, name, fn in self.helpers:
            setattr(cls, name, fn)
        self.helpers = []
        HOST.uninstall()
        SITES.close(self.site_root)
        if self.adopted:
            self.reaper.release_orphans()
            self.adopted = False

    def _exit_check(self) -> None:
        """At pytest's exit (non-daemon threads joined): the other threads' spawns are held
        for good, and what the session started since its check is ended, as the check would
        have ended it; said on stderr."""
        if not self.at_exit:
            return
        self.at_exit = False
        cgroups, self.exit_cgroups = self.exit_cgroups, None
        with HOST.moving:
            HOST.final = threading.get_ident()
        try:
            HOST.settle()
            rep = None
            try:
                rep = self.reaper.reap_report(*self._session_finders(cgroups), timeout=self.timeout,
                                              grace=self.grace, host_children=HOST.current())
            except self.reaper.ReaperIncomplete as e:
                print(f"reaper: warning: the check at pytest's exit is incomplete: {_why(e)}", file=sys.stderr)
                rep = e.report
            except OSError as e:
                print(f"reaper: warning: the check at pytest's exit failed: {e}", file=sys.stderr)
            for p in rep.leaks if rep else ():
                print(f"reaper: started after the session's check, ended at pytest's exit: {p.pid}: "
                      f"{p.cmdline[:160]} [{p.fate}]", file=sys.stderr)
            if cgroups:
                left = cgroups.drop(cgroups.session)
                if left:
                    print(f"reaper: warning: {left}", file=sys.stderr)
        finally:
            # the interception stays: a thread may still run until the interpreter is gone
            HOST.exited.set()
            if cgroups:
                left = cgroups.close(self.timeout + self.grace + 5)
                if left:
                    print(f"reaper: warning: {left}", file=sys.stderr)

    def _session_finders(self, cgroups: Optional[_Cgroups]) -> list:
        finders = [self.reaper.with_env(MARKER, self.shared_marker, origin=self.session_origin)] + \
            _served(self.shared_marker)
        if cgroups:
            cgroups.goto(cgroups.own)  # out of the cgroup before it is ended
            finders.append(self.reaper.with_cgroup(cgroups.session))
        elif not self.config.pluginmanager.has_plugin("dsession"):
            # an xdist controller's children are its workers, which xdist itself ends
            finders.append(self.reaper.descendants(since=self.session_since,
                                                   unless_env=(MARKER, self.shared_marker)))
        return finders

    def _finish(self, cgroups: Optional[_Cgroups], drop: bool = True) -> None:
        # Processes of wider-scoped fixtures: nobody's test; cleaned up, reported apart.
        if HOST.users == 1 and not _inline():  # the process's own session, not one nested in a test
            _exit_finalizers()
        finders = self._session_finders(cgroups)
        try:
            # threads that still run (a fixture's, never stopped) start their children after
            # the check: one started during it would not be in the list of ours it is given
            with HOST.closed_for_others():
                rep = self.reaper.reap_report(*finders, timeout=self.timeout, grace=self.grace,
                                              host_children=HOST.current())
        except self.reaper.ReaperIncomplete as e:
            self.notes.append(f"the check of the session's own processes is incomplete: {_why(e)}")
            rep = e.report
        self.shared_leaks = [_record(p, p.test) for p in rep.leaks]
        if cgroups and drop:
            left = cgroups.drop(cgroups.session)
            if left:
                self.notes.append(left)

    def pytest_unconfigure(self, config):
        # a session that ended without its check (an error in another plugin's sessionfinish)
        # still leaves no cgroup behind
        if self.cgroups:
            cgroups, self.cgroups = self.cgroups, None
            cgroups.close(self.timeout + self.grace + 5)

    def _reap(self, finders, **kw):
        """A test's reap; an incomplete result is a warning on the test (something outside the
        test, such as another process held in an exec under heavy load, or no descriptors
        left): what was found is still reported and cleaned up."""
        try:
            return self.reaper.reap_report(*finders, **kw)
        except self.reaper.ReaperIncomplete as e:
            warnings.warn(ReaperIncompleteWarning(
                f"reaper: the check of this test is incomplete, processes may have been missed: {_why(e)}"),
                stacklevel=3)
            return e.report

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node):
        # the workers this xdist controller starts check their own tests (see pytest_configure)
        node.workerinput["reaper_controller"] = self.prefix
        node.workerinput["reaper_prefix"] = f"{secrets.token_hex(6)}-{node.gateway.id}"

    @pytest.hookimpl(optionalhook=True)
    def pytest_testnodedown(self, node, error):
        # A worker that died (killed, os._exit in a test) never reaped its tests nor removed its
        # cgroups; it started in this process's cgroup, so its session's cgroup is below it.
        prefix = getattr(node, "workerinput", {}).get("reaper_prefix")
        if error is None or not prefix:
            return
        from . import cgroup
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

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        # (a wrapper: an interruption leaves the protocol without its logfinish)
        self.running = True
        try:
            yield
        finally:
            self.running = False

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        if call.excinfo is not None and isinstance(call.excinfo.value, _TeardownError):
            _name_reason(outcome.get_result(), item, call.excinfo.value.summary)

    def pytest_terminal_summary(self, terminalreporter):
        for note in self.notes:
            terminalreporter.line(f"reaper: warning: {note}", yellow=True)
        # an interrupted session tears its last test down after the protocol, and a crashed
        # xdist worker none: no report can carry an error for them, so the leaks are listed here
        for title, records, red in (("left by tests torn down at the session's end", self.late_leaks, True),
                                    ("left by xdist workers that crashed", self.crash_leaks, True),
                                    ("left by fixtures wider than a test", self.shared_leaks, False)):
            if records:
                terminalreporter.section(f"reaper: {title}", red=red, yellow=not red)
                for r in records:
                    terminalreporter.line(f"{r['pid']}: {r['cmdline'][:160]}  [{r['fate']}, {r['test']}]")
                    at = _record_site(r)
                    if at:
                        terminalreporter.line(f"    started at {at.text()}")
        if os.environ.get("GITHUB_ACTIONS") == "true":
            seen = set()
            for r in [r for r in self.records if not r["allowed"]] + self.late_leaks + self.shared_leaks:
                if (r["pid"], r["start_time"]) not in seen:
                    seen.add((r["pid"], r["start_time"]))
                    terminalreporter.write_line(_annotation(r))

    def _write(self, path: str) -> None:
        leaks = [r for r in self.records if not r["allowed"]]
        per_test: Dict[str, int] = {}
        for r in leaks:
            per_test[r["test"]] = per_test.get(r["test"], 0) + 1
        doc = {
            "schema": SCHEMA,
            "reaper_version": self.reaper.__version__,
            "marker": MARKER,
            "session": self.prefix,
            "tracking": self.tracking.split()[0],
            "tests_checked": self.checked,
            "leaks": leaks,
            "allowed": [r for r in self.records if r["allowed"]],
            "fixture_leaks": self.shared_leaks,
            "summary": {"leaks": len(leaks), "tests_with_leaks": len(per_test), "per_test": per_test},
        }
        _replace_file(path, json.dumps(doc, indent=2, ensure_ascii=True) + "\n")

    # The records travel on the teardown report as an attribute of their own (xdist carries
    # it to the controller); user_properties would put them in --junitxml's testcases, where
    # xunit2 allows no <properties>.
    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report):
        if report.when != "teardown":
            return
        found = self.found.pop(report.nodeid, None)
        if found:  # before xdist's worker sends the report on
            report.reaper_leaks = found
        self.checked += 1
        self.records.extend(getattr(report, "reaper_leaks", None) or ())

    # -- per test -----------------------------------------------------------------------
    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        # A wider fixture outlives the test that first asked for it: its processes (and what
        # the threads it starts start later) are the session's, in the session's cgroup and with
        # the session's marker, not the test's; they are reaped when the session ends.
        if fixturedef.scope == "function":
            if self.test is None:  # the test's first function fixture: it begins here
                self._begin(request.node)
            yield
            return
        scope = _Scope(self.shared_marker, f"{fixturedef.argname} ({fixturedef.scope}-scoped fixture)",
                       self.scope.cgroup, self.scope)
        before, main = _swap_env(scope.env()), HOST.main
        where = self.cgroups.where if self.cgroups else None
        HOST.main = scope
        since = self.reaper.now_ticks()
        try:
            if where:
                self.cgroups.goto(self.cgroups.session)
            outcome = yield
            if outcome.excinfo is None:
                HOST.own(outcome.get_result(), scope, id(fixturedef))
        finally:
            self.wider.append((since, self.reaper.now_ticks()))
            HOST.main = main
            _swap_env(before)
            if where:
                self.cgroups.goto(where)

    def pytest_fixture_post_finalizer(self, fixturedef, request):
        if fixturedef.scope != "function":
            HOST.disown(id(fixturedef))

    def begin(self, item) -> Dict[str, Optional[str]]:
        self.count += 1
        marker = f"{self.prefix}-{self.count}"
        maker = goto = None
        if self.cgroups:
            maker, goto = functools.partial(self._test_cgroup, self.count), self.cgroups.goto
        self.cgroup_error = None
        self.test = _Scope(marker, item.nodeid, None, self.scope, maker, goto)
        SITES.files[marker] = str(item.path)
        self.last_pid = _last_pid()
        if self.cgroups:
            self.members = _read(self.members_file)
        if self.origin is None or self.last_pid == -1 or self.last_pid != self.origin.last_pid:
            self.origin = self.reaper.origin_now()  # else the last one is as good as a new one
        self.since = self.reaper.now_ticks()
        # one set up just before, within the same clock tick, started its processes "since"
        self.wider = [w for w in self.wider if w[1] >= self.since]
        HOST.main = self.test
        return _swap_env(self.test.env())

    def _test_cgroup(self, n: int) -> Optional[str]:
        """The running test's cgroup, made at its first spawn; None when it cannot be (the
        test is checked by its marker and by descent, and warned about)."""
        try:
            return self.cgroups.cg.create(self.cgroups.session, f"test-{n}")
        except OSError as e:
            self.cgroup_error = e
            return None

    def end(self, item, before: Dict[str, Optional[str]]) -> None:
        test, self.test = self.test, None
        test.live = False
        test.close()
        HOST.main = self.scope
        _swap_env(before)
        if self.cgroup_error is not None:
            warnings.warn(ReaperIncompleteWarning(f"reaper: no cgroup for this test ({self.cgroup_error}); "
                                                  "checked by its marker and by descent"))
        try:
            if test.cgroup:
                self.cgroups.goto(self.cgroups.session)  # out of it before it is reaped
            if self._quiet(test):
                self._check(item, test, [], False)
                return
            HOST.settle()  # a child forked for it by another thread is where it belongs
            left = self._left_something(test)
            if left and self.gc:
                gc.collect()  # finalizers may need the threads held back below
            pools = _end_open_pools(test.marker) if left else []  # its threads may fork: not held back yet
            with HOST.closed_for_others():
                self._check(item, test, pools, left)
        finally:
            SITES.forget(test.marker)
            if test.cgroup:
                left = self.cgroups.drop(test.cgroup)
                if left:
                    warnings.warn(ReaperIncompleteWarning(f"reaper: {left}"))

    def _quiet(self, test: _Scope) -> bool:
        """Whether nothing of the test's can be there, at the cost of a read or two: it started
        nothing through the interception, and no pid was given out since it began, or (pids
        move on a busy host) nothing new is in pytest's cgroup (with cgroups: what C code
        starts below the interception, and everything that descends from it, stays there) and
        among pytest's children (without cgroups pytest adopts the orphans of what it started)."""
        if test.spawned or test.cgroup is not None:
            return False
        last = _last_pid()
        if last == -1 or self.last_pid == -1:
            return False
        if last == self.last_pid:
            return True
        if (last - self.last_pid) % self.pid_max > self.pid_max // 2:
            return False  # so many given out that a pid may have been given out twice
        if self.cgroups and (self.members is None or _read(self.members_file) != self.members):
            return False
        for pid in _children():
            if pid not in HOST.children:
                st = _stat(pid)
                if st and st[2] >= self.since:
                    return False
        return True

    def _finders(self, test: _Scope, host) -> list:
        marker = test.marker
        # children forked for another scope (a wider fixture, its threads) are not the test's;
        # with a cgroup, descent still finds a child forked without exec that left it
        others = [pid for pid, (_, owner) in host.items() if owner != marker]
        others += self._wider_forks(test, others, host)
        finders = [self.reaper.with_env(MARKER, marker, origin=self.origin),
                   self.reaper.descendants(since=self.since, unless_env=(MARKER, marker), skip=others)]
        if test.cgroup:
            finders.append(self.reaper.with_cgroup(test.cgroup))
        return finders + _served(marker)

    def _wider_forks(self, test: _Scope, others: list, host) -> List[int]:
        """What a wider fixture set up during the test (or within its first clock tick) forked
        without exec and let go (a daemon: adopted by pytest, with pytest's own environment):
        started within that setup, no child of ours, no marker of the test's. Descent would
        take it for the test's."""
        if not self.wider:
            return []
        try:
            found = self.reaper.scan(self.reaper.descendants(since=self.since, unless_env=(MARKER, test.marker),
                                                             skip=others)).processes
        except OSError:
            return []
        entry = f"{MARKER}={test.marker}".encode()
        return [p.pid for p in found if p.pid not in host and
                any(a <= p.start_time <= b for a, b in self.wider) and entry not in _environ(p.pid)]

    def _left_something(self, test: _Scope) -> bool:
        """Whether a process of the test's is still running: if none is, there is nothing to
        wait for, collect garbage for (a full collection costs about 10 ms on pytest's heap)
        nor reap. One scan: the pids given out since the test began, pytest's children."""
        try:
            return any(p.fate != "exited" and p.state != "Z"
                       for p in self.reaper.scan(*self._finders(test, HOST.current())).processes)
        except OSError:
            return True

    def _check(self, item, test: _Scope, pools: List[str], left: bool = True) -> None:
        mark = item.get_closest_marker("reaper")
        kw = dict(mark.kwargs) if mark else {}
        if not left and not kw:
            return
        host = HOST.current()
        finders = self._finders(test, host)
        if kw.get("check", True) is False:
            # still cleaned up, never reported
            if left:
                self._reap(finders, timeout=self.timeout, grace=self.grace, host_children=host)
            return
        # a bad timeout of the marker must not stop the cleanup: the test's processes are
        # reaped with the session's timeout, then the test fails naming the value
        bad = kw.get("timeout")
        try:
            timeout = self.timeout if bad is None else _seconds(bad, "")
            bad = None
        except pytest.UsageError:
            timeout = self.timeout
        allow, bad_allow = _globs(kw.get("allow", ()))
        started = time.monotonic()
        rep = self._reap(finders, timeout=timeout, grace=self.grace, allow=allow,
                         host_children=host, holdings=True) if left else self.reaper.ReapReport((), False, 0.0, ())
        found = [p for p in rep.processes if p.leaked or (p.allowed and p.fate != "exited")]
        if found:
            self.found[item.nodeid] = [_record(p, item.nodeid) for p in found]
        leaks = rep.leaks
        if pools:
            pools = [f"reaper: {item.nodeid} left a multiprocessing pool open (workers {', '.join(pools)}); "
                     "it was terminated (its workers killed instead could die holding its queue's lock, "
                     "and its exit-time finalizer would wait for that lock)"]
        if leaks and not self.running:
            self.late_leaks.extend(_record(p, item.nodeid) for p in leaks)
            self.records.extend(self.found.pop(item.nodeid, ()))
            return
        if leaks:
            waited = time.monotonic() - started
            lines = [f"reaper: {item.nodeid} left {len(leaks)} process{'es' if len(leaks) > 1 else ''} "
                     f"running; stopped after {waited:.1f} s (timeout {timeout:g} s, grace {self.grace:g} s):"]
            for p in leaks:
                lines.append(f"  {p.pid}: {p.cmdline[:200]}")
                site = _site_of(p)
                if site is not None:
                    lines.append(f"      started at {site.text()}")
                owner = "; a child of pytest: its exit status is left for its owner" if p.host_child else ""
                lines.append(f"      {p.fate}, state {p.state}, age {p.age:.1f} s, cwd {p.cwd or '?'}, "
                             f"ancestry {p.ancestry or '?'}{owner}")
                lines.extend(_holdings_lines(p))
            lines.append("(allow one with @pytest.mark.reaper(allow=['glob']), or wait for it in the test)")
            lines.extend(pools)
            if bad is not None:
                lines.append(f"(@pytest.mark.reaper(timeout={bad!r}) is not a number of seconds >= 0 and "
                             f"<= {MAX_SECONDS:g}: {timeout:g} s was used)")
            if bad_allow is not None:
                lines.append(f"(@pytest.mark.reaper(allow={bad_allow!r}) is not a glob or a list of globs: "
                             "nothing was allowed)")
            raise _TeardownError("\n".join(lines), _leak_summary(leaks))
        if bad is not None:
            raise _TeardownError(f"reaper: @pytest.mark.reaper(timeout={bad!r}): the timeout must be >= 0 and <= "
                                 f"{MAX_SECONDS:g} (seconds); the test's processes were reaped with {timeout:g} s")
        if bad_allow is not None:
            raise _TeardownError(f"reaper: @pytest.mark.reaper(allow={bad_allow!r}) is not a glob or a list of globs")
        if pools:
            raise _TeardownError(pools[0], "left a multiprocessing pool open")

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_call(self, item):
        if self.test is None:  # a test without function fixtures
            self._begin(item)

    def _begin(self, item) -> None:
        """The test begins before its first function fixture is set up; its check is a
        finalizer of its own, registered before any of theirs, so it runs once they are all
        torn down (the test's own fixtures have stopped what they started) and before wider
        fixtures are. No fixture of the plugin's: one per test costs as much as the check."""
        before = self.begin(item)
        item.addfinalizer(functools.partial(self.end, item, before))

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


def _read(path: str) -> Optional[bytes]:
    """A small file of the kernel's, whole; None if it cannot be read."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        out = b""
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                return out
            out += chunk
    except OSError:
        return None
    finally:
        os.close(fd)


def _last_pid() -> int:
    """The pid the kernel gave out last in this PID namespace (-1: unknown)."""
    try:
        return int(_read("/proc/sys/kernel/ns_last_pid") or b"-1")
    except ValueError:
        return -1


def _environ(pid: int) -> List[bytes]:
    try:
        with open(f"/proc/{pid}/environ", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []


def _globs(value):
    """(the globs, None) of a marker's allow value, or ((), value) when it is none: a bad value
    must not stop the cleanup; the test fails naming it once its processes are reaped."""
    globs = (value,) if isinstance(value, str) else () if value is None else value
    try:
        globs = tuple(globs)
    except TypeError:
        return (), value
    return (globs, None) if all(isinstance(g, str) for g in globs) else ((), value)


def _served(marker: str) -> list:
    """A finder of the fork server's workers for marker's scope, when it started any."""
    with HOST.lock:
        if not any(m == marker for _, m in HOST.served.values()):
            return []
    return [functools.partial(HOST.served_by, marker)]


class _TeardownError(pytest.fail.Exception):
    """The plugin's verdict on a test at its teardown: the detail is the error's text, the
    summary what pytest's short test summary and --junitxml say after the test's id."""

    def __init__(self, detail: str, summary: Optional[str] = None):
        super().__init__(detail, pytrace=False)
        self.summary = summary or detail.split("\n", 1)[0].replace("reaper: ", "", 1)


SUMMARY_NAMES = 3      # leaks named in the short summary; the count says how many there are
SUMMARY_CMDLINE = 60   # characters of each one's cmdline there


def _leak_summary(leaks) -> str:
    """`left 2 processes: sleep 60, cat`: one line, short enough for a terminal's width
    (pytest trims it to that, except on CI, where it prints it whole)."""
    names = []
    for p in leaks[:SUMMARY_NAMES]:
        name = " ".join((p.cmdline or p.comm or f"pid {p.pid}").split())  # no newline breaks the line
        names.append(name if len(name) <= SUMMARY_CMDLINE else name[:SUMMARY_CMDLINE - 3] + "...")
    more = f", ... ({len(leaks) - SUMMARY_NAMES} more)" if len(leaks) > SUMMARY_NAMES else ""
    return f"left {len(leaks)} process{'es' if len(leaks) > 1 else ''}: {', '.join(names)}{more}"


def _name_reason(report, item, summary: str) -> None:
    """Make `summary` the crash message of a teardown report. pytest takes the short summary's
    reason (and --junitxml its message) from there, and a failure raised without a traceback
    has none; xdist carries it to the controller from the chain's last entry."""
    chain = getattr(report.longrepr, "chain", None)
    if not chain:
        return
    try:
        from _pytest._code.code import ReprFileLocation
    except ImportError:  # a pytest without it: the summary names only the test
        return
    path, lineno, _ = item.location
    crash = ReprFileLocation(path, (lineno or 0) + 1, summary)
    tb, _, descr = chain[-1]
    report.longrepr.chain = [*chain[:-1], (tb, crash, descr)]
    report.longrepr.reprcrash = crash


def _why(e) -> str:
    return e.strerror.replace("reaper: the result is incomplete: ", "")


def _holdings_lines(p) -> List[str]:
    """What a leak held when it was found still running (the port the next test cannot bind,
    the pipe that keeps a CI step waiting), for the teardown error."""
    if p.holds is None:
        return []
    lines = [f"      rss {p.rss / 1048576:.1f} MiB, cpu {p.cpu_time:.2f} s"]
    if p.holds:
        lines.append(f"      holds {p.holds}")
    return lines


def _record(p, test: Optional[str]) -> dict:
    return {
        "test": test, "pid": p.pid, "start_time": p.start_time, "cmdline": p.cmdline,
        "cwd": p.cwd, "exe": p.exe, "comm": p.comm, "state": p.state, "fate": p.fate,
        "age": round(p.age, 3), "ppid": p.ppid, "pgrp": p.pgrp, "uid": p.uid,
        "found_by": list(p.found_by), "ancestry": p.ancestry, "allowed": p.allowed,
        "host_child": p.host_child, "started_at": site.as_dict() if (site := _site_of(p)) else None,
    }


def _github(text: str, prop: bool = False) -> str:
    text = text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")
    return text.replace(":", "%3A").replace(",", "%2C") if prop else text


def _annotation(r: dict) -> str:
    """A leak as a GitHub Actions error annotation, at the line that started it when known,
    else at the test's file."""
    at = r.get("started_at") or {}
    frame = at.get("test_frame") or at.get("innermost")
    test = r["test"] or ""
    where = f"file={_github(frame['file'], True)},line={frame['line']}," if frame else \
        (f"file={_github(test.split('::', 1)[0], True)}," if "::" in test else "")
    msg = f"{test or 'no test'} left pid {r['pid']} running ({r['fate']}): {r['cmdline'][:300]}"
    site = _record_site(r)
    if site:
        msg += f"; started at {site.text()}"
    return f"::error {where}title={_github('reaper: leaked process', True)}::{_github(msg)}"


def _record_site(r: dict) -> Optional[_site.Site]:
    at = r.get("started_at")
    if not at:
        return None
    return _site.Site(*(_site.Frame(**f) if f else None for f in (at.get("test_frame"), at.get("innermost"))),
                      at.get("via"))


def _read_self_environ() -> bytes:
    try:
        with open("/proc/self/environ", "rb") as f:
            return f.read()
    except OSError:
        return b""


def _site_of(p) -> Optional[_site.Site]:
    return SITES.of(p.pid, p.start_time, p.ancestry, p.started_at, p.started_in)
