# SPDX-License-Identifier: MIT
"""Quiet when clean, short when misused: a clean run or reap prints nothing unless -v; a usage
error is a short synopsis and where to read more; -V, and -h after a subcommand, work; the
ancestry of a leak stops at the run and says when the leak was re-parented."""
import subprocess

from cli_util import by_pid, load_json, reaper
from procutil import PY, REAPER, kill_identified, start_time


def test_clean_run_prints_nothing():
    r = reaper("run", "--", "true")
    assert (r.returncode, r.stdout, r.stderr) == (0, b"", b"")
    # one that left something that exited in time is clean too
    r = reaper("run", "--timeout", "60", "--", "sh", "-c", "(sleep 0.2 &); exit 0")
    assert (r.returncode, r.stderr) == (0, b"")


def test_clean_run_with_verbose_prints_the_summary():
    for flag in ("-v", "--verbose"):
        r = reaper("run", flag, "--", "true")
        assert r.returncode == 0, r.stderr
        lines = r.stderr.decode().splitlines()
        assert len(lines) == 1 and lines[0].startswith("reaper: SUMMARY: 0 leaked"), r.stderr


def test_clean_reap_prints_nothing(home):
    r = reaper("reap", "--home", home, "--timeout", "0")
    assert (r.returncode, r.stderr) == (0, b"")
    r = reaper("reap", "-v", "--home", home, "--timeout", "0")
    assert r.returncode == 0 and b"SUMMARY: 0 leaked" in r.stderr


def test_usage_error_is_short_and_says_where_to_read_more():
    for args in ((), ("bogus",), ("run",), ("run", "--bogus", "--", "true"), ("scan",), ("reap", "--bogus")):
        r = reaper(*args)
        assert r.returncode == 64, (args, r.stderr)
        lines = r.stderr.decode().splitlines()
        usage = [x for x in lines if not x.startswith("reaper: ")]
        assert 2 <= len(usage) <= 4, (args, r.stderr)
        assert usage[0].startswith("usage: reaper"), (args, r.stderr)
        assert "--help" in usage[-1] and "reaper(1)" in usage[-1], (args, r.stderr)
        assert r.stdout == b""


def test_an_option_before_the_command_is_named_as_one():
    """`reaper -v run ...`: the option is said to go after the command, not taken for an
    unknown command; an unknown option alone is an unknown option."""
    r = reaper("-v", "run", "--", "true")
    assert r.returncode == 64 and r.stdout == b"", r
    err = r.stderr.decode()
    assert "reaper: -v goes after the command: reaper run -v" in err and "unknown command" not in err, err
    r = reaper("--bogus")
    assert r.returncode == 64 and "reaper: unknown option '--bogus'" in r.stderr.decode(), r


def test_version_short_and_long():
    for flag in ("-V", "--version"):
        r = reaper(flag)
        assert r.returncode == 0 and r.stdout.decode().startswith("reaper ") and r.stderr == b"", (flag, r)


def test_help_after_a_subcommand():
    for sub in ("run", "scan", "reap"):
        for flag in ("-h", "--help"):
            r = reaper(sub, flag)
            assert r.returncode == 0, (sub, flag, r.stderr)
            assert r.stdout.startswith(b"usage: reaper " + sub.encode()), (sub, flag, r.stdout[:200])


def test_ancestry_stops_at_the_run_and_says_it_was_re_parented(tmp_path):
    """Under two shells, the leak of a run (its parent shell exited) is shown under reaper
    alone, re-parented, not under the shells, pytest and init above."""
    pidfile, report, junit = tmp_path / "pid", tmp_path / "r.json", tmp_path / "r.xml"
    script = "sh -c 'sleep 600 & echo $! > %s'; exit 0" % pidfile
    outer = ("exec %s run --timeout 0 --grace 2 --report %s --junit %s -- sh -c \"$0\""
             % (REAPER, report, junit))
    p = subprocess.run(["sh", "-c", "sh -c '%s' \"$0\"; exit $?" % outer.replace("'", "'\\''"), script],
                       capture_output=True, timeout=120)
    left = int(pidfile.read_text())
    try:
        assert p.returncode == 23, p.stderr
        rep = load_json(report)
        (proc,) = by_pid(rep).values()
        assert proc["pid"] == left
        rpid = proc["ppid"]
        assert proc["ancestry"] == "%d reaper" % rpid, proc["ancestry"]
        assert proc["reparented"] is True
        err = p.stderr.decode()
        assert "  under %d reaper (re-parented to reaper: its parent exited)" % rpid in err, err
        assert "re-parented to reaper" in junit.read_text()
    finally:
        st = start_time(left)
        if st:
            kill_identified(left, st)


def test_a_leak_whose_parent_is_still_there_is_not_re_parented(tmp_path):
    """A leftover's child, whose parent (the leftover) is alive, keeps its parent: only the
    leftover whose parent (the command) exited is re-parented."""
    report, kids = tmp_path / "r.json", tmp_path / "kid"
    code = ("import os, time\npid = os.fork()\nif pid == 0:\n    time.sleep(600)\n    os._exit(0)\n"
            "open(%r, 'w').write(str(pid))\ntime.sleep(600)\n" % str(kids))
    r = reaper("run", "--timeout", "0", "--grace", "2", "--report", str(report), "--",
               "sh", "-c", "%s -c \"$0\" & while [ ! -s %s ]; do sleep 0.05; done" % (PY, kids), code)
    assert r.returncode == 23, r.stderr
    procs = load_json(report)["processes"]
    kid = int(kids.read_text())
    parent = [p for p in procs if p["pid"] != kid]
    child = [p for p in procs if p["pid"] == kid]
    assert len(parent) == 1 and len(child) == 1, procs
    assert parent[0]["reparented"] is True and child[0]["reparented"] is False
    assert child[0]["ancestry"].startswith("%d python3 < " % parent[0]["pid"]), child[0]["ancestry"]
    assert child[0]["ancestry"].endswith(" reaper")
