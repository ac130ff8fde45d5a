#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""Soak `reaper run` with N short-lived orphans made while COMMAND runs, and
measure reaper's memory before and after: it keeps nothing per orphan, so RSS stays flat.

    REAPER_BUILD=build tests/supervisor/soak.py [N]      (make soak-supervisor: N = 100000)

test_soak.py runs a small N of it inside make check."""
import json
import os
import select
import signal
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from procutil import FIXTURES, REAPER  # noqa: E402


def vm(pid):
    vals = {}
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            k, _, v = line.partition(":")
            if k in ("VmRSS", "VmHWM"):
                vals[k] = int(v.split()[0])
    return vals


def read_line(fd, buf, deadline):
    while b"\n" not in buf[0]:
        left = deadline - time.monotonic()
        if left <= 0 or not select.select([fd], [], [], left)[0]:
            raise TimeoutError("no line from COMMAND; have %r" % buf[0])
        chunk = os.read(fd, 4096)
        if not chunk:
            raise EOFError("COMMAND closed its output; have %r" % buf[0])
        buf[0] += chunk
    line, _, buf[0] = buf[0].partition(b"\n")
    return line.decode().strip()


def soak(n, limit=3600.0):
    """Run the soak; returns the measurements. COMMAND waits on stdin between the phases so
    the memory is read while it is alive: after start-up, and once every orphan is reaped."""
    reaper = REAPER
    fixture = os.path.join(FIXTURES, "sup_orphans")
    with tempfile.TemporaryDirectory(prefix="reaper-soak-") as tmp:
        state = os.path.join(tmp, "state.json")
        p = subprocess.Popen(
            [reaper, "run", "--state", state, "--", "sh", "-c",
             'echo ready; read x; "$0" "$1"; read y', fixture, str(n)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        pidfd = os.pidfd_open(p.pid)
        deadline = time.monotonic() + limit
        buf = [b""]
        try:
            assert read_line(p.stdout.fileno(), buf, deadline) == "ready"
            before = vm(p.pid)
            t0 = time.monotonic()
            p.stdin.write(b"go\n")
            p.stdin.flush()
            assert read_line(p.stdout.fileno(), buf, deadline) == "done %d" % n
            while True:  # the last few orphans may still be on their way
                with open(state) as f:
                    doc = json.load(f)
                if doc["reaped_orphans_total"] >= n or time.monotonic() > deadline:
                    break
                time.sleep(0.05)
            took = time.monotonic() - t0
            after = vm(p.pid)
            with open("/proc/%d/stat" % p.pid) as f:
                f_ = f.read().rsplit(")", 1)[1].split()
            ticks = os.sysconf("SC_CLK_TCK")
            cpu = (int(f_[11]) + int(f_[12])) / ticks  # utime + stime of reaper alone
            p.stdin.write(b"end\n")
            p.stdin.close()
            rc = p.wait(timeout=max(1.0, deadline - time.monotonic()))
            with open(state) as f:
                final = json.load(f)
        finally:
            if p.poll() is None:
                signal.pidfd_send_signal(pidfd, signal.SIGKILL)
                p.wait()
            os.close(pidfd)
            p.stdout.close()
    return {"n": n, "rc": rc, "seconds": took, "reaper_cpu_seconds": cpu,
            "rss_before_kb": before["VmRSS"], "hwm_before_kb": before["VmHWM"],
            "rss_after_kb": after["VmRSS"], "hwm_after_kb": after["VmHWM"],
            "running_doc": doc, "final_doc": final}


if __name__ == "__main__":
    m = soak(int(sys.argv[1]) if len(sys.argv) > 1 else 100000)
    d = m["running_doc"]
    print("orphans %d: rc %d, %.1f s (reaper cpu %.2f s); reaped while COMMAND ran: %d (phase %s)"
          % (m["n"], m["rc"], m["seconds"], m["reaper_cpu_seconds"], d["reaped_orphans_total"], d["phase"]))
    print("reaper VmRSS %d kB -> %d kB, VmHWM %d kB -> %d kB"
          % (m["rss_before_kb"], m["rss_after_kb"], m["hwm_before_kb"], m["hwm_after_kb"]))
    ok = (m["rc"] == 0 and d["reaped_orphans_total"] == m["n"] and d["phase"] == "running"
          and m["final_doc"]["orphaned_children_total"] == m["n"])
    print("OK" if ok else "FAILED")
    sys.exit(0 if ok else 1)
