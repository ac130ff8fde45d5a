# SPDX-License-Identifier: MIT
"""pytest plugin: every test is checked for the processes it leaves behind.

Load it with ``-p reaper.pytest_plugin`` (an installed reaper registers it as the ``reaper``
entry point, so it loads by itself; ``-p no:reaper`` turns it off).

* The pytest process adopts orphans for the session, so what a test detaches reparents to it.
* What starts outside a test (wider-scoped fixtures included) carries a session marker and
  is reaped when the session ends, listed apart ("left by fixtures wider than a test").
* For each test, ``REAPER_TEST=<nodeid>`` and ``REAPER_PYTEST=<session>-<worker>-<n>`` are put
  in ``os.environ`` before its first function-scoped fixture and kept until its last one is
  torn down, so every process the test (or its fixtures) starts carries them. Fixtures of a
  wider scope set up meanwhile get a session marker instead: they are not the test's.
* After the test's fixtures are torn down, whatever carries the test's marker gets
  ``--reaper-timeout`` seconds to exit, is then killed (identity-checked), and the test gets
  an error at teardown listing each leaked process. Markers are per test, so a later test is
  never blamed for an earlier one.
* ``@pytest.mark.reaper(timeout=..., allow=[globs])`` per test; ``--reaper-report FILE`` writes
  the session's leaks as JSON.
"""

from __future__ import annotations

import json
import math
import os
import secrets
import sys
import tempfile
import time
from typing import Dict, List, Optional

import pytest

import reaper

MARKER = "REAPER_PYTEST"
DEFAULT_TIMEOUT = 3.0
SCHEMA = "reaper-pytest/1"
_PROP = "reaper_leaks"


def pytest_addoption(parser):
    group = parser.getgroup("reaper", "process leak detection (reaper)")
    group.addoption("--reaper-timeout", type=float, default=None, metavar="SECONDS",
                    help=f"how long a test's leftovers get to exit before they are killed "
                         f"(default {DEFAULT_TIMEOUT}, or the reaper_timeout ini value)")
    group.addoption("--reaper-report", default=None, metavar="FILE",
                    help="write the session's leaked processes to FILE as JSON")
    group.addoption("--reaper-disable", action="store_true", default=False,
                    help="load the plugin but check nothing")
    parser.addini("reaper_timeout", "default for --reaper-timeout", default=None)


def pytest_configure(config):
    config.addinivalue_line(
        "markers", "reaper(timeout=None, allow=(), check=True): per-test process leak settings: "
        "seconds leftovers get before being killed, cmdline/exe globs that may be left (they are "
        "still cleaned up), check=False to skip the check")
    if config.getoption("reaper_disable"):
        return
    config.pluginmanager.register(_Session(config), "reaper-session")


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
    if not math.isfinite(seconds) or seconds < 0:
        raise pytest.UsageError(f"{what} must be >= 0 (a finite number of seconds), not {value!r}")
    return seconds


def _timeout_of(config) -> float:
    value = config.getoption("reaper_timeout")
    if value is not None:
        return _seconds(value, "--reaper-timeout")
    ini = config.getini("reaper_timeout")
    return _seconds(ini, "the reaper_timeout ini value") if ini not in (None, "") else DEFAULT_TIMEOUT


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


