# SPDX-License-Identifier: MIT
"""Where a process was started: the spawning call's frames in the caller's own code.

A spawn's stack, innermost first, holds library frames (the standard library, site-packages,
this package) below the caller's code. Its site is the frame in the test's own file (the
test, or a helper in the same file), the innermost frame of the caller's code (a helper
module's ``start_server``), and the library call the caller's code made (``subprocess.Popen``).

A process started with a site carries it in its environment as ``REAPER_STARTED_AT`` (the
test's frame) and ``REAPER_STARTED_IN`` (the innermost one), ``FILE:LINE:FUNCTION`` each, which
libreaper reads back for every report; what the process starts inherits them."""

from __future__ import annotations

import functools
import json
import os
import site
import sys
import sysconfig
from typing import Dict, Iterable, Iterator, List, NamedTuple, Optional, Tuple

AT = "REAPER_STARTED_AT"
IN = "REAPER_STARTED_IN"


class Frame(NamedTuple):
    file: str
    line: int
    function: str

    def __str__(self) -> str:
        return f"{self.file}:{self.line} in {self.function}"

    def env(self) -> str:
        return f"{self.file}:{self.line}:{self.function}"

    def as_dict(self) -> dict:
        return {"file": self.file, "line": self.line, "function": self.function}


class Site(NamedTuple):
    test_frame: Optional[Frame]
    innermost: Optional[Frame]
    via: Optional[str]

    def text(self) -> str:
        """``test_x.py:12 in test_y; helpers.py:30 in start_server, via subprocess.Popen``: the
        innermost frame only when it is another one than the test's."""
        parts = [str(f) for f in (self.test_frame, self.innermost) if f is not None]
        if len(parts) == 2 and self.test_frame == self.innermost:
            parts = parts[:1]
        out = "; ".join(parts)
        return f"{out}, via {self.via}" if self.via and out else out

    def as_dict(self) -> dict:
        return {"test_frame": self.test_frame.as_dict() if self.test_frame else None,
                "innermost": self.innermost.as_dict() if self.innermost else None,
                "via": self.via}

    def env(self) -> Dict[str, Optional[str]]:
        """The environment entries a program started here gets (None: removed, so that no
        site an ancestor of pytest's carried is taken for this one)."""
        return {AT: self.test_frame.env() if self.test_frame else None,
                IN: self.innermost.env() if self.innermost else None}

    @property
    def spot(self) -> Optional[Frame]:
        """The line an annotation points at: the test's own, else the innermost."""
        return self.test_frame or self.innermost


#: (filename, line, function qualname, module name) of one frame
RawFrame = Tuple[str, int, str, str]


def _library_dirs() -> Tuple[str, ...]:
    dirs = set()
    paths = sysconfig.get_paths()  # each call works them all out again
    for key in ("stdlib", "platstdlib", "purelib", "platlib"):
        path = paths.get(key)
        if path:
            dirs.add(os.path.realpath(path))
    try:
        dirs.update(os.path.realpath(p) for p in site.getsitepackages())
    except AttributeError:  # a virtualenv's old site module
        pass
    user = getattr(site, "getusersitepackages", lambda: None)()
    if user:
        dirs.add(os.path.realpath(user))
    dirs.add(os.path.realpath(os.path.dirname(os.path.abspath(__file__))))  # this package
    return tuple(sorted(d.rstrip("/") + "/" for d in dirs))


LIBRARY = _library_dirs()
LIBRARY_SELF = os.path.realpath(os.path.dirname(os.path.abspath(__file__))).rstrip("/") + "/"


def is_user(filename: str, library: Tuple[str, ...] = LIBRARY) -> bool:
    """Whether a frame of filename is the caller's code: not frozen or generated (``<...>``),
    not under the standard library, site-packages or this package."""
    return _is_user(filename, library)


@functools.lru_cache(maxsize=4096)
def _is_user(filename: str, library: Tuple[str, ...]) -> bool:
    # cached: a spawn's stack holds some 50 frames, each path resolved by lstat()s
    if not filename or filename.startswith("<"):
        return False
    path = os.path.realpath(filename) if os.path.isabs(filename) else os.path.abspath(filename)
    if "/site-packages/" in path or "/dist-packages/" in path:
        return False
    return not path.startswith(library) and not path.startswith(LIBRARY_SELF)


@functools.lru_cache(maxsize=4096)
def _real(path: str) -> str:
    return os.path.realpath(path)


