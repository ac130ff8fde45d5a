# SPDX-License-Identifier: MIT
"""Policy: --allow (cleaned up, not a leak), --keep (left running, not a leak), --allow-file,
the pattern hit table, --report-only (signals nothing)."""
import os
import re

from cli_util import by_pid, load_json, reaper
from procutil import stat


def hit_table(stderr):
    """{(kind, pattern, from): hits} from the table after the SUMMARY line."""
    rows = {}
    for line in stderr.decode().splitlines():
        m = re.match(r"reaper: +(\d+)  (allow|keep) +(.*)  \((.*)\)$", line)
        if m:
            rows[(m.group(2), m.group(3), m.group(4))] = int(m.group(1))
    return rows


def test_allow_and_keep(spawn, home, tmp_path):
    allowed = spawn.sleeper("allowed-helper")
    kept = spawn.sleeper("keep-me-running")
    leak = spawn.sleeper("a-real-leak")
    report, junit = tmp_path / "r.json", tmp_path / "r.xml"
    r = reaper("reap", "--home", home, "--timeout", "0", "--grace", "2", "--allow", "*allowed-helper*",
               "--keep", "*keep-me-running", "--allow", "*never-matches*", "--report", str(report),
               "--junit", str(junit))
    assert r.returncode == 23, r.stderr
    assert not allowed.alive and not leak.alive
    assert kept.alive, "a kept process is left running"
    rep = load_json(report)
    procs = by_pid(rep)
    assert procs[allowed.pid]["allowed"] is True and procs[allowed.pid]["leak"] is False
    assert procs[allowed.pid]["fate"] == "terminated"
    assert procs[kept.pid]["fate"] == "kept" and procs[kept.pid]["kept"] is True and procs[kept.pid]["leak"] is False
    assert procs[leak.pid]["leak"] is True
    assert rep["summary"]["leaks"] == 1 and rep["summary"]["kept"] == 1 and rep["summary"]["allowed"] == 1
    assert rep["patterns"] == [
        {"kind": "allow", "pattern": "*allowed-helper*", "from": "--allow", "hits": 1},
        {"kind": "keep", "pattern": "*keep-me-running", "from": "--keep", "hits": 1},
        {"kind": "allow", "pattern": "*never-matches*", "from": "--allow", "hits": 0},
    ]
    assert hit_table(r.stderr) == {("allow", "*allowed-helper*", "--allow"): 1,
                                   ("keep", "*keep-me-running", "--keep"): 1,
                                   ("allow", "*never-matches*", "--allow"): 0}
    err = r.stderr.decode()
    assert "  %d KEPT (kept) " % kept.pid in err and "  %d ALLOWED (terminated) " % allowed.pid in err
    assert "SUMMARY: 1 leaked" in err and "1 kept, 1 allowed" in err
    xml = junit.read_text()
    assert 'name="kept ' in xml and 'name="allowed ' in xml
    assert xml.count("<failure ") == 1 and xml.count("<skipped ") == 2

    # only kept and allowed processes left: not a leak
    again = spawn.sleeper("allowed-helper")
    r = reaper("reap", "--home", home, "--timeout", "0", "--grace", "2", "--allow", "*allowed-helper*",
               "--keep", "*keep-me-running")
    assert r.returncode == 0, r.stderr
    assert not again.alive and kept.alive
    # the kept one is the test's to clean up: the spawn fixture kills it through its pidfd


def test_exe_path_matches(spawn, home):
    p = spawn.sleeper()
    r = reaper("reap", "--home", home, "--timeout", "0", "--keep", os.path.realpath("/usr/bin/python3"))
    assert r.returncode == 0, r.stderr
    assert p.alive


