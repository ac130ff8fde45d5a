# SPDX-License-Identifier: MIT
"""`reaper scan --home DIR --json` and `reaper reap` over many live processes (the fixture
`many`: REAPER_CLI_MANY of them, default 1000; 4000 for the measurement in docs/BENCHMARKS.md). The
time is printed (pytest -s shows it), never asserted."""
import json
import os
import resource
import subprocess
import time

from cli_util import reaper
from procutil import FIXTURES, wait_gone


def test_scan_and_reap_many(spawn, home, tmp_path):
    n = int(os.environ.get("REAPER_CLI_MANY", "1000"))
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < n + 256 <= hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    pids_file = tmp_path / "pids"
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": home}
    subprocess.run([os.path.join(FIXTURES, "many"), "-n", str(n), "-s", "600", "-o", str(pids_file)], env=env,
                   check=True, timeout=300)
    pids = [int(x) for x in pids_file.read_text().split()]
    assert len(pids) == n
    procs = [spawn.adopt(pid) for pid in pids]  # alive: the fixture prints them only once all exist

    t0 = time.monotonic()
    r = reaper("scan", "--home", home, "--json", timeout=600)
    took = time.monotonic() - t0
    assert r.returncode == 0, r.stderr[-2000:]
    rep = json.loads(r.stdout.decode("utf-8"))
    assert {p["pid"] for p in rep["processes"]} == set(pids)
    assert rep["summary"]["processes"] == n
    print("\nreaper scan --home DIR --json over %d live processes: %.3f s, %d bytes of JSON" % (n, took, len(r.stdout)))

    t0 = time.monotonic()
    r = reaper("reap", "--home", home, "--timeout", "0", "--grace", "5", timeout=600)
    took = time.monotonic() - t0
    assert r.returncode == 23, r.stderr[-2000:]
    assert b"SUMMARY: %d leaked (%d terminated" % (n, n) in r.stderr
    assert not wait_gone([p.fd for p in procs], 30)
    print("reaper reap --home DIR over %d live processes: %.3f s" % (n, took))