class _Session:
    def __init__(self, config):
        self.config = config
        self.timeout = _timeout_of(config)
        self.worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.prefix = f"{secrets.token_hex(6)}-{self.worker}"
        self.shared_marker = f"{self.prefix}-shared"
        self.count = 0
        self.current: Optional[str] = None  # the running test's marker
        self.records: List[dict] = []       # from teardown reports (controller side under xdist)
        self.checked = 0
        self.shared_leaks: List[dict] = []
        self.adopted = False
        self.outer: Dict[str, Optional[str]] = {}

    # -- session ------------------------------------------------------------------------
    @pytest.hookimpl(tryfirst=True)
    def pytest_sessionstart(self, session):
        reaper.adopt_orphans()
        self.adopted = True
        # What starts outside any test (session fixtures, plugins) carries the shared marker.
        self.outer = _swap_env({MARKER: self.shared_marker})

    @pytest.hookimpl(trylast=True)
    def pytest_sessionfinish(self, session):
        # Processes of wider-scoped fixtures: nobody's test; cleaned up, reported apart.
        rep = reaper.reap_report(reaper.with_env(MARKER, self.shared_marker), timeout=self.timeout)
        self.shared_leaks = [_record(p, p.test) for p in rep.leaks]
        _swap_env(self.outer)
        if self.adopted:
            reaper.release_orphans()
            self.adopted = False
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

    def pytest_terminal_summary(self, terminalreporter):
        if self.shared_leaks:
            terminalreporter.section("reaper: left by fixtures wider than a test", yellow=True)
            for r in self.shared_leaks:
                terminalreporter.line(f"{r['pid']}: {r['cmdline'][:160]}  [{r['fate']}, {r['test']}]")

    def _write(self, path: str) -> None:
        leaks = [r for r in self.records if not r["allowed"]]
        per_test: Dict[str, int] = {}
        for r in leaks:
            per_test[r["test"]] = per_test.get(r["test"], 0) + 1
        doc = {
            "schema": SCHEMA,
            "reaper_version": reaper.__version__,
            "marker": MARKER,
            "session": self.prefix,
            "tests_checked": self.checked,
            "leaks": leaks,
            "allowed": [r for r in self.records if r["allowed"]],
            "fixture_leaks": self.shared_leaks,
            "summary": {"leaks": len(leaks), "tests_with_leaks": len(per_test), "per_test": per_test},
        }
        _replace_file(path, json.dumps(doc, indent=2, ensure_ascii=True) + "\n")

    def pytest_runtest_logreport(self, report):
        if report.when != "teardown":
            return
        self.checked += 1
        for name, value in report.user_properties:
            if name == _PROP:
                self.records.extend(json.loads(value))

    # -- per test -----------------------------------------------------------------------
    @pytest.hookimpl(hookwrapper=True)
    def pytest_fixture_setup(self, fixturedef, request):
        # A wider fixture outlives the test that first asked for it: its processes get the
        # session marker, not the test's, and are reaped when the session ends.
        if fixturedef.scope == "function":
            yield
            return
        before = _swap_env({MARKER: self.shared_marker,
                            "REAPER_TEST": f"{fixturedef.argname} ({fixturedef.scope}-scoped fixture)"})
        try:
            yield
        finally:
            _swap_env(before)

    def begin(self, item) -> Dict[str, Optional[str]]:
        self.count += 1
        self.current = f"{self.prefix}-{self.count}"
        return _swap_env({MARKER: self.current, "REAPER_TEST": item.nodeid})

    def end(self, item, before: Dict[str, Optional[str]]) -> None:
        marker, self.current = self.current, None
        _swap_env(before)
        mark = item.get_closest_marker("reaper")
        kw = dict(mark.kwargs) if mark else {}
        if kw.get("check", True) is False:
            # still cleaned up, never reported
            reaper.reap_report(reaper.with_env(MARKER, marker), timeout=self.timeout)
            return
        # a bad timeout of the marker must not stop the cleanup: the test's processes are
        # reaped with the session's timeout, then the test fails naming the value
        bad = kw.get("timeout")
        try:
            timeout = self.timeout if bad is None else _seconds(bad, "")
            bad = None
        except pytest.UsageError:
            timeout = self.timeout
        allow = kw.get("allow", ())
        allow = (allow,) if isinstance(allow, str) else tuple(allow)
        started = time.monotonic()
        rep = reaper.reap_report(reaper.with_env(MARKER, marker), timeout=timeout, allow=allow, holdings=True)
        found = [p for p in rep.processes if p.leaked or (p.allowed and p.fate != "exited")]
        if found:
            item.user_properties.append((_PROP, json.dumps([_record(p, item.nodeid) for p in found])))
        leaks = rep.leaks
        if leaks:
            waited = time.monotonic() - started
            lines = [f"reaper: {item.nodeid} left {len(leaks)} process{'es' if len(leaks) > 1 else ''} "
                     f"running; killed after {waited:.1f} s (timeout {timeout:g} s):"]
            for p in leaks:
                lines.append(f"  {p.pid}: {p.cmdline[:200]}")
                lines.append(f"      {p.fate}, state {p.state}, age {p.age:.1f} s, cwd {p.cwd or '?'}, "
                             f"ancestry {p.ancestry or '?'}")
                lines.extend(_holdings_lines(p))
            lines.append("(allow one with @pytest.mark.reaper(allow=['glob']), or wait for it in the test)")
            if bad is not None:
                lines.append(f"(@pytest.mark.reaper(timeout={bad!r}) is not a number of seconds >= 0: "
                             f"{timeout:g} s was used)")
            pytest.fail("\n".join(lines), pytrace=False)
        if bad is not None:
            pytest.fail(f"reaper: @pytest.mark.reaper(timeout={bad!r}): the timeout must be >= 0 (a finite "
                        f"number of seconds); the test's processes were reaped with {timeout:g} s", pytrace=False)


def _holdings_lines(p: "reaper.Process") -> List[str]:
    """What a leak held when it was found still running (the port the next test cannot bind,
    the pipe that keeps a CI step waiting), for the teardown error."""
    if p.holds is None:
        return []
    lines = [f"      rss {p.rss / 1048576:.1f} MiB, cpu {p.cpu_time:.2f} s"]
    if p.holds:
        lines.append(f"      holds {p.holds}")
    return lines


def _record(p: "reaper.Process", test: Optional[str]) -> dict:
    return {
        "test": test, "pid": p.pid, "start_time": p.start_time, "cmdline": p.cmdline,
        "cwd": p.cwd, "exe": p.exe, "comm": p.comm, "state": p.state, "fate": p.fate,
        "age": round(p.age, 3), "ppid": p.ppid, "pgrp": p.pgrp, "uid": p.uid,
        "found_by": list(p.found_by), "ancestry": p.ancestry, "allowed": p.allowed,
    }


@pytest.fixture(autouse=True)
def _reaper_check(request):
    """Runs first among a test's function fixtures, so it is torn down last: the test's
    own fixtures have stopped what they started before the leak check."""
    state = request.config.pluginmanager.get_plugin("reaper-session")
    if state is None:
        yield
        return
    before = state.begin(request.node)
    try:
        yield
    finally:
        state.end(request.node, before)
