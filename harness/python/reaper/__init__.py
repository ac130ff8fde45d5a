# SPDX-License-Identifier: MIT
"""reaper for Python: find, wait for, kill and report the processes a test left behind.

A drop-in for the hand-written ``_reaper.py`` modules of e2e suites (same calls, same
meanings), over libreaper through ctypes::

    import reaper
    reaper.adopt_orphans()
    leaked = reaper.reap(reaper.with_home(sandbox), timeout=5)   # ["PID: cmdline", ...]
    assert not leaked, leaked

``reap_report()`` gives typed records instead of strings. Waiting is event-driven inside the
library (pidfds), every signal is identity-checked (pid + start time through a pidfd), and the
zombies of adopted orphans and of what was killed are collected. The GIL is released while the
library waits.
"""

from __future__ import annotations

import ctypes
import math
import os
import time
from dataclasses import asdict, dataclass
from typing import Dict, Iterable, List, Optional, Tuple

from . import _lib, compat
from ._site import Frame
from .compat import all_stats, cmdline, kill_identified, start_time, stat

__all__ = [
    "REAP_TIMEOUT", "Finder", "Process", "ReapReport", "ReaperError", "ReaperIncomplete", "adopt_orphans",
    "release_orphans", "adopted", "keep_handler", "with_home", "with_env", "descendants", "reap",
    "reap_report", "scan", "library_path", "stat", "start_time", "cmdline", "all_stats",
    "kill_identified", "now_ticks", "with_cgroup", "origin_now", "Frame",
]

REAP_TIMEOUT = 30.0
# Importing the package never fails for want of the library (its pytest plugin is imported by
# every pytest run once installed, enabled or not): the first call that needs it says why.
try:
    _clib, library_path = _lib.load()
    load_error: Optional[ImportError] = None
except ImportError as _e:
    _clib, library_path, load_error = None, None, _e


# The version is the loaded library's: the package is a view of it, and the wheel's metadata is
# read from the header that library was compiled from.
__version__ = _clib.reaper_version().decode("ascii") if _clib is not None else "unknown"


def _c():
    if _clib is None:
        raise ImportError(str(load_error)) from load_error
    return _clib

Identity = Tuple[int, int]  # (pid, kernel start time in clock ticks)


class ReaperError(OSError):
    """A libreaper call failed; errno and strerror say why."""


class ReaperIncomplete(ReaperError):
    """The reap or scan could not be completed: processes may have been missed or left running
    (errno EMFILE/ENFILE: out of descriptors; ENOMEM; EAGAIN: a process under an exec could not
    be judged in time). ``report`` is what it did find and do."""

    def __init__(self, err: int, reason: str, report: "ReapReport"):
        super().__init__(err, f"reaper: the result is incomplete: {reason} ({os.strerror(err)})")
        self.report = report


def _check(rc: int, what: str) -> int:
    if rc < 0:
        raise ReaperError(-rc, f"{what}: {os.strerror(-rc)}")
    return rc


# ---- adoption -------------------------------------------------------------------------

def adopt_orphans() -> None:
    """Start adopting orphaned descendants (PR_SET_CHILD_SUBREAPER; refcounted, pair each
    call with ``release_orphans``)."""
    _check(_c().reaper_adopt(), "reaper_adopt")


def release_orphans() -> None:
    """Undo one ``adopt_orphans``; the last one stops adopting. Processes already adopted stay
    our children. A release without an adopt is harmless."""
    if _c().reaper_adopted() > 0:
        _check(_c().reaper_release(), "reaper_release")


def keep_handler(signum: int) -> None:
    """Keep signum's handler, as installed now (``signal.signal``), for this process alone: a
    process forked from it afterwards ends by signum at once, as at its default action, instead
    of running the inherited handler, which runs only once the child's Python code runs again
    (a child blocked in a wait never does). Installing another handler undoes it."""
    _check(_c().reaper_keep_handler(signum), "reaper_keep_handler")


def adopted() -> int:
    """How many ``adopt_orphans`` calls are in force."""
    return _c().reaper_adopted()


# ---- finders --------------------------------------------------------------------------

