# SPDX-License-Identifier: MIT
"""Every function the plugin replaces while a session is active, in one table: where it is,
what replaces it, and the parameters the replacement counts on. Several targets are private
internals of Python's (subprocess._fork_exec, _posixsubprocess.fork_exec, concurrent.futures'
_WorkItem, multiprocessing's Popen._launch and ensure_running): the plugin's tests check each
one's parameters on the running Python (parameters()), so one that a Python changes fails
there, by name."""

from __future__ import annotations

import importlib
import inspect
import sys
from typing import Callable, Dict, List, NamedTuple, Optional, Tuple

from . import mp, spawn


class Patch(NamedTuple):
    module: str                 # the module the target is in
    holder: Optional[str]       # the class in it that holds the target (None: the module)
    attribute: str
    replacement: Callable       # (the target, the scope applied for) -> what stands in for it
    expects: Tuple[str, ...]    # the target's leading parameters, that the replacement relies on
    group: str                  # "spawn": the session's interception; "multiprocessing": its helpers
    optional: bool = False      # not on every Python (subprocess._fork_exec from 3.11 on)


_FORK_EXEC = ("args", "executable_list", "close_fds", "pass_fds", "cwd", "env")  # env at 5

PATCHES: Tuple[Patch, ...] = (
    Patch("os", None, "fork", spawn.fork, (), "spawn"),
    Patch("os", None, "forkpty", spawn.returns_pid(lambda r: r[0]), (), "spawn"),
    Patch("os", None, "posix_spawn", spawn.returns_pid(lambda r: r, 2), ("path", "argv", "env"), "spawn"),
    Patch("os", None, "posix_spawnp", spawn.returns_pid(lambda r: r, 2), ("path", "argv", "env"), "spawn"),
    Patch("subprocess", None, "_fork_exec", spawn.returns_pid(lambda r: r, 5), _FORK_EXEC, "spawn", optional=True),
    Patch("_posixsubprocess", None, "fork_exec", spawn.returns_pid(lambda r: r, 5), _FORK_EXEC, "spawn"),
    Patch("os", None, "system", spawn.system, ("command",), "spawn"),
    Patch("os", None, "execv", spawn.exec_with_site, ("path", "argv"), "spawn"),
    Patch("os", None, "execve", spawn.exec_with_site, ("path", "argv", "env"), "spawn"),
    Patch("concurrent.futures.thread", "_WorkItem", "__init__", spawn.work_submitted,
          ("self", "future", "fn", "args", "kwargs"), "spawn"),
    Patch("concurrent.futures.thread", "_WorkItem", "run", spawn.work_run, ("self",), "spawn"),
    Patch("threading", "Thread", "start", spawn.thread_start, ("self",), "spawn"),
    Patch("signal", None, "signal", spawn.keeps_sigterm, ("signalnum", "handler"), "spawn"),
    Patch("multiprocessing.popen_forkserver", "Popen", "_launch", mp.launch, ("self", "process_obj"),
          "multiprocessing"),
    Patch("multiprocessing.resource_tracker", "ResourceTracker", "ensure_running", mp.ensure_running,
          ("self",), "multiprocessing"),
    Patch("multiprocessing.forkserver", "ForkServer", "ensure_running", mp.ensure_running, ("self",),
          "multiprocessing"),
)


def holder(patch: Patch):
    """The module or class that holds patch's target (None: it cannot be imported)."""
    try:
        mod = importlib.import_module(patch.module)
    except ImportError:
        return None
    return getattr(mod, patch.holder, None) if patch.holder else mod


def target(patch: Patch):
    """The target itself, as the holder defines it (None: not there)."""
    where = holder(patch)
    return None if where is None else vars(where).get(patch.attribute)


def apply(group: str, scope) -> List[tuple]:
    """Replace the group's targets (for scope); what restore() takes to undo it. A target in a
    module not imported yet is replaced once it is (importing multiprocessing costs a session
    that never uses it about 8 ms)."""
    saved: List[tuple] = []
    for patch in PATCHES:
        if patch.group != group:
            continue
        if patch.module not in sys.modules:
            ON_IMPORT.defer(patch, scope, saved)
        else:
            _apply(patch, scope, saved)
    return saved


def _apply(patch: Patch, scope, saved: List[tuple]) -> None:
    where, fn = holder(patch), target(patch)
    if fn is not None:
        saved.append((where, patch.attribute, fn))
        setattr(where, patch.attribute, patch.replacement(fn, scope))


def restore(saved: List[tuple]) -> None:
    ON_IMPORT.cancel(saved)
    for where, name, fn in reversed(saved):
        setattr(where, name, fn)


class _OnImport:
    """On sys.meta_path while patches wait for their module: the module is found by the
    finders after this one, and its patches are applied as soon as it has run."""

    def __init__(self):
        self.pending: Dict[str, List[tuple]] = {}  # module -> [(patch, scope, saved)]

    def defer(self, patch: Patch, scope, saved: List[tuple]) -> None:
        self.pending.setdefault(patch.module, []).append((patch, scope, saved))
        if self not in sys.meta_path:
            sys.meta_path.insert(0, self)

    def cancel(self, saved: List[tuple]) -> None:
        for name in list(self.pending):
            self.pending[name] = [p for p in self.pending[name] if p[2] is not saved]
            if not self.pending[name]:
                del self.pending[name]
        if not self.pending and self in sys.meta_path:
            sys.meta_path.remove(self)

    def find_spec(self, name, path=None, target=None):
        if name not in self.pending:
            return None
        for finder in sys.meta_path:
            find = getattr(finder, "find_spec", None) if finder is not self else None
            spec = find(name, path, target) if find else None
            if spec is not None:
                break
        else:
            return None
        run = getattr(spec.loader, "exec_module", None)
        if run is None:
            return spec

        def exec_module(module):
            run(module)
            self.imported(name)
        spec.loader.exec_module = exec_module  # a loader of this module's own (a file's)
        return spec

    def imported(self, name: str) -> None:
        for patch, scope, saved in self.pending.pop(name, ()):
            _apply(patch, scope, saved)
        if not self.pending and self in sys.meta_path:
            sys.meta_path.remove(self)


ON_IMPORT = _OnImport()


def parameters(fn) -> Tuple[str, ...]:
    """The names of fn's parameters before any keyword-only one, from its signature, or for a
    builtin without one from its text signature or the first line of its docstring."""
    fn = inspect.unwrap(fn)  # the target itself while a session has replaced it
    try:
        return tuple(p.name for p in inspect.signature(fn).parameters.values()
                     if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD))
    except (TypeError, ValueError):
        pass
    text = getattr(fn, "__text_signature__", None) or (fn.__doc__ or "")
    start = text.find("(")
    if start < 0:
        return ()
    names = []
    for part in text[start + 1:text.find(")", start)].split(","):
        name = part.split("=", 1)[0].strip()
        if name.startswith("*"):
            break
        if name and name not in ("/", "$module", "$self"):
            names.append(name)
    return tuple(names)
