# SPDX-License-Identifier: MIT
"""The plugin's command-line options and ini values, and the time settings they hold."""

from __future__ import annotations

import math
import os

import pytest

MARKER = "REAPER_PYTEST"
SESSION_VAR = "REAPER_PYTEST_SESSION"  # set while a checking session runs: nested ones defer
DEFAULT_TIMEOUT = 3.0
DEFAULT_GRACE = 1.0
MAX_SECONDS = 86400.0  # as the reaper command: a larger time is a typo, not a wait
CGROUP_MODES = ("auto", "on", "off")


def _token() -> str:
    """12 random hex digits, as secrets.token_hex(6) gives them, without the hashlib (and
    libcrypto, 3.6 MB) that importing secrets loads: every fork copies what pytest maps."""
    return os.urandom(6).hex()


class ReaperIncompleteWarning(pytest.PytestWarning):
    """A test's leak check could not be completed (something outside the test, such as another
    process held in an exec, or no descriptors left): what it found is reported and cleaned up
    as usual, but processes may have been missed. ``-W error::reaper.pytest_plugin.
    ReaperIncompleteWarning`` makes it an error."""


ReaperIncompleteWarning.__module__ = "reaper.pytest_plugin"  # where it is documented and imported from


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

def _enabled(config) -> bool:
    if config.getoption("reaper_disable"):
        return False
    opt = config.getoption("reaper")
    return bool(opt) if opt is not None else bool(config.getini("reaper"))

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
