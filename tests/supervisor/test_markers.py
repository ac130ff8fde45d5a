# SPDX-License-Identifier: MIT
"""`reaper run` finds by its markers what the run started, and only that: a process an outside
daemon (older than the run, no ancestor of it) starts for the run with the run's marker is
found and killed, in both tracking modes, although the scan reads only the pids given out since
the run began; a process older than the run that carries the same marker is not the run's and
is left alone."""
import json
import os
import signal
import subprocess
import textwrap
import time

import pytest

from conftest import script
from procutil import PY, running, start_time

# The outside daemon: started by the test before the run, so neither reaper nor COMMAND is its
# ancestor. Each line on its stdin is an environment entry; it starts a sleep carrying it (a
# child of its own) and answers "PID START".
DAEMON = textwrap.dedent("""
    import os, sys
    for line in sys.stdin:
        entry = line.strip()
        pid = os.fork()
        if pid == 0:
            null = os.open("/dev/null", os.O_RDWR)
            for i in (0, 1, 2):
                os.dup2(null, i)
            os.execve("/bin/sleep", ["/bin/sleep", "300"], {"PATH": "/usr/bin:/bin", entry.split("=")[0]: entry.split("=", 1)[1]})
        st = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[19]
        print(pid, st, flush=True)
    """)


@pytest.fixture
def daemon():
    d = subprocess.Popen([PY, "-c", DAEMON], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    started = []

    def spawn(entry):
        d.stdin.write(entry + "\n")
        d.stdin.flush()
        pid, st = map(int, d.stdout.readline().split())
        started.append((pid, st))
        return pid, st

    yield spawn
    for pid, st in started:
        if running(pid, st):
            fd = os.pidfd_open(pid)
            if start_time(pid) == st:
                signal.pidfd_send_signal(fd, signal.SIGKILL)
            os.close(fd)
    d.stdin.close()
    d.wait(30)
    for pid, st in started:  # the daemon collects its children as it exits
        deadline = time.monotonic() + 30
        while running(pid, st) and time.monotonic() < deadline:
            time.sleep(0.01)


@pytest.mark.parametrize("mode", ["off", "auto"])
def test_marker_finds_what_the_run_had_started_outside_and_only_that(run, tmp_path, daemon, mode):
    marker = "REAPER_TEST_MARK=%d-%s" % (os.getpid(), mode)
    old = daemon(marker)  # older than the run, carries its marker
    time.sleep(0.05)  # start times count in clock ticks: the run begins a tick later
    ask = tmp_path / "ask"
    os.mkfifo(ask)
    # COMMAND asks the test (through the fifo) to have the daemon start a marked sleep
    r = run(["--cgroup", mode, "--marker", marker, "--timeout", "0.2", "--grace", "0",
             "--report", str(tmp_path / "r.json")],
            script("""
                import sys
                with open(sys.argv[1], "w") as f:
                    f.write("go\\n")
                print("asked", flush=True)
                input()
            """) + [str(ask)], stdin=subprocess.PIPE)
    with open(ask) as f:
        assert f.readline() == "go\n"
    new = daemon(marker)
    r.p.stdin.write(b"\n")
    r.p.stdin.flush()
    assert r.wait(60) == 23, r.stderr
    with open(tmp_path / "r.json") as f:
        rep = json.load(f)
    found = {(p["pid"], p["start_time"]): p for p in rep["processes"]}
    assert new in found and found[new]["found_by"] == ["env " + marker], rep["processes"]
    assert found[new]["fate"] == "killed" and found[new]["cmdline"] == "/bin/sleep 300"
    assert old not in found, rep["processes"]
    assert running(*old) and not running(*new)