def test_allow_file(spawn, home, tmp_path):
    allowed = spawn.sleeper("from-file-allowed")
    kept = spawn.sleeper("from-file-kept")
    f = tmp_path / "allow.txt"
    f.write_text("# leftovers we know about\n\n  allow: *from-file-allowed*  \nkeep:*from-file-kept*\n"
                 "   # indented comment\nallow: *unused*\n")
    r = reaper("reap", "--home", home, "--timeout", "0", "--grace", "2", "--allow-file", str(f))
    assert r.returncode == 0, r.stderr
    assert not allowed.alive and kept.alive
    assert hit_table(r.stderr) == {("allow", "*from-file-allowed*", "%s:3" % f): 1,
                                   ("keep", "*from-file-kept*", "%s:4" % f): 1,
                                   ("allow", "*unused*", "%s:6" % f): 0}


def test_bad_allow_file_is_a_usage_error_and_signals_nothing(spawn, home, tmp_path):
    p = spawn.sleeper()
    bad = tmp_path / "bad.txt"
    bad.write_text("allow: ok*\nsuppress: *x*\n")
    for args in (["--allow-file", str(bad)], ["--allow-file", str(tmp_path / "missing.txt")], ["--allow", ""]):
        r = reaper("reap", "--home", home, "--timeout", "0", "--grace", "0", *args)
        assert r.returncode == 64, r.stderr
        assert b"usage: reaper reap" in r.stderr
        assert p.alive
    r = reaper("reap", "--home", home, "--allow-file", str(bad))
    assert b"%s:2: expected 'allow: PATTERN' or 'keep: PATTERN'" % str(bad).encode() in r.stderr
    empty = tmp_path / "empty.txt"
    empty.write_text("keep:   \n")
    r = reaper("reap", "--home", home, "--allow-file", str(empty))
    assert r.returncode == 64 and b"empty.txt:1: empty pattern" in r.stderr
    nul = tmp_path / "nul.txt"
    nul.write_bytes(b"allow: ok*\nkeep: a\0*\n")  # the pattern would be cut to "a"
    r = reaper("reap", "--home", home, "--allow-file", str(nul))
    assert r.returncode == 64 and b"nul.txt:2: a NUL byte in the line" in r.stderr, r.stderr
    assert p.alive


def test_report_only_signals_nothing(spawn, home, tmp_path):
    a = spawn.sleeper("one")
    b = spawn.sleeper("two", stubborn=True)
    report = tmp_path / "r.json"
    r = reaper("reap", "--home", home, "--timeout", "0.3", "--grace", "0", "--report-only", "--report", str(report))
    assert r.returncode == 23, r.stderr
    assert a.alive and b.alive
    assert stat(a.pid)["state"] == "S"  # not stopped either
    rep = load_json(report)
    assert rep["options"]["report_only"] is True
    assert {p["fate"] for p in rep["processes"]} == {"alive"}
    assert rep["summary"]["leaks"] == 2
    assert b"report only: nothing signalled" in r.stderr


def summary_counts(stderr):
    """The SUMMARY line's numbers: {'leaked': n, 'terminated': n, ...}."""
    line = [l for l in stderr.decode().splitlines() if "SUMMARY:" in l][0]
    return {name.replace(" ", "_"): int(n) for n, name in
            re.findall(r"(\d+) (leaked|terminated|killed|unkillable|still running|exited in time|kept|allowed)", line)}


def assert_counts_add_up(rep, stderr, junit=None):
    """Every process counts once: the leaks' fates add up to the leaks, and leaks, allowed,
    exited, kept, zombies held, foreign and moved in add up to the processes found; the human summary
    and the JUnit totals say the same."""
    s = rep["summary"]
    assert s["leaks"] == s["terminated"] + s["killed"] + s["unkillable"] + s["alive"], s
    assert s["processes"] == (s["leaks"] + s["allowed"] + s["exited"] + s["kept"] + s["zombies_held"] + s["foreign"]
                              + s["moved_in"]), s
    assert s["leaks"] == sum(p["leak"] for p in rep["processes"]), s
    h = summary_counts(stderr)
    assert h["leaked"] == s["leaks"] and h["terminated"] == s["terminated"] and h["killed"] == s["killed"], h
    assert h["leaked"] == h["terminated"] + h["killed"] + h["unkillable"] + h.get("still_running", 0), h
    assert h["allowed"] == s["allowed"] and h["kept"] == s["kept"] and h["exited_in_time"] == s["exited"], h
    if junit:
        ts = junit.read_text()
        assert 'failures="%d"' % s["leaks"] in ts and 'skipped="%d"' % (s["allowed"] + s["kept"]) in ts, ts


