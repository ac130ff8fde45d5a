# SPDX-License-Identifier: MIT
"""`reaper run`, with a cgroup or without, looks for its random REAPER_RUN marker in the pids
given out since the run began only: a process an outside daemon (older than the run, no
ancestor of it, in no cgroup of the run) starts during the run with the run's marker is found
and killed; a process older than the run that execs with the marker later is not the run's (it
is no descendant) and is left alone."""
import json
import os
import signal
import subprocess
import textwrap
import time

import pytest

from conftest import script
from procutil import PY, running, start_time
from test_cgroup import needs_cgroup

# The outside daemon: started before the run, so neither reaper nor COMMAND is its ancestor.
# Each line on its stdin is an environment entry: it starts a sleep carrying it (a child of its
# own) and answers "PID START" once the sleep has exec'd (its pipe's write end, close-on-exec,
# is closed then): until then the child is a copy of the daemon, without the entry.
DAEMON = textwrap.dedent("""
    import os, sys
    for line in sys.stdin:
        name, _, value = line.strip().partition("=")
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            os.close(r)
            null = os.open("/dev/null", os.O_RDWR)
            for i in (0, 1, 2):
                os.dup2(null, i)
            os.execve("/bin/sleep", ["/bin/sleep", "300"], {"PATH": "/usr/bin:/bin", name: value})
        os.close(w)
        os.read(r, 1)
        os.close(r)
        st = open("/proc/%d/stat" % pid).read().rsplit(")", 1)[1].split()[19]
        print(pid, st, flush=True)
    """)

# Older than the run too: execs a sleep carrying the entry it reads.
EXECER = textwrap.dedent("""
    import os, sys
    name, _, value = sys.stdin.readline().strip().partition("=")
    null = os.open("/dev/null", os.O_RDWR)
    for i in (0, 1, 2):
        os.dup2(null, i)
    os.execve("/bin/sleep", ["/bin/sleep", "300"], {"PATH": "/usr/bin:/bin", name: value})
    """)


def end(pid, st):
    """SIGKILL pid if it is still the process started at st."""
    fd = os.pidfd_open(pid)
    try:
        if start_time(pid) == st:
            signal.pidfd_send_signal(fd, signal.SIGKILL)
    finally:
        os.close(fd)


@pytest.mark.parametrize("mode", [pytest.param("on", marks=needs_cgroup), "off"])
def test_run_marker_read_in_the_pids_given_out_since_the_run_began(run, tmp_path, mode):
    daemon = subprocess.Popen([PY, "-c", DAEMON], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    execer = subprocess.Popen([PY, "-c", EXECER], stdin=subprocess.PIPE, text=True)
    old = (execer.pid, start_time(execer.pid))
    new = None
    try:
        time.sleep(0.05)  # start times count in clock ticks: the run begins a tick later
        ask = tmp_path / "ask"
        os.mkfifo(ask)
        # COMMAND hands its marker out (through the fifo) and waits for the word to end
        r = run(["--cgroup", mode, "--timeout", "0.2", "--grace", "0", "--report", str(tmp_path / "r.json")],
                script("""
                    import os, sys
                    with open(sys.argv[1], "w") as f:
                        f.write("REAPER_RUN=%s\\n" % os.environ["REAPER_RUN"])
                    input()
                """) + [str(ask)], stdin=subprocess.PIPE)
        with open(ask) as f:
            entry = f.readline().strip()
        assert entry.startswith("REAPER_RUN=")
        daemon.stdin.write(entry + "\n")
        daemon.stdin.flush()
        new = tuple(map(int, daemon.stdout.readline().split()))
        execer.stdin.write(entry + "\n")
        execer.stdin.flush()
        deadline = time.monotonic() + 30
        while not open("/proc/%d/cmdline" % old[0], "rb").read().startswith(b"/bin/sleep"):
            assert time.monotonic() < deadline, "the older process never exec'd"
            time.sleep(0.01)
        r.p.stdin.write(b"\n")
        r.p.stdin.flush()
        assert r.wait(60) == 23, r.stderr
        with open(tmp_path / "r.json") as f:
            rep = json.load(f)
        found = {(p["pid"], p["start_time"]): p for p in rep["processes"]}
        assert new in found and found[new]["found_by"] == ["env " + entry], rep["processes"]
        assert found[new]["fate"] == "killed" and found[new]["cmdline"] == "/bin/sleep 300"
        assert not running(*new)
        assert old not in found and running(*old), rep["processes"]
    finally:
        for ps in (old, new):
            if ps and running(*ps):
                end(*ps)
        daemon.stdin.close()
        daemon.wait(30)
        execer.wait(30)
