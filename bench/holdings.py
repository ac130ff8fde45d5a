# SPDX-License-Identifier: MIT
"""The cost of gathering holdings: N leaks (default 100), each holding a listening TCP socket,
a connected pair, a file under the sandbox HOME, a deleted file and our stdout, reaped with
timeout 0 and no grace (SIGKILL at once), with and without holdings, alternating, the same
population shape each time. Prints the medians and the added cost per leak.

    PYTHONPATH=harness/python REAPER_BUILD=build python3 bench/holdings.py [N] [REPS]
"""
import os
import socket
import statistics
import sys
import tempfile
import time

import reaper

LEAK = """
import os, socket, sys, time
home, n, ready = os.environ["HOME"], int(sys.argv[1]), sys.argv[2]
for i in range(n):
    if os.fork() == 0:
        s = socket.socket(); s.bind(("127.0.0.1", 0)); s.listen()
        c = socket.create_connection(s.getsockname()); a, _ = s.accept()
        f = open(os.path.join(home, "file.%d" % i), "w")
        g = open(os.path.join(home, "gone.%d" % i), "w"); os.unlink(g.name)
        open(os.path.join(home, "ready.%d" % i), "w").close()
        time.sleep(600)
        os._exit(0)
"""


def population(home, n):
    pid = os.fork()
    if pid == 0:
        os.execve(sys.executable, [sys.executable, "-c", LEAK, str(n), ""], {"HOME": home, "PATH": "/usr/bin:/bin"})
    os.waitpid(pid, 0)
    deadline = time.monotonic() + 120
    while sum(1 for e in os.listdir(home) if e.startswith("ready.")) < n:
        assert time.monotonic() < deadline, "population not ready"
        time.sleep(0.01)


def one(n, holdings):
    with tempfile.TemporaryDirectory() as home:
        population(home, n)
        t = time.monotonic()
        c = time.process_time()
        rep = reaper.reap_report(reaper.with_home(home), timeout=0, holdings=holdings, hold_dirs=[home])
        wall, cpu = time.monotonic() - t, time.process_time() - c
        assert len(rep.leaks) == n, len(rep.leaks)
        if holdings:
            p = rep.leaks[0]
            assert "(listening)" in p.holds and "(deleted)" in p.holds, p.holds
        return wall, cpu


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100
    reps = int(sys.argv[2]) if len(sys.argv) > 2 else 7
    reaper.adopt_orphans()
    res = {False: [], True: []}
    for _ in range(reps):
        for h in (False, True):
            res[h].append(one(n, h))
    for h in (False, True):
        w = statistics.median(x[0] for x in res[h])
        c = statistics.median(x[1] for x in res[h])
        print("%-16s reap of %d leaks: median %.1f ms wall, %.1f ms CPU (%d reps)" %
              ("with holdings" if h else "without holdings", n, w * 1e3, c * 1e3, reps))
    dw = statistics.median(x[0] for x in res[True]) - statistics.median(x[0] for x in res[False])
    dc = statistics.median(x[1] for x in res[True]) - statistics.median(x[1] for x in res[False])
    print("added by holdings: %.1f ms wall (%.2f ms per leak), %.1f ms CPU (%.2f ms per leak)" %
          (dw * 1e3, dw * 1e3 / n, dc * 1e3, dc * 1e3 / n))


if __name__ == "__main__":
    main()
