# SPDX-License-Identifier: MIT
"""What the hand-written ``_reaper.py`` modules of e2e suites offer beside adopt/reap, with
the same meanings, so that a suite keeps its own helpers working when it switches:

* any callable returning ``{(pid, start_time): cmdline}`` is a finder ``reap`` accepts: the
  library calls it at each of its scans and pins and verifies every identity it returns like
  its own matches (a pid now held by a process of another start time is left alone);
* ``stat``, ``start_time``, ``cmdline``, ``all_stats``: /proc reads by pid;
* ``kill_identified``: SIGKILL exactly the recorded processes that are still the same
  process, through libreaper's identity check (a pidfd opened before the start time is
  re-checked).
"""

from __future__ import annotations

import os
import signal
from pathlib import Path
from typing import Callable, Dict, List, Optional, Tuple

from . import _lib

Identity = Tuple[int, int]  # (pid, kernel start time in clock ticks)
FinderFunc = Callable[[], Dict[Identity, str]]

__all__ = ["stat", "start_time", "cmdline", "all_stats", "kill_identified", "CallableFinder"]


def stat(pid: int) -> Optional[List[str]]:
    """``/proc/<pid>/stat`` fields after ``comm`` (state is index 0, ppid 1, sid 3, start
    time 19); None when the process is gone."""
    try:
        text = Path(f"/proc/{pid}/stat").read_text(encoding="utf-8", errors="replace")
        return text.rsplit(")", 1)[1].split()
    except (OSError, IndexError):
        return None


def start_time(pid: int) -> Optional[int]:
    """Kernel start time of a live process that is not a zombie; None when it is gone or one."""
    fields = stat(pid)
    return int(fields[19]) if fields and len(fields) > 19 and fields[0] not in ("Z", "X") else None


def cmdline(pid: int) -> str:
    """The command line with NULs as spaces, or "?" when it cannot be read."""
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return "?"
    return raw.replace(b"\0", b" ").decode(errors="replace").strip()


def all_stats() -> Dict[int, List[str]]:
    """``stat`` of every live process that is not a zombie, by pid."""
    out = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            fields = stat(int(entry))
            if fields is not None and fields[0] not in ("Z", "X"):
                out[int(entry)] = fields
    return out


def kill_identified(idents: Dict[Identity, str]) -> List[str]:
    """SIGKILL exactly the recorded processes that are still the SAME process (pid and start
    time), through libreaper's identity check (a pidfd opened, then the start time checked
    again); a zombie is not signalled. Returns ``"PID: cmdline"`` (cmdline cut at 160) for each
    one signalled."""
    from . import kin  # the package's library, loaded by the package that imports us
    killed = []
    for (pid, started), cmd in idents.items():
        now = kin.pstat(pid) if pid > 0 else None
        if now is None or now.start_time != started or now.state in ("Z", "X"):
            continue
        if kin.signal((pid, started), signal.SIGKILL):
            killed.append(f"{pid}: {cmd[:160]}")
    return killed


class CallableFinder:
    """A callable finder made a library finder (REAPER_FIND_CALL): the library calls it at
    each scan and pins what it returns. An exception in it fails the reap (it is re-raised)."""

    def __init__(self, func: FinderFunc):
        self.func = func
        self.error: Optional[BaseException] = None
        self._pending: List[Identity] = []
        self.callback = _lib.FIND_FN(self._find)  # kept alive as long as the finder

    def describe(self) -> str:
        return "call " + getattr(self.func, "__qualname__", repr(self.func))

    def _find(self, ctx, out, cap) -> int:
        try:
            if not self._pending:
                # a start time of None: the finder saw the process go (start_time() of a
                # gone one) between its reads; nothing is left to verify or signal
                self._pending = [(int(pid), int(st)) for pid, st in self.func() if st is not None]
            idents = self._pending
            if len(idents) > cap:
                return len(idents)  # called again with room for all of them
            for i, (pid, started) in enumerate(idents):
                out[i].pid = pid
                out[i].start_time = started
            self._pending = []
            return len(idents)
        except BaseException as e:  # noqa: BLE001 - handed back to the caller of reap
            self.error = e
            self._pending = []
            return -22  # -EINVAL: the reap stops; reap_report re-raises self.error

    def fill(self, slot: "_lib.Finder") -> None:
        slot.kind = _lib.FIND_CALL
        slot.find = self.callback
        slot.find_ctx = None

    def __call__(self) -> Dict[Identity, str]:
        return self.func()

    def __repr__(self) -> str:
        return f"<reaper.CallableFinder {self.describe()}>"


def as_finder(f):
    """f itself when it is a library finder; a CallableFinder for any other callable."""
    if isinstance(f, CallableFinder) or not callable(f) or hasattr(f, "kind"):
        return f
    return CallableFinder(f)


def raise_finder_errors(finders) -> None:
    """Re-raise what a callable finder raised during the reap."""
    for f in finders:
        if isinstance(f, CallableFinder) and f.error is not None:
            err, f.error = f.error, None
            raise err

