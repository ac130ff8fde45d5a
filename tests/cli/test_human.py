# SPDX-License-Identifier: MIT
"""The human report: the process tree, the SUMMARY line with leaks per test, colour only on a
tty and never with NO_COLOR, the countdown only on a tty."""
import os
import re

from cli_util import reaper, reaper_pty
from procutil import PY, stat

COLOUR = re.compile(rb"\x1b\[[0-9;]*m")


def family(spawn, home, test=None):
    """A parent python with one child, both in the sandbox; returns (parent, child)."""
    child_file = os.path.join(home, "child-%d" % len(spawn.procs))
    code = ("import os, time\npid = os.fork()\nif pid == 0:\n    time.sleep(600)\n    os._exit(0)\n"
            "open(%r + '.tmp', 'w').write(str(pid)); os.rename(%r + '.tmp', %r)\ntime.sleep(600)\n"
            % (child_file, child_file, child_file))
    parent = spawn.orphan([PY, "-c", code, "parent"], env={"REAPER_TEST": test} if test else None, ready=child_file)
    child = spawn.adopt(int(open(child_file).read()))
    return parent, child


def test_tree_summary_and_attribution(spawn, home):
    parent, child = family(spawn, home, test="tests/test_x.py::test_daemon")
    lone = spawn.sleeper("lone", env={"REAPER_TEST": "tests/test_y.py::test_other"})
    plain = spawn.sleeper("plain")
    ppid = stat(parent.pid)["ppid"]  # init, or the subreaper we run under
    r = reaper("reap", "--home", home, "--timeout", "0", "--grace", "2")
    assert r.returncode == 23, r.stderr
    err = r.stderr.decode()
    assert not COLOUR.search(r.stderr), "colour off a tty"
    lines = err.splitlines()
    assert lines[0] == "reaper: 4 processes left behind (process tree as first seen):"
    # the parent is a root under its own ancestry; the child hangs under it
    i = next(n for n, x in enumerate(lines) if x.startswith("  %d LEAK (terminated) " % parent.pid))
    under = [x for x in lines[:i] if x.startswith("  under ")]
    assert under and under[-1].startswith("  under %d " % ppid)
    assert "/usr/bin/python3 -c import os, time\\npid = os.fork()" in lines[i]
    assert lines[i + 1].startswith("  |    age ") and "state S" in lines[i + 1]
    assert "test tests/test_x.py::test_daemon" in lines[i + 1] and "cwd " in lines[i + 1]
    assert lines[i + 2] == "  |    found by env HOME=" + home
    assert lines[i + 3].startswith("  |    still running: waits in ")
    assert lines[i + 4].startswith("  `- %d LEAK (terminated) " % child.pid)
    assert lines[i + 5].startswith("          age ")
    assert any(x.startswith("  %d LEAK (terminated) " % lone.pid) for x in lines)
    assert any(x.startswith("  %d LEAK (terminated) " % plain.pid) for x in lines)
    summary = [x for x in lines if x.startswith("reaper: SUMMARY: ")]
    assert summary == ["reaper: SUMMARY: 4 leaked (4 terminated, 0 killed, 0 unkillable), 0 exited in time, "
                       "0 kept, 0 allowed, 0 zombies held by live parents; leaks per test: "
                       "tests/test_x.py::test_daemon 2, tests/test_y.py::test_other 1, (no test) 1"]


def test_long_cmdline_is_trimmed_and_controls_shown(spawn, home):
    p = spawn.sleeper("x" * 400, "\x1b]0;title\x07")
    r = reaper("reap", "--home", home, "--timeout", "0", "--grace", "2")
    assert r.returncode == 23
    (line,) = [x for x in r.stderr.split(b"\n") if x.startswith(b"  %d LEAK" % p.pid)]
    assert line.endswith(b"...") and len(line) < 250
    assert b"\x1b" not in r.stderr and b"\x07" not in r.stderr


def test_colour_on_a_tty_never_with_no_color(spawn, home):
    spawn.sleeper()
    status, out = reaper_pty("reap", "--home", home, "--timeout", "0", "--grace", "2")
    assert status == 23
    assert COLOUR.search(out), out
    assert b"SUMMARY: 1 leaked" in COLOUR.sub(b"", out)
    spawn.sleeper()
    status, out = reaper_pty("reap", "--home", home, "--timeout", "0", "--grace", "2", env={"NO_COLOR": "1"})
    assert status == 23
    assert not COLOUR.search(out), out
    assert b"SUMMARY: 1 leaked" in out


def test_countdown_on_a_tty_plain_lines_elsewhere(spawn, home):
    spawn.sleeper()
    status, out = reaper_pty("reap", "--home", home, "--timeout", "2.5", "--grace", "2")
    assert status == 23
    assert re.search(rb"\r\x1b\[Kreaper: waiting for 1 process, [0-9]+ s left", out), out
    assert b"\r\x1b[K" in out  # the line is cleared before the report
    spawn.sleeper()
    r = reaper("reap", "--home", home, "--timeout", "2.5", "--grace", "2")
    assert r.returncode == 23
    # off a tty (a CI log): whole lines, no carriage return or escape (tests/cli/test_ci.py)
    assert b"reaper: waiting for 1 process to exit; next step in " in r.stderr
    assert b"\r" not in r.stderr and b"\x1b" not in r.stderr
