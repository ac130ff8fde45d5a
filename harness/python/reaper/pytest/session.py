# SPDX-License-Identifier: MIT
"""The checking session: what it sets up at its start, checks at its end and at pytest's
exit, and undoes."""

from __future__ import annotations

import atexit
import os
import signal
import sys
import threading
import warnings
from typing import Dict, List, Optional

import pytest

from .. import _site, kin
from . import patches, spawn
from .cgroups import _Cgroups, _tracking
from .check import Checks
from .collector import _Collector
from .host import HOST, SITES
from .mp import _exit_finalizers, _served
from .options import DEFAULT_GRACE, DEFAULT_TIMEOUT, MARKER, SESSION_VAR, ReaperIncompleteWarning, _number, _token
from .reports import Reports, _record, _why
from .scope import _Scope, _swap_env
from .xdist import Xdist

class _Terminated(KeyboardInterrupt):
    """SIGTERM while the session runs: it stops as on Ctrl-C (the tests torn down and checked,
    the cgroups removed), then pytest ends by SIGTERM all the same."""


def _inline() -> bool:
    """Whether this session runs inside another pytest session of the same process (pytester's
    runpytest, inline): the process, and what its exit would finalize, are that session's."""
    from _pytest import main
    code, f, n = main.wrap_session.__code__, sys._getframe(1), 0
    while f is not None:
        n += f.f_code is code
        f = f.f_back
    return n > 1


def _console() -> bool:
    """Whether pytest runs as a program (``pytest``, ``python -m pytest``: its console entry
    point), so the process ends when the session does; else a program called ``pytest.main()``
    and goes on once it returns."""
    from _pytest.config import console_main
    code, f = console_main.__code__, sys._getframe(1)
    while f is not None and f.f_code is not code:
        f = f.f_back
    return f is not None


class _Session(Checks, Xdist, Reports):
    """The plugin's session: its state, and its hooks (per test: Checks; xdist: Xdist; reports:
    Reports)."""

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
            f"{_token()}-{self.worker}"
        self.shared_marker = f"{self.prefix}-shared"
        self.count = 0
        self.test: Optional[_Scope] = None  # the running test's scope
        self.since = 0                      # when it began (clock ticks since boot)
        self.wider: List[tuple] = []        # (from, to) ticks: wider fixtures set up since it began
        self.session_since = 0
        self.records: List[dict] = []       # from teardown reports (controller side under xdist)
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
        self.site_root = SITES.open(str(self.config.rootpath), kin.environ() or b"")
        self.scope = _Scope(self.shared_marker, "the session (outside any test)",
                            self.cgroups.session if self.cgroups else None)
        # markers and descent need pytest to adopt what its tests detach; a cgroup holds every
        # process of its test whoever its parent is: orphans then go where they would go
        # without the plugin, and no zombie of the host is collected
        if not self.tracking.startswith("cgroup"):
            self.reaper.adopt_orphans()
            self.adopted = True
        if spawn.install(self.scope):
            HOST.saved = patches.apply("spawn", self.scope)
        self.outer_scope, HOST.main = HOST.main, self.scope
        # children started before the session (a conftest, a plugin's configure hook) are the
        # host's own as well: their owners wait for them later
        for p in kin.children():
            HOST.add(p.pid, now=True)
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
        self.helpers = patches.apply("multiprocessing", _Scope(f"{self.prefix}-multiprocessing", "multiprocessing's helper process",
                                            self.cgroups.own if self.cgroups else None))
        # SIGTERM (a CI job's timeout) would end pytest at once, leaving the running test's
        # processes and the cgroups behind: unless the host handles it, the session is
        # interrupted instead, and pytest ends by the signal once it is cleaned up
        if threading.current_thread() is threading.main_thread() and \
                signal.getsignal(signal.SIGTERM) == signal.SIG_DFL:
            term = self._sigterm
            signal.signal(signal.SIGTERM, term)
            self.on_sigterm = os.getpid()
            # kept for pytest's process: a forked child ends by SIGTERM as at its default, also
            # while it waits in C code, where the handler (Python's) would never run
            try:
                self.reaper.keep_handler(signal.SIGTERM)
                HOST.term_kept = term  # kept again when a test puts it back (spawn.keeps_sigterm)
            except OSError:  # the handler still ends a child, once its Python code runs
                pass

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
        # A program that called pytest.main() goes on: everything is undone when it returns, and
        # what its threads start from then on is the program's.
        own = HOST.users == 1 and not _inline() and not os.environ.get("PYTEST_XDIST_WORKER") and _console()
        try:
            self._finish(cgroups, drop=not own)
        finally:
            if self.on_sigterm:
                signal.signal(signal.SIGTERM, signal.SIG_DFL)
                self.on_sigterm = 0
            if HOST.term_kept == self._sigterm:
                # not kept by HOST, which lives to the interpreter's last step: through it,
                # pytest's config and every plugin's object (a plugin's file left unflushed)
                HOST.term_kept = None
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
        patches.restore(self.helpers)
        self.helpers = []
        if HOST.users == 1:  # the last session: the interception goes
            patches.restore(HOST.saved)
        spawn.uninstall()
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
        HOST.hold_forks_at_exit()
        with HOST.moving_lock:
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
            # the sites' shared file closed now, not left to the interpreter's end, where an
            # open file is finalized with a ResourceWarning (what is started from here on has
            # no check to name it for)
            SITES.close(self.site_root)
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

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        # (a wrapper: an interruption leaves the protocol without its logfinish)
        self.running = True
        try:
            yield
        finally:
            self.running = False