class Finder:
    """What to look for; pass several to ``reap`` to combine them. Calling one scans now and
    returns ``{(pid, start_time): cmdline}``, as a hand-written ``_reaper.py``'s finders do."""

    __slots__ = ("kind", "marker", "root", "since", "skip", "cgroup", "origin")

    def __init__(self, kind: int, marker: Optional[str] = None, root: int = 0, since: int = 0,
                 skip: Tuple[int, ...] = (), cgroup: Optional[str] = None, origin=None):
        self.kind = kind
        self.marker = marker
        self.root = root
        self.since = since
        self.skip = skip
        self.cgroup = cgroup
        self.origin = origin

    def describe(self) -> str:
        # the names reaper_matched_by gives
        if self.kind == _lib.FIND_ENV:
            return f"env {self.marker}"
        if self.kind == _lib.FIND_CGROUP:
            return "cgroup"
        return f"descendant of PID {self.root}" if self.root else "descendant of the run"

    def __repr__(self) -> str:
        return f"<reaper.Finder {self.describe()}>"

    def __call__(self) -> Dict[Identity, str]:
        return {(p.pid, p.start_time): p.cmdline for p in scan(self).processes if p.fate == "alive"}


def with_env(name: str, value: str, origin=None) -> Finder:
    """Every live process whose environment holds exactly ``name=value``, except us. With an
    ``origin`` (``origin_now()``): only those started since, read through the pids given out
    since (see reaper_origin_now in libreaper(3))."""
    if not name or "=" in name or "\0" in name or "\0" in str(value):
        raise ValueError(f"reaper.with_env: bad variable name or value: {name!r}={value!r}")
    if origin is not None and not isinstance(origin, _lib.Origin):
        raise TypeError(f"reaper.with_env: origin {origin!r} is not from reaper.origin_now()")
    return Finder(_lib.FIND_ENV, marker=f"{name}={value}", origin=origin)


def with_home(home: "os.PathLike[str] | str") -> Finder:
    """Every live process whose environment points HOME at ``home`` (the sandbox), except us."""
    return with_env("HOME", os.fspath(home))


def origin_now():
    """Where pid allocation stands now: a marker finder given it (``with_env(..., origin=)``)
    matches only processes started from now on, and scans only the pids given out since."""
    o = _lib.Origin()
    _check(_c().reaper_origin_now(ctypes.byref(o)), "reaper_origin_now")
    return o


def descendants(pid: Optional[int] = None, since: int = 0, unless_env: Optional[Tuple[str, str]] = None,
                skip: Iterable[int] = ()) -> Finder:
    """Every descendant of ``pid`` (default: this process), adopted orphans included.

    Narrowed to what one test started inside a long-lived process: ``since`` (a start time in
    clock ticks since boot, see ``now_ticks``) drops what started earlier; ``unless_env=(NAME,
    VALUE)`` drops what gives NAME another value than VALUE (another test's), unless it is the
    value ``pid`` itself was started with; ``skip`` drops those pids. Dropped processes are not
    walked: their subtrees are whoever started them's."""
    if pid is not None and pid <= 0:
        raise ValueError(f"reaper.descendants: bad pid {pid!r}")
    if since < 0:
        raise ValueError(f"reaper.descendants: bad since {since!r}")
    marker = None
    if unless_env is not None:
        marker = with_env(*unless_env).marker
    return Finder(_lib.FIND_TREE, marker=marker, root=pid or 0, since=int(since),
                  skip=tuple(int(p) for p in skip))


def with_cgroup(path: "os.PathLike[str] | str") -> Finder:
    """Every process in the cgroup v2 directory ``path`` and in the cgroups below it (see
    ``reaper.cgroup``); a reap with one waits on the cgroup's events and ends it at once."""
    return Finder(_lib.FIND_CGROUP, cgroup=os.fspath(path))


def now_ticks() -> int:
    """Now, in the unit of a process's start time (clock ticks since boot): a process started
    from now on has a start time at least this."""
    return int(time.clock_gettime(time.CLOCK_BOOTTIME) * os.sysconf("SC_CLK_TCK"))


# ---- results --------------------------------------------------------------------------

def _text(p) -> str:
    return ctypes.string_at(p).decode("utf-8", errors="replace") if p else ""


