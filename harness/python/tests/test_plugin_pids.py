# SPDX-License-Identifier: MIT
"""The pids a test's end reads: ns_last_pid through a descriptor kept open."""
from __future__ import annotations

import sys

from test_plugin_guest import PLUGIN, inner, run_sub, tracked  # noqa: F401 (fixtures)


def test_a_descriptor_number_the_plugin_kept_and_a_test_reused_reads_no_pid(tracked):
    """A test closes every descriptor it did not open (the plugin's on ns_last_pid among
    them) and opens a pidfile, which gets that number: the pids given out are read from
    ns_last_pid still, and what C code starts in the next test is found."""
    tracked.makepyfile(test_fd="""
import ctypes, os, sys, time
from conftest import LEAKER
held = []
def test_takes_the_descriptor():
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}") == "/proc/sys/kernel/ns_last_pid":
                os.close(int(fd))
        except OSError:
            pass
    with open("pidfile", "w") as f:
        f.write("4242\\n")
    held.append(open("pidfile"))
def test_c_code_starts_a_daemon():
    cmd = f"{sys.executable} {LEAKER} --daemon --pidfile leak.pid c-level-daemon"
    assert ctypes.CDLL(None).system(cmd.encode()) == 0  # below the interception
    while not os.path.exists("leak.pid"):
        time.sleep(0.01)
def test_after():
    pass
""")
    result = run_sub(tracked, *PLUGIN, "--reaper-timeout", "0", "-rA")
    result.assert_outcomes(passed=3, errors=1)
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_c_code_starts_a_daemon*", "*c-level-daemon*"])

