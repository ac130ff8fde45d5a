# SPDX-License-Identifier: MIT
"""ctypes view of libreaper: the structs of reaper/reaper.h field for field, and the loader.

The layouts here must match the header exactly; tests/test_layout.py compiles a C program
that prints every sizeof/offsetof and compares them with these definitions, so a field
added to the header without being added here fails the Python suite.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
from pathlib import Path

pid_t = ctypes.c_int32
uid_t = ctypes.c_uint32
c_enum = ctypes.c_int

# enum reaper_finder_kind
FIND_ENV = 1
FIND_TREE = 2
FIND_CGROUP = 3
FIND_CALL = 4
# enum reaper_pattern_kind
ALLOW = 1
KEEP = 2


class Ident(ctypes.Structure):
    _fields_ = [
        ("pid", pid_t),
        ("start_time", ctypes.c_uint64),
    ]


class PStat(ctypes.Structure):
    _fields_ = [
        ("pid", pid_t),
        ("ppid", pid_t),
        ("pgrp", pid_t),
        ("session", pid_t),
        ("start_time", ctypes.c_uint64),
        ("state", ctypes.c_char),
    ]


FIND_FN = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p, ctypes.POINTER(Ident), ctypes.c_size_t)


class Origin(ctypes.Structure):
    _fields_ = [
        ("last_pid", pid_t),
        ("pid_max", pid_t),
        ("forks", ctypes.c_uint64),
        ("tasks", ctypes.c_uint64),
        ("start_time", ctypes.c_uint64),
        ("pidns", ctypes.c_uint64),
    ]


class Finder(ctypes.Structure):
    _fields_ = [
        ("kind", c_enum),
        ("marker", ctypes.c_char_p),
        ("root", pid_t),
        ("find", FIND_FN),
        ("find_ctx", ctypes.c_void_p),
        ("cgroup", ctypes.c_char_p),
        ("since", ctypes.c_uint64),
        ("skip", ctypes.POINTER(pid_t)),
        ("nskip", ctypes.c_size_t),
        ("origin", ctypes.POINTER(Origin)),
    ]


class Holding(ctypes.Structure):
    _fields_ = [
        ("kind", c_enum),
        ("fd", ctypes.c_int),
        ("what", ctypes.POINTER(ctypes.c_char)),
    ]


class Proc(ctypes.Structure):
    _fields_ = [
        ("pid", pid_t),
        ("ppid", pid_t),
        ("pgrp", pid_t),
        ("exit_status", ctypes.c_int),
        ("start_time", ctypes.c_uint64),
        ("age", ctypes.c_double),
        ("state", ctypes.c_char),
        ("uid", uid_t),
        ("matched_by", ctypes.c_uint32),
        ("fate", c_enum),
        ("allowed", ctypes.c_int),
        ("environ_unreadable", ctypes.c_int),
        # char * rather than c_char_p: the bytes may be anything but NUL and are decoded by us
        ("cmdline", ctypes.POINTER(ctypes.c_char)),
        ("comm", ctypes.POINTER(ctypes.c_char)),
        ("exe", ctypes.POINTER(ctypes.c_char)),
        ("cwd", ctypes.POINTER(ctypes.c_char)),
        ("test", ctypes.POINTER(ctypes.c_char)),
        ("ancestry", ctypes.POINTER(ctypes.c_char)),
        ("holdings_read", ctypes.c_int),
        ("rss", ctypes.c_uint64),
        ("cpu_time", ctypes.c_double),
        ("holdings", ctypes.POINTER(Holding)),
        ("nholdings", ctypes.c_size_t),
        ("holds", ctypes.POINTER(ctypes.c_char)),
        ("host_child", ctypes.c_int),
        ("why_read", ctypes.c_int),
        ("why", ctypes.c_uint32),
        ("tracer", pid_t),
        ("wchan", ctypes.POINTER(ctypes.c_char)),
        ("tty", ctypes.POINTER(ctypes.c_char)),
        ("why_text", ctypes.POINTER(ctypes.c_char)),
        ("started_file", ctypes.POINTER(ctypes.c_char)),
        ("started_line", ctypes.c_uint),
        ("started_func", ctypes.POINTER(ctypes.c_char)),
        ("started_in_file", ctypes.POINTER(ctypes.c_char)),
        ("started_in_line", ctypes.c_uint),
        ("started_in_func", ctypes.POINTER(ctypes.c_char)),
        ("outer_pid", pid_t),
    ]


class Report(ctypes.Structure):
    _fields_ = [
        ("procs", ctypes.POINTER(Proc)),
        ("n", ctypes.c_size_t),
        ("leaks", ctypes.c_size_t),
        ("exited", ctypes.c_size_t),
        ("terminated", ctypes.c_size_t),
        ("killed", ctypes.c_size_t),
        ("unkillable", ctypes.c_size_t),
        ("zombies_held", ctypes.c_size_t),
        ("kept", ctypes.c_size_t),
        ("allowed", ctypes.c_size_t),
        ("escalated", ctypes.c_int),
        ("waited", ctypes.c_double),
        ("pattern_hits", ctypes.POINTER(ctypes.c_size_t)),
        ("npatterns", ctypes.c_size_t),
        ("incomplete", ctypes.c_int),
        ("incomplete_reason", ctypes.c_char_p),
        ("foreign", ctypes.c_size_t),
        ("marker_scan", ctypes.c_double),
        ("moved_in", ctypes.c_size_t),
    ]


class Pattern(ctypes.Structure):
    _fields_ = [
        ("kind", c_enum),
        ("glob", ctypes.c_char_p),
    ]


ON_EVENT = ctypes.CFUNCTYPE(ctypes.c_int, ctypes.c_void_p)
ON_ESCALATE = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_int)
ON_PROGRESS = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_size_t, ctypes.c_double)


class Opts(ctypes.Structure):
    _fields_ = [
        ("timeout", ctypes.c_double),
        ("grace", ctypes.c_double),
        ("settle", ctypes.c_double),
        ("report_only", ctypes.c_int),
        ("term_signal", ctypes.c_int),
        ("term_skip_pgrp", pid_t),
        ("patterns", ctypes.POINTER(Pattern)),
        ("npatterns", ctypes.c_size_t),
        ("event_fd", ctypes.c_int),
        ("on_event", ON_EVENT),
        ("event_ctx", ctypes.c_void_p),
        ("on_escalate", ON_ESCALATE),
        ("escalate_ctx", ctypes.c_void_p),
        ("on_progress", ON_PROGRESS),
        ("progress_ctx", ctypes.c_void_p),
        ("holdings", ctypes.c_int),
        ("hold_dirs", ctypes.POINTER(ctypes.c_char_p)),
        ("nhold_dirs", ctypes.c_size_t),
        ("any_user", ctypes.c_int),
        ("host_children", ctypes.POINTER(pid_t)),
        ("nhost_children", ctypes.c_size_t),
        ("kill_moved_in", ctypes.c_int),
        ("outer_procfd", ctypes.c_int),
        ("exclude", ctypes.POINTER(Ident)),
        ("nexclude", ctypes.c_size_t),
        ("exclude_pgrp", pid_t),
        ("outside_session", ctypes.c_uint32),
    ]


# Python name -> C struct name, for the layout test.
STRUCTS = {
    "reaper_ident": Ident,
    "reaper_pstat": PStat,
    "reaper_origin": Origin,
    "reaper_finder": Finder,
    "reaper_holding": Holding,
    "reaper_proc": Proc,
    "reaper_report": Report,
    "reaper_pattern": Pattern,
    "reaper_opts": Opts,
}


def _checkout_root() -> Path:
    # harness/python/reaper/_lib.py -> the checkout
    return Path(__file__).resolve().parents[3]


def candidates() -> list[str]:
    """Where libreaper is looked for, in order: the copy bundled in this package (a wheel
    has one); REAPER_LIBRARY (when set, nothing after it is tried); in a checkout, its build
    tree (REAPER_BUILD, else build/); where `make install` put it; then the system's
    (ldconfig's cache and the default paths)."""
    return list(dict.fromkeys(_candidates()))


def _candidates():
    # lazily: ldconfig's cache is read by running a program, which load() needs only when
    # nothing before it loads
    bundled = Path(__file__).resolve().parent / "libreaper.so"
    if bundled.exists():
        yield str(bundled)
    explicit = os.environ.get("REAPER_LIBRARY")
    if explicit:
        yield explicit
        return
    try:
        from . import _installed  # written when built for `make install`
        yield os.path.join(_installed.LIBDIR, "libreaper.so.0")
    except ImportError:
        root = _checkout_root()
        if not bundled.exists() and (root / "reaper" / "reaper.h").exists():
            build = os.environ.get("REAPER_BUILD")
            if build:
                yield str(root / build / "libreaper.so")  # an absolute build stays absolute
            yield str(root / "build" / "libreaper.so")
    found = ctypes.util.find_library("reaper")
    if found:
        yield found
    yield "libreaper.so.0"


def _bind(lib: ctypes.CDLL) -> ctypes.CDLL:
    sig = {
        "reaper_adopt": (ctypes.c_int, []),
        "reaper_release": (ctypes.c_int, []),
        "reaper_adopted": (ctypes.c_int, []),
        "reaper_keep_handler": (ctypes.c_int, [ctypes.c_int]),
        "reaper_opts_init": (None, [ctypes.POINTER(Opts)]),
        "reaper_reap": (ctypes.c_int, [ctypes.POINTER(Finder), ctypes.c_size_t, ctypes.POINTER(Opts),
                                       ctypes.POINTER(ctypes.POINTER(Report))]),
        "reaper_report_free": (None, [ctypes.POINTER(Report)]),
        "reaper_fate_name": (ctypes.c_char_p, [c_enum]),
        "reaper_hold_kind_name": (ctypes.c_char_p, [c_enum]),
        "reaper_proc_is_leak": (ctypes.c_int, [ctypes.POINTER(Proc)]),
        "reaper_version": (ctypes.c_char_p, []),
        "reaper_cgroup_current": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_size_t]),
        "reaper_cgroup_usable": (ctypes.c_int, [ctypes.c_char_p]),
        "reaper_cgroup_create": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_char_p,
                                                ctypes.c_size_t]),
        "reaper_cgroup_enter": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_size_t]),
        "reaper_cgroup_of": (ctypes.c_int, [pid_t, ctypes.c_char_p, ctypes.c_size_t]),
        "reaper_cgroup_move": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(Ident)]),
        "reaper_cgroup_move_tree": (ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(Ident),
                                                   ctypes.POINTER(ctypes.c_char_p), ctypes.c_size_t]),
        "reaper_cgroup_populated": (ctypes.c_int, [ctypes.c_char_p]),
        "reaper_cgroup_wait": (ctypes.c_int, [ctypes.c_char_p, ctypes.c_double]),
        "reaper_cgroup_kill": (ctypes.c_int, [ctypes.c_char_p]),
        "reaper_cgroup_remove": (ctypes.c_int, [ctypes.c_char_p]),
        "reaper_cgroup_release": (ctypes.c_int, [ctypes.c_char_p]),
        "reaper_origin_now": (ctypes.c_int, [ctypes.POINTER(Origin)]),
        "reaper_pstat": (ctypes.c_int, [pid_t, ctypes.POINTER(PStat)]),
        "reaper_children": (ctypes.c_int, [pid_t, ctypes.POINTER(PStat), ctypes.c_size_t]),
        "reaper_descendants": (ctypes.c_int, [ctypes.POINTER(Ident), ctypes.c_size_t, ctypes.POINTER(PStat),
                                              ctypes.c_size_t]),
        "reaper_last_pid": (pid_t, []),
        "reaper_environ": (ctypes.c_ssize_t, [pid_t, ctypes.c_char_p, ctypes.c_size_t]),
        "reaper_signal": (ctypes.c_int, [ctypes.POINTER(Ident), ctypes.c_int]),
        "reaper_collect": (ctypes.c_int, [ctypes.POINTER(Ident), ctypes.POINTER(ctypes.c_int)]),
        "reaper_orphans_open": (ctypes.c_int, [ctypes.POINTER(ctypes.c_void_p)]),
        "reaper_orphans_collect": (ctypes.c_int, [ctypes.c_void_p, ctypes.POINTER(Ident), ctypes.c_size_t]),
        "reaper_orphans_close": (None, [ctypes.c_void_p]),
        "reaper_orphans_start": (ctypes.c_int, [ctypes.c_double]),
        "reaper_orphans_stop": (ctypes.c_long, []),
    }
    for name, (res, args) in sig.items():
        fn = getattr(lib, name)
        fn.restype = res
        fn.argtypes = args
    return lib


def load() -> tuple[ctypes.CDLL, str]:
    tried, seen = [], set()
    for path in _candidates():
        if path in seen:
            continue
        seen.add(path)
        if os.sep in path and not os.path.exists(path):
            tried.append(f"{path}: not found")
            continue
        try:
            return _bind(ctypes.CDLL(path, use_errno=True)), path
        except OSError as e:
            tried.append(f"{path}: {e}")
        except AttributeError as e:  # another library, or a libreaper of another version
            tried.append(f"{path}: not libreaper (or an older one than this package needs): {e}")
    raise ImportError("reaper: cannot load libreaper; tried, in order:\n  " + "\n  ".join(tried) +
                      "\n(install the package with pip, which bundles it; or set REAPER_LIBRARY to a "
                      "libreaper.so; or build it with `make` / `make install`)")
