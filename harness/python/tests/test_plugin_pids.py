# SPDX-License-Identifier: MIT
"""The pids a test's end reads: ns_last_pid through a descriptor kept open, and what it
cannot tell (a test that moves ns_last_pid back)."""
from __future__ import annotations

import os
import shutil
import sys

import pytest

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


@pytest.mark.skipif(shutil.which("unshare") is None, reason="needs unshare(1)")
@pytest.mark.skipif(os.geteuid() != 0, reason="a PID namespace of pytest's own (unshare --pid) needs root")
@pytest.mark.parametrize("cgroup", ["on", "off"])
def test_a_child_left_by_a_test_that_moved_ns_last_pid_back_is_found(inner, cgroup):
    """The pids given out since a test began do not hold every process it started when it
    writes ns_last_pid back (root, in pytest's PID namespace): pytest's children are."""
    inner.makepyfile(test_rewind="""
import subprocess
def test_rewinds_the_pids():
    with open("/proc/sys/kernel/ns_last_pid") as f:
        last = int(f.read())
    p = subprocess.Popen(["sleep", "600"])
    assert p.pid > last
    with open("/proc/sys/kernel/ns_last_pid", "w") as f:
        f.write(str(last))
def test_after():
    pass
""")
    # pytest is the first process of a PID namespace of its own: its ns_last_pid is the
    # test's to write, and what it leaves ends with it
    result = inner.run("unshare", "--pid", "--fork", "--mount-proc", sys.executable, "-m", "pytest",
                       "-p", "no:cacheprovider", *PLUGIN, f"--reaper-cgroup={cgroup}", "--reaper-timeout", "0",
                       "-rA", timeout=120)
    result.assert_outcomes(passed=2, errors=1)
    result.stdout.fnmatch_lines(["*ERROR at teardown of test_rewinds_the_pids*", "*sleep 600*"])
