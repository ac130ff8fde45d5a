# SPDX-License-Identifier: MIT
"""A scan from inside the host never drops the host's own POSIX (fcntl) record locks. Any close
of any descriptor of a file drops every POSIX lock the closing process holds on it, so the
library may not dup (pidfd_getfd) and close a leftover's file that the host has locked."""
from __future__ import annotations

import os
import subprocess
import sys
import textwrap

import reaper

HOST = textwrap.dedent("""
    import fcntl, os, subprocess, sys
    import reaper
    log = open(sys.argv[1], "a+")
    fcntl.lockf(log, fcntl.LOCK_EX)
    home = sys.argv[2]
    # Popen returns once the child has exec'd: its environment holds the HOME the scan looks for
    leak = subprocess.Popen(["sleep", "60"], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                            env=dict(os.environ, HOME=home))
    try:
        rep = reaper.scan(reaper.with_home(home))
        assert [p.pid for p in rep.leaks] == [leak.pid], rep.leaks
        probe = ("import fcntl, sys\\nf = open(sys.argv[1], 'a')\\n"
                 "try:\\n    fcntl.lockf(f, fcntl.LOCK_EX | fcntl.LOCK_NB)\\n    print('FREE')\\n"
                 "except OSError:\\n    print('HELD')\\n")
        print("lock:", subprocess.run([sys.executable, "-c", probe, sys.argv[1]], capture_output=True,
                                      text=True).stdout.strip(), file=sys.stderr)
    finally:
        leak.kill()
        leak.wait()
""")


def test_scan_keeps_the_hosts_posix_lock_on_a_leftovers_stdout_file(tmp_path):
    home = tmp_path / "home"
    home.mkdir()
    # the host's stdout is a pipe (pytest | tee, a CI step): the caller's pipeline is looked for
    r = subprocess.run([sys.executable, "-c", HOST, str(tmp_path / "run.log"), str(home)],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=60,
                       env=dict(os.environ, PYTHONPATH=os.path.dirname(os.path.dirname(reaper.__file__))))
    assert r.returncode == 0, r.stderr
    assert "lock: HELD" in r.stderr, r.stderr