def test_counts_add_up_when_only_allowed_processes_were_left(spawn, home, tmp_path):
    allowed = spawn.sleeper("allowed-helper")
    report, junit = tmp_path / "r.json", tmp_path / "r.xml"
    r = reaper("reap", "--home", home, "--timeout", "0", "--grace", "5", "--allow", "*allowed-helper*",
               "--report", str(report), "--junit", str(junit))
    assert r.returncode == 0, r.stderr
    assert not allowed.alive
    assert b"SUMMARY: 0 leaked (0 terminated, 0 killed, 0 unkillable), 0 exited in time, 0 kept, 1 allowed" in r.stderr
    rep = load_json(report)
    assert rep["summary"]["terminated"] == 0 and rep["summary"]["allowed"] == 1
    assert_counts_add_up(rep, r.stderr, junit)


def test_counts_add_up_with_leaks_allowed_and_kept(spawn, home, tmp_path):
    spawn.sleeper("allowed-helper")
    spawn.sleeper("allowed-helper", stubborn=True)
    spawn.sleeper("keep-me-running")
    spawn.sleeper("a-real-leak")
    spawn.sleeper("a-real-leak", stubborn=True)
    report, junit = tmp_path / "r.json", tmp_path / "r.xml"
    r = reaper("reap", "--home", home, "--timeout", "0", "--grace", "0.5", "--allow", "*allowed-helper*",
               "--keep", "*keep-me-running", "--report", str(report), "--junit", str(junit))
    assert r.returncode == 23, r.stderr
    assert b"SUMMARY: 2 leaked (1 terminated, 1 killed, 0 unkillable), 0 exited in time, 1 kept, 2 allowed" in r.stderr
    assert_counts_add_up(load_json(report), r.stderr, junit)


def test_report_only_leaks_are_counted_as_still_running(spawn, home, tmp_path):
    spawn.sleeper("allowed-helper")
    spawn.sleeper("a-real-leak")
    report = tmp_path / "r.json"
    r = reaper("reap", "--home", home, "--timeout", "0", "--report-only", "--allow", "*allowed-helper*",
               "--report", str(report))
    assert r.returncode == 23, r.stderr
    assert b"SUMMARY: 1 leaked (0 terminated, 0 killed, 0 unkillable, 1 still running, report only" in r.stderr
    rep = load_json(report)
    assert rep["summary"]["alive"] == 1 and rep["summary"]["allowed"] == 1
    assert_counts_add_up(rep, r.stderr)


def test_allow_file_comment_after_a_pattern_is_a_comment(spawn, home, tmp_path):
    p = spawn.sleeper("allowed-helper")
    f = tmp_path / "allow.txt"
    f.write_text("allow: *allowed-helper*   # the suite's helper, stopped by its fixture\n"
                 "allow: *#literal*\tkeep\n")
    report = tmp_path / "r.json"
    r = reaper("reap", "--home", home, "--timeout", "0", "--grace", "5", "--allow-file", str(f),
               "--report", str(report))
    assert r.returncode == 0, r.stderr
    assert not p.alive
    rep = load_json(report)
    assert [x["pattern"] for x in rep["patterns"]] == ["*allowed-helper*", "*#literal*\tkeep"]
    assert rep["patterns"][0]["hits"] == 1 and by_pid(rep)[p.pid]["allowed"] is True
