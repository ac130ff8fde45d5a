# SPDX-License-Identifier: MIT
"""The plugin's module-level hooks: registered under one name only, and a session that checks
(or, inside another checking session's test, one that defers to it)."""

from __future__ import annotations

import os
import sys

import pytest

from .options import SESSION_VAR, _enabled
from .session import _Session

#: the module pytest registers: loaded with -p, or the installed "reaper" entry point
PLUGIN = "reaper.pytest_plugin"

@pytest.hookimpl
def pytest_plugin_registered(plugin, manager):
    # Installed, this module is the "reaper" entry point; loaded with -p it is registered under
    # its module name first. Whichever name comes first, the other is blocked, so the same
    # module is never registered twice ("Plugin already registered").
    if plugin is not sys.modules.get(PLUGIN):
        return
    name = manager.get_name(plugin)
    other = "reaper" if name != "reaper" else PLUGIN
    if manager.get_plugin(other) is None and not manager.is_blocked(other):
        manager.set_blocked(other)

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