@dataclass(frozen=True)
class Process:
    """One process the finders found, as the library first saw it, and what became of it."""
    pid: int
    start_time: int
    cmdline: str
    cwd: str
    state: str
    found_by: Tuple[str, ...]
    test: Optional[str]
    fate: str
    allowed: bool
    ppid: int
    pgrp: int
    uid: int
    age: float
    comm: str
    exe: str
    ancestry: str
    exit_status: Optional[int]
    environ_unreadable: bool
    #: with ``holdings=True``, for a leak: what it held before it was signalled, as
    #: ``(kind, fd, text)`` (kind: listening, connected, file, deleted, output, unreadable)
    holdings: Tuple[Tuple[str, int, str], ...] = ()
    #: the holdings' texts joined by ", " ("127.0.0.1:8000 (listening), the run's stdout");
    #: None when they were not gathered
    holds: Optional[str] = None
    rss: Optional[int] = None
    cpu_time: Optional[float] = None
    host_child: bool = False
    #: with ``holdings=True``, for a leak: why it was still running at the deadline, in words
    #: ("ignores SIGTERM; waits in pipe_read"), "" when no reason is known; None when not read
    why: Optional[str] = None
    #: a leak, as the library counts one (reaper_proc_is_leak): still running at the end, or
    #: it had to be signalled, and not allowed by a pattern
    leaked: bool = False
    #: where it was started, as its environment said (``REAPER_STARTED_AT``: the frame in the
    #: test's own file; ``REAPER_STARTED_IN``: the innermost frame of the caller's code), as
    #: ``(file, line, function)``; None when not known
    started_at: Optional[Frame] = None
    started_in: Optional[Frame] = None

    def line(self) -> str:
        """``"PID: cmdline"``, the line a hand-written ``_reaper.py`` reports."""
        return f"{self.pid}: {self.cmdline[:160]}"

    def as_dict(self) -> dict:
        d = asdict(self)
        d["found_by"] = list(self.found_by)
        return d


@dataclass(frozen=True)
class ReapReport:
    processes: Tuple[Process, ...]
    escalated: bool
    waited: float
    pattern_hits: Tuple[int, ...]

    @property
    def leaks(self) -> List[Process]:
        return [p for p in self.processes if p.leaked]

    def lines(self) -> List[str]:
        return [p.line() for p in self.leaks]

    def count(self, fate: str) -> int:
        return sum(1 for p in self.processes if p.fate == fate)


def _frame(file, line: int, func) -> Optional[Frame]:
    path = _text(file)
    return Frame(path, line, _text(func)) if path else None


def _holdings(c) -> dict:
    if not c.holdings_read:
        return {}
    held = tuple((_c().reaper_hold_kind_name(c.holdings[i].kind).decode("ascii"), c.holdings[i].fd,
                  _text(c.holdings[i].what)) for i in range(c.nholdings))
    why = {"why": _text(c.why_text)} if c.why_read else {}
    return {"holdings": held, "holds": _text(c.holds), "rss": c.rss, "cpu_time": c.cpu_time, **why}


def _convert(rep: "_lib.Report", finders: Tuple[Finder, ...]) -> ReapReport:
    procs = []
    for i in range(rep.n):
        c = rep.procs[i]
        test = _text(c.test)
        procs.append(Process(
            pid=c.pid, start_time=c.start_time, cmdline=_text(c.cmdline), cwd=_text(c.cwd),
            state=c.state.decode("ascii", errors="replace"),
            found_by=tuple(f.describe() for b, f in enumerate(finders) if c.matched_by & (1 << b)),
            test=test or None, fate=_c().reaper_fate_name(c.fate).decode("ascii"),
            allowed=bool(c.allowed), ppid=c.ppid, pgrp=c.pgrp, uid=c.uid, age=c.age,
            comm=_text(c.comm), exe=_text(c.exe), ancestry=_text(c.ancestry),
            exit_status=None if c.exit_status < 0 else c.exit_status,
            environ_unreadable=bool(c.environ_unreadable), host_child=bool(c.host_child),
            leaked=bool(_c().reaper_proc_is_leak(ctypes.byref(c))),
            started_at=_frame(c.started_file, c.started_line, c.started_func),
            started_in=_frame(c.started_in_file, c.started_in_line, c.started_in_func),
            **_holdings(c)))
    hits = tuple(rep.pattern_hits[i] for i in range(rep.npatterns)) if rep.pattern_hits else ()
    return ReapReport(tuple(procs), bool(rep.escalated), rep.waited, hits)


def _finder_array(finders: Tuple[Finder, ...]):
    for f in finders:
        if not isinstance(f, (Finder, compat.CallableFinder)):
            raise TypeError(f"reaper: {f!r} is not a reaper finder (use with_home, with_env, "
                            "descendants, or a callable returning {(pid, start_time): cmdline})")
    arr = (_lib.Finder * max(1, len(finders)))()
    keep = []  # the skip arrays live as long as the finder array
    for i, f in enumerate(finders):
        if isinstance(f, compat.CallableFinder):
            f.fill(arr[i])
            continue
        arr[i].kind = f.kind
        arr[i].marker = f.marker.encode("utf-8", errors="surrogateescape") if f.marker else None
        arr[i].root = f.root
        arr[i].since = f.since
        arr[i].cgroup = os.fsencode(f.cgroup) if f.cgroup else None
        if f.origin is not None:
            keep.append(f.origin)
            arr[i].origin = ctypes.pointer(f.origin)
        if f.skip:
            skip = _pids(f.skip)
            keep.append(skip)
            arr[i].skip = skip
            arr[i].nskip = len(f.skip)
    return arr, keep