def _via(frame: RawFrame) -> str:
    """The library call a frame of it stands for: ``subprocess.Popen`` for ``Popen.__init__``."""
    _, _, qualname, module = frame
    if qualname.endswith(".__init__"):
        qualname = qualname[: -len(".__init__")]
    return f"{module}.{qualname}" if module else qualname


def site_of(frames: Iterable[RawFrame], test_file: Optional[str], called: Optional[str] = None,
            show=lambda path: path, library: Tuple[str, ...] = LIBRARY) -> Optional[Site]:
    """The site of a spawn whose stack is frames (innermost first): the first frame in
    test_file, the first of the caller's code, and what the caller's code called, the library
    frame just inside it (called, the spawning function's name, when that is the interception
    itself). show turns a path into the one reported. None when no frame is the caller's."""
    test_file = _real(test_file) if test_file else None
    inner: Optional[Frame] = None
    at: Optional[Frame] = None
    via: Optional[str] = None
    below: Optional[RawFrame] = None  # the last library frame seen before the caller's code
    for raw in frames:
        filename, line, function, _ = raw
        if not is_user(filename, library):
            if inner is None:
                below = raw
            continue
        frame = Frame(show(filename), line, function)
        if inner is None:
            inner = frame
            # the caller's code called the interception itself (os.fork): the function it wraps
            own = below is None or _real(below[0]).startswith(LIBRARY_SELF)
            via = called if own else _via(below)
        if test_file and _real(filename) == test_file:
            at = frame
            break
    if inner is None:
        return None
    return Site(at, inner, via)


def raw_stack(frame) -> List[RawFrame]:
    """frame and its callers, innermost first, as site_of takes them."""
    return list(_walk(frame))


def _walk(frame) -> Iterator[RawFrame]:
    """raw_stack's frames, read as they are asked for: site_of stops at the test's frame, and
    the frames of pytest's own machinery above it (most of a spawn's stack) are never read."""
    while frame is not None:
        code = frame.f_code
        yield (code.co_filename, frame.f_lineno, _qualname(frame), frame.f_globals.get("__name__", ""))
        frame = frame.f_back


def _qualname(frame) -> str:
    """The function's qualified name (co_qualname from Python 3.11 on; before it, a method is
    named from the class of its self that defines it: Popen.__init__, not __init__)."""
    code = frame.f_code
    name = getattr(code, "co_qualname", None)
    if name is not None:
        return name
    self = frame.f_locals.get("self") if code.co_argcount else None
    if self is not None and code.co_varnames[:1] == ("self",):
        for cls in type(self).__mro__:
            fn = cls.__dict__.get(code.co_name)
            if getattr(fn, "__code__", None) is code:
                return f"{cls.__qualname__}.{code.co_name}"
    return code.co_name


def here(test_file: Optional[str], called: Optional[str], root: Optional[str] = None, depth: int = 1) -> Optional[Site]:
    """The site of a spawn being made now (depth: frames of the interception to pass over)."""
    return _site_here(sys._getframe(depth + 1), test_file, called, root)


# Plain dicts, not lru_caches: a cache hit of an lru_cache relinks its entry, a write to a
# page that, after each fork, is copied (see _site_here).
_USER: Dict[str, bool] = {}       # filename -> is_user(filename)
_REAL: Dict[str, str] = {}        # path -> its realpath
_SHOWN: Dict[Optional[str], Dict[str, str]] = {}  # root -> {path: shown(path, root)}


def _site_here(frame, test_file: Optional[str], called: Optional[str], root: Optional[str]) -> Optional[Site]:
    """site_of(_walk(frame), test_file, called, shown below root), read from the frames
    themselves: only the file of each library frame, the rest of the few frames the site is
    made of. A spawn's every write to memory (each object made, each reference counted) is a
    page copied once the next fork has shared it with a child."""
    real = _REAL.get(test_file) if test_file else None
    if test_file and real is None:
        real = _REAL[test_file] = os.path.realpath(test_file)
    user = _USER
    inner: Optional[Frame] = None
    via: Optional[str] = None
    below = None  # the last library frame seen before the caller's code
    shown_here = _SHOWN.get(root)
    if shown_here is None:
        shown_here = _SHOWN[root] = {}
    while frame is not None:
        filename = frame.f_code.co_filename
        mine = user.get(filename)
        if mine is None:
            mine = user[filename] = is_user(filename)
        if not mine:
            if inner is None:
                below = frame
            frame = frame.f_back
            continue
        path = shown_here.get(filename)
        if path is None:
            path = shown_here[filename] = shown(filename, root)
        at = Frame(path, frame.f_lineno, _qualname(frame))
        if inner is None:
            inner = at
            # the caller's code called the interception itself (os.fork): the function it wraps
            if below is None:
                via = called
            else:
                raw = (below.f_code.co_filename, below.f_lineno, _qualname(below), below.f_globals.get("__name__", ""))
                via = called if _real(raw[0]).startswith(LIBRARY_SELF) else _via(raw)
        if real is not None:
            got = _REAL.get(filename)
            if got is None:
                got = _REAL[filename] = os.path.realpath(filename)
            if got == real:
                return Site(at, inner, via)
        frame = frame.f_back
    return None if inner is None else Site(None, inner, via)