def _pids(pids):
    return (_lib.pid_t * max(1, len(pids)))(*pids)


def _patterns(allow: Iterable[str], keep: Iterable[str]):
    pats = [(_lib.ALLOW, g) for g in allow] + [(_lib.KEEP, g) for g in keep]
    for _, glob in pats:
        # the C string ends at a NUL: "*\0x" would allow every leftover
        if "\0" in glob:
            raise ValueError(f"reaper: an allow/keep pattern holding a NUL: {glob!r}")
    arr = (_lib.Pattern * max(1, len(pats)))()
    for i, (kind, glob) in enumerate(pats):
        arr[i].kind = kind
        arr[i].glob = glob.encode("utf-8", errors="surrogateescape")
    return arr, len(pats)


def reap_report(*finders: Finder, timeout: float = REAP_TIMEOUT, grace: float = 0.0,
                settle: float = 0.0, allow: Iterable[str] = (), keep: Iterable[str] = (),
                report_only: bool = False, holdings: bool = False,
                hold_dirs: Optional[Iterable["os.PathLike[str] | str"]] = None,
                any_user: bool = False, host_children: Iterable[int] = ()) -> ReapReport:
    """Wait up to ``timeout`` s for everything the finders match to exit by itself, then
    (after SIGTERM and ``grace`` s when grace > 0) SIGKILL the identity-verified survivors,
    rescanning until nothing new appears. ``allow`` globs (on cmdline or exe) are cleaned up
    but not leaks; ``keep`` globs are left running. ``holdings``: each leak's sockets, files
    under ``hold_dirs`` (default: $HOME, the current directory and /tmp), deleted files, and
    whether it holds our stdout, stderr or terminal, read before it is signalled (see
    ``Process.holds``). As root, another user's process found only by a marker is fate
    "foreign" and left alone unless ``any_user``. ``host_children``: pids of this process's own
    children that their owner (a ``subprocess.Popen``, a pty) will wait for: signalled like any
    leftover, their exit status is left to the owner (``Process.host_child``). Returns every
    process found."""
    for name, value in (("timeout", timeout), ("grace", grace), ("settle", settle)):
        if not math.isfinite(float(value)) or value < 0:
            raise ValueError(f"reaper: {name} must be >= 0 (a finite number of seconds), not {value!r}")
    finders = tuple(compat.as_finder(f) for f in finders)
    farr, _keep = _finder_array(finders)
    host = tuple(int(p) for p in host_children)
    parr, npat = _patterns(tuple(allow), tuple(keep))
    opts = _lib.Opts()
    _c().reaper_opts_init(ctypes.byref(opts))
    opts.timeout = float(timeout)
    opts.grace = float(grace)
    if settle:
        opts.settle = float(settle)
    opts.report_only = int(bool(report_only))
    opts.any_user = int(bool(any_user))
    opts.patterns = ctypes.cast(parr, ctypes.POINTER(_lib.Pattern))
    opts.npatterns = npat
    opts.holdings = int(bool(holdings))
    if hold_dirs is not None:
        dirs = [os.fsencode(d) for d in hold_dirs]
        darr = (ctypes.c_char_p * max(1, len(dirs)))(*dirs)
        opts.hold_dirs = ctypes.cast(darr, ctypes.POINTER(ctypes.c_char_p))
        opts.nhold_dirs = len(dirs)
    if host:
        harr = _pids(host)
        opts.host_children = harr
        opts.nhost_children = len(host)
    out = ctypes.POINTER(_lib.Report)()
    rc = _c().reaper_reap(farr, len(finders), ctypes.byref(opts), ctypes.byref(out))
    compat.raise_finder_errors(finders)
    _check(rc, "reaper_reap")
    try:
        rep = _convert(out.contents, finders)
        if out.contents.incomplete:
            raise ReaperIncomplete(out.contents.incomplete,
                                   (out.contents.incomplete_reason or b"").decode("utf-8", "replace"), rep)
        return rep
    finally:
        _c().reaper_report_free(out)


def scan(*finders: Finder) -> ReapReport:
    """What the finders match right now; signals nothing (every process in fate "alive").
    Raises ReaperIncomplete (as reap_report and reap do) when the result may miss processes."""
    return reap_report(*finders, timeout=0, report_only=True)


def reap(*finders: Finder, timeout: float = REAP_TIMEOUT) -> List[str]:
    """Wait up to ``timeout`` s for every process the finders report to exit by itself, then
    kill the survivors (identity-checked). Returns ``"PID: cmdline"`` for each one it had to
    kill: an empty list means nothing leaked."""
    return reap_report(*finders, timeout=timeout).lines()