@functools.lru_cache(maxsize=4096)
def shown(path: str, root: Optional[str]) -> str:
    """path relative to root (pytest's rootdir) when under it, as test ids and annotations
    name files; else as it is."""
    if root and os.path.isabs(path):
        rel = os.path.relpath(path, root)
        if not rel.startswith(".."):
            return rel
    return path


def parse(value: Optional[str]) -> Optional[Frame]:
    """A ``FILE:LINE:FUNCTION`` value, parsed from the right (a file name may hold ':')."""
    if not value:
        return None
    parts = value.rsplit(":", 2)
    if len(parts) != 3 or not parts[1].isdigit() or not parts[0]:
        return None
    return Frame(parts[0], int(parts[1]), parts[2])


class Registry:
    """The sites of the processes a session started, per identity ((pid, start time) ->
    (site, marker of the scope it was started for)): what a child forked without exec carries
    in /proc is pytest's own environment, so the site of such a child, and of what it forks in
    turn (a daemon's double fork), is known by identity only. A forked child's own records
    reach the session's process through a file they share (appended to, a line each).
    Thread-safe."""

    def __init__(self):
        import threading
        # reentrant: a signal handler that spawns runs in the thread it interrupts, which may
        # be holding it (recording a spawn of its own); what is read under it is a copy taken
        # in one call, never a walk over the table a handler may add to meanwhile
        self.lock = threading.RLock()
        self.by_id: Dict[Tuple[int, int], Tuple[Site, Optional[str]]] = {}
        self.files: Dict[str, str] = {}  # a test's marker -> its file
        self.direct: Dict[tuple, tuple] = {}  # see here: (code's id, instruction, call) -> (code, file, root, site)
        self.root: Optional[str] = None
        self.local = threading.local()  # .site: the site of the spawn under way in this thread
        self.pid = 0        # the session's process
        self.log = None     # the shared file, unlinked
        self.read = 0       # how much of it the session's process has merged
        self.users = 0      # sessions open (one inside another's test: pytester's inline runs)
        #: the frames pytest's own environment carries (it was started by a spawn that had a
        #: site): what a child forked without exec shows in /proc, never a site of this session's
        self.inherited: Tuple[Optional[Frame], Optional[Frame]] = (None, None)

    def open(self, root: Optional[str], environ: bytes = b"") -> Optional[str]:
        """A session begins (root: its rootdir); the root of the session it is inside, if any,
        is returned for close."""
        import tempfile
        before, self.root = self.root, root
        self.users += 1
        if self.users > 1:  # a session inside another one's test, in the same process
            return before
        self.pid = os.getpid()
        self.log = tempfile.TemporaryFile(buffering=0)
        entries = dict(e.partition(b"=")[::2] for e in environ.split(b"\0") if e)
        self.inherited = tuple(parse(os.fsdecode(entries[os.fsencode(k)])) if os.fsencode(k) in entries else None
                               for k in (AT, IN))
        return before

    def close(self, root: Optional[str] = None) -> None:
        self.root = root
        self.users -= 1
        if self.users > 0:
            return
        log, self.log = self.log, None
        if log is not None:
            log.close()
        self.read = 0
        self.direct.clear()
        with self.lock:
            self.by_id.clear()

    def here(self, marker: Optional[str], called: Optional[str], depth: int = 1) -> Optional[Site]:
        try:
            frame = sys._getframe(depth + 1)
        except ValueError:
            # fewer frames than depth: the interception's own frame is the outermost (C code
            # called it with no Python code above, as _thread.start_new_thread(os.fork) does),
            # so no caller's code made the spawn; the spawn itself must still be made
            return None
        test_file = self.files.get(marker) if marker else None
        # a spawn called straight from a line of the test's own file (most are): its site made
        # once (each made anew writes some 20 pages, which the next fork makes a child share)
        # The code object itself, not one equal to it: code objects compare by name, first line
        # and instructions, not by their file (nor, before 3.11, by their line numbers), so a
        # helper's twin in another module, or a test file re-imported with a line moved, would
        # get its site. The entry holds the code, whose id is then no other code's.
        code = frame.f_code
        key = (id(code), frame.f_lasti, called)
        got = self.direct.get(key)
        if got is not None and got[0] is code and got[1] == test_file and got[2] == self.root:
            return got[3]
        # a spawn the library makes (subprocess.run's) for a line of the test's own file: its
        # site is that line's and the library's call below it (via), so it is made once too
        # for that pair
        below, user, mine = None, _USER, frame
        while mine is not None:
            filename = mine.f_code.co_filename
            is_mine = user.get(filename)
            if is_mine is None:
                mine = None  # not seen yet: _site_here learns it, for the next spawn
                break
            if is_mine:
                break
            below, mine = mine, mine.f_back
        pair = None
        if below is not None and mine is not None and test_file and \
                _REAL.get(mine.f_code.co_filename, "") == _REAL.get(test_file):
            pair = (id(mine.f_code), mine.f_lasti, id(below.f_code), below.f_lasti, called)
            got = self.direct.get(pair)
            if got is not None and got[0] is mine.f_code and got[1] == test_file and got[2] == self.root and \
                    got[4] is below.f_code:
                return got[3]
        site = _site_here(frame, test_file, called, self.root)
        if pair is not None or (test_file and _REAL.get(code.co_filename, "") == _REAL.get(test_file)):
            if len(self.direct) > 4096:
                self.direct.clear()
            if pair is not None:
                self.direct[pair] = (mine.f_code, test_file, self.root, site, below.f_code)
            else:
                self.direct[key] = (code, test_file, self.root, site)
        return site

    def record(self, pid: int, start: Optional[int], site: Optional[Site], marker: Optional[str]) -> None:
        if site is None or pid <= 0 or start is None:
            return
        if self.pid and os.getpid() != self.pid:  # a child forked without exec: told to the session's process
            if self.log is not None:
                line = json.dumps([pid, start, marker, site.as_dict()]) + "\n"
                try:
                    os.write(self.log.fileno(), line.encode())
                except OSError:
                    pass
            return
        with self.lock:
            self.by_id[(pid, start)] = (site, marker)

    def _merge(self) -> None:
        """What forked children recorded since the last look."""
        if self.log is None or os.getpid() != self.pid:
            return
        try:
            data = os.pread(self.log.fileno(), 1 << 20, self.read)
        except OSError:
            return
        end = data.rfind(b"\n") + 1
        self.read += end
        for line in data[:end].splitlines():
            try:
                pid, start, marker, d = json.loads(line)
                site = Site(*(Frame(**f) if f else None for f in (d["test_frame"], d["innermost"])), d["via"])
            except (ValueError, TypeError, KeyError):
                continue
            self.by_id[(pid, start)] = (site, marker)

    def forget(self, marker: str) -> None:
        with self.lock:
            for k in [k for k, v in list(self.by_id.items()) if v[1] == marker]:
                del self.by_id[k]
            self.files.pop(marker, None)

    def of(self, pid: int, start: int, ancestry: str = "", at: Optional[Frame] = None,
           inner: Optional[Frame] = None) -> Optional[Site]:
        """A found process's site: its own, by identity; else what its environment said (at,
        inner: libreaper's reading of REAPER_STARTED_AT/IN), with the call from the nearest
        ancestor known by identity (a shell's background job: the shell's Popen); else that
        ancestor's (a child forked without exec, then forking)."""
        if (at, inner) == self.inherited:
            at = inner = None
        with self.lock:
            got = self.by_id.get((pid, start))
            if got is None:
                self._merge()
                got = self.by_id.get((pid, start))
            if got is not None:
                return got[0]
            near = None
            for part in ancestry.split(" < "):
                word = part.split(" ", 1)[0]
                if not word.isdigit():
                    break
                near = next((s for (p, t), (s, _) in list(self.by_id.items()) if p == int(word) and t <= start), None)
                if near is not None:
                    break
            if near is None or (near.test_frame, near.innermost) != (at, inner):
                # an ancestor that is gone (the shell of a background job): the call made at
                # the same frames
                same = next((s for s, _ in list(self.by_id.values()) if (s.test_frame, s.innermost) == (at, inner)), None)
                near = same or near
        if at is not None or inner is not None:
            via = near.via if near is not None and (near.test_frame, near.innermost) == (at, inner) else None
            return Site(at, inner, via)
        return near
